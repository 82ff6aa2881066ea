// SPDX-License-Identifier: GPL-2.0-or-later
// gen.js OUT TASKS TOTAL_MB BIG_MB LONG_MESSAGES
//
// Writes a Cline-shaped globalStorage folder into OUT (which must be empty or
// missing), deterministic for a given set of arguments:
//
//   state/taskHistory.json           one HistoryItem per task, compact JSON
//   tasks/<id>/ui_messages.json      ClineMessage array (compact)
//   tasks/<id>/api_conversation_history.json   API message array (compact)
//   tasks/<id>/task_metadata.json    pretty-printed, as Cline writes it
//   globalState.json, settings/cline_mcp_settings.json   the client's own plain files
//
// That is the VS Code extension's layout. The CLI 2.x also writes
// workspaces/<8 hex>/workspaceState.json; it is left out, so that on the
// mount workspaces/ is the view alone, answered by the store, not by a folder
// underneath (the case where every walk through the view costs most).
//
// The shapes are those of the fixtures (tests/fixtures): an
// api_req_started message carries the request as a JSON string, the API
// conversation repeats the environment details on every user turn, and so
// on. Task sizes follow a log-normal law around TOTAL_MB / TASKS (clipped to
// 8 KiB .. 4 MiB), so most tasks are small and a few are large, as in real
// folders. Three special tasks are added:
//   big    a long task whose ui_messages.json is BIG_MB MB;
//   small  an API conversation of 10 short messages;
//   long   an API conversation of LONG_MESSAGES short messages (same shape).
// Tasks are spread over 200 workspaces (one per 50 tasks beyond 10,000) by a
// Zipf law (a few workspaces have most of the tasks); the manifest names one
// with about 10 tasks.
// About 1 % of the tasks contain the phrase "race condition" once (grep's
// target). Prints a JSON manifest on stdout: the special tasks' ids, the
// number of tasks, files and bytes, and how many files hold the phrase.
'use strict';

const fs = require('fs');
const path = require('path');

const [out, tasksArg, totalArg, bigArg, longArg] = process.argv.slice(2);
if (!out || !longArg) {
	process.stderr.write('usage: gen.js OUT TASKS TOTAL_MB BIG_MB LONG_MESSAGES\n');
	process.exit(2);
}
const NTASKS = Number(tasksArg);
const TOTAL = Number(totalArg) * 1e6;
const BIG = Number(bigArg) * 1e6;
const LONG = Number(longArg);

function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const rnd = prng(20261122);
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
function gauss() {
	let u = 0;
	while (u === 0) u = rnd();
	return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rnd());
}

// ---- text --------------------------------------------------------------------
// A corpus of a few MB of prose, code and tool output; messages take windows
// of it. ("race" is not among the words, so the phrase occurs only where it
// is planted.)
const WORDS = (
	'the a an to of and in on for with from this that it is be not we you can will should would ' +
	'file files function functions return value values update updated test tests testing fix fixed ' +
	'parser module handle handler edge case cases error errors config configuration build builds ' +
	'server client request response cache caching index database query schema migration table column ' +
	'component render state props hook effect async await promise callback stream buffer timeout ' +
	'retry logic user users session token auth login logout route router endpoint api json yaml ' +
	'string number array object map set key keys type types interface class method field fields ' +
	'import export default const let var null undefined true false loop branch merge commit diff ' +
	'patch review change changes refactor rename move delete create add remove check verify ensure ' +
	'implement implementation feature bug issue workaround performance memory leak thread lock mutex ' +
	'queue worker job task tasks step steps plan todo done next first then after before because ' +
	'however also now here there which where when what why how all some each every any more most ' +
	'output input log logs debug warning message messages event events listener watcher directory path').split(' ');
const IDENT = ['user', 'task', 'cache', 'parse', 'render', 'fetch', 'load', 'save', 'item', 'list',
	'config', 'handler', 'store', 'query', 'token', 'event', 'queue', 'stream', 'node', 'tree'];
const EXT = ['ts', 'tsx', 'js', 'py', 'go', 'rs', 'md', 'json', 'css'];
const ident = () => pick(IDENT) + pick(IDENT).replace(/^./, (c) => c.toUpperCase());
const srcPath = () => `src/${pick(IDENT)}/${ident()}.${pick(EXT)}`;

function sentence() {
	const n = int(6, 22);
	const w = [];
	for (let i = 0; i < n; i++) w.push(pick(WORDS));
	if (rnd() < 0.3) w.splice(int(0, w.length), 0, '`' + ident() + '()`');
	if (rnd() < 0.2) w.splice(int(0, w.length), 0, srcPath());
	const s = w.join(' ');
	return s[0].toUpperCase() + s.slice(1) + (rnd() < 0.1 ? '?' : '.');
}
function codeBlock() {
	const lines = [];
	const name = ident();
	lines.push(`export async function ${name}(${pick(IDENT)}: string, opts = {}) {`);
	for (let i = int(2, 12); i > 0; i--) {
		switch (int(0, 4)) {
		case 0: lines.push(`\tconst ${pick(IDENT)} = await ${ident()}(${pick(IDENT)}, "${pick(WORDS)}");`); break;
		case 1: lines.push(`\tif (!${pick(IDENT)}) throw new Error("${sentence().slice(0, 40)}");`); break;
		case 2: lines.push(`\t// ${sentence()}`); break;
		case 3: lines.push(`\tfor (const x of ${pick(IDENT)}s) { ${ident()}(x); }`); break;
		default: lines.push(`\treturn { ${pick(IDENT)}, ${pick(IDENT)}: ${int(0, 9999)} };`);
		}
	}
	lines.push('}');
	return lines.join('\n');
}
let corpus = '';
{
	const parts = [];
	let len = 0;
	while (len < 6e6) {
		let p;
		if (rnd() < 0.25)
			p = '```typescript\n' + codeBlock() + '\n```\n';
		else {
			const s = [];
			for (let i = int(2, 7); i > 0; i--) s.push(sentence());
			p = s.join(' ') + '\n\n';
		}
		parts.push(p);
		len += p.length;
	}
	corpus = parts.join('');
}
// About n characters of text from a random place in the corpus.
function text(n) {
	n = Math.max(8, Math.floor(n));
	const at = int(0, corpus.length - n - 1);
	return corpus.slice(at, at + n);
}

// ---- records -----------------------------------------------------------------
// 200 workspaces, or one per 50 tasks in a larger history (a user with
// 50,000 tasks has worked in more places), so that the Zipf law leaves a
// workspace of about 10 tasks at any size: one workspace's walk then
// compares across sizes (bench --scale).
const WORKSPACES = [];
const NWORKSPACES = Math.max(200, Math.round(NTASKS / 50));
for (let i = 0; i < NWORKSPACES; i++)
	WORKSPACES.push(`/home/dev/projects/${pick(IDENT)}-${pick(IDENT)}${i}`);
// The folder of a workspace in convfs's view: <basename>-<Cline's key of the path>
// (our basenames need no escaping).
function viewName(p) {
	let h = 0;
	for (let i = 0; i < p.length; i++)
		h = (h * 31 + p.charCodeAt(i)) >>> 0;
	return `${path.basename(p)}-${h}`;
}
// Workspaces are used as in real life: a few a lot, most a little (Zipf).
const ZIPF = WORKSPACES.map((_, i) => 1 / (i + 1));
const ZIPF_SUM = ZIPF.reduce((a, b) => a + b, 0);
function zipfWorkspace() {
	let x = rnd() * ZIPF_SUM;
	for (let i = 0; i < WORKSPACES.length; i++)
		if ((x -= ZIPF[i]) < 0)
			return WORKSPACES[i];
	return WORKSPACES[WORKSPACES.length - 1];
}
const MODEL = { providerId: 'anthropic', modelId: 'claude-sonnet-4-5', mode: 'act' };
const ENV = (cwd, ts) => `<environment_details>\n# VSCode Visible Files\n${srcPath()}\n\n# VSCode Open Tabs\n` +
	`${srcPath()}\n${srcPath()}\n${srcPath()}\n\n# Current Time\n${new Date(ts).toISOString()}\n\n` +
	`# Current Working Directory (${cwd}) Files\n${Array.from({ length: int(5, 30) }, srcPath).join('\n')}\n\n` +
	`# Context Window Usage\n${int(1000, 150000)} / 200K tokens used\n\n# Current Mode\nACT MODE\n</environment_details>`;
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
const ulid = () => Array.from({ length: 26 }, () => '0123456789ABCDEFGHJKMNPQRSTVWXYZ'[int(0, 31)]).join('');

// A task: its ui messages, api messages, metadata and history item, of about
// `budget` bytes (ui + api). plant: put "race condition" in one message.
function task(id, cwd, budget, plant) {
	let ts = Number(id) + 40;
	const first = sentence();
	const ui = [{ ts, type: 'say', say: 'task', text: first, modelInfo: MODEL, conversationHistoryIndex: -1 }];
	const api = [{ role: 'user', content: [{ type: 'text', text: `<task>\n${first}\n</task>` },
		{ type: 'text', text: ENV(cwd, ts) }], ts }];
	let size = JSON.stringify(ui).length + JSON.stringify(api).length;
	let tokensIn = 0, tokensOut = 0, cost = 0;
	const push = (arr, m) => {
		arr.push(m);
		size += JSON.stringify(m).length + 1;
	};
	let turn = 0;
	const plantAt = plant ? 0 : -1;
	do {
		const hi = api.length - 1;
		const userText = api[hi].content.map((b) => b.text || '').join('\n');
		const tin = int(2000, 60000), tout = int(50, 2000);
		tokensIn += tin; tokensOut += tout; cost += tin * 3e-6 + tout * 15e-6;
		push(ui, { ts: ts += int(50, 900), type: 'say', say: 'api_req_started',
			text: JSON.stringify({ request: userText.slice(0, 20000), tokensIn: tin, tokensOut: tout,
				cacheWrites: int(0, 5000), cacheReads: int(0, 50000), cost: tin * 3e-6 + tout * 15e-6 }),
			modelInfo: MODEL, conversationHistoryIndex: hi });
		let thinking = text(int(80, 1200));
		if (turn === plantAt) thinking += ' This looks like a race condition between the two writers.';
		push(ui, { ts: ts += int(500, 8000), type: 'say', say: 'text', text: thinking,
			modelInfo: MODEL, conversationHistoryIndex: hi });
		const p = srcPath();
		const content = text(int(300, 6000));
		const toolKind = pick(['editedExistingFile', 'newFileCreated', 'readFile', 'listFilesRecursive']);
		push(ui, { ts: ts += int(20, 400), type: 'say', say: 'tool',
			text: JSON.stringify({ tool: toolKind, path: p, content, operationIsLocatedInWorkspace: true }),
			modelInfo: MODEL, conversationHistoryIndex: hi + 1 });
		push(api, { role: 'assistant', content: [{ type: 'text', text: `<thinking>${thinking}</thinking>\n` +
			`<write_to_file>\n<path>${p}</path>\n<content>\n${content}\n</content>\n</write_to_file>`, call_id: '' }],
			modelInfo: { modelId: MODEL.modelId, providerId: MODEL.providerId, mode: 'act' },
			metrics: { tokens: { prompt: tin, completion: tout, cached: int(0, 50000) } }, ts: ts += 3 });
		if (rnd() < 0.5)
			push(ui, { ts: ts += int(100, 900), type: 'say', say: 'checkpoint_created',
				conversationHistoryIndex: hi + 1, lastCheckpointHash: hex(40), isCheckpointCheckedOut: false });
		push(api, { role: 'user', content: [{ type: 'text', text: `[write_to_file for '${p}'] Result:\n` +
			`The content was successfully saved to ${p}.\n\n${text(int(100, 3000))}` },
			{ type: 'text', text: ENV(cwd, ts) }], ts: ts += int(100, 900) });
		turn++;
	} while (size < budget);
	push(ui, { ts: ts += int(100, 2000), type: 'say', say: 'completion_result', text: text(int(100, 800)),
		modelInfo: MODEL, conversationHistoryIndex: api.length - 1 });
	push(ui, { ts: ts += 10, type: 'ask', ask: 'completion_result', text: '', modelInfo: MODEL,
		conversationHistoryIndex: api.length - 1 });
	const files = Array.from({ length: int(1, 8) }, () => ({ path: srcPath(),
		record_state: pick(['active', 'stale']), record_source: pick(['read_tool', 'cline_edited', 'file_mentioned']),
		cline_read_date: ts - int(0, 100000), cline_edit_date: rnd() < 0.5 ? ts - int(0, 100000) : null,
		user_edit_date: null }));
	const metadata = { files_in_context: files,
		model_usage: [{ ts: Number(id) + 170, model_id: MODEL.modelId, model_provider_id: MODEL.providerId, mode: 'act' }],
		environment_history: [{ ts: Number(id) + 160, os_name: 'linux', os_version: '6.18.44', os_arch: 'x64',
			host_name: 'Visual Studio Code', host_version: '1.105.0', cline_version: '3.82.0' }] };
	const item = { id, ulid: ulid(), ts, task: first, tokensIn, tokensOut, cacheWrites: 0, cacheReads: 0,
		totalCost: Math.round(cost * 1e4) / 1e4, size, cwdOnTaskInitialization: cwd, isFavorited: rnd() < 0.02,
		modelId: MODEL.modelId };
	return { ui, api, metadata, item };
}

// A short API message, the same shape for the small and the long conversation.
function shortMessage(i, ts) {
	return i % 2 === 0
		? { role: 'user', content: [{ type: 'text', text: text(int(60, 200)) }], ts }
		: { role: 'assistant', content: [{ type: 'text', text: text(int(60, 200)) }],
			modelInfo: { modelId: MODEL.modelId, providerId: MODEL.providerId, mode: 'act' }, ts };
}

// ---- writing -----------------------------------------------------------------
let nfiles = 0, nbytes = 0;
function write(rel, data) {
	const p = path.join(out, rel);
	fs.mkdirSync(path.dirname(p), { recursive: true });
	fs.writeFileSync(p, data);
	nfiles++;
	nbytes += Buffer.byteLength(data);
}
function writeTask(t) {
	const dir = `tasks/${t.item.id}`;
	write(`${dir}/ui_messages.json`, JSON.stringify(t.ui));
	write(`${dir}/api_conversation_history.json`, JSON.stringify(t.api));
	write(`${dir}/task_metadata.json`, JSON.stringify(t.metadata, null, 2));
}

fs.mkdirSync(out, { recursive: true });
if (fs.readdirSync(out).length)
	throw new Error(`${out} is not empty`);

const history = [];
let id = 1735689600000; // 2025-01-01
let planted = 0;
const mean = 0.85 * TOTAL / (NTASKS + 3); // budgets overshoot by about 15 %
const sigma = 1.1;
for (let i = 0; i < NTASKS; i++) {
	id += int(60000, 3 * 3600000);
	const budget = Math.min(4e6, Math.max(8192, mean * Math.exp(sigma * gauss() - sigma * sigma / 2)));
	const plant = rnd() < 0.01;
	const t = task(String(id), zipfWorkspace(), budget, plant);
	planted += plant;
	writeTask(t);
	history.push(t.item);
	if (process.stderr.isTTY && i % 200 === 0)
		process.stderr.write(`\rgen: ${i}/${NTASKS} tasks, ${(nbytes / 1e6).toFixed(0)} MB`);
}
if (process.stderr.isTTY)
	process.stderr.write('\r\x1b[K');

// The big task: its ui_messages.json is BIG bytes.
id += 3600000;
const big = task(String(id), WORKSPACES[0], 16e3, false);
while (JSON.stringify(big.ui).length < BIG) {
	const more = task(String(id), WORKSPACES[0], 2e6, false);
	big.ui.push(...more.ui.slice(1));
	big.api.push(...more.api.slice(1));
}
big.item.size = JSON.stringify(big.ui).length + JSON.stringify(big.api).length;
writeTask(big);
history.push(big.item);

// The small and the long conversation.
const conv = {};
for (const [name, n] of [['small', 10], ['long', LONG]]) {
	id += 3600000;
	const t = task(String(id), WORKSPACES[1], 8192, false);
	let ts = Number(id) + 100;
	t.api = Array.from({ length: n }, (_, i) => shortMessage(i, ts += int(100, 5000)));
	writeTask(t);
	history.push(t.item);
	conv[name] = t.item.id;
}
write('state/taskHistory.json', JSON.stringify(history));

// The client's own plain files (as the 2.18.0 fixture has them).
write('globalState.json', JSON.stringify({ 'cline.generatedMachineId': hex(32), mode: 'act',
	planModeApiProvider: 'anthropic', actModeApiProvider: 'anthropic', welcomeViewCompleted: true,
	lastShownAnnouncementId: 'oct-2025' }, null, 2));
write('settings/cline_mcp_settings.json', JSON.stringify({ mcpServers: {} }, null, 2));

// The workspace with the number of tasks nearest to 10 (the view workloads list it).
const byWs = new Map();
for (const it of history)
	byWs.set(it.cwdOnTaskInitialization, [...(byWs.get(it.cwdOnTaskInitialization) || []), it.id]);
const smallWs = [...byWs.entries()].sort((a, b) => Math.abs(a[1].length - 10) - Math.abs(b[1].length - 10))[0];

process.stdout.write(JSON.stringify({ tasks: history.length, files: nfiles, bytes: nbytes,
	planted, big: big.item.id, bigUiBytes: JSON.stringify(big.ui).length, small: conv.small, long: conv.long,
	longMessages: LONG, smallWs: smallWs[0], smallWsTasks: smallWs[1].join(' '), smallWsView: viewName(smallWs[0]),
	convWsView: viewName(WORKSPACES[1]) }) + '\n');

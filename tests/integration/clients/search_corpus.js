// SPDX-License-Identifier: GPL-2.0-or-later
// search_corpus.js: conversations to search, and a reference to search them
// with, for tests/integration/search.sh. Deterministic for a seed.
//
//   search_corpus.js gen DIR SEED TASKS      a Cline folder (classic tasks, CLI 3.x
//                                            sessions with a subagent) into DIR
//   search_corpus.js more DIR SEED N         N more messages, each printed as one
//                                            JSON line (for >> to messages.jsonl)
//   search_corpus.js queries SEED N          N one- and two-word queries, one a line
//   search_corpus.js markers                 the marker words, one a line
//   search_corpus.js ref ROOT QUERIES        for each query of the file QUERIES, the
//                                            tasks whose messages match it, as
//                                            "query<TAB>id id ..." (ids sorted)
//
// The reference is written apart from convfs's C code, from the rules as
// docs/ARCHITECTURE.md ("Search") states them: which strings of a message
// are its text; unicode61's tokens (runs of letters and digits, case folded,
// accents removed), none over 64 bytes; an identifier of ASCII letters and
// digits comes apart at its camelCase humps, its parts one position each and
// the whole word beside the first in a message (not in a query); a query
// word is the phrase of its tokens, and a message matches a query if it
// matches each word. Markers ("qm" and letters) appear only as whole words,
// surrounded by spaces, in text that is indexed, never in a file's other
// fields: what grep -rliw finds of one in the plain folder is what the
// index must find.
'use strict';

const fs = require('fs');
const path = require('path');
const { prng } = require('./common.js');

// ---- words -----------------------------------------------------------------

const PLAIN = ('fix bug race condition docker compose volume cache lock thread worker queue retry ' +
	'timeout parser token schema migration index table column query commit branch merge deploy ' +
	'server client request response stream buffer memory leak crash panic error warning the a of ' +
	'and to in is it for').split(' ');
const ACCENTED = ['café', 'naïve', 'über', 'Ärger', 'déjà', 'façade', 'señor', 'crème', 'Éclair', 'jalapeño'];
const IDENTS = ['getUserName', 'parseJSON', 'HTTPServer', 'fetchRemoteConfig', 'v2Api', 'snake_case_name',
	'ERR_CONN_RESET', 'src/utils/fileName.ts', 'lib/cacheStore.go', 'max_retry_count', 'OAuthToken',
	'userCacheKey'];
const MARKERS = ['qmalpha', 'qmbravo', 'qmcharlie', 'qmdelta', 'qmecho', 'qmfoxtrot', 'qmgolf', 'qmhotel',
	'qmindia', 'qmjuliet', 'qmkilo', 'qmlima'];

function sentence(rnd, withMarker) {
	const n = 4 + Math.floor(rnd() * 10);
	const w = [];
	for (let i = 0; i < n; i++) {
		const x = rnd();
		w.push(x < 0.7 ? PLAIN[Math.floor(rnd() * PLAIN.length)]
			: x < 0.85 ? ACCENTED[Math.floor(rnd() * ACCENTED.length)]
				: IDENTS[Math.floor(rnd() * IDENTS.length)]);
	}
	if (withMarker)
		w.splice(Math.floor(rnd() * (w.length + 1)), 0, MARKERS[Math.floor(rnd() * MARKERS.length)]);
	// punctuation around words, never next to a marker (which stays a whole word for grep -w)
	return w.map((x) => (MARKERS.includes(x) || rnd() < 0.8 ? x : x + ',')).join(' ') + '.';
}

// ---- a folder ------------------------------------------------------------------

function write(file, data) {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	fs.writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data));
}

function apiMessage(rnd, role, ts) {
	const m = rnd() < 0.5 ? sentence(rnd, rnd() < 0.2) : null;
	if (m)
		return { role, content: m, ts };
	const blocks = [{ type: 'text', text: sentence(rnd, rnd() < 0.2) }];
	if (role === 'assistant' && rnd() < 0.5)
		blocks.push({ type: 'tool_use', id: 'toolu_' + Math.floor(rnd() * 1e9), name: 'write_to_file',
			input: { path: IDENTS[7], content: sentence(rnd, rnd() < 0.2) } });
	if (role === 'user' && rnd() < 0.4)
		blocks.push({ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: sentence(rnd, false) },
			{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUg' } }] });
	return { role, content: blocks, ts };
}

function uiMessages(rnd, first, ts) {
	const ui = [{ ts, type: 'say', say: 'task', text: first }];
	const n = 2 + Math.floor(rnd() * 6);
	for (let i = 0; i < n; i++) {
		ts += 1000;
		ui.push({ ts, type: 'say', say: 'api_req_started', text: JSON.stringify({ request: '(the request)', cost: 0.01 }) });
		ts += 1000;
		ui.push({ ts, type: 'say', say: rnd() < 0.8 ? 'text' : 'completion_result', text: sentence(rnd, rnd() < 0.2),
			partial: false });
		if (rnd() < 0.3) {
			ts += 1000;
			ui.push({ ts, type: 'say', say: 'tool', text: JSON.stringify({ tool: 'editedExistingFile', path: IDENTS[8],
				content: sentence(rnd, rnd() < 0.2) }) });
		}
	}
	return ui;
}

function gen(dir, seed, ntasks) {
	const rnd = prng(seed);
	const history = [];
	let ts = 1740000000000;
	for (let i = 0; i < ntasks; i++) {
		ts += 3600000;
		const id = String(ts);
		const first = sentence(rnd, rnd() < 0.3);
		const api = [{ role: 'user', content: [{ type: 'text', text: `<task>\n${first}\n</task>` }], ts: ts + 1 }];
		for (let k = 0, n = 1 + Math.floor(rnd() * 6); k < n; k++)
			api.push(apiMessage(rnd, k % 2 ? 'user' : 'assistant', ts + 10 + k));
		write(`${dir}/tasks/${id}/api_conversation_history.json`, api);
		write(`${dir}/tasks/${id}/ui_messages.json`, uiMessages(rnd, first, ts + 2));
		write(`${dir}/tasks/${id}/task_metadata.json`, JSON.stringify({ files_in_context: [] }, null, 2));
		history.push({ id, ts, task: first, cwdOnTaskInitialization: `/home/dev/projects/${['alpha', 'beta', 'gamma'][i % 3]}` });
	}
	write(`${dir}/state/taskHistory.json`, history);
	// CLI 3.x sessions, one with a subagent's conversation
	for (let i = 0; i < Math.max(1, ntasks / 10); i++) {
		ts += 3600000;
		const sid = `${ts}_s${i}x`;
		const first = sentence(rnd, rnd() < 0.3);
		const messages = [{ id: `m${i}a`, role: 'user', content: [{ type: 'text', text: first }], ts }];
		for (let k = 0, n = 1 + Math.floor(rnd() * 5); k < n; k++)
			messages.push(Object.assign({ id: `m${i}${k}` }, apiMessage(rnd, k % 2 ? 'user' : 'assistant', ts + k + 1)));
		write(`${dir}/sessions/${sid}/${sid}.json`, { version: 1, session_id: sid, cwd: '/home/dev/projects/delta',
			prompt: first, metadata: { title: first } });
		write(`${dir}/sessions/${sid}/${sid}.messages.json`, { version: 1, sessionId: sid, messages });
		if (i === 0)
			write(`${dir}/sessions/${sid}/helper.messages.json`, { version: 1, sessionId: sid, agent: 'helper',
				messages: [{ id: 'h1', role: 'assistant', content: [{ type: 'text', text: sentence(rnd, true) }], ts }] });
	}
}

// ---- the reference -----------------------------------------------------------------

// The strings of a message that are its text, in the order of its members.
function textOf(m) {
	const out = [];
	const all = (v) => {
		if (typeof v === 'string')
			out.push(v);
		else if (Array.isArray(v))
			v.forEach(all);
		else if (v && typeof v === 'object')
			Object.values(v).forEach(all);
	};
	const blocks = (list, depth) => {
		if (depth > 4)
			return;
		for (const b of list) {
			if (!b || typeof b !== 'object' || Array.isArray(b))
				continue;
			for (const [k, v] of Object.entries(b)) {
				if (b.type === 'thinking') {
					if (k === 'thinking' && typeof v === 'string')
						out.push(v);
				} else if (b.type === 'tool_use' || b.type === 'server_tool_use') {
					if (k === 'name' && typeof v === 'string')
						out.push(v);
					else if (k === 'input')
						all(v);
				} else if (b.type === 'tool_result') {
					if (k === 'content')
						content(v, depth + 1);
				} else if (['image', 'document', 'redacted_thinking'].includes(b.type)) {
					// not text
				} else if (k === 'text' && typeof v === 'string') {
					out.push(v);
				}
			}
		}
	};
	const content = (v, depth) => {
		if (typeof v === 'string')
			out.push(v);
		else if (Array.isArray(v))
			blocks(v, depth);
	};
	const copy = typeof m.say === 'string' &&
		(m.say.startsWith('api_req_') || m.say === 'deleted_api_reqs' || m.say === 'browser_action_result');
	for (const [k, v] of Object.entries(m)) {
		if (k === 'content')
			content(v, 0);
		else if (((k === 'text' && !copy) || k === 'reasoning') && typeof v === 'string')
			out.push(v);
	}
	return out.join('\n');
}

function humps(word) {
	return word.replace(/([a-z0-9])([A-Z])/g, '$1\0$2').replace(/([A-Z])([A-Z][a-z])/g, '$1\0$2').split('\0');
}

const fold = (s) => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

// The positions of a text: each a set of tokens. inQuery: no whole word beside the parts.
function positions(text, inQuery) {
	const pos = [];
	for (const m of text.matchAll(/[\p{L}\p{N}\p{Co}]+/gu)) {
		const word = m[0], folded = fold(word);
		if (Buffer.byteLength(folded) > 64)
			continue;
		const parts = /^[A-Za-z0-9]+$/.test(word) ? humps(word) : [word];
		if (parts.length < 2) {
			pos.push(new Set([folded]));
			continue;
		}
		parts.forEach((p, i) => pos.push(new Set(i === 0 && !inQuery ? [p.toLowerCase(), folded] : [p.toLowerCase()])));
	}
	return pos;
}

function phraseIn(doc, phrase) {
	if (phrase.length === 0)
		return false;
	for (let i = 0; i + phrase.length <= doc.length; i++)
		if (phrase.every((p, k) => [...p].every((t) => doc[i + k].has(t))))
			return true;
	return false;
}

function conversations(root) {
	const out = []; // [task, [messages]]
	const json = (f) => { try { return JSON.parse(fs.readFileSync(f, 'utf8')); } catch (e) { return null; } };
	for (const id of fs.existsSync(`${root}/tasks`) ? fs.readdirSync(`${root}/tasks`) : [])
		for (const f of ['api_conversation_history.json', 'ui_messages.json']) {
			const a = json(`${root}/tasks/${id}/${f}`);
			if (Array.isArray(a))
				out.push([id, a]);
		}
	for (const sid of fs.existsSync(`${root}/sessions`) ? fs.readdirSync(`${root}/sessions`) : [])
		for (const f of fs.readdirSync(`${root}/sessions/${sid}`).filter((n) => n.endsWith('.messages.json'))) {
			const o = json(`${root}/sessions/${sid}/${f}`);
			if (o && Array.isArray(o.messages))
				out.push([sid, o.messages]);
		}
	return out;
}

function ref(root, queriesFile) {
	const docs = [];
	for (const [task, messages] of conversations(root))
		for (const m of messages)
			if (m && typeof m === 'object')
				docs.push([task, positions(textOf(m), false)]);
	for (const q of fs.readFileSync(queriesFile, 'utf8').split('\n').filter(Boolean)) {
		const words = q.split(/\s+/).filter(Boolean).map((w) => positions(w, true).map((p) => [...p][0]));
		const found = new Set();
		for (const [task, doc] of docs)
			if (words.every((w) => phraseIn(doc, w.map((t) => new Set([t])))))
				found.add(task);
		process.stdout.write(`${q}\t${[...found].sort().join(' ')}\n`);
	}
}

function queries(seed, n) {
	const rnd = prng(seed);
	const pool = [...PLAIN.filter((w) => w.length > 3), ...ACCENTED, ...IDENTS, ...MARKERS,
		'getusername', 'USERNAME', 'user', 'name', 'cache', 'json', 'server', 'HTTP', 'conn', 'reset', 'utils',
		'filename', 'ts', 'go', 'v2', 'api', 'oauth', 'token', 'Cafe', 'NAIVE', 'uber', 'arger', 'deja', 'facade',
		'snake', 'retry_count', 'Retry', 'nothinghere', 'ÉCLAIR', 'jalapeno'];
	for (let i = 0; i < n; i++) {
		const a = pool[Math.floor(rnd() * pool.length)];
		process.stdout.write(rnd() < 0.5 ? `${a}\n` : `${a} ${pool[Math.floor(rnd() * pool.length)]}\n`);
	}
}

function more(dir, seed, n) {
	const rnd = prng(seed);
	for (let i = 0; i < n; i++)
		process.stdout.write(JSON.stringify(apiMessage(rnd, i % 2 ? 'assistant' : 'user', 1790000000000 + i)) + '\n');
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'gen')
	gen(args[0], Number(args[1]), Number(args[2]));
else if (mode === 'ref')
	ref(args[0], args[1]);
else if (mode === 'queries')
	queries(Number(args[0]), Number(args[1]));
else if (mode === 'more')
	more(args[0], Number(args[1]), Number(args[2]));
else if (mode === 'markers')
	process.stdout.write(MARKERS.join('\n') + '\n');
else {
	process.stderr.write('usage: search_corpus.js gen|more|queries|markers|ref ...\n');
	process.exit(2);
}

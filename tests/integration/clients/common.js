// SPDX-License-Identifier: GPL-2.0-or-later
// common.js: what the client scripts share: reporting a failure the way the
// tests read it (the error code alone on stdout, the details on stderr), and
// Cline-like content that is the same for the same seed.
'use strict';

const fs = require('fs');
const path = require('path');

// Prints the error's code (EINVAL, ENOENT, ...) on stdout and exits 1.
function die(err) {
	const code = (err && err.code) || 'ERROR';
	process.stdout.write(code + '\n');
	process.stderr.write(`${path.basename(process.argv[1])}: ${code}: ${err && err.message}\n`);
	process.exit(1);
}

// Real clients read a file before they rewrite it: Cline loads
// taskHistory.json, and a task's messages when it resumes the task, and saves
// what it loaded plus its changes. A merging filesystem may take that read as
// what the writer knew (an item goes away only if the writer had read it), so
// every write script here reads its target first, as the clients do.
function readBeforeWrite(target) {
	try {
		return fs.readFileSync(target);
	} catch (e) {
		if (e.code === 'ENOENT')
			return null;
		throw e;
	}
}

function run(main) {
	process.on('uncaughtException', die);
	Promise.resolve().then(main).catch(die);
}

// A small deterministic PRNG (mulberry32), so a version can be rebuilt.
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

const WORDS = ('the a file test add fix race condition in parser module handle edge case ' +
	'function return value update tests écrire 日本語 ünïcödé "quoted" back\\slash tab\there').split(' ');

function words(rnd, n) {
	const out = [];
	for (let i = 0; i < n; i++)
		out.push(WORDS[Math.floor(rnd() * WORDS.length)]);
	return out.join(' ');
}

const T0 = 1795306271039;

// The i-th ClineMessage of a task (i counts from 0), about `size` bytes of text.
function uiMessage(seed, i, size = 200) {
	const rnd = prng(seed * 100003 + i);
	const ts = T0 + seed * 1000000 + i * 137;
	if (i === 0)
		return { ts, type: 'say', say: 'task', text: words(rnd, 8),
			modelInfo: { providerId: 'openai', modelId: 'fake-model', mode: 'act' },
			conversationHistoryIndex: -1 };
	switch (i % 4) {
	case 1:
		return { ts, type: 'say', say: 'api_req_started',
			text: JSON.stringify({ request: words(rnd, Math.max(1, size / 7)), tokensIn: i, tokensOut: 20, cost: 0 }),
			conversationHistoryIndex: i - 1 };
	case 2:
		return { ts, type: 'say', say: 'text', text: words(rnd, Math.max(1, size / 7)),
			partial: false, conversationHistoryIndex: i - 1 };
	case 3:
		return { ts, type: 'ask', ask: 'tool',
			text: JSON.stringify({ tool: 'editedExistingFile', path: `src/f${i}.js`, content: words(rnd, Math.max(1, size / 7)) }),
			conversationHistoryIndex: i - 1 };
	default:
		return { ts, type: 'say', say: 'checkpoint_created',
			lastCheckpointHash: (seed * 7919 + i).toString(16).padStart(40, '0'),
			conversationHistoryIndex: i - 1, isCheckpointCheckedOut: false };
	}
}

function apiMessage(seed, i, size = 200) {
	const rnd = prng(seed * 7 + i);
	if (i % 2 === 0)
		return { role: 'user', content: [{ type: 'text', text: words(rnd, Math.max(1, size / 7)) }],
			ts: T0 + seed * 1000000 + i * 211 };
	return { role: 'assistant', content: [
		{ type: 'text', text: words(rnd, Math.max(1, size / 14)) },
		{ type: 'tool_use', id: `toolu_${seed}_${i}`, name: 'write_to_file',
			input: { path: `f${i}.txt`, content: words(rnd, Math.max(1, size / 14)) } }],
		ts: T0 + seed * 1000000 + i * 211 + 5,
		modelInfo: { modelId: 'fake-model', providerId: 'openai', mode: 'act' } };
}

function historyItem(seed, i) {
	const rnd = prng(seed * 31 + i);
	const id = String(T0 + seed * 1000000 + i * 1000);
	return { id, ts: Number(id) + 5000, task: words(rnd, 6), tokensIn: 100 + i, tokensOut: 20,
		cacheWrites: 0, cacheReads: 0, totalCost: 0, size: 1000 + i,
		cwdOnTaskInitialization: '/home/dev/projects/webapp', isFavorited: false, modelId: 'fake-model' };
}

function taskMetadata(seed, n) {
	const files = [];
	for (let i = 0; i < n; i++)
		files.push({ path: `src/f${i}.js`, record_state: i % 3 ? 'active' : 'stale', record_source: 'cline_edited',
			cline_read_date: T0 + seed + i, cline_edit_date: T0 + seed + i, user_edit_date: null });
	return { files_in_context: files,
		model_usage: [{ ts: T0 + seed, model_id: 'fake-model', model_provider_id: 'openai', mode: 'act' }],
		environment_history: [] };
}

// The whole content of a doc: kind is ui, api, history or metadata.
function content(kind, count, seed, { pretty = false, size = 200 } = {}) {
	let value;
	const arr = (fn) => Array.from({ length: count }, (_, i) => fn(seed, i, size));
	switch (kind) {
	case 'ui': value = arr(uiMessage); break;
	case 'api': value = arr(apiMessage); break;
	case 'history': value = arr(historyItem); break;
	case 'metadata': return JSON.stringify(taskMetadata(seed, count), null, 2);
	default: throw new Error(`unknown kind '${kind}'`);
	}
	return pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
}

// Cline's atomicWriteFile (write pattern b): a unique temp file beside the
// target, then rename over it; the temp file is removed if anything fails.
async function atomicWriteFile(filePath, data) {
	const tmpPath = `${filePath}.tmp.${Date.now()}.${Math.random().toString(36).slice(2)}.json`;
	try {
		await fs.promises.writeFile(tmpPath, data, 'utf8');
		await fs.promises.rename(tmpPath, filePath);
	} catch (error) {
		await fs.promises.unlink(tmpPath).catch(() => {});
		throw error;
	}
}

module.exports = { die, run, readBeforeWrite, atomicWriteFile, prng, uiMessage, apiMessage, historyItem, taskMetadata, content };

// One simulated Cline window (a separate process, as each VS Code window is).
//
// It behaves as Cline 3.x does with its history: taskHistory.json is read once
// at start and kept in memory, reloaded when a file watcher sees it change,
// and rewritten whole after a debounce with atomicWriteFile (temp file +
// rename). Each task's ui_messages.json and api_conversation_history.json are
// kept in memory and rewritten whole after every message, the same way.
// Some windows also work on one shared task, as two windows opened on the
// same task do.
//
//   node window.js DIR WINDOW TASKS MESSAGES SHARED_ID DEBOUNCE_MS
// Prints one JSON line: the task ids and message ts it wrote.
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, win, ntasks, nmsgs, sharedId, debounceMs] = process.argv.slice(2).map((v, i) => (i === 0 ? v : Number(v)));
const historyPath = path.join(dir, 'state', 'taskHistory.json');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Cline's atomicWriteFile: temp file beside the target, then rename over it.
async function atomicWriteFile(target, content) {
	const tmp = `${target}.tmp.${Date.now()}.${Math.random().toString(36).slice(2)}.json`;
	await fs.promises.writeFile(tmp, content);
	await fs.promises.rename(tmp, target);
}

async function readJson(file, fallback) {
	let text;
	try {
		text = await fs.promises.readFile(file, 'utf8');
	} catch (e) {
		if (e.code === 'ENOENT') return fallback;
		throw new Error(`${path.relative(dir, file)}: ${e.code || ''} ${e.message}`);
	}
	try {
		return JSON.parse(text);
	} catch (e) {
		// What was read says whether it was torn, cut short or empty.
		throw new Error(`${path.relative(dir, file)}: ${e.message} in ${text.length} ` +
			`characters: ${JSON.stringify(text.slice(0, 40))} ... ${JSON.stringify(text.slice(-40))}`);
	}
}

// The window's copy of the history. A reload replaces it with the file's
// content, so it waits while the window has changes not yet saved (a save due
// or under way); the window's own save makes the watcher fire again.
let history = [];
let saveTimer = null;
let inFlight = 0;
let saving = Promise.resolve();
let reloadWanted = false;
let reloading = Promise.resolve();
function reload() {
	if (saveTimer || inFlight) {
		reloadWanted = true;
		return;
	}
	reloadWanted = false;
	reloading = reloading.then(async () => {
		const fresh = await readJson(historyPath, history);
		if (!saveTimer && !inFlight) history = fresh;
		else reloadWanted = true;
	}).catch((e) => {
		console.error(`window ${win}: reload of taskHistory.json failed: ${e.message}`);
		process.exitCode = 1;
	});
}
function scheduleHistorySave() {
	if (saveTimer) return; // a save is already due: it will take this change too
	saveTimer = setTimeout(() => {
		saveTimer = null;
		inFlight++;
		const content = JSON.stringify(history);
		saving = saving.then(() => atomicWriteFile(historyPath, content)).finally(() => {
			inFlight--;
			if (reloadWanted) reload();
		});
	}, debounceMs);
}

// Unique, increasing ts: milliseconds, with the window in the low digits.
let lastTs = 0;
function ts() {
	let t = Date.now() * 100 + win;
	if (t <= lastTs) t = lastTs + 100;
	lastTs = t;
	return t;
}

async function addMessage(task, text) {
	const t = ts();
	task.ui.push({ ts: t, type: 'say', say: 'text', text, conversationHistoryIndex: task.api.length - 1 });
	task.api.push({ role: task.api.length % 2 ? 'assistant' : 'user', content: [{ type: 'text', text }], ts: t });
	const tdir = path.join(dir, 'tasks', task.id);
	await atomicWriteFile(path.join(tdir, 'ui_messages.json'), JSON.stringify(task.ui));
	await atomicWriteFile(path.join(tdir, 'api_conversation_history.json'), JSON.stringify(task.api));
	return t;
}

async function main() {
	history = await readJson(historyPath, []);
	const watcher = fs.watch(path.dirname(historyPath), (ev, name) => {
		if (name === 'taskHistory.json') reload();
	});
	const wrote = { window: win, tasks: [], messages: {} };
	const shared = { id: String(sharedId), ui: [], api: [] };
	if (sharedId) {
		shared.ui = await readJson(path.join(dir, 'tasks', shared.id, 'ui_messages.json'), []);
		shared.api = await readJson(path.join(dir, 'tasks', shared.id, 'api_conversation_history.json'), []);
		wrote.messages[shared.id] = [];
	}
	for (let i = 0; i < ntasks; i++) {
		const id = String(1800000000000 + win * 1000 + i);
		const task = { id, ui: [], api: [] };
		await fs.promises.mkdir(path.join(dir, 'tasks', id), { recursive: true });
		wrote.tasks.push(id);
		wrote.messages[id] = [];
		history.push({ id, ts: Date.now(), task: `window ${win} task ${i}`, tokensIn: 0, tokensOut: 0, totalCost: 0 });
		scheduleHistorySave();
		for (let m = 0; m < nmsgs; m++) {
			wrote.messages[id].push(await addMessage(task, `w${win} t${i} m${m}`));
			// Cline's updateTaskHistory after each message: upsert the item.
			const item = history.find((h) => h.id === id);
			if (item) item.tokensIn = m;
			else history.push({ id, ts: Date.now(), task: `window ${win} task ${i}`, tokensIn: m, tokensOut: 0, totalCost: 0 });
			scheduleHistorySave();
			if (sharedId && m % 2 === 0) {
				shared.ui = await readJson(path.join(dir, 'tasks', shared.id, 'ui_messages.json'), shared.ui);
				shared.api = await readJson(path.join(dir, 'tasks', shared.id, 'api_conversation_history.json'), shared.api);
				wrote.messages[shared.id].push(await addMessage(shared, `w${win} shared t${i} m${m}`));
			}
			await sleep(5 + Math.random() * 10);
		}
		// The task completes: one more update of its history item.
		const done = history.find((h) => h.id === id);
		if (done) done.tokensOut = nmsgs;
		else history.push({ id, ts: Date.now(), task: `window ${win} task ${i}`, tokensIn: nmsgs, tokensOut: nmsgs, totalCost: 0 });
		scheduleHistorySave();
	}
	await sleep(debounceMs * 3);
	await saving;
	await reloading;
	watcher.close();
	process.stdout.write(JSON.stringify(wrote) + '\n');
}

main().catch((e) => {
	console.error(`window ${win}: ${e.code || ''} ${e.message}`);
	process.exit(1);
});

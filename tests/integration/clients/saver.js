// SPDX-License-Identifier: GPL-2.0-or-later
// saver.js save MOUNT TASK RECORD STOP
//   A Cline window that saves a task every 100 ms until the file STOP
//   exists: ui_messages.json gets one message more each time
//   (common.uiMessage(SEED, 0..n-1)), written as Cline writes it (the task's
//   folder made if missing, then atomicWriteFile: temp file + rename). A save
//   that fails is not retried: the message stays in memory and the next save
//   writes it with the others, as Cline does. So that a lost commit cannot
//   hide behind the next whole rewrite, each save N also writes a task of its
//   own once, tasks/<ONCE + N>/ui_messages.json holding message N - 1 alone,
//   never rewritten. After each save one line goes to RECORD (outside the
//   mount, fsynced):
//     ok N START END      both writes of save N returned success
//     fail N START CODE   one failed with CODE (ENOTCONN, ECONNABORTED, ...)
//   with times in ms since the epoch. Like an editor's log or the Cline CLI's
//   hub, it keeps a file of the mount open all along (client.log), and
//   writes a line to it after each save (errors ignored).
// saver.js check FILE MIN [EXACT]
//   FILE must hold messages 0..n-1 of the same sequence with n >= MIN; with
//   EXACT, the very bytes of the save of EXACT messages. Prints n.
// saver.js check-once MOUNT RECORD BEFORE [report]
//   Every save recorded ok that returned before BEFORE (ms since the epoch)
//   has its own task in MOUNT, byte for byte. Prints "<checked> <missing>";
//   fails if one is missing, unless `report`.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, uiMessage, atomicWriteFile } = require('./common.js');

const SEED = 15;
const ONCE = 1795306300000;
const onceFile = (mount, n) => path.join(mount, 'tasks', String(ONCE + n), 'ui_messages.json');
const onceText = (n) => JSON.stringify([uiMessage(SEED, n - 1)]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function save(mount, task, recordFile, stopFile) {
	const dir = path.join(mount, 'tasks', task);
	const file = path.join(dir, 'ui_messages.json');
	const record = fs.openSync(recordFile, 'a');
	const note = (line) => {
		fs.writeSync(record, line + '\n');
		fs.fsyncSync(record);
	};
	const log = fs.openSync(path.join(mount, 'client.log'), 'a');
	const ui = [];
	const t0 = Date.now();
	for (let k = 0; !fs.existsSync(stopFile); k++) {
		ui.push(uiMessage(SEED, ui.length));
		const start = Date.now();
		try {
			fs.mkdirSync(dir, { recursive: true });
			await atomicWriteFile(file, JSON.stringify(ui));
			fs.mkdirSync(path.dirname(onceFile(mount, ui.length)), { recursive: true });
			await atomicWriteFile(onceFile(mount, ui.length), onceText(ui.length));
			note(`ok ${ui.length} ${start} ${Date.now()}`);
		} catch (e) {
			note(`fail ${ui.length} ${start} ${e.code || 'ERROR'}`);
		}
		try {
			fs.writeSync(log, `saved ${ui.length}\n`);
		} catch (e) {
			// the log is on the mount that died: as an editor, go on
		}
		await sleep(Math.max(0, t0 + (k + 1) * 100 - Date.now()));
	}
}

function check(file, min, exact) {
	const text = fs.readFileSync(file, 'utf8');
	const got = JSON.parse(text);
	if (!Array.isArray(got))
		throw new Error(`${file} does not hold an array`);
	for (let i = 0; i < got.length; i++) {
		if (JSON.stringify(got[i]) !== JSON.stringify(uiMessage(SEED, i)))
			throw new Error(`${file}: message ${i} is not the one saved: ${JSON.stringify(got[i]).slice(0, 200)}`);
	}
	if (got.length < min)
		throw new Error(`${file} holds ${got.length} messages; a save of ${min} had returned success`);
	if (exact !== undefined) {
		const want = JSON.stringify(Array.from({ length: exact }, (_, i) => uiMessage(SEED, i)));
		if (text !== want)
			throw new Error(`${file} (${got.length} messages) is not byte for byte the last save that returned success (${exact} messages)`);
	}
	process.stdout.write(`${got.length}\n`);
}

function checkOnce(mount, recordFile, before, report) {
	let checked = 0;
	const missing = [];
	for (const line of fs.readFileSync(recordFile, 'utf8').split('\n')) {
		const [what, n, , end] = line.split(' ');
		if (what !== 'ok' || Number(end) >= before)
			continue;
		checked++;
		let text;
		try {
			text = fs.readFileSync(onceFile(mount, Number(n)), 'utf8');
		} catch (e) {
			text = e.code;
		}
		if (text !== onceText(Number(n)))
			missing.push(`save ${n} (${String(text).slice(0, 60)})`);
	}
	process.stdout.write(`${checked} ${missing.length}\n`);
	if (missing.length && !report)
		throw new Error(`${missing.length} of ${checked} saves that had returned are not in the store: ${missing.join(', ')}`);
}

run(async () => {
	const [mode, ...args] = process.argv.slice(2);
	if (mode === 'save')
		await save(...args);
	else if (mode === 'check-once')
		checkOnce(args[0], args[1], Number(args[2]), args[3] === 'report');
	else if (mode === 'check')
		check(args[0], Number(args[1]), args[2] === undefined ? undefined : Number(args[2]));
	else
		throw new Error(`unknown mode '${mode}'`);
});

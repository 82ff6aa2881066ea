// SPDX-License-Identifier: GPL-2.0-or-later
// saver.js save MOUNT TASK RECORD STOP
//   A Cline window that saves a task every 100 ms until the file STOP
//   exists: ui_messages.json gets one message more each time
//   (common.uiMessage(SEED, 0..n-1)), written as Cline writes it (the task's
//   folder made if missing, then atomicWriteFile: temp file + rename). A save
//   that fails is not retried: the message stays in memory and the next save
//   writes it with the others, as Cline does. After each save one line goes
//   to RECORD (outside the mount, fsynced):
//     ok N START END      the save of N messages returned success
//     fail N START CODE   it failed with CODE (ENOTCONN, ECONNABORTED, ...)
//   with times in ms since the epoch. Like an editor's log or the Cline CLI's
//   hub, it keeps a file of the mount open all along (client.log), and
//   writes a line to it after each save (errors ignored).
// saver.js check FILE MIN [EXACT]
//   FILE must hold messages 0..n-1 of the same sequence with n >= MIN; with
//   EXACT, the very bytes of the save of EXACT messages. Prints n.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, uiMessage, atomicWriteFile } = require('./common.js');

const SEED = 15;
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

run(async () => {
	const [mode, ...args] = process.argv.slice(2);
	if (mode === 'save')
		await save(...args);
	else if (mode === 'check')
		check(args[0], Number(args[1]), args[2] === undefined ? undefined : Number(args[2]));
	else
		throw new Error(`unknown mode '${mode}'`);
});

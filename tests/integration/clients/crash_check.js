// SPDX-License-Identifier: GPL-2.0-or-later
// crash_check.js MOUNT SEED RECORD_FILE
// Checks, after the daemon was killed during crash_writer.js and the store
// mounted again, that every write crash_writer.js recorded is there:
//   - ui_messages.json and api_conversation_history.json of TASK_A read back
//     exactly as the version with the last recorded count of messages, or
//     the one after it (written, but killed before it was recorded);
//   - the view's ui_messages.jsonl of TASK_B holds the appended lines 1..N
//     in order, N the last recorded count or one more, nothing torn;
//   - every recorded plain file has exactly its content.
// (The git commits are checked by crash_loop.sh with git itself.)
// Prints a summary; on a problem prints it and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const { uiMessage, apiMessage } = require('./common.js');
const { appendLine, TASK_A, VIEW_B } = require('./crash_writer.js');

const [mount, seedArg, recordFile] = process.argv.slice(2);
const seed = Number(seedArg);
const last = { ui: 0, api: 0, app: 0, plain: 0 };
for (const line of fs.readFileSync(recordFile, 'utf8').split('\n')) {
	const [kind, n] = line.split(' ');
	if (kind in last)
		last[kind] = Math.max(last[kind], Number(n));
}

let problems = 0;
const problem = (msg) => {
	problems++;
	process.stderr.write(`crash_check.js: ${msg}\n`);
};

function version(fn, count) {
	return JSON.stringify(Array.from({ length: count }, (_, i) => fn(seed, i)));
}

for (const [kind, file, fn] of [['ui', 'ui_messages.json', uiMessage],
	['api', 'api_conversation_history.json', apiMessage]]) {
	let got;
	try {
		got = fs.readFileSync(path.join(mount, 'tasks', TASK_A, file), 'utf8');
	} catch (e) {
		if (e.code === 'ENOENT' && last[kind] === 0)
			continue; // nothing recorded yet, and the first save not begun
		throw e;
	}
	if (got === '' && last[kind] === 0)
		console.log(`${file}: empty (its first save was cut short after the create)`);
	else if (got === version(fn, last[kind]))
		console.log(`${file}: ${last[kind]} messages (the last recorded version)`);
	else if (got === version(fn, last[kind] + 1))
		console.log(`${file}: ${last[kind] + 1} messages (the one after the last recorded version)`);
	else
		problem(`${file} is neither the last recorded version (${last[kind]} messages) nor the next; ` +
			`it has ${got.length} bytes: ${got.slice(0, 60)}...${got.slice(-60)}`);
}

const lines = fs.readFileSync(path.join(mount, VIEW_B), 'utf8').split('\n').filter((l) => l.includes('"crash append '));
const n = lines.length;
if (n !== last.app && n !== last.app + 1)
	problem(`${VIEW_B} has ${n} appended lines; ${last.app} were recorded`);
for (let i = 0; i < n; i++) {
	if (lines[i] + '\n' !== appendLine(i + 1)) {
		problem(`${VIEW_B}: appended line ${i + 1} reads ${JSON.stringify(lines[i].slice(0, 80))}`);
		break;
	}
}
console.log(`${VIEW_B}: ${n} appended lines`);

for (let i = 1; i <= last.plain; i++) {
	const want = `plain file ${i}\n`.repeat(i % 50 + 1);
	let got;
	try {
		got = fs.readFileSync(path.join(mount, 'crash', `plain-${i}.txt`), 'utf8');
	} catch (e) {
		got = e.code;
	}
	if (got !== want)
		problem(`crash/plain-${i}.txt was recorded but reads back ${JSON.stringify(got.slice(0, 40))}`);
}
console.log(`${last.plain} plain files`);
process.exit(problems ? 1 : 0);

// SPDX-License-Identifier: GPL-2.0-or-later
// check_burst.js MOUNT TASK SEED RECORD_FILE
// Checks, after the daemon was killed during burst.js and the store mounted
// again, that every save burst.js recorded is there:
//   - ui_messages.json and api_conversation_history.json read back exactly as
//     the last recorded version, or as the one after it (written, but killed
//     before it was recorded), never anything else;
//   - every recorded plain file has exactly its content.
// Prints what it found; on a problem prints it and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const { uiMessage, apiMessage } = require('./common.js');

const [mount, task, seedArg, recordFile] = process.argv.slice(2);
const seed = Number(seedArg);
const last = { ui: 0, api: 0 };
const plains = [];
for (const line of fs.readFileSync(recordFile, 'utf8').split('\n')) {
	const [kind, n] = line.split(' ');
	if (kind === 'plain')
		plains.push(Number(n));
	else if (kind)
		last[kind] = Number(n);
}

let problems = 0;
const problem = (msg) => {
	problems++;
	process.stderr.write(`check_burst.js: ${msg}\n`);
};

function version(fn, count) {
	return JSON.stringify(Array.from({ length: count }, (_, i) => fn(seed, i)));
}

for (const [kind, file, fn] of [['ui', 'ui_messages.json', uiMessage],
	['api', 'api_conversation_history.json', apiMessage]]) {
	const got = fs.readFileSync(path.join(mount, 'tasks', task, file), 'utf8');
	if (got === version(fn, last[kind]))
		console.log(`${file}: the last recorded version (${last[kind]} messages)`);
	else if (got === version(fn, last[kind] + 1))
		console.log(`${file}: the version after the last recorded one (${last[kind] + 1} messages)`);
	else
		problem(`${file} is neither the last recorded version (${last[kind]} messages) nor the next; ` +
			`it has ${got.length} bytes: ${got.slice(0, 60)}...${got.slice(-60)}`);
}
for (const i of plains) {
	const want = `plain file ${i}\n`.repeat(i % 50 + 1);
	let got;
	try {
		got = fs.readFileSync(path.join(mount, 'burst', `plain-${i}.txt`), 'utf8');
	} catch (e) {
		got = e.code;
	}
	if (got !== want)
		problem(`burst/plain-${i}.txt was recorded but reads back ${JSON.stringify(got.slice(0, 40))}`);
}
console.log(`${plains.length} recorded plain files checked`);
process.exit(problems ? 1 : 0);

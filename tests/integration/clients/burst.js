// SPDX-License-Identifier: GPL-2.0-or-later
// burst.js MOUNT TASK SEED RECORD_FILE
// A burst of saves, as a busy Cline window makes them, until something fails
// (the test kills the daemon meanwhile). It first reads the task's files, as
// Cline does when it resumes a task. Round i:
//   - tasks/TASK/ui_messages.json gets one message more (messages 0..10+i of
//     common.uiMessage(SEED, ...)), saved with atomicWriteFile (pattern b);
//   - tasks/TASK/api_conversation_history.json likewise (common.apiMessage),
//     saved with fs.writeFile (pattern a);
//   - a plain file burst/plain-<i>.txt is written with fs.writeFile.
// After each save returns, a line "ui N", "api N" or "plain i" is appended to
// RECORD_FILE (outside the mount) and fsynced: what the daemon must keep.
// Prints the error code of the failure that ends it and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, readBeforeWrite, uiMessage, apiMessage, atomicWriteFile } = require('./common.js');

run(async () => {
	const [mount, task, seedArg, recordFile] = process.argv.slice(2);
	const seed = Number(seedArg);
	const dir = path.join(mount, 'tasks', task);
	const record = fs.openSync(recordFile, 'a');
	const note = (line) => {
		fs.writeSync(record, line + '\n');
		fs.fsyncSync(record);
	};
	const ui = [];
	const api = [];
	for (let i = 0; i < 10; i++) {
		ui.push(uiMessage(seed, i));
		api.push(apiMessage(seed, i));
	}
	fs.mkdirSync(path.join(mount, 'burst'), { recursive: true });
	readBeforeWrite(path.join(dir, 'ui_messages.json')); // the task is resumed
	readBeforeWrite(path.join(dir, 'api_conversation_history.json'));
	for (let i = 1; ; i++) {
		ui.push(uiMessage(seed, ui.length));
		await atomicWriteFile(path.join(dir, 'ui_messages.json'), JSON.stringify(ui));
		note(`ui ${ui.length}`);
		api.push(apiMessage(seed, api.length));
		await fs.promises.writeFile(path.join(dir, 'api_conversation_history.json'), JSON.stringify(api));
		note(`api ${api.length}`);
		await fs.promises.writeFile(path.join(mount, 'burst', `plain-${i}.txt`), `plain file ${i}\n`.repeat(i % 50 + 1));
		note(`plain ${i}`);
	}
});

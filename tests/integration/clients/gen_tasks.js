// SPDX-License-Identifier: GPL-2.0-or-later
// gen_tasks.js DIR COUNT SEED [MESSAGES]
// Writes a Cline history of COUNT tasks into the plain folder DIR, as the
// extension leaves it: tasks/<id>/ with ui_messages.json,
// api_conversation_history.json (MESSAGES messages each, default 12) and
// task_metadata.json, and state/taskHistory.json with an item for each task.
// Task ids are common.historyItem(SEED, i)'s, so two seeds never meet. The
// same arguments always give the same bytes. Prints the ids, one a line.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, content, historyItem } = require('./common.js');

run(() => {
	const [dir, countArg, seedArg, msgArg] = process.argv.slice(2);
	const count = Number(countArg), seed = Number(seedArg), nmsgs = Number(msgArg || 12);
	const items = [];
	for (let i = 0; i < count; i++) {
		const item = historyItem(seed, i);
		const tdir = path.join(dir, 'tasks', item.id);
		fs.mkdirSync(tdir, { recursive: true });
		fs.writeFileSync(path.join(tdir, 'ui_messages.json'), content('ui', nmsgs, seed * 100000 + i, { size: 120 }));
		fs.writeFileSync(path.join(tdir, 'api_conversation_history.json'),
			content('api', nmsgs, seed * 100000 + i, { size: 120 }));
		fs.writeFileSync(path.join(tdir, 'task_metadata.json'), content('metadata', 2, seed * 100000 + i));
		items.push(item);
	}
	fs.mkdirSync(path.join(dir, 'state'), { recursive: true });
	fs.writeFileSync(path.join(dir, 'state', 'taskHistory.json'), JSON.stringify(items));
	process.stdout.write(items.map((it) => it.id).join('\n') + '\n');
});

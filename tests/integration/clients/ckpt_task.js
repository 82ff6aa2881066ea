// SPDX-License-Identifier: GPL-2.0-or-later
// ckpt_task.js MOUNT TASK WORKSPACE HASH...
// ckpt_task.js --key WORKSPACE
// Writes a task of the workspace WORKSPACE into the mount as Cline does
// (api_conversation_history.json and ui_messages.json by atomicWriteFile,
// then its item in state/taskHistory.json), with one checkpoint_created
// message for each HASH, in order, and prints Cline's checkpoint key of
// WORKSPACE (the name of its shadow repo, checkpoints/<key>); with --key,
// only that.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, readBeforeWrite, atomicWriteFile } = require('./common.js');

// Cline's checkpoint key of a workspace path: a 31-based hash of its UTF-16 units.
function clineKey(p) {
	let h = 0;
	for (let i = 0; i < p.length; i++)
		h = (h * 31 + p.charCodeAt(i)) >>> 0;
	return String(h);
}

run(async () => {
	if (process.argv[2] === '--key') {
		process.stdout.write(clineKey(process.argv[3]) + '\n');
		return;
	}
	const [mount, task, workspace, ...hashes] = process.argv.slice(2);
	const t0 = Number(task);
	const ui = [{ ts: t0, type: 'say', say: 'task', text: 'Make the project', conversationHistoryIndex: -1 }];
	const api = [];
	let ts = t0;
	hashes.forEach((h, k) => {
		api.push({ role: 'user', content: [{ type: 'text', text: `<task>step ${k}</task>` }], ts: (ts += 1000) });
		api.push({ role: 'assistant', content: [{ type: 'text', text: `doing step ${k}` }], ts: (ts += 1000) });
		ui.push({ ts: (ts += 1000), type: 'say', say: 'checkpoint_created', lastCheckpointHash: h,
			conversationHistoryIndex: api.length - 1 });
	});
	const dir = path.join(mount, 'tasks', task);
	fs.mkdirSync(dir, { recursive: true });
	for (const [name, doc] of [['api_conversation_history.json', api], ['ui_messages.json', ui]]) {
		readBeforeWrite(path.join(dir, name));
		await atomicWriteFile(path.join(dir, name), JSON.stringify(doc));
	}
	const file = path.join(mount, 'state', 'taskHistory.json');
	fs.mkdirSync(path.dirname(file), { recursive: true });
	const old = readBeforeWrite(file);
	const items = (old ? JSON.parse(old) : []).filter((it) => it.id !== task);
	items.push({ id: task, ts: t0, task: 'Make the project', tokensIn: 1, tokensOut: 1, cacheWrites: 0, cacheReads: 0,
		totalCost: 0, size: 1000, cwdOnTaskInitialization: workspace, isFavorited: false, modelId: 'fake-model' });
	await atomicWriteFile(file, JSON.stringify(items));
	process.stdout.write(clineKey(workspace) + '\n');
});

// SPDX-License-Identifier: GPL-2.0-or-later
// append.js DIR TASK LABEL N [TS0]
//
// A Cline window working on one conversation: N times, reads
// tasks/TASK/ui_messages.json, adds a message and writes the whole file back
// as Cline does (temp file + rename, atomicWriteFile). Each message's ts is
// TS0 + i (default: now in ms, times 100, plus i), its text LABEL i.
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, task, label, n, ts0] = process.argv.slice(2);
const file = path.join(dir, 'tasks', task, 'ui_messages.json');
const base = ts0 ? Number(ts0) : Date.now() * 100;

async function main() {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	for (let i = 0; i < Number(n); i++) {
		let msgs = [];
		try {
			msgs = JSON.parse(fs.readFileSync(file, 'utf8'));
		} catch (e) {
			if (e.code !== 'ENOENT') throw e;
		}
		msgs.push({ ts: base + i, type: 'say', say: 'text', text: `${label} ${i}` });
		const tmp = `${file}.tmp.${Date.now()}.${Math.random().toString(36).slice(2)}.json`;
		fs.writeFileSync(tmp, JSON.stringify(msgs));
		fs.renameSync(tmp, file);
	}
}

main().catch((e) => {
	console.error(`append.js: ${e.code || ''} ${e.message}`);
	process.exit(1);
});

// SPDX-License-Identifier: GPL-2.0-or-later
// refused_save.js FILE rename|inplace OUT
//   One writer, one process, as a Cline window: reads FILE, saves [a, b]
//   (two ui messages), then a save that the filesystem must refuse (invalid
//   JSON: its error code goes to OUT's first line), then [a] alone, which
//   removes b: the writer had read and written it. Writes by temp file +
//   rename (atomicWriteFile) or in place (open O_TRUNC, write, close). What
//   the file reads afterwards is for the test to judge: [a], as if the
//   refused save had never been tried (a filesystem that forgot the writer's
//   base after the refusal keeps b).
'use strict';

const fs = require('fs');
const { run, uiMessage, atomicWriteFile, readBeforeWrite } = require('./common.js');

const [file, how, out] = process.argv.slice(2);

async function save(text) {
	if (how === 'rename')
		return atomicWriteFile(file, text);
	const fd = fs.openSync(file, 'w');
	try {
		fs.writeSync(fd, text);
	} finally {
		fs.closeSync(fd);
	}
}

run(async () => {
	const a = uiMessage(71, 0), b = uiMessage(71, 1);

	readBeforeWrite(file);
	await save(JSON.stringify([a, b]));
	let code = 'none';
	try {
		await save('[' + JSON.stringify(a) + ',');
	} catch (e) {
		code = e.code || 'ERROR';
	}
	await save(JSON.stringify([a]));
	fs.writeFileSync(out, code + '\n' + JSON.stringify([a]) + '\n');
});

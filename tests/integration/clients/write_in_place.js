// SPDX-License-Identifier: GPL-2.0-or-later
// write_in_place.js [--bun] TARGET CONTENT_FILE
// Write pattern a: rewrites TARGET in place with the bytes of CONTENT_FILE.
//   default: fs.promises.writeFile (open O_TRUNC, write, close), as Cline's
//            task_metadata.json and ui_messages.json saves do;
//   --bun:   open 'r+' (no O_TRUNC), write from offset 0, ftruncate to the
//            new length, close, as Bun's writeFile does.
// Like the client, it reads TARGET first (common.readBeforeWrite). On failure
// prints the error code (e.g. EINVAL from close) and exits 1.
'use strict';

const fs = require('fs');
const { run, readBeforeWrite } = require('./common.js');

run(async () => {
	const args = process.argv.slice(2);
	const bun = args[0] === '--bun';
	const [target, contentFile] = bun ? args.slice(1) : args;
	const data = fs.readFileSync(contentFile);
	readBeforeWrite(target);
	if (!bun) {
		await fs.promises.writeFile(target, data.toString('utf8'));
		return;
	}
	const fh = await fs.promises.open(target, 'r+');
	try {
		await fh.write(data, 0, data.length, 0);
		await fh.truncate(data.length);
	} catch (e) {
		await fh.close().catch(() => {});
		throw e;
	}
	await fh.close();
});

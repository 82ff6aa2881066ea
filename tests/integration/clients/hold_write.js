// SPDX-License-Identifier: GPL-2.0-or-later
// hold_write.js [--bun] TARGET CONTENT_FILE READY_FILE GO_FILE
// Write pattern a, stopped just before close: writes all of CONTENT_FILE into
// TARGET (O_TRUNC, or --bun: 'r+' then ftruncate), creates READY_FILE, waits
// until GO_FILE exists, then closes. Lets a test look at TARGET from another
// process while a writer has written but not closed; the writer's own fstat
// must show the size it wrote. Reads TARGET first, as the clients do. Prints
// the error code and exits 1 on failure (close's EINVAL included).
'use strict';

const fs = require('fs');
const { run, readBeforeWrite } = require('./common.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

run(async () => {
	const args = process.argv.slice(2);
	const bun = args[0] === '--bun';
	const [target, contentFile, ready, go] = bun ? args.slice(1) : args;
	const data = fs.readFileSync(contentFile);
	readBeforeWrite(target);
	const fh = await fs.promises.open(target, bun ? 'r+' : 'w');
	try {
		await fh.write(data, 0, data.length, 0);
		if (bun)
			await fh.truncate(data.length);
		// The writer's own fstat shows what it wrote; others, the committed version.
		const st = await fh.stat();
		if (st.size !== data.length)
			throw new Error(`the writer's own fstat shows size ${st.size}, not the ${data.length} it wrote`);
		fs.writeFileSync(ready, '');
		for (let i = 0; !fs.existsSync(go); i++) {
			if (i > 600)
				throw new Error(`nobody created ${go} in 30 s`);
			await sleep(50);
		}
	} catch (e) {
		await fh.close().catch(() => {});
		throw e;
	}
	await fh.close();
});

// SPDX-License-Identifier: GPL-2.0-or-later
// slow_writer.js TARGET CONTENT_FILE CHUNK SLOW_AFTER MARK_FILE
// Write pattern a done slowly, to be killed midway: opens TARGET with O_TRUNC
// (as fs.writeFile does) and writes CONTENT_FILE in CHUNK-byte writes. Once
// SLOW_AFTER bytes are written (0: right after the open) it creates
// MARK_FILE and from then on sleeps 20 ms between writes, so that a test has
// all the time it needs to SIGKILL it. Reads TARGET first, as the clients do.
// Exits 0 only if it got to the end.
'use strict';

const fs = require('fs');
const { run, readBeforeWrite } = require('./common.js');

const pause = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms) => Atomics.wait(pause, 0, 0, ms);

run(() => {
	const [target, contentFile, chunkArg, slowAfterArg, mark] = process.argv.slice(2);
	const data = fs.readFileSync(contentFile);
	readBeforeWrite(target);
	const chunk = Number(chunkArg);
	const slowAfter = Number(slowAfterArg);
	const fd = fs.openSync(target, 'w');
	let slow = false;
	for (let off = 0; off < data.length; off += chunk) {
		if (!slow && off >= slowAfter) {
			fs.writeFileSync(mark, String(off));
			slow = true;
		}
		if (slow)
			sleep(20);
		fs.writeSync(fd, data, off, Math.min(chunk, data.length - off), off);
	}
	fs.closeSync(fd);
});

// SPDX-License-Identifier: GPL-2.0-or-later
// slow_writer.js TARGET CONTENT_FILE CHUNK SLOW_AFTER MARK_FILE
// Write pattern a done slowly, to be killed midway: opens TARGET with O_TRUNC
// (as fs.writeFile does) and writes CONTENT_FILE in CHUNK-byte writes. Once
// SLOW_AFTER bytes are written (0: right after the open) it creates
// MARK_FILE and from then on sleeps 20 ms between writes, and holds its last
// write back until HOLD_MS after the mark, so that a test has all the time it
// needs to SIGKILL it however slow the mount is (at 20 ms a write, the second
// half of 20 MB takes 13 s, less than a daemon under valgrind takes to serve
// a reader those 20 MB). Reads TARGET first, as the clients do. Exits 0 only
// if it got to the end.
'use strict';

const fs = require('fs');
const { run, readBeforeWrite } = require('./common.js');

const HOLD_MS = 120000;
const pause = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms) => Atomics.wait(pause, 0, 0, ms);

run(() => {
	const [target, contentFile, chunkArg, slowAfterArg, mark] = process.argv.slice(2);
	const data = fs.readFileSync(contentFile);
	readBeforeWrite(target);
	const chunk = Number(chunkArg);
	const slowAfter = Number(slowAfterArg);
	const fd = fs.openSync(target, 'w');
	let slow = false, markedAt = 0;
	for (let off = 0; off < data.length; off += chunk) {
		if (!slow && off >= slowAfter) {
			fs.writeFileSync(mark, String(off));
			slow = true;
			markedAt = Date.now();
		}
		if (slow)
			sleep(20);
		while (slow && off + chunk >= data.length && Date.now() - markedAt < HOLD_MS)
			sleep(1000);
		fs.writeSync(fd, data, off, Math.min(chunk, data.length - off), off);
	}
	fs.closeSync(fd);
});

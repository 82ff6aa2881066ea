// SPDX-License-Identifier: GPL-2.0-or-later
// append_writer.js FILE RECORD STOP
// A process that keeps a file on the mount open and goes on writing, as a
// client still running at unmount time does: opens FILE once (O_APPEND) and
// every 100 ms appends "line N\n" through that one descriptor. After each
// write returns it appends "N" to RECORD (outside the mount) and fsyncs it:
// what the mount was told and must keep. Stops when STOP exists (closing
// FILE, exit 0) or at the first failed write (prints "write:CODE", exit 1).
'use strict';

const fs = require('fs');

const [file, recordFile, stop] = process.argv.slice(2);
const fd = fs.openSync(file, 'a');
const record = fs.openSync(recordFile, 'a');
let n = 0;
const timer = setInterval(() => {
	if (fs.existsSync(stop)) {
		clearInterval(timer);
		fs.closeSync(fd);
		process.exit(0);
	}
	n++;
	try {
		fs.writeSync(fd, `line ${n}\n`);
	} catch (e) {
		console.log('write:' + e.code);
		process.exit(1);
	}
	fs.writeSync(record, `${n}\n`);
	fs.fsyncSync(record);
}, 100);

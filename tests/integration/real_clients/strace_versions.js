// SPDX-License-Identifier: GPL-2.0-or-later
// strace_versions.js STRACE_LOG TARGET OUT_DIR
// The versions of TARGET a client wrote, from an strace log made with
// `-f -y -xx -s <big>` (every write's buffer in full, in hex, and each fd's
// path). Cline 3.x saves a session file as open (no O_TRUNC), one write of the
// whole content, ftruncate, close; so each write to TARGET is one version.
// Writes OUT_DIR/v-001.json, v-002.json, ... in order and prints their count.
// A write that failed at once (= -1, e.g. ENOTCONN on a dead mount) never
// reached the file and is left out; one cut short or never returned is kept:
// it is what the client meant to write.
'use strict';

const fs = require('fs');
const path = require('path');

const [logFile, target, outDir] = process.argv.slice(2);
const log = fs.readFileSync(logFile, 'latin1');
fs.mkdirSync(outDir, { recursive: true });
// 1234 12:00:00.000000 write(36</a/b.messages.json>, "\x7b\x0a...", 5971) = 5971
// (or "... <unfinished ...>" when another process ran meanwhile)
const re = /write\((\d+)<([^>]*)>, "((?:\\x[0-9a-f]{2})*)"(\.\.\.)?, (\d+)(\)\s+= (-?\d+))?/g;
let n = 0;
for (let m; (m = re.exec(log));) {
	// -xx writes the path in hex too.
	const file = Buffer.from(m[2].replace(/\\x([0-9a-f]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString();
	if (file !== target || m[7] === '-1')
		continue;
	if (m[4])
		throw new Error('strace cut a write to ' + target + ' short: raise -s');
	const bytes = Buffer.from(m[3].replace(/\\x/g, ''), 'hex');
	n++;
	fs.writeFileSync(path.join(outDir, 'v-' + String(n).padStart(3, '0') + '.json'), bytes);
}
console.log(n);

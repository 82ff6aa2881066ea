// SPDX-License-Identifier: GPL-2.0-or-later
// reader.js FILE...: reads each FILE whole, one after the other, over and
// over, with a 10 ms pause after each round, until SIGTERM; then prints
// the number of rounds and whether the last read of each FILE parsed as
// JSON. scripts/bench runs it beside the saves of "save, second mount
// serving and reading": FILE the saved conversation through the second
// mount (and the plain one, so that both sides share the machine with it);
// and, to divide those by, beside the same saves with one mount, FILE the
// conversation through that mount.
'use strict';

const fs = require('fs');

const files = process.argv.slice(2);
const pause = new Int32Array(new SharedArrayBuffer(4));
let rounds = 0, stop = false;
const last = {};
process.on('SIGTERM', () => { stop = true; });

function round() {
	for (const f of files) {
		try {
			last[f] = fs.readFileSync(f);
		} catch (e) {
			last[f] = e.code;
		}
	}
	rounds++;
	Atomics.wait(pause, 0, 0, 10);
	if (stop) {
		const bad = files.filter((f) => {
			try {
				JSON.parse(last[f]);
				return false;
			} catch (e) {
				return true;
			}
		});
		console.log(`${rounds} rounds${bad.length ? `; the last read of ${bad.join(', ')} is not JSON` : ''}`);
		return;
	}
	setImmediate(round); // lets the SIGTERM handler run
}
round();

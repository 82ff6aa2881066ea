// SPDX-License-Identifier: GPL-2.0-or-later
// observe.js MOUNT...
// Watches for a change through other mounts of a store, and says how long
// it took to show. Started once, before the changes, so that a check
// begins at once (no process to start). Reads lines from stdin, tab
// separated:
//   CHANGED_US LIMIT_MS ON WHAT CHECK ARG...
// where CHANGED_US is when the change returned (microseconds since the
// epoch, bash's $EPOCHREALTIME without its dot), ON the mounts to look
// through (their indexes among the arguments, comma separated), and @M@ in
// an ARG stands for each of them in turn. It polls CHECK through each at
// once, every millisecond, until it holds through all, or LIMIT_MS have
// passed, and prints one line a mount: "<i> <ms>" (its index, and the
// milliseconds from CHANGED_US to when CHECK first held there), or "<i> -"
// if it never did; then "done". The checks, each with sync calls
// (stat, read, readdir: what a client does):
//   same FILE WANT        FILE's size (stat) and bytes (read) are WANT's
//   lists DIR NAME        a listing of DIR has NAME
//   lacks DIR NAME        it has not
//   has FILE TEXT         FILE holds TEXT
//   hasnt FILE TEXT       FILE (which exists) does not
//   entries DIR N         DIR lists N entries
//   lines FILE N          FILE has N lines
'use strict';

const fs = require('fs');
const readline = require('readline');

const mounts = process.argv.slice(2);
const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

const checks = {
	same: (file, want) => fs.statSync(file).size === fs.statSync(want).size &&
		fs.readFileSync(file).equals(fs.readFileSync(want)),
	lists: (dir, name) => fs.readdirSync(dir).includes(name),
	lacks: (dir, name) => !fs.readdirSync(dir).includes(name),
	has: (file, text) => fs.readFileSync(file, 'utf8').includes(text),
	hasnt: (file, text) => !fs.readFileSync(file, 'utf8').includes(text),
	entries: (dir, n) => fs.readdirSync(dir).length === Number(n),
	lines: (file, n) => fs.readFileSync(file, 'utf8').split('\n').length - 1 === Number(n),
};

function holds(check, args) {
	try {
		return check(...args);
	} catch (e) {
		return false; // not there yet (ENOENT), or not yet what it will be
	}
}

const rl = readline.createInterface({ input: process.stdin });
const queue = [];
let busy = false;
rl.on('line', (line) => {
	queue.push(line);
	if (!busy)
		next();
});

function next() {
	const line = queue.shift();
	if (line === undefined) {
		busy = false;
		return;
	}
	busy = true;
	const [changed, limit, on, , name, ...args] = line.split('\t');
	const check = checks[name];
	if (!check) {
		process.stdout.write(`unknown check '${name}'\ndone\n`);
		setImmediate(next);
		return;
	}
	const pending = new Set(on.split(',').map(Number).filter((i) => i >= 0 && i < mounts.length));
	const poll = () => {
		for (const i of [...pending]) {
			if (holds(check, args.map((a) => a.split('@M@').join(mounts[i])))) {
				process.stdout.write(`${i} ${Math.round((nowUs() - Number(changed)) / 1000)}\n`);
				pending.delete(i);
			}
		}
		if (pending.size > 0 && (nowUs() - Number(changed)) / 1000 <= Number(limit)) {
			setTimeout(poll, 1);
			return;
		}
		for (const i of pending)
			process.stdout.write(`${i} -\n`);
		process.stdout.write('done\n');
		setImmediate(next);
	};
	poll();
}

// SPDX-License-Identifier: GPL-2.0-or-later
// follow.js WRITE_MOUNT READ_MOUNT TASK SECONDS
// A reader that follows one conversation through one mount while a writer
// saves it through another mount of the same store. The writer (a worker
// thread) saves tasks/TASK/ui_messages.json with one message more each time
// (common.uiMessage(SEED, 0..n-1)), now by temp + rename (Cline's
// atomicWriteFile), now in place (fs.writeFile: O_TRUNC, write, close), and
// now and then rewrites its last message (a partial one completed), which
// keeps the count; once a save has returned it publishes its count. The
// reader (the main thread) loops for SECONDS: it takes the count published
// before it begins, reads the file whole through READ_MOUNT and parses it.
// Every read must be valid JSON, hold the messages of the sequence in order,
// and hold at least as many as the last save that had returned before the
// read began. Another reader (a second worker, as another window or a grep
// would) reads the same file through READ_MOUNT all along, so that a handle
// of some version is open there at any moment. Prints one line of counts;
// fails (exit 1) with the first bad read described on stderr.
'use strict';

const fs = require('fs');
const path = require('path');
const { Worker, isMainThread, workerData } = require('worker_threads');
const { uiMessage } = require('./common.js');

const SEED = 23;

// The writer's message i of version v (a message completed later has partial set before).
function message(i, partial) {
	const m = uiMessage(SEED, i);
	return partial ? { ...m, partial: true } : m;
}

function writer({ file, shared, seconds }) {
	const done = new Int32Array(shared);
	const msgs = [];
	const end = Date.now() + seconds * 1000;
	let saves = 0;
	for (let k = 0; Date.now() < end; k++) {
		if (k % 5 === 4 && msgs.length > 0)
			msgs[msgs.length - 1] = message(msgs.length - 1, false); // completed: same count
		else
			msgs.push(message(msgs.length, k % 3 === 0));
		const text = JSON.stringify(msgs);
		if (k % 2 === 0) {
			const tmp = `${file}.tmp.${Date.now()}.${k}.json`;
			fs.writeFileSync(tmp, text);
			fs.renameSync(tmp, file);
		} else {
			fs.writeFileSync(file, text);
		}
		saves++;
		Atomics.store(done, 0, msgs.length);
		Atomics.store(done, 1, saves);
	}
	Atomics.store(done, 2, 1);
}

// The other reader: reads the file whole, over and over, until the writer is done.
function other({ file, shared }) {
	const done = new Int32Array(shared);
	while (!Atomics.load(done, 2)) {
		try {
			fs.readFileSync(file);
			Atomics.add(done, 3, 1);
		} catch (e) {
			// not there yet
		}
	}
}

function main() {
	const [wmount, rmount, task, seconds] = process.argv.slice(2);
	const rel = path.join('tasks', task, 'ui_messages.json');
	fs.mkdirSync(path.join(wmount, 'tasks', task), { recursive: true });
	const shared = new SharedArrayBuffer(16);
	const done = new Int32Array(shared);
	const w = new Worker(__filename, { workerData: { role: 'writer', file: path.join(wmount, rel), shared,
		seconds: Number(seconds) } });
	const o = new Worker(__filename, { workerData: { role: 'other', file: path.join(rmount, rel), shared } });
	let failed = null;
	w.on('error', (e) => {
		failed = failed || `the writer failed: ${e.code || ''} ${e.message}`;
	});
	let reads = 0, behind = 0, maxSeen = 0;
	const step = () => {
		for (let i = 0; i < 20 && !failed; i++) {
			const want = Atomics.load(done, 0);
			let text;
			try {
				text = fs.readFileSync(path.join(rmount, rel), 'utf8');
			} catch (e) {
				if (e.code === 'ENOENT' && want === 0)
					continue;
				failed = `read ${reads + 1}: ${e.code} ${e.message}`;
				break;
			}
			reads++;
			let got;
			try {
				got = JSON.parse(text);
			} catch (e) {
				failed = `read ${reads}: not JSON (${e.message}) in ${text.length} bytes: ` +
					`${JSON.stringify(text.slice(0, 40))} ... ${JSON.stringify(text.slice(-40))}`;
				break;
			}
			if (!Array.isArray(got)) {
				failed = `read ${reads}: not an array`;
				break;
			}
			for (let j = 0; j < got.length; j++) {
				const m = got[j];
				const full = JSON.stringify(message(j, false)), part = JSON.stringify(message(j, true));
				const s = JSON.stringify(m);
				if (s !== full && s !== part) {
					failed = `read ${reads}: message ${j} is not the writer's: ${s.slice(0, 120)}`;
					break;
				}
			}
			if (failed)
				break;
			if (got.length < want) {
				behind++;
				failed = failed || `read ${reads}: ${got.length} messages, but a save of ${want} had returned ` +
					`before the read began`;
				break;
			}
			maxSeen = Math.max(maxSeen, got.length);
		}
		if (failed || Atomics.load(done, 2)) {
			Atomics.store(done, 2, 1);
			Promise.all([w.terminate(), o.terminate()]).then(() => {
				const saves = Atomics.load(done, 1);
				console.log(`${saves} saves through the writer's mount, ${reads} reads through the reader's ` +
					`(and ${Atomics.load(done, 3)} by the other reader); up to ${maxSeen} messages`);
				if (failed) {
					console.error(`follow.js: ${failed}`);
					process.exit(1);
				}
				if (saves < 10 || reads < 10) {
					console.error(`follow.js: too few saves (${saves}) or reads (${reads}) to tell anything`);
					process.exit(1);
				}
			});
			return;
		}
		setImmediate(step);
	};
	step();
}

if (isMainThread)
	main();
else if (workerData.role === 'writer')
	writer(workerData);
else
	other(workerData);

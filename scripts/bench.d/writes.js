// SPDX-License-Identifier: GPL-2.0-or-later
// writes.js: the write workloads of scripts/bench, done as Cline does them.
//
//   writes.js save rename|inplace REPS PLAIN_FILE CONVFS_FILE [PASSTHROUGH_FILE] [sync=SYNC_FILE]
//   writes.js merge REPS PLAIN_FILE CONVFS_FILE
//   writes.js append REPS SMALL_PLAIN SMALL_CONVFS LONG_PLAIN LONG_CONVFS
//   writes.js writer-a      (merge's other writer; driven through stdin)
//
// Every writer reads its file first (open + read), as Cline does when it
// resumes a task: on convfs that read is the writer's merge base. Then each
// repetition adds one message to the array it holds in memory and saves the
// whole array, by temp + rename (Cline's atomicWriteFile: write
// `<file>.tmp.<ms>.<rand>.json`, rename it over the file) or in place
// (fs.writeFile: open O_TRUNC, write, close). Only the filesystem calls are
// timed; JSON.stringify and the conversion to bytes, the same on both sides,
// are done before the clock starts.
//
// The sides take turns going first: plain, convfs, then convfs, plain, ...
// (with a third, libfuse's passthrough_ll, each of the three goes first in
// turn; and a convfs mount with -o sync, side sync, likewise); one untimed
// repetition of each side comes first (warm-up). Prints one line per timed
// save: LABEL <tab> plain|convfs|passthrough|sync <tab> milliseconds; and
// lines starting with '#' for notes (checks of what the files hold
// afterwards).
'use strict';

const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const readline = require('readline');

let counter = 0;
// A new ClineMessage of about 1 KB (what one more step of a task adds).
function newMessage(who) {
	counter++;
	const ts = Date.now();
	return { ts, type: 'say', say: 'text', text: `${who} message ${counter} at ${ts}: ` +
		'Now I will update the handler so that the cache is invalidated when the configuration changes. '.repeat(9),
		modelInfo: { providerId: 'anthropic', modelId: 'claude-sonnet-4-5', mode: 'act' },
		conversationHistoryIndex: counter };
}
function newApiMessage(i) {
	return { role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text:
		`Appended message ${i}: the handler now invalidates the cache when the configuration changes.` }],
		ts: Date.now() };
}

async function atomicWriteFile(filePath, data) {
	const tmpPath = `${filePath}.tmp.${Date.now()}.${Math.random().toString(36).slice(2)}.json`;
	try {
		await fs.promises.writeFile(tmpPath, data);
		await fs.promises.rename(tmpPath, filePath);
	} catch (error) {
		await fs.promises.unlink(tmpPath).catch(() => {});
		throw error;
	}
}

// Cline reads its files with fs.readFile; so do we (open + read + close).
async function load(file) {
	return JSON.parse(await fs.promises.readFile(file, 'utf8'));
}

async function timed(fn) {
	const t0 = process.hrtime.bigint();
	await fn();
	return Number(process.hrtime.bigint() - t0) / 1e6;
}

const emit = (label, side, ms) => process.stdout.write(`${label}\t${side}\t${ms.toFixed(3)}\n`);
const note = (s) => process.stdout.write(`# ${s}\n`);

// sides in the order of repetition i (-1 is the warm-up): each goes first in turn.
const rotate = (sides, i) => sides.map((_, k) => sides[(k + Math.max(i, 0)) % sides.length]);
const order = (i) => rotate(['plain', 'convfs'], i);

async function save(mode, reps, files) {
	const sides = Object.keys(files);
	const arr = {};
	for (const side of sides)
		arr[side] = await load(files[side]);
	const label = mode === 'rename' ? 'save_rename' : 'save_inplace';
	for (let i = -1; i < reps; i++) {
		const msg = newMessage('w');
		for (const side of rotate(sides, i)) {
			arr[side].push(msg);
			const data = Buffer.from(JSON.stringify(arr[side]));
			const ms = await timed(() => mode === 'rename'
				? atomicWriteFile(files[side], data)
				: fs.promises.writeFile(files[side], data));
			if (i >= 0)
				emit(label, side, ms);
		}
	}
	// Single writer round trip: the file is what was last written.
	for (const side of sides) {
		const got = await fs.promises.readFile(files[side], 'utf8');
		if (got !== JSON.stringify(arr[side]))
			note(`WARNING: ${side} ${files[side]} does not read back as last written (${got.length} bytes)`);
	}
}

// The other writer: a separate process (its own merge base). Each line on
// stdin names a file: it reads it, adds one message and saves by
// temp + rename, then answers with the message's text.
async function writerA() {
	const rl = readline.createInterface({ input: process.stdin });
	for await (const file of rl) {
		const arr = await load(file);
		const msg = newMessage(`other-writer-${process.pid}`);
		arr.push(msg);
		await atomicWriteFile(file, JSON.stringify(arr));
		process.stdout.write(JSON.stringify(msg.text.slice(0, 60)) + '\n');
	}
}

async function merge(reps, files) {
	const a = spawn(process.execPath, [__filename, 'writer-a'], { stdio: ['pipe', 'pipe', 'inherit'] });
	const answers = readline.createInterface({ input: a.stdout })[Symbol.asyncIterator]();
	const other = async (file) => {
		a.stdin.write(file + '\n');
		const r = await answers.next();
		if (r.done)
			throw new Error('the other writer died');
		return JSON.parse(r.value);
	};
	const theirs = { plain: [], convfs: [] };
	for (let i = -1; i < reps; i++) {
		const msg = newMessage('b');
		for (const side of order(i)) {
			// B (this process) loads the file, as its file watcher would
			// make it; A commits one message; B saves its own.
			const arr = await load(files[side]);
			theirs[side].push(await other(files[side]));
			arr.push(msg);
			const data = Buffer.from(JSON.stringify(arr));
			const ms = await timed(() => atomicWriteFile(files[side], data));
			if (i >= 0)
				emit('save_merged', side, ms);
		}
	}
	a.stdin.end();
	await new Promise((resolve) => a.on('exit', resolve));
	for (const side of ['plain', 'convfs']) {
		const text = (await load(files[side])).map((m) => m.text || '').join('\n');
		const kept = theirs[side].filter((t) => text.includes(t)).length;
		const lost = side === 'convfs' && kept < theirs[side].length ? 'WARNING: lost update: ' : '';
		note(`${lost}merged save: ${side} kept ${kept} of the other writer's ${theirs[side].length} messages`);
	}
}

async function append(reps, files) {
	const arr = {};
	for (const k of Object.keys(files))
		arr[k] = await load(files[k]);
	for (let i = -1; i < reps; i++) {
		for (const size of ['small', 'long']) {
			const msg = newApiMessage(i);
			for (const side of order(i)) {
				const k = `${size}_${side}`;
				arr[k].push(msg);
				const data = Buffer.from(JSON.stringify(arr[k]));
				const ms = await timed(() => atomicWriteFile(files[k], data));
				if (i >= 0)
					emit(`append_${size}`, side, ms);
			}
		}
	}
}

async function main() {
	const [cmd, ...args] = process.argv.slice(2);
	switch (cmd) {
	case 'save': {
		const files = { plain: args[2], convfs: args[3] };
		for (const a of args.slice(4))
			if (a.startsWith('sync='))
				files.sync = a.slice(5);
			else
				files.passthrough = a;
		return save(args[0], Number(args[1]), files);
	}
	case 'merge':
		return merge(Number(args[0]), { plain: args[1], convfs: args[2] });
	case 'append':
		return append(Number(args[0]), { small_plain: args[1], small_convfs: args[2],
			long_plain: args[3], long_convfs: args[4] });
	case 'writer-a':
		return writerA();
	default:
		throw new Error(`unknown command '${cmd}'`);
	}
}

main().catch((e) => {
	process.stderr.write(`${path.basename(__filename)}: ${e.stack || e}\n`);
	process.exit(1);
});

// The torture test: N Cline-like windows at once on one folder, then a count
// of what was lost. Exit 0 if nothing was lost; 1 if anything was, printing
// what; `--expect-loss` inverts that (the same run on a plain folder must
// lose, or the test could not fail).
//
//   node run.js DIR[,DIR...] N TASKS MESSAGES [--expect-loss]
//
// Several DIRs are several mounts of one store: the windows are spread over
// them in turn (the first window on the first, the next on the second, ...),
// and what was lost is counted through the first.
//
// TORTURE_FIRST_WINDOW=K numbers the windows K..K+N-1 (default 1), so that
// runs on several machines at once (sync.sh) make tasks and message ts of
// their own (a window's number is in both), but for the shared task.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');

const [dirList, n, ntasks, nmsgs] = process.argv.slice(2, 6);
const dirs = dirList.split(',');
const dir = dirs[0];
const first = Number(process.env.TORTURE_FIRST_WINDOW || 1);
const expectLoss = process.argv.includes('--expect-loss');
const sharedId = '1799999999999';

function runWindow(win) {
	const wdir = dirs[(win - first) % dirs.length];
	return new Promise((resolve, reject) => {
		const p = spawn(process.execPath, [path.join(__dirname, 'window.js'), wdir, win, ntasks, nmsgs, sharedId, 50],
			{ stdio: ['ignore', 'pipe', 'inherit'] });
		let out = '';
		p.stdout.on('data', (d) => (out += d));
		p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`window ${win} exited ${code}`))));
	});
}

async function main() {
	fs.mkdirSync(path.join(dir, 'state'), { recursive: true });
	fs.mkdirSync(path.join(dir, 'tasks', sharedId), { recursive: true });
	const results = await Promise.all(Array.from({ length: Number(n) }, (_, i) => runWindow(first + i)));
	const history = JSON.parse(fs.readFileSync(path.join(dir, 'state', 'taskHistory.json'), 'utf8'));
	const ids = new Set(history.map((h) => h.id));
	let lostTasks = 0, lostMessages = 0, disordered = 0, total = 0, totalMsgs = 0;
	const sharedWant = [];
	for (const r of results) {
		for (const id of r.tasks) {
			total++;
			if (!ids.has(id)) {
				lostTasks++;
				console.error(`state/taskHistory.json: lost task ${id}`);
			}
		}
		for (const [id, tss] of Object.entries(r.messages)) {
			if (id === sharedId) { sharedWant.push(tss); continue; }
			totalMsgs += tss.length;
			for (const file of ['ui_messages.json', 'api_conversation_history.json']) {
				const have = JSON.parse(fs.readFileSync(path.join(dir, 'tasks', id, file), 'utf8')).map((m) => m.ts);
				const missing = tss.filter((t) => !have.includes(t));
				if (missing.length) console.error(`tasks/${id}/${file}: lost ${missing.join(' ')}`);
				lostMessages += missing.length;
				if (JSON.stringify(have) !== JSON.stringify(tss)) disordered++;
			}
		}
	}
	for (const file of ['ui_messages.json', 'api_conversation_history.json']) {
		const have = JSON.parse(fs.readFileSync(path.join(dir, 'tasks', sharedId, file), 'utf8')).map((m) => m.ts);
		if (new Set(have).size !== have.length) disordered++; // a message written twice
		for (const tss of sharedWant) {
			totalMsgs += tss.length;
			const missing = tss.filter((t) => !have.includes(t));
			if (missing.length) console.error(`tasks/${sharedId}/${file}: lost ${missing.join(' ')}`);
			lostMessages += missing.length;
			const mine = have.filter((t) => tss.includes(t));
			if (JSON.stringify(mine) !== JSON.stringify(tss.filter((t) => have.includes(t)))) disordered++;
		}
	}
	const summary = `${n} windows${dirs.length > 1 ? ` on ${dirs.length} mounts` : ''}: lost ${lostTasks} of ${total} tasks from history, ` +
		`${lostMessages} of ${totalMsgs * 2} messages; ${disordered} files out of order`;
	console.log(summary);
	const lost = lostTasks + lostMessages + disordered > 0;
	process.exit(lost === expectLoss ? 0 : 1);
}

main().catch((e) => {
	console.error(e.message);
	process.exit(2);
});

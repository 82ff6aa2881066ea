// SPDX-License-Identifier: GPL-2.0-or-later
// crash_writer.js MOUNT SEED RECORD_FILE
// Mixed writes, as a Cline window and a user at a shell make them, until
// something fails (crash_loop.sh kills the daemon meanwhile). It carries on
// from what the mount holds, so that round after round it grows the same
// files. Step i:
//   - tasks/TASK_A/ui_messages.json (a new task) gets one message more, saved with
//     atomicWriteFile (temp + rename, Cline's pattern b);
//   - tasks/TASK_A/api_conversation_history.json likewise, saved in place
//     with fs.writeFile (pattern a);
//   - one line is appended (a single O_APPEND write, as `>>`) to the
//     workspaces view's ui_messages.jsonl of TASK_B;
//   - a plain file crash/plain-<n>.txt is written;
//   - every 4th step, a commit in the git repository crashrepo/ (git add,
//     git commit, as a user does).
// After each of these returns, a line "ui N", "api N", "app N", "plain N" or
// "git N" is appended to RECORD_FILE (outside the mount) and fsynced: what
// the daemon must keep; so are, at the start, the counts it read back from
// the mount that are past the record. Prints the error code of the failure that ends it
// and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { run, uiMessage, apiMessage, atomicWriteFile } = require('./common.js');

const TASK_A = '1799000000001'; // a new task, made by the first round
const VIEW_B = 'workspaces/api-server-2325622928/tasks/1795306284156/ui_messages.jsonl';

// The line appended as the n-th (1-based) by this test.
function appendLine(n) {
	return JSON.stringify({ ts: 1795400000000 + n, type: 'say', say: 'text', text: `crash append ${n}` }) + '\n';
}

// The count of what the last rounds left: recorded or one more.
function lastCount(recordText, kind) {
	let n = 0;
	for (const line of recordText.split('\n')) {
		const [k, v] = line.split(' ');
		if (k === kind)
			n = Number(v);
	}
	return n;
}

function git(repo, ...args) {
	execFileSync('git', ['-C', repo, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

async function main() {
	const [mount, seedArg, recordFile] = process.argv.slice(2);
	const seed = Number(seedArg);
	const dir = path.join(mount, 'tasks', TASK_A);
	const record = fs.openSync(recordFile, 'a');
	const note = (line) => {
		fs.writeSync(record, line + '\n');
		fs.fsyncSync(record);
	};
	const before = fs.readFileSync(recordFile, 'utf8');

	// What the mount holds now (read before write, as Cline resumes a task).
	fs.mkdirSync(dir, { recursive: true });
	// A file whose first save was cut short by the kill after its create
	// (fs.writeFile's open) is empty, as on any filesystem that loses power
	// there: with nothing of it recorded, that is a file with no messages.
	const load = (file, kind) => {
		let text;
		try {
			text = fs.readFileSync(path.join(dir, file), 'utf8');
		} catch (e) {
			if (e.code === 'ENOENT')
				return [];
			throw e;
		}
		if (text === '' && lastCount(before, kind) === 0)
			return [];
		return JSON.parse(text);
	};
	const ui = load('ui_messages.json', 'ui');
	const api = load('api_conversation_history.json', 'api');
	const appended = fs.readFileSync(path.join(mount, VIEW_B), 'utf8')
		.split('\n').filter((l) => l.includes('"crash append ')).length;
	// Read back from the mount, these are in the store, and recorded as such:
	// the last round's kill may have come after a save's commit and before
	// its line here, and this round's first save, cut the same way, would
	// leave the file two versions past the record.
	for (const [kind, n] of [['ui', ui.length], ['api', api.length], ['app', appended]])
		if (n > lastCount(before, kind))
			note(`${kind} ${n}`);
	let app = appended;
	let plain = lastCount(before, 'plain');
	let commits = lastCount(before, 'git');
	const repo = path.join(mount, 'crashrepo');
	let valid = false;
	try {
		git(repo, 'rev-parse', '--git-dir');
		valid = true;
	} catch (e) {
		// No repository yet, or a `git init` the kill cut short: before
		// the first recorded commit, made (again) as a user would.
		if (commits > 0)
			throw e;
	}
	if (!valid) {
		fs.rmSync(path.join(repo, '.git'), { recursive: true, force: true });
		fs.mkdirSync(repo, { recursive: true });
		git(repo, 'init', '-q');
	} else {
		// HEAD is unborn until the first commit, and rev-list fails.
		try {
			commits = Number(execFileSync('git', ['-C', repo, 'rev-list', '--count', 'HEAD'],
				{ encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
		} catch (e) {
			if (commits > 0)
				throw e;
		}
	}
	fs.mkdirSync(path.join(mount, 'crash'), { recursive: true });

	for (let i = 1; ; i++) {
		ui.push(uiMessage(seed, ui.length));
		await atomicWriteFile(path.join(dir, 'ui_messages.json'), JSON.stringify(ui));
		note(`ui ${ui.length}`);
		api.push(apiMessage(seed, api.length));
		await fs.promises.writeFile(path.join(dir, 'api_conversation_history.json'), JSON.stringify(api));
		note(`api ${api.length}`);
		app++;
		await fs.promises.appendFile(path.join(mount, VIEW_B), appendLine(app));
		note(`app ${app}`);
		plain++;
		await fs.promises.writeFile(path.join(mount, 'crash', `plain-${plain}.txt`),
			`plain file ${plain}\n`.repeat(plain % 50 + 1));
		note(`plain ${plain}`);
		if (i % 4 === 0) {
			commits++;
			fs.writeFileSync(path.join(repo, `f${commits % 7}.txt`), `commit ${commits}\n`.repeat(commits % 30 + 1));
			git(repo, 'add', '-A');
			git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', `c ${commits}`);
			note(`git ${commits}`);
		}
	}
}

module.exports = { appendLine, TASK_A, VIEW_B };
if (require.main === module)
	run(main);

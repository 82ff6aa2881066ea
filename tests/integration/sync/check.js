// SPDX-License-Identifier: GPL-2.0-or-later
// check.js SNAPSHOT... -- MACHINE...
//
// What sync.sh asks once every machine has synced: each MACHINE (a mount)
// holds the same conversation files, byte for byte (state/taskHistory.json
// and every tasks/<id>/*.json), and nothing any machine had is lost: every
// task id in the history of a SNAPSHOT (a copy of a machine's files taken
// when its writers ended) is in the history of the machines, and every
// message (its ts) of each of a snapshot's conversations is in that
// conversation there, once. Prints a summary; exit 1 with what is wrong.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const args = process.argv.slice(2);
const sep = args.indexOf('--');
const snapshots = args.slice(0, sep);
const machines = args.slice(sep + 1);
const problems = [];

// The conversation files of a folder: relative path -> its bytes.
function docs(dir) {
	const out = new Map();
	const add = (rel) => {
		try {
			out.set(rel, fs.readFileSync(path.join(dir, rel)));
		} catch (e) {
			if (e.code !== 'ENOENT') throw e;
		}
	};
	add('state/taskHistory.json');
	let tasks = [];
	try {
		tasks = fs.readdirSync(path.join(dir, 'tasks'));
	} catch (e) {
		if (e.code !== 'ENOENT') throw e;
	}
	for (const id of tasks) {
		if (!/^\d+$/.test(id)) continue;
		for (const f of ['ui_messages.json', 'api_conversation_history.json', 'task_metadata.json'])
			add(`tasks/${id}/${f}`);
	}
	return out;
}

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex').slice(0, 12);
const finals = machines.map(docs);
const [first] = finals;
for (let i = 1; i < finals.length; i++) {
	for (const [rel, bytes] of first) {
		const other = finals[i].get(rel);
		if (!other) problems.push(`${machines[i]}: no ${rel} (${machines[0]} has it)`);
		else if (!other.equals(bytes))
			problems.push(`${rel}: ${machines[0]} has ${sha(bytes)} (${bytes.length} bytes), ` +
				`${machines[i]} ${sha(other)} (${other.length} bytes)`);
	}
	for (const rel of finals[i].keys())
		if (!first.has(rel)) problems.push(`${machines[0]}: no ${rel} (${machines[i]} has it)`);
}

const parse = (b, what) => {
	try {
		return JSON.parse(b.toString('utf8'));
	} catch (e) {
		problems.push(`${what}: not valid JSON: ${e.message}`);
		return [];
	}
};
const finalHistory = new Set(parse(first.get('state/taskHistory.json') || Buffer.from('[]'), 'history').map((h) => h.id));
let tasks = 0, messages = 0;
for (const snap of snapshots) {
	const s = docs(snap);
	for (const [rel, bytes] of s) {
		const have = parse(bytes, `${snap}/${rel}`);
		if (rel === 'state/taskHistory.json') {
			for (const h of have) {
				tasks++;
				if (!finalHistory.has(h.id)) problems.push(`task ${h.id} (in ${snap}) is not in the history`);
			}
			continue;
		}
		if (!Array.isArray(have)) continue;
		const now = first.get(rel);
		if (!now) {
			problems.push(`${rel} (in ${snap}) is on no machine`);
			continue;
		}
		const ts = parse(now, rel).map((m) => m.ts);
		for (const m of have) {
			messages++;
			const n = ts.filter((t) => t === m.ts).length;
			if (n !== 1) problems.push(`${rel}: message ${m.ts} (in ${snap}) is there ${n} times`);
		}
	}
}
console.log(`${machines.length} machines, ${first.size} conversation files alike; ` +
	`${tasks} history items and ${messages} messages of ${snapshots.length} snapshots checked; ${problems.length} problems`);
for (const p of problems.slice(0, 40)) console.error(p);
process.exit(problems.length ? 1 : 0);

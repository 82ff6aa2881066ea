// SPDX-License-Identifier: GPL-2.0-or-later
// compare.js N.old.tsv N.new.tsv ...
//
// scripts/bench-compare's table: for each workload, the ratio convfs/plain
// of each run (medians of the run's repetitions), the median over the runs
// of each binary, NEW's ratio over OLD's, and the noise: the larger relative
// difference between two runs of the same binary.
'use strict';

const fs = require('fs');
const path = require('path');

function median(a) {
	const s = [...a].sort((x, y) => x - y);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const ratios = {}; // key -> { old: [..], new: [..] }
const order = [];
for (const file of process.argv.slice(2)) {
	const label = path.basename(file).split('.')[1];
	const data = {};
	for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
		if (!line || line.startsWith('#'))
			continue;
		const [key, side, value] = line.split('\t');
		((data[key] ||= {})[side] ||= []).push(Number(value));
	}
	for (const [key, sides] of Object.entries(data)) {
		if (!sides.plain || !sides.convfs)
			continue;
		const p = median(sides.plain);
		if (!(p > 0))
			continue;
		if (!ratios[key])
			order.push(key);
		((ratios[key] ||= {})[label] ||= []).push(median(sides.convfs) / p);
	}
}

const fmt = (v) => (v === undefined ? '—' : `${v.toFixed(2)}×`);
const spread = (a) => (a && a.length > 1 ? Math.max(...a) / Math.min(...a) - 1 : undefined);
const rows = [['workload', 'old convfs/plain', 'new convfs/plain', 'new/old', 'noise (same binary)']];
let slower = 0;
for (const key of order) {
	const r = ratios[key];
	const o = r.old && median(r.old), n = r.new && median(r.new);
	const noise = Math.max(spread(r.old) ?? 0, spread(r.new) ?? 0);
	const change = o && n ? n / o : undefined;
	const verdict = change === undefined ? '' : change - 1 > noise ? ' slower' : 1 - change > noise ? ' faster' : '';
	if (verdict === ' slower')
		slower++;
	rows.push([key, fmt(o), fmt(n), change === undefined ? '—' : `${change.toFixed(2)}${verdict}`,
		`${(noise * 100).toFixed(0)} %`]);
}
const w = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
const line = (r) => `| ${r.map((x, c) => x.padEnd(w[c])).join(' | ')} |`;
console.log(line(rows[0]));
console.log(`| ${w.map((n) => '-'.repeat(n)).join(' | ')} |`);
for (const r of rows.slice(1))
	console.log(line(r));
console.log(`\n${slower} workload(s) slower beyond the noise of the same binary's two runs`);

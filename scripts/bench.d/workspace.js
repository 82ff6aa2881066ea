// SPDX-License-Identifier: GPL-2.0-or-later
// workspace.js DIR N            creates a project of N source files in DIR
// workspace.js DIR N K ROUND    changes K of them (which ones depends on ROUND)
//
// The work tree of the git workloads of scripts/bench: a checkpoint commits
// the files the agent changed, here K of N files with one line more.
'use strict';

const fs = require('fs');
const path = require('path');

const [dir, nArg, kArg, roundArg] = process.argv.slice(2);
const n = Number(nArg);
const name = (i) => path.join(dir, `src/mod${i % 20}`, `file${i}.ts`);

if (kArg === undefined) {
	for (let i = 0; i < n; i++) {
		fs.mkdirSync(path.dirname(name(i)), { recursive: true });
		const lines = [`// file ${i}`];
		for (let j = 0; j < 60 + (i * 7) % 80; j++)
			lines.push(`export function f${i}_${j}(x: number): number { return x * ${j} + ${i}; }`);
		fs.writeFileSync(name(i), lines.join('\n') + '\n');
	}
	fs.writeFileSync(path.join(dir, 'README.md'), '# a project\n');
} else {
	const k = Number(kArg), round = Number(roundArg);
	for (let j = 0; j < k; j++) {
		const i = (round * k + j * 7) % n;
		fs.appendFileSync(name(i), `// changed in round ${round}\n`);
	}
}

// SPDX-License-Identifier: GPL-2.0-or-later
// gen.js KIND COUNT SEED [--pretty] [--size N]
// Prints a Cline-like doc to stdout: KIND is ui (ui_messages.json), api
// (api_conversation_history.json), history (taskHistory.json) or metadata
// (task_metadata.json, pretty-printed as Cline writes it). The same arguments
// always give the same bytes.
'use strict';

const { run, content } = require('./common.js');

run(() => {
	const [kind, count, seed, ...rest] = process.argv.slice(2);
	const opts = { pretty: rest.includes('--pretty') };
	const s = rest.indexOf('--size');
	if (s >= 0)
		opts.size = Number(rest[s + 1]);
	process.stdout.write(content(kind, Number(count), Number(seed), opts));
});

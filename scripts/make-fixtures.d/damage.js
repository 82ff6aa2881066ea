// SPDX-License-Identifier: GPL-2.0-or-later
//
// damage.js DIR: makes a copy of the 2.18.0 fixture's folder into the damaged
// one, in place. Two damages, the failures convfs exists for:
//
//   torn      the first task's tasks/<id>/ui_messages.json (the first item of
//             state/taskHistory.json) ends in the middle of its last message,
//             just after that message's second member's name ('..."type"'),
//             as a save cut short leaves it;
//   unlisted  the second task's item is taken out of state/taskHistory.json,
//             so that its folder tasks/<id> is one the history does not list.
//
// Everything else stays byte for byte (the text is cut, never written anew).
'use strict';

const fs = require('fs');
const path = require('path');
const { elementSpans } = require('./spans');

function die(msg)
{
	process.stderr.write('make-fixtures: damage: ' + msg + '\n');
	process.exit(1);
}

const dir = process.argv[2];
if (!dir)
	die('usage: damage.js DIR');
const historyFile = path.join(dir, 'state', 'taskHistory.json');
const history = fs.readFileSync(historyFile, 'utf8');
const items = JSON.parse(history);
const spans = elementSpans(history);
if (items.length !== 2 || spans.length !== 2)
	die(`'${historyFile}' has ${items.length} items; the 2.18.0 folder has two tasks`);

// torn
const torn = path.join(dir, 'tasks', items[0].id, 'ui_messages.json');
const ui = fs.readFileSync(torn, 'utf8');
const last = elementSpans(ui).pop();
const cut = last ? ui.indexOf(',"type"', last[0]) : -1;
if (cut < 0 || cut > last[1])
	die(`cannot find the last message's "type" in '${torn}'`);
fs.writeFileSync(torn, ui.slice(0, cut + ',"type"'.length));

// unlisted: the second item goes with the comma before it.
fs.writeFileSync(historyFile, history.slice(0, spans[0][1]) + history.slice(spans[1][1]));
process.stderr.write(`make-fixtures: damage: tasks/${items[0].id}/ui_messages.json torn (${ui.length} -> ${cut + ',"type"'.length} bytes), ` +
	`tasks/${items[1].id} no longer in state/taskHistory.json\n`);

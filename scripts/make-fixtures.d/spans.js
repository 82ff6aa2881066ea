// SPDX-License-Identifier: GPL-2.0-or-later
//
// spans.js: where each element of a JSON array of objects (or arrays) stands
// in its text, so that make-fixtures edits the text in place instead of
// writing the JSON anew (compact stays compact, pretty stays pretty).
'use strict';

// elementSpans(TEXT): [start, end) of each object or array at depth 1.
function elementSpans(text)
{
	const spans = [];
	let depth = 0, start = -1, inStr = false;
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (inStr) {
			if (c === '\\')
				i++;
			else if (c === '"')
				inStr = false;
		} else if (c === '"') {
			inStr = true;
		} else if (c === '{' || c === '[') {
			if (depth === 1)
				start = i;
			depth++;
		} else if (c === '}' || c === ']') {
			depth--;
			if (depth === 1)
				spans.push([start, i + 1]);
		}
	}
	return spans;
}

module.exports = { elementSpans };

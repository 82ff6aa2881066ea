// SPDX-License-Identifier: GPL-2.0-or-later
// git_craft.js GIT_DIR COMMAND ARGS...
// Writes loose git objects into GIT_DIR/objects as git would, including ones
// git itself refuses to make, and prints the id of the last one written:
//   blob TEXT                      a blob holding TEXT
//   lines COUNT TAG                a blob of COUNT lines of 64 bytes ending in TAG
//   repeat SIZE [CHAR]             a blob of SIZE bytes, each CHAR (a zero byte
//                                  if none), made in a blink: its zlib stream
//                                  repeats one compressed MiB (each ends with
//                                  a full flush, so none refers to the one
//                                  before); only its id is hashed over every
//                                  byte (a few seconds for 4 GiB)
//   tree MODE NAME ID [...]        a tree of these entries, sorted as git
//                                  sorts them, each as given: NAME may be
//                                  "hex:<bytes>" for any bytes (a NUL, a
//                                  slash, "", "." or "..")
//   nest DEPTH NAME ID             DEPTH trees, each holding the next as "d",
//                                  the deepest one holding NAME (a blob ID)
//   commit TREE [PARENT]           a commit of TREE at a fixed time
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const zlib = require('zlib');

const [gitDir, cmd, ...args] = process.argv.slice(2);
const objects = path.join(gitDir, 'objects');

// write(TYPE, BODY): the loose object of BODY (a Buffer); returns its id.
function write(type, body)
{
	const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
	const id = crypto.createHash('sha1').update(raw).digest('hex');
	const file = path.join(objects, id.slice(0, 2), id.slice(2));
	if (!fs.existsSync(file)) {
		fs.mkdirSync(path.dirname(file), { recursive: true });
		fs.writeFileSync(file, zlib.deflateSync(raw), { mode: 0o444 });
	}
	return id;
}

function repeat(size, char)
{
	const MiB = 1 << 20;
	const head = Buffer.from(`blob ${size}\0`);
	const byte = char === undefined ? 0 : Buffer.from(char)[0];
	const chunk = Buffer.alloc(MiB, byte);
	const sha = crypto.createHash('sha1').update(head);
	const parts = [Buffer.from([0x78, 0x01]), zlib.deflateRawSync(head, { finishFlush: zlib.constants.Z_FULL_FLUSH })];
	const packed = zlib.deflateRawSync(chunk, { finishFlush: zlib.constants.Z_FULL_FLUSH });
	let left = BigInt(size);
	while (left > 0n) {
		const n = left < BigInt(MiB) ? Number(left) : MiB;
		const piece = n === MiB ? chunk : chunk.subarray(0, n);
		sha.update(piece);
		parts.push(n === MiB ? packed : zlib.deflateRawSync(piece, { finishFlush: zlib.constants.Z_FULL_FLUSH }));
		left -= BigInt(n);
	}
	parts.push(zlib.deflateRawSync(Buffer.alloc(0))); // the last, empty block
	// adler32 of the whole: after the head, n bytes c add n*c to a, and to b
	// n*a (a before them) plus c*n*(n+1)/2.
	let a = 1n, b = 0n;
	for (const c of head) {
		a = (a + BigInt(c)) % 65521n;
		b = (b + a) % 65521n;
	}
	const n = BigInt(size), c = BigInt(byte);
	b = (b + n * a + c * n * (n + 1n) / 2n) % 65521n;
	a = (a + n * c) % 65521n;
	const sum = Buffer.alloc(4);
	sum.writeUInt32BE(Number((b << 16n) | a));
	parts.push(sum);
	const id = sha.digest('hex');
	const file = path.join(objects, id.slice(0, 2), id.slice(2));
	fs.mkdirSync(path.dirname(file), { recursive: true });
	fs.writeFileSync(file, Buffer.concat(parts), { mode: 0o444 });
	return id;
}

// tree([MODE, NAME, ID, ...]): git orders entries by name, a folder's as if it ended with '/'.
function tree(list)
{
	const entries = [];
	for (let i = 0; i + 2 < list.length; i += 3) {
		const name = list[i + 1].startsWith('hex:') ? Buffer.from(list[i + 1].slice(4), 'hex') : Buffer.from(list[i + 1]);
		const key = list[i] === '40000' ? Buffer.concat([name, Buffer.from('/')]) : name;
		entries.push({ key, bytes: Buffer.concat([Buffer.from(`${list[i]} `), name, Buffer.from([0]), Buffer.from(list[i + 2], 'hex')]) });
	}
	entries.sort((a, b) => Buffer.compare(a.key, b.key));
	return write('tree', Buffer.concat(entries.map((e) => e.bytes)));
}

function commit(treeId, parent)
{
	const who = 'Cline Checkpoint <checkpoint@cline.bot> 1700000000 +0000';
	let text = `tree ${treeId}\n`;
	if (parent)
		text += `parent ${parent}\n`;
	text += `author ${who}\ncommitter ${who}\n\ncrafted\n`;
	return write('commit', Buffer.from(text));
}

let id;
switch (cmd) {
case 'blob':
	id = write('blob', Buffer.from(args[0]));
	break;
case 'lines': {
	const lines = [];
	for (let i = 0; i < Number(args[0]); i++)
		lines.push(`line ${String(i).padStart(6, '0')} of a text file of 64-byte lines, ${args[1]}`.padEnd(63, '.') + '\n');
	id = write('blob', Buffer.from(lines.join('')));
	break;
}
case 'repeat':
	id = repeat(BigInt(args[0]), args[1]);
	break;
case 'tree':
	id = tree(args);
	break;
case 'nest':
	id = tree(['100644', args[1], args[2]]);
	for (let i = 0; i < Number(args[0]); i++)
		id = tree(['40000', 'd', id]);
	break;
case 'commit':
	id = commit(args[0], args[1]);
	break;
default:
	process.stderr.write(`git_craft.js: unknown command '${cmd}'\n`);
	process.exit(2);
}
process.stdout.write(id + '\n');

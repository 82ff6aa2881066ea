// SPDX-License-Identifier: GPL-2.0-or-later
//
// normalise.js: what differs from one run of the Cline CLIs to the next, made
// the same, for scripts/make-fixtures.
//
//   normalise.js NAME RAW OUT T0 T1 PORT RELEASE
//       copies the data folder RAW, as a client left it, to OUT (the fixture
//       NAME: cline-2.18.0, cline-1.0.10 or cline-3.0.65), normalised. T0 and
//       T1 are the clock (ms) at the start and the end of the run, PORT the
//       model server's port, RELEASE this machine's os.release().
//   normalise.js clock NAME
//       prints where the fixture NAME's clock starts (ms; cline-damaged has
//       the clock of cline-2.18.0, whose folder it is made from)
//   normalise.js mask FILE
//       prints FILE with every time of a fixture's clock and every git object
//       id masked (fixtures_rerun.sh compares two runs so).
//
// Every file keeps its bytes but what is named below, and its mode; text is
// edited where it stands, never parsed and written again (compact JSON stays
// compact, pretty stays pretty). What is made the same:
//
//   - times: every time of the run found anywhere (in contents and in names):
//     epoch milliseconds (13 digits: task ids, "ts", 3.x session ids), ISO
//     8601 with milliseconds, the time inside a ULID; and, known to the
//     second or the day only, epoch seconds (10 digits), the prompts'
//     "M/D/YYYY, h:mm:ss AM" and "M/D/YYYY". A number is a time if it falls
//     within the run (T0 - 10 min to T1 + 10 min). The distinct times in
//     milliseconds of a folder, sorted, are put on the fixture's clock by
//     rank: the k-th is CLOCKS[NAME] + k * STEP ms, so their order is kept,
//     ids stay 13 digits, and the first task's id is CLOCKS[NAME]. A time
//     known to the second (or day) is put at the second (or day) of the
//     first time in milliseconds at or after its start; it has no rank of
//     its own, so that a prompt's "Current Time" cannot shift the ids.
//   - random tokens, each distinct one replaced by one made from its class and
//     rank of first appearance (files taken in the order of their normalised
//     names), of the same length and alphabet: a ULID's random part, a 3.x
//     session id's 5-letter end, UUIDs, 3.x message ids (msg_XXXXXXXX) and
//     team names (team-XXXXX);
//   - the model server's port (127.0.0.1:PORT) becomes 127.0.0.1:18080;
//   - this machine's kernel, os_version in task_metadata.json, becomes
//     FIXED_RELEASE; process ids (3.x: "pid" of a manifest, the sessions
//     table's pid) become 4101, 4102, ... in order of first appearance;
//   - a history item's "size" (state/taskHistory.json) is what the client
//     computes it as, the sum of the sizes of the files of tasks/<id>, taken
//     on the normalised folder (the client's own figure is taken at its last
//     save, and depends on how long the times it held then were written);
//   - SQLite databases are dumped, normalised as text, and loaded into a new
//     file with the same page size, encoding, auto_vacuum, user_version,
//     application_id and journal mode (a WAL database's -wal and -shm are
//     read in and not kept);
//   - git repositories (1.x's shadow checkpoint repos): the client's commits
//     are dated at the start of the fixture's clock (make-fixtures sets
//     GIT_AUTHOR_DATE and GIT_COMMITTER_DATE so), and each is written again
//     with its text normalised (the task id in its message) and its parents'
//     new ids; the old commits' loose objects are dropped, every mention of
//     an old id (refs, reflogs, lastCheckpointHash) is replaced, and
//     .git/index is made again from HEAD (`git read-tree`), without the stat
//     data of the client's files.
// A time of the run or the kernel's name still found afterwards, in any form,
// is an error: the normaliser does not know that form yet.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { execFileSync } = require('child_process');
const { elementSpans } = require('./spans');

// Where each fixture's clock starts: where its first time (the first task's
// id) stood in the folders the tests used before make-fixtures, so that the
// first ids stay what the tests have always named.
const CLOCKS = {
	'cline-2.18.0': 1795306269021, // 2026-11-22T00:11:09.021Z
	'cline-1.0.10': 1795306331217, // 2026-11-22T00:12:11.217Z
	'cline-3.0.65': 1795505492931, // 2026-11-24T07:31:32.931Z
};
const STEP = 1009; // ms between two ranks: a prime, so the last digits vary
const SPAN = 3600 * 1000; // the times of a fixture stay within an hour of its clock
const SLACK = 10 * 60 * 1000; // a time of the run is within 10 min of its ends
const FIXED_PORT = 18080;
const FIXED_RELEASE = '6.1.0-28-amd64';
const FIRST_PID = 4101;

function die(msg)
{
	process.stderr.write('make-fixtures: ' + msg + '\n');
	process.exit(1);
}

// ---- times ----------------------------------------------------------------------

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

const TIME_RE = new RegExp([
	'(?<iso>(?<!\\d)\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z)',
	'(?<dt>(?<!\\d)\\d{1,2}/\\d{1,2}/\\d{4}, \\d{1,2}:\\d\\d:\\d\\d [AP]M)',
	'(?<day>(?<!\\d)\\d{1,2}/\\d{1,2}/\\d{4}(?!\\d))',
	'(?<ulid>(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z]))',
	'(?<ms>(?<![0-9A-Za-z])\\d{13}(?!\\d))',
	'(?<s>(?<![0-9A-Za-z])\\d{10}(?!\\d))',
].join('|'), 'g');

function ulidTime(u)
{
	let t = 0;
	for (const c of u.slice(0, 10))
		t = t * 32 + CROCKFORD.indexOf(c);
	return t;
}

function ulidTimeText(ms)
{
	let s = '';
	for (let i = 0; i < 10; i++) {
		s = CROCKFORD[ms % 32] + s;
		ms = Math.floor(ms / 32);
	}
	return s;
}

function parseDateTime(text)
{
	const m = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+) ([AP]M)$/.exec(text);
	const h = (Number(m[4]) % 12) + (m[7] === 'PM' ? 12 : 0);
	return Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), h, Number(m[5]), Number(m[6]));
}

function parseDay(text)
{
	const m = /^(\d+)\/(\d+)\/(\d+)$/.exec(text);
	return Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]));
}

const two = (n) => String(n).padStart(2, '0');
const dayText = (d) => `${d.getUTCMonth() + 1}/${d.getUTCDate()}/${d.getUTCFullYear()}`;

function dateTimeText(ms)
{
	const d = new Date(ms);
	const h = d.getUTCHours();
	return `${dayText(d)}, ${h % 12 || 12}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${h < 12 ? 'AM' : 'PM'}`;
}

// The time a match stands for (ms), or null if it is not a time of the run
// (window [lo, hi]).
function timeOf(g, lo, hi)
{
	let t;
	if (g.iso !== undefined)
		t = Date.parse(g.iso);
	else if (g.dt !== undefined)
		t = parseDateTime(g.dt);
	else if (g.day !== undefined) {
		t = parseDay(g.day);
		const day = 86400000;
		return t >= Math.floor(lo / day) * day && t <= hi ? t : null;
	} else if (g.ulid !== undefined)
		t = ulidTime(g.ulid);
	else if (g.ms !== undefined)
		t = Number(g.ms);
	else
		t = Number(g.s) * 1000;
	return t >= lo && t <= hi ? t : null;
}

// ---- random tokens --------------------------------------------------------------

const NANOID = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
const HEX = '0123456789abcdef';

const TOKEN_RE = new RegExp([
	'(?<sid>(?<=(?<![0-9A-Za-z])\\d{13}_)[0-9a-z]{5}(?![0-9A-Za-z]))',
	'(?<uuid>\\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\\b)',
	'(?<msg>(?<=\\bmsg_)[A-Za-z0-9_-]{8}(?![A-Za-z0-9_-]))',
	'(?<team>(?<=\\bteam-)[A-Za-z0-9_-]{5}(?![A-Za-z0-9_-]))',
].join('|'), 'g');

// chars(cls, k, n, alphabet): n characters made from the class and rank.
function chars(cls, k, n, alphabet)
{
	const h = crypto.createHash('sha256').update(`${cls}:${k}`).digest();
	let s = '';
	for (let i = 0; i < n; i++)
		s += alphabet[h[i] % alphabet.length];
	return s;
}

const MAKERS = {
	ulid: (k) => chars('ulid', k, 16, CROCKFORD),
	sid: (k) => chars('sid', k, 5, BASE36),
	msg: (k) => chars('msg', k, 8, NANOID),
	team: (k) => chars('team', k, 5, NANOID),
	uuid: (k) => {
		const x = chars('uuid', k, 32, HEX).split('');
		x[12] = '4';
		x[16] = '89ab'[HEX.indexOf(x[16]) % 4];
		const s = x.join('');
		return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
	},
	pid: (k) => String(FIRST_PID + k),
};

class Tokens {
	constructor() { this.maps = {}; }
	get(cls, raw)
	{
		const m = this.maps[cls] || (this.maps[cls] = new Map());
		if (!m.has(raw))
			m.set(raw, MAKERS[cls](m.size));
		return m.get(raw);
	}
}

// ---- the normaliser ---------------------------------------------------------------

class Normaliser {
	constructor(name, t0, t1, port, release)
	{
		if (!(name in CLOCKS))
			die(`no clock for the fixture '${name}'`);
		this.base = CLOCKS[name];
		this.lo = t0 - SLACK;
		this.hi = t1 + SLACK;
		this.port = port;
		this.release = release;
		this.seen = new Set();
		this.rank = null;
		this.tokens = new Tokens();
		this.commits = new Map(); // old git commit id -> new
	}

	collect(text)
	{
		for (const m of text.matchAll(TIME_RE)) {
			const g = m.groups;
			const t = timeOf(g, this.lo, this.hi);
			if (t !== null && (g.iso || g.ulid || g.ms))
				this.seen.add(t);
		}
	}

	// Once every time is collected: their ranks.
	freeze()
	{
		this.sorted = [...this.seen].sort((a, b) => a - b);
		if (this.sorted.length * STEP >= SPAN)
			die(`${this.sorted.length} distinct times do not fit the fixture's clock`);
		this.rank = new Map(this.sorted.map((t, i) => [t, this.base + i * STEP]));
	}

	// A time known to the second (or the day) only has no rank of its own:
	// it is put where the first time in milliseconds at or after its start
	// is put (the last one if none is), so that order is kept and a prompt's
	// "Current Time" cannot shift the ids.
	coarse(t)
	{
		const s = this.sorted;
		if (s.length === 0)
			return this.base;
		let lo = 0, hi = s.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (s[mid] < t)
				lo = mid + 1;
			else
				hi = mid;
		}
		return this.rank.get(s[Math.min(lo, s.length - 1)]);
	}

	times(text)
	{
		return text.replace(TIME_RE, (whole, ...args) => {
			const g = args[args.length - 1];
			const t = timeOf(g, this.lo, this.hi);
			if (t === null)
				return whole;
			const n = g.iso || g.ulid || g.ms ? this.rank.get(t) : this.coarse(t);
			if (g.iso !== undefined)
				return new Date(n).toISOString();
			if (g.dt !== undefined)
				return dateTimeText(n);
			if (g.day !== undefined)
				return dayText(new Date(n));
			if (g.ulid !== undefined)
				return ulidTimeText(n) + this.tokens.get('ulid', g.ulid.slice(10));
			if (g.ms !== undefined)
				return String(n);
			return String(Math.floor(n / 1000));
		});
	}

	// Everything but the times (which come first, so that a token is found
	// in text whose times are already the fixture's).
	rest(text)
	{
		text = text.replace(/\b[0-9a-f]{40}\b/g, (h) => this.commits.get(h) || h);
		text = text.replace(TOKEN_RE, (whole, ...args) => {
			const g = args[args.length - 1];
			const cls = Object.keys(g).find((k) => g[k] !== undefined);
			return this.tokens.get(cls, whole);
		});
		text = text.replace(new RegExp(`\\b127\\.0\\.0\\.1:${this.port}(?!\\d)`, 'g'), `127.0.0.1:${FIXED_PORT}`);
		text = text.replace(/("os_version": ?")([^"]*)(")/g, (w, a, v, b) => a + FIXED_RELEASE + b);
		text = text.replace(/("pid": ?)(\d+)/g, (w, a, p) => a + this.tokens.get('pid', p));
		text = text.replace(/(INSERT INTO sessions VALUES\('(?:[^']|'')*','(?:[^']|'')*',)(\d+)/g,
			(w, a, p) => a + this.tokens.get('pid', p));
		return text;
	}

	text(text) { return this.rest(this.times(text)); }

	// What is still of the run after normalising: a form of time not known.
	leftover(text)
	{
		const days = new Set();
		for (let t = this.lo; t <= this.hi + 86400000; t += 86400000) {
			const d = new Date(Math.min(t, this.hi));
			days.add(d.toISOString().slice(0, 10));
			days.add(dayText(d));
		}
		for (const d of days)
			if (text.includes(d))
				return d;
		for (const m of text.matchAll(/\d{10,}/g)) {
			const v = m[0];
			for (const t of [Number(v.slice(0, 13)), Number(v.slice(0, 10)) * 1000])
				if (t >= this.lo && t <= this.hi)
					return v;
		}
		if (this.release.length >= 5 && text.includes(this.release))
			return this.release;
		return null;
	}
}

// ---- the folder ---------------------------------------------------------------------

// walk(DIR): every entry below DIR, relative, folders before what they hold.
function walk(dir, rel = '', out = [])
{
	for (const name of fs.readdirSync(path.join(dir, rel)).sort()) {
		const r = rel ? rel + '/' + name : name;
		const st = fs.lstatSync(path.join(dir, r));
		out.push({ rel: r, st });
		if (st.isDirectory())
			walk(dir, r, out);
	}
	return out;
}

function isSqlite(file)
{
	const fd = fs.openSync(file, 'r');
	const b = Buffer.alloc(16);
	const n = fs.readSync(fd, b, 0, 16, 0);
	fs.closeSync(fd);
	return n === 16 && b.toString('latin1') === 'SQLite format 3\0';
}

function asText(buf, rel)
{
	const s = buf.toString('utf8');
	if (!Buffer.from(s, 'utf8').equals(buf))
		die(`cannot normalise '${rel}': it is neither text, a SQLite database nor part of a git repository`);
	return s;
}

function run(cmd, args, opts = {})
{
	try {
		return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28, ...opts });
	} catch (e) {
		die(`${cmd} ${args.join(' ')} failed: ${(e.stderr || e.message).toString().trim().split('\n')[0]}`);
	}
}

const SQLITE_PRAGMAS = ['page_size', 'encoding', 'auto_vacuum', 'user_version', 'application_id', 'journal_mode'];

// A database's dump and pragmas, read from a copy (its -wal too).
function readDb(raw, rel, tmp)
{
	const dir = fs.mkdtempSync(path.join(tmp, 'db-'));
	const copy = path.join(dir, 'db');
	fs.copyFileSync(path.join(raw, rel), copy);
	if (fs.existsSync(path.join(raw, rel + '-wal')))
		fs.copyFileSync(path.join(raw, rel + '-wal'), copy + '-wal');
	const pragmas = {};
	for (const p of SQLITE_PRAGMAS)
		pragmas[p] = run('sqlite3', ['-batch', copy, `PRAGMA ${p};`]).trim();
	const dump = run('sqlite3', ['-batch', copy, '.dump']);
	fs.rmSync(dir, { recursive: true });
	return { pragmas, dump };
}

function writeDb(file, db)
{
	const p = db.pragmas;
	const sql = `PRAGMA page_size=${p.page_size};\nPRAGMA encoding='${p.encoding}';\nPRAGMA auto_vacuum=${p.auto_vacuum};\n` +
		db.dump +
		`PRAGMA user_version=${p.user_version};\nPRAGMA application_id=${p.application_id};\n` +
		`PRAGMA journal_mode=${p.journal_mode};\n`;
	run('sqlite3', ['-batch', file], { input: sql });
	for (const x of ['-wal', '-shm', '-journal'])
		if (fs.existsSync(file + x))
			die(`'${file}${x}' is left after loading the normalised database`);
}

// The git repositories below RAW: their .git folders, relative.
function gitDirs(entries)
{
	return entries.filter((e) => e.st.isDirectory() && path.basename(e.rel) === '.git').map((e) => e.rel);
}

// git GITDIR ARGS...: with an empty work tree (made by normalise()), since
// core.worktree names the client's workspace, which is not here.
let emptyTree;
function git(gitDir, args, opts)
{
	return run('git', ['--git-dir=' + gitDir, '--work-tree=' + emptyTree, ...args], opts);
}

// Every commit of a repository, parents first; it must have no packs.
function commitsOf(gitDir)
{
	const packs = path.join(gitDir, 'objects', 'pack');
	if (fs.existsSync(packs) && fs.readdirSync(packs).length)
		die(`cannot normalise '${gitDir}': it has packed objects`);
	const all = git(gitDir, ['cat-file', '--batch-all-objects', '--batch-check']).split('\n')
		.filter((l) => / commit /.test(l)).map((l) => l.split(' ')[0]);
	const ordered = git(gitDir, ['rev-list', '--all', '--reflog', '--reverse', '--topo-order']).split('\n').filter(Boolean);
	if (all.some((c) => !ordered.includes(c)))
		die(`cannot normalise '${gitDir}': it holds a commit that no ref or reflog reaches`);
	return ordered;
}

// The history items' sizes: the files of tasks/<id> in OUT, summed.
function historySizes(out, text)
{
	let res = '', at = 0;
	for (const [a, b] of elementSpans(text)) {
		const item = text.slice(a, b);
		const id = /"id":\s*"(\d+)"/.exec(item);
		const dir = id && path.join(out, 'tasks', id[1]);
		res += text.slice(at, a);
		if (dir && fs.existsSync(dir)) {
			let size = 0;
			for (const e of walk(dir))
				if (e.st.isFile())
					size += e.st.size;
			res += item.replace(/("size":\s*)\d+/, (w, k) => k + size);
		} else {
			res += item;
		}
		at = b;
	}
	return res + text.slice(at);
}

function normalise(name, raw, out, t0, t1, port, release)
{
	const nz = new Normaliser(name, t0, t1, port, release);
	const tmp = fs.mkdtempSync(path.join(path.dirname(out), '.normalise-'));
	emptyTree = fs.mkdtempSync(path.join(tmp, 'worktree-'));
	const entries = walk(raw);
	const repos = gitDirs(entries);
	const inRepo = (rel) => repos.find((g) => rel.startsWith(g + '/'));
	const isObject = (rel) => { const g = inRepo(rel); return g && rel.slice(g.length + 1).startsWith('objects/'); };
	const isIndex = (rel) => { const g = inRepo(rel); return g && rel === g + '/index'; };

	// What each file is, and its text.
	const files = [];
	for (const e of entries) {
		const abs = path.join(raw, e.rel);
		nz.collect(e.rel);
		if (e.st.isDirectory())
			continue;
		if (e.st.isSymbolicLink())
			die(`cannot normalise '${e.rel}': a symbolic link`);
		if (!e.st.isFile())
			die(`cannot normalise '${e.rel}': not a file`);
		if (/-(wal|shm)$/.test(e.rel) && entries.some((x) => x.rel === e.rel.slice(0, -4)))
			continue; // read in with its database
		if (isObject(e.rel) || isIndex(e.rel))
			continue; // made again below
		if (isSqlite(abs)) {
			const db = readDb(raw, e.rel, tmp);
			nz.collect(db.dump);
			files.push({ e, db });
		} else {
			const text = asText(fs.readFileSync(abs), e.rel);
			nz.collect(text);
			files.push({ e, text });
		}
	}
	const commits = {};
	for (const g of repos) {
		commits[g] = commitsOf(path.join(raw, g)).map((id) => ({ id, text: git(path.join(raw, g), ['cat-file', 'commit', id]) }));
		for (const c of commits[g])
			nz.collect(c.text);
	}
	nz.freeze();

	// The commits again, parents first, with their new ids.
	for (const g of repos) {
		for (const c of commits[g]) {
			const text = nz.text(c.text);
			const what = nz.leftover(text);
			if (what)
				die(`commit ${c.id} of '${g}' still holds '${what}' of the run: the normaliser does not know its form`);
			c.newId = git(path.join(raw, g), ['hash-object', '-t', 'commit', '-w', '--stdin'], { input: text }).trim();
			nz.commits.set(c.id, c.newId);
		}
	}

	// Folders first, then the files in the order of their normalised names.
	fs.mkdirSync(out);
	const dirs = entries.filter((e) => e.st.isDirectory() && !(isObject(e.rel)));
	for (const e of dirs)
		fs.mkdirSync(path.join(out, nz.text(e.rel)), { recursive: true });
	files.sort((a, b) => {
		const x = nz.times(a.e.rel), y = nz.times(b.e.rel);
		return x < y ? -1 : x > y ? 1 : 0;
	});
	for (const f of files) {
		const rel = nz.text(f.e.rel);
		const dest = path.join(out, rel);
		if (f.db) {
			f.db.dump = nz.text(f.db.dump);
			writeDb(dest, f.db);
		} else {
			fs.writeFileSync(dest, nz.text(f.text));
		}
		f.out = rel;
	}
	// Git objects: the old commits' dropped, the rest as they are (a loose
	// object is named by what it holds), from the repository as it is now.
	const kept = new Set(nz.commits.values());
	for (const g of repos) {
		const objects = path.join(raw, g, 'objects');
		for (const c of commits[g]) {
			if (kept.has(c.id))
				continue;
			const f = path.join(objects, c.id.slice(0, 2), c.id.slice(2));
			fs.rmSync(f);
			if (fs.readdirSync(path.dirname(f)).length === 0)
				fs.rmdirSync(path.dirname(f));
		}
		for (const e of walk(objects)) {
			const rel = g + '/objects/' + e.rel;
			if (e.st.isDirectory()) {
				fs.mkdirSync(path.join(out, rel), { recursive: true });
				dirs.push({ rel, st: e.st });
			} else {
				fs.copyFileSync(path.join(objects, e.rel), path.join(out, rel));
				files.push({ e: { rel, st: e.st }, out: rel });
			}
		}
	}
	for (const g of repos) {
		git(path.join(out, g), ['read-tree', 'HEAD']);
		const e = entries.find((x) => x.rel === g + '/index');
		if (e)
			files.push({ e, out: g + '/index' });
		git(path.join(out, g), ['fsck', '--full', '--strict', '--no-progress', '--no-dangling']);
	}

	// The history items' sizes, once every task's files are written.
	for (const f of files)
		if (f.out === 'state/taskHistory.json')
			fs.writeFileSync(path.join(out, f.out), historySizes(out, fs.readFileSync(path.join(out, f.out), 'utf8')));

	// Nothing of the run is left.
	for (const f of files) {
		if (f.db || isObject(f.e.rel) || isIndex(f.e.rel))
			continue;
		const what = nz.leftover(f.out) || nz.leftover(fs.readFileSync(path.join(out, f.out), 'utf8'));
		if (what)
			die(`'${f.out}' still holds '${what}' of the run: the normaliser does not know its form`);
	}
	for (const f of files) {
		if (!f.db)
			continue;
		const what = nz.leftover(f.db.dump);
		if (what)
			die(`'${f.out}' still holds '${what}' of the run: the normaliser does not know its form`);
	}

	// Modes as the client left them, folders last.
	for (const f of files)
		fs.chmodSync(path.join(out, f.out), f.e.st.mode & 0o7777);
	for (const e of dirs.reverse())
		fs.chmodSync(path.join(out, nz.text(e.rel)), e.st.mode & 0o7777);
	fs.chmodSync(out, fs.statSync(raw).mode & 0o7777);
	fs.rmSync(tmp, { recursive: true });
	process.stderr.write(`make-fixtures: ${name}: ${nz.rank.size} distinct times, ` +
		Object.entries(nz.tokens.maps).map(([k, m]) => `${m.size} ${k}`).join(', ') +
		`, ${nz.commits.size} commits\n`);
}

// ---- masking, for fixtures_rerun.sh ----------------------------------------------------

// Every time of a fixture's clock (the hour after its start) and every git
// object id, masked.
function mask(text)
{
	// (from the start of the clock's first second: a time known to the
	// second may fall before the clock's first millisecond)
	const on = (t) => Object.values(CLOCKS).some((b) => t >= Math.floor(b / 1000) * 1000 && t < b + SPAN);
	const on_day = (t) => Object.values(CLOCKS).some((b) => t === Math.floor(b / 86400000) * 86400000);
	text = text.replace(TIME_RE, (whole, ...args) => {
		const g = args[args.length - 1];
		const t = timeOf(g, -Infinity, Infinity);
		if (g.day !== undefined)
			return on_day(t) ? '<day>' : whole;
		if (!on(t))
			return whole;
		if (g.ulid !== undefined)
			return '<ulid-time>' + g.ulid.slice(10);
		return '<' + Object.keys(g).find((k) => g[k] !== undefined) + '>';
	});
	return text.replace(/\b[0-9a-f]{40}\b/g, '<git-id>');
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === 'clock' && rest.length === 1 && (rest[0] in CLOCKS || rest[0] === 'cline-damaged')) {
	process.stdout.write(CLOCKS[rest[0] === 'cline-damaged' ? 'cline-2.18.0' : rest[0]] + '\n');
} else if (cmd === 'mask' && rest.length === 1) {
	process.stdout.write(mask(fs.readFileSync(rest[0], 'utf8')));
} else if (rest.length === 6 && cmd in CLOCKS) {
	const [raw, out, t0, t1, port, release] = rest;
	normalise(cmd, raw, out, Number(t0), Number(t1), port, release);
} else {
	die('usage: normalise.js NAME RAW OUT T0 T1 PORT RELEASE | clock NAME | mask FILE');
}

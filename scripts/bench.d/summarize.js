// SPDX-License-Identifier: GPL-2.0-or-later
// summarize.js RESULTS SIZES_JSON
//
// Reads scripts/bench's raw results (lines KEY <tab> plain|convfs|passthrough
// |floor <tab> VALUE: milliseconds, or kB for the rss_* keys) and prints the
// markdown table: workload | n | plain median | convfs median | convfs/plain
// | target; with results of libfuse's passthrough_ll (the rows it can serve
// in --quick, the saves in the other runs) or of the floor (the walks), two
// columns more each before the target: its median and its ratio to plain.
'use strict';

const fs = require('fs');

const [file, sizesArg] = process.argv.slice(2);
const sz = JSON.parse(sizesArg);
const data = {};
for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
	if (!line || line.startsWith('#'))
		continue;
	const [key, side, value] = line.split('\t');
	((data[key] ||= {})[side] ||= []).push(Number(value));
}

function median(a) {
	if (!a || !a.length)
		return undefined;
	const s = [...a].sort((x, y) => x - y);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function ms(v) {
	if (v === undefined)
		return '—';
	if (v >= 10000)
		return `${(v / 1000).toFixed(1)} s`;
	if (v >= 1000)
		return `${(v / 1000).toFixed(2)} s`;
	if (v >= 100)
		return `${v.toFixed(0)} ms`;
	if (v >= 10)
		return `${v.toFixed(1)} ms`;
	return `${v.toFixed(2)} ms`;
}
const ratio = (r) => (r === undefined || !isFinite(r) ? '—' : r >= 10 ? `${r.toFixed(0)}×` : `${r.toFixed(2)}×`);
const mb = (kb) => (kb === undefined ? '—' : `${(kb / 1024).toFixed(1)} MB`);
const verdict = (v, max, unit) => (v === undefined ? `≤ ${max}${unit}` : `≤ ${max}${unit} ${v <= max ? 'met' : '**missed**'}`);

// The other sides, each with a column pair if it has results: [side, title].
const others = [['passthrough', 'passthrough_ll'], ['floor', 'floor'], ['sync', 'convfs -o sync']]
	.filter(([side]) => Object.values(data).some((d) => d[side]));
const rows = [];
// A row: workload, n, plain, convfs, convfs/plain, target; more: the other
// sides' cells, a pair each, in the order of others.
function row(cells, more) {
	const r = [...cells];
	r.splice(5, 0, ...(more || others.flatMap(() => ['—', '—'])));
	rows.push(r);
}
// target: the most convfs/plain may be; maxMs: the most convfs may take.
function timeRow(key, title, target, maxMs) {
	const d = data[key];
	if (!d)
		return;
	const p = median(d.plain), c = median(d.convfs);
	const n = Math.max((d.plain || []).length, (d.convfs || []).length);
	const r = p !== undefined && c !== undefined ? c / p : undefined;
	const more = others.flatMap(([side]) => {
		const t = median(d[side]);
		return [ms(t), ratio(p !== undefined && t !== undefined ? t / p : undefined)];
	});
	const goal = target ? verdict(r, target, '×') : maxMs ? verdict(c, maxMs, ' ms') : '';
	row([title, n, ms(p), ms(c), ratio(r), goal], more);
}

const bigMB = `${sz.bigMB} MB`;
const tasks = sz.tasks.toLocaleString('en-US');
const longN = sz.long.toLocaleString('en-US');

if (data.import)
	row([`import (first mount) of ${sz.dataMB} MB, ${tasks} tasks`, 1, '—', ms(median(data.import.convfs)), '—', '']);
if (data.index_build)
	row(['search index, built behind the mount after the import', 1, '—', ms(median(data.index_build.convfs)), '—', '']);
if (data.index_mb && data.store_mb) {
	const i = median(data.index_mb.convfs), s = median(data.store_mb.convfs);
	row(['search index size, of the store\'s', '', '—', `${i.toFixed(0)} of ${s.toFixed(0)} MB`, `${(100 * i / s).toFixed(1)} %`,
		verdict(100 * i / s, 40, ' %')]);
}
if (data.ready) {
	const v = median(data.ready.convfs);
	row(['mount ready, nothing changed underneath (start to usable root), warm cache', data.ready.convfs.length, '—', ms(v), '—', verdict(v, 200, ' ms')]);
}
if (data.ready_cold) {
	const v = median(data.ready_cold.convfs);
	row(['mount ready, nothing changed underneath, cold cache', data.ready_cold.convfs.length, '—', ms(v), '—', verdict(v, 200, ' ms')]);
}
// One history across machines (-o sync): its own rows, each against what it stands beside.
function syncRows() {
	const one = (k) => (data[k] ? median(data[k].convfs) : undefined);
	const imp = one('import'), catchup = one('sync_catchup');
	if (data.sync_enable)
		row(['-o sync, first mount of the imported store (records what each commit changed)', 1, '—', ms(one('sync_enable')), '—', '']);
	if (data.sync_push)
		row([`-o sync, its first push of all ${tasks} tasks to PostgreSQL`, 1, '—', ms(one('sync_push')), '—', '']);
	if (catchup !== undefined)
		row([`-o sync, a new machine takes in all ${tasks} tasks (mounted when done) / import`, 1, '—', ms(catchup),
			ratio(imp ? catchup / imp : undefined), verdict(imp ? catchup / imp : undefined, 2, '× of import')]);
	if (data.sync_latency) {
		const v = Math.max(...data.sync_latency.convfs);
		row(['-o sync, a save read on the other machine (the worst of 5)', data.sync_latency.convfs.length, '—', ms(v), '—', verdict(v, 1000, ' ms')]);
	}
	for (const [k, title] of [['save_rename', `save ${bigMB}, temp+rename`], ['save_inplace', `save ${bigMB}, in place`],
		['jsonl_long', `>> to messages.jsonl of ${longN} messages`], ['jsonl_small', '>> to messages.jsonl of 10 messages']]) {
		if (!data[k] || !data[k].sync)
			continue;
		const r = median(data[k].sync) / median(data[k].convfs);
		row([`-o sync / without: ${title}`, data[k].sync.length, '—', ms(median(data[k].sync)), ratio(r),
			['save_rename', 'jsonl_long'].includes(k) ? verdict(r, 1.1, '×') : '']);
	}
}

timeRow('save_rename', `save ${bigMB} ui_messages.json, temp+rename`, 1.5);
timeRow('save_alone', `save ${bigMB} ui_messages.json, temp+rename, again (the mount alone, right before the next three)`);
timeRow('save_read_one', `save ${bigMB} ui_messages.json, temp+rename, the mount alone, a reader of it through that mount (plain: of the file)`);
timeRow('save_served', `save ${bigMB} ui_messages.json, temp+rename, a second mount serving`);
if (data.save_served && data.save_alone) {
	const rp = median(data.save_served.plain) / median(data.save_alone.plain);
	const rc = median(data.save_served.convfs) / median(data.save_alone.convfs);
	row(['save, second mount serving / save, one mount', '', ratio(rp), ratio(rc), '—', verdict(rc, 1.2, '×')]);
}
timeRow('save_peer', `save ${bigMB} ui_messages.json, temp+rename, a second mount serving and reading it (plain: a reader of the file)`);
if (data.save_peer && data.save_alone) {
	const rp = median(data.save_peer.plain) / median(data.save_alone.plain);
	const rc = median(data.save_peer.convfs) / median(data.save_alone.convfs);
	row(['save, second mount serving and reading / save, one mount', '', ratio(rp), ratio(rc), '—', verdict(rc, 1.2, '×')]);
}
if (data.save_peer && data.save_read_one) {
	const rp = median(data.save_peer.plain) / median(data.save_read_one.plain);
	const rc = median(data.save_peer.convfs) / median(data.save_read_one.convfs);
	row(['save, second mount serving and reading / save, one mount read the same way', '', ratio(rp), ratio(rc), '—', '']);
}
timeRow('save_inplace', `save ${bigMB} ui_messages.json, in place`, 1.5);
timeRow('save_merged', `merged save ${bigMB} (other writer in between), temp+rename`);
if (data.save_merged && data.save_rename) {
	const rp = median(data.save_merged.plain) / median(data.save_rename.plain);
	const rc = median(data.save_merged.convfs) / median(data.save_rename.convfs);
	row(['merged save / unmerged temp+rename save', '', ratio(rp), ratio(rc), '—', '']);
}
timeRow('append_small', 'append 1 message to 10 (temp+rename of the compat file)');
timeRow('append_long', `append 1 message to ${longN} (temp+rename of the compat file)`);
// The "append cost is flat" target is for >> to messages.jsonl; without
// the view, for the compat file.
const hasJsonl = data.jsonl_small && data.jsonl_long;
function appendRatio(small, long, title, target) {
	if (!data[small] || !data[long])
		return;
	const rp = median(data[long].plain) / median(data[small].plain);
	const rc = median(data[long].convfs) / median(data[small].convfs);
	row([title, '', ratio(rp), ratio(rc), '—', target ? verdict(rc, 1.2, '×') : '']);
}
appendRatio('append_small', 'append_long', `append cost ${longN} / 10 messages (compat file)`, !hasJsonl);
timeRow('jsonl_small', '>> 1 line to messages.jsonl of 10 messages (plain: a .jsonl file)', 0, 2);
timeRow('jsonl_long', `>> 1 line to messages.jsonl of ${longN} messages`, 0, 2);
appendRatio('jsonl_small', 'jsonl_long', `>> cost ${longN} / 10 messages`, true);
timeRow('stat', `stat of ${sz.statFiles} conversation files of 100 tasks (one stat command)`);
// convfs search: at most 50 ms, and 20 times faster than grep -rli of the same words (plain).
function searchRow(key, title) {
	const d = data[key];
	if (!d)
		return;
	const p = median(d.plain), c = median(d.convfs);
	const r = p !== undefined && c !== undefined ? c / p : undefined;
	let goal = verdict(c, 50, ' ms');
	if (r !== undefined)
		goal += `; ≥ 20× faster ${r <= 0.05 ? 'met' : '**missed**'}`;
	row([title, Math.max((d.plain || []).length, (d.convfs || []).length), ms(p), ms(c), ratio(r), goal]);
}
searchRow('search_one', 'convfs search, one word in 1 % of the tasks (plain: grep -rli)');
searchRow('search_two', 'convfs search, a two-word phrase (plain: grep -rli)');
timeRow('search_common', 'convfs search --limit 20, a word in most messages (convfs only)', 0, 50);
timeRow('git_shadow', 'git add -A && commit, 100 files, shadow repo (.git in checkpoints/123)', 2);
timeRow('git_inside', 'git add -A && commit, 100 files, repo and work tree in checkpoints/123', 2);
timeRow('view_ls', `ls -lR of one workspace in the view (${sz.wsTasks} tasks; plain: their task folders)`);
timeRow('view_grep', `grep -r in one workspace in the view (${sz.wsTasks} tasks; plain: their task folders)`);
timeRow('view_root', 'the list of the view\'s workspaces, ls -l workspaces/ (convfs only)');
timeRow('ls', `ls -lR (${tasks} tasks)`, 1.5);
timeRow('find', `find (${tasks} tasks)`, 1.5);
timeRow('grep_warm', 'grep -r over all history, warm', 1.5);
timeRow('grep_cold', 'grep -r over all history, cold (caches dropped)', 1.5);
timeRow('rsync_first', 'rsync -a, first copy');
timeRow('rsync_rerun', 'rsync -a, rerun with nothing changed', 1.5);
syncRows();
if (data.rss_import)
	row(['daemon peak RSS (VmHWM), import', '', '—', mb(median(data.rss_import.convfs)), '—', '']);
if (data.rss_index)
	row(['daemon peak RSS (VmHWM), import and search index build', '', '—', mb(median(data.rss_index.convfs)), '—', '']);
if (data.rss_peak) {
	const v = median(data.rss_peak.convfs);
	row(['daemon peak RSS (VmHWM), all workloads', '', '—', mb(v), '—', verdict(v / 1024, 64, ' MB')]);
}

const head = ['workload', 'n', 'plain median', 'convfs median', 'convfs/plain', 'target'];
head.splice(5, 0, ...others.flatMap(([, title]) => [`${title} median`, `${title}/plain`]));
const table = [head, head.map(() => '---'), ...rows.map((r) => r.map(String))];
const w = head.map((_, i) => Math.max(...table.map((r) => [...r[i]].length)));
for (const r of table)
	process.stdout.write('| ' + r.map((c, i) => c === '---' ? '-'.repeat(w[i]) : c + ' '.repeat(w[i] - [...c].length)).join(' | ') + ' |\n');

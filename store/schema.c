/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * schema.c: the store's schema and its forward migrations.
 *
 * PRAGMA application_id marks a convfs store; PRAGMA user_version holds the
 * schema version. Each migration takes the schema from version i to i+1 and
 * runs in the same transaction as the version bump, so a store is always at
 * exactly one version. A store from a newer convfs is refused, never touched.
 * docs/SCHEMA.md documents every table; keep it in step with this file.
 */
#include <errno.h>
#include <stdio.h>

#include "store/search.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/util.h"

#define STORE_APPLICATION_ID 0x636f6e76 /* "conv" */

static const char *const migrations[] = {
	/* 0 -> 1: the first schema */
	"CREATE TABLE meta ("
	"  key TEXT PRIMARY KEY,"
	"  value TEXT NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE workspaces ("
	"  id INTEGER PRIMARY KEY,"
	"  key TEXT NOT NULL UNIQUE,"
	"  path TEXT NOT NULL,"
	"  first_seen_ns INTEGER NOT NULL"
	");"
	"CREATE TABLE tasks ("
	"  id TEXT PRIMARY KEY,"
	"  workspace_id INTEGER REFERENCES workspaces(id),"
	"  first_seen_ns INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE revisions ("
	"  id INTEGER PRIMARY KEY,"
	"  time_ns INTEGER NOT NULL,"
	"  pid INTEGER,"
	"  comm TEXT,"
	"  path TEXT NOT NULL,"
	"  doc_id INTEGER,"
	"  kind TEXT NOT NULL,"
	"  detail TEXT"
	");"
	"CREATE TABLE docs ("
	"  id INTEGER PRIMARY KEY,"
	"  path TEXT NOT NULL UNIQUE,"
	"  parent TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  task_id TEXT REFERENCES tasks(id),"
	"  format INTEGER NOT NULL,"
	"  present INTEGER NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  mtime_ns INTEGER NOT NULL,"
	"  ctime_ns INTEGER NOT NULL,"
	"  rev INTEGER NOT NULL,"
	"  head TEXT NOT NULL DEFAULT '',"
	"  tail TEXT NOT NULL DEFAULT '',"
	"  nelems INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX docs_parent ON docs(parent, name);"
	"CREATE TABLE elems ("
	"  id INTEGER PRIMARY KEY,"
	"  doc_id INTEGER NOT NULL REFERENCES docs(id),"
	"  seq INTEGER NOT NULL,"
	"  off INTEGER NOT NULL,"
	"  pre TEXT NOT NULL,"
	"  len INTEGER NOT NULL,"
	"  json TEXT NOT NULL,"
	"  key TEXT,"
	"  ts INTEGER,"
	"  rev_from INTEGER NOT NULL,"
	"  rev_to INTEGER"
	");"
	"CREATE INDEX elems_off ON elems(doc_id, off, rev_from, rev_to);"
	"CREATE TABLE blobs ("
	"  id INTEGER PRIMARY KEY,"
	"  doc_id INTEGER NOT NULL REFERENCES docs(id),"
	"  rev INTEGER NOT NULL,"
	"  data BLOB NOT NULL,"
	"  UNIQUE (doc_id, rev)"
	");",

	/* 1 -> 2: find a history item, and a task's docs, without a scan */
	"CREATE INDEX elems_key ON elems(doc_id, key) WHERE key IS NOT NULL AND rev_to IS NULL;"
	"CREATE INDEX docs_task ON docs(task_id);",

	/* 2 -> 3: a hash of each element's bytes, for three-way merges */
	"ALTER TABLE elems ADD COLUMN h INTEGER;"
	"UPDATE elems SET h = convfs_hash(json);"
	"CREATE INDEX elems_hash ON elems(doc_id, h) WHERE key IS NOT NULL;",

	/* 3 -> 4: offsets of the JSONL rendering (one element a line), and the trash */
	"ALTER TABLE elems ADD COLUMN loff INTEGER;"
	"ALTER TABLE docs ADD COLUMN lsize INTEGER NOT NULL DEFAULT 0;"
	"UPDATE elems SET loff = (SELECT coalesce(sum(e2.len + 1), 0) FROM elems e2"
	"  WHERE e2.doc_id = elems.doc_id AND e2.rev_to IS NULL AND e2.seq < elems.seq) WHERE rev_to IS NULL;"
	"UPDATE docs SET lsize = (SELECT coalesce(sum(len + 1), 0) FROM elems"
	"  WHERE elems.doc_id = docs.id AND rev_to IS NULL) WHERE format = 0;"
	"CREATE INDEX elems_loff ON elems(doc_id, loff, rev_from, rev_to);"
	"ALTER TABLE tasks ADD COLUMN trashed_ns INTEGER;",

	/*
	 * 4 -> 5: what the store last saw of the folder underneath the mount,
	 * so that every mount takes in what changed there (fs/backing/import.c). A
	 * store that took the folder in before this table existed gets the time
	 * of that import, to tell what was taken in then from what came later.
	 */
	"CREATE TABLE underneath ("
	"  path TEXT PRIMARY KEY,"
	"  type INTEGER NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  mtime_ns INTEGER NOT NULL,"
	"  ino INTEGER NOT NULL,"
	"  rev INTEGER,"
	"  gone INTEGER NOT NULL DEFAULT 0"
	") WITHOUT ROWID;"
	"INSERT INTO meta(key, value) SELECT 'underneath_before',"
	"  (SELECT coalesce(min(time_ns), 0) FROM revisions WHERE kind IN ('import', 'import-damaged'))"
	"  WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'imported_from');",

	/* 5 -> 6: a doc's revisions without a scan of the log (convfs log and restore, a task's versions/) */
	"CREATE INDEX IF NOT EXISTS revisions_doc ON revisions(doc_id, id);",

	/*
	 * 6 -> 7: a doc's current elements without a walk past its old ones.
	 * Every commit reads them (the common prefix), closes some and finds
	 * where the last line ends; through elems_off or elems_loff that
	 * visited every row the doc ever had, so a save cost grew with the
	 * number of saves before it (Cline rewrites its last message many
	 * times a turn).
	 */
	"CREATE INDEX elems_cur ON elems(doc_id, seq) WHERE rev_to IS NULL;",

	/*
	 * 7 -> 8: an element's bytes last in its row. SQLite builds a row with
	 * a zeroblob in it (a large element, written into afterwards a piece at
	 * a time: store/src.c) without allocating it only when nothing follows
	 * it; and a column after a large element is read by walking every page
	 * of it. The table is copied once, in the order that allows both.
	 */
	"CREATE TABLE elems_new ("
	"  id INTEGER PRIMARY KEY,"
	"  doc_id INTEGER NOT NULL REFERENCES docs(id),"
	"  seq INTEGER NOT NULL,"
	"  off INTEGER NOT NULL,"
	"  pre TEXT NOT NULL,"
	"  len INTEGER NOT NULL,"
	"  key TEXT,"
	"  ts INTEGER,"
	"  rev_from INTEGER NOT NULL,"
	"  rev_to INTEGER,"
	"  h INTEGER,"
	"  loff INTEGER,"
	"  json TEXT NOT NULL"
	");"
	"INSERT INTO elems_new(id, doc_id, seq, off, pre, len, key, ts, rev_from, rev_to, h, loff, json)"
	"  SELECT id, doc_id, seq, off, pre, len, key, ts, rev_from, rev_to, h, loff, json FROM elems;"
	"DROP TABLE elems;"
	"ALTER TABLE elems_new RENAME TO elems;"
	"CREATE INDEX elems_off ON elems(doc_id, off, rev_from, rev_to);"
	"CREATE INDEX elems_key ON elems(doc_id, key) WHERE key IS NOT NULL AND rev_to IS NULL;"
	"CREATE INDEX elems_hash ON elems(doc_id, h) WHERE key IS NOT NULL;"
	"CREATE INDEX elems_loff ON elems(doc_id, loff, rev_from, rev_to);"
	"CREATE INDEX elems_cur ON elems(doc_id, seq) WHERE rev_to IS NULL;",

	/*
	 * 8 -> 9: a workspace's tasks without a scan of every task. Each
	 * request on a path of the workspaces view sums up its workspace, and a
	 * `>>` to messages.jsonl makes several.
	 */
	"CREATE INDEX tasks_workspace ON tasks(workspace_id);",

	/*
	 * 9 -> 10: a keyed digest of each element's bytes (digest128(), with
	 * the key made here and kept in meta), in the index of a doc's current
	 * elements beside their lengths and the bytes before them (and rev_to,
	 * always NULL there, without which SQLite reads the table to check
	 * it): a commit finds the elements the new content keeps from the
	 * index alone, not by reading them (store/array.c, known_prefix()).
	 * Rows written before have none: a commit compares those by their
	 * bytes, once, and fills it in. An element over ELEM_INLINE bytes never
	 * has one (its row would be rewritten whole to add it).
	 */
	"ALTER TABLE elems ADD COLUMN dg BLOB;"
	"DROP INDEX elems_cur;"
	"CREATE INDEX elems_cur ON elems(doc_id, seq, len, pre, dg, rev_to) WHERE rev_to IS NULL;"
	"INSERT OR IGNORE INTO meta(key, value) VALUES ('digest_key', lower(hex(randomblob(288))));",

	/*
	 * 10 -> 11: the last change of any live task without a sum of every
	 * task: the time of the workspaces view's root, which every walk
	 * through it asks for once the kernel's entry has lapsed (a `>>` to a
	 * messages.jsonl a second later, say) when the folder underneath has
	 * no workspaces/ of its own.
	 */
	"CREATE INDEX docs_mtime ON docs(mtime_ns) WHERE present;",

	/*
	 * 11 -> 12: several mounts of one store. What the store last saw
	 * underneath is kept per folder mounted over (the host's, a
	 * container's): one folder's rows are never the base of another's
	 * take-in, which would take what that one lacks for removals. A folder
	 * is its path and its device and inode number (a rebuilt container's
	 * folder of the same path is another); the rows from before belong to
	 * the folder first taken in, claimed by the first take-in of its path.
	 * And plain_changes: the plain files a daemon changed while others
	 * served the store too, for them to drop what their kernel keeps of
	 * those (fs/kernel/watch.c).
	 */
	"CREATE TABLE folders ("
	"  id INTEGER PRIMARY KEY,"
	"  path TEXT NOT NULL,"
	"  dev INTEGER,"
	"  ino INTEGER,"
	"  taken_ns INTEGER"
	");"
	"INSERT INTO folders(id, path, taken_ns)"
	"  SELECT 1, coalesce((SELECT value FROM meta WHERE key = 'imported_from'), ''),"
	"    CASE WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'imported_from') THEN unixepoch() * 1000000000 END"
	"  WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'imported_from') OR EXISTS (SELECT 1 FROM underneath);"
	"CREATE TABLE underneath_new ("
	"  folder INTEGER NOT NULL,"
	"  path TEXT NOT NULL,"
	"  type INTEGER NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  mtime_ns INTEGER NOT NULL,"
	"  ino INTEGER NOT NULL,"
	"  rev INTEGER,"
	"  gone INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (folder, path)"
	") WITHOUT ROWID;"
	"INSERT INTO underneath_new SELECT 1, path, type, size, mtime_ns, ino, rev, gone FROM underneath;"
	"DROP TABLE underneath;"
	"ALTER TABLE underneath_new RENAME TO underneath;"
	"CREATE TABLE plain_changes ("
	"  id INTEGER PRIMARY KEY,"
	"  path TEXT NOT NULL,"
	"  time_ns INTEGER NOT NULL"
	");",

	/*
	 * 12 -> 13: a folder is also its birth time (statx's btime). A rebuilt
	 * container's folder of the same path may well have the device and
	 * inode number of the one before: a fresh tmpfs numbers its inodes from
	 * the start, an anonymous device number is handed out again, ext4 reuses
	 * a freed inode. Taken for the one before, its take-in would merge what
	 * the client wrote there with that one's last take-in as the base, and
	 * drop what that one had and this one never saw (a task from the
	 * history). 0: its filesystem keeps no birth time; NULL: not known yet
	 * (a row from before, claimed by the next take-in of its path, device
	 * and inode).
	 */
	"ALTER TABLE folders ADD COLUMN born_ns INTEGER;",

	/*
	 * 13 -> 14: what one history shared across machines needs here
	 * (store/sync_*.c, docs/SYNC.md): which docs each revision changed,
	 * recorded once the store syncs (sync_touch, written by doc_update()
	 * and doc_set_present()); the last log entry of each doc and the
	 * local revision holding exactly its content (sync_docs); every log
	 * entry this store has (sync_seen); the local revisions made by
	 * applying an entry, which are never pushed (sync_applied). All empty
	 * until a store first syncs. (A migration of its own: the next one
	 * added elsewhere takes the number after it.)
	 */
	"CREATE TABLE sync_touch ("
	"  rev INTEGER NOT NULL,"
	"  doc_id INTEGER NOT NULL,"
	"  present INTEGER NOT NULL,"
	"  nelems INTEGER,"
	"  PRIMARY KEY (rev, doc_id)"
	") WITHOUT ROWID;"
	"CREATE INDEX sync_touch_doc ON sync_touch(doc_id, rev);"
	"CREATE TABLE sync_docs ("
	"  doc_id INTEGER PRIMARY KEY,"
	"  seq INTEGER NOT NULL,"
	"  rev INTEGER NOT NULL"
	");"
	"CREATE TABLE sync_seen ("
	"  seq INTEGER PRIMARY KEY,"
	"  rev INTEGER NOT NULL,"
	"  mine INTEGER NOT NULL"
	");"
	"CREATE TABLE sync_applied ("
	"  rev INTEGER PRIMARY KEY,"
	"  seq INTEGER NOT NULL"
	");",

	/* 14 -> 15: the search index (store/index.c), built behind the mount */
	SEARCH_MIGRATION,

	/*
	 * 15 -> 16: the sync's index of the rows each revision added was
	 * elems_from (doc_id, rev_from). Without statistics, SQLite took its
	 * range on rev_from for a better search than elems_cur's or
	 * elems_off's, and every commit of a store that had synced once read
	 * the whole doc's rows, all its versions (the search index's look for
	 * rows to take out, the read of a writer's base): a 20 MB save took
	 * twice as long. Its successor leads with rev_from (elems_added, made
	 * by store_sync_enable() when a store syncs): only an equality on
	 * rev_from reaches it, which no other statement has.
	 */
	"DROP INDEX IF EXISTS elems_from;",

	/* 16 -> 17: the text of a message past its first MiB in the search index, in pieces (store/index.c) */
	SEARCH_PIECES_MIGRATION,

	/* 17 -> 18: all of it, the pieces past the first 16 taken in (and out) behind the mount */
	SEARCH_LATER_MIGRATION,
};

int store_schema_version(void)
{
	return (int)ARRAY_SIZE(migrations);
}

static int pragma_int(struct store *st, const char *sql, int *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, sql, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, sql);
	*ret = sqlite3_column_int(stmt, 0);
	return 0;
}

/* Migrates up to `target` (tests use a lower target to build old stores). */
int store_migrate_to(struct store *st, int target);
int store_migrate_to(struct store *st, int target)
{
	int app_id, version, ntables, r;

	r = pragma_int(st, "PRAGMA application_id", &app_id);
	if (r < 0)
		return r;
	r = pragma_int(st, "PRAGMA user_version", &version);
	if (r < 0)
		return r;
	r = pragma_int(st, "SELECT count(*) FROM sqlite_master", &ntables);
	if (r < 0)
		return r;
	if (app_id != STORE_APPLICATION_ID && (app_id != 0 || ntables != 0 || version != 0)) {
		log_err("the store file is not a convfs database (application_id %#x); refusing to touch it", app_id);
		return -ENOTSUP;
	}
	if (version > store_schema_version()) {
		log_err("the store has schema version %d, newer than this convfs knows (%d); upgrade convfs",
			version, store_schema_version());
		return -ENOTSUP;
	}
	if (version >= target)
		return 0;
	if (st->readonly) {
		log_err("the store has schema version %d and needs migrating to %d, but it is read-only",
			version, target);
		return -EROFS;
	}
	if (version > 0)
		log_info("migrating the store from schema version %d to %d: a large store takes a while", version,
			 target);
	store_blob_drop(st);
	r = store_exec(st, "BEGIN IMMEDIATE");
	if (r < 0)
		return r;
	for (int v = version; v < target; v++) {
		r = store_exec(st, migrations[v]);
		if (r < 0) {
			log_err("cannot migrate the store from schema version %d to %d", v, v + 1);
			goto rollback;
		}
	}
	{
		char sql[96];

		snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d",
			 STORE_APPLICATION_ID, target);
		r = store_exec(st, sql);
		if (r < 0)
			goto rollback;
	}
	r = store_exec(st, "COMMIT");
	if (r < 0)
		goto rollback;
	if (version > 0)
		log_info("migrated the store from schema version %d to %d", version, target);
	return 0;
rollback:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

int store_schema_of(struct store *st)
{
	int version, r = store_migrate_to(st, 0); /* refuses what is not ours, or newer; changes nothing */

	if (r == 0)
		r = pragma_int(st, "PRAGMA user_version", &version);
	return r < 0 ? r : version;
}

int store_migrate(struct store *st)
{
	return store_migrate_to(st, store_schema_version());
}

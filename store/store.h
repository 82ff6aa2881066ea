/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_H
#define CONVFS_STORE_H

/*
 * The store: every managed file of a Cline globalStorage folder, kept in one
 * SQLite database. This header is the whole interface between the FUSE driver
 * and the storage; it knows nothing of FUSE, so that a second backend
 * (PostgreSQL, one history shared by several machines) can implement it.
 *
 * A "doc" is one managed file, named by its path in the compat tree
 * ("state/taskHistory.json", "tasks/<id>/ui_messages.json", ...). Array docs
 * are kept one element a row and rendered on read; whole docs are kept as one
 * blob per version. Every change is one transaction and one row of the
 * revision log; nothing a rewrite drops is deleted.
 *
 * Calls on one store may come from any thread at once: the store serialises
 * them on its one connection, and the calls that list call back after letting
 * go of it, so a callback may call the store again. Two exceptions: nothing
 * may use a store during or after store_free(); and a batch belongs to the
 * connection, not to the thread that began it (see store_batch_begin()).
 * What a call hands out is the caller's. A store_snap or a store_base may be
 * read by several threads at once, but not freed, nor a snapshot cut with
 * store_snap_limit(), while another thread uses it (docs/ARCHITECTURE.md,
 * "Threads and locks"). Functions return 0 (or a count) on success and a
 * negative errno on failure; SQLite's codes are translated in one place,
 * store_errno(). Out-parameters are named ret_* and untouched on failure.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;
struct store_base;
struct store_snap;

/* Inode numbers of docs live above this bit, clear of any real filesystem's. */
#define STORE_INO_BASE (UINT64_C(1) << 62)

/* Who makes a change: recorded in the revision log. */
struct store_who {
	pid_t pid;
	const char *comm;
};

/* What a path in the compat tree is (see layout.c). */
enum store_path_kind {
	STORE_PATH_PLAIN = 0,  /* not managed: a plain file in the backing tree */
	STORE_PATH_ARRAY,      /* a JSON array kept one element a row */
	STORE_PATH_WHOLE,      /* a JSON file kept whole per version */
	STORE_PATH_DOC_DIR,    /* a directory that holds docs: state/, tasks/<id>/ */
	STORE_PATH_TASKS_DIR,  /* tasks/ itself */
};

enum store_path_kind store_path_kind(const char *path);
/* True if name is a Cline task id: decimal digits, at most 32 of them. */
bool store_is_task_id(const char *name);
/*
 * True for the client's own SQLite databases, which its processes share
 * through locks and shared memory that hold within one mount only (each
 * mount's kernel keeps its own): kept per mount, each mount's clients with
 * their own (fs/backing/plain.c). The 3.x CLI's db/ (an index it makes again
 * from the session files, which are docs) and the 1.x CLI's locks.db, its
 * journal and its lock file. rel is a path from the top of the folder.
 */
bool store_path_per_mount(const char *rel);
/* True if name is a Cline CLI 3.x session id: [A-Za-z0-9_-], at most 64, not all digits. */
bool store_is_session_id(const char *name);
/* Either: a conversation the view shows as a task. */
bool store_is_conversation_id(const char *name);
/* The task or session id the path (a doc or its folder) belongs to, into buf; -ENOENT for none. */
int store_path_conversation(const char *path, char *buf, size_t n);
/* The folder of a conversation's files, "tasks/<id>" or "sessions/<id>", into buf; -EINVAL for no id. */
int store_conversation_dir(const char *id, char *buf, size_t n);

/*
 * The most docs a numbering of versions may span: the files of one task,
 * which the caller names (store_versions(), store_doc_versions()).
 */
#define STORE_VERSION_DOCS_MAX 4

/* Cline's checkpoint hash of a workspace path: h = (h*31 + unit) >>> 0 over UTF-16 units. */
uint32_t store_workspace_key(const char *utf8_path);

/* Maps an SQLite result code to a negative errno. */
int store_errno(int sqlite_rc);

enum {
	STORE_OPEN_READONLY = 1 << 0,
	/* with READONLY: an older schema is opened as it is, not refused for want of a migration (check) */
	STORE_OPEN_AS_IS = 1 << 1,
};

/*
 * Opens (creating if needed) the store at path, migrating an older schema
 * forward. Fails with -ENOTSUP for a file that is not a convfs store or has a
 * newer schema, leaving the file untouched. Free with store_free().
 */
int store_open(const char *path, int flags, struct store **ret);
/*
 * Opens the file of st again, read-only, as a store of its own: one more
 * connection, whose long reads keep no call of st waiting (WAL readers do
 * not wait for each other). Free with store_free().
 */
int store_open_reader(struct store *st, struct store **ret);
void store_free(struct store *st);

/*
 * A number that changes whenever anything is committed: what was computed
 * from the store at one generation holds until it changes.
 */
uint64_t store_generation(struct store *st);

/*
 * A number that changes whenever a task may have moved: to or from the
 * trash, to another workspace, or one of its docs came or went. A view
 * that caches where tasks are checks it again when this changes.
 */
uint64_t store_placement_generation(struct store *st);

/* Schema version this build writes. */
int store_schema_version(void);

/* Small key/value settings kept in the store (e.g. "imported_from"). */
int store_meta_get(struct store *st, const char *key, char **ret_value); /* -ENOENT if unset; free() */
int store_meta_set(struct store *st, const char *key, const char *value);

/*
 * Groups many commits into one transaction (used by import). Commits inside a
 * batch are savepoints: a refused commit rolls back only itself. The batch is
 * the connection's: a change any thread makes before store_batch_end() joins
 * it, so batches are for a store that one thread uses (the take-in, before
 * mounting).
 */
int store_batch_begin(struct store *st);
int store_batch_end(struct store *st);

struct store_stat {
	uint64_t ino;
	int64_t size;
	int64_t lsize; /* size of the JSON Lines rendering (array docs) */
	int64_t mtime_ns;
	int64_t ctime_ns;
	int64_t rev;
};

/* -ENOENT if the doc does not exist (or was removed). */
int store_doc_stat(struct store *st, const char *path, struct store_stat *ret);

/*
 * A read snapshot: the doc as it stood when the snapshot was taken, readable
 * at any offset for as long as the snapshot lives, whatever is committed
 * meanwhile. Free with store_snap_free().
 */
struct store_snap;
int store_snap_open(struct store *st, const char *path, struct store_snap **ret);
void store_snap_free(struct store_snap *snap);
/* A second snapshot of the same version, *ret (free it too). -ENOMEM. */
int store_snap_dup(const struct store_snap *snap, struct store_snap **ret);
int64_t store_snap_size(const struct store_snap *snap);
/* The doc's attributes as of the snapshot. */
void store_snap_stat(const struct store_snap *snap, struct store_stat *ret);
int64_t store_snap_rev(const struct store_snap *snap);
/*
 * The doc's own bytes around the array of its elements as of snap: before
 * its first element (up to and including the '['; for a CLI 3.x session,
 * the object's members before "messages" too) and after its last. What a
 * rewrite of its JSON Lines is framed in. Valid while snap is; -EINVAL for a
 * doc that is not an array.
 */
int store_snap_frame(const struct store_snap *snap, const char **head, size_t *head_len, const char **tail,
		     size_t *tail_len);
/* Reads up to size bytes at off; returns the number read (0 at end) or -errno. */
ssize_t store_snap_read(struct store *st, struct store_snap *snap, char *buf, size_t size, off_t off);

/* One line of JSON Lines text, without its "\n". */
struct store_line {
	const char *data;
	size_t len;
};

/* Checks line i of JSON Lines text for path as store_doc_append() does; logs why not. */
int store_line_check(const char *path, size_t i, const struct store_line *line, const char *require_member);
/* Where a line lies in a file: bytes [off, off + len), without its "\n". */
struct store_line_at {
	size_t off, len;
};
/*
 * The same of n lines of file fd, size bytes long, which nothing else
 * changes meanwhile: read in order through a window, a line longer than it
 * a piece at a time, so lines of any size are checked in bounded memory.
 * Also -errno if the file cannot be read.
 */
int store_lines_check_fd(const char *path, int fd, size_t size, const struct store_line_at *lines, size_t n,
			 const char *require_member);

/*
 * Appends n elements to the array doc at path (creating it as "[...]" if it
 * does not exist), as one revision, without reading the doc: the cost does
 * not grow with its length. Each line must be one JSON object, and have
 * member require_member if that is not NULL; otherwise nothing is stored and
 * the result is -EINVAL, with a log line naming the line and why.
 */
int store_doc_append(struct store *st, const char *path, const struct store_line *lines, size_t n,
		     const char *require_member, const struct store_who *who);

/* A base: the version of the doc at path at revision rev, as read by a writer. */
int store_base_at(struct store *st, const char *path, int64_t rev, struct store_base **ret);

/*
 * What a writer last saw of a doc (the version it read, or the one it wrote),
 * the base of a three-way merge. Taken from a snapshot when the writer opens
 * the doc, and handed back by each commit. Free with store_base_free().
 */
struct store_base;
int store_base_from_snap(const struct store_snap *snap, struct store_base **ret);
void store_base_free(struct store_base *base);
/* Revision the base was taken at (for tests and logs). */
int64_t store_base_rev(const struct store_base *base);
/* True if the base is a version the writer read (not one it wrote). */
bool store_base_is_read(const struct store_base *base);

/*
 * One commit of a doc: its new content, who wrote it, and against which base.
 *
 * Content that is not valid JSON (or, for an array doc, not a JSON array) is
 * refused with -EINVAL and a log line that says why; the previous version
 * stays. A commit that changes nothing changes no metadata. kind names the
 * change in the revision log ("write", "rename", "import"; a commit the
 * merge changed is logged as "merge").
 *
 * With merge, the content is a writer's whose base is `base` (NULL: not
 * known), committed as a three-way merge with what is stored now
 * (docs/MERGE.md): what other writers committed since the base stays. With
 * the base equal to what is stored, it is stored as written.
 *
 * With ws_key (path "state/taskHistory.json"), the content is a rewrite of
 * one workspace's items ("" the unknown workspace), merged with the writer's
 * base filtered to that workspace: items of other workspaces are never
 * touched by it.
 */
struct store_commit {
	const char *path;
	/*
	 * The content, len bytes: at data; or, with data NULL, the first len
	 * bytes of file fd, which nothing else may change meanwhile (a private
	 * copy). From a file, the commit holds a piece of it at a time: its
	 * memory is bounded whatever the file's size.
	 */
	const char *data;
	size_t len;
	int fd;
	const struct store_who *who;
	const char *kind;
	bool merge;
	const struct store_base *base;
	const char *ws_key;
	bool raw; /* keep the content byte-for-byte, unparsed: store_doc_commit_raw() */
	/*
	 * fd_shared: fd is a file another process may change while it is read
	 * (a temp file renamed over a doc), and len only its size when the
	 * commit began. The store then reads each of its bytes at most once:
	 * it compares what it keeps of the stored doc with the first bytes,
	 * and has the rest, from where those end to the file's end then,
	 * copied by copy_rest() into a file only it reads (*ret_fd, to close;
	 * *ret_len bytes), which it commits from.
	 */
	bool fd_shared;
	int (*copy_rest)(void *ctx, int fd, size_t from, int *ret_fd, size_t *ret_len);
	void *copy_ctx;
	/* When it was made (the revision's time, the doc's mtime); 0: now. A commit pulled from another machine keeps its own. */
	int64_t time_ns;
};

/*
 * Commits c, creating the doc if needed. *ret_base (may be NULL) receives
 * the writer's new base; *ret_merged (may be NULL) tells whether the stored
 * result differs from what was written.
 */
int store_commit(struct store *st, const struct store_commit *c, struct store_base **ret_base, bool *ret_merged);

/* A commit of data as written, not merged: store_commit() of path, who and kind. */
int store_doc_commit(struct store *st, const char *path, const char *data, size_t len,
		     const struct store_who *who, const char *kind);

/* Keeps data byte-for-byte, unparsed (a damaged file found on import): store_commit() with raw. */
int store_doc_commit_raw(struct store *st, const char *path, const char *data, size_t len,
			 const struct store_who *who, const char *why);

/*
 * Sets the doc's mtime without a new revision: import keeps the time the
 * file last changed before convfs took it in.
 */
int store_doc_set_mtime(struct store *st, const char *path, int64_t mtime_ns);

/* Creates an empty doc if none exists (open with O_CREAT). -EEXIST if one does. */
int store_doc_create(struct store *st, const char *path, const struct store_who *who);

/* Removes the doc from the tree; its content stays in the store as revisions. */
int store_doc_remove(struct store *st, const char *path, const struct store_who *who, const char *kind);

/* Calls fn for each existing doc directly in directory dir ("" is the root). */
typedef int (*store_list_fn)(void *ctx, const char *name, const struct store_stat *stat);
int store_doc_list(struct store *st, const char *dir, store_list_fn fn, void *ctx);

/* Calls fn for each existing doc; name is its full path. */
int store_doc_foreach(struct store *st, store_list_fn fn, void *ctx);

/* True if the store is served read-only (a read-only file or filesystem). */
bool store_is_readonly(const struct store *st);

#endif

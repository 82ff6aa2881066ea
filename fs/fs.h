/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_FS_H
#define CONVFS_FS_H

/*
 * The FUSE driver: one struct fs per mount. It translates paths and errors
 * and nothing else: managed files go to the store (store/store.h), the
 * workspaces view is computed from it (view.c, shadow.c), every other path goes
 * to the backing tree, a plain directory beside the store file.
 */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/backing/tree.h"
#include "fs/cmd/registry.h"
#include "store/store.h"
#include "store/util.h"

#include <pthread.h>

struct fuse_args;
struct fuse_session;
struct bases;
struct take_in;
struct shares;
struct nodes;
struct dirs;
struct sync_glue;

/* Called for each entry of a folder listing; a negative return stops it. */
typedef int (*op_list_fn)(void *ctx, const char *name, mode_t type, uint64_t ino);

struct fs {
	struct store *store;
	int root_fd;        /* the backing tree, O_PATH */
	int lock_fd;        /* the store, flock()ed: shared by the daemons serving it (fs/mount/prepare.c) */
	struct registry registry; /* this daemon's, among those serving the store (registry.h) */
	char *backing_path; /* <store>.files */
	uid_t uid;
	gid_t gid;
	struct tree_owner owner; /* the store file's owner: what the take-in copies is theirs */
	mode_t root_mode;   /* the mount root's permission bits (plain_root_*(); the backing root stays 0700) */
	bool shared;        /* -o allow_other: keep group and other bits */
	bool salvage;       /* -o salvage: a damaged store served read-only, nothing taken in */
	struct bases *bases; /* what each writer last saw of each doc */
	struct take_in *take_in; /* the take-in, while the mount answers during it; set before the loop */
	int peers;          /* the other daemons serving the store (atomic; fs/kernel/watch.c counts them) */
	int64_t folder_id;  /* the folder mounted over, as the store knows it (store_seen_folder()); 0: none */
	char *per_mount;    /* where this mount keeps what is kept per mount (plain_per_mount()), or NULL */
	struct shares *shares;   /* other users' shares of the daemon's resources (shares.c); NULL: none */
	uint64_t nofile_was;     /* the soft limit of open files before shares_raise_nofile() */
	/* The kernel's side of the mount (fs/kernel/), from ll_session_new() to ll_session_free(). */
	struct fuse_session *session; /* what tells the kernel; NULL outside a mount (export, tests) */
	bool session_open;       /* the kernel may be told through it (atomic; kcache.c) */
	pthread_rwlock_t session_lock; /* held to tell the kernel; taken whole before the device closes (kcache.c) */
	struct nodes *nodes;     /* the kernel's node ids (nodes.h) */
	struct dirs *dirs;       /* listings kept for readdir (dirs.h) */
	bool epochs;             /* the kernel takes NOTIFY_INC_EPOCH (atomic; kcache.c) */
	uint64_t placement_told; /* the store's placement generation the kernel was told of (atomic; kcache.c) */
	struct sync_glue *sync;  /* -o sync: the sync with other machines (fs/sync/sync_glue.c); NULL without */
};

/*
 * The extended attribute `convfs restore` sets on a conversation file: its
 * value, a version's number, becomes the live version (control.c).
 */
#define FS_XATTR_RESTORE "user.convfs.restore"

/*
 * lowlevel.c: the FUSE session serving fs, its node table and listings made
 * (NULL, with one log line, if that fails); ll_session_free() ends them.
 */
struct fuse_session *ll_session_new(struct fuse_args *args, struct fs *fs);
void ll_session_free(struct fs *fs);

/* ---- plain.c: the backing tree, never followed out of ---------------- */

/*
 * Opens rel (relative to the backing root, "" for the root itself) without
 * following any symlink on the way or at the end, and without leaving the
 * tree. Returns an fd or -errno.
 */
int plain_open(const struct fs *fs, const char *rel, int flags, mode_t mode);

/*
 * plain_open() of a file the daemon will read or write: never waits in
 * open(), which a FIFO (for the other end) or a device put at rel would
 * make it do, holding a worker, or every worker, for good. It opens with
 * O_NONBLOCK, which changes nothing for a regular file, and refuses
 * anything else: -EISDIR for a folder, -EINVAL for the rest. *ret_st (may
 * be NULL) gets the file's fstat(). Returns an fd or -errno.
 */
int plain_open_regular(const struct fs *fs, const char *rel, int flags, mode_t mode, struct stat *ret_st);

/*
 * Opens the directory that holds rel (O_PATH) and points *ret_leaf at rel's
 * last component, for the *at() calls. Returns an fd or -errno.
 */
int plain_open_parent(const struct fs *fs, const char *rel, const char **ret_leaf);

/*
 * mkdir -p of rel in the backing tree, mode 0700. Returns 0 or -errno
 * (-ELOOP where a symlink stands in the way, -ENOTDIR a file).
 */
int plain_mkdirs(const struct fs *fs, const char *rel);

/* renameat2() of from to to, both resolved as plain_open_parent() does. 0 or -errno. */
int plain_rename(const struct fs *fs, const char *from, const char *to, unsigned int flags);
/* linkat() of from to to, both resolved as plain_open_parent() does. 0 or -errno. */
int plain_link(const struct fs *fs, const char *from, const char *to);

/*
 * Makes this mount's own folder in the backing tree, .convfs-mounts/<folder>
 * (the folder mounted over's id), where the paths store_path_per_mount()
 * names live (the client's SQLite databases: their locks and shared memory
 * hold within one mount only). The first mount that makes its own takes
 * over those of a store from before, at the top of the backing tree. 0 or
 * -errno, logged; without it those paths are shared, as before.
 */
#define PLAIN_PER_MOUNT_DIR ".convfs-mounts"
int plain_per_mount(struct fs *fs, int64_t folder);

/*
 * Opens (creating, 0700) the backing tree of the store at store_path. Called
 * once at startup: CONVFS_NO_OPENAT2=1 in the environment then makes every
 * later plain_open() walk paths by hand, as when openat2 is missing.
 */
int plain_open_root(const char *store_path, char **ret_backing_path, int *ret_fd);
/* From now on the daemon's log is where it stays: how backing paths are resolved may be said. */
void plain_log_ready(void);

/*
 * The mount root's mode, kept in the store while the backing root stays 0700
 * (plain.c). plain_root_load() reads it into fs->root_mode once, before
 * mounting, and makes a backing root an older convfs chmod'ed 0700 again
 * (its mode becomes the mount root's); plain_root_stat() is the mount
 * root's stat(); plain_root_chmod() changes the mount root's mode and no
 * other. Each returns 0 or -errno; load and chmod log what failed.
 */
int plain_root_load(struct fs *fs);
int plain_root_stat(const struct fs *fs, struct stat *st);
int plain_root_chmod(struct fs *fs, mode_t mode);
/* The store's meta row that holds the mount root's mode, in octal; its text as a mode: 0, or -EINVAL. */
#define PLAIN_ROOT_MODE_KEY "root_mode"
int plain_root_mode_parse(const char *text, mode_t *ret);

/* ---- bases.c: what each writing process last saw of each doc ------------- */

/* A process: its thread group, and the leader's start time against pid reuse. */
struct fs_proc {
	pid_t tgid;
	unsigned long long start;
	char comm[16];
};

/* Identifies the process of thread tid, as /proc said at most 0.1 s ago. Returns 0 or -errno. */
int fs_proc_get(pid_t tid, struct fs_proc *ret);

/*
 * commit.c: the one way the bytes a writer wrote become a commit. What is
 * committed, for whom, and where the writer's base is kept.
 */
struct commit_req {
	const char *doc;       /* the doc committed, when ws_key is NULL */
	const char *ws_key;    /* else a workspace's taskHistory.json ("": unknown), merged into the history */
	const char *base_path; /* the path the writer wrote: its base is kept under it */
	const char *kind;      /* for the revision log: "write", "rename", "rewrite" */
	const struct fs_proc *proc;
	const struct store_who *who;
};

/*
 * A file's bytes taken for a commit: in mem, or (fd >= 0) in a file of the
 * daemon's own; or, shared, in the writer's file itself, which the store
 * reads once and copies what it must read again from (store_commit.fd_shared).
 */
struct commit_bytes {
	struct sb mem;
	int fd;
	bool own_fd; /* fd is a copy, closed by commit_bytes_release() */
	bool shared;
	size_t len;
};
/* pread(), again after EINTR: the bytes read, 0 at the end, or -errno. */
ssize_t pread_retry(int fd, void *buf, size_t n, size_t off);
/* Writes all n bytes of p at offset off of fd (pwrite() again after a short write); 0 or -errno. */
int pwrite_all(int fd, const char *p, size_t n, size_t off);
/* Files larger than this are committed from a file, not read into memory (commit.c). */
#define COMMIT_INLINE ((size_t)16 << 20)
/*
 * The largest file committed as a conversation file: 1 GiB. No client
 * writes one near it (node's strings, which JSON.stringify() makes, end at
 * 512 MiB), and a file past it (a sparse one, made with truncate or a
 * write far out) would be copied whole before its bytes are judged.
 */
#define COMMIT_MAX ((size_t)1 << 30)
/*
 * Whether the file fd (st: its fstat) may be committed as the content of
 * path: -EFBIG past COMMIT_MAX, -EINVAL if it has a hole (a hole reads as
 * NUL bytes, which no JSON holds), each with one log line; else 0. Checked
 * before any byte is copied.
 */
int commit_size_check(int fd, const struct stat *st, const char *path);
/*
 * An unnamed file of the daemon's own in the backing tree's filesystem
 * (O_TMPFILE; where that is missing, a name removed at once), for staged
 * writes and copies. Returns an fd or -errno, logged.
 */
int fs_private_file(struct fs *fs);
/* What commit_take() does with a file larger than COMMIT_INLINE. */
enum commit_take_how {
	TAKE_OWN,    /* the daemon's own file (a staging file), which nothing writes meanwhile: committed from fd */
	TAKE_SHARED, /* a writer's file: committed from fd, shared (the store copies what it reads twice) */
	TAKE_COPY,   /* copied whole into a private file (the take-in may commit it twice) */
};
/*
 * Takes all fd holds (written as path), each byte read once: into memory up
 * to COMMIT_INLINE, else as how says; commit_size_check() first, and never
 * more than COMMIT_MAX bytes (-EFBIG). Free with commit_bytes_release().
 */
int commit_take(struct fs *fs, int fd, enum commit_take_how how, const char *path, struct commit_bytes *ret);
void commit_bytes_release(struct commit_bytes *b);
/*
 * jsonl.c: the JSON Lines staged in fd (a rewrite of the view's file for the
 * doc at path) as the JSON array it stands for, in *ret, each line checked
 * (with member require, if not NULL): between frame's head (up to and
 * including the '[') and tail (from after the last element), or, if frame is
 * NULL, "[" and "]". -ENODATA if fd holds nothing, -EINVAL (logged) for a bad
 * line. Free *ret with commit_bytes_release().
 */
struct jsonl_frame {
	const char *head;
	size_t head_len;
	const char *tail;
	size_t tail_len;
};
int jsonl_to_array(struct fs *fs, const char *path, const char *require, const struct jsonl_frame *frame, int fd,
		   struct commit_bytes *ret);
/* Commits b for req's writer: takes its base, commits a merge against it, keeps the new one. */
int commit_taken(struct fs *fs, const struct commit_req *req, const struct commit_bytes *b);
/* The same of data[0, len). */
int commit_bytes(struct fs *fs, const struct commit_req *req, const char *data, size_t len);
/* The same of all fd holds, taken with commit_take(). */
int commit_fd(struct fs *fs, const struct commit_req *req, int fd, bool private_fd);

int bases_new(struct bases **ret);
void bases_free(struct bases *b);
/* Removes and returns the base of (proc, path), or NULL; the caller owns it. */
struct store_base *bases_take(struct bases *b, const struct fs_proc *proc, const char *path);
/* Records base (taking ownership) as what proc last saw of path. */
void bases_put(struct bases *b, const struct fs_proc *proc, const char *path, struct store_base *base);

/*
 * A writer's merge base, leased for one commit: out of the table while the
 * commit runs, so that no other commit uses it meanwhile, and given back on
 * every path. A commit that was made renews the lease with the base it
 * handed back; one that failed returns the base it was given, so that a
 * refused save changes nothing, the writer's base included (its next save
 * may still remove what it had seen). Declare it with _cleanup_base_lease_:
 * a lease neither renewed nor returned by hand is returned at the end of
 * its scope.
 */
struct base_lease {
	struct bases *bases;     /* NULL once renewed or returned */
	struct fs_proc proc;
	const char *path;        /* the caller's, outlives the lease */
	struct store_base *base; /* what the commit merges against; NULL: none known */
};
void bases_lease(struct bases *b, const struct fs_proc *proc, const char *path, struct base_lease *ret);
/* The commit was made: base (owned; NULL: none) is the writer's from now on. */
void base_lease_renew(struct base_lease *l, struct store_base *base);
/* The commit failed: the leased base goes back, unless the writer put another one meanwhile. */
void base_lease_return(struct base_lease *l);
#define _cleanup_base_lease_ __attribute__((cleanup(base_lease_return)))

/* ---- import.c: taking in the folder underneath, and export ---------------- */

/* What a take-in did; the counts of its log line. */
struct import_report {
	unsigned long files;    /* entries looked at */
	unsigned long folders;  /* new folders of conversations (tasks/<id>, ...) */
	unsigned long docs;     /* new conversation files committed */
	unsigned long changed;  /* changed conversation files committed */
	unsigned long merged;   /* of those, merged with what the store gained since */
	unsigned long plain;    /* plain files and symlinks copied in */
	unsigned long beside;   /* versions kept beside the store's as *.offline-<time> */
	unsigned long damaged, orphans;
	unsigned long missing;  /* files seen before and missing now: kept in the store */
	unsigned long pending;  /* changes not taken in: the store is read-only */
	unsigned long long bytes;
};

/*
 * Takes in what was added or changed in the folder open at src_fd (the one
 * under the mount point) since the store last saw it: all of it on the first
 * mount. Nothing underneath is modified and nothing missing there is removed
 * from the store. Logs one line with the counts if anything changed; shows
 * progress on stderr when it is a terminal and the walk takes a while.
 */
int fs_take_in(struct fs *fs, int src_fd, const char *src_name);

/*
 * The same take-in, with the mount answering while it checks. Does what
 * must come first on this thread: loads what the store last saw and looks
 * at the top level; where that finds a difference, the whole take-in. Then
 * returns 0 (done) or -errno; or 1, with *ret the take-in under way: the
 * walk one level down (and the take-in proper if it finds a difference) is
 * left to fs_take_in_start()'s thread, and each request waits in
 * fs_take_in_wait() until what it touches was looked at.
 */
int fs_take_in_begin(struct fs *fs, int src_fd, const char *src_name, struct take_in **ret);
/*
 * Runs the rest of t on a thread of its own. If it took anything in,
 * changed(fs) is called before any request waiting is let go (the kernel
 * may keep what the mount answered meanwhile). If it fails, the calling
 * thread, which must be the one that runs the FUSE loop, is sent SIGTERM:
 * the mount must not hide what could not be taken in.
 */
int fs_take_in_start(struct take_in *t, void (*changed)(struct fs *fs));
/* True once t has ended: no request waits for it any more. Any thread. */
bool fs_take_in_done(const struct take_in *t);
/*
 * Waits until rel (a path from the mount's root; view for one of the
 * view's, which waits for the end) may be served: the entry one level down
 * that holds it was looked at and is as the store saw it (listing: the
 * listing of a top-level folder waits for the end). 0, or -EIO if the
 * take-in failed.
 */
int fs_take_in_wait(struct take_in *t, const char *rel, bool view, bool listing);
/* Waits for t to end (runs its rest here if it never started), frees it: its result. NULL: 0. */
int fs_take_in_end(struct take_in *t);
/*
 * 1 if the store has taken in the folder open at src_fd before (mounted
 * over at src_name: its path, device and inode; the next take-in is a check
 * of what changed), 0 if never (the next one takes in all of it), or -errno.
 * Each folder mounted over, the host's or a container's, has its own.
 */
int fs_took_in_before(struct fs *fs, int src_fd, const char *src_name);

/* Writes a plain globalStorage folder out of the store at store_path into dir. */
int fs_export(const char *store_path, const char *dir);

#endif

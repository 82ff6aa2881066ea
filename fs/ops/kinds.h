/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_KINDS_H
#define CONVFS_KINDS_H

/*
 * One row per kind of path, as the kernel has one struct inode_operations
 * per kind of inode: route_resolve() (route.c) works out once what a
 * request's path is and hands the operation the row of its kind
 * (route->ops); op_getattr(), op_open(), op_rename() and the others call
 * through it and never look at the path's shape, or test a kind, again.
 *
 * The kinds of the compat tree are COMPAT_KINDS below, their rows in
 * fs/ops/compat.c; those of the workspaces view are VIEW_KINDS
 * (fs/view/view.h), their rows beside the code of each (fs/view/). Each
 * list makes both the enum and the table of rows, so a kind without its
 * row does not link (compat.c, fs/view/view.c); tests/unit/test_kinds.c
 * walks every row and checks what the rows promise each other.
 *
 * A NULL member means its default, the same for every row:
 *
 *   getattr          the route's error (a kind that names nothing); every
 *                    other kind has one
 *   list             -ENOTDIR                 open      -EISDIR
 *   readlink         -EINVAL                  truncate  -EPERM
 *   setattr          0: nothing changes (the view's and docs' modes and
 *                    times are the content's)
 *   setxattr         -EOPNOTSUPP (only a restore means anything: control.c)
 *   create           -EACCES (the view makes its own files)
 *   mkdir            -EEXIST (the name is there)
 *   mknod, symlink   made in the backing tree (plain_make()), if the folder
 *                    the name is in lets it be made there (made_in)
 *   unlink, rmdir    -EPERM
 *   rename_from/_to  PATH_PASS: the pair's classes settle it (below)
 *   made_in          -EPERM and one log line: a folder of the view holds
 *                    only its own names
 *
 * where, for a kind that names nothing (route->err set), getattr, list,
 * open, unlink, rmdir and truncate answer route->err instead.
 *
 * A rename is between two kinds, and is settled in this order (op_rename(),
 * names.c):
 *   1. either side read-only (readonly, or made in a read-only folder):
 *      -EROFS;
 *   2. the source's rename_from, if it has one (a task in the trash comes
 *      back; a name that is not there says why), unless it passes;
 *   3. the target's rename_to, if it has one (a workspace's taskHistory.json
 *      takes a plain file in as its content; the client's entry renamed
 *      onto a view folder's name takes it), unless it passes;
 *   4. the two classes (cls), by this table:
 *
 *        from \ to     PLAIN        DOC          DOC_FOLDER  VIEW    VIEW_TASK
 *        PLAIN         renamed      committed in EXDEV       EPERM   EXDEV
 *        DOC           written out  EXDEV (0 to  EXDEV       EPERM   EXDEV
 *                                   itself)
 *        DOC_FOLDER    EXDEV        EXDEV        EXDEV       EPERM   EXDEV
 *        VIEW          EPERM        EPERM        EPERM       EPERM   EXDEV
 *        VIEW_TASK     EXDEV        EXDEV        EXDEV       EXDEV   EXDEV
 *
 *      (a doc on either side with RENAME_EXCHANGE: -EINVAL; EXDEV makes mv
 *      copy and remove, one file at a time). A link is settled the same
 *      way: a doc on either side, -EPERM (a doc has exactly one name); else
 *      the new name is made as mknod's is, then linked in the backing tree.
 */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "fs/fs.h"

struct route;

/* A member that has nothing to say: the next step decides (rename_from, rename_to). */
#define PATH_PASS 1

/* How long the kernel may keep something of a kind (kcache.c turns each into seconds). */
enum path_keep {
	KEEP_NEVER, /* 0: asked at every use */
	KEEP_BRIEF, /* a second: a folder of the view, whose permissions every path walk checks */
	KEEP_LONG,  /* ten minutes: it changes only through the mount, or convfs tells the kernel */
	KEEP_NAMED, /* KEEP_BRIEF under the view's own names, which convfs tells the kernel about; never
		       under a folder shown by its other name (<name>.view), which it does not */
};

/* What the kernel does with the pages of a file opened read-only. */
enum path_pages {
	PAGES_OPEN,   /* the open member decides (a doc's version node keeps them, other docs go direct) */
	PAGES_KEEP,   /* kept across opens (FOPEN_KEEP_CACHE): what the name shows never changes but through the mount */
	PAGES_DIRECT, /* none: each handle reads its own snapshot (direct I/O) */
};

/* What the kernel may keep of a kind, as data (kcache.c, lowlevel.c). */
struct path_cache {
	enum path_keep entry; /* the name's entry (a versioned kind's lookups: kcache_doc_entry()) */
	enum path_keep attr;  /* its attributes (a file of several names: never, kcache_links_timeout()) */
	bool handle;          /* attributes answered through an open handle are kept as attr says; false:
				 never (a live file of the view answers with what that handle shows) */
	enum path_pages pages;
	bool told;            /* every commit that changes it tells the kernel at its path
				 (view_invalidate_conversation()): why its attributes may be kept */
	bool volatile_list;   /* its listing, and its being there, follow where tasks are: dropped
				 whenever a task may have moved (kcache_placement_check()) */
};

/* How a name of a kind moves, for the rename table above. */
enum path_class {
	PATH_CLASS_PLAIN,      /* a name of the backing tree */
	PATH_CLASS_DOC,        /* a doc: its content goes in or out of the store */
	PATH_CLASS_DOC_FOLDER, /* a folder of the compat tree that holds docs */
	PATH_CLASS_VIEW,       /* the view's */
	PATH_CLASS_VIEW_TASK,  /* a task's folder in the view, or a free place for one */
};

/* One of chmod, chown and utimens, with what it sets. */
struct attr_change {
	enum { ATTR_MODE, ATTR_OWNER, ATTR_TIMES } what;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	const struct timespec *tv;
};

/*
 * Where a kind of the view is found (fs/view/view.c walks these: view_parse()).
 * Zero in the compat tree's rows.
 */
struct view_shape;

struct path_ops {
	const char *name; /* for people: "plain", "doc-array", "view-task", ... */

	/* what is at the name */
	int (*getattr)(const struct route *rt, struct stat *st);
	int (*list)(const struct route *rt, op_list_fn fn, void *ctx);
	int (*open)(const struct route *rt, struct fuse_file_info *fi);
	int (*readlink)(const struct route *rt, char *buf, size_t size);
	int (*setattr)(const struct route *rt, const struct attr_change *c);
	int (*truncate)(const struct route *rt, off_t size);
	int (*setxattr)(const struct route *rt, const char *name, const char *value, size_t size);

	/* making, removing and moving the name */
	int (*create)(const struct route *rt, mode_t mode, struct fuse_file_info *fi);
	int (*mkdir)(const struct route *rt, mode_t mode);
	int (*mknod)(const struct route *rt, mode_t mode);
	int (*symlink)(const struct route *rt, const char *target);
	int (*unlink)(const struct route *rt);
	int (*rmdir)(const struct route *rt);
	int (*rename_from)(const struct route *from, const struct route *to, unsigned int flags);
	int (*rename_to)(const struct route *from, const struct route *to, unsigned int flags);

	/* a folder of the view: what a name it does not have may become (what: "file", "folder", ...) */
	int (*made_in)(const struct route *rt, const char *what);

	enum path_class cls;
	bool readonly;     /* every call that writes it, or makes or removes a name in it: -EROFS */
	bool backing;      /* a name of the backing tree: a change is told to the other daemons of the
			      store (watch.c), and a request waits only for its own entry's take-in */
	bool versioned;    /* a doc: a lookup's node stands for the revision it had (fs/kernel/nodes.h),
			      and a node whose name was replaced opens what is there now */
	bool whole_store;  /* made from the whole store, as the view is: a request on it waits for the
			      whole take-in (fs_take_in_wait()) */
	bool client_names; /* a folder of the view whose names it does not show are the client's: made
			      in the backing tree's folder of the same path, made first if missing */
	struct path_cache cache;
	const struct view_shape *shape; /* the view's: where it is found; NULL in the compat tree */
};

/*
 * The kinds of the compat tree, with their rows (compat.c). route_resolve()
 * picks one by store_path_kind() and the path's folder.
 */
#define COMPAT_KINDS(X)                                                                                 \
	X(PATH_ROOT, path_root)               /* "": the mount's root */                               \
	X(PATH_PLAIN, path_plain)             /* a file or folder of the backing tree */               \
	X(PATH_BESIDE_DOCS, path_beside_docs) /* one in a folder of docs: most often a temp file */   \
	X(PATH_TASKS, path_tasks)             /* tasks/, sessions/: the folders of conversations */    \
	X(PATH_DOC_FOLDER, path_doc_folder)   /* state/: a folder of docs that is no conversation */   \
	X(PATH_CONVERSATION, path_conversation) /* tasks/<id>/, sessions/<id>/: a conversation */      \
	X(PATH_DOC_ARRAY, path_doc_array)     /* a doc kept one element a row */                       \
	X(PATH_DOC_WHOLE, path_doc_whole)     /* a doc kept whole, one blob a version */

enum path_kind {
#define PATH_KIND_ENUM(kind, row) kind,
	COMPAT_KINDS(PATH_KIND_ENUM)
#undef PATH_KIND_ENUM
	PATH_KIND_COUNT
};

#define PATH_ROW_DECLARE(kind, row) extern const struct path_ops row;
COMPAT_KINDS(PATH_ROW_DECLARE)

/* The row of each compat kind, by its enum (compat.c). */
extern const struct path_ops *const path_rows[PATH_KIND_COUNT];

/* ---- members the rows share (fs/ops/) ------------------------------------------------- */

/* The backing tree's: compat.c, open.c, names.c. */
int path_plain_getattr(const struct route *rt, struct stat *st);
int path_plain_list(const struct route *rt, op_list_fn fn, void *ctx);
int path_plain_open(const struct route *rt, struct fuse_file_info *fi);
int path_plain_readlink(const struct route *rt, char *buf, size_t size);
int path_plain_setattr(const struct route *rt, const struct attr_change *c);
int path_plain_truncate(const struct route *rt, off_t size);
/* create, mkdir in the backing tree, if the folder of the view the name is in lets it be made there */
int path_plain_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi);
int path_plain_mkdir(const struct route *rt, mode_t mode);
int path_plain_unlink(const struct route *rt);
int path_plain_rmdir(const struct route *rt);
/*
 * The entries of the backing folder rel (the root's but convfs's own);
 * heal (NULL: none) makes the folder again if it went, and returns how many
 * folders it made (a warning if any) or -ENOENT. -ENOENT: no folder.
 */
int path_list_backing(struct fs *fs, const char *rel, int (*heal)(struct fs *fs, const char *rel), op_list_fn fn,
		      void *ctx);

/* A doc's: compat.c, open.c, names.c, control.c. */
int path_doc_getattr(const struct route *rt, struct stat *st);
int path_doc_open(const struct route *rt, struct fuse_file_info *fi);
int path_doc_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi);
int path_doc_unlink(const struct route *rt);
/* truncate(2) of doc by path: one commit of what is left. */
int path_doc_truncate_at(struct fs *fs, const char *doc, off_t size);
/* setxattr: a restore of the doc rt names (path_restore_setxattr) or shows (_view_). */
int path_restore_setxattr(const struct route *rt, const char *name, const char *value, size_t size);
int path_restore_view_setxattr(const struct route *rt, const char *name, const char *value, size_t size);

/* The view's handles (open.c): what its files show, opened. */
/* A doc as JSON Lines (rt->vp.doc), written by appends or rewrites. */
int path_open_lines(const struct route *rt, struct fuse_file_info *fi);
/* The doc rt->vp.doc, in its own rendering. */
int path_open_view_doc(const struct route *rt, struct fuse_file_info *fi);
/* The content of a generated file, free()d by the caller; *ret_rev (may be NULL): the history's revision it shows. */
typedef int (*path_render_fn)(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			      int64_t *ret_rev);
/* A generated text: read-only (-EACCES for a writer), or a workspace's taskHistory.json (history). */
int path_open_text(const struct route *rt, struct fuse_file_info *fi, path_render_fn render, bool history);
/* A handle that reads snap (taken, freed on failure too) and nothing else: never written. */
int path_open_fixed(const struct route *rt, struct fuse_file_info *fi, struct store_snap *snap);
/*
 * A context.jsonl (view_context_kind.c): a handle that reads the text c
 * (taken, put on failure too) with the attributes st, and is never written.
 */
struct view_context;
int path_open_context(const struct route *rt, struct fuse_file_info *fi, struct view_context *c, const struct stat *st);
/* A file of a checkpoint's commit, read with libgit2. */
int path_open_ckpt_file(const struct route *rt, struct fuse_file_info *fi);
/* True if fi is opened to write (or to truncate). */
bool path_open_writes(const struct fuse_file_info *fi);
/* create of a file of the view that is there once its doc is (rt->vp.doc): the doc made, then opened. */
int path_create_doc_file(const struct route *rt, mode_t mode, struct fuse_file_info *fi);

/*
 * A name the client makes in a folder of the view that lends it its names
 * (client_names: workspaces/): that folder in the backing tree, made if
 * missing. 0 (nothing to do) for any other name.
 */
int path_client_folder(const struct route *rt);
/* What a folder of the view that holds only its own names says (-EPERM, one log line): made_in's default. */
int path_made_in_refused(const struct route *rt, const char *what);

/* rename_from and rename_to of the view's kinds (names.c). */
int path_missing_rename_from(const struct route *from, const struct route *to, unsigned int flags);
int path_missing_rename_to(const struct route *from, const struct route *to, unsigned int flags);
/* a top folder of the view: the client's entry renamed onto its name takes it */
int path_top_rename_to(const struct route *from, const struct route *to, unsigned int flags);
/* a workspace's taskHistory.json: a plain file renamed over it is committed as its items */
int path_history_rename_to(const struct route *from, const struct route *to, unsigned int flags);
/* The matrix of classes, step 4 of kinds.h's order (names.c). */
int path_rename_by_class(const struct route *from, enum path_class from_class, const struct route *to,
			 enum path_class to_class, unsigned int flags);

/* A new task of workspace ws_key (NULL: none), to the trash, and back (ops.c): the store's part, and its backing folder. */
int task_make(struct fs *fs, const char *id, const char *ws_key);
int task_trash(struct fs *fs, const char *id);
int task_restore(struct fs *fs, const char *id);

#endif

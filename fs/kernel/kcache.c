/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kcache.c: what the kernel may keep of what the mount shows, and telling it
 * when that changes.
 *
 * The kernel keeps entries, attributes, pages and folder listings for as
 * long as a reply allows; every round trip it saves is one a walk of the
 * history (grep -r, ls -lR, rsync) does not pay. So each kind of path is
 * kept as long as its content can be trusted, and says so as data: the
 * cache member of its row (struct path_cache, fs/ops/kinds.h), which this
 * file turns into seconds (keep_seconds()):
 *
 *   - the backing tree's files and folders (and the compat tree's folders):
 *     KEEP_LONG; they change only through the mount, which the kernel
 *     sees, or through convfs, which tells it (kcache_invalidate());
 *   - a doc's version node: its attributes and pages for good (they never
 *     change, fs/kernel/nodes.h), its entry until the next change of any doc (a new
 *     epoch) where the kernel counts epochs, else not at all;
 *   - docs' ordinary nodes and the view's files: never (they change under
 *     merges), but a live task's .jsonl files and metadata.json, whose every
 *     commit tells the kernel (cache.told); those, the view's folders and
 *     the root: a second (KEEP_BRIEF, KEEP_NAMED).
 *
 * The kernel is told with no lock of ours held but the session's, for
 * reading (session_hold(): readers never wait for each other), and never so
 * that it takes a folder's lock on the daemon's behalf (notify_inval_entry would: a daemon
 * killed meanwhile could hang it for good); attributes, pages and epochs only.
 */
#include <errno.h>
#include <limits.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/kernel/kcache.h"
#include "fs/kernel/nodes.h"
#include "fs/view/view.h"
#include "store/util.h"

#define TIMEOUT 1.0 /* seconds the kernel may cache the view's and the root's entries and attributes */
/*
 * Seconds the kernel may cache the entries, attributes and listings of the
 * backing tree's files and folders (the compat tree's folders included):
 * they change only through the mount, which the kernel sees, or through
 * convfs itself, which tells it (fs_invalidate()).
 */
#define CACHE_TIMEOUT 600.0

/* Whether the kernel may still be told: false from the start of kcache_session_end() on. */
static bool session_lasts(struct fs *fs)
{
	return __atomic_load_n(&fs->session_open, __ATOMIC_ACQUIRE);
}

/*
 * The session to tell the kernel through, held: NULL outside a mount, and
 * once kcache_session_end() ran. Every word to the kernel is written to the session's
 * device with session_lock held for reading, and kcache_session_end() takes
 * it for writing before the device is closed: no thread (the watcher, the
 * sync's) writes a notification to the device's number once closed, and by
 * then maybe another file's. session_release() after each.
 */
static struct fuse_session *session_hold(struct fs *fs)
{
	int r;

	if (!session_lasts(fs))
		return NULL;
	r = pthread_rwlock_rdlock(&fs->session_lock);
	if (r != 0) {
		log_warn("cannot take the lock of the kernel's session: %s; the kernel is not told", strerror(r));
		return NULL;
	}
	if (!session_lasts(fs)) {
		pthread_rwlock_unlock(&fs->session_lock);
		return NULL;
	}
	return __atomic_load_n(&fs->session, __ATOMIC_ACQUIRE);
}

static void session_release(struct fs *fs)
{
	pthread_rwlock_unlock(&fs->session_lock);
}

/*
 * FUSE_NOTIFY_INC_EPOCH (protocol 7.44, Linux 6.16): the kernel counts
 * epochs, stamps each entry with the epoch its lookup began in, and looks a
 * name up again before it uses an entry of an older epoch. libfuse 3.14
 * does not know it (so its header does not name it); the message is the
 * header alone, written to the session's device like any notification.
 */
#define NOTIFY_INC_EPOCH 8
#define EPOCH_MINOR 44

void kcache_new_epoch(struct fs *fs)
{
	struct fuse_out_header h = { .len = sizeof(h), .error = NOTIFY_INC_EPOCH, .unique = 0 };
	struct fuse_session *session;
	ssize_t n;
	int err;

	if (!__atomic_load_n(&fs->epochs, __ATOMIC_ACQUIRE) || !(session = session_hold(fs)))
		return;
	/*
	 * No lock is taken in the kernel: an increment. ENODEV, EBADF: the
	 * mount is gone, and with it all the kernel kept. Any other failure
	 * leaves the kernel with entries of docs that may have changed, for as
	 * long as CACHE_TIMEOUT: those looked up from now on are not kept.
	 */
	n = write(fuse_session_fd(session), &h, sizeof(h));
	err = errno;
	session_release(fs);
	if (n < 0 && (err == ENODEV || err == EBADF))
		return;
	if (n != (ssize_t)sizeof(h)) {
		log_err("cannot tell the kernel that docs changed (a new epoch): %s; docs' entries are not kept from now on",
			n < 0 ? strerror(err) : "short write");
		__atomic_store_n(&fs->epochs, false, __ATOMIC_RELEASE);
	}
}

/*
 * Has the kernel drop what it keeps of node: its attributes, and a folder's
 * listing. Never a file's pages: the kernel drops a page only once the
 * read that fills it ends, and a read may be waiting for the very thread
 * that asks, or for one that waits for it (with -s, the only worker): the
 * mount would hang for good. A folder's pages are the listing the kernel
 * keeps (cache_readdir): it locks one only while it copies entries in or
 * out, never across a request to the daemon, so dropping those waits for
 * nothing a request holds. The node may be freed meanwhile: the kernel
 * ignores an unknown id.
 */
static void drop(struct fuse_session *session, struct node_ref node)
{
	fuse_lowlevel_notify_inval_inode(session, node.ino, node.dir ? 0 : -1, 0);
}

void kcache_invalidate_pages(struct fs *fs, const char *rel)
{
	struct fuse_session *session = session_hold(fs);
	struct node_ref node;

	if (!session)
		return;
	node = nodes_find(fs->nodes, rel);
	if (node.ino && !node.version)
		fuse_lowlevel_notify_inval_inode(session, node.ino, 0, 0);
	session_release(fs);
}

void kcache_invalidate(struct fs *fs, const char *rel)
{
	struct fuse_session *session = session_hold(fs);
	struct node_ref node;

	if (!session)
		return;
	node = nodes_find(fs->nodes, rel);
	/*
	 * A version node's attributes never change: a commit leaves them
	 * alone. Other docs have no pages (direct I/O).
	 */
	if (node.ino && !node.version)
		drop(session, node);
	session_release(fs);
}

/*
 * The seconds a kind's keep means for rt. KEEP_NAMED: under a view folder
 * shown by its other name (<name>.view), nothing convfs tells the kernel
 * names the path, and that folder goes when the client's entry does, so
 * the kernel asks again on every path walk through it. (Dropping its entry
 * when it goes would take the folder's lock in the kernel from the daemon,
 * which can hang a daemon killed meanwhile for good.)
 */
static double keep_seconds(enum path_keep keep, const struct route *rt)
{
	switch (keep) {
	case KEEP_BRIEF:
		return TIMEOUT;
	case KEEP_LONG:
		return CACHE_TIMEOUT;
	case KEEP_NAMED:
		return rt->vp.aside ? 0 : TIMEOUT;
	default:
		return 0;
	}
}

/*
 * up names a folder of the view whose listing or whose being there follows
 * where the tasks are (its row's cache.volatile_list): workspaces/, a
 * workspace's folder (or the trash), its tasks/, a task's folder
 * (workspaces/<ws>/tasks/<id>, workspaces/.trash/<id>). By the names' shape
 * alone (view_shape_kind()): the node table is walked under its lock.
 */
static bool is_view_placed(const char *const *up, size_t n)
{
	enum view_kind kind = view_shape_kind(up, n);

	return kind != VIEW_NONE && view_rows[kind]->cache.volatile_list;
}

/*
 * A task's folder in the view comes and goes with changes made anywhere
 * (rm -r or mv in the compat tree, a history item that names its workspace,
 * the trash), yet a path walk through it must not ask the daemon each time:
 * `ls -l` of a checkpoint's 10,000 files walks through it twice a file. So
 * its entry is cached like any folder's, and whenever the store says a task
 * may have moved, the kernel drops the attributes and listings of every
 * view folder it holds whose listing follows where tasks are
 * (is_view_placed()), and the root's (the task's backing folder may be the
 * first of tasks/): the next stat or walk through a task folder that moved
 * asks, and gets ENOENT, and the next listing of its workspace's folders is
 * made afresh. The entries themselves stay (see keep_seconds() for why they
 * are not dropped); a name the kernel still holds answers ENOENT until it
 * goes.
 */
void kcache_placement_check(struct fs *fs)
{
	struct fuse_session *session;
	_cleanup_free_ struct node_ref *nodes = NULL;
	size_t n = 0;
	uint64_t now = store_placement_generation(fs->store);

	/*
	 * Told by whoever sees the generation move first; two that see it at
	 * once both tell, which costs a few notifications, not a lock of ours
	 * held while the kernel is told (the session's, for reading, blocks
	 * no one).
	 */
	if (!(session = session_hold(fs)))
		return;
	if (__atomic_exchange_n(&fs->placement_told, now, __ATOMIC_ACQ_REL) == now) {
		session_release(fs);
		return;
	}
	drop(session, (struct node_ref){ .ino = FUSE_ROOT_ID, .dir = true });
	if (nodes_collect(fs->nodes, is_view_placed, &nodes, &n) < 0)
		/* The kernel keeps what it has until a folder's mtime moves, for a second at most. */
		log_warn("out of memory while telling the kernel that tasks moved");
	/* Those are the view's folders, but for a client's own files directly in workspaces/. */
	for (size_t i = 0; i < n && session_lasts(fs); i++)
		drop(session, nodes[i]);
	session_release(fs);
}

void kcache_forgot(struct fs *fs)
{
	struct fuse_session *session;
	_cleanup_free_ struct node_ref *nodes = NULL;
	size_t n = 0;

	kcache_new_epoch(fs);
	if (!(session = session_hold(fs)))
		return;
	/* Every node, a replaced version a reader still holds too. */
	if (nodes_collect(fs->nodes, NULL, &nodes, &n) < 0)
		log_warn("out of memory while telling the kernel to drop what it keeps after a forget");
	/* Pages too, a version node's included: what is forgotten may be in them. */
	for (size_t i = 0; i < n && session_lasts(fs); i++)
		fuse_lowlevel_notify_inval_inode(session, nodes[i].ino, 0, 0);
	session_release(fs);
}

static bool is_top_level(const char *const *up, size_t n)
{
	(void)up;
	return n == 1;
}

/*
 * The take-in changed the store while the mount answered
 * (fs_take_in_start()). What it changed was not answered for meanwhile
 * (requests for it waited), but the folders that hold it were: the
 * attributes (links, times) of the root and of every top-level entry go,
 * and docs' entries with a new epoch; the view's folders, if tasks moved.
 */
void kcache_taken_in(struct fs *fs)
{
	_cleanup_free_ struct node_ref *nodes = NULL;
	size_t n = 0;

	if (!session_lasts(fs))
		return;
	kcache_drop_attrs(fs, FUSE_ROOT_ID);
	if (nodes_collect(fs->nodes, is_top_level, &nodes, &n) < 0)
		log_warn("out of memory while telling the kernel what the take-in changed; it may show the top "
			 "folders' old times and link counts for up to %.0f s",
			 CACHE_TIMEOUT);
	for (size_t i = 0; i < n; i++)
		kcache_drop_attrs(fs, nodes[i].ino);
	kcache_new_epoch(fs);
	kcache_placement_check(fs);
}

/*
 * How long the kernel may keep attributes it got with st. Each name of a file
 * is a node of its own here (a node is a path), so each name of a hard-linked
 * file is an inode of its own in the kernel too, and what changes through one
 * name (its link count, mode, owner, times, size, bytes) would not show under
 * another. So a file with more than one name (of any type but a folder: a
 * fifo, a socket, a symlink have links too) is never cached: every stat asks,
 * and every read of a regular file first checks its attributes and drops its
 * pages if the file changed (libfuse turns on auto_inval_data).
 */
double kcache_links_timeout(const struct stat *st, double timeout)
{
	if (S_ISDIR(st->st_mode))
		return timeout;
	return st->st_nlink > 1 ? 0 : timeout;
}

void kcache_session_set(struct fs *fs, struct fuse_session *se)
{
	int r;

	if (!se) {
		kcache_session_end(fs);
		__atomic_store_n(&fs->session, NULL, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&fs->session, se, __ATOMIC_RELEASE);
	r = pthread_rwlock_init(&fs->session_lock, NULL);
	if (r != 0) {
		/* What the kernel keeps then times out alone (a second, or CACHE_TIMEOUT). */
		log_err("cannot make the lock of the kernel's session: %s; the kernel is told of no change", strerror(r));
		return;
	}
	__atomic_store_n(&fs->session_open, true, __ATOMIC_RELEASE);
}

void kcache_session_end(struct fs *fs)
{
	struct timespec until;
	int r;

	/* No one starts telling from now on (session_hold() looks again under the lock); those under way end. */
	if (!__atomic_exchange_n(&fs->session_open, false, __ATOMIC_ACQ_REL))
		return;
	/*
	 * A word under way may wait in the kernel for a read that no one
	 * answers any more (the loop ended on a signal, the mount still in
	 * place), and only the device's close ends that read. So after a while
	 * the session ends without that thread, which is in its write by then,
	 * past reading the device's number, and tells nothing more after it
	 * (session_lasts()).
	 */
	if (clock_gettime(CLOCK_MONOTONIC, &until) < 0) {
		r = errno;
	} else {
		until.tv_sec += 2;
		r = pthread_rwlock_clockwrlock(&fs->session_lock, CLOCK_MONOTONIC, &until);
	}
	if (r == 0)
		pthread_rwlock_unlock(&fs->session_lock);
	else
		log_warn("the kernel is still being told of a change after 2 s (%s); the session ends all the same",
			 strerror(r));
}

void kcache_init(struct fs *fs, const struct fuse_conn_info *conn)
{
	const char *no;
	bool on = conn->proto_major == FUSE_KERNEL_VERSION && conn->proto_minor >= EPOCH_MINOR;

	/* CONVFS_NO_EPOCHS=1 (the tests): as on a kernel before 7.44, such as Debian 12's. */
	no = getenv("CONVFS_NO_EPOCHS");
	if (no && strcmp(no, "1") == 0)
		on = false;
	__atomic_store_n(&fs->epochs, on, __ATOMIC_RELEASE);
	log_debug("the kernel speaks FUSE %u.%u: %s", conn->proto_major, conn->proto_minor,
		  on ? "docs' entries are kept, and dropped at each change by a new epoch"
		     : "docs' entries are never kept (no epochs)");
}

void kcache_drop_attrs(struct fs *fs, fuse_ino_t ino)
{
	struct fuse_session *session = session_hold(fs);

	if (!session)
		return;
	fuse_lowlevel_notify_inval_inode(session, ino, -1, 0);
	session_release(fs);
}

double kcache_attr_timeout(const struct route *rt, const struct stat *st)
{
	return kcache_links_timeout(st, keep_seconds(rt->ops->cache.attr, rt));
}

double kcache_handle_timeout(const struct route *rt, double timeout)
{
	return rt->ops->cache.handle ? timeout : 0;
}

void kcache_entry(const struct route *rt, struct fuse_entry_param *e)
{
	e->attr_timeout = kcache_attr_timeout(rt, &e->attr);
	e->entry_timeout = keep_seconds(rt->ops->cache.entry, rt);
}

/*
 * A doc's version node: its entry is kept when the kernel counts epochs,
 * since every change of a doc begins a new one before it returns
 * (kcache_new_epoch()), and the kernel looks a name up again before it uses
 * an entry of an older epoch than the current, stamped with the epoch its
 * lookup began in: so an answer with the revision before a change never
 * outlives it.
 */
void kcache_doc_entry(struct fs *fs, struct fuse_entry_param *e, bool version)
{
	e->attr_timeout = kcache_links_timeout(&e->attr, version ? KCACHE_VERSION_TIMEOUT : 0);
	e->entry_timeout = version && __atomic_load_n(&fs->epochs, __ATOMIC_ACQUIRE) ? CACHE_TIMEOUT : 0;
}

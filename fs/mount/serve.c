/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * serve.c: a mount's second and third steps (fs/main.c says the order):
 * unless -f, the fork into a daemon (whose process closed what it
 * inherited before anything else, close_inherited()); then
 * the store opened again, the mount made, the folder underneath taken in
 * once more (what changed since), the threads of the mount started (the
 * watcher of other daemons' commits, the sync's, the search index's
 * build), the loop serving until the unmount, and everything ended in the
 * order that loses nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/backing/indexer.h"
#include "fs/cmd/registry.h"
#include "fs/fs.h"
#include "fs/kernel/kcache.h"
#include "fs/kernel/loop.h"
#include "fs/kernel/watch.h"
#include "fs/mount/mount.h"
#include "fs/ops/shares.h"
#include "fs/sync/sync_glue.h"
#include "fs/view/shadow.h"
#include "store/util.h"

/* What serve() needs before it mounts: the store, the backing root's mode, libgit2, the bases. */
static int serve_open(struct fs *fs, const char *store_path)
{
	int r;

	r = store_open(store_path, fs->salvage ? STORE_OPEN_READONLY | STORE_OPEN_AS_IS : 0, &fs->store);
	if (r < 0)
		return r;
	turns_join(fs, store_path);
	r = plain_root_load(fs);
	/* Not fatal: without it the client's databases are shared, as before (it said why). */
	if (r == 0 && fs->folder_id > 0)
		plain_per_mount(fs, fs->folder_id);
	if (r == 0)
		r = shadow_init();
	if (r == 0)
		r = bases_new(&fs->bases);
	if (r < 0) {
		store_free(TAKE_PTR(fs->store));
		return r;
	}
	return 0;
}

/* A daemon, mounted: logs to syslog from now on, lets go of the terminal, tells its parent (notify_fd). */
static void detach(int notify_fd)
{
	char ok = 0;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	log_set_syslog(true);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	(void)!write(notify_fd, &ok, 1);
	close(notify_fd);
}

/* What loop_run() returned (r), said: 0 for an unmount, > 0 for a stop signal, or -errno. */
static int loop_ended(int r, const char *mountpoint)
{
	/*
	 * A read of /dev/fuse that races the kernel's teardown at an unmount
	 * gets ECONNABORTED instead of ENODEV: the connection ended as it
	 * should, and the mount point shows the folder underneath again. Only
	 * a mount still in place (answering ENOTCONN) was really aborted.
	 */
	if (r == -ECONNABORTED) {
		struct stat st;

		if (stat(mountpoint, &st) == 0)
			r = 0;
	}
	/* A positive result is the signal that ended the loop (SIGTERM, SIGINT): a clean stop. */
	if (r < 0)
		log_err("the FUSE loop ended with an error: %s", strerror(-r));
	else if (r > 0)
		log_info("stopping on signal %d", r);
	return r;
}

/*
 * Step 3: open, mount, take in through under_fd (unless -1; closed here),
 * serve, at most `workers` requests at once. notify_fd (or -1) gets one
 * byte: 0 for mounted.
 */
int serve(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint,
		 int under_fd, int notify_fd, unsigned workers)
{
	struct indexer *ix = NULL;
	struct fuse_session *se;
	struct watch *watch = NULL;
	int r;

	r = serve_open(fs, store_path);
	if (r < 0)
		return r;
	se = ll_session_new(args, fs);
	if (!se) {
		r = -EINVAL;
		goto out_store;
	}
	if (fuse_session_mount(se, mountpoint) != 0) {
		log_err("cannot mount on '%s'", mountpoint);
		r = -EIO;
		goto out_session;
	}
	if (loop_signals_set(se) < 0)
		log_warn("cannot install signal handlers; unmount with fusermount3 -u");
	/*
	 * What other daemons serving the store (and the sync) commit reaches
	 * this mount's kernel through the watcher; from before the take-in,
	 * which may wait for their batches. Without it the mount serves, and it
	 * said why.
	 */
	watch_start(fs, store_path, &watch);
	/*
	 * The take-in: what clients wrote into the folder while convfs was not
	 * mounted (an editor started first, or saving while the unit restarts
	 * convfs). Done once the mount is up, so that no client can write
	 * underneath after it: the folder is reached only through under_fd.
	 * With nothing changed it is the quick check alone, and only its look
	 * at the top level is made here: the loop starts, and the rest of the
	 * check goes on on a thread of its own, each request waiting until what
	 * it touches was looked at (fs_take_in_wait()). Where the top level
	 * differs, the whole take-in runs here, before the loop; requests wait
	 * for it. If it fails, what is underneath would be hidden: unmount, and
	 * say so.
	 */
	if (under_fd >= 0) {
		r = fs_take_in_begin(fs, under_fd, mountpoint, &fs->take_in);
		if (r > 0 && fs_take_in_start(fs->take_in, kcache_taken_in) < 0) {
			/* No thread for it: the rest here, before the loop. */
			r = fs_take_in_end(fs->take_in);
			fs->take_in = NULL;
		}
		if (r < 0) {
			close(under_fd);
			log_err("unmounting '%s': its folder underneath could not be taken in", mountpoint);
			loop_signals_remove();
			kcache_session_end(fs);
			fuse_session_unmount(se);
			watch_stop(TAKE_PTR(watch));
			goto out_session;
		}
		if (!fs->take_in)
			close(under_fd);
	}
	/* The sync's thread: from now on, this mount's commits go out and the other machines' come in. */
	if (fs->sync)
		sync_glue_start(fs->sync, fs, store_path);
	if (notify_fd >= 0)
		detach(notify_fd);
	/* Said here, where a daemon logs to syslog: nothing on the terminal that started it. */
	plain_log_ready();
	shares_log_limit(fs->shares, fs->nofile_was);
	/* What the search index has yet to take in (a first take-in, an upgrade), behind the mount. */
	r = indexer_start(fs->store, &ix);
	if (r < 0)
		log_warn("cannot start the search index's build: %s; convfs search misses what it has not taken in, "
			 "until a mount that can", strerror(-r));
	r = loop_ended(loop_run(se, workers), mountpoint);
	indexer_stop(ix);
	if (fs->take_in) {
		/* A take-in still under way ends first (it said why if it failed). */
		int r2 = fs_take_in_end(fs->take_in);

		fs->take_in = NULL;
		close(under_fd);
		if (r2 < 0)
			r = r2;
	}
	loop_signals_remove();
	/*
	 * Nothing is told to the kernel once its device closes; the threads
	 * that tell it of commits made elsewhere (the watcher, the sync's) stop
	 * after: one waiting in the kernel for a read no one answers any more
	 * (the loop ended on a signal) goes on once the device is closed.
	 */
	kcache_session_end(fs);
	fuse_session_unmount(se);
	watch_stop(TAKE_PTR(watch));
	sync_glue_stop(fs->sync);
	log_info("unmounted '%s'; the store is closed", mountpoint);
out_session:
	ll_session_free(fs);
out_store:
	shadow_shutdown();
	store_free(fs->store);
	fs->store = NULL;
	bases_free(fs->bases);
	fs->bases = NULL;
	registry_leave(&fs->registry);
	free(TAKE_PTR(fs->per_mount));
	return r < 0 ? r : 0;
}

/*
 * A daemon keeps no descriptor it did not open itself: one that whatever
 * started it passed down (flock(1)'s lock, a pipe a script reads until
 * every writer closes it) would stay held for as long as it serves. Called
 * before convfs opens anything. The mount point /dev/fd/N (mount.fuse3's
 * drop_privileges: the /dev/fuse it opened) is kept.
 */
void close_inherited(const char *mountpoint)
{
	unsigned keep = 0;
	struct dirent *de;
	long max;
	DIR *d;
	int n = 0;

	if (sscanf(mountpoint, "/dev/fd/%u%n", &keep, &n) != 1 || mountpoint[n] != '\0' || keep < 3)
		keep = 0;
	if (keep == 0) {
		if (close_range(3, ~0U, 0) == 0)
			return;
	} else if ((keep == 3 || close_range(3, keep - 1, 0) == 0) && close_range(keep + 1, ~0U, 0) == 0) {
		return;
	}
	/*
	 * No close_range() (a kernel before 5.9): each one open, as /proc lists
	 * them, below the limit of open files (above it, a tool the daemon
	 * runs under keeps its own: valgrind).
	 */
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > (1 << 20))
		max = 1 << 20;
	d = opendir("/proc/self/fd");
	if (d) {
		while ((de = readdir(d))) {
			char *end;
			long fd = strtol(de->d_name, &end, 10);

			if (*end == '\0' && fd >= 3 && fd < max && fd != dirfd(d) && fd != (long)keep)
				close((int)fd);
		}
		closedir(d);
		return;
	}
	/* No /proc either: each number in turn. */
	for (long fd = 3; fd < max; fd++)
		if (fd != (long)keep)
			close((int)fd);
}

/*
 * serve() in a child of its own, in a session of its own, as a daemon; the
 * parent waits for its word that it mounted. Returns the parent's exit
 * status: 0 mounted, 1 not. *ret_forked: a child was made (it owns the
 * registration from then on).
 */
int serve_forked(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint,
			int under_fd, unsigned workers, bool *ret_forked)
{
	_cleanup_close_ int rfd = -1;
	int pfd[2], ws = 0;
	pid_t pid;
	char ok = 1;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		perror("convfs: pipe");
		return 1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("convfs: fork");
		close(pfd[0]);
		close(pfd[1]);
		return 1;
	}
	if (pid == 0) {
		close(pfd[0]);
		setsid();
		if (chdir("/") < 0)
			_exit(1);
		_exit(serve(fs, args, store_path, mountpoint, under_fd, pfd[1], workers) < 0);
	}
	rfd = pfd[0];
	close(pfd[1]);
	*ret_forked = true;
	if (read(rfd, &ok, 1) == 1 && ok == 0)
		return 0;
	waitpid(pid, &ws, 0);
	fprintf(stderr, "convfs: mounting '%s' failed\n", mountpoint);
	return 1;
}

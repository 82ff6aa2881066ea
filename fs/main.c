/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main.c: the convfs command line.
 *
 *   convfs [-f] [-d] [-o store=FILE] [-o allow_other] [-o salvage] [-o sync=CONNINFO] [SOURCE] MOUNTPOINT
 *   convfs export STORE DIR
 *   convfs status [--json] [MOUNTPOINT]                      (cmd_status.c)
 *   convfs log [--json] FILE                                 (cmd_log.c)
 *   convfs restore FILE NUMBER                               (cmd_restore.c)
 *   convfs check STORE                                       (cmd_check.c)
 *   convfs forget STORE --match TEXT | --task ID [--yes] [--sync CONNINFO]  (cmd_forget.c)
 *   convfs search [OPTIONS] QUERY [MOUNTPOINT]               (cmd_search.c)
 *   convfs undo [--apply] [--backup DIR] [--workspace DIR] TASK_DIR N  (cmd_undo.c)
 *
 * SOURCE is there for mount(8): an /etc/fstab line or `mount -t fuse.convfs`
 * makes mount.fuse3 run `convfs SOURCE MOUNTPOINT -o OPTIONS`. A SOURCE with
 * a '/' is the store (as -o store=); the word "convfs" is the mount point's
 * default store. The options only mount(8) and fstab use are dropped.
 *
 * Mounting happens in this order, so that every failure is reported to the
 * terminal that ran convfs and nothing is left half done:
 *   1. open the store (creating it), check it (a damaged store is refused
 *      here, unless -o salvage serves it read-only), and open a descriptor
 *      of the folder underneath; on the first mount only, take all of it in
 *      (long work, done before anything is mounted); close the store again;
 *      with -o sync, a store that never synced takes in the shared history;
 *   2. unless -f, fork: the parent waits for the child's word and exits with it
 *      (before step 1, every descriptor it inherited but 0-2 was closed);
 *   3. the child opens the store, mounts, takes in what is new or changed in
 *      the folder underneath (through the descriptor of step 1: once mounted,
 *      no client writes there any more; the quick check alone when nothing
 *      changed), starts the sync's thread (-o sync), tells the parent, detaches
 *      and serves until unmounted, then stops the sync and closes the store
 *      cleanly. A take-in that fails unmounts.
 * The store is opened after the fork because SQLite's POSIX locks do not pass
 * from parent to child.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/registry.h"
#include "fs/fs.h"
#include "fs/backing/indexer.h"
#include "fs/kernel/kcache.h"
#include "fs/kernel/loop.h"
#include "fs/ops/shares.h"
#include "fs/kernel/watch.h"
#include "fs/sync/sync_glue.h"
#include "fs/view/shadow.h"
#include "fs/cmd/warnings.h"
#include "store/store_changes.h"
#include "store/store_seen.h"
#include "store/store_ops.h"
#include "store/util.h"

struct options {
	char *store;
	int allow_other;
	int no_import;
	unsigned max_threads;	/* requests served at once; -s: one */
	int salvage;
	char *sync;		/* -o sync=CONNINFO: the shared log in PostgreSQL */
	char *sync_key;		/* -o sync_key=FILE: the key its entries are sealed with */
	char *words[2];		/* [SOURCE] MOUNTPOINT, as given */
	int n_words;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("store=%s", store),
	OPT("no_import", no_import),
	OPT("max_threads=%u", max_threads),
	OPT("salvage", salvage),
	OPT("sync=%s", sync),
	OPT("sync_key=%s", sync_key),
	FUSE_OPT_END
};

/*
 * Options of an fstab line that mount(8), mount.fuse3 and systemd act on
 * (mount.fuse3 passes some on): no business of convfs, and libfuse would
 * refuse them as unknown.
 */
static bool fstab_only(const char *opt)
{
	static const char *const words[] = {
		"defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group", "nofail", "_netdev",
		/* libfuse knows only noatime: relatime is the default, nodiratime less */
		"relatime", "nodiratime",
	};

	if (strncmp(opt, "x-", 2) == 0 || strncmp(opt, "comment=", 8) == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcmp(opt, words[i]) == 0)
			return true;
	return false;
}

/* fuse_opt_parse()'s callback: drops fstab_only() options, keeps SOURCE and MOUNTPOINT apart. */
static int option_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *opts = data;

	if (key == FUSE_OPT_KEY_OPT)
		return fstab_only(arg) ? 0 : 1;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (opts->n_words == (int)ARRAY_SIZE(opts->words)) {
		fprintf(stderr, "convfs: one argument too many: '%s'\n", arg);
		return -1;
	}
	opts->words[opts->n_words] = strdup(arg);
	if (!opts->words[opts->n_words])
		return -1;
	opts->n_words++;
	return 0;
}

/*
 * The store that SOURCE names, into opts->store (which -o store= may have
 * set already): a path is the store, "convfs" the default one. 0, or 2 (the
 * exit status for a wrong command line) with the reason on stderr.
 */
static int source_to_store(const char *source, struct options *opts)
{
	if (strcmp(source, "convfs") == 0)
		return 0;
	if (!strchr(source, '/')) {
		fprintf(stderr, "convfs: unknown source '%s': give the store's path, or 'convfs' for the default store\n",
			source);
		return 2;
	}
	if (opts->store) {
		if (strcmp(opts->store, source) == 0)
			return 0;
		fprintf(stderr, "convfs: two stores given: '%s' and -o store='%s'\n", source, opts->store);
		return 2;
	}
	opts->store = strdup(source);
	if (!opts->store) {
		fprintf(stderr, "convfs: out of memory\n");
		return 1;
	}
	return 0;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [-f] [-d] [-o store=FILE] [-o allow_other] [-o salvage] [-o sync=CONNINFO] [SOURCE] MOUNTPOINT\n"
		"       %s export STORE DIR\n"
		"       %s status [--json] [MOUNTPOINT]\n"
		"       %s log [--json] FILE\n"
		"       %s restore FILE NUMBER\n"
		"       %s check STORE\n"
		"       %s forget STORE --match TEXT | --task ID [--yes] [--sync CONNINFO | --here-only]\n"
		"       %s search [OPTIONS] QUERY [MOUNTPOINT]\n"
		"       %s undo [--apply] [--backup DIR] [--workspace DIR] TASK_DIR N\n"
		"\n"
		"Mounts a Cline (or Roo Code, Kilo Code) history folder backed by a transactional\n"
		"SQLite store: every save becomes one atomic commit, nothing a rewrite drops is\n"
		"lost, and the extension keeps working unchanged. Mount it in place of\n"
		"~/.config/Code/User/globalStorage/saoudrizwan.claude-dev; at each mount, what is\n"
		"new or changed in the folder underneath is taken in (all of it the first time;\n"
		"the folder itself is left untouched, nothing missing there is removed).\n"
		"\n"
		"options:\n"
		"  -f                 stay in the foreground, log to stderr\n"
		"  -d                 debug: log every FUSE request (implies -f)\n"
		"  -o store=FILE      the store; default $XDG_DATA_HOME/convfs/<name>-<hash>.db\n"
		"                     (~/.local/share/convfs/ without XDG_DATA_HOME); plain files\n"
		"                     live beside it in FILE.files/\n"
		"  -o allow_other     let other users in (needs user_allow_other in /etc/fuse.conf);\n"
		"                     without it the mount and its files are owner-only\n"
		"  -o no_import       do not take in what is new or changed in the folder\n"
		"                     underneath at this mount\n"
		"  -o max_threads=N   serve at most N requests at once (default 16, at most 64)\n"
		"  -o sync=CONNINFO   one history across machines: push this mount's commits to the\n"
		"                     PostgreSQL database CONNINFO names (what libpq takes: key=value\n"
		"                     pairs, a postgresql:// URI, service=NAME; the password in\n"
		"                     ~/.pgpass, never here) and take in the other machines'\n"
		"  -o sync_key=FILE   seal what PostgreSQL holds with the key in FILE (32 bytes or\n"
		"                     64 hex digits, owner-only), the same on every machine\n"
		"  -s                 serve one request at a time\n"
		"  -o salvage         serve a damaged store (which is otherwise refused) read-only:\n"
		"                     what cannot be read answers EIO, every write EROFS, nothing\n"
		"                     underneath is taken in\n"
		"  -h, --help         this help\n"
		"  -V, --version      the version\n"
		"\n"
		"SOURCE (what mount -t fuse.convfs and /etc/fstab give): the store's path, or\n"
		"convfs for the default store; options of fstab only (nofail, x-*) are ignored.\n"
		"\n"
		"To unmount: fusermount3 -u MOUNTPOINT (everything written is committed).\n"
		"To get a plain folder back out: convfs export STORE DIR.\n"
		"To see whether it is mounted and what its store holds: convfs status MOUNTPOINT.\n"
		"To see every saved version of a conversation file: convfs log FILE;\n"
		"to make one of them the live one again: convfs restore FILE NUMBER.\n"
		"To check a store (read-only; exit 0 sound, 1 problems, 2 cannot): convfs check STORE.\n"
		"To remove a leaked secret (or a task) for good, unmounted: convfs forget STORE --match TEXT.\n"
		"To find the messages of any conversation that hold some words: convfs search WORDS\n"
		"(convfs search --help says how).\n"
		"To take back only what the agent's file tools changed after a checkpoint:\n"
		"convfs undo TASK_DIR N (a dry run; convfs undo --help says more).\n",
		prog, prog, prog, prog, prog, prog, prog, prog, prog);
}

/* $XDG_DATA_HOME/convfs/<basename>-<hash of the full path>.db, directories made 0700. */
static int default_store_path(const char *mountpoint, char **ret)
{
	_cleanup_sb_ struct sb p = SB_INIT;
	const char *base = strrchr(mountpoint, '/');
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	uint64_t h = 0xcbf29ce484222325ULL;
	int r;

	for (const char *c = mountpoint; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	base = base && base[1] ? base + 1 : "root";
	if (xdg && *xdg == '/') {
		r = sb_adds(&p, xdg);
	} else if (home && *home == '/') {
		r = sb_addf(&p, "%s/.local/share", home);
	} else {
		/* Run by mount(8) at boot, or from a unit, there may be no HOME. */
		struct passwd *pw = getpwuid(getuid());

		if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
			return -ENOENT;
		r = sb_addf(&p, "%s/.local/share", pw->pw_dir);
	}
	if (r < 0)
		return r;
	for (size_t i = 1; i <= p.len; i++) {
		if (p.buf[i] == '/' || p.buf[i] == '\0') {
			char save = p.buf[i];

			p.buf[i] = '\0';
			if (mkdir(p.buf, 0700) < 0 && errno != EEXIST)
				return -errno;
			p.buf[i] = save;
		}
	}
	if ((r = sb_adds(&p, "/convfs")) < 0)
		return r;
	if (mkdir(p.buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	if ((r = sb_addf(&p, "/%s-%08" PRIx64 ".db", base, (uint64_t)(h & 0xffffffffULL))) < 0)
		return r;
	*ret = sb_detach(&p, NULL);
	return 0;
}

/* What the check at mount found: each problem one line of the log. */
struct damage {
	const char *store;
	bool salvage;
	int found;
};

static int damage_line(void *ctx, const char *line)
{
	struct damage *d = ctx;

	d->found++;
	if (d->salvage)
		log_warn("the store '%s' is damaged: %s", d->store, line);
	else
		log_err("the store '%s' is damaged: %s", d->store, line);
	return 0;
}

/* What to do about a store that cannot be read, said once. */
static void damage_advice(const char *store_path, const char *mountpoint)
{
	log_err("nothing was mounted, and nothing was changed in the store or in '%s'. To go on: 'convfs check %s' "
		"lists the damage; 'convfs -o salvage,store=%s %s' serves what can be read, read-only; or restore a "
		"backup of the store; 'convfs export %s DIR' writes out what can be read",
		mountpoint, store_path, store_path, mountpoint, store_path);
}

/*
 * The store's check at every mount (store_check_mount(): the schema and the
 * root of every table, a few milliseconds whatever its size). A damaged
 * store is refused, before anything is written or mounted, unless
 * -o salvage asks to serve what can be read of it, read-only. 0 or -errno.
 */
static int check_store(struct fs *fs, const char *store_path, const char *mountpoint)
{
	struct damage d = { .store = store_path, .salvage = fs->salvage };
	int64_t start = now_ns();
	int r = store_check_mount(fs->store, damage_line, &d);

	if (r < 0 && d.found == 0)
		r = damage_line(&d, strerror(-r));
	log_debug("checked the store '%s' in %.1f ms", store_path, (double)(now_ns() - start) / 1e6);
	if (d.found == 0)
		return 0;
	if (fs->salvage) {
		log_warn("serving the damaged store '%s' read-only (-o salvage): what cannot be read answers EIO, "
			 "every write EROFS, and nothing of the folder underneath is taken in", store_path);
		return 0;
	}
	damage_advice(store_path, mountpoint);
	return -EUCLEAN;
}

/*
 * The writers of the daemons of one store take turns through the folder
 * they register in (store_turns()): a take-in's batches would otherwise
 * keep another daemon's save from SQLite's lock until it failed. Not fatal:
 * without the folder (registry_join() said why) this daemon waits as before.
 */
static void turns_join(struct fs *fs, const char *store_path)
{
	_cleanup_sb_ struct sb dir = SB_INIT;
	int r = sb_addf(&dir, "%s%s", store_path, REGISTRY_SUFFIX);

	if (r == 0)
		r = store_turns(fs->store, dir.buf);
	if (r < 0)
		log_debug("cannot take turns with the other daemons of '%s': %s", store_path, strerror(-r));
}

/*
 * Root serving another user's store: the registration folder, this daemon's
 * file and its warnings are the store owner's, as the store's own files
 * are, so that the owner's daemons and commands can read them, and remove
 * them once this daemon is gone (killed).
 */
static void registration_give(struct fs *fs)
{
	_cleanup_sb_ struct sb warnings = SB_INIT;
	const char *paths[3] = { fs->registry.dir, fs->registry.path, NULL };

	if (!fs->owner.give)
		return;
	if (sb_addf(&warnings, "%s%s", fs->registry.path, WARNINGS_SUFFIX) == 0)
		paths[2] = warnings.buf;
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		int r = paths[i] ? tree_give(&fs->owner, AT_FDCWD, paths[i]) : -ENOMEM;

		if (r < 0 && r != -ENOENT)
			log_warn("cannot give '%s' to the store's owner (uid %u): %s", paths[i] ? paths[i] : "?",
				 (unsigned)fs->owner.uid, strerror(-r));
	}
}

/*
 * Step 1: open (or create) the store and, unless -o no_import, open the
 * folder underneath: *ret_under_fd, the caller's to close (-1 with
 * no_import), set only on success. A folder the store has never taken in
 * (the first mount: minutes for a large history, with progress on the
 * terminal) is taken in here, before anything is mounted, so that a failure
 * leaves the folder as it was. Every later mount takes it in once, after
 * mounting (step 3).
 */
static int prepare_store(struct fs *fs, const char *store_path, const char *mountpoint, const struct options *opts,
			 int *ret_under_fd)
{
	bool no_import = opts->no_import;
	struct stat st;
	int r, mfd;

	r = store_open(store_path, fs->salvage ? STORE_OPEN_READONLY | STORE_OPEN_AS_IS : 0, &fs->store);
	if (r == -EIO)
		damage_advice(store_path, mountpoint);
	if (r < 0)
		return r;
	/*
	 * Every daemon serving the store holds a shared flock() of it (apart
	 * from SQLite's POSIX locks; the daemon inherits it at fork): several
	 * may serve it at once (fs/kernel/watch.c tells each of what the
	 * others commit), and convfs forget takes it exclusively for its whole
	 * run, so that none serves the store while it rewrites it.
	 */
	fs->lock_fd = open(store_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	r = fs->lock_fd < 0 ? -errno : cmd_flock(fs->lock_fd, LOCK_SH);
	if (r == 0 && fstat(fs->lock_fd, &st) < 0)
		r = -errno;
	if (r < 0) {
		if (r == -EWOULDBLOCK)
			log_err("the store '%s' is being rewritten by convfs forget: mount it once that ends", store_path);
		else
			log_err("cannot lock the store '%s': %s", store_path, strerror(-r));
		store_free(TAKE_PTR(fs->store));
		return r;
	}
	fs->owner = tree_owner_of(&st);
	/* Refused before anything is written; served damaged only once its warnings are kept. */
	r = fs->salvage ? 0 : check_store(fs, store_path, mountpoint);
	/* The backing tree only beside a store known to be good. */
	if (r == 0)
		r = plain_open_root(store_path, &fs->backing_path, &fs->root_fd);
	if (r < 0) {
		store_free(TAKE_PTR(fs->store));
		return r;
	}
	/*
	 * Registered beside the store, and from here on this mount's warnings
	 * are kept for convfs status. Neither is fatal (a read-only store's
	 * folder): status will not list this daemon, and it said why.
	 */
	registry_join(store_path, mountpoint, &fs->registry);
	turns_join(fs, store_path);
	if (fs->registry.path) {
		warnings_start(fs->registry.path);
		registration_give(fs);
	}
	if (fs->salvage)
		(void)check_store(fs, store_path, mountpoint);
	/* A store that syncs records what each commit changes from here on, the take-in's included. */
	r = sync_glue_prepare(fs, opts->sync, opts->sync_key, &fs->sync);
	if (r < 0) {
		store_free(TAKE_PTR(fs->store));
		return r;
	}
	/* Opened before mounting: the mount will hide it. */
	mfd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0) {
		r = -errno;
		log_err("cannot open the mount point '%s': %s", mountpoint, strerror(errno));
	} else {
		/* Which folder this mount is over (the host's, a container's): what it keeps apart is its own. */
		r = fs_took_in_before(fs, mfd, mountpoint);
		fs->folder_id = store_seen_folder_id(fs->store);
		/* A damaged store is not written: nothing is taken in. */
		if (r == 0 && !no_import && !fs->salvage)
			r = fs_take_in(fs, mfd, mountpoint);
		if (no_import || fs->salvage) {
			close(mfd);
			mfd = -1;
		}
	}
	store_free(TAKE_PTR(fs->store));
	if (r < 0) {
		if (mfd >= 0)
			close(mfd);
		return r;
	}
	if (fs->sync)
		sync_glue_catch_up(fs->sync, fs, store_path);
	*ret_under_fd = mfd;
	return 0;
}

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
static int serve(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint,
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
 * The mount's options, fsname the store's absolute path (store_path_of()).
 * fuse_opt splits options at commas: a comma or backslash in the path is
 * escaped with a backslash.
 */
static int mount_options(const char *store_path, struct sb *ret)
{
	int r = sb_adds(ret, "-odefault_permissions,nosuid,nodev,subtype=convfs,fsname=");

	for (const char *c = store_path; r == 0 && *c; c++)
		r = (*c == ',' || *c == '\\') ? sb_addf(ret, "\\%c", *c) : sb_add(ret, c, 1);
	return r;
}

static int cmd_export(int argc, char **argv)
{
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: %s export STORE DIR\n", argv[0]);
		return 2;
	}
	r = fs_export(argv[2], argv[3]);
	if (r < 0) {
		fprintf(stderr, "convfs: export of '%s' failed: %s\n", argv[2], strerror(-r));
		return 1;
	}
	return 0;
}

/*
 * The commands other than mounting: `convfs NAME ARGS...`. Each gets the
 * whole argv (argv[1] is its name) and returns the exit status: 0 done,
 * 1 failed, 2 wrong usage. A mount point is never one of these words
 * unless given as a path (./export).
 */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "export", cmd_export },
	{ "status", cmd_status },
	{ "log", cmd_log },
	{ "restore", cmd_restore },
	{ "check", cmd_check },
	{ "forget", cmd_forget },
	{ "search", cmd_search },
	{ "undo", cmd_undo },
};

/*
 * libfuse's own messages go through ours: with our prefix, to syslog once
 * the daemon has detached (libfuse's stderr is then /dev/null), and to
 * `convfs status` if they are warnings. (Its errors reading and writing
 * /dev/fuse are perror()s, which this never sees: loop.c reads the device
 * itself.)
 */
static _printf_(2, 0) void libfuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;
	enum log_level ours = level <= FUSE_LOG_ERR	? LOG_LEVEL_ERR
			      : level == FUSE_LOG_WARNING ? LOG_LEVEL_WARN
			      : level == FUSE_LOG_DEBUG	? LOG_LEVEL_DEBUG
							: LOG_LEVEL_INFO;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_msg(ours, "libfuse: %s", line);
}

/*
 * A store that does not exist yet, named by path: its folder's absolute
 * path and its name, into *ret; NULL if its folder cannot be resolved
 * either (store_open() then says why).
 */
static int new_store_path(const char *path, char **ret)
{
	_cleanup_free_ char *copy = strdup(path), *dir = NULL;
	_cleanup_sb_ struct sb abs = SB_INIT;
	char *slash = copy ? strrchr(copy, '/') : NULL;
	const char *name = slash ? slash + 1 : path;

	if (!copy)
		return -ENOMEM;
	if (slash == copy)
		slash[1] = '\0'; /* in / */
	else if (slash)
		*slash = '\0';
	dir = realpath(slash ? copy : ".", NULL);
	if (!dir || !*name) {
		*ret = NULL;
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	if (sb_addf(&abs, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return -ENOMEM;
	*ret = sb_detach(&abs, NULL);
	return 0;
}

/*
 * The store -o store= names, made absolute (the daemon opens it after
 * chdir("/"), and registers beside it: a relative path would mean another
 * place there), or the default for mountpoint; said if it fails.
 */
static int store_path_of(const char *opt, const char *mountpoint, char **ret)
{
	int r;

	if (!opt) {
		r = default_store_path(mountpoint, ret);
		if (r < 0)
			fprintf(stderr, "convfs: cannot make a store path under $XDG_DATA_HOME or ~/.local/share: %s\n",
				strerror(-r));
		return r;
	}
	/* A new store: its folder must exist. */
	*ret = realpath(opt, NULL);
	if (!*ret && errno == ENOENT && new_store_path(opt, ret) < 0)
		*ret = NULL;
	else if (!*ret)
		*ret = strdup(opt);
	if (!*ret) {
		fprintf(stderr, "convfs: out of memory\n");
		return -ENOMEM;
	}
	return 0;
}

static void print_version(void)
{
	printf("convfs %s (libfuse %s, SQLite %s)\n", CONVFS_VERSION, fuse_pkgversion(), sqlite3_libversion());
}

/* The daemon's memory: a few arenas, and large blocks given back when freed. */
static void malloc_tune(void)
{
	/* One malloc arena per FUSE thread would multiply the daemon's footprint. */
	mallopt(M_ARENA_MAX, 2);
	/*
	 * A fixed threshold: past it every block is a mapping of its own, given
	 * back when freed. glibc's own moves up to the largest block freed
	 * (32 MB at most), after which the 1 MiB buffers of every worker's
	 * reads and writes stay in the arenas, and the daemon's peak memory
	 * depends on how many workers were busy at once.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
}

/*
 * A daemon keeps no descriptor it did not open itself: one that whatever
 * started it passed down (flock(1)'s lock, a pipe a script reads until
 * every writer closes it) would stay held for as long as it serves. Called
 * before convfs opens anything. The mount point /dev/fd/N (mount.fuse3's
 * drop_privileges: the /dev/fuse it opened) is kept.
 */
static void close_inherited(const char *mountpoint)
{
	unsigned keep = 0;
	int n = 0;

	if (sscanf(mountpoint, "/dev/fd/%u%n", &keep, &n) != 1 || mountpoint[n] != '\0' || keep < 3)
		keep = 0;
	if (keep == 0) {
		if (close_range(3, ~0U, 0) == 0)
			return;
	} else if ((keep == 3 || close_range(3, keep - 1, 0) == 0) && close_range(keep + 1, ~0U, 0) == 0) {
		return;
	}
	/* No close_range() (a kernel before 5.9, or valgrind's): each number in turn. */
	for (long fd = 3, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

/*
 * serve() in a child of its own, in a session of its own, as a daemon; the
 * parent waits for its word that it mounted. Returns the parent's exit
 * status: 0 mounted, 1 not. *ret_forked: a child was made (it owns the
 * registration from then on).
 */
static int serve_forked(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint,
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

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct options opts = { 0 };
	_cleanup_free_ char *store_path = NULL;
	_cleanup_sb_ struct sb mount_opts = SB_INIT;
	struct fs fs = { .root_fd = -1, .lock_fd = -1, .registry = { .fd = -1 } };
	int status = 1, under_fd = -1;
	unsigned workers;
	bool forked = false; /* a daemon serves, forked from here: its registration is its own */

	for (size_t i = 0; argc >= 2 && i < ARRAY_SIZE(commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc, argv);
	if (fuse_opt_parse(&args, &opts, option_spec, option_proc) != 0 ||
	    (opts.n_words > 0 && fuse_opt_add_arg(&args, opts.words[opts.n_words - 1]) != 0) ||
	    fuse_parse_cmdline(&args, &cmd) != 0) {
		usage(stderr, argv[0]);
		status = 2;
		goto out; /* what either parsed so far is freed there */
	}
	if (cmd.show_help) {
		usage(stdout, argv[0]);
		status = 0;
		goto out;
	}
	if (cmd.show_version) {
		print_version();
		status = 0;
		goto out;
	}
	workers = cmd.singlethread ? 1 : opts.max_threads ? opts.max_threads : 16;
	if (workers > LOOP_WORKERS_MAX) {
		fprintf(stderr, "convfs: max_threads=%u is more than %d\n", workers, LOOP_WORKERS_MAX);
		status = 2;
		goto out;
	}
	if (!cmd.mountpoint) {
		fprintf(stderr, "convfs: no mount point given\n");
		usage(stderr, argv[0]);
		status = 2;
		goto out;
	}
	if (!cmd.foreground)
		close_inherited(cmd.mountpoint);
	if (opts.n_words == 2) {
		status = source_to_store(opts.words[0], &opts);
		if (status != 0)
			goto out;
		status = 1;
	}
	if (cmd.debug)
		log_set_level(LOG_LEVEL_DEBUG);
	fuse_set_log_func(libfuse_log);
	malloc_tune();
	for (int i = 0; i < args.argc; i++)
		if (strstr(args.argv[i], "allow_other"))
			fs.shared = true;
	/* Salvage: the kernel refuses every write (EROFS) before the daemon sees it. */
	fs.salvage = opts.salvage;
	if (opts.salvage && fuse_opt_add_arg(&args, "-oro") != 0) {
		fprintf(stderr, "convfs: out of memory\n");
		goto out;
	}
	umask(0); /* modes come from the caller, already masked by the kernel */
	fs.uid = getuid();
	fs.gid = getgid();
	/* Before anything is opened; other users of a shared mount get shares of it. */
	if (shares_new(fs.uid, shares_raise_nofile(&fs.nofile_was), &fs.shares) < 0) {
		fprintf(stderr, "convfs: out of memory\n");
		goto out;
	}
	if (store_path_of(opts.store, cmd.mountpoint, &store_path) < 0)
		goto out;
	if (prepare_store(&fs, store_path, cmd.mountpoint, &opts, &under_fd) < 0) {
		fprintf(stderr, "convfs: cannot use the store '%s'; nothing was mounted\n", store_path);
		goto out;
	}
	/* Run by root, the daemon could write other users' files into root's reserved blocks. */
	if (geteuid() == 0)
		shares_watch_space(fs.shares, fs.root_fd);
	/*
	 * The mount names its store, as sshfs names its remote: convfs status
	 * finds it there. Added last, so that the dev and suid of an fstab
	 * line (mount.fuse3 adds them as root) lose to nosuid,nodev.
	 */
	if (mount_options(store_path, &mount_opts) < 0 || fuse_opt_add_arg(&args, mount_opts.buf) != 0) {
		fprintf(stderr, "convfs: cannot make the mount options: out of memory\n");
		goto out;
	}
	if (cmd.foreground)
		status = serve(&fs, &args, store_path, cmd.mountpoint, TAKE_FD(under_fd), -1, workers) < 0;
	else
		status = serve_forked(&fs, &args, store_path, cmd.mountpoint, under_fd, workers, &forked);
out:
	if (under_fd >= 0)
		close(under_fd);
	if (fs.root_fd >= 0)
		close(fs.root_fd);
	if (fs.lock_fd >= 0)
		close(fs.lock_fd);
	if (forked)
		registry_close(&fs.registry); /* the daemon's: it leaves at its unmount (serve()) */
	else
		registry_leave(&fs.registry);
	free(fs.backing_path);
	shares_free(fs.shares);
	sync_glue_free(fs.sync);
	free(cmd.mountpoint);
	free(opts.store);
	free(opts.sync);
	free(opts.sync_key);
	for (int i = 0; i < opts.n_words; i++)
		free(opts.words[i]);
	fuse_opt_free_args(&args);
	return status;
}

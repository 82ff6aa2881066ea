/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prepare.c: a mount's first step, before anything is mounted and before
 * the daemon forks (fs/main.c says the order): the store's path, the store
 * opened (made) and checked, its shared lock, the daemon's registration
 * beside it, and the folder underneath taken in on the first mount. Every
 * failure here is said on the terminal that ran convfs, and nothing is left
 * half done.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/registry.h"
#include "fs/cmd/warnings.h"
#include "fs/fs.h"
#include "fs/mount/mount.h"
#include "fs/sync/sync_glue.h"
#include "store/store_changes.h"
#include "store/store_ops.h"
#include "store/store_seen.h"
#include "store/util.h"

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
int store_path_of(const char *opt, const char *mountpoint, char **ret)
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
void turns_join(struct fs *fs, const char *store_path)
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
	char warnings[64];
	const char *names[3] = { NULL, fs->registry.id, warnings };

	if (!fs->owner.give)
		return;
	snprintf(warnings, sizeof(warnings), "%s%s", fs->registry.id, WARNINGS_SUFFIX);
	/* Through the folder opened as a folder (registry_join()): where a symlink put in its place points, never. */
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		int r = tree_give(&fs->owner, fs->registry.dfd, names[i]);

		if (r < 0 && r != -ENOENT)
			log_warn("cannot give '%s%s%s' to the store's owner (uid %u): %s", fs->registry.dir,
				 names[i] ? "/" : "", names[i] ? names[i] : "", (unsigned)fs->owner.uid, strerror(-r));
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
int prepare_store(struct fs *fs, const char *store_path, const char *mountpoint, const struct prepare_options *opts,
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
		warnings_start_at(fs->registry.dfd, fs->registry.id, fs->registry.path);
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

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
 * terminal that ran convfs and nothing is left half done (fs/mount/: step 1
 * in prepare.c, steps 2 and 3 in serve.c):
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
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/registry.h"
#include "fs/fs.h"
#include "fs/kernel/loop.h"
#include "fs/mount/mount.h"
#include "fs/ops/shares.h"
#include "fs/sync/sync_glue.h"
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

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct options opts = { 0 };
	_cleanup_free_ char *store_path = NULL;
	_cleanup_sb_ struct sb mount_opts = SB_INIT;
	struct fs fs = { .root_fd = -1, .lock_fd = -1, .registry = REGISTRY_INIT };
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
	if (prepare_store(&fs, store_path, cmd.mountpoint,
			  &(struct prepare_options){ .no_import = opts.no_import, .sync = opts.sync, .sync_key = opts.sync_key },
			  &under_fd) < 0) {
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

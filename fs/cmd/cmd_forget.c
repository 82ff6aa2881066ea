/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_forget.c: `convfs forget STORE --match TEXT | --task ID [--yes]`,
 * take a leaked secret, or a whole conversation, out of the store for good.
 *
 * It says what it will remove (each conversation file, how many messages
 * and versions), and where the text still is outside the database: plain
 * files of STORE.files/ (the client's own: settings, secrets.json, ...) and
 * the folder underneath the mount (meta imported_from), which convfs never
 * modifies; then asks, on a terminal, or takes --yes; without either it
 * refuses. store_forget_run() does the work (store/forget.c). What is
 * underneath and holds the text is recorded as seen as it is now, so the
 * next mount's take-in (fs/backing/import.c) does not read it again while it does
 * not change; the user is told to clean it there.
 *
 * A daemon serving the store keeps merge bases and snapshots of what is
 * forgotten, and would write it back: forget refuses while one runs, and
 * holds the store's lock (the daemon's, fs/mount/prepare.c) so none starts meanwhile.
 * Exit status: 0 done (or nothing to forget), 1 refused or failed, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <termios.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/progress.h"
#include "fs/backing/tree.h"
#include "store/store_ops.h"
#include "store/store_seen.h"
#include "store/sync.h"
#include "store/util.h"

struct forget_ctx {
	struct store *st;
	struct store_forget f;
	const char *root_name; /* for messages: STORE.files or the folder underneath */
	char task_dir[2][96];  /* tasks/<id>, sessions/<id>: what of a forgotten task a folder holds */
	bool underneath;       /* walking the folder underneath: record what holds it as seen */
	bool quiet;            /* name nothing (the second walk underneath) */
	bool record;           /* the second walk underneath: record what is there as seen */
	int64_t messages, versions, files;
	unsigned long found, scanned;
	struct progress progress;
};

static int print_doc(void *ctx, const struct store_forget_doc *d)
{
	struct forget_ctx *c = ctx;

	c->messages += d->messages;
	c->versions += d->versions;
	c->files++;
	printf("  %s:", d->path);
	if (d->whole && !c->f.match)
		printf(" the whole file, every version");
	else {
		if (d->messages)
			printf(" %" PRId64 " message%s (%" PRId64 " in its current version)", d->messages,
			       d->messages == 1 ? "" : "s", d->current);
		if (d->versions)
			printf("%s %" PRId64 " version%s of the file", d->messages ? "," : "", d->versions,
			       d->versions == 1 ? "" : "s");
		if (d->whole)
			printf("%s its current version: the text masked with '*' in a new one (the file removed if "
			       "that is no valid JSON)", d->messages || d->versions ? "; and" : "");
	}
	if (d->head)
		printf("%s the file's own fields around its messages: the text masked with '*' (if that is no valid "
		       "JSON, left there)", d->messages || d->versions ? "; and" : "");
	printf("\n");
	return 0;
}

/* True if rel is (in) a forgotten task's folder. */
static bool in_task_dir(const struct forget_ctx *c, const char *rel)
{
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(c->task_dir[i]);

		if (n && strncmp(rel, c->task_dir[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
			return true;
	}
	return false;
}

/* A file that holds the text (or is a forgotten task's): named, and underneath recorded as seen. */
static int scan_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct forget_ctx *c = ctx;
	_cleanup_free_ char *data = NULL;
	struct stat rst;
	size_t len;
	bool holds;
	int r;

	c->scanned++;
	progress_show(&c->progress, "looking in '%s': %lu files", c->root_name, c->scanned);
	if (!S_ISREG(st->st_mode))
		return 0;
	holds = !c->f.match && in_task_dir(c, rel);
	if (!holds && c->f.match && (!c->f.task || in_task_dir(c, rel) || !c->underneath)) {
		r = read_file(dirfd, name, &data, &len, &rst);
		if (r < 0) {
			fprintf(stderr, "convfs: cannot read '%s/%s': %s\n", c->root_name, rel, strerror(-r));
			return 0;
		}
		holds = memmem(data, len, c->f.match, strlen(c->f.match)) != NULL;
	}
	if (!holds)
		return 0;
	c->found++;
	if (c->underneath) {
		struct store_seen e = { .path = (char *)rel, .type = st->st_mode & S_IFMT, .size = st->st_size,
					.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
					.ino = st->st_ino };

		if (c->st && (r = store_seen_put(c->st, &e)) < 0)
			return r;
	}
	if (c->quiet)
		return 0;
	if (c->progress.shown)
		fputs("\r\033[K", stderr);
	printf("  %s/%s\n", c->root_name, rel);
	return 0;
}

/* Walks the folder at path naming what holds the text; with st, underneath: records it as seen. */
static int scan_folder(struct forget_ctx *c, const char *path, bool underneath, struct store *st)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct store *keep = c->st;
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (underneath && st) {
		/* What is recorded as seen is this folder's: the rows of each folder taken in are its own. */
		struct stat fst;
		int64_t born;
		bool taken;

		r = fstat(fd, &fst) < 0 ? -errno : fd_born_ns(fd, &born);
		if (r == 0)
			r = store_seen_folder(st, path, (uint64_t)fst.st_dev, (uint64_t)fst.st_ino, born, &taken);
		if (r < 0) {
			close(fd);
			return r;
		}
	}
	c->root_name = path;
	c->underneath = underneath;
	c->st = st;
	c->found = 0;
	r = walk(fd, "", scan_entry, c);
	c->st = keep;
	close(fd);
	return r;
}

/* store_seen_folder_paths(): one folder underneath a mount of the store (a container's gone is skipped). */
static int scan_underneath(void *ctx, const char *path)
{
	struct forget_ctx *c = ctx;

	return scan_folder(c, path, true, c->record ? c->st : NULL);
}

/*
 * The places outside the database that hold it: named (STORE.files/ and
 * every folder underneath a mount of the store); with record, after the
 * forget, only what is underneath is walked again, quietly, and recorded as
 * seen as it is now.
 */
static int scan_outside(struct forget_ctx *c, const char *store_path, bool record)
{
	_cleanup_free_ char *files = NULL;
	int r;

	if (asprintf(&files, "%s.files", store_path) < 0)
		return -ENOMEM;
	c->quiet = record;
	if (!record) {
		printf("still there after it, outside the database (convfs does not change these):\n");
		r = scan_folder(c, files, false, NULL);
		if (r < 0)
			return r;
	}
	c->record = record;
	return store_seen_folder_paths(c->st, scan_underneath, c);
}

/*
 * A forgotten task's folders in STORE.files/ (its own, or in the trash's):
 * gone if empty; one with plain files in it stays, and is named.
 */
static void remove_task_dirs(const struct forget_ctx *c, const char *store_path)
{
	const char *dirs[] = { c->task_dir[0], c->task_dir[1], NULL };
	char trash[128];
	_cleanup_free_ char *files = NULL;
	int fd;

	snprintf(trash, sizeof(trash), ".convfs-trash/%s", c->f.task);
	dirs[2] = trash;
	if (asprintf(&files, "%s.files", store_path) < 0)
		return;
	fd = open(files, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (unlinkat(fd, dirs[i], AT_REMOVEDIR) < 0 && errno != ENOENT)
			printf("  %s/%s: a folder of the task's with plain files in it, kept: %s\n", files, dirs[i],
			       strerror(errno));
	close(fd);
}

/*
 * --match -: the text from standard input, so that it is in no shell history
 * and no process list; typed on a terminal, not echoed. One line, without
 * its newline (free()).
 */
static char *read_match(void)
{
	struct termios t, quiet;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t) == 0;
	char *line = NULL;
	size_t n = 0;
	ssize_t len;

	if (tty) {
		fprintf(stderr, "text to forget (not shown): ");
		fflush(stderr);
		quiet = t;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
	}
	len = getline(&line, &n, stdin);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSANOW, &t);
		fputc('\n', stderr);
	}
	if (len > 0 && line[len - 1] == '\n')
		line[--len] = '\0';
	if (len <= 0) {
		free(line);
		return NULL;
	}
	return line;
}

/* Asks on the terminal; true for yes. */
static bool confirmed(void)
{
	char answer[16];

	fprintf(stderr, "forget all of this for good? [y/N] ");
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin))
		return false;
	return strcmp(answer, "y\n") == 0 || strcmp(answer, "yes\n") == 0;
}

static void run_progress(void *ctx, int64_t done, int64_t total)
{
	struct forget_ctx *c = ctx;

	progress_show(&c->progress, "forgetting: step %" PRId64 " of %" PRId64, done + 1, total);
}

/* What --sync, --sync-key and --here-only say; conninfo NULL: none of them. */
struct forget_sync {
	const char *conninfo, *key_path;
	bool here_only;
	unsigned char key[STORE_SYNC_KEY_SIZE];
};

/*
 * Whether the forget may go on, for a store that syncs: 0, or the exit
 * status (the reason said). Reads the key.
 */
static int sync_check(struct store *st, const char *path, struct forget_sync *s)
{
	struct store_sync_status y = { 0 };
	int r = store_sync_status_get(st, &y);
	bool syncs = r == 0 && y.enabled;

	store_sync_status_release(&y);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot read whether the store '%s' syncs: %s\n", path, strerror(-r));
		return 1;
	}
	if (!syncs) {
		if (s->conninfo)
			fprintf(stderr, "convfs: the store '%s' does not sync (it was never mounted with -o sync): "
					"--sync has nothing to do\n", path);
		return s->conninfo ? 2 : 0;
	}
	if (!s->conninfo && !s->here_only) {
		fprintf(stderr, "convfs: the store '%s' syncs with other machines (-o sync): give --sync CONNINFO "
				"(and --sync-key FILE), as to its mount, so that it also leaves PostgreSQL and the other "
				"machines; or --here-only to forget it in this store alone\n", path);
		return 2;
	}
	if (s->conninfo && (store_sync_conninfo_check(s->conninfo) < 0 ||
			    (s->key_path && store_sync_key_load(s->key_path, s->key) < 0)))
		return 2;
	return 0;
}

/* The forget's part in PostgreSQL and on the other machines: 0 or the exit status. */
static int sync_forget(struct forget_ctx *c, const char *path, const struct forget_sync *s)
{
	struct store_sync_config cfg = { .store_path = path, .conninfo = s->conninfo,
					 .key = s->key_path ? s->key : NULL };
	int r;

	progress_start(&c->progress);
	r = store_sync_forget(&cfg, &c->f, run_progress, c);
	progress_end(&c->progress, "the shared log: %s", r < 0 ? "stopped" : "done");
	if (r < 0) {
		fprintf(stderr, "convfs: it is forgotten in this store, but not in PostgreSQL nor on the other "
				"machines (%s): run the same forget again once PostgreSQL can be reached\n",
			strerror(-r));
		return 1;
	}
	printf("the shared log in PostgreSQL no longer holds it; each other machine forgets it when it pulls next "
	       "(a mounted one at once)\n");
	return 0;
}

/* The command line into c, sync, *path and *yes; false (usage said) if it is not one. */
static bool parse_args(int argc, char **argv, struct forget_ctx *c, struct forget_sync *sync, const char **path,
		       bool *yes)
{
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--yes") == 0)
			*yes = true;
		else if (strcmp(argv[i], "--here-only") == 0)
			sync->here_only = true;
		else if (strcmp(argv[i], "--sync") == 0 && i + 1 < argc && argv[i + 1][0])
			sync->conninfo = argv[++i];
		else if (strcmp(argv[i], "--sync-key") == 0 && i + 1 < argc && argv[i + 1][0])
			sync->key_path = argv[++i];
		else if (strcmp(argv[i], "--match") == 0 && i + 1 < argc && argv[i + 1][0])
			c->f.match = argv[++i];
		else if (strcmp(argv[i], "--task") == 0 && i + 1 < argc && store_is_conversation_id(argv[i + 1]))
			c->f.task = argv[++i];
		else if (!*path && argv[i][0] != '-')
			*path = argv[i];
		else
			*path = NULL, i = argc;
	}
	if (!*path || (!c->f.match && !c->f.task) || (sync->here_only && sync->conninfo) ||
	    (sync->key_path && !sync->conninfo)) {
		fprintf(stderr, "usage: %s forget STORE --match TEXT [--task ID] [--yes] [SYNC]\n"
				"       %s forget STORE --task ID [--yes] [SYNC]\n"
				"(--match -: the text from standard input; a store that syncs needs SYNC:\n"
				"--sync CONNINFO [--sync-key FILE], or --here-only)\n", argv[0], argv[0]);
		return false;
	}
	return true;
}

int cmd_forget(int argc, char **argv)
{
	struct forget_ctx c = { 0 };
	struct forget_sync sync = { 0 };
	_cleanup_free_ char *match = NULL;
	struct store_who who = { .pid = getpid(), .comm = "convfs-forget" };
	const char *path = NULL;
	bool yes = false;
	int r, fd, n, status = 1;

	if (!parse_args(argc, argv, &c, &sync, &path, &yes))
		return 2;
	if (c.f.match && strcmp(c.f.match, "-") == 0) {
		c.f.match = match = read_match();
		if (!match) {
			fprintf(stderr, "convfs: no text to forget on standard input\n");
			return 2;
		}
	}
	if (c.f.task) {
		snprintf(c.task_dir[0], sizeof(c.task_dir[0]), "tasks/%s", c.f.task);
		snprintf(c.task_dir[1], sizeof(c.task_dir[1]), "sessions/%s", c.f.task);
	}
	/* The daemon's own lock, held to the end: none serves the store, none starts meanwhile. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		fprintf(stderr, "convfs: cannot open the store '%s': %s\n", path, strerror(errno));
		return 1;
	}
	if ((r = cmd_flock(fd, LOCK_EX)) < 0) {
		if (r == -EWOULDBLOCK)
			fprintf(stderr, "convfs: the store '%s' is mounted (a convfs daemon serves it): unmount it "
					"first; nothing was forgotten\n", path);
		else
			fprintf(stderr, "convfs: cannot lock the store '%s': %s\n", path, strerror(-r));
		close(fd);
		return 1;
	}
	r = store_open(path, 0, &c.st);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot open the store '%s': %s\n", path, strerror(-r));
		close(fd);
		return 1;
	}
	if ((status = sync_check(c.st, path, &sync)) != 0)
		goto out;
	status = 1;
	progress_start(&c.progress);
	/* the text itself is not printed again: a terminal's scrollback, a log */
	if (c.f.match)
		printf("in the store '%s', the text (%zu bytes)%s%s is in:\n", path, strlen(c.f.match),
		       c.f.task ? " in task " : "", c.f.task ? c.f.task : "");
	else
		printf("in the store '%s', task %s is:\n", path, c.f.task);
	n = store_forget_plan(c.st, &c.f, print_doc, &c);
	if (n < 0) {
		fprintf(stderr, "convfs: cannot find what to forget: %s\n", strerror(-n));
		goto out;
	}
	if (n == 0)
		printf("  nothing\n");
	r = scan_outside(&c, path, false);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot look for it outside the store: %s\n", strerror(-r));
		goto out;
	}
	progress_end(&c.progress, "looked in %lu files", c.scanned);
	if (n == 0 && sync.conninfo)
		printf("nothing in this store; PostgreSQL and the other machines are looked at all the same\n");
	if (n == 0 && !sync.conninfo) {
		status = 0;
		goto out;
	}
	fflush(stdout);
	if (!yes && !(isatty(STDIN_FILENO) && isatty(STDERR_FILENO))) {
		fprintf(stderr, "convfs: not forgetting: no terminal to ask on; run it again with --yes\n");
		status = 2;
		goto out;
	}
	if (!yes && !confirmed()) {
		fprintf(stderr, "convfs: nothing was forgotten\n");
		goto out;
	}
	progress_start(&c.progress);
	r = n > 0 ? store_forget_run(c.st, &c.f, &who, run_progress, &c) : 0;
	progress_end(&c.progress, "forgotten");
	if (r == 0)
		r = scan_outside(&c, path, true);
	if (r == 0 && c.f.task && !c.f.match)
		remove_task_dirs(&c, path);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot forget: %s\n", strerror(-r));
		goto out;
	}
	printf("forgot %" PRId64 " message%s and %" PRId64 " version%s of %" PRId64 " file%s; the store is rewritten "
	       "without them\n", c.messages, c.messages == 1 ? "" : "s", c.versions, c.versions == 1 ? "" : "s", c.files,
	       c.files == 1 ? "" : "s");
	status = sync.conninfo ? sync_forget(&c, path, &sync) : 0;
out:
	explicit_bzero(sync.key, sizeof(sync.key));
	store_free(c.st);
	close(fd);
	return status;
}

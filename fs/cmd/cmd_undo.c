/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_undo.c: `convfs undo [--apply] [--backup DIR] TASK_DIR N`, the agent's
 * edits after checkpoint N taken back in the workspace, and nothing else.
 *
 * What to take back is what the checkpoint's agent.diff names (the view
 * makes it: the files the agent's file tools changed after the checkpoint,
 * none the user changed too). Everything is read through the mount, as any
 * program reads the view: TASK_DIR/checkpoints/<N>-<hash>/agent.diff, each
 * file as it stood at checkpoint N and at the latest checkpoint (files/ of
 * each), and the workspace's path from TASK_DIR/../../workspace.json. The
 * store is not opened: the daemon owns it, and the view is how it answers.
 *
 * Each file named is planned against the workspace as it is now:
 *  - as the latest checkpoint left it: it is made as at checkpoint N again
 *    (written, or removed if the agent made it);
 *  - already as at checkpoint N: nothing to do;
 *  - changed since the latest checkpoint (by the user, or a command): the
 *    agent's change is taken back around it three-way (libgit2's merge of
 *    the latest checkpoint's text, the workspace's and checkpoint N's) if
 *    that has no conflict; otherwise the file is refused.
 * One refused file refuses the whole undo: taking back half of what the
 * agent did can leave code that does not build. The user settles that file
 * (for instance copies it from checkpoint N's files/, after which it counts
 * as done) and runs it again.
 *
 * Without --apply nothing is written: the plan is printed. With it, each
 * file it replaces or removes is first copied into a backup folder it names
 * (by default under $XDG_STATE_HOME/convfs/undo/), then each file is
 * written to a temporary file beside it, synced, and renamed over it: a
 * crash leaves every file whole, old or new. A file that changed between
 * the plan and its turn is left alone and said. The workspace is walked a
 * component at a time with O_NOFOLLOW: a path the diff names never leads
 * out of the workspace through a symlink, and names with "." or ".." parts
 * are refused.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/backing/tree.h"
#include "fs/cmd/cmd.h"
#include "fs/cmd/undo.h"
#include "store/util.h"

/* What is read whole to compare: the agent's files are source files. */
#define UNDO_FILE_MAX ((size_t)64 << 20)
/* xdiff needs some 50 bytes a byte of what it merges. */
#define UNDO_MERGE_MAX ((size_t)4 << 20)
#define UNDO_DIFF_MAX ((size_t)64 << 20)

enum action { ACT_RESTORE, ACT_REMOVE, ACT_MERGE, ACT_ALREADY, ACT_REFUSE };

/* A file's content, or its absence. */
struct blob {
	bool present;
	bool exec;
	mode_t mode;
	char *data;
	size_t len;
};

struct change {
	char *path; /* relative to the workspace */
	struct blob old, new, cur;
	enum action act;
	const char *why; /* ACT_REFUSE */
	char *merged;	 /* ACT_MERGE */
	size_t merged_len;
};

struct undo {
	bool apply;
	const char *backup;
	const char *workspace; /* --workspace, or NULL: workspace.json's */
	char *task_dir;
	char ws_path[PATH_MAX];
	char ckpt[NAME_MAX + 1], last[NAME_MAX + 1];
	struct undo_diff diff;
	struct change *v;
	size_t n;
};

static void blob_release(struct blob *b)
{
	free(b->data);
	*b = (struct blob){ 0 };
}

static bool blob_same(const struct blob *a, const struct blob *b)
{
	if (a->present != b->present)
		return false;
	return !a->present || (a->len == b->len && memcmp(a->data, b->data, a->len) == 0);
}

/* name (at dir) as it is now, never through a symlink: absent, or read; -EINVAL for what is not a regular file. */
static int read_at(int dir, const char *name, struct blob *b)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	*b = (struct blob){ 0 };
	fd = open_regular(dir, name, &st);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd == -ELOOP ? -EINVAL : fd;
	if ((r = read_fd_all(fd, UNDO_FILE_MAX, &b->data, &b->len)) < 0)
		return r;
	b->present = true;
	b->mode = st.st_mode & 07777;
	b->exec = (st.st_mode & S_IXUSR) != 0;
	return 0;
}

/* rel in a checkpoint's files/ (through the mount). */
static int read_view_file(const struct undo *u, const char *ckpt, const char *rel, struct blob *b)
{
	_cleanup_free_ char *path = NULL;

	*b = (struct blob){ 0 };
	if (asprintf(&path, "%s/checkpoints/%s/files/%s", u->task_dir, ckpt, rel) < 0)
		return -ENOMEM;
	return read_at(AT_FDCWD, path, b);
}

/*
 * The folder of the workspace's rel, open (O_NOFOLLOW at each step), and
 * rel's last part in *ret_name. With make, missing folders are made.
 * -ENOENT if one is missing (and not made), -ENOTDIR or -ELOOP where a
 * part is not a folder or is a symlink.
 */
static int ws_parent(int root, const char *rel, bool make, const char **ret_name)
{
	_cleanup_close_ int dir = -1;
	const char *p = rel, *slash;

	if ((dir = fcntl(root, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		char part[NAME_MAX + 1];
		size_t len = (size_t)(slash - p);
		int next;

		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(part, p, len);
		part[len] = '\0';
		next = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && make) {
			if (mkdirat(dir, part, 0777) < 0 && errno != EEXIST)
				return -errno;
			next = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0)
			return -errno;
		close(dir);
		dir = next;
		p = slash + 1;
	}
	*ret_name = p;
	return TAKE_FD(dir);
}

/* The workspace's rel as it is now: absent, or read; -errno for what is not a regular file or cannot be read. */
static int read_ws_file(int root, const char *rel, struct blob *b)
{
	_cleanup_close_ int dir = -1;
	const char *name;

	*b = (struct blob){ 0 };
	dir = ws_parent(root, rel, false, &name);
	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	return read_at(dir, name, b);
}

/* True for a path relative to the workspace with no empty, "." or ".." part. */
static bool path_is_plain(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *part = p; part; part = strchr(part, '/') ? strchr(part, '/') + 1 : NULL) {
		size_t len = strcspn(part, "/");

		if (len == 0 || (len == 1 && part[0] == '.') || (len == 2 && part[0] == '.' && part[1] == '.'))
			return false;
	}
	return true;
}

/* The agent's change taken back around the workspace's: 0 with c->merged, 1 on a conflict, or -errno. */
static int merge_back(struct change *c)
{
	git_merge_file_input anc, ours, theirs;
	git_merge_file_options opts;
	git_merge_file_result res = { 0 };
	int r = 1;

	if (git_merge_file_input_init(&anc, GIT_MERGE_FILE_INPUT_VERSION) < 0 ||
	    git_merge_file_input_init(&ours, GIT_MERGE_FILE_INPUT_VERSION) < 0 ||
	    git_merge_file_input_init(&theirs, GIT_MERGE_FILE_INPUT_VERSION) < 0 ||
	    git_merge_file_options_init(&opts, GIT_MERGE_FILE_OPTIONS_VERSION) < 0)
		return -EINVAL;
	anc.ptr = c->new.data, anc.size = c->new.len, anc.path = c->path;
	ours.ptr = c->cur.data, ours.size = c->cur.len, ours.path = c->path;
	theirs.ptr = c->old.data, theirs.size = c->old.len, theirs.path = c->path;
	if (git_merge_file(&res, &anc, &ours, &theirs, &opts) < 0) {
		const git_error *e = git_error_last();

		fprintf(stderr, "convfs: undo: cannot merge '%s': %s\n", c->path, e && e->message ? e->message : "?");
		return -EIO;
	}
	if (res.automergeable) {
		c->merged = malloc(res.len + 1);
		if (!c->merged) {
			r = -ENOMEM;
		} else {
			memcpy(c->merged, res.ptr, res.len);
			c->merged_len = res.len;
			r = 0;
		}
	}
	git_merge_file_result_free(&res);
	return r;
}

/* What to do with c, from its three versions. */
static int plan_one(struct change *c)
{
	int r;

	if (!c->old.present && !c->new.present) {
		c->act = ACT_REFUSE, c->why = "in neither checkpoint's files/ (a name convfs cannot read back)";
	} else if (blob_same(&c->cur, &c->new)) {
		c->act = c->old.present ? ACT_RESTORE : ACT_REMOVE;
	} else if (blob_same(&c->cur, &c->old)) {
		c->act = ACT_ALREADY;
	} else if (!c->old.present || !c->new.present || !c->cur.present) {
		c->act = ACT_REFUSE, c->why = "changed in the workspace since the latest checkpoint";
	} else if (c->old.len > UNDO_MERGE_MAX || c->new.len > UNDO_MERGE_MAX || c->cur.len > UNDO_MERGE_MAX) {
		c->act = ACT_REFUSE, c->why = "changed in the workspace since the latest checkpoint, and too big to merge";
	} else if ((r = merge_back(c)) < 0) {
		return r;
	} else {
		c->act = r == 0 ? ACT_MERGE : ACT_REFUSE;
		c->why = "changed in the workspace since the latest checkpoint, where the agent's change was";
		/* Taken back already, by hand or by an earlier undo, around the user's change. */
		if (r == 0 && c->merged_len == c->cur.len && memcmp(c->merged, c->cur.data, c->cur.len) == 0)
			c->act = ACT_ALREADY;
	}
	return 0;
}

/* Reads the three versions of each path of the diff and plans it. */
static int plan(struct undo *u, int root)
{
	int r;

	if (!(u->v = calloc(u->diff.n ? u->diff.n : 1, sizeof(*u->v))))
		return -ENOMEM;
	for (size_t i = 0; i < u->diff.n; i++) {
		struct change *c = &u->v[u->n++];

		c->path = u->diff.paths[i];
		if (!path_is_plain(c->path)) {
			c->act = ACT_REFUSE, c->why = "a name with an empty, '.' or '..' part";
			continue;
		}
		if ((r = read_view_file(u, u->ckpt, c->path, &c->old)) < 0 ||
		    (r = read_view_file(u, u->last, c->path, &c->new)) < 0) {
			c->act = ACT_REFUSE;
			c->why = r == -EINVAL ? "not a regular file in a checkpoint (undo writes files only)"
			       : r == -EFBIG  ? "too big to compare"
					      : "cannot be read from the checkpoints";
			continue;
		}
		if ((r = read_ws_file(root, c->path, &c->cur)) < 0) {
			c->act = ACT_REFUSE;
			c->why = r == -EINVAL || r == -ELOOP || r == -ENOTDIR
					 ? "not a regular file in the workspace, or under a symlink"
				 : r == -EFBIG ? "too big to compare"
					       : "cannot be read in the workspace";
			continue;
		}
		if ((r = plan_one(c)) < 0)
			return r;
	}
	return 0;
}

/* Writes data as the workspace's rel: a temporary file beside it, synced, renamed over it. */
static int write_atomic(int root, const char *rel, const char *data, size_t len, mode_t mode)
{
	_cleanup_close_ int dir = -1, fd = -1;
	char tmp[NAME_MAX + 1];
	const char *name;
	size_t off = 0;

	if ((dir = ws_parent(root, rel, true, &name)) < 0)
		return dir;
	for (int i = 0; fd < 0; i++) {
		if (snprintf(tmp, sizeof(tmp), ".%.200s.convfs-undo-%d-%d", name, (int)getpid(), i) >= (int)sizeof(tmp))
			return -ENAMETOOLONG;
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && (errno != EEXIST || i > 100))
			return -errno;
	}
	while (off < len) {
		ssize_t k = write(fd, data + off, len - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			goto fail;
		off += (size_t)k;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0 || renameat(dir, tmp, dir, name) < 0)
		goto fail;
	if (fsync(dir) < 0)
		return -errno;
	return 0;
fail:;
	int e = errno;

	unlinkat(dir, tmp, 0);
	return -e;
}

static int remove_file(int root, const char *rel)
{
	_cleanup_close_ int dir = -1;
	const char *name;

	if ((dir = ws_parent(root, rel, false, &name)) < 0)
		return dir;
	if (unlinkat(dir, name, 0) < 0)
		return -errno;
	return fsync(dir) < 0 ? -errno : 0;
}

/* The process's umask, which open() would apply to a new file. */
static mode_t umask_now(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

/* Makes the folder path and those above it that are missing (0700). */
static int make_folders(const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -1;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* A copy of what each change replaces or removes, under the backup folder, made first. */
static int back_up(struct undo *u)
{
	_cleanup_close_ int root = -1;

	if (make_folders(u->backup) < 0) {
		fprintf(stderr, "convfs: undo: cannot make the backup folder '%s': %s\n", u->backup, strerror(errno));
		return -1;
	}
	if ((root = open(u->backup, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		fprintf(stderr, "convfs: undo: cannot open the backup folder '%s': %s\n", u->backup, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct change *c = &u->v[i];
		int r;

		if (c->act == ACT_ALREADY || !c->cur.present)
			continue;
		if ((r = write_atomic(root, c->path, c->cur.data, c->cur.len, c->cur.mode & 0777)) < 0) {
			fprintf(stderr, "convfs: undo: cannot back up '%s' into '%s': %s; nothing changed\n", c->path,
				u->backup, strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* Makes each planned change; the number that failed or found the file changed since the plan. */
static size_t apply(struct undo *u, int root)
{
	size_t failed = 0;

	for (size_t i = 0; i < u->n; i++) {
		struct change *c = &u->v[i];
		struct blob now = { 0 };
		mode_t mode;
		int r;

		if (c->act == ACT_ALREADY)
			continue;
		r = read_ws_file(root, c->path, &now);
		if (r == 0 && !blob_same(&now, &c->cur))
			r = -EAGAIN;
		blob_release(&now);
		mode = c->cur.present ? c->cur.mode & 07777 : (c->old.exec ? 0777 : 0666) & ~umask_now();
		if (r == 0 && c->act == ACT_REMOVE)
			r = remove_file(root, c->path);
		else if (r == 0 && c->act == ACT_MERGE)
			r = write_atomic(root, c->path, c->merged, c->merged_len, mode);
		else if (r == 0)
			r = write_atomic(root, c->path, c->old.data, c->old.len, mode);
		if (r == -EAGAIN) {
			fprintf(stderr, "convfs: undo: '%s' changed while undo ran; left alone\n", c->path);
			failed++;
		} else if (r < 0) {
			fprintf(stderr, "convfs: undo: cannot %s '%s': %s\n", c->act == ACT_REMOVE ? "remove" : "write",
				c->path, strerror(-r));
			failed++;
		}
	}
	return failed;
}

static const char *const verbs[] = {
	[ACT_RESTORE] = "restore", [ACT_REMOVE] = "remove", [ACT_MERGE] = "merge",
	[ACT_ALREADY] = "already", [ACT_REFUSE] = "refuse",
};

/* The plan, a line a file; the number refused. */
static size_t print_plan(const struct undo *u)
{
	size_t refused = 0;

	printf("the agent's edits after checkpoint %s, in %s:\n", u->ckpt, u->ws_path);
	for (size_t i = 0; i < u->n; i++) {
		const struct change *c = &u->v[i];

		printf("  %-8s %s", verbs[c->act], c->path);
		switch (c->act) {
		case ACT_RESTORE:
			printf(" (as at checkpoint %.3s)\n", u->ckpt);
			break;
		case ACT_REMOVE:
			printf(" (the agent made it)\n");
			break;
		case ACT_MERGE:
			printf(" (changed since the latest checkpoint too: that change is kept)\n");
			break;
		case ACT_ALREADY:
			printf(" (the agent's change is taken back already)\n");
			break;
		case ACT_REFUSE:
			printf(": %s\n", c->why);
			refused++;
			break;
		}
	}
	if (!u->n)
		printf("  (none)\n");
	for (size_t i = 0; i < u->diff.nnotes; i++)
		printf("%s\n", u->diff.notes[i]);
	return refused;
}

/* How many files the undo changes. */
static size_t todo(const struct undo *u)
{
	size_t n = 0;

	for (size_t i = 0; i < u->n; i++)
		n += u->v[i].act != ACT_ALREADY;
	return n;
}

/* The default backup folder: $XDG_STATE_HOME/convfs/undo/<task>-<checkpoint>-<UTC time>. */
static int default_backup(const struct undo *u, char **ret)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	const char *task = strrchr(u->task_dir, '/') ? strrchr(u->task_dir, '/') + 1 : u->task_dir;
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	if (!gmtime_r(&now, &tm) || !strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm))
		return -EINVAL;
	if (state && *state == '/')
		return asprintf(ret, "%s/convfs/undo/%s-%.3s-%s", state, task, u->ckpt, when) < 0 ? -ENOMEM : 0;
	if (!home || *home != '/')
		return -ENOENT;
	return asprintf(ret, "%s/.local/state/convfs/undo/%s-%.3s-%s", home, task, u->ckpt, when) < 0 ? -ENOMEM : 0;
}

static void undo_release(struct undo *u)
{
	for (size_t i = 0; i < u->n; i++) {
		blob_release(&u->v[i].old);
		blob_release(&u->v[i].new);
		blob_release(&u->v[i].cur);
		free(u->v[i].merged);
	}
	free(u->v);
	undo_diff_release(&u->diff);
	free(u->task_dir);
}

static void help(FILE *out)
{
	fprintf(out,
		"usage: convfs undo [--apply] [--backup DIR] [--workspace DIR] TASK_DIR N\n"
		"\n"
		"Takes back what the agent's file tools changed in the workspace after checkpoint N\n"
		"of the task at TASK_DIR (a mount's workspaces/<ws>/tasks/<id>), and nothing else:\n"
		"what its checkpoints/<N>-<hash>/agent.diff holds. Files the user changed too, and what\n"
		"commands the agent ran changed, are left alone (the client does not track commands).\n"
		"\n"
		"Without --apply it only says what it would do. A file changed in the workspace since\n"
		"the latest checkpoint is merged three-way if the agent's change can be taken back\n"
		"around it without conflict; otherwise it is refused, and so is the whole undo (settle\n"
		"that file, e.g. copy it from checkpoints/<N>-<hash>/files/, and run it again).\n"
		"\n"
		"  --apply       do it: each file is written whole (a temporary file renamed over it)\n"
		"  --backup DIR  where the files it replaces or removes are copied first; default\n"
		"                $XDG_STATE_HOME/convfs/undo/<task>-<N>-<time> (~/.local/state/...)\n"
		"  --workspace DIR  the workspace's folder, where it is not the path the task\n"
		"                recorded (the workspace's workspace.json): moved, or seen from a\n"
		"                container under another path\n"
		"\n"
		"N is the checkpoint's number as checkpoints/ shows it (1 or 001), or its folder's name.\n"
		"Exit status: 0 done (or, without --apply, nothing refused), 1 refused or failed, 2 usage.\n");
}

static int parse_args(int argc, char **argv, struct undo *u, const char **ret_task, const char **ret_n)
{
	int i;

	for (i = 2; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			help(stdout);
			return 0;
		} else if (strcmp(argv[i], "--apply") == 0) {
			u->apply = true;
		} else if (strcmp(argv[i], "--backup") == 0 && i + 1 < argc) {
			u->backup = argv[++i];
		} else if (strncmp(argv[i], "--backup=", 9) == 0 && argv[i][9]) {
			u->backup = argv[i] + 9;
		} else if (strcmp(argv[i], "--workspace") == 0 && i + 1 < argc) {
			u->workspace = argv[++i];
		} else if (strncmp(argv[i], "--workspace=", 12) == 0 && argv[i][12]) {
			u->workspace = argv[i] + 12;
		} else {
			break;
		}
	}
	if (argc - i != 2) {
		help(stderr);
		return 2;
	}
	*ret_task = argv[i];
	*ret_n = argv[i + 1];
	return -1;
}

int cmd_undo(int argc, char **argv)
{
	struct undo u = { 0 };
	_cleanup_free_ char *backup = NULL;
	_cleanup_close_ int root = -1;
	const char *task, *n;
	size_t refused, failed;
	int r, status = 1;

	if ((r = parse_args(argc, argv, &u, &task, &n)) >= 0)
		return r;
	if (undo_find(task, n, u.workspace, u.ckpt, u.last, u.ws_path, &u.task_dir) < 0 ||
	    undo_diff_read(u.task_dir, u.ckpt, &u.diff) < 0)
		goto out;
	if ((root = open(u.ws_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "convfs: undo: cannot open the workspace '%s': %s\n", u.ws_path, strerror(errno));
		goto out;
	}
	if (git_libgit2_init() < 0) {
		fprintf(stderr, "convfs: undo: cannot start libgit2\n");
		goto out;
	}
	r = plan(&u, root);
	if (r < 0) {
		fprintf(stderr, "convfs: undo: cannot plan the undo: %s\n", strerror(-r));
		goto shutdown;
	}
	refused = print_plan(&u);
	if (refused) {
		printf("refused: %zu file(s) (above); nothing changed\n", refused);
		goto shutdown;
	}
	if (todo(&u) == 0) {
		printf("nothing to undo\n");
		status = 0;
		goto shutdown;
	}
	if (!u.apply) {
		printf("dry run: nothing changed; convfs undo --apply does it\n");
		status = 0;
		goto shutdown;
	}
	if (!u.backup && (r = default_backup(&u, &backup)) < 0) {
		fprintf(stderr, "convfs: undo: no backup folder (set XDG_STATE_HOME or HOME, or give --backup DIR): %s\n",
			strerror(-r));
		goto shutdown;
	}
	u.backup = u.backup ? u.backup : backup;
	if (back_up(&u) < 0)
		goto shutdown;
	failed = apply(&u, root);
	printf("%s; what it replaced or removed is in %s\n", failed ? "undone in part (above)" : "undone", u.backup);
	status = failed ? 1 : 0;
shutdown:
	git_libgit2_shutdown();
out:
	undo_release(&u);
	return status;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_plain.c: path resolution in the backing tree (fs/backing/plain.c), by openat2
 * and by the component-by-component walk used where openat2 is missing
 * (CONVFS_NO_OPENAT2=1, old kernels, valgrind).
 *
 * A tree with symlinks of every kind (to a folder inside, to a folder outside,
 * to "..", to a file, dangling) is resolved both ways with the same paths and
 * flags; the two must agree: the same file, or the same errno. Neither may
 * follow a link. The paths the walk refuses on purpose ("..", "." and empty
 * components, which openat2 allows while they stay beneath) are checked apart.
 * No fd may be left open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fs/fs.h"
#include "store/util.h"

struct open_case {
	const char *path;
	int flags;
};

static const struct open_case cases[] = {
	{ "", O_PATH | O_DIRECTORY },
	{ "", O_RDONLY | O_DIRECTORY },
	{ "f", O_RDONLY },
	{ "f", O_PATH },
	{ "f", O_RDONLY | O_DIRECTORY },
	{ "d", O_PATH | O_DIRECTORY },
	{ "d", O_RDONLY | O_DIRECTORY },
	{ "d/f", O_RDONLY },
	{ "d/f", O_WRONLY },
	{ "d/sub/g", O_RDONLY },
	{ "d/sub", O_PATH | O_DIRECTORY },
	{ "missing", O_RDONLY },
	{ "d/missing/g", O_RDONLY },
	{ "f/g", O_RDONLY },           /* a file as a folder */
	{ "ld", O_PATH | O_DIRECTORY }, /* a link to a folder inside */
	{ "ld", O_RDONLY },
	{ "ld", O_PATH },
	{ "ld/f", O_RDONLY },
	{ "lout", O_PATH | O_DIRECTORY }, /* a link out of the tree */
	{ "lout/passwd", O_RDONLY },
	{ "lout/passwd", O_WRONLY | O_TRUNC },
	{ "d/lup", O_PATH | O_DIRECTORY }, /* a link to ".." */
	{ "d/lup/f", O_RDONLY },
	{ "d/lup/d/f", O_RDONLY },
	{ "lf", O_RDONLY }, /* a link to a file */
	{ "lf", O_WRONLY | O_TRUNC },
	{ "lf", O_PATH },
	{ "lf", O_PATH | O_NOFOLLOW }, /* asked for: the link itself, both ways */
	{ "dangling", O_RDONLY },
	{ "dangling", O_WRONLY | O_CREAT },
	{ "d/dangling", O_WRONLY | O_CREAT }, /* a link to a folder outside, then a file */
	{ "lout/new", O_WRONLY | O_CREAT },
	{ "ld/new", O_WRONLY | O_CREAT },
	{ "/etc/passwd", O_RDONLY }, /* absolute */
	{ "../outside", O_RDONLY },
	{ "d/../../outside", O_RDONLY },
};

/* What one open gave: an errno, or the file's identity. */
struct outcome {
	int err;
	dev_t dev;
	ino_t ino;
	mode_t type;
};

struct fixture {
	char dir[64];
	struct fs fs;
	char *outside;
};

static void mk(int dfd, const char *path, const char *link_to)
{
	if (link_to)
		assert_int_equal(symlinkat(link_to, dfd, path), 0);
	else if (path[strlen(path) - 1] == '/')
		assert_int_equal(mkdirat(dfd, path, 0700), 0);
	else {
		int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "x", 1), 1);
		close(fd);
	}
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static struct outcome open_one(struct fixture *f, const struct open_case *c)
{
	struct outcome o = { 0 };
	struct stat st;
	int fd = plain_open(&f->fs, c->path, c->flags, 0600);

	if (fd < 0) {
		o.err = -fd;
		return o;
	}
	assert_int_equal(fstat(fd, &st), 0);
	o.dev = st.st_dev;
	o.ino = st.st_ino;
	o.type = st.st_mode & S_IFMT;
	close(fd);
	/* A file created here must not stay for the other pass to find. */
	if (c->flags & O_CREAT)
		assert_int_equal(unlinkat(f->fs.root_fd, c->path, 0), 0);
	return o;
}

static void check_outside_untouched(struct fixture *f)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/new", f->outside);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[128];
	int r;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/convfs-test-plain.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/store.db", f->dir);
	f->fs.root_fd = -1;
	r = plain_open_root(path, &f->fs.backing_path, &f->fs.root_fd);
	if (r < 0)
		return -1;
	if (asprintf(&f->outside, "%s/outside", f->dir) < 0)
		return -1;
	if (mkdir(f->outside, 0700) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->fs.root_fd);
	free(f->fs.backing_path);
	free(f->outside);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void make_tree(struct fixture *f)
{
	int r = f->fs.root_fd;

	mk(r, "f", NULL);
	mk(r, "d/", NULL);
	mk(r, "d/f", NULL);
	mk(r, "d/sub/", NULL);
	mk(r, "d/sub/g", NULL);
	mk(r, "ld", "d");
	mk(r, "lout", f->outside);
	mk(r, "d/lup", "..");
	mk(r, "lf", "d/f");
	mk(r, "dangling", "nowhere");
	mk(r, "d/dangling", "../lout/new");
}

/*
 * Both ways agree on every case. Must run first: once the walk is chosen
 * (CONVFS_NO_OPENAT2=1 at plain_open_root), it stays for the process.
 */
static void test_walk_agrees_with_openat2(void **state)
{
	struct fixture *f = *state;
	struct outcome by_openat2[ARRAY_SIZE(cases)];
	char store[128];
	int fds, root_fd;
	char *backing;

	make_tree(f);
	fds = count_fds();
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		by_openat2[i] = open_one(f, &cases[i]);
	assert_int_equal(count_fds(), fds);

	assert_int_equal(setenv("CONVFS_NO_OPENAT2", "1", 1), 0);
	snprintf(store, sizeof(store), "%s/store.db", f->dir);
	assert_int_equal(plain_open_root(store, &backing, &root_fd), 0);
	close(root_fd);
	free(backing);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct outcome o = open_one(f, &cases[i]);

		if (o.err != by_openat2[i].err || o.ino != by_openat2[i].ino || o.type != by_openat2[i].type)
			fail_msg("'%s' (flags %#o): openat2 gave %s (ino %ju), the walk %s (ino %ju)", cases[i].path,
				 cases[i].flags, strerror(by_openat2[i].err), (uintmax_t)by_openat2[i].ino,
				 strerror(o.err), (uintmax_t)o.ino);
	}
	assert_int_equal(count_fds(), fds);
	check_outside_untouched(f);
}

/* What the walk refuses that openat2 takes while it stays beneath. */
static void test_walk_refuses_dots(void **state)
{
	static const struct {
		const char *path;
		int err;
	} refused[] = {
		{ "d/../f", EXDEV },
		{ "..", EXDEV },
		{ "d/./f", EINVAL },
		{ "./f", EINVAL },
		{ "d//f", EINVAL },
		{ "d/", EINVAL },
	};
	struct fixture *f = *state;
	char store[128];
	int fds, root_fd;
	char *backing;

	assert_int_equal(setenv("CONVFS_NO_OPENAT2", "1", 1), 0);
	snprintf(store, sizeof(store), "%s/store.db", f->dir);
	assert_int_equal(plain_open_root(store, &backing, &root_fd), 0);
	close(root_fd);
	free(backing);
	make_tree(f);
	fds = count_fds();
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		int fd = plain_open(&f->fs, refused[i].path, O_RDONLY, 0);

		if (fd >= 0)
			close(fd);
		if (fd != -refused[i].err)
			fail_msg("'%s': the walk gave %d, not -%s", refused[i].path, fd, strerror(refused[i].err));
	}
	/* A name over NAME_MAX, and a parent through a link. */
	{
		char name[NAME_MAX + 8];
		const char *leaf;
		int fd;

		memset(name, 'n', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		assert_int_equal(plain_open(&f->fs, name, O_RDONLY, 0), -ENAMETOOLONG);
		assert_int_equal(plain_open_parent(&f->fs, "lout/passwd", &leaf), -ELOOP);
		fd = plain_open_parent(&f->fs, "d/sub/g", &leaf);
		assert_true(fd >= 0);
		assert_string_equal(leaf, "g");
		close(fd);
		assert_int_equal(plain_mkdirs(&f->fs, "d/made/deeper"), 0);
		assert_int_equal(plain_mkdirs(&f->fs, "ld/made"), -ELOOP);
	}
	assert_int_equal(count_fds(), fds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_walk_agrees_with_openat2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_refuses_dots, setup, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("plain", tests, NULL, NULL);
}

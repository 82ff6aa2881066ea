/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_names.c: the POSIX battery's checks of names: rename, hard links,
 * long paths, symlinks, unlink, mkdir and rmdir. The harness is in posix.c.
 */
#include <dirent.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "posix.h"

/* ---- rename ------------------------------------------------------------------ */

int check_rename_file(void)
{
	struct stat sa, sb, st;
	char buf[8];
	int fd;

	CALL(write_str("a", "A"));
	CALL(write_str("b", "B"));
	TRY(stat("a", &sa));
	TRY(stat("b", &sb));
	fd = TRY(open("b", O_RDONLY));
	TRY(rename("a", "b"));
	CALL(want_gone("a"));
	TRY(stat("b", &st));
	WANT(st.st_ino == sa.st_ino, "the renamed file has inode %llu, not %llu", (unsigned long long)st.st_ino,
	     (unsigned long long)sa.st_ino);
	CALL(want_str("b", "A"));
	/* the replaced file lives on through its descriptor */
	WANT(TRY(read(fd, buf, sizeof(buf))) == 1 && buf[0] == 'B', "the replaced file's descriptor reads wrong bytes");
	TRY(fstat(fd, &st));
	WANT(st.st_ino == sb.st_ino && st.st_nlink == 0, "fstat of the replaced file: inode %llu, %lu links",
	     (unsigned long long)st.st_ino, (unsigned long)st.st_nlink);
	TRY(close(fd));
	/* across folders, and back */
	TRY(mkdir("d", 0755));
	TRY(rename("b", "d/c"));
	CALL(want_str("d/c", "A"));
	TRY(rename("d/c", "b"));
	CALL(want_str("b", "A"));
	CALL(want_gone("d/c"));
	/* renaming a file onto itself, or onto another name of it, changes nothing */
	TRY(rename("b", "b"));
	TRY(link("b", "b2"));
	TRY(rename("b", "b2"));
	CALL(want_str("b", "A"));
	CALL(want_str("b2", "A"));
	CALL(want_nlink("b", 2));
	return 0;
}

int check_rename_dir(void)
{
	struct stat st;

	/* a folder over an empty folder */
	TRY(mkdir("d1", 0755));
	CALL(write_str("d1/f", "in d1"));
	TRY(mkdir("d2", 0755));
	TRY(rename("d1", "d2"));
	CALL(want_gone("d1"));
	CALL(want_str("d2/f", "in d1"));
	CALL(want_nlink("d2", 2));
	/* over a folder that is not empty */
	TRY(mkdir("d3", 0755));
	WANT_ERR2(rename("d3", "d2"), ENOTEMPTY, EEXIST);
	CALL(want_str("d2/f", "in d1"));
	TRY(stat("d3", &st));
	/* deep: what is inside moves with it */
	TRY(mkdir("x", 0755));
	TRY(mkdir("x/y", 0755));
	TRY(mkdir("x/y/z", 0755));
	CALL(write_str("x/y/z/f", "deep"));
	TRY(stat("x/y/z/f", &st));
	TRY(rename("x", "w"));
	CALL(want_str("w/y/z/f", "deep"));
	CALL(want_gone("x"));
	WANT_ERR(stat("x/y/z/f", &st), ENOENT);
	TRY(mkdir("x", 0755));
	CALL(want_gone("x/y"));
	TRY(rename("w/y/z", "x/z"));
	CALL(want_str("x/z/f", "deep"));
	CALL(want_gone("w/y/z"));
	CALL(want_nlink("w/y", 2));
	CALL(want_nlink("x", 3));
	return 0;
}

int check_rename_errors(void)
{
	CALL(write_str("f", "file"));
	TRY(mkdir("d", 0755));
	TRY(mkdir("d/sub", 0755));
	WANT_ERR(rename("f", "d"), EISDIR);
	WANT_ERR(rename("d", "f"), ENOTDIR);
	WANT_ERR(rename("d", "d/sub/in"), EINVAL);
	WANT_ERR(rename("missing", "x"), ENOENT);
	WANT_ERR(rename("f", "nodir/x"), ENOENT);
	WANT_ERR(rename("f", "f/x"), ENOTDIR);
	CALL(want_str("f", "file"));
	CALL(want_nlink("d", 3));
	return 0;
}

int check_rename_noreplace(void)
{
	CALL(write_str("a", "A"));
	CALL(write_str("b", "B"));
	WANT_ERR(renameat2(AT_FDCWD, "a", AT_FDCWD, "b", RENAME_NOREPLACE), EEXIST);
	CALL(want_str("a", "A"));
	CALL(want_str("b", "B"));
	TRY(renameat2(AT_FDCWD, "a", AT_FDCWD, "c", RENAME_NOREPLACE));
	CALL(want_gone("a"));
	CALL(want_str("c", "A"));
	return 0;
}

int check_rename_exchange(void)
{
	struct stat sa, sb, st;

	CALL(write_str("a", "A"));
	CALL(write_str("b", "B"));
	TRY(stat("a", &sa));
	TRY(stat("b", &sb));
	TRY(renameat2(AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE));
	CALL(want_str("a", "B"));
	CALL(want_str("b", "A"));
	TRY(stat("a", &st));
	WANT(st.st_ino == sb.st_ino, "after RENAME_EXCHANGE 'a' has the wrong inode");
	/* a file and a folder */
	TRY(mkdir("d", 0755));
	CALL(write_str("d/in", "inside"));
	TRY(renameat2(AT_FDCWD, "a", AT_FDCWD, "d", RENAME_EXCHANGE));
	CALL(want_str("a/in", "inside"));
	CALL(want_str("d", "B"));
	WANT_ERR(renameat2(AT_FDCWD, "a", AT_FDCWD, "missing", RENAME_EXCHANGE), ENOENT);
	return 0;
}

int check_rename_open(void)
{
	char buf[16];
	int fd;

	/* a file renamed while open keeps working, and its data is found at the new name */
	fd = TRY(open("a", O_CREAT | O_RDWR, 0644));
	TRY(write(fd, "one", 3));
	TRY(rename("a", "b"));
	TRY(write(fd, "two", 3));
	CALL(want_str("b", "onetwo"));
	TRY(close(fd));
	/* the same when its folder is renamed */
	TRY(mkdir("d", 0755));
	fd = TRY(open("d/f", O_CREAT | O_RDWR, 0644));
	TRY(rename("d", "e"));
	TRY(write(fd, "moved", 5));
	TRY(fsync(fd));
	CALL(want_str("e/f", "moved"));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 5, "pread after the folder's rename");
	TRY(close(fd));
	return 0;
}

/* ---- links ------------------------------------------------------------------- */

int check_link(void)
{
	struct stat sa, sb, st;
	char buf[16];
	int fd;

	CALL(write_str("a", "0123456789"));
	CALL(want_nlink("a", 1));
	fd = TRY(open("a", O_RDONLY));
	/* read it, so that its pages may be cached under this name */
	WANT(TRY(read(fd, buf, sizeof(buf))) == 10, "short read");
	TRY(link("a", "b"));
	TRY(stat("a", &sa));
	TRY(stat("b", &sb));
	WANT(sa.st_nlink == 2 && sb.st_nlink == 2, "after link: %lu and %lu links, expected 2", (unsigned long)sa.st_nlink,
	     (unsigned long)sb.st_nlink);
	WANT(sa.st_ino == sb.st_ino, "two names of one file have inodes %llu and %llu", (unsigned long long)sa.st_ino,
	     (unsigned long long)sb.st_ino);
	TRY(fstat(fd, &st));
	WANT(st.st_nlink == 2, "fstat of an open descriptor shows %lu links after link", (unsigned long)st.st_nlink);
	/* content is shared: written under one name, read under the other */
	CALL(write_file("b", "ABCDEFGHIJ", 10, 0644));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 10 && memcmp(buf, "ABCDEFGHIJ", 10) == 0,
	     "a descriptor of 'a' reads stale bytes after a write through 'b'");
	CALL(want_str("a", "ABCDEFGHIJ"));
	/* a change of mode under one name shows under the other */
	TRY(chmod("b", 0640));
	CALL(want_mode("a", M(0640)));
	TRY(unlink("b"));
	CALL(want_nlink("a", 1));
	TRY(fstat(fd, &st));
	WANT(st.st_nlink == 1, "fstat shows %lu links after the other name went", (unsigned long)st.st_nlink);
	CALL(want_gone("b"));
	TRY(close(fd));
	/* many names */
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "l%d", i);
		TRY(link("a", name));
	}
	CALL(want_nlink("a", 21));
	CALL(want_nlink("l7", 21));
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "l%d", i);
		TRY(unlink(name));
	}
	CALL(want_nlink("a", 1));
	/* a link made, then the first name removed */
	TRY(link("a", "c"));
	TRY(unlink("a"));
	CALL(want_nlink("c", 1));
	CALL(want_str("c", "ABCDEFGHIJ"));
	return 0;
}

int check_link_errors(void)
{
	CALL(write_str("a", "A"));
	CALL(write_str("b", "B"));
	TRY(mkdir("d", 0755));
	WANT_ERR(link("d", "dlink"), EPERM);
	WANT_ERR(link("a", "b"), EEXIST);
	WANT_ERR(link("missing", "x"), ENOENT);
	WANT_ERR(link("a", "nodir/x"), ENOENT);
	CALL(want_str("b", "B"));
	CALL(want_nlink("a", 1));
	return 0;
}

/*
 * Hard links of a fifo, a socket and a symlink (and a regular file): what
 * changes through one name (the link count, the mode, the owner, the ctime)
 * shows through every other at once, as pjdfstest's link/00 and unlink/00
 * check. (Each name is an inode of its own in the kernel's cache of a FUSE
 * mount: a file with several names must not be cached.)
 */
static int make_special(const char *type, const char *name)
{
	if (strcmp(type, "regular") == 0)
		return write_str(name, "x");
	if (strcmp(type, "fifo") == 0) {
		TRY(mkfifo(name, 0644));
	} else if (strcmp(type, "socket") == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int s = TRY(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			int e = errno;

			close(s);
			return bad("bind '%s': %s", name, en(e));
		}
		TRY(close(s));
	} else {
		TRY(symlink("nowhere", name));
	}
	return 0;
}

static int want_links(const char *path, nlink_t n, mode_t mode, uid_t uid, gid_t gid)
{
	struct stat st;

	TRY(lstat(path, &st));
	if (st.st_nlink != n || (mode && (st.st_mode & 07777) != mode) || st.st_uid != uid || st.st_gid != gid)
		return bad("'%s' has %lu links, mode %04o, owner %d:%d; expected %lu, %04o, %d:%d", path,
			   (unsigned long)st.st_nlink, st.st_mode & 07777, (int)st.st_uid, (int)st.st_gid,
			   (unsigned long)n, mode ? mode : st.st_mode & 07777, (int)uid, (int)gid);
	return 0;
}

static int link_special(const char *t)
{
	bool lnk = strcmp(t, "symlink") == 0;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	mode_t mode = 0;
	struct stat before, st;

	CALL(make_special(t, "n0"));
	CALL(want_links("n0", 1, 0, uid, gid)); /* now in the kernel's cache, if it caches */
	TRY(link("n0", "n1"));
	CALL(want_links("n0", 2, 0, uid, gid));
	CALL(want_links("n1", 2, 0, uid, gid));
	TRY(link("n1", "n2"));
	CALL(want_links("n0", 3, 0, uid, gid));
	CALL(want_links("n2", 3, 0, uid, gid));
	if (!lnk) { /* Linux has no lchmod */
		TRY(chmod("n1", 0640));
		mode = M(0640);
	}
	if (uid == 0) {
		TRY(lchown("n1", 65534, 65533));
		uid = 65534;
		gid = 65533;
	}
	CALL(want_links("n0", 3, mode, uid, gid));
	CALL(want_links("n1", 3, mode, uid, gid));
	CALL(want_links("n2", 3, mode, uid, gid));
	/* unlink of one name: the others' count and ctime follow */
	TRY(lstat("n0", &before));
	sleep_ms(30);
	TRY(unlink("n1"));
	CALL(want_gone("n1"));
	CALL(want_links("n0", 2, mode, uid, gid));
	CALL(want_links("n2", 2, mode, uid, gid));
	TRY(lstat("n0", &st));
	WANT(ts_ns(st.st_ctim) > ts_ns(before.st_ctim), "unlink of another name did not move the ctime of 'n0'");
	TRY(unlink("n2"));
	CALL(want_links("n0", 1, mode, uid, gid));
	TRY(unlink("n0"));
	CALL(want_gone("n0"));
	return 0;
}

int check_link_special(void)
{
	static const char *const types[] = { "regular", "fifo", "socket", "symlink" };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (link_special(types[i]) < 0) {
			char msg[sizeof(why)];

			snprintf(msg, sizeof(msg), "%s", why);
			return bad("%s: %s", types[i], msg);
		}
	return 0;
}

/*
 * Paths near PATH_MAX (pjdfstest's open/03, mkdir/03, link/03, rename/02,
 * ...): a path of PATH_MAX - 1 bytes from the working folder works for every
 * call, one of PATH_MAX bytes is ENAMETOOLONG. Below a mount's root the path
 * from the root is longer than the caller's (as on any filesystem); and
 * deeper still, reached by chdir a folder at a time, the path from the root
 * is several times PATH_MAX.
 */
int check_long_paths(void)
{
	static char dir[PATH_MAX], p[PATH_MAX + 2], q[PATH_MAX + 2];
	char comp[101], buf[8];
	size_t len = 0, leaf;
	struct stat st;
	int fd, depth;
	DIR *d;

	memset(comp, 'd', 100);
	comp[100] = '\0';
	while (len + 101 + 150 <= PATH_MAX - 1) {
		memcpy(dir + len, comp, 100);
		dir[len + 100] = '\0';
		TRY(mkdir(dir, 0755));
		dir[len + 100] = '/';
		len += 101;
		dir[len] = '\0';
	}
	leaf = PATH_MAX - 1 - len; /* between 150 and 250 bytes: the whole path is PATH_MAX - 1 */
	memcpy(p, dir, len);
	memset(p + len, 'f', leaf);
	p[len + leaf] = '\0';
	memcpy(q, p, len + leaf + 1);
	q[len] = 'g';
	WANT(strlen(p) == PATH_MAX - 1, "the path is %zu bytes", strlen(p));
	CALL(write_str(p, "long"));
	CALL(want_str(p, "long"));
	TRY(truncate(p, 2));
	TRY(stat(p, &st));
	WANT(st.st_size == 2, "truncate of a long path: size %lld", (long long)st.st_size);
	TRY(chmod(p, 0640));
	CALL(want_mode(p, M(0640)));
	TRY(link(p, q));
	CALL(want_nlink(p, 2));
	TRY(unlink(q));
	TRY(rename(p, q));
	CALL(want_gone(p));
	TRY(rename(q, p));
	TRY(symlink("target", q));
	WANT(TRY(readlink(q, buf, sizeof(buf))) == 6, "readlink of a long path");
	TRY(unlink(q));
	TRY(mkfifo(q, 0644));
	TRY(unlink(q));
	TRY(mkdir(q, 0755));
	TRY(rmdir(q));
	TRY(unlink(p));
	CALL(want_gone(p));
	/* one byte more: the kernel's limit */
	strcat(p, "x");
	WANT_ERR(open(p, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
	WANT_ERR(mkdir(p, 0755), ENAMETOOLONG);
	/* deeper, a folder at a time */
	TRY(chdir(dir));
	for (depth = 0; depth < 60; depth++) {
		TRY(mkdir(comp, 0755));
		TRY(chdir(comp));
	}
	CALL(write_str("deep", "deep"));
	CALL(want_str("deep", "deep"));
	TRY(link("deep", "deep2"));
	CALL(want_nlink("deep", 2));
	TRY(rename("deep2", "deep3"));
	TRY(mkdir("sub", 0755));
	TRY(rename("deep3", "sub/deep3"));
	CALL(want_str("sub/deep3", "deep"));
	d = opendir(".");
	WANT(d, "opendir of a deep folder: %s", en(errno));
	{
		int n = 0;
		struct dirent *de;

		while ((de = readdir(d)))
			n++;
		closedir(d);
		WANT(n == 4, "a deep folder lists %d entries, expected 4", n);
	}
	fd = TRY(open("sub", O_RDONLY | O_DIRECTORY));
	TRY(unlinkat(fd, "deep3", 0));
	TRY(close(fd));
	TRY(rmdir("sub"));
	TRY(unlink("deep"));
	for (; depth > 0; depth--) {
		TRY(chdir(".."));
		TRY(rmdir(comp));
	}
	return 0;
}

int check_symlink(void)
{
	char buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	CALL(write_str("f", "target"));
	TRY(symlink("f", "l"));
	n = TRY(readlink("l", buf, sizeof(buf)));
	WANT(n == 1 && buf[0] == 'f', "readlink gave '%.*s'", (int)n, buf);
	TRY(lstat("l", &st));
	WANT(S_ISLNK(st.st_mode) && st.st_size == 1, "lstat of a symlink: mode %o, size %lld", st.st_mode,
	     (long long)st.st_size);
	TRY(stat("l", &st));
	WANT(S_ISREG(st.st_mode) && st.st_size == 6, "stat does not follow the symlink");
	CALL(want_str("l", "target"));
	/* dangling, absolute, long, into a folder */
	TRY(symlink("nowhere", "dangling"));
	WANT_ERR(stat("dangling", &st), ENOENT);
	TRY(lstat("dangling", &st));
	TRY(symlink("/an/absolute/path", "abs"));
	n = TRY(readlink("abs", buf, sizeof(buf)));
	WANT(n == 17 && memcmp(buf, "/an/absolute/path", 17) == 0, "readlink of an absolute link gave '%.*s'", (int)n, buf);
	{
		char target[1024];

		memset(target, 'x', sizeof(target) - 1);
		target[sizeof(target) - 1] = '\0';
		TRY(symlink(target, "long"));
		n = TRY(readlink("long", buf, sizeof(buf)));
		WANT(n == (ssize_t)strlen(target) && memcmp(buf, target, (size_t)n) == 0, "a 1023-byte target came back wrong");
	}
	TRY(mkdir("d", 0755));
	CALL(write_str("d/in", "inside"));
	TRY(symlink("d", "dl"));
	CALL(want_str("dl/in", "inside"));
	WANT_ERR(readlink("f", buf, sizeof(buf)), EINVAL);
	WANT_ERR(symlink("x", "f"), EEXIST);
	/* removing the link leaves the target */
	TRY(unlink("l"));
	CALL(want_str("f", "target"));
	return 0;
}

int check_unlink_open(void)
{
	char buf[32];
	struct stat st;
	int fd;

	CALL(write_str("f", "before"));
	fd = TRY(open("f", O_RDWR));
	TRY(unlink("f"));
	CALL(want_gone("f"));
	TRY(fstat(fd, &st));
	WANT(st.st_nlink == 0 && st.st_size == 6, "fstat of an unlinked open file: %lu links, size %lld",
	     (unsigned long)st.st_nlink, (long long)st.st_size);
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 6 && memcmp(buf, "before", 6) == 0, "an unlinked file reads wrong bytes");
	TRY(pwrite(fd, "+after", 6, 6));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 12 && memcmp(buf, "before+after", 12) == 0,
	     "an unlinked file does not read back what was written to it");
	TRY(ftruncate(fd, 3));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 3, "ftruncate of an unlinked file: size %lld", (long long)st.st_size);
	TRY(fchmod(fd, 0600));
	/* a new file of the same name is another file */
	CALL(write_str("f", "new"));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 3 && memcmp(buf, "bef", 3) == 0, "the old descriptor reads the new file");
	CALL(want_str("f", "new"));
	TRY(close(fd));
	/* the same for a file unlinked by another process's rename over it */
	fd = TRY(open("f", O_RDONLY));
	CALL(write_str("g", "replacement"));
	TRY(rename("g", "f"));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 3 && memcmp(buf, "new", 3) == 0, "a replaced file reads wrong bytes");
	TRY(close(fd));
	return 0;
}

int check_unlink_rmdir_errors(void)
{
	CALL(write_str("f", "x"));
	TRY(mkdir("d", 0755));
	CALL(write_str("d/in", "x"));
	WANT_ERR(unlink("d"), EISDIR);
	WANT_ERR(unlink("missing"), ENOENT);
	WANT_ERR(rmdir("f"), ENOTDIR);
	WANT_ERR2(rmdir("d"), ENOTEMPTY, EEXIST);
	WANT_ERR(rmdir("."), EINVAL);
	WANT_ERR(rmdir("missing"), ENOENT);
	CALL(want_str("d/in", "x"));
	return 0;
}

int check_mkdir_rmdir(void)
{
	struct stat st;
	char path[256] = "deep";
	size_t len = 4;

	TRY(mkdir("d", 0750));
	TRY(stat("d", &st));
	WANT(S_ISDIR(st.st_mode), "mkdir made no folder");
	CALL(want_mode("d", M(0750)));
	WANT(st.st_uid == geteuid(), "a new folder is owned by %d", (int)st.st_uid);
	CALL(want_nlink("d", 2));
	WANT_ERR(mkdir("d", 0755), EEXIST);
	CALL(write_str("f", "x"));
	WANT_ERR(mkdir("f", 0755), EEXIST);
	WANT_ERR(mkdir("f/x", 0755), ENOTDIR);
	WANT_ERR(mkdir("missing/x", 0755), ENOENT);
	TRY(mkdir("d/s", 0755));
	CALL(want_nlink("d", 3));
	TRY(rmdir("d/s"));
	CALL(want_nlink("d", 2));
	TRY(rmdir("d"));
	CALL(want_gone("d"));
	/* twenty levels deep, and back up */
	TRY(mkdir(path, 0755));
	for (int i = 0; i < 20; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/n");
		TRY(mkdir(path, 0755));
	}
	CALL(write_str("deep/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/f", "bottom"));
	CALL(want_str("deep/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/f", "bottom"));
	TRY(unlink("deep/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/n/f"));
	for (char *slash = path; slash; slash = strrchr(path, '/')) {
		if (slash != path)
			*slash = '\0';
		TRY(rmdir(path));
	}
	CALL(want_gone("deep"));
	return 0;
}

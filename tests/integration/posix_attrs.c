/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_attrs.c: the POSIX battery's checks of what a file has besides its
 * bytes: timestamps, modes and owners, permissions as another user, extended
 * attributes. The harness is in posix.c.
 */
#include <grp.h>
#include <sys/xattr.h>

#include "posix.h"

/* ---- timestamps ------------------------------------------------------------------ */

int check_times(void)
{
	struct timespec tv[2] = { { 1000000000, 250000000 }, { 1200000000, 500000000 } };
	struct timespec now0, now1;
	struct stat st, st2;
	int fd;

	CALL(write_str("f", "x"));
	TRY(utimensat(AT_FDCWD, "f", tv, 0));
	TRY(stat("f", &st));
	WANT(ts_eq(st.st_atim, 1000000000, 250000000) && ts_eq(st.st_mtim, 1200000000, 500000000),
	     "utimensat: atime %lld.%09ld, mtime %lld.%09ld", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	/* UTIME_OMIT leaves one, UTIME_NOW sets one to now */
	TRY(clock_gettime(CLOCK_REALTIME, &now0));
	tv[0].tv_nsec = UTIME_OMIT;
	tv[1].tv_nsec = UTIME_NOW;
	TRY(utimensat(AT_FDCWD, "f", tv, 0));
	TRY(clock_gettime(CLOCK_REALTIME, &now1));
	TRY(stat("f", &st));
	WANT(ts_eq(st.st_atim, 1000000000, 250000000), "UTIME_OMIT changed atime to %lld", (long long)st.st_atim.tv_sec);
	WANT(ts_ns(st.st_mtim) >= ts_ns(now0) - 1000000000LL && ts_ns(st.st_mtim) <= ts_ns(now1) + 1000000000LL,
	     "UTIME_NOW set mtime %lld, not about now (%lld)", (long long)st.st_mtim.tv_sec, (long long)now0.tv_sec);
	tv[0] = (struct timespec){ 1100000000, 0 };
	tv[1].tv_nsec = UTIME_OMIT;
	TRY(utimensat(AT_FDCWD, "f", tv, 0));
	TRY(stat("f", &st2));
	WANT(ts_eq(st2.st_atim, 1100000000, 0) && ts_ns(st2.st_mtim) == ts_ns(st.st_mtim), "UTIME_OMIT of mtime changed it");
	/* NULL: both now */
	TRY(utimensat(AT_FDCWD, "f", NULL, 0));
	TRY(stat("f", &st));
	WANT(st.st_mtim.tv_sec >= now0.tv_sec - 1 && st.st_atim.tv_sec >= now0.tv_sec - 1, "utimensat(NULL) did not set now");
	/* futimens through a descriptor */
	fd = TRY(open("f", O_RDWR));
	tv[0] = (struct timespec){ 1300000000, 1 };
	tv[1] = (struct timespec){ 1400000000, 999999999 };
	TRY(futimens(fd, tv));
	TRY(fstat(fd, &st));
	WANT(ts_eq(st.st_atim, 1300000000, 1) && ts_eq(st.st_mtim, 1400000000, 999999999), "futimens: mtime %lld.%09ld",
	     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	/* a write moves mtime and ctime to now */
	TRY(write(fd, "y", 1));
	TRY(fstat(fd, &st));
	WANT(st.st_mtim.tv_sec >= now0.tv_sec - 1, "a write left mtime at %lld", (long long)st.st_mtim.tv_sec);
	WANT(st.st_ctim.tv_sec >= now0.tv_sec - 1, "a write left ctime at %lld", (long long)st.st_ctim.tv_sec);
	/* ftruncate too */
	TRY(futimens(fd, tv));
	TRY(ftruncate(fd, 0));
	TRY(fstat(fd, &st));
	WANT(st.st_mtim.tv_sec >= now0.tv_sec - 1, "ftruncate left mtime at %lld", (long long)st.st_mtim.tv_sec);
	TRY(close(fd));
	/* chmod moves ctime, not mtime */
	TRY(utimensat(AT_FDCWD, "f", tv, 0));
	TRY(stat("f", &st));
	sleep_ms(30);
	TRY(chmod("f", 0600));
	TRY(stat("f", &st2));
	WANT(ts_ns(st2.st_ctim) > ts_ns(st.st_ctim), "chmod did not move ctime (%lld.%09ld)", (long long)st2.st_ctim.tv_sec,
	     st2.st_ctim.tv_nsec);
	WANT(ts_eq(st2.st_mtim, 1400000000, 999999999), "chmod moved mtime");
	/* a link moves ctime */
	sleep_ms(30);
	TRY(link("f", "f2"));
	TRY(stat("f", &st));
	WANT(ts_ns(st.st_ctim) > ts_ns(st2.st_ctim), "link did not move ctime");
	return 0;
}

int check_times_dir_symlink(void)
{
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct timespec tv[2] = { { 1500000000, 0 }, { 1500000000, 123 } };
	struct stat st;

	/* a folder's mtime moves when an entry is made, removed or renamed in it */
	TRY(mkdir("d", 0755));
	TRY(utimensat(AT_FDCWD, "d", old, 0));
	CALL(write_str("d/f", "x"));
	TRY(stat("d", &st));
	WANT(st.st_mtim.tv_sec > 1000000000, "creating a file left its folder's mtime");
	TRY(utimensat(AT_FDCWD, "d", old, 0));
	TRY(rename("d/f", "d/g"));
	TRY(stat("d", &st));
	WANT(st.st_mtim.tv_sec > 1000000000, "a rename left its folder's mtime");
	TRY(utimensat(AT_FDCWD, "d", old, 0));
	TRY(unlink("d/g"));
	TRY(stat("d", &st));
	WANT(st.st_mtim.tv_sec > 1000000000, "an unlink left its folder's mtime");
	/* times of a symlink itself, not of its target */
	CALL(write_str("t", "x"));
	TRY(utimensat(AT_FDCWD, "t", old, 0));
	TRY(symlink("t", "l"));
	TRY(utimensat(AT_FDCWD, "l", tv, AT_SYMLINK_NOFOLLOW));
	TRY(lstat("l", &st));
	WANT(ts_eq(st.st_mtim, 1500000000, 123), "the symlink's mtime is %lld.%09ld", (long long)st.st_mtim.tv_sec,
	     st.st_mtim.tv_nsec);
	TRY(stat("t", &st));
	WANT(ts_eq(st.st_mtim, 1000000000, 0), "setting a symlink's times changed its target's");
	return 0;
}

/* ---- modes and owners ------------------------------------------------------------ */

int check_chmod(void)
{
	static const mode_t modes[] = { 0640, 0600, 0644, 0755, 0700, 0400, 0000, 04755, 02750, 0777 };
	int fd;

	CALL(write_str("f", "x"));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		TRY(chmod("f", modes[i]));
		CALL(want_mode("f", M(modes[i])));
	}
	fd = TRY(open("f", O_RDONLY));
	TRY(fchmod(fd, 0604));
	TRY(close(fd));
	CALL(want_mode("f", M(0604)));
	TRY(mkdir("d", 0755));
	TRY(chmod("d", 01777));
	CALL(want_mode("d", M(01777)));
	TRY(chmod("d", 0700));
	CALL(want_mode("d", 0700));
	/* chmod through a symlink changes the target */
	TRY(symlink("f", "l"));
	TRY(chmod("l", 0640));
	CALL(want_mode("f", M(0640)));
	WANT_ERR(chmod("missing", 0600), ENOENT);
	return 0;
}

int check_chown(void)
{
	struct stat st;
	int fd;

	if (geteuid() != 0)
		return skip("chown needs root");
	CALL(write_str("f", "x"));
	TRY(chown("f", 65534, 65534));
	TRY(stat("f", &st));
	WANT(st.st_uid == 65534 && st.st_gid == 65534, "chown: owner %d:%d", (int)st.st_uid, (int)st.st_gid);
	TRY(chown("f", (uid_t)-1, 0));
	TRY(stat("f", &st));
	WANT(st.st_uid == 65534 && st.st_gid == 0, "chown of the group only: owner %d:%d", (int)st.st_uid, (int)st.st_gid);
	fd = TRY(open("f", O_RDONLY));
	TRY(fchown(fd, 0, 65534));
	TRY(close(fd));
	TRY(stat("f", &st));
	WANT(st.st_uid == 0 && st.st_gid == 65534, "fchown: owner %d:%d", (int)st.st_uid, (int)st.st_gid);
	/* chown drops setuid */
	TRY(chmod("f", 04755));
	TRY(chown("f", 65534, (gid_t)-1));
	TRY(stat("f", &st));
	WANT(!(st.st_mode & S_ISUID), "chown kept the setuid bit (mode %04o)", st.st_mode & 07777);
	/* lchown: the link, not its target */
	TRY(symlink("f", "l"));
	TRY(lchown("l", 1, 1));
	TRY(lstat("l", &st));
	WANT(st.st_uid == 1 && st.st_gid == 1, "lchown: the link is owned by %d:%d", (int)st.st_uid, (int)st.st_gid);
	TRY(stat("f", &st));
	WANT(st.st_uid == 65534, "lchown changed the target");
	return 0;
}

/* root gets in whatever the mode, as on any filesystem */
int check_root_override(void)
{
	int fd;

	if (geteuid() != 0)
		return skip("needs root");
	CALL(write_str("f", "x"));
	TRY(chmod("f", 0));
	fd = TRY(open("f", O_RDWR));
	TRY(write(fd, "y", 1));
	TRY(close(fd));
	TRY(mkdir("d", 0755));
	TRY(chmod("d", 0));
	CALL(write_str("d/in", "z"));
	CALL(want_str("d/in", "z"));
	TRY(chmod("d", 0755));
	return 0;
}

/* As opt.other: what default_permissions must refuse and allow. */
static int perms_as_other(void *arg)
{
	struct timespec tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct stat st;
	char buf[8];
	int fd;

	TRY(setgroups(0, NULL));
	TRY(setresgid(opt.other_gid, opt.other_gid, opt.other_gid));
	TRY(setresuid(opt.other, opt.other, opt.other));
	if (opt.priv) {
		/* a private mount lets nobody else in at all */
		WANT_ERR(stat(".", &st), EACCES);
		WANT_ERR(open("public", O_RDONLY), EACCES);
		return 0;
	}
	WANT_ERR(open("secret", O_RDONLY), EACCES);
	fd = TRY(open("public", O_RDONLY));
	WANT(TRY(read(fd, buf, sizeof(buf))) == 1 && buf[0] == 'p', "read of a 0644 file");
	TRY(close(fd));
	WANT_ERR(open("public", O_WRONLY), EACCES);
	WANT_ERR(truncate("public", 0), EACCES);
	fd = TRY(open("shared", O_RDWR));
	TRY(write(fd, "W", 1));
	TRY(close(fd));
	WANT_ERR(stat("closed/f", &st), EACCES);
	WANT_ERR(open("closed", O_RDONLY | O_DIRECTORY), EACCES);
	WANT_ERR(open("ro/new", O_CREAT | O_WRONLY, 0644), EACCES);
	WANT_ERR(unlink("ro/f"), EACCES);
	WANT_ERR(rename("ro/f", "ro/g"), EACCES);
	WANT_ERR(mkdir("ro/x", 0755), EACCES);
	WANT_ERR(chmod("public", 0666), EPERM);
	WANT_ERR(chown("public", opt.other, (gid_t)-1), EPERM);
	WANT_ERR(utimensat(AT_FDCWD, "public", tv, 0), EPERM);
	WANT_ERR(utimensat(AT_FDCWD, "public", NULL, 0), EACCES);
	TRY(utimensat(AT_FDCWD, "shared", NULL, 0));
	WANT_ERR(utimensat(AT_FDCWD, "shared", tv, 0), EPERM);
	/* what it makes is its own, and it can open it again */
	fd = TRY(open("open/mine", O_CREAT | O_WRONLY, 0600));
	TRY(write(fd, "m", 1));
	TRY(close(fd));
	TRY(stat("open/mine", &st));
	WANT(st.st_uid == opt.other && st.st_gid == opt.other_gid, "a file made by uid %d is owned by %d:%d", (int)opt.other,
	     (int)st.st_uid, (int)st.st_gid);
	fd = TRY(open("open/mine", O_RDWR));
	TRY(close(fd));
	TRY(chmod("open/mine", 0640));
	/* its setuid and setgid bits too (chown would drop them) */
	TRY(close(TRY(open("open/suid", O_CREAT | O_WRONLY, 06750))));
	CALL(want_mode("open/suid", 06750));
	TRY(mkdir("open/dir", 0700));
	TRY(stat("open/dir", &st));
	WANT(st.st_uid == opt.other, "a folder made by uid %d is owned by %d", (int)opt.other, (int)st.st_uid);
	CALL(write_str("open/dir/inner", "i"));
	TRY(symlink("mine", "open/link"));
	TRY(lstat("open/link", &st));
	WANT(st.st_uid == opt.other, "a symlink made by uid %d is owned by %d", (int)opt.other, (int)st.st_uid);
	TRY(mkfifo("open/fifo", 0600));
	TRY(lstat("open/fifo", &st));
	WANT(st.st_uid == opt.other, "a fifo made by uid %d is owned by %d", (int)opt.other, (int)st.st_uid);
	/* the sticky bit: not another's file */
	WANT_ERR2(unlink("sticky/rootfile"), EPERM, EACCES);
	CALL(write_str("sticky/mine", "m"));
	TRY(unlink("sticky/mine"));
	(void)arg;
	return 0;
}

int check_permissions(void)
{
	struct stat st;

	if (!opt.have_other)
		return skip("no --other UID given");
	if (geteuid() != 0)
		return skip("needs root to become uid %d", (int)opt.other);
	CALL(write_file("secret", "s", 1, 0600));
	CALL(write_file("public", "p", 1, 0644));
	CALL(write_file("shared", "w", 1, 0666));
	TRY(chmod("shared", 0666));
	TRY(mkdir("closed", 0700));
	CALL(write_str("closed/f", "c"));
	TRY(mkdir("ro", 0755));
	CALL(write_str("ro/f", "r"));
	TRY(mkdir("open", 0777));
	TRY(chmod("open", 0777));
	TRY(mkdir("sticky", 0777));
	TRY(chmod("sticky", 01777));
	CALL(write_file("sticky/rootfile", "r", 1, 0666));
	CALL(in_child(perms_as_other, NULL, NULL));
	if (opt.priv)
		return 0;
	CALL(want_str("shared", "W"));
	CALL(want_str("ro/f", "r"));
	TRY(stat("open/mine", &st));
	WANT(st.st_uid == opt.other, "root sees the other user's file owned by %d", (int)st.st_uid);
	CALL(want_mode("open/mine", 0640));
	CALL(want_str("sticky/rootfile", "r"));
	return 0;
}

/* ---- extended attributes ---------------------------------------------------------- */

int check_xattr(void)
{
	char buf[64];
	ssize_t n;

	CALL(write_str("f", "x"));
	if (opt.convfs) {
		/* documented: no extended attributes (nor POSIX ACLs) in the plain area */
		WANT_ERR(setxattr("f", "user.posix", "v", 1, 0), EOPNOTSUPP);
		WANT_ERR(getxattr("f", "user.posix", buf, sizeof(buf)), EOPNOTSUPP);
		WANT_ERR(removexattr("f", "user.posix"), EOPNOTSUPP);
		n = listxattr("f", buf, sizeof(buf));
		WANT(n == 0 || (n < 0 && errno == EOPNOTSUPP), "listxattr gave %zd (%s)", n, n < 0 ? en(errno) : "-");
		return 0;
	}
	TRY(setxattr("f", "user.posix", "value", 5, 0));
	n = TRY(getxattr("f", "user.posix", buf, sizeof(buf)));
	WANT(n == 5 && memcmp(buf, "value", 5) == 0, "getxattr gave %zd bytes", n);
	n = TRY(listxattr("f", buf, sizeof(buf)));
	WANT(memmem(buf, (size_t)n, "user.posix", 11), "listxattr does not list user.posix");
	WANT_ERR(setxattr("f", "user.posix", "v", 1, XATTR_CREATE), EEXIST);
	WANT_ERR(setxattr("f", "user.other", "v", 1, XATTR_REPLACE), ENODATA);
	TRY(removexattr("f", "user.posix"));
	WANT_ERR(getxattr("f", "user.posix", buf, sizeof(buf)), ENODATA);
	return 0;
}

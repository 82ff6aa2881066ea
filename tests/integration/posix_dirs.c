/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_dirs.c: the POSIX battery's checks of folders and special files:
 * statfs, long listings with telldir/seekdir, long names, *at() calls, the
 * working folder, fifos and sockets, exec. The harness is in posix.c.
 */
#include <dirent.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "posix.h"

/* ---- folders ------------------------------------------------------------------- */

int check_statfs(void)
{
	struct statvfs sv;
	struct statvfs fsv;
	int fd;

	TRY(statvfs(".", &sv));
	WANT(sv.f_bsize > 0 && sv.f_blocks > 0 && sv.f_bfree <= sv.f_blocks && sv.f_bavail <= sv.f_bfree,
	     "statvfs: bsize %lu, blocks %llu, bfree %llu, bavail %llu", sv.f_bsize, (unsigned long long)sv.f_blocks,
	     (unsigned long long)sv.f_bfree, (unsigned long long)sv.f_bavail);
	WANT(sv.f_namemax >= 255, "statvfs: namemax %lu", sv.f_namemax);
	fd = TRY(open(".", O_RDONLY | O_DIRECTORY));
	TRY(fstatvfs(fd, &fsv));
	TRY(close(fd));
	WANT(fsv.f_blocks == sv.f_blocks, "fstatvfs and statvfs disagree");
	return 0;
}

#define MANY 1000

int check_readdir_many(void)
{
	static unsigned char seen[MANY];
	char name[32], first[10][NAME_MAX + 1];
	struct dirent *de;
	int dots = 0, count = 0;
	long pos = -1;
	DIR *d;

	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "e%04d", i);
		TRY(close(TRY(open(name, O_CREAT | O_WRONLY, 0644))));
	}
	d = opendir(".");
	WANT(d, "opendir: %s", en(errno));
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		int i;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
			dots++;
			continue;
		}
		WANT(sscanf(de->d_name, "e%d", &i) == 1 && i >= 0 && i < MANY, "readdir returned '%s'", de->d_name);
		WANT(!seen[i], "readdir returned '%s' twice", de->d_name);
		seen[i] = 1;
		TRY(lstat(de->d_name, &st));
		WANT(de->d_ino == st.st_ino, "readdir gives '%s' inode %llu, stat %llu", de->d_name,
		     (unsigned long long)de->d_ino, (unsigned long long)st.st_ino);
		WANT(de->d_type == DT_REG || de->d_type == DT_UNKNOWN, "readdir gives '%s' type %d", de->d_name, de->d_type);
		count++;
	}
	WANT(errno == 0, "readdir: %s", en(errno));
	WANT(count == MANY && dots == 2, "readdir returned %d entries and %d dots", count, dots);
	/* telldir/seekdir: the same entries again from a remembered position */
	rewinddir(d);
	for (int i = 0; i < 500; i++)
		WANT(readdir(d), "rewinddir: the listing ended at %d", i);
	pos = telldir(d);
	WANT(pos != -1, "telldir: %s", en(errno));
	for (int i = 0; i < 10; i++) {
		de = readdir(d);
		WANT(de, "the listing ended after telldir");
		snprintf(first[i], sizeof(first[i]), "%s", de->d_name);
	}
	for (int i = 0; i < 100; i++)
		WANT(readdir(d), "the listing ended early");
	seekdir(d, pos);
	for (int i = 0; i < 10; i++) {
		de = readdir(d);
		WANT(de && strcmp(de->d_name, first[i]) == 0, "after seekdir entry %d is '%s', not '%s'", i,
		     de ? de->d_name : "(end)", first[i]);
	}
	/* removing entries while listing: the others still come once each */
	rewinddir(d);
	memset(seen, 0, sizeof(seen));
	count = 0;
	while ((de = readdir(d))) {
		int i;

		if (de->d_name[0] == '.')
			continue;
		WANT(sscanf(de->d_name, "e%d", &i) == 1 && !seen[i], "'%s' came twice while removing", de->d_name);
		seen[i] = 1;
		TRY(unlink(de->d_name));
		count++;
	}
	TRY(closedir(d));
	WANT(count == MANY, "listing while removing gave %d entries", count);
	/* getdents64 with a small buffer: the listing is paged */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "p%03d", i);
		TRY(mkdir(name, 0755));
	}
	{
		int fd = TRY(open(".", O_RDONLY | O_DIRECTORY));
		char buf[512];
		long n;

		count = 0;
		while ((n = TRY(syscall(SYS_getdents64, fd, buf, sizeof(buf)))) > 0) {
			for (long off = 0; off < n;) {
				struct dirent64 *e = (struct dirent64 *)(buf + off);

				if (e->d_name[0] == 'p') {
					WANT(e->d_type == DT_DIR || e->d_type == DT_UNKNOWN, "'%s' is not listed as a folder",
					     e->d_name);
					count++;
				}
				off += e->d_reclen;
			}
		}
		TRY(close(fd));
		WANT(count == 300, "getdents64 in 512-byte pieces listed %d folders, not 300", count);
	}
	return 0;
}

int check_long_names(void)
{
	char name[NAME_MAX + 2];
	struct stat st;
	struct dirent *de;
	bool found = false;
	DIR *d;

	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = '\0';
	CALL(write_str(name, "long"));
	CALL(want_str(name, "long"));
	d = opendir(".");
	WANT(d, "opendir: %s", en(errno));
	while ((de = readdir(d)))
		found |= strcmp(de->d_name, name) == 0;
	TRY(closedir(d));
	WANT(found, "a %d-byte name is not listed", NAME_MAX);
	TRY(rename(name, "short"));
	TRY(rename("short", name));
	name[NAME_MAX] = 'n';
	name[NAME_MAX + 1] = '\0';
	WANT_ERR(open(name, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
	WANT_ERR(stat(name, &st), ENAMETOOLONG);
	WANT_ERR(mkdir(name, 0755), ENAMETOOLONG);
	/* names with odd bytes */
	CALL(write_str(" a name with spaces, \t tabs and \n newline ", "odd"));
	CALL(write_str("\xc3\xa9t\xc3\xa9 \xe2\x9c\x93", "utf8"));
	CALL(write_str("\xff\xfe", "latin1"));
	CALL(write_str("-leading-dash", "dash"));
	CALL(write_str("...", "dots"));
	CALL(want_str("\xff\xfe", "latin1"));
	CALL(want_str("...", "dots"));
	return 0;
}

int check_dirfd_ops(void)
{
	struct stat st;
	int d, e, fd;

	TRY(mkdir("d", 0755));
	TRY(mkdir("e", 0755));
	d = TRY(open("d", O_RDONLY | O_DIRECTORY));
	e = TRY(open("e", O_PATH | O_DIRECTORY));
	fd = TRY(openat(d, "f", O_CREAT | O_WRONLY, 0644));
	TRY(write(fd, "at", 2));
	TRY(close(fd));
	TRY(fstatat(d, "f", &st, 0));
	WANT(st.st_size == 2, "fstatat: size %lld", (long long)st.st_size);
	TRY(faccessat(d, "f", R_OK | W_OK, 0));
	TRY(renameat(d, "f", e, "g"));
	CALL(want_str("e/g", "at"));
	TRY(linkat(e, "g", d, "h", 0));
	CALL(want_nlink("d/h", 2));
	TRY(symlinkat("h", d, "s"));
	TRY(mkdirat(d, "sub", 0755));
	TRY(mknodat(d, "pipe", S_IFIFO | 0644, 0));
	TRY(fstatat(d, "pipe", &st, AT_SYMLINK_NOFOLLOW));
	WANT(S_ISFIFO(st.st_mode), "mknodat did not make a fifo");
	TRY(fstatat(d, "", &st, AT_EMPTY_PATH));
	WANT(S_ISDIR(st.st_mode), "fstatat(AT_EMPTY_PATH) of a folder");
	TRY(unlinkat(d, "sub", AT_REMOVEDIR));
	TRY(unlinkat(d, "h", 0));
	TRY(unlinkat(d, "s", 0));
	TRY(unlinkat(d, "pipe", 0));
	TRY(unlinkat(e, "g", 0));
	TRY(close(d));
	TRY(close(e));
	TRY(rmdir("d"));
	TRY(rmdir("e"));
	WANT_ERR(access("d", F_OK), ENOENT);
	return 0;
}

int check_cwd(void)
{
	char buf[PATH_MAX];
	size_t n;

	TRY(mkdir("c", 0755));
	TRY(chdir("c"));
	WANT(getcwd(buf, sizeof(buf)), "getcwd: %s", en(errno));
	n = strlen(buf);
	WANT(n >= 2 && strcmp(buf + n - 2, "/c") == 0, "getcwd gave '%s'", buf);
	/* the working folder renamed under us */
	TRY(rename("../c", "../c2"));
	WANT(getcwd(buf, sizeof(buf)), "getcwd: %s", en(errno));
	n = strlen(buf);
	WANT(n >= 3 && strcmp(buf + n - 3, "/c2") == 0, "getcwd after the rename gave '%s'", buf);
	CALL(write_str("here", "cwd"));
	CALL(want_str("../c2/here", "cwd"));
	/* and removed under us */
	TRY(unlink("here"));
	TRY(rmdir("../c2"));
	WANT_ERR(open("new", O_CREAT | O_WRONLY, 0644), ENOENT);
	return 0;
}

/* ---- special files -------------------------------------------------------------- */

int check_special_files(void)
{
	struct stat st;
	char buf[8];
	int r, w;

	TRY(mkfifo("fifo", 0644));
	TRY(lstat("fifo", &st));
	WANT(S_ISFIFO(st.st_mode), "mkfifo made mode %o", st.st_mode);
	CALL(want_mode("fifo", M(0644)));
	r = TRY(open("fifo", O_RDONLY | O_NONBLOCK));
	w = TRY(open("fifo", O_WRONLY));
	TRY(write(w, "ping", 4));
	WANT(TRY(read(r, buf, sizeof(buf))) == 4 && memcmp(buf, "ping", 4) == 0, "the fifo passed the wrong bytes");
	TRY(close(w));
	TRY(close(r));
	TRY(mknod("reg", S_IFREG | 0600, 0));
	TRY(lstat("reg", &st));
	WANT(S_ISREG(st.st_mode) && st.st_size == 0, "mknod(S_IFREG) made mode %o", st.st_mode);
	if (geteuid() == 0) {
		if (opt.convfs) {
			/* documented: no device nodes in a history folder */
			WANT_ERR(mknod("null", S_IFCHR | 0666, makedev(1, 3)), EPERM);
			WANT_ERR(mknod("blk", S_IFBLK | 0666, makedev(7, 0)), EPERM);
		} else if (mknod("null", S_IFCHR | 0666, makedev(1, 3)) < 0 && errno != EPERM) {
			return bad("mknod(S_IFCHR): %s", en(errno));
		}
	}
	return 0;
}

int check_unix_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	char buf[8];
	int s, c, a;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "sock");
	s = TRY(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	TRY(bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	TRY(listen(s, 1));
	TRY(lstat("sock", &st));
	WANT(S_ISSOCK(st.st_mode), "bind made mode %o", st.st_mode);
	c = TRY(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	TRY(connect(c, (struct sockaddr *)&sa, sizeof(sa)));
	a = TRY(accept(s, NULL, NULL));
	TRY(write(c, "hi", 2));
	WANT(TRY(read(a, buf, sizeof(buf))) == 2 && memcmp(buf, "hi", 2) == 0, "the socket passed the wrong bytes");
	TRY(close(a));
	TRY(close(c));
	TRY(close(s));
	TRY(unlink("sock"));
	return 0;
}

int check_exec(void)
{
	static char elf[4 << 20];
	const char *script = "#!/bin/sh\necho posix-exec \"$1\"\n";
	char out[64];
	int p[2], status;
	size_t len;
	ssize_t n;
	pid_t pid;

	CALL(write_file("script", script, strlen(script), 0755));
	CALL(read_file("/bin/true", elf, sizeof(elf), &len));
	WANT(len < sizeof(elf), "/bin/true is too big");
	CALL(write_file("true", elf, len, 0755));
	TRY(pipe(p));
	fflush(NULL);
	pid = TRY(fork());
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		execl("./script", "script", "arg", (char *)NULL);
		_exit(127);
	}
	TRY(close(p[1]));
	n = TRY(read(p[0], out, sizeof(out) - 1));
	out[n] = '\0';
	TRY(close(p[0]));
	TRY(waitpid(pid, &status, 0));
	WANT(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strcmp(out, "posix-exec arg\n") == 0,
	     "a script in the folder: status %d, output '%s'", status, out);
	pid = TRY(fork());
	if (pid == 0) {
		execl("./true", "true", (char *)NULL);
		_exit(127);
	}
	TRY(waitpid(pid, &status, 0));
	WANT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a copy of /bin/true: status %d", status);
	/* no execute bit: EACCES */
	TRY(chmod("script", 0644));
	WANT_ERR(execl("./script", "script", (char *)NULL), EACCES);
	return 0;
}

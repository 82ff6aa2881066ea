/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_keep.c: the POSIX battery's check `keep`, which leaves files in
 * DIR/keep, and what `posix --verify` checks of them after a remount. The
 * harness is in posix.c.
 */
#include <limits.h>
#include <sys/mman.h>

#include "posix.h"

/* ---- what stays for a remount ---------------------------------------------------- */

#define KEEP_DATA_LEN 100000
#define KEEP_TAIL_OFF (1 << 20)

static int keep_mapped(void)
{
	unsigned char *p;
	int fd = TRY(open("mapped", O_CREAT | O_RDWR, 0644));

	TRY(ftruncate(fd, 8192));
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	WANT(p != MAP_FAILED, "mmap: %s", en(errno));
	for (int i = 0; i < 8192; i++)
		p[i] = (unsigned char)('m' + i % 13);
	TRY(msync(p, 8192, MS_SYNC));
	TRY(munmap(p, 8192));
	TRY(close(fd));
	return 0;
}

int check_keep(void)
{
	static unsigned char data[KEEP_DATA_LEN];
	struct timespec tv[2] = { { 1000000000, 250000000 }, { 1200000000, 500000000 } };
	int fd;

	fill_pattern(data, sizeof(data), 3);
	CALL(write_file("data", data, sizeof(data), 0640));
	fd = TRY(open("data", O_WRONLY));
	TRY(pwrite(fd, "tail", 4, KEEP_TAIL_OFF));
	TRY(fsync(fd));
	TRY(close(fd));
	TRY(chmod("data", 0640));
	TRY(link("data", "link"));
	TRY(symlink("data", "sym"));
	TRY(mkfifo("fifo", 0640));
	TRY(mkdir("dir", 0750));
	CALL(write_str("dir/inner", "inner\n"));
	CALL(write_str("times", "t"));
	TRY(utimensat(AT_FDCWD, "times", tv, 0));
	CALL(keep_mapped());
	CALL(append_two_writers("appended"));
	CALL(write_str("renamed.tmp", "renamed"));
	CALL(write_str("renamed", "old"));
	TRY(rename("renamed.tmp", "renamed"));
	CALL(write_str("setuid", "s"));
	TRY(chmod("setuid", 04750));
	TRY(close(TRY(open("empty", O_CREAT | O_WRONLY, 0600))));
	if (geteuid() == 0) {
		CALL(write_str("owned", "o"));
		TRY(chown("owned", 65534, 65534));
		TRY(chmod("owned", 0604));
	}
	return 0;
}

int verify_keep(void)
{
	static unsigned char data[KEEP_TAIL_OFF + 4];
	struct stat sd, sl, st;
	char buf[PATH_MAX];
	ssize_t n;

	fill_pattern(data, KEEP_DATA_LEN, 3);
	memcpy(data + KEEP_TAIL_OFF, "tail", 4);
	TRY(lstat("data", &sd));
	TRY(lstat("link", &sl));
	WANT(sd.st_ino == sl.st_ino && sd.st_nlink == 2 && sl.st_nlink == 2,
	     "data and link: inodes %llu and %llu, %lu and %lu links", (unsigned long long)sd.st_ino,
	     (unsigned long long)sl.st_ino, (unsigned long)sd.st_nlink, (unsigned long)sl.st_nlink);
	WANT((off_t)sd.st_blocks * 512 < KEEP_TAIL_OFF / 2, "the hole in 'data' is filled (%lld blocks)",
	     (long long)sd.st_blocks);
	CALL(want_mode("data", M(0640)));
	CALL(want_content("data", data, sizeof(data)));
	CALL(want_content("link", data, sizeof(data)));
	n = TRY(readlink("sym", buf, sizeof(buf)));
	WANT(n == 4 && memcmp(buf, "data", 4) == 0, "readlink of sym: '%.*s'", (int)n, buf);
	TRY(lstat("fifo", &st));
	WANT(S_ISFIFO(st.st_mode), "fifo is mode %o", st.st_mode);
	CALL(want_mode("fifo", M(0640)));
	CALL(want_mode("dir", M(0750)));
	CALL(want_nlink("dir", 2));
	CALL(want_str("dir/inner", "inner\n"));
	TRY(lstat("times", &st));
	WANT(ts_eq(st.st_atim, 1000000000, 250000000) && ts_eq(st.st_mtim, 1200000000, 500000000),
	     "times: atime %lld.%09ld, mtime %lld.%09ld", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	{
		unsigned char m[8192];

		for (int i = 0; i < 8192; i++)
			m[i] = (unsigned char)('m' + i % 13);
		CALL(want_content("mapped", m, sizeof(m)));
	}
	{
		static char log[2 * APPEND_RECORDS * APPEND_RECLEN];
		size_t got;

		CALL(read_file("appended", log, sizeof(log), &got));
		WANT(got == sizeof(log), "appended has %zu bytes", got);
	}
	CALL(want_str("renamed", "renamed"));
	CALL(want_gone("renamed.tmp"));
	CALL(want_mode("setuid", M(04750)));
	TRY(lstat("empty", &st));
	WANT(st.st_size == 0, "empty has %lld bytes", (long long)st.st_size);
	if (geteuid() == 0) {
		TRY(lstat("owned", &st));
		WANT(st.st_uid == 65534 && st.st_gid == 65534, "owned is owned by %d:%d", (int)st.st_uid, (int)st.st_gid);
		CALL(want_mode("owned", M(0604)));
	}
	return 0;
}

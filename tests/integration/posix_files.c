/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_files.c: the POSIX battery's checks of a file's bytes: open flags,
 * O_APPEND, reads and writes at offsets and holes, truncate, fallocate and
 * copy_file_range. The harness is in posix.c.
 */
#include <stdint.h>
#include <sys/wait.h>

#include "posix.h"

/* ---- open flags -------------------------------------------------------------- */

int check_open_creat(void)
{
	struct stat st;
	char buf[16];
	int fd;

	fd = TRY(open("f", O_CREAT | O_WRONLY, 0644));
	TRY(fstat(fd, &st));
	WANT(S_ISREG(st.st_mode), "a new file is not regular (mode %o)", st.st_mode);
	WANT(st.st_size == 0, "a new file has size %lld", (long long)st.st_size);
	WANT((st.st_mode & 07777) == M(0644), "a new file has mode %04o, expected %04o", st.st_mode & 07777, M(0644));
	WANT(st.st_uid == geteuid() && st.st_gid == getegid(), "a new file is owned by %d:%d, not %d:%d",
	     (int)st.st_uid, (int)st.st_gid, (int)geteuid(), (int)getegid());
	WANT(st.st_nlink == 1, "a new file has %lu links", (unsigned long)st.st_nlink);
	TRY(close(fd));
	/* O_CREAT on an existing file opens it as it is */
	CALL(write_file("g", "hello", 5, 0600));
	fd = TRY(open("g", O_CREAT | O_RDWR, 0644));
	WANT(TRY(read(fd, buf, sizeof(buf))) == 5 && memcmp(buf, "hello", 5) == 0, "O_CREAT changed an existing file");
	TRY(close(fd));
	CALL(want_mode("g", M(0600)));
	/* the creator writes through the descriptor whatever the mode */
	fd = TRY(open("ro", O_CREAT | O_WRONLY, 0444));
	WANT(TRY(write(fd, "x", 1)) == 1, "short write");
	TRY(close(fd));
	CALL(want_mode("ro", M(0444)));
	CALL(want_str("ro", "x"));
	return 0;
}

/* O_EXCL: exactly one of 8 racing processes creates the file. */
static int excl_racer(void *arg)
{
	int fd = open("race", O_CREAT | O_EXCL | O_WRONLY, 0644);

	if (fd < 0 && errno != EEXIST)
		return bad("open(race, O_EXCL): %s", en(errno));
	if (fd >= 0) {
		char c = (char)('0' + (int)(intptr_t)arg);

		if (write(fd, &c, 1) != 1)
			return bad("write: %s", en(errno));
		TRY(close(fd));
	}
	return 0;
}

int check_open_excl(void)
{
	pid_t pids[8];
	struct stat st;
	int fd, status;

	CALL(write_str("f", "data"));
	WANT_ERR(open("f", O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
	CALL(want_str("f", "data"));
	TRY(symlink("nowhere", "dangling"));
	WANT_ERR(open("dangling", O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
	CALL(want_gone("nowhere"));
	fd = TRY(open("new", O_CREAT | O_EXCL | O_WRONLY, 0600));
	TRY(close(fd));
	WANT_ERR(open("new", O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
	fflush(NULL);
	for (int i = 0; i < 8; i++) {
		pids[i] = TRY(fork());
		if (pids[i] == 0)
			_exit(excl_racer((void *)(intptr_t)i) < 0);
	}
	for (int i = 0; i < 8; i++) {
		TRY(waitpid(pids[i], &status, 0));
		WANT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "an O_EXCL racer failed");
	}
	TRY(stat("race", &st));
	WANT(st.st_size == 1, "racing O_EXCL creators wrote %lld bytes, not one", (long long)st.st_size);
	return 0;
}

int check_open_trunc(void)
{
	struct stat st;
	int fd;

	CALL(write_str("f", "0123456789"));
	fd = TRY(open("f", O_WRONLY | O_TRUNC));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 0, "size %lld after O_TRUNC", (long long)st.st_size);
	TRY(write(fd, "ab", 2));
	TRY(close(fd));
	CALL(want_str("f", "ab"));
	/* O_TRUNC of an empty file and of a file opened by another descriptor */
	fd = TRY(open("f", O_RDONLY));
	TRY(close(TRY(open("f", O_WRONLY | O_TRUNC))));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 0, "another descriptor sees size %lld after O_TRUNC", (long long)st.st_size);
	TRY(close(fd));
	return 0;
}

int check_open_access_modes(void)
{
	char buf[8];
	int fd;

	CALL(write_str("f", "data"));
	fd = TRY(open("f", O_RDONLY));
	WANT_ERR(write(fd, "x", 1), EBADF);
	TRY(close(fd));
	CALL(want_str("f", "data"));
	fd = TRY(open("f", O_WRONLY));
	WANT_ERR(read(fd, buf, sizeof(buf)), EBADF);
	TRY(close(fd));
	fd = TRY(open("f", O_RDWR));
	TRY(write(fd, "D", 1));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 4 && memcmp(buf, "Data", 4) == 0, "O_RDWR read back the wrong bytes");
	TRY(close(fd));
	return 0;
}

int check_open_directory(void)
{
	char buf[8];
	int fd;

	CALL(write_str("f", "x"));
	TRY(mkdir("d", 0755));
	WANT_ERR(open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
	fd = TRY(open("d", O_RDONLY | O_DIRECTORY));
	WANT_ERR(read(fd, buf, sizeof(buf)), EISDIR);
	TRY(close(fd));
	WANT_ERR(open("d", O_WRONLY), EISDIR);
	WANT_ERR(open("d", O_RDWR), EISDIR);
	WANT_ERR(open("d", O_CREAT | O_WRONLY, 0644), EISDIR);
	WANT_ERR(open("f/x", O_RDONLY), ENOTDIR);
	WANT_ERR(open("missing", O_RDONLY), ENOENT);
	WANT_ERR(open("missing/x", O_CREAT | O_WRONLY, 0644), ENOENT);
	return 0;
}

int check_open_nofollow(void)
{
	struct stat st;
	char buf[8];
	int fd;

	CALL(write_str("f", "target"));
	TRY(symlink("f", "l"));
	WANT_ERR(open("l", O_RDONLY | O_NOFOLLOW), ELOOP);
	fd = TRY(open("l", O_PATH | O_NOFOLLOW));
	TRY(fstat(fd, &st));
	WANT(S_ISLNK(st.st_mode), "O_PATH|O_NOFOLLOW of a symlink is not a symlink");
	TRY(close(fd));
	fd = TRY(open("l", O_RDONLY));
	WANT(TRY(read(fd, buf, sizeof(buf))) == 6 && memcmp(buf, "target", 6) == 0, "a symlink did not lead to its target");
	TRY(close(fd));
	TRY(symlink("loop2", "loop1"));
	TRY(symlink("loop1", "loop2"));
	WANT_ERR(open("loop1", O_RDONLY), ELOOP);
	return 0;
}

int check_open_tmpfile(void)
{
	char proc[64];
	struct stat st;
	int fd;

	if (opt.convfs) {
		/* documented: libfuse 3.14 has no tmpfile operation */
		WANT_ERR(open(".", O_TMPFILE | O_RDWR, 0600), EOPNOTSUPP);
		return 0;
	}
	fd = TRY(open(".", O_TMPFILE | O_RDWR, 0600));
	TRY(write(fd, "tmp", 3));
	TRY(fstat(fd, &st));
	WANT(st.st_nlink == 0, "an O_TMPFILE file has %lu links", (unsigned long)st.st_nlink);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	TRY(linkat(AT_FDCWD, proc, AT_FDCWD, "linked", AT_SYMLINK_FOLLOW));
	TRY(fstat(fd, &st));
	WANT(st.st_nlink == 1, "a linked O_TMPFILE file has %lu links", (unsigned long)st.st_nlink);
	TRY(close(fd));
	CALL(want_str("linked", "tmp"));
	return 0;
}

/* ---- O_APPEND ---------------------------------------------------------------- */

int check_append(void)
{
	int fd, fd2, fl;

	fd = TRY(open("f", O_CREAT | O_WRONLY | O_APPEND, 0644));
	TRY(write(fd, "abc", 3));
	TRY(lseek(fd, 0, SEEK_SET));
	TRY(write(fd, "def", 3));
	WANT(TRY(lseek(fd, 0, SEEK_CUR)) == 6, "the offset after an append is not the end");
	CALL(want_str("f", "abcdef"));
	/* Linux: pwrite on an O_APPEND descriptor appends whatever the offset */
	TRY(pwrite(fd, "g", 1, 0));
	CALL(want_str("f", "abcdefg"));
	/* a descriptor without O_APPEND writes where it is */
	fd2 = TRY(open("f", O_WRONLY));
	TRY(write(fd2, "X", 1));
	CALL(want_str("f", "Xbcdefg"));
	/* an append after that still lands at the end */
	TRY(write(fd, "h", 1));
	CALL(want_str("f", "Xbcdefgh"));
	/* O_APPEND turned off with fcntl: writes go where asked */
	fl = TRY(fcntl(fd, F_GETFL));
	TRY(fcntl(fd, F_SETFL, fl & ~O_APPEND));
	TRY(pwrite(fd, "Y", 1, 1));
	CALL(want_str("f", "XYcdefgh"));
	/* and turned on for a descriptor opened without it */
	fl = TRY(fcntl(fd2, F_GETFL));
	TRY(fcntl(fd2, F_SETFL, fl | O_APPEND));
	TRY(lseek(fd2, 0, SEEK_SET));
	TRY(write(fd2, "i", 1));
	CALL(want_str("f", "XYcdefghi"));
	TRY(close(fd));
	TRY(close(fd2));
	return 0;
}

/* One O_APPEND writer: APPEND_RECORDS records of APPEND_RECLEN bytes. */
static int append_writer(const char *path, int who)
{
	int fd = TRY(open(path, O_WRONLY | O_APPEND));

	for (int i = 0; i < APPEND_RECORDS; i++) {
		char rec[APPEND_RECLEN + 1];

		snprintf(rec, sizeof(rec), "writer%d record%05d ............", who, i);
		rec[APPEND_RECLEN - 1] = '\n';
		if (TRY(write(fd, rec, APPEND_RECLEN)) != APPEND_RECLEN)
			return bad("a short append");
	}
	TRY(close(fd));
	return 0;
}

/* Two processes appending at once: every record whole, none lost, each writer's in order. */
int append_two_writers(const char *path)
{
	static char buf[2 * APPEND_RECORDS * APPEND_RECLEN + 1];
	int next[2] = { 0, 0 }, status;
	pid_t pids[2];
	size_t got;

	TRY(close(TRY(open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644))));
	fflush(NULL);
	for (int w = 0; w < 2; w++) {
		pids[w] = TRY(fork());
		if (pids[w] == 0)
			_exit(append_writer(path, w) < 0);
	}
	for (int w = 0; w < 2; w++) {
		TRY(waitpid(pids[w], &status, 0));
		WANT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "an O_APPEND writer failed");
	}
	CALL(read_file(path, buf, sizeof(buf), &got));
	WANT(got == 2 * APPEND_RECORDS * APPEND_RECLEN, "two appending writers left %zu bytes, not %d", got,
	     2 * APPEND_RECORDS * APPEND_RECLEN);
	for (size_t off = 0; off < got; off += APPEND_RECLEN) {
		int w, i;

		WANT(sscanf(buf + off, "writer%d record%d", &w, &i) == 2 && (w == 0 || w == 1) &&
			     buf[off + APPEND_RECLEN - 1] == '\n',
		     "a torn record at byte %zu", off);
		WANT(i == next[w], "writer %d's record %d is at byte %zu; expected its record %d", w, i, off, next[w]);
		next[w]++;
	}
	return 0;
}

int check_append_concurrent(void)
{
	int fd1, fd2;

	CALL(append_two_writers("log"));
	/* two descriptors of one process, alternating */
	fd1 = TRY(open("alt", O_CREAT | O_WRONLY | O_APPEND, 0644));
	fd2 = TRY(open("alt", O_WRONLY | O_APPEND));
	for (int i = 0; i < 100; i++) {
		TRY(write(fd1, "A", 1));
		TRY(write(fd2, "B", 1));
	}
	TRY(close(fd1));
	TRY(close(fd2));
	{
		char want[200];

		for (int i = 0; i < 200; i++)
			want[i] = i % 2 ? 'B' : 'A';
		CALL(want_content("alt", want, sizeof(want)));
	}
	return 0;
}

/* ---- reads and writes at offsets, holes ---------------------------------------- */

int check_pread_pwrite(void)
{
	char buf[16];
	struct stat st;
	int fd, fd2;

	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(write(fd, "start", 5));
	TRY(pwrite(fd, "four", 4, 4096));
	TRY(pwrite(fd, "far", 3, 100000));
	WANT(TRY(lseek(fd, 0, SEEK_CUR)) == 5, "pwrite moved the offset");
	TRY(write(fd, "+", 1));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 100003, "size %lld, expected 100003", (long long)st.st_size);
	WANT(TRY(pread(fd, buf, 6, 0)) == 6 && memcmp(buf, "start+", 6) == 0, "pread at 0");
	WANT(TRY(pread(fd, buf, 4, 4096)) == 4 && memcmp(buf, "four", 4) == 0, "pread at 4096");
	WANT(TRY(pread(fd, buf, 16, 99999)) == 4 && memcmp(buf, "\0far", 4) == 0, "pread across the end");
	WANT(TRY(pread(fd, buf, 16, 200000)) == 0, "pread past the end returned bytes");
	WANT(TRY(pread(fd, buf, 4, 10)) == 4 && memcmp(buf, "\0\0\0\0", 4) == 0, "the gap does not read as zeros");
	/* what one descriptor wrote, another reads at once */
	fd2 = TRY(open("f", O_RDONLY));
	TRY(pwrite(fd, "NEW", 3, 4096));
	WANT(TRY(pread(fd2, buf, 4, 4096)) == 4 && memcmp(buf, "NEWr", 4) == 0, "another descriptor read stale bytes");
	TRY(close(fd2));
	TRY(close(fd));
	return 0;
}

int check_sparse(void)
{
	static char buf[65536];
	const off_t far = (off_t)16 << 20, huge = (off_t)5 << 30;
	struct stat st;
	off_t o;
	int fd;

	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(pwrite(fd, "x", 1, far));
	TRY(fstat(fd, &st));
	WANT(st.st_size == far + 1, "size %lld after a write at 16 MiB", (long long)st.st_size);
	WANT((off_t)st.st_blocks * 512 < far / 4, "a 16 MiB hole takes %lld blocks", (long long)st.st_blocks);
	WANT(TRY(pread(fd, buf, sizeof(buf), far / 2)) == (ssize_t)sizeof(buf), "short read in the hole");
	for (size_t i = 0; i < sizeof(buf); i++)
		WANT(buf[i] == 0, "the hole reads %d at %zu", buf[i], i);
	/* SEEK_DATA/SEEK_HOLE: "all data" is a valid answer, a wrong offset is not */
	o = TRY(lseek(fd, 0, SEEK_HOLE));
	WANT(o >= 0 && o <= far + 1, "SEEK_HOLE from 0 gave %lld", (long long)o);
	o = TRY(lseek(fd, far, SEEK_DATA));
	WANT(o == far, "SEEK_DATA from the last byte gave %lld", (long long)o);
	WANT_ERR(lseek(fd, far + 1, SEEK_DATA), ENXIO);
	/* past 4 GiB */
	TRY(pwrite(fd, "y", 1, huge));
	TRY(fstat(fd, &st));
	WANT(st.st_size == huge + 1, "size %lld after a write at 5 GiB", (long long)st.st_size);
	WANT(TRY(pread(fd, buf, 2, huge)) == 1 && buf[0] == 'y', "the byte at 5 GiB");
	TRY(close(fd));
	return 0;
}

/* ---- truncate ------------------------------------------------------------------ */

int check_truncate(void)
{
	char buf[2048];
	struct stat st;
	int fd, fd2;

	CALL(write_str("f", "0123456789"));
	TRY(truncate("f", 1000));
	TRY(stat("f", &st));
	WANT(st.st_size == 1000, "truncate to grow: size %lld", (long long)st.st_size);
	fd = TRY(open("f", O_RDWR));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == 1000, "short read after growing");
	WANT(memcmp(buf, "0123456789", 10) == 0, "growing changed the old bytes");
	for (int i = 10; i < 1000; i++)
		WANT(buf[i] == 0, "growing left byte %d = %d, not 0", i, buf[i]);
	fd2 = TRY(open("f", O_RDONLY));
	TRY(ftruncate(fd, 4));
	TRY(fstat(fd2, &st));
	WANT(st.st_size == 4, "another descriptor sees size %lld after ftruncate", (long long)st.st_size);
	WANT(TRY(pread(fd2, buf, sizeof(buf), 0)) == 4 && memcmp(buf, "0123", 4) == 0, "shrinking kept the wrong bytes");
	/* grown again, the cut part reads as zeros, not as the old bytes */
	TRY(ftruncate(fd, 10));
	WANT(TRY(pread(fd2, buf, sizeof(buf), 0)) == 10 && memcmp(buf, "0123\0\0\0\0\0\0", 10) == 0,
	     "bytes cut by a shrink came back when it grew again");
	TRY(ftruncate(fd, 0));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 0, "ftruncate to 0: size %lld", (long long)st.st_size);
	TRY(close(fd2));
	TRY(close(fd));
	fd = TRY(open("f", O_RDONLY));
	WANT_ERR2(ftruncate(fd, 0), EINVAL, EBADF);
	TRY(close(fd));
	TRY(mkdir("d", 0755));
	WANT_ERR(truncate("d", 0), EISDIR);
	WANT_ERR(truncate("f", -1), EINVAL);
	WANT_ERR(truncate("missing", 0), ENOENT);
	/*
	 * Past the largest file the filesystem holds (ext4: 16 TiB): EFBIG
	 * (or EINVAL), the size unchanged, as pjdfstest's truncate/12 and
	 * ftruncate/12 check; a filesystem that holds it may grow the file.
	 * The caller's business: nothing in the daemon's log (posix.sh).
	 */
	if (truncate("f", 999999999999999LL) == 0) {
		TRY(truncate("f", 0));
	} else {
		WANT(errno == EFBIG || errno == EINVAL, "truncate past the largest file: %s", en(errno));
		TRY(stat("f", &st));
		WANT(st.st_size == 0, "a refused truncate left size %lld", (long long)st.st_size);
	}
	return 0;
}

/* ---- fallocate, copy_file_range ---------------------------------------------------- */

int check_fallocate(void)
{
	static unsigned char buf[65536];
	struct stat st;
	int fd, r;

	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(fallocate(fd, 0, 0, 1 << 20));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 1 << 20, "fallocate: size %lld", (long long)st.st_size);
	WANT(st.st_blocks * 512 >= 1 << 20, "fallocate: only %lld blocks", (long long)st.st_blocks);
	WANT(TRY(pread(fd, buf, sizeof(buf), 4096)) == (ssize_t)sizeof(buf), "short read");
	for (size_t i = 0; i < sizeof(buf); i++)
		WANT(buf[i] == 0, "allocated space reads %d", buf[i]);
	TRY(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 1 << 20, "FALLOC_FL_KEEP_SIZE changed the size to %lld", (long long)st.st_size);
	fill_pattern(buf, sizeof(buf), 9);
	TRY(pwrite(fd, buf, sizeof(buf), 0));
	TRY(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192));
	WANT(TRY(pread(fd, buf, sizeof(buf), 0)) == (ssize_t)sizeof(buf), "short read");
	for (size_t i = 0; i < sizeof(buf); i++) {
		unsigned char want = (i >= 4096 && i < 12288) ? 0 : (unsigned char)((i * 7 + 9) & 0xff);

		WANT(buf[i] == want, "after punching a hole byte %zu is %d, not %d", i, buf[i], want);
	}
	r = posix_fallocate(fd, 0, 3 << 20);
	WANT(r == 0, "posix_fallocate: %s", en(r));
	TRY(fstat(fd, &st));
	WANT(st.st_size == 3 << 20, "posix_fallocate: size %lld", (long long)st.st_size);
	TRY(close(fd));
	return 0;
}

int check_copy_file_range(void)
{
	static unsigned char src[200000], got[200000];
	loff_t in = 1000, out = 0;
	size_t done = 0;
	int fi, fo;

	fill_pattern(src, sizeof(src), 1);
	CALL(write_file("src", src, sizeof(src), 0644));
	fi = TRY(open("src", O_RDONLY));
	fo = TRY(open("dst", O_CREAT | O_RDWR, 0644));
	while (done < 100000) {
		ssize_t n = TRY(copy_file_range(fi, &in, fo, &out, 100000 - done, 0));

		WANT(n > 0, "copy_file_range copied nothing at %zu", done);
		done += (size_t)n;
	}
	WANT(in == 101000 && out == 100000, "copy_file_range left offsets %lld, %lld", (long long)in, (long long)out);
	WANT(TRY(lseek(fi, 0, SEEK_CUR)) == 0, "copy_file_range with offsets moved the file position");
	WANT(TRY(pread(fo, got, sizeof(got), 0)) == 100000 && memcmp(got, src + 1000, 100000) == 0,
	     "copy_file_range copied the wrong bytes");
	/* without offsets: the file positions move */
	TRY(lseek(fi, 199990, SEEK_SET));
	TRY(lseek(fo, 0, SEEK_END));
	WANT(TRY(copy_file_range(fi, NULL, fo, NULL, 100, 0)) == 10, "copy_file_range at the end copied more than was left");
	WANT(TRY(lseek(fo, 0, SEEK_CUR)) == 100010, "copy_file_range did not move the output position");
	WANT(TRY(copy_file_range(fi, NULL, fo, NULL, 100, 0)) == 0, "copy_file_range past the end copied bytes");
	TRY(close(fi));
	TRY(close(fo));
	return 0;
}

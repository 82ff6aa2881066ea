/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_commit.c: a failed commit changes nothing, the writer's merge base
 * included. fs/commit/commit.c and fs/commit/bases.c with the store, on a store file of
 * their own and a backing tree beside it, no FUSE.
 *
 * A writer saves [a, b]. Then one failure at a time (faults.h): every
 * SQLite I/O call and allocation, and every pread, pwrite and
 * copy_file_range of the commit path, is made to fail in turn while the
 * writer saves [a, b, c], each way a save reaches the store: bytes in memory
 * (a small file), a staging file of the daemon's own (an in-place save), a
 * writer's temp file renamed over the doc (a large one, read by the store
 * once and its rest copied). After each: if the save failed, the doc reads
 * [a, b] as before, the revision log has no new revision, the writer's base
 * is the one it had, and the store is sound; if the fault did not stop it
 * (a lock retried), the doc reads [a, b, c]. Either way the writer's next
 * save, [a], stores [a]: b goes, since the writer had written it. (Before
 * the base was leased, a failed commit dropped it, and that save kept b.)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "fs/fs.h"
#include "fs/ops/ops_internal.h"
#include "store/store.h"
#include "store/store_ops.h"
#include "store/util.h"
#include "tests/unit/faults.h"

/* What fs/commit/commit.c takes from the rest of the daemon. */
void backing_check(struct fs *fs)
{
	(void)fs;
}

#define DOC "tasks/1795306269021/ui_messages.json"

enum way {
	WAY_MEMORY,  /* commit_bytes(): a rewrite of the view's JSON Lines, converted */
	WAY_STAGED,  /* commit_fd() of a staging file: an in-place save */
	WAY_RENAMED, /* commit_fd() of a writer's temp file of 17 MB: temp + rename */
};

static const char *const way_names[] = { "in memory", "staged", "renamed (17 MB)" };

struct world {
	char dir[256], store_path[300];
	struct fs fs;
	struct fs_proc proc;
	struct store_who who;
	char *a, *b, *c; /* the three messages */
};

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

/* A message of about size bytes: {"ts":N,"type":"say","say":"text","text":"xxx..."}. */
static char *message(int ts, size_t size)
{
	char *m = malloc(size + 100);
	int n;

	assert_non_null(m);
	n = snprintf(m, 100, "{\"ts\":%d,\"type\":\"say\",\"say\":\"text\",\"text\":\"", ts);
	memset(m + n, 'a' + ts % 26, size);
	memcpy(m + n + size, "\"}", 3);
	return m;
}

static void world_open(struct world *w, enum way way)
{
	const char *tmp = getenv("TMPDIR");
	/* Renamed: larger than COMMIT_INLINE, and with elements over ELEM_INLINE (1 MiB). */
	size_t big = way == WAY_RENAMED ? (size_t)6 << 20 : 100;

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s/convfs-commit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(w->dir));
	snprintf(w->store_path, sizeof(w->store_path), "%s/store.db", w->dir);
	w->fs.root_fd = w->fs.lock_fd = -1;
	assert_int_equal(store_open(w->store_path, 0, &w->fs.store), 0);
	assert_int_equal(plain_open_root(w->store_path, &w->fs.backing_path, &w->fs.root_fd), 0);
	assert_int_equal(bases_new(&w->fs.bases), 0);
	w->fs.uid = getuid();
	w->fs.gid = getgid();
	w->proc = (struct fs_proc){ .tgid = 4242, .start = 7, .comm = "code" };
	w->who = (struct store_who){ .pid = 4242, .comm = "code" };
	w->a = message(1, big);
	w->b = message(2, big);
	w->c = message(3, big);
}

static void world_close(struct world *w)
{
	bases_free(w->fs.bases);
	store_free(w->fs.store);
	if (w->fs.root_fd >= 0)
		close(w->fs.root_fd);
	free(w->fs.backing_path);
	free(w->a), free(w->b), free(w->c);
	nftw(w->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* "[" m0 "," m1 ... "]" of the n messages given. */
static char *array_of(int n, ...)
{
	_cleanup_sb_ struct sb s = SB_INIT;
	va_list ap;

	assert_int_equal(sb_add(&s, "[", 1), 0);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *m = va_arg(ap, const char *);

		if (i)
			assert_int_equal(sb_add(&s, ",", 1), 0);
		assert_int_equal(sb_adds(&s, m), 0);
	}
	va_end(ap);
	assert_int_equal(sb_add(&s, "]", 1), 0);
	return sb_detach(&s, NULL);
}

/* Writes text into a new file: in the backing tree, unnamed (staged), or a plain temp file. */
static int file_with(struct world *w, bool own, const char *text)
{
	size_t len = strlen(text), done = 0;
	int fd;

	if (own) {
		fd = fs_private_file(&w->fs);
	} else {
		char p[400];

		snprintf(p, sizeof(p), "%s/ui_messages.json.tmp", w->dir);
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		unlink(p);
	}
	assert_true(fd >= 0);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		assert_true(n > 0);
		done += (size_t)n;
	}
	return fd;
}

/* The writer saves text, the way given. Returns what the commit returned. */
static int save(struct world *w, enum way way, const char *text)
{
	struct commit_req req = { .doc = DOC, .base_path = DOC, .kind = "rename", .proc = &w->proc, .who = &w->who };
	int fd, r;

	if (way == WAY_MEMORY)
		return commit_bytes(&w->fs, &req, text, strlen(text));
	fd = file_with(w, way == WAY_STAGED, text);
	r = commit_fd(&w->fs, &req, fd, way == WAY_STAGED);
	close(fd);
	return r;
}

static char *doc_text(struct world *w)
{
	struct store_snap *snap = NULL;
	_cleanup_sb_ struct sb s = SB_INIT;

	assert_int_equal(store_snap_open(w->fs.store, DOC, &snap), 0);
	for (;;) {
		ssize_t n;

		assert_int_equal(sb_grow(&s, (size_t)1 << 20), 0);
		n = store_snap_read(w->fs.store, snap, s.buf + s.len, (size_t)1 << 20, (off_t)s.len);
		assert_true(n >= 0);
		if (n == 0)
			break;
		s.len += (size_t)n;
		s.buf[s.len] = '\0';
	}
	store_snap_free(snap);
	return s.len ? sb_detach(&s, NULL) : strdup("");
}

static void assert_doc_is(struct world *w, const char *want, const char *what)
{
	char *got = doc_text(w);

	if (strlen(got) != strlen(want))
		fail_msg("%s: the doc reads %zu bytes, not the %zu expected", what, strlen(got), strlen(want));
	if (strcmp(got, want) != 0) {
		size_t at = 0;

		while (got[at] == want[at])
			at++;
		fail_msg("%s: the doc reads other bytes than those written, from byte %zu", what, at);
	}
	free(got);
}

static int64_t revisions(struct world *w)
{
	sqlite3 *db;
	sqlite3_stmt *stmt;
	int64_t n = -1;

	assert_int_equal(sqlite3_open_v2(w->store_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM revisions", -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return n;
}

/* The revision of the writer's base, left in the table; -1: none. */
static int64_t base_rev(struct world *w)
{
	struct store_base *b = bases_take(w->fs.bases, &w->proc, DOC);
	int64_t rev = b ? store_base_rev(b) : -1;

	bases_put(w->fs.bases, &w->proc, DOC, b);
	return rev;
}

static int count_problem(void *ctx, const char *line)
{
	(void)line;
	++*(int *)ctx;
	return 0;
}

/*
 * One round on w, whose doc reads [a] and whose writer last wrote it: the
 * writer saves [a, b], then [a, b, c] with a failure at the nth call of
 * kind, then [a]. False once the save made fewer calls than n.
 */
static bool round_with_fault(struct world *w, enum way way, enum fault_kind kind, long n)
{
	_cleanup_free_ char *ab = array_of(2, w->a, w->b), *abc = array_of(3, w->a, w->b, w->c);
	_cleanup_free_ char *a_alone = array_of(1, w->a);
	int64_t revs, rev;
	int r, problems = 0;
	bool fired;

	assert_int_equal(save(w, way, ab), 0);
	revs = revisions(w);
	rev = base_rev(w);
	assert_true(rev > 0);

	fault_arm(kind, n);
	r = save(w, way, abc);
	fired = fault_disarm();
	if (fired && r < 0) {
		char what[128];

		snprintf(what, sizeof(what), "%s, %s fault at call %ld (%s)", way_names[way], fault_name(kind), n,
			 strerror(-r));
		assert_doc_is(w, ab, what);
		if (revisions(w) != revs)
			fail_msg("%s: the revision log went from %lld to %lld", what, (long long)revs,
				 (long long)revisions(w));
		if (base_rev(w) != rev)
			fail_msg("%s: the writer's base is at %lld, not %lld", what, (long long)base_rev(w),
				 (long long)rev);
	} else {
		assert_int_equal(r, 0);
		assert_doc_is(w, abc, "a save the fault did not stop");
	}
	assert_int_equal(save(w, way, a_alone), 0);
	assert_doc_is(w, a_alone, "the next save, [a]");
	assert_int_equal(store_check(w->fs.store, count_problem, NULL, &problems), 0);
	assert_int_equal(problems, 0);
	return fired;
}

/*
 * Every call of kind, one at a time, while saving the way given; a large
 * save makes thousands of SQLite calls, so there at most about `rounds`
 * calls spread over them are tried. CONVFS_TEST_ONE=N tries call N alone.
 */
static void every_call(enum way way, enum fault_kind kind, long rounds)
{
	_cleanup_free_ char *a_alone = NULL;
	const char *one = getenv("CONVFS_TEST_ONE");
	struct world w;
	long n, calls, stride, tried = 0;

	world_open(&w, way);
	a_alone = array_of(1, w.a);
	assert_int_equal(save(&w, way, a_alone), 0);
	/* A round that fails nothing counts the calls. */
	assert_false(round_with_fault(&w, way, kind, LONG_MAX));
	fault_arm(kind, LONG_MAX);
	fault_disarm();
	calls = 0;
	{
		_cleanup_free_ char *ab = array_of(2, w.a, w.b), *abc = array_of(3, w.a, w.b, w.c);

		assert_int_equal(save(&w, way, ab), 0);
		fault_arm(kind, LONG_MAX);
		assert_int_equal(save(&w, way, abc), 0);
		calls = fault_calls();
		fault_disarm();
		assert_int_equal(save(&w, way, a_alone), 0);
	}
	stride = rounds > 0 && calls > rounds ? calls / rounds : 1;
	if (one) {
		round_with_fault(&w, way, kind, atol(one));
		tried = 1;
	} else {
		for (n = 1; round_with_fault(&w, way, kind, n); n += stride)
			tried++;
	}
	print_message("%s: %s: %ld of %ld calls failed in turn\n", way_names[way], fault_name(kind), tried, calls);
	world_close(&w);
}

static void test_memory(void **state)
{
	(void)state;
	every_call(WAY_MEMORY, FAULT_SQLITE_IO, 0);
	every_call(WAY_MEMORY, FAULT_SQLITE_MALLOC, 0);
}

static void test_staged(void **state)
{
	(void)state;
	every_call(WAY_STAGED, FAULT_SQLITE_IO, 0);
	every_call(WAY_STAGED, FAULT_SQLITE_MALLOC, 0);
	every_call(WAY_STAGED, FAULT_PREAD, 0);
	every_call(WAY_STAGED, FAULT_PWRITE, 0);
	every_call(WAY_STAGED, FAULT_COPY_RANGE, 0);
}

/* Three saves of 6 to 18 MB a round: spread over the calls. */
static void test_renamed(void **state)
{
	(void)state;
	every_call(WAY_RENAMED, FAULT_PREAD, 30);
	every_call(WAY_RENAMED, FAULT_PWRITE, 30);
	every_call(WAY_RENAMED, FAULT_COPY_RANGE, 30);
	every_call(WAY_RENAMED, FAULT_SQLITE_IO, 30);
	every_call(WAY_RENAMED, FAULT_SQLITE_MALLOC, 30);
}

/*
 * A batch whose commit fails is rolled back whole, and the revision it made
 * comes again, with other rows. What a read made inside the batch kept of
 * that revision's bytes (a doc read whole twice, store/read.c) must go with
 * it: the doc reads [a, b] in the batch, the batch's COMMIT fails at its nth
 * SQLite I/O call, and the next commit, [a, c], must read as [a, c], not as
 * the kept [a, b]. Every call of that COMMIT in turn.
 */
static void test_batch_rolled_back(void **state)
{
	long n, tried = 0;

	(void)state;
	for (n = 1;; n++) {
		_cleanup_free_ char *a_alone = NULL, *ab = NULL, *ac = NULL;
		struct store_snap *snap = NULL;
		struct world w;
		int64_t rev_ab;
		bool fired;
		int r;

		world_open(&w, WAY_MEMORY);
		a_alone = array_of(1, w.a);
		ab = array_of(2, w.a, w.b);
		ac = array_of(2, w.a, w.c);
		assert_int_equal(store_doc_commit(w.fs.store, DOC, a_alone, strlen(a_alone), &w.who, "write"), 0);
		assert_int_equal(store_batch_begin(w.fs.store), 0);
		assert_int_equal(store_doc_commit(w.fs.store, DOC, ab, strlen(ab), &w.who, "write"), 0);
		assert_int_equal(store_snap_open(w.fs.store, DOC, &snap), 0);
		rev_ab = store_snap_rev(snap);
		store_snap_free(snap);
		assert_doc_is(&w, ab, "in the batch");
		assert_doc_is(&w, ab, "in the batch, again");

		fault_arm(FAULT_SQLITE_IO, n);
		r = store_batch_end(w.fs.store);
		fired = fault_disarm();
		if (!fired) {
			assert_int_equal(r, 0);
			world_close(&w);
			break;
		}
		if (r == 0) { /* a lock retried: committed after all */
			world_close(&w);
			continue;
		}
		tried++;
		assert_int_equal(store_doc_commit(w.fs.store, DOC, ac, strlen(ac), &w.who, "write"), 0);
		assert_int_equal(store_snap_open(w.fs.store, DOC, &snap), 0);
		if (store_snap_rev(snap) != rev_ab)
			print_message("call %ld: the revision did not come again (%lld, not %lld)\n", n,
				      (long long)store_snap_rev(snap), (long long)rev_ab);
		store_snap_free(snap);
		assert_doc_is(&w, ac, "the commit after the rolled-back batch");
		assert_int_equal(store_doc_commit(w.fs.store, DOC, a_alone, strlen(a_alone), &w.who, "write"), 0);
		assert_doc_is(&w, a_alone, "the commit after that");
		world_close(&w);
	}
	print_message("a batch's COMMIT: %ld SQLite I/O calls failed in turn\n", tried);
	assert_true(tried > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_staged),
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_batch_rolled_back),
	};

	if (faults_init() < 0) {
		fprintf(stderr, "test_commit: cannot set up the faulty VFS and allocator\n");
		return 1;
	}
	/* The faults log what failed: not for the test's output, unless asked (CONVFS_TEST_LOG=1). */
	if (!getenv("CONVFS_TEST_LOG"))
		log_set_level(LOG_LEVEL_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_store_docs.c: the docs of the SQLite store, through its interface
 * (store/store.h): round trips of arrays and whole docs, reads at every
 * offset and around a large element, snapshots that outlive later versions,
 * the revisions and closed rows a rewrite keeps, invalid JSON and raw
 * commits, and docs created, removed and listed.
 *
 * Each test gets a fresh store file in a private temporary directory
 * (store_fixture.h), which plain sqlite3 also opens to see what the
 * interface cannot show: the revision log and the rows a rewrite closes
 * but must keep. Contents are always compared byte for byte, read back
 * through snapshots in pieces of several sizes, because the FUSE layer
 * reads at arbitrary offsets and a short read means end of file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/store_changes.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/store_fixture.h"

/* A string literal that may hold NUL bytes, with its length. */
struct text {
	const char *s;
	size_t n;
};
#define T(lit) { lit, sizeof(lit) - 1 }
#define SESSION "sessions/1763560000000_ab12c/1763560000000_ab12c.messages.json"

/* ---- round trips ------------------------------------------------------------------ */

static const char *const arrays[] = {
	"[]",
	"[ ]",
	"[{\"ts\":1700000000000,\"type\":\"say\",\"say\":\"task\",\"text\":\"hello\"}]",
	/* JSON.stringify(messages, null, 2) */
	"[\n"
	"  {\n"
	"    \"ts\": 1700000000000,\n"
	"    \"type\": \"say\",\n"
	"    \"say\": \"task\",\n"
	"    \"text\": \"hello\"\n"
	"  },\n"
	"  {\n"
	"    \"ts\": 1700000000001,\n"
	"    \"type\": \"ask\",\n"
	"    \"ask\": \"followup\",\n"
	"    \"text\": \"what next?\",\n"
	"    \"images\": []\n"
	"  }\n"
	"]",
	"[{\"ts\":1,\"text\":\"é 日本語 😀 \\u00e9 \\ud83d\\ude00 \\n\\t\\\"q\\\" \\\\ ]\"},{\"ts\":2,\"text\":\"\xf4\x8f\xbf\xbf\"}]",
	" \n\t[ 1 ,\r\n 2 ]\n\n",
	"[[1,[2]],{\"a\":[]},\"x\",null,true,false,0.5,-1e-7]",
	"[{\"ts\":1700000000000,\"type\":\"say\",\"say\":\"task\",\"text\":\"hello\"},{\"ts\":1700000000002}]",
};

static void test_round_trip_arrays(void **state)
{
	static const char *const paths[] = { UI, API, HISTORY, "tasks/1700000000000/ui_messages.json" };
	struct fixture *f = *state;

	for (size_t p = 0; p < ARRAY_SIZE(paths); p++) {
		/* Forwards and back again, so each version follows several others. */
		for (size_t i = 0; i < 2 * ARRAY_SIZE(arrays); i++) {
			size_t k = i < ARRAY_SIZE(arrays) ? i : 2 * ARRAY_SIZE(arrays) - 1 - i;

			if (commit(f->st, paths[p], arrays[k]) != 0)
				fail_msg("cannot commit array %zu to '%s'", k, paths[p]);
			assert_doc_str(f->st, paths[p], arrays[k]);
		}
	}

	/* Many elements. */
	struct sb sb = SB_INIT;
	assert_int_equal(sb_adds(&sb, "["), 0);
	for (int i = 0; i < 500; i++)
		assert_int_equal(sb_addf(&sb, "%s{\"ts\":%d,\"type\":\"say\",\"text\":\"message %d\"}", i ? "," : "",
					 1700000000 + i, i), 0);
	assert_int_equal(sb_adds(&sb, "]"), 0);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	sb_release(&sb);
}

static void test_round_trip_whole(void **state)
{
	static const char *const paths[] = { META, "tasks/1/context_history.json", "tasks/1/settings.json" };
	static const char *const values[] = {
		"{\"files_in_context\":[],\"model_usage\":[],\"environment_history\":[]}",
		("{\n  \"files_in_context\": [\n    {\n      \"path\": \"src/é.c\",\n      \"record_state\": \"active\"\n"
		 "    }\n  ],\n  \"model_usage\": []\n}"),
		" {} \n",
		"[1,2]",
		"\"just a string\"",
		"null",
		"{\"text\":\"😀 \\ud83d\\ude00\"}",
	};
	struct fixture *f = *state;

	for (size_t p = 0; p < ARRAY_SIZE(paths); p++)
		for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
			assert_int_equal(commit(f->st, paths[p], values[i]), 0);
			assert_doc_str(f->st, paths[p], values[i]);
		}
}

/* ---- offsets and sizes ------------------------------------------------------------ */

/* A pretty-printed conversation of n messages of varied lengths. */
static void make_conversation(struct sb *sb, int n)
{
	assert_int_equal(sb_adds(sb, "[\n"), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(sb_addf(sb, "%s  {\n    \"ts\": %d,\n    \"type\": \"say\",\n    \"text\": \"", i ? ",\n" : "",
					 1700000000 + i), 0);
		for (int k = 0; k < (i * 37) % 300; k++)
			assert_int_equal(sb_adds(sb, k % 50 == 49 ? "é" : "x"), 0);
		assert_int_equal(sb_adds(sb, "\"\n  }"), 0);
	}
	assert_int_equal(sb_adds(sb, "\n]\n"), 0);
}

/* Reads at every offset of the doc, with several sizes, against data. */
static void assert_every_offset(struct store *st, const char *path, const char *data, size_t len)
{
	static const size_t sizes[] = { 1, 7, 4096 };
	struct store_snap *snap = NULL;
	char buf[4096];

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		for (size_t off = 0; off <= len; off++) {
			size_t want = len - off < sizes[i] ? len - off : sizes[i];
			ssize_t n = store_snap_read(st, snap, buf, sizes[i], (off_t)off);

			if (n != (ssize_t)want || memcmp(buf, data + off, want) != 0)
				fail_msg("read of %zu bytes at %zu of '%s' returned %zd bytes, not the %zu written",
					 sizes[i], off, path, n, want);
		}
	/* At and past the end, and empty or bad reads. */
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len + 1), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len + 1000000), 0);
	assert_int_equal(store_snap_read(st, snap, buf, 0, 0), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), -1), -EINVAL);
	store_snap_free(snap);
}

/*
 * A commit keeps the stored elements the new content begins with and scans
 * only what follows them. Where an element's bytes are all there but it goes
 * on (a number that grew), where the bytes between elements changed, and in
 * the array of a member, what is stored afterwards is the new content.
 */
static void test_kept_prefix_ends(void **state)
{
	static const struct {
		const char *path, *first, *then;
		bool valid;
	} steps[] = {
		{ UI, "[{\"a\":1},12]", "[{\"a\":1},123]", true },
		{ UI, "[{\"a\":1},12]", "[{\"a\":1},12.5,{\"b\":2}]", true },
		{ UI, "[{\"a\":1},true]", "[{\"a\":1},tru]", false },
		{ UI, "[{\"a\":1},\"x\"]", "[{\"a\":1},\"x\",\"y\"]", true },
		{ UI, "[{\"a\":1},\"x\"]", "[{\"a\":1},\"xy\"]", true },
		{ UI, "[1, {\"a\":1}]", "[1,{\"a\":1}]", true },
		{ UI, "[{\"a\":1},[2]]", "[{\"a\":1},[2] ,[3]]", true },
		{ UI, "[{\"a\":1},[2]]", "[{\"a\":1},[2]", false },
		{ UI, "[{\"a\":1},[2]]", "[{\"a\":1},[2]]]", false },
		{ UI, "[{\"a\":1},[2]]", "[{\"a\":1}]", true },
		{ SESSION, "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"n\":2}",
		  "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"c\"}],\"n\":3}", true },
		{ SESSION, "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"n\":2}",
		  "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"n\":2,}", false },
		{ SESSION, "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"n\":2}",
		  "{\"v\":1,\"messages\":[{\"id\":\"a\"},{\"id\":\"b\"}]}", true },
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		const char *path = steps[i].path, *then = steps[i].then;

		assert_int_equal(commit(f->st, path, steps[i].first), 0);
		if (commit(f->st, path, then) != (steps[i].valid ? 0 : -EINVAL))
			fail_msg("commit of '%s' after '%s' not %s", then, steps[i].first,
				 steps[i].valid ? "taken" : "refused");
		assert_doc_str(f->st, path, steps[i].valid ? then : steps[i].first);
		if (steps[i].valid)
			assert_every_offset(f->st, path, then, strlen(then));
	}
}

static void test_offsets_and_sizes(void **state)
{
	struct fixture *f = *state;
	struct sb sb = SB_INIT;

	make_conversation(&sb, 60);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_every_offset(f->st, UI, sb.buf, sb.len);

	assert_int_equal(store_doc_commit(f->st, META, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, META, sb.buf, sb.len);
	assert_every_offset(f->st, META, sb.buf, sb.len);
	sb_release(&sb);
}

/*
 * A commit finds the elements it keeps by their digests (elems.dg): a row
 * whose digest says other bytes is not kept, though its bytes are the same;
 * a row without one (written before digests) is compared by its bytes, kept,
 * and gets one; an element over ELEM_INLINE has none and is compared by its
 * bytes each time.
 */
static void test_digests(void **state)
{
	static const char *const versions[] = {
		"[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"}]",
		"[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"},{\"ts\":3}]",
		"[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"},{\"ts\":3},{\"ts\":4}]",
		"[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"},{\"ts\":3},{\"ts\":4},{\"ts\":5}]",
	};
	struct fixture *f = *state;
	struct sb sb = SB_INIT;
	size_t big;

	assert_int_equal(commit(f->st, UI, versions[0]), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE length(dg) = %d", DIGEST_SIZE), 2);
	assert_int_equal(commit(f->st, UI, versions[1]), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NOT NULL"), 0);

	/* A digest that says other bytes: that row and the ones after it are not kept. */
	db_exec(f->path, "UPDATE elems SET dg = zeroblob(16) WHERE seq = 1 AND rev_to IS NULL");
	assert_int_equal(commit(f->st, UI, versions[2]), 0);
	assert_doc_str(f->st, UI, versions[2]);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NOT NULL"), 2);

	/* No digest: compared by the bytes, kept, and given one. */
	db_exec(f->path, "UPDATE elems SET dg = NULL WHERE rev_to IS NULL");
	assert_int_equal(commit(f->st, UI, versions[3]), 0);
	assert_doc_str(f->st, UI, versions[3]);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NOT NULL"), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NULL AND dg IS NULL"), 0);

	/* A merge: the rows it copies from what is stored keep their digests, the writer's get theirs. */
	{
		static const char mine[] = "[{\"ts\":1,\"text\":\"one\"},{\"ts\":0},{\"ts\":2,\"text\":\"two\"}]";
		struct store_commit c = { .path = UI, .data = mine, .len = strlen(mine), .who = &who, .kind = "write",
					  .merge = true };
		bool merged = false;

		assert_int_equal(store_commit(f->st, &c, NULL, &merged), 0);
		assert_true(merged);
		assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems e JOIN docs d ON d.id = e.doc_id "
						 "WHERE d.path = '%s' AND e.rev_to IS NULL", UI), 6);
		assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems e JOIN docs d ON d.id = e.doc_id "
						 "WHERE d.path = '%s' AND e.rev_to IS NULL AND e.dg IS NULL", UI), 0);
	}

	/* A large element has none, and is kept by its bytes. */
	assert_int_equal(sb_adds(&sb, "[{\"ts\":1,\"text\":\""), 0);
	for (size_t i = 0; i < ((size_t)1 << 20) + 10; i++)
		assert_int_equal(sb_add(&sb, &"abcdefghijklmnopqrstuvwxyz"[i % 26], 1), 0);
	assert_int_equal(sb_adds(&sb, "\"}"), 0);
	big = sb.len;
	assert_int_equal(sb_adds(&sb, "]"), 0);
	assert_int_equal(store_doc_commit(f->st, API, sb.buf, sb.len, &who, "write"), 0);
	sb.len = big;
	assert_int_equal(sb_adds(&sb, ",{\"role\":\"user\",\"content\":\"more\"}]"), 0);
	assert_int_equal(store_doc_commit(f->st, API, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, API, sb.buf, sb.len);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems e JOIN docs d ON d.id = e.doc_id "
					 "WHERE d.path = '%s' AND e.rev_to IS NOT NULL", API), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE len > %d AND dg IS NOT NULL", 1 << 20), 0);
	sb_release(&sb);
}

/* A conversation of n elements, element `odd` indented far, element `changed` with other text. */
static void make_long(struct sb *sb, int n, int odd, int changed)
{
	assert_int_equal(sb_adds(sb, "["), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(sb_addf(sb, "%s%s{\"ts\":%d,\"text\":\"%s %d\"}", i ? "," : "",
					 i == odd ? "\n                    " : (i % 3 ? "\n " : ""), 1700000000 + i,
					 i == changed ? "changed" : "message", i), 0);
	assert_int_equal(sb_adds(sb, "]"), 0);
}

/* Commits make_long(n, odd, changed) as the UI doc, and reads it back. */
static void save_long(struct fixture *f, struct sb *sb, int n, int odd, int changed)
{
	sb->len = 0;
	make_long(sb, n, odd, changed);
	assert_int_equal(store_doc_commit(f->st, UI, sb->buf, sb->len, &who, "write"), 0);
	assert_doc(f->st, UI, sb->buf, sb->len);
}

/* The rows the last commit added to the doc at path. */
static int added_last(const char *db, const char *path)
{
	return db_int(db, "SELECT count(*) FROM elems e JOIN docs d ON d.id = e.doc_id WHERE d.path = '%s' AND "
			  "e.rev_to IS NULL AND e.rev_from = d.rev", path);
}

/* Opens f's store again: what it kept in memory of the last commits goes. */
static void reopen(struct fixture *f)
{
	store_free(f->st);
	assert_int_equal(store_open(f->path, 0, &f->st), 0);
}

/*
 * A long doc: what a commit keeps of it is every element up to the first
 * that changed, wherever that is, and whatever comes before it: more
 * bytes before an element than usual, a row without a digest (compared by
 * its bytes), a digest that says other bytes. (The rows changed underneath
 * are read from the index after the store is opened again: the rows of the
 * last commits are kept in memory.)
 */
static void test_digests_long(void **state)
{
	enum { N = 6000, ODD = 2500 };
	struct fixture *f = *state;
	struct sb sb = SB_INIT;

	make_long(&sb, N, ODD, -1);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_int_equal(added_last(f->path, UI), N);

	/* One more at the end: every stored element is kept. */
	sb.len = 0;
	make_long(&sb, N + 1, ODD, -1);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_int_equal(added_last(f->path, UI), 1);

	/* One changed in the middle of a batch, after the odd one: kept up to it. */
	sb.len = 0;
	make_long(&sb, N + 1, ODD, 3000);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_int_equal(added_last(f->path, UI), N + 1 - 3000);

	/* Other bytes before one (a changed indent) in the first batch. */
	sb.len = 0;
	make_long(&sb, N + 1, ODD + 1, 3000);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_int_equal(added_last(f->path, UI), N + 1 - ODD);

	/* A row without a digest is checked by its bytes, in order, and kept. */
	db_exec(f->path, "UPDATE elems SET dg = NULL WHERE seq = 4500 AND rev_to IS NULL");
	reopen(f);
	sb.len = 0;
	make_long(&sb, N + 2, ODD + 1, 3000);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_int_equal(added_last(f->path, UI), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NULL AND dg IS NULL"), 0);

	/* A digest that says other bytes, in the last batch: kept up to it. */
	db_exec(f->path, "UPDATE elems SET dg = zeroblob(16) WHERE seq = 5999 AND rev_to IS NULL");
	reopen(f);
	sb.len = 0;
	make_long(&sb, N + 3, ODD + 1, 3000);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_int_equal(added_last(f->path, UI), N + 3 - 5999);
	sb_release(&sb);
}

/*
 * The rows of a long doc that a commit kept in memory, for the next commit
 * not to read its index: that commit keeps what the index would have given
 * it, through saves that add an element, change the last, change one in
 * the middle, change nothing, and after the doc changed another way (an
 * append: a revision the kept rows are not of). That the kept rows are what
 * is compared shows in a digest changed underneath the open store, which
 * nothing but this test does: it is seen once the store is opened again.
 */
static void test_rows_kept(void **state)
{
	enum { N = 3000 };
	struct fixture *f = *state;
	struct store_line line = { .data = "{\"ts\":1,\"text\":\"appended\"}" };
	struct sb sb = SB_INIT;

	save_long(f, &sb, N, 10, -1);
	assert_int_equal(added_last(f->path, UI), N);
	/* The index read once, from here on the rows kept: one more, the last changed, one more. */
	save_long(f, &sb, N + 1, 10, -1);
	assert_int_equal(added_last(f->path, UI), 1);
	save_long(f, &sb, N + 1, 10, N);
	assert_int_equal(added_last(f->path, UI), 1);
	save_long(f, &sb, N + 2, 10, N);
	assert_int_equal(added_last(f->path, UI), 1);
	/* Nothing changed: no revision, and the rows stay kept. */
	save_long(f, &sb, N + 2, 10, N);
	assert_int_equal(added_last(f->path, UI), 1);
	/* One in the middle changed: kept up to it. */
	save_long(f, &sb, N + 2, 10, 1000);
	assert_int_equal(added_last(f->path, UI), N + 2 - 1000);
	/* An append makes a revision of its own; then a save without the appended line. */
	line.len = strlen(line.data);
	assert_int_equal(store_doc_append(f->st, UI, &line, 1, NULL, &who), 0);
	save_long(f, &sb, N + 2, 10, 1000);
	save_long(f, &sb, N + 3, 10, 1000);
	assert_int_equal(added_last(f->path, UI), 1);

	/* A digest changed underneath: the kept rows say the bytes are the same. */
	db_exec(f->path, "UPDATE elems SET dg = zeroblob(16) WHERE seq = 20 AND rev_to IS NULL");
	save_long(f, &sb, N + 4, 10, 1000);
	assert_int_equal(added_last(f->path, UI), 1);
	/* Opened again, the index says other bytes at 20: kept up to it. */
	db_exec(f->path, "UPDATE elems SET dg = zeroblob(16) WHERE seq = 20 AND rev_to IS NULL");
	reopen(f);
	save_long(f, &sb, N + 5, 10, 1000);
	assert_int_equal(added_last(f->path, UI), N + 5 - 20);
	sb_release(&sb);
}

/* store_commit.copy_rest of the tests: a copy in an unnamed file of dir, and where it began. */
struct copied {
	const char *dir;
	size_t from;
	int calls;
};

static int copy_to_tmpfile(void *ctx, int fd, size_t from, int *ret_fd, size_t *ret_len)
{
	struct copied *c = ctx;
	char buf[4096];
	size_t n = 0;
	ssize_t k;
	int out = open(c->dir, O_TMPFILE | O_RDWR, 0600);

	assert_true(out >= 0);
	c->from = from;
	c->calls++;
	while ((k = pread(fd, buf, sizeof(buf), (off_t)(from + n))) > 0) {
		assert_int_equal(pwrite(out, buf, (size_t)k, (off_t)n), k);
		n += (size_t)k;
	}
	assert_true(k == 0);
	*ret_fd = out;
	*ret_len = n;
	return 0;
}

/* Commits c from a file of dir that holds text, whose size c says is len: store_commit()'s return. */
static int commit_file(struct store *st, struct store_commit *c, const char *dir, const char *text, size_t len)
{
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600), r;

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, text, strlen(text), 0), (ssize_t)strlen(text));
	c->fd = fd;
	c->len = len;
	r = store_commit(st, c, NULL, NULL);
	close(fd);
	return r;
}

/*
 * A commit from a file another process may change (store_commit.fd_shared):
 * only what follows the kept elements is copied before it is read again;
 * all of a whole doc, of a new doc and of a file shorter than it was when
 * the commit began; what is stored is the file's content each time.
 */
static void test_shared_fd(void **state)
{
	static const char *const first = "[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"}]";
	static const char *const then = "[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,\"text\":\"two\"},{\"ts\":3}]";
	static const char *const torn = "[{\"ts\":1,\"text\":\"one\"},{\"ts\":2,";
	static const char *const meta = "{\"files_in_context\":[]}";
	struct fixture *f = *state;
	struct copied cp = { .dir = f->dir };
	struct store_commit c = { .path = UI, .who = &who, .kind = "write", .fd_shared = true,
				  .copy_rest = copy_to_tmpfile, .copy_ctx = &cp };

	/* A new doc: all of it. */
	assert_int_equal(commit_file(f->st, &c, f->dir, first, strlen(first)), 0);
	assert_int_equal(cp.calls, 1);
	assert_int_equal(cp.from, 0);
	assert_doc_str(f->st, UI, first);

	/* Two elements kept: from where the second ends. */
	assert_int_equal(commit_file(f->st, &c, f->dir, then, strlen(then)), 0);
	assert_int_equal(cp.calls, 2);
	assert_int_equal(cp.from, strlen(first) - 1);
	assert_doc_str(f->st, UI, then);

	/* The file shorter than its size said: what it holds now is taken, all of it; torn, it is refused. */
	assert_int_equal(commit_file(f->st, &c, f->dir, first, strlen(then) + 100), 0);
	assert_int_equal(cp.calls, 3);
	assert_int_equal(cp.from, 0);
	assert_doc_str(f->st, UI, first);
	assert_int_equal(commit_file(f->st, &c, f->dir, torn, strlen(then)), -EINVAL);
	assert_doc_str(f->st, UI, first);

	/* A whole doc: all of it. */
	c.path = META;
	cp.from = 99;
	assert_int_equal(commit_file(f->st, &c, f->dir, meta, strlen(meta)), 0);
	assert_int_equal(cp.from, 0);
	assert_doc_str(f->st, META, meta);
}

static void test_large_element(void **state)
{
	struct fixture *f = *state;
	struct store_snap *snap = NULL;
	struct sb sb = SB_INIT;
	size_t big_start, big_end;
	char buf[64];

	/* A 200 KB message between small ones: read with incremental blob I/O. */
	assert_int_equal(sb_adds(&sb, "[\n  {\"ts\":1,\"text\":\"small\"},\n  "), 0);
	big_start = sb.len;
	assert_int_equal(sb_adds(&sb, "{\"ts\":2,\"type\":\"say\",\"text\":\""), 0);
	for (int i = 0; i < 200000; i++)
		assert_int_equal(sb_add(&sb, &"abcdefghijklmnopqrstuvwxyz0123456789"[i % 36], 1), 0);
	assert_int_equal(sb_adds(&sb, "\"}"), 0);
	big_end = sb.len;
	assert_int_equal(sb_adds(&sb, ",\n  {\"ts\":3,\"text\":\"after\"}\n]"), 0);

	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_true(db_int(f->path, "SELECT max(len) FROM elems") > 65536);
	assert_doc(f->st, UI, sb.buf, sb.len);

	/* Reads that start or end around the big element's edges. */
	assert_int_equal(store_snap_open(f->st, UI, &snap), 0);
	for (size_t edge = 0; edge < 2; edge++) {
		size_t at = edge ? big_end : big_start;

		for (size_t off = at - 20; off <= at + 20; off++) {
			size_t want = sb.len - off < sizeof(buf) ? sb.len - off : sizeof(buf);
			ssize_t n = store_snap_read(f->st, snap, buf, sizeof(buf), (off_t)off);

			assert_int_equal(n, want);
			if (memcmp(buf, sb.buf + off, want) != 0)
				fail_msg("read at %zu near the big element's edge differs", off);
		}
	}
	/* One read that spans small, big and small elements at once. */
	{
		_cleanup_free_ char *all = malloc(sb.len);
		assert_non_null(all);
		assert_int_equal(store_snap_read(f->st, snap, all, sb.len, 0), sb.len);
		assert_memory_equal(all, sb.buf, sb.len);
		assert_int_equal(store_snap_read(f->st, snap, all, sb.len, 5), sb.len - 5);
		assert_memory_equal(all, sb.buf + 5, sb.len - 5);
	}
	store_snap_free(snap);

	/* The same bytes as a whole doc. */
	assert_int_equal(store_doc_commit(f->st, META, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, META, sb.buf, sb.len);
	sb_release(&sb);
}

/* ---- snapshots -------------------------------------------------------------------- */

static void assert_snap_str(struct store *st, struct store_snap *snap, const char *data)
{
	assert_snap_reads(st, snap, data, strlen(data));
}

static void test_snapshots(void **state)
{
	static const char v1[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"two\"},\n  {\"ts\":3,\"text\":\"three\"}\n]";
	static const char v2[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"two\"},\n  {\"ts\":3,\"text\":\"three\"},\n"
				 "  {\"ts\":4,\"text\":\"four\"}\n]";
	static const char v3[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"edited\"}\n]";
	static const char v4[] = "\n[\n  {\"ts\":1,\"text\":\"one\"}\n]";
	struct fixture *f = *state;
	struct store_snap *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL, *s5 = NULL;

	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s1), 0);

	/* An append. */
	assert_int_equal(commit(f->st, UI, v2), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s2), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);

	/* A rewrite that drops and edits messages. */
	assert_int_equal(commit(f->st, UI, v3), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s3), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s3, v3);

	/* A new head: nothing is kept. */
	assert_int_equal(commit(f->st, UI, v4), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s4), 0);

	/* Back to the first version. */
	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s5), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s3, v3);
	assert_snap_str(f->st, s4, v4);
	assert_snap_str(f->st, s5, v1);
	assert_true(store_snap_rev(s1) < store_snap_rev(s2));
	assert_true(store_snap_rev(s2) < store_snap_rev(s3));
	assert_true(store_snap_rev(s3) < store_snap_rev(s4));
	assert_true(store_snap_rev(s4) < store_snap_rev(s5));

	/* Snapshots outlive the doc. */
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), 0);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s5, v1);
	store_snap_free(s1);
	store_snap_free(s2);
	store_snap_free(s3);
	store_snap_free(s4);
	store_snap_free(s5);

	/* Whole docs too. */
	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(store_snap_open(f->st, META, &s1), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2,\"more\":true}"), 0);
	assert_int_equal(store_snap_open(f->st, META, &s2), 0);
	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);
	assert_snap_str(f->st, s1, "{\"v\":1}");
	assert_snap_str(f->st, s2, "{\"v\":2,\"more\":true}");
	store_snap_free(s1);
	store_snap_free(s2);

	store_snap_free(NULL);
}

/* ---- renderings kept ---------------------------------------------------------- */

/* A conversation of n messages, message k's text at its index, but those in edits[] (pairs of index and text). */
static void conversation(struct sb *out, const char *head, int n, const char *const *edits, size_t nedits)
{
	out->len = 0;
	assert_int_equal(sb_add(out, head, strlen(head)), 0);
	for (int k = 0; k < n; k++) {
		const char *text = NULL;
		char line[256];
		int len;

		for (size_t e = 0; e + 1 < nedits; e += 2)
			if (atoi(edits[e]) == k)
				text = edits[e + 1];
		len = snprintf(line, sizeof(line), "%s  {\"ts\":%d,\"type\":\"say\",\"text\":\"%s %02d of the conversation\"}",
			       k ? ",\n" : "", 1700000000 + k, text ? text : "message", k);
		assert_int_equal(sb_add(out, line, (size_t)len), 0);
	}
	assert_int_equal(sb_add(out, "\n]", 2), 0);
}

/*
 * A doc read whole twice is kept (store/read.c): a read of another version
 * takes from it the bytes before the first message that differs. Each
 * version, read after the others forward and back, reads as written: an
 * append, an edit in the middle at another length, one at the same length,
 * a new head, a cut at the end; and a snapshot cut after its first
 * messages, read before and after the whole version.
 */
static void test_kept_versions(void **state)
{
	static const char *const longer[] = { "20", "a message edited to be longer" };
	static const char *const same[] = { "20", "a message edited to be longer", "5", "MESSAGE" };
	struct fixture *f = *state;
	struct sb v[6] = { SB_INIT, SB_INIT, SB_INIT, SB_INIT, SB_INIT, SB_INIT };
	struct store_snap *s[6] = { NULL }, *lim = NULL;
	_cleanup_free_ char *before = NULL, *after = NULL;
	size_t before_len, after_len;

	conversation(&v[0], "[\n", 40, NULL, 0);
	conversation(&v[1], "[\n", 41, NULL, 0);
	conversation(&v[2], "[\n", 41, longer, ARRAY_SIZE(longer));
	conversation(&v[3], "[\n", 41, same, ARRAY_SIZE(same));
	conversation(&v[4], "\n[\n", 41, same, ARRAY_SIZE(same));
	conversation(&v[5], "\n[\n", 30, same, ARRAY_SIZE(same));
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		assert_int_equal(store_doc_commit(f->st, UI, v[i].buf, v[i].len, &who, "write"), 0);
		assert_int_equal(store_snap_open(f->st, UI, &s[i]), 0);
		assert_snap_reads(f->st, s[i], v[i].buf, v[i].len);
		if (i > 0)
			assert_snap_reads(f->st, s[i - 1], v[i - 1].buf, v[i - 1].len);
		assert_snap_reads(f->st, s[i], v[i].buf, v[i].len);
	}
	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		assert_snap_reads(f->st, s[i], v[i].buf, v[i].len);
	for (size_t i = ARRAY_SIZE(v); i-- > 0;)
		assert_snap_reads(f->st, s[i], v[i].buf, v[i].len);

	/* Cut after ten messages (no tail), it is the whole version's first bytes, kept or not. */
	assert_int_equal(store_snap_dup(s[3], &lim), 0);
	assert_int_equal(store_snap_limit(f->st, lim, 10), 0);
	before = snap_read_all(f->st, lim, 4096, &before_len);
	assert_true(before_len < v[3].len);
	assert_snap_reads(f->st, s[3], v[3].buf, v[3].len);
	after = snap_read_all(f->st, lim, 4096, &after_len);
	assert_int_equal(after_len, before_len);
	assert_memory_equal(after, before, before_len);
	assert_snap_reads(f->st, lim, before, before_len);
	assert_snap_reads(f->st, s[3], v[3].buf, v[3].len);

	store_snap_free(lim);

	/* Cut before its first element, a doc whose tail is longer than its head: its head alone, kept or not. */
	assert_int_equal(commit(f->st, "tasks/1/api_conversation_history.json", "[1,2]\n\n\n"), 0);
	store_snap_free(s[0]);
	assert_int_equal(store_snap_open(f->st, "tasks/1/api_conversation_history.json", &s[0]), 0);
	assert_int_equal(store_snap_dup(s[0], &lim), 0);
	assert_int_equal(store_snap_limit(f->st, lim, 0), 0);
	free(before);
	before = snap_read_all(f->st, lim, 4096, &before_len);
	assert_int_equal(before_len, 1);
	assert_memory_equal(before, "[", 1);
	assert_snap_reads(f->st, s[0], "[1,2]\n\n\n", 8);
	assert_snap_reads(f->st, lim, before, before_len);
	assert_snap_reads(f->st, s[0], "[1,2]\n\n\n", 8);
	store_snap_free(lim);

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		store_snap_free(s[i]);
		sb_release(&v[i]);
	}
}

/* A conversation of n messages of about 1 KB each, message edited (if >= 0) changed at the same length. */
static void big_conversation(struct sb *out, int n, int edited)
{
	char text[1001];

	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(sb_adds(out, "["), 0);
	for (int k = 0; k < n; k++)
		assert_int_equal(sb_addf(out, "%s{\"ts\":%d,\"type\":\"say\",\"text\":\"%s %05d\"}", k ? "," : "",
					 1700000000 + k, text, k == edited ? 99999 : k),
				 0);
	assert_int_equal(sb_adds(out, "]"), 0);
}

/* snap reads whole, in the pieces the kernel asks for, as data[0, len). */
static void assert_snap_reads_big(struct store *st, struct store_snap *snap, const struct sb *data)
{
	size_t len;
	_cleanup_free_ char *got = snap_read_all(st, snap, 131072, &len);

	assert_int_equal(len, data->len);
	assert_memory_equal(got, data->buf, len);
}

/*
 * A doc larger than what is kept of one (KEPT_MAX) has its first bytes
 * kept: each version reads as written, after an append, an edit within
 * what is kept and one past it, read forward and back.
 */
static void test_kept_large(void **state)
{
	struct fixture *f = *state;
	struct sb v[4] = { SB_INIT, SB_INIT, SB_INIT, SB_INIT };
	struct store_snap *s[4] = { NULL };

	big_conversation(&v[0], 5000, -1);
	assert_true(v[0].len > KEPT_MAX);
	big_conversation(&v[1], 5001, -1);
	big_conversation(&v[2], 5001, 10);
	big_conversation(&v[3], 5001, 4900);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		assert_int_equal(store_doc_commit(f->st, UI, v[i].buf, v[i].len, &who, "write"), 0);
		assert_int_equal(store_snap_open(f->st, UI, &s[i]), 0);
		assert_snap_reads_big(f->st, s[i], &v[i]);
		assert_snap_reads_big(f->st, s[i], &v[i]);
		if (i > 0)
			assert_snap_reads_big(f->st, s[i - 1], &v[i - 1]);
		assert_snap_reads_big(f->st, s[i], &v[i]);
	}
	for (size_t i = ARRAY_SIZE(v); i-- > 0;)
		assert_snap_reads_big(f->st, s[i], &v[i]);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		store_snap_free(s[i]);
		sb_release(&v[i]);
	}
}

/* store_changes_since()'s callback: counts the forgets told. */
static int count_forget(void *ctx, enum store_change_kind kind, const char *path)
{
	if (kind == STORE_CHANGE_FORGET) {
		assert_string_equal(path, "");
		++*(int *)ctx;
	}
	return 0;
}

/*
 * A forget made through another connection of the store (a daemon's sync)
 * blanks an older version's rows in place, which no revision says. What
 * others committed says so, once, and not for a commit alone (a daemon then
 * has its kernel drop the pages it keeps of versions); and this connection,
 * which kept that version's bytes for a reader holding it, drops them.
 */
static void test_forget_elsewhere(void **state)
{
	static const char v1[] = "[{\"ts\":1,\"text\":\"my key is sk-LEAKED-0042\"},{\"ts\":2,\"text\":\"ok\"}]";
	static const char v2[] = "[{\"ts\":2,\"text\":\"ok\"}]";
	struct fixture *f = *state;
	struct store_forget fg = { .match = "sk-LEAKED-0042" };
	struct store *other = NULL;
	struct store_snap *held = NULL;
	struct store_mark mark;
	int forgets = 0;
	char *got;
	size_t len;

	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &held), 0);
	assert_true(store_changed_elsewhere(f->st) >= 0);
	assert_int_equal(store_mark_end(f->st, &mark), 0);
	assert_int_equal(store_changes_since(f->st, &mark, count_forget, &forgets), 0);
	for (int i = 0; i < 2; i++) {
		got = snap_read_all(f->st, held, 4096, &len);
		assert_non_null(strstr(got, "sk-LEAKED-0042"));
		free(got);
	}

	assert_int_equal(store_open(f->path, 0, &other), 0);
	assert_int_equal(store_doc_commit(other, UI, v2, strlen(v2), &who, "write"), 0);
	assert_int_equal(store_changed_elsewhere(f->st), 1);
	assert_int_equal(store_changes_since(f->st, &mark, count_forget, &forgets), 1);
	assert_int_equal(forgets, 0);

	assert_int_equal(store_forget_synced(other, &fg, &who), 0);
	store_free(other);
	assert_int_equal(store_changed_elsewhere(f->st), 1);
	assert_int_equal(store_changes_since(f->st, &mark, count_forget, &forgets), 1);
	assert_int_equal(forgets, 1);
	/* Told once: the next look finds nothing new. */
	assert_int_equal(store_changes_since(f->st, &mark, count_forget, &forgets), 0);
	assert_int_equal(forgets, 1);
	got = snap_read_all(f->st, held, 4096, &len);
	assert_null(strstr(got, "sk-LEAKED-0042"));
	assert_non_null(strstr(got, "forgotten"));
	free(got);
	store_snap_free(held);
}

/*
 * The same forget, told by the sync (store_forgot_elsewhere()) before this
 * connection looks at what others committed: the bytes it kept of the
 * held version go at once.
 */
static void test_forgot_elsewhere_told(void **state)
{
	static const char v1[] = "[{\"ts\":1,\"text\":\"my key is sk-LEAKED-0043\"},{\"ts\":2,\"text\":\"ok\"}]";
	static const char v2[] = "[{\"ts\":2,\"text\":\"ok\"}]";
	struct fixture *f = *state;
	struct store_forget fg = { .match = "sk-LEAKED-0043" };
	struct store *other = NULL;
	struct store_snap *held = NULL;
	char *got;
	size_t len;

	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &held), 0);
	for (int i = 0; i < 2; i++) {
		got = snap_read_all(f->st, held, 4096, &len);
		assert_non_null(strstr(got, "sk-LEAKED-0043"));
		free(got);
	}
	assert_int_equal(store_open(f->path, 0, &other), 0);
	assert_int_equal(store_doc_commit(other, UI, v2, strlen(v2), &who, "write"), 0);
	assert_int_equal(store_forget_synced(other, &fg, &who), 0);
	store_free(other);
	store_forgot_elsewhere(f->st);
	got = snap_read_all(f->st, held, 4096, &len);
	assert_null(strstr(got, "sk-LEAKED-0043"));
	free(got);
	store_snap_free(held);
}

/* ---- revisions -------------------------------------------------------------------- */

static void test_revisions_kept(void **state)
{
	static const char abc[] = "[{\"ts\":1,\"text\":\"a\"},{\"ts\":2,\"text\":\"b\"},{\"ts\":3,\"text\":\"c\"}]";
	static const char a[] = "[{\"ts\":1,\"text\":\"a\"}]";
	static const struct store_who node = { .pid = 99, .comm = "node" };
	struct fixture *f = *state;
	struct store_stat s1, s2, s3;
	_cleanup_free_ char *kind1 = NULL, *comm1 = NULL, *kind2 = NULL, *comm2 = NULL, *json = NULL;
	int64_t doc;

	assert_int_equal(store_doc_commit(f->st, UI, abc, strlen(abc), &who, "write"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s1), 0);
	assert_int_equal(store_doc_commit(f->st, UI, a, strlen(a), &node, "rename"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s2), 0);
	assert_true(s2.rev > s1.rev);
	assert_int_equal(s2.ino, s1.ino);
	assert_doc_str(f->st, UI, a);

	/* The dropped messages are still there, closed at the rewrite. */
	doc = db_int(f->path, "SELECT id FROM docs WHERE path = %Q", UI);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 3);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to IS NULL",
				(long long)doc), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to = %lld",
				(long long)doc, (long long)s2.rev), 2);
	json = db_text(f->path, "SELECT group_concat(json, '|') FROM (SELECT json FROM elems WHERE doc_id = %lld "
			"AND rev_to IS NOT NULL ORDER BY seq)", (long long)doc);
	assert_string_equal(json, "{\"ts\":2,\"text\":\"b\"}|{\"ts\":3,\"text\":\"c\"}");
	assert_int_equal(db_int(f->path, "SELECT ts FROM elems WHERE doc_id = %lld AND seq = 2", (long long)doc), 3);

	/* One revision a commit, saying who made it and how. */
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", UI), 2);
	assert_int_equal(db_int(f->path, "SELECT pid FROM revisions WHERE id = %lld", (long long)s1.rev), 4242);
	comm1 = db_text(f->path, "SELECT comm FROM revisions WHERE id = %lld", (long long)s1.rev);
	kind1 = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s1.rev);
	assert_string_equal(comm1, "code");
	assert_string_equal(kind1, "write");
	assert_int_equal(db_int(f->path, "SELECT pid FROM revisions WHERE id = %lld", (long long)s2.rev), 99);
	comm2 = db_text(f->path, "SELECT comm FROM revisions WHERE id = %lld", (long long)s2.rev);
	kind2 = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s2.rev);
	assert_string_equal(comm2, "node");
	assert_string_equal(kind2, "rename");
	assert_int_equal(db_int(f->path, "SELECT doc_id FROM revisions WHERE id = %lld", (long long)s2.rev), doc);

	/* The same content again: no revision, no new metadata. */
	assert_int_equal(store_doc_commit(f->st, UI, a, strlen(a), &node, "write"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s3), 0);
	assert_int_equal(s3.rev, s2.rev);
	assert_int_equal(s3.mtime_ns, s2.mtime_ns);
	assert_int_equal(s3.ctime_ns, s2.ctime_ns);
	assert_int_equal(s3.size, s2.size);
	assert_int_equal(s3.ino, s2.ino);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", UI), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 3);

	/* A commit with nobody named records NULLs. */
	assert_int_equal(store_doc_commit(f->st, UI, abc, strlen(abc), NULL, "import"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s3), 0);
	assert_int_equal(db_int(f->path, "SELECT pid IS NULL AND comm IS NULL FROM revisions WHERE id = %lld",
				(long long)s3.rev), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 5);

	/* Whole docs: each version kept, an identical commit is a no-op. */
	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s1), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s2), 0);
	assert_int_equal(s2.rev, s1.rev);
	assert_int_equal(s2.mtime_ns, s1.mtime_ns);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", META), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM blobs WHERE doc_id = (SELECT id FROM docs WHERE path = %Q)",
				META), 2);
}

/* ---- refusals --------------------------------------------------------------------- */

static void assert_stat_equal(const struct store_stat *a, const struct store_stat *b)
{
	assert_int_equal(a->ino, b->ino);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->mtime_ns, b->mtime_ns);
	assert_int_equal(a->ctime_ns, b->ctime_ns);
	assert_int_equal(a->rev, b->rev);
}

static void test_invalid_json_refused(void **state)
{
	static const char good[] = "[{\"ts\":1,\"text\":\"good\"},{\"ts\":2,\"text\":\"also good\"}]";
	static const struct text bad_arrays[] = {
		T("[{\"ts\":1,\"text\":\"good\"},{\"ts\":2,\"text\":\"also"), /* torn mid-string */
		T("[{\"ts\":1,\"text\":\"good\"},{\"ts\":2"),                /* torn mid-array */
		T("{\"ts\":1}"),
		T("\"[]\""),
		T(""),
		T("[1] x"),
		T("[\"\xff\"]"),
		T("[\"a\0b\"]"),
		T("[01]"),
	};
	static const char *const bad_wholes[] = { "{\"v\":", "{\"v\":1}}", "", "{'v':1}", "\xef\xbb\xbf{}" };
	struct fixture *f = *state;
	struct store_stat before, after;
	int64_t nrev;

	assert_int_equal(commit(f->st, UI, good), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &before), 0);
	nrev = db_int(f->path, "SELECT count(*) FROM revisions");
	for (size_t i = 0; i < ARRAY_SIZE(bad_arrays); i++) {
		int r = store_doc_commit(f->st, UI, bad_arrays[i].s, bad_arrays[i].n, &who, "write");

		if (r != -EINVAL)
			fail_msg("bad array %zu not refused with -EINVAL (got %d)", i, r);
		assert_int_equal(store_doc_stat(f->st, UI, &after), 0);
		assert_stat_equal(&before, &after);
		assert_doc_str(f->st, UI, good);
	}

	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &before), 0);
	nrev++;
	for (size_t i = 0; i < ARRAY_SIZE(bad_wholes); i++) {
		assert_int_equal(commit(f->st, META, bad_wholes[i]), -EINVAL);
		assert_int_equal(store_doc_stat(f->st, META, &after), 0);
		assert_stat_equal(&before, &after);
		assert_doc_str(f->st, META, "{\"v\":1}");
	}
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);

	/* A refused first write leaves no doc behind. */
	assert_int_equal(commit(f->st, API, "[{\"role\":\"user\""), -EINVAL);
	assert_int_equal(store_doc_stat(f->st, API, &after), -ENOENT);
	assert_int_equal(commit(f->st, "tasks/1/context_history.json", "{"), -EINVAL);
	assert_int_equal(store_doc_stat(f->st, "tasks/1/context_history.json", &after), -ENOENT);

	/* Paths the store does not manage. */
	assert_int_equal(commit(f->st, "tasks/abc/ui_messages.json", "[]"), -EINVAL);
	assert_int_equal(commit(f->st, "settings/x.json", "{}"), -EINVAL);
	assert_int_equal(commit(f->st, "tasks/1", "[]"), -EINVAL);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);
}

static void test_commit_raw(void **state)
{
	static const char damaged[] = "\x00\xff[{\"ts\":1,\"text\":\"torn\r\n\x01";
	struct fixture *f = *state;
	struct store_snap *raw_snap = NULL;
	struct store_stat s;
	_cleanup_free_ char *kind = NULL, *detail = NULL;
	int64_t nrev;

	assert_int_equal(commit(f->st, UI, "[1,2,3]"), 0);
	assert_int_equal(store_doc_commit_raw(f->st, UI, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_doc(f->st, UI, damaged, sizeof(damaged) - 1);
	assert_int_equal(store_doc_stat(f->st, UI, &s), 0);
	kind = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s.rev);
	detail = db_text(f->path, "SELECT detail FROM revisions WHERE id = %lld", (long long)s.rev);
	assert_string_equal(kind, "import-damaged");
	assert_string_equal(detail, "{\"raw\":true}");

	/* A valid commit replaces it; a snapshot of the raw bytes still reads them. */
	assert_int_equal(store_snap_open(f->st, UI, &raw_snap), 0);
	assert_int_equal(commit(f->st, UI, "[1,2,3,4]"), 0);
	assert_doc_str(f->st, UI, "[1,2,3,4]");
	assert_snap_reads(f->st, raw_snap, damaged, sizeof(damaged) - 1);
	store_snap_free(raw_snap);

	/* Whole docs take raw bytes too; empty raw content is an empty file. */
	assert_int_equal(store_doc_commit_raw(f->st, META, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_doc(f->st, META, damaged, sizeof(damaged) - 1);
	assert_int_equal(store_doc_commit_raw(f->st, API, "", 0, &who, "import-damaged"), 0);
	assert_doc(f->st, API, "", 0);

	/* The same raw bytes again change nothing. */
	nrev = db_int(f->path, "SELECT count(*) FROM revisions");
	assert_int_equal(store_doc_commit_raw(f->st, API, "", 0, &who, "import-damaged"), 0);
	assert_int_equal(store_doc_commit_raw(f->st, META, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);

	/* Not for paths the store does not manage. */
	assert_int_equal(store_doc_commit_raw(f->st, "settings/x.json", "x", 1, &who, "import"), -EINVAL);
	assert_int_equal(store_doc_commit_raw(f->st, "tasks/1", "x", 1, &who, "import"), -EINVAL);
}

/* ---- create, remove, list --------------------------------------------------------- */

#define MAX_LISTED 16

struct listing {
	size_t n;
	char *names[MAX_LISTED];
	struct store_stat stats[MAX_LISTED];
	int stop_with; /* returned by the callback if nonzero */
};

static int list_collect(void *ctx, const char *name, const struct store_stat *stat)
{
	struct listing *l = ctx;

	assert_true(l->n < MAX_LISTED);
	l->names[l->n] = strdup(name);
	assert_non_null(l->names[l->n]);
	l->stats[l->n] = *stat;
	l->n++;
	return l->stop_with;
}

static void listing_release(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	*l = (struct listing){ 0 };
}

static void assert_listing(const struct listing *l, const char *const *names, size_t n)
{
	assert_int_equal(l->n, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(l->names[i], names[i]);
}

static void test_create_remove(void **state)
{
	struct fixture *f = *state;
	struct store_snap *snap = NULL;
	struct store_stat s;
	char buf[16];
	int64_t doc;

	assert_int_equal(store_doc_create(f->st, UI, &who), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s), 0);
	assert_int_equal(s.size, 0);
	assert_true(s.ino >= STORE_INO_BASE);
	assert_int_equal(store_snap_open(f->st, UI, &snap), 0);
	assert_int_equal(store_snap_size(snap), 0);
	assert_int_equal(store_snap_read(f->st, snap, buf, sizeof(buf), 0), 0);
	store_snap_free(snap);
	assert_int_equal(store_doc_create(f->st, UI, &who), -EEXIST);

	/* An empty doc takes content; then it exists all the more. */
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
	assert_int_equal(store_doc_create(f->st, UI, &who), -EEXIST);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");

	assert_int_equal(store_doc_create(f->st, META, &who), 0);
	assert_doc(f->st, META, "", 0);
	assert_int_equal(commit(f->st, META, "{}"), 0);
	assert_doc_str(f->st, META, "{}");

	assert_int_equal(store_doc_create(f->st, "tasks/1/notes.json", &who), -EINVAL);
	assert_int_equal(store_doc_create(f->st, "tasks", &who), -EINVAL);
	assert_int_equal(store_doc_create(f->st, "tasks/1", &who), -EINVAL);

	/* Removed: gone from the tree, kept in the store. */
	doc = db_int(f->path, "SELECT id FROM docs WHERE path = %Q", UI);
	assert_int_equal(store_snap_open_removed(f->st, UI, false, &snap), -ENOENT); /* not removed yet */
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1},{\"ts\":2}]"), 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0); /* a row closed before the removal */
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s), -ENOENT);
	assert_int_equal(store_snap_open(f->st, UI, &snap), -ENOENT);
	/* ... and its last version reads back, as JSON and as JSON Lines (the trash). */
	assert_int_equal(store_snap_open_removed(f->st, UI, false, &snap), 0);
	assert_snap_reads(f->st, snap, "[{\"ts\":1}]", 10);
	store_snap_free(snap);
	assert_int_equal(store_snap_open_removed(f->st, UI, true, &snap), 0);
	assert_snap_reads(f->st, snap, "{\"ts\":1}\n", 9);
	store_snap_free(snap);
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), -ENOENT);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND json = '{\"ts\":1}'",
				(long long)doc), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to IS NULL",
				(long long)doc), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q AND kind = 'unlink'", UI), 1);

	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s), -ENOENT);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM blobs WHERE CAST(data AS TEXT) = '{}'"), 1);

	assert_int_equal(store_doc_remove(f->st, "tasks/9/ui_messages.json", &who, "unlink"), -ENOENT);

	/* It can come back, empty, and be written again. */
	assert_int_equal(store_doc_create(f->st, UI, &who), 0);
	assert_doc(f->st, UI, "", 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
}

static void test_list(void **state)
{
	static const char *const task1[] = { "api_conversation_history.json", "ui_messages.json" };
	static const char *const all[] = {
		HISTORY, API, UI, "tasks/2/ui_messages.json",
	};
	struct fixture *f = *state;
	struct listing l = { 0 };

	assert_int_equal(commit(f->st, UI, "[1]"), 0);
	assert_int_equal(commit(f->st, API, "[1,2]"), 0);
	assert_int_equal(commit(f->st, META, "{}"), 0);
	assert_int_equal(commit(f->st, "tasks/2/ui_messages.json", "[]"), 0);
	assert_int_equal(commit(f->st, HISTORY, "[]"), 0);
	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);

	assert_int_equal(store_doc_list(f->st, "tasks/1", list_collect, &l), 0);
	assert_listing(&l, task1, ARRAY_SIZE(task1));
	assert_int_equal(l.stats[0].size, 5);
	assert_int_equal(l.stats[1].size, 3);
	assert_true(l.stats[0].ino >= STORE_INO_BASE);
	assert_true(l.stats[0].ino != l.stats[1].ino);
	listing_release(&l);

	assert_int_equal(store_doc_list(f->st, "state", list_collect, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.names[0], "taskHistory.json");
	listing_release(&l);

	assert_int_equal(store_doc_list(f->st, "tasks/3", list_collect, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(store_doc_list(f->st, "", list_collect, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(store_doc_list(f->st, "tasks", list_collect, &l), 0);
	assert_int_equal(l.n, 0);

	assert_int_equal(store_doc_foreach(f->st, list_collect, &l), 0);
	assert_listing(&l, all, ARRAY_SIZE(all));
	listing_release(&l);

	/* A callback's error stops the listing and is returned. */
	l.stop_with = -EINTR;
	assert_int_equal(store_doc_foreach(f->st, list_collect, &l), -EINTR);
	assert_int_equal(l.n, 1);
	listing_release(&l);
	l.stop_with = -EINTR;
	assert_int_equal(store_doc_list(f->st, "tasks/1", list_collect, &l), -EINTR);
	assert_int_equal(l.n, 1);
	listing_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_arrays, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_whole, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_kept_prefix_ends, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_digests, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_digests_long, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_rows_kept, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_shared_fd, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_offsets_and_sizes, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_large_element, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_snapshots, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_kept_versions, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_kept_large, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_forget_elsewhere, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_forgot_elsewhere_told, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_revisions_kept, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_json_refused, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_commit_raw, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_create_remove, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup_store, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("store docs", tests, NULL, NULL);
}

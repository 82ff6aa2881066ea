/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_stream.c: commits whose content is read from a file (store_commit
 * with .data NULL and .fd), as a commit of a file of any size makes them.
 * What is read back must be the bytes written, exactly as for the same
 * content committed from memory, with an element over ELEM_INLINE among
 * small ones, through an append and a change of the big element.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/src.h"
#include "store/store.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

static const struct store_who who = { .pid = 1001, .comm = "cline" };

/* The doc's current content, whole (free()); its length in *len. */
static char *doc_read(struct store *st, const char *path, size_t *len)
{
	struct store_snap *snap = NULL;
	char *buf;
	ssize_t n;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	buf = malloc((size_t)store_snap_size(snap) + 1);
	assert_non_null(buf);
	n = store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0);
	assert_int_equal(n, store_snap_size(snap));
	store_snap_free(snap);
	*len = (size_t)n;
	return buf;
}

static void assert_doc(struct store *st, const char *path, const char *want, size_t len)
{
	size_t n = 0;
	char *got = doc_read(st, path, &n);

	assert_int_equal(n, len);
	assert_true(memcmp(got, want, len) == 0);
	free(got);
}

/* Commits data[0, len) to path from a file that holds it and more after. */
static int commit_fd(struct store *st, const char *path, const char *data, size_t len)
{
	int fd = memfd_create("convfs-test", MFD_CLOEXEC);
	struct store_commit c = { .path = path, .data = NULL, .len = len, .fd = fd, .who = &who, .kind = "write" };
	int r;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	/* Bytes past len are not the content. */
	assert_int_equal(write(fd, "garbage]", 8), 8);
	r = store_commit(st, &c, NULL, NULL);
	close(fd);
	return r;
}

static int commit_mem(struct store *st, const char *path, const char *data, size_t len)
{
	struct store_commit c = { .path = path, .data = data, .len = len, .fd = -1, .who = &who, .kind = "write" };

	return store_commit(st, &c, NULL, NULL);
}

#define SMALL(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"

/* [small, big, small, ...more]: big has a text of size bytes of letter fill, with escapes and UTF-8. */
static char *ui_doc(size_t size, char fill, const char *more, size_t *len)
{
	struct sb sb = SB_INIT;
	char *text = malloc(size + 1);

	assert_non_null(text);
	for (size_t i = 0; i < size; i++)
		text[i] = i % 1000 == 999 ? ' ' : fill;
	text[size] = '\0';
	assert_int_equal(sb_adds(&sb, "[\n  " SMALL(1, "caf\\u00e9 é") ",\n  {\"ts\":2,\"type\":\"say\",\"text\":\""), 0);
	assert_int_equal(sb_adds(&sb, "\\\"quoted\\\" 😀 "), 0);
	assert_int_equal(sb_adds(&sb, text), 0);
	assert_int_equal(sb_adds(&sb, "\"},\n  " SMALL(3, "c")), 0);
	assert_int_equal(sb_adds(&sb, more), 0);
	assert_int_equal(sb_adds(&sb, "\n]"), 0);
	free(text);
	*len = sb.len;
	return sb.buf;
}

#define FILE_UI "tasks/100/ui_messages.json"
#define MEM_UI "tasks/200/ui_messages.json"

static void test_commit_from_fd(void **state)
{
	struct store *st = *state;
	size_t big = ELEM_INLINE + 12345, len1, len2, len3;
	char *v1 = ui_doc(big, 'a', "", &len1);
	char *v2 = ui_doc(big, 'a', ",\n  " SMALL(4, "appended"), &len2);
	char *v3 = ui_doc(big + 7, 'b', ",\n  " SMALL(4, "appended"), &len3);
	const char *vs[] = { v1, v2, v3 };
	size_t lens[] = { len1, len2, len3 };

	for (size_t i = 0; i < ARRAY_SIZE(vs); i++) {
		size_t nf = 0, nm = 0;
		char *from_file, *from_mem;

		assert_int_equal(commit_fd(st, FILE_UI, vs[i], lens[i]), 0);
		assert_doc(st, FILE_UI, vs[i], lens[i]);
		assert_int_equal(commit_mem(st, MEM_UI, vs[i], lens[i]), 0);
		from_file = doc_read(st, FILE_UI, &nf);
		from_mem = doc_read(st, MEM_UI, &nm);
		assert_int_equal(nf, nm);
		assert_true(memcmp(from_file, from_mem, nf) == 0);
		free(from_file);
		free(from_mem);
	}
	/* A file that is not an array is refused, as from memory, and leaves the doc as it was. */
	assert_int_equal(commit_fd(st, FILE_UI, v3, len3 - 1), -EINVAL);
	assert_int_equal(commit_mem(st, MEM_UI, v3, len3 - 1), -EINVAL);
	assert_doc(st, FILE_UI, v3, len3);
	free(v1);
	free(v2);
	free(v3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_from_fd, setup, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}

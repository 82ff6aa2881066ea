/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_view_context.c: fs/view/view_context.c, context.jsonl made from a
 * store: where the range and the edits come from (the history item, else
 * the ui messages' last; a version's as they stood then; a checkpoint's
 * message and time), and the text read back at every offset and in pieces
 * of several sizes, the runs of stored lines and the changed messages alike;
 * a CLI 3.x session's from its compaction state.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs/fs.h"
#include "fs/view/lines.h"
#include "fs/view/view_context.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/store_fixture.h"

#define CTX "tasks/1/context_history.json"
#define M(role, t) "{\"role\":\"" role "\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"
#define CONV "[" M("user", "task") "," M("assistant", "a1") "," M("user", "u2") "," M("assistant", "a3") "," \
	M("user", "u4") "," M("assistant", "a5") "]"
#define NOTE "[[1,[0,[[0,[[50,\"text\",[\"[NOTE] cut\"],[]]]]]]]]"

/* The whole text of c, read in pieces of step bytes. */
static char *read_all(struct fs *fs, struct view_context *c, size_t step)
{
	int64_t size = view_context_size(c), at = 0;
	char *buf = calloc(1, (size_t)size + 1);

	assert_non_null(buf);
	while (at < size) {
		ssize_t got = view_context_read(fs, c, buf + at, step, at);

		assert_true(got > 0);
		at += got;
	}
	assert_int_equal(view_context_read(fs, c, buf, 16, size), 0);
	return buf;
}

static void expect_text(struct fs *fs, struct view_context *c, const char *want)
{
	size_t steps[] = { 1, 3, 7, 64, 1 << 20 };

	assert_int_equal(view_context_size(c), strlen(want));
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		char *got = read_all(fs, c, steps[i]);

		assert_string_equal(got, want);
		free(got);
	}
}

static void expect_live(struct fs *fs, const char *key, const char *want)
{
	struct context_input in;
	struct view_context *c;

	assert_int_equal(context_input_live(fs, "1", &in), 0);
	assert_int_equal(view_context_get(fs, key, &in, &c), 0);
	expect_text(fs, c, want);
	view_context_put(c);
}

static const char cut[] = M("user", "task") "\n" M("assistant", "[NOTE] cut") "\n" M("user", "u4") "\n"
	M("assistant", "a5") "\n";
static const char whole[] = M("user", "task") "\n" M("assistant", "a1") "\n" M("user", "u2") "\n"
	M("assistant", "a3") "\n" M("user", "u4") "\n" M("assistant", "a5") "\n";

/* Never cut: the conversation's own lines. */
static void test_untouched(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };

	assert_int_equal(commit(f->st, API, CONV), 0);
	expect_live(&fs, "a", whole);
}

/* The history item's range first; without one (Cline CLI 1.0.10), the last ui message's. */
static void test_live_range(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };

	assert_int_equal(commit(f->st, API, CONV), 0);
	assert_int_equal(commit(f->st, CTX, NOTE), 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1,\"say\":\"text\",\"conversationHistoryDeletedRange\":null},"
					   "{\"ts\":60,\"say\":\"completion_result\",\"conversationHistoryDeletedRange\":[2,3]}]"),
			 0);
	assert_int_equal(commit(f->st, HISTORY, "[{\"id\":\"1\",\"ts\":60,\"conversationHistoryDeletedRange\":null}]"), 0);
	expect_live(&fs, "b", cut);
	/* The item's own wins; a commit since drops what was kept. */
	assert_int_equal(commit(f->st, HISTORY, "[{\"id\":\"1\",\"ts\":60,\"conversationHistoryDeletedRange\":[2,1]}]"), 0);
	expect_live(&fs, "b",
		    M("user", "task") "\n" M("assistant", "[NOTE] cut") "\n" M("user", "u2") "\n" M("assistant", "a3") "\n"
		    M("user", "u4") "\n" M("assistant", "a5") "\n");
}

/* A version: the conversation, the range and the edits as they stood after that save. */
static void test_version(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };
	struct context_input in;
	struct view_context *c;
	struct store_stat ss;
	int64_t before;

	assert_int_equal(commit(f->st, API, CONV), 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1,\"conversationHistoryDeletedRange\":null}]"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &ss), 0);
	before = ss.rev;
	assert_int_equal(commit(f->st, CTX, NOTE), 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1,\"conversationHistoryDeletedRange\":[2,3]}]"), 0);
	assert_int_equal(context_input_version(&fs, "1", before, 7, &in), 0);
	assert_int_equal(view_context_get(&fs, "v1", &in, &c), 0);
	expect_text(&fs, c, whole);
	assert_int_equal(view_context_mtime(c), 7);
	view_context_put(c);
	assert_int_equal(store_doc_stat(f->st, UI, &ss), 0);
	assert_int_equal(context_input_version(&fs, "1", ss.rev, 8, &in), 0);
	assert_int_equal(view_context_get(&fs, "v2", &in, &c), 0);
	expect_text(&fs, c, cut);
	view_context_put(c);
}

/* A checkpoint: its message's range, and the edits made up to its time only. */
static void test_checkpoint(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };
	struct context_range range = { .set = true, .start = 2, .end = 3 };
	struct context_input in;
	struct view_context *c;
	struct store_snap *snap;

	assert_int_equal(commit(f->st, API, CONV), 0);
	assert_int_equal(commit(f->st, CTX, NOTE), 0);
	assert_int_equal(store_snap_open_jsonl(f->st, API, &snap), 0);
	assert_int_equal(context_input_checkpoint(&fs, "1", snap, &range, 49, &in), 0);
	assert_int_equal(view_context_get(&fs, "c49", &in, &c), 0);
	expect_text(&fs, c, M("user", "task") "\n" M("assistant", "a1") "\n" M("user", "u4") "\n" M("assistant", "a5") "\n");
	assert_int_equal(view_context_mtime(c), 49 * 1000000);
	view_context_put(c);
	assert_int_equal(store_snap_open_jsonl(f->st, API, &snap), 0);
	assert_int_equal(context_input_checkpoint(&fs, "1", snap, &range, 50, &in), 0);
	assert_int_equal(view_context_get(&fs, "c50", &in, &c), 0);
	expect_text(&fs, c, cut);
	view_context_put(c);
}

/* The last one made is kept for its key until the next commit. */
static void test_kept(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };
	struct context_input in;
	struct view_context *c, *again;

	assert_int_equal(commit(f->st, API, CONV), 0);
	assert_int_equal(context_input_live(&fs, "1", &in), 0);
	assert_int_equal(view_context_get(&fs, "k", &in, &c), 0);
	again = view_context_lookup(&fs, "k");
	assert_ptr_equal(again, c);
	view_context_put(again);
	assert_null(view_context_lookup(&fs, "other"));
	assert_int_equal(commit(f->st, CTX, NOTE), 0);
	assert_null(view_context_lookup(&fs, "k"));
	/* Still readable by whoever holds it. */
	expect_text(&fs, c, whole);
	view_context_put(c);
}

/* A conversation of one message, and none. */
static void test_short(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };

	assert_int_equal(commit(f->st, API, "[" M("user", "task") "]"), 0);
	assert_int_equal(commit(f->st, CTX, "[[0,[0,[[0,[[1,\"text\",[\"x\"],[]]]]]]]]"), 0);
	expect_live(&fs, "s1", M("user", "task") "\n");
	assert_int_equal(commit(f->st, API, "[]"), 0);
	expect_live(&fs, "s0", "");
}

/* Sessions have none; a task without a conversation neither. */
static void test_none(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };
	struct context_input in;

	assert_int_equal(context_input_live(&fs, "1795505492931_y5z6u", &in), -ENOENT);
	assert_int_equal(context_input_live(&fs, "2", &in), -ENOENT);
}

struct seen {
	int64_t n, len[4];
	unsigned found[4];
	bool held[4];
};

static int see(void *ctx, const struct lines_line *l)
{
	struct seen *s = ctx;

	assert_true(s->n < 4);
	assert_int_equal(l->index, s->n);
	s->len[s->n] = l->len;
	s->found[s->n] = l->found;
	s->held[s->n] = l->bytes != NULL;
	s->n++;
	return 0;
}

/* Lines past the keep are looked through as they stream, a word found where it spans two windows. */
static void test_lines(void **state)
{
	static const char *const words[] = { "\"tool_use\"", "needle", NULL };
	struct fixture *f = *state;
	struct store_snap *snap;
	struct seen s = { 0 };
	struct sb json = SB_INIT;
	size_t pad;

	/* Element 1 puts "tool_use" across the first 1 MiB window's end; element 2 is short and held. */
	assert_int_equal(sb_adds(&json, "[{\"a\":\"x\"},{\"p\":\""), 0);
	/*
	 * As JSON Lines: line 0 is {"a":"x"} and its "\n" (10 bytes), line 1 opens
	 * with {"p":" (6), then the pad, then ","type": (9): "tool_use" begins at
	 * 25 + pad, 5 bytes before the window's end.
	 */
	pad = (1 << 20) - 5 - 25;
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(sb_add(&json, "y", 1), 0);
	assert_int_equal(sb_adds(&json, "\",\"type\":\"tool_use\"},{\"n\":\"needle\"}]"), 0);
	assert_int_equal(commit(f->st, API, json.buf), 0);
	assert_int_equal(store_snap_open_jsonl(f->st, API, &snap), 0);
	assert_int_equal(lines_each(f->st, snap, 1024, words, see, &s), 3);
	assert_int_equal(s.found[0], 0);
	assert_true(s.held[0]);
	assert_int_equal(s.found[1], 1);
	assert_false(s.held[1]);
	assert_true(s.len[1] > (1 << 20) - 64);
	assert_int_equal(s.found[2], 2);
	assert_true(s.held[2]);
	store_snap_free(snap);
	sb_release(&json);
}

/*
 * A CLI 3.x session: its compaction state (here one by the last message's
 * key) applied, the compacted messages held, then messages.jsonl's own lines
 * after them, an error only shown left out; a state that no longer applies
 * or none: every message sent.
 */
#define SESSION "1700000000000_ab"
#define SESSION_DOC "sessions/" SESSION "/" SESSION ".messages.json"
#define SM(id, role, t) "{\"id\":\"" id "\",\"role\":\"" role "\",\"content\":\"" t "\"}"
#define SHOWN "{\"id\":\"e\",\"role\":\"assistant\",\"content\":\"boom\",\"metadata\":{\"displayOnly\":true}}"
#define STATE(key) "{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":2," \
	"\"source_last_message_key\":\"" key "\",\"messages\":[{\"role\":\"user\",\"content\":\"sum\"}]}"

static void expect_session(struct fs *fs, const char *state, const char *key, const char *want)
{
	struct context_input in;
	struct view_context *c;
	char *copy = state ? strdup(state) : NULL;

	assert_true(!state || copy);
	assert_int_equal(context_input_session(fs, SESSION, copy, state ? strlen(state) : 0, 0, &in), 0);
	assert_int_equal(view_context_get(fs, key, &in, &c), 0);
	expect_text(fs, c, want);
	view_context_put(c);
}

static void test_session(void **state)
{
	struct fixture *f = *state;
	struct fs fs = { .store = f->st };
	struct context_input in;

	assert_int_equal(commit(f->st, SESSION_DOC, "{\"version\":1,\"messages\":[" SM("m1", "user", "a") ","
					   SHOWN "," SM("m2", "assistant", "b") "," SM("m3", "user", "c") ","
					   SM("m4", "assistant", "d") "]}"),
			 0);
	expect_session(&fs, STATE("id:m2"), "s1",
		       "{\"role\":\"user\",\"content\":\"sum\"}\n" SM("m3", "user", "c") "\n" SM("m4", "assistant", "d") "\n");
	expect_session(&fs, STATE("id:m1"), "s2",
		       SM("m1", "user", "a") "\n" SM("m2", "assistant", "b") "\n" SM("m3", "user", "c") "\n"
		       SM("m4", "assistant", "d") "\n");
	expect_session(&fs, NULL, "s3",
		       SM("m1", "user", "a") "\n" SM("m2", "assistant", "b") "\n" SM("m3", "user", "c") "\n"
		       SM("m4", "assistant", "d") "\n");
	assert_int_equal(context_input_session(&fs, "1", NULL, 0, 0, &in), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_untouched, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_live_range, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_version, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_kept, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_short, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_none, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_lines, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_session, setup_store, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

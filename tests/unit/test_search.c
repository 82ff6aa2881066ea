/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_search.c: the search index (store/search.h, store/store_search.h).
 *
 * The pure parts first: which strings of a message are its text, who wrote
 * it, where an identifier comes apart, and the query syntax (what it
 * accepts, the FTS5 expression it makes, and the one line that says what is
 * wrong with what it refuses). Then the index in a store: every way a row
 * becomes current or stops being so (a commit, an append, a rewrite that
 * drops a message, a merge, the trash and back, `convfs restore`, a
 * message over 1 MiB, a file kept raw), after each of which the index
 * holds exactly the current messages (search_check() finds nothing); the
 * build of a first take-in's rows and of a store from before the index,
 * cut short and resumed; the filters and the ranking; what `convfs check`
 * finds when the index is changed behind the store's back; and `convfs
 * forget`, after which neither the index's words (fts5vocab) nor the
 * file's bytes hold the secret.
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

#include "store/search.h"
#include "store/store.h"
#include "store/store_history.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/store_search.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

#define UI(id) "tasks/" id "/ui_messages.json"
#define API(id) "tasks/" id "/api_conversation_history.json"
#define HIST "state/taskHistory.json"
#define M(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"
#define U(text) "{\"role\":\"user\",\"content\":\"" text "\"}"

static const struct store_who who = { .pid = 1001, .comm = "code" };

/* The first column of the first row of sql on db, a number. */
static int64_t db_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v;

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK || sqlite3_step(stmt) != SQLITE_ROW)
		fail_msg("'%s' failed: %s", sql, sqlite3_errmsg(db));
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static void commit(struct store *st, const char *path, const char *json)
{
	assert_int_equal(store_doc_commit(st, path, json, strlen(json), &who, "write"), 0);
}

/* ---- the text of a message ---------------------------------------------------------------- */

static void test_text(void **state)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"role\":\"user\",\"content\":\"hello \\\"world\\\"\\nbye\"}", "hello \"world\" bye\n" },
		{ "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
		  "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"editor\",\"input\":{\"path\":\"src/a.ts\","
		  "\"edits\":[{\"old\":\"x\",\"new\":\"y\"}],\"n\":3}},"
		  "{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"SIG\"},"
		  "{\"type\":\"image\",\"source\":{\"data\":\"iVBORw0KGgo\",\"text\":\"no\"}}]}",
		  "one\neditor\nsrc/a.ts\nx\ny\nhmm\n" },
		{ "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"done\"},"
		  "{\"type\":\"tool_result\",\"content\":[{\"type\":\"text\",\"text\":\"deep\"},{\"type\":\"image\","
		  "\"text\":\"no\"}]},{\"type\":\"weird\",\"text\":\"kept\",\"other\":\"not\"}]}",
		  "done\ndeep\nkept\n" },
		{ M(1, "hi there"), "hi there\n" },
		{ "{\"ts\":2,\"type\":\"say\",\"say\":\"api_req_started\",\"text\":\"{\\\"request\\\":\\\"copy\\\"}\"}", "" },
		{ "{\"ts\":2,\"type\":\"say\",\"say\":\"browser_action_result\",\"text\":\"base64\"}", "" },
		{ "{\"ts\":3,\"type\":\"ask\",\"ask\":\"followup\",\"text\":\"{\\\"question\\\":\\\"why?\\\"}\"}",
		  "{\"question\":\"why?\"}\n" },
		{ "{\"ts\":4,\"type\":\"say\",\"say\":\"reasoning\",\"reasoning\":\"because\",\"text\":\"\"}", "because\n" },
		/* escapes, controls, invisible formatting, bytes that are not UTF-8 */
		{ U("caf\\u00e9 \\ud83d\\ude00 \\ud800x a\\u0007b c\\u200bd \xff!"),
		  "caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbdx a b c d ?!\n" },
		/* cut anywhere: what can be read */
		{ "{\"role\":\"user\",\"content\":\"abc de", "abc de\n" },
		{ "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"par", "par\n" },
		{ "{\"role\":\"user\",\"content\":\"x\\", "x\xef\xbf\xbd\n" },
		{ "[1,2]", "" },
		{ "", "" },
		{ "{\"text\":1,\"content\":{\"text\":\"not blocks\"}}", "" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_sb_ struct sb out = SB_INIT;

		assert_int_equal(search_text(cases[i].json, strlen(cases[i].json), &out), 0);
		if (strcmp(sb_str(&out), cases[i].want) != 0)
			fail_msg("case %zu: text of %s is '%s', expected '%s'", i, cases[i].json, sb_str(&out),
				 cases[i].want);
	}
}

static void test_role(void **state)
{
	assert_int_equal(search_role(U("x"), strlen(U("x"))), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"content\":\"x\",\"role\":\"assistant\"}", 34), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role(M(1, "x"), strlen(M(1, "x"))), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role("{\"type\":\"say\",\"say\":\"task\"}", 28), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"type\":\"say\",\"say\":\"user_feedback\"}", 37), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"type\":\"ask\",\"ask\":\"followup\"}", 32), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role("{\"ts\":1}", 8), SEARCH_ROLE_NONE);
	assert_int_equal(search_role("{\"role\":\"us", 11), SEARCH_ROLE_NONE);
	assert_string_equal(search_role_name(SEARCH_ROLE_USER), "user");
	assert_null(search_role_name(SEARCH_ROLE_NONE));
}

/* The parts of an identifier, as "a|b|c". */
static void assert_parts(const char *s, const char *want)
{
	size_t starts[SEARCH_CAMEL_MAX], n = search_camel_parts(s, strlen(s), starts, SEARCH_CAMEL_MAX);
	char got[256] = "";

	for (size_t i = 0; i < n; i++) {
		size_t end = i + 1 < n ? starts[i + 1] : strlen(s);

		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%.*s", i ? "|" : "", (int)(end - starts[i]),
			 s + starts[i]);
	}
	if (n == 1)
		snprintf(got, sizeof(got), "%s", s);
	if (strcmp(got, want) != 0)
		fail_msg("parts of '%s': '%s', expected '%s'", s, got, want);
}

static void test_camel(void **state)
{
	assert_parts("getUserName", "get|User|Name");
	assert_parts("HTTPServer", "HTTP|Server");
	assert_parts("parseJSON", "parse|JSON");
	assert_parts("v2Api", "v2|Api");
	assert_parts("utf8decode", "utf8decode");
	assert_parts("ERRCODE", "ERRCODE");
	assert_parts("Simple", "Simple");
	assert_parts("iOS", "i|OS");
	assert_parts("caf\xc3\xa9" "Bar", "caf\xc3\xa9" "Bar"); /* not ASCII: left alone */
	assert_parts("aBcDeFgHiJkLmNoPqRsTuVwXyZ", "a|Bc|De|Fg|Hi|Jk|Lm|No|Pq|Rs|Tu|Vw|Xy|Z");
}

/* ---- the pieces of a large message's text -------------------------------------------- */

static int mem_read(void *ctx, size_t off, void *buf, size_t n)
{
	memcpy(buf, (const char *)ctx + off, n);
	return 0;
}

#define PIECES_MAX 8
struct pieces_got {
	struct sb text[PIECES_MAX];
	size_t seen;
};

static int pieces_collect(void *ctx, size_t k, const char *text, size_t n)
{
	struct pieces_got *g = ctx;

	assert_true(k >= 1 && k < PIECES_MAX);
	assert_int_equal(g->text[k].len, 0);
	assert_int_equal(sb_add(&g->text[k], text, n), 0);
	g->seen++;
	return 0;
}

static void pieces_release(struct pieces_got *g)
{
	for (size_t k = 0; k < PIECES_MAX; k++)
		sb_release(&g->text[k]);
}

static uint64_t pieces_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Text about len bytes of JSON long: numbered words "wNNNNNN" (each once),
 * between spaces and escapes, raw UTF-8, and now and then a separator-free
 * run longer than a piece's look back. *words: how many numbered ones.
 */
static void pieces_text(struct sb *sb, size_t len, uint64_t *x, size_t *words, bool runs)
{
	static const char *const bits[] = { " ", " ", " ", "\\n", "\\t", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00",
					    "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "/", ".", "_x", "\\u2028" };
	size_t end = sb->len + len;

	while (sb->len < end) {
		uint64_t r = pieces_rand(x);

		if (runs && r % 997 == 0) {
			for (size_t i = 0; i < 300 + r % 500; i++)
				assert_int_equal(sb_add(sb, "z", 1), 0);
			assert_int_equal(sb_add(sb, " ", 1), 0);
		}
		assert_int_equal(sb_addf(sb, "w%07zu", (*words)++), 0);
		assert_int_equal(sb_adds(sb, bits[(r >> 8) % (sizeof(bits) / sizeof(bits[0]))]), 0);
		assert_int_equal(sb_adds(sb, " "), 0);
	}
}

/* Marks in seen[] each "wNNNNNNN" of text that stands as a word of its own. */
static void pieces_mark(const char *t, size_t n, bool *seen, size_t words)
{
	for (size_t i = 0; i + 8 <= n; i++) {
		size_t v = 0, j;

		if (t[i] != 'w' || (i > 0 && ((t[i - 1] >= '0' && t[i - 1] <= '9') || (t[i - 1] | 0x20) >= 'a')))
			continue;
		for (j = 1; j < 8 && t[i + j] >= '0' && t[i + j] <= '9'; j++)
			v = v * 10 + (size_t)(t[i + j] - '0');
		if (j == 8 && (i + 8 == n || !(t[i + 8] >= '0' && t[i + 8] <= '9')) && v < words)
			seen[v] = true;
	}
}

/*
 * A message's text past its first MiB, in pieces: the same whatever the
 * window the walk reads through (down to a few hundred bytes, so that
 * escapes and UTF-8 sequences fall across its edges), the same made one at
 * a time as all at once, and with every word of the message whole in one
 * of them or in the first piece (search_text() of the first MiB).
 */
static void test_pieces(void **state)
{
	static const size_t windows[] = { 200, 4099, 65536, 0 };
	uint64_t x = 0x9e3779b97f4a7c15;

	for (int shape = 0; shape < 4; shape++) {
		_cleanup_sb_ struct sb msg = SB_INIT, first = SB_INIT;
		_cleanup_free_ bool *seen = NULL;
		struct pieces_got whole = { 0 };
		size_t words = 0, count;

		switch (shape) {
		case 0: /* a ui message's text */
			assert_int_equal(sb_adds(&msg, "{\"ts\":1,\"type\":\"say\",\"say\":\"text\",\"text\":\""), 0);
			pieces_text(&msg, (size_t)5 << 19, &x, &words, true);
			assert_int_equal(sb_adds(&msg, "\"}"), 0);
			break;
		case 1: /* a tool's result in blocks, and a text block after it */
			assert_int_equal(sb_adds(&msg, "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
						       "\"t1\",\"content\":[{\"type\":\"text\",\"text\":\""), 0);
			pieces_text(&msg, (size_t)3 << 20, &x, &words, false);
			assert_int_equal(sb_adds(&msg, "\"}]},{\"type\":\"text\",\"text\":\""), 0);
			pieces_text(&msg, 1000, &x, &words, false);
			assert_int_equal(sb_adds(&msg, "\"}]}"), 0);
			break;
		case 2: /* a tool's input: every string, keys not */
			assert_int_equal(sb_adds(&msg, "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"name\":"
						       "\"write_to_file\",\"input\":{\"path\":\"a/b.ts\",\"content\":\""), 0);
			pieces_text(&msg, (size_t)5 << 19, &x, &words, false);
			assert_int_equal(sb_adds(&msg, "\",\"more\":[\""), 0);
			pieces_text(&msg, 100, &x, &words, false);
			assert_int_equal(sb_adds(&msg, "\"]}}]}"), 0);
			break;
		default: /* many small blocks: pieces begin between strings too */
			assert_int_equal(sb_adds(&msg, "{\"role\":\"assistant\",\"content\":["), 0);
			for (int b = 0; msg.len < ((size_t)5 << 19); b++) {
				assert_int_equal(sb_adds(&msg, b ? ",{\"type\":\"text\",\"text\":\"" : "{\"type\":\"text\",\"text\":\""), 0);
				pieces_text(&msg, 1 + pieces_rand(&x) % 300, &x, &words, false);
				assert_int_equal(sb_adds(&msg, "\"}"), 0);
			}
			assert_int_equal(sb_adds(&msg, "]}"), 0);
		}
		count = search_piece_count(msg.len);
		assert_true(count >= 3 && count < PIECES_MAX);
		{
			struct search_bytes m = { msg.len, mem_read, msg.buf, msg.len + 1 };

			assert_int_equal(search_text_pieces(&m, 1, count, pieces_collect, &whole), 0);
			assert_int_equal(whole.seen, count - 1);
		}
		for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
			struct search_bytes m = { msg.len, mem_read, msg.buf, windows[w] };
			struct pieces_got got = { 0 };

			assert_int_equal(search_text_pieces(&m, 0, SIZE_MAX, pieces_collect, &got), 0);
			for (size_t k = 1; k < count; k++)
				if (got.text[k].len != whole.text[k].len ||
				    memcmp(sb_str(&got.text[k]), sb_str(&whole.text[k]), got.text[k].len) != 0)
					fail_msg("shape %d: piece %zu read through a window of %zu bytes differs", shape, k,
						 windows[w]);
			pieces_release(&got);
		}
		for (size_t k = 1; k < count; k++) {
			struct search_bytes m = { msg.len, mem_read, msg.buf, 4099 };
			struct pieces_got one = { 0 };

			assert_int_equal(search_text_pieces(&m, k, k + 1, pieces_collect, &one), 0);
			assert_int_equal(one.seen, 1);
			assert_int_equal(one.text[k].len, whole.text[k].len);
			assert_memory_equal(sb_str(&one.text[k]), sb_str(&whole.text[k]), whole.text[k].len);
			pieces_release(&one);
		}
		seen = calloc(words, sizeof(*seen));
		assert_non_null(seen);
		assert_int_equal(search_text(msg.buf, SEARCH_ELEM_BYTES, &first), 0);
		pieces_mark(first.buf, first.len, seen, words);
		for (size_t k = 1; k < count; k++)
			pieces_mark(sb_str(&whole.text[k]), whole.text[k].len, seen, words);
		for (size_t v = 0; v < words; v++)
			if (!seen[v])
				fail_msg("shape %d: word w%07zu of %zu is in no piece", shape, v, words);
		pieces_release(&whole);
	}
}

static void test_query(void **state)
{
	static const struct {
		const char *query, *want; /* want: the expression, or (err) a piece of the message */
		bool err;
	} cases[] = {
		{ "race", "(\"race\")", false },
		{ "race condition", "(\"race\") AND (\"condition\")", false },
		{ "  \"race condition\"  writers* ", "(\"race condition\") AND (\"writers\"*)", false },
		{ "docker OR podman compose", "(\"docker\" OR \"podman\") AND (\"compose\")", false },
		{ "a OR b OR c", "(\"a\" OR \"b\" OR \"c\")", false },
		{ "cache -redis -\"lru list\"", "((\"cache\")) NOT (\"redis\") NOT (\"lru list\")", false },
		{ "snake_case src/a.ts ERR_CODE", "(\"snake_case\") AND (\"src/a.ts\") AND (\"ERR_CODE\")", false },
		{ "AND NOT NEAR or", "(\"AND\") AND (\"NOT\") AND (\"NEAR\") AND (\"or\")", false },
		{ "col:umn ^x (y) {z}", "(\"col:umn\") AND (\"^x\") AND (\"(y)\") AND (\"{z}\")", false },
		{ "\"a b\"*", "(\"a b\"*)", false },
		{ "caf\xc3\xa9", "(\"caf\xc3\xa9\")", false },
		{ "", "the query is empty", true },
		{ "   ", "the query is empty", true },
		{ "\"open", "a phrase is not closed", true },
		{ "a\"b", "a quote inside a word", true },
		{ "\"a\"b", "a phrase must end at a space", true },
		{ "\"--\"", "has no letter or digit", true },
		{ "\"\"", "has no letter or digit", true },
		{ "--", "has no letter or digit", true },
		{ "*", "has no letter or digit", true },
		{ "- a", "'-' excludes the word right after it", true },
		{ "-a", "a query needs a word to look for", true },
		{ "OR a", "'OR' goes between", true },
		{ "a OR", "'OR' goes between", true },
		{ "a OR OR b", "'OR' goes between", true },
		{ "-a OR b", "'OR' goes between", true },
		{ "a OR -b", "'OR' goes between", true },
		{ "bad \xff utf", "not valid UTF-8", true },
		{ "bell\x07\"x", "a quote inside a word: 'bell?\"x'", true },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_sb_ struct sb out = SB_INIT;
		char err[160] = "x";
		int r = search_query_parse(cases[i].query, &out, err, sizeof(err));

		if (cases[i].err) {
			if (r != -EINVAL || !strstr(err, cases[i].want) || out.len || strchr(err, '\n'))
				fail_msg("'%s': %d '%s', expected an error with '%s'", cases[i].query, r, err, cases[i].want);
		} else if (r != 0 || strcmp(sb_str(&out), cases[i].want) != 0 || err[0]) {
			fail_msg("'%s': %d '%s' (%s), expected '%s'", cases[i].query, r, sb_str(&out), err, cases[i].want);
		}
	}
	/* too many words, too long */
	{
		_cleanup_sb_ struct sb q = SB_INIT, out = SB_INIT;
		char err[160];

		for (int i = 0; i <= SEARCH_QUERY_TERMS; i++)
			assert_int_equal(sb_addf(&q, "w%d ", i), 0);
		assert_int_equal(search_query_parse(q.buf, &out, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "more than 64 words"));
		q.len = 0;
		for (int i = 0; i <= SEARCH_QUERY_MAX; i++)
			assert_int_equal(sb_add(&q, "x", 1), 0);
		assert_int_equal(search_query_parse(q.buf, &out, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "longer than"));
	}
}

/* ---- the index in a store --------------------------------------------------------------------- */

struct found {
	int n;
	char lines[8192];
};

static int collect_hit(void *ctx, const struct store_search_hit *h)
{
	struct found *f = ctx;
	size_t used = strlen(f->lines);

	f->n++;
	snprintf(f->lines + used, sizeof(f->lines) - used, "%s %s %lld %s %s|%s|%s\n", h->task, h->doc,
		 (long long)h->seq, h->stream, h->role ? h->role : "-", h->title, h->snippet);
	return 0;
}

/* The hits of query q, their lines in *f; fails the test if the search fails. */
static int search_q(struct store *st, const struct store_search_query *q, struct found *f)
{
	int r;

	memset(f, 0, sizeof(*f));
	r = store_search(st, q, collect_hit, f);
	if (r < 0)
		fail_msg("store_search('%s') failed: %s", q->text, strerror(-r));
	assert_int_equal(r, f->n);
	return r;
}

static int hits(struct store *st, const char *text)
{
	struct store_search_query q = { .text = text };
	struct found f;

	return search_q(st, &q, &f);
}

static int collect_problem(void *ctx, const char *line)
{
	struct found *f = ctx;
	size_t used = strlen(f->lines);

	f->n++;
	snprintf(f->lines + used, sizeof(f->lines) - used, "%s\n", line);
	return 0;
}

/* The index holds exactly the current messages, with their words. */
#define assert_index_sound(st) assert_index_sound_at(st, __LINE__)
static void assert_index_sound_at(struct store *st, int line)
{
	struct found f = { 0 };
	int r = store_check(st, collect_problem, NULL, &f);

	if (r != 0)
		fail_msg("line %d: the search index is not sound (%d):\n%s", line, r, f.lines);
}

/* Builds the index to the end, a step of max_rows at a time. */
static void build_all(struct store *st, size_t max_rows)
{
	bool done = false;

	for (int i = 0; !done; i++) {
		assert_int_equal(store_search_build(st, max_rows, &done), 0);
		assert_true(i < 100000);
	}
}

static void test_index_commits(void **state)
{
	struct store *st = *state;
	struct found f;

	commit(st, UI("1"), "[" M(1, "the docker compose volume") "," M(2, "other words") "]");
	commit(st, API("1"), "[" U("snake_case and ERR_CODE") ",{\"role\":\"assistant\",\"content\":[{\"type\":"
			     "\"tool_use\",\"name\":\"write\",\"input\":{\"path\":\"src/userCache.ts\"}}]}]");
	assert_index_sound(st);
	assert_int_equal(hits(st, "docker"), 1);
	{
		struct store_search_query q = { .text = "docker volume" };

		assert_int_equal(search_q(st, &q, &f), 1);
		assert_string_equal(f.lines, "1 " UI("1") " 0 ui assistant||the [docker] compose [volume]\n");
	}
	/* identifiers: whole, parts, any case, with punctuation */
	static const char *const found_api[] = { "userCache", "user", "cache", "usercache", "USERCACHE", "src/userCache.ts",
						 "userCache.ts", "snake_case", "snake", "case", "err_code", "ERR", "userCa*",
						 "\"snake case\"", "src" };
	for (size_t i = 0; i < ARRAY_SIZE(found_api); i++)
		if (hits(st, found_api[i]) != 1)
			fail_msg("'%s' finds %d messages, expected 1", found_api[i], hits(st, found_api[i]));
	assert_int_equal(hits(st, "\"case and\" snake"), 1);
	assert_int_equal(hits(st, "usercach"), 0);
	assert_int_equal(hits(st, "\"cache user\""), 0);

	/* a rewrite that drops a message, and moves the next one up */
	commit(st, UI("1"), "[" M(2, "other words") "]");
	assert_index_sound(st);
	assert_int_equal(hits(st, "docker"), 0);
	{
		struct store_search_query q = { .text = "other" };

		assert_int_equal(search_q(st, &q, &f), 1);
		assert_non_null(strstr(f.lines, UI("1") " 0 ui"));
	}
	/* an append (>> to messages.jsonl) */
	{
		struct store_line l = { U("appended zebra"), strlen(U("appended zebra")) };

		assert_int_equal(store_doc_append(st, API("1"), &l, 1, "role", &who), 0);
	}
	assert_index_sound(st);
	assert_int_equal(hits(st, "zebra"), 1);
	/* a raw doc (a damaged file kept as found) is no messages */
	assert_int_equal(store_doc_commit_raw(st, UI("1"), "[oops", 5, &who, "import-damaged"), 0);
	assert_index_sound(st);
	assert_int_equal(hits(st, "other"), 0);
	/* a removed file */
	assert_int_equal(store_doc_remove(st, API("1"), &who, "unlink"), 0);
	assert_index_sound(st);
	assert_int_equal(hits(st, "zebra"), 0);
}

/* Two writers: the merge keeps both, and the index follows (the rows it copies are new rows). */
static void test_index_merge(void **state)
{
	struct store *st = *state;
	struct store_base *base = NULL;
	static const char v1[] = "[" M(1, "alpha") "," M(2, "beta") "]";
	static const char theirs[] = "[" M(1, "alpha") "," M(2, "beta") "," M(3, "gamma") "]";
	static const char mine[] = "[" M(1, "alpha") "," M(4, "delta") "]";
	struct store_commit c = { .path = UI("2"), .data = mine, .len = strlen(mine), .who = &who, .kind = "write",
				  .merge = true };
	bool merged = false;

	commit(st, UI("2"), v1);
	assert_int_equal(store_base_at(st, UI("2"), 1, &base), 0);
	commit(st, UI("2"), theirs);
	c.base = base;
	assert_int_equal(store_commit(st, &c, NULL, &merged), 0);
	assert_true(merged);
	store_base_free(base);
	assert_index_sound(st);
	assert_int_equal(hits(st, "alpha"), 1);
	assert_int_equal(hits(st, "gamma"), 1);
	assert_int_equal(hits(st, "delta"), 1);
	assert_int_equal(hits(st, "beta"), 0); /* the writer removed it, having seen it */
}

/* The trash takes a task's messages out of the index, and the way back puts them in. */
static void test_index_trash(void **state)
{
	struct store *st = *state;

	commit(st, HIST, "[{\"id\":\"3\",\"ts\":1,\"task\":\"Fix the quokka\"}]");
	commit(st, UI("3"), "[" M(1, "quokka") "]");
	commit(st, API("3"), "[" U("quokka again") "]");
	assert_int_equal(hits(st, "quokka"), 2);
	assert_int_equal(store_task_trash(st, "3", &who), 0);
	assert_index_sound(st);
	assert_int_equal(hits(st, "quokka"), 0);
	assert_int_equal(store_task_restore(st, "3", &who), 0);
	assert_index_sound(st);
	{
		struct store_search_query q = { .text = "quokka", .stream = STORE_SEARCH_UI };
		struct found f;

		assert_int_equal(search_q(st, &q, &f), 1);
		assert_non_null(strstr(f.lines, "|Fix the quokka|"));
	}
	assert_int_equal(hits(st, "quokka"), 2);
}

/* `convfs restore` of an older version is a commit like any other. */
static void test_index_restore(void **state)
{
	struct store *st = *state;
	const char *const alone[] = { UI("4") };

	commit(st, UI("4"), "[" M(1, "first wombat") "]");
	commit(st, UI("4"), "[" M(1, "second numbat") "]");
	assert_int_equal(store_doc_restore(st, UI("4"), alone, 1, 1, &who, NULL), 0);
	assert_index_sound(st);
	assert_int_equal(hits(st, "wombat"), 1);
	assert_int_equal(hits(st, "numbat"), 0);
}

/* A message over 1 MiB: its first MiB is indexed (read a piece at a time), the rest in pieces, and it leaves the index whole. */
static void test_index_large(void **state)
{
	struct store *st = *state;
	_cleanup_sb_ struct sb doc = SB_INIT;
	char path[] = "/tmp/convfs-search-large-XXXXXX";
	struct store_commit c = { .path = API("5"), .who = &who, .kind = "write", .fd = -1 };
	int fd;

	assert_int_equal(sb_adds(&doc, "[" U("small aardvark") ",{\"role\":\"user\",\"content\":\"bigstart "), 0);
	for (size_t i = 0; doc.len < ((size_t)3 << 20); i++)
		assert_int_equal(sb_adds(&doc, i == 200000 ? "lateword " : "filler "), 0);
	assert_int_equal(sb_adds(&doc, "end\"}]"), 0);
	/* from a file, as the daemon commits a large save: the big row is written a piece at a time */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, doc.buf, doc.len), (ssize_t)doc.len);
	c.fd = fd;
	c.len = doc.len;
	assert_int_equal(store_commit(st, &c, NULL, NULL), 0);
	close(fd);
	assert_index_sound(st);
	assert_int_equal(hits(st, "bigstart"), 1);
	assert_int_equal(hits(st, "aardvark"), 1);
	/* past the first MiB: in a piece of its own; and a word in every piece is one hit, the message */
	assert_int_equal(hits(st, "lateword"), 1);
	assert_int_equal(hits(st, "filler"), 1);
	assert_int_equal(hits(st, "filler lateword"), 1);
	/* a merge copies it (a current copy: indexed), and the rewrite closes it (a closed copy: not) */
	{
		static const char mine[] = "[" U("small aardvark") "," U("mine") "]";
		struct store_commit m = { .path = API("5"), .data = mine, .len = strlen(mine), .who = &who, .kind = "write",
					  .merge = true };

		assert_int_equal(store_commit(st, &m, NULL, NULL), 0);
	}
	assert_index_sound(st);
	assert_int_equal(hits(st, "bigstart"), 1);
	commit(st, API("5"), "[" U("only this") "]");
	assert_index_sound(st);
	assert_int_equal(hits(st, "bigstart"), 0);
}

/*
 * Commits to path the messages "[small aardvark, big]", big a message of
 * size bytes whose words are long runs (not indexed: cheap to index), but
 * words[i] at offsets at[i] (ascending).
 */
static void commit_big(struct store *st, const char *path, size_t size, const char *const *words, const size_t *at,
		       size_t n)
{
	static const char run[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ";
	_cleanup_sb_ struct sb doc = SB_INIT;
	size_t k = 0;

	assert_int_equal(sb_adds(&doc, "[" U("small aardvark") ",{\"role\":\"user\",\"content\":\"bigstart "), 0);
	while (doc.len < size) {
		if (k < n && doc.len >= at[k]) {
			assert_int_equal(sb_adds(&doc, words[k++]), 0);
			assert_int_equal(sb_adds(&doc, " "), 0);
		} else {
			assert_int_equal(sb_adds(&doc, run), 0);
		}
	}
	assert_int_equal(sb_adds(&doc, "end\"}]"), 0);
	assert_int_equal(store_doc_commit(st, path, doc.buf, doc.len, &who, "write"), 0);
}

static int64_t vocab_count(struct store *st, const char *term)
{
	char sql[256];

	assert_int_equal(sqlite3_exec(st->db, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING "
					      "fts5vocab(main, search, instance)", NULL, NULL, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM temp.vocab WHERE term = '%s'", term);
	return db_int(st->db, sql);
}

#define MIB ((size_t)1 << 20)

/* check finds the damage sql makes (a line with want); undo mends it. */
static void assert_check_finds(struct store *st, const char *sql, const char *undo, const char *want)
{
	struct found f = { 0 };

	assert_int_equal(sqlite3_exec(st->db, sql, NULL, NULL, NULL), SQLITE_OK);
	if (store_check(st, collect_problem, NULL, &f) < 1 || !strstr(f.lines, want))
		fail_msg("after %s: expected a line with '%s', got:\n%s", sql, want, f.lines);
	assert_int_equal(sqlite3_exec(st->db, undo, NULL, NULL, NULL), SQLITE_OK);
	assert_index_sound(st);
}

/*
 * The pieces of a large message past the first SEARCH_PIECES_NOW (2 here):
 * its commit leaves them to the steps behind the mount, which take them in
 * a few at a time; the rewrite that closes it takes out what it indexed and
 * leaves the rest's way out to the steps too. Meanwhile the index is sound
 * (check), a search finds only the current messages, and forget takes out
 * all, pieces left for later included.
 */
static void test_index_later(void **state)
{
	static const char *const words[] = { "midword", "piecethreeword", "lateword" };
	static const size_t at[] = { MIB + MIB / 2, 3 * MIB + MIB / 2, 4 * MIB + MIB / 2 };
	struct store *st = *state;
	struct store_search_state s;
	struct store_forget f = { .match = "lateword" };
	bool done = false;

	build_all(st, 100); /* a new store's build, over: each step is of the pieces */
	st->search_pieces_now = 2;
	commit_big(st, API("21"), 5 * MIB, words, at, 3);
	assert_int_equal(hits(st, "bigstart"), 1);
	assert_int_equal(hits(st, "midword"), 1);
	assert_int_equal(hits(st, "lateword"), 0);
	assert_int_equal(store_search_state(st, false, &s), 0);
	assert_true(s.building);
	assert_int_equal(s.to_go, 1);
	assert_int_equal(s.pieces_to_go, 3); /* pieces 2, 3 and 4 */
	assert_true(store_search_more());
	assert_false(store_search_more());
	assert_int_equal(store_search_waiting(st), 1);
	assert_index_sound(st);
	assert_check_finds(st, "UPDATE search_later SET next = 3", "UPDATE search_later SET next = 2",
			   "has 1 of the 2 more pieces");
	assert_check_finds(st, "UPDATE search_later SET id = -id", "UPDATE search_later SET id = -id",
			   "wait to be indexed from piece 2 on, but it is no row");
	/* one step: two pieces */
	assert_int_equal(store_search_build(st, 100, &done), 0);
	assert_false(done);
	assert_int_equal(hits(st, "piecethreeword"), 1);
	assert_int_equal(hits(st, "lateword"), 0);
	assert_index_sound(st);
	build_all(st, 100);
	assert_int_equal(hits(st, "lateword"), 1);
	assert_int_equal(store_search_state(st, false, &s), 0);
	assert_false(s.building);
	assert_int_equal(store_search_waiting(st), 0);
	assert_index_sound(st);

	/* closed: pieces 2 to 4 wait to leave, and are found by no search meanwhile */
	commit(st, API("21"), "[" U("only this") "]");
	assert_int_equal(hits(st, "lateword"), 0);
	assert_int_equal(hits(st, "bigstart"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_stale"), 1);
	assert_int_equal(vocab_count(st, "lateword"), 1);
	assert_true(store_search_more());
	assert_int_equal(store_search_waiting(st), 1);
	assert_index_sound(st);
	assert_check_finds(st, "UPDATE search_stale SET text_id = -text_id", "UPDATE search_stale SET text_id = -text_id",
			   "wait to leave the index, but their text's row");
	assert_check_finds(st, "UPDATE search_stale SET next = 4", "UPDATE search_stale SET next = 2", "which no message has");
	build_all(st, 100);
	assert_int_equal(vocab_count(st, "lateword"), 0);
	assert_int_equal(vocab_count(st, "piecethreeword"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_stale"), 0);
	assert_index_sound(st);

	/* closed halfway through: what the steps indexed leaves later, what they had not, never went in */
	commit_big(st, API("22"), 5 * MIB, words, at, 3);
	assert_int_equal(store_search_build(st, 100, &done), 0);
	commit(st, API("22"), "[" U("only this") "]");
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_later"), 0);
	assert_int_equal(db_int(st->db, "SELECT next FROM search_stale"), 2);
	assert_int_equal(db_int(st->db, "SELECT upto FROM search_stale"), 4);
	assert_index_sound(st);
	build_all(st, 100);
	assert_int_equal(vocab_count(st, "piecethreeword"), 0);
	assert_index_sound(st);

	/* rows of the two tables whose text is gone (damage): the steps let go of them, with a line each */
	assert_int_equal(sqlite3_exec(st->db, "INSERT INTO search_later VALUES (999999, 2); "
					      "INSERT INTO search_stale VALUES (999998, 999997, 2, 4)", NULL, NULL, NULL),
			 SQLITE_OK);
	build_all(st, 100);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_later"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_stale"), 0);
	assert_index_sound(st);

	/* forget, with pieces both to come in (24's) and to go out (23's): none of their words is left */
	commit_big(st, API("23"), 5 * MIB, words, at, 3);
	commit_big(st, API("24"), 5 * MIB, words, at, 3);
	assert_int_equal(store_search_build(st, 100, &done), 0); /* 23's pieces 2 and 3 */
	commit(st, API("23"), "[" U("only this") "]");           /* them to go out */
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	build_all(st, 100);
	/* the messages that held it are gone, all of their text; the small one beside 24's stays */
	assert_int_equal(vocab_count(st, "lateword"), 0);
	assert_int_equal(vocab_count(st, "piecethreeword"), 0);
	assert_int_equal(hits(st, "aardvark"), 1);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_later"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM search_stale"), 0);
	assert_index_sound(st);
}

/* The snippet of a hit, from its last field of a line of collect_hit(). */
static const char *snippet_of(const struct found *f)
{
	const char *bar = strrchr(f->lines, '|');

	return bar ? bar + 1 : "";
}

/*
 * What a hit shows of its message: a window of the message's tokens around
 * the words found, marked, the text's own bytes at its ends when it begins
 * or ends the text, an ellipsis otherwise; the window with the most of the
 * query's words, then the most of them. A message that holds one word
 * 150,000 times is shown as fast as any: FTS5's own snippet() took minutes
 * (it walks every instance again for each), with the store's lock held.
 */
static void test_snippet(void **state)
{
	struct store *st = *state;
	struct store_search_query q = { .text = "needle", .snippet_tokens = 5 };
	struct found f;

	commit(st, UI("20"), "[" M(1, "(one two three needle four five six seven eight nine ten eleven) end.") "]");
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "…two three [needle] four five…\n");
	q.text = "one";
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "([one] two three needle four…\n");
	q.text = "end";
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "…eight nine ten eleven) [end].\n");
	/* the window with both words, then the one with the most of them */
	commit(st, UI("21"), "[" M(1, "alpha x x x x x x beta x x x x alpha beta alpha x x x x x x x x beta") "]");
	q.text = "alpha beta";
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "…x [alpha] [beta] [alpha] x…\n");
	q.text = "\"alpha beta\"";
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "…x [alpha beta] alpha x…\n");
	/* one word 150,000 times */
	{
		_cleanup_sb_ struct sb doc = SB_INIT;

		assert_int_equal(sb_adds(&doc, "[{\"role\":\"user\",\"content\":\""), 0);
		for (int i = 0; i < 150000; i++)
			assert_int_equal(sb_adds(&doc, "filler "), 0);
		assert_int_equal(sb_adds(&doc, "\"}]"), 0);
		assert_int_equal(store_doc_commit(st, API("22"), doc.buf, doc.len, &who, "write"), 0);
	}
	q.text = "filler";
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_string_equal(snippet_of(&f), "[filler] [filler] [filler] [filler] [filler]…\n");
}

/* A first take-in's rows wait for the build, which can stop anywhere and go on. */
static void test_build(void **state)
{
	struct store *st = *state;
	struct store_search_state s;

	assert_int_equal(store_search_state(st, true, &s), 0);
	assert_true(s.present && s.building); /* a new store: its first take-in is to come */
	assert_int_equal(store_batch_begin(st), 0);
	commit(st, UI("6"), "[" M(1, "batched ocelot") "," M(2, "more") "]");
	commit(st, API("6"), "[" U("ocelot too") "]");
	commit(st, UI("6"), "[" M(1, "batched ocelot") "]"); /* a row the batch made closes: never indexed */
	assert_int_equal(store_batch_end(st), 0);
	commit(st, UI("7"), "[" M(1, "inline ocelot") "]"); /* outside a batch: at once */
	assert_int_equal(hits(st, "ocelot"), 1);
	assert_int_equal(store_search_state(st, true, &s), 0);
	assert_true(s.building);
	assert_int_equal(s.indexed, 1);
	assert_int_equal(s.to_go, 2);
	assert_index_sound(st); /* what the build has yet to reach is not missing */
	/* one row a step: a cut-short build goes on from its cursor */
	{
		bool done = false;

		assert_int_equal(store_search_build(st, 1, &done), 0);
		assert_false(done);
		assert_int_equal(db_int(st->db, "SELECT CAST(value AS INTEGER) > 0 FROM meta WHERE key = 'search_cursor'"), 1);
	}
	build_all(st, 1);
	assert_int_equal(store_search_state(st, true, &s), 0);
	assert_false(s.building);
	assert_int_equal(s.indexed, 3);
	assert_int_equal(hits(st, "ocelot"), 3);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM meta WHERE key = 'search_cursor'"), 0);
	assert_index_sound(st);
	/* once built, a batch indexes its rows at once */
	assert_int_equal(store_batch_begin(st), 0);
	commit(st, UI("8"), "[" M(1, "late ocelot") "]");
	assert_int_equal(store_batch_end(st), 0);
	assert_int_equal(hits(st, "ocelot"), 4);
}

/*
 * The store at path set back as sql does (with the search functions at
 * hand), then opened again: its migration has its index under way, with
 * indexed messages in it and to_go still to come.
 */
static struct store *reopen_after(const char *path, const char *sql, int64_t indexed, int64_t to_go)
{
	struct store_search_state s;
	struct store *st = NULL;
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(search_register(db), 0);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(store_search_state(st, true, &s), 0);
	assert_true(s.present && s.building);
	assert_int_equal(s.indexed, indexed);
	assert_int_equal(s.to_go, to_go);
	return st;
}

/* A store from before the index: the migration makes it, empty, and the build fills it. */
static void test_migration(void **state)
{
	char dir[] = "/tmp/convfs-search-XXXXXX", path[64];
	struct store *st = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	build_all(st, 100);
	commit(st, UI("9"), "[" M(1, "migrated meerkat") "]");
	store_free(st);
	/* back to schema 14, as the convfs before the index left it */
	st = reopen_after(path, "DROP TABLE search; DROP VIEW search_text; PRAGMA user_version = 14", 0, 1);
	assert_int_equal(hits(st, "meerkat"), 0);
	build_all(st, 100);
	assert_int_equal(hits(st, "meerkat"), 1);
	assert_index_sound(st);
	store_free(st);
	remove_store_file(dir, path);
}

/*
 * A store of schema 16, whose index holds the first MiB of a large message
 * only: the migration has the build give it its pieces, after which its
 * last word is found.
 */
static void test_migration_pieces(void **state)
{
	char dir[] = "/tmp/convfs-search-XXXXXX", path[64];
	_cleanup_sb_ struct sb doc = SB_INIT;
	struct store *st = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	build_all(st, 100);
	assert_int_equal(sb_adds(&doc, "[" U("small aardvark") ",{\"role\":\"user\",\"content\":\""), 0);
	while (doc.len < ((size_t)5 << 19))
		assert_int_equal(sb_adds(&doc, "filler "), 0);
	assert_int_equal(sb_adds(&doc, "lastword\"}]"), 0);
	assert_int_equal(store_doc_commit(st, API("7"), doc.buf, doc.len, &who, "write"), 0);
	assert_int_equal(hits(st, "lastword"), 1);
	store_free(st);
	/* back to schema 16: the pieces out of the index, the view as it was */
	st = reopen_after(path, "INSERT INTO search(search, rowid, body) SELECT 'delete', z.id, convfs_piece(z.id) "
				"FROM search_docsize z WHERE z.id < 0; DROP VIEW search_text; CREATE VIEW "
				"search_text(id, body) AS SELECT id, " SEARCH_BODY("elems") " FROM elems; "
				"PRAGMA user_version = 16", 2, 1);
	assert_int_equal(hits(st, "lastword"), 0);
	assert_int_equal(hits(st, "aardvark"), 1);
	build_all(st, 100);
	assert_int_equal(hits(st, "lastword"), 1);
	assert_index_sound(st);
	store_free(st);
	remove_store_file(dir, path);
}

/*
 * A store of schema 17, whose index holds the first 16 pieces of a large
 * message only: read as it is (read-only), it is sound; the migration
 * leaves the rest to the steps, after which its last word is found.
 */
static void test_migration_later(void **state)
{
	static const char *const words[] = { "tailword" };
	static const size_t at[] = { 17 * MIB + MIB / 2 };
	char dir[] = "/tmp/convfs-search-XXXXXX", path[64];
	struct store_search_state s;
	struct store *st = NULL;
	sqlite3 *db = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	build_all(st, 100);
	commit_big(st, API("7"), 18 * MIB, words, at, 1); /* 19 pieces: 16 now, 3 later */
	assert_int_equal(hits(st, "tailword"), 0);
	build_all(st, 100);
	assert_int_equal(hits(st, "tailword"), 1);
	store_free(st);
	/* back to schema 17: the pieces past the 16th out of the index, no tables of pieces, the view as it was */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(search_register(db), 0);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO search(search, rowid, body) SELECT 'delete', z.id, "
					  "convfs_piece(z.id) FROM search_docsize z WHERE z.id < 0 AND (-z.id & 65535) >= 16; "
					  "DROP TABLE search_later; DROP TABLE search_stale; DROP VIEW search_text; "
					  "CREATE VIEW search_text(id, body) AS SELECT id, " SEARCH_BODY("elems") " FROM elems "
					  "UNION ALL SELECT z.id, convfs_piece(z.id) FROM search_docsize z WHERE z.id < 0; "
					  "PRAGMA user_version = 17",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	/* read as it is: the message's pieces past the 16th are to come, nothing is amiss */
	assert_int_equal(store_open(path, STORE_OPEN_READONLY | STORE_OPEN_AS_IS, &st), 0);
	assert_index_sound(st);
	assert_int_equal(hits(st, "bigstart"), 1);
	assert_int_equal(hits(st, "tailword"), 0);
	store_free(st);
	/* migrated: the rest to come, and then found */
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(store_search_state(st, false, &s), 0);
	assert_true(s.building);
	assert_int_equal(s.pieces_to_go, db_int(st->db, "SELECT (len - 1) / 1048576 + 1 - 16 FROM elems "
							"WHERE len > 1048576 AND rev_to IS NULL"));
	assert_true(s.pieces_to_go >= 2);
	assert_index_sound(st);
	build_all(st, 100);
	assert_int_equal(hits(st, "tailword"), 1);
	assert_index_sound(st);
	store_free(st);
	remove_store_file(dir, path);
}

/* The filters, the order, the limit. */
static void test_filters(void **state)
{
	struct store *st = *state;
	struct store_search_query q = { .text = "lynx" };
	struct found f;

	commit(st, HIST, "[{\"id\":\"10\",\"ts\":1,\"task\":\"first\",\"cwdOnTaskInitialization\":\"/w/a\"},"
			 "{\"id\":\"11\",\"ts\":1,\"task\":\"second\",\"cwdOnTaskInitialization\":\"/w/b\"}]");
	commit(st, UI("10"), "[" M(1000, "lynx") "," M(3000, "lynx lynx lynx") "]");
	commit(st, API("11"), "[{\"role\":\"user\",\"content\":\"lynx\",\"ts\":2000},"
			      "{\"role\":\"assistant\",\"content\":\"lynx\",\"ts\":4000}]");
	assert_int_equal(search_q(st, &q, &f), 4);
	/* the best first (three times), then the ties newest first */
	assert_true(strncmp(f.lines, "10 " UI("10") " 1 ", strlen("10 " UI("10") " 1 ")) == 0);
	assert_non_null(strstr(f.lines, "\n11 " API("11") " 1 api assistant|second|[lynx]\n11 " API("11") " 0 api user"));
	q.limit = 2;
	assert_int_equal(search_q(st, &q, &f), 2);
	q.limit = 0;
	q.role = STORE_SEARCH_USER;
	assert_int_equal(search_q(st, &q, &f), 1);
	assert_non_null(strstr(f.lines, "api user"));
	q.role = STORE_SEARCH_ANY_ROLE;
	q.stream = STORE_SEARCH_UI;
	assert_int_equal(search_q(st, &q, &f), 2);
	q.stream = STORE_SEARCH_ANY_STREAM;
	q.since_ms = 2000;
	q.until_ms = 4000;
	assert_int_equal(search_q(st, &q, &f), 2); /* 2000 and 3000 */
	q.since_ms = q.until_ms = 0;
	{
		char key[16];

		snprintf(key, sizeof(key), "%u", store_workspace_key("/w/b"));
		q.ws_key = key;
		assert_int_equal(search_q(st, &q, &f), 2);
		q.ws_key = "";
		assert_int_equal(search_q(st, &q, &f), 0);
	}
	q.ws_key = NULL;
	q.text = "lynx -\"lynx lynx\"";
	assert_int_equal(search_q(st, &q, &f), 3);
	q.text = "\"open";
	assert_int_equal(store_search(st, &q, collect_hit, &f), -EINVAL);
}

/* What `convfs check` finds when the index and the messages part. */
static void test_check(void **state)
{
	static const struct {
		const char *sql, *want;
	} cases[] = {
		{ "INSERT INTO search(search, rowid, body) SELECT 'delete', id, body FROM search_text "
		  "WHERE id = (SELECT max(id) FROM elems WHERE rev_to IS NULL)", "current messages are not in the search index" },
		{ "INSERT INTO search(rowid, body) SELECT id, body FROM search_text "
		  "WHERE id = (SELECT min(id) FROM elems WHERE rev_to IS NOT NULL)", "which is not a current message" },
		{ "INSERT INTO search(rowid, body) VALUES (9999, 'ghost')", "holds row 9999, which no message has" },
		{ "UPDATE elems SET json = '" U("other text here") "' WHERE rev_to IS NULL AND json LIKE '%kiwi%'",
		  "is indexed with 1 words, its text has 3" },
		{ "UPDATE elems SET json = '" U("lime") "' WHERE rev_to IS NULL AND json LIKE '%kiwi%'",
		  "the words of the search index (1) are not those of the messages' text (1)" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct store *st = NULL;
		struct found f = { 0 };

		assert_int_equal(store_open(":memory:", 0, &st), 0);
		build_all(st, 100); /* while it builds, a missing message is the build's to take in */
		commit(st, API("12"), "[" U("kiwi") "," U("apple pear") "]");
		commit(st, API("12"), "[" U("kiwi") "]");
		assert_index_sound(st);
		assert_int_equal(sqlite3_exec(st->db, cases[i].sql, NULL, NULL, NULL), SQLITE_OK);
		if (store_check(st, collect_problem, NULL, &f) < 1 || !strstr(f.lines, cases[i].want))
			fail_msg("after %s: expected a line with '%s', got:\n%s", cases[i].sql, cases[i].want, f.lines);
		store_free(st);
	}
}

/* The bytes of a file, whole (free()). */
static char *file_bytes(const char *path, size_t *ret_len)
{
	_cleanup_sb_ struct sb sb = SB_INIT;
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*ret_len = 0;
	if (fd < 0)
		return strdup("");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		assert_int_equal(sb_add(&sb, buf, (size_t)n), 0);
	close(fd);
	return sb_detach(&sb, ret_len);
}

static void assert_file_lacks(const char *path, const char *text)
{
	size_t len;
	char *bytes = file_bytes(path, &len);

	if (memmem(bytes, len, text, strlen(text)))
		fail_msg("'%s' still holds '%s'", path, text);
	free(bytes);
}

/* After `convfs forget`, no word of the secret is in the index, and no byte of it in the file. */
/* Commits to path a message of 3 MiB, "ok" first, then a large one with word 2 MiB into it. */
static void commit_large(struct store *st, const char *path, const char *word)
{
	_cleanup_sb_ struct sb doc = SB_INIT;
	bool put = false;

	assert_int_equal(sb_adds(&doc, "[" U("ok") ",{\"role\":\"user\",\"content\":\""), 0);
	while (doc.len < ((size_t)3 << 20)) {
		bool now = !put && doc.len > ((size_t)2 << 20);

		assert_int_equal(sb_adds(&doc, now ? word : "filler"), 0);
		assert_int_equal(sb_adds(&doc, " "), 0);
		put = put || now;
	}
	assert_int_equal(sb_adds(&doc, "\"}]"), 0);
	assert_int_equal(store_doc_commit(st, path, doc.buf, doc.len, &who, "write"), 0);
}

static void test_forget(void **state)
{
	char dir[] = "/tmp/convfs-search-XXXXXX", path[64], side[80];
	struct store_forget f = { .match = "hunter2xyzzy" };
	struct store *st = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	build_all(st, 100);
	commit(st, API("13"), "[" U("my password is hunter2xyzzy") "," U("ok") "]");
	commit(st, API("13"), "[" U("ok") "]"); /* also in an older version */
	commit(st, API("13"), "[" U("ok") "," U("again hunter2xyzzy, sorry") "]");
	commit(st, UI("14"), "[" M(1, "hunter2xyzzy") "]");
	commit_large(st, API("16"), "hunter2xyzzy"); /* 2 MiB into a message: in one of its pieces */
	assert_int_equal(hits(st, "hunter2xyzzy"), 3);
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	assert_int_equal(hits(st, "hunter2xyzzy"), 0);
	assert_int_equal(hits(st, "sorry"), 0);
	assert_int_equal(hits(st, "ok"), 2);
	assert_index_sound(st);
	assert_int_equal(sqlite3_exec(st->db, "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, search, row)", NULL, NULL,
				      NULL), SQLITE_OK);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM temp.v WHERE term LIKE 'hunter%'"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM temp.v WHERE term = 'ok'"), 1);
	/* a whole task: its rows are deleted, current ones included */
	f = (struct store_forget){ .task = "15" };
	commit(st, UI("15"), "[" M(1, "zanzibarword") "]");
	commit_large(st, API("15"), "zanzibarword");
	assert_int_equal(hits(st, "zanzibarword"), 2);
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	assert_int_equal(hits(st, "zanzibarword"), 0);
	assert_index_sound(st);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM temp.v WHERE term = 'zanzibarword'"), 0);
	store_free(st);
	snprintf(side, sizeof(side), "%s-wal", path);
	assert_file_lacks(path, "hunter2xyzzy");
	assert_file_lacks(side, "hunter2xyzzy");
	assert_file_lacks(path, "zanzibarword");
	assert_file_lacks(side, "zanzibarword");
	remove_store_file(dir, path);
}

static int add_task(void *ctx, const struct store_search_task *t)
{
	struct found *f = ctx;
	size_t used = strlen(f->lines);

	f->n++;
	snprintf(f->lines + used, sizeof(f->lines) - used, "%lld %s %s\n", (long long)t->rank, t->task,
		 t->ws_key ? t->ws_path : "-");
	return 0;
}

/*
 * The tasks of a query (a view of searches): each once, in the order of
 * its best hit, ties the newest first; a limit; the workspace; a query
 * that is not one.
 */
static void test_tasks(void **state)
{
	struct store *st = *state;
	struct store_search_query q = { .text = "heron" };
	struct found f = { 0 };

	commit(st, HIST, "[{\"id\":\"20\",\"ts\":1,\"task\":\"a\",\"cwdOnTaskInitialization\":\"/w/a\"}]");
	commit(st, UI("20"), "[" M(5000, "heron") "," M(5001, "heron and more words here") "]"); /* the newest */
	commit(st, UI("21"), "[" M(2000, "heron heron heron") "]");
	commit(st, API("22"), "[" U("heron and many other words in it to make it weak") "]");
	commit(st, UI("23"), "[" M(3000, "no such bird") "]");
	assert_int_equal(store_search_tasks(st, &q, add_task, &f), 3);
	assert_string_equal(f.lines, "1 21 -\n2 20 /w/a\n3 22 -\n");
	f = (struct found){ 0 };
	q.limit = 2;
	assert_int_equal(store_search_tasks(st, &q, add_task, &f), 2);
	assert_string_equal(f.lines, "1 21 -\n2 20 /w/a\n");
	q.text = "\"heron";
	assert_int_equal(store_search_tasks(st, &q, add_task, &f), -EINVAL);
}

/* Whether the snippet of the hit marks "gammaword" (its text before the word is the long runs). */
static int snippet_marks(void *ctx, const struct store_search_hit *h)
{
	*(bool *)ctx = strstr(h->snippet, "[gammaword]") != NULL;
	return 0;
}

/*
 * A message over 1 MiB matches a query as a whole, as any message does,
 * though the index holds it in pieces: the words of a query in different
 * pieces find it, and a word excluded in any piece excludes it, for the
 * hits, the filters and the tasks (search folders).
 */
static void test_whole_message(void **state)
{
	static const char *const words[] = { "alphaword", "betaword", "gammaword" };
	static const size_t at[] = { MIB / 2, 2 * MIB + MIB / 2, 3 * MIB + MIB / 2 };
	static const struct {
		const char *query;
		int hits, tasks;
	} cases[] = {
		{ "alphaword betaword", 2, 2 },    /* pieces 1 and 3 of the large one; the small one */
		{ "betaword gammaword", 1, 1 },    /* pieces 3 and 4 */
		{ "gammaword bigstart", 1, 1 },    /* pieces 4 and 1 */
		{ "alphaword betaword gammaword", 1, 1 },
		{ "alphaword -gammaword", 1, 1 },  /* the small one alone: the large one has gammaword */
		{ "betaword -alphaword", 0, 0 },
		{ "bigstart alphaword -gammaword", 0, 0 }, /* piece 1 matches, piece 4 excludes */
		{ "gammaword -nosuchword", 1, 1 },
		{ "nosuchword OR gammaword alphaword", 1, 1 },
		{ "gammaword nosuchword", 0, 0 },
	};
	struct store *st = *state;

	build_all(st, 100);
	commit_big(st, API("30"), 4 * MIB, words, at, 3);
	commit(st, API("31"), "[" U("alphaword and betaword") "]");
	assert_index_sound(st);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct store_search_query q = { .text = cases[i].query };
		struct found f;

		if (search_q(st, &q, &f) != cases[i].hits)
			fail_msg("'%s': %d hits, not %d:\n%s", cases[i].query, f.n, cases[i].hits, f.lines);
		memset(&f, 0, sizeof(f));
		assert_int_equal(store_search_tasks(st, &q, add_task, &f), cases[i].tasks);
	}
	/* shown by its piece of the first term, the terms of that piece marked */
	{
		struct store_search_query q = { .text = "gammaword bigstart" };
		struct found f;
		bool marked = false;

		assert_int_equal(store_search(st, &q, snippet_marks, &marked), 1);
		assert_true(marked);
		q.stream = STORE_SEARCH_UI;
		assert_int_equal(search_q(st, &q, &f), 0);
		q.stream = STORE_SEARCH_API;
		q.role = STORE_SEARCH_USER;
		assert_int_equal(search_q(st, &q, &f), 1);
		q.role = STORE_SEARCH_ASSISTANT;
		assert_int_equal(search_q(st, &q, &f), 0);
	}
	/* the tasks: the large message's own task, ranked among the others */
	{
		struct store_search_query q = { .text = "betaword gammaword" };
		struct found f = { 0 };

		assert_int_equal(store_search_tasks(st, &q, add_task, &f), 1);
		assert_string_equal(f.lines, "1 30 -\n");
		q.text = "alphaword -gammaword";
		f = (struct found){ 0 };
		assert_int_equal(store_search_tasks(st, &q, add_task, &f), 1);
		assert_string_equal(f.lines, "1 31 -\n");
		q.text = "alphaword betaword";
		q.limit = 1;
		f = (struct found){ 0 };
		assert_int_equal(store_search_tasks(st, &q, add_task, &f), 1);
	}
}

/* ---- many hits: read in batches ------------------------------------------------------------ */

#define MANY 600

struct many {
	int n;
	int64_t id[MANY];
	char line[MANY][96];
};

static int collect_many(void *ctx, const struct store_search_hit *h)
{
	struct many *m = ctx;

	assert_true(m->n < MANY);
	m->id[m->n] = h->elem_id;
	snprintf(m->line[m->n], sizeof(m->line[0]), "%lld %s %s|%s", (long long)h->seq, h->doc, h->title, h->snippet);
	m->n++;
	return 0;
}

/*
 * More hits than one batch of details: those of a query shown whole are read
 * a batch at a time in one walk of the match, those of a small limit one at
 * a time; both give every hit, in the ranking's order, with its snippet.
 */
static void test_many(void **state)
{
	struct store *st = *state;
	struct store_search_query q = { .text = "otter" };
	_cleanup_sb_ struct sb doc = SB_INIT;
	static struct many all, some;
	bool seen[MANY] = { false };

	commit(st, HIST, "[{\"id\":\"30\",\"ts\":1,\"task\":\"rivers\",\"cwdOnTaskInitialization\":\"/w/a\"}]");
	assert_int_equal(sb_adds(&doc, "["), 0);
	for (int i = 0; i < MANY; i++) {
		/* scores of several kinds, and many ties among them (the newest first) */
		assert_int_equal(sb_addf(&doc, "%s{\"ts\":%d,\"type\":\"say\",\"say\":\"text\",\"text\":\"", i ? "," : "",
					 1000 + i), 0);
		for (int k = 0; k <= i % 7; k++)
			assert_int_equal(sb_adds(&doc, "otter "), 0);
		for (int k = 0; k < i % 5; k++)
			assert_int_equal(sb_adds(&doc, "stone "), 0);
		assert_int_equal(sb_adds(&doc, "end\"}"), 0);
	}
	assert_int_equal(sb_adds(&doc, "]"), 0);
	commit(st, UI("30"), doc.buf);
	assert_int_equal(store_search(st, &q, collect_many, &all), MANY);
	for (int i = 0; i < MANY; i++) {
		long long seq = strtoll(all.line[i], NULL, 10);

		assert_non_null(strstr(all.line[i], " " UI("30") " rivers|"));
		if (!strstr(all.line[i], "[otter]"))
			fail_msg("hit %d has no marked snippet: %s", i, all.line[i]);
		assert_true(seq >= 0 && seq < MANY && !seen[seq]);
		seen[seq] = true;
	}
	for (int64_t limit = 10; limit <= 300; limit += 290) {
		q.limit = limit; /* 10: one at a time; 300: in batches */
		some.n = 0;
		assert_int_equal(store_search(st, &q, collect_many, &some), limit);
		for (int i = 0; i < limit; i++)
			if (some.id[i] != all.id[i] || strcmp(some.line[i], all.line[i]) != 0)
				fail_msg("--limit %lld, hit %d: '%s', not '%s'", (long long)limit, i, some.line[i], all.line[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_role),
		cmocka_unit_test(test_camel),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_query),
		cmocka_unit_test_setup_teardown(test_index_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_trash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snippet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build, setup, teardown),
		cmocka_unit_test(test_migration),
		cmocka_unit_test(test_migration_pieces),
		cmocka_unit_test(test_migration_later),
		cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tasks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_forget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

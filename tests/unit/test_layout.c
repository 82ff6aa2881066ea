/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_layout.c: which paths the store manages (store/layout.c), and Cline's
 * workspace hash.
 *
 * A path wrongly taken as managed would have its bytes parsed and maybe
 * refused; one wrongly taken as plain would lose the merge and the history.
 * The workspace keys were computed with Cline's own JavaScript hash, so the
 * workspaces/ tree names the same folders as the extension's checkpoints/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/layout.h"
#include "store/store.h"
#include "store/util.h"

struct path_case {
	const char *path;
	enum store_path_kind kind;
};

static const struct path_case cases[] = {
	{ "state", STORE_PATH_DOC_DIR },
	{ "state/taskHistory.json", STORE_PATH_ARRAY },
	{ "tasks", STORE_PATH_TASKS_DIR },
	{ "tasks/1", STORE_PATH_DOC_DIR },
	{ "tasks/1700000000000", STORE_PATH_DOC_DIR },
	{ "tasks/1700000000000/api_conversation_history.json", STORE_PATH_ARRAY },
	{ "tasks/1700000000000/ui_messages.json", STORE_PATH_ARRAY },
	{ "tasks/1700000000000/task_metadata.json", STORE_PATH_WHOLE },
	{ "tasks/1700000000000/context_history.json", STORE_PATH_WHOLE },
	{ "tasks/1700000000000/settings.json", STORE_PATH_WHOLE },
	{ "tasks/1/ui_messages.json", STORE_PATH_ARRAY },
	/* 32 digits is the longest task id */
	{ "tasks/12345678901234567890123456789012", STORE_PATH_DOC_DIR },
	{ "tasks/12345678901234567890123456789012/ui_messages.json", STORE_PATH_ARRAY },

	/* the Cline CLI 3.x sessions */
	{ "sessions", STORE_PATH_TASKS_DIR },
	{ "sessions/1795505492931_y5z6u", STORE_PATH_DOC_DIR },
	{ "sessions/1795505492931_y5z6u/1795505492931_y5z6u.json", STORE_PATH_WHOLE },
	{ "sessions/1795505492931_y5z6u/1795505492931_y5z6u.messages.json", STORE_PATH_ARRAY },
	{ "sessions/1795505492931_y5z6u/sub-agent_2.messages.json", STORE_PATH_ARRAY }, /* a subagent's */
	{ "sessions/s/s.json", STORE_PATH_WHOLE },

	/* everything else is a plain file */
	{ "sessions/", STORE_PATH_PLAIN },
	{ "sessions/1795505492931", STORE_PATH_PLAIN },              /* all digits: not a session id */
	{ "sessions/1795505492931/1795505492931.json", STORE_PATH_PLAIN },
	{ "sessions/a.b/a.b.json", STORE_PATH_PLAIN },
	{ "sessions/..", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/1795505492931_y5z6v.json", STORE_PATH_PLAIN }, /* another id */
	{ "sessions/1795505492931_y5z6u/1795505492931_y5z6u.compaction.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/1795505492931_y5z6u.messages.json.tmp", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/.x.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/sub/x.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_y5z6u/other.json", STORE_PATH_PLAIN },
	{ "db/sessions.db", STORE_PATH_PLAIN },
	{ "db/sessions.db-wal", STORE_PATH_PLAIN },
	{ "", STORE_PATH_PLAIN },
	{ "state/", STORE_PATH_PLAIN },
	{ "state/other.json", STORE_PATH_PLAIN },
	{ "state/taskHistory.json.tmp.1700000000000.abc.json", STORE_PATH_PLAIN },
	{ "state/taskHistory.json/x", STORE_PATH_PLAIN },
	{ "/state/taskHistory.json", STORE_PATH_PLAIN },
	{ "tasks/", STORE_PATH_PLAIN },
	{ "tasks/abc", STORE_PATH_PLAIN },
	{ "tasks/abc/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/12a/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/-1/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/123456789012345678901234567890123", STORE_PATH_PLAIN },
	{ "tasks/123456789012345678901234567890123/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1/", STORE_PATH_PLAIN },
	{ "tasks/1/sub/x", STORE_PATH_PLAIN },
	{ "tasks/1/sub/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1//ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json/x", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json.tmp.1700000000000.x7.json", STORE_PATH_PLAIN },
	{ "tasks/1/.ui_messages.json.new_1700000000000_ab.tmp", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json.lock", STORE_PATH_PLAIN },
	{ "tasks/1/UI_MESSAGES.JSON", STORE_PATH_PLAIN },
	{ "tasks/1/taskHistory.json", STORE_PATH_PLAIN },
	{ "tasks/1/other.json", STORE_PATH_PLAIN },
	{ "tasksx/1/ui_messages.json", STORE_PATH_PLAIN },
	{ "checkpoints/3301258620/.git/HEAD", STORE_PATH_PLAIN },
	{ "settings/cline_mcp_settings.json", STORE_PATH_PLAIN },
	{ "cache", STORE_PATH_PLAIN },
	{ "ui_messages.json", STORE_PATH_PLAIN },
};

static void test_path_kind(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum store_path_kind k = store_path_kind(cases[i].path);

		if (k != cases[i].kind)
			fail_msg("store_path_kind(\"%s\") is %d, expected %d", cases[i].path, k, cases[i].kind);
	}
}

static void test_is_task_id(void **state)
{
	assert_true(store_is_task_id("0"));
	assert_true(store_is_task_id("1"));
	assert_true(store_is_task_id("1700000000000"));
	assert_true(store_is_task_id("12345678901234567890123456789012"));

	assert_false(store_is_task_id(""));
	assert_false(store_is_task_id("123456789012345678901234567890123"));
	assert_false(store_is_task_id("abc"));
	assert_false(store_is_task_id("12a"));
	assert_false(store_is_task_id("-1"));
	assert_false(store_is_task_id("+1"));
	assert_false(store_is_task_id("1 "));
	assert_false(store_is_task_id(" 1"));
	assert_false(store_is_task_id("1.0"));
	assert_false(store_is_task_id(".."));
	assert_false(store_is_task_id("01KABCDEFGHJKMNPQRSTVWXYZ0")); /* a ulid */
	assert_false(store_is_task_id("\xd9\xa1")); /* ARABIC-INDIC DIGIT ONE */
}

static void test_is_session_id(void **state)
{
	assert_true(store_is_session_id("1795505492931_y5z6u"));
	assert_true(store_is_session_id("a"));
	assert_true(store_is_session_id("A-b_9"));
	assert_false(store_is_session_id("1795505492931")); /* a task id */
	assert_false(store_is_session_id(""));
	assert_false(store_is_session_id("."));
	assert_false(store_is_session_id(".."));
	assert_false(store_is_session_id("a.b"));
	assert_false(store_is_session_id("a/b"));
	assert_false(store_is_session_id("a b"));
	assert_false(store_is_session_id("x1234567890123456789012345678901234567890123456789012345678901234")); /* 65 */
	assert_true(store_is_conversation_id("1795505492931"));
	assert_true(store_is_conversation_id("1795505492931_y5z6u"));
	assert_false(store_is_conversation_id("a.b"));
}

static void test_conversation_dir(void **state)
{
	char buf[96];

	assert_int_equal(store_conversation_dir("1795505492931", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tasks/1795505492931");
	assert_int_equal(store_conversation_dir("1795505492931_y5z6u", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sessions/1795505492931_y5z6u");
	assert_int_equal(store_conversation_dir("..", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(store_conversation_dir("1795505492931_y5z6u", buf, 10), -EINVAL);
}

static void test_workspace_key(void **state)
{
	/* Computed with Cline's hash: h = (h * 31 + s.charCodeAt(i)) >>> 0 */
	assert_int_equal(store_workspace_key(""), 0);
	assert_int_equal(store_workspace_key("a"), 97);
	assert_int_equal(store_workspace_key("ab"), 97 * 31 + 98);
	assert_int_equal(store_workspace_key("/home/dev/projects/greeter"), 3301258620u);
	assert_int_equal(store_workspace_key("/home/dev/projects/webapp"), 691006855u);
	/* é is one UTF-16 unit, 😀 a surrogate pair */
	assert_int_equal(store_workspace_key("/tmp/é😀"), 3406327813u);
	assert_int_equal(store_workspace_key("é"), 0xe9);
	assert_int_equal(store_workspace_key("😀"), 0xd83d * 31 + 0xde00);
	assert_int_equal(store_workspace_key("€"), 0x20ac);
}

/* ---- hash64 in pieces, and identities read through a reader ------------------------ */

static void test_hash64_pieces(void **state)
{
	unsigned char data[300];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 131 + 7);
	for (size_t len = 0; len <= sizeof(data); len += (len < 40 ? 1 : 13))
		for (size_t piece = 1; piece <= 17; piece++) {
			struct hash64 h;

			hash64_begin(&h, len);
			for (size_t at = 0; at < len; at += piece)
				hash64_add(&h, data + at, len - at < piece ? len - at : piece);
			if (hash64_end(&h) != hash64(data, len))
				fail_msg("hash64 of %zu bytes in pieces of %zu differs", len, piece);
		}
	/* And it tells bytes apart: one bit changed, another hash. */
	uint64_t a = hash64(data, 100);
	data[50] ^= 1;
	assert_true(a != hash64(data, 100));
}

/* digest128(): the same bytes and key, the same digest; any bit changed, any length or key other, another. */
static void test_digest128(void **state)
{
	unsigned char data[700], seed[DIGEST_SEED_SIZE], a[DIGEST_SIZE], b[DIGEST_SIZE];
	struct digest_key k1, k2;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 131 + 7);
	for (size_t i = 0; i < sizeof(seed); i++)
		seed[i] = (unsigned char)(i * 29 + 1);
	digest_key_init(&k1, seed);
	seed[3] ^= 1; /* a key word of NH */
	seed[DIGEST_SEED_SIZE - 1] ^= 1; /* a point */
	digest_key_init(&k2, seed);
	for (size_t len = 0; len <= sizeof(data); len += len < 70 ? 1 : 97) {
		digest128(&k1, data, len, a);
		digest128(&k1, data, len, b);
		assert_memory_equal(a, b, DIGEST_SIZE);
		digest128(&k2, data, len, b);
		assert_memory_not_equal(a, b, DIGEST_SIZE);
		for (size_t bit = 0; bit < 8 * len; bit += len < 70 ? 3 : 37) {
			data[bit / 8] ^= (unsigned char)(1 << (bit % 8));
			digest128(&k1, data, len, b);
			data[bit / 8] ^= (unsigned char)(1 << (bit % 8));
			if (memcmp(a, b, DIGEST_SIZE) == 0)
				fail_msg("digest of %zu bytes the same with bit %zu changed", len, bit);
		}
	}
	/* Zeros after the bytes are not the same bytes. */
	memset(data, 0, sizeof(data));
	data[0] = 'a';
	digest128(&k1, data, 1, a);
	for (size_t len = 2; len <= 20; len++) {
		digest128(&k1, data, len, b);
		assert_memory_not_equal(a, b, DIGEST_SIZE);
	}
	(void)state;
}

struct mem_text {
	const char *s;
	size_t n;
};

static int mem_read(void *ctx, size_t off, char *buf, size_t n)
{
	const struct mem_text *m = ctx;

	assert_true(off <= m->n && n <= m->n - off);
	memcpy(buf, m->s + off, n);
	return 0;
}

/* The identity of json read through a reader, at an offset in a bigger text, equals the one in memory. */
static void check_identity(enum doc_ident ident, const char *json)
{
	size_t len = strlen(json), lead = 5;
	char *text = malloc(lead + len + 3);
	struct mem_text m = { text, lead + len + 2 };
	struct json_reader rd = { .read = mem_read, .ctx = &m, .len = m.n, .window = 64 };
	struct merge_elem a = { 0 }, b = { 0 };
	char *ka = NULL, *kb = NULL;

	assert_non_null(text);
	memcpy(text, "[1, ", 4);
	text[4] = ' ';
	memcpy(text + lead, json, len);
	memcpy(text + lead + len, " ]", 3);
	doc_elem_identity(ident, json, len, &a, &ka);
	assert_int_equal(doc_elem_identity_read(ident, &rd, lead, lead + len, &b, &kb), 0);
	if (a.key != b.key || a.hash != b.hash || a.has_ts != b.has_ts || (a.has_ts && a.ts != b.ts) ||
	    !ka != !kb || (ka && strcmp(ka, kb)))
		fail_msg("identity %d of %s: memory key %llx hash %llx ts %lld/%d text %s; reader key %llx hash %llx "
			 "ts %lld/%d text %s", ident, json, (unsigned long long)a.key, (unsigned long long)a.hash,
			 (long long)a.ts, a.has_ts, ka ? ka : "-", (unsigned long long)b.key,
			 (unsigned long long)b.hash, (long long)b.ts, b.has_ts, kb ? kb : "-");
	assert_true(a.hash == hash64(json, len));
	free(ka);
	free(kb);
	free(text);
}

static void test_identity_read(void **state)
{
	static const char *const elems[] = {
		"{\"ts\":1700000000000,\"type\":\"say\"}",
		"{\"type\":\"say\",\"ts\":\"1700000000001\"}",
		"{ \"text\" : \"a \\\"ts\\\": 5\" , \"ts\" : 42 }",
		"{\"type\":\"say\",\"text\":\"no ts\"}",
		"{\"ts\":1.5}",
		"{\"ts\":null,\"id\":null}",
		"{\"id\":\"1700000000000\",\"ts\":1700000000000,\"task\":\"t\"}",
		"{\"ts\":1700000000000,\"task\":\"t\",\"id\":\"1700000000002\"}",
		"{\"id\":\"caf\\u00e9 \\\"x\\\" \\ud83d\\ude00\",\"ts\":7}",
		"{\"id\":\"msg_\\u0031\\n\",\"role\":\"user\"}",
		"{\"id\":17,\"ts\":\"8\"}",
		"{\"nested\":{\"id\":\"inner\",\"ts\":3},\"id\":\"outer\"}",
		"{\"nested\":{\"id\":\"inner\",\"ts\":3}}",
		"{\n  \"role\": \"assistant\",\n  \"id\": \"msg_01ABC\",\n  \"content\": [{\"type\": \"text\", \"text\": \"é😀\"}]\n}",
		"[1,2]", "\"str\"", "{}",
	};
	static const enum doc_ident idents[] = { IDENT_TS, IDENT_ITEM_ID, IDENT_MESSAGE_ID };

	for (size_t k = 0; k < ARRAY_SIZE(idents); k++)
		for (size_t i = 0; i < ARRAY_SIZE(elems); i++)
			check_identity(idents[k], elems[i]);

	/* A "ts" and an "id" just within and just over IDENT_VALUE_MAX, and an element over IDENT_CHUNK. */
	size_t sizes[] = { IDENT_VALUE_MAX - 2, IDENT_VALUE_MAX - 1, IDENT_VALUE_MAX, IDENT_CHUNK + 100 };
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		struct sb sb = SB_INIT;
		char *digits = malloc(sizes[s] + 1);

		assert_non_null(digits);
		memset(digits, '1', sizes[s]);
		digits[sizes[s]] = '\0';
		assert_int_equal(sb_adds(&sb, "{\"id\":\""), 0);
		assert_int_equal(sb_adds(&sb, digits), 0);
		assert_int_equal(sb_adds(&sb, "\",\"ts\":\""), 0);
		assert_int_equal(sb_adds(&sb, digits + (sizes[s] > 15 ? sizes[s] - 15 : 0)), 0);
		assert_int_equal(sb_adds(&sb, "\",\"pad\":\""), 0);
		assert_int_equal(sb_adds(&sb, digits), 0);
		assert_int_equal(sb_adds(&sb, "\"}"), 0);
		for (size_t k = 0; k < ARRAY_SIZE(idents); k++)
			check_identity(idents[k], sb.buf);
		sb_release(&sb);
		free(digits);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_kind),
		cmocka_unit_test(test_is_task_id),
		cmocka_unit_test(test_workspace_key),
		cmocka_unit_test(test_is_session_id),
		cmocka_unit_test(test_conversation_dir),
		cmocka_unit_test(test_hash64_pieces),
		cmocka_unit_test(test_digest128),
		cmocka_unit_test(test_identity_read),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_compaction.c: fs/view/compaction.c, a CLI 3.x session's compaction
 * state and what the model saw from it.
 *
 * The hashes and keys below are what the 3.0.65 CLI's own
 * createSessionCompactionState() gives for the first n messages of MSGS
 * (the display-only one left out), so they check this file's serialisation
 * against the client's: the text of user messages as formatDisplayUserInput
 * shows it (tags of user input and commands, mode notices, slash commands,
 * "/team", JavaScript's white space), and JSON as JSON.stringify() writes
 * what JSON.parse() read (white space, escapes, numbers, keys that are
 * array indexes first, a repeated key).
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

#include "fs/view/compaction.h"
#include "store/util.h"

static const char *const MSGS[] = {
	"{ \"role\": \"user\", \"content\": \"  <user_input mode=\\\"act\\\">fix the\\tbug</user_input>\\"
		"n<mode_notice>plan mode</mode_notice>\\u00a0 \", \"id\": \"  m1 \", \"ts\": 1700000000000 }",
	"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \\u2028 \\u001f \\"
		"/ \\\"q\\\"\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read\",\"input\":{\"b\":1,\"10\":"
		"true,\"a\":[1e21,0.000001,1.5e-7,123456789012345680000,-0,100,2.50,1E2],\"2\":null,\"dup\":1,\"d"
		"up\":2}}],\"ts\":1.7e12,\"modelInfo\":{\"id\":\"m\",\"provider\":\"p\"},\"metrics\":{\"inputToke"
		"ns\":12,\"cost\":0.1}}",
	"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<user_command slash=\\\"Team\\\">S"
		"pawn a team of agents for the following task:   build it </user_command>\"},{\"type\":\"text\"},"
		"{\"type\":\"image\",\"data\":\"x\"}]}",
	"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"oops\"}],\"metadata\":{\"disp"
		"layOnly\":true,\"displayRole\":\"error\"}}",
	"{\"role\":\"user\",\"content\":\"<USER_COMMAND Slash=\\\" review \\\">  </user_command>\",\"agen"
		"t\":\"a1\",\"sessionId\":\"s1\",\"metadata\":{\"k\":\"v\"}}",
	"{\"role\":\"user\",\"content\":\"<user_input>a</user_input> and <user_input>b\",\"ts\":5}",
	"{\"role\":\"user\",\"content\":\"x <user_inputs>y</user_inputs> <user_input z>w\"}",
	"{\"role\":\"assistant\",\"content\":\"done\"}",
};
#define DISPLAY_ONLY 3

/* The client's hash and key of the first n sent messages, n from 1. */
static const struct {
	const char *hash, *key;
} EXPECTED[] = {
	{ "sha256:b6d597d611d756fcb4ee250522c2871073a96b93532d0ee27bc2eecfa9e645f1", "id:m1" },
	{ "sha256:72882b95530ae4f1252a0b162b7160ba9bf06e496d93f960060521d0c4a0831b", "ts:assistant:1700000000000" },
	{ "sha256:07763c012b3ddc48c0dedee5e6329fcb19fbaa180cfffbba9f85e1d0ce799c7c",
	  "content:user:[{\"type\":\"text\",\"text\":\"/team build it\"},{\"type\":\"text\",\"text\":\"\"},"
	  "{\"type\":\"image\",\"data\":\"x\"}]" },
	{ "sha256:6acf693d181f9308b29a032453e2714e8a79b0adb92279425c00618d03f04add",
	  "content:user:\"/review <USER_COMMAND Slash=\\\" review \\\">  </user_command>\"" },
	{ "sha256:28e0549c800f602c78d68096632a62ef409c61261a572cf8dd0b6687d4fa1b4a", "ts:user:5" },
	{ "sha256:d2c87d926c52747f05088757876523dc1ef2fdbee002bab99b37e1d7d097a435",
	  "content:user:\"x y</user_inputs> w\"" },
	{ "sha256:6dcb554389a971399fd296aea1eeba02309295cdc4c803b348a520708e05ed9b", "content:assistant:\"done\"" },
};

/* The index in MSGS of the i-th sent message. */
static size_t sent_at(size_t i)
{
	return i < DISPLAY_ONLY ? i : i + 1;
}

static void test_hash(void **state)
{
	for (size_t n = 1; n <= ARRAY_SIZE(EXPECTED); n++) {
		struct compaction_hash *h = NULL;
		char hash[COMPACTION_HASH_LEN + 1];

		assert_int_equal(compaction_hash_new((int64_t)n, &h), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(compaction_hash_add(h, MSGS[sent_at(i)], strlen(MSGS[sent_at(i)])), 0);
		compaction_hash_final(h, hash);
		compaction_hash_free(h);
		assert_string_equal(hash, EXPECTED[n - 1].hash);
	}
}

static void test_keys(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(EXPECTED); i++) {
		const char *m = MSGS[sent_at(i)];
		char *key = NULL;

		assert_int_equal(compaction_message_key(m, strlen(m), &key), 0);
		assert_string_equal(key, EXPECTED[i].key);
		free(key);
	}
}

static void test_display_input(void **state)
{
	static const char *const cases[][2] = {
		{ "", "" },
		{ " \u3000 ", "" },
		{ "<user_command slash=\"team\"></user_command>", "/team" },
		{ "<user_command slash=\"\">x</user_command>", "x" },
		{ "<user_command slash=\"plan\" >  do it  </user_command>  ", "/plan do it" },
		{ "<mode_notice>a</mode_notice>b<mode_notice>c", "b<mode_notice>c" },
		{ "<user_input>one</user_input><user_input>two</user_input>", "onetwo" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sb out = SB_INIT;

		assert_int_equal(compaction_display_input(cases[i][0], strlen(cases[i][0]), &out), 0);
		assert_string_equal(sb_str(&out), cases[i][1]);
		sb_release(&out);
	}
}

/* The compacted messages as JSON.stringify() writes them (the client's own output, pasted). */
static const char STATE[] =
	"{\n  \"version\": 1,\n  \"updated_at\": \"2026-01-01T00:00:00.000Z\",\n  \"source_message_count\": 4,\n"
	"  \"source_prefix_hash\": \"sha256:6acf693d181f9308b29a032453e2714e8a79b0adb92279425c00618d03f04add\",\n"
	"  \"messages\": [{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"s\\u00e9\\n\",\"2\":1,\"1\":0.5e1,"
	"\"k\":[1e21,1e-7,0.000001,123e-20,-1.5,5e-324,1.7976931348623157e308,0.30000000000000004,1e300,-0,"
	"12345678.9]}]},{\"role\":\"assistant\",\"content\":\"ok\",\"b\":1,\"a\":2,\"b\":3}]\n}\n";
static const char STATE_TEXT[] =
	"{\"role\":\"user\",\"content\":[{\"1\":5,\"2\":1,\"type\":\"text\",\"text\":\"s\xc3\xa9\\n\",\"k\":[1e+21,1e-7,"
	"0.000001,1.23e-18,-1.5,5e-324,1.7976931348623157e+308,0.30000000000000004,1e+300,0,12345678.9]}]}\n"
	"{\"role\":\"assistant\",\"content\":\"ok\",\"b\":3,\"a\":2}\n";

/*
 * The walk over msgs[0..n) with the state json: what the client sends, as
 * "C" for the compacted text then the indexes of the messages sent. free().
 */
static char *project(const char *json, const char *const *msgs, size_t n)
{
	struct compaction *c = NULL;
	struct compaction_walk *w = NULL;
	struct sb all = SB_INIT, after = SB_INIT;
	char *ret;

	assert_int_equal(compaction_parse(json, strlen(json), &c), 0);
	assert_int_equal(compaction_walk_new(c, &w), 0);
	for (size_t i = 0; i < n; i++) {
		bool mentions = strstr(msgs[i], COMPACTION_DISPLAY_ONLY) != NULL, sent, past;
		bool needs = compaction_walk_needs(w, mentions);

		assert_int_equal(compaction_walk_next(w, needs ? msgs[i] : NULL, needs ? strlen(msgs[i]) : 0, mentions,
						      &sent, &past),
				 0);
		if (sent)
			assert_int_equal(sb_addf(&all, "%zu ", i), 0);
		if (past)
			assert_int_equal(sb_addf(&after, "%zu ", i), 0);
	}
	if (compaction_walk_applies(w)) {
		assert_string_equal(c->text, STATE_TEXT);
		assert_int_equal(sb_addf(&all, "C %s", sb_str(&after)) , 0);
		ret = strdup(strstr(sb_str(&all), "C "));
	} else {
		ret = strdup(sb_str(&all));
	}
	sb_release(&all);
	sb_release(&after);
	compaction_walk_free(w);
	compaction_free(c);
	assert_non_null(ret);
	return ret;
}

static void test_projection(void **state)
{
	const char *edited[ARRAY_SIZE(MSGS)];
	char *got;

	/* Four sent messages compacted: the summary, then the three after (the display-only one is never sent). */
	got = project(STATE, MSGS, ARRAY_SIZE(MSGS));
	assert_string_equal(got, "C 5 6 7 ");
	free(got);
	/* A message before the cut edited: the hash no longer matches, every sent message goes. */
	memcpy(edited, MSGS, sizeof(MSGS));
	edited[2] = "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<user_input>build it</user_input>\"}]}";
	got = project(STATE, edited, ARRAY_SIZE(MSGS));
	assert_string_equal(got, "0 1 2 4 5 6 7 ");
	free(got);
	/* Fewer messages than the state stands for. */
	got = project(STATE, MSGS, 4);
	assert_string_equal(got, "0 1 2 ");
	free(got);
}

/* A state without the hash applies while the last message it stands for has its key. */
static void test_projection_by_key(void **state)
{
	static const char by_key[] = "{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":1,"
				     "\"source_last_message_key\":\"id:m1\",\"messages\":[]}";
	static const char other_key[] = "{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":1,"
					"\"source_last_message_key\":\"id:m2\",\"messages\":[]}";
	struct compaction *c = NULL;
	struct compaction_walk *w = NULL;
	bool sent, past;

	assert_int_equal(compaction_parse(by_key, strlen(by_key), &c), 0);
	assert_int_equal(compaction_walk_new(c, &w), 0);
	assert_true(compaction_walk_needs(w, false));
	assert_int_equal(compaction_walk_next(w, MSGS[0], strlen(MSGS[0]), false, &sent, &past), 0);
	assert_true(sent);
	assert_false(past);
	assert_false(compaction_walk_needs(w, false));
	assert_int_equal(compaction_walk_next(w, NULL, 0, false, &sent, &past), 0);
	assert_true(past);
	assert_true(compaction_walk_applies(w));
	compaction_walk_free(w);
	compaction_free(c);
	assert_int_equal(compaction_parse(other_key, strlen(other_key), &c), 0);
	assert_int_equal(compaction_walk_new(c, &w), 0);
	assert_int_equal(compaction_walk_next(w, MSGS[0], strlen(MSGS[0]), false, &sent, &past), 0);
	assert_false(compaction_walk_applies(w));
	compaction_walk_free(w);
	compaction_free(c);
}

/* What the client's schema refuses is no state at all. */
static void test_schema(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{\"version\":2,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":0,\"messages\":[]}",
		"{\"version\":1,\"updated_at\":\"2026-02-30T00:00:00Z\",\"source_message_count\":0,\"messages\":[]}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00+01:00\",\"source_message_count\":0,\"messages\":[]}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":1.5,\"messages\":[]}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":-1,\"messages\":[]}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":0,\"messages\":["
			"{\"role\":\"system\",\"content\":\"\"}]}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":0,\"messages\":["
			"],\"source_prefix_hash\":\"\"}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":0,\"messages\":["
			"],\"system_prompt\":null}",
		"{\"version\":1,\"updated_at\":\"2026-01-01T00:00:00Z\",\"source_message_count\":0,\"messages\":["
			"],\"conversation_id\":\"\"}",
		"not json",
	};
	static const char good[] = "{\"version\":1,\"updated_at\":\"2024-02-29T23:59:59.123456Z\",\"source_message_count\":0,"
				   "\"messages\":[],\"other\":null}";
	struct compaction *c = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(compaction_parse(bad[i], strlen(bad[i]), &c), 0);
		assert_null(c);
	}
	assert_int_equal(compaction_parse(good, strlen(good), &c), 0);
	assert_non_null(c);
	assert_int_equal(c->count, 0);
	assert_string_equal(c->text, "");
	compaction_free(c);
}

/* A message the client could not serialise fails the walk rather than giving a guess. */
static void test_unserialisable(void **state)
{
	static const char *const bad[] = {
		"not json",
		"{\"role\":\"to:ol\",\"content\":\"\"}",
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":5}]}",
		"{\"role\":\"user\",\"content\":{}}",
	};
	struct compaction_hash *h = NULL;
	char *key = NULL;

	assert_int_equal(compaction_hash_new(1, &h), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(compaction_hash_add(h, bad[i], strlen(bad[i])), -EINVAL);
		assert_int_equal(compaction_message_key(bad[i], strlen(bad[i]), &key), -EINVAL);
	}
	compaction_hash_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash),       cmocka_unit_test(test_keys),
		cmocka_unit_test(test_display_input), cmocka_unit_test(test_projection),
		cmocka_unit_test(test_projection_by_key), cmocka_unit_test(test_schema),
		cmocka_unit_test(test_unserialisable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_store_tasks.c: what the SQLite store learns of tasks from the docs
 * written to it (store/store.h): the workspace of each task from the task
 * history, and Cline CLI 3.x sessions, whose messages sit in an object,
 * whose manifest names the workspace, and whose writers merge by message id.
 *
 * Each test gets a fresh store file in a private temporary directory
 * (store_fixture.h), which plain sqlite3 also opens to read the tables of
 * tasks and workspaces.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/store_fixture.h"

/* ---- workspaces ------------------------------------------------------------------- */

static char *task_workspace_key(const char *path, const char *task_id)
{
	return db_text(path, "SELECT w.key FROM tasks t LEFT JOIN workspaces w ON w.id = t.workspace_id "
			     "WHERE t.id = %Q", task_id);
}

static void assert_task_workspace(const char *path, const char *task_id, const char *key)
{
	_cleanup_free_ char *got = task_workspace_key(path, task_id);

	if (!got || strcmp(got, key) != 0)
		fail_msg("task %s is in workspace %s, expected %s", task_id, got ? got : "(none)", key);
}

static void test_workspaces(void **state)
{
	static const char h1[] =
		"[\n"
		"  {\"id\":\"1700000000001\",\"ts\":1700000000001,\"task\":\"greet\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"},\n"
		"  {\"id\":\"1700000000002\",\"ts\":1700000000002,\"task\":\"web\","
		"\"shadowGitConfigWorkTree\":\"/home/dev/projects/webapp\"},\n"
		"  {\"id\":\"1700000000003\",\"ts\":1700000000003,\"task\":\"both\",\"cwdOnTaskInitialization\":\"\","
		"\"shadowGitConfigWorkTree\":\"/tmp/é😀\"},\n"
		"  {\"id\":\"not-a-task\",\"ts\":1,\"cwdOnTaskInitialization\":\"/nowhere\"}\n"
		"]";
	/* Task 1 moved to another folder; task 4 is new; task 5 has files already. */
	static const char h2[] =
		"[\n"
		"  {\"id\":\"1700000000001\",\"ts\":1700000009999,\"task\":\"greet\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/webapp\"},\n"
		"  {\"id\":\"1700000000004\",\"ts\":1700000000004,\"task\":\"more\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"},\n"
		"  {\"id\":\"1700000000005\",\"ts\":1700000000005,\"task\":\"late\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"}\n"
		"]";
	struct fixture *f = *state;
	_cleanup_free_ char *ws_path = NULL, *ws_path3 = NULL, *key = NULL, *none = NULL;

	assert_int_equal(commit(f->st, HISTORY, h1), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM workspaces"), 3);
	ws_path = db_text(f->path, "SELECT path FROM workspaces WHERE key = '3301258620'");
	assert_string_equal(ws_path, "/home/dev/projects/greeter");
	assert_task_workspace(f->path, "1700000000001", "3301258620");
	assert_task_workspace(f->path, "1700000000002", "691006855");  /* from shadowGitConfigWorkTree */
	assert_task_workspace(f->path, "1700000000003", "3406327813"); /* empty cwd: the shadow work tree */
	ws_path3 = db_text(f->path, "SELECT path FROM workspaces WHERE key = '3406327813'");
	assert_string_equal(ws_path3, "/tmp/é😀");
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM tasks WHERE id = 'not-a-task'"), 0);
	key = db_text(f->path, "SELECT key FROM elems WHERE seq = 0 AND rev_to IS NULL AND doc_id = "
			       "(SELECT id FROM docs WHERE path = %Q)", HISTORY);
	assert_string_equal(key, "1700000000001");

	/* A task known from its files first gets its workspace from history later. */
	assert_int_equal(commit(f->st, "tasks/1700000000005/ui_messages.json", "[]"), 0);
	none = task_workspace_key(f->path, "1700000000005");
	assert_null(none);

	assert_int_equal(commit(f->st, HISTORY, h2), 0);
	assert_task_workspace(f->path, "1700000000001", "3301258620"); /* stays where it began */
	assert_task_workspace(f->path, "1700000000004", "3301258620");
	assert_task_workspace(f->path, "1700000000005", "3301258620");
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM workspaces WHERE key = '3301258620'"), 1);
	/* Tasks dropped from the list keep theirs. */
	assert_task_workspace(f->path, "1700000000002", "691006855");
}

/* ---- Cline CLI 3.x sessions ----------------------------------------------------------- */

#define SID "1795505492931_y5z6u"
#define SESSION_MSGS "sessions/" SID "/" SID ".messages.json"
#define SESSION_MANIFEST "sessions/" SID "/" SID ".json"

/* A session's conversation as the CLI writes it: pretty-printed, the array not last. */
#define SESSION_DOC(msgs) \
	"{\n  \"version\": 1,\n  \"agent\": \"lead\",\n  \"sessionId\": \"" SID "\",\n  \"messages\": [" msgs \
	"\n  ],\n  \"system_prompt\": \"You are Cline.\"\n}\n"
#define MSG_A "\n    {\n      \"id\": \"a\",\n      \"role\": \"user\",\n      \"content\": \"hi\",\n      \"ts\": 10\n    }"
#define MSG_B "\n    {\n      \"id\": \"b\",\n      \"role\": \"assistant\",\n      \"content\": \"yes\",\n      \"ts\": 20\n    }"
#define MSG_B2 "\n    {\n      \"id\": \"b\",\n      \"role\": \"assistant\",\n      \"content\": \"yes, done\",\n      \"ts\": 20\n    }"
#define MSG_C "\n    {\n      \"id\": \"c\",\n      \"role\": \"user\",\n      \"content\": \"from A\",\n      \"ts\": 30\n    }"
#define MSG_D "\n    {\n      \"id\": \"d\",\n      \"role\": \"user\",\n      \"content\": \"from B\",\n      \"ts\": 30\n    }"

/* The base a writer takes when it opens path now. */
static struct store_base *base_now(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	struct store_base *b = NULL;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	assert_int_equal(store_base_from_snap(snap, &b), 0);
	store_snap_free(snap);
	return b;
}

static int commit_from(struct store *st, const char *path, const char *json, const struct store_base *base)
{
	struct store_commit c = { .path = path, .data = json, .len = strlen(json), .who = &who, .kind = "write",
				  .merge = true, .base = base };

	return store_commit(st, &c, NULL, NULL);
}

static void test_session(void **state)
{
	struct fixture *f = *state;
	struct store_base *ba, *bb;
	struct store_line line = { "{\"id\":\"e\",\"role\":\"user\",\"content\":\"appended\",\"ts\":40}", 0 };
	_cleanup_free_ char *key = NULL, *ws = NULL;

	/* Stored as written, one message a row, the object around it kept. */
	assert_int_equal(commit(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B)), 0);
	assert_doc_str(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B));
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE key IN ('a', 'b') AND rev_to IS NULL"), 2);

	/* The manifest teaches the session's workspace. */
	assert_int_equal(commit(f->st, SESSION_MANIFEST,
				"{\"session_id\":\"" SID "\",\"cwd\":\"/elsewhere\","
				"\"workspace_root\":\"/home/dev/projects/webapp\"}"), 0);
	key = task_workspace_key(f->path, SID);
	assert_non_null(key);
	assert_string_equal(key, "691006855");
	ws = db_text(f->path, "SELECT path FROM workspaces WHERE key = '691006855'");
	assert_string_equal(ws, "/home/dev/projects/webapp");

	/*
	 * Two writers read the same version; A adds c and completes b, B adds d.
	 * Identity is the message's id: both additions stay, b is A's.
	 */
	ba = base_now(f->st, SESSION_MSGS);
	bb = base_now(f->st, SESSION_MSGS);
	assert_int_equal(commit_from(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C), ba), 0);
	assert_int_equal(commit_from(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B "," MSG_D), bb), 0);
	assert_doc_str(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C "," MSG_D));
	store_base_free(ba);
	store_base_free(bb);

	/* An append (>> to the view) adds one row inside the array, the rest kept. */
	line.len = strlen(line.data);
	assert_int_equal(store_doc_append(f->st, SESSION_MSGS, &line, 1, "role", &who), 0);
	assert_doc_str(f->st, SESSION_MSGS,
		       SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C "," MSG_D ",{\"id\":\"e\",\"role\":\"user\","
				   "\"content\":\"appended\",\"ts\":40}"));

	/* Not a session's shape: refused, nothing changes. */
	assert_int_equal(commit(f->st, SESSION_MSGS, "[]"), -EINVAL);
	assert_int_equal(commit(f->st, SESSION_MSGS, "{\"messages\": {}}"), -EINVAL);
	assert_int_equal(commit(f->st, SESSION_MSGS, "{\"version\": 1}"), -EINVAL);
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 5);

	/* Trash and restore take the session's docs by its id. */
	assert_int_equal(store_task_trash(f->st, SID, &who), 0);
	assert_int_equal(store_doc_stat(f->st, SESSION_MSGS, &(struct store_stat){ 0 }), -ENOENT);
	assert_int_equal(store_task_restore(f->st, SID, &who), 0);
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 5);
	/* A session is the client's to make, not mkdir's. */
	assert_int_equal(store_task_create(f->st, "new_session", NULL, &who), -EINVAL);
}

/* A message with "\r\n" line ends inside it, as an editor on Windows may leave one. */
#define MSG_CRLF "\n    {\r\n      \"id\": \"r\",\r\n      \"role\": \"user\",\r\n      \"ts\": 50\r\n    }"

/* The JSON Lines line of a message as SESSION_DOC() lays it out: after its indent, line breaks as spaces. */
static void add_line(struct sb *out, const char *msg)
{
	for (msg += strspn(msg, "\n "); *msg; msg++)
		assert_int_equal(sb_add(out, *msg == '\n' || *msg == '\r' ? " " : msg, 1), 0);
	assert_int_equal(sb_add(out, "\n", 1), 0);
}

/* A pretty-printed conversation as JSON Lines: one message a line, read whole or in pieces of any size. */
static void test_session_lines(void **state)
{
	struct fixture *f = *state;
	_cleanup_sb_ struct sb want = SB_INIT;
	struct store_snap *snap;
	char buf[512];

	assert_int_equal(commit(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_CRLF "," MSG_B)), 0);
	add_line(&want, MSG_A);
	add_line(&want, MSG_CRLF);
	add_line(&want, MSG_B);
	assert_int_equal(store_snap_open_jsonl(f->st, SESSION_MSGS, &snap), 0);
	assert_int_equal(store_snap_size(snap), (int64_t)want.len);
	for (size_t piece = 1; piece <= 40; piece++) {
		size_t got = 0;
		ssize_t n;

		memset(buf, 'x', sizeof(buf));
		while ((n = store_snap_read(f->st, snap, buf + got, piece, (off_t)got)) > 0)
			got += (size_t)n;
		assert_int_equal(n, 0);
		assert_int_equal(got, want.len);
		assert_memory_equal(buf, want.buf, want.len);
	}
	store_snap_free(snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_workspaces, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_session, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_session_lines, setup_store, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("store tasks", tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_kinds.c: every kind of path has a row, and the rows keep what they
 * promise each other (fs/ops/kinds.h, fs/view/view.h).
 *
 * That a kind has a row at all is the linker's to say: COMPAT_KINDS and
 * VIEW_KINDS make both the enum and the table of rows, and a kind without
 * its row is an undefined reference. This test walks every kind of both
 * lists and checks what no compiler sees: each row is named, names
 * something or says why not, is found where its shape says (in a folder,
 * by one name or one match, reachable by the walk the kernel's cache uses),
 * keeps its attributes only where a commit tells the kernel, is read-only
 * where its folder is; and the compat tree's kinds are told apart as
 * route_resolve() must (no store: only paths outside workspaces/). Last,
 * with a store and a backing tree: tasks/ made again, with a warning, only
 * when it was missing, not when a lookup raced the thread that made it.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/fs.h"
#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "store/store.h"
#include "store/util.h"

static const char *const compat_names[] = {
#define COMPAT_NAME(kind, row) #kind,
	COMPAT_KINDS(COMPAT_NAME)
#undef COMPAT_NAME
};

static const char *const view_names[] = {
	"VIEW_NONE",
#define VIEW_NAME(kind, row) #kind,
	VIEW_KINDS(VIEW_NAME)
#undef VIEW_NAME
};

/* True for a kind a walk reaches by its shape (all but the root, and those a match or a failed walk make). */
static bool has_shape(enum view_kind k)
{
	return view_rows[k]->shape != NULL;
}

static bool valid_keep(enum path_keep k)
{
	return k == KEEP_NEVER || k == KEEP_BRIEF || k == KEEP_LONG || k == KEEP_NAMED;
}

/* Every row of both lists: named, named once, with its data in range. */
static void test_every_kind_has_a_row(void **state)
{
	for (int k = 0; k < PATH_KIND_COUNT; k++) {
		const struct path_ops *row = path_rows[k];

		print_message("compat %-20s %s\n", compat_names[k], row ? row->name : "(none)");
		assert_non_null(row);
		assert_non_null(row->name);
		assert_non_null(row->getattr); /* every compat kind names something */
		assert_null(row->shape);
		assert_true(valid_keep(row->cache.entry) && valid_keep(row->cache.attr));
		assert_true(row->cache.attr != KEEP_NAMED && row->cache.entry != KEEP_NAMED); /* the view's */
		assert_false(row->whole_store);
		/* a doc's nodes stand for versions, and only a doc's; no name of the store is the backing tree's */
		assert_int_equal(row->versioned, row->cls == PATH_CLASS_DOC);
		assert_int_equal(row->backing, !row->versioned);
	}
	assert_null(view_rows[VIEW_NONE]);
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct path_ops *row = view_rows[k];

		print_message("view   %-22s %s\n", view_names[k], row ? row->name : "(none)");
		assert_non_null(row);
		assert_non_null(row->name);
		for (int j = 1; j < k; j++)
			assert_string_not_equal(row->name, view_rows[j]->name);
		for (int j = 0; j < PATH_KIND_COUNT; j++)
			assert_string_not_equal(row->name, path_rows[j]->name);
		assert_true(valid_keep(row->cache.entry) && valid_keep(row->cache.attr));
		assert_false(row->versioned);
		/* the view's names are made from the store (but its README), a name it does not have is the client's */
		assert_false(row->whole_store && row->backing);
		if (row->backing)
			assert_int_equal(row->cls, PATH_CLASS_PLAIN);
	}
}

/*
 * A kind that names nothing (no getattr: the route's error answers) is made
 * by a match or by the walk, never found by a shape of its own; every other
 * kind but the root is found by its shape.
 */
static void test_what_names_nothing(void **state)
{
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct path_ops *row = view_rows[k];

		if (view_top_name(k)) { /* workspaces/, search/: where the walks start */
			assert_false(has_shape(k));
			assert_non_null(row->getattr);
			continue;
		}
		assert_int_equal(has_shape(k), row->getattr != NULL);
		/* what a walk stops at without finding a name is no folder: nothing is in it */
		if (!row->getattr)
			assert_null(row->list);
	}
}

/*
 * Each shape is in a folder (a kind that lists), and a folder's shapes do
 * not take each other's names: at most one match alone, fixed names once.
 * A kind that takes the rest of the path holds nothing of its own.
 */
static void test_shapes_are_a_tree(void **state)
{
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct view_shape *sh = view_rows[k]->shape;
		int matches = 0;

		if (sh) {
			assert_true(sh->in > VIEW_NONE && sh->in < VIEW_KIND_COUNT);
			assert_non_null(view_rows[sh->in]->list);
			assert_true(sh->name || sh->match);
			assert_true(sh->type == S_IFDIR || sh->type == S_IFREG || sh->type == S_IFLNK);
			assert_int_equal(sh->type == S_IFDIR, view_rows[k]->list != NULL);
			if (sh->type == S_IFLNK) /* a link's target (a checkpoint's files/ may hold links too) */
				assert_non_null(view_rows[k]->readlink);
			/* a listed name is a fixed one; a match's names are listed by the folder's own list */
			if (sh->listed != VIEW_UNLISTED)
				assert_non_null(sh->name);
		}
		for (int j = 1; j < VIEW_KIND_COUNT; j++) {
			const struct view_shape *c = view_rows[j]->shape;

			if (!c || (int)c->in != k)
				continue;
			assert_false(sh && sh->rest);
			matches += !c->name;
			for (int i = 1; i < j && c->name; i++) {
				const struct view_shape *o = view_rows[i]->shape;

				if (o && (int)o->in == k && o->name)
					assert_string_not_equal(o->name, c->name);
			}
		}
		assert_true(matches <= 1);
	}
}

/* Every kind found by its shape is where view_shape_kind() finds it, by names alone. */
static void test_shape_walk_finds_every_kind(void **state)
{
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const char *up[16];
		size_t n = 0;

		if (!has_shape(k))
			continue;
		/* its names from the leaf up: fixed ones as they are, a match's as a name no fixed one has */
		enum view_kind at;

		for (at = k; !view_top_name(at); at = view_rows[at]->shape->in) {
			assert_true(n < ARRAY_SIZE(up) - 1);
			up[n++] = view_rows[at]->shape->name ? view_rows[at]->shape->name : "x-1";
		}
		up[n++] = view_top_name(at);
		print_message("%-22s found at depth %zu\n", view_names[k], n);
		assert_int_equal(view_shape_kind(up, n), k);
		/* below a kind that takes the rest of the path, anything is that kind */
		if (view_rows[k]->shape->rest) {
			memmove(up + 1, up, n * sizeof(up[0]));
			up[0] = "any";
			assert_int_equal(view_shape_kind(up, n + 1), k);
		}
	}
}

/*
 * Attributes kept under the view's own names (KEEP_NAMED) on a file are
 * kept because each commit tells the kernel at that name: the file is
 * named in a task's folder (view_invalidate_conversation() names those),
 * and told; a told kind keeps them so. The folders kept by name are the
 * top ones a client's entry may push aside.
 */
static void test_kept_where_told(void **state)
{
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct path_ops *row = view_rows[k];
		const struct view_shape *sh = row->shape;

		if (row->cache.told) {
			assert_int_equal(row->cache.attr, KEEP_NAMED);
			assert_non_null(sh);
			assert_int_equal(sh->in, VIEW_TASK);
			assert_non_null(sh->name);
			assert_false(row->cache.handle); /* a writer's handle shows its own bytes */
		}
		if (row->cache.attr == KEEP_NAMED && !row->cache.told) {
			assert_non_null(row->list);
			assert_int_equal(sh->in, VIEW_ROOT);
		}
		if (row->cache.entry == KEEP_NAMED)
			assert_int_equal(sh->in, VIEW_ROOT);
		/* the listings that follow where tasks are: the folders down to a task's */
		if (row->cache.volatile_list)
			assert_non_null(row->list);
	}
}

/* Below a read-only folder everything is read-only, and nothing read-only takes a write. */
static void test_readonly_below_readonly(void **state)
{
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct path_ops *row = view_rows[k];

		if (row->shape && view_rows[row->shape->in]->readonly)
			assert_true(row->readonly);
		if (!row->readonly)
			continue;
		assert_null(row->create);
		assert_null(row->mkdir);
		assert_null(row->unlink);
		assert_null(row->rmdir);
		assert_null(row->setxattr);
		assert_null(row->made_in);
		assert_false(row->cache.told);
	}
}

struct compat_case {
	const char *rel;
	const struct path_ops *row;
};

/* The compat tree's kinds, as route_resolve() tells them apart (no store is asked). */
static void test_compat_routes(void **state)
{
	static const struct compat_case cases[] = {
		{ "", &path_root },
		{ "globalState.json", &path_plain },
		{ "checkpoints/12345/.git/HEAD", &path_plain },
		{ "db/sessions.db", &path_plain },
		{ "tasks", &path_tasks },
		{ "sessions", &path_tasks },
		{ "state", &path_doc_folder },
		{ "state/taskHistory.json", &path_doc_array },
		{ "state/taskHistory.json.tmp-1-2", &path_beside_docs },
		{ "tasks/1700000000000", &path_conversation },
		{ "tasks/1700000000000/ui_messages.json", &path_doc_array },
		{ "tasks/1700000000000/task_metadata.json", &path_doc_whole },
		{ "tasks/1700000000000/ui_messages.json.tmp.3", &path_beside_docs },
		{ "tasks/1700000000000/sub", &path_beside_docs },
		{ "tasks/1700000000000/sub/x", &path_plain },
		{ "tasks/notanid", &path_plain },
		{ "sessions/1700000000000_ab", &path_conversation },
		{ "sessions/1700000000000_ab/1700000000000_ab.json", &path_doc_whole },
		{ "sessions/1700000000000_ab/1700000000000_ab.messages.json", &path_doc_array },
		{ "sessions/1700000000000_ab/1700000000000_ab.compaction.json", &path_beside_docs },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct route rt;

		route_resolve(NULL, cases[i].rel, &rt);
		print_message("'%s': %s\n", cases[i].rel, rt.ops->name);
		assert_ptr_equal(rt.ops, cases[i].row);
		assert_int_equal(rt.err, 0);
		assert_null(rt.in);
	}
}

/* The commands' walk (view_doc_of()): the doc behind a view file, by shape, with no mount. */
static void test_doc_of(void **state)
{
	char buf[256];

	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17/messages.jsonl", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tasks/17/api_conversation_history.json");
	assert_int_equal(view_doc_of("workspaces/.trash/17/metadata.json", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tasks/17/task_metadata.json");
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17_s/subagents/sub/messages.jsonl", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sessions/17_s/sub.messages.json");
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17_s/subagents/a/subagents/b/messages.jsonl", buf,
				     sizeof(buf)), 0);
	assert_string_equal(buf, "sessions/17_s/b.messages.json");
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17_s/sub.messages.jsonl", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17_s/task.json", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sessions/17_s/17_s.json");
	assert_int_equal(view_doc_of("tasks/17/ui_messages.json", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tasks/17/ui_messages.json");
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17/task.json", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(view_doc_of("workspaces/.trash/17/task.json", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17_s/ui_messages.jsonl", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(view_doc_of("workspaces/a-1/tasks/17/checkpoints", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(view_doc_of("workspaces/a-1/workspace.json", buf, sizeof(buf)), -ENOENT);
}

/* ---- a compat folder missing from the backing tree ------------------------------------ */

/*
 * fstatat() of fs/'s objects goes through here (-Wl,--wrap, meson.build):
 * armed, the first look that finds no "tasks" runs race_make() before it
 * returns, as a pull or a first save on another thread would.
 */
int __real_fstatat64(int dfd, const char *name, struct stat *st, int flags);
int __wrap_fstatat64(int dfd, const char *name, struct stat *st, int flags);
static const char *race_make;
static int race_root = -1;

int __wrap_fstatat64(int dfd, const char *name, struct stat *st, int flags)
{
	int r = __real_fstatat64(dfd, name, st, flags);

	if (r < 0 && errno == ENOENT && race_make && strcmp(name, "tasks") == 0) {
		char path[64];

		snprintf(path, sizeof(path), "%.*s", (int)(strchr(race_make, '/') - race_make), race_make);
		assert_int_equal(mkdirat(race_root, path, 0700), 0);
		assert_int_equal(mkdirat(race_root, race_make, 0700), 0);
		race_make = NULL;
		errno = ENOENT;
	}
	return r;
}

static int missing_warnings;

static void count_missing(enum log_level level, const char *line)
{
	if (level == LOG_LEVEL_WARN && strstr(line, "was missing from the backing tree"))
		missing_warnings++;
}

/*
 * tasks/ is made again for the conversations in the store, with a warning,
 * when something removed it; but a lookup that finds no tasks/ while a
 * thread is making it for a new conversation (whose doc comes after its
 * folder) warns of nothing: nothing was missing.
 */
static void test_folder_made_again(void **state)
{
	static const char doc[] = "tasks/1740000000000/ui_messages.json";
	char dir[] = "/tmp/convfs-kinds-XXXXXX";
	struct fs fs = { 0 };
	struct store_who who = { .pid = 1, .comm = "test" };
	struct route rt;
	struct stat st;
	char cmd[64];

	assert_non_null(mkdtemp(dir));
	fs.backing_path = dir;
	fs.root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fs.root_fd >= 0);
	assert_int_equal(store_open(":memory:", 0, &fs.store), 0);
	assert_int_equal(store_doc_commit(fs.store, doc, "[]", 2, &who, "write"), 0);
	log_set_sink(count_missing);

	/* The folder made while the lookup looked: no warning. */
	race_root = fs.root_fd;
	race_make = "tasks/1740000000000";
	route_resolve(&fs, "tasks", &rt);
	assert_ptr_equal(rt.ops, &path_tasks);
	assert_int_equal(rt.ops->getattr(&rt, &st), 0);
	assert_null(race_make);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(missing_warnings, 0);

	/* Removed behind the daemon's back: made again, with a warning. */
	assert_int_equal(unlinkat(fs.root_fd, "tasks/1740000000000", AT_REMOVEDIR), 0);
	assert_int_equal(unlinkat(fs.root_fd, "tasks", AT_REMOVEDIR), 0);
	assert_int_equal(rt.ops->getattr(&rt, &st), 0);
	assert_int_equal(missing_warnings, 1);
	assert_int_equal(fstatat(fs.root_fd, "tasks/1740000000000", &st, AT_SYMLINK_NOFOLLOW), 0);

	log_set_sink(NULL);
	store_free(fs.store);
	close(fs.root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_has_a_row),
		cmocka_unit_test(test_what_names_nothing),
		cmocka_unit_test(test_shapes_are_a_tree),
		cmocka_unit_test(test_shape_walk_finds_every_kind),
		cmocka_unit_test(test_kept_where_told),
		cmocka_unit_test(test_readonly_below_readonly),
		cmocka_unit_test(test_compat_routes),
		cmocka_unit_test(test_doc_of),
		cmocka_unit_test(test_folder_made_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

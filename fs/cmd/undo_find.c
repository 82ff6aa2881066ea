/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * undo_find.c: what `convfs undo` reads of the view (undo.h): the task's
 * checkpoints, its workspace's path, and which files a checkpoint's
 * agent.diff changes.
 *
 * The paths come from the diff's own header lines, as git prints them:
 * "diff --git a/P b/P" (P quoted, C-style, when it has bytes git escapes;
 * unquoted, a name with spaces is found as the two equal halves), and for a
 * rename, whose two names cannot be told apart in that line when they hold
 * spaces, its "rename from" and "rename to" lines. Both names of a rename
 * are taken: the old one comes back, the new one goes.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/backing/tree.h"
#include "fs/cmd/undo.h"
#include "store/util.h"

#define UNDO_JSON_MAX ((size_t)1 << 20)
#define UNDO_DIFF_MAX ((size_t)64 << 20)

/* The regular file at path whole, at most max bytes (free()); 0 or -errno (-EFBIG past max). */
static int slurp(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	_cleanup_close_ int fd = open_regular(AT_FDCWD, path, &st);

	return fd < 0 ? fd : read_fd_all(fd, max, ret, ret_len);
}

/* The workspace's path from the workspace.json two folders up from the task. */
static int workspace_of(const char *task, char *ws_path)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	const cJSON *p;
	cJSON *o;
	size_t len;
	int r;

	if (asprintf(&path, "%s/../../workspace.json", task) < 0)
		return -ENOMEM;
	if ((r = slurp(path, UNDO_JSON_MAX, &text, &len)) < 0) {
		fprintf(stderr, "convfs: undo: cannot read '%s': %s (TASK_DIR is a mount's "
				"workspaces/<ws>/tasks/<id>)\n", path, strerror(-r));
		return -1;
	}
	o = cJSON_ParseWithLength(text, len);
	p = cJSON_GetObjectItemCaseSensitive(o, "path");
	if (!cJSON_IsString(p) || p->valuestring[0] != '/' || strlen(p->valuestring) >= PATH_MAX) {
		fprintf(stderr, "convfs: undo: '%s' names no workspace folder (a task of workspaces/unknown/ has "
				"none to undo in)\n", path);
		cJSON_Delete(o);
		return -1;
	}
	snprintf(ws_path, PATH_MAX, "%s", p->valuestring);
	cJSON_Delete(o);
	return 0;
}

/* A checkpoint folder's number ("007-8bcaa4a": 7), or -1 for another name. */
static long ckpt_number(const char *name)
{
	char *end;
	long n;

	if (name[0] < '0' || name[0] > '9')
		return -1;
	n = strtol(name, &end, 10);
	if (*end != '-' || !end[1] || strspn(end + 1, "0123456789abcdef") != strlen(end + 1))
		return -1;
	return n;
}

int undo_find(const char *task, const char *n, const char *workspace, char *ckpt, char *last, char *ws_path, char **ret_task)
{
	_cleanup_free_ char *real = NULL, *dir = NULL;
	long want = -1, last_n = -1, first_n = -1;
	struct dirent *e;
	DIR *d;

	*ckpt = *last = '\0';
	if (n[0] >= '0' && n[0] <= '9' && strspn(n, "0123456789") == strlen(n) && strlen(n) < 9)
		want = strtol(n, NULL, 10);
	if (!(real = realpath(task, NULL))) {
		fprintf(stderr, "convfs: undo: cannot find '%s': %s\n", task, strerror(errno));
		return -1;
	}
	if (asprintf(&dir, "%s/checkpoints", real) < 0)
		return -1;
	if (!(d = opendir(dir))) {
		fprintf(stderr, "convfs: undo: '%s' has no checkpoints/ (%s): TASK_DIR is a task folder of a "
				"mount's workspaces/, of a client that makes checkpoints\n", task, strerror(errno));
		return -1;
	}
	while ((errno = 0, e = readdir(d))) {
		long k = ckpt_number(e->d_name);

		if (k < 0 || strlen(e->d_name) > NAME_MAX)
			continue;
		if (k > last_n)
			last_n = k, snprintf(last, NAME_MAX + 1, "%s", e->d_name);
		if (first_n < 0 || k < first_n)
			first_n = k;
		if (k == want || strcmp(e->d_name, n) == 0)
			snprintf(ckpt, NAME_MAX + 1, "%s", e->d_name);
	}
	if (errno) {
		fprintf(stderr, "convfs: undo: cannot list '%s': %s\n", dir, strerror(errno));
		closedir(d);
		return -1;
	}
	closedir(d);
	if (!*ckpt) {
		if (last_n < 0)
			fprintf(stderr, "convfs: undo: task '%s' has no checkpoint\n", task);
		else
			fprintf(stderr, "convfs: undo: task '%s' has no checkpoint '%s' (it has %03ld to %03ld)\n", task,
				n, first_n, last_n);
		return -1;
	}
	if (workspace) {
		if (!realpath(workspace, ws_path)) {
			fprintf(stderr, "convfs: undo: cannot find the workspace '%s': %s\n", workspace, strerror(errno));
			return -1;
		}
	} else if (workspace_of(real, ws_path) < 0) {
		return -1;
	}
	*ret_task = TAKE_PTR(real);
	return 0;
}

char *undo_unquote(const char *s, size_t len, size_t *ret_used)
{
	_cleanup_sb_ struct sb sb = SB_INIT;
	size_t i = 1;

	if (len < 2 || s[0] != '"')
		return NULL;
	while (i < len && s[i] != '"') {
		char c = s[i++];

		if (c == '\\' && i < len) {
			static const char from[] = "abtnvfr\"\\", to[] = "\a\b\t\n\v\f\r\"\\";
			const char *k = strchr(from, s[i]);

			if (k && s[i]) {
				c = to[k - from];
				i++;
			} else if (i + 2 < len && s[i] >= '0' && s[i] <= '3' && s[i + 1] >= '0' && s[i + 1] <= '7' &&
				   s[i + 2] >= '0' && s[i + 2] <= '7') {
				c = (char)((s[i] - '0') << 6 | (s[i + 1] - '0') << 3 | (s[i + 2] - '0'));
				i += 3;
			} else {
				return NULL;
			}
		}
		if (c == '\0' || sb_add(&sb, &c, 1) < 0)
			return NULL;
	}
	if (i >= len)
		return NULL;
	*ret_used = i + 1;
	return sb_detach(&sb, NULL);
}

/* Adds s[0..len) (quoted or not), less the prefix ("a/", "b/", or "" for none), unless it is there. */
static int add_path(struct undo_diff *d, const char *s, size_t len, const char *prefix)
{
	_cleanup_free_ char *q = NULL;
	size_t used = 0, plen = strlen(prefix);
	char *p;
	int r;

	if (len && s[0] == '"') {
		if (!(q = undo_unquote(s, len, &used)) || used != len)
			return 0;
		s = q, len = strlen(q);
	}
	if (len <= plen || memcmp(s, prefix, plen) != 0)
		return 0;
	s += plen, len -= plen;
	for (size_t i = 0; i < d->n; i++)
		if (strlen(d->paths[i]) == len && memcmp(d->paths[i], s, len) == 0)
			return 0;
	if ((r = ARRAY_GROW(d->paths, d->n, d->alloc, 16)) < 0)
		return r;
	if (!(p = strndup(s, len)))
		return -ENOMEM;
	d->paths[d->n++] = p;
	return 0;
}

/* "diff --git A B": A and B quoted, or the same unquoted name twice (a rename of unquoted names: its own lines). */
static int diff_line(struct undo_diff *d, const char *s, size_t len)
{
	_cleanup_free_ char *a = NULL;
	size_t used, half;
	int r;

	if (len && s[0] == '"') {
		if (!(a = undo_unquote(s, len, &used)) || used + 1 >= len || s[used] != ' ')
			return 0;
		if ((r = add_path(d, s, used, "a/")) < 0)
			return r;
		return add_path(d, s + used + 1, len - used - 1, "b/");
	}
	if (len < 7 || (len - 5) % 2)
		return 0;
	half = (len - 5) / 2;
	if (memcmp(s, "a/", 2) != 0 || memcmp(s + 2 + half, " b/", 3) != 0 || memcmp(s + 2, s + 5 + half, half) != 0)
		return 0;
	return add_path(d, s, 2 + half, "a/");
}

static int add_note(struct undo_diff *d, const char *s, size_t len)
{
	int r;

	if ((r = ARRAY_GROW(d->notes, d->nnotes, d->notes_alloc, 8)) < 0)
		return r;
	if (!(d->notes[d->nnotes] = strndup(s, len)))
		return -ENOMEM;
	d->nnotes++;
	return 0;
}

int undo_diff_parse(struct undo_diff *d, const char *text, size_t size)
{
	/* The names a rename or copy gives on lines of their own (no a/ or b/). */
	static const char *const names[] = { "rename from ", "rename to ", "copy to " };
	const char *line = text, *end = text + size;
	int r = 0;

	*d = (struct undo_diff){ 0 };
	while (r == 0 && line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = (size_t)((nl ? nl : end) - line);

		if (len > 11 && memcmp(line, "diff --git ", 11) == 0) {
			r = diff_line(d, line + 11, len - 11);
		} else if (len > 9 && memcmp(line, "# convfs:", 9) == 0) {
			/* The first says what agent.diff is: the plan says it its own way. */
			if (!(len > 21 && memcmp(line, "# convfs: agent.diff:", 21) == 0))
				r = add_note(d, line, len);
		} else {
			for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
				size_t hl = strlen(names[i]);

				if (len > hl && memcmp(line, names[i], hl) == 0) {
					r = add_path(d, line + hl, len - hl, "");
					break;
				}
			}
		}
		line = nl ? nl + 1 : end;
	}
	return r;
}

int undo_diff_read(const char *task, const char *ckpt, struct undo_diff *d)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len;
	int r;

	*d = (struct undo_diff){ 0 };
	if (asprintf(&path, "%s/checkpoints/%s/agent.diff", task, ckpt) < 0)
		return -1;
	if ((r = slurp(path, UNDO_DIFF_MAX, &text, &len)) < 0) {
		fprintf(stderr, "convfs: undo: cannot read '%s': %s%s\n", path, strerror(-r),
			r == -ENOENT ? " (the shadow repository lacks the checkpoint's commit or the latest's: the "
				       "mount's log says why)"
				     : "");
		return -1;
	}
	if ((r = undo_diff_parse(d, text, len)) < 0) {
		fprintf(stderr, "convfs: undo: cannot read the paths of '%s': %s\n", path, strerror(-r));
		undo_diff_release(d);
		return -1;
	}
	return 0;
}

void undo_diff_release(struct undo_diff *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->paths[i]);
	for (size_t i = 0; i < d->nnotes; i++)
		free(d->notes[i]);
	free(d->paths);
	free(d->notes);
	*d = (struct undo_diff){ 0 };
}

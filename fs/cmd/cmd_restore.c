/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_restore.c: `convfs restore FILE NUMBER`, one saved version of a
 * conversation file made the live one again.
 *
 * The restore goes through the mount, never into the store's file: the
 * daemon owns the store while it is mounted, keeps each writer's merge base,
 * and is the one that can tell the kernel to drop what it cached. So this
 * sets FS_XATTR_RESTORE on FILE, and the daemon makes the commit (control.c):
 * one commit of kind "restore", not merged. NUMBER is a version's number as
 * `convfs log FILE` and the task's versions/ show it: it counts the saves of
 * any of the task's files, and brings FILE back as it stood after that save
 * (as versions/NUMBER shows it). The store is only read here, read-only as
 * `convfs log` reads it, to check the number first and to say which version
 * the restore became. A folder that is not mounted is refused:
 * mount it, then restore (nothing else may write the store behind a daemon
 * that could start meanwhile, and the mount is how it is found).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/cmd/cmd.h"
#include "fs/fs.h"
#include "fs/cmd/mounts.h"
#include "store/store_history.h"
#include "store/store_view.h"
#include "store/util.h"

/* What the store has now: the file's first and newest versions, and the last of its numbering. */
struct found {
	int64_t first, newest, last;
};

static int find_version(void *ctx, const struct store_version *v)
{
	struct found *f = ctx;

	if (v->number > f->newest)
		f->newest = v->number;
	if (!f->first || v->number < f->first)
		f->first = v->number;
	return 0;
}

/* The versions of the target's doc as the store has them now; all 0 if it has none. */
static int versions_now(const struct fs_target *t, struct found *ret)
{
	struct store_task_version *all = NULL;
	struct store *st = NULL;
	size_t n = 0;
	int r;

	*ret = (struct found){ 0 };
	r = store_open(t->mount.store, STORE_OPEN_READONLY, &st);
	if (r == 0)
		r = store_doc_versions(st, t->doc, t->docs.paths, t->docs.n, find_version, ret);
	if (r == 0)
		r = store_versions(st, t->docs.paths, t->docs.n, &all, &n);
	if (r == 0)
		ret->last = (int64_t)n;
	free(all);
	store_free(st);
	return r;
}

static int parse_number(const char *s, int64_t *ret)
{
	int64_t n = 0;

	if (!*s || strlen(s) > 18)
		return -EINVAL;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		n = n * 10 + (*c - '0');
	}
	*ret = n;
	return 0;
}

int cmd_restore(int argc, char **argv)
{
	struct fs_target t = { 0 };
	struct found found;
	char digits[24];
	int64_t number;
	int r, status = 1;

	if (argc == 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
		printf("usage: convfs restore FILE NUMBER\n");
		return 0;
	}
	if (argc != 4 || parse_number(argv[3], &number) < 0 || number < 1) {
		fprintf(stderr, "usage: convfs restore FILE NUMBER (a version's number, as convfs log FILE shows)\n");
		return 2;
	}
	if (fs_target_resolve("restore", argv[2], &t) < 0)
		return 1;
	r = versions_now(&t, &found);
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "convfs: restore: cannot read the versions of '%s' in '%s': %s\n", argv[2],
			t.mount.store, strerror(-r));
		goto out;
	}
	if (!found.newest) {
		fprintf(stderr, "convfs: restore: '%s' has no saved version\n", argv[2]);
		goto out;
	}
	if (number > found.last) {
		fprintf(stderr, "convfs: restore: there is no version %03" PRId64 " (the last is %03" PRId64
				"; see convfs log)\n", number, found.last);
		goto out;
	}
	if (number < found.first) {
		fprintf(stderr, "convfs: restore: '%s' had no version yet at %03" PRId64 " (its first is %03" PRId64
				"; see convfs log)\n", argv[2], number, found.first);
		goto out;
	}
	snprintf(digits, sizeof(digits), "%" PRId64, number);
	if (setxattr(t.abs, FS_XATTR_RESTORE, digits, strlen(digits), 0) < 0) {
		switch (errno) {
		case EALREADY:
			printf("version %03" PRId64 " of '%s' is already the live one; nothing changed\n", number,
			       argv[2]);
			status = 0;
			break;
		case EINVAL:
			fprintf(stderr, "convfs: restore: version %03" PRId64 " of '%s' is not valid JSON (a damaged "
					"file kept as found); nothing changed\n", number, argv[2]);
			break;
		case EOPNOTSUPP:
			fprintf(stderr, "convfs: restore: the daemon serving '%s' cannot restore (an older convfs?); "
					"nothing changed\n", t.mount.mountpoint);
			break;
		default:
			fprintf(stderr, "convfs: restore: cannot restore version %03" PRId64 " of '%s': %s\n", number,
				argv[2], strerror(errno));
		}
		goto out;
	}
	if (versions_now(&t, &found) == 0)
		printf("restored version %03" PRId64 " of '%s' as version %03" PRId64 "\n", number, argv[2],
		       found.newest);
	else
		printf("restored version %03" PRId64 " of '%s'\n", number, argv[2]);
	status = 0;
out:
	fs_target_release(&t);
	return status;
}

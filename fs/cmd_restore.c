/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_restore.c: `convfs restore FILE NUMBER`, one saved version of a
 * conversation file made the live one again.
 *
 * The restore goes through the mount, never into the store's file: the
 * daemon owns the store while it is mounted, keeps each writer's merge base,
 * and is the one that can tell the kernel to drop what it cached. So this
 * sets FS_XATTR_RESTORE on FILE, and the daemon makes the commit (control.c):
 * one commit of kind "restore", not merged. The store is only read here,
 * read-only as `convfs log` reads it, to check the number first and to say
 * which version the restore became. A folder that is not mounted is refused:
 * mount it, then restore (nothing else may write the store behind a daemon
 * that could start meanwhile, and the mount is how it is found).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/cmd.h"
#include "fs/fs.h"
#include "fs/mounts.h"
#include "store/store_history.h"
#include "store/util.h"

struct find_ctx {
	int64_t want, newest;
	bool found;
};

static int find_version(void *ctx, const struct store_version *v)
{
	struct find_ctx *c = ctx;

	if (v->number > c->newest)
		c->newest = v->number;
	if (v->number == c->want)
		c->found = true;
	return 0;
}

/* The doc's versions as the store has them now: whether want is one, and the newest. */
static int versions_now(const struct fs_target *t, int64_t want, struct find_ctx *ret)
{
	struct store *st = NULL;
	int r;

	*ret = (struct find_ctx){ .want = want };
	r = store_open(t->mount.store, STORE_OPEN_READONLY, &st);
	if (r == 0) {
		r = store_doc_versions(st, t->doc, find_version, ret);
		store_free(st);
	}
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
	struct find_ctx found;
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
	r = versions_now(&t, number, &found);
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "convfs: restore: cannot read the versions of '%s' in '%s': %s\n", argv[2],
			t.mount.store, strerror(-r));
		goto out;
	}
	if (!found.found) {
		if (found.newest)
			fprintf(stderr, "convfs: restore: '%s' has no version %03" PRId64 " (it has 001 to %03" PRId64
					"; see convfs log)\n", argv[2], number, found.newest);
		else
			fprintf(stderr, "convfs: restore: '%s' has no saved version\n", argv[2]);
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
	if (versions_now(&t, 0, &found) == 0)
		printf("restored version %03" PRId64 " of '%s' as version %03" PRId64 "\n", number, argv[2],
		       found.newest);
	else
		printf("restored version %03" PRId64 " of '%s'\n", number, argv[2]);
	status = 0;
out:
	fs_target_release(&t);
	return status;
}

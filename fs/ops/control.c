/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * control.c: what a command asks of the daemon through the mount.
 *
 * `convfs restore FILE NUMBER` sets the extended attribute FS_XATTR_RESTORE
 * on FILE to NUMBER. The request reaches the daemon that owns the store, as
 * every write does: the row of FILE's kind says which doc it shows (the
 * compat file itself, or the doc behind a conversation file of the view:
 * their setxattr is a restore; any other kind's is not), NUMBER
 * counts the saves of the docs that share its numbering (version_docs_of():
 * a task's files, as versions/ counts them), the store makes the doc as it
 * stood after that save the live one in one commit of kind "restore",
 * and the kernel is told to drop what it cached of the doc and the view,
 * as after any commit (fs_invalidate()). A process that wrote the store's
 * file itself would bypass all of that: the kernel would go on serving
 * cached attributes, and the daemon's writers would merge against bases
 * that no longer say what they saw.
 *
 * Every other extended attribute is EOPNOTSUPP, as before there was this
 * one: the mount stores none.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fs/ops/ops.h"
#include "fs/ops/ops_internal.h"
#include "fs/view/view_version.h"
#include "store/store_history.h"
#include "store/util.h"

/* Makes version value (size bytes: the digits of its number) of doc the live one. */
static int restore(struct fs *fs, const char *doc, const char *value, size_t size)
{
	struct fs_proc proc;
	struct version_docs docs;
	struct store_who who;
	char digits[24];
	int64_t number = 0;
	int r;

	if (size == 0 || size >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, value, size);
	digits[size] = '\0';
	for (size_t i = 0; i < size; i++) {
		if (digits[i] < '0' || digits[i] > '9')
			return -EINVAL;
		number = number * 10 + (digits[i] - '0');
	}
	if ((r = version_docs_of(doc, &docs)) < 0)
		return r;
	fs_caller(&proc, &who);
	r = store_doc_restore(fs->store, doc, docs.paths, docs.n, number, &who, NULL);
	if (r == -EALREADY)
		return r; /* nothing changed: nothing to tell */
	if (r < 0) {
		if (r != -ENOENT && r != -EINVAL)
			log_warn("cannot restore version %" PRId64 " of '%s': %s", number, doc, strerror(-r));
		return r;
	}
	log_info("restored version %03" PRId64 " of '%s' (asked by pid %d)", number, doc, (int)who.pid);
	fs_invalidate(fs, doc);
	return 0;
}

int path_restore_setxattr(const struct route *rt, const char *name, const char *value, size_t size)
{
	return restore(rt->fs, rt->rel, value, size);
}

int path_restore_view_setxattr(const struct route *rt, const char *name, const char *value, size_t size)
{
	return restore(rt->fs, rt->vp.doc, value, size);
}

int op_setxattr(const struct route *rt, const char *name, const char *value, size_t size)
{
	if (strcmp(name, FS_XATTR_RESTORE) != 0)
		return -EOPNOTSUPP;
	if (rt->ops->readonly)
		return -EROFS;
	return rt->ops->setxattr ? rt->ops->setxattr(rt, name, value, size) : -EOPNOTSUPP;
}

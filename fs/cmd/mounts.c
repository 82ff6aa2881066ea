/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mounts.c: the convfs mounts of the mount table, and the doc a path on one
 * of them shows (mounts.h).
 *
 * /proc/self/mounts has one line per mount, "SOURCE TARGET TYPE OPTIONS 0 0",
 * with space, tab, newline and backslash written as octal escapes (\040).
 * A convfs mount's type is fuse.convfs and its source the store's absolute
 * path. Nothing here goes through the mount but the realpath() of a file a
 * command was given: a dead mount answers ENOTCONN, and status must still
 * say which store it was.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs/cmd/mounts.h"
#include "fs/view/view.h"
#include "store/util.h"

/* Decodes the mount table's octal escapes in place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* True if path is mountpoint or below it. */
static bool is_on(const char *path, const char *mountpoint)
{
	size_t n = strlen(mountpoint);

	if (strcmp(mountpoint, "/") == 0)
		return true;
	return strncmp(path, mountpoint, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int fs_mount_find(const char *path, bool containing, struct fs_mount *ret)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	_cleanup_free_ char *line = NULL;
	struct fs_mount best = { 0 };
	size_t alloc = 0;
	int r = 0;

	if (!f)
		return -errno;
	while (getline(&line, &alloc, f) > 0) {
		char *save = NULL;
		char *source = strtok_r(line, " \n", &save);
		char *target = source ? strtok_r(NULL, " \n", &save) : NULL;
		char *type = target ? strtok_r(NULL, " \n", &save) : NULL;

		if (!type || strcmp(type, FS_MOUNT_TYPE) != 0)
			continue;
		unescape(source);
		unescape(target);
		if (containing ? !is_on(path, target) : strcmp(path, target) != 0)
			continue;
		/* The deepest; of one mount point mounted twice, the last (the one on top). */
		if (best.mountpoint && strlen(best.mountpoint) > strlen(target))
			continue;
		fs_mount_release(&best);
		best.mountpoint = strdup(target);
		best.store = source[0] == '/' ? strdup(source) : NULL;
		if (!best.mountpoint || (source[0] == '/' && !best.store)) {
			r = -ENOMEM;
			break;
		}
	}
	fclose(f);
	if (r == 0 && !best.mountpoint)
		r = -ENOENT;
	if (r < 0) {
		fs_mount_release(&best);
		return r;
	}
	*ret = best;
	return 0;
}

void fs_mount_release(struct fs_mount *m)
{
	free(m->mountpoint);
	free(m->store);
	m->mountpoint = m->store = NULL;
}

char *fs_abs_path(const char *path)
{
	_cleanup_sb_ struct sb p = SB_INIT;
	char *cwd;

	if (path[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (!cwd || sb_adds(&p, cwd) < 0 || sb_adds(&p, "/") < 0) {
			free(cwd);
			return NULL;
		}
		free(cwd);
	}
	if (sb_adds(&p, path) < 0)
		return NULL;
	while (p.len > 1 && p.buf[p.len - 1] == '/')
		p.buf[--p.len] = '\0';
	return sb_detach(&p, NULL);
}

int fs_target_resolve(const char *cmd, const char *file, struct fs_target *ret)
{
	struct fs_target t = { 0 };
	int r;

	t.abs = realpath(file, NULL);
	if (!t.abs) {
		r = -errno;
		fprintf(stderr, "convfs: %s: cannot find '%s': %s\n", cmd, file, strerror(errno));
		return r;
	}
	r = fs_mount_find(t.abs, true, &t.mount);
	if (r < 0) {
		if (r == -ENOENT)
			fprintf(stderr, "convfs: %s: '%s' is not on a convfs mount\n", cmd, file);
		else
			fprintf(stderr, "convfs: %s: cannot read the mount table: %s\n", cmd, strerror(-r));
		fs_target_release(&t);
		return r;
	}
	if (!t.mount.store) {
		fprintf(stderr, "convfs: %s: the mount '%s' does not name its store (mounted by an older convfs); "
				"mount it again\n", cmd, t.mount.mountpoint);
		fs_target_release(&t);
		return -ENOENT;
	}
	t.rel = t.abs + strlen(t.mount.mountpoint);
	while (*t.rel == '/')
		t.rel++;
	r = view_doc_of(t.rel, t.doc, sizeof(t.doc));
	if (r < 0) {
		fprintf(stderr, "convfs: %s: '%s' is not a conversation file (a task's or session's file, in the "
				"client's folder or in workspaces/)\n", cmd, file);
		fs_target_release(&t);
		return -EINVAL;
	}
	*ret = t;
	r = version_docs_of(ret->doc, &ret->docs);
	if (r < 0) {
		fprintf(stderr, "convfs: %s: cannot name the files that share the versions of '%s': %s\n", cmd, file,
			strerror(-r));
		fs_target_release(ret);
		return r;
	}
	return 0;
}

void fs_target_release(struct fs_target *t)
{
	fs_mount_release(&t->mount);
	free(t->abs);
	t->abs = NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dirs.c: open folders. A folder's listing is read whole when it is opened
 * (op_list_dir()), so that readdir offsets stay stable whatever changes
 * meanwhile; each handle is kept on a list until the kernel releases it.
 */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/dirs.h"
#include "fs/ops.h"
#include "store/util.h"

struct dir_entry {
	char *name;
	mode_t type;
	uint64_t ino;
};

struct dir_handle {
	struct dir_entry *v;
	size_t n, alloc;
	struct dir_handle *prev, *next; /* on open_dirs until released */
};

/*
 * Every dir handle given to the kernel and not yet released. A RELEASEDIR
 * still queued when the file system is unmounted is dropped by the kernel,
 * so ll_destroy() frees what is left here.
 */
static struct dir_handle *open_dirs;
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;

static void dir_track(struct dir_handle *d)
{
	pthread_mutex_lock(&dirs_lock);
	d->prev = NULL;
	d->next = open_dirs;
	if (open_dirs)
		open_dirs->prev = d;
	open_dirs = d;
	pthread_mutex_unlock(&dirs_lock);
}

static void dir_untrack(struct dir_handle *d)
{
	pthread_mutex_lock(&dirs_lock);
	if (d->prev)
		d->prev->next = d->next;
	else
		open_dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->prev = d->next = NULL;
	pthread_mutex_unlock(&dirs_lock);
}

static void dir_free(struct dir_handle *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
	free(d);
}

static int dir_add(void *ctx, const char *name, mode_t type, uint64_t ino)
{
	struct dir_handle *d = ctx;

	if (ARRAY_GROW(d->v, d->n, d->alloc, 32) < 0)
		return -ENOMEM;
	d->v[d->n].name = strdup(name);
	if (!d->v[d->n].name)
		return -ENOMEM;
	d->v[d->n].type = type;
	/* readdir() skips entries whose inode number is 0 */
	d->v[d->n].ino = ino ? ino : hash64(name, strlen(name)) | 1;
	d->n++;
	return 0;
}

int dir_open(const struct route *rt, struct dir_handle **ret)
{
	struct dir_handle *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	r = op_list_dir(rt, dir_add, d);
	if (r < 0) {
		dir_free(d);
		return r;
	}
	dir_track(d);
	*ret = d;
	return 0;
}

void dir_reply(fuse_req_t req, struct dir_handle *d, size_t size, off_t off)
{
	_cleanup_free_ char *buf = malloc(size);
	size_t pos = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; i < d->n; i++) {
		struct stat st = { .st_ino = d->v[i].ino, .st_mode = d->v[i].type };
		size_t need = fuse_add_direntry(req, buf + pos, size - pos, d->v[i].name, &st, (off_t)i + 1);

		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
}

void dir_release(struct dir_handle *d)
{
	dir_untrack(d);
	dir_free(d);
}

void dir_release_all(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&dirs_lock);
	while (open_dirs) {
		struct dir_handle *d = open_dirs;

		open_dirs = d->next;
		dir_free(d);
		n++;
	}
	pthread_mutex_unlock(&dirs_lock);
	if (n)
		log_debug("freed %u directory handles the kernel did not release", n);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dirs.c: folder listings for readdir.
 *
 * The kernel keeps every folder's listing: ll_opendir() declines OPENDIR,
 * so the kernel opens folders itself, keeps what it read of each
 * (FOPEN_CACHE_DIR) until it is told the folder changed or sees it change
 * through the mount, and sends no OPENDIR or RELEASEDIR at all. It asks the
 * daemon for a listing only when it has none, in pieces, by offset, from 0
 * on, with no handle.
 *
 * The pieces go as READDIRPLUS replies (dir_reply_plus()) with the nodes
 * and attributes of the entries the kernel may keep, so that a walk does not
 * look each one up; or as READDIR replies, bare names.
 *
 * A listing is made whole at offset 0 (op_list_dir()) and kept for the
 * pieces that follow, so that the offsets of one reading stay stable
 * whatever changes meanwhile: each offset carries the listing's serial
 * number in its high bits, and a reading goes on in its own listing. At
 * most LISTINGS_KEPT are kept, the oldest dropped first, each as soon as its
 * last piece is read: memory is bounded by a few folders' names, not by the
 * store. A reading whose listing was dropped meanwhile (many folders listed
 * at once) gets a fresh one from where it was, as a reading of a folder that
 * changes may see.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/kernel/dirs.h"
#include "fs/kernel/nodes.h"
#include "fs/ops/ops.h"
#include "store/util.h"

#define LISTINGS_KEPT 16
#define SERIAL_SHIFT 40 /* an offset: serial << SERIAL_SHIFT | the next entry's index */
#define SERIAL_MASK ((1u << 22) - 1)
#define INDEX_MASK ((UINT64_C(1) << SERIAL_SHIFT) - 1)

struct dir_entry {
	char *name;
	mode_t type;
	uint64_t ino;
};

struct dir_listing {
	fuse_ino_t node;
	uint32_t serial;
	unsigned refs; /* the table's (while kept) and each reply's under way */
	struct dir_entry *v;
	size_t n, alloc;
};

/* A mount's listings kept. */
struct dirs {
	struct dir_listing *kept[LISTINGS_KEPT];
	uint32_t last_serial;
	pthread_mutex_t lock;
	struct nodes *nodes; /* whose lookups a reply that did not reach the kernel takes back */
};

int dirs_new(struct nodes *nodes, struct dirs **ret)
{
	struct dirs *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	r = -pthread_mutex_init(&d->lock, NULL);
	if (r < 0) {
		free(d);
		return r;
	}
	d->nodes = nodes;
	*ret = d;
	return 0;
}

static void listing_free(struct dir_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	free(l);
}

/* Drops a reference; d->lock held. Returns the listing if it is to be freed (outside the lock). */
static struct dir_listing *listing_put(struct dir_listing *l)
{
	return --l->refs == 0 ? l : NULL;
}

/* The table lets go of slot i; d->lock held. */
static struct dir_listing *unkeep(struct dirs *d, unsigned i)
{
	struct dir_listing *l = d->kept[i];

	d->kept[i] = NULL;
	return l ? listing_put(l) : NULL;
}

struct dir_listing *dir_listing_find(struct dirs *d, fuse_ino_t ino, off_t off)
{
	uint32_t serial = (uint32_t)((uint64_t)off >> SERIAL_SHIFT) & SERIAL_MASK;
	struct dir_listing *l = NULL;

	if (off == 0)
		return NULL;
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < LISTINGS_KEPT; i++)
		if (d->kept[i] && d->kept[i]->node == ino && d->kept[i]->serial == serial) {
			l = d->kept[i];
			l->refs++;
			break;
		}
	pthread_mutex_unlock(&d->lock);
	return l;
}

static int listing_add(void *ctx, const char *name, mode_t type, uint64_t ino)
{
	struct dir_listing *l = ctx;

	if (ARRAY_GROW(l->v, l->n, l->alloc, 32) < 0)
		return -ENOMEM;
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return -ENOMEM;
	l->v[l->n].type = type;
	/* readdir() skips entries whose inode number is 0 */
	l->v[l->n].ino = ino ? ino : hash64(name, strlen(name)) | 1;
	l->n++;
	return 0;
}

int dir_listing_new(struct dirs *d, fuse_ino_t ino, const struct route *rt, struct dir_listing **ret)
{
	struct dir_listing *l = calloc(1, sizeof(*l)), *gone;
	unsigned oldest = 0;
	int r;

	if (!l)
		return -ENOMEM;
	r = op_list_dir(rt, listing_add, l);
	if (r < 0) {
		listing_free(l);
		return r;
	}
	l->node = ino;
	l->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(&d->lock);
	l->serial = d->last_serial = (d->last_serial + 1) & SERIAL_MASK;
	for (unsigned i = 0; i < LISTINGS_KEPT; i++) {
		if (!d->kept[i]) {
			oldest = i;
			break;
		}
		/* serials grow, but for a wrap every 4 million listings: then the order is off once */
		if (d->kept[i]->serial < d->kept[oldest]->serial)
			oldest = i;
	}
	gone = unkeep(d, oldest);
	d->kept[oldest] = l;
	pthread_mutex_unlock(&d->lock);
	listing_free(gone);
	*ret = l;
	return 0;
}

/*
 * Fills buf with the entries of l from index i on, as many as size holds,
 * plain (entry NULL) or with their nodes; the lookups entry() counted go
 * into *counted. Returns the bytes filled; *ret_i is the first entry left out.
 */
static size_t fill(fuse_req_t req, struct dir_listing *l, size_t i, char *buf, size_t size, dir_entry_fn entry,
		   void *arg, fuse_ino_t *counted, size_t *ret_ncounted, size_t *ret_i)
{
	uint64_t base = (uint64_t)l->serial << SERIAL_SHIFT;
	size_t pos = 0;

	*ret_ncounted = 0;
	for (; i < l->n; i++) {
		struct stat st = { .st_ino = l->v[i].ino, .st_mode = l->v[i].type };
		struct fuse_entry_param e = { .attr = st };
		off_t next = (off_t)(base | (i + 1));
		size_t need;

		if (!entry) {
			need = fuse_add_direntry(req, buf + pos, size - pos, l->v[i].name, &st, next);
			if (need > size - pos)
				break;
			pos += need;
			continue;
		}
		/* Its size first: an entry that does not fit must not be counted as looked up. */
		need = fuse_add_direntry_plus(req, NULL, 0, l->v[i].name, &e, next);
		if (need > size - pos)
			break;
		if (entry(arg, l->node, l->v[i].name, &e))
			counted[(*ret_ncounted)++] = e.ino;
		else
			e = (struct fuse_entry_param){ .attr = st };
		fuse_add_direntry_plus(req, buf + pos, size - pos, l->v[i].name, &e, next);
		pos += need;
	}
	*ret_i = i;
	return pos;
}

static void reply(struct dirs *d, fuse_req_t req, struct dir_listing *l, size_t size, off_t off, dir_entry_fn entry,
		  void *arg)
{
	_cleanup_free_ char *buf = malloc(size);
	/* Each entry of a readdirplus takes more than a fuse_dirent: fewer than size / 24 of them. */
	_cleanup_free_ fuse_ino_t *counted = entry ? calloc(size / sizeof(struct fuse_dirent) + 1, sizeof(*counted)) : NULL;
	struct dir_listing *gone = NULL;
	size_t pos = 0, ncounted = 0, i = (size_t)((uint64_t)off & INDEX_MASK);

	if (!buf || (entry && !counted)) {
		fuse_reply_err(req, ENOMEM);
	} else {
		pos = fill(req, l, i, buf, size, entry, arg, counted, &ncounted, &i);
		/* Not delivered (interrupted): the kernel did not count those lookups either. */
		if (fuse_reply_buf(req, buf, pos) < 0)
			for (size_t k = 0; k < ncounted; k++)
				nodes_forget(d->nodes, counted[k], 1);
	}
	pthread_mutex_lock(&d->lock);
	/*
	 * Read to its end (the reply after the last entry, which is empty):
	 * the next reading of the folder starts from 0, with a new listing.
	 */
	if (i >= l->n && pos == 0)
		for (unsigned k = 0; k < LISTINGS_KEPT; k++)
			if (d->kept[k] == l)
				(void)unkeep(d, k); /* the caller's reference is still held */
	gone = listing_put(l);
	pthread_mutex_unlock(&d->lock);
	listing_free(gone);
}

void dir_reply(struct dirs *d, fuse_req_t req, struct dir_listing *l, size_t size, off_t off)
{
	reply(d, req, l, size, off, NULL, NULL);
}

void dir_reply_plus(struct dirs *d, fuse_req_t req, struct dir_listing *l, size_t size, off_t off,
		    dir_entry_fn entry, void *arg)
{
	reply(d, req, l, size, off, entry, arg);
}

void dirs_free(struct dirs *d)
{
	if (!d)
		return;
	/* No request runs any more: no reference but the table's is left. */
	for (unsigned i = 0; i < LISTINGS_KEPT; i++)
		listing_free(unkeep(d, i));
	pthread_mutex_destroy(&d->lock);
	free(d);
}

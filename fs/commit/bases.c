/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bases.c: for each writing process and each doc, what it last read or wrote
 * (a struct store_base), the base of the three-way merge of its next commit.
 *
 * Which version is the base: the writer's own last commit, or, until it has
 * committed, the first version it read. A window computes what it saves from
 * its copy in memory, and may have read newer versions meanwhile that it did
 * not (or not yet) take into that copy: only what it has itself written, or
 * first read, is certain to be what its content derives from, so only that
 * may count as seen, and be removed. A removal can thus be undone (the item
 * stays), never an addition lost.
 *
 * A process is its thread group (node does file I/O from a thread pool, so
 * the pid of a FUSE request is a thread id) together with the group leader's
 * start time, so that a reused pid is a new process. The table is a hash map
 * with an LRU list, bounded in entries: a forgotten base only makes the next
 * commit of that writer a merge without a base, which never removes anything
 * another writer added.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"
#include "store/util.h"

#define BASES_MAX 4096
#define BASES_BUCKETS 1024

struct base_entry {
	struct fs_proc proc;
	char *path;
	uint64_t hash;
	struct store_base *base;
	struct base_entry *next_in_bucket;
	struct base_entry *lru_prev, *lru_next; /* most recent at lru_head */
};

struct bases {
	pthread_mutex_t lock;
	struct base_entry *buckets[BASES_BUCKETS];
	struct base_entry *lru_head, *lru_tail;
	size_t n;
};

/*
 * The processes of the last threads asked for, each kept PROC_KEEP_NS. The
 * kernel hands out thread ids in turn (cyclically, up to pid_max, at least
 * 32,768), so an id that a thread freed comes back only after every other id
 * has been handed out since: not within a tenth of a second. Within it, the
 * same id is the same thread, of the same process. A thread that calls
 * execve() gets a new name, which the revision log may show late, by as
 * much. So a process that opens file after file (grep -r, rsync: one OPEN
 * each) costs two reads of /proc ten times a second, not per file.
 */
#define PROC_KEEP_NS 100000000LL
#define PROC_SLOTS 64

static struct proc_slot {
	pid_t tid;
	int64_t until_ns;
	struct fs_proc proc;
} proc_slots[PROC_SLOTS];
static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;

/* What /proc says of thread tid's process. */
static int proc_read(pid_t tid, struct fs_proc *ret)
{
	char p[64], buf[1024];
	const char *t;
	ssize_t n;
	int fd;
	struct fs_proc pr = { .tgid = tid };

	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "Name:\t%15s", pr.comm) != 1)
		pr.comm[0] = '\0';
	t = strstr(buf, "\nTgid:\t");
	if (t)
		pr.tgid = (pid_t)atoi(t + 7);
	/* The leader's start time (field 22 of stat), after the ')' of the name. */
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pr.tgid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			char *q;

			buf[n] = '\0';
			q = strrchr(buf, ')');
			for (int field = 2; q && *q && field < 22; q++)
				if (*q == ' ')
					field++;
			if (q)
				pr.start = strtoull(q, NULL, 10);
		}
	}
	*ret = pr;
	return 0;
}

int fs_proc_get(pid_t tid, struct fs_proc *ret)
{
	struct proc_slot *slot = &proc_slots[(unsigned)tid % PROC_SLOTS];
	int64_t now = mono_ns();
	bool kept;
	int r;

	pthread_mutex_lock(&proc_lock);
	kept = slot->tid == tid && now < slot->until_ns;
	if (kept)
		*ret = slot->proc;
	pthread_mutex_unlock(&proc_lock);
	if (kept)
		return 0;
	if ((r = proc_read(tid, ret)) < 0)
		return r;
	pthread_mutex_lock(&proc_lock);
	*slot = (struct proc_slot){ tid, now + PROC_KEEP_NS, *ret };
	pthread_mutex_unlock(&proc_lock);
	return 0;
}

int bases_new(struct bases **ret)
{
	struct bases *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	*ret = b;
	return 0;
}

static void entry_free(struct base_entry *e)
{
	store_base_free(e->base);
	free(e->path);
	free(e);
}

void bases_free(struct bases *b)
{
	if (!b)
		return;
	for (struct base_entry *e = b->lru_head, *next; e; e = next) {
		next = e->lru_next;
		entry_free(e);
	}
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static uint64_t key_hash(const struct fs_proc *p, const char *path)
{
	uint64_t ids[2] = { (uint64_t)p->tgid, p->start };

	return hash64(ids, sizeof(ids)) ^ hash64(path, strlen(path));
}

static void lru_unlink(struct bases *b, struct base_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		b->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		b->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push(struct bases *b, struct base_entry *e)
{
	e->lru_next = b->lru_head;
	if (b->lru_head)
		b->lru_head->lru_prev = e;
	b->lru_head = e;
	if (!b->lru_tail)
		b->lru_tail = e;
}

/* Unlinks and returns the entry for (proc, path), or NULL. Lock held. */
static struct base_entry *detach(struct bases *b, const struct fs_proc *proc, const char *path, uint64_t h)
{
	struct base_entry **pp = &b->buckets[h % BASES_BUCKETS];

	for (; *pp; pp = &(*pp)->next_in_bucket) {
		struct base_entry *e = *pp;

		if (e->hash == h && e->proc.tgid == proc->tgid && e->proc.start == proc->start &&
		    strcmp(e->path, path) == 0) {
			*pp = e->next_in_bucket;
			lru_unlink(b, e);
			b->n--;
			return e;
		}
	}
	return NULL;
}

struct store_base *bases_take(struct bases *b, const struct fs_proc *proc, const char *path)
{
	uint64_t h = key_hash(proc, path);
	struct store_base *base = NULL;
	struct base_entry *e;

	pthread_mutex_lock(&b->lock);
	e = detach(b, proc, path, h);
	pthread_mutex_unlock(&b->lock);
	if (e) {
		base = TAKE_PTR(e->base);
		entry_free(e);
	}
	return base;
}

/*
 * Decides and acts in one critical section: a read base put by one thread of
 * a writer must not replace the written base another thread put meanwhile
 * (that would license removals the writer never saw); a base given back
 * after a failed commit (only_if_none) replaces nothing, since whatever was
 * put meanwhile is newer.
 */
static void put(struct bases *b, const struct fs_proc *proc, const char *path, struct store_base *base,
		bool only_if_none)
{
	uint64_t h = key_hash(proc, path);
	struct base_entry *e, *old, *evicted = NULL;

	if (!base)
		return;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(path))) {
		free(e);
		store_base_free(base);
		return;
	}
	e->proc = *proc;
	e->hash = h;
	e->base = base;
	pthread_mutex_lock(&b->lock);
	old = detach(b, proc, path, h);
	if (old && (only_if_none || store_base_is_read(base))) {
		/* The one in the table stays: see the top of this file. */
		struct base_entry *t = old;

		old = e;
		e = t;
	}
	e->next_in_bucket = b->buckets[h % BASES_BUCKETS];
	b->buckets[h % BASES_BUCKETS] = e;
	lru_push(b, e);
	b->n++;
	if (b->n > BASES_MAX) {
		struct base_entry *t = b->lru_tail;

		evicted = detach(b, &t->proc, t->path, t->hash);
	}
	pthread_mutex_unlock(&b->lock);
	if (old)
		entry_free(old);
	if (evicted)
		entry_free(evicted);
}

void bases_put(struct bases *b, const struct fs_proc *proc, const char *path, struct store_base *base)
{
	put(b, proc, path, base, false);
}

void bases_lease(struct bases *b, const struct fs_proc *proc, const char *path, struct base_lease *ret)
{
	*ret = (struct base_lease){ .bases = b, .proc = *proc, .path = path };
	ret->base = bases_take(b, proc, path);
}

void base_lease_renew(struct base_lease *l, struct store_base *base)
{
	store_base_free(TAKE_PTR(l->base));
	put(l->bases, &l->proc, l->path, base, false);
	l->bases = NULL;
}

void base_lease_return(struct base_lease *l)
{
	if (!l->bases)
		return;
	put(l->bases, &l->proc, l->path, TAKE_PTR(l->base), true);
	l->bases = NULL;
}

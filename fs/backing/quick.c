/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * quick.c: the take-in's quick check, that nothing changed underneath.
 *
 * At most mounts nothing changed underneath, and the walk that proves it is
 * all system calls (getdents, fstatat): at 10,000 tasks, 40,000 entries. So
 * it runs first, read-only. One thread looks at the top level and lists the
 * folders there once (quick_begin()); every entry one level down
 * (tasks/<id>, and all below it) is then a piece of work that QUICK_THREADS
 * threads take in turn (quick_walk()). A folder the store knows, which
 * readdir says is still a folder, is not stat'ed: a folder's own attributes
 * say nothing the walk into it does not. The check marks rows visited and
 * stops all threads at the first difference. If there is none and nothing
 * is missing (quick_end()), the take-in is done; otherwise the take-in
 * proper walks again, on one thread, and does what the differences need.
 *
 * The mount answers while the threads walk (import.c): a request for a path
 * asks quick_serves() first, which checks the path's entry one level down
 * at once if no thread has taken it yet, and waits for the thread that has;
 * one that needs the whole walk (a listing of tasks/) walks what is left
 * itself (quick_help()) and waits for the rest (quick_all_same()).
 *
 * More threads than CPUs: after a reboot the walk waits on the disk for each
 * inode, and a disk serves many reads at once (see QUICK_THREADS).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/backing/quick.h"
#include "store/util.h"

enum { ITEM_WAITING, ITEM_TAKEN, ITEM_LOOKED_AT };

/* An entry one level down: in the top-level folder dirs[dir], named at names + name. */
struct quick_item {
	unsigned dir;
	unsigned char type;  /* its d_type */
	unsigned char state; /* ITEM_*: taken by one thread, and looked at (under lock) */
	size_t name;
};

/* The check: what its threads share, and what quick_serves() asks. */
struct quick {
	const struct store_seen_set *seen;
	bool *visited;  /* each row is found by one thread at most: distinct bytes */
	bool differs;   /* set by the first thread that finds a difference */
	struct {
		int fd;      /* a top-level folder, open until the check ends */
		size_t name; /* its name, at dir_names + name */
	} *dirs;
	size_t ndirs, dirs_alloc;
	struct sb dir_names; /* their names, each ending in '\0' */
	struct quick_item *items; /* sorted by folder, then name, for quick_serves() */
	size_t nitems, items_alloc;
	struct sb names;     /* the items' names, each ending in '\0' */
	size_t next;         /* the next item a thread takes */
	unsigned long entries; /* looked at, by all threads */
	int r;               /* the first error a thread met */
	unsigned delay_ms;   /* each thread's wait before it begins (the tests') */
	pthread_mutex_t lock; /* the items' ITEM_LOOKED_AT, for waiters */
	pthread_cond_t looked_at;
};

/*
 * Threads of the quick check. At 10,000 tasks with caches dropped, the walk
 * takes about 285 ms on 16 threads, 270 on 32 and 265 on 64 (780 ms on the 2
 * it had, when each thread listed the top-level folders whole to find its
 * share); with the inodes in memory, about 78 ms on any of them.
 */
#define QUICK_THREADS 32

/* One thread of the check, and what it counts. */
struct walker {
	struct quick *q;
	unsigned long entries;
	pthread_t thread;
	int r;
};

static void quick_differs(struct walker *w, const char *rel, const char *what)
{
	log_debug("the folder underneath changed: '%s' %s", rel, what);
	__atomic_store_n(&w->q->differs, true, __ATOMIC_RELAXED);
}

static bool quick_stopped(const struct walker *w)
{
	return __atomic_load_n(&w->q->differs, __ATOMIC_RELAXED);
}

/*
 * Looks at the entry name (of type d_type) of the folder dfd, whose path is
 * path. Sets *ret_sub to the entry opened as a folder when the walk goes on
 * into it, else to -1.
 */
static int quick_look(struct walker *w, int dfd, const char *name, unsigned char d_type, const char *path,
		      int *ret_sub)
{
	const struct store_seen_set *seen = w->q->seen;
	const struct store_seen *row = store_seen_find(seen, path);
	bool known_dir = row && !row->gone && row->type == S_IFDIR;
	struct stat st;
	int sub;

	*ret_sub = -1;
	w->entries++;
	if (!row) {
		quick_differs(w, path, "is new");
		return 0;
	}
	if (!(known_dir && d_type == DT_DIR)) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				return -errno;
			quick_differs(w, path, "went away");
			return 0;
		}
		if (S_ISDIR(st.st_mode) ? !known_dir : !seen_same(row, &st)) {
			quick_differs(w, path, "changed");
			return 0;
		}
		if (!S_ISDIR(st.st_mode)) {
			w->q->visited[row - seen->v] = true;
			return 0;
		}
	}
	w->q->visited[row - seen->v] = true;
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
			return -errno;
		quick_differs(w, path, "is no longer a folder");
		return 0;
	}
	*ret_sub = sub;
	return 0;
}

/*
 * Calls fn for each entry of the open folder dfd (closing it unless keep),
 * whose path is path, with path set to the entry's; stops at the first
 * difference any thread found.
 */
static int quick_list(struct walker *w, int dfd, bool keep, struct sb *path,
		      int (*fn)(struct walker *w, int dfd, const struct dirent *de, struct sb *path))
{
	size_t len = path->len;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (keep) {
		/* A reading of its own (not dup(): that would move the caller's offset). */
		dfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -errno;
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	while (r == 0 && !quick_stopped(w) && (errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		path->len = len;
		if ((len && (r = sb_add(path, "/", 1)) < 0) || (r = sb_adds(path, de->d_name)) < 0)
			break;
		r = fn(w, dirfd(d), de, path);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	path->len = len;
	if (path->buf)
		path->buf[len] = '\0';
	closedir(d);
	return r;
}

/* An entry two or more levels down: looked at, and walked into. */
static int quick_below(struct walker *w, int dfd, const struct dirent *de, struct sb *path)
{
	int sub, r = quick_look(w, dfd, de->d_name, de->d_type, path->buf, &sub);

	if (r < 0 || sub < 0)
		return r;
	return quick_list(w, sub, false, path, quick_below);
}

/* An entry one level down: kept for the threads, in the folder the last one opened. */
static int quick_keep(struct walker *w, int dfd, const struct dirent *de, struct sb *path)
{
	struct quick *q = w->q;
	size_t off = q->names.len;
	int r;

	(void)dfd;
	(void)path;
	if (ARRAY_GROW(q->items, q->nitems, q->items_alloc, 1024) < 0)
		return -ENOMEM;
	if ((r = sb_adds(&q->names, de->d_name)) < 0 || (r = sb_add(&q->names, "", 1)) < 0)
		return r;
	q->items[q->nitems++] = (struct quick_item){ .dir = (unsigned)(q->ndirs - 1), .type = de->d_type,
						     .name = off };
	return 0;
}

/* An entry of the top level: looked at; a folder is listed, its entries kept for the threads. */
static int quick_top(struct walker *w, int dfd, const struct dirent *de, struct sb *path)
{
	struct quick *q = w->q;
	size_t off = q->dir_names.len;
	int sub, r = quick_look(w, dfd, de->d_name, de->d_type, path->buf, &sub);

	if (r < 0 || sub < 0)
		return r;
	if (ARRAY_GROW(q->dirs, q->ndirs, q->dirs_alloc, 8) < 0) {
		close(sub);
		return -ENOMEM;
	}
	if ((r = sb_adds(&q->dir_names, path->buf)) < 0 || (r = sb_add(&q->dir_names, "", 1)) < 0) {
		close(sub);
		return r;
	}
	q->dirs[q->ndirs].fd = sub;
	q->dirs[q->ndirs++].name = off;
	return quick_list(w, sub, true, path, quick_keep);
}

/* An entry of the top level, for quick_top_same(): looked at, not walked into. */
static int quick_top_only(struct walker *w, int dfd, const struct dirent *de, struct sb *path)
{
	int sub, r = quick_look(w, dfd, de->d_name, de->d_type, path->buf, &sub);

	if (sub >= 0)
		close(sub);
	return r;
}

int quick_top_same(const struct store_seen_set *top, int src_fd, bool *ret_same)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	_cleanup_free_ bool *visited = calloc(top->n ? top->n : 1, sizeof(*visited));
	struct quick q = { .seen = top, .visited = visited };
	struct walker w = { .q = &q };
	int r;

	*ret_same = false;
	if (!visited)
		return -ENOMEM;
	r = quick_list(&w, src_fd, true, &path, quick_top_only);
	if (r < 0)
		return r;
	*ret_same = !q.differs;
	for (size_t i = 0; *ret_same && i < top->n; i++)
		if (!visited[i] && !top->v[i].gone)
			*ret_same = false;
	return 0;
}

int quick_point(const struct store_seen_set *rows, int src_fd, const char *top, const char *name, bool *ret_same)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	_cleanup_free_ bool *visited = calloc(rows->n ? rows->n : 1, sizeof(*visited));
	struct quick q = { .seen = rows, .visited = visited };
	struct walker w = { .q = &q };
	struct stat st;
	int dfd, sub, r;

	*ret_same = false;
	if (!visited)
		return -ENOMEM;
	if ((r = sb_addf(&path, "%s/%s", top, name)) < 0)
		return r;
	dfd = openat(src_fd, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		/* Nothing underneath has a folder there. */
		*ret_same = errno == ENOENT || errno == ENOTDIR || errno == ELOOP;
		return *ret_same ? 0 : -errno;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? 0 : -errno;
		/* Nothing underneath by that name: a row missing there changes nothing the mount shows. */
		*ret_same = r == 0;
		close(dfd);
		return r;
	}
	r = quick_look(&w, dfd, name, DT_UNKNOWN, path.buf, &sub);
	if (r == 0 && sub >= 0)
		r = quick_list(&w, sub, false, &path, quick_below);
	close(dfd);
	*ret_same = r == 0 && !q.differs;
	return r;
}

/* A thread's result, counted into the check's (its entries, its first error). */
static void walker_done(struct walker *w)
{
	struct quick *q = w->q;
	int none = 0;

	__atomic_add_fetch(&q->entries, w->entries, __ATOMIC_RELAXED);
	w->entries = 0;
	if (w->r < 0) {
		__atomic_compare_exchange_n(&q->r, &none, w->r, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		/* The take-in proper says what failed, with the path. */
		log_debug("the quick check of the folder underneath failed: %s", strerror(-w->r));
		__atomic_store_n(&q->differs, true, __ATOMIC_RELAXED);
	}
}

/* Looks at item it, which w has taken, and all below it; then tells whoever waits for it. */
static void quick_item(struct walker *w, struct quick_item *it, struct sb *path)
{
	struct quick *q = w->q;
	const char *name = q->names.buf + it->name;
	int sub;

	path->len = 0;
	if ((w->r = sb_adds(path, q->dir_names.buf + q->dirs[it->dir].name)) == 0 &&
	    (w->r = sb_add(path, "/", 1)) == 0 && (w->r = sb_adds(path, name)) == 0) {
		w->r = quick_look(w, q->dirs[it->dir].fd, name, it->type, path->buf, &sub);
		if (w->r == 0 && sub >= 0)
			w->r = quick_list(w, sub, false, path, quick_below);
	}
	walker_done(w);
	pthread_mutex_lock(&q->lock);
	it->state = ITEM_LOOKED_AT;
	pthread_cond_broadcast(&q->looked_at);
	pthread_mutex_unlock(&q->lock);
}

/* Takes it for w: false if another thread has. */
static bool item_take(struct quick_item *it)
{
	unsigned char waiting = ITEM_WAITING;

	return __atomic_compare_exchange_n(&it->state, &waiting, ITEM_TAKEN, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* Takes the entries one level down that no thread has taken yet, and looks at each, until none is left. */
static void take_items(struct walker *w)
{
	struct quick *q = w->q;
	_cleanup_sb_ struct sb path = SB_INIT;
	size_t i;

	while (w->r == 0 && !quick_stopped(w) && (i = __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED)) < q->nitems)
		if (item_take(&q->items[i]))
			quick_item(w, &q->items[i], &path);
}

static void *quick_run(void *arg)
{
	struct walker *w = arg;

	if (w->q->delay_ms)
		usleep(w->q->delay_ms * 1000);
	take_items(w);
	return NULL;
}

static int item_cmp(const void *a, const void *b, void *arg)
{
	const struct quick_item *x = a, *y = b;
	const char *names = arg;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return strcmp(names + x->name, names + y->name);
}

int quick_begin(const struct store_seen_set *seen, bool *visited, int src_fd, struct quick **ret)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct quick *q;
	struct walker w;
	int r;

	*ret = NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = (struct quick){ .seen = seen, .visited = visited, .dir_names = SB_INIT, .names = SB_INIT };
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->looked_at, NULL);
	*ret = q;
	w = (struct walker){ .q = q };
	/* The top level, here: it is small, and its folders are listed once. */
	w.r = quick_list(&w, src_fd, true, &path, quick_top);
	walker_done(&w);
	r = w.r;
	if (r == 0 && q->nitems)
		qsort_r(q->items, q->nitems, sizeof(*q->items), item_cmp, q->names.buf);
	return r;
}

bool quick_differs_yet(const struct quick *q)
{
	return __atomic_load_n(&q->differs, __ATOMIC_RELAXED);
}

void quick_walk(struct quick *q)
{
	const char *delay = getenv("CONVFS_WALK_DELAY_MS");
	struct walker w[QUICK_THREADS];

	/* CONVFS_WALK_DELAY_MS=n (the tests): the threads begin n ms late, requests look first (import.c). */
	if (delay)
		q->delay_ms = (unsigned)strtoul(delay, NULL, 10);
	for (unsigned k = 0; k < QUICK_THREADS; k++)
		w[k] = (struct walker){ .q = q };
	for (unsigned k = 1; k < QUICK_THREADS && q->nitems > k; k++)
		/* A thread that cannot start: the others take its share. */
		if (pthread_create(&w[k].thread, NULL, quick_run, &w[k]) != 0)
			w[k].thread = 0;
	quick_run(&w[0]);
	for (unsigned k = 1; k < QUICK_THREADS; k++)
		if (w[k].thread)
			pthread_join(w[k].thread, NULL);
}

void quick_help(struct quick *q)
{
	struct walker w = { .q = q };

	take_items(&w);
}

bool quick_all_same(struct quick *q)
{
	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->nitems && !quick_differs_yet(q); i++)
		while (q->items[i].state != ITEM_LOOKED_AT && !quick_differs_yet(q))
			pthread_cond_wait(&q->looked_at, &q->lock);
	pthread_mutex_unlock(&q->lock);
	return !quick_differs_yet(q);
}

/* The top-level folder named name (len bytes), or -1. */
static long dir_find(const struct quick *q, const char *name, size_t len)
{
	for (size_t i = 0; i < q->ndirs; i++) {
		const char *d = q->dir_names.buf + q->dirs[i].name;

		if (strlen(d) == len && memcmp(d, name, len) == 0)
			return (long)i;
	}
	return -1;
}

/* The item named name (len bytes) in the top-level folder dir, or NULL. */
static struct quick_item *item_find(struct quick *q, unsigned dir, const char *name, size_t len)
{
	size_t lo = 0, hi = q->nitems;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct quick_item *it = &q->items[mid];
		const char *n = q->names.buf + it->name;
		int c = it->dir != dir ? (it->dir < dir ? -1 : 1) : strncmp(n, name, len);

		if (c == 0 && n[len])
			c = 1;
		if (c == 0)
			return &q->items[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool quick_serves(struct quick *q, const char *rel, bool listing)
{
	const char *slash, *second;
	struct quick_item *it;
	long dir;

	if (quick_differs_yet(q))
		return false;
	if (!*rel)
		return true; /* the top level was looked at by quick_begin() */
	slash = strchr(rel, '/');
	dir = dir_find(q, rel, slash ? (size_t)(slash - rel) : strlen(rel));
	if (dir < 0)
		return true; /* nothing underneath has a folder there */
	if (!slash)
		return !listing; /* a top-level folder: its listing waits for all of its entries */
	second = slash + 1;
	slash = strchr(second, '/');
	it = item_find(q, (unsigned)dir, second, slash ? (size_t)(slash - second) : strlen(second));
	if (!it)
		return true; /* nothing underneath by that name */
	if (item_take(it)) {
		_cleanup_sb_ struct sb path = SB_INIT;
		struct walker w = { .q = q };

		quick_item(&w, it, &path);
	} else {
		pthread_mutex_lock(&q->lock);
		while (it->state != ITEM_LOOKED_AT)
			pthread_cond_wait(&q->looked_at, &q->lock);
		pthread_mutex_unlock(&q->lock);
	}
	return !quick_differs_yet(q);
}

bool quick_end(struct quick *q, unsigned long *files)
{
	const struct store_seen_set *seen = q->seen;
	bool differs;

	/*
	 * Items no thread took (the walk stopped at a difference, or a thread
	 * failed) are taken here, so that no request checks one from now on;
	 * then the checks requests took are waited for.
	 */
	for (size_t i = 0; i < q->nitems; i++) {
		if (!item_take(&q->items[i]))
			continue;
		__atomic_store_n(&q->differs, true, __ATOMIC_RELAXED);
		pthread_mutex_lock(&q->lock);
		q->items[i].state = ITEM_LOOKED_AT;
		pthread_mutex_unlock(&q->lock);
	}
	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->nitems; i++)
		while (q->items[i].state != ITEM_LOOKED_AT)
			pthread_cond_wait(&q->looked_at, &q->lock);
	pthread_cond_broadcast(&q->looked_at);
	pthread_mutex_unlock(&q->lock);
	differs = quick_differs_yet(q);
	for (size_t i = 0; !differs && i < seen->n; i++)
		if (!q->visited[i] && !seen->v[i].gone)
			differs = true;
	if (differs) {
		memset(q->visited, 0, seen->n * sizeof(*q->visited));
		*files = 0;
	} else {
		*files += q->entries;
	}
	return !differs;
}

void quick_free(struct quick *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->ndirs; i++)
		close(q->dirs[i].fd);
	free(q->dirs);
	free(q->items);
	sb_release(&q->dir_names);
	sb_release(&q->names);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->looked_at);
	free(q);
}

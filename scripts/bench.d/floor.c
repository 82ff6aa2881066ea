/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * floor.c: the least a FUSE file system can cost, for scripts/bench.
 *
 *   floor SOURCE MOUNTPOINT
 *
 * Serves SOURCE read-only and does as little as a FUSE daemon can: the
 * tree is walked once at the start and held in memory, so a LOOKUP, a
 * GETATTR and a listing are answers from a table; an OPEN and a RELEASE do
 * nothing at all; only a READ touches SOURCE (open, pread, close). The
 * kernel is told to keep everything for good: entries and attributes for a
 * day, each file's pages across opens (keep_cache), each folder's listing
 * (opendir declined, as convfs does), listings as READDIRPLUS. Requests
 * are taken the way convfs's loop takes them: one thread asks the device
 * for the next request without sleeping for SPIN_US after each one, then
 * sleeps in poll() (FLOOR_SPIN_US in the environment overrides it; -1 never
 * sleeps, which spends a CPU for as long as it is mounted).
 *
 * What a walk costs on it is what the kernel's round trips cost on this
 * machine, with no daemon work behind them: a floor that no FUSE file
 * system that answers OPEN can go under here. With FLOOR_NO_OPEN set in
 * the environment it declines OPEN instead, as it declines OPENDIR: the
 * kernel then opens every file of the mount itself and sends no OPEN and
 * no RELEASE at all (what that would take from convfs is in
 * docs/BENCHMARKS.md, "grep"). SOURCE must not change while it is mounted
 * (the table is not refreshed). It stays in the foreground and exits at
 * the unmount.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 314
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define SPIN_US 200
#define FOREVER 86400.0

struct node {
	char *name;       /* the entry's name in its parent; "" for the root */
	char *path;       /* relative to SOURCE; "." for the root */
	fuse_ino_t parent;
	struct stat st;   /* st_ino is the node id */
	fuse_ino_t *kids; /* a folder's entries, in the order read */
	size_t nkids;
};

struct floor {
	int src_fd;
	struct node *nodes; /* node id n is nodes[n - 1]; the root is 1 */
	size_t n, cap;
	fuse_ino_t *slots;  /* (parent, name) -> node id, open addressing */
	size_t nslots;
};

static struct floor fl;
static int no_open;

static void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q) {
		fprintf(stderr, "floor: out of memory\n");
		exit(1);
	}
	return q;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		fprintf(stderr, "floor: out of memory\n");
		exit(1);
	}
	return d;
}

static uint64_t hash(fuse_ino_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ULL;
	return h;
}

static struct node *node_of(fuse_ino_t ino)
{
	return ino >= 1 && ino <= fl.n ? &fl.nodes[ino - 1] : NULL;
}

static fuse_ino_t find(fuse_ino_t parent, const char *name)
{
	size_t i = hash(parent, name) & (fl.nslots - 1);

	for (; fl.slots[i]; i = (i + 1) & (fl.nslots - 1)) {
		struct node *n = &fl.nodes[fl.slots[i] - 1];

		if (n->parent == parent && strcmp(n->name, name) == 0)
			return fl.slots[i];
	}
	return 0;
}

static fuse_ino_t add(fuse_ino_t parent, const char *name, const char *path, const struct stat *st)
{
	struct node *n;

	if (fl.n == fl.cap) {
		fl.cap = fl.cap ? 2 * fl.cap : 1024;
		fl.nodes = xrealloc(fl.nodes, fl.cap * sizeof(*fl.nodes));
	}
	n = &fl.nodes[fl.n++];
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(name);
	n->path = xstrdup(path);
	n->parent = parent;
	n->st = *st;
	n->st.st_ino = fl.n;
	return fl.n;
}

/* Reads folder @ino (open as @fd, which it closes) and everything below it. */
static int walk(fuse_ino_t ino, int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		fprintf(stderr, "floor: cannot list '%s': %s\n", node_of(ino)->path, strerror(errno));
		close(fd);
		return -1;
	}
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		char *path;
		fuse_ino_t kid;
		struct node *n;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			fprintf(stderr, "floor: cannot stat '%s': %s\n", de->d_name, strerror(errno));
			closedir(d);
			return -1;
		}
		if (asprintf(&path, "%s/%s", node_of(ino)->path, de->d_name) < 0) {
			fprintf(stderr, "floor: out of memory\n");
			exit(1);
		}
		kid = add(ino, de->d_name, path, &st);
		free(path);
		n = node_of(ino); /* add() may have moved the table */
		n->kids = xrealloc(n->kids, (n->nkids + 1) * sizeof(*n->kids));
		n->kids[n->nkids++] = kid;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0 || walk(kid, sub) < 0) {
				if (sub < 0)
					fprintf(stderr, "floor: cannot open '%s': %s\n", de->d_name, strerror(errno));
				closedir(d);
				return -1;
			}
		}
	}
	if (errno) {
		fprintf(stderr, "floor: cannot list '%s': %s\n", node_of(ino)->path, strerror(errno));
		closedir(d);
		return -1;
	}
	closedir(d);
	return 0;
}

static int load(const char *source)
{
	struct stat st;
	int fd;
	size_t i;

	fl.src_fd = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fl.src_fd < 0 || fstat(fl.src_fd, &st) < 0) {
		fprintf(stderr, "floor: cannot open '%s': %s\n", source, strerror(errno));
		return -1;
	}
	add(0, "", ".", &st);
	fd = dup(fl.src_fd);
	if (fd < 0 || walk(FUSE_ROOT_ID, fd) < 0)
		return -1;
	for (fl.nslots = 1024; fl.nslots < 2 * fl.n; fl.nslots *= 2)
		;
	fl.slots = xrealloc(NULL, fl.nslots * sizeof(*fl.slots));
	memset(fl.slots, 0, fl.nslots * sizeof(*fl.slots));
	for (i = 1; i < fl.n; i++) {
		size_t s = hash(fl.nodes[i].parent, fl.nodes[i].name) & (fl.nslots - 1);

		while (fl.slots[s])
			s = (s + 1) & (fl.nslots - 1);
		fl.slots[s] = i + 1;
	}
	return 0;
}

static void entry_of(const struct node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->st.st_ino;
	e->attr = n->st;
	e->attr_timeout = FOREVER;
	e->entry_timeout = FOREVER;
}

static void fl_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

static void fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_ino_t ino = find(parent, name);
	struct fuse_entry_param e;

	if (!ino) {
		/* A negative entry, kept as long as the others. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FOREVER;
		fuse_reply_entry(req, &e);
		return;
	}
	entry_of(node_of(ino), &e);
	fuse_reply_entry(req, &e);
}

static void fl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_attr(req, &n->st, FOREVER);
}

static void fl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	/* The kernel then opens folders itself and keeps their listings. */
	fuse_reply_err(req, ENOSYS);
}

/* Entry k of folder @n: "." and ".." first, then its entries. */
static void fl_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct node *n = node_of(ino);
	char *buf;
	size_t used = 0;

	if (!n || !S_ISDIR(n->st.st_mode)) {
		fuse_reply_err(req, n ? ENOTDIR : ENOENT);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (; (size_t)off < n->nkids + 2; off++) {
		const struct node *k = off == 0 ? n : off == 1 ? (node_of(n->parent) ? node_of(n->parent) : n) : node_of(n->kids[off - 2]);
		const char *name = off == 0 ? "." : off == 1 ? ".." : k->name;
		size_t len;

		if (plus) {
			struct fuse_entry_param e;

			entry_of(k, &e);
			if (off < 2)
				e.ino = 0; /* the kernel takes no node for "." and ".." */
			len = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, off + 1);
		} else {
			len = fuse_add_direntry(req, buf + used, size - used, name, &k->st, off + 1);
		}
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	fl_list(req, ino, size, off, 0);
}

static void fl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	fl_list(req, ino, size, off, 1);
}

static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (no_open) {
		/* The kernel then opens files itself, and sends no RELEASE either. */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	char *buf;
	ssize_t got;
	int fd;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fd = openat(fl.src_fd, n->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		close(fd);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	got = pread(fd, buf, size, off);
	if (got < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
	close(fd);
}

static void fl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void fl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (fstatvfs(fl.src_fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static void fl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(ino);
	char buf[4096];
	ssize_t len;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	len = readlinkat(fl.src_fd, n->path, buf, sizeof(buf) - 1);
	if (len < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	buf[len] = '\0';
	fuse_reply_readlink(req, buf);
}

static const struct fuse_lowlevel_ops fl_ops = {
	.init = fl_init,
	.lookup = fl_lookup,
	.getattr = fl_getattr,
	.readlink = fl_readlink,
	.opendir = fl_opendir,
	.readdir = fl_readdir,
	.readdirplus = fl_readdirplus,
	.open = fl_open,
	.read = fl_read,
	.release = fl_release,
	.statfs = fl_statfs,
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* convfs's way, with one thread: look without sleeping for @spin_us after each request. */
static int serve(struct fuse_session *se, long spin_us)
{
	struct fuse_buf buf = { 0 };
	int fd = fuse_session_fd(se);
	int flags = fcntl(fd, F_GETFL);
	int64_t last = now_us();

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		fprintf(stderr, "floor: cannot make /dev/fuse non-blocking: %s\n", strerror(errno));
		return -1;
	}
	while (!fuse_session_exited(se)) {
		int res = fuse_session_receive_buf(se, &buf);

		if (res == -EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (spin_us < 0 || now_us() - last < spin_us)
				continue;
			if (poll(&p, 1, -1) < 0 && errno != EINTR) {
				fprintf(stderr, "floor: cannot poll /dev/fuse: %s\n", strerror(errno));
				return -1;
			}
			continue;
		}
		if (res == -EINTR)
			continue;
		if (res <= 0)
			break;
		fuse_session_process_buf(se, &buf);
		last = now_us();
	}
	free(buf.mem);
	return 0;
}

int main(int argc, char *argv[])
{
	static char opt[] = "-o", opts[] = "fsname=floor,subtype=floor,default_permissions";
	char *fargs[] = { argv[0], opt, opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargs);
	const char *spin = getenv("FLOOR_SPIN_US");
	struct fuse_session *se;
	int rc = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SOURCE MOUNTPOINT\n", argv[0]);
		return 2;
	}
	no_open = getenv("FLOOR_NO_OPEN") != NULL;
	if (load(argv[1]) < 0)
		return 1;
	se = fuse_session_new(&args, &fl_ops, sizeof(fl_ops), NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) == 0) {
		if (fuse_session_mount(se, argv[2]) == 0) {
			rc = serve(se, spin ? atol(spin) : SPIN_US) < 0;
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
	return rc;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * registry.c: the daemons serving a store, registered beside it.
 *
 * Several daemons may serve one store at once (mounts of one folder in
 * several containers, the host's and a container's): each registers in
 * <store>.mounts/ with a file of its own, named by 32 random hex digits,
 * that it keeps open and flock()ed (LOCK_EX) for as long as it serves. A
 * file whose lock can be taken is a daemon's that is gone (killed: the
 * kernel let go of its lock), and whoever lists the folder removes it. The
 * file is made under a temporary name, locked, written, then renamed into
 * place, so that no reader ever finds it unlocked while its daemon lives.
 *
 * What a file says, as one JSON object: where its daemon mounted, in which
 * mount namespace, since when. Nothing else is shared through it: the
 * daemons meet in the store (the revision log, fs/kernel/watch.c).
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/backing/tree.h"
#include "fs/cmd/cmd.h"
#include "fs/cmd/registry.h"
#include "fs/cmd/warnings.h"
#include "store/util.h"

#define TMP_SUFFIX ".tmp"

static int dir_path(const char *store_path, struct sb *ret)
{
	return sb_addf(ret, "%s%s", store_path, REGISTRY_SUFFIX);
}

/*
 * The folder itself, never where a symlink there points: the store's
 * folder is its owner's, and a daemon run by root makes, gives and removes
 * files in it. -errno (-ELOOP, -ENOTDIR for anything but a folder).
 */
static int dir_open(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* True for the name of a daemon's file: 32 hex digits, nothing else. */
static bool is_entry_name(const char *name)
{
	if (strlen(name) != 32)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The JSON object of this daemon's file. */
static char *entry_text(const char *mountpoint, int64_t since_ns)
{
	_cleanup_json_ cJSON *o = cJSON_CreateObject();
	char ns[64];
	ssize_t n = readlink("/proc/self/ns/mnt", ns, sizeof(ns) - 1);

	ns[n > 0 ? n : 0] = '\0';
	if (!o || !cJSON_AddStringToObject(o, "mountpoint", mountpoint) || !cJSON_AddStringToObject(o, "mntns", ns) ||
	    !cJSON_AddNumberToObject(o, "since_ns", (double)since_ns))
		return NULL;
	return cJSON_PrintUnformatted(o);
}

int registry_join(const char *store_path, const char *mountpoint, struct registry *ret)
{
	_cleanup_sb_ struct sb dir = SB_INIT, path = SB_INIT;
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	unsigned char rnd[16];
	char id[33], tmp[40];
	int r;

	if ((r = dir_path(store_path, &dir)) < 0)
		return r;
	if (mkdir(dir.buf, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		log_warn("cannot make '%s', where the daemons serving the store register: %s; convfs status will "
			 "not list this one", dir.buf, strerror(errno));
		return r;
	}
	if ((dfd = dir_open(dir.buf)) < 0) {
		struct stat st;
		bool link = lstat(dir.buf, &st) == 0 && S_ISLNK(st.st_mode);

		log_warn("cannot open '%s', where the daemons serving the store register: %s; convfs status will "
			 "not list this one", dir.buf, link ? "a symlink, not a folder" : strerror(-dfd));
		return dfd;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		log_err("cannot name this daemon's registration in '%s': no random bytes", dir.buf);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	snprintf(tmp, sizeof(tmp), "%s%s", id, TMP_SUFFIX);
	if ((r = sb_addf(&path, "%s/%s", dir.buf, id)) < 0)
		return r;
	text = entry_text(mountpoint, now_ns());
	if (!text)
		return -ENOMEM;
	fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || (r = write_all(fd, text, strlen(text))) < 0 ||
	    renameat(dfd, tmp, dfd, id) < 0) {
		r = r < 0 ? r : -errno;
		log_warn("cannot register this daemon in '%s': %s; convfs status will not list it", dir.buf,
			 strerror(-r));
		unlinkat(dfd, tmp, 0);
		return r;
	}
	*ret = (struct registry){ .fd = TAKE_FD(fd), .dfd = TAKE_FD(dfd), .path = sb_detach(&path, NULL),
				  .dir = sb_detach(&dir, NULL) };
	memcpy(ret->id, id, sizeof(id));
	return 0;
}

/* Removes a daemon's file, and the files named after it (its warnings). */
static void entry_remove(int dfd, const char *id)
{
	char name[64];

	unlinkat(dfd, id, 0);
	snprintf(name, sizeof(name), "%s%s", id, WARNINGS_SUFFIX);
	unlinkat(dfd, name, 0);
}

void registry_leave(struct registry *r)
{
	if (r->dfd >= 0)
		entry_remove(r->dfd, r->id);
	registry_close(r);
}

void registry_close(struct registry *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->dfd >= 0)
		close(r->dfd);
	free(r->path);
	free(r->dir);
	*r = (struct registry)REGISTRY_INIT;
}

/* A daemon's file is one line of JSON: its mount point, escaped, is the most of it (PATH_MAX, up to 6 bytes each). */
#define ENTRY_MAX (8 * PATH_MAX)

/*
 * The entry of the file name in dfd, into *ret: 1 if a daemon holds it, 0
 * if it is stale (and then removed), or -errno.
 */
static int entry_read(int dfd, const char *name, struct registry_entry *ret)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_json_ cJSON *o = NULL;
	_cleanup_free_ char *text = NULL;
	const cJSON *v;
	size_t len;
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		/* Nobody holds it: its daemon is gone. */
		entry_remove(dfd, name);
		return 0;
	}
	if (errno != EWOULDBLOCK)
		return -errno;
	/* Larger than any of ours: a daemon holds it, and says nothing more. */
	if ((r = read_fd_all(fd, ENTRY_MAX, &text, &len)) < 0 && r != -EFBIG)
		return r;
	*ret = (struct registry_entry){ .pid = 0 };
	memcpy(ret->id, name, sizeof(ret->id));
	o = cJSON_Parse(text);
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "mountpoint")) && cJSON_IsString(v))
		ret->mountpoint = strdup(v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "mntns")) && cJSON_IsString(v))
		ret->mntns = strdup(v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "since_ns")) && cJSON_IsNumber(v))
		ret->since_ns = (int64_t)v->valuedouble;
	return 1;
}

/*
 * A registration's temporary file (<id>.tmp) whose daemon was killed
 * before it renamed it: no one holds it locked, and it is older than any
 * registration under way (its daemon locks it at once, and renames it
 * within microseconds). Removed, so that such files do not pile up.
 */
static void tmp_sweep(int dfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(name);
	char id[33];
	struct stat st;

	if (len != 32 + strlen(TMP_SUFFIX) || strcmp(name + 32, TMP_SUFFIX) != 0)
		return;
	memcpy(id, name, 32);
	id[32] = '\0';
	if (!is_entry_name(id))
		return;
	fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_mtime > time(NULL) - 60 ||
	    flock(fd, LOCK_SH | LOCK_NB) < 0)
		return;
	unlinkat(dfd, name, 0);
}

int registry_list(const char *store_path, registry_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb dir = SB_INIT;
	struct dirent *de;
	DIR *d;
	int r, dfd;

	if ((r = dir_path(store_path, &dir)) < 0)
		return r;
	if ((dfd = dir_open(dir.buf)) < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	r = 0;
	while (r >= 0 && (errno = 0, de = readdir(d))) {
		struct registry_entry e = { 0 };

		if (!is_entry_name(de->d_name)) {
			tmp_sweep(dirfd(d), de->d_name);
			continue;
		}
		r = entry_read(dirfd(d), de->d_name, &e);
		if (r > 0)
			r = fn(ctx, &e);
		free(e.mountpoint);
		free(e.mntns);
	}
	if (r >= 0 && errno)
		r = -errno;
	closedir(d);
	return r < 0 ? r : 0;
}

static int count_one(void *ctx, const struct registry_entry *e)
{
	(void)e;
	++*(int *)ctx;
	return 0;
}

int registry_count(const char *store_path)
{
	int n = 0, r = registry_list(store_path, count_one, &n);

	return r == -ENOENT ? 0 : r < 0 ? r : n;
}

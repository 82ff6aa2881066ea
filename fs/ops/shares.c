/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shares.c: what the other users of a shared mount may take of the
 * daemon's open files, and, under a daemon run by root, of the disk.
 *
 * The daemon holds a descriptor for every open plain file and every staging
 * file of a handle being written, whoever opened it; and one process has one
 * limit of open files. On a mount shared with -o allow_other, another user
 * opening files (the same one thousands of times costs nothing but a
 * descriptor each) would use up that limit, and then every save of the
 * owner's fails with EMFILE: the staging file, the copy a large commit
 * makes, even SQLite's journal. So the descriptors handles hold on behalf of
 * a uid other than the owner's are counted, per uid, and a new one is
 * refused with EMFILE once that uid holds a quarter of the limit, or all of
 * them together half. The owner is never counted: the half left is the
 * owner's and the daemon's own (the store and its WAL, staging, the copies
 * of commits, the take-in, a shadow repository's packs). Descriptors a
 * request opens and closes before it replies are not counted: there are at
 * most as many of those as workers. Folders hold none (the kernel keeps the
 * listings; fs/dirs.c).
 *
 * A daemon run by root writes the plain files of other users into the
 * backing tree as root, and root may use the blocks a filesystem keeps for
 * it (ext4's reserved blocks): another user could fill them, and then the
 * owner's and root's own work fails. Writing with the caller's fsuid would
 * not stop that (the kernel lets whoever holds CAP_SYS_RESOURCE use them,
 * and setfsuid() leaves that capability), so the daemon keeps the line
 * itself: a write or a create on behalf of a uid other than 0 is refused
 * with ENOSPC when it would not fit in what non-root may still use
 * (statvfs' f_bavail), on a filesystem that keeps blocks for root
 * (f_bfree above f_bavail). statvfs is read again only once a second, or
 * at every call once less than SPACE_NEAR is left; in between, what was let
 * through is taken off what was read. What the store writes for a commit
 * of another user's bytes was counted as they were written.
 *
 * The counts are a small table behind one mutex, taken once per open and
 * once per release of a counted handle: a few uids at most, so a linear
 * search. The first thing main() does is raise the soft limit to the hard
 * one: a daemon started with the usual soft limit of 1,024 would otherwise
 * fail its owner long before the hard limit (often 524,288) is near.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>

#include "fs/ops/shares.h"
#include "store/util.h"

/* At most one warning of refusals in this many seconds; the next one counts those in between. */
#define WARN_EVERY_S 60
/* statvfs is read again after this many nanoseconds, or at every call once less than SPACE_NEAR is left. */
#define SPACE_FRESH_NS 1000000000LL
#define SPACE_NEAR ((uint64_t)64 << 20)

struct user_fds {
	uid_t uid;
	uint64_t held;
};

struct shares {
	pthread_mutex_t lock;
	uid_t owner;
	uint64_t max_fds;
	uint64_t user_share;   /* what one other uid may hold */
	uint64_t others_share; /* what all other uids together may hold */
	uint64_t others_held;
	struct user_fds *users; /* uids holding descriptors, in no order */
	size_t n_users, alloc_users;
	int64_t fd_warned_s;    /* monotonic seconds of the last warning; 0 none */
	uint64_t fd_refused;    /* refusals since */

	int space_fd;           /* the filesystem whose space is watched; -1: none */
	uint64_t space_left;    /* bytes non-root may use, as of space_ns, less what was let through since */
	uint64_t space_bsize;   /* its block size */
	bool space_kept;        /* the filesystem keeps blocks for root (f_bfree > f_bavail) */
	int64_t space_ns;       /* monotonic time of the last statvfs; 0 none */
	int64_t space_warned_s;
	uint64_t space_refused;
};

static int64_t mono_s(void)
{
	return mono_ns() / 1000000000LL;
}

/* True once a minute at most: a refusal of kind (its time and count) is to be warned. l->lock held. */
static bool warn_now(int64_t *warned_s, uint64_t *count)
{
	int64_t now = mono_s();

	++*count;
	if (*warned_s && now - *warned_s < WARN_EVERY_S)
		return false;
	*warned_s = now ? now : 1;
	return true;
}

uint64_t shares_raise_nofile(uint64_t *ret_was)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("cannot read the limit of open files: %s", strerror(errno));
		*ret_was = 1024;
		return 1024;
	}
	*ret_was = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("cannot raise the limit of open files from %llu to %llu: %s",
				 (unsigned long long)*ret_was, (unsigned long long)rl.rlim_max, strerror(errno));
			return *ret_was;
		}
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

void shares_log_limit(const struct shares *l, uint64_t was)
{
	if (!l)
		return;
	if (was < l->max_fds)
		log_info("open files: up to %llu (raised from %llu); each other user may hold %llu",
			 (unsigned long long)l->max_fds, (unsigned long long)was, (unsigned long long)l->user_share);
	else
		log_info("open files: up to %llu; each other user may hold %llu", (unsigned long long)l->max_fds,
			 (unsigned long long)l->user_share);
}

int shares_new(uid_t owner, uint64_t max_fds, struct shares **ret)
{
	struct shares *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	r = pthread_mutex_init(&l->lock, NULL);
	if (r != 0) {
		free(l);
		return -r;
	}
	l->owner = owner;
	l->max_fds = max_fds;
	l->user_share = max_fds / 4;
	l->others_share = max_fds / 2;
	l->space_fd = -1;
	*ret = l;
	return 0;
}

void shares_free(struct shares *l)
{
	if (!l)
		return;
	free(l->users);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* uid's entry, made if missing; NULL without memory. l->lock held. */
static struct user_fds *user_of(struct shares *l, uid_t uid)
{
	for (size_t i = 0; i < l->n_users; i++)
		if (l->users[i].uid == uid)
			return &l->users[i];
	if (ARRAY_GROW(l->users, l->n_users, l->alloc_users, 4) < 0)
		return NULL;
	l->users[l->n_users] = (struct user_fds){ .uid = uid };
	return &l->users[l->n_users++];
}

/* A refusal: warned now unless another was in the last minute. l->lock held. */
static void refused(struct shares *l, const struct user_fds *u)
{
	if (!warn_now(&l->fd_warned_s, &l->fd_refused))
		return;
	log_warn("refusing to open more files for uid %u (EMFILE, %llu refused): it holds %llu, other users %llu; "
		 "each other user may hold %llu and all of them %llu of the daemon's %llu, the rest is kept for "
		 "uid %u's saves",
		 (unsigned)u->uid, (unsigned long long)l->fd_refused, (unsigned long long)u->held,
		 (unsigned long long)l->others_held, (unsigned long long)l->user_share,
		 (unsigned long long)l->others_share, (unsigned long long)l->max_fds, (unsigned)l->owner);
	l->fd_refused = 0;
}

int shares_fd_take(struct shares *l, uid_t uid, struct fd_charge *ret)
{
	struct user_fds *u;
	int r = 0;

	*ret = (struct fd_charge){ .l = l, .uid = uid };
	if (!l || uid == l->owner)
		return 0;
	pthread_mutex_lock(&l->lock);
	u = user_of(l, uid);
	if (!u) {
		r = -ENOMEM;
	} else if (u->held >= l->user_share || l->others_held >= l->others_share) {
		refused(l, u);
		r = -EMFILE;
	} else {
		u->held++;
		l->others_held++;
		ret->held = true;
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

void shares_fd_put(struct fd_charge *c)
{
	struct shares *l = c->l;

	if (!c->held)
		return;
	c->held = false;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n_users; i++) {
		if (l->users[i].uid != c->uid)
			continue;
		l->others_held--;
		/* The table keeps only uids that hold something. */
		if (--l->users[i].held == 0)
			l->users[i] = l->users[--l->n_users];
		break;
	}
	pthread_mutex_unlock(&l->lock);
}

void shares_watch_space(struct shares *l, int root_fd)
{
	if (l)
		l->space_fd = root_fd;
}

int shares_space(struct shares *l, uid_t uid, uint64_t bytes)
{
	uint64_t need, blocks;
	int64_t now;
	int r = 0;

	if (!l || l->space_fd < 0 || uid == 0)
		return 0;
	pthread_mutex_lock(&l->lock);
	now = mono_ns();
	for (int pass = 0;; pass++) {
		struct statvfs sv;
		uint64_t bs = l->space_bsize ? l->space_bsize : 4096;

		/*
		 * The blocks of the bytes, one more where they straddle a block
		 * boundary, one in 64 for the file's own map of its blocks, and
		 * two for a folder's new block or an inode's table.
		 */
		blocks = (bytes + bs - 1) / bs;
		need = (blocks + blocks / 64 + 3) * bs;
		if (pass > 0 || (l->space_ns && now - l->space_ns < SPACE_FRESH_NS && l->space_left >= need + SPACE_NEAR))
			break;
		if (fstatvfs(l->space_fd, &sv) < 0) {
			/* Cannot tell: the kernel's ENOSPC stays, as on any filesystem. */
			l->space_ns = 0;
			need = 0;
			break;
		}
		l->space_bsize = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
		l->space_left = (uint64_t)sv.f_bavail * l->space_bsize;
		l->space_kept = sv.f_bfree > sv.f_bavail;
		l->space_ns = now;
	}
	/* Nothing kept for root (tmpfs): the kernel's ENOSPC is the same for everyone. */
	if (!l->space_kept)
		need = 0;
	if (l->space_left < need) {
		if (warn_now(&l->space_warned_s, &l->space_refused)) {
			log_warn("refusing to write %llu bytes for uid %u (ENOSPC, %llu refused): %llu bytes are left of "
				 "what users other than root may use, the rest is kept for root",
				 (unsigned long long)bytes, (unsigned)uid, (unsigned long long)l->space_refused,
				 (unsigned long long)l->space_left);
			l->space_refused = 0;
		}
		r = -ENOSPC;
	} else {
		l->space_left -= need;
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

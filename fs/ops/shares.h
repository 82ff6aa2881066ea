/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SHARES_H
#define CONVFS_SHARES_H

/*
 * shares.c: what the daemon's resources allow the users of a shared mount
 * (-o allow_other) other than its owner, so that none of them can take
 * what the owner's saves need.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct shares;

/*
 * At start, before anything is opened: the soft limit of open files raised
 * to the hard one. Returns the limit in force; *ret_was is the one before.
 */
uint64_t shares_raise_nofile(uint64_t *ret_was);

/*
 * The limits of a mount whose owner is owner: every other uid gets a share
 * of max_fds, the daemon's limit of open files. *ret is the caller's, freed
 * with shares_free() (which accepts NULL).
 */
int shares_new(uid_t owner, uint64_t max_fds, struct shares **ret);
void shares_free(struct shares *l);
/* One info line: the limit of open files (was: the one before the raise) and a user's share. */
void shares_log_limit(const struct shares *l, uint64_t was);

/*
 * One descriptor the daemon holds for an open handle of uid (a plain file,
 * a staging file), counted against uid's share. held is false for the
 * owner's, who is never counted, and once given back.
 */
struct fd_charge {
	struct shares *l;
	uid_t uid;
	bool held;
};

/*
 * Counts one more descriptor for uid into *ret (l NULL: nothing is
 * counted). -EMFILE, with one warning a minute at most, once uid holds its
 * share (a quarter of the limit) or all other users together hold half:
 * the other half is the owner's and the daemon's own (the store, its WAL,
 * staging, the take-in).
 */
int shares_fd_take(struct shares *l, uid_t uid, struct fd_charge *ret);
/* Gives back what c holds, if anything; c holds nothing after. */
void shares_fd_put(struct fd_charge *c);
static inline void shares_fd_putp(struct fd_charge *c)
{
	shares_fd_put(c);
}
/* Hands the charge of c on: returns it, c holds nothing after. */
static inline struct fd_charge shares_fd_move(struct fd_charge *c)
{
	struct fd_charge m = *c;

	c->held = false;
	return m;
}

/*
 * A daemon run by root may write into the blocks a filesystem keeps for root
 * (ext4's reserved blocks, 5 % by default), so what it writes on behalf of
 * other users must stop where theirs would. From here on, writes and creates
 * on behalf of uids other than 0 are checked against the space non-root may
 * use of the filesystem of root_fd (the backing tree, beside the store).
 * Only for a daemon run by root: any other's writes meet the kernel's own
 * rule.
 */
void shares_watch_space(struct shares *s, int root_fd);
/*
 * Before a write of bytes (0 for a create: an entry, a folder's block) on
 * behalf of uid: -ENOSPC, with one warning a minute at most, if it would
 * reach into what only root may use. 0 otherwise, and always for uid 0 or
 * while space is not watched. Costs no system call but when the space
 * left is near (statvfs is read again at most once a second otherwise).
 */
int shares_space(struct shares *s, uid_t uid, uint64_t bytes);

#endif

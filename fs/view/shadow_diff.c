/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shadow_diff.c: changes.diff, the patch from one checkpoint's commit to the
 * next, as `git diff A B` prints it, made with libgit2 within bounds.
 *
 * libgit2's tree-to-tree diff walks both trees whole, unchanged folders too,
 * holding a tree a level; its rename detection and each file's patch read
 * blobs whole; xdiff needs up to some 50 bytes a byte of the two texts it
 * compares (1 MiB of one-character lines on each side: 98 MB); and the text
 * is built in memory. Unbounded, 100,000 nested trees took 80 s and 20 GB,
 * and a 4 GiB blob 5 GB. So, all under shadow_lock:
 *  - Both trees are walked here first (walk_check()), at most
 *    SHADOW_DEPTH_MAX folders deep (2048, the default of git's own
 *    core.maxTreeDepth) and SHADOW_DIFF_ENTRIES_MAX entries each (100,000:
 *    the walk then takes well under a second, and the diff's list of
 *    changes stays under some 20 MB); past either, changes.diff holds only
 *    a note that says so and how to get the diff from git, and one warning
 *    is logged. Each tree is checked as shadow.c checks every object (a
 *    regular loose file, a tree, at most SHADOW_TREE_MAX); what the walk
 *    found is remembered by repository and tree id, as trees never change.
 *    (A loose file swapped for a FIFO after that walk is not seen: only
 *    the repo's owner could do it, and that user can stop the daemon.)
 *  - Each changed blob is checked the same way before libgit2 reads it.
 *  - A file over SHADOW_DIFF_FILE_MAX (256 KiB: xdiff's worst case for the
 *    pair, some 28 MB) shows as binary (git_diff_options.max_size, as git
 *    does past core.bigFileThreshold); a note at the end says so.
 *  - Renames are found by content, as git does, among at most
 *    SHADOW_RENAME_MAX (1,000, git's diff.renameLimit) added and removed
 *    files none of which is over SHADOW_DIFF_FILE_MAX; otherwise by id only.
 *  - The text stops before the first file that would begin past
 *    SHADOW_DIFF_TEXT_MAX (4 MiB, some 60,000 lines), with a note saying so:
 *    each file in it is whole, and one file's patch is at most about 1 MiB.
 *    (The text is made at each stat and open of changes.diff, and an open
 *    keeps it: with the blob a read keeps, 16 MiB, and the daemon's own
 *    10 MB or so, that stays within its 64 MB.)
 */
#include <errno.h>
#include <git2.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "fs/view/shadow.h"
#include "fs/view/shadow_internal.h"
#include "store/util.h"

#define SHADOW_DIFF_ENTRIES_MAX 100000
#define SHADOW_DIFF_FILE_MAX ((size_t)256 << 10)
#define SHADOW_DIFF_TEXT_MAX ((size_t)4 << 20)
#define SHADOW_RENAME_MAX 1000

enum walk_verdict { WALK_OK, WALK_DEEP, WALK_MANY };

/* A tree waiting to be walked, and how deep it is (the root: 0). */
struct pending {
	git_oid id;
	int depth;
};

/*
 * Walks the tree root as libgit2's diff will, every entry and subtree,
 * each tree read through shadow_tree_get(); *ret says whether it stopped at
 * a bound. It holds one tree at a time, and the ids of those waiting (at
 * most one an entry). Lock held.
 */
static int walk_check(const git_oid *root, enum walk_verdict *ret)
{
	static struct {
		uint64_t repo;
		git_oid id;
		enum walk_verdict v;
	} known[16];
	static unsigned nknown;
	uint64_t repo = hash64(shadow_repo_dir(), strlen(shadow_repo_dir()));
	struct pending *stack = NULL;
	size_t n = 0, alloc = 0, entries = 0;
	int r = 0;

	for (unsigned i = 0; i < nknown && i < ARRAY_SIZE(known); i++)
		if (known[i].repo == repo && git_oid_equal(&known[i].id, root)) {
			*ret = known[i].v;
			return 0;
		}
	*ret = WALK_OK;
	if ((r = ARRAY_GROW(stack, n, alloc, 64)) < 0)
		return r;
	stack[n++] = (struct pending){ *root, 0 };
	while (n && r == 0 && *ret == WALK_OK) {
		struct pending p = stack[--n];
		char hex[GIT_OID_HEXSZ + 8];
		git_tree *t;
		size_t count;

		if (p.depth > SHADOW_DEPTH_MAX) {
			*ret = WALK_DEEP;
			break;
		}
		snprintf(hex, sizeof(hex), "tree %s", git_oid_tostr_s(&p.id));
		if ((r = shadow_tree_get(&p.id, hex, &t)) < 0)
			break;
		count = git_tree_entrycount(t);
		if ((entries += count) > SHADOW_DIFF_ENTRIES_MAX)
			*ret = WALK_MANY;
		for (size_t i = 0; i < count && r == 0 && *ret == WALK_OK; i++) {
			const git_tree_entry *e = git_tree_entry_byindex(t, i);

			if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
				continue;
			if ((r = ARRAY_GROW(stack, n, alloc, 64)) == 0)
				stack[n++] = (struct pending){ *git_tree_entry_id(e), p.depth + 1 };
		}
		git_tree_free(t);
	}
	free(stack);
	if (r == 0) {
		known[nknown % ARRAY_SIZE(known)].repo = repo;
		known[nknown % ARRAY_SIZE(known)].id = *root;
		known[nknown++ % ARRAY_SIZE(known)].v = *ret;
	}
	return r;
}

/* Appends how to get the diff from git: "git -C '<repo>' diff <prev> <hash>" (show <hash> with no prev). */
static int git_how(struct sb *sb, const char *prev, const char *hash)
{
	int r = sb_adds(sb, "git -C ");

	if (r == 0)
		r = shadow_sh_quote(sb, shadow_repo_dir());
	if (r == 0)
		r = prev ? sb_addf(sb, " diff %s %s", prev, hash) : sb_addf(sb, " show %s", hash);
	return r;
}

/*
 * libgit2's patch text, made to read as git diff prints it: a file header
 * followed by no hunk (an empty file added or removed, a mode change) has no
 * ---/+++ lines in git's output, and git ends a ---/+++ path that holds a
 * space with a tab.
 */
struct diff_out {
	struct sb out;
	struct sb header; /* the current file's header, until we know if hunks follow */
	bool has_header;
	size_t files;     /* files begun */
	bool cut;         /* stopped before a file that would begin past SHADOW_DIFF_TEXT_MAX */
};

static int header_flush(struct diff_out *d, bool hunks_follow)
{
	const char *p = sb_str(&d->header), *end;
	int r = 0;

	if (!d->has_header)
		return 0;
	for (; *p && r == 0; p = end) {
		end = strchr(p, '\n');
		end = end ? end + 1 : p + strlen(p);
		if (strncmp(p, "--- ", 4) == 0 || strncmp(p, "+++ ", 4) == 0) {
			size_t len = (size_t)(end - p) - (end[-1] == '\n');

			if (!hunks_follow)
				continue;
			r = sb_add(&d->out, p, len);
			if (r == 0 && memchr(p + 4, ' ', len - 4))
				r = sb_add(&d->out, "\t", 1);
			if (r == 0 && end[-1] == '\n')
				r = sb_add(&d->out, "\n", 1);
			continue;
		}
		r = sb_add(&d->out, p, (size_t)(end - p));
	}
	d->header.len = 0;
	d->has_header = false;
	return r;
}

static int diff_line(const git_diff_delta *delta, const git_diff_hunk *hunk, const git_diff_line *line, void *ctx)
{
	struct diff_out *d = ctx;
	int r;

	switch (line->origin) {
	case GIT_DIFF_LINE_FILE_HDR:
		if ((r = header_flush(d, false)) < 0)
			return r;
		if (d->out.len >= SHADOW_DIFF_TEXT_MAX) {
			d->cut = true;
			return GIT_EUSER;
		}
		d->files++;
		d->has_header = true;
		return sb_add(&d->header, line->content, line->content_len);
	case GIT_DIFF_LINE_HUNK_HDR:
	case GIT_DIFF_LINE_BINARY:
		if ((r = header_flush(d, true)) < 0)
			return r;
		return sb_add(&d->out, line->content, line->content_len);
	case GIT_DIFF_LINE_CONTEXT:
	case GIT_DIFF_LINE_ADDITION:
	case GIT_DIFF_LINE_DELETION:
		if ((r = sb_add(&d->out, &line->origin, 1)) < 0)
			return r;
		return sb_add(&d->out, line->content, line->content_len);
	default: /* the "\ No newline at end of file" lines and the like */
		return sb_add(&d->out, line->content, line->content_len);
	}
}

/* What the changed blobs are: checked, counted, sized. */
struct changes {
	size_t big;            /* files over SHADOW_DIFF_FILE_MAX */
	const char *first_big;
	size_t added, removed; /* rename candidates */
	bool big_candidate;
};

/* Checks every blob the diff changes before libgit2 reads it. Lock held. */
static int changes_check(git_diff *diff, struct changes *c)
{
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const git_diff_file *f[2] = { &d->old_file, &d->new_file };
		bool big = false;

		for (int k = 0; k < 2; k++) {
			size_t size;
			int r;

			if (git_oid_is_zero(&f[k]->id) || (f[k]->mode != GIT_FILEMODE_BLOB &&
			    f[k]->mode != GIT_FILEMODE_BLOB_EXECUTABLE && f[k]->mode != GIT_FILEMODE_LINK))
				continue;
			if ((r = shadow_object_check(&f[k]->id, GIT_OBJECT_BLOB, f[k]->path, &size)) < 0)
				return r;
			big = big || size > SHADOW_DIFF_FILE_MAX;
		}
		if (big && !c->big++)
			c->first_big = d->new_file.path;
		c->added += d->status == GIT_DELTA_ADDED;
		c->removed += d->status == GIT_DELTA_DELETED;
		c->big_candidate = c->big_candidate || (big && (d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_DELETED));
	}
	return 0;
}

/* Renames, as git finds them, within SHADOW_RENAME_MAX candidates none of them big. Lock held. */
static int renames_find(git_diff *diff, const struct changes *c, const char *hash)
{
	git_diff_find_options o;
	int rc;

	if (!c->added || !c->removed)
		return 0; /* nothing to pair */
	if ((rc = git_diff_find_options_init(&o, GIT_DIFF_FIND_OPTIONS_VERSION)) < 0)
		return shadow_errno(rc, "find renames in", hash);
	o.flags = GIT_DIFF_FIND_RENAMES;
	if (c->big_candidate || c->added + c->removed > SHADOW_RENAME_MAX)
		o.flags |= GIT_DIFF_FIND_EXACT_MATCH_ONLY;
	rc = git_diff_find_similar(diff, &o);
	return rc < 0 ? shadow_errno(rc, "find renames in", hash) : 0;
}

/* The patch of diff, its notes at the end, into *d. prev: the commit diffed against (NULL: none). Lock held. */
static int diff_text(git_diff *diff, const char *prev, const char *hash, const struct changes *c, struct diff_out *d)
{
	int r, rc;

	rc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, diff_line, d);
	if (rc < 0 && !d->cut)
		return rc == -ENOMEM ? -ENOMEM : shadow_errno(rc, "print the diff of", hash);
	if ((r = header_flush(d, false)) < 0)
		return r;
	if (d->cut && ((r = sb_addf(&d->out, "# convfs: changes.diff stops here, past %zu MiB: it shows %zu of the "
				     "%zu changed files; all of them: ", SHADOW_DIFF_TEXT_MAX >> 20, d->files,
				     git_diff_num_deltas(diff))) < 0 ||
		       (r = git_how(&d->out, prev, hash)) < 0 || (r = sb_adds(&d->out, "\n")) < 0))
		return r;
	if (c->big && ((r = sb_addf(&d->out, "# convfs: %zu file(s) over %zu KiB show as binary, such as '%s'; "
				     "their changes: ", c->big, SHADOW_DIFF_FILE_MAX >> 10, c->first_big)) < 0 ||
		       (r = git_how(&d->out, prev, hash)) < 0 || (r = sb_adds(&d->out, "\n")) < 0))
		return r;
	return 0;
}

/* What a diff is limited to (agent.diff): those paths alone, the others changed handed to other. */
struct diff_only {
	const char *const *paths;
	size_t n;
	void (*other)(void *ctx, const char *path);
	void *ctx;
};

/* The changed files of diff that only leaves out, to only->other. */
static void others_tell(git_diff *diff, const struct diff_only *only)
{
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *dl = git_diff_get_delta(diff, i);
		const char *path = dl->new_file.path ? dl->new_file.path : dl->old_file.path;
		bool in = false;

		for (size_t k = 0; k < only->n && !in; k++)
			in = strcmp(only->paths[k], path) == 0;
		if (!in)
			only->other(only->ctx, path);
	}
}

/* changes.diff of trees pt (NULL: none) and ct, walked within bounds first (only: those paths). Lock held. */
static int diff_trees(git_repository *repo, git_tree *pt, git_tree *ct, const char *prev, const char *hash,
		      const struct diff_only *only, struct diff_out *d)
{
	git_diff_options o;
	enum walk_verdict v = WALK_OK;
	struct changes c = { 0 };
	git_diff *diff = NULL;
	int r = 0, rc;

	if (pt)
		r = walk_check(git_tree_id(pt), &v);
	if (r == 0 && v == WALK_OK)
		r = walk_check(git_tree_id(ct), &v);
	if (r < 0)
		return r;
	if (v != WALK_OK) {
		const char *why = v == WALK_DEEP ? "folders nested more than" : "more entries than";
		int limit = v == WALK_DEEP ? SHADOW_DEPTH_MAX : SHADOW_DIFF_ENTRIES_MAX;

		if (shadow_warn_first("walk", shadow_repo_dir(), hash))
			log_warn("changes.diff of checkpoint %s of the shadow repository '%s' is not made: a tree holds "
				 "%s %d; changes.diff says how to get it from git", hash, shadow_repo_dir(), why, limit);
		if ((r = sb_addf(&d->out, "# convfs: no diff: a tree holds %s %d; the diff: ", why, limit)) < 0 ||
		    (r = git_how(&d->out, prev, hash)) < 0)
			return r;
		return sb_adds(&d->out, "\n");
	}
	if ((rc = git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION)) < 0)
		return shadow_errno(rc, "diff", hash);
	o.max_size = (git_off_t)SHADOW_DIFF_FILE_MAX;
	if (only && only->other) {
		if ((rc = git_diff_tree_to_tree(&diff, repo, pt, ct, &o)) < 0)
			return shadow_errno(rc, "diff", hash);
		others_tell(diff, only);
		git_diff_free(diff);
		diff = NULL;
	}
	if (only) {
		if (!only->n)
			return 0; /* nothing of theirs changed */
		o.pathspec.strings = (char **)only->paths;
		o.pathspec.count = only->n;
		o.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
	}
	rc = git_diff_tree_to_tree(&diff, repo, pt, ct, &o);
	if (rc < 0)
		return shadow_errno(rc, "diff", hash);
	r = changes_check(diff, &c);
	if (r == 0)
		r = renames_find(diff, &c, hash);
	if (r == 0)
		r = diff_text(diff, prev, hash, &c, d);
	git_diff_free(diff);
	return r;
}

static int diff_commits(const char *git_dir, const char *prev, const char *hash, const struct diff_only *only,
			char **ret, size_t *ret_len)
{
	git_repository *repo;
	git_commit *c = NULL, *p = NULL;
	git_tree *ct = NULL, *pt = NULL;
	struct diff_out d = { SB_INIT, SB_INIT, false, 0, false };
	char pid[GIT_OID_HEXSZ + 1];
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = shadow_repo_get(git_dir, &repo);
	if (r == 0)
		r = shadow_commit_get(hash, &c);
	/* The previous checkpoint, or if the repo lacks it, the commit's parent. */
	if (r == 0 && prev && shadow_commit_get(prev, &p) < 0)
		p = NULL;
	if (r == 0 && !p && git_commit_parentcount(c) > 0)
		r = shadow_commit_get(git_oid_tostr(pid, sizeof(pid), git_commit_parent_id(c, 0)), &p);
	shadow_blob_drop(); /* its memory, for the blobs of the diff */
	if (r == 0)
		r = shadow_tree_get(git_commit_tree_id(c), "", &ct);
	if (r == 0 && p)
		r = shadow_tree_get(git_commit_tree_id(p), "", &pt);
	if (r == 0)
		r = diff_trees(repo, pt, ct, p ? git_oid_tostr(pid, sizeof(pid), git_commit_id(p)) : NULL, hash, only, &d);
	git_tree_free(ct);
	git_tree_free(pt);
	git_commit_free(c);
	git_commit_free(p);
	pthread_mutex_unlock(&shadow_lock);
	sb_release(&d.header);
	/* What libgit2 and the text's growth freed goes back (see shadow_blob_drop()). */
	malloc_trim(0);
	if (r == 0 && !(*ret = sb_detach(&d.out, ret_len)))
		r = -ENOMEM;
	sb_release(&d.out);
	return r;
}

int shadow_diff(const char *git_dir, const char *prev, const char *hash, char **ret, size_t *ret_len)
{
	return diff_commits(git_dir, prev, hash, NULL, ret, ret_len);
}

int shadow_diff_only(const char *git_dir, const char *from, const char *to, const char *const *paths, size_t n,
		     void (*other)(void *ctx, const char *path), void *ctx, char **ret, size_t *ret_len)
{
	struct diff_only only = { paths, n, other, ctx };

	return diff_commits(git_dir, from, to, &only, ret, ret_len);
}

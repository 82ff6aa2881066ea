/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shadow.c: checkpoints read from the shadow git repo with libgit2.
 *
 * Cline's shadow repo (checkpoints/<key>/.git in the backing tree) is opened
 * read-only; a commit's tree is walked by path for each request, and blobs
 * are read whole into memory only for the file being read (the last one is
 * kept, so a file read in 128 KiB pieces is inflated once). libgit2 objects
 * are not thread-safe, so one mutex guards this module; the last repository
 * opened stays open.
 *
 * A missing or broken repo, or a hash it lacks, is not an error of the view:
 * the checkpoint shows without files/, and the reason is logged once per
 * repository and hash.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <git2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fs/view/shadow.h"
#include "store/json.h"
#include "store/util.h"

static pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;
static git_repository *cur_repo;
static char *cur_dir;
/* the root tree of the last commit looked at (ls -l of a big tree asks it once a file) */
static git_tree *cur_tree;
static char cur_tree_hash[48];
/* commits found missing, logged once each */
static char missing[32][48];
static unsigned nmissing;
/* the last blob read: its (repo, commit, path) and content */
static git_blob *cur_blob;
static char *cur_blob_key;

static int shadow_errno(int rc, const char *what, const char *subject)
{
	const git_error *e = git_error_last();

	if (rc == GIT_ENOTFOUND)
		return -ENOENT;
	log_warn("cannot %s '%s': %s", what, subject, e && e->message ? e->message : "libgit2 error");
	switch (rc) {
	case GIT_EAMBIGUOUS:
	case GIT_EINVALIDSPEC:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* Closes the open repository and what is cached of it. Lock held. */
static void cache_drop(void)
{
	git_blob_free(cur_blob);
	cur_blob = NULL;
	free(cur_blob_key);
	cur_blob_key = NULL;
	git_tree_free(cur_tree);
	cur_tree = NULL;
	git_repository_free(cur_repo);
	cur_repo = NULL;
	free(cur_dir);
	cur_dir = NULL;
}

int shadow_init(void)
{
	if (git_libgit2_init() < 0)
		return -EIO;
	/* Trees of big commits are worth caching; the whole cache stays bounded. */
	git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, (size_t)4 << 20);
	git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)32 << 20);
	return 0;
}

void shadow_shutdown(void)
{
	pthread_mutex_lock(&shadow_lock);
	cache_drop();
	pthread_mutex_unlock(&shadow_lock);
	git_libgit2_shutdown();
}

/* The repository at git_dir, opened (bare, no work tree, no search upwards). Lock held. */
static int repo_get(const char *git_dir, git_repository **ret)
{
	int rc;

	if (cur_repo && strcmp(cur_dir, git_dir) == 0) {
		*ret = cur_repo;
		return 0;
	}
	cache_drop();
	rc = git_repository_open_ext(&cur_repo, git_dir, GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE,
				     NULL);
	if (rc < 0) {
		int r = shadow_errno(rc, "open the shadow repository", git_dir);

		cur_repo = NULL;
		return r == -ENOENT ? -ENODEV : r;
	}
	cur_dir = strdup(git_dir);
	if (!cur_dir) {
		git_repository_free(cur_repo);
		cur_repo = NULL;
		return -ENOMEM;
	}
	*ret = cur_repo;
	return 0;
}

static int commit_get(git_repository *repo, const char *hash, git_commit **ret)
{
	git_oid oid;
	int rc;

	rc = git_oid_fromstrn(&oid, hash, strlen(hash));
	if (rc < 0)
		return -EINVAL;
	rc = git_commit_lookup_prefix(ret, repo, &oid, strlen(hash));
	if (rc == GIT_ENOTFOUND) {
		bool logged = false;

		for (unsigned i = 0; i < nmissing && i < ARRAY_SIZE(missing) && !logged; i++)
			logged = strcmp(missing[i], hash) == 0;
		if (!logged) {
			log_warn("checkpoint commit '%s' is not in the shadow repository '%s'; its snapshot shows "
				 "the conversation only", hash, cur_dir ? cur_dir : "?");
			snprintf(missing[nmissing++ % ARRAY_SIZE(missing)], sizeof(missing[0]), "%s", hash);
		}
		return -ENOENT;
	}
	return rc < 0 ? shadow_errno(rc, "find checkpoint commit", hash) : 0;
}

/* The tree entry at path ("" for the commit's root tree: *ret_entry NULL, *ret_tree set). Lock held. */
static int entry_get(const char *git_dir, const char *hash, const char *path, git_tree **ret_tree,
		     git_tree_entry **ret_entry)
{
	git_repository *repo;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	int r, rc;

	if ((r = repo_get(git_dir, &repo)) < 0)
		return r;
	if (!cur_tree || strcmp(cur_tree_hash, hash) != 0) {
		if ((r = commit_get(repo, hash, &commit)) < 0)
			return r;
		rc = git_commit_tree(&tree, commit);
		git_commit_free(commit);
		if (rc < 0)
			return shadow_errno(rc, "read the tree of", hash);
		git_tree_free(cur_tree);
		cur_tree = tree;
		snprintf(cur_tree_hash, sizeof(cur_tree_hash), "%s", hash);
	}
	/* The caller frees what it gets: hand out a duplicate of the cached tree. */
	if (git_tree_dup(&tree, cur_tree) < 0)
		return -ENOMEM;
	*ret_entry = NULL;
	if (*path) {
		rc = git_tree_entry_bypath(ret_entry, tree, path);
		if (rc < 0) {
			git_tree_free(tree);
			return rc == GIT_ENOTFOUND ? -ENOENT : shadow_errno(rc, "find", path);
		}
	}
	*ret_tree = tree;
	return 0;
}

int shadow_has_commit(const char *git_dir, const char *hash)
{
	git_repository *repo;
	git_commit *commit = NULL;
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = repo_get(git_dir, &repo);
	if (r == 0 && !(cur_tree && strcmp(cur_tree_hash, hash) == 0))
		r = commit_get(repo, hash, &commit);
	git_commit_free(commit);
	pthread_mutex_unlock(&shadow_lock);
	return r;
}

static uint64_t shadow_ino(const char *hash, const char *path)
{
	return (UINT64_C(1) << 63) | (UINT64_C(1) << 62) | ((hash64(hash, strlen(hash)) ^ hash64(path, strlen(path))) >> 2);
}

int shadow_stat(const char *git_dir, const char *hash, const char *path, struct stat *st)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int r;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&shadow_lock);
	r = entry_get(git_dir, hash, path, &tree, &e);
	if (r == 0 && !e) {
		st->st_mode = S_IFDIR | 0500;
		st->st_nlink = 2;
	} else if (r == 0) {
		git_filemode_t m = git_tree_entry_filemode(e);

		if (m == GIT_FILEMODE_TREE) {
			st->st_mode = S_IFDIR | 0500;
			st->st_nlink = 2;
		} else if (m == GIT_FILEMODE_COMMIT) {
			st->st_mode = S_IFDIR | 0500; /* a submodule: an empty folder, as git archive makes */
			st->st_nlink = 2;
		} else {
			git_odb *odb = NULL;
			size_t size = 0;
			git_object_t type;

			st->st_mode = m == GIT_FILEMODE_LINK ? S_IFLNK | 0777
				    : m == GIT_FILEMODE_BLOB_EXECUTABLE ? S_IFREG | 0500 : S_IFREG | 0400;
			st->st_nlink = 1;
			if (git_repository_odb(&odb, cur_repo) == 0 &&
			    git_odb_read_header(&size, &type, odb, git_tree_entry_id(e)) == 0)
				st->st_size = (off_t)size;
			else
				r = shadow_errno(-1, "read the size of", path);
			git_odb_free(odb);
		}
	}
	git_tree_entry_free(e);
	git_tree_free(tree);
	pthread_mutex_unlock(&shadow_lock);
	st->st_ino = shadow_ino(hash, path);
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	return r;
}

int shadow_list(const char *git_dir, const char *hash, const char *path, op_list_fn fn, void *ctx)
{
	git_tree *root = NULL, *sub = NULL;
	git_tree_entry *e = NULL;
	struct {
		char *name;
		mode_t type;
	} *v = NULL;
	size_t n = 0;
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = entry_get(git_dir, hash, path, &root, &e);
	if (r == 0 && e) {
		if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT) {
			sub = NULL; /* a submodule lists empty */
		} else if (git_tree_entry_filemode(e) != GIT_FILEMODE_TREE) {
			r = -ENOTDIR;
		} else if (git_tree_lookup(&sub, cur_repo, git_tree_entry_id(e)) < 0) {
			r = shadow_errno(-1, "read the folder", path);
		}
	}
	if (r == 0) {
		const git_tree *t = e ? sub : root;
		size_t count = t ? git_tree_entrycount(t) : 0;

		v = calloc(count ? count : 1, sizeof(*v));
		if (!v)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < count; i++) {
			const git_tree_entry *c = git_tree_entry_byindex(t, i);
			git_filemode_t m = git_tree_entry_filemode(c);

			v[n].name = strdup(git_tree_entry_name(c));
			if (!v[n].name) {
				r = -ENOMEM;
				break;
			}
			v[n++].type = m == GIT_FILEMODE_TREE || m == GIT_FILEMODE_COMMIT ? S_IFDIR
				    : m == GIT_FILEMODE_LINK ? S_IFLNK : S_IFREG;
		}
	}
	git_tree_free(sub);
	git_tree_entry_free(e);
	git_tree_free(root);
	pthread_mutex_unlock(&shadow_lock);
	if (r == 0 && (r = fn(ctx, ".", S_IFDIR, 0)) == 0)
		r = fn(ctx, "..", S_IFDIR, 0);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = fn(ctx, v[i].name, v[i].type, 0);
		free(v[i].name);
	}
	free(v);
	return r;
}

/* The blob at path, from the one-entry cache or the repository. Lock held. */
static int blob_get(const char *git_dir, const char *hash, const char *path, git_blob **ret)
{
	_cleanup_sb_ struct sb key = SB_INIT;
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int r;

	if ((r = sb_addf(&key, "%s\n%s\n%s", git_dir, hash, path)) < 0)
		return r;
	if (cur_blob && cur_blob_key && strcmp(cur_blob_key, key.buf) == 0 && cur_repo && strcmp(cur_dir, git_dir) == 0) {
		*ret = cur_blob;
		return 0;
	}
	r = entry_get(git_dir, hash, path, &tree, &e);
	if (r == 0 && (!e || git_tree_entry_type(e) != GIT_OBJECT_BLOB))
		r = -EISDIR;
	if (r == 0) {
		git_blob_free(cur_blob);
		cur_blob = NULL;
		if (git_blob_lookup(&cur_blob, cur_repo, git_tree_entry_id(e)) < 0) {
			cur_blob = NULL;
			r = shadow_errno(-1, "read", path);
		} else {
			free(cur_blob_key);
			cur_blob_key = sb_detach(&key, NULL);
			*ret = cur_blob;
		}
	}
	git_tree_entry_free(e);
	git_tree_free(tree);
	return r;
}

ssize_t shadow_read(const char *git_dir, const char *hash, const char *path, char *buf, size_t size, off_t off)
{
	git_blob *b;
	ssize_t n = 0;
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = blob_get(git_dir, hash, path, &b);
	if (r == 0) {
		git_object_size_t len = git_blob_rawsize(b);

		if ((git_object_size_t)off < len) {
			n = (ssize_t)((len - (git_object_size_t)off) < size ? len - (git_object_size_t)off : size);
			memcpy(buf, (const char *)git_blob_rawcontent(b) + off, (size_t)n);
		}
	}
	pthread_mutex_unlock(&shadow_lock);
	return r < 0 ? r : n;
}

int shadow_readlink(const char *git_dir, const char *hash, const char *path, char *buf, size_t size)
{
	ssize_t n = shadow_read(git_dir, hash, path, buf, size - 1, 0);

	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

/*
 * s with every byte that is not part of valid UTF-8 replaced by U+FFFD: git
 * keeps a commit message as bytes, and commit.json must be valid JSON.
 * free() it; NULL if out of memory.
 */
static char *utf8_clean(const char *s)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	size_t n = strlen(s), i = 0, len;

	while (i < n) {
		len = json_utf8_len((const unsigned char *)s + i, n - i);
		if ((len ? sb_add(&out, s + i, len) : sb_adds(&out, "\xef\xbf\xbd")) < 0)
			return NULL;
		i += len ? len : 1;
	}
	return sb_add(&out, "", 0) < 0 ? NULL : sb_detach(&out, NULL);
}

int shadow_commit_json(const char *git_dir, const char *hash, char **ret, size_t *ret_len, int64_t *ret_time_ns)
{
	git_repository *repo;
	git_commit *c = NULL;
	cJSON *o = NULL;
	char id[GIT_OID_HEXSZ + 1];
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = repo_get(git_dir, &repo);
	if (r == 0)
		r = commit_get(repo, hash, &c);
	if (r == 0 && !(o = cJSON_CreateObject()))
		r = -ENOMEM;
	if (r == 0) {
		_cleanup_free_ char *msg = utf8_clean(git_commit_message(c) ? git_commit_message(c) : "");
		bool ok;

		git_oid_tostr(id, sizeof(id), git_commit_id(c));
		ok = msg && cJSON_AddStringToObject(o, "hash", id) &&
		     cJSON_AddNumberToObject(o, "time", (double)git_commit_time(c)) &&
		     cJSON_AddStringToObject(o, "message", msg);
		if (ok && git_commit_parentcount(c) > 0) {
			git_oid_tostr(id, sizeof(id), git_commit_parent_id(c, 0));
			ok = cJSON_AddStringToObject(o, "parent", id);
		} else if (ok) {
			ok = cJSON_AddNullToObject(o, "parent");
		}
		*ret_time_ns = (int64_t)git_commit_time(c) * 1000000000;
		r = ok ? json_print_pretty(o, ret, ret_len) : -ENOMEM;
	}
	git_commit_free(c);
	pthread_mutex_unlock(&shadow_lock);
	cJSON_Delete(o);
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

int shadow_diff(const char *git_dir, const char *prev, const char *hash, char **ret, size_t *ret_len)
{
	git_repository *repo;
	git_commit *c = NULL, *p = NULL;
	git_tree *ct = NULL, *pt = NULL;
	git_diff *diff = NULL;
	int r, rc = 0;

	pthread_mutex_lock(&shadow_lock);
	r = repo_get(git_dir, &repo);
	if (r == 0)
		r = commit_get(repo, hash, &c);
	/* The previous checkpoint, or if the repo lacks it, the commit's parent. */
	if (r == 0 && prev && commit_get(repo, prev, &p) < 0)
		p = NULL;
	if (r == 0 && !p && git_commit_parentcount(c) > 0 && (rc = git_commit_parent(&p, c, 0)) < 0)
		r = shadow_errno(rc, "read the parent of", hash);
	if (r == 0 && (rc = git_commit_tree(&ct, c)) < 0)
		r = shadow_errno(rc, "read the tree of", hash);
	if (r == 0 && p && (rc = git_commit_tree(&pt, p)) < 0)
		r = shadow_errno(rc, "read the tree of", prev ? prev : "the parent");
	if (r == 0 && (rc = git_diff_tree_to_tree(&diff, repo, pt, ct, NULL)) < 0)
		r = shadow_errno(rc, "diff", hash);
	/* git diff finds renames by default */
	if (r == 0 && (rc = git_diff_find_similar(diff, NULL)) < 0)
		r = shadow_errno(rc, "find renames in", hash);
	if (r == 0) {
		struct diff_out d = { SB_INIT, SB_INIT, false };

		rc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, diff_line, &d);
		if (rc == 0)
			rc = header_flush(&d, false);
		if (rc < 0) {
			r = rc == -ENOMEM ? -ENOMEM : shadow_errno(rc, "print the diff of", hash);
			sb_release(&d.out);
		} else {
			*ret = sb_detach(&d.out, ret_len);
			if (!*ret)
				r = -ENOMEM;
		}
		sb_release(&d.header);
	}
	git_diff_free(diff);
	git_tree_free(ct);
	git_tree_free(pt);
	git_commit_free(c);
	git_commit_free(p);
	pthread_mutex_unlock(&shadow_lock);
	return r;
}

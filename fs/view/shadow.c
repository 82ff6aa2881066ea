/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shadow.c: checkpoints read from the shadow git repo with libgit2.
 *
 * Cline's shadow repo (checkpoints/<key>/.git in the backing tree) is read
 * as an object database and nothing more: git_repository_wrap_odb() of its
 * objects/ folder, with an empty index of its own and no config search path.
 * So libgit2 opens no HEAD, config (nor the files a config includes), index,
 * attributes or alternates, and no git config of the user: only loose
 * objects and what objects/pack/ holds. A commit's tree is walked by path
 * for each request, and a blob is read whole into memory only for the file
 * being read (the last one is kept, so a file read in 128 KiB pieces is
 * inflated once). libgit2 objects are not thread-safe, so one mutex guards
 * this module; the last repository opened stays open.
 *
 * The repo is data that whoever can write the backing tree may have made
 * (a loose object of 4 MB can inflate to 4 GiB; 100,000 trees can nest), and
 * a request holds shadow_lock for all its libgit2 calls. So each request's
 * memory and work are bounded by a limit, not by what the repo holds:
 *  - Every object is checked before libgit2 reads it (shadow_object_check):
 *    its header gives type and size without inflating anything, so stat()
 *    shows any blob's size. One read whole is at most SHADOW_BLOB_MAX
 *    (16 MiB) for a blob, SHADOW_TREE_MAX (4 MiB, some 70,000 entries) for
 *    a tree, SHADOW_COMMIT_MAX (1 MiB) for a commit: a blob inflated, a
 *    packed one rebuilt from its delta and base (up to three times its
 *    size for a moment) and the daemon's own few MB stay under its 64 MB
 *    target. A larger blob answers EFBIG, with one line saying how to get it
 *    with git; a larger tree or commit answers EFBIG likewise.
 *  - A path is resolved a name at a time, at most SHADOW_DEPTH_MAX deep.
 *    A tree entry whose name no file can have (empty, ".", "..", holding a
 *    '/', over NAME_MAX bytes) is neither listed nor resolved: one warning
 *    a tree says so. An entry whose object is not of the type its mode
 *    says (a folder that is a blob, a file that is a tree) answers EIO with
 *    one line naming it.
 *  - changes.diff is bounded too: shadow_diff.c.
 *  - libgit2 opens loose objects and pack files by path, and open(2) of a
 *    FIFO (or of a device) waits for a writer while shadow_lock is held. So
 *    a loose object's file must be a regular file before each read, and
 *    each entry of objects/pack/ too, checked again whenever that folder
 *    changes; anything else is refused with EIO and one warning. (Whoever
 *    could swap such a file in between can write the repo, which only the
 *    daemon's user can: view_ckpt.c.)
 *
 * A missing or broken repo, or a hash it lacks, is not an error of the view:
 * the checkpoint shows without files/, and the reason is logged once per
 * repository and hash.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/view/shadow.h"
#include "fs/view/shadow_internal.h"
#include "store/json.h"
#include "store/util.h"

pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;

/* A folder as it was when last found clean. */
struct stamp {
	bool valid;
	dev_t dev;
	ino_t ino;
	struct timespec mtim, ctim;
};

/* The repository open, and what is kept of it. */
static struct {
	git_repository *repo;
	git_odb *odb;
	char *dir;  /* its git dir */
	int dfd;    /* the git dir, O_PATH */
	struct stamp pack;  /* objects/pack/ */
	/* the root tree of the last commit looked at (ls -l of a big tree asks it once a file) */
	git_tree *tree;
	char tree_hash[48];
	/* the last blob read: its (repo, commit, path) and content */
	git_blob *blob;
	char *blob_key;
} cur = { .dfd = -1 };

int shadow_errno(int rc, const char *what, const char *subject)
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

bool shadow_warn_first(const char *kind, const char *a, const char *b)
{
	static uint64_t seen[256];
	static unsigned n;
	uint64_t h = hash64(kind, strlen(kind));

	h = h * 31 + hash64(a, strlen(a));
	h = h * 31 + hash64(b, strlen(b));
	for (unsigned i = 0; i < n && i < ARRAY_SIZE(seen); i++)
		if (seen[i] == h)
			return false;
	seen[n++ % ARRAY_SIZE(seen)] = h;
	return true;
}

int shadow_sh_quote(struct sb *sb, const char *s)
{
	int r = sb_add(sb, "'", 1);

	for (; *s && r == 0; s++)
		r = *s == '\'' ? sb_adds(sb, "'\\''") : sb_add(sb, s, 1);
	return r ? r : sb_add(sb, "'", 1);
}

const char *shadow_repo_dir(void)
{
	return cur.dir ? cur.dir : "";
}

/*
 * Frees the blob kept. glibc keeps the freed memory of a large allocation
 * in its heap (once one large block was freed, it serves the next ones from
 * there), so a blob of a MiB or more is given back at once.
 */
void shadow_blob_drop(void)
{
	bool big = cur.blob && git_blob_rawsize(cur.blob) >= ((git_object_size_t)1 << 20);

	git_blob_free(cur.blob);
	cur.blob = NULL;
	free(cur.blob_key);
	cur.blob_key = NULL;
	if (big)
		malloc_trim(0);
}

/* Closes the open repository and what is cached of it. Lock held. */
static void cache_drop(void)
{
	shadow_blob_drop();
	git_tree_free(cur.tree);
	cur.tree = NULL;
	git_repository_free(cur.repo);
	cur.repo = NULL;
	git_odb_free(cur.odb);
	cur.odb = NULL;
	free(cur.dir);
	cur.dir = NULL;
	if (cur.dfd >= 0)
		close(cur.dfd);
	cur.dfd = -1;
	cur.pack.valid = false;
}

int shadow_init(void)
{
	if (git_libgit2_init() < 0)
		return -EIO;
	/* Trees of big commits are worth caching; the whole cache stays bounded. */
	git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, SHADOW_TREE_MAX);
	git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)8 << 20);
	/*
	 * Pack files are mapped a window at a time; what is mapped and touched
	 * counts in the daemon's memory, so at most 32 MiB of them stay mapped,
	 * and at most 128 stay open.
	 */
	git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)8 << 20);
	git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)32 << 20);
	git_libgit2_opts(GIT_OPT_SET_MWINDOW_FILE_LIMIT, (size_t)128);
	/* No system, XDG or global git config, nor attributes: nothing of the user's is read. */
	for (int level = GIT_CONFIG_LEVEL_PROGRAMDATA; level <= GIT_CONFIG_LEVEL_GLOBAL; level++)
		if (git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "") < 0)
			return -EIO;
	return 0;
}

void shadow_shutdown(void)
{
	pthread_mutex_lock(&shadow_lock);
	cache_drop();
	pthread_mutex_unlock(&shadow_lock);
	git_libgit2_shutdown();
}

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "fifo" : S_ISCHR(m) ? "character device" : S_ISBLK(m) ? "block device"
	     : S_ISSOCK(m) ? "socket" : S_ISLNK(m) ? "symbolic link" : S_ISDIR(m) ? "folder" : "special file";
}

/* Refuses the repo's file rel (relative to its git dir), which is not a regular file: once a repo and file. */
static int refuse_file(const char *rel, mode_t mode)
{
	if (shadow_warn_first("file", cur.dir, rel))
		log_warn("the shadow repository '%s' is not read: '%s' is a %s, not a regular file, and opening it "
			 "could block the daemon", cur.dir, rel, file_kind(mode));
	return -EIO;
}

/*
 * libgit2 opens each pack index, pack and multi-pack-index of objects/pack/
 * by path: every entry there must be a regular file (or a folder, which it
 * passes over). Scanned again whenever the folder has changed since it was
 * last found clean, unless that was within the last 2 s: a change in the
 * same tick of the clock would not move its times (git's "racy" rule).
 */
static int pack_dir_check(void)
{
	struct stamp now_st;
	struct stat st;
	struct timespec now;
	struct dirent *de;
	const char *bad = NULL;
	mode_t bad_mode = 0;
	DIR *d;
	int fd;

	if (fstatat(cur.dfd, "objects/pack", &st, 0) < 0 || !S_ISDIR(st.st_mode))
		return 0; /* no packs: libgit2 finds none either */
	now_st = (struct stamp){ true, st.st_dev, st.st_ino, st.st_mtim, st.st_ctim };
	if (cur.pack.valid && cur.pack.dev == now_st.dev && cur.pack.ino == now_st.ino &&
	    cur.pack.mtim.tv_sec == now_st.mtim.tv_sec && cur.pack.mtim.tv_nsec == now_st.mtim.tv_nsec &&
	    cur.pack.ctim.tv_sec == now_st.ctim.tv_sec && cur.pack.ctim.tv_nsec == now_st.ctim.tv_nsec)
		return 0;
	fd = openat(cur.dfd, "objects/pack", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		log_warn("cannot list '%s/objects/pack': %s", cur.dir, strerror(e));
		return -EIO;
	}
	while (!bad && (de = readdir(d))) {
		struct stat est;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone since: libgit2 will not find it either */
		if (!S_ISREG(est.st_mode) && !S_ISDIR(est.st_mode)) {
			bad = de->d_name;
			bad_mode = est.st_mode;
		}
	}
	if (bad) {
		_cleanup_sb_ struct sb rel = SB_INIT;
		int r = sb_addf(&rel, "objects/pack/%s", bad);

		closedir(d);
		return r < 0 ? r : refuse_file(sb_str(&rel), bad_mode);
	}
	closedir(d);
	clock_gettime(CLOCK_REALTIME, &now);
	cur.pack = now_st;
	cur.pack.valid = now.tv_sec - st.st_mtim.tv_sec >= 2 && now.tv_sec - st.st_ctim.tv_sec >= 2;
	return 0;
}

/* Opens the repository at git_dir as cur (nothing open). Lock held. */
static int repo_open(const char *git_dir)
{
	_cleanup_sb_ struct sb objects = SB_INIT;
	git_odb_backend *loose = NULL, *pack = NULL;
	git_index *index = NULL;
	struct stat st;
	int r, rc;

	cur.dfd = open(git_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur.dfd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENODEV : -errno;
	if (fstatat(cur.dfd, "objects", &st, 0) < 0 || !S_ISDIR(st.st_mode))
		return -ENODEV; /* not a repository */
	if (!(cur.dir = strdup(git_dir)))
		return -ENOMEM;
	if ((r = pack_dir_check()) < 0)
		return r;
	if ((r = sb_addf(&objects, "%s/objects", git_dir)) < 0)
		return r;
	/* As git_odb_open() ranks them: packs (priority 2) before loose objects. */
	rc = git_odb_new(&cur.odb);
	if (rc == 0 && (rc = git_odb_backend_loose(&loose, sb_str(&objects), -1, 0, 0, 0)) == 0 &&
	    (rc = git_odb_add_backend(cur.odb, loose, 1)) < 0)
		loose->free(loose);
	if (rc == 0 && (rc = git_odb_backend_pack(&pack, sb_str(&objects))) == 0 &&
	    (rc = git_odb_add_backend(cur.odb, pack, 2)) < 0)
		pack->free(pack);
	if (rc == 0)
		rc = git_repository_wrap_odb(&cur.repo, cur.odb);
	/* An index of its own: libgit2 would otherwise read one by path for attributes. */
	if (rc == 0 && (rc = git_index_new(&index)) == 0) {
		rc = git_repository_set_index(cur.repo, index);
		git_index_free(index);
	}
	return rc < 0 ? shadow_errno(rc == GIT_ENOTFOUND ? -1 : rc, "open the shadow repository", git_dir) : 0;
}

int shadow_repo_get(const char *git_dir, git_repository **ret)
{
	int r;

	if (cur.repo && strcmp(cur.dir, git_dir) == 0) {
		if ((r = pack_dir_check()) < 0)
			return r;
		*ret = cur.repo;
		return 0;
	}
	cache_drop();
	r = repo_open(git_dir);
	if (r < 0) {
		cache_drop();
		return r;
	}
	*ret = cur.repo;
	return 0;
}

/* The object id's loose file, if any, is a regular file. Lock held. */
static int loose_check(const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1], rel[64];
	struct stat st;

	git_oid_tostr(hex, sizeof(hex), id);
	snprintf(rel, sizeof(rel), "objects/%.2s/%s", hex, hex + 2);
	if (fstatat(cur.dfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* packed, or missing: libgit2 says which */
	return S_ISREG(st.st_mode) ? 0 : refuse_file(rel, st.st_mode);
}

static const char *type_name(git_object_t t)
{
	return t == GIT_OBJECT_BLOB ? "file" : t == GIT_OBJECT_TREE ? "folder" : t == GIT_OBJECT_COMMIT ? "commit"
	     : t == GIT_OBJECT_TAG ? "tag" : "object";
}

int shadow_object_check(const git_oid *id, git_object_t want, const char *what, size_t *ret_size)
{
	char hex[GIT_OID_HEXSZ + 1];
	git_object_t type;
	size_t size;
	int r, rc;

	if ((r = loose_check(id)) < 0)
		return r;
	rc = git_odb_read_header(&size, &type, cur.odb, id);
	if (rc == GIT_ENOTFOUND)
		return -ENOENT;
	git_oid_tostr(hex, sizeof(hex), id);
	if (rc < 0) {
		const git_error *e = git_error_last();

		if (shadow_warn_first("corrupt", cur.dir, hex))
			log_warn("cannot read '%s' of the shadow repository '%s': the header of its object %s: %s", what,
				 cur.dir, hex, e && e->message ? e->message : "libgit2 error");
		return -EIO;
	}
	if (want != GIT_OBJECT_ANY && type != want) {
		if (shadow_warn_first("type", cur.dir, hex))
			log_warn("cannot read '%s' of the shadow repository '%s': its tree says it is a %s, but its "
				 "object %s is a %s (git fsck finds it too)", what, cur.dir, type_name(want), hex,
				 type_name(type));
		return -EIO;
	}
	*ret_size = size;
	return 0;
}

/* Object id checked as a want of at most max bytes (EFBIG over, logged once), then looked up. Lock held. */
static int object_get(const git_oid *id, git_object_t want, size_t max, const char *what, git_object **ret)
{
	char hex[GIT_OID_HEXSZ + 1];
	size_t size;
	int r, rc;

	if ((r = shadow_object_check(id, want, what, &size)) < 0)
		return r;
	if (size > max) {
		git_oid_tostr(hex, sizeof(hex), id);
		if (shadow_warn_first("big", cur.dir, hex))
			log_warn("cannot read the %s '%s' of the shadow repository '%s': its object %s is %zu bytes, "
				 "over the %zu a %s may have to be read whole", type_name(want), what, cur.dir, hex,
				 size, max, type_name(want));
		return -EFBIG;
	}
	rc = git_object_lookup(ret, cur.repo, id, want);
	if (rc == GIT_ENOTFOUND)
		return -ENOENT;
	if (rc < 0) {
		const git_error *e = git_error_last();

		git_oid_tostr(hex, sizeof(hex), id);
		if (shadow_warn_first("corrupt", cur.dir, hex))
			log_warn("cannot read the %s '%s' of the shadow repository '%s': its object %s: %s", type_name(want),
				 what, cur.dir, hex, e && e->message ? e->message : "libgit2 error");
		return rc == GIT_EAMBIGUOUS ? -EINVAL : -EIO;
	}
	return 0;
}

int shadow_tree_get(const git_oid *id, const char *what, git_tree **ret)
{
	return object_get(id, GIT_OBJECT_TREE, SHADOW_TREE_MAX, *what ? what : "/", (git_object **)ret);
}

/* -ENOENT for a commit the repo lacks, logged once a repo and hash. Lock held. */
static int commit_missing(const char *hash)
{
	if (shadow_warn_first("missing", cur.dir, hash))
		log_warn("checkpoint commit '%s' is not in the shadow repository '%s'; its snapshot shows "
			 "the conversation only", hash, cur.dir);
	return -ENOENT;
}

int shadow_commit_get(const char *hash, git_commit **ret)
{
	git_oid oid, full;
	size_t len = strlen(hash);
	int r, rc = 0;

	if (len > GIT_OID_HEXSZ || git_oid_fromstrn(&oid, hash, len) < 0)
		return -EINVAL;
	/* A prefix: its full id first (libgit2 lists objects/xx/, and reads no object). */
	if (len < GIT_OID_HEXSZ)
		rc = git_odb_exists_prefix(&full, cur.odb, &oid, len);
	else
		git_oid_cpy(&full, &oid);
	if (rc == GIT_ENOTFOUND)
		return commit_missing(hash);
	if (rc < 0)
		return shadow_errno(rc, "find checkpoint commit", hash);
	r = object_get(&full, GIT_OBJECT_COMMIT, SHADOW_COMMIT_MAX, hash, (git_object **)ret);
	return r == -ENOENT ? commit_missing(hash) : r;
}

/* A name a file can have: not empty, ".", "..", holding no '/', at most NAME_MAX bytes. */
static bool name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= NAME_MAX && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strchr(name, '/');
}

/* The root tree of commit hash, duplicated for the caller (git_tree_free()). Lock held. */
static int root_get(const char *hash, git_tree **ret)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	int r;

	if (!cur.tree || strcmp(cur.tree_hash, hash) != 0) {
		if ((r = shadow_commit_get(hash, &commit)) < 0)
			return r;
		r = shadow_tree_get(git_commit_tree_id(commit), "", &tree);
		git_commit_free(commit);
		if (r < 0)
			return r;
		git_tree_free(cur.tree);
		cur.tree = tree;
		snprintf(cur.tree_hash, sizeof(cur.tree_hash), "%s", hash);
	}
	return git_tree_dup(ret, cur.tree) < 0 ? -ENOMEM : 0;
}

/*
 * The tree entry at path ("" for the commit's root: *ret_entry NULL,
 * *ret_tree the root), walked a name at a time, each tree checked as it is
 * read; *ret_tree is the entry's folder. Lock held.
 */
static int entry_get(const char *git_dir, const char *hash, const char *path, git_tree **ret_tree,
		     git_tree_entry **ret_entry)
{
	git_repository *repo;
	git_tree *tree = NULL, *sub;
	const git_tree_entry *e = NULL;
	char name[NAME_MAX + 1], walked[1024];
	const char *p = path;
	int r, depth = 0;

	if ((r = shadow_repo_get(git_dir, &repo)) < 0 || (r = root_get(hash, &tree)) < 0)
		return r;
	*ret_entry = NULL;
	while (*p && r == 0) {
		size_t len = strcspn(p, "/");

		if (++depth > SHADOW_DEPTH_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		if (len > NAME_MAX) {
			r = -ENOENT;
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		e = name_ok(name) ? git_tree_entry_byname(tree, name) : NULL;
		p += len + (p[len] == '/');
		if (!e) {
			r = -ENOENT;
		} else if (!*p) {
			if (git_tree_entry_dup(ret_entry, e) < 0)
				r = -ENOMEM;
		} else if (git_tree_entry_type(e) != GIT_OBJECT_TREE) {
			r = -ENOTDIR;
		} else {
			snprintf(walked, sizeof(walked), "%.*s", (int)(p - 1 - path), path);
			if ((r = shadow_tree_get(git_tree_entry_id(e), walked, &sub)) == 0) {
				git_tree_free(tree);
				tree = sub;
			}
		}
	}
	if (r < 0) {
		git_tree_free(tree);
		return r;
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
	r = shadow_repo_get(git_dir, &repo);
	if (r == 0 && !(cur.tree && strcmp(cur.tree_hash, hash) == 0))
		r = shadow_commit_get(hash, &commit);
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
	if (r == 0 && (!e || git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)) {
		st->st_mode = S_IFDIR | 0500; /* the root, or a submodule: an empty folder, as git archive makes */
		st->st_nlink = 2;
	} else if (r == 0) {
		git_filemode_t m = git_tree_entry_filemode(e);
		bool dir = m == GIT_FILEMODE_TREE;
		size_t size = 0;

		/* Its header only: the size, and that it is what its mode says. */
		r = shadow_object_check(git_tree_entry_id(e), dir ? GIT_OBJECT_TREE : GIT_OBJECT_BLOB, path, &size);
		st->st_mode = dir ? S_IFDIR | 0500 : m == GIT_FILEMODE_LINK ? S_IFLNK | 0777
			    : m == GIT_FILEMODE_BLOB_EXECUTABLE ? S_IFREG | 0500 : S_IFREG | 0400;
		st->st_nlink = dir ? 2 : 1;
		st->st_size = dir ? 0 : (off_t)size;
	}
	git_tree_entry_free(e);
	git_tree_free(tree);
	pthread_mutex_unlock(&shadow_lock);
	st->st_ino = shadow_ino(hash, path);
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	return r;
}

struct listed {
	char *name;
	mode_t type;
};

/* The names of tree t that a file can have into v (n of them); one warning a tree for the others. Lock held. */
static int list_names(const git_tree *t, const char *hash, const char *path, struct listed *v, size_t *n)
{
	size_t count = git_tree_entrycount(t), bad = 0;
	const char *first_bad = NULL;
	char hex[GIT_OID_HEXSZ + 1];

	for (size_t i = 0; i < count; i++) {
		const git_tree_entry *c = git_tree_entry_byindex(t, i);
		git_filemode_t m = git_tree_entry_filemode(c);

		if (!name_ok(git_tree_entry_name(c))) {
			if (!bad++)
				first_bad = git_tree_entry_name(c);
			continue;
		}
		if (!(v[*n].name = strdup(git_tree_entry_name(c))))
			return -ENOMEM;
		v[(*n)++].type = m == GIT_FILEMODE_TREE || m == GIT_FILEMODE_COMMIT ? S_IFDIR
			       : m == GIT_FILEMODE_LINK ? S_IFLNK : S_IFREG;
	}
	git_oid_tostr(hex, sizeof(hex), git_tree_id(t));
	if (bad && shadow_warn_first("names", cur.dir, hex))
		log_warn("the folder '%s' of checkpoint %s of the shadow repository '%s' (tree %s) holds %zu "
			 "name(s) no file can have, such as '%.64s' (empty, '.', '..', with a '/' or over %d bytes): "
			 "not listed", *path ? path : "/", hash, cur.dir, hex, bad, first_bad, NAME_MAX);
	return 0;
}

int shadow_list(const char *git_dir, const char *hash, const char *path, op_list_fn fn, void *ctx)
{
	git_tree *parent = NULL, *sub = NULL;
	git_tree_entry *e = NULL;
	struct listed *v = NULL;
	size_t n = 0;
	int r;

	pthread_mutex_lock(&shadow_lock);
	r = entry_get(git_dir, hash, path, &parent, &e);
	if (r == 0 && e && git_tree_entry_filemode(e) != GIT_FILEMODE_COMMIT) { /* a submodule lists empty */
		if (git_tree_entry_filemode(e) != GIT_FILEMODE_TREE)
			r = -ENOTDIR;
		else
			r = shadow_tree_get(git_tree_entry_id(e), path, &sub);
	}
	if (r == 0) {
		const git_tree *t = e ? sub : parent;
		size_t count = t ? git_tree_entrycount(t) : 0;

		v = calloc(count ? count : 1, sizeof(*v));
		r = !v ? -ENOMEM : t ? list_names(t, hash, path, v, &n) : 0;
	}
	git_tree_free(sub);
	git_tree_entry_free(e);
	git_tree_free(parent);
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

/* EFBIG for the file path of commit hash, of size bytes: one line a file says how to get it. Lock held. */
static int too_big(const char *hash, const char *path, size_t size)
{
	_cleanup_sb_ struct sb spec = SB_INIT;
	_cleanup_sb_ struct sb how = SB_INIT;

	if (sb_addf(&spec, "%s:%s", hash, path) < 0)
		return -ENOMEM;
	if (!shadow_warn_first("read", cur.dir, sb_str(&spec)))
		return -EFBIG;
	if (sb_adds(&how, "git -C ") < 0 || shadow_sh_quote(&how, cur.dir) < 0 || sb_adds(&how, " show ") < 0 ||
	    shadow_sh_quote(&how, sb_str(&spec)) < 0)
		return -ENOMEM;
	log_warn("cannot read 'files/%s' of checkpoint %s: it is %zu bytes, over the %zu convfs reads of a "
		 "checkpoint's file; get it with: %s", path, hash, size, SHADOW_BLOB_MAX, sb_str(&how));
	return -EFBIG;
}

/* The blob at path, from the one-entry cache or the repository. Lock held. */
static int blob_get(const char *git_dir, const char *hash, const char *path, git_blob **ret)
{
	_cleanup_sb_ struct sb key = SB_INIT;
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	size_t size;
	int r;

	if ((r = sb_addf(&key, "%s\n%s\n%s", git_dir, hash, path)) < 0)
		return r;
	if (cur.blob && cur.blob_key && strcmp(cur.blob_key, key.buf) == 0 && cur.repo && strcmp(cur.dir, git_dir) == 0) {
		*ret = cur.blob;
		return 0;
	}
	r = entry_get(git_dir, hash, path, &tree, &e);
	if (r == 0 && (!e || git_tree_entry_filemode(e) == GIT_FILEMODE_TREE ||
		       git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT))
		r = -EISDIR;
	if (r == 0)
		r = shadow_object_check(git_tree_entry_id(e), GIT_OBJECT_BLOB, path, &size);
	if (r == 0 && size > SHADOW_BLOB_MAX)
		r = too_big(hash, path, size);
	if (r == 0) {
		shadow_blob_drop(); /* before the next one is inflated */
		if (git_blob_lookup(&cur.blob, cur.repo, git_tree_entry_id(e)) < 0) {
			cur.blob = NULL;
			r = shadow_errno(-1, "read", path);
		} else {
			cur.blob_key = sb_detach(&key, NULL);
			*ret = cur.blob;
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
	r = shadow_repo_get(git_dir, &repo);
	if (r == 0)
		r = shadow_commit_get(hash, &c);
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



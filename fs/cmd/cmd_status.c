/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_status.c: `convfs status [--json] [MOUNTPOINT]`, whether a folder is
 * mounted and what its store holds, without SQL.
 *
 * The mount table names the store of each mount (its source, mounts.c); the
 * store is opened read-only beside the daemon, which WAL mode allows
 * without blocking it (a reader never holds up a writer, and a read-only
 * connection never checkpoints); the daemons serving the store, this
 * mount's and any other's in any mount namespace, are registered beside it
 * (registry.c), each with the warnings since its mount in
 * <store>.mounts/<id>.warnings (warnings.c). Exit status: 0 mounted and
 * answering, 1 not mounted (or its daemon is gone, or does not answer), 2
 * wrong usage.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/mounts.h"
#include "fs/cmd/registry.h"
#include "fs/cmd/warnings.h"
#include "store/store_history.h"
#include "store/sync.h"
#include "store/store_search.h"
#include "store/util.h"

#define LAST_WARNINGS 5
/*
 * Seconds status waits for the daemon to answer. A daemon that serves
 * requests answers a statfs at once (it waits for nothing, whatever else is
 * under way), so one that has not by then is stuck, or stopped.
 */
#define ANSWER_SECS 5

/* What status found, for either output. */
struct status {
	const char *asked;       /* the folder asked about */
	struct fs_mount mount;   /* mountpoint NULL: not mounted */
	int alive_err;           /* 0 the daemon answers, else why not (errno) */
	bool readonly;           /* mounted read-only: a damaged store served with -o salvage (or -o ro) */
	int64_t store_size, wal_size; /* -1: no such file */
	int store_err;           /* 0, or why the store could not be read (errno) */
	struct store_summary sum;
	struct store_sync_status sync; /* enabled false: the store does not sync */
	struct store_search_state search;
	int warn_err;            /* 0, or why there are no warnings to show (errno) */
	struct warnings warn;
	struct sb warn_file;     /* where they are */
	struct registry_entry *daemons; /* every daemon serving the store */
	size_t ndaemons;
	int daemons_err;         /* 0, or why they are not known (errno) */
};

/* registry_list(): keeps a copy of each daemon. */
static int keep_daemon(void *ctx, const struct registry_entry *e)
{
	struct status *s = ctx;
	struct registry_entry *n = realloc(s->daemons, (s->ndaemons + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->daemons = n;
	n[s->ndaemons] = *e;
	n[s->ndaemons].mountpoint = e->mountpoint ? strdup(e->mountpoint) : NULL;
	n[s->ndaemons].mntns = e->mntns ? strdup(e->mntns) : NULL;
	s->ndaemons++;
	return 0;
}

static void daemons_release(struct status *s)
{
	for (size_t i = 0; i < s->ndaemons; i++) {
		free(s->daemons[i].mountpoint);
		free(s->daemons[i].mntns);
	}
	free(s->daemons);
}

/*
 * The file of the warnings of this mount's daemon: the one registered at
 * this mount point in this mount namespace (or, failing that, in any).
 */
static int warnings_file(struct status *s)
{
	char ns[64];
	ssize_t n = readlink("/proc/self/ns/mnt", ns, sizeof(ns) - 1);
	const struct registry_entry *found = NULL;

	ns[n > 0 ? n : 0] = '\0';
	for (size_t i = 0; i < s->ndaemons; i++) {
		const struct registry_entry *e = &s->daemons[i];

		if (!e->mountpoint || strcmp(e->mountpoint, s->mount.mountpoint) != 0)
			continue;
		if (!found || (e->mntns && strcmp(e->mntns, ns) == 0))
			found = e;
	}
	if (!found)
		return -ENOENT;
	return sb_addf(&s->warn_file, "%s%s/%s", s->mount.store, REGISTRY_SUFFIX, found->id);
}

static int64_t file_size(const char *path, const char *suffix)
{
	_cleanup_sb_ struct sb p = SB_INIT;
	struct stat st;

	if (sb_addf(&p, "%s%s", path, suffix) < 0 || stat(p.buf, &st) < 0)
		return -1;
	return st.st_size;
}

/*
 * Whether the daemon of the mount at mountpoint answers: 0, or why not (an
 * errno; ETIMEDOUT: no answer within ANSWER_SECS). statfs always asks the
 * daemon, where a stat may be answered from the kernel's cache. A child asks:
 * a daemon that never answers would keep the asker in the kernel for good,
 * and status must still say so and end. Such a child is killed and not
 * waited for (a request the daemon has not read goes with it).
 */
static int daemon_answers(const char *mountpoint)
{
	struct pollfd pfd;
	unsigned char b;
	int p[2], e, r;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		struct statvfs sv;

		close(p[0]);
		b = statvfs(mountpoint, &sv) < 0 ? (unsigned char)errno : 0;
		_exit(write(p[1], &b, 1) == 1 ? 0 : 1);
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	do
		r = poll(&pfd, 1, ANSWER_SECS * 1000);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		e = errno;
	else if (r == 0)
		e = ETIMEDOUT;
	else
		e = read(p[0], &b, 1) == 1 ? b : EIO;
	close(p[0]);
	if (e == ETIMEDOUT)
		kill(pid, SIGKILL);
	else
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return e;
}

static void status_gather(struct status *s)
{
	struct store *st = NULL;

	struct statvfs sv;

	s->alive_err = daemon_answers(s->mount.mountpoint);
	/* (It answered: the statvfs cannot hang.) */
	s->readonly = !s->alive_err && statvfs(s->mount.mountpoint, &sv) == 0 && (sv.f_flag & ST_RDONLY);
	s->store_size = s->wal_size = -1;
	if (!s->mount.store) {
		s->store_err = s->warn_err = ENOENT;
		return;
	}
	s->store_size = file_size(s->mount.store, "");
	s->wal_size = file_size(s->mount.store, "-wal");
	s->store_err = -store_open(s->mount.store, STORE_OPEN_READONLY, &st);
	if (s->store_err == 0) {
		s->store_err = -store_summary_get(st, &s->sum);
		if (s->store_err == 0 && store_sync_status_get(st, &s->sync) < 0)
			s->sync = (struct store_sync_status){ 0 };
		if (s->store_err == 0)
			s->store_err = -store_search_state(st, true, &s->search);
		store_free(st);
	}
	s->daemons_err = -registry_list(s->mount.store, keep_daemon, s);
	s->warn_err = -warnings_file(s);
	if (s->warn_err == 0)
		s->warn_err = -warnings_read(s->warn_file.buf, LAST_WARNINGS, &s->warn);
}

/* A time for JSON: ISO 8601, or null for 0 (never). */
static bool add_time(cJSON *o, const char *key, int64_t ns)
{
	char t[40];

	return ns ? cJSON_AddStringToObject(o, key, iso_time(ns, t, sizeof(t))) != NULL
		  : cJSON_AddNullToObject(o, key) != NULL;
}

/* "sync": what the store's sync last said, or null for a store that does not sync. 0 or -ENOMEM. */
static int sync_json(cJSON *o, const struct store_sync_status *y)
{
	cJSON *c;
	bool ok;

	if (!y->enabled)
		return cJSON_AddNullToObject(o, "sync") ? 0 : -ENOMEM;
	ok = (c = cJSON_AddObjectToObject(o, "sync")) && cJSON_AddStringToObject(c, "machine", y->machine) &&
	     cJSON_AddStringToObject(c, "name", y->name ? y->name : "") &&
	     cJSON_AddBoolToObject(c, "connected", y->connected) && add_time(c, "since", y->since_ns) &&
	     add_time(c, "last_push", y->last_push_ns) && add_time(c, "last_pull", y->last_pull_ns) &&
	     cJSON_AddNumberToObject(c, "waiting", (double)y->waiting) &&
	     cJSON_AddNumberToObject(c, "behind", (double)(y->head - y->pulled)) &&
	     cJSON_AddNumberToObject(c, "pulled", (double)y->pulled);
	if (ok)
		ok = y->error ? cJSON_AddStringToObject(c, "error", y->error) != NULL
			      : cJSON_AddNullToObject(c, "error") != NULL;
	return ok ? 0 : -ENOMEM;
}

/* The sync's lines of the text output. */
static void sync_text(const struct store_sync_status *y)
{
	char t[40], a[40], b[40];

	if (!y->enabled)
		return;
	if (y->connected)
		printf("sync:         connected to PostgreSQL since %s, as '%s'\n", iso_time(y->since_ns, t, sizeof(t)),
		       y->name ? y->name : y->machine);
	else if (y->since_ns)
		printf("sync:         not connected since %s%s%s%s\n", iso_time(y->since_ns, t, sizeof(t)),
		       y->error ? " (" : "", y->error ? y->error : "", y->error ? ")" : "");
	else
		printf("sync:         not connected yet\n");
	printf("              last push %s, last pull %s; %" PRId64 " commits waiting to be pushed, %" PRId64
	       " to be pulled\n",
	       y->last_push_ns ? iso_time(y->last_push_ns, a, sizeof(a)) : "none",
	       y->last_pull_ns ? iso_time(y->last_pull_ns, b, sizeof(b)) : "none", y->waiting, y->head - y->pulled);
}

static int print_json(const struct status *s)
{
	_cleanup_json_ cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *text = NULL;
	char t[40];
	cJSON *c;
	bool ok = o != NULL;

	ok = ok && cJSON_AddBoolToObject(o, "mounted", s->mount.mountpoint && !s->alive_err);
	ok = ok && cJSON_AddStringToObject(o, "mountpoint", s->mount.mountpoint ? s->mount.mountpoint : s->asked);
	ok = ok && cJSON_AddBoolToObject(o, "readonly", s->readonly);
	if (ok && s->mount.mountpoint && s->alive_err) {
		if (s->alive_err == ETIMEDOUT)
			snprintf(t, sizeof(t), "no answer in %d s", ANSWER_SECS);
		ok = cJSON_AddStringToObject(o, "error", s->alive_err == ETIMEDOUT ? t : strerror(s->alive_err));
	}
	if (ok && s->mount.mountpoint) {
		ok = s->mount.store ? cJSON_AddStringToObject(o, "store", s->mount.store) != NULL
				    : cJSON_AddNullToObject(o, "store") != NULL;
		ok = ok && cJSON_AddNumberToObject(o, "store_bytes", (double)s->store_size);
		ok = ok && cJSON_AddNumberToObject(o, "wal_bytes", s->wal_size < 0 ? 0 : (double)s->wal_size);
	}
	if (ok && s->mount.mountpoint && s->store_err == 0) {
		ok = cJSON_AddNumberToObject(o, "schema", s->sum.schema) && cJSON_AddNumberToObject(o, "tasks", (double)s->sum.tasks) &&
		     cJSON_AddNumberToObject(o, "sessions", (double)s->sum.sessions) &&
		     cJSON_AddNumberToObject(o, "trashed", (double)s->sum.trashed) &&
		     cJSON_AddNumberToObject(o, "files", (double)s->sum.docs) &&
		     cJSON_AddNumberToObject(o, "versions", (double)s->sum.revisions);
		if (ok && s->search.present)
			ok = (c = cJSON_AddObjectToObject(o, "search")) &&
			     cJSON_AddNumberToObject(c, "messages", (double)s->search.indexed) &&
			     cJSON_AddBoolToObject(c, "building", s->search.building) &&
			     cJSON_AddNumberToObject(c, "to_go", (double)s->search.to_go) &&
			     cJSON_AddNumberToObject(c, "pieces_to_go", (double)s->search.pieces_to_go);
		if (ok && s->sum.last_rev == 0) {
			ok = cJSON_AddNullToObject(o, "last_commit") != NULL;
		} else if (ok) {
			ok = (c = cJSON_AddObjectToObject(o, "last_commit")) &&
			     cJSON_AddNumberToObject(c, "revision", (double)s->sum.last_rev) &&
			     cJSON_AddStringToObject(c, "time", iso_time(s->sum.last_time_ns, t, sizeof(t))) &&
			     cJSON_AddStringToObject(c, "path", s->sum.last_path) &&
			     cJSON_AddStringToObject(c, "kind", s->sum.last_kind) &&
			     cmd_json_who(c, s->sum.last_pid, s->sum.last_comm) == 0;
		}
	} else if (ok && s->mount.mountpoint) {
		ok = cJSON_AddStringToObject(o, "store_error", strerror(s->store_err)) != NULL;
	}
	if (ok && s->mount.mountpoint && s->store_err == 0)
		ok = sync_json(o, &s->sync) == 0;
	if (ok && s->mount.mountpoint && s->mount.store && s->daemons_err == 0) {
		cJSON *a = cJSON_AddArrayToObject(o, "daemons");

		ok = a != NULL;
		for (size_t i = 0; ok && i < s->ndaemons; i++) {
			const struct registry_entry *e = &s->daemons[i];
			cJSON *d = cJSON_CreateObject();

			ok = d && cJSON_AddItemToArray(a, d) &&
			     (e->mountpoint ? cJSON_AddStringToObject(d, "mountpoint", e->mountpoint)
					    : cJSON_AddNullToObject(d, "mountpoint")) &&
			     (e->mntns ? cJSON_AddStringToObject(d, "mount_namespace", e->mntns)
				       : cJSON_AddNullToObject(d, "mount_namespace")) &&
			     cJSON_AddStringToObject(d, "since", iso_time(e->since_ns, t, sizeof(t)));
		}
	}
	if (ok && s->mount.mountpoint && s->warn_err == 0) {
		ok = (c = cJSON_AddObjectToObject(o, "warnings")) &&
		     cJSON_AddStringToObject(c, "since", iso_time(s->warn.since_ns, t, sizeof(t))) &&
		     cJSON_AddNumberToObject(c, "count", (double)s->warn.count);
		cJSON *a = ok ? cJSON_AddArrayToObject(c, "last") : NULL;

		ok = a != NULL;
		for (size_t i = 0; ok && i < s->warn.nlast; i++)
			ok = cJSON_AddItemToArray(a, cJSON_CreateString(s->warn.last[i]));
	} else if (ok && s->mount.mountpoint) {
		ok = cJSON_AddNullToObject(o, "warnings") != NULL;
	}
	if (!ok || !(text = cJSON_Print(o))) {
		fprintf(stderr, "convfs: status: cannot make its JSON: out of memory\n");
		return -ENOMEM;
	}
	printf("%s\n", text);
	return 0;
}

static void print_text(const struct status *s)
{
	char t[40], a[32], b[32];

	if (!s->mount.mountpoint) {
		printf("not mounted: '%s' is not a convfs mount\n", s->asked);
		return;
	}
	if (s->alive_err == ETIMEDOUT)
		printf("not answering: '%s' is mounted, but its daemon has not answered in %d s: it is stuck, or "
		       "stopped (kill -CONT); what goes through the mount waits. If it stays so, detach the mount "
		       "with fusermount3 -uz, kill the daemon and mount again: what it committed is kept\n",
		       s->mount.mountpoint, ANSWER_SECS);
	else if (s->alive_err)
		printf("not answering: '%s' is mounted, but its daemon is gone (%s); "
		       "unmount it with fusermount3 -u and mount again\n", s->mount.mountpoint, strerror(s->alive_err));
	else
		printf("mounted:      %s%s\n", s->mount.mountpoint,
		       s->readonly ? " (read-only: every write gets EROFS; -o salvage serves a damaged store so)" : "");
	if (!s->mount.store) {
		printf("store:        not named by the mount (mounted by an older convfs)\n");
		return;
	}
	printf("store:        %s (%s, WAL %s)\n", s->mount.store, cmd_size(s->store_size, a, sizeof(a)),
	       cmd_size(s->wal_size < 0 ? 0 : s->wal_size, b, sizeof(b)));
	if (s->store_err) {
		printf("              cannot read it: %s\n", strerror(s->store_err));
	} else {
		printf("holds:        %" PRId64 " tasks, %" PRId64 " sessions, %" PRId64 " in the trash; "
		       "%" PRId64 " conversation files, %" PRId64 " versions (schema %d)\n",
		       s->sum.tasks, s->sum.sessions, s->sum.trashed, s->sum.docs, s->sum.revisions, s->sum.schema);
		if (s->search.building && s->search.pieces_to_go > 0)
			printf("search:       %" PRId64 " messages indexed, %" PRId64 " to take in, about %" PRId64 " MiB "
			       "of them the text of large messages (being built behind the mount)\n",
			       s->search.indexed, s->search.to_go, s->search.pieces_to_go);
		else if (s->search.building)
			printf("search:       %" PRId64 " messages indexed, %" PRId64 " to take in (being built behind the "
			       "mount)\n", s->search.indexed, s->search.to_go);
		else if (s->search.present)
			printf("search:       %" PRId64 " messages indexed\n", s->search.indexed);
		if (s->sum.last_rev == 0)
			printf("last commit:  none\n");
		else
			printf("last commit:  %s %s '%s' by %s\n", iso_time(s->sum.last_time_ns, t, sizeof(t)),
			       s->sum.last_kind, s->sum.last_path, cmd_who(s->sum.last_pid, s->sum.last_comm, a, sizeof(a)));
		sync_text(&s->sync);
	}
	if (s->daemons_err) {
		printf("served by:    not known (%s%s: %s)\n", s->mount.store, REGISTRY_SUFFIX, strerror(s->daemons_err));
	} else {
		printf("served by:    %zu daemon%s\n", s->ndaemons, s->ndaemons == 1 ? "" : "s");
		for (size_t i = 0; i < s->ndaemons; i++)
			printf("  %s (%s) since %s\n", s->daemons[i].mountpoint ? s->daemons[i].mountpoint : "?",
			       s->daemons[i].mntns ? s->daemons[i].mntns : "?",
			       iso_time(s->daemons[i].since_ns, t, sizeof(t)));
	}
	if (s->warn_err) {
		printf("warnings:     not known (%s: %s)\n", s->warn_file.len ? s->warn_file.buf : "no daemon registered here",
		       strerror(s->warn_err));
		return;
	}
	printf("warnings:     %" PRIu64 " since %s\n", s->warn.count, iso_time(s->warn.since_ns, t, sizeof(t)));
	for (size_t i = 0; i < s->warn.nlast; i++)
		printf("  %s\n", s->warn.last[i]);
}

int cmd_status(int argc, char **argv)
{
	_cleanup_free_ char *abs = NULL;
	struct status s = { 0 };
	const char *arg = NULL;
	bool json = false;
	int r;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: convfs status [--json] [MOUNTPOINT]\n");
			return 0;
		} else if (!arg && argv[i][0] != '-') {
			arg = argv[i];
		} else {
			fprintf(stderr, "usage: convfs status [--json] [MOUNTPOINT]\n");
			return 2;
		}
	}
	abs = fs_abs_path(arg ? arg : ".");
	if (!abs) {
		fprintf(stderr, "convfs: status: cannot tell where '%s' is: %s\n", arg ? arg : ".", strerror(errno));
		return 1;
	}
	s.asked = abs;
	r = fs_mount_find(abs, true, &s.mount);
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "convfs: status: cannot read the mount table: %s\n", strerror(-r));
		return 1;
	}
	if (r == -ENOENT && !arg) {
		fprintf(stderr, "convfs: status: the current folder is not on a convfs mount; "
				"give the mount point: convfs status MOUNTPOINT\n");
		return 2;
	}
	if (r == 0)
		status_gather(&s);
	r = json ? print_json(&s) : (print_text(&s), 0);
	if (r == 0)
		r = s.mount.mountpoint && !s.alive_err ? 0 : 1;
	else
		r = 1;
	store_summary_release(&s.sum);
	store_sync_status_release(&s.sync);
	warnings_release(&s.warn);
	sb_release(&s.warn_file);
	daemons_release(&s);
	fs_mount_release(&s.mount);
	return r;
}

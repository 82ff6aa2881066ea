/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_search.c: `convfs search [OPTIONS] QUERY [MOUNTPOINT]`, the messages
 * of every conversation that match a query, best first.
 *
 * The store is the one the mount names (mounts.c: MOUNTPOINT, or the mount
 * the current folder is on), read read-only beside the daemon, as status
 * reads it: in WAL mode a reader never holds up the daemon's commits, nor
 * they it, and the daemon keeps the index current in each commit's
 * transaction, so there is nothing to ask the daemon. `--store S` reads a
 * store that is not mounted (read-only too). The store does the searching
 * (store_search.h); this file reads the command line (the query's syntax is
 * checked before the store is opened: a bad one is one line and exit 2),
 * and prints each hit: its time, workspace, task, the task's title, the
 * snippet with the matches marked (in colour on a terminal, [like this]
 * otherwise) and FILE:LINE, the message's line in the workspaces view,
 * which `sed -n LINEp FILE` or an editor opens.
 *
 * Nothing printed comes from a message unfiltered: a snippet's text has no
 * control characters (the index's text has none), and a title, a path or a
 * workspace's name get theirs made '?', so that no message can move the
 * cursor or change the colours of the terminal it is shown on.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/mounts.h"
#include "fs/view/view.h"
#include "fs/view/view_search.h"
#include "store/store_search.h"
#include "store/store_view.h"
#include "store/util.h"

#define TITLE_CHARS 40

static const char usage_text[] =
	"usage: convfs search [OPTIONS] QUERY [MOUNTPOINT]\n"
	"\n"
	"Finds the messages of every conversation (both streams of every task and CLI\n"
	"3.x session, in every workspace) that match QUERY, the best first, one a line:\n"
	"its time, workspace, task, the task's title, the text around the match, and\n"
	"FILE:LINE, where it is in the workspaces view (sed -n LINEp FILE shows it).\n"
	"\n"
	"QUERY is one argument (quote it): words that must all be there, \"a phrase\",\n"
	"prefix* (the start of a word), OR between two words (either will do), -word\n"
	"(must not be there). Case and accents do not matter; identifiers are found\n"
	"whole and by their parts: snake_case, camelCase, path/to/file.ts, ERR_CODE.\n"
	"\n"
	"MOUNTPOINT is the convfs mount to search (default: the one the current folder\n"
	"is on); its store is read beside the daemon, which it never holds up.\n"
	"\n"
	"options:\n"
	"  --workspace W  only the tasks of workspace W: its folder in workspaces/, its\n"
	"                 path, its name or its key (unknown: tasks of no known workspace)\n"
	"  --since T      only messages from T on, --until T only before T: an ISO 8601\n"
	"  --until T      date or time (2025-03-01, 2025-03-01T14:30, with Z or +02:00;\n"
	"                 local time without), or an age: 30m, 12h, 7d, 2w\n"
	"  --role R       user or assistant\n"
	"  --stream S     api (what the model saw) or ui (what the user saw)\n"
	"  --limit N      the best N hits only (default: every hit)\n"
	"  --json         one JSON object a line, with task, workspace, title, time, path,\n"
	"                 line, snippet, role, stream, score\n"
	"  --store S      search the store S instead (not mounted; paths are then from\n"
	"                 the root of a mount of it)\n"
	"  -h, --help     this help\n"
	"\n"
	"Exit status: 0 something found, 1 nothing found, 2 a wrong command line or\n"
	"query, or no store to read.\n";

struct search_cmd {
	struct store_search_query q;
	const char *query, *mountpoint_arg, *store_arg, *workspace, *since, *until;
	bool json, colour;
	struct fs_mount mount;
	struct store *st;   /* the store read, while it is */
	const char *prefix; /* before a view path: the mount point and "/", or "" */
	char ws_key[16];
};

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("convfs: search: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (convfs search --help)\n", stderr);
	return 2;
}

/* ---- times --------------------------------------------------------------------------------- */

/* n digits at s as a number (all digits), else -1. */
static long digits(const char *s, int n)
{
	long v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* An age: 30m, 12h, 7d, 2w, before now_ms. 0, or -EINVAL if s is not one. */
static int parse_age(const char *s, int64_t now_ms, int64_t *ret)
{
	char *end;
	long long n;
	int64_t unit;

	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || end[0] == '\0' || end[1] != '\0' || n > 1000000)
		return -EINVAL;
	unit = end[0] == 'm' ? 60000 : end[0] == 'h' ? 3600000 : end[0] == 'd' ? 86400000 : end[0] == 'w' ? 604800000 : 0;
	if (!unit)
		return -EINVAL;
	*ret = now_ms - n * unit;
	return 0;
}

/*
 * An ISO 8601 date or time: YYYY-MM-DD, then optionally T (or a space)
 * HH:MM[:SS[.fff]], then optionally Z or +HH:MM / -HH:MM (+HHMM, +HH);
 * without a zone it is local time. 0, or -EINVAL.
 */
static int parse_iso(const char *s, int64_t *ret)
{
	struct tm tm = { 0 };
	long y = digits(s, 4), mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0;
	const char *p = s + 10;
	bool zone = false;
	time_t t;

	if (strlen(s) < 10 || y < 0 || s[4] != '-' || s[7] != '-' || (mo = digits(s + 5, 2)) < 1 || mo > 12 ||
	    (d = digits(s + 8, 2)) < 1 || d > 31)
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		if ((h = digits(p + 1, 2)) < 0 || h > 23 || p[3] != ':' || (mi = digits(p + 4, 2)) < 0 || mi > 59)
			return -EINVAL;
		p += 6;
		if (*p == ':') {
			if ((sec = digits(p + 1, 2)) < 0 || sec > 60)
				return -EINVAL;
			p += 3;
			if (*p == '.' || *p == ',') {
				int k = 0;

				for (p++; *p >= '0' && *p <= '9'; p++, k++)
					if (k < 3)
						ms = ms * 10 + (*p - '0');
				if (k == 0)
					return -EINVAL;
				for (; k < 3; k++)
					ms *= 10;
			}
		}
	}
	if (*p == 'Z' || *p == 'z') {
		zone = true;
		p++;
	} else if (*p == '+' || *p == '-') {
		long oh = digits(p + 1, 2), om = 0;
		int sign = *p == '-' ? -1 : 1;

		if (oh < 0 || oh > 23)
			return -EINVAL;
		p += 3;
		if (*p == ':')
			p++;
		if (*p && ((om = digits(p, 2)) < 0 || om > 59))
			return -EINVAL;
		if (*p)
			p += 2;
		off = sign * (oh * 3600 + om * 60);
		zone = true;
	}
	if (*p)
		return -EINVAL;
	tm.tm_year = (int)y - 1900;
	tm.tm_mon = (int)mo - 1;
	tm.tm_mday = (int)d;
	tm.tm_hour = (int)h;
	tm.tm_min = (int)mi;
	tm.tm_sec = (int)sec;
	tm.tm_isdst = -1;
	t = zone ? timegm(&tm) - off : mktime(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ret = (int64_t)t * 1000 + ms;
	return 0;
}

static int parse_when(const char *opt, const char *s, int64_t *ret)
{
	if (parse_age(s, now_ns() / 1000000, ret) == 0 || parse_iso(s, ret) == 0)
		return 0;
	return usage_error("%s '%s' is neither an ISO 8601 date or time (2025-03-01, 2025-03-01T14:30Z) "
			   "nor an age (30m, 12h, 7d, 2w)", opt, s);
}

/* ---- the command line ----------------------------------------------------------------------- */

/* 1 if arg is a, 2 if b; else says so and -1. */
static int one_of(const char *opt, const char *arg, const char *a, const char *b)
{
	if (strcmp(arg, a) == 0 || strcmp(arg, b) == 0)
		return strcmp(arg, a) == 0 ? 1 : 2;
	usage_error("%s is %s or %s, not '%s'", opt, a, b, arg);
	return -1;
}

static int parse_args(int argc, char **argv, struct search_cmd *c)
{
	enum { O_WORKSPACE = 256, O_SINCE, O_UNTIL, O_ROLE, O_STREAM, O_LIMIT, O_JSON, O_STORE };
	static const struct option options[] = {
		{ "workspace", required_argument, NULL, O_WORKSPACE },
		{ "since", required_argument, NULL, O_SINCE },
		{ "until", required_argument, NULL, O_UNTIL },
		{ "role", required_argument, NULL, O_ROLE },
		{ "stream", required_argument, NULL, O_STREAM },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "json", no_argument, NULL, O_JSON },
		{ "store", required_argument, NULL, O_STORE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, r;

	opterr = 0;
	optind = 1;
	/* argv + 1: the command's own name is argv[1]; options may come after the query too ("--" ends them) */
	while ((opt = getopt_long(argc - 1, argv + 1, ":h", options, NULL)) != -1) {
		const char *arg = argv[optind]; /* (argv + 1)[optind - 1]: the one just read */
		char *end;

		switch (opt) {
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		case O_WORKSPACE: c->workspace = optarg; break;
		case O_SINCE: c->since = optarg; break;
		case O_UNTIL: c->until = optarg; break;
		case O_JSON: c->json = true; break;
		case O_STORE: c->store_arg = optarg; break;
		case O_ROLE:
			if ((r = one_of("--role", optarg, "user", "assistant")) < 0)
				return 2;
			c->q.role = r == 1 ? STORE_SEARCH_USER : STORE_SEARCH_ASSISTANT;
			break;
		case O_STREAM:
			if ((r = one_of("--stream", optarg, "api", "ui")) < 0)
				return 2;
			c->q.stream = r == 1 ? STORE_SEARCH_API : STORE_SEARCH_UI;
			break;
		case O_LIMIT:
			errno = 0;
			c->q.limit = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || c->q.limit < 1)
				return usage_error("--limit takes a number of hits (1 or more), not '%s'", optarg);
			break;
		case ':':
			return usage_error("'%s' needs a value", arg);
		default:
			return usage_error("unknown option '%s'", arg);
		}
	}
	optind++; /* argv + 1 above */
	if (optind >= argc)
		return usage_error("no query given");
	c->query = argv[optind++];
	if (optind < argc)
		c->mountpoint_arg = argv[optind++];
	if (optind < argc)
		return usage_error("too many arguments: a query of several words is one argument: "
				   "convfs search 'race condition'");
	if (c->store_arg && c->mountpoint_arg)
		return usage_error("give a mount point or --store, not both");
	return 0;
}

/* The store to read: --store's, or the one the mount names. 0, or an exit status. */
static int find_store(struct search_cmd *c, const char **ret_store)
{
	_cleanup_free_ char *abs = NULL;
	int r;

	c->prefix = "";
	if (c->store_arg) {
		*ret_store = c->store_arg;
		return 0;
	}
	abs = fs_abs_path(c->mountpoint_arg ? c->mountpoint_arg : ".");
	if (!abs) {
		fprintf(stderr, "convfs: search: cannot tell where '%s' is: %s\n",
			c->mountpoint_arg ? c->mountpoint_arg : ".", strerror(errno));
		return 2;
	}
	r = fs_mount_find(abs, !c->mountpoint_arg, &c->mount);
	if (r == -ENOENT && c->mountpoint_arg)
		return usage_error("'%s' is not a convfs mount (a query of several words is one argument: "
				   "convfs search 'race condition')", c->mountpoint_arg);
	if (r == -ENOENT)
		return usage_error("the current folder is not on a convfs mount; give the mount point: "
				   "convfs search QUERY MOUNTPOINT, or a store: --store S");
	if (r < 0) {
		fprintf(stderr, "convfs: search: cannot read the mount table: %s\n", strerror(-r));
		return 2;
	}
	if (!c->mount.store) {
		fprintf(stderr, "convfs: search: the mount '%s' does not name its store (mounted by an older convfs); "
				"give it: --store S\n", c->mount.mountpoint);
		return 2;
	}
	*ret_store = c->mount.store;
	return 0;
}

/* ---- the workspace ---------------------------------------------------------------------------- */

struct ws_match {
	const char *want;
	char key[16];
	int n;
};

/* A workspace whose folder in the view, path, or path's last component is the one asked for. */
static int ws_match(void *ctx, const struct store_workspace *ws)
{
	struct ws_match *m = ctx;
	const char *base = strrchr(ws->path, '/');
	char folder[160];

	base = base && base[1] ? base + 1 : ws->path;
	view_ws_folder(ws->path, ws->key, folder, sizeof(folder));
	if (strcmp(m->want, ws->path) == 0 || strcmp(m->want, base) == 0 || strcmp(m->want, folder) == 0) {
		snprintf(m->key, sizeof(m->key), "%s", ws->key);
		m->n++;
	}
	return 0;
}

/* --workspace W as a key (q.ws_key). 0, or an exit status. */
static int find_workspace(struct search_cmd *c, struct store *st)
{
	struct ws_match m = { .want = c->workspace };
	size_t len = strlen(c->workspace);
	int r;

	if (strcmp(c->workspace, "unknown") == 0) {
		c->q.ws_key = "";
		return 0;
	}
	if (len > 0 && strspn(c->workspace, "0123456789") == len) {
		snprintf(m.key, sizeof(m.key), "%s", c->workspace);
		m.n = 1;
	} else {
		r = store_workspace_list(st, ws_match, &m);
		if (r < 0) {
			fprintf(stderr, "convfs: search: cannot list the workspaces: %s\n", strerror(-r));
			return 2;
		}
		if (m.n == 0 && c->workspace[0] == '/') {
			/* a workspace all of whose tasks are in the trash is not listed: its key, then */
			snprintf(m.key, sizeof(m.key), "%" PRIu32, store_workspace_key(c->workspace));
			m.n = 1;
		}
	}
	if (m.n > 1)
		return usage_error("'%s' names %d workspaces: give its folder in workspaces/ instead", c->workspace, m.n);
	if (m.n == 0)
		return usage_error("no workspace '%s' (give its folder in workspaces/, its path, name or key)",
				   c->workspace);
	memcpy(c->ws_key, m.key, sizeof(c->ws_key));
	c->q.ws_key = c->ws_key;
	return 0;
}

/* ---- a hit ------------------------------------------------------------------------------------ */

static int print_json(struct search_cmd *c, const struct store_search_hit *h)
{
	_cleanup_free_ char *text = NULL;
	int r = view_search_json(c->st, h, c->prefix, &text);

	if (r < 0)
		return r;
	return printf("%s\n", text) < 0 ? -EIO : 0;
}

static int print_text(struct search_cmd *c, const struct store_search_hit *h, const char *path, const char *folder)
{
	_cleanup_sb_ struct sb line = SB_INIT;
	char when[32];
	time_t t = (time_t)(h->time_ms / 1000);
	struct tm tm;
	int r;

	if (!localtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm) == 0)
		snprintf(when, sizeof(when), "?");
	r = sb_addf(&line, "%s  ", when);
	if (r == 0 && (r = view_search_clean(&line, folder, "", "", 0)) == 0 && (r = sb_addf(&line, "  %s  ", h->task)) == 0 &&
	    (r = view_search_clean(&line, *h->title ? h->title : "(no title)", "", "", TITLE_CHARS)) == 0 &&
	    (r = sb_adds(&line, "  ")) == 0 &&
	    (r = view_search_clean(&line, h->snippet, c->colour ? "\033[1;31m" : "[", c->colour ? "\033[0m" : "]", 0)) == 0 &&
	    (r = sb_adds(&line, "  ")) == 0 && (r = view_search_clean(&line, c->prefix, "", "", 0)) == 0 &&
	    (r = view_search_clean(&line, path, "", "", 0)) == 0)
		r = sb_addf(&line, ":%" PRId64 "\n", h->seq + 1);
	if (r < 0)
		return r;
	return fputs(line.buf, stdout) < 0 ? -EIO : 0;
}

static int one_hit(void *ctx, const struct store_search_hit *h)
{
	struct search_cmd *c = ctx;
	char path[PATH_MAX], folder[160];

	if (c->json)
		return print_json(c, h);
	view_search_where(c->st, h, path, sizeof(path), folder, sizeof(folder));
	return print_text(c, h, path, folder);
}

/* ---- the command -------------------------------------------------------------------------------- */

/* Says on stderr that the index is still being built, if it is (what it has not taken in is not found). */
static void note_build(struct store *st)
{
	struct store_search_state s;

	if (store_search_state(st, false, &s) == 0 && s.building && s.to_go > 0)
		fprintf(stderr, "convfs: search: note: the index is being built behind the mount: %lld messages are not "
				"in it yet (or not all of their text), and are not found\n", (long long)s.to_go);
}

static int run(struct search_cmd *c, const char *store_path)
{
	_cleanup_free_ char *prefix = NULL;
	struct store *st = NULL;
	int r;

	r = store_open(store_path, STORE_OPEN_READONLY, &st);
	if (r < 0) {
		fprintf(stderr, "convfs: search: cannot read the store '%s': %s%s\n", store_path, strerror(-r),
			r == -EROFS ? " (it needs the upgrade the next mount makes)" : "");
		return 2;
	}
	if (c->workspace && (r = find_workspace(c, st)) != 0)
		goto out;
	if (c->mount.mountpoint) {
		if (asprintf(&prefix, "%s%s", c->mount.mountpoint, strcmp(c->mount.mountpoint, "/") ? "/" : "") < 0) {
			prefix = NULL;
			r = 2;
			goto out;
		}
		c->prefix = prefix;
	}
	note_build(st);
	c->st = st;
	r = store_search(st, &c->q, one_hit, c);
	c->st = NULL;
	if (fflush(stdout) != 0 && r >= 0)
		r = -EIO;
	if (r == -ENOTSUP)
		fprintf(stderr, "convfs: search: the store '%s' has no search index (it needs the upgrade the next "
				"mount makes)\n", store_path);
	else if (r < 0)
		fprintf(stderr, "convfs: search: cannot search the store '%s': %s\n", store_path, strerror(-r));
	r = r < 0 ? 2 : r > 0 ? 0 : 1;
out:
	store_free(st);
	c->prefix = "";
	return r;
}

int cmd_search(int argc, char **argv)
{
	struct search_cmd c = { .q = { .mark_open = VIEW_SEARCH_MARK_OPEN, .mark_close = VIEW_SEARCH_MARK_CLOSE } };
	const char *store_path = NULL;
	char err[200];
	int r;

	r = parse_args(argc, argv, &c);
	if (r != 0)
		return r == 1 ? 0 : r;
	r = store_search_query_check(c.query, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "convfs: search: %s\n", r == -EINVAL ? err : strerror(-r));
		return 2;
	}
	c.q.text = c.query;
	if ((c.since && parse_when("--since", c.since, &c.q.since_ms) != 0) ||
	    (c.until && parse_when("--until", c.until, &c.q.until_ms) != 0))
		return 2;
	c.colour = !c.json && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	r = find_store(&c, &store_path);
	if (r == 0)
		r = run(&c, store_path);
	fs_mount_release(&c.mount);
	return r;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_pg.c: the shared log in PostgreSQL, through libpq (struct
 * sync_log_ops). One database per person (docs/SYNC.md says why); in it,
 * schema convfs:
 *
 *   log       one row per entry: seq (the log's order), machine, rev (its
 *             revision there; unique with machine, so that a push made twice
 *             is one), task (the task it belongs to, or a keyed tag of it),
 *             nparts, data (the entry's first part)
 *   parts     the further parts of an entry larger than SYNC_PART
 *   head      one row: the last entry's seq. A push locks it (FOR UPDATE),
 *             checks that the pusher has every entry up to it, appends,
 *             moves it on and notifies (NOTIFY convfs_log) in one
 *             transaction: pushes are serialised, so the entries' order is
 *             the order their commits became visible, and nobody misses one
 *   machines  each machine's name, when it was last seen, what it has pulled
 *   meta      the log's format, and whether it is sealed with a key (and a
 *             check that the key a machine gives is the log's)
 *
 * With a key each part is sealed (sync_crypt.c) before it leaves, and
 * opened when it comes back. Every call that fails because the connection
 * did returns -ENOTCONN (the sync makes it again); the reason is kept for
 * `convfs status`.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pq_load.h"
#include "store/sync_internal.h"
#include "store/sync_pg.h"
#include "store/util.h"

/* An entry is stored in parts of at most this many bytes (each sealed on its own). */
#define SYNC_PART ((size_t)1 << 20)
#define SYNC_LOG_FORMAT "1"
#define KEY_CHECK_TEXT "convfs sync key check"
/* The task column of a forget's entry (until every machine has it: then SYNC_PG_FORGOT, its text gone). */
#define SYNC_PG_FORGET "*forget"
#define SYNC_PG_FORGOT "*forgot"

static const char *const schema_sql =
	"SELECT pg_advisory_xact_lock(7368127364017);"
	"CREATE SCHEMA IF NOT EXISTS convfs;"
	"CREATE TABLE IF NOT EXISTS convfs.log ("
	"  seq bigint PRIMARY KEY,"
	"  machine uuid NOT NULL,"
	"  rev bigint NOT NULL,"
	"  task text,"
	"  nparts integer NOT NULL,"
	"  data bytea NOT NULL,"
	"  UNIQUE (machine, rev));"
	"CREATE INDEX IF NOT EXISTS log_task ON convfs.log (task) WHERE task IS NOT NULL;"
	"CREATE TABLE IF NOT EXISTS convfs.parts ("
	"  seq bigint NOT NULL REFERENCES convfs.log(seq) ON DELETE CASCADE,"
	"  part integer NOT NULL,"
	"  data bytea NOT NULL,"
	"  PRIMARY KEY (seq, part));"
	"CREATE TABLE IF NOT EXISTS convfs.head (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);"
	"INSERT INTO convfs.head VALUES (1, 0) ON CONFLICT DO NOTHING;"
	"CREATE TABLE IF NOT EXISTS convfs.machines ("
	"  machine uuid PRIMARY KEY, name text NOT NULL, first_ns bigint NOT NULL, last_ns bigint NOT NULL,"
	"  pulled bigint NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS convfs.meta (key text PRIMARY KEY, value text NOT NULL);";

struct sync_pg {
	char *conninfo;
	unsigned char key[SYNC_KEY_SIZE];
	bool sealed;
	char machine[40];
	char *name;
	PGconn *conn;
	char error[256]; /* why the last call failed, one line */
	char log_id[40]; /* the log's id, read at connection */
};

int sync_pg_new(const char *conninfo, const unsigned char *key, const char *machine, const char *name,
		struct sync_pg **ret)
{
	struct sync_pg *pg;
	int r = pq_load();

	if (r < 0)
		return r;
	pg = calloc(1, sizeof(*pg));
	if (!pg || !(pg->conninfo = strdup(conninfo)) || !(pg->name = strdup(name))) {
		sync_pg_free(pg);
		return -ENOMEM;
	}
	if (key) {
		memcpy(pg->key, key, SYNC_KEY_SIZE);
		pg->sealed = true;
	}
	snprintf(pg->machine, sizeof(pg->machine), "%s", machine);
	*ret = pg;
	return 0;
}

static void pg_disconnect(void *log)
{
	struct sync_pg *pg = log;

	if (pg->conn)
		PQfinish(pg->conn);
	pg->conn = NULL;
}

void sync_pg_free(struct sync_pg *pg)
{
	if (!pg)
		return;
	pg_disconnect(pg);
	free(pg->conninfo);
	free(pg->name);
	explicit_bzero(pg->key, sizeof(pg->key));
	free(pg);
}

const char *sync_pg_error(const struct sync_pg *pg)
{
	return pg->error;
}

/* Keeps msg's first line as the reason; -ENOTCONN if the connection is gone, else err. */
static int pg_fail(struct sync_pg *pg, const char *what, const char *msg, int err)
{
	size_t n;

	if ((!msg || !*msg) && pg->conn)
		msg = PQerrorMessage(pg->conn);
	snprintf(pg->error, sizeof(pg->error), "%s: %s", what, msg && *msg ? msg : "no reason given");
	n = strcspn(pg->error, "\n");
	pg->error[n] = '\0';
	if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK)
		return -ENOTCONN;
	return err;
}

/* Runs sql (no parameters); 0 or what pg_fail() says. */
static int pg_exec(struct sync_pg *pg, const char *sql, const char *what)
{
	PGresult *res = PQexec(pg->conn, sql);
	ExecStatusType s = PQresultStatus(res);
	int r = 0;

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		r = pg_fail(pg, what, PQresultErrorMessage(res), -EIO);
	PQclear(res);
	return r;
}

/* Runs sql with text parameters; *ret (may be NULL) gets the result, the caller clears it. */
static int pg_params(struct sync_pg *pg, const char *sql, int n, const char *const *values, const int *lengths,
		     const int *formats, int result_format, const char *what, PGresult **ret)
{
	PGresult *res = PQexecParams(pg->conn, sql, n, NULL, values, lengths, formats, result_format);
	ExecStatusType s = PQresultStatus(res);
	int r;

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		r = pg_fail(pg, what, PQresultErrorMessage(res), state && strcmp(state, "23505") == 0 ? -EEXIST : -EIO);
		PQclear(res);
		return r;
	}
	if (ret)
		*ret = res;
	else
		PQclear(res);
	return 0;
}

/* The log's key check: its sealing state made by the first machine, checked against this one's key. */
static int pg_key_check(struct sync_pg *pg)
{
	unsigned char sealed[sizeof(KEY_CHECK_TEXT) - 1 + SYNC_SEAL_EXTRA];
	unsigned char opened[sizeof(KEY_CHECK_TEXT)];
	char hex[2 * sizeof(sealed) + 1];
	const char *v[2];
	PGresult *res = NULL;
	const char *is_sealed, *check;
	size_t n;
	int r;

	hex[0] = '\0';
	if (pg->sealed) {
		if ((r = sync_seal(pg->key, KEY_CHECK_TEXT, sizeof(KEY_CHECK_TEXT) - 1, "key", 3, sealed)) < 0)
			return r;
		for (size_t i = 0; i < sizeof(sealed); i++)
			snprintf(hex + 2 * i, 3, "%02x", sealed[i]);
	}
	v[0] = pg->sealed ? "1" : "0";
	v[1] = hex;
	r = pg_params(pg, "INSERT INTO convfs.meta VALUES ('format', '" SYNC_LOG_FORMAT "'), ('sealed', $1), "
			  "('key_check', $2), ('log_id', gen_random_uuid()::text) ON CONFLICT DO NOTHING",
		      2, v, NULL, NULL, 0, "cannot set up the log", NULL);
	if (r == 0)
		r = pg_params(pg, "SELECT (SELECT value FROM convfs.meta WHERE key = 'format'), "
				  "(SELECT value FROM convfs.meta WHERE key = 'sealed'), "
				  "(SELECT value FROM convfs.meta WHERE key = 'key_check'), "
				  "(SELECT value FROM convfs.meta WHERE key = 'log_id')",
			      0, NULL, NULL, NULL, 0, "cannot read the log's settings", &res);
	if (r < 0)
		return r;
	snprintf(pg->log_id, sizeof(pg->log_id), "%s", PQgetvalue(res, 0, 3));
	r = 0;
	if (strcmp(PQgetvalue(res, 0, 0), SYNC_LOG_FORMAT) != 0) {
		log_err("sync: the log in PostgreSQL is of format %s, which this convfs does not know (%s): upgrade convfs",
			PQgetvalue(res, 0, 0), SYNC_LOG_FORMAT);
		r = -EPROTO;
	}
	is_sealed = PQgetvalue(res, 0, 1);
	check = PQgetvalue(res, 0, 2);
	if (r == 0 && strcmp(is_sealed, "1") == 0 && !pg->sealed) {
		log_err("sync: the log in PostgreSQL is sealed with a key: give it with -o sync_key=FILE");
		r = -EPROTO;
	} else if (r == 0 && strcmp(is_sealed, "1") != 0 && pg->sealed) {
		log_err("sync: -o sync_key was given, but the log in PostgreSQL is not sealed: a key is set by the first "
			"machine to use a log (start a new database, or leave the key out)");
		r = -EPROTO;
	} else if (r == 0 && pg->sealed) {
		n = strlen(check) / 2;
		if (n != sizeof(sealed))
			r = -EBADMSG;
		for (size_t i = 0; r == 0 && i < n; i++)
			if (sscanf(check + 2 * i, "%2hhx", &sealed[i]) != 1)
				r = -EBADMSG;
		if (r == 0)
			r = sync_open(pg->key, sealed, n, "key", 3, opened);
		if (r < 0) {
			log_err("sync: the key of -o sync_key does not open the log in PostgreSQL: it was sealed with "
				"another key");
			r = -EPROTO;
		}
	}
	PQclear(res);
	if (r < 0)
		snprintf(pg->error, sizeof(pg->error), "%s", "the log's key does not match (see the daemon's log)");
	return r;
}

/* PostgreSQL's notices (CREATE ... IF NOT EXISTS skipping what is there): for -d only. */
static void notice(void *arg, const char *message)
{
	size_t n = strcspn(message, "\n");

	log_debug("sync: PostgreSQL says: %.*s", (int)n, message);
}

/* Makes the connection and the log's tables, checks the key, registers the machine, listens. */
static int pg_open(struct sync_pg *pg)
{
	static const char *const keys[] = { "connect_timeout", "fallback_application_name", "keepalives_idle",
					    "keepalives_interval", "keepalives_count", "dbname", NULL };
	const char *values[] = { "5", "convfs", "10", "5", "2", pg->conninfo, NULL };
	char now[24];
	const char *v[3] = { pg->machine, pg->name, now };
	int r;

	pg->conn = PQconnectdbParams(keys, values, 1);
	if (!pg->conn)
		return pg_fail(pg, "cannot connect", "out of memory", -ENOMEM);
	if (PQstatus(pg->conn) != CONNECTION_OK)
		return pg_fail(pg, "cannot connect", PQerrorMessage(pg->conn), -ENOTCONN);
	PQsetNoticeProcessor(pg->conn, notice, NULL);
	if ((r = pg_exec(pg, "BEGIN", "cannot set up the log")) < 0)
		return r;
	if ((r = pg_exec(pg, schema_sql, "cannot set up the log")) < 0 || (r = pg_key_check(pg)) < 0) {
		pg_exec(pg, "ROLLBACK", "cannot set up the log");
		return r;
	}
	if ((r = pg_exec(pg, "COMMIT", "cannot set up the log")) < 0)
		return r;
	snprintf(now, sizeof(now), "%" PRId64, now_ns());
	r = pg_params(pg, "INSERT INTO convfs.machines (machine, name, first_ns, last_ns) VALUES ($1, $2, $3, $3) "
			  "ON CONFLICT (machine) DO UPDATE SET name = excluded.name, last_ns = excluded.last_ns",
		      3, v, NULL, NULL, 0, "cannot register this machine", NULL);
	return r < 0 ? r : pg_exec(pg, "LISTEN convfs_log", "cannot listen for other machines' commits");
}

static int64_t int_of(const PGresult *res, int row, int col)
{
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* The last entry's seq: *ret. */
static int pg_head(struct sync_pg *pg, const char *lock, int64_t *ret)
{
	PGresult *res = NULL;
	int r = pg_params(pg, lock, 0, NULL, NULL, NULL, 0, "cannot read the log's head", &res);

	if (r < 0)
		return r;
	if (PQntuples(res) != 1)
		r = pg_fail(pg, "cannot read the log's head", "no row in convfs.head", -EPROTO);
	else
		*ret = int_of(res, 0, 0);
	PQclear(res);
	return r;
}

static int pg_connect(void *log, int64_t *ret_head)
{
	struct sync_pg *pg = log;
	int r;

	if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK &&
	    (r = pg_head(pg, "SELECT seq FROM convfs.head WHERE id = 1", ret_head)) != -ENOTCONN)
		return r;
	pg_disconnect(pg);
	if ((r = pg_open(pg)) < 0) {
		if (r != -EPROTO)
			r = -ENOTCONN;
		pg_disconnect(pg);
		return r;
	}
	pg->error[0] = '\0';
	return pg_head(pg, "SELECT seq FROM convfs.head WHERE id = 1", ret_head);
}

/* What seals part `part` of machine's entry rev: its names, bound in. */
static size_t part_ad(const char *machine, int64_t rev, uint32_t part, unsigned char *ad)
{
	uint64_t r64 = htole64((uint64_t)rev);
	uint32_t p32 = htole32(part);

	memcpy(ad, machine, 36);
	memcpy(ad + 36, &r64, 8);
	memcpy(ad + 44, &p32, 4);
	return 48;
}

/*
 * Part `part` of payload p, machine's entry rev, sealed if there is a key:
 * into buf (SYNC_PART + SYNC_SEAL_EXTRA bytes), its length.
 */
static int part_make(struct sync_pg *pg, const char *machine, int64_t rev, const struct sync_bytes *p, uint32_t part,
		     unsigned char *plain, unsigned char *buf, size_t *ret_len)
{
	size_t at = (size_t)part * SYNC_PART, n = p->len - at < SYNC_PART ? p->len - at : SYNC_PART;
	unsigned char ad[48];
	int r;

	if ((r = sync_bytes_read(p, at, pg->sealed ? plain : buf, n)) < 0)
		return r;
	if (pg->sealed) {
		if ((r = sync_seal(pg->key, plain, n, ad, part_ad(machine, rev, part, ad), buf)) < 0)
			return r;
		n += SYNC_SEAL_EXTRA;
	}
	*ret_len = n;
	return 0;
}

/* Parts 1.. of payload p (nparts in all) into convfs.parts, for entry seq_t. */
static int parts_put(struct sync_pg *pg, const char *machine, int64_t rev, const struct sync_bytes *p, uint32_t nparts,
		     const char *seq_t, unsigned char *plain, unsigned char *buf)
{
	char part_t[16];
	size_t n = 0;
	int r = 0;

	for (uint32_t k = 1; r == 0 && k < nparts; k++) {
		const char *pv[3] = { seq_t, part_t, (const char *)buf };
		int plen[3] = { 0, 0, 0 }, pfmt[3] = { 0, 0, 1 };

		snprintf(part_t, sizeof(part_t), "%" PRIu32, k);
		if ((r = part_make(pg, machine, rev, p, k, plain, buf, &n)) < 0)
			break;
		plen[2] = (int)n;
		r = pg_params(pg, "INSERT INTO convfs.parts (seq, part, data) VALUES ($1, $2, $3)", 3, pv, plen, pfmt, 0,
			      "cannot push a commit", NULL);
	}
	return r;
}

static uint32_t nparts_of(size_t len)
{
	return len ? (uint32_t)((len + SYNC_PART - 1) / SYNC_PART) : 1;
}

/* Inserts entry out as seq. */
static int push_one(struct sync_pg *pg, const struct sync_out *out, int64_t seq, unsigned char *plain, unsigned char *buf)
{
	uint32_t nparts = nparts_of(out->payload.len);
	char seq_t[24], rev_t[24], nparts_t[16], tag[33];
	const char *v[6] = { seq_t, pg->machine, rev_t, NULL, nparts_t, (const char *)buf };
	int len[6] = { 0 }, fmt[6] = { 0, 0, 0, 0, 0, 1 };
	size_t n = 0;
	int r;

	snprintf(seq_t, sizeof(seq_t), "%" PRId64, seq);
	snprintf(rev_t, sizeof(rev_t), "%" PRId64, out->rev);
	snprintf(nparts_t, sizeof(nparts_t), "%" PRIu32, nparts);
	if (out->task && pg->sealed && !out->forget)
		sync_tag(pg->key, out->task, tag);
	v[3] = out->forget ? SYNC_PG_FORGET : !out->task ? NULL : pg->sealed ? tag : out->task;
	if ((r = part_make(pg, pg->machine, out->rev, &out->payload, 0, plain, buf, &n)) < 0)
		return r;
	len[5] = (int)n;
	r = pg_params(pg, "INSERT INTO convfs.log (seq, machine, rev, task, nparts, data) VALUES ($1, $2, $3, $4, $5, $6)",
		      6, v, len, fmt, 0, "cannot push a commit", NULL);
	return r < 0 ? r : parts_put(pg, pg->machine, out->rev, &out->payload, nparts, seq_t, plain, buf);
}

static int pg_push(void *log, int64_t head, const struct sync_out *out, size_t n)
{
	struct sync_pg *pg = log;
	_cleanup_free_ unsigned char *plain = malloc(SYNC_PART), *buf = malloc(SYNC_PART + SYNC_SEAL_EXTRA);
	char new_t[24], note_t[80];
	const char *v[1] = { new_t }, *nv[1] = { note_t };
	int64_t now_head;
	int r;

	if (!plain || !buf)
		return -ENOMEM;
	if ((r = pg_exec(pg, "BEGIN", "cannot push")) < 0)
		return r;
	r = pg_head(pg, "SELECT seq FROM convfs.head WHERE id = 1 FOR UPDATE", &now_head);
	if (r == 0 && now_head != head)
		r = -EAGAIN; /* another machine pushed: pull first */
	for (size_t i = 0; r == 0 && i < n; i++)
		r = push_one(pg, &out[i], head + 1 + (int64_t)i, plain, buf);
	snprintf(new_t, sizeof(new_t), "%" PRId64, head + (int64_t)n);
	/* The notice names the pusher, which does not wake itself with it. */
	snprintf(note_t, sizeof(note_t), "%s %s", new_t, pg->machine);
	if (r == 0)
		r = pg_params(pg, "UPDATE convfs.head SET seq = $1 WHERE id = 1", 1, v, NULL, NULL, 0, "cannot push", NULL);
	if (r == 0)
		r = pg_params(pg, "SELECT pg_notify('convfs_log', $1)", 1, nv, NULL, NULL, 0, "cannot push", NULL);
	if (r == 0)
		return pg_exec(pg, "COMMIT", "cannot push");
	if (r == -EEXIST)
		log_err("sync: %s (this machine pushed one of these commits before: its store and the log disagree)",
			pg->error);
	if (PQstatus(pg->conn) == CONNECTION_OK)
		pg_exec(pg, "ROLLBACK", "cannot push");
	return r == -EEXIST ? -EPROTO : r;
}

/* Part `part` of entry in (whose first part is data[0, n)): opened if sealed, added to in's payload. */
static int part_take(struct sync_pg *pg, struct sync_in *in, uint32_t part, const unsigned char *data, size_t n,
		     unsigned char *plain)
{
	unsigned char ad[48];
	int r;

	if (!pg->sealed)
		return sync_bytes_add(&in->payload, data, n);
	if (n < SYNC_SEAL_EXTRA || n - SYNC_SEAL_EXTRA > SYNC_PART)
		return -EBADMSG;
	r = sync_open(pg->key, data, n, ad, part_ad(in->machine, in->rev, part, ad), plain);
	if (r < 0) {
		log_err("sync: entry %" PRId64 " of the log does not open with the key: it was changed, or sealed with "
			"another key", in->seq);
		return -EPROTO;
	}
	return sync_bytes_add(&in->payload, plain, n - SYNC_SEAL_EXTRA);
}

/* The parts after the first of entry in (nparts in all), one at a time: memory stays bounded. */
static int parts_take(struct sync_pg *pg, struct sync_in *in, uint32_t nparts, unsigned char *plain)
{
	char seq_t[24], part_t[16];
	const char *v[2] = { seq_t, part_t };
	int r = 0;

	snprintf(seq_t, sizeof(seq_t), "%" PRId64, in->seq);
	for (uint32_t p = 1; r == 0 && p < nparts; p++) {
		PGresult *res = NULL;

		snprintf(part_t, sizeof(part_t), "%" PRIu32, p);
		r = pg_params(pg, "SELECT data FROM convfs.parts WHERE seq = $1 AND part = $2", 2, v, NULL, NULL, 1,
			      "cannot pull a commit", &res);
		if (r < 0)
			break;
		if (PQntuples(res) != 1) {
			log_err("sync: entry %" PRId64 " of the log misses its part %" PRIu32, in->seq, p);
			r = -EPROTO;
		} else {
			r = part_take(pg, in, p, (const unsigned char *)PQgetvalue(res, 0, 0),
				      (size_t)PQgetlength(res, 0, 0), plain);
		}
		PQclear(res);
	}
	return r;
}

static int64_t be64_at(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return (int64_t)be64toh(v);
}

/* How many of the entries after `after` to take: at most max, within max_bytes (at least one). */
static int fetch_count(struct sync_pg *pg, int64_t after, size_t max, size_t max_bytes, size_t *ret)
{
	char after_t[24], max_t[24];
	const char *v[2] = { after_t, max_t };
	PGresult *res = NULL;
	size_t bytes = 0, n = 0;
	int r;

	snprintf(after_t, sizeof(after_t), "%" PRId64, after);
	snprintf(max_t, sizeof(max_t), "%zu", max);
	r = pg_params(pg, "SELECT seq, octet_length(data)::bigint * nparts FROM convfs.log WHERE seq > $1 ORDER BY seq "
			  "LIMIT $2", 2, v, NULL, NULL, 0, "cannot pull", &res);
	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res); i++) {
		if (int_of(res, i, 0) != after + 1 + i) {
			log_err("sync: the log in PostgreSQL has no entry %" PRId64 " (entries were removed from it); "
				"this store cannot follow it", after + 1 + i);
			r = -EPROTO;
			break;
		}
		if (n > 0 && bytes + (size_t)int_of(res, i, 1) > max_bytes)
			break;
		bytes += (size_t)int_of(res, i, 1);
		n++;
	}
	PQclear(res);
	*ret = n;
	return r;
}

static int pg_fetch(void *log, int64_t after, size_t max, size_t max_bytes, struct sync_in **ret, size_t *ret_n)
{
	struct sync_pg *pg = log;
	_cleanup_free_ unsigned char *plain = pg->sealed ? malloc(SYNC_PART) : NULL;
	char after_t[24], upto_t[24];
	const char *v[2] = { after_t, upto_t };
	struct sync_in *in = NULL;
	PGresult *res = NULL;
	size_t n = 0, got = 0;
	int r;

	if (pg->sealed && !plain)
		return -ENOMEM;
	if ((r = fetch_count(pg, after, max, max_bytes, &n)) < 0 || n == 0) {
		*ret_n = 0;
		return r;
	}
	snprintf(after_t, sizeof(after_t), "%" PRId64, after);
	snprintf(upto_t, sizeof(upto_t), "%" PRId64, after + (int64_t)n);
	r = pg_params(pg, "SELECT seq, machine::text, rev, nparts, data FROM convfs.log WHERE seq > $1 AND seq <= $2 "
			  "ORDER BY seq", 2, v, NULL, NULL, 1, "cannot pull", &res);
	if (r < 0)
		return r;
	if ((size_t)PQntuples(res) != n || !(in = calloc(n, sizeof(*in)))) {
		r = in ? pg_fail(pg, "cannot pull", "entries went away while they were read", -EIO) : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; r == 0 && i < n; i++, got++) {
		int32_t nparts;

		sync_bytes_init(&in[i].payload, NULL);
		in[i].seq = be64_at(PQgetvalue(res, (int)i, 0));
		snprintf(in[i].machine, sizeof(in[i].machine), "%.*s", PQgetlength(res, (int)i, 1), PQgetvalue(res, (int)i, 1));
		in[i].rev = be64_at(PQgetvalue(res, (int)i, 2));
		memcpy(&nparts, PQgetvalue(res, (int)i, 3), 4);
		nparts = (int32_t)be32toh((uint32_t)nparts);
		r = part_take(pg, &in[i], 0, (const unsigned char *)PQgetvalue(res, (int)i, 4),
			      (size_t)PQgetlength(res, (int)i, 4), plain);
		if (r == 0 && nparts > 1)
			r = parts_take(pg, &in[i], (uint32_t)nparts, plain);
	}
out:
	PQclear(res);
	if (r < 0) {
		for (size_t i = 0; i < got; i++)
			sync_in_release(&in[i]);
		free(in);
		return r;
	}
	*ret = in;
	*ret_n = n;
	return 0;
}

static int pg_wait(void *log, int ms, int wake_fd)
{
	struct sync_pg *pg = log;
	struct pollfd pfd[2] = { { .fd = PQsocket(pg->conn), .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
	PGnotify *note;
	bool notified = false;

	if (pfd[0].fd < 0)
		return -ENOTCONN;
	if (poll(pfd, wake_fd >= 0 ? 2 : 1, ms) < 0 && errno != EINTR)
		return -errno;
	if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	if (!PQconsumeInput(pg->conn))
		return pg_fail(pg, "lost the connection", PQerrorMessage(pg->conn), -ENOTCONN);
	while ((note = PQnotifies(pg->conn))) {
		const char *by = strchr(note->extra, ' ');

		if (!by || strcmp(by + 1, pg->machine) != 0)
			notified = true;
		PQfreemem(note);
	}
	return notified ? 1 : 0;
}

static int pg_tidy(struct sync_pg *pg);

static int pg_seen(void *log, int64_t pulled)
{
	struct sync_pg *pg = log;
	char pulled_t[24], now_t[24];
	const char *v[3] = { pg->machine, pulled_t, now_t };

	int r;

	snprintf(pulled_t, sizeof(pulled_t), "%" PRId64, pulled);
	snprintf(now_t, sizeof(now_t), "%" PRId64, now_ns());
	r = pg_params(pg, "UPDATE convfs.machines SET pulled = $2, last_ns = $3 WHERE machine = $1", 3, v, NULL, NULL, 0,
		      "cannot record what this machine pulled", NULL);
	return r < 0 ? r : pg_tidy(pg);
}

static const char *pg_id(void *log)
{
	const struct sync_pg *pg = log;

	return pg->log_id;
}

/* ---- a forget: entries written again ----------------------------------------------------- */

/* Entry in (as fetched) written again with payload out (same machine and revision); task (may be NULL) for its column. */
static int entry_put(struct sync_pg *pg, const struct sync_in *in, const struct sync_bytes *out, const char *task,
		     unsigned char *plain, unsigned char *buf)
{
	uint32_t nparts = nparts_of(out->len);
	char seq_t[24], nparts_t[16];
	const char *v[4] = { seq_t, (const char *)buf, nparts_t, task };
	int len[4] = { 0 }, fmt[4] = { 0, 1, 0, 0 };
	size_t n = 0;
	int r;

	snprintf(seq_t, sizeof(seq_t), "%" PRId64, in->seq);
	snprintf(nparts_t, sizeof(nparts_t), "%" PRIu32, nparts);
	if ((r = pg_exec(pg, "BEGIN", "cannot write an entry again")) < 0)
		return r;
	if ((r = part_make(pg, in->machine, in->rev, out, 0, plain, buf, &n)) == 0) {
		len[1] = (int)n;
		r = pg_params(pg, task ? "UPDATE convfs.log SET data = $2, nparts = $3, task = $4 WHERE seq = $1"
				       : "UPDATE convfs.log SET data = $2, nparts = $3 WHERE seq = $1",
			      task ? 4 : 3, v, len, fmt, 0, "cannot write an entry again", NULL);
	}
	if (r == 0)
		r = pg_params(pg, "DELETE FROM convfs.parts WHERE seq = $1", 1, v, NULL, NULL, 0, "cannot write an entry again",
			      NULL);
	if (r == 0)
		r = parts_put(pg, in->machine, in->rev, out, nparts, seq_t, plain, buf);
	if (r == 0)
		return pg_exec(pg, "COMMIT", "cannot write an entry again");
	if (PQstatus(pg->conn) == CONNECTION_OK)
		pg_exec(pg, "ROLLBACK", "cannot write an entry again");
	return r;
}

/* The entries that may hold what f forgets: all but forgets' with a key (nothing can be searched), else those that do. */
static int candidates(struct sync_pg *pg, const struct store_forget *f, int64_t **ret, size_t *ret_n)
{
	const char *v[2] = { f->match, f->task };
	PGresult *res = NULL;
	int64_t *seqs;
	int r;

	r = pg_params(pg, pg->sealed
		? "SELECT seq FROM convfs.log WHERE task IS DISTINCT FROM '" SYNC_PG_FORGET "' "
		  "AND task IS DISTINCT FROM '" SYNC_PG_FORGOT "' AND ($1::text IS NOT NULL OR $2::text IS NOT NULL) ORDER BY seq"
		: "SELECT seq FROM convfs.log l WHERE task IS DISTINCT FROM '" SYNC_PG_FORGET "' "
		  "AND task IS DISTINCT FROM '" SYNC_PG_FORGOT "' AND ("
		  " ($1::text IS NOT NULL AND (position(convert_to($1, 'UTF8') in l.data) > 0 OR EXISTS (SELECT 1 FROM "
		  "  convfs.parts p WHERE p.seq = l.seq AND position(convert_to($1, 'UTF8') in p.data) > 0)))"
		  " OR ($2::text IS NOT NULL AND (l.task = $2 OR position(convert_to($2, 'UTF8') in l.data) > 0))) ORDER BY seq",
		2, v, NULL, NULL, 0, "cannot look for it in the log", &res);
	if (r < 0)
		return r;
	if (!(seqs = calloc((size_t)PQntuples(res) + 1, sizeof(*seqs)))) {
		PQclear(res);
		return -ENOMEM;
	}
	for (int i = 0; i < PQntuples(res); i++)
		seqs[i] = int_of(res, i, 0);
	*ret_n = (size_t)PQntuples(res);
	*ret = seqs;
	PQclear(res);
	return 0;
}

/* Entry seq, fetched and opened, into *ret (release it). */
static int entry_get(struct sync_pg *pg, int64_t seq, struct sync_in *ret)
{
	struct sync_in *in = NULL;
	size_t n = 0;
	int r = pg_fetch(pg, seq - 1, 1, SIZE_MAX, &in, &n);

	if (r < 0)
		return r;
	if (n != 1) {
		free(in);
		return -ENOENT;
	}
	*ret = in[0];
	free(in);
	return 0;
}

int sync_pg_forget(struct sync_pg *pg, const struct store_forget *f, store_progress_fn progress, void *ctx)
{
	_cleanup_free_ unsigned char *plain = malloc(SYNC_PART), *buf = malloc(SYNC_PART + SYNC_SEAL_EXTRA);
	_cleanup_free_ int64_t *seqs = NULL;
	size_t n = 0, changed = 0;
	int r;

	if (!plain || !buf)
		return -ENOMEM;
	if ((r = candidates(pg, f, &seqs, &n)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct sync_in in;
		struct sync_bytes out;
		bool was = false;

		if (progress)
			progress(ctx, (int64_t)i, (int64_t)n);
		if ((r = entry_get(pg, seqs[i], &in)) < 0)
			break;
		sync_bytes_init(&out, NULL);
		r = sync_forget_entry(f, &in.payload, &out, &was);
		if (r == 0 && was) {
			r = entry_put(pg, &in, &out, NULL, plain, buf);
			changed++;
		}
		sync_bytes_release(&out);
		sync_in_release(&in);
	}
	if (r == 0)
		log_info("sync: %zu entries of the log in PostgreSQL held it: written again without it", changed);
	return r;
}

/* Forgets every machine has: their text goes from the log too (only they held it). */
static int pg_tidy(struct sync_pg *pg)
{
	_cleanup_free_ unsigned char *plain = malloc(SYNC_PART), *buf = malloc(SYNC_PART + SYNC_SEAL_EXTRA);
	PGresult *res = NULL;
	int r;

	if (!plain || !buf)
		return -ENOMEM;
	r = pg_params(pg, "SELECT seq FROM convfs.log WHERE task = '" SYNC_PG_FORGET "' "
			  "AND seq <= (SELECT min(pulled) FROM convfs.machines) ORDER BY seq",
		      0, NULL, NULL, NULL, 0, "cannot look for forgets every machine has", &res);
	for (int i = 0; r == 0 && i < PQntuples(res); i++) {
		struct sync_in in;
		struct sync_bytes out;

		if ((r = entry_get(pg, int_of(res, i, 0), &in)) < 0)
			break;
		sync_bytes_init(&out, NULL);
		r = sync_forget_record_erase(&in.payload, &out);
		if (r == 0)
			r = entry_put(pg, &in, &out, SYNC_PG_FORGOT, plain, buf);
		sync_bytes_release(&out);
		sync_in_release(&in);
	}
	PQclear(res);
	return r;
}

const struct sync_log_ops sync_pg_ops = {
	.id = pg_id,
	.connect = pg_connect,
	.disconnect = pg_disconnect,
	.push = pg_push,
	.fetch = pg_fetch,
	.wait = pg_wait,
	.seen = pg_seen,
};

int store_sync_conninfo_check(const char *conninfo)
{
	char *err = NULL;
	PQconninfoOption *opts;
	int r = pq_load();

	if (r < 0)
		return r;
	opts = PQconninfoParse(conninfo, &err);
	if (!opts) {
		log_err("sync: cannot read the connection string of -o sync: %s", err ? err : "out of memory");
		PQfreemem(err);
		return -EINVAL;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val) {
			log_err("sync: the connection string of -o sync holds a password, which every user of this machine "
				"can read (ps): put it in ~/.pgpass, a file named by PGPASSFILE, or a service file instead");
			r = -EINVAL;
		}
	PQconninfoFree(opts);
	return r;
}

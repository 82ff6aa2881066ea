/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_log.c: `convfs log [--json] FILE`, every saved version of one
 * conversation file on a mount, the newest first, without SQL.
 *
 * FILE is a path on a convfs mount: a conversation file of the client's
 * folder, or one of the view (workspaces/<ws>/tasks/<id>/messages.jsonl,
 * ...), which shows a doc of the compat tree (view_doc_of()). The store is
 * the one the mount names (mounts.c), read read-only beside the daemon as
 * status reads it. Each version is printed with its number, which
 * `convfs restore FILE NUMBER` takes: for a file a task's folder shows, its
 * number among the saves of any of the task's files, as versions/ counts
 * them (version_docs_of()), so the numbers of one file may skip.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fs/cmd/cmd.h"
#include "fs/cmd/mounts.h"
#include "store/store_history.h"
#include "store/util.h"

struct log_ctx {
	bool json;
	cJSON *array;
	struct sb text;
};

static int add_json(struct log_ctx *c, const struct store_version *v)
{
	cJSON *o = cJSON_CreateObject(), *m;
	char t[40];
	bool ok;

	if (!o || !cJSON_AddItemToArray(c->array, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	ok = cJSON_AddNumberToObject(o, "number", (double)v->number) &&
	     cJSON_AddNumberToObject(o, "revision", (double)v->rev) &&
	     cJSON_AddStringToObject(o, "time", iso_time(v->time_ns, t, sizeof(t))) &&
	     cmd_json_who(o, v->pid, v->comm) == 0 && cJSON_AddStringToObject(o, "kind", v->kind) &&
	     (v->size >= 0 ? cJSON_AddNumberToObject(o, "size", (double)v->size) : cJSON_AddNullToObject(o, "size"));
	if (ok && v->restored)
		ok = cJSON_AddNumberToObject(o, "restored", (double)v->restored) != NULL;
	if (ok && v->from_writer >= 0) {
		ok = (m = cJSON_AddObjectToObject(o, "merge")) &&
		     cJSON_AddNumberToObject(m, "from_writer", (double)v->from_writer) &&
		     cJSON_AddNumberToObject(m, "kept_stored", (double)v->kept_stored) &&
		     cJSON_AddNumberToObject(m, "others_kept", (double)v->others_kept) &&
		     cJSON_AddNumberToObject(m, "removed", (double)v->removed);
		if (ok && v->with_rev) {
			cJSON *w = cJSON_AddObjectToObject(m, "with");

			ok = w && cJSON_AddNumberToObject(w, "revision", (double)v->with_rev) &&
			     (v->with_number ? cJSON_AddNumberToObject(w, "number", (double)v->with_number)
					     : cJSON_AddNullToObject(w, "number")) &&
			     cmd_json_who(w, v->with_pid, v->with_comm) == 0;
		}
	}
	return ok ? 0 : -ENOMEM;
}

static int add_text(struct log_ctx *c, const struct store_version *v)
{
	char t[40], who[64], size[32];
	int r;

	r = sb_addf(&c->text, "%03" PRId64 "  %s  %-8s %10s  %s", v->number, iso_time(v->time_ns, t, sizeof(t)),
		    v->kind, v->size >= 0 ? cmd_size(v->size, size, sizeof(size)) : "?",
		    cmd_who(v->pid, v->comm, who, sizeof(who)));
	if (r == 0 && v->restored)
		r = sb_addf(&c->text, "  (version %03" PRId64 " again)", v->restored);
	if (r == 0 && v->from_writer >= 0) {
		r = sb_addf(&c->text, "  kept %" PRId64 " of its own, %" PRId64 " stored (%" PRId64
				      " it had not seen), removed %" PRId64,
			    v->from_writer, v->kept_stored, v->others_kept, v->removed);
		if (r == 0 && v->with_number)
			r = sb_addf(&c->text, "; merged with %03" PRId64 " by %s", v->with_number,
				    cmd_who(v->with_pid, v->with_comm, who, sizeof(who)));
		else if (r == 0 && v->with_rev)
			r = sb_addf(&c->text, "; merged with revision %" PRId64 " by %s", v->with_rev,
				    cmd_who(v->with_pid, v->with_comm, who, sizeof(who)));
	}
	return r < 0 ? r : sb_adds(&c->text, "\n");
}

static int one_version(void *ctx, const struct store_version *v)
{
	struct log_ctx *c = ctx;

	return c->json ? add_json(c, v) : add_text(c, v);
}

int cmd_log(int argc, char **argv)
{
	struct log_ctx c = { .text = SB_INIT };
	struct fs_target t = { 0 };
	struct store *st = NULL;
	const char *file = NULL;
	char *out = NULL;
	int r;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			c.json = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: convfs log [--json] FILE\n");
			return 0;
		} else if (!file) {
			file = argv[i];
		} else {
			file = NULL;
			break;
		}
	}
	if (!file) {
		fprintf(stderr, "usage: convfs log [--json] FILE\n");
		return 2;
	}
	if (fs_target_resolve("log", file, &t) < 0)
		return 1;
	r = store_open(t.mount.store, STORE_OPEN_READONLY, &st);
	if (r < 0) {
		fprintf(stderr, "convfs: log: cannot read the store '%s': %s\n", t.mount.store, strerror(-r));
		goto out;
	}
	if (c.json && !(c.array = cJSON_CreateArray())) {
		r = -ENOMEM;
		goto out;
	}
	r = store_doc_versions(st, t.doc, t.docs.paths, t.docs.n, one_version, &c);
	if (r == -ENOENT)
		fprintf(stderr, "convfs: log: the store has no version of '%s' ('%s')\n", file, t.doc);
	else if (r < 0)
		fprintf(stderr, "convfs: log: cannot read the versions of '%s': %s\n", file, strerror(-r));
	if (r < 0)
		goto out;
	if (c.json) {
		out = cJSON_Print(c.array);
		if (!out) {
			r = -ENOMEM;
			fprintf(stderr, "convfs: log: cannot make its JSON: out of memory\n");
			goto out;
		}
		printf("%s\n", out);
	} else {
		fputs(sb_str(&c.text), stdout);
	}
out:
	free(out);
	cJSON_Delete(c.array);
	sb_release(&c.text);
	store_free(st);
	fs_target_release(&t);
	return r < 0 ? 1 : 0;
}

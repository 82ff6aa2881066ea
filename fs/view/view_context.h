/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_CONTEXT_H
#define CONVFS_VIEW_CONTEXT_H

/*
 * context.jsonl in the view (view_context.c): a Cline task's conversation as
 * the model last saw it (context.c), for the live task, a checkpoint or a
 * saved version. The text is a list of pieces: runs of messages.jsonl's own
 * lines, read from the store when they are read, and the few messages the
 * client sends changed, held in memory.
 */

#include <stdint.h>
#include <sys/types.h>

#include "fs/fs.h"
#include "fs/view/context.h"
#include "store/store.h"

/* What one context.jsonl is made of. */
struct context_input {
	struct store_snap *api;       /* the conversation as JSON Lines, cut where the point cuts it */
	struct context_range range;   /* in force at that point */
	char *edits;                  /* context_history.json then (NULL: none); free() */
	size_t edits_len;
	int64_t max_ts;               /* edits after this time (ms) are not in force; INT64_MAX: all are */
	int64_t mtime_ns;             /* the file's time */
	bool session;                 /* a CLI 3.x session: no range or edits, its compaction state */
	char *compaction;             /* its <id>.compaction.json (NULL: none); free() */
	size_t compaction_len;
};
void context_input_release(struct context_input *in);

/*
 * The live task's: its conversation now, the range its history item holds
 * (else its ui messages' last), its edits now.
 */
int context_input_live(struct fs *fs, const char *task, struct context_input *ret);
/*
 * At a saved version: the conversation, the range of the ui messages'
 * last and the edits, each as it stood after revision rev.
 */
int context_input_version(struct fs *fs, const char *task, int64_t rev, int64_t time_ns, struct context_input *ret);
/*
 * At a checkpoint: api (taken) is the conversation cut there; range is the
 * one the checkpoint's message carries, and the edits are those made up to
 * its time ts, as the client restores them when it goes back there.
 */
int context_input_checkpoint(struct fs *fs, const char *task, struct store_snap *api, const struct context_range *range,
			     int64_t ts_ms, struct context_input *ret);

/*
 * A CLI 3.x session's, live: its conversation now, and compaction (taken,
 * freed in every case; NULL for none), the bytes of its compaction file of
 * time mtime_ns.
 */
int context_input_session(struct fs *fs, const char *session, char *compaction, size_t compaction_len,
			  int64_t mtime_ns, struct context_input *ret);

/*
 * The text of in (its snapshot and edits are taken, in every case), for key
 * (the view path: the last one made is kept until the next commit, so that
 * a stat, an open and the reads make it once). Drop with
 * view_context_put(). The key's first line names the file in log lines;
 * lines after it may tell apart what the text is made from.
 */
struct view_context;
int view_context_get(struct fs *fs, const char *key, struct context_input *in, struct view_context **ret);
/* The one kept for key, if it is still good (the caller then releases its input unmade). */
struct view_context *view_context_lookup(struct fs *fs, const char *key);
void view_context_put(struct view_context *c);
int64_t view_context_size(const struct view_context *c);
int64_t view_context_mtime(const struct view_context *c);
ssize_t view_context_read(struct fs *fs, struct view_context *c, char *buf, size_t size, off_t off);

#endif

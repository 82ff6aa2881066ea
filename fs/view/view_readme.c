/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_readme.c: workspaces/README.md, what the view is, for whoever finds
 * the folder: how it is laid out, and what is there that no listing shows
 * (a task's versions/ and checkpoints/, found by their names only, so that
 * grep -r and rsync of the view read each conversation once).
 *
 * A kind of its own, added in one place: its row, whose shape is its parse
 * rule and its line in workspaces/'s listing, and its line in VIEW_KINDS.
 * Its text is fixed, so is everything of it (size, time, inode number): the
 * kernel keeps its attributes and pages long, and rsync copies it once. A
 * client's own README.md in workspaces/ wins, as any of the client's names
 * does there: this one is then README.md.view (view.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/ops/route.h"
#include "fs/view/view.h"

static const char readme[] =
	"# workspaces/: the history by project\n"
	"\n"
	"convfs makes this folder from its store at each look: nothing here is a\n"
	"copy, so it always agrees with the files the client reads and writes\n"
	"beside it (tasks/, state/, sessions/).\n"
	"\n"
	"    <project>-<key>/             a workspace the tasks were made in\n"
	"        workspace.json           its path, key, task count, first and last activity\n"
	"        taskHistory.json         its tasks' items of the history (writable)\n"
	"        tasks/<id>/              a task:\n"
	"            messages.jsonl       the conversation with the model, a message a line\n"
	"            ui_messages.jsonl    what the chat showed, a message a line\n"
	"            task.json            the task's item of the history\n"
	"            metadata.json        its task_metadata.json\n"
	"            subagents/<agent>/   a CLI 3.x session's subagent: messages.jsonl, spawn.json\n"
	"    unknown/tasks/<id>/          tasks of no known workspace\n"
	"    .trash/<id>/                 tasks removed with rm -r, read-only\n"
	"\n"
	"In a task's folder, found by their names but not listed:\n"
	"\n"
	"    context.jsonl                the conversation as the model last saw it,\n"
	"                                 once the client cut or compacted it to fit\n"
	"                                 its window\n"
	"    versions/<NNNNNN>-<time>/    the task right after each save, read-only\n"
	"    checkpoints/<NNN>-<hash>/    the conversation and the workspace's files\n"
	"                                 at each checkpoint, read-only; agent.diff:\n"
	"                                 what the agent's file tools changed since\n"
	"\n"
	"Lines appended to a .jsonl file (>>) are added to its conversation, one\n"
	"JSON object a line. rm -r of a task's folder moves it to .trash/, and\n"
	"mv .trash/<id> <project>-<key>/tasks/<id> brings it back.\n"
	"`convfs log FILE` lists a file's versions, and `convfs restore FILE N`\n"
	"makes version N the live one; the others stay. Anything else made here\n"
	"is yours, kept as it is. See convfs(1).\n";

/* When the text above was last changed: its time, whatever the store holds. */
#define README_TIME_NS (INT64_C(1796515200) * 1000000000)

static int readme_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			 int64_t *ret_rev)
{
	*ret = strdup(readme);
	if (!*ret)
		return -ENOMEM;
	*ret_len = sizeof(readme) - 1;
	*ret_mtime_ns = README_TIME_NS;
	return 0;
}

static int readme_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, readme_render, 0400);
}

static int readme_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, readme_render, false);
}

static const struct view_shape readme_shape = {
	.in = VIEW_ROOT, .name = "README.md", .listed = VIEW_LISTED, .type = S_IFREG,
};

/* Made of no store: nothing to wait for, nothing a commit changes. */
const struct path_ops view_readme = {
	.name = "view-readme",
	.getattr = readme_getattr,
	.open = readme_open,
	.cls = PATH_CLASS_VIEW,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_LONG, .handle = true, .pages = PAGES_KEEP },
	.shape = &readme_shape,
};

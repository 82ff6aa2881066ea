/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * layout.c: which paths of a Cline globalStorage folder the store manages.
 *
 * Paths are relative to the mount root, without a leading slash. Only the
 * conversation files are managed; everything else (shadow git repos,
 * settings, secrets, locks.db, temp files) is a plain file. A task folder is
 * managed only when its name is a Cline task id (Date.now() in decimal), the
 * same rule Cline's own history recovery applies.
 */
#include <string.h>

#include "store/store.h"
#include "store/util.h"

static const char *const array_names[] = { "api_conversation_history.json", "ui_messages.json" };
static const char *const whole_names[] = { "task_metadata.json", "context_history.json", "settings.json" };

bool store_is_task_id(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

enum store_path_kind store_path_kind(const char *path)
{
	const char *slash, *rest;
	char id[33];
	size_t idlen;

	if (strcmp(path, "state") == 0)
		return STORE_PATH_DOC_DIR;
	if (strcmp(path, "state/taskHistory.json") == 0)
		return STORE_PATH_ARRAY;
	if (strcmp(path, "tasks") == 0)
		return STORE_PATH_TASKS_DIR;
	if (strncmp(path, "tasks/", 6) != 0)
		return STORE_PATH_PLAIN;
	path += 6;
	slash = strchr(path, '/');
	idlen = slash ? (size_t)(slash - path) : strlen(path);
	if (idlen >= sizeof(id))
		return STORE_PATH_PLAIN;
	memcpy(id, path, idlen);
	id[idlen] = '\0';
	if (!store_is_task_id(id))
		return STORE_PATH_PLAIN;
	if (!slash)
		return STORE_PATH_DOC_DIR;
	rest = slash + 1;
	if (strchr(rest, '/'))
		return STORE_PATH_PLAIN;
	if (in_list(rest, array_names, ARRAY_SIZE(array_names)))
		return STORE_PATH_ARRAY;
	if (in_list(rest, whole_names, ARRAY_SIZE(whole_names)))
		return STORE_PATH_WHOLE;
	return STORE_PATH_PLAIN;
}

uint32_t store_workspace_key(const char *utf8_path)
{
	const unsigned char *p = (const unsigned char *)utf8_path;
	uint32_t h = 0;

	while (*p) {
		uint32_t cp;
		int len;

		if (p[0] < 0x80)
			cp = p[0], len = 1;
		else if ((p[0] & 0xe0) == 0xc0 && p[1])
			cp = ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu), len = 2;
		else if ((p[0] & 0xf0) == 0xe0 && p[1] && p[2])
			cp = ((p[0] & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu), len = 3;
		else if ((p[0] & 0xf8) == 0xf0 && p[1] && p[2] && p[3])
			cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) | (p[3] & 0x3fu), len = 4;
		else
			cp = 0xfffd, len = 1; /* what a JS string holds for a bad byte */
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = h * 31 + (0xd800 + (cp >> 10));
			h = h * 31 + (0xdc00 + (cp & 0x3ff));
		} else {
			h = h * 31 + cp;
		}
		p += len;
	}
	return h;
}

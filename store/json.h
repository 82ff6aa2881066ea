/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_JSON_H
#define CONVFS_JSON_H

#include <stddef.h>

/*
 * A validating JSON scanner that builds no tree. It checks text against
 * RFC 8259 (UTF-8 only, no byte order mark, nesting at most JSON_MAX_DEPTH)
 * and reports where the elements of a top-level array begin and end, so that
 * each element can be stored as the exact bytes that were written.
 */

#define JSON_MAX_DEPTH 512

/* How many bytes a scan through a reader holds at a time, unless it says. */
#define JSON_WINDOW ((size_t)1 << 18)

/*
 * Text too big to hold in memory, read through a callback: read() fills buf
 * with exactly n bytes from offset off of the text and returns 0, or a
 * negative errno, which the scan then returns. A scan reads each byte once,
 * in order, window bytes a call (0: JSON_WINDOW; never fewer than 64).
 */
struct json_reader {
	int (*read)(void *ctx, size_t off, char *buf, size_t n);
	void *ctx;
	size_t len;
	size_t window;
};

/* Where and why a scan failed; msg is lowercase, e.g. "unexpected ']'". */
struct json_error {
	size_t offset;
	char msg[96];
};

/*
 * Called for each element of a top-level array, in order: the element is
 * s[start, end) and the bytes before it since the previous element (or since
 * the '[') are s[pre, start). A negative return stops the scan and is
 * returned by json_scan_array().
 */
typedef int (*json_elem_fn)(void *ctx, size_t pre, size_t start, size_t end);

/*
 * Checks that s[0, n) is one JSON array and calls fn for each element.
 * *ret_head is the length of the text up to and including '['; *ret_tail the
 * offset where the bytes after the last element begin. Returns 0, -EINVAL
 * with err filled in (also for valid JSON that is not an array), or fn's
 * negative return. Out-parameters are untouched on failure.
 */
int json_scan_array(const char *s, size_t n, json_elem_fn fn, void *ctx,
		    size_t *ret_head, size_t *ret_tail, struct json_error *err);

/* Checks that s[0, n) is one JSON value. Returns 0 or -EINVAL with err. */
int json_validate(const char *s, size_t n, struct json_error *err);
/* The same of the text rd reads; also -ENOMEM, or the reader's error. */
int json_validate_read(const struct json_reader *rd, struct json_error *err);

/* Length of the valid UTF-8 sequence at p (at most n > 0 bytes), or 0. */
size_t json_utf8_len(const unsigned char *p, size_t n);

/*
 * Finds member `key` of the JSON object s[0, n) (already validated) and
 * returns its raw value as s[*ret_start, *ret_end). Returns 0, or -ENOENT if
 * s is not an object or has no such member.
 */
int json_object_member(const char *s, size_t n, const char *key, size_t *ret_start, size_t *ret_end);
/* The same of the object at bytes [start, end) of the text rd reads; offsets are the text's. */
int json_object_member_read(const struct json_reader *rd, size_t start, size_t end, const char *key,
			    size_t *ret_start, size_t *ret_end);

/* The string value of member key of the object s[0, n), or NULL (not there, not a string, no memory). free() it. */
char *json_member_string(const char *s, size_t n, const char *key);

/*
 * Like json_scan_array(), for the array that is the value of member `member`
 * of the top-level object s[0, n) (member NULL: the top-level array itself).
 * *ret_head is the length of the text up to and including that array's '[',
 * *ret_tail where the bytes after its last element begin: the rest of the
 * object follows in the tail.
 */
int json_scan_array_at(const char *s, size_t n, const char *member, json_elem_fn fn, void *ctx,
		       size_t *ret_head, size_t *ret_tail, struct json_error *err);

/*
 * What a scan may skip: the text's bytes [0, end) are known to be those of a
 * text scanned before, up to the end of one of its array's elements, and head
 * is where that array's elements begin (json_scan_array_at()'s *ret_head;
 * 0 < head <= end). The scan starts at end: fn sees only the elements after
 * it, and *ret_head is head. An element that is a number or a literal may go
 * on past end in the new text, so end must follow one that closes itself
 * (an object, an array or a string).
 */
struct json_known {
	size_t head, end;
};

/* json_scan_array_at() that skips what known says (NULL, or end 0: nothing). */
int json_scan_array_after(const char *s, size_t n, const char *member, const struct json_known *known,
			  json_elem_fn fn, void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err);
/* The same of the text rd reads; also -ENOMEM, or the reader's error. */
int json_scan_array_read(const struct json_reader *rd, const char *member, const struct json_known *known,
			 json_elem_fn fn, void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err);

/*
 * The value of a JSON number or string that holds a whole number, e.g. a
 * message's "ts" or a history item's "id". Returns 0 or -EINVAL.
 */
int json_to_int64(const char *s, size_t n, long long *ret);

/* Pretty-prints compact JSON as JSON.stringify(x, null, 2) would. free() the result; NULL if out of memory. */
char *json_pretty(const char *compact);

struct cJSON;

/*
 * Prints the cJSON value o as JSON.stringify(o, null, 2) would: *ret, to
 * free(), and its length. Returns 0, or -ENOMEM with *ret untouched.
 */
int json_print_pretty(const struct cJSON *o, char **ret, size_t *ret_len);

/* cJSON_Delete(*p), for _cleanup_json_ (a cJSON tree freed at the end of its scope). */
void json_deletep(struct cJSON **p);
#define _cleanup_json_ _cleanup_(json_deletep)

#endif

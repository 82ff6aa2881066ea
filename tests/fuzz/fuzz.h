/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_FUZZ_H
#define CONVFS_FUZZ_H

/*
 * Shared by the libFuzzer targets of tests/fuzz. A broken invariant is a
 * CHECK() that fails: it prints what and where, and aborts, which libFuzzer
 * reports as a crash and saves the input for (see docs/TESTING.md).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                             \
		}                                                                            \
	} while (0)

/* Allocation failures are not what these targets look for: stop loudly. */
#define CHECK_ALLOC(p) CHECK((p) != NULL)

/* JSON's white space (RFC 8259). */
static inline bool json_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Valid JSON that cJSON 1.7 refuses: a \u escape of a surrogate not in a
 * pair (it errs on the safe side for any \uD8..-\uDF..), or a number of 63
 * bytes or more (it copies numbers into a 64-byte buffer).
 */
static inline bool cjson_may_refuse(const char *s, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] == 'u' && (s[i + 2] == 'd' || s[i + 2] == 'D') &&
		    strchr("89abcdefABCDEF", s[i + 3]) && s[i + 3] != '\0')
			return true;
		run = ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') ? run + 1 : 0;
		if (run >= 63)
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif

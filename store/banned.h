/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_BANNED_H
#define CONVFS_BANNED_H

/*
 * Functions that make buffer overflows easy. Included last by every .c file
 * (through util.h) so that a use is a compile error, as in git's banned.h.
 */

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gets
#define gets(x) BANNED(gets)

#endif

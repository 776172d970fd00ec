/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Words and numbers of table lines and messages, shared by both targets'
 * portable parsers (rc-args.c, vd-args.c): plain C, no locale, no errno.
 */
#ifndef RC_PARSE_H
#define RC_PARSE_H

#include "rc-types.h"

static inline char rc_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

/* ASCII case-insensitive, like the strcasecmp() dm uses for keywords. */
static inline bool rc_streq(const char *a, const char *b)
{
	while (*a && rc_lower(*a) == rc_lower(*b)) {
		a++;
		b++;
	}
	return rc_lower(*a) == rc_lower(*b);
}

/*
 * A decimal number 0..@max: digits only (no sign, space, base prefix),
 * at least one.  0, or -1 with *@v untouched.
 */
static inline int rc_parse_u64(const char *s, u64 max, u64 *v)
{
	u64 n = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		u64 d = (u64)(*s - '0');

		if (*s < '0' || *s > '9' || d > max || n > (max - d) / 10)
			return -1;
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

static inline int rc_parse_u32(const char *s, u32 *v)
{
	u64 n;

	if (rc_parse_u64(s, 0xffffffffu, &n))
		return -1;
	*v = (u32)n;
	return 0;
}

#endif

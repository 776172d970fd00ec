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

/* A message's first word, and how many words may follow it. */
struct rc_verb {
	const char *verb;
	unsigned int min_args, max_args;
};

/*
 * Look @argv[0] up among the @n entries of @verbs and check how many words
 * follow it: NULL with its index in *@idx, or the error, in @buf where it
 * names a word.
 */
static inline const char *rc_parse_verb(const struct rc_verb *verbs, unsigned int n,
					unsigned int argc, char **argv, unsigned int *idx,
					char *buf, size_t len)
{
	unsigned int i;

	if (!argc)
		return "Empty message";
	for (i = 0; i < n; i++)
		if (rc_streq(argv[0], verbs[i].verb))
			break;
	if (i == n) {
		snprintf(buf, len, "Unrecognised message '%s'", argv[0]);
		return buf;
	}
	if (argc - 1 < verbs[i].min_args || argc - 1 > verbs[i].max_args) {
		snprintf(buf, len, "%s: wrong number of arguments", verbs[i].verb);
		return buf;
	}
	*idx = i;
	return NULL;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fuzzers' word splitter: an input line split as dm_split_args()
 * splits a table line or a message, into words each in its own block of
 * exactly its size (ASan sees any read past one).  Included by a fuzzer
 * after it defines MAX_INPUT, MAX_WORDS and CHECK().
 */
#ifndef FUZZ_WORDS_H
#define FUZZ_WORDS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's isspace(): its ctype table also marks 0xa0 (Latin-1 NBSP). */
static int dm_isspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0;
}

struct words {
	unsigned int argc;
	char **argv;		/* argc entries, each its own exact-size block */
	char *saved[MAX_WORDS];	/* copies, to see that the parser changed nothing */
};

/*
 * @data as dm_split_args() sees it: a C string (it ends at the first NUL),
 * words separated by whitespace, a backslash taking the next character
 * (not the NUL) literally.  0, or -1 if the input is too long.
 */
static int split(const uint8_t *data, size_t size, struct words *w)
{
	char line[MAX_INPUT + 1], *start, *end, *out, *tok[MAX_WORDS];
	size_t len[MAX_WORDS];
	unsigned int i;

	if (size > MAX_INPUT)
		return -1;
	memcpy(line, data, size);
	line[size] = '\0';

	w->argc = 0;
	end = line;
	for (;;) {
		for (start = end; dm_isspace((unsigned char)*start); start++)
			;
		if (!*start)
			break;
		end = out = start;
		while (*end) {
			if (*end == '\\' && end[1]) {
				*out++ = end[1];
				end += 2;
				continue;
			}
			if (dm_isspace((unsigned char)*end))
				break;
			*out++ = *end++;
		}
		if (*end)
			end++;
		*out = '\0';
		if (w->argc == MAX_WORDS)
			return -1;
		tok[w->argc] = start;
		len[w->argc] = (size_t)(out - start);
		w->argc++;
	}

	/* malloc(0) for no words: ASan reports any use of argv[0]. */
	w->argv = malloc(w->argc * sizeof(*w->argv));
	CHECK(w->argv);
	for (i = 0; i < w->argc; i++) {
		w->argv[i] = malloc(len[i] + 1);
		w->saved[i] = malloc(len[i] + 1);
		CHECK(w->argv[i] && w->saved[i]);
		memcpy(w->argv[i], tok[i], len[i] + 1);
		memcpy(w->saved[i], tok[i], len[i] + 1);
	}
	return 0;
}

static void words_free(struct words *w)
{
	unsigned int i;

	for (i = 0; i < w->argc; i++) {
		/* The parsers take char ** but must leave the words alone. */
		CHECK(!strcmp(w->argv[i], w->saved[i]));
		free(w->argv[i]);
		free(w->saved[i]);
	}
	free(w->argv);
}

#endif

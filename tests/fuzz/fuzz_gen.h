/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The refusal side of the fuzz oracles: valid lines built from the grammar,
 * every choice (which options, their order, values in range, spellings,
 * separators) read from the fuzzer's input bytes, so that libFuzzer explores
 * the valid lines as it explores the others.  Each harness builds one from
 * every input, and it must be accepted, read as meant, and round-trip: the
 * result written back as a canonical line (the form the target's status or
 * redcapctl writes) and parsed again gives the same result.
 */
#ifndef FUZZ_GEN_H
#define FUZZ_GEN_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input as a stream of choices; past its end every choice is 0. */
struct gen {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t gen_bytes(struct gen *g, unsigned int nbytes)
{
	uint64_t v = 0;

	while (nbytes--) {
		v <<= 8;
		if (g->n) {
			v |= *g->p++;
			g->n--;
		}
	}
	return v;
}

/* 0..n-1 (n <= 256). */
static inline unsigned int gen_pick(struct gen *g, unsigned int n)
{
	return n > 1 ? (unsigned int)(gen_bytes(g, 1) % n) : 0;
}

/* lo..hi, both ends often: a range's edges are where a parser goes wrong. */
static inline uint64_t gen_range(struct gen *g, uint64_t lo, uint64_t hi)
{
	uint64_t span = hi - lo, v;
	unsigned int nbytes = 1;

	switch (gen_pick(g, 8)) {
	case 0:
		return lo;
	case 1:
		return hi;
	case 2:
		return lo + (span ? 1 : 0);
	case 3:
		return hi - (span ? 1 : 0);
	default:
		break;
	}
	while (nbytes < 8 && (span >> (8 * nbytes)))
		nbytes++;
	v = gen_bytes(g, nbytes);
	return span == UINT64_MAX ? v : lo + v % (span + 1);
}

/* A permutation of 0..n-1 (n <= 32) into @order. */
static inline void gen_shuffle(struct gen *g, unsigned int *order, unsigned int n)
{
	unsigned int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		j = gen_pick(g, i);
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

/* The line being built. */
struct gen_line {
	char s[4096 + 1];
	size_t len;
};

static inline void line_put(struct gen_line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l->s + l->len, sizeof(l->s) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(l->s) - l->len) {
		fprintf(stderr, "fuzz_gen: line too long\n");
		abort();
	}
	l->len += (size_t)n;
}

static inline void line_putc(struct gen_line *l, char c)
{
	if (l->len + 1 >= sizeof(l->s)) {
		fprintf(stderr, "fuzz_gen: line too long\n");
		abort();
	}
	l->s[l->len++] = c;
	l->s[l->len] = '\0';
}

/*
 * @word spelt: each letter in either case if @any_case, and (if @escapes:
 * a dm table line, which dm_split_args() unescapes) some characters behind
 * a backslash.
 */
static inline void gen_word(struct gen *g, struct gen_line *l, const char *word, int any_case,
		     int escapes)
{
	unsigned int bits = (unsigned int)gen_bytes(g, 2), esc = escapes ? gen_pick(g, 4) : 0;
	const char *c;
	unsigned int i = 0;

	for (c = word; *c; c++, i++) {
		char ch = *c;

		if (any_case && ((bits >> (i % 16)) & 1)) {
			if (ch >= 'a' && ch <= 'z')
				ch = (char)(ch - 'a' + 'A');
			else if (ch >= 'A' && ch <= 'Z')
				ch = (char)(ch - 'A' + 'a');
		}
		if (esc == 1 && ch != '\\' && (i % 3) == 0)
			line_putc(l, '\\');
		line_putc(l, ch);
	}
}

/* A decimal number, with up to three leading zeros. */
static inline void gen_number(struct gen *g, struct gen_line *l, uint64_t v)
{
	unsigned int zeros = gen_pick(g, 8);

	zeros = zeros > 4 ? 0 : zeros;
	while (zeros--)
		line_putc(l, '0');
	line_put(l, "%llu", (unsigned long long)v);
}

/* Between the words of a dm table line: 1..3 of the kernel's whitespace. */
static inline void gen_dm_space(struct gen *g, struct gen_line *l)
{
	static const char spaces[] = { ' ', ' ', ' ', '\t', '\n', '\v', '\f', '\r', (char)0xa0 };
	unsigned int n = 1 + gen_pick(g, 3);

	while (n--)
		line_putc(l, spaces[gen_pick(g, sizeof(spaces))]);
}

/* The line with its unprintable bytes as \xNN, for a failure's report. */
static inline void gen_dump(const char *what, const char *s)
{
	fprintf(stderr, "fuzz_gen: %s: \"", what);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fprintf(stderr, "\"\n");
}

/* How many generated lines were accepted and round-tripped, said at exit. */
static unsigned long gen_valid_lines __attribute__((unused));

static inline void gen_report(void)
{
	fprintf(stderr, "fuzz_gen: %lu valid lines accepted and round-tripped\n",
		gen_valid_lines);
}

#define GEN_CHECK(cond, line)						\
	do {								\
		if (!(cond)) {						\
			gen_dump("valid line", (line));			\
			fprintf(stderr, "fuzz_gen: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif

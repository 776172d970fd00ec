// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness of FOR's layout loader (dm-redcap/rc-layout.c): the
 * words of a "layout_runs" message into rc_layout_parse_runs(), checked
 * against the harness's own reading of them (README.md).
 *
 * The input: 5 bytes of layout, then the message's words (after the verb),
 * split as dm_split_args() does (fuzz_args.c's split(), copied):
 *   byte 0	the unit: 1 << (3 + b % 9) sectors
 *   bytes 1-2	nr_units, big-endian, 0..65535
 *   byte 3	the origin's last unit is short of b % unit sectors
 *		(with nr_units >= 1)
 *   byte 4	bits already set (an earlier message): density b % 4
 *		(0 none, then one in 8, 4 or 2), from a generator seeded by b
 * The bits are a heap block of exactly rc_layout_words() words and the
 * error buffer one of the 128 bytes the target passes, so ASan sees a read
 * or write past either.  After the parse:
 *   - a refusal: exactly the text the harness expects for the first bad
 *     word by its own reading, and the bitmap and nr_set unchanged;
 *   - an acceptance: the harness accepts too, the bitmap is the one before
 *     with each run's last unit set, nr_set its population count;
 *   - either way, rc_layout_run_end() agrees with a bit-by-bit reading of
 *     the bitmap on a few ranges, and the words are unchanged.
 * Every input also makes a valid message (gen_valid()) that must be
 * accepted as meant and round-trip.
 *
 * FUZZ_ARGS_VERBOSE=1 in the environment prints what each input parsed to.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc-layout.h"
#include "fuzz_gen.h"

#define MAX_INPUT	4096	/* bytes of a message; longer inputs are skipped */
#define MAX_WORDS	256	/* words of a message; more and the input is skipped */
#define ERR_LEN		128	/* the buffer the target's message function passes */
#define HEADER		5	/* bytes of layout before the words */
#define BPW		RC_LAYOUT_BITS_PER_WORD
#define HEX		"0123456789abcdefABCDEF"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_layout: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

static int verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *v = getenv("FUZZ_ARGS_VERBOSE");

	(void)argc;
	(void)argv;
	verbose = v && *v && strcmp(v, "0");
	atexit(gen_report);
	return 0;
}

#include "fuzz_words.h"

/* --- The layout ------------------------------------------------------------ */

struct fixture {
	struct rc_layout l;
	size_t words;
};

static void layout_new(struct fixture *f, uint64_t origin, unsigned int shift)
{
	f->words = rc_layout_words(origin, shift);
	/* calloc(0, ..) is a block of no bytes: ASan reports any read of it. */
	rc_layout_init(&f->l, origin, shift, calloc(f->words, sizeof(unsigned long)));
	CHECK(f->l.bits);
	CHECK(f->l.nr_units == (origin >> shift) + !!(origin & ((1ull << shift) - 1)));
	CHECK(f->words == (f->l.nr_units + BPW - 1) / BPW);
	CHECK(f->l.nr_set == 0 && f->l.shift == shift);
}

static int bit(const unsigned long *bits, uint64_t u)
{
	return (bits[u / BPW] >> (u % BPW)) & 1;
}

static uint64_t popcount(const unsigned long *bits, size_t words)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < words; i++)
		n += (uint64_t)__builtin_popcountl(bits[i]);
	return n;
}

/* --- An independent reading of the words ------------------------------------ */

enum { REF_OK, REF_MALFORMED, REF_EMPTY, REF_PAST };

/* @n hex digits at @s: 0 and *@v, or 1 if they do not fit 64 bits. */
static int ref_hex(const char *s, size_t n, uint64_t *v)
{
	char buf[17];

	while (n > 1 && *s == '0') {
		s++;
		n--;
	}
	if (n > 16)
		return 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 16);
	return 0;
}

static int ref_word(const char *w, uint64_t prev_end, uint64_t nr_units, uint64_t *start,
		    uint64_t *len)
{
	const char *p = w + (*w == '+'), *q;
	size_t a = strspn(p, HEX), b;
	uint64_t va = 0, vn = 0, e;
	int big_a, big_n;

	if (!a || p[a] != ':')
		return REF_MALFORMED;
	q = p + a + 1;
	b = strspn(q, HEX);
	if (!b || q[b])
		return REF_MALFORMED;
	big_a = ref_hex(p, a, &va);
	big_n = ref_hex(q, b, &vn);
	if (!big_n && !vn)
		return REF_EMPTY;
	if (big_a || big_n)
		return REF_PAST;
	if (*w == '+' && __builtin_add_overflow(va, prev_end, &va))
		return REF_PAST;
	if (__builtin_add_overflow(va, vn, &e) || e > nr_units)
		return REF_PAST;
	*start = va;
	*len = vn;
	return REF_OK;
}

/*
 * The message by the harness's reading: NULL with each run's last unit set
 * in @bits, or (@bits untouched) the error text, in @err.
 */
static const char *ref_runs(const struct words *w, uint64_t nr_units, unsigned long *bits,
			    char *err)
{
	uint64_t prev = 0, start = 0, len = 0;
	unsigned int i;
	int v = REF_OK;

	for (i = 0; i < w->argc; i++) {
		v = ref_word(w->argv[i], prev, nr_units, &start, &len);
		if (v != REF_OK)
			break;
		prev = start + len;
	}
	if (v == REF_MALFORMED)
		snprintf(err, ERR_LEN,
			 "layout_runs: word %u '%s': expected START:LEN or +GAP:LEN in hex units",
			 i + 1, w->argv[i]);
	else if (v == REF_EMPTY)
		snprintf(err, ERR_LEN, "layout_runs: word %u '%s': LEN must be at least 1",
			 i + 1, w->argv[i]);
	else if (v == REF_PAST)
		snprintf(err, ERR_LEN,
			 "layout_runs: word %u '%s': run ends past the origin's 0x%llx units",
			 i + 1, w->argv[i], (unsigned long long)nr_units);
	if (v != REF_OK)
		return err;
	for (prev = 0, i = 0; i < w->argc; i++) {
		CHECK(ref_word(w->argv[i], prev, nr_units, &start, &len) == REF_OK);
		prev = start + len;
		bits[(prev - 1) / BPW] |= 1ul << ((prev - 1) % BPW);
	}
	return NULL;
}

/* --- rc_layout_run_end() against the bits, one by one ------------------------ */

static uint64_t model_run_end(const struct rc_layout *l, uint64_t sector, uint64_t end)
{
	uint64_t u, b;

	for (u = sector >> l->shift; u <= (end - 1) >> l->shift && u < l->nr_units; u++)
		if (bit(l->bits, u)) {
			b = (u + 1) << l->shift;
			return b < end ? b : end;
		}
	return end;
}

static uint64_t xorshift(uint64_t *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	return *seed;
}

/* A few ranges of at most 1024 units from @seed, some past the origin. */
static void check_run_end(const struct rc_layout *l, uint64_t seed)
{
	uint64_t span = (l->nr_units + 2) << l->shift, sector, end;
	unsigned int q;

	CHECK(rc_layout_run_end(NULL, 0, 8) == 8);
	for (q = 0; q < 4; q++) {
		xorshift(&seed);
		sector = seed % span;
		end = sector + 1 + (seed >> 32) % (1024ull << l->shift);
		CHECK(rc_layout_run_end(l, sector, end) == model_run_end(l, sector, end));
	}
}

/* --- The fuzzed message -------------------------------------------------------- */

static void report(const struct words *w, const struct rc_layout *l, const char *err)
{
	unsigned int i;

	if (!verbose)
		return;
	fprintf(stderr, "fuzz_layout: %llu units of %u sectors, %llu set, %u words:",
		(unsigned long long)l->nr_units, 1u << l->shift, (unsigned long long)l->nr_set,
		w->argc);
	for (i = 0; i < w->argc; i++)
		fprintf(stderr, " [%s]", w->argv[i]);
	fprintf(stderr, " -> %s\n", err ? err : "ok");
}

static void fuzz(const uint8_t *data, size_t size)
{
	unsigned int shift = 3 + data[0] % 9, density = data[4] % 4;
	uint64_t units = (uint64_t)data[1] << 8 | data[2], unit = 1ull << shift;
	uint64_t origin = (units << shift) - (units ? data[3] % unit : 0);
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ data[4], nr_set, hash = 0xcbf29ce484222325ull;
	unsigned long *before, *want;
	struct fixture f;
	struct words w;
	char *err, want_err[ERR_LEN];
	const char *got, *ref;
	size_t i;

	if (split(data + HEADER, size - HEADER, &w))
		return;
	layout_new(&f, origin, shift);
	CHECK(f.l.nr_units == units);
	/* The bits an earlier message set: each one of 2, 4 or 8 (AND of 1-3 words). */
	for (i = 0; density && i < f.words; i++) {
		unsigned long m = ~0ul;
		unsigned int k;

		for (k = 0; k < 4 - density; k++)
			m &= (unsigned long)xorshift(&seed);
		if (i == f.words - 1 && units % BPW)
			m &= ~0ul >> (BPW - units % BPW);
		f.l.bits[i] = m;
	}
	f.l.nr_set = nr_set = popcount(f.l.bits, f.words);
	before = malloc(f.words * sizeof(*before) + 1);
	want = malloc(f.words * sizeof(*want) + 1);
	err = malloc(ERR_LEN);
	CHECK(before && want && err);
	memcpy(before, f.l.bits, f.words * sizeof(*before));
	memcpy(want, f.l.bits, f.words * sizeof(*want));
	memset(err, 'X', ERR_LEN);	/* no NUL but the one the parser writes */

	got = rc_layout_parse_runs(&f.l, w.argc, w.argv, err, ERR_LEN);
	report(&w, &f.l, got);
	ref = ref_runs(&w, units, want, want_err);
	if (got) {
		CHECK(got == err);
		CHECK(strlen(err) > 0 && strlen(err) < ERR_LEN);
		CHECK(ref);
		if (strcmp(err, ref))
			fprintf(stderr, "fuzz_layout: got '%s', want '%s'\n", err, ref);
		CHECK(!strcmp(err, ref));
		CHECK(f.l.nr_set == nr_set);
		CHECK(!memcmp(f.l.bits, before, f.words * sizeof(*before)));
	} else {
		if (ref)
			fprintf(stderr, "fuzz_layout: accepted, want '%s'\n", ref);
		CHECK(!ref);
		CHECK(!memcmp(f.l.bits, want, f.words * sizeof(*want)));
		CHECK(f.l.nr_set == popcount(f.l.bits, f.words));
		CHECK(f.l.nr_set >= nr_set && f.l.nr_set - nr_set <= w.argc);
	}
	CHECK(f.l.nr_units == units && f.l.shift == shift);

	for (i = 0; i < size; i++)
		hash = (hash ^ data[i]) * 0x100000001b3ull;
	check_run_end(&f.l, hash | 1);

	free(err);
	free(want);
	free(before);
	free(f.l.bits);
	words_free(&w);
}

/* --- Valid messages: the refusal side ------------------------------------------ */

/* @v in hex, 0..3 leading zeros (sometimes 20), in the gen_word() spelling. */
static void gen_hex(struct gen *g, struct gen_line *l, uint64_t v)
{
	unsigned int zeros = gen_pick(g, 8);
	char s[48];

	zeros = zeros == 7 ? 20 : zeros > 3 ? 0 : zeros;
	snprintf(s, sizeof(s), "%.*s%llx", (int)zeros, "00000000000000000000",
		 (unsigned long long)v);
	gen_word(g, l, s, 1, 1);
}

/*
 * A valid "layout_runs" message from the input's bytes: a layout of 1..2^17
 * units (the unit and the origin's short last unit as the input says), 1..32
 * runs within it, each absolute or (where it starts after the run before)
 * relative, numbers in hex in either case with leading zeros, separated by
 * the kernel's whitespace and partly backslash-escaped.  It must be
 * accepted, set each run's last unit and no other, and count them; and the
 * bitmap written back as the loader could send it (runs "0:LEN" then
 * "+0:LEN" from one boundary to the next, each ending at one) must load
 * into an empty layout as the same bitmap.
 */
static void gen_valid(const uint8_t *data, size_t size)
{
	struct gen g = { data, size };
	static struct gen_line line, back;	/* static: large */
	static uint64_t last[32];
	unsigned int shift = (unsigned int)gen_range(&g, RC_LAYOUT_SHIFT_MIN, RC_LAYOUT_SHIFT_MAX);
	uint64_t units = gen_range(&g, 1, 1u << 17), unit = 1ull << shift;
	uint64_t origin = (units << shift) - gen_range(&g, 0, unit - 1);
	unsigned int nruns = (unsigned int)gen_range(&g, 1, 32), i;
	uint64_t prev = 0, start, len, u, from;
	struct fixture f, f2;
	struct words w, w2;
	const char *err;
	char errbuf[ERR_LEN];
	unsigned long m;
	size_t k;

	line.len = back.len = 0;
	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &line);
	for (i = 0; i < nruns; i++) {
		int rel = prev < units && gen_pick(&g, 2);

		if (i)
			gen_dm_space(&g, &line);
		start = rel ? prev + gen_range(&g, 0, units - 1 - prev) : gen_range(&g, 0, units - 1);
		len = gen_range(&g, 1, units - start);
		if (rel) {
			line_putc(&line, '+');
			gen_hex(&g, &line, start - prev);
		} else {
			gen_hex(&g, &line, start);
		}
		line_putc(&line, ':');
		gen_hex(&g, &line, len);
		prev = start + len;
		last[i] = prev - 1;
	}
	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &line);

	CHECK(split((const uint8_t *)line.s, line.len, &w) == 0);
	GEN_CHECK(w.argc == nruns, line.s);
	layout_new(&f, origin, shift);
	GEN_CHECK(f.l.nr_units == units, line.s);
	err = rc_layout_parse_runs(&f.l, w.argc, w.argv, errbuf, sizeof(errbuf));
	if (err)
		fprintf(stderr, "fuzz_gen: refused: %s\n", err);
	GEN_CHECK(!err, line.s);
	for (i = 0; i < nruns; i++)
		GEN_CHECK(bit(f.l.bits, last[i]), line.s);
	GEN_CHECK(f.l.nr_set == popcount(f.l.bits, f.words), line.s);
	GEN_CHECK(f.l.nr_set >= 1 && f.l.nr_set <= nruns, line.s);

	/* Back from the bitmap alone: one run from each boundary to the next. */
	for (k = 0, from = 0; k < f.words; k++) {
		for (m = f.l.bits[k]; m; m &= m - 1) {
			u = k * BPW + (uint64_t)__builtin_ctzl(m);
			line_put(&back, from ? " +0:%llx" : "0:%llx",
				 (unsigned long long)(u + 1 - from));
			from = u + 1;
		}
	}
	CHECK(split((const uint8_t *)back.s, back.len, &w2) == 0);
	layout_new(&f2, origin, shift);
	err = rc_layout_parse_runs(&f2.l, w2.argc, w2.argv, errbuf, sizeof(errbuf));
	GEN_CHECK(!err, back.s);
	GEN_CHECK(f2.l.nr_set == f.l.nr_set, back.s);
	GEN_CHECK(!memcmp(f2.l.bits, f.l.bits, f.words * sizeof(unsigned long)), back.s);

	free(f2.l.bits);
	free(f.l.bits);
	words_free(&w2);
	words_free(&w);
	gen_valid_lines++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gen_valid(data, size);
	if (size >= HEADER)
		fuzz(data, size);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of FOR's layout (dm-redcap/rc-layout.c): the unit, the
 * bitmap's size, the "layout_runs" loader with its exact error texts, and
 * rc_layout_run_end() against a bit-by-bit model.
 */
#include "ctest.h"
#include "rc-layout.h"

#define MAX_WORDS	32
#define ERR_LEN		128	/* what the target's message handler passes */
#define BPW		RC_LAYOUT_BITS_PER_WORD

/* A layout of @origin sectors in units of 1 << @shift, its bits exactly allocated. */
static struct rc_layout *layout_new(u64 origin, unsigned int shift)
{
	struct rc_layout *l = malloc(sizeof(*l));
	size_t words = rc_layout_words(origin, shift);

	CHECK(l);
	/* calloc(0) may give NULL: one word then, which no test reads. */
	rc_layout_init(l, origin, shift, calloc(words ? words : 1, sizeof(unsigned long)));
	CHECK(l->bits);
	return l;
}

static void layout_free(struct rc_layout *l)
{
	free(l->bits);
	free(l);
}

static int bit(const struct rc_layout *l, u64 u)
{
	return (l->bits[u / BPW] >> (u % BPW)) & 1;
}

static u64 popcount(const struct rc_layout *l)
{
	size_t i, words = (l->nr_units + BPW - 1) / BPW;
	u64 n = 0;

	for (i = 0; i < words; i++)
		n += (u64)__builtin_popcountl(l->bits[i]);
	return n;
}

/* The set bits, in order, into @units (at most @max); how many. */
static unsigned int set_bits(const struct rc_layout *l, u64 *units, unsigned int max)
{
	unsigned int n = 0;
	u64 u;

	for (u = 0; u < l->nr_units; u++)
		if (bit(l, u)) {
			CHECK(n < max);
			units[n++] = u;
		}
	return n;
}

static const char *runs(struct rc_layout *l, const char *line)
{
	static char err[ERR_LEN];
	char *argv[MAX_WORDS];

	return rc_layout_parse_runs(l, ctest_words(line, argv, MAX_WORDS), argv, err, sizeof(err));
}

/*
 * @line on an empty layout of 0x14 units of 8 sectors, for CHECK_REFUSALS:
 * the error, after checking that the layout is still empty.
 */
static const char *refused_runs(const char *line)
{
	static char copy[ERR_LEN];
	struct rc_layout *l = layout_new(0x14 * 8, 3);
	const char *err = runs(l, line);

	CHECK_EQ(l->nr_set, 0);
	CHECK_EQ(popcount(l), 0);
	layout_free(l);
	if (!err)
		return NULL;
	snprintf(copy, sizeof(copy), "%s", err);
	return copy;
}

/* --- layout_clear's unit --------------------------------------------------- */

CTEST(unit_powers_of_two_8_to_2048)
{
	unsigned int shift = 99, s;

	for (s = 3; s <= 11; s++) {
		CHECK(!rc_layout_unit_shift(1ull << s, &shift));
		CHECK_EQ(shift, s);
	}
	CHECK_EQ(RC_LAYOUT_SHIFT_MIN, 3);
	CHECK_EQ(RC_LAYOUT_SHIFT_MAX, 11);
}

CTEST(unit_refusals)
{
	static const u64 bad[] = {
		0, 1, 2, 4, 7, 9, 12, 24, 1000, 2047, 2049, 3072, 4096, 1ull << 32,
		(1ull << 32) | 8, 1ull << 63, ~0ull,
	};
	unsigned int i, shift;
	const char *err;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		shift = 99;
		err = rc_layout_unit_shift(bad[i], &shift);
		CHECK(err);
		CHECK_STREQ(err, "layout_clear: unit must be a power of 2 in 8..2048 sectors");
		CHECK_EQ(shift, 99);
	}
}

/* --- The bitmap's size -------------------------------------------------------- */

CTEST(words_one_bit_per_unit_rounded_up)
{
	CHECK_EQ(rc_layout_words(0, 3), 0);
	CHECK_EQ(rc_layout_words(1, 3), 1);
	CHECK_EQ(rc_layout_words(BPW * 8, 3), 1);
	CHECK_EQ(rc_layout_words(BPW * 8 + 1, 3), 2);	/* a partial last unit */
	CHECK_EQ(rc_layout_words(BPW * 8 + 8, 3), 2);
	CHECK_EQ(rc_layout_words(BPW * 2048, 11), 1);
	CHECK_EQ(rc_layout_words(BPW * 2048 + 1, 11), 2);
	/* 1 TiB: 2^28 units of 4 KiB, 2^20 of 1 MiB (32 MiB and 128 KiB of bits) */
	CHECK_EQ(rc_layout_words(1ull << 31, 3), (1ull << 28) / BPW);
	CHECK_EQ(rc_layout_words(1ull << 31, 11), (1ull << 20) / BPW);
	/* the largest origin: no overflow on the way */
	CHECK_EQ(rc_layout_words(~0ull, 3), (1ull << 61) / BPW);
	CHECK_EQ(rc_layout_words(~0ull, 11), (1ull << 53) / BPW);
}

CTEST(init_is_empty_and_leaves_bits_alone)
{
	unsigned long bits[2] = { 0x5a, 0 };
	struct rc_layout l;

	memset(&l, 0xff, sizeof(l));
	rc_layout_init(&l, 20, 3, bits);
	CHECK_EQ(l.nr_units, 3);	/* 8 + 8 + 4 sectors */
	CHECK_EQ(l.shift, 3);
	CHECK_EQ(l.nr_set, 0);
	CHECK(l.bits == bits);
	CHECK_EQ(bits[0], 0x5a);	/* the caller zeroes them */
	rc_layout_init(&l, 0, 11, NULL);
	CHECK_EQ(l.nr_units, 0);
	CHECK(!l.bits);
	rc_layout_init(&l, ~0ull, 3, bits);
	CHECK_EQ(l.nr_units, 1ull << 61);
}

/* --- layout_runs ---------------------------------------------------------------- */

CTEST(runs_absolute_set_each_runs_last_unit)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	u64 u[8];

	CHECK(!runs(l, "0:1 10:8 3:2"));
	CHECK_EQ(set_bits(l, u, 8), 3);
	CHECK_EQ(u[0], 0);
	CHECK_EQ(u[1], 4);
	CHECK_EQ(u[2], 0x17);
	CHECK_EQ(l->nr_set, 3);
	layout_free(l);
}

CTEST(runs_relative_start_after_the_previous_run)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	u64 u[8];

	/* 5..7, then 8..9 (gap 0), then 0x14 (gap 0xa after 10) */
	CHECK(!runs(l, "5:3 +0:2 +a:1"));
	CHECK_EQ(set_bits(l, u, 8), 3);
	CHECK_EQ(u[0], 7);
	CHECK_EQ(u[1], 9);
	CHECK_EQ(u[2], 0x14);
	CHECK_EQ(l->nr_set, 3);
	/* an absolute word in between moves "the previous end" */
	CHECK(!runs(l, "1:1 18:2 +2:1"));
	CHECK_EQ(set_bits(l, u, 8), 6);
	CHECK_EQ(u[0], 1);
	CHECK_EQ(u[5], 0x1c);
	CHECK_EQ(l->nr_set, 6);
	layout_free(l);
}

/* The first word's "previous end" is 0, and each message starts again. */
CTEST(runs_first_word_relative_starts_after_unit_0)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	u64 u[8];

	CHECK(!runs(l, "+5:3"));
	CHECK(!runs(l, "+0:1"));
	CHECK_EQ(set_bits(l, u, 8), 2);
	CHECK_EQ(u[0], 0);
	CHECK_EQ(u[1], 7);
	layout_free(l);
}

CTEST(runs_hex_in_either_case_with_leading_zeros)
{
	struct rc_layout *l = layout_new(0x100 * 8, 3);
	u64 u[8];

	CHECK(!runs(l, "Ab:1 00aB:0001 +000:C 00000000000000000000000000F0:0000000000000000000001"));
	CHECK_EQ(set_bits(l, u, 8), 3);
	CHECK_EQ(u[0], 0xab);
	CHECK_EQ(u[1], 0xb7);
	CHECK_EQ(u[2], 0xf0);
	CHECK_EQ(l->nr_set, 3);
	layout_free(l);
}

CTEST(runs_no_words_do_nothing)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	char err[ERR_LEN] = "untouched";

	CHECK(!rc_layout_parse_runs(l, 0, NULL, err, sizeof(err)));
	CHECK_EQ(l->nr_set, 0);
	CHECK_EQ(popcount(l), 0);
	CHECK_STREQ(err, "untouched");
	layout_free(l);
}

/* 0x14 units, the last partial: a run may end in it, not after it. */
CTEST(runs_up_to_the_last_unit)
{
	struct rc_layout *l = layout_new(0x13 * 8 + 1, 3);

	CHECK_EQ(l->nr_units, 0x14);
	CHECK(!runs(l, "13:1"));
	CHECK(!runs(l, "0:14"));
	CHECK(!runs(l, "12:1 +0:1"));
	CHECK_EQ(l->nr_set, 2);
	CHECK(bit(l, 0x13) && bit(l, 0x12));
	CHECK_STREQ(runs(l, "14:1"),
		    "layout_runs: word 1 '14:1': run ends past the origin's 0x14 units");
	CHECK_STREQ(runs(l, "0:15"),
		    "layout_runs: word 1 '0:15': run ends past the origin's 0x14 units");
	CHECK_STREQ(runs(l, "13:1 +0:1"),
		    "layout_runs: word 2 '+0:1': run ends past the origin's 0x14 units");
	CHECK_EQ(l->nr_set, 2);
	layout_free(l);
}

CTEST(runs_on_an_empty_origin_are_all_past_it)
{
	struct rc_layout *l = layout_new(0, 3);

	CHECK_STREQ(runs(l, "0:1"),
		    "layout_runs: word 1 '0:1': run ends past the origin's 0x0 units");
	layout_free(l);
}

CTEST(runs_without_a_layout)
{
	struct rc_layout l;
	char err[ERR_LEN], w[] = "0:1", *argv[] = { w };

	rc_layout_init(&l, 1024, 3, NULL);
	CHECK_STREQ(rc_layout_parse_runs(&l, 1, argv, err, sizeof(err)),
		    "layout_runs: no layout: send layout_clear UNIT first");
	CHECK_STREQ(rc_layout_parse_runs(NULL, 1, argv, err, sizeof(err)),
		    "layout_runs: no layout: send layout_clear UNIT first");
	CHECK_EQ(l.nr_set, 0);
}

/* The texts the target logs (docs/redcap.rst points at rc-layout.h). */
CTEST(runs_refusals)
{
	static const struct ctest_refusal bad[] = {
		/* not START:LEN or +GAP:LEN in hex */
		{ "5", "layout_runs: word 1 '5': expected START:LEN or +GAP:LEN in hex units" },
		{ ":5", "layout_runs: word 1 ':5': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:", "layout_runs: word 1 '5:': expected START:LEN or +GAP:LEN in hex units" },
		{ ":", "layout_runs: word 1 ':': expected START:LEN or +GAP:LEN in hex units" },
		{ "+", "layout_runs: word 1 '+': expected START:LEN or +GAP:LEN in hex units" },
		{ "+:5", "layout_runs: word 1 '+:5': expected START:LEN or +GAP:LEN in hex units" },
		{ "++5:1", "layout_runs: word 1 '++5:1': expected START:LEN or +GAP:LEN in hex units" },
		{ "-5:1", "layout_runs: word 1 '-5:1': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:+1", "layout_runs: word 1 '5:+1': expected START:LEN or +GAP:LEN in hex units" },
		{ "0x5:1", "layout_runs: word 1 '0x5:1': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:0x1", "layout_runs: word 1 '5:0x1': expected START:LEN or +GAP:LEN in hex units" },
		{ "5;1", "layout_runs: word 1 '5;1': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:1:1", "layout_runs: word 1 '5:1:1': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:1,", "layout_runs: word 1 '5:1,': expected START:LEN or +GAP:LEN in hex units" },
		{ "5:g", "layout_runs: word 1 '5:g': expected START:LEN or +GAP:LEN in hex units" },
		{ "5h:1", "layout_runs: word 1 '5h:1': expected START:LEN or +GAP:LEN in hex units" },
		{ "1:1 12:zz", "layout_runs: word 2 '12:zz': expected START:LEN or +GAP:LEN in hex units" },
		/* a malformed word is that before its LEN or range is looked at */
		{ "0:0:", "layout_runs: word 1 '0:0:': expected START:LEN or +GAP:LEN in hex units" },
		{ "ffffffffffffffffff:1x",
		  "layout_runs: word 1 'ffffffffffffffffff:1x': expected START:LEN or +GAP:LEN in hex units" },
		/* LEN 0, before the range */
		{ "5:0", "layout_runs: word 1 '5:0': LEN must be at least 1" },
		{ "+0:0", "layout_runs: word 1 '+0:0': LEN must be at least 1" },
		{ "5:0000", "layout_runs: word 1 '5:0000': LEN must be at least 1" },
		{ "99:0", "layout_runs: word 1 '99:0': LEN must be at least 1" },
		{ "10000000000000000:0",
		  "layout_runs: word 1 '10000000000000000:0': LEN must be at least 1" },
		/* past the origin's 0x14 units */
		{ "10:8", "layout_runs: word 1 '10:8': run ends past the origin's 0x14 units" },
		{ "14:1", "layout_runs: word 1 '14:1': run ends past the origin's 0x14 units" },
		{ "0:15", "layout_runs: word 1 '0:15': run ends past the origin's 0x14 units" },
		{ "+14:1", "layout_runs: word 1 '+14:1': run ends past the origin's 0x14 units" },
		{ "10:4 +1:1", "layout_runs: word 2 '+1:1': run ends past the origin's 0x14 units" },
		/* ... and past 64 bits: one too many digits, or a sum */
		{ "ffffffffffffffff:1",
		  "layout_runs: word 1 'ffffffffffffffff:1': run ends past the origin's 0x14 units" },
		{ "1:ffffffffffffffff",
		  "layout_runs: word 1 '1:ffffffffffffffff': run ends past the origin's 0x14 units" },
		{ "10000000000000000:1",
		  "layout_runs: word 1 '10000000000000000:1': run ends past the origin's 0x14 units" },
		{ "1:10000000000000001",
		  "layout_runs: word 1 '1:10000000000000001': run ends past the origin's 0x14 units" },
		{ "1:10000000000000000",	/* 2^64, 0 in 64 bits: not LEN 0 */
		  "layout_runs: word 1 '1:10000000000000000': run ends past the origin's 0x14 units" },
		{ "0:1 +ffffffffffffffff:1",
		  "layout_runs: word 2 '+ffffffffffffffff:1': run ends past the origin's 0x14 units" },
		{ "13:1 +fffffffffffffff0:1",
		  "layout_runs: word 2 '+fffffffffffffff0:1': run ends past the origin's 0x14 units" },
		/* the first bad word is named, counted from 1 */
		{ "1:1 x 2:0", "layout_runs: word 2 'x': expected START:LEN or +GAP:LEN in hex units" },
		{ "0:1 1:1 2:1 3:1 4:1 5:1 6:1 7:1 8:1 9:1 a:1 b:0 c:0",
		  "layout_runs: word 12 'b:0': LEN must be at least 1" },
	};
	CHECK_REFUSALS(bad, refused_runs);
}

/* Words dm_split_args() never yields, from another caller. */
CTEST(runs_refuse_empty_and_spaced_words)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	char err[ERR_LEN], w0[] = "", w1[] = " 5:1", w2[] = "5:1 ", w3[] = "5 :1";
	char *argv[] = { w0, w1, w2, w3 };

	CHECK_STREQ(rc_layout_parse_runs(l, 1, argv, err, sizeof(err)),
		    "layout_runs: word 1 '': expected START:LEN or +GAP:LEN in hex units");
	CHECK_STREQ(rc_layout_parse_runs(l, 1, argv + 1, err, sizeof(err)),
		    "layout_runs: word 1 ' 5:1': expected START:LEN or +GAP:LEN in hex units");
	CHECK_STREQ(rc_layout_parse_runs(l, 1, argv + 2, err, sizeof(err)),
		    "layout_runs: word 1 '5:1 ': expected START:LEN or +GAP:LEN in hex units");
	CHECK_STREQ(rc_layout_parse_runs(l, 1, argv + 3, err, sizeof(err)),
		    "layout_runs: word 1 '5 :1': expected START:LEN or +GAP:LEN in hex units");
	CHECK_EQ(popcount(l), 0);
	layout_free(l);
}

/* A bad word 5 leaves what words 1..4 and the messages before set alone. */
CTEST(runs_all_or_nothing)
{
	struct rc_layout *l = layout_new(0x200 * 8, 3);
	unsigned long before[0x200 / 8 / sizeof(unsigned long) + 1];
	size_t words = rc_layout_words(0x200 * 8, 3);
	static const char *const bad[] = {
		"6:2 +0:1 a0:1 1ff:1 5:zz 1f:1",
		"6:2 +0:1 a0:1 1ff:1 5:0 1f:1",
		"6:2 +0:1 a0:1 1ff:1 +1:1 1f:1",	/* past 0x200 */
		"6:2 +0:1 a0:1 1ff:1 ffffffffffffffffff:1",
	};
	unsigned int i;

	CHECK(words <= sizeof(before) / sizeof(before[0]));
	CHECK(!runs(l, "1:1 3:1 +40:1"));
	memcpy(before, l->bits, words * sizeof(unsigned long));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *err = runs(l, bad[i]);

		CHECK(err);
		CHECK(!strncmp(err, "layout_runs: word 5 '", 21));
		CHECK_EQ(l->nr_set, 3);
		CHECK(!memcmp(before, l->bits, words * sizeof(unsigned long)));
	}
	layout_free(l);
}

/* nr_set counts bits, not runs: a boundary already set is not counted again. */
CTEST(runs_nr_set_counts_each_bit_once)
{
	struct rc_layout *l = layout_new(0x400 * 8, 3);

	CHECK(!runs(l, "0:4 0:4 2:2 +fc:1"));	/* 3, 3, 3, 0x100 */
	CHECK_EQ(l->nr_set, 2);
	CHECK(!runs(l, "3:1"));
	CHECK_EQ(l->nr_set, 2);
	CHECK(!runs(l, "0:1 100:1 3ff:1"));
	CHECK_EQ(l->nr_set, 4);
	CHECK_EQ(popcount(l), 4);
	layout_free(l);
}

/* Bits in every word, at both ends of each: the word arithmetic. */
CTEST(runs_set_bits_across_words)
{
	struct rc_layout *l = layout_new(4 * BPW * 8, 3);
	char line[256];
	u64 u[16];

	snprintf(line, sizeof(line), "%lx:1 %lx:1 %lx:1 %lx:2 %lx:1", (unsigned long)BPW - 1,
		 (unsigned long)BPW, (unsigned long)2 * BPW - 1, (unsigned long)3 * BPW - 1,
		 (unsigned long)4 * BPW - 1);
	CHECK(!runs(l, line));
	CHECK_EQ(set_bits(l, u, 16), 5);
	CHECK_EQ(u[0], BPW - 1);
	CHECK_EQ(u[1], BPW);
	CHECK_EQ(u[2], 2 * BPW - 1);
	CHECK_EQ(u[3], 3 * BPW);
	CHECK_EQ(u[4], 4 * BPW - 1);
	CHECK_EQ(l->bits[0], 1ul << (BPW - 1));
	CHECK_EQ(l->bits[1], 1ul | 1ul << (BPW - 1));
	CHECK_EQ(l->bits[3], 1ul | 1ul << (BPW - 1));
	layout_free(l);
}

/* A long word is cut to the buffer, never written past it. */
CTEST(runs_error_cut_to_the_buffer)
{
	struct rc_layout *l = layout_new(0x20 * 8, 3);
	char word[300], err[16], *argv[1] = { word };

	memset(word, 'f', sizeof(word) - 1);
	word[sizeof(word) - 1] = '\0';
	CHECK(rc_layout_parse_runs(l, 1, argv, err, sizeof(err)) == err);
	CHECK_STREQ(err, "layout_runs: wo");
	layout_free(l);
}

/* --- rc_layout_run_end() ------------------------------------------------------- */

CTEST(run_end_without_a_layout_is_the_end)
{
	struct rc_layout l;

	CHECK_EQ(rc_layout_run_end(NULL, 0, 100), 100);
	CHECK_EQ(rc_layout_run_end(NULL, 99, 100), 100);
	rc_layout_init(&l, 1024, 3, NULL);
	CHECK_EQ(rc_layout_run_end(&l, 5, 100), 100);
}

CTEST(run_end_without_a_boundary_is_the_end)
{
	struct rc_layout *l = layout_new(1024, 3);

	CHECK_EQ(rc_layout_run_end(l, 0, 1024), 1024);
	CHECK_EQ(rc_layout_run_end(l, 17, 300), 300);
	CHECK_EQ(rc_layout_run_end(l, 1023, 1024), 1024);
	CHECK_EQ(rc_layout_run_end(l, 7, 7), 7);	/* empty range: @end */
	layout_free(l);
}

CTEST(run_end_boundary_in_the_middle)
{
	struct rc_layout *l = layout_new(1024, 3);

	CHECK(!runs(l, "0:6"));		/* bit 5: a run ends at sector 48 */
	CHECK_EQ(rc_layout_run_end(l, 0, 100), 48);
	CHECK_EQ(rc_layout_run_end(l, 8, 1024), 48);
	CHECK_EQ(rc_layout_run_end(l, 48, 100), 100);	/* the next run has no end */
	CHECK_EQ(rc_layout_run_end(l, 49, 1024), 1024);
	layout_free(l);
}

CTEST(run_end_boundary_in_the_first_unit)
{
	struct rc_layout *l = layout_new(1024, 3);

	CHECK(!runs(l, "5:1 9:1"));
	CHECK_EQ(rc_layout_run_end(l, 40, 100), 48);
	/* not unit-aligned: the end of the unit holding the sector */
	CHECK_EQ(rc_layout_run_end(l, 43, 100), 48);
	CHECK_EQ(rc_layout_run_end(l, 47, 48), 48);
	CHECK_EQ(rc_layout_run_end(l, 47, 1000), 48);
	CHECK_EQ(rc_layout_run_end(l, 45, 46), 46);	/* capped at @end */
	/* the boundary before the sector's unit is behind it */
	CHECK_EQ(rc_layout_run_end(l, 48, 1000), 80);
	CHECK_EQ(rc_layout_run_end(l, 53, 1000), 80);
	layout_free(l);
}

CTEST(run_end_boundary_in_the_last_unit_of_the_range)
{
	struct rc_layout *l = layout_new(1024, 3);

	CHECK(!runs(l, "5:1"));
	CHECK_EQ(rc_layout_run_end(l, 0, 48), 48);
	CHECK_EQ(rc_layout_run_end(l, 0, 45), 45);	/* ends inside unit 5: capped */
	CHECK_EQ(rc_layout_run_end(l, 0, 41), 41);
	CHECK_EQ(rc_layout_run_end(l, 0, 40), 40);	/* unit 5 is past the range */
	CHECK_EQ(rc_layout_run_end(l, 3, 41), 41);
	layout_free(l);
}

CTEST(run_end_past_the_origin)
{
	struct rc_layout *l = layout_new(0x13 * 8 + 1, 3);	/* 0x14 units, 153 sectors */

	CHECK_EQ(rc_layout_run_end(l, 0, 1000), 1000);	/* no bits past the origin */
	CHECK_EQ(rc_layout_run_end(l, 153, 1000), 1000);
	CHECK_EQ(rc_layout_run_end(l, 160, 1000), 1000);
	CHECK(!runs(l, "13:1"));
	CHECK_EQ(rc_layout_run_end(l, 0, 1000), 160);
	CHECK_EQ(rc_layout_run_end(l, 152, 153), 153);
	CHECK_EQ(rc_layout_run_end(l, 0, ~0ull), 160);
	CHECK_EQ(rc_layout_run_end(l, 1ull << 62, ~0ull), ~0ull);
	layout_free(l);
}

CTEST(run_end_across_words)
{
	struct rc_layout *l = layout_new(8 * BPW * 8, 3);
	char line[64];

	snprintf(line, sizeof(line), "2:1 %lx:1", (unsigned long)(5 * BPW + 7));
	CHECK(!runs(l, line));
	CHECK_EQ(rc_layout_run_end(l, 0, 8 * BPW * 8), 3 * 8);
	/* from past unit 2 in word 0 to unit 5 * BPW + 7 in word 5 */
	CHECK_EQ(rc_layout_run_end(l, 3 * 8, 8 * BPW * 8), (5 * BPW + 8) * 8);
	CHECK_EQ(rc_layout_run_end(l, BPW * 8 + 3, 8 * BPW * 8), (5 * BPW + 8) * 8);
	/* the range stops in word 5 just before the bit */
	CHECK_EQ(rc_layout_run_end(l, 3 * 8, (5 * BPW + 7) * 8), (5 * BPW + 7) * 8);
	/* or in a word of its own */
	CHECK_EQ(rc_layout_run_end(l, 3 * 8, 4 * BPW * 8 + 1), 4 * BPW * 8 + 1);
	CHECK_EQ(rc_layout_run_end(l, (5 * BPW + 8) * 8, 8 * BPW * 8), 8 * BPW * 8);
	layout_free(l);
}

CTEST(run_end_unit_1_mib)
{
	struct rc_layout *l = layout_new(1ull << 31, 11);	/* 1 TiB, 2^20 units */

	CHECK_EQ(l->nr_units, 1ull << 20);
	CHECK(!runs(l, "0:1 3e8:1 fffff:1"));			/* units 0, 1000, 2^20 - 1 */
	CHECK_EQ(rc_layout_run_end(l, 0, 1ull << 31), 2048);
	CHECK_EQ(rc_layout_run_end(l, 2047, 1ull << 31), 2048);
	CHECK_EQ(rc_layout_run_end(l, 2048, 1ull << 31), 1001 * 2048);
	CHECK_EQ(rc_layout_run_end(l, 1000 * 2048 + 5, 1000 * 2048 + 300), 1000 * 2048 + 300);
	CHECK_EQ(rc_layout_run_end(l, 1001 * 2048, 1ull << 31), 1ull << 31);
	CHECK_EQ(rc_layout_run_end(l, 1001 * 2048, (1ull << 31) - 1), (1ull << 31) - 1);
	layout_free(l);
}

/* The model: the first set unit from the sector's on, bit by bit. */
static u64 model_run_end(const unsigned char *set, u64 nr_units, unsigned int shift,
			 u64 sector, u64 end)
{
	u64 u, b;

	if (sector >= end)
		return end;
	for (u = sector >> shift; u <= (end - 1) >> shift && u < nr_units; u++)
		if (set[u]) {
			b = (u + 1) << shift;
			return b < end ? b : end;
		}
	return end;
}

CTEST(run_end_matches_a_bit_by_bit_model)
{
	static unsigned char set[6 * 64 + 40];
	unsigned int round, q, shift, density;
	u64 nr_units, origin, unit, u, sector, end, span;
	struct rc_layout *l;
	char line[64];

	ctest_rng = 0x5eed1a7011ull;
	for (round = 0; round < 300; round++) {
		shift = 3 + (unsigned int)ctest_rand(9);
		unit = 1ull << shift;
		nr_units = 1 + ctest_rand(sizeof(set));
		/* sometimes a partial last unit */
		origin = nr_units * unit - (ctest_rand(2) ? ctest_rand(unit) : 0);
		l = layout_new(origin, shift);
		CHECK_EQ(l->nr_units, nr_units);
		density = (unsigned int)ctest_rand(5);	/* 0: none .. 4: every other */
		memset(set, 0, sizeof(set));
		for (u = 0; u < nr_units; u++) {
			if (!density || ctest_rand(64 >> density))
				continue;
			set[u] = 1;
			snprintf(line, sizeof(line), "%llx:1", (unsigned long long)u);
			CHECK(!runs(l, line));
		}
		for (u = 0, q = 0; u < nr_units; u++)
			q += set[u];
		CHECK_EQ(l->nr_set, q);
		CHECK_EQ(popcount(l), q);
		for (q = 0; q < 200; q++) {
			span = (nr_units + 3) * unit;
			sector = ctest_rand(span);
			end = sector + 1 + ctest_rand(span - sector + (ctest_rand(8) ? 0 : span));
			CHECK_EQ(rc_layout_run_end(l, sector, end),
				 model_run_end(set, nr_units, shift, sector, end));
		}
		layout_free(l);
	}
}

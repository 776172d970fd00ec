// SPDX-License-Identifier: GPL-2.0
/*
 * FOR's layout: the run-end bitmap, its loader and its lookup; see
 * rc-layout.h.
 */
#include "rc-layout.h"

#define RC_LAYOUT_WORD_MASK	(RC_LAYOUT_BITS_PER_WORD - 1)

/* What is wrong with a word of "layout_runs". */
enum rc_layout_verdict {
	RC_RUN_OK,
	RC_RUN_MALFORMED,	/* not START:LEN or +GAP:LEN in hex */
	RC_RUN_EMPTY,		/* LEN 0 */
	RC_RUN_PAST,		/* ends past the origin, or does not fit 64 bits */
};

const char *rc_layout_unit_shift(u64 unit_sectors, unsigned int *shift)
{
	unsigned int s;

	for (s = RC_LAYOUT_SHIFT_MIN; s <= RC_LAYOUT_SHIFT_MAX; s++) {
		if (unit_sectors == 1ull << s) {
			*shift = s;
			return NULL;
		}
	}
	return "layout_clear: unit must be a power of 2 in 8..2048 sectors";
}

static u64 rc_layout_units(u64 origin_sectors, unsigned int shift)
{
	return (origin_sectors >> shift) + !!(origin_sectors & ((1ull << shift) - 1));
}

size_t rc_layout_words(u64 origin_sectors, unsigned int shift)
{
	u64 units = rc_layout_units(origin_sectors, shift);
	u64 words = units / RC_LAYOUT_BITS_PER_WORD + !!(units & RC_LAYOUT_WORD_MASK);

	return (size_t)words == words ? (size_t)words : SIZE_MAX;
}

void rc_layout_init(struct rc_layout *l, u64 origin_sectors, unsigned int shift,
		    unsigned long *bits)
{
	l->nr_units = rc_layout_units(origin_sectors, shift);
	l->shift = shift;
	l->nr_set = 0;
	l->bits = bits;
}

static int rc_layout_hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A hex number at *@s, at least one digit: *@s moves past it.  False if
 * there is no digit; *@big is set if it does not fit 64 bits.
 */
static bool rc_layout_hex(const char **s, u64 *v, bool *big)
{
	const char *p = *s;
	u64 n = 0;
	int d;

	for (; (d = rc_layout_hexdigit(*p)) >= 0; p++) {
		if (n >> 60)
			*big = true;
		n = n << 4 | (u64)d;
	}
	*v = n;
	if (p == *s)
		return false;
	*s = p;
	return true;
}

/*
 * One word: its run [*@start, *@start + *@len) with @prev_end the end of
 * the word before (0 for the first), checked against @nr_units.
 */
static enum rc_layout_verdict rc_layout_word(const char *w, u64 prev_end, u64 nr_units,
					     u64 *start, u64 *len)
{
	bool rel = *w == '+', big_start = false, big_len = false;
	u64 a, n;

	if (rel)
		w++;
	if (!rc_layout_hex(&w, &a, &big_start) || *w++ != ':' ||
	    !rc_layout_hex(&w, &n, &big_len) || *w)
		return RC_RUN_MALFORMED;
	if (!n && !big_len)
		return RC_RUN_EMPTY;
	if (big_start || big_len)
		return RC_RUN_PAST;
	if (rel) {
		if (a > ~0ull - prev_end)
			return RC_RUN_PAST;
		a += prev_end;
	}
	if (a >= nr_units || n > nr_units - a)
		return RC_RUN_PAST;
	*start = a;
	*len = n;
	return RC_RUN_OK;
}

/* Sets the bit of @unit (< nr_units), counting it if it was clear. */
static void rc_layout_set(struct rc_layout *l, u64 unit)
{
	unsigned long *p = &l->bits[unit / RC_LAYOUT_BITS_PER_WORD];
	unsigned long mask = 1ul << (unit & RC_LAYOUT_WORD_MASK);
	unsigned long old = RC_LAYOUT_LOAD(p);

	if (!(old & mask)) {
		RC_LAYOUT_STORE(p, old | mask);
		/* status reads it without the loader's mutex */
		RC_LAYOUT_STORE(&l->nr_set, l->nr_set + 1);
	}
}

/* The error of word @i (from 0), @word, in @err. */
static const char *rc_layout_refusal(const struct rc_layout *l, enum rc_layout_verdict v,
				     unsigned int i, const char *word, char *err, size_t errlen)
{
	switch (v) {
	case RC_RUN_MALFORMED:
		snprintf(err, errlen,
			 "layout_runs: word %u '%s': expected START:LEN or +GAP:LEN in hex units",
			 i + 1, word);
		break;
	case RC_RUN_EMPTY:
		snprintf(err, errlen, "layout_runs: word %u '%s': LEN must be at least 1",
			 i + 1, word);
		break;
	default:
		snprintf(err, errlen,
			 "layout_runs: word %u '%s': run ends past the origin's 0x%llx units",
			 i + 1, word, (unsigned long long)l->nr_units);
		break;
	}
	return err;
}

const char *rc_layout_parse_runs(struct rc_layout *l, unsigned int argc, char **argv,
				 char *err, size_t errlen)
{
	u64 prev = 0, start = 0, len = 0;
	enum rc_layout_verdict v;
	unsigned int i;

	if (!l || !l->bits) {
		snprintf(err, errlen, "layout_runs: no layout: send layout_clear UNIT first");
		return err;
	}
	for (i = 0; i < argc; i++) {
		v = rc_layout_word(argv[i], prev, l->nr_units, &start, &len);
		if (v != RC_RUN_OK)
			return rc_layout_refusal(l, v, i, argv[i], err, errlen);
		prev = start + len;
	}
	/* Every word is good: the same again, setting each run's last unit. */
	for (prev = 0, i = 0; i < argc; i++) {
		rc_layout_word(argv[i], prev, l->nr_units, &start, &len);
		prev = start + len;
		rc_layout_set(l, prev - 1);
	}
	return NULL;
}

u64 rc_layout_run_end(const struct rc_layout *l, u64 sector, u64 end)
{
	const unsigned long *bits;
	u64 first, last, scan_last, u;
	unsigned long word;
	size_t w, w_last;

	if (!l || sector >= end)
		return end;
	bits = l->bits;
	first = sector >> l->shift;
	if (!bits || first >= l->nr_units)
		return end;
	last = (end - 1) >> l->shift;
	scan_last = last < l->nr_units ? last : l->nr_units - 1;

	w = first / RC_LAYOUT_BITS_PER_WORD;
	w_last = scan_last / RC_LAYOUT_BITS_PER_WORD;
	/*
	 * The first set bit from @first's on, up to the word of the range's
	 * last unit (or the origin's): one at or past @last is @end, the end
	 * of the last unit being at or past @end.
	 */
	word = RC_LAYOUT_LOAD(&bits[w]) & (~0ul << (first & RC_LAYOUT_WORD_MASK));
	while (!word) {
		if (w == w_last)
			return end;
		word = RC_LAYOUT_LOAD(&bits[++w]);
	}
	u = (u64)w * RC_LAYOUT_BITS_PER_WORD + __builtin_ctzl(word);
	return u < last ? (u + 1) << l->shift : end;
}

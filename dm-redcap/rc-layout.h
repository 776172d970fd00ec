/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of FOR's (file-oriented read-ahead) layout: a bitmap over
 * the origin telling where each file's run of consecutive blocks ends.
 *
 * Vocabulary: a "unit" is an aligned run of 1 << shift origin sectors
 * (unit = sector >> shift), 8 (4 KiB) to 2048 (1 MiB) sectors; the layout
 * has a bit per unit of the origin, nr_units of them, the last unit partial
 * when the origin is not a whole number of units.  A set bit says a file's
 * run ends at the end of that unit: a fill reading ahead stops there.
 *
 * Concurrency: the loader (rc_layout_parse_runs()) runs under the caller's
 * mutex, one at a time; the I/O path calls rc_layout_run_end() with no lock
 * while a loader may be setting bits.  So every load and store of a word of
 * bits goes through RC_LAYOUT_LOAD()/RC_LAYOUT_STORE() (READ_ONCE() and
 * WRITE_ONCE() in the kernel), and a half-loaded layout is tolerated: the
 * bits are advice, a missing or stale boundary costs speed, never data.
 * nr_units, shift and bits are set by rc_layout_init() before the layout is
 * published to readers (RCU in the glue) and never change after; nr_set is
 * written only by the loader, with RC_LAYOUT_STORE(): exact under its
 * mutex, READ_ONCE() without.  Nothing here allocates, sleeps or takes a
 * lock.
 */
#ifndef RC_LAYOUT_H
#define RC_LAYOUT_H

#include "rc-types.h"

/* The shim: one word of bits, read and written while the other side runs. */
#ifdef __KERNEL__
#include <linux/compiler.h>
#define RC_LAYOUT_LOAD(p)	READ_ONCE(*(p))
#define RC_LAYOUT_STORE(p, v)	WRITE_ONCE(*(p), (v))
#else
#define RC_LAYOUT_LOAD(p)	(*(p))
#define RC_LAYOUT_STORE(p, v)	(*(p) = (v))
#endif

#define RC_LAYOUT_SHIFT_MIN	3	/* unit 8 sectors = 4 KiB */
#define RC_LAYOUT_SHIFT_MAX	11	/* unit 2048 sectors = 1 MiB */
#define RC_LAYOUT_BITS_PER_WORD	(8 * sizeof(unsigned long))

struct rc_layout {
	u64 nr_units;		/* DIV_ROUND_UP(origin sectors, unit) */
	unsigned int shift;	/* unit = 1 << shift sectors */
	/* boundary bits set; exact: only the loader, under its mutex, writes */
	u64 nr_set;
	unsigned long *bits;	/* nr_units bits, caller-allocated, zeroed */
};

/*
 * The argument of "layout_clear": a unit of @unit_sectors, a power of two
 * 8..2048.  Pure function.  NULL with its log2 in *@shift, or (*@shift
 * untouched) the constant error text
 *   "layout_clear: unit must be a power of 2 in 8..2048 sectors"
 */
const char *rc_layout_unit_shift(u64 unit_sectors, unsigned int *shift);

/*
 * Words of bits to allocate (and zero) for an origin of @origin_sectors in
 * units of 1 << @shift (RC_LAYOUT_SHIFT_MIN..MAX): 0 for an empty origin,
 * SIZE_MAX if the count does not fit a size_t.  Pure function.
 */
size_t rc_layout_words(u64 origin_sectors, unsigned int shift);

/*
 * An empty layout of an origin of @origin_sectors in units of 1 << @shift
 * (RC_LAYOUT_SHIFT_MIN..MAX) over @bits: rc_layout_words() words, already
 * zeroed (not touched here), or NULL for no bits.  No lock needed: the
 * layout is not published yet.
 */
void rc_layout_init(struct rc_layout *l, u64 origin_sectors, unsigned int shift,
		    unsigned long *bits);

/*
 * The words of one "layout_runs" message (@argv after the verb), with the
 * loader's mutex held.  Each word is "START:LEN" (a run of LEN units from
 * unit START) or "+GAP:LEN" (from GAP units after the end of the word
 * before it in this message; after unit 0 for the first word), numbers in
 * hex without 0x, digits 0-9, a-f or A-F, leading zeros allowed; LEN >= 1,
 * and the run must end within the nr_units units.  All or nothing: every
 * word is checked before any bit is set.  Then each run sets the bit of its
 * LAST unit (a file's run ends at the end of that unit) and nr_set counts
 * the bits that were not set before.  No words: nothing to do.
 *
 * Returns NULL, or the error written into @err (@errlen >= 1 bytes, cut
 * to fit) with the layout unchanged.  N is the word's index, from 1, W the
 * word; the first bad word is named:
 *   "layout_runs: no layout: send layout_clear UNIT first"  (no bits)
 *   "layout_runs: word N 'W': expected START:LEN or +GAP:LEN in hex units"
 *   "layout_runs: word N 'W': LEN must be at least 1"
 *   "layout_runs: word N 'W': run ends past the origin's 0xU units"
 * the last with U = nr_units in hex, also for a number or a sum that does
 * not fit 64 bits.  A malformed word is named as such before its LEN is
 * checked, and a LEN of 0 before its range.
 */
const char *rc_layout_parse_runs(struct rc_layout *l, unsigned int argc, char **argv,
				 char *err, size_t errlen);

/*
 * Where the file run holding @sector ends, capped at @end (sector < end):
 * ((u + 1) << shift) for the first set bit u in [unit(sector),
 * unit(end - 1)], or @end if there is none or that boundary is past @end.
 * Units past the origin have no bit.  @l may be NULL or have no bits:
 * @end.  Called from the I/O path with no lock; never blocks.  Scans at
 * most ((end - 1 - sector) >> shift) / RC_LAYOUT_BITS_PER_WORD + 2 words.
 */
u64 rc_layout_run_end(const struct rc_layout *l, u64 sector, u64 end);

#endif

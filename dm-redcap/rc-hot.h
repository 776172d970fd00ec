/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of HDC's (host-guided device caching) counting: misses per
 * segment-sized origin region over a period, in bounded memory.
 *
 * Vocabulary: a "region" is a segment-sized aligned run of the origin,
 * numbered 0..nr_regions-1; each miss of the cache counts one for its
 * region.  At a period's end every count is halved, so a count weighs this
 * period's misses 1, the last period's 1/2 and so on; the regions with the
 * highest counts are the ones HDC pins.
 *
 * Two modes, chosen by rc_hot_mem_size() and rc_hot_init() from the sizes
 * alone:
 *
 *  - Exact: a u16 counter per region, saturating at RC_HOT_EXACT_MAX; used
 *    when nr_regions * 2 bytes is no more than the sketch would take.
 *    Counts are exact (up to saturation), err always 0.
 *  - Space-Saving (Metwally, Agrawal and El Abbadi, 2005) over @slots
 *    slots: each slot holds a region, a count and an err.  A miss of a held
 *    region adds one to its count; a miss of a region not held takes a free
 *    slot (count 1, err 0) or, the table full, takes over the slot of least
 *    count min (count min + 1, err min).  Slots live in a min-heap keyed by
 *    count and are found through an open-addressing hash (linear probing,
 *    load at most 1/2, backward-shift deletion).  With N = rc_hot_total()
 *    (the sum of the counts; the number of misses when nothing has been
 *    halved or saturated), the sketch guarantees, for every region r of
 *    true count t (misses counted, halved at each period's end as exact
 *    counters would be):
 *      held:     count - err <= t <= count;
 *      not held: t <= the least count (0 while a slot is free), hence
 *      t > N / slots  =>  r is held.
 *    Counts saturate at RC_HOT_SS_MAX (4e9 misses a period: never in
 *    practice), and the guarantees hold until they do.
 *
 * Concurrency: nothing here locks, sleeps or allocates.  The caller holds
 * one lock (the cache's) around every call; between the chunks of an aging
 * pass it may drop it and let misses in: each miss then counts in the old
 * period or the new one, depending on whether the pass has reached its
 * counter, and every invariant holds between calls.
 */
#ifndef RC_HOT_H
#define RC_HOT_H

#include "rc-types.h"

#define RC_HOT_EXACT_MAX	0xffffu		/* exact counters saturate here */
#define RC_HOT_SS_MAX		0xffffffffu	/* Space-Saving counts saturate here */
#define RC_HOT_SLOTS_MAX	(1u << 24)	/* more slots are clamped to this */

/* A region and its count; also a Space-Saving slot. */
struct rc_hot_entry {
	u64 region;
	u32 count;	/* Space-Saving: an upper bound of the true count */
	u32 err;	/* count - err: a lower bound; exact mode: 0 */
};

/*
 * The counter, embedded in the caller's structure; its arrays are carved
 * from the caller's memory by rc_hot_init().  Fields are read-only outside
 * rc-hot.c; used and total may be read under the caller's lock (status).
 */
struct rc_hot {
	u64 nr_regions;		/* regions 0..nr_regions-1; others are ignored */
	u64 total;		/* the sum of all counts */
	bool exact;
	/* exact mode */
	u16 *cnt;		/* nr_regions counters */
	/* Space-Saving mode */
	u32 slots;		/* capacity */
	u32 used;		/* slots 0..used-1 hold a region */
	u32 table_bits;		/* the hash has 1 << table_bits buckets */
	struct rc_hot_entry *slot;	/* [slots] */
	u32 *heap;		/* [slots]: heap position -> slot, least count at 0 */
	u32 *hpos;		/* [slots]: slot -> heap position */
	u32 *table;		/* [1 << table_bits]: bucket -> slot + 1, 0 empty */
};

/*
 * The home bucket of @region in a hash of 1 << @bits buckets (1..25):
 * Fibonacci hashing, the top bits of region * 2^64 / phi.  Pure function;
 * in the header for the tests' invariant checker.
 */
static inline u32 rc_hot_bucket(u64 region, u32 bits)
{
	return (u32)((region * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/*
 * Bytes of memory for counting @nr_regions regions with @slots sketch
 * slots (HDC's pinned budget in segments x 4..8; clamped to
 * 1..RC_HOT_SLOTS_MAX): nr_regions * 2 for exact counters when that is no
 * more than the sketch would take, else the sketch's
 * slots * 24 + 4 * (the power of two at or above 2 * slots), 32 to 40
 * bytes a slot.  At most 40 * RC_HOT_SLOTS_MAX (640 MiB), so it fits any
 * size_t.  Pure function.
 */
size_t rc_hot_mem_size(u64 nr_regions, u32 slots);

/*
 * Lay out an empty counter in @mem: rc_hot_mem_size(@nr_regions, @slots)
 * bytes, aligned for a u64 and already zeroed by the caller (not touched
 * here: O(1)).  To start over, zero the memory and call it again.  No
 * lock needed: the counter is not shared yet.
 */
void rc_hot_init(struct rc_hot *h, void *mem, u64 nr_regions, u32 slots);

/*
 * Forget every count: the counter as rc_hot_init() left it.  Caller's
 * lock held; O(its memory), at most about 150 KiB at the slots HDC uses.
 */
void rc_hot_clear(struct rc_hot *h);

/* True for exact counters, false for Space-Saving.  Pure function. */
bool rc_hot_exact(const struct rc_hot *h);

/*
 * The sum of all counts, N in the guarantee above.  Caller's lock held.
 */
u64 rc_hot_total(const struct rc_hot *h);

/*
 * Count one miss of @region (ignored if >= nr_regions).  Caller's lock
 * held; never blocks.  O(1) exact; O(log slots) Space-Saving.
 */
void rc_hot_miss(struct rc_hot *h, u64 region);

/*
 * The count of @region, its err in *@err (may be NULL): exact mode the
 * count with err 0; Space-Saving an upper bound of the true count, and
 * count - err a lower bound; 0 (err 0) for a region not held.  Caller's
 * lock held; O(1) (expected, for Space-Saving).
 */
u32 rc_hot_count(const struct rc_hot *h, u64 region, u32 *err);

/*
 * An aging pass, the end of a period, in chunks: every count halved,
 * rounding down (Space-Saving: err rounding up, capped at the new count,
 * so that count - err stays a lower bound); a Space-Saving slot reaching 0
 * is freed.  The caller calls it from position 0 with each returned
 * position until that is rc_hot_age_end(), and may drop its lock between
 * calls (see the concurrency note above).  Each call looks at @budget
 * (>= 1) counters or slots at most: O(budget) exact, O(budget log slots)
 * Space-Saving.  A whole pass touches nr_regions counters or the held
 * slots once each.  Caller's lock held; never blocks.
 */
u64 rc_hot_age_some(struct rc_hot *h, u64 from, u64 budget);

/* The position an aging pass ends at: nr_regions or slots.  Pure function. */
u64 rc_hot_age_end(const struct rc_hot *h);

/*
 * The top @n regions by count, into @out[0..n-1] (region, count, err),
 * highest count first, equal counts lower region first; regions of count
 * 0 are not reported.  Returns how many were written (at most @n).  Uses
 * @out as its only scratch.  Caller's lock held; never blocks; not
 * chunked: a scan of every counter, O(nr_regions log n) exact (and exact
 * mode only runs while nr_regions is at most ~20 x slots) or
 * O(used log n + n log n) Space-Saving.
 */
u32 rc_hot_top(const struct rc_hot *h, u32 n, struct rc_hot_entry *out);

/*
 * HDC's choice of the segments to pin for the next period, among the
 * regions that missed most: a candidate, with its count and whether it is
 * pinned now.
 */
struct rc_hdc_cand {
	u64 region;
	u32 count;
	u32 pinned;	/* 0 or 1 */
};

/* A region missed once in a period is not worth a fill of its own. */
#define RC_HDC_MIN_COUNT	2

/*
 * Choose among @n candidates the set to pin: each scored by its count,
 * one pinned now by 5/4 of it (hysteresis: a newcomer displaces a pinned
 * region only by missing a quarter more), the @max best of count at least
 * RC_HDC_MIN_COUNT, equal scores lower region first.  Reorders @cand:
 * the chosen first, by region; returns how many.  O(n log n), in place,
 * no recursion.  Pure function.
 */
u32 rc_hdc_choose(struct rc_hdc_cand *cand, u32 n, u32 max);

/*
 * HDC's chosen set @set (@n regions, sorted, unique) and those of @add
 * (@nadd, sorted, repeats allowed) it lacks, lowest first, as many as
 * bring it to @max (none if it holds @max already): into @out, which has
 * room for @n + min(@nadd, @max), sorted and unique.  Returns its size.
 * The chosen set kept whole, a saved set loaded (prefill) only adds to
 * it.  O(@n + @nadd).  Pure function.
 */
u32 rc_hdc_merge(const u64 *set, u32 n, const u64 *add, u32 nadd, u32 max, u64 *out);

#endif

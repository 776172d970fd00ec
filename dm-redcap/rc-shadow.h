/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of redcap's shadow caches: what the reads a cache receives
 * would cost the disk with other segment sizes and other amounts of RAM,
 * measured while the live cache serves them (issue 49, after the virtual
 * disk paper's simultaneous evaluation).
 *
 * A shadow is a plain LRU cache of whole segments without data: a read
 * touches its segments, and the segments it misses are filled, a run of
 * consecutive ones as one request at a seek distance: from the nearest of
 * the shadow's last RC_SHADOW_ENDS fill ends, or from where the read would
 * have found the bare disk's head, whichever is nearer (a stream's fills
 * follow each other; a sampled region's first fill follows the stream's
 * reads).  For each of RC_SHADOW_SIZES segment sizes (32 KiB .. 1 MiB) one
 * LRU list answers for all RC_SHADOW_RAMS amounts of RAM at once (1/2, 1, 2
 * and 4 times the live cache's): LRU's inclusion property, kept as tiers
 * (tier i holds the entries a cache of size i would hold beyond those of
 * size i - 1), so a read costs one lookup per segment and size.
 *
 * A fill is not priced when it is made: it is counted by its run length
 * and the class of its distance (0, then each power of two of sectors
 * either way), and rc_shadow_eval() prices the counts with the caller's
 * model when asked, one price per run length and class.  A read costs no
 * model lookup, and every fill is priced with the model as it is now.
 * The classes are the vdisk model's columns below 1 GiB (rc-shadow.c,
 * rc_shadow_class_distance()); a class beyond is priced at its middle.
 *
 * Cost is bounded by spatial sampling (SHARDS, Waldspurger et al., FAST
 * 2015): a segment is shadowed only if the hash of its 1 MiB region falls
 * under the size's rate, 1 in 2^k, and the shadow's capacities shrink by
 * the same 2^k.  k is at least RC_SHADOW_MIN_RATE, which bounds what a
 * read costs (tests/bench/overhead.sh, "hit"; tests/bench/shadow-cost.c),
 * and grows with the RAM so that no size keeps more than a set number of
 * entries (RC_SHADOW_ENTRIES); a region sampled at a rate is sampled at
 * every larger rate, so the sizes compare the same regions where they can,
 * and a read in no sampled region costs one hash.  A size's cost, scaled
 * up by its rate, reads as a share of the bare disk's price of every read
 * (given by the caller): a sample short of the popular regions, whose
 * reads are hits, does not read as a cache that misses (SHARDS'
 * adjustment, in cost).
 *
 * Writes are not shadowed: they cost every shadow the same, and a cached
 * segment a write reaches stays (redcap's update-in-place).
 *
 * Locking: none; the caller serialises every call on one struct rc_shadow.
 * No allocation: rc_shadow_init() carves everything out of one block of
 * rc_shadow_mem_size() bytes.  rc_shadow_eval() may run on a copy
 * (rc_shadow_copy()), outside the lock that serialises the reads.
 */
#ifndef RC_SHADOW_H
#define RC_SHADOW_H

#include "rc-types.h"

#define RC_SHADOW_SIZES		6	/* 32 KiB << 0 .. 5 */
#define RC_SHADOW_MIN_SHIFT	6	/* 32 KiB in sectors, as a shift */
#define RC_SHADOW_RAMS		4	/* 1/2, 1, 2, 4 x the live RAM */
#define RC_SHADOW_REGION_SHIFT	11	/* sampling regions of 1 MiB */
#define RC_SHADOW_ENTRIES	8192	/* per size, at four times the RAM */
#define RC_SHADOW_FULL		0xffffffffu	/* entries: no sampling */
#define RC_SHADOW_MIN_RATE	5	/* sampled: at most 1 region in 32 (a read's cost) */
#define RC_SHADOW_ENDS		4	/* fill ends a fill's distance is taken from */
#define RC_SHADOW_COUNT_SHIFT	4	/* fill counts in 16ths: halving keeps them */
#define RC_SHADOW_CLASS_LOG	40	/* distances of 2^40 sectors and more: one class */
/* Distance classes: 0, then floor(log2(|d|)) + 1 forward, and as many backward. */
#define RC_SHADOW_CLASSES	(1 + 2 * (RC_SHADOW_CLASS_LOG + 1))

struct rc_shadow_ent {
	u64 seg;
	u32 prev, next;		/* in its tier's list, RC_SHADOW_NIL at the ends */
	u32 hnext;		/* hash chain, or the free list */
	u8 tier;
};

struct rc_shadow_size {
	u32 seg_shift;		/* segment size in sectors, as a shift */
	u32 rate_shift;		/* 1 region in 2^rate_shift sampled; 32: off */
	u32 cap[RC_SHADOW_RAMS];	/* entries a cache of each size holds */
	u32 tier_cap[RC_SHADOW_RAMS];	/* entries each tier holds: cap[r] - cap[r - 1] */
	u32 count[RC_SHADOW_RAMS];	/* entries in each tier */
	u32 head[RC_SHADOW_RAMS], tail[RC_SHADOW_RAMS];
	u32 free;
	u32 hash_mask;
	u32 *hash;
	struct rc_shadow_ent *ent;
	u32 runs;		/* the longest run: a region's segments */
	u32 counts;		/* where its fill counts start in rc_shadow.counts */
	/* Counters (rc_shadow_decay() halves them). */
	u64 reads;		/* reads (pieces in a sampled region) seen */
	/* Where each RAM's last fills ended, for the next one's distance. */
	u64 end[RC_SHADOW_RAMS][RC_SHADOW_ENDS];	/* the newest first */
	u8 nr_ends[RC_SHADOW_RAMS];
};

struct rc_shadow {
	u64 ram_bytes;
	u64 bare_ns;		/* the bare disk's price of every read */
	u32 period;		/* the caller's period the counters are of */
	u32 min_rate;		/* the smallest rate_shift; 32: no size samples */
	/*
	 * Fills by size, RAM, run length and distance class: size i's
	 * [RAMS][runs][CLASSES] from counts + sz[i].counts, in units of
	 * 2^-RC_SHADOW_COUNT_SHIFT fills (halved by rc_shadow_decay(),
	 * saturating).
	 */
	u32 *counts;
	u32 nr_counts;
	struct rc_shadow_size sz[RC_SHADOW_SIZES];
};

/* What the shadows' fills cost, priced by rc_shadow_eval(). */
struct rc_shadow_eval {
	bool ok[RC_SHADOW_SIZES][RC_SHADOW_RAMS];	/* priced reads seen */
	u64 misses[RC_SHADOW_SIZES][RC_SHADOW_RAMS];	/* segments filled (sampled) */
	u64 fills[RC_SHADOW_SIZES][RC_SHADOW_RAMS];	/* fill requests: runs of them */
	u64 ns[RC_SHADOW_SIZES][RC_SHADOW_RAMS];	/* the sampled fills' price */
	u64 ppm[RC_SHADOW_SIZES][RC_SHADOW_RAMS];	/* of the bare disk's time */
};

/*
 * Prices a read of @sectors at seek @distance on the disk (ns); false if it
 * cannot (no model yet).
 */
typedef bool rc_shadow_price_fn(void *ctx, s64 distance, u32 sectors, u64 *ns);

/*
 * Bytes rc_shadow_init() needs for shadows of a cache of @ram_bytes, each
 * size keeping up to @entries (>= 4; RC_SHADOW_FULL: as many as unsampled
 * shadows need), or 0 if an argument is out of range.
 */
size_t rc_shadow_mem_size(u64 ram_bytes, u32 entries);

/*
 * Empty shadows in @mem (rc_shadow_mem_size() bytes, 8-byte aligned).  A
 * size whose half-RAM cache would hold no segment is off (rate_shift 32).
 * Returns 0, or -1 if an argument is out of range.
 */
int rc_shadow_init(struct rc_shadow *sh, void *mem, u64 ram_bytes, u32 entries);

/* Forgets every entry and counter. */
void rc_shadow_reset(struct rc_shadow *sh);

/* Zeroes the counters; what the shadows hold stays. */
void rc_shadow_reset_stats(struct rc_shadow *sh);

/* A 64-bit finaliser: regions and segments both spread evenly. */
static inline u32 rc_shadow_hash(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (u32)x;
}

/* Whether some size samples region @region (the smallest rate does). */
static inline bool rc_shadow_sampled(const struct rc_shadow *sh, u64 region)
{
	return sh->min_rate < 32 &&
	       (!sh->min_rate || !(rc_shadow_hash(region) >> (32 - sh->min_rate)));
}

void rc_shadow_read_all(struct rc_shadow *sh, u64 sector, u32 sectors, s64 distance,
			u64 bare_ns, u32 period);

/*
 * A read of @sectors at @sector that the bare disk would serve at seek
 * @distance for @bare_ns, in the caller's @period (a new one halves the
 * counters first, rc_shadow_decay()): every size that samples a region it
 * touches shadows the piece in that region.  A read in one region that no
 * size samples, as most are, costs a hash here.
 */
static inline void rc_shadow_read(struct rc_shadow *sh, u64 sector, u32 sectors, s64 distance,
				  u64 bare_ns, u32 period)
{
	u64 region = sector >> RC_SHADOW_REGION_SHIFT;

	if (period == sh->period && sectors &&
	    region == (sector + sectors - 1) >> RC_SHADOW_REGION_SHIFT &&
	    !rc_shadow_sampled(sh, region))
		sh->bare_ns += bare_ns;
	else
		rc_shadow_read_all(sh, sector, sectors, distance, bare_ns, period);
}

/* Halves every counter: the recent past weighs as much as all before it. */
void rc_shadow_decay(struct rc_shadow *sh);

/*
 * Prices the fills of every shadow with @price: for size i and RAM r, the
 * disk time as parts per million of the bare disk's time on the same
 * reads, ok false while that size has seen no read (or the disk no price).
 * A fill the price function cannot price costs 0.
 */
void rc_shadow_eval(const struct rc_shadow *sh, rc_shadow_price_fn *price, void *ctx,
		    struct rc_shadow_eval *ev);

/* Bytes of @sh's fill counts: what rc_shadow_copy() needs besides a struct. */
static inline size_t rc_shadow_counts_bytes(const struct rc_shadow *sh)
{
	return (size_t)sh->nr_counts * sizeof(u32);
}

/*
 * A copy of @src's counters in @dst, its fill counts in @counts
 * (rc_shadow_counts_bytes()), for rc_shadow_eval() only: @dst has no
 * entries.
 */
void rc_shadow_copy(struct rc_shadow *dst, u32 *counts, const struct rc_shadow *src);

/* The class of seek distance @d, and the distance a class is priced at. */
u32 rc_shadow_class(s64 d);
s64 rc_shadow_class_distance(u32 cls);

/* Segment bytes of shadow size @size; the RAM of @ram in bytes. */
static inline u64 rc_shadow_seg_bytes(u32 size)
{
	return 32768ULL << size;
}

static inline u64 rc_shadow_ram_bytes(const struct rc_shadow *sh, u32 ram)
{
	return (sh->ram_bytes << ram) >> 1;
}

#endif

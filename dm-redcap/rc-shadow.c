// SPDX-License-Identifier: GPL-2.0
/*
 * Portable core of redcap's shadow caches (rc-shadow.h): sampled LRU
 * segment caches without data, one per segment size, each answering for
 * four amounts of RAM.
 */
#include "rc-shadow.h"

#define RC_SHADOW_NIL		0xffffffffu
#define RC_SHADOW_MAX_SEGS	(1u << (RC_SHADOW_REGION_SHIFT - RC_SHADOW_MIN_SHIFT))

static size_t rc_shadow_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static u32 rc_shadow_pow2(u32 n)
{
	u32 p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * The geometry of size @i for @ram_bytes: its sampling rate and the
 * capacity, in sampled entries, of each amount of RAM.
 */
static void rc_shadow_geometry(struct rc_shadow_size *z, u32 i, u64 ram_bytes,
			       u32 entries)
{
	u64 base = ram_bytes >> (RC_SHADOW_MIN_SHIFT + 9 + i), s;
	u32 k = entries == RC_SHADOW_FULL ? 0 : RC_SHADOW_MIN_RATE, r;

	while ((base >> k) > entries / 4)
		k++;
	s = base >> k;
	z->seg_shift = RC_SHADOW_MIN_SHIFT + i;
	z->rate_shift = s >= 2 ? k : 32;
	for (r = 0; r < RC_SHADOW_RAMS; r++) {
		z->cap[r] = z->rate_shift == 32 ? 0 : (u32)((s << r) >> 1);
		z->tier_cap[r] = z->cap[r] - (r ? z->cap[r - 1] : 0);
	}
}

/* An unsampled shadow's entries fit a u32 index up to 2^29 (16 TiB). */
static bool rc_shadow_args_ok(u64 ram_bytes, u32 entries)
{
	return ram_bytes && entries >= 4 &&
	       (entries != RC_SHADOW_FULL || ram_bytes >> (RC_SHADOW_MIN_SHIFT + 9) <= 1u << 27);
}

/* Fill counts of size @i: by RAM, run length and distance class. */
static u32 rc_shadow_nr_counts(u32 i)
{
	return RC_SHADOW_RAMS * (RC_SHADOW_MAX_SEGS >> i) * RC_SHADOW_CLASSES;
}

size_t rc_shadow_mem_size(u64 ram_bytes, u32 entries)
{
	struct rc_shadow_size z;
	size_t sz = 0;
	u32 i, n;

	if (!rc_shadow_args_ok(ram_bytes, entries))
		return 0;
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		rc_shadow_geometry(&z, i, ram_bytes, entries);
		n = z.cap[RC_SHADOW_RAMS - 1];
		sz += rc_shadow_align8((size_t)n * sizeof(struct rc_shadow_ent));
		sz += rc_shadow_align8((size_t)rc_shadow_pow2(n) * sizeof(u32));
		sz += (size_t)rc_shadow_nr_counts(i) * sizeof(u32);
	}
	return sz;
}

int rc_shadow_init(struct rc_shadow *sh, void *mem, u64 ram_bytes, u32 entries)
{
	char *p = mem;
	u32 i, n;

	if (!rc_shadow_args_ok(ram_bytes, entries))
		return -1;
	memset(sh, 0, sizeof(*sh));
	sh->ram_bytes = ram_bytes;
	sh->min_rate = 32;
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		struct rc_shadow_size *z = &sh->sz[i];

		rc_shadow_geometry(z, i, ram_bytes, entries);
		n = z->cap[RC_SHADOW_RAMS - 1];
		z->ent = (struct rc_shadow_ent *)p;
		p += rc_shadow_align8((size_t)n * sizeof(struct rc_shadow_ent));
		z->hash = (u32 *)p;
		z->hash_mask = rc_shadow_pow2(n) - 1;
		p += rc_shadow_align8((size_t)(z->hash_mask + 1) * sizeof(u32));
		z->runs = RC_SHADOW_MAX_SEGS >> i;
		z->counts = sh->nr_counts;
		sh->nr_counts += rc_shadow_nr_counts(i);
		if (z->rate_shift < sh->min_rate)
			sh->min_rate = z->rate_shift;
	}
	/* The counts last: the rest stays 8-byte aligned. */
	sh->counts = (u32 *)p;
	rc_shadow_reset(sh);
	return 0;
}

void rc_shadow_reset_stats(struct rc_shadow *sh)
{
	u32 i;

	sh->bare_ns = 0;
	memset(sh->counts, 0, rc_shadow_counts_bytes(sh));
	for (i = 0; i < RC_SHADOW_SIZES; i++)
		sh->sz[i].reads = 0;
}

void rc_shadow_reset(struct rc_shadow *sh)
{
	u32 i, j, r, n;

	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		struct rc_shadow_size *z = &sh->sz[i];

		n = z->cap[RC_SHADOW_RAMS - 1];
		for (j = 0; j <= z->hash_mask; j++)
			z->hash[j] = RC_SHADOW_NIL;
		for (j = 0; j < n; j++)
			z->ent[j].hnext = j + 1 < n ? j + 1 : RC_SHADOW_NIL;
		z->free = n ? 0 : RC_SHADOW_NIL;
		for (r = 0; r < RC_SHADOW_RAMS; r++) {
			z->count[r] = 0;
			z->head[r] = z->tail[r] = RC_SHADOW_NIL;
			z->nr_ends[r] = 0;
		}
	}
	rc_shadow_reset_stats(sh);
}

static inline void rc_shadow_unlink(struct rc_shadow_size *z, u32 e)
{
	struct rc_shadow_ent *x = &z->ent[e];

	if (x->prev != RC_SHADOW_NIL)
		z->ent[x->prev].next = x->next;
	else
		z->head[x->tier] = x->next;
	if (x->next != RC_SHADOW_NIL)
		z->ent[x->next].prev = x->prev;
	else
		z->tail[x->tier] = x->prev;
	z->count[x->tier]--;
}

static inline void rc_shadow_push(struct rc_shadow_size *z, u32 e, u32 tier)
{
	struct rc_shadow_ent *x = &z->ent[e];

	x->tier = (u8)tier;
	x->prev = RC_SHADOW_NIL;
	x->next = z->head[tier];
	if (x->next != RC_SHADOW_NIL)
		z->ent[x->next].prev = e;
	else
		z->tail[tier] = e;
	z->head[tier] = e;
	z->count[tier]++;
}

static u32 *rc_shadow_bucket(struct rc_shadow_size *z, u64 seg)
{
	/* Fibonacci hashing: a region's consecutive segments spread. */
	return &z->hash[(u32)((seg * 0x9e3779b97f4a7c15ULL) >> 32) & z->hash_mask];
}

/* Takes @e out of the cache (the LRU end of the last tier) onto the free list. */
static void rc_shadow_evict(struct rc_shadow_size *z, u32 e)
{
	u32 *pp = rc_shadow_bucket(z, z->ent[e].seg);

	while (*pp != e)
		pp = &z->ent[*pp].hnext;
	*pp = z->ent[e].hnext;
	rc_shadow_unlink(z, e);
	z->ent[e].hnext = z->free;
	z->free = e;
}

/*
 * Reads segment @seg: returns the tier it was in (a cache of RAM r holds it
 * iff the tier is <= r), RC_SHADOW_RAMS if none held it, and makes it the
 * most recent.
 */
static u32 rc_shadow_touch(struct rc_shadow_size *z, u64 seg)
{
	u32 *bucket = rc_shadow_bucket(z, seg), e, t, r;

	for (e = *bucket; e != RC_SHADOW_NIL; e = z->ent[e].hnext)
		if (z->ent[e].seg == seg)
			break;
	if (e != RC_SHADOW_NIL) {
		t = z->ent[e].tier;
		rc_shadow_unlink(z, e);
	} else {
		t = RC_SHADOW_RAMS;
		if (z->free == RC_SHADOW_NIL)
			rc_shadow_evict(z, z->tail[RC_SHADOW_RAMS - 1]);
		e = z->free;
		z->free = z->ent[e].hnext;
		z->ent[e].seg = seg;
		z->ent[e].hnext = *bucket;
		*bucket = e;
	}
	rc_shadow_push(z, e, 0);
	/* One entry came in at the top: at most one moves down each tier. */
	for (r = 0; r + 1 < RC_SHADOW_RAMS; r++) {
		if (z->count[r] <= z->tier_cap[r])
			break;
		e = z->tail[r];
		rc_shadow_unlink(z, e);
		rc_shadow_push(z, e, r + 1);
	}
	if (z->count[RC_SHADOW_RAMS - 1] > z->tier_cap[RC_SHADOW_RAMS - 1])
		rc_shadow_evict(z, z->tail[RC_SHADOW_RAMS - 1]);
	return t;
}

static u64 rc_shadow_abs(s64 d)
{
	return d < 0 ? -(u64)d : (u64)d;
}

/*
 * The distance of a fill of RAM @r from @start: from the nearest of its
 * last fills' ends, or @d (the read's), whichever is nearer.
 */
static s64 rc_shadow_distance(const struct rc_shadow_size *z, u32 r, u64 start, s64 d)
{
	const u64 *end = z->end[r];
	u64 best = rc_shadow_abs(d);
	u32 i;
	s64 e;

	/* Newest first: on a tie, the newer end (the read's before either). */
	for (i = 0; i < z->nr_ends[r]; i++) {
		e = (s64)(start - end[i]);
		if (rc_shadow_abs(e) < best) {
			d = e;
			best = rc_shadow_abs(e);
		}
	}
	return d;
}

static void rc_shadow_note_end(struct rc_shadow_size *z, u32 r, u64 end)
{
	u64 *e = z->end[r];
	u32 k;

	for (k = RC_SHADOW_ENDS - 1; k; k--)
		e[k] = e[k - 1];
	e[0] = end;
	if (z->nr_ends[r] < RC_SHADOW_ENDS)
		z->nr_ends[r]++;
}

u32 rc_shadow_class(s64 d)
{
	u32 k;

	if (!d)
		return 0;
	k = rc_log2(rc_shadow_abs(d));
	if (k > RC_SHADOW_CLASS_LOG)
		k = RC_SHADOW_CLASS_LOG;
	return 1 + k + (d < 0 ? RC_SHADOW_CLASS_LOG + 1 : 0);
}

/*
 * A class's distance: [2^k, 2^(k+1)) sectors is one column of the vdisk
 * model below 1 GiB (2^21 sectors), priced at its start; beyond, where the
 * model's columns are 1 GiB each, at its middle.
 */
s64 rc_shadow_class_distance(u32 cls)
{
	u32 k;
	s64 d;

	if (!cls || cls >= RC_SHADOW_CLASSES)
		return 0;
	k = (cls - 1) % (RC_SHADOW_CLASS_LOG + 1);
	d = k < 21 ? (s64)1 << k : (s64)3 << (k - 1);
	return cls > RC_SHADOW_CLASS_LOG + 1 ? -d : d;
}

/* Where fills of size @i, RAM @r, run @run (>= 1) are counted. */
static u32 *rc_shadow_count(const struct rc_shadow *sh, u32 i, u32 r, u32 run)
{
	const struct rc_shadow_size *z = &sh->sz[i];

	return &sh->counts[z->counts + (r * z->runs + run - 1) * RC_SHADOW_CLASSES];
}

/* RAM @r of size @i fills @run segments from sector @start, @d from the read. */
static void rc_shadow_fill(struct rc_shadow *sh, u32 i, u32 r, u32 run, u64 start, s64 d)
{
	struct rc_shadow_size *z = &sh->sz[i];
	u32 *cnt = rc_shadow_count(sh, i, r, run) +
		   rc_shadow_class(rc_shadow_distance(z, r, start, d));

	if (*cnt <= ~0u - (1u << RC_SHADOW_COUNT_SHIFT))
		*cnt += 1u << RC_SHADOW_COUNT_SHIFT;
	rc_shadow_note_end(z, r, start + ((u64)run << z->seg_shift));
}

/*
 * Piece [@a, @b) of a read, in one region, on size @i; @d is its distance
 * on the bare disk.  Each RAM fills its runs of missed segments.
 */
static void rc_shadow_piece(struct rc_shadow *sh, u32 i, u64 a, u64 b, s64 d)
{
	struct rc_shadow_size *z = &sh->sz[i];
	u64 first = a >> z->seg_shift, last = (b - 1) >> z->seg_shift, start;
	u32 n = (u32)(last - first + 1), j, r, run, top = 0;
	u8 tier[RC_SHADOW_MAX_SEGS];

	for (j = 0; j < n; j++) {
		tier[j] = (u8)rc_shadow_touch(z, first + j);
		if (tier[j] > top)
			top = tier[j];
	}
	z->reads++;
	/* A RAM fills only what it did not hold: those below the top tier. */
	for (r = 0; r < top; r++) {
		for (j = 0; j < n; j += run) {
			for (run = 0; j + run < n && tier[j + run] > r; run++)
				;
			if (!run) {
				run = 1;
				continue;
			}
			start = (first + j) << z->seg_shift;
			rc_shadow_fill(sh, i, r, run, start, d + (s64)(start - a));
		}
	}
}

void rc_shadow_read_all(struct rc_shadow *sh, u64 sector, u32 sectors, s64 distance,
			u64 bare_ns, u32 period)
{
	u64 a = sector, end = sector + sectors, b, region;
	u32 h, i;

	if (period != sh->period) {
		sh->period = period;
		rc_shadow_decay(sh);
	}
	sh->bare_ns += bare_ns;
	for (; a < end; a = b) {
		region = a >> RC_SHADOW_REGION_SHIFT;
		b = (region + 1) << RC_SHADOW_REGION_SHIFT;
		if (b > end)
			b = end;
		if (!rc_shadow_sampled(sh, region))
			continue;
		h = rc_shadow_hash(region);
		for (i = 0; i < RC_SHADOW_SIZES; i++) {
			u32 k = sh->sz[i].rate_shift;

			if (k >= 32 || (k && h >> (32 - k)))
				continue;
			rc_shadow_piece(sh, i, a, b, a == sector ? distance : 0);
		}
	}
}

void rc_shadow_decay(struct rc_shadow *sh)
{
	u32 i;

	sh->bare_ns >>= 1;
	for (i = 0; i < sh->nr_counts; i++)
		sh->counts[i] >>= 1;
	for (i = 0; i < RC_SHADOW_SIZES; i++)
		sh->sz[i].reads >>= 1;
}

void rc_shadow_copy(struct rc_shadow *dst, u32 *counts, const struct rc_shadow *src)
{
	u32 i;

	*dst = *src;
	memcpy(counts, src->counts, rc_shadow_counts_bytes(src));
	dst->counts = counts;
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		dst->sz[i].ent = NULL;
		dst->sz[i].hash = NULL;
	}
}

/* @ns of the disk's @bare, in parts per million. */
static u64 rc_shadow_share(u64 ns, u64 bare)
{
	/* Both scaled down alike where ns * 10^6 would overflow. */
	while (ns > ~0ULL / 1000000) {
		ns >>= 1;
		bare >>= 1;
	}
	return bare ? rc_div64(ns * 1000000ULL, bare) : ~0ULL;
}

void rc_shadow_eval(const struct rc_shadow *sh, rc_shadow_price_fn *price, void *ctx,
		    struct rc_shadow_eval *ev)
{
	u32 i, r, run, c;
	u64 ns, n, bare;
	bool any;

	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		const struct rc_shadow_size *z = &sh->sz[i];

		if (z->rate_shift >= 32)
			continue;
		/* One price per run and class, whichever RAMs made such fills. */
		for (run = 1; run <= z->runs; run++) {
			for (c = 0; c < RC_SHADOW_CLASSES; c++) {
				for (any = false, r = 0; r < RC_SHADOW_RAMS; r++)
					any |= rc_shadow_count(sh, i, r, run)[c] != 0;
				if (!any)
					continue;
				if (!price(ctx, rc_shadow_class_distance(c), run << z->seg_shift, &ns))
					ns = 0;
				for (r = 0; r < RC_SHADOW_RAMS; r++) {
					n = rc_shadow_count(sh, i, r, run)[c];
					ev->fills[i][r] += n;
					ev->misses[i][r] += n * run;
					ev->ns[i][r] += n * ns;
				}
			}
		}
		bare = sh->bare_ns >> z->rate_shift;
		for (r = 0; r < RC_SHADOW_RAMS; r++) {
			ev->fills[i][r] >>= RC_SHADOW_COUNT_SHIFT;
			ev->misses[i][r] >>= RC_SHADOW_COUNT_SHIFT;
			ev->ns[i][r] >>= RC_SHADOW_COUNT_SHIFT;
			ev->ok[i][r] = z->reads && bare;
			if (ev->ok[i][r])
				ev->ppm[i][r] = rc_shadow_share(ev->ns[i][r], bare);
		}
	}
}

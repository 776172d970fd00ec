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

/* A 64-bit finaliser: regions and segments both spread evenly. */
static u32 rc_shadow_hash(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (u32)x;
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
	for (r = 0; r < RC_SHADOW_RAMS; r++)
		z->cap[r] = z->rate_shift == 32 ? 0 : (u32)((s << r) >> 1);
}

/* An unsampled shadow's entries fit a u32 index up to 2^29 (16 TiB). */
static bool rc_shadow_args_ok(u64 ram_bytes, u32 entries)
{
	return ram_bytes && entries >= 4 &&
	       (entries != RC_SHADOW_FULL || ram_bytes >> (RC_SHADOW_MIN_SHIFT + 9) <= 1u << 27);
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
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		struct rc_shadow_size *z = &sh->sz[i];

		rc_shadow_geometry(z, i, ram_bytes, entries);
		n = z->cap[RC_SHADOW_RAMS - 1];
		z->ent = (struct rc_shadow_ent *)p;
		p += rc_shadow_align8((size_t)n * sizeof(struct rc_shadow_ent));
		z->hash = (u32 *)p;
		z->hash_mask = rc_shadow_pow2(n) - 1;
		p += rc_shadow_align8((size_t)(z->hash_mask + 1) * sizeof(u32));
	}
	rc_shadow_reset(sh);
	return 0;
}

void rc_shadow_reset_stats(struct rc_shadow *sh)
{
	u32 i;

	sh->bare_ns = 0;
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		struct rc_shadow_size *z = &sh->sz[i];

		memset(z->cost, 0, sizeof(z->cost));
		z->reads = 0;
	}
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
			z->nr_ends[r] = z->next_end[r] = 0;
		}
	}
	rc_shadow_reset_stats(sh);
}

/* Entries tier @r may hold: those of its RAM beyond the smaller one's. */
static u32 rc_shadow_tier_cap(const struct rc_shadow_size *z, u32 r)
{
	return z->cap[r] - (r ? z->cap[r - 1] : 0);
}

static void rc_shadow_unlink(struct rc_shadow_size *z, u32 e)
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

static void rc_shadow_push(struct rc_shadow_size *z, u32 e, u32 tier)
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
	return &z->hash[rc_shadow_hash(seg) & z->hash_mask];
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
		if (z->count[r] <= rc_shadow_tier_cap(z, r))
			break;
		e = z->tail[r];
		rc_shadow_unlink(z, e);
		rc_shadow_push(z, e, r + 1);
	}
	if (z->count[RC_SHADOW_RAMS - 1] > rc_shadow_tier_cap(z, RC_SHADOW_RAMS - 1))
		rc_shadow_evict(z, z->tail[RC_SHADOW_RAMS - 1]);
	return t;
}

/*
 * The prices asked for one piece, by the segment a run starts at: a run is
 * often the same for every RAM, and priced once.
 */
struct rc_shadow_memo {
	u32 valid;		/* bit j: the run at segment j is priced */
	u8 run[RC_SHADOW_MAX_SEGS];
	s64 distance[RC_SHADOW_MAX_SEGS];
	u64 ns[RC_SHADOW_MAX_SEGS];
};

static u64 rc_shadow_price(struct rc_shadow_memo *m, u32 j, u32 run, s64 distance,
			   u32 sectors, rc_shadow_price_fn *price, void *ctx)
{
	if (!(m->valid & (1u << j)) || m->run[j] != run || m->distance[j] != distance) {
		if (!price(ctx, distance, sectors, &m->ns[j]))
			m->ns[j] = 0;
		m->run[j] = (u8)run;
		m->distance[j] = distance;
		m->valid |= 1u << j;
	}
	return m->ns[j];
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
	s64 e;
	u32 i;

	/* Newest first: on a tie, the newer end (the read's before either). */
	for (i = 0; i < z->nr_ends[r]; i++) {
		e = (s64)(start - z->end[r][(z->next_end[r] + RC_SHADOW_ENDS - 1 - i) %
					    RC_SHADOW_ENDS]);
		if (rc_shadow_abs(e) < rc_shadow_abs(d))
			d = e;
	}
	return d;
}

static void rc_shadow_note_end(struct rc_shadow_size *z, u32 r, u64 end)
{
	z->end[r][z->next_end[r]] = end;
	z->next_end[r] = (z->next_end[r] + 1) % RC_SHADOW_ENDS;
	if (z->nr_ends[r] < RC_SHADOW_ENDS)
		z->nr_ends[r]++;
}

/*
 * Piece [@a, @b) of a read, in one region, on size @z; @d is its distance
 * on the bare disk.  Each RAM fills its runs of missed segments.
 */
static void rc_shadow_piece(struct rc_shadow_size *z, u64 a, u64 b, s64 d,
			    rc_shadow_price_fn *price, void *ctx)
{
	u64 first = a >> z->seg_shift, last = (b - 1) >> z->seg_shift, start;
	u32 n = (u32)(last - first + 1), j, r, run;
	u8 tier[RC_SHADOW_MAX_SEGS];
	struct rc_shadow_memo memo;
	s64 dist;

	memo.valid = 0;
	for (j = 0; j < n; j++)
		tier[j] = (u8)rc_shadow_touch(z, first + j);
	z->reads++;
	for (r = 0; r < RC_SHADOW_RAMS; r++) {
		struct rc_shadow_cost *c = &z->cost[r];

		for (j = 0; j < n; j += run) {
			for (run = 0; j + run < n && tier[j + run] > r; run++)
				;
			if (!run) {
				run = 1;
				continue;
			}
			start = (first + j) << z->seg_shift;
			dist = rc_shadow_distance(z, r, start, d + (s64)(start - a));
			rc_shadow_note_end(z, r, (first + j + run) << z->seg_shift);
			c->misses += run;
			c->fills++;
			c->ns += rc_shadow_price(&memo, j, run, dist, run << z->seg_shift,
						 price, ctx);
		}
	}
}

void rc_shadow_read(struct rc_shadow *sh, u64 sector, u32 sectors, s64 distance,
		    u64 bare_ns, rc_shadow_price_fn *price, void *ctx)
{
	u64 a = sector, end = sector + sectors, b, region;
	u32 h, i;

	sh->bare_ns += bare_ns;
	for (; a < end; a = b) {
		region = a >> RC_SHADOW_REGION_SHIFT;
		b = (region + 1) << RC_SHADOW_REGION_SHIFT;
		if (b > end)
			b = end;
		h = rc_shadow_hash(region);
		for (i = 0; i < RC_SHADOW_SIZES; i++) {
			struct rc_shadow_size *z = &sh->sz[i];

			if (z->rate_shift >= 32 ||
			    (z->rate_shift && h >> (32 - z->rate_shift)))
				continue;
			rc_shadow_piece(z, a, b, a == sector ? distance : 0,
					price, ctx);
		}
	}
}

void rc_shadow_decay(struct rc_shadow *sh)
{
	u32 i, r;

	sh->bare_ns >>= 1;
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		struct rc_shadow_size *z = &sh->sz[i];

		z->reads >>= 1;
		for (r = 0; r < RC_SHADOW_RAMS; r++) {
			z->cost[r].misses >>= 1;
			z->cost[r].fills >>= 1;
			z->cost[r].ns >>= 1;
		}
	}
}

bool rc_shadow_ppm(const struct rc_shadow *sh, u32 size, u32 ram, u64 *ppm)
{
	const struct rc_shadow_size *z;
	u64 ns, bare;

	*ppm = 0;
	if (size >= RC_SHADOW_SIZES || ram >= RC_SHADOW_RAMS)
		return false;
	z = &sh->sz[size];
	if (!z->reads)
		return false;
	ns = z->cost[ram].ns;
	bare = sh->bare_ns >> z->rate_shift;
	if (!bare)
		return false;
	/* Both scaled down alike where ns * 10^6 would overflow. */
	while (ns > ~0ULL / 1000000) {
		ns >>= 1;
		bare >>= 1;
	}
	*ppm = bare ? rc_div64(ns * 1000000ULL, bare) : ~0ULL;
	return true;
}

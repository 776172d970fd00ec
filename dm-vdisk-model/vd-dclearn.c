// SPDX-License-Identifier: GPL-2.0
/*
 * Learning a drive's own cache from the times of its reads (vd-dclearn.h).
 */
#include "vd-dclearn.h"

void vd_dcl_init(struct vd_dclearn *l)
{
	memset(l, 0, sizeof(*l));
}

/*
 * Whether a read of @sectors that cost @ns is a hit: at most twice the
 * fastest read of its size, or of a smaller size scaled up to it.  Then
 * that size's fastest is updated.  Reads past the largest size are never
 * hits (a media read, as far as the regions go).
 */
static bool vd_dcl_fast(struct vd_dclearn *l, u32 sectors, u64 ns)
{
	u32 row = sectors ? (sectors - 1) / VD_ROW_SECTORS : 0, r;
	bool hit = false;

	if (row >= VD_DCL_ROWS)
		return false;
	for (r = 0; r <= row; r++)
		if (l->fastest[r] &&
		    ns * (r + 1) <= 2 * l->fastest[r] * (row + 1)) {
			hit = true;
			break;
		}
	if (!l->fastest[row] || ns < l->fastest[row])
		l->fastest[row] = ns ? ns : 1;
	return hit;
}

/* The newest region a read at @sector may have hit in, or -1. */
static int vd_dcl_find(const struct vd_dclearn *l, u64 sector)
{
	int i, best = -1;

	for (i = 0; i < VD_DCL_REGIONS; i++) {
		const struct vd_dcl_region *g = &l->r[i];

		if (g->valid && g->start <= sector &&
		    sector <= g->end + VD_DCL_WINDOW &&
		    (best < 0 || g->lru > l->r[best].lru))
			best = i;
	}
	return best;
}

static int vd_dcl_victim(const struct vd_dclearn *l)
{
	int i, v = 0;

	for (i = 0; i < VD_DCL_REGIONS; i++) {
		if (!l->r[i].valid)
			return i;
		if (l->r[i].lru < l->r[v].lru)
			v = i;
	}
	return v;
}

static void vd_dcl_count(struct vd_dcl_count *c, bool hit)
{
	c->reads++;
	c->hits += hit;
}

/*
 * The last bucket of the run from the first one where most reads (of at
 * least VD_DCL_CONFIRM) hit, or -1: the run ends at the first bucket where
 * most missed, and buckets with fewer reads, or as many hits as misses,
 * neither end it nor extend it.
 *
 * A drive's read-ahead serves every distance up to its end, its segments
 * every rank up to their number; media reads that were lucky in their
 * rotation the same way every time (a reader that thinks as long each
 * time, skipping as far) hit at one distance, not at all the nearer ones.
 */
static int vd_dcl_run(const struct vd_dcl_count *c, int n)
{
	int i, last = -1;

	for (i = 0; i < n; i++) {
		if (c[i].reads < VD_DCL_CONFIRM || 2 * c[i].hits == c[i].reads)
			continue;
		if (2 * c[i].hits < c[i].reads)
			break;
		last = i;
	}
	return last;
}

/* The read-ahead learnt so far, sectors (0: none). */
static u32 vd_dcl_ra(const struct vd_dclearn *l)
{
	int ahead = vd_dcl_run(l->ahead, VD_DCL_BUCKETS);

	return ahead > 0 ? (u32)ahead * VD_DCL_BUCKET : 0;
}

/*
 * A read of @sectors at @sector, where the one before it ended: the drive
 * streamed it off the media, reading on from that one's end in the gap
 * and while it took this one's overhead (a drive reads ahead), but no
 * further than its read-ahead @ra.  So from that one's completion to this
 * one's it read @sectors at the media rate, unless the gap was long
 * enough for the read-ahead to end in it: then it read the rest past the
 * read-ahead in its own time, less the overhead (a hit's cost, nearly).
 * With no read-ahead learnt yet, only a read begun as that one ended
 * counts.
 */
static void vd_dcl_stream(struct vd_dclearn *l, u64 sector, u32 sectors,
			  u64 begin, u64 done)
{
	u64 ns, rate, gap, ra, ovh = l->fastest[0];

	if (sector != l->last_end || sectors < VD_DCL_STREAM_SECTORS || !ovh ||
	    begin < l->last_done || done <= l->last_done + ovh)
		return;
	gap = begin - l->last_done;
	ns = done - l->last_done;
	rate = rc_div64((u64)sectors * 512 * 1000, ns);		/* MB/s */
	ra = gap ? vd_dcl_ra(l) : 0;
	if (gap && rate * gap > ra * 512 * 1000) {
		if (!ra || sectors <= ra || done <= begin + ovh)
			return;
		rate = rc_div64((sectors - ra) * 512 * 1000, done - begin - ovh);
	}
	rate /= VD_DCL_RATE_STEP;
	l->rate[rate < VD_DCL_RATES ? rate : VD_DCL_RATES - 1]++;
}

/* The median rate of the streamed reads, MB/s; 0 before VD_DCL_CONFIRM. */
static u32 vd_dcl_rate(const struct vd_dclearn *l)
{
	u64 n = 0, half = 0;
	int i;

	for (i = 0; i < VD_DCL_RATES; i++)
		n += l->rate[i];
	if (n < VD_DCL_CONFIRM)
		return 0;
	for (i = 0; i < VD_DCL_RATES; i++) {
		half += l->rate[i];
		if (2 * half >= n)
			break;
	}
	return (u32)i * VD_DCL_RATE_STEP + VD_DCL_RATE_STEP / 2;
}

/* Halves every count: recent reads weigh more, and none overflows. */
static void vd_dcl_age(struct vd_dclearn *l)
{
	int i;

	for (i = 0; i < VD_DCL_BUCKETS; i++) {
		l->ahead[i].reads /= 2;
		l->ahead[i].hits /= 2;
	}
	for (i = 0; i < VD_DCL_BACK_BUCKETS; i++) {
		l->back[i].reads /= 2;
		l->back[i].hits /= 2;
	}
	for (i = 0; i <= VD_DCACHE_MAX_SEGS; i++) {
		l->rank[i][0].reads /= 2;
		l->rank[i][0].hits /= 2;
		l->rank[i][1].reads /= 2;
		l->rank[i][1].hits /= 2;
	}
	for (i = 0; i < VD_DCL_RATES; i++)
		l->rate[i] /= 2;
	l->reads /= 2;
	l->hits /= 2;
	l->misses /= 2;
	l->unmatched /= 2;
}

/* A read at @a after region @i: counted by where it fell. */
static void vd_dcl_place(struct vd_dclearn *l, int i, u64 a, bool hit)
{
	struct vd_dcl_region *g = &l->r[i];
	u64 d;
	u32 rank = 0;
	int j;

	for (j = 0; j < VD_DCL_REGIONS; j++)
		if (l->r[j].valid && l->r[j].lru > g->lru)
			rank++;
	if (rank > VD_DCACHE_MAX_SEGS)
		rank = VD_DCACHE_MAX_SEGS;
	if (a < g->end) {
		d = g->end - a;
		if (d <= VD_DCL_WINDOW)
			vd_dcl_count(&l->back[(d - 1) / VD_DCL_BACK_BUCKET], hit);
		if (d <= VD_DCL_NEAR)
			vd_dcl_count(&l->rank[rank][0], hit);
	} else {
		d = a - g->end;
		if (d < VD_DCL_WINDOW)
			vd_dcl_count(&l->ahead[d / VD_DCL_BUCKET], hit);
		if (d < VD_DCL_NEAR)
			vd_dcl_count(&l->rank[rank][1], hit);
	}
}

void vd_dcl_read(struct vd_dclearn *l, u64 sector, u32 sectors, u64 begin,
		 u64 done)
{
	u64 b = sector + sectors;
	struct vd_dcl_region *g;
	bool hit;
	int i;

	if (!sectors)
		return;
	if (++l->seen % VD_DCL_AGE == 0)
		vd_dcl_age(l);
	l->reads++;
	vd_dcl_stream(l, sector, sectors, begin, done);
	l->last_end = b;
	l->last_done = done;
	hit = vd_dcl_fast(l, sectors, done > begin ? done - begin : 0);
	i = vd_dcl_find(l, sector);
	if (i >= 0)
		vd_dcl_place(l, i, sector, hit);
	if (hit) {
		l->hits++;
		if (i >= 0) {
			g = &l->r[i];
			if (b > g->end)
				g->end = b;
			g->lru = ++l->tick;
			return;
		}
		/* Held since before it was watched: a region all the same. */
		l->unmatched++;
	} else {
		/* The drive fills a segment with it. */
		l->misses++;
	}
	g = &l->r[vd_dcl_victim(l)];
	g->start = sector;
	g->end = b;
	g->lru = ++l->tick;
	g->valid = true;
}

void vd_dcl_write(struct vd_dclearn *l, u64 sector, u32 sectors)
{
	int i;

	for (i = 0; i < VD_DCL_REGIONS; i++)
		if (l->r[i].valid && l->r[i].start < sector + sectors &&
		    sector < l->r[i].end)
			l->r[i].valid = false;
	l->last_end = 0;
	l->last_done = 0;
}

int vd_dcl_result(const struct vd_dclearn *l, struct vd_dcache *dc)
{
	u32 ra = vd_dcl_ra(l), seg;
	struct vd_dcl_count c[VD_DCACHE_MAX_SEGS + 1];
	u32 mbps = vd_dcl_rate(l);
	int i, top;

	memset(dc, 0, sizeof(*dc));
	if (l->hits < VD_DCL_MIN_HITS ||
	    l->misses * 100 < l->reads * VD_DCL_MIN_MISS_PCT || !mbps ||
	    ra < VD_DCL_NEAR)
		return -1;
	for (i = 0; i <= VD_DCACHE_MAX_SEGS; i++) {
		c[i].reads = l->rank[i][0].reads + l->rank[i][1].reads;
		c[i].hits = l->rank[i][0].hits + l->rank[i][1].hits;
	}
	/* Past the most it prices, a drive's segments count as that many. */
	top = vd_dcl_run(c, VD_DCACHE_MAX_SEGS + 1);
	if (top == VD_DCACHE_MAX_SEGS)
		top--;
	if (top < 0)
		return -1;
	/* what lies behind the region's end, and the read-ahead past it */
	seg = (u32)(vd_dcl_run(l->back, VD_DCL_BACK_BUCKETS) + 1) * VD_DCL_BACK_BUCKET + ra;
	dc->nr_segs = top + 1;
	dc->seg_sectors = seg;
	dc->ra_sectors = ra;
	dc->media_mbps = mbps;
	return 0;
}

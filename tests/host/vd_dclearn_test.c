// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the drive-cache learner (dm-vdisk-model/vd-dclearn.c):
 * the emulator's drives (vd-drive.c) serve a workload one read at a time,
 * the learner sees only what the vdisk target sees (each read's sector,
 * length, and when the drive began and completed it), and what it learns is
 * checked against the drive's own parameters.
 */
#include "ctest.h"
#include "dcache-probe.h"
#include "vd-dclearn.h"
#include "vd-drive.h"

#define MS		1000000ULL
#define GIB		(1ULL << 21)	/* sectors */
#define DISK		(64 * GIB)

struct rig {
	struct vd_drive d;
	struct vd_dclearn l;
	u64 now;
	u64 rng;
	u64 gap;		/* ns between a reader's decision and its read */
};

static void rig_init(struct rig *g, const struct vd_drive_params *p)
{
	CHECK_EQ(vd_drive_init(&g->d, p, DISK, DISK, 7), 0);
	vd_dcl_init(&g->l);
	g->now = 0;
	g->rng = 12345;
	g->gap = 0;
}

static u64 rnd(struct rig *g, u64 n)
{
	g->rng = g->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (g->rng >> 17) % n;
}

/* One read, then @think_ns of the reader's own time. */
static void rd(struct rig *g, u64 sector, u32 sectors, u64 think_ns)
{
	u64 service, done;

	g->now += g->gap;
	done = vd_drive_submit(&g->d, VD_READ, sector, sectors, g->now, &service);

	vd_dcl_read(&g->l, sector, sectors, done - service, done);
	g->now = done + think_ns;
}

static void wr(struct rig *g, u64 sector, u32 sectors)
{
	u64 service;

	g->now = vd_drive_submit(&g->d, VD_WRITE, sector, sectors, g->now, &service);
	vd_dcl_write(&g->l, sector, sectors);
}

/* @streams readers in turn from @at, each 4 KiB on in its own 1 GiB per turn. */
static void in_turn(struct rig *g, u32 streams, u64 at)
{
	u32 round, s;

	for (round = 0; round < 64; round++)
		for (s = 0; s < streams; s++)
			rd(g, at + (u64)s * GIB + 8 * round, 8, 3 * MS);
}

/*
 * What a server's mix shows: 16 readers in turn, each a little further on
 * in its own file; one reader skipping forward by up to a megabyte while it
 * thinks; one reading 512 KiB in a row and then going back over it; random
 * reads over the disk; a reader streaming 128 KiB at a time.  @streams
 * readers in turn (16: as many as the drives' segments).
 */
static void server_mix(struct rig *g, u32 streams)
{
	u64 base, x = 40 * GIB;
	u32 i;

	for (i = 0; i < 2000; i++) {
		rd(g, x, 8, 5 * MS);
		x += 8 + rnd(g, 1024);
		if (i % 100 == 99)
			rd(g, rnd(g, DISK - 8), 8, 0);
	}
	in_turn(g, streams, 0);
	for (i = 0; i < 20; i++) {
		base = 50 * GIB + i * 8 * GIB / 20;
		for (x = 0; x < 1024; x += 8)
			rd(g, base + x, 8, 0);
		rd(g, base + 1024 + rnd(g, 256), 8, 10 * MS);
		rd(g, base + 512 + rnd(g, 256), 8, 0);
	}
	/* A slow host's 0.3 ms between them: the drive reads on meanwhile. */
	for (i = 0; i < 64; i++)
		rd(g, 60 * GIB + 256 * i, 256, 300000);
	for (i = 0; i < 1000; i++) {
		rd(g, rnd(g, DISK - 8), 8, MS);
		if (i % 100 == 0)
			wr(g, rnd(g, DISK - 8), 8);
	}
}

static void learnt(struct rig *g, struct vd_dcache *dc)
{
	int rc = vd_dcl_result(&g->l, dc);

	CHECK_EQ(rc, 0);
}

/* Within [lo, hi] of the truth, as percentages. */
#define NEAR(v, truth, lo, hi) \
	CHECK((u64)(v) * 100 >= (u64)(truth) * (lo) && (u64)(v) * 100 <= (u64)(truth) * (hi))

static void learns_the_drive(const char *name)
{
	const struct vd_drive_profile *pr = vd_drive_profile(name);
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;

	CHECK(pr && g);
	rig_init(g, &pr->p);
	server_mix(g, 16);
	learnt(g, &dc);
	CHECK_EQ(dc.nr_segs, pr->p.nr_segs);
	NEAR(dc.ra_sectors, pr->p.ra_sectors, 95, 100);
	/* A segment holds at least its read-ahead: what lies before that is never seen. */
	CHECK(dc.seg_sectors >= dc.ra_sectors && dc.seg_sectors <= pr->p.seg_sectors);
	NEAR(dc.media_mbps, pr->p.media_mbps, 80, 100);
	free(g);
}

CTEST(learns_the_hdd7200s_cache)
{
	learns_the_drive("hdd7200");
}

CTEST(learns_the_hdd15ks_cache)
{
	learns_the_drive("hdd15k");
}

/* Seventeen readers in turn miss every time: the sixteen segments the mix showed stay. */
CTEST(seventeen_readers_in_turn_show_no_seventeenth_segment)
{
	const struct vd_drive_profile *pr = vd_drive_profile("hdd7200");
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;

	CHECK(pr && g);
	rig_init(g, &pr->p);
	server_mix(g, 16);
	in_turn(g, 17, 33 * GIB);
	learnt(g, &dc);
	CHECK_EQ(dc.nr_segs, 16);
	CHECK(g->l.rank[16][1].reads >= 1000);
	CHECK_EQ(g->l.rank[16][1].hits, 0);
	free(g);
}

/* Random reads show no hit: nothing is learnt. */
CTEST(random_reads_learn_nothing)
{
	const struct vd_drive_profile *pr = vd_drive_profile("hdd7200");
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;
	u32 i;

	CHECK(pr && g);
	rig_init(g, &pr->p);
	for (i = 0; i < 3000; i++)
		rd(g, rnd(g, DISK - 8), 8, MS);
	CHECK_EQ(vd_dcl_result(&g->l, &dc), -1);
	CHECK_EQ(dc.nr_segs, 0);
	CHECK(g->l.hits * 10 < g->l.reads);	/* the rotation's lucky few */
	free(g);
}

/* Devices without platters answer every read alike: no drive cache. */
CTEST(flat_devices_learn_no_drive_cache)
{
	static const char *const flat[] = { "st1", "nbd" };
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;
	u32 k;

	CHECK(g);
	for (k = 0; k < 2; k++) {
		rig_init(g, &vd_drive_profile(flat[k])->p);
		server_mix(g, 16);
		CHECK_EQ(vd_dcl_result(&g->l, &dc), -1);
		CHECK(g->l.misses * 100 < g->l.reads * VD_DCL_MIN_MISS_PCT);
	}
	free(g);
}

/* A drive without a cache: none is learnt. */
CTEST(a_drive_without_a_cache_learns_none)
{
	struct vd_drive_params p = vd_drive_profile("hdd7200")->p;
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;
	u32 i;

	CHECK(g);
	p.nr_segs = 0;
	p.seg_sectors = 0;
	p.ra_sectors = 0;
	rig_init(g, &p);
	server_mix(g, 16);
	/*
	 * Only a read that continues the last one back to back is fast: a
	 * read-ahead of nothing past the end, too short to count ranks by,
	 * and no read inside a region hits.
	 */
	CHECK_EQ(vd_dcl_result(&g->l, &dc), -1);
	CHECK(2 * g->l.ahead[0].hits > g->l.ahead[0].reads);
	CHECK(2 * g->l.ahead[1].hits < g->l.ahead[1].reads);
	for (i = 0; i < VD_DCL_BACK_BUCKETS; i++)
		CHECK(2 * g->l.back[i].hits <= g->l.back[i].reads);
	free(g);
}

/*
 * vdiskctl train --drive-cache's probe (userspace/dcache-probe.c), each
 * read 20 us after its reader's decision (the rig's gap), its thinking a
 * little uneven.
 */
static bool probe_read(void *ctx, uint64_t block, uint32_t blocks, unsigned int think_ms)
{
	struct rig *g = ctx;

	rd(g, block * 8, blocks * 8, think_ms ? think_ms * MS + rnd(g, 100000) : 0);
	return true;
}

/* The probe on a drive @p over 64 MiB, @gap_ns before each read. */
static void probe_small_disk(struct rig *g, const struct vd_drive_params *p, u64 gap_ns,
			     u64 seed)
{
	CHECK_EQ(vd_drive_init(&g->d, p, 16384 * 8, 16384 * 8, seed), 0);
	vd_dcl_init(&g->l);
	g->now = 0;
	g->rng = seed;
	g->gap = gap_ns;
	CHECK(dcache_probe(16384, probe_read, g));
}

/*
 * The probe on a small disk without a cache: its tracks are short, and a
 * reader that thinks about as long each time comes back to the platter
 * turned about as far, so far skips of some lengths are lucky in their
 * rotation most times, and fast.  They are no read-ahead: the nearer
 * skips missed.  (Believed, they were a cache of 16 segments reading
 * 1004 KiB ahead at 26 MB/s.)  With the cache, the probe learns it.
 */
CTEST(regular_luck_in_the_rotation_is_no_read_ahead)
{
	struct vd_drive_params p = vd_drive_profile("hdd15k")->p;
	struct rig *g = malloc(sizeof(*g));
	struct vd_dcache dc;

	CHECK(g);
	probe_small_disk(g, &p, 20000, 1);
	learnt(g, &dc);
	CHECK_EQ(dc.nr_segs, 16);
	CHECK_EQ(dc.ra_sectors, 256);
	CHECK_EQ(dc.media_mbps, 50);

	p.nr_segs = 0;
	p.seg_sectors = 0;
	p.ra_sectors = 0;
	probe_small_disk(g, &p, 20000, 1);
	CHECK_EQ(vd_dcl_result(&g->l, &dc), -1);
	free(g);
}

/*
 * The probe, however long the host takes between reads (0 to 5.6 ms: a
 * debug kernel in an emulated guest takes milliseconds, and the drive's
 * read-ahead ends in the gap) and whatever the seed: each drive's cache
 * exactly, but the media rate to a step of the rates counted; none
 * without one.  (Its reads back into a run in random order, 2026-12-07,
 * gave the hdd15k segments of 192 to 640 sectors for its 512: a read back
 * that missed opened a region, a hit above it in the run's segment was
 * then taken for a read past that region's end, and the reads between
 * them for reads back into it.  Its skips drawn at random left the
 * read-ahead's last 4 KiB with too few reads in a third of the runs.)
 */
CTEST(the_probe_learns_each_drive_at_any_host_speed)
{
	static const char *const drives[] = { "hdd7200", "hdd15k" };
	struct rig *g = malloc(sizeof(*g));
	struct vd_drive_params p;
	struct vd_dcache dc;
	u64 gap, seed;
	u32 k;

	CHECK(g);
	for (k = 0; k < 2; k++)
		for (gap = 0; gap <= 6000000; gap += gap < 600000 ? 20000 : 500000)
			for (seed = 1; seed <= 3; seed++) {
				p = vd_drive_profile(drives[k])->p;
				probe_small_disk(g, &p, gap, seed);
				CHECK_EQ(vd_dcl_result(&g->l, &dc), 0);
				CHECK_EQ(dc.nr_segs, p.nr_segs);
				CHECK_EQ(dc.ra_sectors, p.ra_sectors);
				CHECK_EQ(dc.seg_sectors, p.seg_sectors);
				CHECK(dc.media_mbps + VD_DCL_RATE_STEP >= p.media_mbps &&
				      dc.media_mbps <= p.media_mbps + VD_DCL_RATE_STEP);
				p.nr_segs = 0;
				p.seg_sectors = 0;
				p.ra_sectors = 0;
				probe_small_disk(g, &p, gap, seed);
				CHECK_EQ(vd_dcl_result(&g->l, &dc), -1);
			}
	free(g);
}

/* A write drops the regions under it: a read there after it is not a hit in them. */
CTEST(a_write_drops_the_regions_it_overlaps)
{
	struct vd_dclearn *l = malloc(sizeof(*l));

	CHECK(l);
	vd_dcl_init(l);
	/* Fastest 4 KiB read: 0.2 ms.  A miss at 0, then hits on from it. */
	vd_dcl_read(l, 1000000, 8, 0, 200000);
	vd_dcl_read(l, 0, 8, 1 * MS, 9 * MS);
	CHECK_EQ(l->misses, 2);
	vd_dcl_read(l, 64, 8, 10 * MS, 10 * MS + 200000);
	CHECK_EQ(l->hits, 1);
	CHECK_EQ(l->ahead[7].reads, 1);		/* starts 56 sectors past the miss's end */
	CHECK_EQ(l->ahead[7].hits, 1);
	CHECK_EQ(l->ahead[8].reads, 0);
	CHECK_EQ(l->rank[0][1].hits, 1);	/* just ahead of the newest region */
	vd_dcl_write(l, 40, 8);
	CHECK(!l->r[1].valid);
	CHECK(l->r[0].valid);
	vd_dcl_read(l, 80, 8, 11 * MS, 11 * MS + 200000);
	CHECK_EQ(l->unmatched, 1);
	/* The other region, now one use back, where it ended. */
	vd_dcl_read(l, 1000008, 8, 12 * MS, 12 * MS + 200000);
	CHECK_EQ(l->ahead[0].hits, 1);
	CHECK_EQ(l->rank[1][1].hits, 1);
	CHECK_EQ(l->hits, 3);
	CHECK_EQ(l->misses, 2);
	free(l);
}

/* Every VD_DCL_AGE reads the counts halve: a drive whose cache changed is learnt again. */
CTEST(the_counts_halve_every_so_many_reads)
{
	struct vd_dclearn *l = malloc(sizeof(*l));
	u32 i;

	CHECK(l);
	vd_dcl_init(l);
	vd_dcl_read(l, 1000, 8, 0, 200000);			/* the fastest: 0.2 ms */
	for (i = 0; i < 9; i++)
		vd_dcl_read(l, 1008 + 8 * i, 8, MS * (i + 1), MS * (i + 1) + 200000);
	CHECK_EQ(l->ahead[0].reads, 9);
	CHECK_EQ(l->ahead[0].hits, 9);
	CHECK_EQ(l->reads, 10);
	l->seen = VD_DCL_AGE - 1;
	vd_dcl_read(l, 1080, 8, 20 * MS, 29 * MS);		/* a miss, where it would hit */
	CHECK_EQ(l->ahead[0].reads, 5);				/* 9 / 2, then this one */
	CHECK_EQ(l->ahead[0].hits, 4);
	CHECK_EQ(l->reads, 6);
	CHECK_EQ(l->misses, 1);
	CHECK_EQ(l->hits, 4);
	free(l);
}

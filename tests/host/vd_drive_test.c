// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the vdisk hard-disk emulator (dm-vdisk-model/vd-drive.c):
 * seek curve, profiles, determinism, rotation, queueing, throughput, and the
 * segmented read-ahead cache.
 */
#include <math.h>

#include "ctest.h"
#include "vd-drive.h"

#define CAP		(1ULL << 21)	/* 1 GiB: capacity == disk_sectors */
#define MS		1000000ULL

/* hdd7200 figures used by hand below. */
#define OVH_7200	150000ULL
#define REV_7200	8333333ULL	/* 60 s / 7200 */
#define MEDIA_7200(s)	((u64)(s) * 512000 / 150)
#define BUS_7200(s)	((u64)(s) * 512000 / 300)

/* --- helpers ------------------------------------------------------------ */

static const struct vd_drive_params *prof(const char *name)
{
	const struct vd_drive_profile *pr = vd_drive_profile(name);

	CHECK(pr);
	return &pr->p;
}

static void mk(struct vd_drive *d, const char *name, u64 seed)
{
	memset(d, 0xa5, sizeof(*d));
	CHECK_EQ(vd_drive_init(d, prof(name), CAP, CAP, seed), 0);
}

/* Submits and returns the service time; *done (if given) the completion. */
static u64 sub(struct vd_drive *d, enum vd_dir dir, u64 sector, u32 sectors,
	       u64 now, u64 *done)
{
	u64 svc = ~0ULL, before = d->busy_until, c;

	c = vd_drive_submit(d, dir, sector, sectors, now, &svc);
	CHECK(svc != ~0ULL);
	/* Starts at arrival or when the drive frees up, whichever is later. */
	CHECK_EQ(c, (now > before ? now : before) + svc);
	CHECK_EQ(d->busy_until, c);
	if (done)
		*done = c;
	return svc;
}

/* |got - want| within 0.5% of want. */
static void check_near_at(int line, u64 got, double want)
{
	if (fabs((double)got - want) <= want * 0.005)
		return;
	fprintf(stderr, "%s:%d: got %llu, want %.0f (+-0.5%%)\n", __FILE__, line,
		(unsigned long long)got, want);
	exit(1);
}

#define CHECK_NEAR(got, want) check_near_at(__LINE__, (got), (want))

/* Far-apart 4 KiB-aligned regions for cache eviction tests. */
static u64 region(u32 i)
{
	return (u64)i * (CAP / 20) / 8 * 8;
}

/*
 * Mean service time of @n random 4 KiB reads over the whole disk, each
 * arriving when the previous one completes.
 */
static double random_4k_mean(const char *name, u32 n)
{
	struct vd_drive d;
	u64 now = 0, total = 0;
	u32 i;

	mk(&d, name, 42);
	ctest_rng = 0x12345678abcdefULL;
	for (i = 0; i < n; i++)
		total += sub(&d, VD_READ, ctest_rand(CAP / 8) * 8, 8, now, &now);
	CHECK_EQ(d.st.requests, n);
	CHECK_EQ(d.st.busy_ns, total);
	return (double)total / n;
}

/* --- seek curve ---------------------------------------------------------- */

CTEST(seek_hdd7200_matches_curve)
{
	const struct vd_drive_params *p = prof("hdd7200");

	/* alpha 941000, beta 59000, theta 10000, gamma 6000000, delta 84. */
	CHECK_EQ(vd_drive_seek_ns(p, 0), 0);
	CHECK_NEAR(vd_drive_seek_ns(p, 1), 941000.0 + 59000.0);	/* 1.0 ms */
	CHECK_NEAR(vd_drive_seek_ns(p, 2), 941000.0 + 59000.0 * sqrt(2));
	CHECK_NEAR(vd_drive_seek_ns(p, 100), 941000.0 + 59000.0 * 10);
	CHECK_NEAR(vd_drive_seek_ns(p, 10000), 941000.0 + 59000.0 * 100);
	CHECK_NEAR(vd_drive_seek_ns(p, 10001), 6000000.0 + 84.0 * 10001);
	CHECK_NEAR(vd_drive_seek_ns(p, 50000), 6000000.0 + 84.0 * 50000);
	/* Full stroke: 14.4 ms. */
	CHECK_NEAR(vd_drive_seek_ns(p, 99999), 6000000.0 + 84.0 * 99999);
	CHECK_NEAR(vd_drive_seek_ns(p, 100000), 14400000.0);
}

CTEST(seek_hdd15k_matches_curve)
{
	const struct vd_drive_params *p = prof("hdd15k");

	/* alpha 933600, beta 36400, theta 1150, gamma 1550300, delta 540. */
	CHECK_EQ(vd_drive_seek_ns(p, 0), 0);
	CHECK_NEAR(vd_drive_seek_ns(p, 1), 970000.0);
	CHECK_NEAR(vd_drive_seek_ns(p, 500), 933600.0 + 36400.0 * sqrt(500));
	CHECK_NEAR(vd_drive_seek_ns(p, 1150), 2167984.0);	/* sqrt 33.9116 */
	CHECK_NEAR(vd_drive_seek_ns(p, 1151), 1550300.0 + 540.0 * 1151);
	CHECK_NEAR(vd_drive_seek_ns(p, 10399), 1550300.0 + 540.0 * 10399);
	CHECK_NEAR(vd_drive_seek_ns(p, 10400), 7166300.0);
}

CTEST(seek_is_monotonic_in_distance)
{
	const struct vd_drive_params *p = prof("hdd7200");
	u64 c, prev = 0, s;

	for (c = 0; c <= 100000; c++) {
		s = vd_drive_seek_ns(p, c);
		/* The two pieces meet within 1 us at theta. */
		CHECK(s + 1000 >= prev);
		prev = s;
	}
}

/* --- profiles and parameters --------------------------------------------- */

CTEST(profile_lookup_by_name)
{
	const struct vd_drive_profile *a = vd_drive_profile("hdd7200");
	const struct vd_drive_profile *b = vd_drive_profile("hdd15k");

	CHECK(a && b && a != b);
	CHECK_STREQ(a->name, "hdd7200");
	CHECK_STREQ(b->name, "hdd15k");
	CHECK_EQ(a->p.rpm, 7200);
	CHECK_EQ(b->p.rpm, 15000);
	CHECK(vd_drive_profile("hdd5400") == NULL);
	CHECK(vd_drive_profile("") == NULL);
	/* a keyword, as vdisk.rst says: case-insensitive, like the mode's */
	CHECK(vd_drive_profile("HDD7200") == a);
	CHECK(vd_drive_profile("Hdd15K") == b);
	CHECK(vd_drive_profile("hdd720") == NULL);
	CHECK(vd_drive_profile("hdd72000") == NULL);
}

CTEST(builtin_profiles_pass_check)
{
	const struct vd_drive_profile *pr;
	int n = 0;

	for (pr = vd_drive_profiles; pr->name; pr++, n++)
		CHECK_EQ(vd_drive_params_check(&pr->p), 0);
	CHECK(n >= 2);
}

CTEST(params_check_rejects_bad_params)
{
	struct vd_drive_params p = *prof("hdd7200");

	p.rpm = 0;
	CHECK_EQ(vd_drive_params_check(&p), -1);
	p = *prof("hdd7200");
	p.media_mbps = 0;
	CHECK_EQ(vd_drive_params_check(&p), -1);
	p = *prof("hdd7200");
	p.nr_segs = VD_DRIVE_MAX_SEGS + 1;
	CHECK_EQ(vd_drive_params_check(&p), -1);
	p.nr_segs = VD_DRIVE_MAX_SEGS;
	CHECK_EQ(vd_drive_params_check(&p), 0);
	p.nr_segs = 0;
	CHECK_EQ(vd_drive_params_check(&p), 0);
}

CTEST(init_rejects_bad_params_and_sizes)
{
	struct vd_drive d;
	struct vd_drive_params p = *prof("hdd7200");

	CHECK_EQ(vd_drive_init(&d, &p, 0, CAP, 1), -1);
	CHECK_EQ(vd_drive_init(&d, &p, CAP, 0, 1), -1);
	p.rpm = 0;
	CHECK_EQ(vd_drive_init(&d, &p, CAP, CAP, 1), -1);
	p = *prof("hdd7200");
	CHECK_EQ(vd_drive_init(&d, &p, CAP, CAP, 1), 0);
	CHECK_EQ(d.busy_until, 0);
	CHECK_EQ(d.head, 0);
	CHECK_EQ(d.ra, -1);
	CHECK_EQ(d.st.requests, 0);
}

/* --- determinism --------------------------------------------------------- */

#define DET_N	1000

/* Mixed random requests; records service and completion times. */
static void det_run(struct vd_drive *d, u64 *svc, u64 *done)
{
	u64 now = 0;
	u32 i;

	ctest_rng = 0xfeedfacecafebeefULL;
	for (i = 0; i < DET_N; i++) {
		enum vd_dir dir = ctest_rand(4) ? VD_READ : VD_WRITE;
		u64 sector = ctest_rand(CAP - 512);
		u32 n = 1 + ctest_rand(256);

		if (ctest_rand(3) == 0 && d->head + n <= CAP)
			sector = d->head;	/* some sequential ones */
		now += ctest_rand(3) ? 0 : ctest_rand(20 * MS);
		svc[i] = sub(d, dir, sector, n, now, &done[i]);
	}
}

CTEST(same_seed_same_service_times)
{
	static u64 s1[DET_N], c1[DET_N], s2[DET_N], c2[DET_N];
	struct vd_drive a, b;
	u32 i;

	mk(&a, "hdd7200", 7);
	mk(&b, "hdd7200", 7);
	det_run(&a, s1, c1);
	det_run(&b, s2, c2);
	for (i = 0; i < DET_N; i++) {
		CHECK_EQ(s1[i], s2[i]);
		CHECK_EQ(c1[i], c2[i]);
	}
	CHECK(!memcmp(&a.st, &b.st, sizeof(a.st)));
}

CTEST(different_seed_different_service_times)
{
	static u64 s1[DET_N], c1[DET_N], s2[DET_N], c2[DET_N];
	struct vd_drive a, b;
	u32 i, diff = 0;

	mk(&a, "hdd7200", 7);
	mk(&b, "hdd7200", 8);
	det_run(&a, s1, c1);
	det_run(&b, s2, c2);
	for (i = 0; i < DET_N; i++)
		diff += s1[i] != s2[i];
	CHECK(diff > 0);
}

CTEST(reset_reproduces_sequence)
{
	static u64 s1[DET_N], c1[DET_N], s2[DET_N], c2[DET_N];
	struct vd_drive a;
	u32 i;

	mk(&a, "hdd7200", 99);
	det_run(&a, s1, c1);
	vd_drive_reset(&a);
	CHECK_EQ(a.busy_until, 0);
	CHECK_EQ(a.head, 0);
	CHECK_EQ(a.st.requests, 0);
	CHECK_EQ(a.st.busy_ns, 0);
	det_run(&a, s2, c2);
	for (i = 0; i < DET_N; i++) {
		CHECK_EQ(s1[i], s2[i]);
		CHECK_EQ(c1[i], c2[i]);
	}
}

CTEST(seed_zero_is_deterministic)
{
	static u64 s1[DET_N], c1[DET_N], s2[DET_N], c2[DET_N];
	struct vd_drive a, b;
	u32 i;

	mk(&a, "hdd7200", 0);
	mk(&b, "hdd7200", 0);
	det_run(&a, s1, c1);
	det_run(&b, s2, c2);
	for (i = 0; i < DET_N; i++)
		CHECK_EQ(s1[i], s2[i]);
	CHECK(a.st.rotation_ns > 0);
}

/* --- random and sequential workloads ------------------------------------- */

CTEST(random_4k_reads_hdd7200_mean_service)
{
	double mean = random_4k_mean("hdd7200", 5000);

	printf("hdd7200 random 4 KiB read: mean service %.3f ms\n", mean / 1e6);
	CHECK(mean > 8e6);
	CHECK(mean < 16e6);
}

CTEST(random_4k_reads_hdd15k_faster_than_hdd7200)
{
	double m15 = random_4k_mean("hdd15k", 5000);
	double m72 = random_4k_mean("hdd7200", 5000);

	printf("hdd15k random 4 KiB read: mean service %.3f ms (hdd7200 %.3f ms)\n",
	       m15 / 1e6, m72 / 1e6);
	CHECK(m15 > 0);
	CHECK(m15 < m72);
}

CTEST(sequential_128k_reads_throughput_hdd7200)
{
	const u32 n = 800;
	struct vd_drive d;
	u64 now = 0;
	double mbps;
	u32 i;

	mk(&d, "hdd7200", 1);
	for (i = 0; i < n; i++)
		sub(&d, VD_READ, (u64)i * 256, 256, now, &now);
	mbps = (double)n * 131072 / ((double)now / 1e9) / 1e6;
	printf("hdd7200 sequential 128 KiB reads: %.1f MB/s\n", mbps);
	CHECK(mbps > 100);
	CHECK(mbps < 200);
	CHECK_EQ(d.st.ra_hits, n - 1);
	CHECK_EQ(d.st.seeks, 0);
}

/* --- the drive cache ----------------------------------------------------- */

CTEST(reread_of_just_read_block_is_cache_hit)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 3);
	sub(&d, VD_READ, 500000, 8, 0, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	svc = sub(&d, VD_READ, 500000, 8, now, NULL);
	CHECK(svc < MS);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(8));
	CHECK_EQ(d.st.cache_hits, 1);
}

CTEST(segment_still_cached_after_nr_segs_regions)
{
	struct vd_drive d;
	u64 now = 0, svc;
	u32 i;

	mk(&d, "hdd7200", 3);
	for (i = 0; i < 16; i++)
		sub(&d, VD_READ, region(i), 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	svc = sub(&d, VD_READ, region(0), 8, now, NULL);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK(svc < MS);
}

CTEST(evicted_segment_misses_again)
{
	struct vd_drive d;
	u64 now = 0, svc, seeks;
	u32 i;

	mk(&d, "hdd7200", 3);
	for (i = 0; i < 17; i++)	/* one more than nr_segs */
		sub(&d, VD_READ, region(i), 8, now, &now);
	seeks = d.st.seeks;
	CHECK_EQ(seeks, 16);
	svc = sub(&d, VD_READ, region(0), 8, now, NULL);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK_EQ(d.st.seeks, seeks + 1);
	CHECK(svc > MS);
}

CTEST(lru_evicts_least_recently_used_segment)
{
	struct vd_drive d;
	u64 now = 0;
	u32 i;

	mk(&d, "hdd7200", 3);
	for (i = 0; i < 16; i++)
		sub(&d, VD_READ, region(i), 8, now, &now);
	sub(&d, VD_READ, region(0), 8, now, &now);	/* hit: now newest */
	CHECK_EQ(d.st.cache_hits, 1);
	sub(&d, VD_READ, region(16), 8, now, &now);	/* evicts region 1 */
	sub(&d, VD_READ, region(0), 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 2);
	sub(&d, VD_READ, region(1), 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 2);
}

CTEST(readahead_continues_while_idle)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	/* 5 ms idle at 150 MB/s (1464 sectors) covers the whole read-ahead. */
	CHECK(d.p.ra_sectors >= 128);
	svc = sub(&d, VD_READ, 300008, 128, now + 5 * MS, NULL);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(d.st.ra_hits, 0);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(128));
}

/* 150 us of overhead at 150 MB/s: the sectors the read-ahead reads meanwhile */
#define OVH_SECTORS_7200	(OVH_7200 * 150 / 512000)

/*
 * A read that goes on at once where the last ended waits for the media, but
 * not for its overhead: the read-ahead read on meanwhile.  (Before
 * 2026-12-07 it stood still then, and a reader that reads on at once read
 * at 150 us a request less than the media rate: the bare disk's sequential
 * and strided readers were up to 30 % slow.)
 */
CTEST(readahead_without_idle_costs_media_transfer)
{
	struct vd_drive d;
	u64 now, svc, rot;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	rot = d.st.rotation_ns;
	svc = sub(&d, VD_READ, 300008, 128, now, NULL);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK_EQ(d.st.ra_hits, 1);
	CHECK_EQ(d.st.rotation_ns, rot);
	CHECK_EQ(svc, OVH_7200 + MEDIA_7200(128 - OVH_SECTORS_7200));
}

/* A reader that reads on at once, 64 KiB at a time, reads at the media rate. */
CTEST(a_reader_that_reads_on_at_once_reads_at_the_media_rate)
{
	struct vd_drive d;
	u64 now, first;
	u32 i;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 128, 0, &now);
	first = now;
	for (i = 1; i <= 64; i++)
		sub(&d, VD_READ, 300000 + 128 * i, 128, now, &now);
	CHECK_EQ(d.st.ra_hits, 64);
	/* each read's own rounding, at most a sector's transfer */
	CHECK(now - first + 64 * MEDIA_7200(1) >= 64 * MEDIA_7200(128) &&
	      now - first <= 64 * MEDIA_7200(128) + 64 * MEDIA_7200(1));
}

CTEST(readahead_partial_waits_only_for_rest)
{
	struct vd_drive d;
	u64 now, svc, want;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	/* 0.5 ms idle and the overhead read ~190 sectors ahead; 256 are asked for. */
	svc = sub(&d, VD_READ, 300008, 256, now + MS / 2, NULL);
	want = OVH_7200 + MEDIA_7200(256 - 190);
	CHECK_EQ(d.st.ra_hits, 1);
	CHECK(svc + MEDIA_7200(1) >= want && svc <= want + MEDIA_7200(1));
}

CTEST(readahead_stops_at_ra_sectors)
{
	struct vd_drive d;
	u64 now, svc, ra;

	mk(&d, "hdd7200", 5);
	ra = d.p.ra_sectors;
	CHECK(ra >= 16);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	/* After a long idle, the last sector of the read-ahead is cached... */
	svc = sub(&d, VD_READ, 300008 + ra - 8, 8, now + 100 * MS, &now);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(8));
	/* ...which reads on to ra_sectors past that hit, and no further. */
	svc = sub(&d, VD_READ, 300008 + 2 * ra + 8, 8, now + 100 * MS, NULL);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
}

CTEST(readahead_stops_at_disk_end)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, CAP - 16, 8, 0, &now);
	/* The read-ahead is cut at the disk end and still serves its tail. */
	svc = sub(&d, VD_READ, CAP - 8, 8, now + 10 * MS, &now);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(8));
}

CTEST(cache_hit_elsewhere_does_not_stop_readahead)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	sub(&d, VD_READ, 900000, 8, now, &now);		/* reads ahead */
	sub(&d, VD_READ, 300000, 8, now, &now);		/* hit on the other */
	CHECK_EQ(d.st.cache_hits, 1);
	svc = sub(&d, VD_READ, 900008, 128, now + 5 * MS, NULL);
	CHECK_EQ(d.st.cache_hits, 2);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(128));
}

CTEST(media_access_stops_readahead)
{
	struct vd_drive d;
	u64 now, svc, seeks;

	mk(&d, "hdd7200", 5);
	sub(&d, VD_READ, 300000, 8, 0, &now);
	/* 0.5 ms of read-ahead (~146 sectors), then the head leaves. */
	sub(&d, VD_WRITE, 1500000, 8, now + MS / 2, &now);
	svc = sub(&d, VD_READ, 300008, 128, now + 10 * MS, &now);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(128));
	seeks = d.st.seeks;
	svc = sub(&d, VD_READ, 300200, 8, now + 10 * MS, NULL);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(d.st.seeks, seeks + 1);
	CHECK(svc > MS);
}

CTEST(write_invalidates_overlapping_segment)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 9);
	sub(&d, VD_READ, 500000, 8, 0, &now);
	sub(&d, VD_READ, 1500000, 8, now, &now);	/* 500000 now a plain segment */
	sub(&d, VD_WRITE, 500004, 8, now, &now);
	svc = sub(&d, VD_READ, 500000, 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
}

CTEST(write_invalidates_readahead_segment)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 9);
	sub(&d, VD_READ, 500000, 8, 0, &now);
	sub(&d, VD_WRITE, 500000, 8, now, &now);
	svc = sub(&d, VD_READ, 500000, 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK_EQ(d.st.ra_hits, 0);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
}

CTEST(write_leaves_adjacent_segment_cached)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 9);
	sub(&d, VD_READ, 500000, 8, 0, &now);
	sub(&d, VD_READ, 1500000, 8, now, &now);
	sub(&d, VD_WRITE, 500008, 8, now, &now);	/* just after it */
	svc = sub(&d, VD_READ, 500000, 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 1);
	CHECK_EQ(svc, OVH_7200 + BUS_7200(8));
}

CTEST(writes_never_count_as_cache_hits)
{
	struct vd_drive d;
	u64 now, svc;

	mk(&d, "hdd7200", 9);
	sub(&d, VD_READ, 500000, 64, 0, &now);
	svc = sub(&d, VD_WRITE, 500000, 8, now, &now);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
	svc = sub(&d, VD_WRITE, 500000, 8, now, &now);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
	sub(&d, VD_WRITE, 500008, 8, now + 10 * MS, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK_EQ(d.st.ra_hits, 0);
}

CTEST(no_cache_drive_reads_go_to_media)
{
	struct vd_drive d;
	struct vd_drive_params p = *prof("hdd7200");
	u64 now, svc;

	p.nr_segs = 0;
	CHECK_EQ(vd_drive_init(&d, &p, CAP, CAP, 1), 0);
	sub(&d, VD_READ, 500000, 8, 0, &now);
	svc = sub(&d, VD_READ, 500000, 8, now, &now);
	CHECK_EQ(d.st.cache_hits, 0);
	CHECK(svc >= OVH_7200 + MEDIA_7200(8));
}

/* --- queueing, rotation, accounting -------------------------------------- */

CTEST(requests_arriving_together_queue)
{
	struct vd_drive d;
	u64 c1, c2, s1, s2;

	mk(&d, "hdd7200", 11);
	s1 = sub(&d, VD_READ, 1000, 8, 0, &c1);
	CHECK_EQ(c1, s1);
	s2 = sub(&d, VD_READ, 1800000, 8, 0, &c2);
	CHECK_EQ(c2, c1 + s2);
	CHECK_EQ(d.busy_until, c2);
}

CTEST(request_after_idle_starts_at_arrival)
{
	struct vd_drive d;
	u64 c1, c2, s2;

	mk(&d, "hdd7200", 11);
	sub(&d, VD_READ, 1000, 8, 0, &c1);
	s2 = sub(&d, VD_WRITE, 1800000, 8, c1 + 50 * MS, &c2);
	CHECK_EQ(c2, c1 + 50 * MS + s2);
}

CTEST(sequential_write_after_write_has_no_rotation)
{
	struct vd_drive d;
	u64 now, rot, svc;
	u32 i;

	mk(&d, "hdd7200", 13);
	sub(&d, VD_WRITE, 700000, 8, 0, &now);
	for (i = 1; i <= 10; i++) {
		rot = d.st.rotation_ns;
		svc = sub(&d, VD_WRITE, 700000 + 8 * i, 8, now, &now);
		CHECK_EQ(d.st.rotation_ns, rot);
		CHECK_EQ(svc, OVH_7200 + MEDIA_7200(8));
	}
}

CTEST(sequential_write_after_idle_waits_for_its_sector)
{
	struct vd_drive d;
	u64 c1, rot, seek, svc, gap = MS + OVH_7200;

	mk(&d, "hdd7200", 13);
	sub(&d, VD_WRITE, 700000, 8, 0, &c1);
	rot = d.st.rotation_ns;
	seek = d.st.seek_ns;
	/* 1 ms idle: the media access starts 1 ms + overhead after the last. */
	svc = sub(&d, VD_WRITE, 700008, 8, c1 + MS, NULL);
	CHECK_EQ(d.st.rotation_ns - rot, REV_7200 - gap);
	CHECK_EQ(d.st.seek_ns, seek);
	CHECK_EQ(svc, OVH_7200 + REV_7200 - gap + MEDIA_7200(8));
}

CTEST(sequential_write_after_whole_revolutions_idle_has_no_rotation)
{
	struct vd_drive d;
	u64 c1, rot, svc;

	mk(&d, "hdd7200", 13);
	sub(&d, VD_WRITE, 700000, 8, 0, &c1);
	rot = d.st.rotation_ns;
	svc = sub(&d, VD_WRITE, 700008, 8, c1 + 3 * REV_7200 - OVH_7200, NULL);
	CHECK_EQ(d.st.rotation_ns, rot);
	CHECK_EQ(svc, OVH_7200 + MEDIA_7200(8));
}

CTEST(queued_sequential_writes_have_no_rotation)
{
	struct vd_drive d;
	u64 rot, svc;
	u32 i;

	mk(&d, "hdd7200", 13);
	sub(&d, VD_WRITE, 700000, 8, 0, NULL);
	rot = d.st.rotation_ns;
	for (i = 1; i <= 10; i++) {
		svc = sub(&d, VD_WRITE, 700000 + 8 * i, 8, 0, NULL);
		CHECK_EQ(svc, OVH_7200 + MEDIA_7200(8));
	}
	CHECK_EQ(d.st.rotation_ns, rot);
}

CTEST(sequential_read_without_cache_after_idle_waits_for_its_sector)
{
	struct vd_drive_params p = *prof("hdd7200");
	struct vd_drive d;
	u64 c1, rot, svc, gap = 2 * MS + OVH_7200;

	p.nr_segs = 0;
	CHECK_EQ(vd_drive_init(&d, &p, CAP, CAP, 13), 0);
	sub(&d, VD_READ, 700000, 8, 0, &c1);
	rot = d.st.rotation_ns;
	svc = sub(&d, VD_READ, 700008, 8, c1 + 2 * MS, NULL);
	CHECK_EQ(d.st.rotation_ns - rot, REV_7200 - gap);
	CHECK_EQ(svc, OVH_7200 + REV_7200 - gap + MEDIA_7200(8));
	/* Queued behind it, the next one goes on at once. */
	svc = sub(&d, VD_READ, 700016, 8, 0, NULL);
	CHECK_EQ(svc, OVH_7200 + MEDIA_7200(8));
}

CTEST(first_request_at_sector_0_has_no_rotation)
{
	struct vd_drive d;
	u64 svc;

	mk(&d, "hdd7200", 13);
	svc = sub(&d, VD_WRITE, 0, 8, 0, NULL);
	CHECK_EQ(d.st.rotation_ns, 0);
	CHECK_EQ(d.st.seek_ns, 0);
	CHECK_EQ(svc, OVH_7200 + MEDIA_7200(8));
}

CTEST(random_requests_have_rotation)
{
	struct vd_drive d;
	u64 now = 0, rot;
	u32 i, with = 0;

	mk(&d, "hdd7200", 17);
	ctest_rng = 0xabcdef1234567ULL;
	for (i = 0; i < 100; i++) {
		rot = d.st.rotation_ns;
		sub(&d, i & 1 ? VD_WRITE : VD_READ, ctest_rand(CAP / 8) * 8, 8, now, &now);
		with += d.st.rotation_ns > rot;
	}
	CHECK(with >= 1);
}

CTEST(rotation_is_under_one_revolution_and_uniform)
{
	struct vd_drive d;
	u64 now = 0, rot, r, total = 0;
	const u32 n = 4000;
	u32 i;

	mk(&d, "hdd7200", 19);
	ctest_rng = 0x5555aaaa1234ULL;
	for (i = 0; i < n; i++) {
		rot = d.st.rotation_ns;
		sub(&d, VD_WRITE, ctest_rand(CAP / 8) * 8, 8, now, &now);
		r = d.st.rotation_ns - rot;
		CHECK(r < REV_7200 + 1);
		total += r;
	}
	/* Uniform in [0, rev): mean half a revolution, within 5%. */
	CHECK(total / n > REV_7200 / 2 * 95 / 100);
	CHECK(total / n < REV_7200 / 2 * 105 / 100);
}

CTEST(stats_add_up)
{
	struct vd_drive d;
	u64 now = 0, total = 0;
	u32 i;

	mk(&d, "hdd7200", 23);
	ctest_rng = 0x777ULL;
	for (i = 0; i < 500; i++)
		total += sub(&d, ctest_rand(2) ? VD_WRITE : VD_READ, ctest_rand(CAP / 8) * 8,
			     8 * (1 + ctest_rand(32)), now, &now);
	CHECK_EQ(d.st.requests, 500);
	CHECK_EQ(d.st.busy_ns, total);
	/* Every request pays the overhead on top of these parts. */
	CHECK_EQ(d.st.busy_ns, d.st.seek_ns + d.st.rotation_ns +
		 d.st.transfer_ns + 500 * OVH_7200);
}

/* --- devices without platters (st1, nbd) --------------------------------- */

#define ST1_LAT		3000000ULL
#define ST1_IO		2000000ULL	/* 1 s / 500 */
#define ST1_XFER(s)	((u64)(s) * 512000 / 262)
#define NBD_LAT		1000000ULL
#define NBD_XFER(s)	((u64)(s) * 512000 / 117)

/*
 * Submits to a flat device; returns the completion, checks the service: what
 * the request added to the device's time, from its arrival or the previous
 * completion, whichever is later.
 */
static u64 fsub(struct vd_drive *d, u64 sector, u32 sectors, u64 now, u64 lat,
		u64 xfer)
{
	u64 svc = ~0ULL, before = d->busy_until, c;

	c = vd_drive_submit(d, ctest_rand(2) ? VD_READ : VD_WRITE, sector, sectors,
			    now, &svc);
	CHECK_EQ(svc, c - (now > before ? now : before));
	CHECK(c >= now + lat + xfer);
	CHECK(c >= before);		/* completions in submission order */
	CHECK_EQ(d->busy_until, c);
	return c;
}

CTEST(flat_profiles_have_no_platters_or_cache)
{
	CHECK_EQ(prof("st1")->rpm, 0);
	CHECK_EQ(prof("st1")->nr_segs, 0);
	CHECK_EQ(prof("nbd")->rpm, 0);
	CHECK_EQ(prof("nbd")->iops, 0);
}

CTEST(flat_request_after_idle_costs_latency_and_transfer)
{
	struct vd_drive d;

	mk(&d, "st1", 1);
	CHECK_EQ(fsub(&d, 123456, 8, 5 * MS, ST1_LAT, ST1_XFER(8)),
		 5 * MS + ST1_XFER(8) + ST1_LAT);
	CHECK_EQ(fsub(&d, 999, 8, 50 * MS, ST1_LAT, ST1_XFER(8)),
		 50 * MS + ST1_XFER(8) + ST1_LAT);
	CHECK_EQ(d.st.requests, 2);
	CHECK_EQ(d.st.busy_ns, 2 * (ST1_XFER(8) + ST1_LAT));
	CHECK_EQ(d.st.transfer_ns, 2 * ST1_XFER(8));
	CHECK_EQ(d.st.seeks + d.st.seek_ns + d.st.rotation_ns + d.st.cache_hits, 0);
}

CTEST(flat_random_ios_are_spaced_by_the_iops_cap)
{
	struct vd_drive d;
	u32 i;

	mk(&d, "st1", 1);
	/* Ten random 4 KiB requests at once overlap, one I/O slot apart. */
	for (i = 0; i < 10; i++)
		CHECK_EQ(fsub(&d, region(i), 8, 0, ST1_LAT, ST1_XFER(8)),
			 i * ST1_IO + ST1_XFER(8) + ST1_LAT);
	CHECK_EQ(d.st.busy_ns, 9 * ST1_IO + ST1_XFER(8) + ST1_LAT);
}

CTEST(flat_sequential_requests_merge_into_one_io)
{
	struct vd_drive d;
	u32 i;

	mk(&d, "st1", 1);
	/* 256 x 4 KiB in a row are one 1 MiB I/O: only the transfers queue. */
	for (i = 0; i < 256; i++)
		CHECK_EQ(fsub(&d, 4096 + 8 * i, 8, 0, ST1_LAT, ST1_XFER(8)),
			 (i + 1) * ST1_XFER(8) + ST1_LAT);
	/*
	 * The next one opens a second I/O: its slot is free at 2 ms, but the
	 * link is busy with the first I/O's transfers until 4 ms.
	 */
	CHECK(256 * ST1_XFER(8) > ST1_IO);
	CHECK_EQ(fsub(&d, 4096 + 2048, 8, 0, ST1_LAT, ST1_XFER(8)),
		 257 * ST1_XFER(8) + ST1_LAT);
	/* At 3 ms, one elsewhere is an I/O of its own: its slot is at 4 ms. */
	CHECK_EQ(fsub(&d, 0, 8, 3 * MS, ST1_LAT, ST1_XFER(8)),
		 258 * ST1_XFER(8) + ST1_LAT);
	CHECK_EQ(d.io_next, 3 * ST1_IO);
}

CTEST(flat_large_request_counts_as_several_ios)
{
	struct vd_drive_params p = *prof("st1");
	struct vd_drive d;

	/* A fast link, so that only the I/O slots pace the requests. */
	p.media_mbps = p.bus_mbps = 1000000;
	CHECK_EQ(vd_drive_init(&d, &p, CAP, CAP, 1), 0);
#define FAST(s)	((u64)(s) * 512000 / 1000000)
	/* 2.5 MiB: three I/Os, so the next I/O may start 6 ms later. */
	CHECK_EQ(fsub(&d, 0, 5120, 0, ST1_LAT, FAST(5120)), FAST(5120) + ST1_LAT);
	CHECK_EQ(d.io_next, 3 * ST1_IO);
	/* Continuing it fills the third I/O's free half without a slot. */
	CHECK_EQ(fsub(&d, 5120, 1024, 0, ST1_LAT, FAST(1024)),
		 FAST(5120) + FAST(1024) + ST1_LAT);
	CHECK_EQ(d.io_next, 3 * ST1_IO);
	CHECK_EQ(fsub(&d, 1 << 20, 8, 0, ST1_LAT, FAST(8)),
		 3 * ST1_IO + FAST(8) + ST1_LAT);
#undef FAST
}

CTEST(flat_transfers_share_the_throughput_cap)
{
	struct vd_drive d;
	u64 c = 0;
	u32 i;

	mk(&d, "nbd", 1);
	/* No I/O cap: 100 x 128 KiB at once complete at the link's rate. */
	for (i = 0; i < 100; i++)
		c = fsub(&d, region(i % 20) + 256 * i, 256, 0, NBD_LAT, NBD_XFER(256));
	CHECK_EQ(c, 100 * NBD_XFER(256) + NBD_LAT);
	CHECK_EQ(d.st.busy_ns, c);
	/* 100 x 128 KiB = 13.1 MB at 117 MB/s, plus one latency. */
	CHECK_NEAR(c, 13107200.0 / 117e6 * 1e9 + NBD_LAT);
}

CTEST(flat_requests_overlap_in_flight)
{
	struct vd_drive d;
	u64 c = 0;
	u32 i;

	mk(&d, "nbd", 1);
	/* Sixteen 4 KiB requests at once: one latency, not sixteen. */
	for (i = 0; i < 16; i++)
		c = fsub(&d, region(i), 8, 0, NBD_LAT, NBD_XFER(8));
	CHECK_EQ(c, 16 * NBD_XFER(8) + NBD_LAT);
	CHECK_EQ(d.st.busy_ns, c);
	/* One at a time, each waits its own latency. */
	vd_drive_reset(&d);
	c = 0;
	for (i = 0; i < 16; i++)
		c = fsub(&d, region(i), 8, c, NBD_LAT, NBD_XFER(8));
	CHECK_EQ(c, 16 * (NBD_XFER(8) + NBD_LAT));
	CHECK_EQ(d.st.busy_ns, c);
}

/*
 * A request behind others in flight adds only its transfer: the services
 * of a burst sum to the device's busy time, as a real device's measured
 * completion gaps do, and a single-server virtual disk fed them prices the
 * burst at what it cost.
 */
CTEST(flat_service_is_what_a_request_adds)
{
	struct vd_drive d;
	u64 svc, sum = 0, c = 0;
	u32 i;

	mk(&d, "nbd", 1);
	for (i = 0; i < 16; i++) {
		c = vd_drive_submit(&d, VD_READ, region(i), 16, 0, &svc);
		CHECK_EQ(svc, i ? NBD_XFER(16) : NBD_LAT + NBD_XFER(16));
		sum += svc;
	}
	CHECK_EQ(sum, c);
	CHECK_EQ(sum, d.st.busy_ns);
	/* One arriving after the last completion pays its latency again. */
	c = vd_drive_submit(&d, VD_READ, region(0), 16, c + MS, &svc);
	CHECK_EQ(svc, NBD_LAT + NBD_XFER(16));
	/* One arriving while the last is in its latency pays the rest. */
	vd_drive_submit(&d, VD_READ, region(1), 16, c - NBD_LAT / 2, &svc);
	CHECK_EQ(svc, NBD_LAT / 2 + NBD_XFER(16));
}

CTEST(flat_reset_reproduces_sequence)
{
	struct vd_drive d;
	u64 a[40], c = 0;
	u32 i;

	mk(&d, "st1", 1);
	ctest_rng = 0x42ULL;
	for (i = 0; i < 40; i++)
		a[i] = c = fsub(&d, ctest_rand(2) ? d.io_end : ctest_rand(CAP / 8) * 8,
				8, c / 2, ST1_LAT, ST1_XFER(8));
	vd_drive_reset(&d);
	CHECK_EQ(d.io_next + d.io_end + d.io_left + d.media_end, 0);
	c = 0;
	ctest_rng = 0x42ULL;
	for (i = 0; i < 40; i++) {
		c = fsub(&d, ctest_rand(2) ? d.io_end : ctest_rand(CAP / 8) * 8,
			 8, c / 2, ST1_LAT, ST1_XFER(8));
		CHECK_EQ(c, a[i]);
	}
}

/*
 * The overlap as vdiskctl train measures it, on the emulator: nbd's whole
 * latency (1 ms; side by side its reads are 35 us of transfer apart), st1's
 * latency beyond its I/O spacing (3 ms + a 4 KiB transfer - 2 ms at 500 I/Os
 * a second), and none for the hard disks, which serve one at a time.
 */
CTEST(overlap_of_the_emulated_drives)
{
	static struct vd_drive d;
	const u64 cap = 1ULL << 31;

	CHECK_NEAR(vd_drive_overlap(&d, prof("nbd"), cap, cap), 1000000.0 - 500);
	CHECK_NEAR(vd_drive_overlap(&d, prof("st1"), cap, cap), 1015625.0 - 1000);
	CHECK_EQ(vd_drive_overlap(&d, prof("hdd7200"), 1953125000, cap), 0);
	CHECK_EQ(vd_drive_overlap(&d, prof("hdd15k"), 71687369, 71687369), 0);
	CHECK_EQ(vd_drive_overlap(&d, prof("nbd"), cap, 4), 0);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the shadow caches (rc-shadow.c): the unsampled shadows
 * against a naive LRU that keeps the whole recency order, the distance
 * classes against the vdisk model's columns, the geometry and the
 * sampling, and the sampled shadows against the unsampled ones on
 * workloads of a server's size.
 */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "rc-shadow.h"
#include "vd-model.h"

#define KIB	2ULL		/* sectors */
#define MIB	(1024 * KIB)
#define GIB	(1024 * MIB)

/* A disk: a seek costs 8 ms, a short forward skip 1 ms, 100 MB/s. */
static bool price(void *ctx, s64 d, u32 sectors, u64 *ns)
{
	u64 *calls = ctx;

	if (calls)
		(*calls)++;
	*ns = (d == 0 ? 0 : d > 0 && d <= 2048 ? 1000000 : 8000000) + (u64)sectors * 5120;
	return true;
}

static struct rc_shadow *mk(u64 ram, u32 entries)
{
	size_t n = rc_shadow_mem_size(ram, entries);
	struct rc_shadow *sh = malloc(sizeof(*sh));
	void *mem = malloc(n);

	CHECK(n && sh && mem);
	CHECK_EQ(rc_shadow_init(sh, mem, ram, entries), 0);
	return sh;
}

static void rm(struct rc_shadow *sh)
{
	free(sh->sz[0].ent);
	free(sh);
}

/* The shadows priced by price(), counting its calls in *calls if not NULL. */
static struct rc_shadow_eval eval(const struct rc_shadow *sh, u64 *calls)
{
	struct rc_shadow_eval ev;

	rc_shadow_eval(sh, price, calls, &ev);
	return ev;
}

/* --- a naive reference: the whole recency order, one list per size ------- */

struct ref {
	u64 *mru;		/* segments, most recent first */
	u32 n, max;
	u64 misses[RC_SHADOW_RAMS], fills[RC_SHADOW_RAMS], ns[RC_SHADOW_RAMS];
	u64 ends[RC_SHADOW_RAMS][64];	/* every fill's end, in order */
	u32 nr_ends[RC_SHADOW_RAMS];
};

/* From the nearest of the last four fills' ends (the newer on a tie), or @d if no farther. */
static s64 ref_distance(const struct ref *r, u32 ram, u64 start, s64 d)
{
	u32 n = r->nr_ends[ram], i;

	for (i = n; i > (n > 4 ? n - 4 : 0); i--) {
		s64 e = (s64)(start - r->ends[ram][(i - 1) % 64]);

		if (llabs(e) < llabs(d))
			d = e;
	}
	return d;
}

/* Position of @seg in the recency order (its stack distance), or ~0 if new. */
static u32 ref_touch(struct ref *r, u64 seg)
{
	u32 i;
	bool found;

	for (i = 0; i < r->n && r->mru[i] != seg; i++)
		;
	found = i < r->n;
	if (!found) {
		CHECK(r->n < r->max);
		r->n++;
	}
	memmove(r->mru + 1, r->mru, (size_t)i * sizeof(u64));
	r->mru[0] = seg;
	return found ? i : ~0u;
}

/* The piece [a, b) as rc-shadow.c must shadow it, from first principles. */
static void ref_piece(struct ref *r, const struct rc_shadow_size *z, u64 a, u64 b, s64 d)
{
	u64 first = a >> z->seg_shift, last = (b - 1) >> z->seg_shift, s;
	u32 pos[64], j, ram;
	u64 ns;

	for (s = first; s <= last; s++)
		pos[s - first] = ref_touch(r, s);
	for (ram = 0; ram < RC_SHADOW_RAMS; ram++) {
		for (s = first; s <= last; s++) {
			if (pos[s - first] < z->cap[ram])
				continue;
			j = 0;
			while (s + j <= last && pos[s + j - first] >= z->cap[ram])
				j++;
			/* Priced at its distance's class (rc_shadow_eval()). */
			price(NULL, rc_shadow_class_distance(rc_shadow_class(
					ref_distance(r, ram, s << z->seg_shift,
						     d + (s64)((s << z->seg_shift) - a)))),
			      j << z->seg_shift, &ns);
			r->misses[ram] += j;
			r->fills[ram]++;
			r->ns[ram] += ns;
			r->ends[ram][r->nr_ends[ram]++ % 64] = (s + j) << z->seg_shift;
			s += j - 1;
		}
	}
}

static void ref_read(struct ref *ref, const struct rc_shadow *sh, u64 sector, u32 sectors,
		     s64 d)
{
	u64 a, b, e = sector + sectors;
	u32 i;

	for (a = sector; a < e; a = b) {
		b = ((a >> RC_SHADOW_REGION_SHIFT) + 1) << RC_SHADOW_REGION_SHIFT;
		if (b > e)
			b = e;
		for (i = 0; i < RC_SHADOW_SIZES; i++)
			ref_piece(&ref[i], &sh->sz[i], a, b, a == sector ? d : 0);
	}
}

/* --- workloads ----------------------------------------------------------- */

struct gen {
	u64 disk, last_end;
	double *zcdf;		/* Zipf over nfiles files of file_sectors */
	u32 nfiles;
	u64 file_sectors, scan_at, scan_len;
	int kind;
};

enum { W_RANDOM, W_SCAN, W_ZIPF, W_MIX, W_NR };

static void zipf_init(struct gen *g, u32 n, double alpha)
{
	double sum = 0;
	u32 i;

	g->zcdf = malloc(n * sizeof(double));
	CHECK(g->zcdf);
	for (i = 0; i < n; i++)
		g->zcdf[i] = (sum += 1.0 / pow(i + 1, alpha));
	for (i = 0; i < n; i++)
		g->zcdf[i] /= sum;
	g->nfiles = n;
}

static u32 zipf(const struct gen *g)
{
	double u = (double)(ctest_rand64() >> 11) / (double)(1ULL << 53);
	u32 lo = 0, hi = g->nfiles - 1, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (g->zcdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Popular files spread over the disk, not packed at its start. */
	return (u32)(((u64)lo * 2654435761u) % g->nfiles);
}

/* The next read: *sector, *sectors; its distance from the last one's end. */
static s64 next_read(struct gen *g, u64 *sector, u32 *sectors)
{
	int k = g->kind == W_MIX ? (int)ctest_rand(3) : g->kind;
	s64 d;

	switch (k) {
	case W_RANDOM:
		*sectors = 8;
		*sector = ctest_rand(g->disk / 8) * 8;
		break;
	case W_SCAN:
		*sectors = 256;
		*sector = g->scan_at + g->scan_len;
		g->scan_len = (g->scan_len + 256) % (3 * GIB);
		break;
	default:
		*sectors = (u32)(8 << ctest_rand(5));	/* 4 .. 64 KiB */
		*sector = (u64)zipf(g) * g->file_sectors +
			  ctest_rand(g->file_sectors / *sectors) * *sectors;
		break;
	}
	d = (s64)(*sector - g->last_end);
	g->last_end = *sector + *sectors;
	return d;
}

static u64 bare_price(s64 d, u32 sectors)
{
	u64 ns;

	price(NULL, d, sectors, &ns);
	return ns;
}

/* --- the unsampled shadows are an exact LRU ------------------------------ */

CTEST(geometry_of_the_default_cache)
{
	struct rc_shadow *sh = mk(64ULL << 20, RC_SHADOW_ENTRIES);
	/*
	 * 64 MiB: 2048 segments of 32 KiB, 64 of 1 MiB, each size sampled at
	 * the floor of 1 region in 32 (the cost of a read: RC_SHADOW_MIN_RATE).
	 */
	static const u32 rate[RC_SHADOW_SIZES] = { 5, 5, 5, 5, 5, 5 };
	static const u32 cap1[RC_SHADOW_SIZES] = { 64, 32, 16, 8, 4, 2 };
	u32 i;

	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		CHECK_EQ(sh->sz[i].seg_shift, 6 + i);
		CHECK_EQ(sh->sz[i].rate_shift, rate[i]);
		CHECK_EQ(sh->sz[i].cap[0], cap1[i] / 2);
		CHECK_EQ(sh->sz[i].cap[1], cap1[i]);
		CHECK_EQ(sh->sz[i].cap[2], 2 * cap1[i]);
		CHECK_EQ(sh->sz[i].cap[3], 4 * cap1[i]);
	}
	CHECK_EQ(rc_shadow_ram_bytes(sh, 0), 32ULL << 20);
	CHECK_EQ(rc_shadow_ram_bytes(sh, 3), 256ULL << 20);
	CHECK_EQ(rc_shadow_seg_bytes(5), 1 << 20);
	rm(sh);
}

CTEST(sizes_too_large_for_the_ram_are_off)
{
	/* 1 MiB of RAM: half of it holds one 512 KiB segment, no 1 MiB one. */
	struct rc_shadow *sh = mk(1 << 20, RC_SHADOW_FULL);

	CHECK_EQ(sh->sz[4].rate_shift, 0);
	CHECK_EQ(sh->sz[4].cap[0], 1);
	CHECK_EQ(sh->sz[5].rate_shift, 32);
	CHECK_EQ(sh->sz[5].cap[3], 0);
	rc_shadow_read(sh, 0, 2048, 0, 1000, 0);
	CHECK_EQ(sh->sz[5].reads, 0);
	CHECK(!eval(sh, NULL).ok[5][1]);
	CHECK(eval(sh, NULL).ok[4][1]);
	CHECK_EQ(sh->sz[4].reads, 1);
	CHECK_EQ(eval(sh, NULL).misses[4][0], 2);
	rm(sh);
}

CTEST(bad_arguments_are_refused)
{
	struct rc_shadow sh;
	char mem[64];

	CHECK_EQ(rc_shadow_mem_size(0, RC_SHADOW_ENTRIES), 0);
	CHECK_EQ(rc_shadow_mem_size(1 << 20, 3), 0);
	CHECK_EQ(rc_shadow_mem_size(1ULL << 45, RC_SHADOW_FULL), 0);
	CHECK_EQ(rc_shadow_init(&sh, mem, 0, RC_SHADOW_ENTRIES), -1);
	CHECK_EQ(rc_shadow_class_distance(RC_SHADOW_CLASSES), 0);
}

CTEST(loop_larger_than_the_ram_misses_every_time)
{
	/* 8 MiB of RAM: 1 MiB segments, caches of 4, 8, 16 and 32. */
	struct rc_shadow *sh = mk(8 << 20, RC_SHADOW_FULL);
	const struct rc_shadow_size *z = &sh->sz[5];
	struct rc_shadow_eval ev;
	u32 pass, i;

	for (pass = 0; pass < 3; pass++)
		for (i = 0; i < 12; i++)
			rc_shadow_read(sh, i * MIB, 2048, 0, 1000, 0);
	/* 12 segments: the caches of 16 and 32 miss the first pass only. */
	ev = eval(sh, NULL);
	CHECK_EQ(ev.misses[5][0], 36);
	CHECK_EQ(ev.misses[5][1], 36);
	CHECK_EQ(ev.misses[5][2], 12);
	CHECK_EQ(ev.misses[5][3], 12);
	CHECK_EQ(z->count[0] + z->count[1] + z->count[2], 12);
	CHECK_EQ(sh->bare_ns, 36 * 1000);
	rm(sh);
}

CTEST(runs_of_misses_are_one_fill_priced_from_where_they_start)
{
	struct rc_shadow *sh = mk(8 << 20, RC_SHADOW_FULL);
	struct rc_shadow_eval ev;
	u64 calls = 0;

	/* Segment 2 of 0..3 is held: two fills, the second skipping it. */
	rc_shadow_read(sh, 128, 8, 0, 0, 0);
	rc_shadow_read(sh, 0, 256, 5000, 20000000, 0);
	ev = eval(sh, &calls);
	CHECK_EQ(ev.misses[0][0], 1 + 3);
	CHECK_EQ(ev.fills[0][0], 1 + 2);
	/*
	 * The first read's fill from where it read.  The second read's first
	 * run starts 192 sectors before the end of that fill, nearer than the
	 * read's 5000: a step back, an 8 ms seek, and 2 x 32 KiB; its second
	 * run starts where that first fill ended: 32 KiB, no seek.
	 */
	CHECK_EQ(ev.ns[0][0], 64 * 5120 + (8000000 + 128 * 5120) + 64 * 5120);
	CHECK_EQ(ev.ns[0][3], ev.ns[0][0]);
	/*
	 * Each run length and distance class is priced once, whichever RAMs
	 * and reads made such fills: at 32 KiB the second read's two runs (its
	 * second is the first read's, one segment with no seek), at 64 KiB the
	 * first read's and the second's step back (its second segment is
	 * held), above only the first read's (the second's segment is held).
	 */
	CHECK_EQ(calls, 2 + 2 + (RC_SHADOW_SIZES - 2));
	CHECK(ev.ok[0][0]);
	CHECK_EQ(ev.ppm[0][0], ev.ns[0][0] * 1000000 / 20000000);
	rm(sh);
}

CTEST(unsampled_shadows_match_a_naive_lru)
{
	struct rc_shadow *sh = mk(8 << 20, RC_SHADOW_FULL);
	struct ref ref[RC_SHADOW_SIZES] = { 0 };
	struct gen g = { .disk = 64 * GIB, .file_sectors = 512 };
	struct rc_shadow_eval ev;
	u64 sector, bare = 0;
	u32 i, r, sectors, n;
	s64 d;

	zipf_init(&g, 4096, 0.8);
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		ref[i].max = 1 << 16;
		ref[i].mru = malloc(ref[i].max * sizeof(u64));
	}
	ctest_rng = 7;
	for (n = 0; n < 20000; n++) {
		g.kind = n / 5000;	/* random, scan, zipf, mix */
		d = next_read(&g, &sector, &sectors);
		/* Some reads cross a region's end. */
		if (n % 7 == 0)
			sector |= 2048 - 16;
		rc_shadow_read(sh, sector, sectors, d, bare_price(d, sectors), 0);
		ref_read(ref, sh, sector, sectors, d);
		bare += bare_price(d, sectors);
	}
	CHECK_EQ(sh->bare_ns, bare);
	ev = eval(sh, NULL);
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		for (r = 0; r < RC_SHADOW_RAMS; r++) {
			CHECK_EQ(ev.misses[i][r], ref[i].misses[r]);
			CHECK_EQ(ev.fills[i][r], ref[i].fills[r]);
			CHECK_EQ(ev.ns[i][r], ref[i].ns[r]);
		}
		/* A bigger cache never misses more (LRU's inclusion). */
		for (r = 1; r < RC_SHADOW_RAMS; r++)
			CHECK(ev.misses[i][r] <= ev.misses[i][r - 1]);
		free(ref[i].mru);
	}
	free(g.zcdf);
	rm(sh);
}

CTEST(distance_classes_are_the_model_columns_below_a_gib)
{
	const u64 cap = 1ULL << 35;	/* 16 TiB */
	size_t n = vd_model_mem_size(cap, 1, 0);
	struct vd_model *m = malloc(sizeof(*m));
	void *mem = malloc(n);
	u32 c, k, i;
	s64 d, rep;

	CHECK(n && m && mem);
	CHECK_EQ(vd_model_init(m, mem, cap, 1, 0), 0);
	/* Every class is its distance's. */
	for (c = 0; c < RC_SHADOW_CLASSES; c++)
		CHECK_EQ(rc_shadow_class(rc_shadow_class_distance(c)), c);
	CHECK_EQ(rc_shadow_class(0), 0);
	CHECK_EQ(rc_shadow_class(INT64_MIN + 1), RC_SHADOW_CLASSES - 1);
	/* Below 1 GiB a distance and its class's are priced in the same column. */
	for (k = 0; k < 21; k++) {
		for (i = 0; i < 64; i++) {
			d = (s64)((1ULL << k) + ctest_rand(1ULL << k));
			rep = rc_shadow_class_distance(rc_shadow_class(d));
			CHECK_EQ(vd_model_col(m, d), vd_model_col(m, rep));
			rep = rc_shadow_class_distance(rc_shadow_class(-d));
			CHECK_EQ(vd_model_col(m, -d), vd_model_col(m, rep));
		}
	}
	/* Beyond, at the middle of its power of two: 1.5 GiB for [1, 2) GiB. */
	CHECK_EQ(rc_shadow_class_distance(rc_shadow_class((s64)GIB + 5)), (s64)(3 * GIB / 2));
	CHECK_EQ(rc_shadow_class_distance(rc_shadow_class(-(s64)(5 * GIB))), -(s64)(6 * GIB));
	free(mem);
	free(m);
}

CTEST(decay_halves_the_counters_and_keeps_the_entries)
{
	struct rc_shadow *sh = mk(8 << 20, RC_SHADOW_FULL);
	u32 i;

	for (i = 0; i < 8; i++)
		rc_shadow_read(sh, i * MIB, 2048, 0, 1001, 0);
	/* 8 fills of 1 MiB, each where the read was. */
	CHECK_EQ(eval(sh, NULL).ns[5][3], 8 * 2048 * 5120);
	rc_shadow_decay(sh);
	CHECK_EQ(sh->sz[5].reads, 4);
	CHECK_EQ(sh->bare_ns, 8 * 1001 / 2);
	CHECK_EQ(eval(sh, NULL).misses[5][3], 4);
	CHECK_EQ(eval(sh, NULL).ns[5][3], 4 * 2048 * 5120);
	CHECK_EQ(sh->sz[5].count[0] + sh->sz[5].count[1], 8);
	/* Read again, in the caller's next period: halved once more first. */
	rc_shadow_read(sh, 0, 2048, 0, 1001, 1);
	CHECK_EQ(sh->sz[5].reads, 2 + 1);
	/* A hit in the caches that hold 8 segments. */
	CHECK_EQ(eval(sh, NULL).misses[5][1], 2);
	CHECK_EQ(eval(sh, NULL).misses[5][0], 3);
	rc_shadow_read(sh, 0, 2048, 0, 1001, 1);
	CHECK_EQ(sh->sz[5].reads, 4);
	rc_shadow_reset(sh);
	CHECK_EQ(sh->sz[5].reads + sh->sz[5].count[0] + eval(sh, NULL).misses[5][0], 0);
	rm(sh);
}

CTEST(a_halved_fill_still_costs_half)
{
	struct rc_shadow *sh = mk(8 << 20, RC_SHADOW_FULL);
	struct rc_shadow_eval ev;

	/* One fill of 1 MiB, halved twice: a quarter of its price, not none. */
	rc_shadow_read(sh, 0, 2048, 0, 1000, 0);
	rc_shadow_decay(sh);
	rc_shadow_decay(sh);
	ev = eval(sh, NULL);
	CHECK_EQ(ev.ns[5][0], 2048 * 5120 / 4);
	CHECK_EQ(ev.fills[5][0], 0);
	CHECK_EQ(sh->bare_ns, 250);
	rm(sh);
}

/* --- sampling ------------------------------------------------------------ */

CTEST(regions_sampled_at_a_rate_are_sampled_at_every_larger_one)
{
	/* 4 GiB: every size samples; the smaller sizes more sparsely. */
	struct rc_shadow *sh = mk(4ULL << 30, RC_SHADOW_ENTRIES);
	u64 region, seen[RC_SHADOW_SIZES] = { 0 };
	u32 i;

	/* 1 in 64 at 32 KiB, then the floor of 1 in 32. */
	for (i = 0; i < RC_SHADOW_SIZES; i++)
		CHECK_EQ(sh->sz[i].rate_shift, i ? RC_SHADOW_MIN_RATE : 6);
	for (region = 0; region < 1 << 16; region++) {
		bool in[RC_SHADOW_SIZES];

		rc_shadow_read(sh, region << RC_SHADOW_REGION_SHIFT, 8, 0, 1, 0);
		for (i = 0; i < RC_SHADOW_SIZES; i++) {
			in[i] = sh->sz[i].reads > seen[i];
			seen[i] = sh->sz[i].reads;
			if (i)
				CHECK(!in[i - 1] || in[i]);
		}
	}
	/* About 2^16 / 2^k regions each. */
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		double want = (double)(1 << 16) / (1 << sh->sz[i].rate_shift);

		CHECK(fabs(seen[i] - want) < 4 * sqrt(want) + 1);
	}
	rm(sh);
}

/*
 * The sampled shadows of a 1 GiB cache (up to 8192 entries a size, at
 * least 1 region in 32 sampled: 1 in 32 at every size here) against the
 * unsampled ones, on four workloads of 400,000 reads over 64 GiB: the disk
 * time of every size and RAM as a share of the bare disk's, within
 * SAMPLED_ERR points.  The worst (8.1) is the Zipf load at 1 MiB: its
 * 32 GiB of files are 32,768 regions, of which a sample of 1,024 holds
 * more or fewer of the popular ones.  (At 1 in 4, 4.6.)
 */
#define SAMPLED_ERR	8.5

CTEST(sampled_shadows_predict_the_unsampled_ones)
{
	struct gen g = { .disk = 64 * GIB, .file_sectors = 512 };
	double worst = 0;
	int kind;

	zipf_init(&g, 1 << 17, 0.9);
	for (kind = 0; kind < W_NR; kind++) {
		struct rc_shadow *full = mk(1ULL << 30, RC_SHADOW_FULL);
		struct rc_shadow *smp = mk(1ULL << 30, RC_SHADOW_ENTRIES);
		struct rc_shadow_eval ea, eb;
		u64 sector, a, b;
		u32 n, i, r, sectors;
		s64 d;

		g.kind = kind;
		g.last_end = g.scan_len = 0;
		g.scan_at = 40 * GIB;
		ctest_rng = 11 + kind;
		for (n = 0; n < 400000; n++) {
			d = next_read(&g, &sector, &sectors);
			rc_shadow_read(full, sector, sectors, d, bare_price(d, sectors), 0);
			rc_shadow_read(smp, sector, sectors, d, bare_price(d, sectors), 0);
		}
		ea = eval(full, NULL);
		eb = eval(smp, NULL);
		for (i = 0; i < RC_SHADOW_SIZES; i++) {
			for (r = 0; r < RC_SHADOW_RAMS; r++) {
				CHECK(ea.ok[i][r] && eb.ok[i][r]);
				a = ea.ppm[i][r];
				b = eb.ppm[i][r];
				printf("kind %d size %2llu KiB ram x%.1f: full %6.2f %% sampled %6.2f %% (1 in %u)\n",
				       kind, (unsigned long long)rc_shadow_seg_bytes(i) >> 10,
				       (1 << r) / 2.0, a / 1e4, b / 1e4, 1u << smp->sz[i].rate_shift);
				if (fabs(a / 1e4 - b / 1e4) > worst)
					worst = fabs(a / 1e4 - b / 1e4);
			}
		}
		rm(full);
		rm(smp);
	}
	printf("worst difference: %.2f points\n", worst);
	CHECK(worst <= SAMPLED_ERR);
	free(g.zcdf);
}

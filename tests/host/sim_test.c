// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the replay engine (userspace/sim.c): configurations
 * and their exact refusals; with policy always, no speculation and one
 * process issuing serially, fills equal the misses of an independent LRU
 * of segments (one object a segment) on several traces and cache sizes;
 * a serial bare replay keeps the drive busy exactly as long as it runs;
 * think time and overlap as the trace shows them; writes and discards
 * invalidate; the same input gives the same output.
 */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "sim.h"

static char err[SIM_ERR_MAX];

#define CAPACITY	(1ull << 21)	/* 1 GiB */

/* The emulated 7200 rpm drive of 1 GiB, its model learning from empty. */
static const struct sim_disk *hdd(void)
{
	static struct sim_disk d = { .capacity = CAPACITY };

	d.drive = &vd_drive_profile("hdd7200")->p;
	return &d;
}

/* A trace of @n requests, all zero, for the caller to fill in. */
static struct trace *new_trace(size_t n)
{
	struct trace *t = calloc(1, sizeof(*t));

	t->req = calloc(n, sizeof(*t->req));
	t->nr = n;
	return t;
}

static void put(struct trace *t, size_t i, enum trace_op op, uint64_t sector, uint32_t sectors,
		uint32_t pid, uint64_t time_ns, uint64_t done_ns)
{
	t->req[i] = (struct trace_req){ .time_ns = time_ns, .done_ns = done_ns,
					.sector = sector, .sectors = sectors, .pid = pid,
					.op = op };
}

static void free_trace(struct trace *t)
{
	free(t->req);
	free(t);
}

static struct sim_config config(const char *spec)
{
	struct sim_config c;

	if (sim_config_parse(spec, &c, err))
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(sim_config_parse(spec, &c, err), 0);
	return c;
}

static struct sim_result run(const struct trace *t, const char *spec)
{
	struct sim_config c = config(spec);
	struct sim_result r;

	CHECK_EQ(sim_run(t, hdd(), &c, &r, err), 0);
	return r;
}

CTEST(sim_configs_parse)
{
	struct sim_config c = config("64x128k:always");

	CHECK(!c.bare);
	CHECK_EQ(c.nr_segs, 64);
	CHECK_EQ(c.seg_sectors, 256);
	CHECK_EQ(c.policy, RC_POLICY_ALWAYS);
	CHECK_EQ(c.write_policy, RC_WRITE_INVALIDATE);
	c = config("256x32K:off,write_policy=update");
	CHECK_EQ(c.nr_segs, 256);
	CHECK_EQ(c.seg_sectors, 64);
	CHECK_EQ(c.policy, RC_POLICY_OFF);
	CHECK_EQ(c.write_policy, RC_WRITE_UPDATE);
	CHECK_EQ(c.estimator, RC_EST_VDISK);
	CHECK_EQ(c.tun_given, 0);		/* the target's defaults */
	c = config("2x1m:always");
	CHECK_EQ(c.seg_sectors, 2048);
	c = config("64x128k:adaptive+caware,estimator=spk,window=64,margin=5,"
		   "decay_ms=500,budget_share=0,budget_cap_ms=7,prefetch=3,hdc=10,hot_period=60,dirty=30,"
		   "write_policy=update");
	CHECK_EQ(c.policy, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(c.estimator, RC_EST_SPK);
	CHECK_EQ(c.tun_given, (1u << RC_TUN_NR) - 1);
	CHECK_EQ(c.tun[RC_TUN_WINDOW], 64);
	CHECK_EQ(c.tun[RC_TUN_MARGIN], 5);
	CHECK_EQ(c.tun[RC_TUN_DECAY_MS], 500);
	CHECK_EQ(c.tun[RC_TUN_BUDGET_SHARE], 0);
	CHECK_EQ(c.tun[RC_TUN_PREFETCH], 3);
	CHECK_EQ(c.tun[RC_TUN_BUDGET_CAP_MS], 7);
	CHECK_EQ(c.tun[RC_TUN_HDC], 10);
	CHECK_EQ(c.tun[RC_TUN_HOT_PERIOD], 60);
	CHECK_EQ(c.write_policy, RC_WRITE_UPDATE);
	c = config("bare");
	CHECK(c.bare);
}

CTEST(sim_bad_configs_are_refused_with_the_reason)
{
	static const char * const bad[][2] = {
		{ "", "config '': not bare nor <segments>x<size>:<policy>" },
		{ "64x128k", "config '64x128k': not bare nor <segments>x<size>:<policy>" },
		{ "0x128k:always", "config '0x128k:always': the number of segments is not 1 to "
				   "16777216" },
		{ "64x100k:always", "config '64x100k:always': the segment size is not a power of "
				    "two from 4k to 1024m" },
		{ "64x2k:always", "config '64x2k:always': the segment size is not a power of two "
				  "from 4k to 1024m" },
		{ "64x128k:sometimes", "config '64x128k:sometimes': unknown policy" },
		{ "64x128k:always,write_policy=later", "config '64x128k:always,write_policy="
						       "later': write_policy: unknown write policy "
						       "'later'" },
		{ "64x128k:adaptive,estimator=guess", "config '64x128k:adaptive,estimator=guess': "
						      "estimator: unknown estimator 'guess'" },
		{ "64x128k:adaptive,window=0", "config '64x128k:adaptive,window=0': set: window "
					       "must be 1..1000000" },
		{ "64x128k:adaptive,margin=100", "config '64x128k:adaptive,margin=100': set: "
						 "margin must be 0..99" },
		{ "64x128k:adaptive,speed=3", "config '64x128k:adaptive,speed=3': set: unknown "
					      "key 'speed'" },
		/* the knobs the core's defaults replaced */
		{ "64x128k:always,prefetch_forward=0", "config '64x128k:always,prefetch_forward="
						       "0': set: unknown key 'prefetch_forward'" },
		{ "64x128k:always,prefetch_pairs=1", "config '64x128k:always,prefetch_pairs=1': "
						     "set: unknown key 'prefetch_pairs'" },
		{ "64x128k:adaptive,dwell=1", "config '64x128k:adaptive,dwell=1': set: unknown "
					      "key 'dwell'" },
		{ "64x128k:adaptive,window", "config '64x128k:adaptive,window': an option is not "
					     "<key>=<value>" },
		{ "64x128k:adaptive,=3", "config '64x128k:adaptive,=3': an option is not "
					 "<key>=<value>" },
	};
	struct sim_config c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(sim_config_parse(bad[i][0], &c, err), -1);
		CHECK_STREQ(err, bad[i][1]);
	}
}

/*
 * The independent reference: an LRU of @cap segments as a plain array,
 * most recent first; returns the misses of the pieces of @t's reads.
 */
static uint64_t lru_misses(const struct trace *t, uint32_t cap, uint32_t seg_sectors)
{
	uint64_t *lru = calloc(cap, sizeof(*lru)), misses = 0, s, first, last;
	uint32_t used = 0, i, j;
	size_t k;

	for (k = 0; k < t->nr; k++) {
		first = t->req[k].sector / seg_sectors;
		last = (t->req[k].sector + t->req[k].sectors - 1) / seg_sectors;
		for (s = first; s <= last; s++) {
			for (i = 0; i < used && lru[i] != s; i++)
				;
			if (i == used) {
				misses++;
				if (used < cap)
					used++;
				i = used - 1;
			}
			for (j = i; j > 0; j--)
				lru[j] = lru[j - 1];
			lru[0] = s;
		}
	}
	free(lru);
	return misses;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* How far apart some traces lay their segments: none is within RC_PAIR_NEAR of another. */
#define APART		(RC_PAIR_NEAR + 1)

/* @sector of a trace whose segments of @seg_sectors are laid APART apart on the disk. */
static uint64_t apart(uint64_t sector, uint32_t seg_sectors)
{
	return sector / seg_sectors * APART * seg_sectors + sector % seg_sectors;
}

/*
 * One process, serial reads: @kind 0 sequential, 1 random, 2 loop, 3
 * strided; with @seg_sectors, each cut at the end of its segment (a read
 * across segments is pieces that go at once: see the split test below),
 * and the trace's segments laid APART segments apart on the disk: no miss
 * then has a segment read lately near it, and the cache fills no pair
 * (rc-core.h), which an LRU of segments would not.
 */
static struct trace *serial_reads(int kind, size_t n, uint32_t seg_sectors)
{
	struct trace *t = new_trace(n);
	uint64_t sector = 0, span = seg_sectors ? CAPACITY / APART : CAPACITY;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t len = 8 << (next_rand() % 6);	/* 4 KiB .. 128 KiB */
		uint64_t at;

		switch (kind) {
		case 0:
			break;
		case 1:
			sector = next_rand() % (span / 8 - 64) * 8;
			break;
		case 2:
			sector = (i % 97) * 200;
			break;
		case 3:
			sector = i * 24;
			len = 8;
			break;
		}
		at = sector;
		if (seg_sectors) {
			if (len > seg_sectors - sector % seg_sectors)
				len = seg_sectors - sector % seg_sectors;
			at = apart(sector, seg_sectors);
		}
		put(t, i, TRACE_READ, at, len, 7, i, TRACE_NO_TIME);
		if (kind == 0)
			sector += len;
	}
	return t;
}

/*
 * Without speculation (no batch ahead: prefetch 0; no pair: the reads'
 * segments are apart), the cache of policy always is an LRU of segments.
 */
CTEST(sim_always_fills_equal_the_misses_of_an_lru_of_segments)
{
	static const char * const specs[] = { "16x128k:always,prefetch=0",
					      "64x128k:always,prefetch=0",
					      "256x32k:always,prefetch=0",
					      "8x1m:always,prefetch=0" };
	int kind;
	size_t i;

	for (kind = 0; kind < 4; kind++) {
		for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
			struct sim_config c = config(specs[i]);
			struct trace *t = serial_reads(kind, 3000, c.seg_sectors);
			struct sim_result r = run(t, specs[i]);
			uint64_t misses = lru_misses(t, c.nr_segs, c.seg_sectors);

			CHECK_EQ(r.ctr.fill_ios, misses);
			CHECK_EQ(r.ctr.read_misses, misses);
			CHECK_EQ(r.ctr.read_hits + r.ctr.read_misses, r.ctr.reads);
			CHECK_EQ(r.ctr.read_hits_waited + r.ctr.read_bypassed, 0);
			CHECK_EQ(r.ctr.prefetches, 0);
			CHECK_EQ(r.disk_requests, misses);
			CHECK(r.active);
			free_trace(t);
		}
	}
}

CTEST(sim_a_split_read_makes_its_filled_segment_newer_than_its_hit)
{
	/*
	 * 2 segments.  B, then one read over A (a miss) and B (a hit): the
	 * glue unpins B when its copy is done and A when its fill completes,
	 * so A ends up the more recent, where an LRU of accesses in order
	 * would have B.  C then evicts B, and A is a hit: 3 fills, not 4.
	 * C is segment 4, too far from A and B to fill its pair.
	 */
	struct trace *t = new_trace(4);
	struct sim_result r;

	put(t, 0, TRACE_READ, 256, 8, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_READ, 248, 16, 1, 1, TRACE_NO_TIME);
	put(t, 2, TRACE_READ, 4 * 256, 8, 1, 2, TRACE_NO_TIME);
	put(t, 3, TRACE_READ, 0, 8, 1, 3, TRACE_NO_TIME);
	r = run(t, "2x128k:always");
	CHECK_EQ(r.ctr.fill_ios, 3);
	CHECK_EQ(r.ctr.prefetches, 0);
	CHECK_EQ(r.ctr.read_hits, 2);
	CHECK_EQ(lru_misses(t, 2, 256), 4);
	free_trace(t);
}

CTEST(sim_serial_bare_replay_keeps_the_drive_busy_all_along)
{
	struct trace *t = serial_reads(1, 500, 0);
	struct sim_result r = run(t, "bare");

	CHECK_EQ(r.requests, 500);
	CHECK_EQ(r.disk_requests, 500);
	CHECK(r.disk_busy_ns > 0);
	/* back to back from time 0: the run is the drive's busy time */
	CHECK_EQ(r.app_ns, r.disk_busy_ns);
	CHECK_EQ(r.ctr.reads, 0);
	free_trace(t);
}

CTEST(sim_same_input_same_output)
{
	struct trace *t = serial_reads(1, 800, 0);
	struct sim_result a = run(t, "64x128k:always"), b = run(t, "64x128k:always");

	CHECK(!memcmp(&a, &b, sizeof(a)));
	a = run(t, "bare");
	b = run(t, "bare");
	CHECK(!memcmp(&a, &b, sizeof(a)));
	free_trace(t);
}

/*
 * A warm-up trace (the bench's mount) goes through the same cache first:
 * what it filled is there for the trace, but nothing of it is counted,
 * and the trace's time starts when it is over.  The segments read are
 * RC_PAIR_NEAR + 1 apart: no miss fills a pair.
 */
CTEST(sim_a_warm_up_fills_the_cache_and_counts_nothing)
{
	struct trace *warm = new_trace(2), *t = new_trace(2);
	struct sim_config c = config("64x128k:always"), b = config("bare");
	struct sim_disk d = *hdd();
	struct sim_result cold, r, bare;

	put(warm, 0, TRACE_READ, 1 * 256, 8, 7, 0, TRACE_NO_TIME);
	put(warm, 1, TRACE_READ, 4 * 256, 8, 7, 1000, TRACE_NO_TIME);
	put(t, 0, TRACE_READ, 1 * 256 + 8, 8, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_READ, 7 * 256, 8, 1, 1000, TRACE_NO_TIME);
	CHECK_EQ(sim_run(t, &d, &c, &cold, err), 0);
	CHECK_EQ(cold.ctr.read_misses, 2);
	d.warm = warm;
	CHECK_EQ(sim_run(t, &d, &c, &r, err), 0);
	CHECK_EQ(r.requests, 2);
	CHECK_EQ(r.ctr.reads, 2);
	CHECK_EQ(r.ctr.read_hits, 1);		/* segment 1, the warm-up's */
	CHECK_EQ(r.ctr.read_misses, 1);
	CHECK_EQ(r.ctr.fill_ios, 1);
	CHECK_EQ(r.ctr.prefetches, 0);
	CHECK_EQ(r.disk_requests, 1);		/* the drive was reset */
	CHECK_EQ(r.segments_valid, 3);
	CHECK(r.app_ns > 0 && r.app_ns < cold.app_ns);
	/* the hit's copy, then the miss's fill and its copy */
	CHECK_EQ(r.app_ns, r.disk_busy_ns + 2 * 4 * SIM_COPY_NS_PER_KIB);
	/* bare: the warm-up's two requests are not the run's */
	CHECK_EQ(sim_run(t, &d, &b, &bare, err), 0);
	CHECK_EQ(bare.disk_requests, 2);
	CHECK_EQ(bare.requests, 2);
	free_trace(warm);
	free_trace(t);
}

CTEST(sim_think_time_is_kept_after_a_completion)
{
	/* The second request came 5 ms after the first completed in the trace. */
	struct trace *t = new_trace(2);
	struct sim_result one, two;

	put(t, 0, TRACE_READ, 0, 8, 1, 0, 1000000);
	put(t, 1, TRACE_READ, 1 << 20, 8, 1, 6000000, 7000000);
	two = run(t, "bare");
	t->nr = 1;
	one = run(t, "bare");
	t->nr = 2;
	/* issued 5 ms after the first one's simulated completion */
	CHECK(two.app_ns > one.app_ns + 5000000);
	CHECK_EQ(two.app_ns - one.app_ns - 5000000, two.disk_busy_ns - one.disk_busy_ns);
	free_trace(t);
}

CTEST(sim_a_request_issued_in_flight_keeps_its_distance)
{
	/* The second request was issued 1 us after the first, before it completed. */
	struct trace *t = new_trace(2);
	struct sim_result r;

	put(t, 0, TRACE_READ, 0, 8, 1, 0, 9000000);
	put(t, 1, TRACE_READ, 1 << 20, 8, 1, 1000, 9500000);
	r = run(t, "bare");
	/* both queued at once: the run is the two services back to back */
	CHECK_EQ(r.app_ns, r.disk_busy_ns);
	free_trace(t);
}

CTEST(sim_two_processes_overlap)
{
	struct trace *t = new_trace(4);
	struct sim_result r;

	put(t, 0, TRACE_READ, 0, 8, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_READ, 1 << 20, 8, 2, 0, TRACE_NO_TIME);
	put(t, 2, TRACE_READ, 1 << 19, 8, 1, 1, TRACE_NO_TIME);
	put(t, 3, TRACE_READ, 1 << 18, 8, 2, 1, TRACE_NO_TIME);
	r = run(t, "bare");
	CHECK_EQ(r.disk_requests, 4);
	/* one drive, always busy: the two loops keep it so */
	CHECK_EQ(r.app_ns, r.disk_busy_ns);
	free_trace(t);
}

CTEST(sim_a_write_invalidates_and_a_discard_drops)
{
	struct trace *t = new_trace(6);
	struct sim_result r;

	put(t, 0, TRACE_READ, 0, 8, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_WRITE, 8, 8, 1, 1, TRACE_NO_TIME);
	put(t, 2, TRACE_READ, 0, 8, 1, 2, TRACE_NO_TIME);
	put(t, 3, TRACE_READ, 16, 8, 1, 3, TRACE_NO_TIME);
	put(t, 4, TRACE_DISCARD, 0, 256, 1, 4, TRACE_NO_TIME);
	put(t, 5, TRACE_READ, 0, 8, 1, 5, TRACE_NO_TIME);
	r = run(t, "64x128k:always");
	CHECK_EQ(r.ctr.fill_ios, 3);
	CHECK_EQ(r.ctr.read_hits, 1);
	CHECK_EQ(r.ctr.invalidations, 2);
	CHECK_EQ(r.ctr.writes, 2);
	/* two fills, one write and the last fill on the drive: the discard costs nothing */
	CHECK_EQ(r.disk_requests, 4);
	r = run(t, "64x128k:always,write_policy=update");
	CHECK_EQ(r.ctr.updates, 1);
	CHECK_EQ(r.ctr.fill_ios, 2);
	free_trace(t);
}

CTEST(sim_policy_off_bypasses_every_read_and_counts_what_it_would_have_done)
{
	struct trace *t = serial_reads(2, 1000, 256);
	struct sim_result r = run(t, "64x128k:off");

	CHECK(!r.active);
	CHECK_EQ(r.ctr.read_bypassed, r.ctr.reads);
	CHECK_EQ(r.ctr.sim_misses, lru_misses(t, 64, 256));
	CHECK_EQ(r.ctr.sim_hits + r.ctr.sim_misses, r.ctr.reads);
	CHECK_EQ(r.disk_requests, r.ctr.reads);
	free_trace(t);
}

/*
 * A read across segments that the cache bypasses goes to the disk whole,
 * as received (rc_read_join()), not cut at each segment boundary: policy
 * off makes exactly the bare disk's requests, one per read.
 */
CTEST(sim_a_bypassed_read_goes_to_the_disk_whole)
{
	struct trace *t = new_trace(100);
	struct sim_result bare, off;
	size_t i;

	/* 128 KiB reads 32 KiB off the segments' boundaries: two pieces each. */
	for (i = 0; i < 100; i++)
		put(t, i, TRACE_READ, 64 + 256 * i, 256, 7, i, TRACE_NO_TIME);
	bare = run(t, "bare");
	off = run(t, "64x128k:off");
	CHECK_EQ(bare.disk_requests, 100);
	CHECK_EQ(off.disk_requests, 100);
	CHECK_EQ(off.disk_busy_ns, bare.disk_busy_ns);
	CHECK_EQ(off.ctr.reads, 200);
	CHECK_EQ(off.ctr.read_bypassed, 200);
	CHECK_EQ(off.ctr.read_bypassed_inactive, 200);
	CHECK_EQ(off.ctr.read_bypassed_joined, 0);
	CHECK_EQ(off.ctr.read_joined, 100);
	CHECK_EQ(off.disk_requests, off.ctr.read_bypassed - off.ctr.read_joined);
	CHECK_EQ(off.ctr.sim_misses, 101);
	CHECK_EQ(off.ctr.sim_hits, 99);
	free_trace(t);
}

/*
 * Active, the piece after a bypassed one joins it even where it would
 * have filled: the read goes to the disk as one request.  (A piece the
 * cache holds goes on in a request of its own: rc_core_test.)
 */
CTEST(sim_a_bypassed_piece_takes_the_next_with_it)
{
	struct trace *t = new_trace(2);
	struct sim_result r;

	/* One entry: segment 0 fills, and segment 5's piece finds it busy. */
	put(t, 0, TRACE_READ, 0, 8, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_READ, 5 * 256 + 128, 256, 2, 0, TRACE_NO_TIME);
	r = run(t, "1x128k:always");
	free_trace(t);
	CHECK_EQ(r.ctr.reads, 3);
	CHECK_EQ(r.ctr.read_misses, 1);
	CHECK_EQ(r.ctr.read_bypassed, 2);
	CHECK_EQ(r.ctr.read_bypassed_busy, 1);
	CHECK_EQ(r.ctr.read_bypassed_joined, 1);
	CHECK_EQ(r.ctr.read_joined, 1);
	CHECK_EQ(r.disk_requests, 2);
}

/*
 * A stream's fills ahead go to the disk in batches, each one request, in
 * either direction: a file read backward in 4 KiB reads (tac), or forward,
 * misses once.  prefetch 0 turns them off: every segment is a miss and a
 * request.
 */
CTEST(sim_a_streams_batch_goes_down_with_its_miss_in_one_request)
{
	struct trace *fwd = new_trace(1024), *back = new_trace(1024);
	struct sim_result f, f0, b, b0;
	size_t i;

	/* 4 MiB, 32 segments of 128 KiB, read forward and backward. */
	for (i = 0; i < 1024; i++) {
		put(fwd, i, TRACE_READ, 8 * i, 8, 7, i, TRACE_NO_TIME);
		put(back, i, TRACE_READ, 8 * (1023 - i), 8, 7, i, TRACE_NO_TIME);
	}
	f = run(fwd, "64x128k:always");
	f0 = run(fwd, "64x128k:always,prefetch=0");
	b = run(back, "64x128k:always");
	b0 = run(back, "64x128k:always,prefetch=0");
	free_trace(fwd);
	free_trace(back);
	CHECK_EQ(b.tun[RC_TUN_PREFETCH], RC_PREFETCH_DEFAULT);
	CHECK_EQ(f.tun[RC_TUN_PREFETCH], RC_PREFETCH_DEFAULT);
	/*
	 * Backward, only the first read misses; the stream's fills ahead
	 * then go in batches (its degree grows with what it has read, up to
	 * 8), each batch one request, down to segment 0, the disk's first.
	 * No miss is left to fill a pair.
	 */
	CHECK_EQ(b.ctr.read_misses, 1);
	CHECK_EQ(b.ctr.fill_ios, 32);
	CHECK_EQ(b.ctr.prefetches, 31);
	CHECK_EQ(b.ctr.prefetch_hits, 31);
	CHECK_EQ(b.ctr.prefetch_paired, 0);
	CHECK_EQ(b.ctr.fill_joined, 23);
	CHECK_EQ(b.disk_requests, 9);
	CHECK_EQ(b.disk_requests, b.ctr.fill_ios - b.ctr.fill_joined);
	/*
	 * Forward, the same requests; the last batch reaches 5 segments past
	 * the file's end, never read.
	 */
	CHECK_EQ(f.ctr.read_misses, 1);
	CHECK_EQ(f.ctr.fill_ios, 37);
	CHECK_EQ(f.ctr.prefetches, 36);
	CHECK_EQ(f.ctr.prefetch_hits, 31);
	CHECK_EQ(f.ctr.prefetch_paired, 0);
	CHECK_EQ(f.ctr.fill_joined, 28);
	CHECK_EQ(f.disk_requests, 9);
	/* No read-ahead: a miss, a fill and a request per segment. */
	CHECK_EQ(b0.ctr.read_misses, 32);
	CHECK_EQ(b0.ctr.fill_ios, 32);
	CHECK_EQ(b0.ctr.prefetches, 0);
	CHECK_EQ(b0.ctr.fill_joined, 0);
	CHECK_EQ(b0.disk_requests, 32);
	CHECK_EQ(f0.ctr.read_misses, 32);
	CHECK_EQ(f0.ctr.prefetches, 0);
	CHECK_EQ(f0.disk_requests, 32);
}

CTEST(sim_a_request_beyond_the_disk_is_refused)
{
	struct trace *t = new_trace(1);
	struct sim_config c = config("bare");
	struct sim_result r;

	put(t, 0, TRACE_READ, CAPACITY - 4, 8, 1, 0, TRACE_NO_TIME);
	CHECK_EQ(sim_run(t, hdd(), &c, &r, err), -1);
	CHECK_STREQ(err, "request 0 (sectors 2097148+8) is beyond the disk's 2097152 sectors");
	free_trace(t);
}

/* --- the adaptive and C-Aware policies --------------------------------- */

/* One process's serial 4 KiB reads: random over the disk, or 4 KiB read, 8 KiB skipped. */
static struct trace *reads_4k(bool random, size_t n)
{
	struct trace *t = new_trace(n);
	size_t i;

	for (i = 0; i < n; i++)
		put(t, i, TRACE_READ, random ? next_rand() % (CAPACITY / 8) * 8 : i * 24, 8, 7, i,
		    TRACE_NO_TIME);
	return t;
}

/* One process's serial random 4 KiB reads in 128 KiB segments APART apart: no pairs. */
static struct trace *random_4k_apart(size_t n)
{
	struct trace *t = new_trace(n);
	size_t i;

	for (i = 0; i < n; i++)
		put(t, i, TRACE_READ, apart(next_rand() % (CAPACITY / APART / 8) * 8, 256), 8, 7, i,
		    TRACE_NO_TIME);
	return t;
}

/*
 * A model trained like a disk in service (the guest suite's fixture):
 * 400 random 4 KiB and 300 random 128 KiB reads on the emulated drive, one
 * at a time.
 */
static struct vd_model *trained_model(void **mem)
{
	struct vd_model *m = malloc(sizeof(*m));
	uint64_t sector, service;
	struct vd_drive d;
	struct vd_seek sk;
	uint32_t len;
	int i;

	*mem = malloc(vd_model_mem_size(CAPACITY, VD_DEFAULT_ROWS, SIM_MODEL_RINGS));
	CHECK_EQ(vd_model_init(m, *mem, CAPACITY, VD_DEFAULT_ROWS, SIM_MODEL_RINGS), 0);
	CHECK_EQ(vd_drive_init(&d, hdd()->drive, CAPACITY, CAPACITY, 3), 0);
	vd_seek_init(&sk);
	for (i = 0; i < 700; i++) {
		len = i < 400 ? 8 : 256;
		sector = next_rand() % (CAPACITY / len) * len;
		vd_drive_submit(&d, VD_READ, sector, len, d.busy_until, &service);
		vd_model_add(m, VD_READ, vd_seek_distance(&sk, sector), len, service);
		vd_seek_note(&sk, sector + len);
	}
	return m;
}

CTEST(sim_adaptive_turns_off_on_random_reads_and_judges_while_off)
{
	/* budget_share=0 as the default, said: the windows alone */
	static const char * const specs[] = { "64x128k:adaptive,estimator=vdisk,budget_share=0",
					      "64x128k:adaptive,estimator=spk,budget_share=0" };
	struct trace *t = reads_4k(true, 2000);
	struct sim_result bare = run(t, "bare");
	void *mem;
	struct sim_disk d = *hdd();
	struct vd_model *m = trained_model(&mem);
	size_t i;

	d.model = m;
	for (i = 0; i < 2; i++) {
		struct sim_config c = config(specs[i]);
		struct sim_result r;

		CHECK_EQ(sim_run(t, &d, &c, &r, err), 0);
		CHECK(!r.active);
		CHECK_EQ(r.adapt.switches, 1);
		/* vdisk: the early verdict at 32 reads, then whole windows */
		CHECK_EQ(r.adapt.windows, i ? 2000 / RC_ADAPT_WINDOW :
				     1 + (2000 - RC_ADAPT_WINDOW / RC_ADAPT_EARLY_DIV) /
				     RC_ADAPT_WINDOW);
		/* off early, and judging the simulated cache from then on */
		CHECK(r.ctr.read_bypassed > 1500);
		CHECK_EQ(r.ctr.read_bypassed_inactive, r.ctr.read_bypassed);
		CHECK_EQ(r.ctr.sim_hits + r.ctr.sim_misses, r.ctr.read_bypassed);
		CHECK_EQ(r.ctr.reads, 2000);
		CHECK_EQ(r.ctr.read_hits + r.ctr.read_misses + r.ctr.read_bypassed, 2000);
		/* the fills of the first windows are what it cost */
		CHECK(r.app_ns > bare.app_ns);
		CHECK(r.app_ns < bare.app_ns * 105 / 100);
	}
	free_trace(t);
	free(mem);
	free(m);
}

/*
 * The budget (budget_share 128) on the same random reads, in the cache
 * redcapctl create builds.  Without it every miss fills until C-Aware or
 * the first verdict stops them; with it a miss fills only when what the
 * reads earned pays for what the model says the fill costs beyond its
 * read.  On a run as
 * short as the bench's (256 reads) that is most of the loss; on a long
 * one the loss stays within the share (1/128) the reads earn.
 */
static void budget_case(u32 n, struct sim_result *bare, struct sim_result *with,
			struct sim_result *without)
{
	struct trace *t = reads_4k(true, n);
	struct sim_config c1 = config("64x128k:adaptive+caware");		/* the default */
	struct sim_config c0 = config("64x128k:adaptive+caware,budget_share=0");	/* off */
	struct sim_disk d = *hdd();
	void *mem;
	struct vd_model *m = trained_model(&mem);

	*bare = run(t, "bare");
	d.model = m;
	CHECK_EQ(sim_run(t, &d, &c1, with, err), 0);
	CHECK_EQ(sim_run(t, &d, &c0, without, err), 0);
	CHECK_EQ(with->tun[RC_TUN_BUDGET_SHARE], RC_BUDGET_SHARE);
	CHECK_EQ(without->tun[RC_TUN_BUDGET_SHARE], 0);
	CHECK_EQ(without->ctr.read_bypassed_budget, 0);
	CHECK(with->ctr.read_bypassed_budget > 0);
	CHECK(with->budget.spent_ns > 0);
	free_trace(t);
	free(mem);
	free(m);
}

CTEST(sim_budget_keeps_random_reads_near_the_bare_disk)
{
	struct sim_result bare, with, without;

	budget_case(256, &bare, &with, &without);
	/* Without the budget, the early verdict: 32 misses, none served, off. */
	CHECK_EQ(without.ctr.read_misses, RC_ADAPT_WINDOW / RC_ADAPT_EARLY_DIV);
	CHECK_EQ(without.adapt.switches, 1);
	CHECK(without.app_ns < bare.app_ns * 101 / 100);
	CHECK(with.app_ns < bare.app_ns * 101 / 100);
	budget_case(2000, &bare, &with, &without);
	CHECK(with.ctr.read_bypassed_budget > with.ctr.read_misses);
	CHECK(with.app_ns < bare.app_ns * 101 / 100);
}

CTEST(sim_adaptive_stays_on_for_strided_reads)
{
	const u32 segs = (3000 * 24 + 255) / 256;	/* 12 KiB a read, 128 KiB a segment */
	struct trace *t = reads_4k(false, 3000);
	struct sim_result bare = run(t, "bare"), r = run(t, "64x128k:adaptive");

	CHECK(r.active);
	CHECK_EQ(r.adapt.switches, 0);
	CHECK_EQ(r.ctr.read_bypassed, 0);
	/*
	 * Every segment filled once, and the last batch's 11 past the end:
	 * three misses (one filling its pair's other half) while the stream
	 * has read less than a segment; from there on its batches fill every
	 * segment before it is read.
	 */
	CHECK_EQ(r.ctr.fill_ios, segs + 11);
	CHECK_EQ(r.ctr.read_misses, 3);
	CHECK_EQ(r.ctr.prefetch_paired, 1);
	CHECK_EQ(r.ctr.prefetches, segs + 11 - 3);
	CHECK_EQ(r.ctr.prefetch_hits, segs - 3);
	CHECK(r.app_ns < bare.app_ns * 70 / 100);
	free_trace(t);
}

CTEST(sim_the_model_learns_each_request_when_it_completes)
{
	/*
	 * Serial reads: the first is priced by an empty model, every later
	 * one after the sample of the one before it is in.
	 */
	struct trace *t = reads_4k(true, 300);
	struct sim_result r = run(t, "64x128k:adaptive");

	CHECK_EQ(r.vdisk.requests, 300);
	CHECK_EQ(r.vdisk.unestimated, 1);
	/* one unpriced read in 128 leaves the window judged */
	CHECK_EQ(r.adapt.windows_unjudged, 0);
	/* the early verdict after 32 reads (none served), then two of 128 */
	CHECK_EQ(r.adapt.windows, 3);
	free_trace(t);
}

/* Random misses, none near another (a pair would fill an entry no rule decided). */
CTEST(sim_caware_bypasses_random_misses_once_full)
{
	struct trace *t = random_4k_apart(3000);
	struct sim_result bare = run(t, "bare"), r = run(t, "64x128k:caware");
	const struct rc_caware *w = &r.caware;

	CHECK(r.active);
	CHECK_EQ(r.ctr.prefetches, 0);
	CHECK_EQ(w->rule[6], 64);			/* filled while not full */
	CHECK(w->rule[5] > w->rule[1]);
	/* every 16th read rule 5 decided was cached as a probe */
	CHECK_EQ(w->probes, w->rule[5] / RC_CAWARE_PROBE);
	CHECK_EQ(r.ctr.read_bypassed_caware, w->rule[5] + w->rule[3] - w->probes);
	CHECK_EQ(r.ctr.read_bypassed, r.ctr.read_bypassed_caware);
	CHECK(w->cl[RC_CL_SOURCE_READ].n > 0 && w->cl[RC_CL_CACHE_READ].n > 0);
	CHECK_EQ(w->cl[RC_CL_SOURCE_READ].n, r.ctr.read_bypassed);
	CHECK_EQ(w->cl[RC_CL_CACHE_READ].n, r.ctr.read_hits + r.ctr.read_misses);
	CHECK(r.app_ns < bare.app_ns * 105 / 100);
	free_trace(t);
}

CTEST(sim_a_whole_segment_write_fills_an_entry_under_caware)
{
	struct trace *t = new_trace(2);
	struct sim_result r;

	put(t, 0, TRACE_WRITE, 2560, 256, 1, 0, TRACE_NO_TIME);
	put(t, 1, TRACE_READ, 2568, 8, 1, 1, TRACE_NO_TIME);
	r = run(t, "64x128k:caware");
	CHECK_EQ(r.ctr.write_allocs, 1);
	CHECK_EQ(r.ctr.read_hits, 1);
	CHECK_EQ(r.ctr.fill_ios, 0);
	CHECK_EQ(r.disk_requests, 1);
	CHECK_EQ(r.caware.cl[RC_CL_CACHE_WRITE].n, 1);
	r = run(t, "64x128k:always");
	CHECK_EQ(r.ctr.write_allocs, 0);
	CHECK_EQ(r.ctr.fill_ios, 1);
	free_trace(t);
}

CTEST(sim_policies_same_input_same_output)
{
	struct trace *t = serial_reads(1, 1500, 0);
	struct sim_result a = run(t, "64x128k:adaptive+caware"),
			  b = run(t, "64x128k:adaptive+caware");

	CHECK(!memcmp(&a, &b, sizeof(a)));
	free_trace(t);
}

/* A model over the 1 GiB disk whose every read costs @read_ns, and no write sample. */
static struct vd_model *flat_model(uint64_t read_ns, void **mem)
{
	struct vd_model *m = malloc(sizeof(*m));

	*mem = malloc(vd_model_mem_size(CAPACITY, VD_DEFAULT_ROWS, SIM_MODEL_RINGS));
	CHECK_EQ(vd_model_init(m, *mem, CAPACITY, VD_DEFAULT_ROWS, SIM_MODEL_RINGS), 0);
	vd_model_add(m, VD_READ, 0, 8, read_ns);
	return m;
}

CTEST(sim_a_model_as_the_disk_prices_every_request)
{
	struct trace *t = reads_4k(true, 100);
	struct sim_config c = config("bare");
	struct sim_result r;
	void *mem;
	struct vd_model *m = flat_model(5000000, &mem);
	struct sim_disk d = { .model = m, .capacity = CAPACITY };

	CHECK_EQ(sim_run(t, &d, &c, &r, err), 0);
	CHECK_EQ(r.app_ns, 100 * 5000000ull);
	CHECK_EQ(r.disk_busy_ns, 100 * 5000000ull);
	CHECK_EQ(r.disk_requests, 100);
	t->req[50].op = TRACE_WRITE;
	CHECK_EQ(sim_run(t, &d, &c, &r, err), -1);
	CHECK(!strncmp(err, "the model has no write sample to price sectors ", 47));
	free_trace(t);
	free(mem);
	free(m);
}

CTEST(sim_a_saved_model_prices_the_first_window)
{
	struct trace *t = reads_4k(true, 300);
	struct sim_config c = config("64x128k:adaptive");
	struct sim_result r;
	void *mem;
	struct vd_model *m = flat_model(12000000, &mem);
	struct sim_disk d = *hdd();

	d.model = m;
	CHECK_EQ(sim_run(t, &d, &c, &r, err), 0);
	CHECK_EQ(r.vdisk.unestimated, 0);
	CHECK_EQ(r.adapt.windows_unjudged, 0);
	/* the drive is still the emulated one */
	CHECK(r.disk_busy_ns != r.disk_requests * 12000000ull);
	free_trace(t);
	free(mem);
	free(m);
}

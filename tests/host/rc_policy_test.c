// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of redcap's adaptive policies (dm-redcap/rc-policy.c): the
 * C-Aware tracer and rules, seconds-per-KiB estimates, and activation-
 * deactivation, alone and driven through rc-core on synthetic disk streams.
 */
#include "ctest.h"
#include "rc-core.h"
#include "rc_read_seg.h"
#include "rc-parse.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MS		1000000ull		/* ns */
#define IVAL		((u64)RC_CAWARE_DECAY_MS * MS)	/* one decay interval */

/* --- helpers ------------------------------------------------------------ */

static struct rc_cache *mk(u32 n, u32 seg_shift)
{
	struct rc_cache *c = malloc(sizeof(*c));
	size_t sz = rc_cache_mem_size(n);
	void *mem;

	CHECK(c);
	CHECK(sz > 0);
	mem = malloc(sz);
	CHECK(mem);
	CHECK_EQ(rc_cache_init(c, mem, n, seg_shift, 0), 0);
	return c;
}

static void rm(struct rc_cache *c)
{
	free(c->entries);
	free(c);
}

/* Miss, fill and serve @seg; the entry ends VALID, unpinned, most recent. */
static u32 fill_seg(struct rc_cache *c, u64 seg)
{
	u32 idx = RC_NONE;

	CHECK_EQ(read_seg(c, seg, &idx), RC_READ_FILL);
	CHECK(idx < c->nr_entries);
	CHECK_EQ(rc_fill_done(c, idx, 0, 1u << c->seg_shift, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	return idx;
}

/* Fill every entry of @c with segments from @first on; the cache ends full. */
static void fill_all(struct rc_cache *c, u64 first)
{
	u32 i;

	for (i = 0; i < c->nr_entries; i++)
		fill_seg(c, first + i);
	CHECK_EQ(c->free_head, RC_NONE);
	CHECK_EQ(c->nr_valid, c->nr_entries);
}

/*
 * Record one request of @ns in class @cl of a class never recorded: by
 * formulas (1)-(3) totaltime = 256 * ns / 8, samples = 256 / 8 = 32 and
 * meantime = (32 * ns + 128) / 32 = ns + 4.
 */
static void record_once(struct rc_caware *w, enum rc_class cl, u64 ns, u64 now)
{
	CHECK_EQ(w->cl[cl].n, 0);
	rc_caware_record(w, cl, ns, now);
	CHECK_EQ(w->cl[cl].meantime, ns + 4);
}

/* Only rule @want was counted, @times times. */
static void check_rules(const struct rc_caware *w, int want, u64 times)
{
	int k;

	for (k = 0; k < (int)ARRAY_SIZE(w->rule); k++)
		CHECK_EQ(w->rule[k], k == want ? times : 0);
}

/* --- C-Aware tracer ----------------------------------------------------- */

/* Formulas (1)-(3) in integer arithmetic give exactly these values. */
CTEST(tracer_ewma_exact_values)
{
	static const struct {
		u64 ns, totaltime, samples, meantime;
	} want[] = {
		/* (7t + 256ns)/8   (7s + 256)/8   (t + 128)/s */
		{ 1000, 32000, 32, 1004 },	/* 32128 / 32 */
		{ 2000, 92000, 60, 1535 },	/* (224000 + 512000) / 8; 92128 / 60 */
		{ 500, 96500, 84, 1150 },	/* (644000 + 128000) / 8; 96628 / 84 */
		{ 500, 100437, 105, 957 },	/* 803500 / 8 truncated */
		{ 500, 103882, 123, 845 },
		{ 500, 106896, 139, 769 },
		{ 500, 109534, 153, 716 },
		{ 500, 111842, 165, 678 },
		{ 500, 113861, 176, 647 },
		{ 500, 115628, 186, 622 },
	};
	struct rc_caware w;
	const struct rc_trace *t = &w.cl[RC_CL_SOURCE_READ];
	u32 i;

	rc_caware_init(&w, 7);
	for (i = 0; i < RC_CL_NR; i++) {
		CHECK_EQ(w.cl[i].stamp, 7);
		CHECK_EQ(w.cl[i].n, 0);
		CHECK_EQ(w.cl[i].meantime, 0);
	}
	CHECK_EQ(w.interval_ns, IVAL);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		rc_caware_record(&w, RC_CL_SOURCE_READ, want[i].ns, 100 + i);
		CHECK_EQ(t->totaltime, want[i].totaltime);
		CHECK_EQ(t->samples, want[i].samples);
		CHECK_EQ(t->meantime, want[i].meantime);
		CHECK_EQ(t->n, i + 1);
		CHECK_EQ(t->stamp, 100 + i);
	}
	/* The other classes are untouched. */
	for (i = 0; i < RC_CL_NR; i++) {
		if (i == RC_CL_SOURCE_READ)
			continue;
		CHECK_EQ(w.cl[i].n, 0);
		CHECK_EQ(w.cl[i].totaltime, 0);
		CHECK_EQ(w.cl[i].samples, 0);
		CHECK_EQ(w.cl[i].stamp, 7);
	}
}

/*
 * The integer form of (2) settles at 249, not 256: (7 * 249 + 256) / 8 =
 * 1999 / 8 = 249; so a steady mean reads about 256/249 of the request time.
 */
CTEST(tracer_samples_settle_at_249)
{
	struct rc_caware w;
	const struct rc_trace *t = &w.cl[RC_CL_CACHE_READ];
	u32 i;

	rc_caware_init(&w, 0);
	for (i = 0; i < 200; i++)
		rc_caware_record(&w, RC_CL_CACHE_READ, 1000000, i);
	CHECK_EQ(t->samples, 249);
	CHECK_EQ(t->totaltime, 255999993);	/* 256e6 less the truncations */
	CHECK_EQ(t->meantime, (255999993 + 128) / 249);
	CHECK_EQ(t->meantime, 1028112);
	CHECK_EQ(t->n, 200);
	/* Stalls are clamped to 1000 s. */
	rc_caware_init(&w, 0);
	rc_caware_record(&w, RC_CL_CACHE_READ, ~0ull, 1);
	CHECK_EQ(t->meantime, 1000000000000ull + 4);
}

/* Each rule 1..6 fires in exactly its situation and is counted once. */
CTEST(caware_rules_fire_in_their_situation)
{
	enum { CR = RC_CL_CACHE_READ, DCR = RC_CL_DIRECT_CACHE_READ,
	       SR = RC_CL_SOURCE_READ, CW = RC_CL_CACHE_WRITE,
	       DCW = RC_CL_DIRECT_CACHE_WRITE, SW = RC_CL_SOURCE_WRITE };
	static const struct {
		bool write, full;
		u64 ns[RC_CL_NR];	/* 0: never recorded */
		int rule;
	} cases[] = {
		/* 1: read, full, cache read faster; the direct class is ignored */
		{ false, true, { [CR] = 1000, [DCR] = 9000, [SR] = 2000 }, 1 },
		/* 2: write, full, cache write faster */
		{ true, true, { [CW] = 1000, [DCW] = 9000, [SW] = 2000 }, 2 },
		/* 3: read, free segments, direct cache read slower than source */
		{ false, false, { [CR] = 1, [DCR] = 3000, [SR] = 2000 }, 3 },
		/* 4: write, free segments, direct cache write slower */
		{ true, false, { [CW] = 1, [DCW] = 3000, [SW] = 2000 }, 4 },
		/* 5: full and rule 1 does not hold ... */
		{ false, true, { [CR] = 3000, [DCR] = 1, [SR] = 2000 }, 5 },
		{ false, true, { [CR] = 2000, [SR] = 2000 }, 5 },	/* a tie */
		/* ... whatever the write classes say */
		{ false, true, { [CR] = 3000, [SR] = 2000, [CW] = 1, [SW] = 9000 }, 5 },
		/* ... nor rule 2 */
		{ true, true, { [CW] = 3000, [DCW] = 1, [SW] = 2000 }, 5 },
		{ true, true, { [CW] = 3000, [SW] = 2000, [CR] = 1, [SR] = 9000 }, 5 },
		{ false, true, { 0 }, 5 },				/* no data */
		/* 6: free segments and rules 3 / 4 do not hold */
		{ false, false, { [CR] = 9000, [DCR] = 1000, [SR] = 2000 }, 6 },
		{ false, false, { [DCR] = 2000, [SR] = 2000 }, 6 },	/* a tie */
		{ false, false, { [DCR] = 1000, [SR] = 2000, [DCW] = 9000 }, 6 },
		{ true, false, { [CW] = 9000, [DCW] = 1000, [SW] = 2000 }, 6 },
		{ true, false, { [DCW] = 1000, [SW] = 2000, [DCR] = 9000 }, 6 },
		{ true, false, { 0 }, 6 },				/* no data */
	};
	struct rc_caware w;
	u32 i, cl;
	int rule;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		rc_caware_init(&w, 0);
		for (cl = 0; cl < RC_CL_NR; cl++)
			if (cases[i].ns[cl])
				record_once(&w, cl, cases[i].ns[cl], 0);
		rule = rc_caware_rule(&w, cases[i].write, cases[i].full);
		if (rule != cases[i].rule)
			fprintf(stderr, "case %u\n", i);
		CHECK_EQ(rule, cases[i].rule);
		CHECK_EQ(rc_caware_caches(rule), rule == 1 || rule == 2 || rule == 6);
		check_rules(&w, rule, 1);
		/* The same situation decides the same again, and counts. */
		CHECK_EQ(rc_caware_rule(&w, cases[i].write, cases[i].full), rule);
		check_rules(&w, rule, 2);
		rc_caware_reset_stats(&w);
		check_rules(&w, 0, 0);
		/* ... which forgets the counts, not the means. */
		for (cl = 0; cl < RC_CL_NR; cl++)
			if (cases[i].ns[cl])
				CHECK_EQ(w.cl[cl].meantime, cases[i].ns[cl] + 4);
	}
	CHECK(rc_caware_caches(1) && rc_caware_caches(2) && rc_caware_caches(6));
	CHECK(!rc_caware_caches(0) && !rc_caware_caches(3) && !rc_caware_caches(4));
	CHECK(!rc_caware_caches(5) && !rc_caware_caches(7));
}

/* A stale mean halves once per interval; fresh and never-measured ones do not. */
CTEST(caware_decay_halves_stale_means)
{
	struct rc_caware w;
	const struct rc_trace *cr = &w.cl[RC_CL_CACHE_READ];
	const struct rc_trace *sr = &w.cl[RC_CL_SOURCE_READ];
	const struct rc_trace *cw = &w.cl[RC_CL_CACHE_WRITE];

	/* One interval: halved. */
	rc_caware_init(&w, 0);
	record_once(&w, RC_CL_CACHE_READ, 8188, 0);		/* mean 8192 */
	record_once(&w, RC_CL_SOURCE_READ, 4092, IVAL / 2);	/* mean 4096 */
	rc_caware_decay(&w, IVAL - 1);				/* not yet */
	CHECK_EQ(cr->meantime, 8192);
	CHECK_EQ(w.decays, 0);
	rc_caware_decay(&w, IVAL);
	CHECK_EQ(cr->meantime, 4096);
	CHECK_EQ(cr->totaltime, 32 * 8188 / 2);
	CHECK_EQ(cr->samples, 32);			/* not decayed */
	CHECK_EQ(cr->n, 1);
	CHECK_EQ(cr->stamp, IVAL);
	CHECK_EQ(sr->meantime, 4096);			/* refreshed half an interval ago */
	CHECK_EQ(sr->stamp, IVAL / 2);
	CHECK_EQ(w.decays, 1);				/* never-measured classes: none */
	CHECK_EQ(cw->stamp, IVAL);			/* ... though their clock moves */
	/* Again at the same time: nothing; half an interval on: the source only. */
	rc_caware_decay(&w, IVAL);
	CHECK_EQ(cr->meantime, 4096);
	CHECK_EQ(w.decays, 1);
	rc_caware_decay(&w, IVAL + IVAL / 2);
	CHECK_EQ(cr->meantime, 4096);
	CHECK_EQ(sr->meantime, 2048);
	CHECK_EQ(w.decays, 2);

	/* Three intervals in one call: divided by 8, three steps. */
	rc_caware_init(&w, 0);
	record_once(&w, RC_CL_CACHE_READ, 8188, 0);
	record_once(&w, RC_CL_SOURCE_READ, 4092, 5 * IVAL / 2);
	rc_caware_decay(&w, 3 * IVAL + 1);
	CHECK_EQ(cr->meantime, 1024);
	CHECK_EQ(cr->totaltime, 32 * 8188 / 8);
	CHECK_EQ(cr->stamp, 3 * IVAL);			/* whole intervals only */
	CHECK_EQ(sr->meantime, 4096);
	CHECK_EQ(w.decays, 3);
	/* The next step comes a whole interval after the last, not after now. */
	rc_caware_decay(&w, 4 * IVAL - 1);
	CHECK_EQ(cr->meantime, 1024);
	CHECK_EQ(sr->meantime, 2048);			/* 1.5 intervals stale: one step */
	CHECK_EQ(sr->stamp, 7 * IVAL / 2);
	CHECK_EQ(w.decays, 4);
	rc_caware_decay(&w, 4 * IVAL);
	CHECK_EQ(cr->meantime, 512);
	CHECK_EQ(sr->meantime, 2048);
	CHECK_EQ(w.decays, 5);
	rc_caware_decay(&w, 9 * IVAL / 2);
	CHECK_EQ(cr->meantime, 512);
	CHECK_EQ(sr->meantime, 1024);
	CHECK_EQ(w.decays, 6);
	rc_caware_reset_stats(&w);
	CHECK_EQ(w.decays, 0);
	CHECK_EQ(cr->meantime, 512);

	/* A zero interval turns decay off. */
	rc_caware_init(&w, 0);
	record_once(&w, RC_CL_CACHE_READ, 8188, 0);
	w.interval_ns = 0;
	rc_caware_decay(&w, 100 * IVAL);
	CHECK_EQ(cr->meantime, 8192);
	CHECK_EQ(w.decays, 0);
}

/* A class starved by its own rule (rule 5 bypasses) is decayed back into use. */
CTEST(caware_decay_brings_starved_class_back)
{
	struct rc_cache *c = mk(4, 8);
	struct rc_caware *w = &c->caware;
	u32 idx = RC_NONE, k;
	u64 now = 0;

	fill_all(c, 100);
	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(rc_active(c));
	rc_reset_counters(c);
	record_once(w, RC_CL_CACHE_READ, 20 * MS, now);	/* a slow cache device */
	record_once(w, RC_CL_SOURCE_READ, 5 * MS, now);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_NONE);
	CHECK_EQ(c->ctr.read_bypassed_caware, 1);
	CHECK_EQ(c->ctr.read_bypassed, 1);
	check_rules(w, 5, 1);

	/*
	 * Bypassed misses refresh only source_read; cache_read is halved once
	 * per interval: 20000004 -> 10000002 -> 5000001, below the source's
	 * 5029763 after three 5 ms samples (see tracer_samples_settle_at_249).
	 */
	for (k = 1; w->cl[RC_CL_CACHE_READ].meantime >= w->cl[RC_CL_SOURCE_READ].meantime;
	     k++) {
		CHECK(k <= 10);
		CHECK_EQ(read_seg(c, 1 + k, &idx), RC_READ_BYPASS);
		now += IVAL;
		rc_caware_record(w, RC_CL_SOURCE_READ, 5 * MS, now);
		rc_caware_decay(w, now);
	}
	CHECK_EQ(k, 3);
	CHECK_EQ(w->cl[RC_CL_CACHE_READ].meantime, 5000001);
	CHECK_EQ(w->cl[RC_CL_SOURCE_READ].meantime, 5029763);
	CHECK_EQ(w->decays, 2);				/* cache_read, twice */
	CHECK_EQ(c->ctr.read_bypassed_caware, 3);
	check_rules(w, 5, 3);

	CHECK_EQ(read_seg(c, 50, &idx), RC_READ_FILL);
	CHECK_EQ(w->rule[1], 1);
	CHECK_EQ(c->ctr.read_misses, 1);
	CHECK_EQ(c->ctr.evictions, 1);
	CHECK_EQ(c->ctr.read_bypassed_caware, 3);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	rm(c);
}

/*
 * Rule 5 starves its own evidence: every RC_CAWARE_PROBE-th read it sends
 * to the disk is cached all the same, and its hits bring cache_read's mean
 * down until rule 1 caches again.
 */
CTEST(caware_rule5_probes_every_16th_miss)
{
	struct rc_cache *c = mk(4, 8);
	struct rc_caware *w = &c->caware;
	u32 idx = RC_NONE, k;

	fill_all(c, 100);
	rc_set_policy(c, RC_POLICY_CAWARE);
	rc_reset_counters(c);
	record_once(w, RC_CL_CACHE_READ, 20 * MS, 0);
	record_once(w, RC_CL_SOURCE_READ, 5 * MS, 0);
	for (k = 1; k < RC_CAWARE_PROBE; k++)
		CHECK_EQ(read_seg(c, k, &idx), RC_READ_BYPASS);
	CHECK_EQ(w->probes, 0);
	CHECK_EQ(c->ctr.read_bypassed_caware, RC_CAWARE_PROBE - 1);
	/* the 16th: rule 5 decided it, and it fills */
	CHECK_EQ(read_seg(c, 50, &idx), RC_READ_FILL);
	check_rules(w, 5, RC_CAWARE_PROBE);
	CHECK_EQ(w->probes, 1);
	CHECK_EQ(w->starved, 0);
	CHECK_EQ(c->ctr.read_misses, 1);
	CHECK_EQ(c->ctr.read_bypassed_caware, RC_CAWARE_PROBE - 1);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	rc_caware_record(w, RC_CL_CACHE_READ, 20 * MS, 0);	/* the probe's miss */
	/* its hits, 0.1 ms each: below the source's 5 ms after 5 */
	for (k = 0; w->cl[RC_CL_CACHE_READ].meantime >= w->cl[RC_CL_SOURCE_READ].meantime;
	     k++) {
		CHECK(k < 20);
		CHECK_EQ(read_seg(c, 50, &idx), RC_READ_HIT);
		rc_unpin(c, idx);
		rc_caware_record(w, RC_CL_CACHE_READ, MS / 10, 0);
	}
	CHECK_EQ(k, 5);
	CHECK_EQ(read_seg(c, 60, &idx), RC_READ_FILL);	/* rule 1 */
	CHECK_EQ(w->rule[1], 1);
	rc_fill_cancel(c, idx);
	/* the counters go with the stats, the count to the next probe stays */
	CHECK_EQ(read_seg(c, 70, &idx), RC_READ_FILL);
	rc_fill_cancel(c, idx);
	rc_caware_reset_stats(w);
	CHECK_EQ(w->probes, 0);
	rm(c);
}

/* Slow cache: C-Aware bypasses misses; slow source: it caches them. */
CTEST(caware_slow_cache_bypasses_slow_source_caches)
{
	struct rc_cache *c;
	u32 idx = RC_NONE;

	/* Full cache, rules 1 and 5 on cache_read vs source_read. */
	c = mk(4, 8);
	fill_all(c, 100);
	rc_set_policy(c, RC_POLICY_CAWARE);
	rc_reset_counters(c);
	record_once(&c->caware, RC_CL_CACHE_READ, 20 * MS, 0);
	record_once(&c->caware, RC_CL_DIRECT_CACHE_READ, 1, 0);	/* not the full rule's */
	record_once(&c->caware, RC_CL_SOURCE_READ, 5 * MS, 0);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	/* Adaptive+caware places misses alike (active: adaptive keeps the state). */
	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK(rc_active(c));
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->ctr.read_bypassed_caware, 2);
	CHECK_EQ(c->ctr.read_bypassed, 2);
	CHECK_EQ(c->ctr.read_misses, 0);
	CHECK_EQ(c->ctr.evictions, 0);
	check_rules(&c->caware, 5, 2);
	rc_set_policy(c, RC_POLICY_CAWARE);
	/* A hit is never placed: served whatever the means. */
	CHECK_EQ(read_seg(c, 100, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	check_rules(&c->caware, 5, 2);
	rc_caware_record(&c->caware, RC_CL_SOURCE_READ, 80 * MS, 0);	/* a slow source */
	CHECK(c->caware.cl[RC_CL_SOURCE_READ].meantime >
	      c->caware.cl[RC_CL_CACHE_READ].meantime);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_FILL);
	CHECK_EQ(c->caware.rule[1], 1);
	CHECK_EQ(c->ctr.evictions, 1);
	CHECK_EQ(c->ctr.read_bypassed_caware, 2);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	rm(c);

	/* Free segments, rules 3 and 6 on direct_cache_read vs source_read. */
	c = mk(4, 8);
	rc_set_policy(c, RC_POLICY_CAWARE);
	record_once(&c->caware, RC_CL_CACHE_READ, 1, 0);	/* not the free rule's */
	record_once(&c->caware, RC_CL_DIRECT_CACHE_READ, 3 * MS, 0);
	record_once(&c->caware, RC_CL_SOURCE_READ, 1 * MS, 0);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->ctr.read_bypassed_caware, 1);
	CHECK_EQ(c->nr_valid + c->nr_filling, 0);
	check_rules(&c->caware, 3, 1);
	rc_caware_record(&c->caware, RC_CL_SOURCE_READ, 10 * MS, 0);	/* a slow source */
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_FILL);
	CHECK_EQ(c->caware.rule[6], 1);
	CHECK_EQ(c->ctr.read_misses, 1);
	CHECK_EQ(c->ctr.read_bypassed_caware, 1);
	CHECK_EQ(c->ctr.read_bypassed, 1);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);

	/* Policy always: means that say bypass place nothing and count no rule. */
	rc_caware_record(&c->caware, RC_CL_DIRECT_CACHE_READ, 1000 * MS, 0);
	CHECK_EQ(rc_caware_rule(&c->caware, false, false), 3);
	rc_caware_reset_stats(&c->caware);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_FILL);
	check_rules(&c->caware, 0, 0);
	rc_fill_done(c, idx, 0, 256, false);
	rc_unpin(c, idx);
	rm(c);
}

/*
 * Inactive adaptive+caware simulates C-Aware, not "always": a miss the
 * rule bypasses is a simulated bypass (no GHOST entry), one it places a
 * simulated miss; the rule counts both decisions.
 */
CTEST(caware_inactive_simulates_the_rule)
{
	struct rc_cache *c = mk(4, 8);
	u32 idx = RC_NONE;

	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	rc_adapt_set_active(&c->adapt, false);
	record_once(&c->caware, RC_CL_CACHE_READ, 1, 0);
	record_once(&c->caware, RC_CL_DIRECT_CACHE_READ, 3 * MS, 0);
	record_once(&c->caware, RC_CL_SOURCE_READ, 1 * MS, 0);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_BYPASS);
	CHECK_EQ(c->nr_ghost, 0);
	check_rules(&c->caware, 3, 1);
	rc_caware_record(&c->caware, RC_CL_SOURCE_READ, 10 * MS, 0);	/* a slow source */
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(c->caware.rule[6], 1);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);	/* a simulated hit: no rule */
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(c->caware.rule[3] + c->caware.rule[6], 2);
	CHECK_EQ(c->ctr.sim_misses, 1);
	CHECK_EQ(c->ctr.sim_hits, 1);
	CHECK_EQ(c->ctr.read_bypassed, 3);
	CHECK_EQ(c->ctr.read_bypassed_inactive, 3);
	CHECK_EQ(c->ctr.read_bypassed_caware, 0);	/* counted for real bypasses only */
	rm(c);
}

/*
 * The simulated cache probes as the active one does: of a full inactive
 * cache's misses rule 5 decides, every 16th is a simulated miss (a GHOST
 * placed), the others simulated bypasses.
 */
CTEST(caware_inactive_probes_rule5_too)
{
	struct rc_cache *c = mk(4, 8);
	u32 idx = RC_NONE, k;

	fill_all(c, 100);
	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	rc_adapt_set_active(&c->adapt, false);
	rc_reset_counters(c);
	record_once(&c->caware, RC_CL_CACHE_READ, 20 * MS, 0);
	record_once(&c->caware, RC_CL_SOURCE_READ, 5 * MS, 0);
	for (k = 1; k < RC_CAWARE_PROBE; k++) {
		CHECK_EQ(read_seg(c, k, &idx), RC_READ_BYPASS);
		CHECK_EQ(rs.sim, RC_SIM_BYPASS);
	}
	CHECK_EQ(c->ctr.sim_misses, 0);
	CHECK_EQ(read_seg(c, 50, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->ctr.sim_misses, 1);
	CHECK_EQ(c->caware.probes, 1);
	check_rules(&c->caware, 5, RC_CAWARE_PROBE);
	CHECK_EQ(c->ctr.read_bypassed_inactive, RC_CAWARE_PROBE);
	CHECK_EQ(c->ctr.read_bypassed_caware, 0);	/* counted for real bypasses only */
	rm(c);
}

/* --- seconds per KiB ------------------------------------------------------ */

/* spk: no estimate when empty, sum_ns * sectors / sum_sectors over the last 100. */
CTEST(spk_estimate_and_ring)
{
	static struct rc_spk s;		/* zeroed */
	u64 ns = 123, want_ns = 0, want_sectors = 0;
	u32 i;

	CHECK(!rc_spk_estimate(&s, 8, &ns));
	CHECK_EQ(ns, 0);
	rc_spk_add(&s, 8, 1000);
	rc_spk_add(&s, 16, 3000);
	CHECK(rc_spk_estimate(&s, 24, &ns));
	CHECK_EQ(ns, 4000);
	CHECK(rc_spk_estimate(&s, 8, &ns));
	CHECK_EQ(ns, 1333);			/* 4000 * 8 / 24, truncated */
	CHECK(rc_spk_estimate(&s, 256, &ns));
	CHECK_EQ(ns, 42666);
	CHECK_EQ(s.count, 2);

	memset(&s, 0, sizeof(s));
	for (i = 0; i < 150; i++)
		rc_spk_add(&s, 1 + i % 7, 1000 + i);
	/* Only i = 50..149 remain: sum(1000 + i) = 100000 + 9950. */
	CHECK_EQ(s.count, RC_SPK_DEPTH);
	CHECK_EQ(s.next, 50);
	CHECK_EQ(s.sum_ns, 109950);
	CHECK_EQ(s.sum_sectors, 397);
	for (i = 50; i < 150; i++) {
		want_ns += 1000 + i;
		want_sectors += 1 + i % 7;
	}
	CHECK_EQ(s.sum_ns, want_ns);
	CHECK_EQ(s.sum_sectors, want_sectors);
	CHECK(rc_spk_estimate(&s, 397, &ns));
	CHECK_EQ(ns, 109950);
	CHECK(rc_spk_estimate(&s, 8, &ns));
	CHECK_EQ(ns, 109950 * 8 / 397);
	CHECK_EQ(ns, 2215);
	/* A stall is clamped to 1000 s. */
	memset(&s, 0, sizeof(s));
	rc_spk_add(&s, 8, ~0ull);
	CHECK_EQ(s.sum_ns, 1000000000000ull);
}

/* --- activation-deactivation, by hand ------------------------------------- */

/*
 * One window of @a->window reads priced by hand with estimator vdisk: each
 * read costs @cache ns through the cache (a fill while active, a simulated
 * miss while inactive; no copy time was ever learnt) and @disk ns on the
 * bare disk.  The disk reads' measured times are fed too, and must not
 * count: vdisk takes both sides from the model.  Returns what the window's
 * last read returned; the others must return false.
 */
static bool adapt_window(struct rc_adapt *a, u64 cache, u64 disk)
{
	bool sw = false;
	u32 i;

	for (i = 0; i < a->window; i++) {
		CHECK(!sw);
		if (a->active) {
			rc_adapt_disk_done(a, RC_DISK_FILL, 0, 256, 7777);
			sw = rc_adapt_read(a, 0, 8, 256, RC_SIM_NONE, disk, true, cache, true);
		} else {
			rc_adapt_disk_done(a, RC_DISK_BARE, 0, 8, 7777);
			sw = rc_adapt_read(a, 0, 8, 256, RC_SIM_MISS, disk, true, cache, true);
		}
	}
	CHECK_EQ(a->reads, 0);
	return sw;
}

/*
 * Margin M: the loser must lose by more than M%; dwell D: D windows
 * without a switch once inactive, RC_ADAPT_SPELL once active again.
 */
CTEST(adapt_margin_and_dwell)
{
	struct rc_adapt a;
	u64 tc = 0, td = 0, win = 0;
	u32 i;

	rc_adapt_init(&a);
	CHECK_EQ(a.window, RC_ADAPT_WINDOW);
	CHECK_EQ(a.margin, RC_ADAPT_MARGIN);
	CHECK_EQ(a.dwell, RC_ADAPT_DWELL);
	CHECK_EQ(a.estimator, RC_EST_SPK);
	CHECK(a.active);
	CHECK(!a.switching);
	a.window = 4;
	a.margin = 10;
	a.dwell = 2;
	a.estimator = RC_EST_VDISK;

	/* Not switching: even a huge loss changes nothing, but is judged. */
	CHECK(!adapt_window(&a, 100000, 1));
	CHECK(a.active);
	CHECK_EQ(a.windows, ++win);
	CHECK_EQ(a.last_cache_ns, 400000);
	CHECK_EQ(a.last_disk_ns, 4);
	tc += 400000;
	td += 4;
	a.switching = true;

	/* Active: 10% worse is not enough (4400 * 100 == 4000 * 110) ... */
	CHECK(!adapt_window(&a, 1100, 1000));
	CHECK(a.active);
	CHECK_EQ(a.last_cache_ns, 4400);
	CHECK_EQ(a.last_disk_ns, 4000);
	tc += 4400;
	td += 4000;
	/* ... a nanosecond more is. */
	CHECK(adapt_window(&a, 1101, 1000));
	CHECK(!a.active);
	CHECK_EQ(a.switches, 1);
	CHECK_EQ(a.since_switch, 0);
	tc += 4404;
	td += 4000;

	/* Inactive, the cache far cheaper: not in the D = 2 windows of dwell. */
	CHECK(!adapt_window(&a, 1, 1000));
	CHECK(!adapt_window(&a, 1, 1000));
	CHECK(!a.active);
	CHECK_EQ(a.since_switch, 2);
	CHECK(adapt_window(&a, 1, 1000));
	CHECK(a.active);
	CHECK_EQ(a.switches, 2);
	tc += 3 * 4;
	td += 3 * 4000;

	/* Active again: held for its spell's horizon, then out. */
	for (i = 0; i < RC_ADAPT_SPELL; i++)
		CHECK(!adapt_window(&a, 5000, 1000));
	CHECK(a.active);
	CHECK_EQ(a.since_switch, RC_ADAPT_SPELL);
	CHECK(adapt_window(&a, 5000, 1000));
	CHECK(!a.active);
	CHECK_EQ(a.switches, 3);
	tc += (RC_ADAPT_SPELL + 1) * 20000;
	td += (RC_ADAPT_SPELL + 1) * 4000;
	CHECK(!adapt_window(&a, 1, 1000));
	CHECK(!adapt_window(&a, 1, 1000));
	/* Inactive: 10% better is not enough (3600 * 100 == 4000 * 90) ... */
	CHECK(!adapt_window(&a, 900, 1000));
	CHECK(!a.active);
	/* ... a nanosecond less is. */
	CHECK(adapt_window(&a, 899, 1000));
	CHECK(a.active);
	CHECK_EQ(a.switches, 4);
	tc += 2 * 4 + 3600 + 3596;
	td += 4 * 4000;
	win += 10 + RC_ADAPT_SPELL;

	CHECK_EQ(a.windows, win);
	CHECK_EQ(a.windows_unjudged, 0);
	CHECK_EQ(a.total_cache_ns, tc);
	CHECK_EQ(a.total_disk_ns, td);
	CHECK_EQ(a.last_cache_ns, 3596);
	CHECK_EQ(a.last_disk_ns, 4000);

	/* A state set by hand starts a new dwell. */
	rc_adapt_set_active(&a, false);
	CHECK_EQ(a.since_switch, 0);
	CHECK(!adapt_window(&a, 1, 1000));
	CHECK(!adapt_window(&a, 1, 1000));
	CHECK(adapt_window(&a, 1, 1000));
	CHECK_EQ(a.switches, 5);

	rc_adapt_reset_stats(&a);
	CHECK_EQ(a.switches, 0);
	CHECK_EQ(a.windows, 0);
	CHECK_EQ(a.total_cache_ns, 0);
	CHECK(a.active);
	CHECK_EQ(a.margin, 10);
}

/*
 * The active state is judged on its spell, the windows since it came on
 * (the first too), decayed by 1/RC_ADAPT_SPELL a window;
 * the inactive state on its last window.  A window that loses in a spell
 * that wins keeps the cache on (8K-SR x16 on the hdd7200 flipped on such
 * windows, issue 46); a loss that lasts turns it off.
 */
CTEST(adapt_active_judged_on_its_spell)
{
	struct rc_adapt a;
	u32 i;

	rc_adapt_init(&a);
	a.window = 4;
	a.margin = 3;
	a.dwell = 2;
	a.estimator = RC_EST_VDISK;
	a.switching = true;
	a.first = false;	/* whole windows (the early verdict is tested below) */

	/* A spell that wins by half, then one window 30 % worse: still on. */
	for (i = 0; i < 4; i++)
		CHECK(!adapt_window(&a, 500, 1000));
	/* the cache's first window counts: no switch before it (2000, 4000 a window, decayed) */
	CHECK_EQ(a.spell_cache_ns, 7634);
	CHECK_EQ(a.spell_disk_ns, 15266);
	CHECK(!adapt_window(&a, 1300, 1000));
	CHECK(a.active);
	CHECK_EQ(a.last_cache_ns, 5200);
	/* The same window alone is a loss: the last window no longer decides. */
	CHECK(a.last_cache_ns * 100 > a.last_disk_ns * (100 + a.margin));
	CHECK(a.spell_cache_ns * 100 <= a.spell_disk_ns * (100 + a.margin));

	/* A loss that lasts: off within a few windows. */
	for (i = 0; i < 8 && a.active; i++)
		adapt_window(&a, 2000, 1000);
	CHECK(!a.active);
	CHECK(i <= 4);
	CHECK_EQ(a.switches, 1);
	CHECK_EQ(a.spell_cache_ns, 0);
	CHECK_EQ(a.spell_disk_ns, 0);

	/* Inactive: past the dwell, one window that wins by more than the margin is enough. */
	CHECK(!adapt_window(&a, 2000, 1000));
	CHECK(!adapt_window(&a, 2000, 1000));
	CHECK(!adapt_window(&a, 2000, 1000));
	CHECK(!a.active);
	CHECK(adapt_window(&a, 900, 1000));
	CHECK(a.active);
	CHECK_EQ(a.switches, 2);

	/* Back on: a new spell, from its first window. */
	CHECK(!adapt_window(&a, 500, 1000));
	CHECK_EQ(a.spell_cache_ns, 2000);
	CHECK_EQ(a.spell_disk_ns, 4000);
	CHECK(!adapt_window(&a, 500, 1000));
	CHECK(a.active);
	/* Decayed: 2000 - 2000 / 32 + 2000. */
	CHECK_EQ(a.spell_cache_ns, 3938);
	CHECK_EQ(a.spell_disk_ns, 7875);
}

/*
 * A spell that came on pays its start first: the fills that bring a cold
 * cache up to its streams' batches ahead, charged to the windows that
 * start them, then hits.  Judged after the dwell, it went off on that
 * start (1 MiB segments under 16 streams: 340 switches, at 4 times always'
 * time in the simulator); judged once it spans its horizon, it stays on,
 * and a loss that lasts beyond it still turns it off.
 */
CTEST(adapt_spell_judged_once_it_spans_its_horizon)
{
	struct rc_adapt a;
	u32 i;

	rc_adapt_init(&a);
	a.window = 4;
	a.margin = 3;
	a.estimator = RC_EST_VDISK;
	a.switching = true;
	a.first = false;
	/* Inactive, then on again past the dwell: a new spell. */
	rc_adapt_set_active(&a, false);
	for (i = 0; i <= RC_ADAPT_DWELL; i++)
		adapt_window(&a, 100, 1000);
	CHECK(a.active);
	CHECK_EQ(a.switches, 1);
	CHECK_EQ(a.since_switch, 0);

	/* The start: three windows of fills at five times the bare disk's ... */
	for (i = 0; i < 3; i++)
		CHECK(!adapt_window(&a, 5000, 1000));
	/* ... then hits, a tenth of it: on all along. */
	for (i = 0; i < 40; i++)
		CHECK(!adapt_window(&a, 100, 1000));
	CHECK(a.active);
	CHECK_EQ(a.switches, 1);
	CHECK(a.spell_cache_ns * 100 <= a.spell_disk_ns * (100 + a.margin));

	/* A loss that lasts: off within a few windows. */
	for (i = 0; i < 40 && a.active; i++)
		adapt_window(&a, 3000, 1000);
	CHECK(!a.active);
	CHECK(i <= 12);
	CHECK_EQ(a.switches, 2);
}

/*
 * @n reads, each priced @cvd ns with the cache and 1000 ns on the bare
 * disk, @served from RAM or not.  Returns the number of the read (from 1)
 * that last switched the state, or 0.
 */
static u32 early_reads(struct rc_adapt *a, u32 n, u64 cvd, bool served)
{
	u32 i, switched = 0;

	for (i = 0; i < n; i++) {
		if (served)
			rc_adapt_served(a);
		if (rc_adapt_read(a, 0, 8, 256, RC_SIM_NONE, 1000, true, cvd, true))
			switched = i + 1;
	}
	return switched;
}

static void early_init(struct rc_adapt *a)
{
	rc_adapt_init(a);
	a->switching = true;
	a->estimator = RC_EST_VDISK;
	CHECK(a->first);
}

/*
 * The early verdict: a cache's first window is judged after a quarter of
 * its reads (32) when none was served from RAM, by the rule of any
 * window; the windows after it are whole.
 */
CTEST(adapt_early_verdict_after_a_quarter_window_with_nothing_served)
{
	struct rc_adapt a;

	early_init(&a);
	CHECK_EQ(early_reads(&a, 32, 2000, false), 32);	/* twice the bare price: off */
	CHECK(!a.active);
	CHECK(!a.first);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(a.last_cache_ns, 32 * 2000);
	CHECK_EQ(a.last_disk_ns, 32 * 1000);
	CHECK_EQ(early_reads(&a, RC_ADAPT_WINDOW - 1, 2000, false), 0);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(early_reads(&a, 1, 2000, false), 0);	/* whole, and the dwell */
	CHECK_EQ(a.windows, 2);

	/* Judged early but within the margin: on, and the next window whole. */
	early_init(&a);
	CHECK_EQ(early_reads(&a, 32, 1020, false), 0);
	CHECK(a.active);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(early_reads(&a, 32, 2000, false), 0);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(early_reads(&a, RC_ADAPT_WINDOW - 32, 2000, false), RC_ADAPT_WINDOW - 32);
	CHECK_EQ(a.windows, 2);
	CHECK(!a.active);
}

/*
 * No early verdict once a read of the first quarter was served from RAM,
 * for a policy that does not switch, with estimator spk, for a cache
 * started inactive, nor for a window after the first.
 */
CTEST(adapt_no_early_verdict_after_a_hit_or_for_later_windows)
{
	struct rc_adapt a;

	early_init(&a);
	CHECK_EQ(early_reads(&a, 1, 0, true), 0);	/* one hit */
	CHECK_EQ(early_reads(&a, RC_ADAPT_WINDOW - 2, 2000, false), 0);
	CHECK_EQ(a.windows, 0);
	CHECK_EQ(early_reads(&a, 1, 2000, false), 1);	/* read 128 */
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(a.last_cache_ns, (RC_ADAPT_WINDOW - 1) * 2000);
	CHECK(!a.active);

	early_init(&a);
	a.switching = false;
	CHECK_EQ(early_reads(&a, 32, 2000, false), 0);
	CHECK_EQ(a.windows, 0);

	/* spk prices the simulated fills at rates 32 fills do not give it */
	early_init(&a);
	a.estimator = RC_EST_SPK;
	CHECK_EQ(early_reads(&a, 32, 2000, false), 0);
	CHECK_EQ(a.windows, 0);

	early_init(&a);
	rc_adapt_set_active(&a, false);
	CHECK_EQ(early_reads(&a, 32, 2000, false), 0);
	CHECK_EQ(a.windows, 0);

	early_init(&a);
	a.dwell = 0;
	CHECK_EQ(early_reads(&a, 1, 0, true), 0);
	CHECK_EQ(early_reads(&a, RC_ADAPT_WINDOW - 1, 1000, false), 0);
	CHECK_EQ(a.windows, 1);				/* whole, judged: on */
	CHECK_EQ(early_reads(&a, 32, 2000, false), 0);	/* not early now */
	CHECK_EQ(a.windows, 1);
}

/* A window with more than half its reads unpriced, or no disk time, is not judged. */
CTEST(adapt_unpriced_window_not_judged)
{
	struct rc_adapt a;
	bool ok;
	u32 i;

	rc_adapt_init(&a);
	a.switching = true;
	a.window = 10;
	a.estimator = RC_EST_VDISK;
	a.first = false;	/* whole windows only (no early verdict) */
	/* 6 of 10 not priced on the bare disk: the cache is far worse, but no judgement. */
	for (i = 0; i < 10; i++) {
		ok = i >= 6;
		CHECK(!rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, ok ? 1000 : 0, ok, 1000000, true));
	}
	CHECK(a.active);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(a.windows_unjudged, 1);
	CHECK_EQ(a.total_cache_ns, 0);
	CHECK_EQ(a.last_cache_ns, 0);
	/* Nor with 6 of 10 the cache's side unpriced. */
	for (i = 0; i < 10; i++) {
		ok = i >= 6;
		CHECK(!rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, 1000, true, ok ? 1000000 : 0, ok));
	}
	CHECK_EQ(a.windows, 2);
	CHECK_EQ(a.windows_unjudged, 2);
	CHECK_EQ(a.switches, 0);
	/* 5 of 10: judged, and out. */
	for (i = 0; i < 10; i++) {
		ok = i >= 5;
		CHECK_EQ(rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, ok ? 1000 : 0, ok, 1000000, true),
			 i == 9);
	}
	CHECK(!a.active);
	CHECK_EQ(a.windows, 3);
	CHECK_EQ(a.windows_unjudged, 2);
	CHECK_EQ(a.last_cache_ns, 10 * 1000000);
	CHECK_EQ(a.last_disk_ns, 5 * 1000);
	/* No disk time at all: not judged either. */
	a.dwell = 0;
	for (i = 0; i < 10; i++)
		CHECK(!rc_adapt_read(&a, 0, 8, 256, RC_SIM_MISS, 0, true, 1, true));
	CHECK_EQ(a.windows_unjudged, 3);
	/* Spk with no sample at all cannot price: the first window is unjudged. */
	rc_adapt_init(&a);
	a.switching = true;
	a.window = 4;
	for (i = 0; i < 4; i++)
		rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, 0, false, 0, false);
	CHECK_EQ(a.windows, 1);
	CHECK_EQ(a.windows_unjudged, 1);
	CHECK(a.active);
}

/* Spk pricing: bare reads by the bare pool, fills by the fill pool, hits by copies. */
CTEST(adapt_spk_pools)
{
	struct rc_adapt a;

	rc_adapt_init(&a);
	a.window = 100;
	/* Active: the only disk rate known is the fills' ... */
	rc_adapt_disk_done(&a, RC_DISK_FILL, 0, 256, 2560000);	/* 10000 ns/sector */
	CHECK_EQ(a.cache_ns, 2560000);
	rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, 0, false, 0, false);
	CHECK_EQ(a.disk_ns, 80000);
	/* ... until a read reached the disk as received. */
	rc_adapt_disk_done(&a, RC_DISK_BARE, 0, 8, 800000);	/* 100000 ns/sector */
	CHECK_EQ(a.cache_ns, 3360000);
	rc_adapt_read(&a, 0, 8, 256, RC_SIM_NONE, 0, false, 0, false);
	CHECK_EQ(a.disk_ns, 80000 + 800000);
	rc_adapt_copy(&a, 8, 2000);
	CHECK_EQ(a.cache_ns, 3362000);
	CHECK_EQ(a.unpriced, 0);

	/* Inactive: a simulated miss costs a fill plus a copy, a hit a copy. */
	rc_adapt_set_active(&a, false);
	CHECK_EQ(a.reads, 0);
	CHECK_EQ(a.cache_ns, 0);
	rc_adapt_read(&a, 0, 8, 256, RC_SIM_MISS, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2560000 + 2000);
	rc_adapt_read(&a, 0, 16, 256, RC_SIM_HIT, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2560000 + 2000 + 4000);
	/* A busy simulated cache would have sent the read as received. */
	rc_adapt_read(&a, 0, 8, 256, RC_SIM_BYPASS, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2566000 + 800000);
	/* Measured: bare reads count, fills (none expected) and copies do not. */
	rc_adapt_disk_done(&a, RC_DISK_BARE, 0, 8, 700000);
	rc_adapt_disk_done(&a, RC_DISK_FILL, 0, 256, 1);
	rc_adapt_copy(&a, 8, 2000);
	CHECK_EQ(a.disk_ns, 700000);
	CHECK_EQ(a.cache_ns, 3366000);
	CHECK_EQ(a.reads, 3);
	CHECK_EQ(a.unpriced, 0);
}

/*
 * Near and far requests have pools of their own: a seek among sequential
 * fills (a probe at device creation) does not make the next sequential fill
 * look dear, and a pool with no sample borrows its kind's other distance.
 */
CTEST(adapt_spk_near_and_far_pools)
{
	struct rc_adapt a;

	rc_adapt_init(&a);
	a.window = 100;
	rc_adapt_disk_done(&a, RC_DISK_FILL, 1000000, 256, 13000000);	/* far: a seek */
	rc_adapt_disk_done(&a, RC_DISK_FILL, 1000256, 256, 1000000);	/* near */
	rc_adapt_disk_done(&a, RC_DISK_FILL, 1000512 + RC_SPK_NEAR, 256, 3000000); /* near */
	CHECK_EQ(a.fill[RC_SPK_FAR_POOL].count, 1);
	CHECK_EQ(a.fill[RC_SPK_NEAR_POOL].count, 2);
	rc_adapt_set_active(&a, false);
	a.sim_next = 4096;
	rc_adapt_read(&a, 4096 + 24, 8, 256, RC_SIM_MISS, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2000000);			/* near: (1 + 3) ms / 2 */
	CHECK_EQ(a.sim_next, 4096 + 256);
	rc_adapt_read(&a, 4096 + 512 + RC_SPK_NEAR, 8, 256, RC_SIM_MISS, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2000000 + 13000000);	/* far, past the 1 MiB reach */
	rc_adapt_read(&a, 0, 8, 256, RC_SIM_MISS, 0, false, 0, false);
	CHECK_EQ(a.cache_ns, 2000000 + 2 * 13000000);	/* backward is far */
	/* Only far bare reads measured: a near one borrows their rate. */
	rc_adapt_disk_done(&a, RC_DISK_BARE, 1 << 30, 8, 800000);
	CHECK_EQ(a.bare[RC_SPK_FAR_POOL].count, 1);
	CHECK_EQ(a.disk_ns, 800000);
	rc_adapt_set_active(&a, true);
	a.recv_next = 64;
	rc_adapt_read(&a, 64, 8, 256, RC_SIM_NONE, 0, false, 0, false);
	CHECK_EQ(a.disk_ns, 800000);
	CHECK_EQ(a.recv_next, 72);
	CHECK_EQ(a.unpriced, 0);
}

/* --- activation-deactivation on synthetic streams ------------------------- */

/*
 * A synthetic disk: every request costs CMD_NS plus XFER_NS a sector (about
 * 128 KB/ms), plus SEEK_NS unless it starts within RA_GAP sectors after the
 * previous request's end (the drive's read-ahead covers short forward gaps).
 * The seek adds to the transfer: were it a flat price, a random fill and a
 * random 4 KiB read would cost the same and the vdisk estimator could not
 * tell them apart.
 */
#define SEEK_NS		(12 * MS)
#define XFER_NS		4000ull
#define CMD_NS		150000ull
#define RA_GAP		512
#define COPY_NS		250ull		/* RAM copy of a hit, per sector */
#define ST_ENTRIES	64
#define ST_SHIFT	8		/* 128 KiB segments */
#define ST_DEV		(1ull << 31)	/* sectors: 1 TiB */

struct disk {
	u64 end;		/* where the previous request ended */
};

/* Read @sectors at @pos: the time it takes. */
static u64 disk_read(struct disk *d, u64 pos, u32 sectors)
{
	u64 t = CMD_NS + sectors * XFER_NS;

	if (pos < d->end || pos - d->end > RA_GAP)
		t += SEEK_NS;
	d->end = pos + sectors;
	return t;
}

struct stream {
	struct rc_cache *c;
	struct disk disk;	/* the real disk, behind the cache */
	struct disk vdisk;	/* estimator vdisk: the bare disk, every read as received */
	struct disk cvdisk;	/* ... and the disk under the cache, active or simulated */
	bool unpriced;		/* vdisk: the next reads have no price */
	u64 fills, hits, bypasses;
};

static void stream_init(struct stream *s, enum rc_estimator est)
{
	memset(s, 0, sizeof(*s));
	s->c = mk(ST_ENTRIES, ST_SHIFT);
	rc_set_policy(s->c, RC_POLICY_ADAPTIVE);
	CHECK(s->c->adapt.switching);
	CHECK(rc_active(s->c));
	s->c->adapt.estimator = est;
}

/*
 * One read of @sectors at @sector through the protocol of the kernel glue:
 * rc_read(), rc_read_judge(), then the completion.  With estimator vdisk
 * the glue prices the read on a virtual bare disk (vd) and what the cache
 * sends down for it on a virtual disk of its own (cvd): the segment fill of
 * a miss, real or simulated, the read itself on a bypass, nothing on a hit.
 */
static void stream_read(struct stream *s, u64 sector, u32 sectors)
{
	struct rc_cache *c = s->c;
	u32 seg_sectors = 1u << c->seg_shift, idx = RC_NONE;
	u64 seg = rc_sector_to_seg(c, sector), start = seg << c->seg_shift;
	bool vd = c->adapt.estimator == RC_EST_VDISK && !s->unpriced;
	u64 vd_ns = 0, cvd_ns = 0, t;
	enum rc_read_action act;

	if (vd)
		vd_ns = disk_read(&s->vdisk, sector, sectors);
	act = read_seg(c, seg, &idx);
	if (vd && (act == RC_READ_FILL || rs.sim == RC_SIM_MISS))
		cvd_ns = disk_read(&s->cvdisk, start, seg_sectors);
	else if (vd && act == RC_READ_BYPASS && rs.sim != RC_SIM_HIT)
		cvd_ns = disk_read(&s->cvdisk, sector, sectors);
	rc_read_judge(c, &rs, sector, sectors, act, vd_ns, vd, cvd_ns, vd);
	switch (act) {
	case RC_READ_FILL:
		CHECK_EQ(rs.sim, RC_SIM_NONE);
		t = disk_read(&s->disk, start, seg_sectors);
		rc_adapt_disk_done(&c->adapt, RC_DISK_FILL, start, seg_sectors, t);
		CHECK_EQ(rc_fill_done(c, idx, 0, seg_sectors, false), RC_FILL_SERVE);
		rc_unpin(c, idx);
		s->fills++;
		break;
	case RC_READ_HIT:	/* active only: inactive, every read bypasses */
		CHECK_EQ(rs.sim, RC_SIM_NONE);
		rc_adapt_copy(&c->adapt, sectors, sectors * COPY_NS);
		rc_unpin(c, idx);
		s->hits++;
		break;
	case RC_READ_BYPASS:
		t = disk_read(&s->disk, sector, sectors);
		rc_adapt_disk_done(&c->adapt, RC_DISK_BARE, sector, sectors, t);
		s->bypasses++;
		break;
	default:	/* WAIT: impossible, every fill completes at once */
		CHECK(0);
	}
	CHECK(rc_idle(c));
}

/* A random 4 KiB read anywhere on the device. */
static void random_read(struct stream *s)
{
	stream_read(s, ctest_rand(ST_DEV / 8) * 8, 8);
}

/* Random 4 KiB reads: every fill costs a seek plus 128 KiB, so the cache goes off. */
CTEST(adapt_random_reads_deactivate)
{
	struct stream s;
	u64 sw;
	u32 i;

	ctest_rng = 0x2545f4914f6cdd1dull;
	stream_init(&s, RC_EST_SPK);
	for (i = 0; i < 3000; i++)
		random_read(&s);
	sw = s.c->adapt.switches;
	CHECK(sw >= 1 && sw <= 2);
	for (; i < 5000; i++) {
		random_read(&s);
		CHECK(!rc_active(s.c));
	}
	CHECK_EQ(s.c->adapt.switches, sw);
	CHECK(s.bypasses >= 5000 - 2 * RC_ADAPT_WINDOW);
	CHECK_EQ(s.c->adapt.windows, 5000 / RC_ADAPT_WINDOW);
	/* The simulated cache kept missing. */
	CHECK(s.c->ctr.sim_misses >= 4000);
	CHECK(s.c->ctr.sim_hits < 10);
	CHECK_EQ(s.c->nr_ghost + s.c->nr_valid, ST_ENTRIES);
	rm(s.c);
}

/*
 * Strided 4 KiB read / 8 KiB skip: one fill (read-ahead makes it cheap)
 * serves ten reads, while the bare disk pays a command per read, so the
 * cache must end on.  The paper's v1 priced the bare disk, while active,
 * with the seconds per KiB of the last disk reads, i.e. the cheap
 * sequential fills: that made the bare disk look three times cheaper than
 * the cache, off it went, came back on the measured bare reads, and
 * flapped.  A separate bare pool keeps the rate of reads sent as received,
 * so after at most one wrong switch off and one back on, the state holds.
 */
static u64 strided_run(bool v1, u32 reads)
{
	struct stream s;
	u64 sector = 0, sw = 0;
	u32 i;

	stream_init(&s, RC_EST_SPK);
	for (i = 0; i < reads; i++, sector += 24) {
		/* v1: no bare pool while active, only the fills' rate. */
		if (v1 && rc_active(s.c))
			memset(&s.c->adapt.bare, 0, sizeof(s.c->adapt.bare));
		stream_read(&s, sector, 8);
		if (i == 2999)
			sw = s.c->adapt.switches;
		if (i >= 3000 && !v1)
			CHECK(rc_active(s.c));
	}
	if (!v1) {
		CHECK(sw <= 2);
		CHECK_EQ(s.c->adapt.switches, sw);
		/* At most one excursion off: the dwell and the window that judged it. */
		CHECK(s.bypasses <= (RC_ADAPT_DWELL + 1) * RC_ADAPT_WINDOW);
		/* Active: ~12 fills of 1.174 ms and 116 copies, vs 128 x 182 us. */
		CHECK(s.c->adapt.last_cache_ns * 100 < s.c->adapt.last_disk_ns * 70);
	}
	sw = s.c->adapt.switches;
	rm(s.c);
	return sw;
}

/* Strided reads end active after at most two switches; v1's pricing flaps. */
CTEST(adapt_strided_reads_stay_active)
{
	u32 windows = 40000 / RC_ADAPT_WINDOW, sw;

	CHECK(strided_run(false, 5000) <= 2);
	/*
	 * The same stream priced as v1 did flaps all along: off at each
	 * verdict on an active spell, on again after the dwell.
	 */
	sw = (u32)strided_run(true, 40000);
	CHECK(sw >= 2 * (windows / (RC_ADAPT_SPELL + RC_ADAPT_DWELL + 2)));
}

/* Sequential 64 KiB reads: two reads a segment; the state settles. */
CTEST(adapt_sequential_reads_settle)
{
	struct stream s;
	u64 sector = 0, sw;
	u32 i;

	stream_init(&s, RC_EST_SPK);
	for (i = 0; i < 3000; i++, sector += 128)
		stream_read(&s, sector, 128);
	sw = s.c->adapt.switches;
	CHECK(sw <= 2);
	for (; i < 5000; i++, sector += 128)
		stream_read(&s, sector, 128);
	CHECK_EQ(s.c->adapt.switches, sw);
	/* One fill (a command, 256 sectors) does what costs the bare disk two: on. */
	CHECK(rc_active(s.c));
	rm(s.c);
}

/* Estimator vdisk on random reads: also off; unpriced windows are not judged. */
CTEST(adapt_vdisk_random_reads_deactivate)
{
	struct stream s;
	u64 sw, unjudged;
	u32 i;

	ctest_rng = 0x2545f4914f6cdd1dull;
	stream_init(&s, RC_EST_VDISK);
	s.c->budget.share = 0;		/* the verdicts alone */
	s.c->adapt.first = false;	/* whole windows only (no early verdict) */
	/* First, windows with 70% of the reads unpriced: the cache stays on. */
	for (i = 0; i < 4 * RC_ADAPT_WINDOW; i++) {
		s.unpriced = i % 10 < 7;
		random_read(&s);
		CHECK(rc_active(s.c));
	}
	CHECK_EQ(s.c->adapt.windows, 4);
	CHECK_EQ(s.c->adapt.windows_unjudged, 4);
	CHECK_EQ(s.c->adapt.switches, 0);
	CHECK_EQ(s.c->adapt.total_cache_ns, 0);
	s.unpriced = false;
	/* Priced: a fill (seek + 128 KiB) loses to a bare read (seek + 4 KiB). */
	for (; i < 3000; i++)
		random_read(&s);
	sw = s.c->adapt.switches;
	unjudged = s.c->adapt.windows_unjudged;
	CHECK(sw >= 1 && sw <= 2);
	for (; i < 5000; i++) {
		random_read(&s);
		CHECK(!rc_active(s.c));
	}
	CHECK_EQ(s.c->adapt.switches, sw);
	CHECK_EQ(s.c->adapt.windows_unjudged, unjudged);
	/* Inactive, a window prices 128 fills on the virtual disk vs 128 bare reads. */
	CHECK_EQ(s.c->adapt.last_cache_ns,
		 RC_ADAPT_WINDOW * (SEEK_NS + CMD_NS + 256 * XFER_NS));
	CHECK_EQ(s.c->adapt.last_disk_ns,
		 RC_ADAPT_WINDOW * (SEEK_NS + CMD_NS + 8 * XFER_NS));
	/* Inactive, unpriced simulated misses leave the window unjudged too. */
	s.unpriced = true;
	for (i = 0; i < RC_ADAPT_WINDOW; i++)
		random_read(&s);
	CHECK_EQ(s.c->adapt.windows_unjudged, unjudged + 1);
	CHECK_EQ(s.c->adapt.switches, sw);
	rm(s.c);
}

/* --- speculation budget ------------------------------------------------- */

/* Exact arithmetic: a fill pays its price beyond the read's, a hit earns the read's. */
CTEST(budget_pays_fills_and_earns_served_reads)
{
	static const u32 admits[] = { 8, 4, 3, 2, 1 };	/* of 8, before fill k */
	const s64 net = 40000 - 9880000;	/* one fill below: earns 40 us, pays 9.88 ms */
	struct rc_budget b;
	int k;

	rc_budget_init(&b);
	CHECK_EQ(b.share, RC_BUDGET_SHARE);	/* on by default */
	CHECK_EQ(b.cap_ns, RC_BUDGET_CAP_MS * MS);
	CHECK_EQ(b.balance, 0);
	CHECK_EQ(rc_budget_admit(&b, 1), 1);
	/*
	 * Fills of 15 ms for reads of 5.12 ms: each pays 9.88 ms and earns
	 * 5.12 / 128 ms.  One fill at a balance of 0, then the overdraft of 4,
	 * each counted in red once it filled: a cold budget lets 5 fills start.
	 */
	for (k = 1; k <= 5; k++) {
		CHECK_EQ(rc_budget_admit(&b, 8), admits[k - 1]);
		CHECK_EQ(rc_budget_admit(&b, 1), 1);
		rc_budget_take(&b, 1);
		rc_budget_read(&b, false, true, 5120000, 15000000);
		CHECK_EQ(b.balance, k * net);
		CHECK_EQ(b.red, k - 1);
	}
	CHECK_EQ(rc_budget_admit(&b, 1), 0);
	CHECK_EQ(b.spent_ns, 5 * 9880000);
	CHECK_EQ(b.earned_ns, 5 * 40000);
	/* a bypass earns the share only; a fill cheaper than its read pays nothing */
	rc_budget_read(&b, false, false, 1280000, 1280000);
	CHECK_EQ(b.balance, 5 * net + 10000);
	rc_budget_read(&b, false, true, 1280000, 1000000);
	CHECK_EQ(b.balance, 5 * net + 20000);
	CHECK_EQ(b.spent_ns, 5 * 9880000);
	CHECK_EQ(b.red, 4);		/* what the bar admitted, not what was priced */
	/* a hit (or a read that waited on a fill) earns the read's price */
	rc_budget_read(&b, true, false, 6400000, 0);
	CHECK_EQ(b.balance, 5 * net + 20000 + 6400000 + 50000);
	CHECK_EQ(rc_budget_admit(&b, 1), 0);	/* still -42.7 ms */
	rc_budget_read(&b, true, false, 42800000, 0);
	CHECK_EQ(b.balance, 5 * net + 20000 + 6450000 + 43134375);
	CHECK_EQ(b.red, 0);		/* +0.18 ms: the overdraft is whole again */
	CHECK_EQ(rc_budget_admit(&b, 8), 8);
	/* the balance never passes the cap */
	rc_budget_read(&b, true, false, 500 * MS, 0);
	CHECK_EQ(b.balance, RC_BUDGET_CAP_MS * MS);
	CHECK_EQ(b.earned_ns, 5 * 40000 + 20000 + 6450000 + 43134375 + 500 * MS + 500 * MS / 128);
	rc_budget_reset_stats(&b);
	CHECK_EQ(b.earned_ns, 0);
	CHECK_EQ(b.spent_ns, 0);
	CHECK_EQ(b.balance, RC_BUDGET_CAP_MS * MS);
	b.red = 3;
	rc_budget_cold(&b);
	CHECK_EQ(b.balance, 0);
	CHECK_EQ(b.red, 0);
	/* share 0: no budget, nothing counted */
	b.share = 0;
	b.balance = -1000 * (s64)MS;
	rc_budget_read(&b, false, true, 0, 1000 * MS);
	CHECK_EQ(b.spent_ns, 0);
	CHECK_EQ(b.red, 0);
	CHECK_EQ(b.balance, -1000 * (s64)MS);
}

/* A budget of the default cap (100 ms) at @balance with @red counted. */
static struct rc_budget budget_at(s64 balance, u32 red)
{
	struct rc_budget b;

	rc_budget_init(&b);
	b.balance = balance;
	b.red = red;
	return b;
}

/*
 * The one bar: while the balance is not negative, all of the speculation
 * asked for goes, whatever red says (it is 0 there but for a test).
 */
CTEST(budget_bar_admits_all_while_the_balance_is_not_negative)
{
	struct rc_budget b = budget_at(0, 0);

	CHECK_EQ(rc_budget_admit(&b, 0), 0);
	CHECK_EQ(rc_budget_admit(&b, 1), 1);
	CHECK_EQ(rc_budget_admit(&b, RC_PREFETCH_MAX + 1), RC_PREFETCH_MAX + 1);
	b = budget_at(RC_BUDGET_CAP_MS * (s64)MS, RC_BUDGET_OVERDRAFT);
	CHECK_EQ(rc_budget_admit(&b, 9), 9);
	b = budget_at(1, 100);
	CHECK_EQ(rc_budget_admit(&b, 2), 2);
}

/*
 * While the balance is negative (above minus the cap), the bar admits
 * RC_BUDGET_OVERDRAFT - red of what is asked for, trimming a larger ask,
 * and nothing once red reaches the overdraft.  Asking changes nothing:
 * red counts what filled or was paid (rc_budget_read(), rc_budget_spend()).
 */
CTEST(budget_bar_admits_what_is_left_of_the_overdraft_while_negative)
{
	static const struct {
		s64 balance;
		u32 red, n, want;
	} cases[] = {
		{ -1, 0, 1, 1 }, { -1, 0, 4, 4 }, { -1, 0, 5, 4 }, { -1, 0, 9, 4 },
		{ -1, 1, 2, 2 }, { -1, 1, 8, 3 }, { -1, 2, 2, 2 }, { -1, 2, 3, 2 },
		{ -1, 3, 1, 1 }, { -1, 3, 2, 1 }, { -1, 3, 0, 0 },
		{ -1, 4, 1, 0 }, { -1, 4, 8, 0 }, { -1, 7, 1, 0 },
		{ -50 * (s64)MS, 1, 9, 3 }, { 1 - 100 * (s64)MS, 0, 9, 4 },
	};
	struct rc_budget b;
	u32 i;

	CHECK_EQ(RC_BUDGET_OVERDRAFT, 4);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		b = budget_at(cases[i].balance, cases[i].red);
		CHECK_EQ(rc_budget_admit(&b, cases[i].n), cases[i].want);
		CHECK_EQ(rc_budget_admit(&b, cases[i].n), cases[i].want);
		CHECK_EQ(b.red, cases[i].red);
	}
}

/* At or below minus the cap the bar admits nothing, whatever the overdraft left. */
CTEST(budget_bar_admits_nothing_at_or_below_minus_the_cap)
{
	struct rc_budget b = budget_at(-100 * (s64)MS, 0);

	CHECK_EQ(rc_budget_admit(&b, 1), 0);
	CHECK_EQ(rc_budget_admit(&b, 4), 0);
	b = budget_at(-101 * (s64)MS, 0);
	CHECK_EQ(rc_budget_admit(&b, 1), 0);
	/* the cap is the tunable's: 10 ms */
	b = budget_at(-10 * (s64)MS, 0);
	CHECK(rc_budget_set(&b, RC_TUN_BUDGET_CAP_MS, 10));
	CHECK_EQ(rc_budget_admit(&b, 2), 0);
	b.balance = 1 - 10 * (s64)MS;
	CHECK_EQ(rc_budget_admit(&b, 2), 2);
}

/* Share 0 turns the budget off: the bar admits all, at any balance and red. */
CTEST(budget_bar_admits_all_with_share_0)
{
	struct rc_budget b = budget_at(-1000 * (s64)MS, RC_BUDGET_OVERDRAFT);

	CHECK_EQ(rc_budget_admit(&b, 3), 0);
	b.share = 0;
	CHECK_EQ(rc_budget_admit(&b, 3), 3);
	CHECK_EQ(rc_budget_admit(&b, 1), 1);
}

/*
 * The overdraft counts segments of speculation as they start
 * (rc_budget_take()), only while the balance is negative; spending counts
 * nothing of itself; back at 0 or above, the overdraft is whole again.
 */
CTEST(budget_take_counts_red_only_while_the_balance_is_negative)
{
	struct rc_budget b = budget_at(0, 0);

	rc_budget_take(&b, 3);			/* at 0: not in the red */
	CHECK_EQ(b.red, 0);
	rc_budget_spend(&b, 3 * MS);
	CHECK_EQ(b.balance, -3 * (s64)MS);
	CHECK_EQ(b.red, 0);			/* spending is not taking */
	CHECK_EQ(b.spent_ns, 3 * MS);
	rc_budget_take(&b, 1);
	rc_budget_take(&b, 1);
	CHECK_EQ(b.red, 2);
	CHECK_EQ(rc_budget_admit(&b, 8), 2);
	rc_budget_take(&b, 2);
	CHECK_EQ(rc_budget_admit(&b, 1), 0);
	/* a hit's 9 ms and its share bring it above 0: red starts again */
	rc_budget_read(&b, true, false, 9 * MS, 0);
	CHECK_EQ(b.balance, -3 * (s64)MS + 9 * (s64)MS + 9 * (s64)MS / 128);
	CHECK_EQ(b.red, 0);
	CHECK_EQ(rc_budget_admit(&b, 8), 8);
	b.share = 0;				/* no budget: nothing counts */
	b.balance = -1;
	rc_budget_take(&b, 5);
	CHECK_EQ(b.red, 0);
}

/*
 * Through rc_read(): with an adaptive policy a miss the budget's bar does
 * not admit bypasses (read_bypassed_budget); with policy always the budget is not
 * consulted; reads the model could not price, or judged while inactive,
 * leave the balance alone, and the simulated cache runs no budget.
 */
CTEST(budget_gates_the_misses_of_adaptive_policies)
{
	struct rc_cache *c = mk(8, 8);
	u32 idx = RC_NONE;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->budget.share = RC_BUDGET_SHARE;
	/* 3 fills of the overdraft are used: one more may start, above minus the cap */
	c->budget.red = 3;
	c->budget.balance = -100 * (s64)MS;
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);
	c->budget.balance = -99 * (s64)MS;
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_FILL);
	rc_read_judge(c, &rs, 256, 8, RC_READ_FILL, 1280000, true, 41280000, true);
	CHECK_EQ(c->budget.balance, 10000 - 139 * (s64)MS);
	CHECK_EQ(c->budget.red, 4);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	/* unpriced: nothing changes */
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	rc_read_judge(c, &rs, 512, 8, RC_READ_BYPASS, 0, false, 0, true);
	CHECK_EQ(c->budget.balance, 10000 - 139 * (s64)MS);
	CHECK_EQ(c->budget.earned_ns, 10000);
	CHECK_EQ(c->ctr.reads, 3);
	CHECK_EQ(c->ctr.read_misses, 1);
	CHECK_EQ(c->ctr.read_bypassed, 2);
	CHECK_EQ(c->ctr.read_bypassed_budget, 2);
	/* with estimator spk the budget neither gates nor counts */
	c->adapt.estimator = RC_EST_SPK;
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_FILL);
	rc_read_judge(c, &rs, 512, 8, RC_READ_FILL, 1280000, true, 41280000, true);
	CHECK_EQ(c->budget.balance, 10000 - 139 * (s64)MS);
	rc_fill_cancel(c, idx);
	c->adapt.estimator = RC_EST_VDISK;
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->ctr.read_bypassed_budget, 3);
	/* a hit on the filled segment pays it back: fills start again */
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);
	rc_read_judge(c, &rs, 264, 8, RC_READ_HIT, 170 * MS, true, 0, true);
	rc_unpin(c, idx);
	CHECK_EQ(c->budget.balance, 10000 + 31 * (s64)MS + 170 * MS / 128);
	CHECK_EQ(c->budget.red, 0);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_FILL);
	rc_fill_cancel(c, idx);
	/* inactive: the simulated cache runs no budget, nor pays into it */
	rc_adapt_set_active(&c->adapt, false);
	c->budget.balance = -50 * (s64)MS;
	c->budget.red = RC_BUDGET_OVERDRAFT;
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	rc_read_judge(c, &rs, 768, 8, RC_READ_BYPASS, 1280000, true, 41280000, true);
	CHECK_EQ(c->budget.balance, -50 * (s64)MS);
	/* policy always: misses fill whatever the balance */
	/* emptying the cache starts the budget again from 0 */
	c->budget.red = 2;
	CHECK(rc_drop_some(c, 8));
	CHECK_EQ(c->budget.balance, 0);
	CHECK_EQ(c->budget.red, 0);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	c->budget.balance = -1000 * (s64)MS;
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	rc_read_judge(c, &rs, 1024, 8, RC_READ_FILL, 1280000, true, 41280000, true);
	CHECK_EQ(c->budget.balance, -1000 * (s64)MS);
	rc_fill_cancel(c, idx);
	rm(c);
}

/* An adversary's reads: fills that (mostly) never pay, and what they cost. */
struct adversary {
	u64 max_spend, spent, fills, hits;
};

/* One read priced @vd on the bare disk and @cvd as a fill; a fill is served. */
static void adversary_read(struct rc_cache *c, struct adversary *a, u64 sector, u32 sectors,
			   u64 vd, u64 cvd)
{
	u32 idx = RC_NONE;
	enum rc_read_action act = rc_read(c, &rs, sector, sectors, &idx);

	if (act == RC_READ_FILL && cvd - vd > a->max_spend)
		a->max_spend = cvd - vd;
	rc_read_judge(c, &rs, sector, sectors, act, vd, true, act == RC_READ_FILL ? cvd : vd, true);
	if (act == RC_READ_HIT) {
		a->hits++;
		rc_unpin(c, idx);
	}
	if (act == RC_READ_FILL) {
		a->fills++;
		a->spent += cvd - vd;
		CHECK_EQ(rc_fill_done(c, idx, 0, 1u << c->seg_shift, false), RC_FILL_SERVE);
		rc_unpin(c, idx);
	}
}

/*
 * After @reads: what the fills cost beyond their reads never exceeded
 * what the share and the hits earned by more than @slack_ns and
 * RC_BUDGET_OVERDRAFT + 1 of the dearest fill; the budget bypassed every
 * read that neither filled nor hit.
 */
static void adversary_check(struct rc_cache *c, const struct adversary *a, u64 reads,
			    u64 slack_ns)
{
	CHECK_EQ(c->budget.spent_ns, a->spent);
	CHECK(a->spent <= c->budget.earned_ns + slack_ns +
	      (RC_BUDGET_OVERDRAFT + 1) * a->max_spend);
	CHECK_EQ(c->ctr.read_misses, a->fills);
	CHECK_EQ(c->ctr.read_bypassed_budget, reads - a->fills - a->hits);
	CHECK_EQ(c->ctr.read_hits, a->hits);
	CHECK(a->fills > 0 && a->fills < reads / 100);
}

/*
 * The bound, on an adversarial stream: random misses whose fills never
 * pay, with prices drawn anew for each read (a fill up to 1000 times its
 * read).  Whatever the draw, the balance never falls below
 * -(RC_BUDGET_OVERDRAFT + 1) x the dearest fill, so what fills cost beyond
 * their reads never exceeds what the share earned by more than that.
 */
CTEST(budget_bound_holds_on_an_adversarial_random_stream)
{
	struct rc_cache *c = mk(64, 8);
	struct adversary a = { 0 };
	u64 vd;
	u32 i;

	ctest_rng = 0x9e3779b97f4a7c15ull;
	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	c->adapt.estimator = RC_EST_VDISK;
	c->budget.share = RC_BUDGET_SHARE;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;	/* no verdict: the budget alone */
	for (i = 0; i < 200000; i++) {
		/* a whole new segment each time, a fill up to 1000 times its read */
		vd = 1000 + ctest_rand(20 * MS);
		adversary_read(c, &a, (u64)i << 16, 256, vd, vd + ctest_rand(1000 * vd));
		CHECK(c->budget.balance >= -(s64)((RC_BUDGET_OVERDRAFT + 1) * a.max_spend));
	}
	adversary_check(c, &a, 200000, 0);
	CHECK_EQ(a.hits, 0);
	rm(c);
}

/*
 * The same bound when every third miss continues a stream with room in its
 * segment: three reads of 4 KiB going forward from the start of a new
 * segment each time.  A stream's miss gets no credit of its own: it fills
 * only where the one bar lets any miss fill, so the balance never falls
 * below -(RC_BUDGET_OVERDRAFT + 1) x the dearest fill, and what fills cost
 * beyond their reads never exceeds what the share, the hits and the ghosts
 * earned by more than that.
 */
CTEST(budget_bound_holds_when_every_third_miss_continues_a_stream)
{
	struct rc_cache *c = mk(64, 8);
	struct adversary a = { 0 };
	u64 sector, vd;
	u32 i;

	ctest_rng = 0x2545f4914f6cdd1dull;
	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->budget.share = RC_BUDGET_SHARE;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;	/* no verdict: the budget alone */
	for (i = 0; i < 200000; i++) {
		sector = (u64)(i / 3) * 256 + (i % 3) * 8;
		vd = 1000 + ctest_rand(20 * MS);
		adversary_read(c, &a, sector, 8, vd, vd + ctest_rand(10 * vd));
		CHECK(c->budget.balance >= -(s64)((RC_BUDGET_OVERDRAFT + 1) * a.max_spend));
	}
	adversary_check(c, &a, 200000, 0);
	rm(c);
}

/*
 * A miss that goes on with a stream, with room for another read of its
 * size beyond it in its segment, is refused like any other once the
 * overdraft is spent; with some of it left it fills like any other, and
 * at minus the cap neither fills.
 */
CTEST(budget_bar_refuses_a_streams_miss_like_any_other)
{
	struct rc_cache *c = mk(8, 8);
	u32 idx = RC_NONE;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->budget.share = RC_BUDGET_SHARE;
	c->budget.red = RC_BUDGET_OVERDRAFT;
	c->budget.balance = -50 * (s64)MS;
	/* forward: 992 and 1000 give the stream its direction; 1008 goes on
	 * with room up to 1024 (segment 3): refused all the same */
	CHECK_EQ(rc_read(c, &rs, 992, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(rc_read(c, &rs, 1000, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(rc_read(c, &rs, 1008, 8, &idx), RC_READ_BYPASS);
	/* backward: 2032, 2016, then 2000 with room down to 1792: likewise */
	CHECK_EQ(rc_read(c, &rs, 2032, 16, &idx), RC_READ_BYPASS);
	CHECK_EQ(rc_read(c, &rs, 2016, 16, &idx), RC_READ_BYPASS);
	CHECK_EQ(rc_read(c, &rs, 2000, 16, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->ctr.read_misses, 0);
	CHECK_EQ(c->ctr.read_bypassed, 6);
	CHECK_EQ(c->ctr.read_bypassed_budget, 6);
	/* one fill of the overdraft left: the stream's next read fills, and a
	 * read far from any stream would have too */
	c->budget.red = RC_BUDGET_OVERDRAFT - 1;
	CHECK_EQ(rc_read(c, &rs, 1984, 16, &idx), RC_READ_FILL);
	CHECK_EQ(c->entries[idx].seg, 7);
	CHECK_EQ(c->budget.red, RC_BUDGET_OVERDRAFT);	/* it took the last of it */
	rc_fill_cancel(c, idx);
	c->budget.red = RC_BUDGET_OVERDRAFT - 1;
	CHECK_EQ(rc_read(c, &rs, 5 * 256 + 100, 8, &idx), RC_READ_FILL);
	CHECK_EQ(c->entries[idx].seg, 5);
	rc_fill_cancel(c, idx);
	/* at minus the cap, with the whole overdraft: neither */
	c->budget.red = 0;
	c->budget.balance = -(s64)c->budget.cap_ns;
	CHECK_EQ(rc_read(c, &rs, 1968, 16, &idx), RC_READ_BYPASS);
	CHECK_EQ(rc_read(c, &rs, 6 * 256 + 100, 8, &idx), RC_READ_BYPASS);
	/* (a cancelled fill is counted a bypass, not a miss; the decision stays) */
	CHECK_EQ(c->ctr.reads, 10);
	CHECK_EQ(c->ctr.read_misses, 0);
	CHECK_EQ(c->ctr.read_bypassed_nomem, 2);
	CHECK_EQ(c->ctr.read_bypassed_budget, 8);
	CHECK_EQ(c->ctr.read_bypassed, 10);
	rm(c);
}

/*
 * The refused fills' ghosts: a refusal is charged what a fill costs beyond
 * its read on average (extra_ns: the first fill's, then 1/8 of the way to
 * each new one); every re-read of a refused segment (REREAD: refused
 * again or filled) credits its bare price, the first as the later ones;
 * above 0, the ghost balance is earned, as if by hits.  It never falls
 * below minus the cap.
 */
CTEST(budget_ghost_charges_a_refusal_and_credits_a_reread)
{
	struct rc_budget b;
	s64 balance;
	int i;

	rc_budget_init(&b);
	rc_budget_ghost(&b, RC_REFUSED_NEW, 3 * MS);	/* no fill yet: costs 0 */
	CHECK_EQ(b.ghost_ns, 0);
	rc_budget_read(&b, false, true, 3 * MS, 5 * MS);
	CHECK_EQ(b.extra_ns, 2 * MS);
	rc_budget_read(&b, false, true, 3 * MS, 13 * MS);
	CHECK_EQ(b.extra_ns, 2 * MS - 2 * MS / 8 + 10 * MS / 8);
	CHECK_EQ(b.extra_ns, 3 * MS);
	balance = b.balance;
	CHECK_EQ(balance, -12 * (s64)MS + 2 * (s64)(3 * MS / RC_BUDGET_SHARE));

	rc_budget_ghost(&b, RC_REFUSED_NEW, 3 * MS);
	rc_budget_ghost(&b, RC_REFUSED_NEW, 3 * MS);
	CHECK_EQ(b.ghost_ns, -6 * (s64)MS);
	rc_budget_ghost(&b, RC_REFUSED_REREAD, 4 * MS);
	rc_budget_ghost(&b, RC_REFUSED_NONE, 4 * MS);
	CHECK_EQ(b.ghost_ns, -2 * (s64)MS);
	CHECK_EQ(b.balance, balance);
	CHECK_EQ(b.ghost_earned_ns, 0);
	/* above 0: the refused fills would have paid; the balance earns it */
	rc_budget_ghost(&b, RC_REFUSED_REREAD, 5 * MS);
	CHECK_EQ(b.ghost_ns, 0);
	CHECK_EQ(b.ghost_earned_ns, 3 * MS);
	CHECK_EQ(b.balance, balance + 3 * (s64)MS);
	CHECK_EQ(b.earned_ns, 2 * (3 * MS / RC_BUDGET_SHARE) + 3 * MS);

	for (i = 0; i < 40; i++)	/* 120 ms of refusals: floored at the cap */
		rc_budget_ghost(&b, RC_REFUSED_NEW, 3 * MS);
	CHECK_EQ(b.ghost_ns, -(s64)b.cap_ns);
	rc_budget_reset_stats(&b);
	CHECK_EQ(b.ghost_earned_ns, 0);
	CHECK_EQ(b.ghost_ns, -(s64)b.cap_ns);
	rc_budget_cold(&b);
	CHECK_EQ(b.ghost_ns, 0);
	CHECK_EQ(b.extra_ns, 3 * MS);
	b.share = 0;			/* no budget: no ghost */
	rc_budget_ghost(&b, RC_REFUSED_NEW, 3 * MS);
	CHECK_EQ(b.ghost_ns, 0);
}

/* Refuse the next miss: the budget in the red, its overdraft spent. */
static void budget_red(struct rc_cache *c)
{
	c->budget.balance = -1;
	c->budget.red = RC_BUDGET_OVERDRAFT;
}

static enum rc_refused refused_read(struct rc_cache *c, u64 seg, enum rc_read_action want)
{
	u32 idx = RC_NONE;

	CHECK_EQ(read_seg(c, seg, &idx), want);
	if (want == RC_READ_FILL) {
		CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
		rc_unpin(c, idx);
	}
	return rs.refused_by;
}

/*
 * A segment the budget refused is remembered while a fill of it would
 * still be cached: fewer than nr_entries segments asked for (demand fills
 * and refusals) since it was refused or read.  Each re-read, refused
 * again or filled, is a REREAD; a fill of it is its last; emptying the
 * cache forgets them all.
 */
CTEST(budget_remembers_refused_segments_while_a_fill_would_be_cached)
{
	struct rc_cache *c = mk(4, 8);
	u64 s;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	CHECK(rc_budgeted(c));
	budget_red(c);
	CHECK_EQ(refused_read(c, 10, RC_READ_BYPASS), RC_REFUSED_NEW);
	CHECK_EQ(refused_read(c, 10, RC_READ_BYPASS), RC_REFUSED_REREAD);
	for (s = 11; s <= 13; s++)
		CHECK_EQ(refused_read(c, s, RC_READ_BYPASS), RC_REFUSED_NEW);
	CHECK_EQ(refused_read(c, 10, RC_READ_BYPASS), RC_REFUSED_REREAD);	/* 3 since */
	for (s = 14; s <= 17; s++)
		CHECK_EQ(refused_read(c, s, RC_READ_BYPASS), RC_REFUSED_NEW);
	CHECK_EQ(refused_read(c, 10, RC_READ_BYPASS), RC_REFUSED_NEW);	/* 4: gone */
	CHECK_EQ(c->ctr.read_bypassed_budget, 11);

	/* a fill of a refused segment is its re-read, and counts on the clock */
	c->budget.balance = 0;
	CHECK_EQ(refused_read(c, 17, RC_READ_FILL), RC_REFUSED_REREAD);	/* 2 since */
	CHECK_EQ(refused_read(c, 17, RC_READ_HIT), RC_REFUSED_NONE);
	CHECK_EQ(refused_read(c, 16, RC_READ_FILL), RC_REFUSED_NONE);	/* 4 since */
	budget_red(c);
	CHECK_EQ(refused_read(c, 10, RC_READ_BYPASS), RC_REFUSED_REREAD);	/* 3 since */
	CHECK_EQ(refused_read(c, 17, RC_READ_HIT), RC_REFUSED_NONE);	/* filled: forgotten */

	/* a joining piece is not a refused fill */
	CHECK(rc_read_join(c, &rs, 40 * 256, 256));
	CHECK_EQ(rs.refused_by, RC_REFUSED_NONE);
	CHECK_EQ(refused_read(c, 40, RC_READ_BYPASS), RC_REFUSED_NEW);

	/* emptying the cache forgets the refusals */
	CHECK(rc_drop_some(c, 8));
	budget_red(c);
	CHECK_EQ(refused_read(c, 40, RC_READ_BYPASS), RC_REFUSED_NEW);
	rm(c);
}

/*
 * A re-read of a segment the budget refused lately credits its bare price
 * to the ghosts whether it is refused again or fills, and the one bar
 * decides it as it does any miss: refused while it admits nothing, filled
 * once the ghosts' credit brings the balance back to 0.
 */
CTEST(budget_rereads_of_refused_segments_credit_the_ghosts_and_pass_the_one_bar)
{
	const s64 share3 = 3 * MS / RC_BUDGET_SHARE;	/* 23437: a 3 ms read's share */
	struct rc_cache *c = mk(64, 8);
	struct adversary a = { 0 };

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	adversary_read(c, &a, 1 * 256, 8, 3 * MS, 5 * MS);	/* a fill: 2 ms beyond */
	CHECK_EQ(c->budget.extra_ns, 2 * MS);
	budget_red(c);
	c->budget.balance = -1 * (s64)MS;
	adversary_read(c, &a, 10 * 256, 8, 3 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_NEW);
	CHECK_EQ(c->budget.ghost_ns, -2 * (s64)MS);
	CHECK_EQ(c->budget.balance, -1 * (s64)MS + share3);
	/* refused again (the overdraft is spent): +3 ms to the ghosts, 1 ms earned */
	adversary_read(c, &a, 10 * 256 + 8, 8, 3 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_REREAD);
	CHECK_EQ(c->budget.ghost_ns, 0);
	CHECK_EQ(c->budget.ghost_earned_ns, 1 * MS);
	CHECK_EQ(c->budget.balance, 2 * share3);
	CHECK_EQ(c->budget.red, 0);
	CHECK_EQ(a.fills, 1);
	/* the bar admits now: the third read fills, and credits its 1 ms too */
	adversary_read(c, &a, 10 * 256 + 16, 8, 1 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_REREAD);
	CHECK_EQ(a.fills, 2);
	CHECK_EQ(c->budget.ghost_ns, 0);
	CHECK_EQ(c->budget.ghost_earned_ns, 2 * MS);
	CHECK_EQ(c->budget.balance, 2 * share3 - 4 * (s64)MS + (s64)(MS / RC_BUDGET_SHARE) +
				    1 * (s64)MS);
	CHECK_EQ(c->budget.extra_ns, 2 * MS - 2 * MS / 8 + 4 * MS / 8);
	/* filled: forgotten */
	adversary_read(c, &a, 10 * 256 + 24, 8, 1 * MS, 3 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_NONE);
	CHECK_EQ(a.hits, 1);

	/* the bar shut again: a re-read is refused as a new miss is, and credits */
	budget_red(c);
	c->budget.balance = -10 * (s64)MS;
	adversary_read(c, &a, 20 * 256, 8, 3 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_NEW);
	CHECK_EQ(c->budget.ghost_ns, -2250000);
	adversary_read(c, &a, 20 * 256 + 8, 8, 3 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_REREAD);
	CHECK_EQ(c->budget.ghost_ns, 0);
	CHECK_EQ(c->budget.ghost_earned_ns, 2 * MS + 750000);
	CHECK_EQ(c->budget.balance, -10 * (s64)MS + 2 * share3 + 750000);
	CHECK_EQ(c->budget.red, RC_BUDGET_OVERDRAFT);
	adversary_read(c, &a, 30 * 256, 8, 3 * MS, 5 * MS);
	CHECK_EQ(rs.refused_by, RC_REFUSED_NEW);
	CHECK_EQ(a.fills, 2);
	CHECK_EQ(c->ctr.reads, 8);
	CHECK_EQ(c->ctr.read_hits, 1);
	CHECK_EQ(c->ctr.read_misses, 2);
	CHECK_EQ(c->ctr.read_bypassed, 5);
	CHECK_EQ(c->ctr.read_bypassed_budget, 5);
	rm(c);
}

/*
 * A refused segment read again is evidence that its fill would have paid:
 * the ghost's credit takes the balance out of the red, and the next miss
 * fills, where without it the budget would still refuse.
 */
CTEST(budget_ghost_credit_lets_the_next_miss_fill)
{
	struct rc_cache *c = mk(64, 8);
	struct adversary a = { 0 };
	s64 bal;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	adversary_read(c, &a, 1 * 256, 8, 5 * MS, 7 * MS);	/* a fill: 2 ms beyond */
	CHECK_EQ(a.fills, 1);
	CHECK_EQ(c->budget.extra_ns, 2 * MS);
	c->budget.red = RC_BUDGET_OVERDRAFT;
	bal = c->budget.balance;
	CHECK(bal < 0);
	adversary_read(c, &a, 10 * 256, 8, 5 * MS, 7 * MS);	/* refused */
	CHECK_EQ(rs.refused_by, RC_REFUSED_NEW);
	CHECK_EQ(c->budget.ghost_ns, -2 * (s64)MS);
	bal += (s64)(5 * MS / RC_BUDGET_SHARE);
	CHECK_EQ(c->budget.balance, bal);
	adversary_read(c, &a, 10 * 256 + 8, 8, 5 * MS, 7 * MS);	/* refused again */
	CHECK_EQ(rs.refused_by, RC_REFUSED_REREAD);
	CHECK_EQ(c->budget.ghost_ns, 0);
	CHECK_EQ(c->budget.ghost_earned_ns, 3 * MS);
	bal += (s64)(5 * MS / RC_BUDGET_SHARE) + 3 * (s64)MS;
	CHECK_EQ(c->budget.balance, bal);
	CHECK(bal >= 0);
	adversary_read(c, &a, 11 * 256, 8, 5 * MS, 7 * MS);	/* now it fills */
	CHECK_EQ(a.fills, 2);
	CHECK_EQ(c->ctr.read_bypassed_budget, 2);
	rm(c);
}

/*
 * Random 4 KiB reads over 1024 segments through 64 (a re-read within the
 * cache's reach 1 time in 16), a fill 2.2 ms beyond a 5 ms read: a
 * refused fill would pay less than it costs, the ghosts sink to minus the
 * cap and earn nothing; the fills made are paid by their own hits.
 */
CTEST(budget_ghosts_earn_nothing_on_random_reads)
{
	struct rc_cache *c = mk(64, 8);
	struct adversary a = { 0 };
	u32 i;

	ctest_rng = 0x853c49e6748fea9bull;
	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	for (i = 0; i < 100000; i++)
		adversary_read(c, &a, ctest_rand(1024) * 256 + ctest_rand(32) * 8, 8,
			       5 * MS, 7200000);
	/* at the end a few re-reads lift it from minus the cap, never above 0 */
	CHECK(c->budget.ghost_ns < -(s64)c->budget.cap_ns / 2);
	CHECK_EQ(c->budget.ghost_earned_ns, 0);
	/* the budget's bound, without the ghosts' help */
	CHECK_EQ(c->budget.spent_ns, a.spent);
	CHECK(a.spent <= c->budget.earned_ns + (RC_BUDGET_OVERDRAFT + 1) * a.max_spend);
	CHECK_EQ(c->ctr.read_bypassed_budget, 100000 - a.fills - a.hits);
	rm(c);
}

/* --- streams ----------------------------------------------------------- */

/*
 * A read continues a stream after its last read (forward) or before it
 * (backward), with a gap up to twice its length; it is streamed once the
 * stream has a direction and it goes on that way.
 */
CTEST(stream_detection_forward_backward_and_gaps)
{
	struct rc_streams t;

	rc_streams_init(&t);
	CHECK_EQ(rc_stream_read(&t, 1000, 8), 0);
	CHECK_EQ(rc_stream_read(&t, 1008, 8), 0);	/* adjacent: now forward */
	CHECK_EQ(rc_stream_read(&t, 1016, 8), 1);
	CHECK_EQ(rc_stream_read(&t, 1040, 8), 1);	/* a gap of 16: 4 KiB, skip 8 */
	CHECK_EQ(rc_stream_read(&t, 1065, 8), 0);	/* a gap of 17 > 16: a new one */
	CHECK_EQ(rc_stream_read(&t, 5000, 16), 0);
	CHECK_EQ(rc_stream_read(&t, 4984, 16), 0);	/* ends where it started */
	CHECK_EQ(rc_stream_read(&t, 4952, 16), -1);	/* a gap of 16 */
	CHECK_EQ(rc_stream_read(&t, 4952, 16), 0);	/* a re-read: a new one */
	/* both go on */
	CHECK_EQ(rc_stream_read(&t, 1048, 8), 1);
	CHECK_EQ(rc_stream_read(&t, 4936, 16), -1);
	/* a turn: forward from the backward stream's last read, with a gap */
	CHECK_EQ(rc_stream_read(&t, 4954, 16), 0);
	CHECK_EQ(rc_stream_read(&t, 4970, 16), 1);
}

/*
 * A stream's run: the sectors it read from its first read on (not the
 * gaps it skipped); the joined upper piece of a split read counts; a turn
 * starts it again from the read before the turn.
 */
CTEST(stream_run_counts_what_the_stream_read)
{
	struct rc_streams t;

	rc_streams_init(&t);
	CHECK_EQ(rc_stream_read(&t, 1000, 8), 0);
	CHECK_EQ(t.run, 8);
	CHECK_EQ(rc_stream_read(&t, 1008, 8), 0);
	CHECK_EQ(t.run, 16);
	CHECK_EQ(rc_stream_read(&t, 1032, 8), 1);	/* after a gap of 16 */
	CHECK_EQ(t.run, 24);
	CHECK_EQ(rc_stream_read(&t, 9000, 32), 0);	/* another stream */
	CHECK_EQ(t.run, 32);
	CHECK_EQ(rc_stream_read(&t, 1040, 8), 1);	/* the first goes on */
	CHECK_EQ(t.run, 32);
	/* backward, a split read's lower piece then its upper one */
	CHECK_EQ(rc_stream_read(&t, 8968, 32), 0);
	CHECK_EQ(t.run, 64);
	CHECK_EQ(rc_stream_read(&t, 8936, 16), -1);
	CHECK_EQ(rc_stream_read(&t, 8952, 16), 0);
	CHECK_EQ(t.run, 96);
	CHECK_EQ(rc_stream_read(&t, 8904, 32), -1);
	CHECK_EQ(t.run, 128);
	/* a turn: forward from [8904, 8936) with a gap (no gap: a join), then on */
	CHECK_EQ(rc_stream_read(&t, 8938, 8), 0);
	CHECK_EQ(t.run, 40);
	CHECK_EQ(rc_stream_read(&t, 8946, 8), 1);
	CHECK_EQ(t.run, 48);
}

/*
 * dm splits a read at a segment boundary, lower piece first: a backward
 * stream of 96-sector reads crossing 10240, then 9984, stays backward, and
 * its next read goes on with it.
 */
CTEST(stream_detection_backward_read_split_at_a_segment_boundary)
{
	struct rc_streams t;

	rc_streams_init(&t);
	CHECK_EQ(rc_stream_read(&t, 10416, 96), 0);
	CHECK_EQ(rc_stream_read(&t, 10320, 96), 0);
	/* [10224, 10320) as [10224, 10240) and [10240, 10320): the lower
	 * piece is 80 sectors from the stream, more than twice its 16, and
	 * starts a new one; the upper piece goes on with the stream */
	CHECK_EQ(rc_stream_read(&t, 10224, 16), 0);
	CHECK_EQ(rc_stream_read(&t, 10240, 80), -1);
	CHECK_EQ(rc_stream_read(&t, 10128, 96), -1);
	CHECK_EQ(rc_stream_read(&t, 10032, 96), -1);
	/* [9936, 10032) as [9936, 9984) and [9984, 10032): the lower piece
	 * goes on with the stream, the upper one joins it */
	CHECK_EQ(rc_stream_read(&t, 9936, 48), -1);
	CHECK_EQ(rc_stream_read(&t, 9984, 48), 0);
	CHECK_EQ(rc_stream_read(&t, 9840, 96), -1);
}

/*
 * Interleaved streams: RC_STREAMS (32) forward and backward streams, one
 * read each in turn, are all followed (streamed from their third read); one more per turn pushes out the
 * stream read least recently, so RC_STREAMS + 1 in turn are never followed.
 */
CTEST(stream_detection_interleaved_streams)
{
	struct rc_streams t;
	u32 turn, k, followed = 0;

	rc_streams_init(&t);
	for (turn = 0; turn < 10; turn++)
		for (k = 0; k < RC_STREAMS; k++) {
			int dir = k % 2 ? -1 : 1;
			u64 base = (u64)(k + 1) << 30;
			u64 sector = dir > 0 ? base + turn * 8 : base - (turn + 1) * 8;

			CHECK_EQ(rc_stream_read(&t, sector, 8), turn >= 2 ? dir : 0);
		}
	rc_streams_init(&t);
	for (turn = 0; turn < 10; turn++)
		for (k = 0; k <= RC_STREAMS; k++)
			followed += rc_stream_read(&t, ((u64)(k + 1) << 30) + turn * 8, 8) != 0;
	CHECK_EQ(followed, 0);
}

/*
 * The streams going on: those with a direction read in the last
 * RC_STREAMS reads.  A stream with no direction yet, or one whose last
 * read is RC_STREAMS reads old, is not.
 */
CTEST(streams_live_counts_the_streams_read_lately)
{
	struct rc_streams t;
	u32 k;

	rc_streams_init(&t);
	CHECK_EQ(rc_streams_live(&t), 0);
	rc_stream_read(&t, 1000, 8);
	CHECK_EQ(rc_streams_live(&t), 0);		/* no direction yet */
	rc_stream_read(&t, 1008, 8);
	CHECK_EQ(rc_streams_live(&t), 1);
	rc_stream_read(&t, 90000, 8);
	rc_stream_read(&t, 89992, 8);			/* backward */
	CHECK_EQ(rc_streams_live(&t), 2);
	/*
	 * Random reads: the forward stream's last read (the 2nd) is 32 reads
	 * old at the 34th (the 35th then takes its place in the full table),
	 * the backward one's (the 4th) at the 36th.
	 */
	for (k = 5; k <= 33; k++)
		rc_stream_read(&t, (u64)k << 30, 8);
	CHECK_EQ(rc_streams_live(&t), 2);
	rc_stream_read(&t, 34ull << 30, 8);
	CHECK_EQ(rc_streams_live(&t), 1);
	rc_stream_read(&t, 35ull << 30, 8);
	CHECK_EQ(rc_streams_live(&t), 1);
	rc_stream_read(&t, 36ull << 30, 8);
	CHECK_EQ(rc_streams_live(&t), 0);
}

/*
 * Random 4 KiB reads on the synthetic disk: a fill costs 0.992 ms more
 * than its read (124 KiB more transfer) and never serves a hit; each read
 * earns 1/128 of its 12.18 ms.  The budget lets about one miss in ten
 * fill, and the cache stays on, within the margin of the bare disk.
 */
CTEST(budget_random_reads_fill_little)
{
	struct stream s;
	u32 i;

	ctest_rng = 0x2545f4914f6cdd1dull;
	stream_init(&s, RC_EST_VDISK);
	s.c->budget.share = RC_BUDGET_SHARE;
	for (i = 0; i < 5000; i++)
		random_read(&s);
	CHECK(rc_active(s.c));
	CHECK_EQ(s.c->adapt.switches, 0);
	CHECK_EQ(s.hits, 0);
	CHECK_EQ(s.c->ctr.read_bypassed_budget, s.bypasses);
	CHECK_EQ(s.fills + s.bypasses, 5000);
	/* the share of 5000 reads pays 5000 x 12.182 / 128 / 0.992 = 479.6 fills */
	CHECK(s.fills >= 475 && s.fills <= 485);
	CHECK(s.c->budget.spent_ns <= s.c->budget.earned_ns +
	      (RC_BUDGET_OVERDRAFT + 1) * (248 * XFER_NS));
	rm(s.c);
}

/* --- names ----------------------------------------------------------------- */

/* Estimator, class and policy names round-trip; parsing ignores case only. */
CTEST(names_and_parsing)
{
	static const char * const classes[RC_CL_NR] = {
		"cache_read", "direct_cache_read", "source_read",
		"cache_write", "direct_cache_write", "source_write",
	};
	int i;

	CHECK_EQ(rc_estimator_parse("spk"), RC_EST_SPK);
	CHECK_EQ(rc_estimator_parse("vdisk"), RC_EST_VDISK);
	CHECK_EQ(rc_estimator_parse("SPK"), RC_EST_SPK);
	CHECK_EQ(rc_estimator_parse("VDisk"), RC_EST_VDISK);
	CHECK_EQ(rc_estimator_parse(""), -1);
	CHECK_EQ(rc_estimator_parse("vdis"), -1);
	CHECK_EQ(rc_estimator_parse("vdisks"), -1);
	CHECK_EQ(rc_estimator_parse("sp k"), -1);
	CHECK_STREQ(rc_estimator_name(RC_EST_SPK), "spk");
	CHECK_STREQ(rc_estimator_name(RC_EST_VDISK), "vdisk");
	CHECK_STREQ(rc_estimator_name(RC_EST_NR), "?");
	for (i = 0; i < RC_CL_NR; i++)
		CHECK_STREQ(rc_class_name(i), classes[i]);
	CHECK_STREQ(rc_class_name(RC_CL_NR), "?");

	CHECK_EQ(rc_policy_parse("adaptive"), RC_POLICY_ADAPTIVE);
	CHECK_EQ(rc_policy_parse("caware"), RC_POLICY_CAWARE);
	CHECK_EQ(rc_policy_parse("adaptive+caware"), RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(rc_policy_parse("ADAPTIVE"), RC_POLICY_ADAPTIVE);
	CHECK_EQ(rc_policy_parse("CAware"), RC_POLICY_CAWARE);
	CHECK_EQ(rc_policy_parse("Adaptive+CAWARE"), RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(rc_policy_parse("adaptive+"), -1);
	CHECK_EQ(rc_policy_parse("adaptive caware"), -1);
	CHECK_EQ(rc_policy_parse("adaptive+caware+"), -1);
	CHECK_EQ(rc_policy_parse("c-aware"), -1);
	CHECK_EQ(rc_policy_parse("adaptiv"), -1);
	CHECK_STREQ(rc_policy_name(RC_POLICY_ADAPTIVE), "adaptive");
	CHECK_STREQ(rc_policy_name(RC_POLICY_CAWARE), "caware");
	CHECK_STREQ(rc_policy_name(RC_POLICY_ADAPTIVE_CAWARE), "adaptive+caware");
	for (i = 0; i < RC_POLICY_NR; i++)
		CHECK_EQ(rc_policy_parse(rc_policy_name(i)), i);
	CHECK(rc_policy_caware(RC_POLICY_CAWARE));
	CHECK(rc_policy_caware(RC_POLICY_ADAPTIVE_CAWARE));
	CHECK(!rc_policy_caware(RC_POLICY_ADAPTIVE));
	CHECK(!rc_policy_caware(RC_POLICY_ALWAYS));
	CHECK(rc_streq("", ""));
	CHECK(!rc_streq("a", ""));
	CHECK(!rc_streq("", "a"));
	CHECK(!rc_streq("@", "`"));	/* not letters: no case to fold */
	CHECK(rc_streq("Z[", "z["));
}

/* Fixed policies set the state; adaptive ones keep it and let it switch. */
CTEST(set_policy_state)
{
	struct rc_cache *c = mk(4, 8);

	CHECK(rc_active(c));
	CHECK(!c->adapt.switching);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK(!rc_active(c));
	CHECK(!c->adapt.switching);
	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	CHECK(!rc_active(c));
	CHECK(c->adapt.switching);
	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(rc_active(c));
	CHECK(!c->adapt.switching);
	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK(rc_active(c));
	CHECK(c->adapt.switching);
	CHECK_EQ(c->policy, RC_POLICY_ADAPTIVE_CAWARE);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK(rc_active(c));
	CHECK(!c->adapt.switching);
	rm(c);
}

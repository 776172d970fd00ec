// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of HDC's miss counter (dm-redcap/rc-hot.c): the memory
 * and the mode, exact counters, and the Space-Saving sketch against an
 * exact count on adversarial streams, with its heap and hash checked.
 */
#include <math.h>

#include "ctest.h"
#include "rc-hot.h"

#define M		256		/* the sketch's slots in the stream tests */
#define NR		100000		/* regions in the stream tests */

struct hot {
	struct rc_hot h;
	void *mem;
};

static struct hot *hot_new(u64 nr_regions, u32 slots)
{
	struct hot *t = calloc(1, sizeof(*t));
	size_t bytes = rc_hot_mem_size(nr_regions, slots);

	CHECK(t);
	t->mem = calloc(bytes ? bytes : 1, 1);
	CHECK(t->mem);
	rc_hot_init(&t->h, t->mem, nr_regions, slots);
	return t;
}

static void hot_free(struct hot *t)
{
	free(t->mem);
	free(t);
}

/* A whole aging pass in chunks of @budget; returns the number of calls. */
static unsigned int age(struct rc_hot *h, u64 budget)
{
	u64 pos = 0, next;
	unsigned int calls = 0;

	while (pos != rc_hot_age_end(h)) {
		next = rc_hot_age_some(h, pos, budget);
		calls++;
		CHECK(calls < 10000000);
		pos = next;
	}
	return calls;
}

static void misses(struct rc_hot *h, u64 region, unsigned int n)
{
	while (n--)
		rc_hot_miss(h, region);
}

/* --- the invariant checker ---------------------------------------------------- */

/*
 * Every invariant of the structure; returns the longest probe (buckets
 * from a region's home to its own, 0 when at home).
 */
static u32 check_invariants(const struct rc_hot *h)
{
	u32 nbuckets, mask, p, s, b, home, probe, longest = 0, filled = 0;
	u64 sum = 0, r;

	if (h->exact) {
		for (r = 0; r < h->nr_regions; r++)
			sum += h->cnt[r];
		CHECK_EQ(sum, h->total);
		return 0;
	}
	CHECK(h->slots >= 1 && h->slots <= RC_HOT_SLOTS_MAX);
	CHECK(h->used <= h->slots);
	CHECK((1ull << h->table_bits) >= 2ull * h->slots);
	CHECK((1ull << h->table_bits) < 4ull * h->slots || h->table_bits == 1);
	nbuckets = 1u << h->table_bits;
	mask = nbuckets - 1;

	/* the heap: a permutation of the held slots, least count at the top */
	for (p = 0; p < h->used; p++) {
		s = h->heap[p];
		CHECK(s < h->used);
		CHECK_EQ(h->hpos[s], p);
		if (p)
			CHECK(h->slot[h->heap[(p - 1) / 2]].count <= h->slot[s].count);
	}
	/* the slots: held ones counted, the others blank */
	for (s = 0; s < h->slots; s++) {
		const struct rc_hot_entry *e = &h->slot[s];

		if (s >= h->used) {
			CHECK(!e->region && !e->count && !e->err);
			continue;
		}
		CHECK(e->count >= 1);
		CHECK(e->err <= e->count);
		CHECK(e->region < h->nr_regions);
		sum += e->count;
		/* found by a probe from its home, and first among its region's */
		home = rc_hot_bucket(e->region, h->table_bits);
		for (b = home, probe = 0;; b = (b + 1) & mask, probe++) {
			CHECK(probe < nbuckets);
			CHECK(h->table[b]);	/* no hole before it */
			if (h->slot[h->table[b] - 1].region == e->region)
				break;
		}
		CHECK_EQ(h->table[b], s + 1);
		if (probe > longest)
			longest = probe;
	}
	CHECK_EQ(sum, h->total);
	/* the hash: exactly the held slots, each once (found once above) */
	for (b = 0; b < nbuckets; b++) {
		if (!h->table[b])
			continue;
		CHECK(h->table[b] <= h->used);
		filled++;
	}
	CHECK_EQ(filled, h->used);
	return longest;
}

/* --- the exact truth and the guarantees -------------------------------------- */

/* The sketch's least count when full, else 0: what a region not held may reach. */
static u32 least(const struct rc_hot *h)
{
	return h->used == h->slots ? h->slot[h->heap[0]].count : 0;
}

/*
 * The Space-Saving guarantees for every region against @truth (true
 * counts, halved as counters are), and that the regions of true count
 * over total / slots are all held and all reported by rc_hot_top() among
 * those of count over total / slots.  Returns the number of such heavy
 * hitters.
 */
static u32 check_guarantees(const struct rc_hot *h, const u32 *truth)
{
	static struct rc_hot_entry out[RC_HOT_SLOTS_MAX / 1024];
	u64 r, n = rc_hot_total(h);
	u32 c, err, heavy = 0, cand = 0, k, i, s;

	CHECK(!h->exact);
	CHECK(h->slots <= RC_HOT_SLOTS_MAX / 1024);
	for (s = 0; s < h->used; s++)
		if ((u64)h->slot[s].count * h->slots > n)
			cand++;
	for (r = 0; r < h->nr_regions; r++) {
		c = rc_hot_count(h, r, &err);
		if (c) {
			CHECK(c - err <= truth[r]);
			CHECK(truth[r] <= c);
		} else {
			CHECK_EQ(err, 0);
			CHECK(truth[r] <= least(h));
		}
		if ((u64)truth[r] * h->slots > n) {
			heavy++;
			CHECK(c);
		}
	}
	k = rc_hot_top(h, cand, out);
	CHECK_EQ(k, cand);
	for (r = 0; r < h->nr_regions; r++) {
		if ((u64)truth[r] * h->slots <= n)
			continue;
		for (i = 0; i < k && out[i].region != r; i++)
			;
		CHECK(i < k);
	}
	return heavy;
}

/* One miss of @r in the sketch and in the truth. */
static void both(struct rc_hot *h, u32 *truth, u64 r)
{
	rc_hot_miss(h, r);
	truth[r]++;
}

/* The end of a period for the sketch and for the truth. */
static void age_both(struct rc_hot *h, u32 *truth, u64 budget)
{
	u64 r;

	age(h, budget);
	for (r = 0; r < h->nr_regions; r++)
		truth[r] /= 2;
}

static u32 *truth_new(void)
{
	u32 *t = calloc(NR, sizeof(*t));

	CHECK(t);
	return t;
}

/* --- memory and mode ---------------------------------------------------------- */

CTEST(mem_size_exact_up_to_half_the_sketch_bytes)
{
	/* 256 slots: 256 * 24 + 4 * 512 buckets = 8192 bytes, 4096 regions */
	CHECK_EQ(rc_hot_mem_size(4096, 256), 8192);
	CHECK_EQ(rc_hot_mem_size(4095, 256), 8190);
	CHECK_EQ(rc_hot_mem_size(4097, 256), 8192);
	CHECK_EQ(rc_hot_mem_size(100000, 256), 8192);
	/* 100 slots: 2400 + 4 * 256 buckets = 3424 bytes, 1712 regions */
	CHECK_EQ(rc_hot_mem_size(1712, 100), 3424);
	CHECK_EQ(rc_hot_mem_size(1713, 100), 3424);
	/* 257 slots: 6168 + 4 * 1024 = 10264 bytes */
	CHECK_EQ(rc_hot_mem_size(1ull << 40, 257), 10264);
	CHECK_EQ(rc_hot_mem_size(0, 256), 0);
}

CTEST(mode_follows_the_boundary)
{
	static const struct { u64 nr; u32 slots; bool exact; } cases[] = {
		{ 4096, 256, true }, { 4097, 256, false }, { 1712, 100, true },
		{ 1713, 100, false }, { 0, 256, true }, { 1, 1, true },
		{ 16, 1, true }, { 17, 1, false },
	};
	unsigned int i;
	struct hot *t;
	u64 end;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = hot_new(cases[i].nr, cases[i].slots);
		CHECK_EQ(rc_hot_exact(&t->h), cases[i].exact);
		end = cases[i].slots;
		if (cases[i].exact)
			end = cases[i].nr;
		CHECK_EQ(rc_hot_age_end(&t->h), end);
		check_invariants(&t->h);
		hot_free(t);
	}
}

CTEST(slots_clamped_to_1_and_the_max)
{
	struct hot *t;

	/* 0 slots count as 1: 24 + 4 * 2 = 32 bytes, exact up to 16 regions */
	CHECK_EQ(rc_hot_mem_size(1000, 0), 32);
	CHECK_EQ(rc_hot_mem_size(16, 0), 32);
	CHECK_EQ(rc_hot_mem_size(~0ull, 0xffffffffu), 32ull << 24);
	CHECK_EQ(rc_hot_mem_size(~0ull, RC_HOT_SLOTS_MAX), 32ull << 24);
	t = hot_new(1000, 0);
	CHECK(!rc_hot_exact(&t->h));
	CHECK_EQ(t->h.slots, 1);
	CHECK_EQ(rc_hot_age_end(&t->h), 1);
	hot_free(t);
}

/* --- exact counters ----------------------------------------------------------- */

CTEST(exact_counts_each_miss_and_ignores_regions_past_the_end)
{
	struct hot *t = hot_new(1000, 256);
	u32 err = 99;

	CHECK(rc_hot_exact(&t->h));
	misses(&t->h, 0, 3);
	misses(&t->h, 999, 5);
	misses(&t->h, 1000, 7);
	misses(&t->h, ~0ull, 7);
	CHECK_EQ(rc_hot_count(&t->h, 0, &err), 3);
	CHECK_EQ(err, 0);
	CHECK_EQ(rc_hot_count(&t->h, 999, NULL), 5);
	CHECK_EQ(rc_hot_count(&t->h, 500, &err), 0);
	err = 99;
	CHECK_EQ(rc_hot_count(&t->h, 1000, &err), 0);
	CHECK_EQ(err, 0);
	CHECK_EQ(rc_hot_total(&t->h), 8);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(exact_saturates_at_65535)
{
	struct hot *t = hot_new(10, 256);

	misses(&t->h, 3, 65534);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), 65534);
	misses(&t->h, 3, 1);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), RC_HOT_EXACT_MAX);
	misses(&t->h, 3, 1000);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), 65535);
	CHECK_EQ(rc_hot_total(&t->h), 65535);
	check_invariants(&t->h);
	age(&t->h, 100);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), 32767);
	misses(&t->h, 3, 1);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), 32768);
	hot_free(t);
}

CTEST(exact_aging_halves_rounding_down_in_chunks)
{
	static const u32 want[10] = { 0, 1, 1, 1, 2, 2, 3, 3, 4, 5 };
	struct hot *t = hot_new(10, 256);
	u64 r;

	for (r = 0; r < 10; r++)
		misses(&t->h, r, (unsigned int)r);
	CHECK_EQ(rc_hot_total(&t->h), 45);
	CHECK_EQ(rc_hot_age_some(&t->h, 0, 3), 3);
	CHECK_EQ(rc_hot_count(&t->h, 2, NULL), 1);
	CHECK_EQ(rc_hot_count(&t->h, 3, NULL), 3);	/* not reached yet */
	/* a miss behind the pass counts in the new period, ahead in the old */
	rc_hot_miss(&t->h, 1);
	rc_hot_miss(&t->h, 9);
	CHECK_EQ(rc_hot_age_some(&t->h, 3, 3), 6);
	CHECK_EQ(rc_hot_age_some(&t->h, 6, 100), 10);
	CHECK_EQ(rc_hot_age_some(&t->h, 10, 100), 10);
	CHECK_EQ(rc_hot_age_end(&t->h), 10);
	for (r = 0; r < 10; r++)
		CHECK_EQ(rc_hot_count(&t->h, r, NULL), want[r]);
	CHECK_EQ(rc_hot_total(&t->h), 22);
	check_invariants(&t->h);
	CHECK_EQ(age(&t->h, 1), 10);
	CHECK_EQ(rc_hot_total(&t->h), 8);
	hot_free(t);
}

CTEST(exact_top_by_count_ties_lower_region_first)
{
	struct hot *t = hot_new(100, 256);
	struct rc_hot_entry out[8];
	static const struct { u64 region; u32 count; } want[] = {
		{ 50, 9 }, { 7, 4 }, { 20, 4 }, { 99, 4 }, { 3, 2 }, { 0, 1 },
	};
	unsigned int i;

	misses(&t->h, 99, 4);
	misses(&t->h, 3, 2);
	misses(&t->h, 20, 4);
	misses(&t->h, 50, 9);
	misses(&t->h, 0, 1);
	misses(&t->h, 7, 4);
	memset(out, 0xff, sizeof(out));
	CHECK_EQ(rc_hot_top(&t->h, 8, out), 6);	/* zero counts are not reported */
	for (i = 0; i < 6; i++) {
		CHECK_EQ(out[i].region, want[i].region);
		CHECK_EQ(out[i].count, want[i].count);
		CHECK_EQ(out[i].err, 0);
	}
	CHECK_EQ(out[6].region, ~0ull);		/* untouched past the result */
	CHECK_EQ(rc_hot_top(&t->h, 3, out), 3);
	CHECK_EQ(out[0].region, 50);
	CHECK_EQ(out[1].region, 7);
	CHECK_EQ(out[2].region, 20);
	CHECK_EQ(rc_hot_top(&t->h, 0, out), 0);
	hot_free(t);
}

/* rc_hot_top() of @h against a sort of rc_hot_count() over every region. */
static void check_top_against_sort(const struct rc_hot *h, u32 n)
{
	struct rc_hot_entry *out = calloc(n + 1, sizeof(*out));
	u32 k, i, err;
	u64 r, better;

	CHECK(out);
	k = rc_hot_top(h, n, out);
	for (i = 0; i < k; i++) {
		CHECK(out[i].count);
		CHECK_EQ(rc_hot_count(h, out[i].region, &err), out[i].count);
		CHECK_EQ(err, out[i].err);
		if (i)
			CHECK(out[i - 1].count > out[i].count ||
			      (out[i - 1].count == out[i].count &&
			       out[i - 1].region < out[i].region));
		/* its rank: exactly i regions rank above it */
		better = 0;
		for (r = 0; r < h->nr_regions; r++) {
			u32 c = rc_hot_count(h, r, NULL);

			if (c > out[i].count || (c == out[i].count && r < out[i].region))
				better++;
		}
		CHECK_EQ(better, i);
	}
	/* nothing held is left out while there was room */
	if (k < n)
		for (r = 0, i = 0; r < h->nr_regions; r++)
			i += !!rc_hot_count(h, r, NULL);
	CHECK(k == n || k == i);
	free(out);
}

CTEST(exact_top_matches_a_sort_of_random_counts)
{
	struct hot *t = hot_new(3000, 256);
	unsigned int i;

	ctest_rng = 0x1234;
	for (i = 0; i < 20000; i++)
		rc_hot_miss(&t->h, ctest_rand(3000) % (1 + ctest_rand(3000)));
	CHECK(rc_hot_exact(&t->h));
	check_top_against_sort(&t->h, 50);
	check_top_against_sort(&t->h, 1);
	check_top_against_sort(&t->h, 5000);
	hot_free(t);
}

/* --- Space-Saving: the mechanism --------------------------------------------- */

CTEST(ss_free_slots_count_exactly)
{
	struct hot *t = hot_new(1000, 4);
	u32 err = 99;

	CHECK(!rc_hot_exact(&t->h));
	misses(&t->h, 10, 3);
	misses(&t->h, 11, 1);
	misses(&t->h, 12, 2);
	misses(&t->h, 13, 5);
	misses(&t->h, 1000, 5);		/* past the end: ignored */
	CHECK_EQ(t->h.used, 4);
	CHECK_EQ(rc_hot_count(&t->h, 10, &err), 3);
	CHECK_EQ(err, 0);
	CHECK_EQ(rc_hot_count(&t->h, 11, &err), 1);
	CHECK_EQ(rc_hot_count(&t->h, 12, &err), 2);
	CHECK_EQ(rc_hot_count(&t->h, 13, &err), 5);
	CHECK_EQ(rc_hot_count(&t->h, 14, &err), 0);
	CHECK_EQ(err, 0);
	CHECK_EQ(rc_hot_total(&t->h), 11);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_new_region_takes_over_the_least_slot)
{
	struct hot *t = hot_new(1000, 4);
	u32 err;

	misses(&t->h, 10, 3);
	misses(&t->h, 11, 1);
	misses(&t->h, 12, 2);
	misses(&t->h, 13, 5);
	rc_hot_miss(&t->h, 20);
	CHECK_EQ(rc_hot_count(&t->h, 11, &err), 0);
	CHECK_EQ(rc_hot_count(&t->h, 20, &err), 2);
	CHECK_EQ(err, 1);
	/* now 12 and 20 both have 2: one of them goes, to count 3 err 2 */
	rc_hot_miss(&t->h, 21);
	CHECK_EQ(rc_hot_count(&t->h, 21, &err), 3);
	CHECK_EQ(err, 2);
	CHECK_EQ(!!rc_hot_count(&t->h, 12, NULL) + !!rc_hot_count(&t->h, 20, NULL), 1);
	CHECK_EQ(rc_hot_total(&t->h), 13);
	CHECK_EQ(t->h.used, 4);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_counts_saturate_at_u32_max)
{
	struct hot *t = hot_new(1000, 1);
	u32 err;

	rc_hot_miss(&t->h, 5);
	/* a period of 4e9 misses, without making them */
	t->h.slot[0].count = RC_HOT_SS_MAX - 1;
	t->h.total = RC_HOT_SS_MAX - 1;
	rc_hot_miss(&t->h, 5);
	CHECK_EQ(rc_hot_count(&t->h, 5, NULL), RC_HOT_SS_MAX);
	rc_hot_miss(&t->h, 5);
	CHECK_EQ(rc_hot_count(&t->h, 5, NULL), RC_HOT_SS_MAX);
	CHECK_EQ(rc_hot_total(&t->h), RC_HOT_SS_MAX);
	rc_hot_miss(&t->h, 6);
	CHECK_EQ(rc_hot_count(&t->h, 6, &err), RC_HOT_SS_MAX);
	CHECK_EQ(err, RC_HOT_SS_MAX);
	CHECK_EQ(rc_hot_count(&t->h, 5, NULL), 0);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_aging_halves_counts_and_frees_the_slots_of_count_1)
{
	static const struct { u64 region; u32 count, err; } want[] = {
		{ 4, 3, 0 }, { 5, 2, 0 }, { 6, 2, 0 }, { 7, 4, 0 }, { 8, 3, 0 },
		{ 9, 2, 1 }, { 10, 2, 1 }, { 11, 2, 2 },
	};
	struct hot *t = hot_new(1000, 8);
	unsigned int i;
	u32 err;

	misses(&t->h, 1, 1);
	misses(&t->h, 2, 2);
	misses(&t->h, 3, 3);
	misses(&t->h, 4, 7);
	misses(&t->h, 5, 5);
	misses(&t->h, 6, 4);
	misses(&t->h, 7, 9);
	misses(&t->h, 8, 6);
	/* full: 9 takes over 1 (2, 1), then 10 takes over 2 (3, 2), 11 3 (4, 3) */
	misses(&t->h, 9, 4);
	misses(&t->h, 10, 2);
	misses(&t->h, 11, 1);
	CHECK_EQ(rc_hot_count(&t->h, 9, &err), 5);
	CHECK_EQ(err, 1);
	CHECK_EQ(rc_hot_count(&t->h, 10, &err), 4);
	CHECK_EQ(err, 2);
	CHECK_EQ(rc_hot_count(&t->h, 11, &err), 4);
	CHECK_EQ(err, 3);
	CHECK_EQ(rc_hot_count(&t->h, 1, NULL) + rc_hot_count(&t->h, 2, NULL) +
		 rc_hot_count(&t->h, 3, NULL), 0);
	CHECK_EQ(rc_hot_total(&t->h), 44);
	check_invariants(&t->h);

	/* counts halved down, errs up: 3 -> 2, 2 -> 1, 3 -> 2 */
	CHECK_EQ(age(&t->h, 1000), 1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ(rc_hot_count(&t->h, want[i].region, &err), want[i].count);
		CHECK_EQ(err, want[i].err);
	}
	CHECK_EQ(t->h.used, 8);
	CHECK_EQ(rc_hot_total(&t->h), 20);
	check_invariants(&t->h);

	/* all but 7 down to 1, then freed */
	age(&t->h, 3);
	CHECK_EQ(t->h.used, 8);
	CHECK_EQ(rc_hot_total(&t->h), 9);
	age(&t->h, 3);
	CHECK_EQ(t->h.used, 1);
	CHECK_EQ(rc_hot_count(&t->h, 7, &err), 1);
	CHECK_EQ(rc_hot_total(&t->h), 1);
	check_invariants(&t->h);

	/* a free slot: the next new region counts exactly */
	rc_hot_miss(&t->h, 12);
	CHECK_EQ(rc_hot_count(&t->h, 12, &err), 1);
	CHECK_EQ(err, 0);
	CHECK_EQ(t->h.used, 2);
	age(&t->h, 1);
	CHECK_EQ(t->h.used, 0);
	CHECK_EQ(rc_hot_total(&t->h), 0);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_aging_err_rounds_up_capped_at_the_count)
{
	struct hot *t = hot_new(1000, 1);
	u32 err;

	misses(&t->h, 1, 5);
	rc_hot_miss(&t->h, 2);
	CHECK_EQ(rc_hot_count(&t->h, 2, &err), 6);
	CHECK_EQ(err, 5);
	age(&t->h, 1);
	CHECK_EQ(rc_hot_count(&t->h, 2, &err), 3);
	CHECK_EQ(err, 3);
	age(&t->h, 1);
	CHECK_EQ(rc_hot_count(&t->h, 2, &err), 1);
	CHECK_EQ(err, 1);	/* 3 rounds up to 2, capped at the count */
	age(&t->h, 1);
	CHECK_EQ(t->h.used, 0);
	hot_free(t);
}

CTEST(ss_aging_rule_for_every_slot)
{
	struct hot *t = hot_new(NR, 64);
	struct rc_hot_entry before[64];
	unsigned int i, used, freed = 0;
	u32 err, c;

	ctest_rng = 99;
	for (i = 0; i < 20000; i++)
		rc_hot_miss(&t->h, ctest_rand(3) ? ctest_rand(100) : ctest_rand(NR));
	CHECK_EQ(t->h.used, 64);
	used = t->h.used;
	memcpy(before, t->h.slot, sizeof(before));
	age(&t->h, 1000);
	for (i = 0; i < used; i++) {
		c = rc_hot_count(&t->h, before[i].region, &err);
		CHECK_EQ(c, before[i].count / 2);
		if (!c) {
			freed++;
			continue;
		}
		CHECK_EQ(err, (before[i].err + 1) / 2 < c ? (before[i].err + 1) / 2 : c);
	}
	CHECK_EQ(t->h.used, used - freed);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_aging_in_chunks_returns_slot_positions)
{
	struct hot *t = hot_new(1000, 8);
	u64 r;

	for (r = 0; r < 8; r++)
		misses(&t->h, r, (unsigned int)(r % 3 ? 4 : 1));	/* 0, 3, 6 have 1 */
	/* freed slots take the last one in their place: no progress for them */
	CHECK_EQ(rc_hot_age_some(&t->h, 0, 1), 0);
	CHECK_EQ(t->h.used, 7);
	CHECK_EQ(rc_hot_age_some(&t->h, 0, 1), 1);
	CHECK_EQ(rc_hot_age_some(&t->h, 1, 4), 3);
	CHECK_EQ(t->h.used, 5);
	check_invariants(&t->h);
	/* the last held slot seen: the end, not 5 */
	CHECK_EQ(rc_hot_age_some(&t->h, 3, 2), 8);
	CHECK_EQ(rc_hot_age_some(&t->h, 8, 2), 8);
	CHECK_EQ(t->h.used, 5);
	for (r = 0; r < 8; r++)
		CHECK_EQ(rc_hot_count(&t->h, r, NULL), r % 3 ? 2 : 0);
	check_invariants(&t->h);
	hot_free(t);
}

CTEST(ss_top_by_count_ties_lower_region_first)
{
	struct hot *t = hot_new(100000, 16);
	struct rc_hot_entry out[20];
	static const struct { u64 region; u32 count; } want[] = {
		{ 500, 9 }, { 7, 4 }, { 2000, 4 }, { 99999, 4 }, { 3, 2 }, { 0, 1 },
	};
	unsigned int i;

	CHECK(!rc_hot_exact(&t->h));
	misses(&t->h, 99999, 4);
	misses(&t->h, 3, 2);
	misses(&t->h, 2000, 4);
	misses(&t->h, 500, 9);
	misses(&t->h, 0, 1);
	misses(&t->h, 7, 4);
	CHECK_EQ(rc_hot_top(&t->h, 20, out), 6);
	for (i = 0; i < 6; i++) {
		CHECK_EQ(out[i].region, want[i].region);
		CHECK_EQ(out[i].count, want[i].count);
		CHECK_EQ(out[i].err, 0);
	}
	CHECK_EQ(rc_hot_top(&t->h, 2, out), 2);
	CHECK_EQ(out[0].region, 500);
	CHECK_EQ(out[1].region, 7);
	hot_free(t);
}

CTEST(ss_top_matches_a_sort_after_takeovers)
{
	struct hot *t = hot_new(5000, 64);
	unsigned int i;

	ctest_rng = 0x5eed;
	for (i = 0; i < 30000; i++)
		rc_hot_miss(&t->h, ctest_rand(5000) % (1 + ctest_rand(500)));
	CHECK(!rc_hot_exact(&t->h));
	CHECK_EQ(t->h.used, 64);
	check_top_against_sort(&t->h, 10);
	check_top_against_sort(&t->h, 64);
	check_top_against_sort(&t->h, 100);
	hot_free(t);
}

/* --- Space-Saving against an exact count ---------------------------------------- */

CTEST(ss_all_one_region)
{
	struct hot *t = hot_new(NR, M);
	u32 *truth = truth_new(), err;
	unsigned int i;

	for (i = 0; i < 100000; i++)
		both(&t->h, truth, 42);
	CHECK_EQ(t->h.used, 1);
	CHECK_EQ(rc_hot_count(&t->h, 42, &err), 100000);
	CHECK_EQ(err, 0);
	CHECK_EQ(check_guarantees(&t->h, truth), 1);
	age_both(&t->h, truth, 7);
	CHECK_EQ(rc_hot_count(&t->h, 42, &err), 50000);
	CHECK_EQ(check_guarantees(&t->h, truth), 1);
	check_invariants(&t->h);
	free(truth);
	hot_free(t);
}

CTEST(ss_sorted_scan)
{
	struct hot *t = hot_new(NR, M);
	u32 *truth = truth_new();
	unsigned int pass, r;

	for (pass = 0; pass < 3; pass++) {
		for (r = 0; r < NR; r++)
			both(&t->h, truth, r);
		CHECK_EQ(check_guarantees(&t->h, truth), 0);
		CHECK(check_invariants(&t->h) < 16);
	}
	CHECK_EQ(rc_hot_total(&t->h), 3 * NR);
	/* every slot was taken over and over: all at about N / m */
	CHECK(least(&t->h) >= 3 * NR / M - 1);
	age_both(&t->h, truth, 64);
	CHECK_EQ(check_guarantees(&t->h, truth), 0);
	free(truth);
	hot_free(t);
}

CTEST(ss_churn_of_distinct_regions_around_heavy_ones)
{
	struct hot *t = hot_new(NR, M);
	u32 *truth = truth_new();
	u64 heavy[8], next = 0;
	unsigned int i, period;

	for (i = 0; i < 8; i++)
		heavy[i] = 12345 * (i + 1);
	for (period = 0; period < 3; period++) {
		/* every 4th miss a heavy region, the rest a region never seen lately */
		for (i = 0; i < 200000; i++) {
			if (!(i % 4)) {
				both(&t->h, truth, heavy[(i / 4) % 8]);
			} else {
				do
					next = (next + 7919) % NR;
				while (next % 12345 == 0);
				both(&t->h, truth, next);
			}
		}
		CHECK_EQ(check_guarantees(&t->h, truth), 8);
		for (i = 0; i < 8; i++)
			CHECK(rc_hot_count(&t->h, heavy[i], NULL) >= truth[heavy[i]]);
		check_invariants(&t->h);
		age_both(&t->h, truth, 100);
		check_invariants(&t->h);
		CHECK_EQ(check_guarantees(&t->h, truth), 8);
	}
	free(truth);
	hot_free(t);
}

CTEST(ss_round_robin_over_one_more_region_than_slots)
{
	struct hot *t = hot_new(NR, M);
	u32 *truth = truth_new();
	unsigned int i;

	/* the worst case: every miss evicts the region that comes next */
	for (i = 0; i < 300 * (M + 1); i++)
		both(&t->h, truth, (u64)(i % (M + 1)) * 97);
	CHECK_EQ(check_guarantees(&t->h, truth), 0);
	check_invariants(&t->h);
	age_both(&t->h, truth, 10);
	CHECK_EQ(check_guarantees(&t->h, truth), 0);
	check_invariants(&t->h);
	free(truth);
	hot_free(t);
}

/* Zipf over NR regions, rank k (from 1) with weight k^-alpha, ranks shuffled. */
struct zipf {
	double *cdf;
	u32 *region;
};

static void zipf_init(struct zipf *z, double alpha)
{
	double sum = 0;
	u32 i, j, tmp;

	z->cdf = malloc(NR * sizeof(*z->cdf));
	z->region = malloc(NR * sizeof(*z->region));
	CHECK(z->cdf && z->region);
	for (i = 0; i < NR; i++) {
		sum += pow(i + 1, -alpha);
		z->cdf[i] = sum;
		z->region[i] = i;
	}
	for (i = 0; i < NR; i++)
		z->cdf[i] /= sum;
	for (i = NR - 1; i > 0; i--) {
		j = (u32)ctest_rand(i + 1);
		tmp = z->region[i];
		z->region[i] = z->region[j];
		z->region[j] = tmp;
	}
}

static u64 zipf_next(const struct zipf *z)
{
	double u = (double)(ctest_rand64() >> 11) / (double)(1ull << 53);
	u32 lo = 0, hi = NR - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return z->region[lo];
}

static void zipf_free(struct zipf *z)
{
	free(z->cdf);
	free(z->region);
}

/*
 * @periods periods of 500000 misses from Zipf(@alpha), aged in between;
 * the guarantees after each.  Returns the heavy hitters of the last one.
 */
static u32 zipf_run(double alpha, u64 seed, unsigned int periods, u32 *top_exact)
{
	struct hot *t = hot_new(NR, M);
	struct rc_hot_entry out[16];
	u32 *truth = truth_new(), heavy = 0;
	unsigned int i, p;
	struct zipf z;
	u64 r;

	ctest_rng = seed;
	zipf_init(&z, alpha);
	for (p = 0; p < periods; p++) {
		if (p)
			age_both(&t->h, truth, 100);
		for (i = 0; i < 500000; i++)
			both(&t->h, truth, zipf_next(&z));
		heavy = check_guarantees(&t->h, truth);
		check_invariants(&t->h);
	}
	/* how many of the true top 16 the sketch's top 16 has, in order */
	*top_exact = 0;
	CHECK_EQ(rc_hot_top(&t->h, 16, out), 16);
	for (i = 0; i < 16; i++) {
		u32 better = 0;

		for (r = 0; r < NR; r++)
			better += truth[r] > truth[out[i].region] ||
				  (truth[r] == truth[out[i].region] && r < out[i].region);
		*top_exact += better == i;
	}
	zipf_free(&z);
	free(truth);
	hot_free(t);
	return heavy;
}

CTEST(ss_zipf_0_8)
{
	u32 top;

	/* a flat head: about 8 regions have p > 1 / 256 */
	CHECK(zipf_run(0.8, 0x0808, 3, &top) >= 5);
}

CTEST(ss_zipf_1_2)
{
	u32 top;

	/* about 26 regions have p > 1 / 256 */
	CHECK(zipf_run(1.2, 0x1212, 3, &top) >= 20);
	/* a steep head: the sketch's top 16 is the true top 16, in order */
	CHECK_EQ(top, 16);
}

/* --- invariants under random operations --------------------------------------- */

/*
 * Random misses over a pool of @pool regions (some hot, most not), aging
 * passes in random chunks with misses between them, and the invariants
 * after every step.  (The guarantees need a truth, which a pass with
 * misses between its chunks does not define: see the test after.)
 */
static void random_ops(u32 slots, u32 pool, unsigned int steps, u64 seed)
{
	struct hot *t = hot_new(NR, slots);
	unsigned int i, j;
	u64 pos = 0, r;
	bool aging = false;

	ctest_rng = seed;
	CHECK(!rc_hot_exact(&t->h));
	for (i = 0; i < steps; i++) {
		switch (ctest_rand(aging ? 3 : 20)) {
		case 0:
			if (!aging) {
				aging = true;
				pos = 0;
			}
			pos = rc_hot_age_some(&t->h, pos, 1 + ctest_rand(slots + 2));
			if (pos == rc_hot_age_end(&t->h))
				aging = false;
			break;
		default:
			for (j = 1 + (u32)ctest_rand(8); j; j--) {
				r = ctest_rand(4) ? ctest_rand(pool / 16 + 1) : ctest_rand(pool);
				rc_hot_miss(&t->h, r * 37 % NR);
			}
			break;
		}
		check_invariants(&t->h);
	}
	hot_free(t);
}

CTEST(ss_invariants_hold_under_random_operations)
{
	random_ops(1, 5, 3000, 1);
	random_ops(2, 10, 3000, 2);
	random_ops(7, 40, 5000, 3);
	random_ops(64, 400, 20000, 4);
	random_ops(100, 5000, 20000, 5);
}

CTEST(ss_guarantees_hold_across_random_periods)
{
	struct hot *t = hot_new(NR, 50);
	u32 *truth = truth_new();
	unsigned int period, i;
	u64 r;

	ctest_rng = 77;
	for (period = 0; period < 20; period++) {
		for (i = ctest_rand(5000); i; i--) {
			r = ctest_rand(3) ? ctest_rand(30) : ctest_rand(3000);
			both(&t->h, truth, r * 31);
		}
		check_invariants(&t->h);
		check_guarantees(&t->h, truth);
		age_both(&t->h, truth, 1 + ctest_rand(60));
		check_invariants(&t->h);
		check_guarantees(&t->h, truth);
	}
	free(truth);
	hot_free(t);
}

CTEST(ss_hash_probes_stay_short)
{
	struct hot *t = hot_new(1ull << 40, 4096);
	u32 longest;
	u64 r;

	/* strided and sequential keys, the shapes origin regions come in */
	for (r = 0; r < 4096; r++)
		rc_hot_miss(&t->h, r << 20);
	longest = check_invariants(&t->h);
	CHECK(longest < 32);
	for (r = 0; r < 100000; r++)
		rc_hot_miss(&t->h, r);
	longest = check_invariants(&t->h);
	CHECK(longest < 32);
	hot_free(t);
}

/* --- HDC's choice (rc_hdc_choose()) -------------------------------------- */

/*
 * The @max best by count, a pinned one's counting 5/4, of count at least
 * RC_HDC_MIN_COUNT, returned first and by region.
 */
CTEST(hdc_choose_takes_the_best_with_a_quarter_for_the_pinned)
{
	struct rc_hdc_cand c[] = {
		{ .region = 50, .count = 10, .pinned = 0 },
		{ .region = 7, .count = 8, .pinned = 1 },	/* scores 10: ties 50, lower region */
		{ .region = 9, .count = 9, .pinned = 0 },
		{ .region = 3, .count = 11, .pinned = 0 },
		{ .region = 4, .count = 1, .pinned = 1 },	/* below RC_HDC_MIN_COUNT */
		{ .region = 8, .count = 7, .pinned = 1 },	/* 8.75 */
	};

	CHECK_EQ(rc_hdc_choose(c, 6, 3), 3);
	CHECK_EQ(c[0].region, 3);
	CHECK_EQ(c[1].region, 7);
	CHECK_EQ(c[2].region, 50);
	/* a newcomer a quarter above a pinned one displaces it, not less */
	{
		struct rc_hdc_cand d[] = {
			{ .region = 1, .count = 8, .pinned = 1 },
			{ .region = 2, .count = 9, .pinned = 0 },
		}, e[] = {
			{ .region = 1, .count = 8, .pinned = 1 },
			{ .region = 2, .count = 11, .pinned = 0 },
		};

		CHECK_EQ(rc_hdc_choose(d, 2, 1), 1);
		CHECK_EQ(d[0].region, 1);
		CHECK_EQ(rc_hdc_choose(e, 2, 1), 1);
		CHECK_EQ(e[0].region, 2);
	}
	/* nothing worth a fill; no room */
	{
		struct rc_hdc_cand once = { .region = 4, .count = 1, .pinned = 1 };

		CHECK_EQ(rc_hdc_choose(&once, 1, 3), 0);
	}
	CHECK_EQ(rc_hdc_choose(c, 6, 0), 0);
	CHECK_EQ(rc_hdc_choose(c, 0, 3), 0);
}

/* Against a plain sort on random candidates: the same set, in region order. */
CTEST(hdc_choose_matches_a_reference_sort)
{
	enum { N = 500 };
	static struct rc_hdc_cand c[N], ref[N];
	u32 trial, i, j, k, max, want;

	for (trial = 0; trial < 200; trial++) {
		u32 n = 1 + ctest_rand(N);

		for (i = 0; i < n; i++) {
			c[i] = (struct rc_hdc_cand){ .region = i * 7 + ctest_rand(7),
						     .count = ctest_rand(20),
						     .pinned = ctest_rand(2) };
			ref[i] = c[i];
		}
		max = ctest_rand(n + 2);
		k = rc_hdc_choose(c, n, max);
		/* reference: selection by score then region, quadratic */
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++) {
				u64 si = (u64)ref[i].count * (4 + ref[i].pinned);
				u64 sj = (u64)ref[j].count * (4 + ref[j].pinned);

				if (sj > si || (sj == si && ref[j].region < ref[i].region)) {
					struct rc_hdc_cand t = ref[i];

					ref[i] = ref[j];
					ref[j] = t;
				}
			}
		for (want = 0; want < n && want < max && ref[want].count >= RC_HDC_MIN_COUNT;)
			want++;
		CHECK_EQ(k, want);
		for (i = 0; i < k; i++) {
			for (j = 0; j < k && ref[j].region != c[i].region; j++)
				;
			CHECK(j < k);
			if (i)
				CHECK(c[i - 1].region < c[i].region);
		}
	}
}

/* --- a saved set loaded (rc_hdc_merge()) -------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* The set kept whole; of the new regions, the lowest while there is room. */
CTEST(hdc_merge_keeps_the_set_and_adds_the_lowest_new)
{
	const u64 set[] = { 3, 7, 9 }, add[] = { 1, 1, 3, 5, 9, 12, 12, 20 };
	u64 out[16];

	CHECK_EQ(rc_hdc_merge(set, 3, add, 8, 6, out), 6);
	CHECK_EQ(out[0], 1);
	CHECK_EQ(out[1], 3);
	CHECK_EQ(out[2], 5);
	CHECK_EQ(out[3], 7);
	CHECK_EQ(out[4], 9);
	CHECK_EQ(out[5], 12);
	/* full already, or over (a cut share): the set as it is */
	CHECK_EQ(rc_hdc_merge(set, 3, add, 8, 3, out), 3);
	CHECK_EQ(rc_hdc_merge(set, 3, add, 8, 2, out), 3);
	CHECK_EQ(out[2], 9);
	/* from nothing; nothing to add */
	CHECK_EQ(rc_hdc_merge(NULL, 0, add, 8, 100, out), 6);
	CHECK_EQ(out[5], 20);
	CHECK_EQ(rc_hdc_merge(set, 3, NULL, 0, 100, out), 3);
	CHECK_EQ(rc_hdc_merge(NULL, 0, add, 8, 0, out), 0);
}

/* Against a reference on random sets: sorted, unique, the set, then the lowest new. */
CTEST(hdc_merge_matches_a_reference)
{
	enum { N = 300 };
	static u64 set[N], add[N], out[2 * N], ref[2 * N];
	u32 trial, i, j, n, nadd, max, k, want, room;

	for (trial = 0; trial < 500; trial++) {
		n = ctest_rand(N);
		nadd = ctest_rand(N);
		for (i = 0, j = 0; i < n; i++) {
			j += 1 + ctest_rand(4);
			set[i] = j;
		}
		for (i = 0; i < nadd; i++)
			add[i] = ctest_rand(4 * N + 10);
		qsort(add, nadd, sizeof(*add), cmp_u64);
		max = ctest_rand(2 * N);
		k = rc_hdc_merge(set, n, add, nadd, max, out);
		/* reference: the new regions, unique, the lowest that fit */
		room = max > n ? max - n : 0;
		want = 0;
		for (i = 0; i < n; i++)
			ref[want++] = set[i];
		for (i = 0; i < nadd && room; i++) {
			bool seen = false;

			for (j = 0; j < want && !seen; j++)
				seen = ref[j] == add[i];
			if (!seen) {
				ref[want++] = add[i];
				room--;
			}
		}
		qsort(ref, want, sizeof(*ref), cmp_u64);
		CHECK_EQ(k, want);
		CHECK(k <= n + (nadd < max ? nadd : max));
		for (i = 0; i < k && i < want; i++)
			CHECK_EQ(out[i], ref[i]);
	}
}

/* rc_hot_clear(): both modes back to empty, and counting again from there. */
CTEST(clear_forgets_every_count)
{
	struct hot *e = hot_new(100, 256), *ss = hot_new(1ull << 40, 64);
	u64 r;

	CHECK(rc_hot_exact(&e->h));
	CHECK(!rc_hot_exact(&ss->h));
	for (r = 0; r < 1000; r++) {
		rc_hot_miss(&e->h, r % 100);
		rc_hot_miss(&ss->h, r * 7919);
	}
	rc_hot_clear(&e->h);
	rc_hot_clear(&ss->h);
	CHECK_EQ(rc_hot_total(&e->h), 0);
	CHECK_EQ(rc_hot_total(&ss->h), 0);
	CHECK_EQ(ss->h.used, 0);
	for (r = 0; r < 100; r++)
		CHECK_EQ(rc_hot_count(&e->h, r, NULL), 0);
	CHECK_EQ(rc_hot_count(&ss->h, 7919, NULL), 0);
	check_invariants(&ss->h);
	rc_hot_miss(&ss->h, 5);
	rc_hot_miss(&e->h, 5);
	CHECK_EQ(rc_hot_count(&ss->h, 5, NULL), 1);
	CHECK_EQ(rc_hot_count(&e->h, 5, NULL), 1);
	check_invariants(&ss->h);
	hot_free(e);
	hot_free(ss);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the redcap core (dm-redcap/rc-core.c): index, LRU,
 * entry states, write/fill races and counters, plus a randomized model check.
 */
#include "ctest.h"
#include "rc-core.h"
#include "rc_read_seg.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* --- helpers ------------------------------------------------------------ */

static struct rc_cache *mk_policy(u32 n, enum rc_write_policy wp)
{
	struct rc_cache *c = malloc(sizeof(*c));
	size_t sz = rc_cache_mem_size(n);
	void *mem;

	CHECK(c);
	CHECK(sz > 0);
	mem = malloc(sz);
	CHECK(mem);
	CHECK_EQ(rc_cache_init(c, mem, n, 8, 0), 0);
	CHECK(c->entries == mem);
	c->write_policy = wp;
	return c;
}

static struct rc_cache *mk(u32 n)
{
	return mk_policy(n, RC_WRITE_INVALIDATE);
}

static void rm(struct rc_cache *c)
{
	free(c->entries);
	free(c);
}

/* Index of the hashed (FILLING/VALID) entry holding @seg, by a full walk. */
static u32 hashed_idx(const struct rc_cache *c, u64 seg)
{
	u32 b, i, found = RC_NONE;

	for (b = 0; b <= c->hash_mask; b++)
		for (i = c->hash[b]; i != RC_NONE; i = c->entries[i].hnext)
			if (c->entries[i].seg == seg) {
				CHECK(found == RC_NONE);
				found = i;
			}
	return found;
}

static u32 max_chain(const struct rc_cache *c)
{
	u32 b, i, len, max = 0;

	for (b = 0; b <= c->hash_mask; b++) {
		len = 0;
		for (i = c->hash[b]; i != RC_NONE; i = c->entries[i].hnext)
			len++;
		if (len > max)
			max = len;
	}
	return max;
}

static u32 wb_inflight_sum(const struct rc_cache *c)
{
	u32 b, sum = 0;

	for (b = 0; b <= c->wb_mask; b++)
		sum += c->wb_inflight[b];
	return sum;
}

static u32 lru_len(const struct rc_cache *c)
{
	u32 i, n = 0;

	for (i = c->lru_head; i != RC_NONE; i = c->entries[i].next)
		n++;
	return n;
}

static u32 free_len(const struct rc_cache *c)
{
	u32 i, n = 0;

	for (i = c->free_head; i != RC_NONE; i = c->entries[i].next)
		n++;
	return n;
}

static u32 bare_len(const struct rc_cache *c)
{
	u32 i, n = 0;

	for (i = c->bare_head; i != RC_NONE; i = c->entries[i].next)
		n++;
	return n;
}

/*
 * The LRU (@kind LIST_LRU: VALID and GHOST entries), probation (LIST_PROB:
 * VALID entries filled ahead and unread) or HDC's list (LIST_HDC: VALID
 * entries HDC pinned), from @head to @tail: unpinned, linked both ways,
 * on no other list (@seen marks them 2).
 */
enum { LIST_LRU, LIST_PROB, LIST_HDC };
static void check_list(const struct rc_cache *c, u32 head, u32 tail, int kind,
		       unsigned char *seen)
{
	u32 i, prev = RC_NONE;
	const struct rc_entry *e;

	for (i = head; i != RC_NONE; i = e->next) {
		CHECK(i < c->nr_entries);
		CHECK(!seen[i]);
		seen[i] = 2;
		e = &c->entries[i];
		if (kind == LIST_PROB)
			CHECK(e->state == RC_VALID && e->ahead);
		else if (kind == LIST_HDC)
			CHECK(e->state == RC_VALID && e->hdc);
		else
			CHECK(e->state == RC_VALID || e->state == RC_GHOST);
		CHECK_EQ(e->pins, 0);
		CHECK(e->on_list);
		CHECK_EQ(e->on_prob, kind == LIST_PROB);
		CHECK_EQ(e->on_hdc, kind == LIST_HDC);
		CHECK_EQ(e->hdc, kind == LIST_HDC);
		CHECK_EQ(e->prev, prev);
		prev = i;
	}
	CHECK_EQ(tail, prev);
}

/*
 * The eviction history: each slot holding a key is on its key's bucket
 * chain, once; no other slot is on any chain.
 */
static void check_history(const struct rc_cache *c)
{
	u32 span = c->nr_entries * RC_HIST_SPAN * 2 + 1, b, i, held = 0, chained = 0;
	unsigned char *on = calloc(span, 1);

	for (b = 0; b <= c->hist_mask; b++)
		for (i = c->hist_head[b]; i != RC_NONE; i = c->hist_chain[i]) {
			CHECK(i < span);
			CHECK(c->hist_chain[i] != RC_HIST_EMPTY);
			CHECK_EQ(on[i], 0);
			on[i] = 1;
			chained++;
			CHECK_EQ((u64)c->hist_key[i] * (c->hist_mask + 1) >> 32, b);
		}
	for (i = 0; i < span; i++)
		held += c->hist_chain[i] != RC_HIST_EMPTY;
	CHECK_EQ(held, chained);
	CHECK(c->hist_next < span);
	CHECK(c->ctr.x2_fills_saved <= c->ctr.x4_fills_saved);
	free(on);
}

/*
 * Structural invariants: every entry is on exactly one of the free list, the
 * LRU or neither (busy); the LRU holds VALID and GHOST entries, the hash
 * exactly the FILLING/VALID/GHOST ones; the summary counts match.
 */
static void check_invariants(const struct rc_cache *c)
{
	u32 n = c->nr_entries, i, b, cnt;
	u32 nv = 0, nf = 0, np = 0, ng = 0, na = 0, nh = 0, nb = 0, hashed = 0;
	unsigned char *seen = calloc(n, 1);
	const struct rc_entry *e;

	CHECK(seen);
	cnt = 0;
	for (i = c->free_head; i != RC_NONE; i = e->next) {
		CHECK(i < n);
		CHECK(!seen[i]);
		seen[i] = 1;
		e = &c->entries[i];
		CHECK_EQ(e->state, RC_FREE);
		CHECK_EQ(e->pins, 0);
		CHECK(e->on_list);
		CHECK(!e->bare);
		CHECK(++cnt <= n);
	}
	/* The bare FREE entries: their own list, linked both ways. */
	b = RC_NONE;
	for (i = c->bare_head; i != RC_NONE; i = e->next) {
		CHECK(i < n);
		CHECK(!seen[i]);
		seen[i] = 1;
		e = &c->entries[i];
		CHECK_EQ(e->state, RC_FREE);
		CHECK_EQ(e->pins, 0);
		CHECK(e->on_list && e->bare);
		CHECK_EQ(e->prev, b);
		b = i;
		CHECK(++cnt <= n);
	}
	CHECK_EQ(c->bare_tail, b);
	check_list(c, c->lru_head, c->lru_tail, LIST_LRU, seen);
	check_list(c, c->prob_head, c->prob_tail, LIST_PROB, seen);
	check_list(c, c->hdc_head, c->hdc_tail, LIST_HDC, seen);
	for (b = 0; b <= c->hash_mask; b++) {
		for (i = c->hash[b]; i != RC_NONE; i = e->hnext) {
			CHECK(i < n);
			CHECK(!(seen[i] & 4));
			seen[i] |= 4;
			e = &c->entries[i];
			CHECK(e->state == RC_FILLING || e->state == RC_VALID ||
			      e->state == RC_GHOST);
			CHECK(++hashed <= n);
		}
	}
	for (i = 0; i < n; i++) {
		e = &c->entries[i];
		if (!(seen[i] & 3)) {
			CHECK(!e->on_list);
			CHECK(e->pins > 0);
			CHECK(e->state == RC_FILLING || e->state == RC_VALID ||
			      e->state == RC_DEAD);
		}
		if (e->state == RC_FILLING)
			CHECK_EQ(e->pins, 1);
		if (e->state == RC_FILLING || e->state == RC_VALID ||
		    e->state == RC_GHOST)
			CHECK(seen[i] & 4);
		if (e->state == RC_GHOST)
			CHECK_EQ(seen[i], 2 | 4);
		if (e->updating)
			CHECK(e->pins > 0);
		/* Filled ahead and unread: filling or valid; started ahead: filling. */
		if (e->ahead)
			CHECK(e->state == RC_FILLING || e->state == RC_VALID);
		if (e->pfill)
			CHECK_EQ(e->state, RC_FILLING);
		/* Unpinned, unread and filled ahead: on probation, and only then. */
		if (e->state == RC_VALID && !e->pins)
			CHECK_EQ(e->on_prob, e->ahead && !e->hdc);
		/* HDC pins segments filling or valid; its fills are its own. */
		if (e->hdc)
			CHECK(e->state == RC_FILLING || e->state == RC_VALID);
		if (e->hfill)
			CHECK_EQ(e->state, RC_FILLING);
		/* A bare entry holds no data, and no data goes into one. */
		if (e->bare)
			CHECK(e->state == RC_FREE || e->state == RC_GHOST);
		nb += e->bare;
		nh += e->hdc;
		na += e->ahead;
		nv += e->state == RC_VALID;
		nf += e->state == RC_FILLING;
		ng += e->state == RC_GHOST;
		np += e->pins > 0;
	}
	CHECK_EQ(na, c->nr_ahead);
	CHECK_EQ(nv, c->nr_valid);
	CHECK_EQ(ng, c->nr_ghost);
	CHECK_EQ(nf, c->nr_filling);
	CHECK_EQ(np, c->nr_pinned);
	CHECK_EQ(nh, c->nr_hdc);
	CHECK_EQ(nb, c->nr_bare);
	CHECK_EQ(hashed, nv + nf + ng);
	CHECK_EQ(rc_idle(c), np == 0);
	check_history(c);
	/* One hashed entry per segment (quadratic: small caches only). */
	if (n <= 64)
		for (i = 0; i < n; i++)
			if (seen[i] & 4)
				for (b = i + 1; b < n; b++)
					if (seen[b] & 4)
						CHECK(c->entries[i].seg !=
						      c->entries[b].seg);
	free(seen);
}

static void check_ctr_field(int line, const char *name, u64 got, u64 want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s:%d: counter %s: got %llu, want %llu\n", __FILE__,
		line, name, (unsigned long long)got, (unsigned long long)want);
	exit(1);
}

static void check_ctr_at(int line, const struct rc_counters *g,
			 const struct rc_counters *w)
{
	check_ctr_field(line, "reads", g->reads, w->reads);
	check_ctr_field(line, "read_hits", g->read_hits, w->read_hits);
	check_ctr_field(line, "read_hits_waited", g->read_hits_waited,
			w->read_hits_waited);
	check_ctr_field(line, "read_misses", g->read_misses, w->read_misses);
	check_ctr_field(line, "read_bypassed", g->read_bypassed,
			w->read_bypassed);
	check_ctr_field(line, "read_bypassed_busy", g->read_bypassed_busy,
			w->read_bypassed_busy);
	check_ctr_field(line, "read_bypassed_caware", g->read_bypassed_caware,
			w->read_bypassed_caware);
	check_ctr_field(line, "read_bypassed_nomem", g->read_bypassed_nomem,
			w->read_bypassed_nomem);
	check_ctr_field(line, "read_bypassed_held", g->read_bypassed_held,
			w->read_bypassed_held);
	check_ctr_field(line, "read_bypassed_inactive", g->read_bypassed_inactive,
			w->read_bypassed_inactive);
	check_ctr_field(line, "read_bypassed_budget", g->read_bypassed_budget,
			w->read_bypassed_budget);
	check_ctr_field(line, "read_bypassed_joined", g->read_bypassed_joined,
			w->read_bypassed_joined);
	check_ctr_field(line, "read_joined", g->read_joined, w->read_joined);
	check_ctr_field(line, "read_resent", g->read_resent, w->read_resent);
	check_ctr_field(line, "prefetches", g->prefetches, w->prefetches);
	check_ctr_field(line, "prefetch_hits", g->prefetch_hits, w->prefetch_hits);
	check_ctr_field(line, "prefetch_unused", g->prefetch_unused, w->prefetch_unused);
	check_ctr_field(line, "prefetch_paired", g->prefetch_paired, w->prefetch_paired);
	check_ctr_field(line, "sim_hits", g->sim_hits, w->sim_hits);
	check_ctr_field(line, "sim_misses", g->sim_misses, w->sim_misses);
	check_ctr_field(line, "fill_ios", g->fill_ios, w->fill_ios);
	check_ctr_field(line, "fill_joined", g->fill_joined, w->fill_joined);
	check_ctr_field(line, "fill_along", g->fill_along, w->fill_along);
	check_ctr_field(line, "fill_sectors", g->fill_sectors, w->fill_sectors);
	check_ctr_field(line, "fill_errors", g->fill_errors, w->fill_errors);
	check_ctr_field(line, "fill_stale", g->fill_stale, w->fill_stale);
	check_ctr_field(line, "writes", g->writes, w->writes);
	check_ctr_field(line, "write_sectors", g->write_sectors,
			w->write_sectors);
	check_ctr_field(line, "write_allocs", g->write_allocs, w->write_allocs);
	check_ctr_field(line, "invalidations", g->invalidations,
			w->invalidations);
	check_ctr_field(line, "updates", g->updates, w->updates);
	check_ctr_field(line, "evictions", g->evictions, w->evictions);
	check_ctr_field(line, "hdc_fills", g->hdc_fills, w->hdc_fills);
	check_ctr_field(line, "hdc_hits", g->hdc_hits, w->hdc_hits);
	check_ctr_field(line, "hdc_dropped", g->hdc_dropped, w->hdc_dropped);
	check_ctr_field(line, "read_bypassed_partial", g->read_bypassed_partial,
			w->read_bypassed_partial);
	check_ctr_field(line, "write_cached", g->write_cached, w->write_cached);
	check_ctr_field(line, "write_through", g->write_through, w->write_through);
	check_ctr_field(line, "write_waits", g->write_waits, w->write_waits);
	check_ctr_field(line, "writeback_ios", g->writeback_ios, w->writeback_ios);
	check_ctr_field(line, "writeback_sectors", g->writeback_sectors, w->writeback_sectors);
	check_ctr_field(line, "writeback_errors", g->writeback_errors, w->writeback_errors);
	check_ctr_field(line, "flushes", g->flushes, w->flushes);
	check_ctr_field(line, "dirty_dropped", g->dirty_dropped, w->dirty_dropped);
	check_ctr_field(line, "given_back", g->given_back, w->given_back);
	check_ctr_field(line, "regrown", g->regrown, w->regrown);
	check_ctr_field(line, "x2_fills_saved", g->x2_fills_saved, w->x2_fills_saved);
	check_ctr_field(line, "x4_fills_saved", g->x4_fills_saved, w->x4_fills_saved);
	/* A new field must be added above. */
	CHECK_EQ(sizeof(*g), 48 * sizeof(u64));
}

/* Exact counters: every field not named must be zero. */
#define CHECK_CTR(c, ...)						\
	check_ctr_at(__LINE__, &(c)->ctr, &(struct rc_counters){ __VA_ARGS__ })

/* Miss, fill and serve @seg; the entry ends VALID, unpinned, most recent. */
static u32 fill_seg(struct rc_cache *c, u64 seg)
{
	u32 idx = RC_NONE;

	CHECK_EQ(read_seg(c, seg, &idx), RC_READ_FILL);
	CHECK(idx < c->nr_entries);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	return idx;
}

/* Read @seg expecting a hit on @want_idx, then drop the pin. */
static void hit_seg(struct rc_cache *c, u64 seg, u32 want_idx)
{
	u32 idx = RC_NONE;

	CHECK_EQ(read_seg(c, seg, &idx), RC_READ_HIT);
	CHECK_EQ(idx, want_idx);
	CHECK_EQ(c->entries[idx].seg, seg);
	rc_unpin(c, idx);
}

/* --- layout and init ------------------------------------------------------ */

CTEST(mem_size_sane)
{
	size_t s1 = rc_cache_mem_size(1), s64 = rc_cache_mem_size(64);
	size_t s1m = rc_cache_mem_size(1u << 20);
	size_t smax = rc_cache_mem_size(RC_MAX_ENTRIES);

	CHECK(s1 >= sizeof(struct rc_entry) + 2 * sizeof(u32));
	CHECK(s64 >= 64 * sizeof(struct rc_entry) + 128 * sizeof(u32));
	CHECK(s1m >= (size_t)(1u << 20) * sizeof(struct rc_entry));
	/*
	 * An entry's 64 bytes (the write cache's units), 8 of hash and 8 of
	 * write buckets, 6 x 12 of eviction history and 32 of its buckets
	 */
	CHECK_EQ(s1m, (size_t)(1u << 20) * (64 + 8 + 8 + 72 + 32) + 3 * 8);
	CHECK(s1 < s64 && s64 < s1m && s1m < smax);
	CHECK_EQ(s1 % 8, 0);
	CHECK_EQ(s64 % 8, 0);
	CHECK_EQ(s1m % 8, 0);
	CHECK_EQ(rc_cache_mem_size(0), 0);
	CHECK_EQ(rc_cache_mem_size(RC_MAX_ENTRIES + 1), 0);
	CHECK_EQ(sizeof(struct rc_entry) % 8, 0);
}

CTEST(init_all_free)
{
	struct rc_cache *c = mk(10);
	u32 i;

	CHECK_EQ(c->nr_entries, 10);
	CHECK_EQ(c->seg_shift, 8);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(c->nr_filling, 0);
	CHECK_EQ(c->nr_pinned, 0);
	CHECK_EQ(c->policy, RC_POLICY_ALWAYS);
	CHECK_EQ(c->write_policy, RC_WRITE_INVALIDATE);
	CHECK_EQ(c->lru_head, RC_NONE);
	CHECK_EQ(c->lru_tail, RC_NONE);
	CHECK_EQ(free_len(c), 10);
	/* Power-of-two buckets, at least two per entry / 64 write buckets. */
	CHECK_EQ(c->hash_mask & (c->hash_mask + 1), 0);
	CHECK(c->hash_mask + 1 >= 20);
	CHECK_EQ(c->wb_mask & (c->wb_mask + 1), 0);
	CHECK(c->wb_mask + 1 >= 64);
	for (i = 0; i <= c->hash_mask; i++)
		CHECK_EQ(c->hash[i], RC_NONE);
	for (i = 0; i <= c->wb_mask; i++) {
		CHECK_EQ(c->wb_inflight[i], 0);
		CHECK_EQ(c->wb_gen[i], 0);
	}
	for (i = 0; i < 10; i++) {
		CHECK_EQ(c->entries[i].state, RC_FREE);
		CHECK_EQ(c->entries[i].pins, 0);
	}
	/* Sub-arrays 8-byte aligned and inside the block. */
	CHECK_EQ((uintptr_t)c->hash % 8, 0);
	CHECK_EQ((uintptr_t)c->wb_inflight % 8, 0);
	CHECK_EQ((uintptr_t)c->wb_gen % 8, 0);
	CHECK((char *)(c->wb_gen + c->wb_mask + 1) <=
	      (char *)c->entries + rc_cache_mem_size(10));
	CHECK(rc_idle(c));
	CHECK_CTR(c, 0);
	check_invariants(c);
	rm(c);
}

CTEST(init_rejects_bad_sizes)
{
	struct rc_cache c;
	static u64 mem[128];

	CHECK_EQ(rc_cache_init(&c, mem, 0, 8, 0), -1);
	CHECK_EQ(rc_cache_init(&c, mem, RC_MAX_ENTRIES + 1, 8, 0), -1);
	CHECK_EQ(rc_cache_init(&c, mem, 0xffffffffu, 8, 0), -1);
	CHECK_EQ(rc_cache_init(&c, mem, 1, 64, 0), -1);
	CHECK(rc_cache_mem_size(1) <= sizeof(mem));
	CHECK_EQ(rc_cache_init(&c, mem, 1, 0, 0), 0);
	CHECK_EQ(rc_sector_to_seg(&c, 12345), 12345);
}

CTEST(sector_to_seg_uses_shift)
{
	struct rc_cache *c = mk(1);

	CHECK_EQ(rc_sector_to_seg(c, 0), 0);
	CHECK_EQ(rc_sector_to_seg(c, 255), 0);
	CHECK_EQ(rc_sector_to_seg(c, 256), 1);
	CHECK(rc_sector_to_seg(c, ~0ull) == (~0ull >> 8));
	rm(c);
}

/* The last segment of a device that is not a multiple of segments is short. */
CTEST(seg_len_clips_the_last_segment_at_the_device_end)
{
	struct rc_cache *c = mk(1);

	CHECK_EQ(rc_seg_len(c, 0, 1000), 256);
	CHECK_EQ(rc_seg_len(c, 2, 1000), 256);
	CHECK_EQ(rc_seg_len(c, 3, 1000), 1000 - 768);
	CHECK_EQ(rc_seg_len(c, 3, 1024), 256);
	CHECK_EQ(rc_seg_len(c, 4, 1000), 0);	/* past the end */
	CHECK_EQ(rc_seg_len(c, 9, 1000), 0);
	rm(c);
}

/* --- reads ---------------------------------------------------------------- */

CTEST(miss_fill_serve_then_hit)
{
	struct rc_cache *c = mk(4);
	u32 idx = RC_NONE, idx2 = RC_NONE;

	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_FILL);
	CHECK(idx < 4);
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK_EQ(c->entries[idx].seg, 7);
	CHECK_EQ(c->entries[idx].pins, 1);
	CHECK_EQ(c->nr_filling, 1);
	CHECK(!rc_idle(c));
	check_invariants(c);

	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	CHECK_EQ(c->entries[idx].pins, 1);
	CHECK_EQ(c->nr_filling, 0);
	CHECK_EQ(c->nr_valid, 1);
	CHECK_EQ(lru_len(c), 0);
	check_invariants(c);
	rc_unpin(c, idx);
	CHECK_EQ(c->entries[idx].pins, 0);
	CHECK_EQ(c->lru_head, idx);
	CHECK(rc_idle(c));
	check_invariants(c);

	CHECK_EQ(read_seg(c, 7, &idx2), RC_READ_HIT);
	CHECK_EQ(idx2, idx);
	CHECK_EQ(c->entries[idx].pins, 1);
	CHECK_EQ(lru_len(c), 0);
	check_invariants(c);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 2, .read_hits = 1, .read_misses = 1,
		  .fill_ios = 1, .fill_sectors = 256);
	rm(c);
}

CTEST(waiters_on_filling_entry)
{
	struct rc_cache *c = mk(4);
	u32 idx, w1 = RC_NONE, w2 = RC_NONE;

	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 3, &w1), RC_READ_WAIT);
	CHECK_EQ(read_seg(c, 3, &w2), RC_READ_WAIT);
	CHECK_EQ(w1, idx);
	CHECK_EQ(w2, idx);
	/* Waiting takes no pin: the fill's pin covers the waiters. */
	CHECK_EQ(c->entries[idx].pins, 1);
	CHECK_EQ(c->nr_filling, 1);
	check_invariants(c);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_count_waited(c, 2);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_hits_waited = 2, .read_misses = 1,
		  .fill_ios = 1, .fill_sectors = 256);
	rm(c);
}

/*
 * A finished fill's waiters: served, they count as waited hits and the
 * fill's pin goes (the entry to the LRU head); re-sent after an error,
 * they count as re-sent and the freed entry, already another fill's, is
 * left alone.  The miss that started a fill is neither.
 */
CTEST(fill_waiters_done_counts_the_waiters_but_the_miss)
{
	struct rc_cache *c = mk(2);
	u32 idx, w, idx2;

	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 3, &w), RC_READ_WAIT);
	CHECK_EQ(read_seg(c, 3, &w), RC_READ_WAIT);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	CHECK_EQ(c->entries[idx].pins, 1);
	rc_fill_waiters_done(c, idx, RC_FILL_SERVE, 3, 1);
	CHECK_EQ(c->entries[idx].pins, 0);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 1, .read_hits_waited = 2,
		  .fill_ios = 1, .fill_sectors = 256);

	/* An error: the entry is free and filled again before the waiters go. */
	CHECK_EQ(read_seg(c, 7, &idx2), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 7, &w), RC_READ_WAIT);
	CHECK_EQ(rc_fill_done(c, idx2, -5, 0, false), RC_FILL_ERROR);
	CHECK_EQ(read_seg(c, 9, &w), RC_READ_FILL);
	CHECK_EQ(w, idx2);
	rc_fill_waiters_done(c, idx2, RC_FILL_ERROR, 2, 1);
	CHECK_EQ(c->entries[idx2].state, RC_FILLING);
	CHECK_EQ(c->entries[idx2].pins, 1);
	check_invariants(c);
	CHECK_CTR(c, .reads = 6, .read_misses = 3, .read_hits_waited = 2, .read_resent = 1,
		  .fill_ios = 2, .fill_sectors = 256, .fill_errors = 1);
	/* A fill ahead has no miss of its own; no waiter, nothing counted. */
	rc_fill_waiters_done(c, idx2, RC_FILL_STALE, 0, 1);
	CHECK_CTR(c, .reads = 6, .read_misses = 3, .read_hits_waited = 2, .read_resent = 1,
		  .fill_ios = 2, .fill_sectors = 256, .fill_errors = 1);
	CHECK_EQ(c->entries[idx2].pins, 1);
	rm(c);
}

CTEST(count_waited_accumulates)
{
	struct rc_cache *c = mk(1);

	rc_count_waited(c, 3);
	rc_count_waited(c, 0);
	rc_count_waited(c, 4);
	CHECK_CTR(c, .read_hits_waited = 7);
	rm(c);
}

CTEST(lru_evicts_least_recently_used)
{
	struct rc_cache *c = mk(3);
	u32 a, b, cc, d;

	a = fill_seg(c, 100);
	b = fill_seg(c, 200);
	cc = fill_seg(c, 300);
	CHECK(a != b && b != cc && a != cc);
	CHECK_EQ(c->lru_tail, a);
	hit_seg(c, 100, a);		/* A becomes most recent; B is the victim */
	CHECK_EQ(c->lru_head, a);
	CHECK_EQ(c->lru_tail, b);
	check_invariants(c);

	d = fill_seg(c, 400);
	CHECK_EQ(d, b);
	CHECK_EQ(hashed_idx(c, 200), RC_NONE);
	hit_seg(c, 100, a);
	hit_seg(c, 300, cc);
	hit_seg(c, 400, d);
	check_invariants(c);
	CHECK_CTR(c, .reads = 8, .read_hits = 4, .read_misses = 4,
		  .fill_ios = 4, .fill_sectors = 4 * 256, .evictions = 1);

	/* The evicted segment misses again and takes the LRU tail (A). */
	CHECK_EQ(fill_seg(c, 200), a);
	CHECK_EQ(c->ctr.evictions, 2);
	check_invariants(c);
	rm(c);
}

CTEST(serving_fill_pin_blocks_eviction)
{
	struct rc_cache *c = mk(1);
	u32 a, idx;

	CHECK_EQ(read_seg(c, 1, &a), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, a, 0, 256, false), RC_FILL_SERVE);
	/* VALID but still pinned by the fill: not on the LRU, not a victim. */
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	rc_unpin(c, a);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_FILL);
	CHECK_EQ(idx, a);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 2, .read_bypassed = 1,
		  .read_bypassed_busy = 1, .fill_ios = 1, .fill_sectors = 256,
		  .evictions = 1);
	rm(c);
}

CTEST(busy_bypass_when_all_filling)
{
	struct rc_cache *c = mk(2);
	u32 a, b, idx = 12345;

	CHECK_EQ(read_seg(c, 1, &a), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 2, &b), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);
	CHECK_EQ(idx, 12345);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_WAIT);
	CHECK_EQ(idx, a);
	check_invariants(c);
	CHECK_CTR(c, .reads = 4, .read_misses = 2, .read_bypassed = 1,
		  .read_bypassed_busy = 1);
	CHECK_EQ(rc_fill_done(c, a, 0, 8, false), RC_FILL_SERVE);
	CHECK_EQ(rc_fill_done(c, b, 0, 8, false), RC_FILL_SERVE);
	rc_unpin(c, a);
	rc_unpin(c, b);
	check_invariants(c);
	rm(c);
}

CTEST(busy_bypass_when_all_pinned)
{
	struct rc_cache *c = mk(2);
	u32 a, b, idx;

	a = fill_seg(c, 1);
	b = fill_seg(c, 2);
	hit_seg(c, 1, a);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);	/* two pins on A */
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_HIT);
	CHECK_EQ(c->entries[a].pins, 2);
	CHECK_EQ(lru_len(c), 0);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);
	check_invariants(c);
	rc_unpin(c, a);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);	/* A still pinned */
	rc_unpin(c, a);
	CHECK_EQ(c->lru_head, a);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_FILL);
	CHECK_EQ(idx, a);
	CHECK_EQ(rc_fill_done(c, idx, 0, 8, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	rc_unpin(c, b);
	check_invariants(c);
	CHECK_CTR(c, .reads = 9, .read_hits = 4, .read_misses = 3,
		  .read_bypassed = 2, .read_bypassed_busy = 2, .fill_ios = 3,
		  .fill_sectors = 2 * 256 + 8, .evictions = 1);
	rm(c);
}

CTEST(policy_off_bypasses_everything)
{
	struct rc_cache *c = mk(2);
	u32 a, idx;

	a = fill_seg(c, 5);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);	/* even a cached one */
	CHECK_EQ(read_seg(c, 6, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->entries[a].pins, 0);
	/* Writes still keep the cache coherent while off. */
	rc_write_done(c, 5, rc_write_start(c, 5, 8, true), 0, true, &idx);
	CHECK_EQ(hashed_idx(c, 5), RC_NONE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 1, .read_bypassed = 2, .read_bypassed_inactive = 2,
		  .sim_hits = 1, .sim_misses = 1,
		  .fill_ios = 1, .fill_sectors = 256, .writes = 1,
		  .write_sectors = 8, .invalidations = 1);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	rm(c);
}

/*
 * Inactive, the cache gives its buffers back (rc_give_back()): the free
 * ones first, then the VALID ones become GHOSTs where they are, so the
 * simulated cache goes on as before; active again, no data goes into a
 * bare entry until it has a buffer (rc_regrown()).
 */
CTEST(give_back_while_inactive_and_regrow)
{
	struct rc_cache *c = mk(4);
	u32 a, b, idx, out[8], from = 0, i;

	a = fill_seg(c, 1);
	b = fill_seg(c, 2);
	CHECK_EQ(rc_givable(c), 0);		/* active: it earns */
	CHECK_EQ(rc_give_back(c, &from, 4, out, 8), 0);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(rc_givable(c), 4);
	CHECK_EQ(rc_give_back(c, &from, 4, out, 8), 4);
	CHECK_EQ(c->nr_bare, 4);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(c->nr_ghost, 2);
	CHECK(out[2] == a || out[3] == a);	/* after the two free ones */
	CHECK(c->entries[a].state == RC_GHOST && c->entries[b].state == RC_GHOST);
	CHECK_EQ(from, 2);			/* walked entries 0 and 1 */
	CHECK_EQ(bare_len(c), 2);
	check_invariants(c);
	CHECK_EQ(rc_givable(c), 0);
	CHECK_EQ(rc_give_back(c, &from, 4, out, 8), 0);
	/* The simulated cache: 1 is still held, 7 takes a bare entry. */
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(bare_len(c), 1);
	check_invariants(c);
	/* Active with every entry bare: the bare victims go, the read goes down. */
	CHECK(!rc_regrow_due(c));
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK(rc_regrow_due(c));
	CHECK_EQ(rc_give_back(c, &from, 4, out, 8), 0);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(bare_len(c), 4);
	check_invariants(c);
	for (i = 0; i < 4; i++)
		rc_regrown(c, i);
	rc_regrown(c, 0);			/* not bare: nothing */
	CHECK_EQ(c->nr_bare, 0);
	CHECK(!rc_regrow_due(c));
	CHECK_EQ(free_len(c), 4);
	check_invariants(c);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 6, .read_misses = 3, .read_bypassed = 3, .read_bypassed_inactive = 2,
		  .read_bypassed_busy = 1, .sim_hits = 1, .sim_misses = 1, .fill_ios = 3,
		  .fill_sectors = 3 * 256, .given_back = 4, .regrown = 4);
	rm(c);
}

/*
 * What the cache serves keeps its buffer: a pinned hit, HDC's pins and
 * the room for its chosen set; dirty data, and a cache that caches
 * writes, give nothing back.  The walk goes @budget entries at most.
 */
CTEST(give_back_keeps_what_serves)
{
	struct rc_cache *c = mk(8);
	u64 want[1] = { 3 };
	u32 idx, pinned, out[8], from = 0;

	fill_seg(c, 1);
	fill_seg(c, 2);
	pinned = fill_seg(c, 4);
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_HIT);	/* held by a copy */
	CHECK_EQ(idx, pinned);
	rc_hdc_want(c, want, 1);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_FILL);	/* HDC pins it */
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK(c->entries[idx].hdc);
	rc_set_policy(c, RC_POLICY_OFF);
	/* HDC's share of 8 is 2: six may go, the walk sees 2 entries. */
	CHECK_EQ(rc_hdc_max(c), 2);
	CHECK_EQ(rc_givable(c), 6);
	CHECK_EQ(rc_give_back(c, &from, 2, out, 8), 6);	/* 4 free, 2 walked */
	CHECK_EQ(from, 2);
	CHECK_EQ(c->nr_bare, 6);
	check_invariants(c);
	CHECK_EQ(rc_give_back(c, &from, 8, out, 8), 0);	/* HDC's room stays */
	CHECK(!rc_bare(c, pinned) && !rc_bare(c, idx));
	CHECK(!rc_regrow_due(c));
	rc_set_tunable(c, RC_TUN_HDC, 50);		/* a larger share wants buffers */
	CHECK(rc_regrow_due(c));
	rc_set_tunable(c, RC_TUN_HDC, 25);
	rc_hdc_want(c, NULL, 0);
	CHECK_EQ(rc_give_back(c, &from, 8, out, 8), 0);	/* pinned, both */
	rc_unpin(c, pinned);
	CHECK_EQ(rc_give_back(c, &from, 8, out, 8), 1);
	CHECK_EQ(out[0], pinned);
	check_invariants(c);
	rc_set_write_policy(c, RC_WRITE_BACK);
	CHECK(!rc_may_give_back(c));
	CHECK_EQ(rc_givable(c), 0);
	rm(c);
}

CTEST(fill_error_frees_entry_and_next_read_refills)
{
	struct rc_cache *c = mk(1);
	u32 idx, w, idx2;

	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 9, &w), RC_READ_WAIT);
	CHECK_EQ(rc_fill_done(c, idx, -5, 0, false), RC_FILL_ERROR);
	CHECK_EQ(c->entries[idx].state, RC_FREE);
	CHECK_EQ(c->entries[idx].pins, 0);
	CHECK_EQ(hashed_idx(c, 9), RC_NONE);
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_EQ(read_seg(c, 9, &idx2), RC_READ_FILL);
	CHECK_EQ(idx2, idx);
	CHECK_EQ(rc_fill_done(c, idx2, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx2);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 2, .fill_ios = 2,
		  .fill_sectors = 256, .fill_errors = 1);
	rm(c);
}

CTEST(fill_done_on_non_filling_entry_is_ignored)
{
	struct rc_cache *c = mk(2);
	u32 a = fill_seg(c, 1);

	rc_reset_counters(c);
	CHECK_EQ(rc_fill_done(c, a, 0, 256, false), RC_FILL_ERROR);	/* VALID */
	CHECK_EQ(rc_fill_done(c, 1 - a, 0, 256, false), RC_FILL_ERROR); /* FREE */
	CHECK_EQ(rc_fill_done(c, 2, 0, 256, false), RC_FILL_ERROR);	/* range */
	CHECK_EQ(rc_fill_done(c, RC_NONE, 0, 256, false), RC_FILL_ERROR);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_CTR(c, 0);
	check_invariants(c);
	rm(c);
}

CTEST(unpin_of_unpinned_entry_is_ignored)
{
	struct rc_cache *c = mk(2);
	u32 a = fill_seg(c, 1), f;

	rc_unpin(c, a);			/* VALID, no pins */
	rc_unpin(c, 1 - a);		/* FREE */
	rc_unpin(c, 2);
	rc_unpin(c, RC_NONE);
	check_invariants(c);
	CHECK_EQ(read_seg(c, 2, &f), RC_READ_FILL);
	rc_unpin(c, f);			/* FILLING: only rc_fill_done drops it */
	CHECK_EQ(c->entries[f].pins, 1);
	CHECK_EQ(c->entries[f].state, RC_FILLING);
	check_invariants(c);
	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	check_invariants(c);
	rm(c);
}

/* --- writes against fills ------------------------------------------------- */

CTEST(write_during_fill_makes_it_stale)
{
	struct rc_cache *c = mk(2);
	u32 idx, w, cookie, idx2;

	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 4, &w), RC_READ_WAIT);
	cookie = rc_write_start(c, 4, 8, true);
	/* The filling entry stays in the index until its fill completes. */
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK_EQ(read_seg(c, 4, &w), RC_READ_WAIT);
	CHECK_EQ(rc_write_done(c, 4, cookie, 0, true, &w), RC_WRITE_DONE);
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	CHECK_EQ(c->entries[idx].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 4), RC_NONE);
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .fill_stale = 1, .writes = 1,
		  .write_sectors = 8);

	/* The write has completed: a new read refills and serves. */
	CHECK_EQ(read_seg(c, 4, &idx2), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx2, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx2);
	check_invariants(c);
	rm(c);
}

CTEST(write_in_flight_at_fill_done_makes_it_stale)
{
	struct rc_cache *c = mk(2);
	u32 idx, cookie, w;

	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	cookie = rc_write_start(c, 4, 8, false);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	/* Still in flight: the read after the stale fill bypasses. */
	CHECK_EQ(read_seg(c, 4, &w), RC_READ_BYPASS);
	CHECK_EQ(rc_write_done(c, 4, cookie, 0, false, &w), RC_WRITE_DONE);
	CHECK_EQ(read_seg(c, 4, &w), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, w, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, w);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 2, .read_bypassed = 1,
		  .fill_ios = 2, .fill_sectors = 512, .fill_stale = 1,
		  .writes = 1, .write_sectors = 8);
	rm(c);
}

CTEST(update_policy_write_during_fill_is_stale)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 idx, cookie, w = RC_NONE;

	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	cookie = rc_write_start(c, 4, 8, true);
	CHECK_EQ(rc_write_done(c, 4, cookie, 0, true, &w), RC_WRITE_DONE);
	CHECK_EQ(w, RC_NONE);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .fill_stale = 1, .writes = 1,
		  .write_sectors = 8);
	rm(c);
}

CTEST(fill_error_wins_over_stale)
{
	struct rc_cache *c = mk(2);
	u32 idx, w;

	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	rc_write_done(c, 4, rc_write_start(c, 4, 8, true), 0, true, &w);
	CHECK_EQ(rc_fill_done(c, idx, -5, 0, false), RC_FILL_ERROR);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_errors = 1, .writes = 1, .write_sectors = 8);
	rm(c);
}

CTEST(read_miss_during_write_bypasses)
{
	struct rc_cache *c = mk(4);
	u32 idx, cookie;

	cookie = rc_write_start(c, 11, 16, true);
	CHECK_EQ(read_seg(c, 11, &idx), RC_READ_BYPASS);
	CHECK(rc_idle(c));
	CHECK_EQ(free_len(c), 4);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .writes = 1,
		  .write_sectors = 16);
	CHECK_EQ(rc_write_done(c, 11, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(read_seg(c, 11, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	rm(c);
}

CTEST(write_gen_wraparound_still_detects_race)
{
	struct rc_cache *c = mk(2);
	u32 b, idx, cookie, w;

	for (b = 0; b <= c->wb_mask; b++)
		c->wb_gen[b] = 0xffffffffu;
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);
	CHECK_EQ(c->entries[idx].wgen, 0xffffffffu);
	cookie = rc_write_start(c, 4, 8, true);
	CHECK_EQ(cookie, 0);
	CHECK_EQ(rc_write_done(c, 4, cookie, 0, true, &w), RC_WRITE_DONE);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	check_invariants(c);
	rm(c);
}

/* --- writes against valid entries (invalidate policy) -------------------- */

CTEST(write_invalidates_valid_entry)
{
	struct rc_cache *c = mk(2);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 4, true);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 8), RC_NONE);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(free_len(c), 2);
	check_invariants(c);
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 1, .write_sectors = 4,
		  .invalidations = 1);
	rm(c);
}

CTEST(write_to_uncached_segment_only_counts)
{
	struct rc_cache *c = mk(2);
	u32 idx, a = fill_seg(c, 1);

	rc_reset_counters(c);
	CHECK_EQ(rc_write_done(c, 2, rc_write_start(c, 2, 3, true), 0, true,
			       &idx), RC_WRITE_DONE);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_CTR(c, .writes = 1, .write_sectors = 3);
	check_invariants(c);
	rm(c);
}

CTEST(write_to_pinned_entry_makes_it_dead_until_unpin)
{
	struct rc_cache *c = mk(1);
	u32 a, idx, cookie;

	a = fill_seg(c, 8);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_HIT);	/* reader copying */
	cookie = rc_write_start(c, 8, 8, true);
	CHECK_EQ(c->entries[a].state, RC_DEAD);
	CHECK_EQ(c->entries[a].pins, 1);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(hashed_idx(c, 8), RC_NONE);
	check_invariants(c);
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, true, &idx), RC_WRITE_DONE);
	/* Lookups miss; the dead entry is busy, so the miss bypasses. */
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	CHECK(!rc_idle(c));
	rc_unpin(c, a);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_FILL);	/* reusable, no evict */
	CHECK_EQ(idx, a);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 5, .read_hits = 1, .read_misses = 2,
		  .read_bypassed = 2, .read_bypassed_busy = 2, .fill_ios = 2,
		  .fill_sectors = 512, .writes = 1, .write_sectors = 8,
		  .invalidations = 1);
	rm(c);
}

/* --- update write policy -------------------------------------------------- */

CTEST(update_write_keeps_entry_and_copies)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 4, true);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(wb_inflight_sum(c), 1);
	hit_seg(c, 8, a);		/* still served while the write flies */
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, true, &idx), RC_WRITE_COPY);
	CHECK_EQ(idx, a);
	CHECK_EQ(c->entries[a].pins, 1);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(lru_len(c), 0);
	check_invariants(c);
	rc_unpin(c, a);
	CHECK_EQ(c->lru_head, a);
	CHECK(rc_idle(c));
	check_invariants(c);
	hit_seg(c, 8, a);
	CHECK_CTR(c, .reads = 3, .read_hits = 2, .read_misses = 1,
		  .fill_ios = 1, .fill_sectors = 256, .writes = 1,
		  .write_sectors = 4, .updates = 1);
	rm(c);
}

CTEST(update_overlapping_writes_invalidate)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, c1, c2;

	a = fill_seg(c, 8);
	c1 = rc_write_start(c, 8, 4, true);
	c2 = rc_write_start(c, 8, 4, true);
	CHECK(c1 != c2);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	/* The first write finds a newer one issued meanwhile: drop. */
	CHECK_EQ(rc_write_done(c, 8, c1, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(rc_write_done(c, 8, c2, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 2, .write_sectors = 8,
		  .invalidations = 1);
	rm(c);
}

CTEST(update_overlapping_writes_completing_in_reverse_invalidate)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, c1, c2;

	a = fill_seg(c, 8);
	c1 = rc_write_start(c, 8, 4, true);
	c2 = rc_write_start(c, 8, 4, true);
	/* The newest completes first and may copy; the older one drops. */
	CHECK_EQ(rc_write_done(c, 8, c2, 0, true, &idx), RC_WRITE_COPY);
	CHECK_EQ(idx, a);
	rc_unpin(c, a);
	idx = RC_NONE;
	CHECK_EQ(rc_write_done(c, 8, c1, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 2, .write_sectors = 8,
		  .invalidations = 1, .updates = 1);
	rm(c);
}

CTEST(update_write_while_earlier_copy_runs_invalidates)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, c1, c2;

	a = fill_seg(c, 8);
	c1 = rc_write_start(c, 8, 4, true);
	CHECK_EQ(rc_write_done(c, 8, c1, 0, true, &idx), RC_WRITE_COPY);
	/* Copy of write 1 still running when write 2 is issued and done. */
	c2 = rc_write_start(c, 8, 4, true);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	idx = RC_NONE;
	CHECK_EQ(rc_write_done(c, 8, c2, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_DEAD);
	check_invariants(c);
	rc_unpin(c, a);			/* copy 1 ends: the entry is freed */
	CHECK_EQ(c->entries[a].state, RC_FREE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 2, .write_sectors = 8,
		  .invalidations = 1, .updates = 1);
	rm(c);
}

CTEST(update_copy_allowed_again_after_unpin)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx, i;

	a = fill_seg(c, 8);
	for (i = 0; i < 3; i++) {
		idx = RC_NONE;
		CHECK_EQ(rc_write_done(c, 8, rc_write_start(c, 8, 1, true), 0,
				       true, &idx), RC_WRITE_COPY);
		CHECK_EQ(idx, a);
		CHECK(c->entries[a].updating);
		rc_unpin(c, a);
		CHECK(!c->entries[a].updating);
	}
	check_invariants(c);
	CHECK_EQ(c->ctr.updates, 3);
	CHECK_EQ(c->ctr.invalidations, 0);
	rm(c);
}

CTEST(update_failed_write_invalidates)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 4, true);
	CHECK_EQ(rc_write_done(c, 8, cookie, -5, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 1, .write_sectors = 4,
		  .invalidations = 1);
	rm(c);
}

CTEST(update_discard_invalidates_at_start)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 256, false);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 8), RC_NONE);
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, false, &idx), RC_WRITE_DONE);
	CHECK_EQ(idx, RC_NONE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_ios = 1,
		  .fill_sectors = 256, .writes = 1, .write_sectors = 256,
		  .invalidations = 1);
	rm(c);
}

CTEST(update_done_without_may_update_invalidates)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 4, true);
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, false, &idx), RC_WRITE_DONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(c->ctr.invalidations, 1);
	CHECK_EQ(c->ctr.updates, 0);
	check_invariants(c);
	rm(c);
}

CTEST(update_policy_switched_to_invalidate_midway_drops)
{
	struct rc_cache *c = mk_policy(2, RC_WRITE_UPDATE);
	u32 a, idx = RC_NONE, cookie;

	a = fill_seg(c, 8);
	cookie = rc_write_start(c, 8, 4, true);
	c->write_policy = RC_WRITE_INVALIDATE;
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(c->ctr.invalidations, 1);
	check_invariants(c);
	rm(c);
}

/* --- drop, idle, counters, names ------------------------------------------ */

CTEST(drop_all_frees_idle_and_returns_busy)
{
	struct rc_cache *c = mk(6);
	u32 a, b, f, idx, dead, cookie;

	a = fill_seg(c, 1);
	b = fill_seg(c, 2);
	fill_seg(c, 3);
	dead = fill_seg(c, 4);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);	/* pinned VALID */
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_HIT);
	cookie = rc_write_start(c, 4, 1, true);		/* -> DEAD */
	CHECK_EQ(c->entries[dead].state, RC_DEAD);
	CHECK_EQ(rc_write_done(c, 4, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(read_seg(c, 5, &f), RC_READ_FILL);	/* FILLING */
	rc_reset_counters(c);

	CHECK_EQ(rc_drop_all(c), 3);
	CHECK_EQ(c->entries[b].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 2), RC_NONE);
	CHECK_EQ(hashed_idx(c, 3), RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(c->nr_valid, 1);
	CHECK_EQ(lru_len(c), 0);
	CHECK_EQ(free_len(c), 3);
	CHECK_CTR(c, 0);		/* dropping is not invalidation */
	check_invariants(c);

	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	rc_unpin(c, a);
	CHECK_EQ(rc_drop_all(c), 1);	/* the dead one */
	rc_unpin(c, dead);
	CHECK_EQ(rc_drop_all(c), 0);
	CHECK_EQ(free_len(c), 6);
	CHECK_EQ(c->nr_valid, 0);
	CHECK(rc_idle(c));
	check_invariants(c);
	rm(c);
}

CTEST(idle_tracks_fills_and_pins)
{
	struct rc_cache *c = mk(2);
	u32 a, idx;

	CHECK(rc_idle(c));
	CHECK_EQ(read_seg(c, 1, &a), RC_READ_FILL);
	CHECK(!rc_idle(c));
	CHECK_EQ(rc_fill_done(c, a, 0, 256, false), RC_FILL_SERVE);
	CHECK(!rc_idle(c));
	rc_unpin(c, a);
	CHECK(rc_idle(c));
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);
	CHECK(!rc_idle(c));
	rc_unpin(c, idx);
	CHECK(rc_idle(c));
	/* Writes in flight do not make the cache busy. */
	rc_write_start(c, 7, 1, true);
	CHECK(rc_idle(c));
	rm(c);
}

CTEST(reset_counters_zeroes_all)
{
	struct rc_cache *c = mk(2);
	u32 a, idx;

	a = fill_seg(c, 1);
	hit_seg(c, 1, a);
	rc_write_done(c, 1, rc_write_start(c, 1, 9, true), 0, true, &idx);
	rc_count_waited(c, 5);
	CHECK(c->ctr.reads && c->ctr.writes && c->ctr.invalidations);
	rc_reset_counters(c);
	CHECK_CTR(c, 0);
	/* State is untouched. */
	CHECK_EQ(free_len(c), 2);
	check_invariants(c);
	rm(c);
}

CTEST(policy_parse_and_name)
{
	CHECK_EQ(rc_policy_parse("always"), RC_POLICY_ALWAYS);
	CHECK_EQ(rc_policy_parse("off"), RC_POLICY_OFF);
	CHECK_EQ(rc_policy_parse(""), -1);
	CHECK_EQ(rc_policy_parse("alway"), -1);
	CHECK_EQ(rc_policy_parse("alwayss"), -1);
	CHECK_EQ(rc_policy_parse("OFF"), RC_POLICY_OFF);
	CHECK_EQ(rc_policy_parse("Always"), RC_POLICY_ALWAYS);
	CHECK_EQ(rc_policy_parse("of"), -1);
	CHECK_STREQ(rc_policy_name(RC_POLICY_ALWAYS), "always");
	CHECK_STREQ(rc_policy_name(RC_POLICY_OFF), "off");
	CHECK_STREQ(rc_policy_name(RC_POLICY_NR), "?");
}

/* --- index correctness ---------------------------------------------------- */

CTEST(hash_collisions_small_cache)
{
	/* up to the last segment a sector names with 256-sector segments */
	static const u64 segs[] = {
		0, 1, 2, 3, 8, 16, 1ull << 32, (1ull << 32) + 1,
		1ull << 40, (1ull << 40) + 8, 1ull << 48, 1ull << 52,
		1ull << 54, (1ull << 55) - 1, 1ull << 55, (1ull << 55) + 1,
		(1ull << 55) + 2, (1ull << 55) + (1ull << 32), (1ull << 56) - 1,
		(1ull << 56) - 2, (1ull << 56) - (1ull << 32), 0x55555555555555ull,
		0xaaaaaaaaaaaaaaull, 0x61c8864680b583ull, 12345,
		(1ull << 55) | 12345, 7ull << 53, 3ull << 54,
	};
	const u32 nsegs = ARRAY_SIZE(segs);
	struct rc_cache *c = mk(4);
	u32 idx[ARRAY_SIZE(segs)];
	u32 k, j, longest = 0, wr[4] = { 2, 0, 3, 1 };

	/* Sliding window: each fill evicts the oldest of the last four. */
	for (k = 0; k < nsegs; k++) {
		idx[k] = fill_seg(c, segs[k]);
		check_invariants(c);
		if (max_chain(c) > longest)
			longest = max_chain(c);
		for (j = k >= 3 ? k - 3 : 0; j <= k; j++)
			hit_seg(c, segs[j], idx[j]);
		if (k >= 4)
			CHECK_EQ(hashed_idx(c, segs[k - 4]), RC_NONE);
	}
	CHECK_EQ(c->ctr.evictions, nsegs - 4);
	/* Groups of four: invalidate in mixed order, from any chain position. */
	for (k = 0; k + 4 <= nsegs; k += 4) {
		CHECK_EQ(rc_drop_all(c), 0);
		for (j = 0; j < 4; j++)
			idx[k + j] = fill_seg(c, segs[k + j]);
		if (max_chain(c) > longest)
			longest = max_chain(c);
		for (j = 0; j < 4; j++) {
			u32 v = k + wr[j], i2, r;

			rc_write_done(c, segs[v],
				      rc_write_start(c, segs[v], 1, true),
				      0, true, &i2);
			CHECK_EQ(hashed_idx(c, segs[v]), RC_NONE);
			for (r = j + 1; r < 4; r++)
				hit_seg(c, segs[k + wr[r]], idx[k + wr[r]]);
			check_invariants(c);
		}
		CHECK_EQ(free_len(c), 4);
	}
	CHECK(longest >= 2);	/* chains were exercised */
	CHECK_EQ(c->ctr.read_misses, nsegs + (nsegs & ~3u));
	rm(c);
}

CTEST(million_entries_all_hit)
{
	const u32 n = 1u << 20;
	const u64 base = (1ull << 54) + 12345;
	struct rc_cache *c = mk(n);
	u32 i, idx;

	for (i = 0; i < n; i++) {
		CHECK_EQ(read_seg(c, base + i, &idx), RC_READ_FILL);
		CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
		rc_unpin(c, idx);
	}
	CHECK_EQ(c->nr_valid, n);
	CHECK_EQ(c->free_head, RC_NONE);
	CHECK(max_chain(c) <= 8);
	for (i = 0; i < n; i++) {
		CHECK_EQ(read_seg(c, base + i, &idx), RC_READ_HIT);
		CHECK_EQ(c->entries[idx].seg, base + i);
		rc_unpin(c, idx);
	}
	CHECK_EQ(c->ctr.read_hits, n);
	CHECK_EQ(c->ctr.read_misses, n);
	CHECK_EQ(c->ctr.evictions, 0);
	CHECK_EQ(lru_len(c), n);
	/* One more segment evicts the least recently hit: base + 0. */
	i = c->lru_tail;
	CHECK_EQ(c->entries[i].seg, base);
	CHECK_EQ(read_seg(c, base + n, &idx), RC_READ_FILL);
	CHECK_EQ(idx, i);
	CHECK_EQ(c->ctr.evictions, 1);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(read_seg(c, base + 1, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	/* base + 1 was refreshed, so base itself now evicts base + 2. */
	i = c->lru_tail;
	CHECK_EQ(c->entries[i].seg, base + 2);
	CHECK_EQ(read_seg(c, base, &idx), RC_READ_FILL);
	CHECK_EQ(idx, i);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(c->ctr.evictions, 2);
	rm(c);
}

/* --- randomized model check ---------------------------------------------- */

#define ST_ENTRIES	64
#define ST_SEGS		256
#define ST_OPS		200000
#define ST_MAXW		16
#define ST_MAXP		1024
#define ST_HELD_HITS	24	/* read hits holding their pin at once */

/* Skewed: a few very hot segments, a warm set, and the cold rest. */
static u64 st_pick_seg(void)
{
	u32 r = ctest_rand(8);

	if (r < 2)
		return ctest_rand(4);
	if (r < 6)
		return ctest_rand(32);
	return ctest_rand(ST_SEGS);
}

struct st_write {
	u64 seg;
	u32 cookie, version;
	bool landed, may_update;
};

enum st_pin_kind { ST_PIN_HIT, ST_PIN_SERVE, ST_PIN_COPY };

struct st_pin {
	u32 idx, version;
	u64 seg;
	enum st_pin_kind kind;
};

struct st_fill {
	bool active, read, raced;
	u32 data, waiters;
};

struct st {
	struct rc_cache *c;
	u32 disk[ST_SEGS];		/* version on disk */
	u32 incomplete[ST_SEGS];	/* writes not yet completed upward */
	u32 inflight[ST_SEGS];		/* writes between start and done */
	u32 data[ST_ENTRIES];		/* version in the entry's buffer */
	struct st_fill fill[ST_ENTRIES];
	struct st_write w[ST_MAXW];
	u32 nw;
	struct st_pin p[ST_MAXP];
	u32 np;
	u32 version;
	u32 hdc_pins, hdc_unpins;	/* HDC pins begun and ended by unpin/keep */
	u32 give_from;			/* rc_give_back()'s walk */
	struct rc_counters want;
};

static u32 st_seg_idx(struct st *s, u64 seg)
{
	u32 i;

	for (i = 0; i < ST_ENTRIES; i++) {
		const struct rc_entry *e = &s->c->entries[i];

		if ((e->state == RC_FILLING || e->state == RC_VALID) &&
		    e->seg == seg)
			return i;
	}
	return RC_NONE;
}

static void st_add_pin(struct st *s, u32 idx, u64 seg,
		       enum st_pin_kind kind, u32 version)
{
	CHECK(s->np < ST_MAXP);
	s->p[s->np++] = (struct st_pin){ idx, version, seg, kind };
}

static u32 st_ghost_idx(const struct st *s, u64 seg)
{
	u32 i;

	for (i = 0; i < s->c->nr_entries; i++)
		if (s->c->entries[i].state == RC_GHOST && s->c->entries[i].seg == seg)
			return i;
	return RC_NONE;
}

static void st_read(struct st *s)
{
	u64 seg = st_pick_seg();
	u32 expect = st_seg_idx(s, seg), nfree = free_len(s->c), idx = RC_NONE;
	u32 ghost = st_ghost_idx(s, seg), tail = s->c->lru_tail;
	u64 busy = s->c->ctr.read_bypassed_busy;
	/* A GHOST takes a bare entry first; active, nothing is bare (st_regrow()). */
	u32 nbare = bare_len(s->c);
	bool no_victim = !nfree && !nbare && tail == RC_NONE;
	bool tail_valid = tail != RC_NONE && s->c->entries[tail].state == RC_VALID;
	bool pinned = expect != RC_NONE && s->c->entries[expect].hdc;
	enum rc_read_action a;

	a = read_seg(s->c, seg, &idx);
	busy = s->c->ctr.read_bypassed_busy - busy;
	s->want.reads++;
	/* Inactive, HDC's pinned segments serve as they would active. */
	if (!rc_active(s->c) && !pinned) {
		/* Inactive: bypass, and the simulated cache moves on. */
		CHECK_EQ(a, RC_READ_BYPASS);
		CHECK_EQ(busy, 0);
		s->want.read_bypassed++;
		s->want.read_bypassed_inactive++;
		if (expect != RC_NONE || ghost != RC_NONE) {
			CHECK_EQ(rs.sim, RC_SIM_HIT);
			s->want.sim_hits++;
		} else if (no_victim || s->inflight[seg]) {
			CHECK_EQ(rs.sim, RC_SIM_BYPASS);
		} else if (rs.sim == RC_SIM_BYPASS) {
			CHECK(s->nw > 0);	/* a write to the bucket flies */
		} else {
			CHECK_EQ(rs.sim, RC_SIM_MISS);
			CHECK(st_ghost_idx(s, seg) != RC_NONE);
			s->want.sim_misses++;
			if (!nfree && !nbare && tail_valid)
				s->want.evictions++;
		}
		return;
	}
	CHECK_EQ(rs.sim, RC_SIM_NONE);
	if (rc_active(s->c))
		CHECK_EQ(s->c->nr_bare, 0);
	if (a != RC_READ_BYPASS)
		CHECK_EQ(busy, 0);
	if (s->inflight[seg] && expect == RC_NONE)
		CHECK_EQ(a, RC_READ_BYPASS);
	switch (a) {
	case RC_READ_HIT:
		CHECK_EQ(idx, expect);
		CHECK_EQ(s->c->entries[idx].state, RC_VALID);
		/* No write in flight: the cache must agree with the disk. */
		if (!s->incomplete[seg])
			CHECK_EQ(s->data[idx], s->disk[seg]);
		s->want.read_hits++;
		s->want.hdc_hits += pinned;
		if (s->np < ST_HELD_HITS && ctest_rand(4))
			st_add_pin(s, idx, seg, ST_PIN_HIT, 0);
		else
			rc_unpin(s->c, idx);
		break;
	case RC_READ_WAIT:
		CHECK_EQ(idx, expect);
		CHECK_EQ(s->c->entries[idx].state, RC_FILLING);
		CHECK(s->fill[idx].active);
		s->fill[idx].waiters++;
		break;
	case RC_READ_FILL:
		CHECK_EQ(expect, RC_NONE);
		CHECK_EQ(s->inflight[seg], 0);
		CHECK(!s->fill[idx].active);
		s->fill[idx] = (struct st_fill){ .active = true };
		s->want.read_misses++;
		if (!nfree && ghost == RC_NONE && tail_valid)
			s->want.evictions++;
		CHECK_EQ(st_ghost_idx(s, seg), RC_NONE);
		break;
	case RC_READ_BYPASS:
		CHECK_EQ(expect, RC_NONE);
		s->want.read_bypassed++;
		/*
		 * Busy only with no victim; otherwise (or if a write to the
		 * bucket, unknown here, took precedence) some write flies.
		 */
		CHECK(busy <= 1);
		CHECK(!busy || no_victim);
		if (!busy)
			CHECK(s->nw > 0);
		if (!no_victim)
			CHECK(!busy);
		s->want.read_bypassed_busy += busy;
		break;
	case RC_READ_MERGE:	/* only with the write cache, never on here */
		CHECK(false);
		break;
	}
}

static u32 st_pick_fill(struct st *s, bool unread)
{
	u32 i, k = ctest_rand(ST_ENTRIES);

	for (i = 0; i < ST_ENTRIES; i++) {
		u32 j = (k + i) % ST_ENTRIES;

		if (s->fill[j].active && (!unread || !s->fill[j].read))
			return j;
	}
	return RC_NONE;
}

/* The fill's disk read happens now. */
static void st_fill_read(struct st *s, u32 i)
{
	s->fill[i].read = true;
	s->fill[i].data = s->disk[s->c->entries[i].seg];
}

static void st_fill_done(struct st *s, u32 i)
{
	u64 seg = s->c->entries[i].seg;
	int err = ctest_rand(20) ? 0 : -5;
	enum rc_fill_action a;

	if (!s->fill[i].read)
		st_fill_read(s, i);
	a = rc_fill_done(s->c, i, err, 256, false);
	s->want.fill_ios++;
	s->want.fill_sectors += 256;
	if (err) {
		CHECK_EQ(a, RC_FILL_ERROR);
		s->want.fill_errors++;
	} else if (a == RC_FILL_STALE) {
		s->want.fill_stale++;
	} else {
		CHECK_EQ(a, RC_FILL_SERVE);
		/* The main property: a served fill holds the current data. */
		CHECK(!s->fill[i].raced);
		CHECK_EQ(s->fill[i].data, s->disk[seg]);
		s->data[i] = s->fill[i].data;
		rc_count_waited(s->c, s->fill[i].waiters);
		s->want.read_hits_waited += s->fill[i].waiters;
		st_add_pin(s, i, seg, ST_PIN_SERVE, 0);
	}
	if (a != RC_FILL_SERVE)
		CHECK_EQ(s->c->entries[i].state, RC_FREE);
	s->fill[i].active = false;
}

static void st_unpin(struct st *s, u32 k)
{
	struct st_pin p = s->p[k];

	s->p[k] = s->p[--s->np];
	if (p.kind == ST_PIN_COPY) {
		s->data[p.idx] = p.version;	/* the copy lands now */
		rc_unpin(s->c, p.idx);
		s->incomplete[p.seg]--;		/* the write completes */
	} else {
		rc_unpin(s->c, p.idx);
	}
}

static void st_write_start(struct st *s)
{
	u64 seg = st_pick_seg();
	bool may_update = ctest_rand(4) != 0;
	u32 before = st_seg_idx(s, seg), i;
	struct st_write *w;

	if (s->nw == ST_MAXW)
		return;
	w = &s->w[s->nw++];
	w->seg = seg;
	w->may_update = may_update;
	w->landed = false;
	w->version = ++s->version;
	w->cookie = rc_write_start(s->c, seg, 8, may_update);
	s->want.writes++;
	s->want.write_sectors += 8;
	s->incomplete[seg]++;
	s->inflight[seg]++;
	for (i = 0; i < ST_ENTRIES; i++)
		if (s->fill[i].active && s->c->entries[i].seg == seg)
			s->fill[i].raced = true;
	if (before != RC_NONE && st_seg_idx(s, seg) == RC_NONE)
		s->want.invalidations++;
	if (s->c->write_policy != RC_WRITE_UPDATE || !may_update) {
		i = st_seg_idx(s, seg);
		CHECK(i == RC_NONE || s->c->entries[i].state == RC_FILLING);
	}
}

static void st_write_land(struct st_write *w, struct st *s)
{
	s->disk[w->seg] = w->version;
	w->landed = true;
}

static void st_write_done(struct st *s, u32 k)
{
	struct st_write w = s->w[k];
	int err = ctest_rand(20) ? 0 : -5;
	u32 before, i, idx = RC_NONE;
	enum rc_write_action a;

	s->w[k] = s->w[--s->nw];
	/* A failed write may or may not have reached the disk. */
	if (!w.landed && !err)
		st_write_land(&w, s);
	before = st_seg_idx(s, w.seg);
	a = rc_write_done(s->c, w.seg, w.cookie, err, w.may_update, &idx);
	s->inflight[w.seg]--;
	if (a == RC_WRITE_COPY) {
		CHECK_EQ(s->c->write_policy, RC_WRITE_UPDATE);
		CHECK(w.may_update && !err);
		CHECK_EQ(idx, before);
		CHECK_EQ(s->c->entries[idx].seg, w.seg);
		s->want.updates++;
		st_add_pin(s, idx, w.seg, ST_PIN_COPY, w.version);
		return;
	}
	CHECK_EQ(a, RC_WRITE_DONE);
	i = st_seg_idx(s, w.seg);
	CHECK(i == RC_NONE || s->c->entries[i].state == RC_FILLING);
	if (before != RC_NONE && i == RC_NONE)
		s->want.invalidations++;
	s->incomplete[w.seg]--;
}

static void st_check(struct st *s)
{
	u32 b, sum = 0, i, owner[ST_SEGS];

	check_invariants(s->c);
	for (b = 0; b <= s->c->wb_mask; b++)
		sum += s->c->wb_inflight[b];
	CHECK_EQ(sum, s->nw);
	/* every pin begun ended by an unpin, in hdc_dropped, or still on */
	CHECK_EQ(s->c->nr_hdc, s->hdc_pins - s->hdc_unpins - s->c->ctr.hdc_dropped);
	for (i = 0; i < ST_SEGS; i++)
		owner[i] = RC_NONE;
	for (i = 0; i < ST_ENTRIES; i++) {
		const struct rc_entry *e = &s->c->entries[i];

		CHECK_EQ(s->fill[i].active, e->state == RC_FILLING);
		if (e->state != RC_FILLING && e->state != RC_VALID)
			continue;
		CHECK(e->seg < ST_SEGS);
		CHECK_EQ(owner[e->seg], RC_NONE);
		owner[e->seg] = i;
	}
}

/*
 * HDC pins a segment: where it is, or by a fill no read waits on yet
 * (rc_hdc_pin()); a full set or a busy segment changes nothing.
 */
static void st_hdc_pin(struct st *s)
{
	u64 seg = st_pick_seg();
	u32 expect = st_seg_idx(s, seg), ghost = st_ghost_idx(s, seg), tail = s->c->lru_tail;
	u32 nfree = free_len(s->c), nr = s->c->nr_hdc, idx = RC_NONE;
	bool was = expect != RC_NONE && s->c->entries[expect].hdc;
	bool tail_valid = tail != RC_NONE && s->c->entries[tail].state == RC_VALID;
	/* Bare GHOSTs at the LRU's tail are dropped until a victim holds a buffer. */
	u32 bare = s->c->nr_bare;
	u64 evictions = s->c->ctr.evictions;

	switch (rc_hdc_pin(s->c, seg, &idx)) {
	case RC_HDC_PINNED:
		CHECK(expect != RC_NONE);
		CHECK(s->c->entries[expect].hdc);
		s->hdc_pins += !was;
		break;
	case RC_HDC_FILL:
		CHECK_EQ(expect, RC_NONE);
		CHECK_EQ(s->inflight[seg], 0);
		CHECK(!s->fill[idx].active);
		s->fill[idx] = (struct st_fill){ .active = true };
		s->hdc_pins++;
		s->want.hdc_fills++;
		CHECK(!rc_bare(s->c, idx));
		if (bare)
			s->want.evictions += s->c->ctr.evictions - evictions;
		else if (!nfree && ghost == RC_NONE && tail_valid)
			s->want.evictions++;
		break;
	case RC_HDC_FULL:
		CHECK(!was);
		CHECK(nr >= rc_hdc_max(s->c));
		break;
	case RC_HDC_BUSY:
		CHECK(!was);
		CHECK_EQ(s->c->nr_hdc, nr);
		break;
	}
}

/* A new period's set, a few segments, replaces the old in steps of 7 entries. */
static void st_hdc_keep(struct st *s)
{
	u64 keep[3];
	u32 n = ctest_rand(4), i, j, nr = s->c->nr_hdc, from = 0;

	for (i = 0; i < n; i++) {		/* sorted, duplicates allowed */
		keep[i] = st_pick_seg();
		for (j = i; j && keep[j - 1] > keep[j]; j--) {
			u64 t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	}
	while (from < ST_ENTRIES)
		from = rc_hdc_keep(s->c, keep, n, from, 7);
	CHECK(s->c->nr_hdc <= nr);
	s->hdc_unpins += nr - s->c->nr_hdc;
	for (i = 0; i < ST_ENTRIES; i++)
		if (s->c->entries[i].hdc)
			for (j = 0; j < n && keep[j] != s->c->entries[i].seg; j++)
				CHECK(j + 1 < n);
}

/*
 * The cache gives buffers back (rc_give_back()): only while it may, never
 * more than asked, VALID entries becoming GHOSTs where they are.
 */
static void st_give_back(struct st *s)
{
	u32 out[8], max = 1 + ctest_rand(8), n, k;
	u32 bare = s->c->nr_bare, held = s->c->nr_valid + s->c->nr_ghost;
	bool may = rc_may_give_back(s->c);

	n = rc_give_back(s->c, &s->give_from, 1 + ctest_rand(16), out, max);
	CHECK(n <= (may ? max : 0));
	CHECK(s->give_from < ST_ENTRIES);
	CHECK_EQ(s->c->nr_bare, bare + n);
	CHECK_EQ(s->c->nr_valid + s->c->nr_ghost, held);
	for (k = 0; k < n; k++)
		CHECK(rc_bare(s->c, out[k]));
	s->want.given_back += n;
}

/* Every bare entry gets its buffer back (the glue's regrow). */
static void st_regrow(struct st *s)
{
	u32 i;

	for (i = 0; i < ST_ENTRIES; i++)
		if (rc_bare(s->c, i)) {
			rc_regrown(s->c, i);
			s->want.regrown++;
		}
	CHECK_EQ(s->c->nr_bare, 0);
	CHECK_EQ(bare_len(s->c), 0);
}

enum st_op {
	ST_READ, ST_FILL_READ, ST_FILL_DONE, ST_UNPIN, ST_WRITE_START,
	ST_WRITE_LAND, ST_WRITE_DONE, ST_HDC_PIN, ST_HDC_KEEP, ST_GIVE_BACK, ST_NR_OPS
};

/* Per-phase op weights, so runs see both calm and write-heavy mixes. */
static void st_new_phase(u32 *weight)
{
	u32 k;

	for (k = 0; k < ST_NR_OPS; k++)
		weight[k] = 1 + ctest_rand(10);
	weight[ST_READ] += 10;
}

static enum st_op st_pick_op(const u32 *weight)
{
	u32 k, total = 0, r;

	for (k = 0; k < ST_NR_OPS; k++)
		total += weight[k];
	r = ctest_rand(total);
	for (k = 0; r >= weight[k]; k++)
		r -= weight[k];
	return (enum st_op)k;
}

static void st_step(struct st *s, enum st_op op)
{
	u32 k;

	switch (op) {
	case ST_READ:
		st_read(s);
		break;
	case ST_FILL_READ:
		k = st_pick_fill(s, true);
		if (k != RC_NONE)
			st_fill_read(s, k);
		break;
	case ST_FILL_DONE:
		k = st_pick_fill(s, false);
		if (k != RC_NONE)
			st_fill_done(s, k);
		break;
	case ST_UNPIN:
		if (s->np)
			st_unpin(s, ctest_rand(s->np));
		break;
	case ST_WRITE_START:
		st_write_start(s);
		break;
	case ST_WRITE_LAND:
		if (s->nw) {
			k = ctest_rand(s->nw);
			if (!s->w[k].landed)
				st_write_land(&s->w[k], s);
		}
		break;
	case ST_WRITE_DONE:
		if (s->nw)
			st_write_done(s, ctest_rand(s->nw));
		break;
	case ST_HDC_PIN:
		st_hdc_pin(s);
		break;
	case ST_HDC_KEEP:
		if (!ctest_rand(8))
			st_hdc_keep(s);
		break;
	case ST_GIVE_BACK:
		st_give_back(s);
		break;
	default:
		CHECK(0);
	}
}

/* --- the eviction history (RC_HIST_SPAN) ------------------------------------ */

/* Read @seg whole: a hit, or a miss filled and served; true on a hit. */
static bool lru_read(struct rc_cache *c, u64 seg)
{
	u32 idx = RC_NONE;

	if (read_seg(c, seg, &idx) == RC_READ_HIT) {
		rc_unpin(c, idx);
		return true;
	}
	CHECK(idx < c->nr_entries);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	return false;
}

static struct rc_cache *mk_lru(u32 n)
{
	struct rc_cache *c = mk(n);

	rc_set_tunable(c, RC_TUN_PREFETCH, 0);	/* a plain LRU: one fill a miss */
	return c;
}

/*
 * A segment k evictions back is at depth 4 + k: a cache of 8 holds it
 * while k <= 4, one of 16 while k <= 12; further back it has left the
 * history (3 x 4 slots).  Segments 10 apart: no stream.
 */
CTEST(hist_counts_the_fills_a_larger_cache_would_not_make)
{
	static const struct {
		u32 others;		/* segments read after seg 10 */
		u64 x2, x4;
	} cases[] = { { 7, 1, 1 }, { 8, 0, 1 }, { 15, 0, 1 }, { 16, 0, 0 } };
	u32 k, j;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct rc_cache *c = mk_lru(4);

		CHECK(!lru_read(c, 10));
		for (j = 1; j <= cases[k].others; j++)
			CHECK(!lru_read(c, 10 + 10 * j));
		CHECK(!lru_read(c, 10));
		CHECK_CTR(c, .reads = cases[k].others + 2, .read_misses = cases[k].others + 2,
			  .fill_ios = cases[k].others + 2, .fill_sectors = 256 * (cases[k].others + 2),
			  .evictions = cases[k].others - 2, .x2_fills_saved = cases[k].x2,
			  .x4_fills_saved = cases[k].x4);
		check_invariants(c);
		rm(c);
	}
}

/*
 * The property the advice rests on: over any reads, the fills a plain LRU
 * of N entries counts as saved at twice (four times) the entries are the
 * reads that miss it and hit a plain LRU of 2N (4N) entries.  Four times:
 * a floor, as a segment evicted 6N evictions before leaves the ring (1 of
 * 7512 here; exact with a ring of 12N, checked when it was built).
 */
CTEST(hist_matches_larger_lrus)
{
	struct rc_cache *c = mk_lru(16), *c2 = mk_lru(32), *c4 = mk_lru(64);
	u64 seg, x2 = 0, x4 = 0;
	u32 op, skew;

	for (op = 0; op < 20000; op++) {
		bool h;

		/* a hot set, a warm set and a long tail, 10 apart */
		skew = ctest_rand(8);
		seg = 10 * (skew < 3 ? ctest_rand(12) : skew < 6 ? ctest_rand(60) : ctest_rand(400));
		h = lru_read(c, seg);
		x2 += !h && lru_read(c2, seg);
		if (h)
			lru_read(c2, seg);
		x4 += !h && lru_read(c4, seg);
		if (h)
			lru_read(c4, seg);
	}
	CHECK_EQ(c->ctr.x2_fills_saved, x2);
	CHECK(c->ctr.x4_fills_saved <= x4 && c->ctr.x4_fills_saved >= x4 - x4 / 1000);
	CHECK(x2 > 1000 && x4 > x2 + 1000);
	check_invariants(c);
	rm(c);
	rm(c2);
	rm(c4);
}

/* The simulated cache's fills (inactive) count; a write's allocation does not. */
CTEST(hist_counts_simulated_fills_not_write_allocations)
{
	struct rc_cache *c = mk_lru(2);
	u32 idx;

	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 10, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 20, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 30, &idx), RC_READ_BYPASS);	/* evicts 10 */
	CHECK_EQ(read_seg(c, 10, &idx), RC_READ_BYPASS);	/* evicts 20; 10 1 back */
	CHECK_EQ(c->ctr.x2_fills_saved, 1);
	CHECK_EQ(c->ctr.sim_misses, 4);
	rm(c);
}

CTEST(stress_random_model)
{
	static struct st s;
	u32 op, k, weight[ST_NR_OPS];

	memset(&s, 0, sizeof(s));
	s.c = mk(ST_ENTRIES);
	for (op = 0; op < ST_OPS; op++) {
		if (!(op % 4096)) {
			st_new_phase(weight);
			s.c->write_policy = ctest_rand(2) ? RC_WRITE_UPDATE :
						     RC_WRITE_INVALIDATE;
			rc_set_policy(s.c, ctest_rand(4) ? RC_POLICY_ALWAYS :
					   RC_POLICY_OFF);
			rc_set_tunable(s.c, RC_TUN_HDC, ctest_rand(3) * 25);
			if (rc_regrow_due(s.c))
				st_regrow(&s);
		}
		if (!ctest_rand(2000)) {
			u32 busy = rc_drop_all(s.c);

			CHECK_EQ(busy, s.c->nr_pinned);
			CHECK_EQ(lru_len(s.c), 0);
		} else {
			st_step(&s, st_pick_op(weight));
		}
		st_check(&s);
	}
	/* Drain: everything completes, the cache goes idle. */
	while (s.nw)
		st_write_done(&s, 0);
	while ((k = st_pick_fill(&s, false)) != RC_NONE)
		st_fill_done(&s, k);
	while (s.np)
		st_unpin(&s, 0);
	st_regrow(&s);
	st_check(&s);
	CHECK(rc_idle(s.c));
	for (k = 0; k < ST_SEGS; k++) {
		CHECK_EQ(s.incomplete[k], 0);
		CHECK_EQ(s.inflight[k], 0);
	}
	s.want.hdc_dropped = s.c->ctr.hdc_dropped;	/* checked by st_check() */
	/* the history's structure by st_check(), its counts by hist_* tests */
	s.want.x2_fills_saved = s.c->ctr.x2_fills_saved;
	s.want.x4_fills_saved = s.c->ctr.x4_fills_saved;
	check_ctr_at(__LINE__, &s.c->ctr, &s.want);
	/* Sanity: the run exercised every path. */
	CHECK(s.want.hdc_fills > 100);
	CHECK(s.want.hdc_hits > 1000);
	CHECK(s.want.hdc_dropped > 100);
	CHECK(s.hdc_unpins > 100);
	CHECK(s.want.read_hits > 1000);
	CHECK(s.want.read_hits_waited > 100);
	CHECK(s.want.fill_stale > 100);
	CHECK(s.want.fill_errors > 100);
	CHECK(s.want.evictions > 1000);
	CHECK(s.want.invalidations > 1000);
	CHECK(s.want.updates > 100);
	CHECK(s.want.read_bypassed_busy > 0);
	CHECK(s.want.sim_hits > 100);
	CHECK(s.want.sim_misses > 100);
	CHECK(s.want.given_back > 100);
	CHECK(s.want.regrown > 100);
	CHECK(s.want.read_bypassed_inactive > s.want.sim_hits + s.want.sim_misses);
	CHECK_EQ(rc_drop_all(s.c), 0);
	CHECK_EQ(free_len(s.c), ST_ENTRIES);
	rm(s.c);
}

/* Fill segment @seg to VALID and unpin it; returns its entry. */
static u32 cache_seg(struct rc_cache *c, u64 seg)
{
	u32 idx;

	CHECK_EQ(read_seg(c, seg, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 8, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	return idx;
}

CTEST(small_range_invalidates_covered_segments_only)
{
	struct rc_cache *c = mk(8);
	u32 idx;
	u64 s;

	for (s = 10; s < 16; s++)
		cache_seg(c, s);
	rc_reset_counters(c);
	rc_range_start(c, secs(c, 11), secs(c, 3));		/* segments 11, 12, 13 */
	CHECK_EQ(hashed_idx(c, 10) != RC_NONE, 1);
	CHECK_EQ(hashed_idx(c, 11), RC_NONE);
	CHECK_EQ(hashed_idx(c, 13), RC_NONE);
	CHECK_EQ(hashed_idx(c, 14) != RC_NONE, 1);
	/* No fill of a covered segment while the range is in flight. */
	CHECK_EQ(read_seg(c, 12, &idx), RC_READ_BYPASS);
	rc_range_done(c, secs(c, 11), secs(c, 3));
	check_invariants(c);
	CHECK_EQ(wb_inflight_sum(c), 0);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .writes = 1, .write_sectors = secs(c, 3),
		  .invalidations = 3);
	CHECK_EQ(read_seg(c, 12, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 8, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	rm(c);
}

CTEST(large_range_drops_covered_and_holds_off_fills)
{
	struct rc_cache *c = mk(8);
	u64 first = 1000, nr = RC_RANGE_SMALL + 100;
	u32 in_fill, idx;

	cache_seg(c, first - 1);
	cache_seg(c, first);
	cache_seg(c, first + nr - 1);
	cache_seg(c, first + nr);
	CHECK_EQ(read_seg(c, first + 5, &in_fill), RC_READ_FILL);
	rc_reset_counters(c);

	rc_range_start(c, secs(c, first), secs(c, nr));
	CHECK_EQ(hashed_idx(c, first - 1) != RC_NONE, 1);
	CHECK_EQ(hashed_idx(c, first), RC_NONE);
	CHECK_EQ(hashed_idx(c, first + nr - 1), RC_NONE);
	CHECK_EQ(hashed_idx(c, first + nr) != RC_NONE, 1);
	/* Any new fill waits for the range, even far away. */
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);
	/* The covered fill in flight must not install. */
	CHECK_EQ(rc_fill_done(c, in_fill, 0, 8, false), RC_FILL_STALE);
	rc_range_done(c, secs(c, first), secs(c, nr));
	CHECK_EQ(c->range_inflight, 0);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .writes = 1, .write_sectors = secs(c, nr),
		  .invalidations = 2, .fill_ios = 1, .fill_sectors = 8, .fill_stale = 1);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_FILL);
	rm(c);
}

CTEST(large_range_keeps_pinned_entry_until_unpin)
{
	struct rc_cache *c = mk(4);
	u32 idx, hit;

	idx = cache_seg(c, 3);
	CHECK_EQ(read_seg(c, 3, &hit), RC_READ_HIT);
	rc_range_start(c, secs(c, 0), secs(c, 1ull << 40));
	CHECK_EQ(c->entries[idx].state, RC_DEAD);
	CHECK_EQ(hashed_idx(c, 3), RC_NONE);
	rc_unpin(c, hit);
	CHECK_EQ(c->entries[idx].state, RC_FREE);
	rc_range_done(c, secs(c, 0), secs(c, 1ull << 40));
	check_invariants(c);
	rm(c);
}

/* --- the simulated cache of the inactive state (GHOST entries) ------------ */

/* Ghost entries on the simulated cache's LRU, by count. */
static u32 ghosts_on_lru(const struct rc_cache *c)
{
	u32 i, n = 0;

	for (i = c->lru_head; i != RC_NONE; i = c->entries[i].next)
		n += c->entries[i].state == RC_GHOST;
	return n;
}

/* Inactive: a miss bypasses and leaves a GHOST; ghosts and valid segments sim-hit. */
CTEST(sim_miss_makes_ghost_and_hits_bypass)
{
	struct rc_cache *c = mk(4);
	u32 a, g, idx;

	a = fill_seg(c, 5);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK(!rc_active(c));
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->nr_ghost, 1);
	g = hashed_idx(c, 7);
	CHECK(g != RC_NONE && g != a);
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	CHECK_EQ(c->entries[g].pins, 0);
	CHECK_EQ(c->lru_head, g);
	CHECK_EQ(c->nr_pinned, 0);
	check_invariants(c);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(hashed_idx(c, 7), g);
	/* A VALID segment: a simulated hit, bypassed, not pinned, now most recent. */
	CHECK_EQ(c->lru_tail, a);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(c->entries[a].pins, 0);
	CHECK_EQ(c->lru_head, a);
	CHECK_EQ(c->lru_tail, g);
	CHECK_EQ(c->nr_valid, 1);
	CHECK_EQ(free_len(c), 2);
	check_invariants(c);
	CHECK_CTR(c, .reads = 4, .read_misses = 1, .read_bypassed = 3, .read_bypassed_inactive = 3,
		  .sim_hits = 2, .sim_misses = 1, .fill_ios = 1, .fill_sectors = 256);
	/* Active again: the valid segment hits for real, nothing simulated. */
	rc_set_policy(c, RC_POLICY_ALWAYS);
	hit_seg(c, 5, a);
	CHECK_EQ(rs.sim, RC_SIM_NONE);
	CHECK_CTR(c, .reads = 5, .read_hits = 1, .read_misses = 1, .read_bypassed = 3,
		  .read_bypassed_inactive = 3,
		  .sim_hits = 2, .sim_misses = 1, .fill_ios = 1, .fill_sectors = 256);
	rm(c);
}

/*
 * Inactive, an adaptive policy serves nothing, on either estimator: a
 * read of a segment the cache holds, valid or filling, goes to the disk
 * and is a hit of the simulated cache (the valid segment becomes the most
 * recent, unpinned; the filling one keeps only its fill's pin), and a
 * piece in a held segment joins the bypassed piece before it.  With fills
 * held too, a simulated miss still takes the LRU's tail, valid or not.
 */
CTEST(adaptive_inactive_bypasses_what_is_cached_as_a_simulated_hit)
{
	static const enum rc_estimator est[] = { RC_EST_SPK, RC_EST_VDISK };
	struct rc_cache *c = mk(4);
	u32 a, f, g, x, k, idx = 12345;

	a = fill_seg(c, 5);
	CHECK_EQ(read_seg(c, 6, &f), RC_READ_FILL);
	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	rc_adapt_set_active(&c->adapt, false);
	CHECK(!rc_active(c));
	rc_reset_counters(c);
	for (k = 0; k < ARRAY_SIZE(est); k++) {
		c->adapt.estimator = est[k];
		CHECK_EQ(rc_budgeted(c), est[k] == RC_EST_VDISK);
		CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);
		CHECK_EQ(rs.sim, RC_SIM_HIT);
		CHECK_EQ(c->entries[a].state, RC_VALID);
		CHECK_EQ(c->entries[a].pins, 0);
		CHECK_EQ(c->lru_head, a);
		CHECK_EQ(read_seg(c, 6, &idx), RC_READ_BYPASS);
		CHECK_EQ(rs.sim, RC_SIM_HIT);
		CHECK_EQ(c->entries[f].state, RC_FILLING);
		CHECK_EQ(c->entries[f].pins, 1);	/* the fill's */
		CHECK_EQ(idx, 12345);
	}
	CHECK_CTR(c, .reads = 4, .read_bypassed = 4, .read_bypassed_inactive = 4, .sim_hits = 4);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	g = hashed_idx(c, 7);
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	check_invariants(c);
	CHECK_CTR(c, .reads = 6, .read_bypassed = 6, .read_bypassed_inactive = 6, .sim_hits = 5,
		  .sim_misses = 1);

	/* A bypassed piece in 4, then 5, 6 and 7 join it: one bio. */
	CHECK_EQ(read_plan(c, 4 * 256 + 128, 128, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	x = hashed_idx(c, 4);
	CHECK(rc_read_join(c, &rs, 5 * 256, 256));
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK(rc_read_join(c, &rs, 6 * 256, 256));
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK(rc_read_join(c, &rs, 7 * 256, 256));
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(idx, 12345);
	CHECK_EQ(c->lru_tail, x);
	CHECK_CTR(c, .reads = 10, .read_bypassed = 10, .read_bypassed_inactive = 10,
		  .read_joined = 3, .sim_hits = 8, .sim_misses = 2);

	/* The fill lands: no read waited on it. */
	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	check_invariants(c);
	CHECK_CTR(c, .reads = 10, .read_bypassed = 10, .read_bypassed_inactive = 10,
		  .read_joined = 3, .sim_hits = 8, .sim_misses = 2, .fill_ios = 1,
		  .fill_sectors = 256);

	/* Fills held (a suspend under way): 6 bypasses still; 8 takes x, 9 takes a. */
	rc_hold_fills(c, true);
	CHECK_EQ(read_seg(c, 6, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(c->lru_head, f);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(hashed_idx(c, 8), x);
	CHECK_EQ(c->lru_tail, a);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->entries[a].state, RC_GHOST);
	CHECK_EQ(c->entries[a].seg, 9);
	CHECK_EQ(c->nr_valid, 1);
	rc_hold_fills(c, false);
	check_invariants(c);
	CHECK_CTR(c, .reads = 13, .read_bypassed = 13, .read_bypassed_inactive = 13,
		  .read_joined = 3, .sim_hits = 9, .sim_misses = 4, .fill_ios = 1,
		  .fill_sectors = 256, .evictions = 1);
	rm(c);
}

/* Inactive: a filling segment sim-hits; with every entry busy the sim is BUSY. */
CTEST(sim_hit_on_filling_and_busy_when_all_pinned)
{
	struct rc_cache *c = mk(1);
	u32 f, idx;

	CHECK_EQ(read_seg(c, 1, &f), RC_READ_FILL);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK_EQ(c->entries[f].state, RC_FILLING);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_BYPASS);
	CHECK_EQ(c->nr_ghost, 0);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_misses = 1, .read_bypassed = 2, .read_bypassed_inactive = 2,
	  .sim_hits = 1);
	/* The fill lands; the next simulated miss evicts it (a VALID victim). */
	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->entries[f].state, RC_GHOST);
	CHECK_EQ(c->entries[f].seg, 2);
	check_invariants(c);
	CHECK_CTR(c, .reads = 4, .read_misses = 1, .read_bypassed = 3, .read_bypassed_inactive = 3,
	  .sim_hits = 1,
		  .sim_misses = 1, .fill_ios = 1, .fill_sectors = 256, .evictions = 1);
	rm(c);
}

/* A simulated miss on a full cache takes the LRU tail: VALID counts an eviction, GHOST not. */
CTEST(sim_miss_full_cache_evicts_lru_tail)
{
	struct rc_cache *c = mk(2);
	u32 a, b, idx;

	a = fill_seg(c, 1);
	b = fill_seg(c, 2);
	rc_set_policy(c, RC_POLICY_OFF);
	rc_reset_counters(c);
	CHECK_EQ(c->lru_tail, a);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);	/* takes a: seg 1 */
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(hashed_idx(c, 1), RC_NONE);
	CHECK_EQ(hashed_idx(c, 3), a);
	CHECK_EQ(c->nr_valid, 1);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .read_bypassed_inactive = 1,
	  .sim_misses = 1, .evictions = 1);
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_BYPASS);	/* takes b: seg 2 */
	CHECK_EQ(hashed_idx(c, 4), b);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(c->nr_ghost, 2);
	CHECK_CTR(c, .reads = 2, .read_bypassed = 2, .read_bypassed_inactive = 2,
	  .sim_misses = 2, .evictions = 2);
	CHECK_EQ(c->lru_tail, a);			/* ghost of seg 3 */
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);	/* takes the ghost */
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(hashed_idx(c, 3), RC_NONE);
	CHECK_EQ(hashed_idx(c, 5), a);
	CHECK_EQ(c->nr_ghost, 2);
	CHECK_EQ(ghosts_on_lru(c), 2);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_bypassed = 3, .read_bypassed_inactive = 3,
	  .sim_misses = 3, .evictions = 2);
	rm(c);
}

/* Active again: a read of a ghost fills, reusing the ghost's entry; nothing evicted. */
CTEST(active_read_of_ghost_fills_in_its_entry)
{
	struct rc_cache *c = mk(2);
	u32 g7, g8, idx;

	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);	/* 7 most recent, 8 the tail */
	g7 = hashed_idx(c, 7);
	g8 = hashed_idx(c, 8);
	CHECK_EQ(c->lru_tail, g8);
	CHECK_EQ(free_len(c), 0);
	CHECK_EQ(c->nr_ghost, 2);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_FILL);
	CHECK_EQ(rs.sim, RC_SIM_NONE);
	CHECK_EQ(idx, g7);
	CHECK_EQ(c->entries[g7].state, RC_FILLING);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(c->entries[g8].state, RC_GHOST);	/* the other ghost is left */
	check_invariants(c);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	hit_seg(c, 7, g7);
	check_invariants(c);
	CHECK_CTR(c, .reads = 5, .read_hits = 1, .read_misses = 1, .read_bypassed = 3,
		  .read_bypassed_inactive = 3,
		  .sim_hits = 1, .sim_misses = 2, .fill_ios = 1, .fill_sectors = 256);
	/* A new segment now reuses the remaining ghost, not the valid entry. */
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_FILL);
	CHECK_EQ(idx, g8);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(c->ctr.evictions, 0);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	rm(c);
}

/* Writes drop a ghost as they would the segment; update keeps it; ranges and drop_all drop. */
CTEST(writes_ranges_and_drop_all_drop_ghosts)
{
	struct rc_cache *c = mk(8);
	u32 idx, ck;

	/* Invalidate policy: dropped at write start, no invalidation counted. */
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->nr_ghost, 1);
	ck = rc_write_start(c, 7, 8, true);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(hashed_idx(c, 7), RC_NONE);
	CHECK_EQ(free_len(c), 8);
	CHECK_EQ(rc_write_done(c, 7, ck, 0, true, &idx), RC_WRITE_DONE);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .read_bypassed_inactive = 1,
	  .sim_misses = 1, .writes = 1,
		  .write_sectors = 8);
	rm(c);

	/* Update policy: the real cache would update in place, so the ghost stays ... */
	c = mk_policy(8, RC_WRITE_UPDATE);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_BYPASS);
	ck = rc_write_start(c, 7, 8, true);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(rc_write_done(c, 7, ck, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(c->entries[hashed_idx(c, 7)].state, RC_GHOST);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .read_bypassed_inactive = 1,
	  .sim_misses = 1, .writes = 1,
		  .write_sectors = 8);
	/* ... but a discard (no update) drops it. */
	ck = rc_write_start(c, 7, 8, false);
	CHECK_EQ(c->nr_ghost, 0);
	rc_write_done(c, 7, ck, 0, false, &idx);
	check_invariants(c);
	rm(c);

	/* Ranges: a small one and a large one drop the ghosts they cover. */
	c = mk(8);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 10, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 11, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 1000, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 1000 + RC_RANGE_SMALL, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 1001 + RC_RANGE_SMALL, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 5000, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->nr_ghost, 6);
	rc_range_start(c, secs(c, 11), secs(c, 2));				/* small: 11, 12 */
	CHECK_EQ(c->nr_ghost, 5);
	CHECK_EQ(hashed_idx(c, 11), RC_NONE);
	CHECK(hashed_idx(c, 10) != RC_NONE);
	rc_range_done(c, secs(c, 11), secs(c, 2));
	rc_range_start(c, secs(c, 1000), secs(c, RC_RANGE_SMALL + 1));	/* large */
	CHECK_EQ(c->range_inflight, 1);
	CHECK_EQ(c->nr_ghost, 3);
	CHECK_EQ(hashed_idx(c, 1000), RC_NONE);
	CHECK_EQ(hashed_idx(c, 1000 + RC_RANGE_SMALL), RC_NONE);
	CHECK(hashed_idx(c, 1001 + RC_RANGE_SMALL) != RC_NONE);
	CHECK(hashed_idx(c, 5000) != RC_NONE);
	rc_range_done(c, secs(c, 1000), secs(c, RC_RANGE_SMALL + 1));
	check_invariants(c);
	CHECK_EQ(c->ctr.invalidations, 0);
	CHECK_EQ(c->ctr.writes, 2);

	/* drop_all drops the remaining ghosts and every valid segment. */
	rc_set_policy(c, RC_POLICY_ALWAYS);
	fill_seg(c, 20);
	CHECK_EQ(c->nr_ghost, 3);
	CHECK_EQ(rc_drop_all(c), 0);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(free_len(c), 8);
	CHECK_EQ(c->lru_head, RC_NONE);
	CHECK_EQ(c->ctr.invalidations, 0);
	check_invariants(c);
	rm(c);
}

/* C-Aware in rc_read: a bypass decision counts read_bypassed_caware and keeps a ghost. */
CTEST(caware_bypass_counts_and_keeps_ghost)
{
	struct rc_cache *c = mk(2);
	u32 g, idx;

	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	g = hashed_idx(c, 9);
	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(rc_active(c));
	/* One free entry: rules 3/6, the direct cache read slower than the disk. */
	rc_caware_record(&c->caware, RC_CL_DIRECT_CACHE_READ, 3000000, 0);
	rc_caware_record(&c->caware, RC_CL_SOURCE_READ, 1000000, 0);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_NONE);
	CHECK_EQ(c->caware.rule[3], 1);
	CHECK_EQ(hashed_idx(c, 9), g);
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	CHECK_EQ(c->nr_ghost, 1);
	CHECK_EQ(read_seg(c, 10, &idx), RC_READ_BYPASS);
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_bypassed = 3, .read_bypassed_inactive = 1,
	  .read_bypassed_caware = 2,
		  .sim_misses = 1);
	/* The disk slows down: rule 6 fills, in the ghost's entry. */
	rc_caware_record(&c->caware, RC_CL_SOURCE_READ, 50000000, 0);
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_FILL);
	CHECK_EQ(idx, g);
	CHECK_EQ(c->caware.rule[6], 1);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 4, .read_bypassed = 3, .read_bypassed_inactive = 1,
	  .read_bypassed_caware = 2,
		  .read_misses = 1, .sim_misses = 1, .fill_ios = 1, .fill_sectors = 256);
	rm(c);
}

/* Inactive, a miss while a write to its bucket flies would have bypassed: no ghost. */
CTEST(sim_miss_during_write_bypasses_without_ghost)
{
	struct rc_cache *c = mk(4);
	u32 cookie, idx;

	rc_set_policy(c, RC_POLICY_OFF);
	cookie = rc_write_start(c, 8, 8, true);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_BYPASS);
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(rc_write_done(c, 8, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(read_seg(c, 8, &idx), RC_READ_BYPASS);
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	CHECK_EQ(c->nr_ghost, 1);
	check_invariants(c);
	CHECK_CTR(c, .reads = 2, .read_bypassed = 2, .read_bypassed_inactive = 2,
	  .sim_misses = 1, .writes = 1,
		  .write_sectors = 8);
	rm(c);
}

/* --- whole-segment writes filling entries (C-Aware rules 2, 4, 5, 6) ------- */

/* A completed whole-segment write of @seg, asked to allocate. */
static bool write_whole(struct rc_cache *c, u64 seg, u32 *idx)
{
	u32 cookie = rc_write_start(c, seg, 256, true);

	CHECK_EQ(rc_write_done(c, seg, cookie, 0, true, idx), RC_WRITE_DONE);
	return rc_write_allocate(c, seg, cookie, idx);
}

/* Not full: rule 6 fills the entry from the write; readers wait, then hit. */
CTEST(write_allocate_fills_from_the_write)
{
	struct rc_cache *c = mk(4);
	u32 idx = RC_NONE, r;

	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(write_whole(c, 9, &idx));
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK_EQ(c->caware.rule[6], 1);
	CHECK_EQ(read_seg(c, 9, &r), RC_READ_WAIT);
	CHECK_EQ(r, idx);
	check_invariants(c);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_count_waited(c, 1);
	rc_unpin(c, idx);
	hit_seg(c, 9, idx);
	check_invariants(c);
	CHECK_CTR(c, .reads = 2, .read_hits = 1, .read_hits_waited = 1, .writes = 1,
		  .write_sectors = 256, .write_allocs = 1);
	rm(c);
}

/* Only C-Aware policies, active, allocate; and never over another write. */
CTEST(write_allocate_only_when_safe_and_asked)
{
	struct rc_cache *c = mk(4);
	u32 idx, c1, c2;

	CHECK(!write_whole(c, 1, &idx));		/* always */
	rc_set_policy(c, RC_POLICY_ADAPTIVE_CAWARE);
	rc_adapt_set_active(&c->adapt, false);
	CHECK(!write_whole(c, 1, &idx));		/* inactive */
	rc_adapt_set_active(&c->adapt, true);
	/* Another write to the bucket in flight: its data may land later. */
	c1 = rc_write_start(c, 1, 256, true);
	c2 = rc_write_start(c, 1, 256, true);
	CHECK_EQ(rc_write_done(c, 1, c1, 0, true, &idx), RC_WRITE_DONE);
	CHECK(!rc_write_allocate(c, 1, c1, &idx));
	CHECK_EQ(rc_write_done(c, 1, c2, 0, true, &idx), RC_WRITE_DONE);
	CHECK(!rc_write_allocate(c, 1, c1, &idx));	/* not the newest */
	CHECK(rc_write_allocate(c, 1, c2, &idx));	/* the newest, alone */
	/* Cached or filling already: no second entry. */
	CHECK(!write_whole(c, 1, &idx));
	check_invariants(c);
	rm(c);
}

/* A write issued while the entry is being filled from a write makes it stale. */
CTEST(write_allocate_raced_by_a_write_is_stale)
{
	struct rc_cache *c = mk(4);
	u32 idx, c2, j;

	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(write_whole(c, 3, &idx));
	c2 = rc_write_start(c, 3, 8, true);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	CHECK_EQ(rc_write_done(c, 3, c2, 0, true, &j), RC_WRITE_DONE);
	CHECK_EQ(hashed_idx(c, 3), RC_NONE);
	check_invariants(c);
	CHECK_CTR(c, .writes = 2, .write_sectors = 264, .fill_stale = 1);
	rm(c);
}

/* Full: rule 5 unless a cache write is cheaper than a source write (rule 2). */
CTEST(write_allocate_when_full_follows_rules_2_and_5)
{
	struct rc_cache *c = mk(2);
	u32 idx, g;

	rc_set_policy(c, RC_POLICY_CAWARE);
	fill_seg(c, 0);
	fill_seg(c, 1);
	rc_caware_record(&c->caware, RC_CL_CACHE_WRITE, 900, 0);
	rc_caware_record(&c->caware, RC_CL_SOURCE_WRITE, 800, 0);
	CHECK(!write_whole(c, 7, &idx));
	CHECK_EQ(c->caware.rule[5], 1);
	rc_caware_record(&c->caware, RC_CL_SOURCE_WRITE, 5000, 0);
	CHECK(write_whole(c, 7, &idx));
	CHECK_EQ(c->caware.rule[2], 1);
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	check_invariants(c);
	CHECK_EQ(c->ctr.evictions, 1);
	CHECK_EQ(c->ctr.write_allocs, 1);
	/* A ghost of the segment is taken over, not duplicated. */
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK_EQ(read_seg(c, 11, &idx), RC_READ_BYPASS);
	g = hashed_idx(c, 11);
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(write_whole(c, 11, &idx));
	CHECK_EQ(c->nr_ghost, 0);
	CHECK_EQ(hashed_idx(c, 11), idx);
	check_invariants(c);
	rm(c);
}

/*
 * Defect 9 (the glue could not set up a fill without sleeping): the entry
 * is free again, the miss counts as a bypass, and readers queued on it
 * meanwhile are counted as re-sent; the identity of rc_count_resent() holds.
 */
CTEST(fill_cancel_frees_the_entry_and_counts_a_bypass)
{
	struct rc_cache *c = mk(2);
	u32 idx, w, idx2;

	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_FILL);
	CHECK_EQ(read_seg(c, 5, &w), RC_READ_WAIT);
	rc_fill_cancel(c, idx);
	rc_count_resent(c, 1);
	CHECK_EQ(c->entries[idx].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 5), RC_NONE);
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_CTR(c, .reads = 2, .read_bypassed = 1, .read_bypassed_nomem = 1,
		  .read_resent = 1);
	CHECK_EQ(c->ctr.reads, c->ctr.read_hits + c->ctr.read_hits_waited +
		 c->ctr.read_misses + c->ctr.read_bypassed + c->ctr.read_resent);
	/* Only a fill can be cancelled: anything else is left alone. */
	rc_fill_cancel(c, idx);
	rc_fill_cancel(c, 99);
	CHECK_CTR(c, .reads = 2, .read_bypassed = 1, .read_bypassed_nomem = 1,
		  .read_resent = 1);
	idx2 = fill_seg(c, 5);
	rc_fill_cancel(c, idx2);
	CHECK_EQ(c->entries[idx2].state, RC_VALID);
	check_invariants(c);
	rm(c);
}

/* A whole-segment write's fill that cannot be set up caches nothing, counts nothing. */
CTEST(fill_cancel_of_a_write_fill_frees_the_entry)
{
	struct rc_cache *c = mk(2);
	u32 idx;

	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(write_whole(c, 3, &idx));
	rc_fill_cancel(c, idx);
	CHECK_EQ(c->entries[idx].state, RC_FREE);
	CHECK_EQ(hashed_idx(c, 3), RC_NONE);
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_CTR(c, .writes = 1, .write_sectors = 256);
	CHECK(write_whole(c, 3, &idx));		/* the next one may fill */
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(c->ctr.write_allocs, 1);
	check_invariants(c);
	rm(c);
}

/*
 * Defect 2 (suspend under load): held fills make misses bypass and writes
 * allocate nothing, while fills in flight complete and hits are served.
 */
CTEST(held_fills_bypass_misses_and_let_fills_in_flight_finish)
{
	struct rc_cache *c = mk(4);
	u32 a = fill_seg(c, 1), idx, f;

	rc_reset_counters(c);
	CHECK_EQ(read_seg(c, 2, &f), RC_READ_FILL);
	rc_hold_fills(c, true);
	CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 1, &idx), RC_READ_HIT);
	CHECK_EQ(idx, a);
	rc_unpin(c, a);
	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	rc_set_policy(c, RC_POLICY_CAWARE);
	CHECK(!write_whole(c, 7, &idx));
	CHECK(rc_idle(c));
	check_invariants(c);
	CHECK_CTR(c, .reads = 3, .read_hits = 1, .read_misses = 1, .read_bypassed = 1,
		  .read_bypassed_held = 1, .fill_ios = 1, .fill_sectors = 256,
		  .writes = 1, .write_sectors = 256);
	rc_hold_fills(c, false);
	rc_set_policy(c, RC_POLICY_ALWAYS);
	fill_seg(c, 3);
	check_invariants(c);
	rm(c);
}

/*
 * Defect 6: 64 KiB pages (a 4 KiB segment is smaller than a page) and
 * 32-bit sizes are refused with the constructor's text; what fits is
 * computed exactly.
 */
CTEST(defect6_geometry_refuses_segments_below_a_page_and_sizes_that_wrap)
{
	struct rc_geometry g;

	CHECK(!rc_geometry(8, 16, 12, UINT64_MAX, &g));
	CHECK_EQ(g.pages_per_seg, 1);
	CHECK_EQ(g.nr_pages, 16);
	CHECK_EQ(g.data_bytes, 16 * 4096);
	CHECK(!rc_geometry(2048, RC_MAX_ENTRIES, 12, UINT64_MAX, &g));
	CHECK_EQ(g.pages_per_seg, 256);
	CHECK_EQ(g.nr_pages, (u64)256 << 24);
	CHECK_EQ(g.data_bytes, (u64)1 << 44);
	/* 64 KiB pages (arm64, ppc64): 4 KiB..32 KiB segments are refused. */
	CHECK_STREQ(rc_geometry(8, 16, 16, UINT64_MAX, &g),
		    "Segment size smaller than a page");
	CHECK_STREQ(rc_geometry(64, 16, 16, UINT64_MAX, &g),
		    "Segment size smaller than a page");
	CHECK(!rc_geometry(128, 16, 16, UINT64_MAX, &g));
	CHECK_EQ(g.pages_per_seg, 1);
	CHECK_STREQ(rc_geometry(0, 16, 12, UINT64_MAX, &g), "Segment size must be a power of 2");
	CHECK_STREQ(rc_geometry(24, 16, 12, UINT64_MAX, &g), "Segment size must be a power of 2");
	/* 32-bit: 2^24 segments of 1 MiB are 16 TiB, and 2^32 pages wrap a size_t. */
	CHECK_STREQ(rc_geometry(2048, RC_MAX_ENTRIES, 12, UINT32_MAX, &g),
		    "Cache size too large for this machine");
	CHECK_STREQ(rc_geometry(2048, 4096, 12, UINT32_MAX, &g),
		    "Cache size too large for this machine");	/* 4 GiB */
	CHECK(!rc_geometry(2048, 2047, 12, UINT32_MAX, &g));
}

/*
 * Defect 4: a large discard over a 1M-segment cache is walked in chunks,
 * each looking at no more than its budget; between chunks no entry is
 * taken for another segment (fills and ghosts are held off), so what the
 * walk passed stays uncached, and a fill that completes before the walk
 * reaches it is still dropped.
 */
CTEST(defect4_range_walk_in_chunks_at_1m_segments)
{
	u32 n = 1u << 20, i = 0, steps = 0, a, b, f, g, idx, k;
	struct rc_range_zero z;
	struct rc_cache *c = mk(n);

	/* g, filling in the range, is in the first chunk: made stale by it. */
	CHECK_EQ(read_seg(c, 600000, &g), RC_READ_FILL);
	CHECK_EQ(g, 0);
	for (k = 1; k < 5000; k++)		/* outside the range */
		fill_seg(c, 2000000 + k);
	a = fill_seg(c, 5000);
	b = fill_seg(c, 900000);
	CHECK_EQ(read_seg(c, 700000, &f), RC_READ_FILL);
	CHECK(f >= 4096);
	CHECK(rc_range_begin(c, secs(c, 1000), secs(c, 1000000), &z));
	while (i < n) {
		u32 next = rc_range_walk(c, secs(c, 1000), secs(c, 1000000), i, 4096);

		CHECK(next > i && next - i <= 4096);
		if (!steps) {
			/* Between chunks: no fill, no ghost, inside or outside the range. */
			CHECK_EQ(read_seg(c, 3, &idx), RC_READ_BYPASS);
			CHECK_EQ(read_seg(c, 800000, &idx), RC_READ_BYPASS);
			/* A fill completing before the walk reaches it is dropped later. */
			CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
			rc_unpin(c, f);
			CHECK_EQ(rc_fill_done(c, g, 0, 256, false), RC_FILL_STALE);
		}
		i = next;
		steps++;
	}
	CHECK_EQ(steps, n / 4096);
	CHECK_EQ(hashed_idx(c, 5000), RC_NONE);
	CHECK_EQ(hashed_idx(c, 900000), RC_NONE);
	CHECK_EQ(hashed_idx(c, 700000), RC_NONE);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(c->entries[b].state, RC_FREE);
	rc_range_done(c, secs(c, 1000), secs(c, 1000000));
	fill_seg(c, 3);
	check_invariants(c);
	CHECK_EQ(c->ctr.invalidations, 3);
	CHECK_EQ(c->nr_valid, 4999 + 1);
	rm(c);
}

/* drop_cache in steps: each call drops at most its budget. */
CTEST(drop_some_drops_at_most_its_budget)
{
	struct rc_cache *c = mk(16);
	u32 s;

	for (s = 0; s < 10; s++)
		fill_seg(c, s);
	CHECK(!rc_drop_some(c, 4));
	CHECK_EQ(c->nr_valid, 6);
	CHECK(!rc_drop_some(c, 4));
	CHECK(rc_drop_some(c, 4));
	CHECK_EQ(c->nr_valid, 0);
	CHECK(rc_drop_some(c, 0));
	check_invariants(c);
	rm(c);
}

/* --- read-ahead of streams (rc_plan(), rc_prefetch()) --------------------- */

#define PF_LIMIT	1000	/* the device's segments */

/* A 32 KiB read at @sector: a quarter of a 256-sector segment. */
static enum rc_read_action rd32k(struct rc_cache *c, u64 sector, u32 *idx)
{
	return read_plan(c, sector, 64, idx);
}

/* Take every fill ahead the planner proposed; their segments into @segs, entries into @idx. */
static u32 take_ahead(struct rc_cache *c, u64 *segs, u32 *idx, u32 max)
{
	u32 n = 0, i;
	u64 seg;

	while ((i = rc_prefetch(c, &rs, PF_LIMIT, &seg)) != RC_NONE) {
		CHECK(n < max);
		CHECK_EQ(c->entries[i].state, RC_FILLING);
		CHECK_EQ(c->entries[i].seg, seg);
		CHECK(c->entries[i].ahead && c->entries[i].pfill);
		segs[n] = seg;
		idx[n++] = i;
	}
	CHECK_EQ(rc_prefetch(c, &rs, PF_LIMIT, &seg), RC_NONE);	/* and stays done */
	check_invariants(c);
	return n;
}

/* Complete the fill of entry @idx, with no read waiting on it. */
static void fill_ahead_done(struct rc_cache *c, u32 idx)
{
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
}

/* Read @sector expecting a hit, then drop the pin. */
static void hit32k(struct rc_cache *c, u64 sector)
{
	u32 idx = RC_NONE;

	CHECK_EQ(rd32k(c, sector, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
}

/*
 * @n reads of 32 KiB from @sector on, each @dir * 64 sectors after the one
 * before, each a hit; after each, the fills ahead it leaves are taken and
 * completed.  Their segments go into @due, and into @at the index of the
 * read that left them.  Returns how many were due.
 */
static u32 walk(struct rc_cache *c, u64 sector, u32 n, int dir, u64 *due, u32 *at, u32 max)
{
	u32 k, j, m, nr = 0, ai[8];

	for (k = 0; k < n; k++, sector += (u64)(s64)(dir * 64)) {
		hit32k(c, sector);
		m = take_ahead(c, due + nr, ai, max - nr < 8 ? max - nr : 8);
		for (j = 0; j < m; j++) {
			at[nr + j] = k;
			fill_ahead_done(c, ai[j]);
		}
		nr += m;
	}
	return nr;
}

/* The 32 KiB read at @sector: a miss, filled; a stream's first read. */
static void miss32k(struct rc_cache *c, u64 sector)
{
	u32 idx = RC_NONE;

	CHECK_EQ(rd32k(c, sector, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
}

/*
 * A backward stream of 32 KiB reads, prefetch 4: its degree is what it
 * has read in whole segments, up to 4; a batch of degree segments comes
 * due when fewer than half the degree (rounded up) are cached below the
 * read's own.  Batches of 1 (at the start of segment 20: it has read one
 * segment), 1, 2, 3, then 4 at once: the reads that leave them are those
 * that find the segment below theirs (then the two below) missing.
 */
CTEST(prefetch_fills_the_segments_ahead_of_a_backward_stream)
{
	static const u64 want[] = { 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9 };
	static const u32 want_at[] = { 2, 3, 7, 7, 11, 11, 11, 23, 23, 23, 23 };
	struct rc_cache *c = mk(16);
	u32 at[16], n, k;
	u64 due[16];

	c->prefetch = 4;
	miss32k(c, 20 * 256 + 192);
	CHECK_EQ(take_ahead(c, due, at, 16), 0);	/* no stream yet */
	/* reads 20 * 256 + 128 down to 14 * 256 + 192: 19 to 15 whole, the last of 14 */
	n = walk(c, 20 * 256 + 128, 24, -1, due, at, 16);
	CHECK_EQ(n, 11);
	for (k = 0; k < n; k++) {
		CHECK_EQ(due[k], want[k]);
		CHECK_EQ(at[k], want_at[k]);
	}
	CHECK_EQ(c->nr_ahead, 5);			/* 13 to 9: not read yet */
	CHECK_CTR(c, .reads = 25, .read_hits = 24, .read_misses = 1, .prefetches = 11,
		  .prefetch_hits = 6, .fill_ios = 12, .fill_sectors = 3072);
	rm(c);
}

/*
 * A forward stream gets its batches as a backward one does (until
 * 2026-12-02 it got none): the reads of the test above, going up from
 * the bottom of segment 20, fill segments 21 to 31 after the same reads.
 * With the default degree, 8, the first batches are the segments the
 * stream has read, and the whole 8 ahead once it has read 8.
 */
CTEST(prefetch_fills_the_segments_ahead_of_a_forward_stream)
{
	static const u64 want[] = { 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31 };
	static const u32 want_at[] = { 2, 3, 7, 7, 11, 11, 11, 23, 23, 23, 23 };
	struct rc_cache *c = mk(16);
	u32 at[16], at32[32], n, k;
	u64 due[16], due32[32];

	CHECK_EQ(c->prefetch, RC_PREFETCH_DEFAULT);
	CHECK_EQ(RC_PREFETCH_DEFAULT, 8);
	c->prefetch = 4;
	miss32k(c, 20 * 256);
	CHECK_EQ(take_ahead(c, due, at, 16), 0);	/* no stream yet */
	/* reads 20 * 256 + 64 up to 26 * 256: 20 to 25 whole, the first of 26 */
	n = walk(c, 20 * 256 + 64, 24, 1, due, at, 16);
	CHECK_EQ(n, 11);
	for (k = 0; k < n; k++) {
		CHECK_EQ(due[k], want[k]);
		CHECK_EQ(at[k], want_at[k]);
	}
	CHECK_EQ(c->nr_ahead, 5);			/* 27 to 31: not read yet */
	CHECK_CTR(c, .reads = 25, .read_hits = 24, .read_misses = 1, .prefetches = 11,
		  .prefetch_hits = 6, .fill_ios = 12, .fill_sectors = 3072);
	rm(c);

	/* the default degree: up segments 0 to 9, 8 ahead once 8 are read */
	c = mk(64);
	miss32k(c, 0);
	n = walk(c, 64, 39, 1, due32, at32, 32);
	CHECK_EQ(n, 20);
	for (k = 0; k < n; k++)
		CHECK_EQ(due32[k], k + 1);
	for (k = 12; k < n; k++)	/* 13 to 20 at once, by the third read of 9 */
		CHECK_EQ(at32[k], 35);
	CHECK_EQ(c->nr_ahead, 11);			/* 10 to 20: not read yet */
	rm(c);
}

/*
 * Up 24 segments in 32 KiB reads, @streams streams taking turns (each
 * 32 segments from the last's start), in a cache of @segs: the largest
 * batch one read left.  A read that misses fills, fills ahead are
 * completed at once.
 */
static u32 largest_batch(u32 segs, u32 streams)
{
	struct rc_cache *c = mk(segs);
	u32 k, s, n, m = 0, at[8], idx = RC_NONE;
	u64 due[8];

	for (k = 0; k < 24 * 4; k++)
		for (s = 0; s < streams; s++) {
			switch (rd32k(c, s * 32 * 256 + k * 64, &idx)) {
			case RC_READ_FILL:
				CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
				break;
			case RC_READ_HIT:
				break;
			default:
				CHECK(0);
			}
			rc_unpin(c, idx);
			n = take_ahead(c, due, at, 8);
			m = m < n ? n : m;
			while (n--)
				fill_ahead_done(c, at[n]);
		}
	rm(c);
	return m;
}

/*
 * The streams' batches share half the cache: a stream's degree is at most
 * the cache's segments over twice the streams going on (sixteen streams'
 * batches of 8 in a cache of 64 filled it twice over and pushed out one
 * another's before they were read: TAC and IOR-R x16 in an 8 MiB cache
 * went from -70 and -34 % to nothing in the simulator).
 */
CTEST(prefetch_streams_share_half_the_cache)
{
	struct rc_cache *c = mk(16);

	/* dropping the cache forgets the streams (a probe's at creation) */
	miss32k(c, 0);
	hit32k(c, 64);
	CHECK_EQ(rc_streams_live(&c->streams), 1);
	CHECK_EQ(rc_drop_all(c), 0);
	CHECK_EQ(rc_streams_live(&c->streams), 0);
	CHECK_EQ(c->streams.clock, 0);
	rm(c);

	CHECK_EQ(largest_batch(64, 1), 8);	/* prefetch, the default */
	CHECK_EQ(largest_batch(64, 4), 8);	/* 64 / (2 * 4) */
	CHECK_EQ(largest_batch(64, 8), 4);
	CHECK_EQ(largest_batch(64, 16), 2);
	CHECK_EQ(largest_batch(32, 4), 4);
	CHECK_EQ(largest_batch(32, 8), 2);
}

/*
 * None below segment 0, the device's first: a stream read down from
 * segment 5 (prefetch 3), and one that reads segment 0 itself (prefetch
 * 2).  A read that waits on a fill ahead counts its hit.
 */
CTEST(prefetch_stops_at_the_devices_first_segment)
{
	static const u64 want[] = { 4, 3, 2, 1, 0 };
	static const u32 want_at[] = { 2, 3, 7, 7, 11 };
	struct rc_cache *c = mk(16);
	u32 idx = RC_NONE, at[8], n, k;
	u64 due[8], seg;

	c->prefetch = 3;
	miss32k(c, 5 * 256 + 192);
	/* down from 5 * 256 + 128 to the last read of segment 1 */
	n = walk(c, 5 * 256 + 128, 19, -1, due, at, 8);
	CHECK_EQ(n, 5);
	for (k = 0; k < n; k++) {
		CHECK_EQ(due[k], want[k]);
		CHECK_EQ(at[k], want_at[k]);
	}
	CHECK_CTR(c, .reads = 20, .read_hits = 19, .read_misses = 1, .prefetches = 5,
		  .prefetch_hits = 4, .fill_ios = 6, .fill_sectors = 1536);
	rm(c);

	/* Down the first segments to segment 0. */
	c = mk(16);
	c->prefetch = 2;
	miss32k(c, 2 * 256 + 192);
	hit32k(c, 2 * 256 + 128);
	hit32k(c, 2 * 256 + 64);
	hit32k(c, 2 * 256);
	idx = rc_prefetch(c, &rs, PF_LIMIT, &seg);		/* degree 1 */
	CHECK(idx != RC_NONE);
	CHECK_EQ(seg, 1);
	CHECK_EQ(rc_prefetch(c, &rs, PF_LIMIT, &seg), RC_NONE);
	CHECK_EQ(rd32k(c, 1 * 256 + 192, &idx), RC_READ_WAIT);	/* waits on 1 */
	idx = rc_prefetch(c, &rs, PF_LIMIT, &seg);
	CHECK(idx != RC_NONE);
	CHECK_EQ(seg, 0);
	CHECK_EQ(rc_fill_done(c, hashed_idx(c, 1), 0, 256, false), RC_FILL_SERVE);
	rc_count_waited(c, 1);
	rc_unpin(c, hashed_idx(c, 1));
	fill_ahead_done(c, idx);
	hit32k(c, 1 * 256 + 128);
	hit32k(c, 1 * 256 + 64);
	hit32k(c, 1 * 256);
	CHECK_EQ(rc_prefetch(c, &rs, PF_LIMIT, &seg), RC_NONE);	/* 0 is there */
	hit32k(c, 192);
	CHECK_EQ(rc_prefetch(c, &rs, PF_LIMIT, &seg), RC_NONE);	/* none below 0 */
	check_invariants(c);
	CHECK_CTR(c, .reads = 9, .read_hits = 7, .read_hits_waited = 1, .read_misses = 1,
		  .prefetches = 2, .prefetch_hits = 2, .fill_ios = 3, .fill_sectors = 768);
	rm(c);
}

/*
 * Read @seg whole in four 32 KiB reads going down, the first a miss: a
 * backward stream of one segment.
 */
static void down4(struct rc_cache *c, u64 seg)
{
	miss32k(c, seg * 256 + 192);
	hit32k(c, seg * 256 + 128);
	hit32k(c, seg * 256 + 64);
	hit32k(c, seg * 256);
}

/* A whole-segment read of @seg, a miss, filled. */
static void miss_seg(struct rc_cache *c, u64 seg)
{
	u32 idx = RC_NONE;

	CHECK_EQ(read_plan(c, seg * 256, 256, &idx), RC_READ_FILL);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
}

/*
 * All streams together fill ahead at most half the entries not yet read;
 * a segment filled ahead and evicted unread counts as unused, and frees
 * its place in that half.
 */
CTEST(prefetch_takes_at_most_half_the_cache_and_counts_what_goes_unread)
{
	struct rc_cache *c = mk(8);
	u32 ai[8], idx = RC_NONE;
	u64 as[8];

	c->prefetch = 8;
	miss_seg(c, 102);
	miss_seg(c, 101);				/* the stream's direction */
	CHECK_EQ(read_plan(c, 100 * 256, 256, &idx), RC_READ_FILL);
	CHECK_EQ(take_ahead(c, as, ai, 8), 3);		/* degree 3 */
	CHECK_EQ(as[0], 99);
	CHECK_EQ(as[2], 97);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	fill_ahead_done(c, ai[0]);
	fill_ahead_done(c, ai[1]);
	fill_ahead_done(c, ai[2]);
	CHECK_EQ(read_plan(c, 99 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* 98 and 97 are there */
	CHECK_EQ(read_plan(c, 98 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	/* degree 5, trigger 3: 96 down, but no more than 4 ahead and unread */
	CHECK_EQ(take_ahead(c, as, ai, 8), 3);
	CHECK_EQ(as[0], 96);
	CHECK_EQ(as[2], 94);
	CHECK_EQ(c->nr_ahead, 4);
	fill_ahead_done(c, ai[0]);
	fill_ahead_done(c, ai[1]);
	fill_ahead_done(c, ai[2]);
	/*
	 * 94 took 102's entry: fills ahead do not age probation.  Four
	 * misses elsewhere take 101, the LRU's tail (97 went on probation
	 * no miss ago), then 97, 96 and 95, each on probation one miss
	 * (RC_PROBATION of 8 entries) when taken.
	 */
	miss_seg(c, 50);
	CHECK_EQ(c->nr_ahead, 4);
	miss_seg(c, 60);
	miss_seg(c, 70);
	miss_seg(c, 80);
	CHECK_EQ(c->nr_ahead, 1);
	CHECK(hashed_idx(c, 94) != RC_NONE);
	CHECK(hashed_idx(c, 100) != RC_NONE);
	CHECK_EQ(hashed_idx(c, 97), RC_NONE);
	CHECK_CTR(c, .reads = 9, .read_hits = 2, .read_misses = 7, .prefetches = 6,
		  .prefetch_hits = 2, .prefetch_unused = 3, .fill_ios = 13,
		  .fill_sectors = 13 * 256, .evictions = 5);
	rm(c);
}

/*
 * 16 entries, prefetch 2: ten segments read far apart (10, 20, .. 100, in
 * that order), then a stream down 504, 503 and 502 that fills 501 and 500
 * ahead.  15 entries taken, one free.
 */
static struct rc_cache *probation_setup(u32 *a501, u32 *a500)
{
	struct rc_cache *c = mk(16);
	u32 ai[8], idx = RC_NONE, k;
	u64 as[8];

	c->prefetch = 2;
	for (k = 1; k <= 10; k++)
		miss_seg(c, 10 * k);
	miss_seg(c, 504);
	miss_seg(c, 503);
	CHECK_EQ(read_plan(c, 502 * 256, 256, &idx), RC_READ_FILL);
	CHECK_EQ(take_ahead(c, as, ai, 8), 2);
	CHECK_EQ(as[0], 501);
	CHECK_EQ(as[1], 500);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	fill_ahead_done(c, ai[0]);
	fill_ahead_done(c, ai[1]);
	*a501 = ai[0];
	*a500 = ai[1];
	/* on probation, oldest at the tail; the readers' segments on the LRU */
	CHECK_EQ(c->prob_tail, ai[0]);
	CHECK_EQ(c->prob_head, ai[1]);
	CHECK_EQ(c->entries[c->lru_tail].seg, 10);
	CHECK_EQ(lru_len(c), 13);
	CHECK_EQ(free_len(c), 1);
	check_invariants(c);
	return c;
}

/*
 * Probation: segments filled ahead and unread go first once
 * RC_PROBATION (2 of 16 entries) segments were asked for after they went
 * on; until then the LRU's tail does.
 */
CTEST(prefetch_unread_segments_go_first_after_their_probation)
{
	u32 a501, a500;
	struct rc_cache *c = probation_setup(&a501, &a500);

	CHECK_EQ(RC_PROBATION(c), 2);
	miss_seg(c, 1000);		/* the free entry: 1 asked for since */
	miss_seg(c, 1100);		/* 10, the LRU's tail: 2 since */
	CHECK_EQ(hashed_idx(c, 10), RC_NONE);
	CHECK_EQ(hashed_idx(c, 501), a501);
	miss_seg(c, 1200);		/* 501, after its probation */
	CHECK_EQ(hashed_idx(c, 501), RC_NONE);
	CHECK_EQ(hashed_idx(c, 1200), a501);
	miss_seg(c, 1300);		/* 500 */
	CHECK_EQ(hashed_idx(c, 1300), a500);
	CHECK_EQ(c->prob_head, RC_NONE);
	miss_seg(c, 1400);		/* probation empty: 20, the LRU's tail */
	CHECK_EQ(hashed_idx(c, 20), RC_NONE);
	CHECK_EQ(hashed_idx(c, 30) != RC_NONE, 1);
	CHECK_EQ(c->nr_ahead, 0);
	CHECK_CTR(c, .reads = 18, .read_misses = 18, .prefetches = 2, .prefetch_unused = 2,
		  .fill_ios = 20, .fill_sectors = 20 * 256, .evictions = 4);
	check_invariants(c);
	rm(c);
}

/*
 * A read of a segment on probation moves it to the LRU's head, where it
 * outlives the readers' older segments; the cache emptied empties
 * probation too.
 */
CTEST(prefetch_a_read_takes_a_segment_off_probation)
{
	u32 a501, a500, idx = RC_NONE, k;
	struct rc_cache *c = probation_setup(&a501, &a500);

	/* the stream's next read, the last 32 KiB of 501 */
	CHECK_EQ(read_plan(c, 501 * 256 + 192, 64, &idx), RC_READ_HIT);
	CHECK_EQ(idx, a501);
	rc_unpin(c, idx);
	CHECK_EQ(c->lru_head, a501);
	CHECK_EQ(c->prob_tail, a500);
	CHECK(!c->entries[a501].on_prob && !c->entries[a501].ahead);
	/* five misses: the free entry, 10, 500 (3 asked for since), 20, 30 */
	for (k = 0; k < 5; k++)
		miss_seg(c, 2000 + 100 * k);
	CHECK_EQ(hashed_idx(c, 501), a501);
	CHECK_EQ(hashed_idx(c, 500), RC_NONE);
	CHECK_EQ(hashed_idx(c, 30), RC_NONE);
	CHECK(hashed_idx(c, 40) != RC_NONE);
	CHECK_CTR(c, .reads = 19, .read_hits = 1, .read_misses = 18, .prefetches = 2,
		  .prefetch_hits = 1, .prefetch_unused = 1, .fill_ios = 20,
		  .fill_sectors = 20 * 256, .evictions = 4);
	check_invariants(c);
	CHECK_EQ(rc_drop_all(c), 0);
	CHECK_EQ(free_len(c), 16);
	check_invariants(c);
	rm(c);
}

/*
 * Nothing fills ahead while the cache is inactive, while fills are held,
 * while a write to the segment is in flight, nor (rc_budgeted()) while
 * the budget's bar admits nothing: the overdraft spent, or the balance at
 * minus the cap.
 */
CTEST(prefetch_waits_for_the_cache_the_fills_the_writes_and_the_budget)
{
	struct rc_cache *c = mk(16);
	u32 ai[8], idx = RC_NONE, cookie;
	u64 as[8], seg;

	c->prefetch = 1;
	down4(c, 10);
	rc_set_policy(c, RC_POLICY_OFF);	/* inactive, no budget: nothing proposed */
	CHECK_EQ(rd32k(c, 9 * 256 + 192, &idx), RC_READ_BYPASS);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);
	rc_set_policy(c, RC_POLICY_ALWAYS);

	down4(c, 20);
	rc_hold_fills(c, true);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);
	rc_hold_fills(c, false);

	miss32k(c, 30 * 256 + 192);
	hit32k(c, 30 * 256 + 128);
	hit32k(c, 30 * 256 + 64);
	cookie = rc_write_start(c, 29, 8, true);
	hit32k(c, 30 * 256);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* a write to 29 in flight */
	CHECK_EQ(rc_write_done(c, 29, cookie, 0, true, &idx), RC_WRITE_DONE);
	CHECK_EQ(rd32k(c, 29 * 256 + 192, &idx), RC_READ_FILL);
	CHECK_EQ(take_ahead(c, as, ai, 8), 1);		/* the write is done: 28 */
	CHECK_EQ(as[0], 28);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	fill_ahead_done(c, ai[0]);

	/* adaptive, estimator vdisk: the budget pays, and its bar stops it */
	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	CHECK(rc_budgeted(c));
	down4(c, 40);
	idx = rc_prefetch(c, &rs, PF_LIMIT, &seg);
	CHECK(idx != RC_NONE);
	CHECK_EQ(seg, 39);
	rc_prefetch_judge(c, 3000000, true);
	CHECK_EQ(c->budget.spent_ns, 3000000);
	CHECK_EQ(c->budget.balance, -3000000);
	CHECK_EQ(c->budget.red, 0);			/* paid at a balance of 0 */
	CHECK_EQ(c->adapt.cache_ns, 3000000);
	rc_prefetch_judge(c, 5, false);			/* unpriced: nothing */
	CHECK_EQ(c->budget.spent_ns, 3000000);
	CHECK_EQ(rd32k(c, 39 * 256 + 192, &ai[0]), RC_READ_WAIT);
	CHECK_EQ(ai[0], idx);
	c->budget.red = RC_BUDGET_OVERDRAFT;
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* 38: the overdraft spent */
	CHECK_EQ(rd32k(c, 39 * 256 + 128, &ai[0]), RC_READ_WAIT);
	c->budget.red = 0;
	c->budget.balance = -(s64)c->budget.cap_ns;
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* 38: at minus the cap */
	CHECK_EQ(rd32k(c, 39 * 256 + 64, &ai[0]), RC_READ_WAIT);
	c->budget.balance = 1 - (s64)c->budget.cap_ns;
	CHECK_EQ(take_ahead(c, as, ai, 8), 1);		/* 38: just above it */
	CHECK_EQ(as[0], 38);
	rm(c);
}

/* Take the next fill ahead, expecting @seg, and pay @ns for it. */
static u32 take_paid(struct rc_cache *c, u64 want, u64 ns)
{
	u64 seg = 0;
	u32 i = rc_prefetch(c, &rs, PF_LIMIT, &seg);

	CHECK(i != RC_NONE);
	CHECK_EQ(seg, want);
	rc_prefetch_judge(c, ns, true);
	return i;
}

/*
 * With the budget (adaptive, estimator vdisk), the bar admits a batch at
 * its first fill: whole while the balance is not negative, though its
 * fills then take the balance into the red; in the red, trimmed to what
 * is left of the overdraft, which each fill ahead paid in the red uses up
 * (rc_budget_spend()); none once it is spent, until hits bring the
 * balance back to 0.
 */
CTEST(prefetch_budget_admits_a_batch_whole_or_trimmed_at_its_first_fill)
{
	struct rc_cache *c = mk(32);
	u32 idx = RC_NONE, ai[8], k;
	u64 as[8];

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	CHECK(rc_budgeted(c));
	CHECK_EQ(c->budget.balance, 0);
	c->prefetch = 4;
	miss_seg(c, 200);
	miss_seg(c, 199);
	CHECK_EQ(read_plan(c, 198 * 256, 256, &idx), RC_READ_FILL);	/* degree 3 */
	/* at 0: all 3; the first paid at 0, the other two in the red */
	for (k = 0; k < 3; k++)
		ai[k] = take_paid(c, 197 - k, 3000000);
	CHECK_EQ(take_ahead(c, as, ai + 3, 5), 0);
	CHECK_EQ(c->budget.balance, -9000000);
	CHECK_EQ(c->budget.red, 2);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, idx);
	for (k = 0; k < 3; k++)
		fill_ahead_done(c, ai[k]);
	CHECK_EQ(read_plan(c, 197 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* 196 and 195 are there */
	CHECK_EQ(read_plan(c, 196 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	/* 194 down, 4 due, 9 ms in the red with 2 of the overdraft left: 194 and 193 */
	for (k = 0; k < 2; k++)
		ai[k] = take_paid(c, 194 - k, 3000000);
	CHECK_EQ(take_ahead(c, as, ai + 2, 6), 0);
	CHECK_EQ(c->budget.balance, -15000000);
	CHECK_EQ(c->budget.red, RC_BUDGET_OVERDRAFT);
	fill_ahead_done(c, ai[0]);
	fill_ahead_done(c, ai[1]);
	CHECK_EQ(read_plan(c, 195 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);		/* 194 and 193 are there */
	/* 192 down, 4 due, the overdraft spent: none */
	CHECK_EQ(read_plan(c, 194 * 256, 256, &idx), RC_READ_HIT);
	CHECK_EQ(take_ahead(c, as, ai, 8), 0);
	/* that hit's 15 ms (and 1/128 of it) bring the balance to 0 and over */
	rc_read_judge(c, &rs, 194 * 256, 256, RC_READ_HIT, 15000000, true, 0, true);
	rc_unpin(c, idx);
	CHECK_EQ(c->budget.balance, 15000000 / 128);
	CHECK_EQ(c->budget.red, 0);
	/* so 193's read has its batch whole, though it ends 3 fills in the red */
	CHECK_EQ(read_plan(c, 193 * 256, 256, &idx), RC_READ_HIT);
	rc_unpin(c, idx);
	for (k = 0; k < 4; k++)
		ai[k] = take_paid(c, 192 - k, 3000000);
	CHECK_EQ(take_ahead(c, as, ai + 4, 4), 0);
	CHECK_EQ(c->budget.balance, 15000000 / 128 - 12000000);
	CHECK_EQ(c->budget.red, 3);
	for (k = 0; k < 4; k++)
		fill_ahead_done(c, ai[k]);
	CHECK_EQ(c->nr_ahead, 4);
	check_invariants(c);
	CHECK_CTR(c, .reads = 8, .read_hits = 5, .read_misses = 3, .prefetches = 9,
		  .prefetch_hits = 5, .fill_ios = 12, .fill_sectors = 12 * 256);
	rm(c);
}

/*
 * A fill ahead that cannot be set up is as if never started, even after a
 * read queued on it (re-sent by the caller); one a write makes stale goes
 * unread.
 */
CTEST(prefetch_cancelled_or_stale_leaves_the_counters_whole)
{
	struct rc_cache *c = mk(16);
	u32 ai[8], idx = RC_NONE, cookie;
	u64 as[8];

	c->prefetch = 2;
	down4(c, 2);
	CHECK_EQ(take_ahead(c, as, ai, 8), 1);		/* 1 */
	CHECK_EQ(rd32k(c, 256 + 192, &idx), RC_READ_WAIT);	/* waits on 1, ahead */
	CHECK_EQ(idx, ai[0]);
	CHECK_EQ(take_ahead(c, as, ai + 1, 7), 1);	/* 0 */
	CHECK_EQ(as[0], 0);
	rc_fill_cancel(c, ai[0]);
	rc_count_resent(c, 1);
	rc_fill_cancel(c, ai[1]);
	check_invariants(c);
	CHECK_EQ(c->nr_ahead, 0);
	CHECK_CTR(c, .reads = 5, .read_hits = 3, .read_misses = 1, .read_resent = 1,
		  .fill_ios = 1, .fill_sectors = 256);

	down4(c, 10);
	CHECK_EQ(take_ahead(c, as, ai, 8), 1);
	CHECK_EQ(as[0], 9);
	cookie = rc_write_start(c, 9, 8, true);
	CHECK_EQ(rc_fill_done(c, ai[0], 0, 256, false), RC_FILL_STALE);
	CHECK_EQ(rc_write_done(c, 9, cookie, 0, true, &idx), RC_WRITE_DONE);
	check_invariants(c);
	CHECK_EQ(c->nr_ahead, 0);
	CHECK_CTR(c, .reads = 9, .read_hits = 6, .read_misses = 2, .read_resent = 1,
		  .prefetches = 1, .prefetch_unused = 1, .fill_ios = 3, .fill_sectors = 768,
		  .fill_stale = 1, .writes = 1, .write_sectors = 8);
	rm(c);
}

/*
 * rc_read_join(): the piece of a read in the segment after a bypassed
 * piece goes down with it, unless the active cache holds the segment
 * (valid or filling); it is handled as a read, but never fills.
 */
CTEST(read_join_takes_the_next_piece_unless_the_cache_holds_it)
{
	struct rc_cache *c = mk(4);
	u32 a, f, g, idx = 12345;

	a = fill_seg(c, 5);
	CHECK_EQ(read_seg(c, 6, &f), RC_READ_FILL);
	CHECK_CTR(c, .reads = 2, .read_misses = 2, .fill_ios = 1, .fill_sectors = 256);

	/* Fills held: the read's first piece bypasses, and the joined ones as held. */
	rc_hold_fills(c, true);
	CHECK_EQ(read_plan(c, 4 * 256 + 128, 128, &idx), RC_READ_BYPASS);
	CHECK(!rc_read_join(c, &rs, 5 * 256, 256));	/* valid: a bio of its own */
	CHECK(!rc_read_join(c, &rs, 6 * 256, 256));	/* filling: likewise */
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(c->entries[a].pins, 0);
	CHECK(rc_read_join(c, &rs, 7 * 256, 128));
	CHECK_EQ(idx, 12345);
	CHECK_CTR(c, .reads = 4, .read_misses = 2, .read_bypassed = 2, .read_bypassed_held = 2,
		  .read_joined = 1, .fill_ios = 1, .fill_sectors = 256);
	rc_hold_fills(c, false);

	/* Where rc_read() would fill, the piece bypasses all the same: joined. */
	CHECK_EQ(free_len(c), 2);
	CHECK(rc_read_join(c, &rs, 8 * 256, 256));
	CHECK_EQ(hashed_idx(c, 8), RC_NONE);
	CHECK_EQ(free_len(c), 2);
	CHECK_EQ(c->nr_filling, 1);
	CHECK_CTR(c, .reads = 5, .read_misses = 2, .read_bypassed = 3, .read_bypassed_held = 2,
		  .read_bypassed_joined = 1, .read_joined = 2, .fill_ios = 1, .fill_sectors = 256);
	CHECK_EQ(rc_fill_done(c, f, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, f);
	check_invariants(c);

	/* Inactive: every piece joins, and is played on the simulated cache. */
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK(rc_read_join(c, &rs, 5 * 256, 256));
	CHECK_EQ(rs.sim, RC_SIM_HIT);
	CHECK(rc_read_join(c, &rs, 9 * 256, 256));
	CHECK_EQ(rs.sim, RC_SIM_MISS);
	g = hashed_idx(c, 9);
	CHECK(g != RC_NONE);
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	CHECK_CTR(c, .reads = 7, .read_misses = 2, .read_bypassed = 5, .read_bypassed_held = 2,
		  .read_bypassed_joined = 1, .read_joined = 4, .read_bypassed_inactive = 2,
		  .sim_hits = 1,
		  .sim_misses = 1, .fill_ios = 2, .fill_sectors = 512);
	check_invariants(c);

	/* Active again: a ghost is a miss, and joins. */
	rc_set_policy(c, RC_POLICY_ALWAYS);
	CHECK(rc_read_join(c, &rs, 9 * 256, 256));
	CHECK_EQ(c->entries[g].state, RC_GHOST);
	CHECK(!rc_read_join(c, &rs, 5 * 256, 256));
	CHECK_CTR(c, .reads = 8, .read_misses = 2, .read_bypassed = 6, .read_bypassed_held = 2,
		  .read_bypassed_joined = 2, .read_joined = 5, .read_bypassed_inactive = 2,
		  .sim_hits = 1,
		  .sim_misses = 1, .fill_ios = 2, .fill_sectors = 512);
	check_invariants(c);
	rm(c);
}

/* With the budget's bar shut (its overdraft spent), a joining piece is the budget's bypass. */
CTEST(read_join_counts_the_budget_before_the_join)
{
	struct rc_cache *c = mk(4);
	u32 idx = RC_NONE;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	CHECK(rc_budgeted(c));
	CHECK(rc_active(c));
	c->budget.balance = -1;
	c->budget.red = RC_BUDGET_OVERDRAFT;
	CHECK_EQ(read_plan(c, 3 * 256 + 128, 128, &idx), RC_READ_BYPASS);
	CHECK(rc_read_join(c, &rs, 4 * 256, 256));
	CHECK_CTR(c, .reads = 2, .read_bypassed = 2, .read_bypassed_budget = 2, .read_joined = 1);
	c->budget.balance = 0;
	CHECK(rc_read_join(c, &rs, 5 * 256, 256));
	CHECK_CTR(c, .reads = 3, .read_bypassed = 3, .read_bypassed_budget = 2,
		  .read_bypassed_joined = 1, .read_joined = 2);
	CHECK_EQ(free_len(c), 4);
	check_invariants(c);
	rm(c);
}

CTEST(fill_runs_sort_a_reads_fills_and_cut_them_at_gaps_and_the_bound)
{
	/* A backward stream's batch after its miss, with a gap and a stray. */
	struct rc_fill_item f[] = {
		{ .seg = 40, .idx = 0, .ahead = false }, { .seg = 39, .idx = 1, .ahead = true },
		{ .seg = 38, .idx = 2, .ahead = true }, { .seg = 36, .idx = 3, .ahead = true },
		{ .seg = 35, .idx = 4, .ahead = true }, { .seg = 7, .idx = 5, .ahead = true },
	};
	static const u64 sorted[] = { 7, 35, 36, 38, 39, 40 };
	static const u32 idx[] = { 5, 4, 3, 2, 1, 0 };
	u32 i;

	rc_fill_runs(f, 6);
	for (i = 0; i < 6; i++) {
		CHECK_EQ(f[i].seg, sorted[i]);
		CHECK_EQ(f[i].idx, idx[i]);
		CHECK_EQ(f[i].ahead, i != 5);
	}
	CHECK_EQ(rc_fill_run(f, 6, RC_FILL_RUN_MAX), 1);		/* 7 */
	CHECK_EQ(rc_fill_run(f + 1, 5, RC_FILL_RUN_MAX), 2);		/* 35, 36 */
	CHECK_EQ(rc_fill_run(f + 3, 3, RC_FILL_RUN_MAX), 3);		/* 38 .. 40 */
	CHECK_EQ(rc_fill_run(f + 3, 3, 2), 2);				/* the bound */
	CHECK_EQ(rc_fill_run(f + 3, 3, 1), 1);
	CHECK_EQ(rc_fill_run(f + 5, 1, RC_FILL_RUN_MAX), 1);		/* the last */
	/* One fill, or none to sort, stays as it is. */
	rc_fill_runs(f, 1);
	CHECK_EQ(f[0].seg, 7);
	rc_fill_runs(f, 0);
	CHECK_EQ(RC_FILL_RUN_MAX, 1 + RC_PREFETCH_MAX);
}

/* --- the policy contract (rc_map_read()) ---------------------------------- */

/* The prices rc_map_read() asked for, in order; each costs 1 ms. */
struct price_log {
	u32 n;
	struct { enum rc_vd vd; u64 sector; u32 sectors; } at[32];
};

static bool log_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	struct price_log *l = ctx;

	(void)now;
	CHECK(l->n < ARRAY_SIZE(l->at));
	l->at[l->n].vd = vd;
	l->at[l->n].sector = sector;
	l->at[l->n++].sectors = sectors;
	*ns = 1000000;
	return true;
}

/* The log holds exactly the @n prices of @want, in order; then it is emptied. */
static void check_prices(struct price_log *l, const u64 (*want)[3], u32 n)
{
	u32 i;

	CHECK_EQ(l->n, n);
	for (i = 0; i < n; i++) {
		CHECK_EQ(l->at[i].vd, want[i][0]);
		CHECK_EQ(l->at[i].sector, want[i][1]);
		CHECK_EQ(l->at[i].sectors, want[i][2]);
	}
	l->n = 0;
}

#define CHECK_PRICES(l, ...) do {						\
	static const u64 want_[][3] = { __VA_ARGS__ };				\
	check_prices(l, want_, ARRAY_SIZE(want_));				\
} while (0)

/*
 * A bypassed read takes the pieces after it up to a segment the cache
 * holds; what it took is priced once on the bare disk, then once as the
 * cache sends it down (one request).  What is not taken is the caller's
 * next read.
 */
CTEST(map_read_bypass_takes_the_pieces_that_join_and_prices_them_once)
{
	struct rc_cache *c = mk(4);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 100 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;

	fill_seg(c, 6);
	rc_hold_fills(c, true);
	rc_map_read(c, 4 * 256 + 128, 128 + 3 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.sectors, 128 + 256);
	CHECK_EQ(plan.nr_fills, 0);
	CHECK_PRICES(&l, { RC_VD_BARE, 1152, 384 }, { RC_VD_CACHE, 1152, 384 });
	CHECK_CTR(c, .reads = 3, .read_misses = 1, .read_bypassed = 2, .read_bypassed_held = 2,
		  .read_joined = 1, .fill_ios = 1, .fill_sectors = 256);

	/* The held segment: a hit, cut at its end; no price on the cache's disk. */
	rc_map_read(c, 6 * 256 + 200, 100, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_HIT);
	CHECK_EQ(plan.sectors, 56);
	CHECK_EQ(plan.nr_fills, 0);
	CHECK_EQ(c->entries[plan.idx].pins, 1);
	CHECK_PRICES(&l, { RC_VD_BARE, 6 * 256 + 200, 56 });
	rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx, .sectors = 56,
				       .start = 2000, .end = 5000 });
	CHECK_EQ(c->entries[plan.idx].pins, 0);
	CHECK_EQ(c->lru_head, plan.idx);
	CHECK_CTR(c, .reads = 4, .read_hits = 1, .read_misses = 1, .read_bypassed = 2,
		  .read_bypassed_held = 2, .read_joined = 1, .fill_ios = 1, .fill_sectors = 256);
	check_invariants(c);
	rm(c);
}

/*
 * A miss that goes on with a backward stream plans its own fill and the
 * batch ahead of it (below it), sorted into one run and priced once.  At
 * the device's first segment nothing is due below it; the fill of the
 * device's last segment is priced as far as the device goes.  (Some of
 * the streams' reads go through read_plan(), which plans no pair: through
 * rc_map_read(), 103's would fill 102 and 1's would fill 0.)
 */
CTEST(map_read_plans_a_miss_and_its_batch_ahead_as_one_run)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 200 * 256,
			       .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u32 k;

	c->prefetch = 2;
	miss_seg(c, 104);
	miss_seg(c, 103);
	rc_map_read(c, 102 * 256, 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.sectors, 256);
	CHECK_EQ(plan.nr_fills, 3);
	for (k = 0; k < 3; k++) {
		CHECK_EQ(plan.fills[k].seg, 100 + k);
		CHECK_EQ(plan.fills[k].ahead, k < 2);
		CHECK_EQ(c->entries[plan.fills[k].idx].state, RC_FILLING);
	}
	CHECK_EQ(plan.fills[2].idx, plan.idx);
	CHECK_EQ(rc_fill_run(plan.fills, 3, RC_FILL_RUN_MAX), 3);
	CHECK_EQ(plan.nr_reqs, 1);
	CHECK_EQ(plan.reqs[0].sector, 100 * 256);
	CHECK_EQ(plan.reqs[0].sectors, 3 * 256);
	CHECK_EQ(plan.reqs[0].first, 0);
	CHECK_EQ(plan.reqs[0].nr, 3);
	/* one price on each disk: the read, and the request that fills for it */
	CHECK_PRICES(&l, { RC_VD_BARE, 102 * 256, 256 }, { RC_VD_CACHE, 100 * 256, 3 * 256 });
	for (k = 0; k < 3; k++) {
		CHECK_EQ(rc_fill_done(c, plan.fills[k].idx, 0, 256, k > 0), RC_FILL_SERVE);
		rc_unpin(c, plan.fills[k].idx);
	}
	CHECK_CTR(c, .reads = 3, .read_misses = 3, .prefetches = 2, .fill_ios = 5,
		  .fill_sectors = 5 * 256, .fill_joined = 2);
	check_invariants(c);
	rm(c);

	/* A device of three segments, the last 100 sectors, read down. */
	c = mk(32);
	p.capacity = 2 * 256 + 100;
	rc_map_read(c, 2 * 256, 100, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 1);
	CHECK_EQ(plan.reqs[0].sectors, 100);
	CHECK_PRICES(&l, { RC_VD_BARE, 2 * 256, 100 }, { RC_VD_CACHE, 2 * 256, 100 });
	CHECK_EQ(rc_fill_done(c, plan.idx, 0, 100, false), RC_FILL_SERVE);
	rc_unpin(c, plan.idx);
	miss_seg(c, 1);
	rc_map_read(c, 0, 256, 0, &p, &plan);		/* degree 2, but none below 0 */
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 1);
	CHECK_PRICES(&l, { RC_VD_BARE, 0, 256 }, { RC_VD_CACHE, 0, 256 });
	CHECK_EQ(rc_fill_done(c, plan.idx, 0, 256, false), RC_FILL_SERVE);
	rc_unpin(c, plan.idx);
	CHECK_CTR(c, .reads = 3, .read_misses = 3, .fill_ios = 3, .fill_sectors = 2 * 256 + 100);
	check_invariants(c);
	rm(c);
}

/*
 * A run longer than the caller's requests may be (p->run_max segments)
 * goes down as several requests, each with its own fills: the batch
 * below the miss in one, the miss's own in the next.  Adjacent, they are
 * priced as the one run they are on the disk.
 */
CTEST(map_read_cuts_a_run_at_the_callers_request_size)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 200 * 256,
				     .run_max = 2 };
	struct rc_read_plan plan;
	u32 k;

	c->prefetch = 2;
	miss_seg(c, 104);
	miss_seg(c, 103);
	rc_map_read(c, 102 * 256, 256, 0, &p, &plan);
	CHECK_EQ(plan.nr_fills, 3);
	CHECK_EQ(plan.nr_reqs, 2);
	CHECK_EQ(plan.reqs[0].sector, 100 * 256);
	CHECK_EQ(plan.reqs[0].sectors, 2 * 256);
	CHECK_EQ(plan.reqs[0].first, 0);
	CHECK_EQ(plan.reqs[0].nr, 2);
	CHECK_EQ(plan.reqs[1].sector, 102 * 256);
	CHECK_EQ(plan.reqs[1].sectors, 256);
	CHECK_EQ(plan.reqs[1].first, 2);
	CHECK_EQ(plan.reqs[1].nr, 1);
	CHECK(rc_fill_own(&plan.fills[2]));
	CHECK_PRICES(&l, { RC_VD_BARE, 102 * 256, 256 }, { RC_VD_CACHE, 100 * 256, 3 * 256 });
	for (k = 0; k < 3; k++) {
		CHECK_EQ(rc_fill_done(c, plan.fills[k].idx, 0, 256, k == 1), RC_FILL_SERVE);
		rc_unpin(c, plan.fills[k].idx);
	}
	CHECK_CTR(c, .reads = 3, .read_misses = 3, .prefetches = 2, .fill_ios = 5,
		  .fill_sectors = 5 * 256, .fill_joined = 1);
	check_invariants(c);
	rm(c);
}

/*
 * A price for rc_map_read() from a disk that seeks: 8.5 ms to go
 * anywhere but where its last request ended on that virtual disk (0.1
 * ms), and 27 us per 4 KiB; each call counted in @n.
 */
struct seek_pricer {
	u64 end[2];
	u32 n, bare;
};

static bool seek_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	struct seek_pricer *sp = ctx;

	(void)now;
	*ns = (sector == sp->end[vd] ? 100000 : 8500000) + sectors / 8 * 27000ull;
	sp->end[vd] = sector + sectors;
	sp->n++;
	sp->bare += vd == RC_VD_BARE;
	return true;
}

/*
 * Issue 46's bound: at most two pricings under the lock per read (the
 * read on the bare disk, and one run on the cache's).  Forward 1 MiB
 * reads, backward 64 KiB, random 4 KiB, strided 4 KiB and all four
 * interleaved, through a small cache on the default engine, every fill
 * completed before the next read.  (Before a batch stopped at a segment
 * held, the interleaved reads took three: a batch of 5 and 2 segments
 * around a cached one.)
 */
CTEST(map_read_prices_a_read_at_most_twice)
{
	struct seek_pricer sp = { { 0 }, 0, 0 };
	const struct rc_pricer p = { .price = seek_price, .ctx = &sp, .capacity = 1ull << 31,
				     .run_max = 8 };
	struct rc_read_plan plan;
	struct rc_cache *c;
	u64 sector, now = 0, x;
	u32 pattern, i, k, sectors, worst;

	for (pattern = 0; pattern < 5; pattern++) {
		c = mk(65536);
		rc_set_policy(c, RC_POLICY_DEFAULT);
		rc_set_estimator(c, RC_EST_VDISK);
		worst = 0;
		for (i = 0; i < 20000; i++) {
			switch (pattern == 4 ? i % 4 : pattern) {
			case 0:
				sector = (u64)(pattern == 4 ? i / 4 : i) * 2048;
				sectors = 2048;
				break;
			case 1:
				sector = (1ull << 24) - (u64)(pattern == 4 ? i / 4 : i) * 128;
				sectors = 128;
				break;
			case 2:
				x = i * 0x9e3779b97f4a7c15ull;
				sector = ((x ^ x >> 29) * 0xbf58476d1ce4e5b9ull) % (1ull << 28) * 8;
				sectors = 8;
				break;
			default:
				sector = (1ull << 26) + (u64)(pattern == 4 ? i / 4 : i) * 24;
				sectors = 8;
				break;
			}
			while (sectors) {
				now += 1000000;
				sp.n = 0;
				sp.bare = 0;
				rc_map_read(c, sector, sectors, now, &p, &plan);
				CHECK_EQ(sp.bare, 1);
				worst = sp.n > worst ? sp.n : worst;
				for (k = 0; k < plan.nr_fills; k++) {
					CHECK_EQ(rc_fill_done(c, plan.fills[k].idx, 0, 256, false),
						 RC_FILL_SERVE);
					rc_fill_waiters_done(c, plan.fills[k].idx, RC_FILL_SERVE,
							     rc_fill_own(&plan.fills[k]), 1);
				}
				if (plan.act == RC_READ_HIT)
					rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT,
						 .idx = plan.idx, .sectors = plan.sectors,
						 .start = now, .end = now + 1000 });
				else if (plan.act == RC_READ_BYPASS)
					rc_event(c, &(struct rc_event){ .kind = RC_EV_BYPASS,
						 .sector = sector, .sectors = plan.sectors,
						 .start = now, .end = now + 5000000 });
				sector += plan.sectors;
				sectors -= plan.sectors;
			}
		}
		CHECK_EQ(worst, 2);
		check_invariants(c);
		rm(c);
	}
}

/* Complete the fills of @plan (served), dropping each one's pin; @own: its miss waited. */
static void serve_plan(struct rc_cache *c, const struct rc_read_plan *plan, u32 own)
{
	u32 k;

	for (k = 0; k < plan->nr_fills; k++) {
		CHECK_EQ(rc_fill_done(c, plan->fills[k].idx, 0, 256, k > 0), RC_FILL_SERVE);
		rc_fill_waiters_done(c, plan->fills[k].idx, RC_FILL_SERVE,
				     rc_fill_own(&plan->fills[k]) ? own : 0,
				     rc_fill_own(&plan->fills[k]) ? own : 0);
	}
}

/*
 * A read the cache bypasses (its segment under a write) goes down first,
 * and the batch ahead of its stream right after it: one run on the cache's
 * disk, priced once, the read's share by its sectors and the rest the
 * batch's, which is speculation.  A batch is one run: it stops at a
 * segment the cache holds (15), the rest left to the stream's next reads.
 */
CTEST(map_read_prices_a_bypass_and_the_batch_after_it_as_one_run)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 200 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u32 cookie, idx;
	u64 before;

	c->prefetch = 4;
	rc_set_estimator(c, RC_EST_VDISK);
	miss_seg(c, 9);
	miss_seg(c, 10);
	miss_seg(c, 11);
	fill_seg(c, 15);
	cookie = rc_write_start(c, 12, 8, false);
	l.n = 0;
	before = c->adapt.cache_ns;
	rc_map_read(c, 12 * 256, 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.nr_fills, 2);
	CHECK_EQ(plan.fills[0].seg, 13);
	CHECK_EQ(plan.fills[1].seg, 14);
	CHECK_EQ(plan.nr_reqs, 1);
	CHECK_PRICES(&l, { RC_VD_BARE, 12 * 256, 256 }, { RC_VD_CACHE, 12 * 256, 3 * 256 });
	/* the run's 1 ms in the window's time with the cache: the read's third
	 * and the batch's two (one ns lost to rounding)
	 */
	CHECK_EQ(c->adapt.cache_ns - before, 999999);
	serve_plan(c, &plan, 0);
	CHECK_EQ(rc_write_done(c, 12, cookie, 0, false, &idx), RC_WRITE_DONE);
	CHECK_EQ(c->ctr.prefetches, 2);
	check_invariants(c);
	rm(c);
}

/*
 * A miss whose read goes on over two more segments whole and into a third
 * fills the two along with its own, in one run: each priced as a fill
 * right after the miss's, none of them the miss's (its read waits on the
 * first only).  The segment the read only enters is left to the rest's
 * own decision.  The rest of the read comes back, waits on the next
 * segment's fill and hits the one after, where the stream it makes has
 * its batch filled ahead (two segments: it has read two whole), and the
 * last finds its segment so filled; the segments filled along were asked
 * for, so they go on the LRU, not on probation.
 */
CTEST(map_read_fills_the_segments_a_miss_reads_on_into_in_its_run)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 100 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan, rest;
	u32 k, idx[3];

	rc_map_read(c, 10 * 256 + 128, 128 + 2 * 256 + 64, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.sectors, 128);
	CHECK_EQ(plan.nr_fills, 3);
	for (k = 0; k < 3; k++) {
		idx[k] = plan.fills[k].idx;
		CHECK_EQ(plan.fills[k].seg, 10 + k);
		CHECK_EQ(plan.fills[k].along, k > 0);
		CHECK(!plan.fills[k].ahead);
		CHECK_EQ(rc_fill_own(&plan.fills[k]), k == 0);
		CHECK_EQ(c->entries[idx[k]].state, RC_FILLING);
	}
	CHECK_EQ(idx[0], plan.idx);
	CHECK_EQ(rc_fill_run(plan.fills, 3, RC_FILL_RUN_MAX), 3);
	CHECK_PRICES(&l, { RC_VD_BARE, 10 * 256 + 128, 128 }, { RC_VD_CACHE, 10 * 256, 3 * 256 });
	CHECK_CTR(c, .reads = 1, .read_misses = 1, .fill_along = 2);

	/* The rest, as dm sends it back: it waits on segment 11's fill. */
	rc_map_read(c, 11 * 256, 2 * 256 + 64, 0, &p, &rest);
	CHECK_EQ(rest.act, RC_READ_WAIT);
	CHECK_EQ(rest.idx, idx[1]);
	CHECK_EQ(rest.sectors, 256);
	CHECK_EQ(rest.nr_fills, 0);
	CHECK_PRICES(&l, { RC_VD_BARE, 11 * 256, 256 });
	for (k = 0; k < 3; k++) {
		CHECK_EQ(rc_fill_done(c, idx[k], 0, 256, k > 0), RC_FILL_SERVE);
		rc_fill_waiters_done(c, idx[k], RC_FILL_SERVE, k < 2, k == 0);
	}
	rc_map_read(c, 12 * 256, 256 + 64, 0, &p, &rest);
	CHECK_EQ(rest.act, RC_READ_HIT);
	CHECK_EQ(rest.idx, idx[2]);
	/* the stream has read two segments whole: its batch fills 13 and 14 */
	CHECK_EQ(rest.nr_fills, 2);
	for (k = 0; k < 2; k++)
		CHECK(rest.fills[k].seg == 13 + k && rest.fills[k].ahead && !rest.fills[k].along);
	serve_plan(c, &rest, 0);
	rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT, .idx = idx[2],
				       .sectors = rest.sectors, .end = 1000 });
	for (k = 0; k < 3; k++)
		CHECK(c->entries[idx[k]].on_list && !c->entries[idx[k]].on_prob);
	/* the last 64 sectors: in the batch's first segment */
	rc_map_read(c, 13 * 256, 64, 0, &p, &rest);
	CHECK_EQ(rest.act, RC_READ_HIT);
	CHECK_CTR(c, .reads = 4, .read_hits = 2, .read_hits_waited = 1, .read_misses = 1,
		  .fill_ios = 5, .fill_sectors = 5 * 256, .fill_joined = 3, .fill_along = 2,
		  .prefetches = 2, .prefetch_hits = 1);
	check_invariants(c);
	rm(c);
}

/*
 * The run along a read ends at a segment the cache holds and before one a
 * write in flight holds off; a bypassed read fills nothing along.  A fill
 * along that cannot be set up counts nothing: no miss, no bypass.
 */
CTEST(map_read_fills_along_up_to_a_segment_held_or_written)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 100 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u32 cookie, w;

	fill_seg(c, 12);
	rc_map_read(c, 10 * 256, 4 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 2);
	CHECK(plan.fills[1].along && plan.fills[1].seg == 11);
	serve_plan(c, &plan, 1);

	cookie = rc_write_start(c, 21, 8, true);
	rc_map_read(c, 20 * 256, 2 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 1);
	serve_plan(c, &plan, 1);
	CHECK_EQ(rc_write_done(c, 21, cookie, 0, true, &w), RC_WRITE_DONE);

	rc_map_read(c, 30 * 256, 3 * 256, 0, &p, &plan);
	CHECK_EQ(plan.nr_fills, 3);
	rc_fill_cancel(c, plan.fills[2].idx);
	CHECK_EQ(c->ctr.fill_along, 2);
	CHECK_EQ(c->ctr.read_misses, 4);
	CHECK_EQ(c->ctr.read_bypassed, 0);
	plan.nr_fills = 2;
	serve_plan(c, &plan, 1);
	check_invariants(c);

	rc_hold_fills(c, true);
	rc_map_read(c, 40 * 256, 3 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.sectors, 3 * 256);
	CHECK_EQ(plan.nr_fills, 0);
	CHECK_CTR(c, .reads = 7, .read_misses = 4, .read_bypassed = 3, .read_bypassed_held = 3,
		  .read_joined = 2, .fill_ios = 6, .fill_sectors = 6 * 256, .fill_joined = 2,
		  .fill_along = 2, .writes = 1, .write_sectors = 8);
	check_invariants(c);
	rm(c);
}

/*
 * A forward stream's miss over two segments fills the second along with
 * its own and nothing ahead (the page cache reads ahead of it); a
 * backward stream's fills the second along and its batch below, all in
 * one run.
 */
CTEST(map_read_fills_ahead_of_a_backward_stream_only)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 300 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u32 k;

	c->prefetch = 2;
	for (k = 100; k < 102; k++) {
		rc_map_read(c, k * 256, 256, 0, &p, &plan);
		CHECK_EQ(plan.nr_fills, 1);
		serve_plan(c, &plan, 1);
	}
	rc_map_read(c, 102 * 256, 2 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 2);
	CHECK_EQ(plan.fills[0].seg, 102);
	CHECK(rc_fill_own(&plan.fills[0]));
	CHECK_EQ(plan.fills[1].seg, 103);
	CHECK(plan.fills[1].along);
	serve_plan(c, &plan, 1);
	CHECK_CTR(c, .reads = 3, .read_misses = 3, .fill_ios = 4, .fill_sectors = 4 * 256,
		  .fill_joined = 1, .fill_along = 1);

	for (k = 205; k > 203; k--) {
		rc_map_read(c, k * 256, 256, 0, &p, &plan);
		CHECK_EQ(plan.nr_fills, 1);
		serve_plan(c, &plan, 1);
	}
	rc_map_read(c, 202 * 256, 2 * 256, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.nr_fills, 4);
	for (k = 0; k < 4; k++) {
		CHECK_EQ(plan.fills[k].seg, 200 + k);
		CHECK_EQ(plan.fills[k].ahead, k < 2);
		CHECK_EQ(plan.fills[k].along, k == 3);
	}
	CHECK_EQ(plan.fills[2].idx, plan.idx);
	CHECK_EQ(rc_fill_run(plan.fills, 4, RC_FILL_RUN_MAX), 4);
	serve_plan(c, &plan, 1);
	CHECK_CTR(c, .reads = 6, .read_misses = 6, .prefetches = 2, .fill_ios = 10,
		  .fill_sectors = 10 * 256, .fill_joined = 4, .fill_along = 2);
	check_invariants(c);
	rm(c);
}

/* One read of 8 sectors at segment @seg's start through rc_map_read(): its plan's fills. */
static u32 pair_read(struct rc_cache *c, const struct rc_pricer *p, u64 seg,
		     struct rc_read_plan *plan)
{
	rc_map_read(c, seg * 256, 8, 0, p, plan);
	return plan->nr_fills;
}

/*
 * Pairs: a miss with a segment within RC_PAIR_NEAR of it read lately
 * fills the other half of its pair (2k, 2k + 1) in its request, as a fill
 * ahead; an isolated miss, a miss next only to a segment filled ahead and
 * unread or to one no longer cached, a read going on into the next
 * segment and a pair whose other half is cached fill their own segment
 * only.
 */
CTEST(pairs_fill_the_other_half_where_reads_cluster)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 200 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u32 cookie, idx;

	CHECK_EQ(pair_read(c, &p, 10, &plan), 1);	/* nothing near */
	serve_plan(c, &plan, 1);
	l.n = 0;
	CHECK_EQ(pair_read(c, &p, 12, &plan), 2);	/* 10 is 2 away: 12 and 13 */
	CHECK_EQ(plan.act, RC_READ_FILL);
	CHECK_EQ(plan.fills[0].seg, 12);
	CHECK_EQ(plan.fills[1].seg, 13);
	CHECK(plan.fills[1].ahead);
	CHECK(!plan.fills[1].along);
	CHECK_EQ(rc_fill_run(plan.fills, 2, RC_FILL_RUN_MAX), 2);
	CHECK_PRICES(&l, { RC_VD_BARE, 12 * 256, 8 }, { RC_VD_CACHE, 12 * 256, 2 * 256 });
	serve_plan(c, &plan, 1);
	CHECK(c->entries[plan.fills[1].idx].on_prob);

	/* 13 is filled ahead and unread, 12 is 3 away: 15 alone */
	CHECK_EQ(pair_read(c, &p, 15, &plan), 1);
	serve_plan(c, &plan, 1);
	/* the read goes on into segment 18: 17 alone, 18 left to the rest */
	rc_map_read(c, 17 * 256, 256 + 8, 0, &p, &plan);
	CHECK_EQ(plan.nr_fills, 1);
	CHECK_EQ(plan.sectors, 256);
	serve_plan(c, &plan, 1);
	/* 11's pair, 10, is cached */
	CHECK_EQ(pair_read(c, &p, 11, &plan), 1);
	serve_plan(c, &plan, 1);
	/* 14 is near 12, 15 and 17: its pair is 15, cached */
	CHECK_EQ(pair_read(c, &p, 14, &plan), 1);
	serve_plan(c, &plan, 1);
	/* 13 is read: a hit, and off probation */
	CHECK_EQ(pair_read(c, &p, 13, &plan), 0);
	CHECK_EQ(plan.act, RC_READ_HIT);
	rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx, .sectors = 8,
				       .end = 1000 });
	CHECK_EQ(pair_read(c, &p, 16, &plan), 1);	/* 17 is cached */
	serve_plan(c, &plan, 1);
	CHECK_EQ(pair_read(c, &p, 0, &plan), 1);	/* nothing near 0 */
	serve_plan(c, &plan, 1);
	CHECK_EQ(pair_read(c, &p, 2, &plan), 2);	/* 0 is 2 below: 2 and 3 */
	serve_plan(c, &plan, 1);
	CHECK_CTR(c, .reads = 10, .read_hits = 1, .read_misses = 9, .prefetches = 2,
		  .prefetch_paired = 2, .prefetch_hits = 1, .fill_ios = 11,
		  .fill_sectors = 11 * 256, .fill_joined = 2);

	/* 2, read lately, is dropped by a write; 3 is unread: 4 alone */
	cookie = rc_write_start(c, 2, 8, false);
	CHECK_EQ(rc_write_done(c, 2, cookie, 0, false, &idx), RC_WRITE_DONE);
	CHECK_EQ(pair_read(c, &p, 4, &plan), 1);
	serve_plan(c, &plan, 1);
	CHECK_CTR(c, .reads = 11, .read_hits = 1, .read_misses = 10, .prefetches = 2,
		  .prefetch_paired = 2, .prefetch_hits = 1, .fill_ios = 12,
		  .fill_sectors = 12 * 256, .fill_joined = 2, .writes = 1, .write_sectors = 8,
		  .invalidations = 1);
	check_invariants(c);
	rm(c);
}

/* size_price()'s prices, logged. */
static bool size_log_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	log_price(ctx, vd, sector, sectors, now, ns);
	*ns = 1000000 + sectors * 1000ull;
	return true;
}

/* Segment @seg's GHOST entry: filled ahead (1) or for a read (0); -1: no GHOST. */
static int ghost_ahead(const struct rc_cache *c, u64 seg)
{
	u32 i;

	for (i = 0; i < c->nr_entries; i++)
		if (c->entries[i].state == RC_GHOST && c->entries[i].seg == seg)
			return c->entries[i].gahead;
	return -1;
}

/*
 * Inactive with estimator vdisk, the simulated cache reads ahead as the
 * active one would: a backward stream's batch becomes GHOST entries filled
 * ahead, priced in one request with the miss's segment, and the batch's
 * share of it counts in the window's time with the cache; a later read of
 * one is a simulated hit.  A miss near segments read lately has its
 * pair's other half simulated likewise.  spk simulates no read-ahead.
 */
CTEST(inactive_cache_simulates_its_read_ahead)
{
	struct rc_cache *c = mk(32);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = size_log_price, .ctx = &l, .capacity = 200 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	u64 before;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	rc_set_estimator(c, RC_EST_VDISK);
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	c->prefetch = 2;
	rc_adapt_set_active(&c->adapt, false);
	rc_map_read(c, 101 * 256, 256, 0, &p, &plan);
	rc_map_read(c, 100 * 256, 256, 0, &p, &plan);	/* its pair's other half, 101, is there */
	CHECK_EQ(c->nr_ghost, 2);
	l.n = 0;
	before = c->adapt.cache_ns;
	rc_map_read(c, 99 * 256, 256, 0, &p, &plan);	/* streamed: 98 and 97 due */
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.nr_fills, 0);
	CHECK_EQ(c->nr_ghost, 5);
	CHECK_EQ(ghost_ahead(c, 99), 0);
	CHECK_EQ(ghost_ahead(c, 98), 1);
	CHECK_EQ(ghost_ahead(c, 97), 1);
	CHECK_PRICES(&l, { RC_VD_BARE, 99 * 256, 256 }, { RC_VD_CACHE, 97 * 256, 3 * 256 });
	/* 1.768 ms for the request, in thirds (one ns lost to rounding) */
	CHECK_EQ(c->adapt.cache_ns - before, 1767999);
	rc_map_read(c, 98 * 256, 256, 0, &p, &plan);
	CHECK_EQ(ghost_ahead(c, 98), 0);		/* read: no longer ahead */
	CHECK_EQ(c->ctr.sim_hits, 1);
	CHECK_EQ(c->ctr.sim_misses, 3);

	/* 52, 2 from 50, read lately: 53 with it, in one request, half of it speculation */
	rc_map_read(c, 50 * 256, 256, 0, &p, &plan);
	l.n = 0;
	before = c->adapt.cache_ns;
	rc_map_read(c, 52 * 256, 8, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(ghost_ahead(c, 52), 0);
	CHECK_EQ(ghost_ahead(c, 53), 1);
	CHECK_PRICES(&l, { RC_VD_BARE, 52 * 256, 8 }, { RC_VD_CACHE, 52 * 256, 2 * 256 });
	CHECK_EQ(c->adapt.cache_ns - before, 1512000);	/* 1.512 ms, in halves */
	CHECK_EQ(c->ctr.sim_misses, 5);
	CHECK_EQ(c->nr_ghost, 8);
	CHECK_EQ(c->ctr.prefetches, 0);
	CHECK_EQ(c->ctr.prefetch_paired, 0);
	check_invariants(c);
	rm(c);

	c = mk(32);
	rc_set_policy(c, RC_POLICY_ADAPTIVE);		/* estimator spk */
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	c->prefetch = 2;
	rc_adapt_set_active(&c->adapt, false);
	rc_map_read(c, 101 * 256, 256, 0, &p, &plan);
	rc_map_read(c, 100 * 256, 256, 0, &p, &plan);
	rc_map_read(c, 99 * 256, 256, 0, &p, &plan);
	rc_map_read(c, 50 * 256, 256, 0, &p, &plan);
	rc_map_read(c, 52 * 256, 8, 0, &p, &plan);
	CHECK_EQ(c->nr_ghost, 5);
	check_invariants(c);
	rm(c);
}

/*
 * The planner proposes one range per piece: where a backward stream's
 * batch is due and a miss's pair would be filled too (102's pair 103 was
 * bypassed under a write, 104 read lately), the batch alone (101 and
 * 100), active and, as GHOST entries, inactive on estimator vdisk.
 */
CTEST(plan_proposes_one_range_a_batch_before_a_pair)
{
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 200 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	struct rc_cache *c;
	u32 k, idx, cookie;
	int active;

	for (active = 1; active >= 0; active--) {
		c = mk(32);
		c->prefetch = 2;
		if (!active) {
			rc_set_policy(c, RC_POLICY_ADAPTIVE);
			rc_set_estimator(c, RC_EST_VDISK);
			c->adapt.window = RC_ADAPT_MAX_WINDOW;
			rc_adapt_set_active(&c->adapt, false);
		}
		rc_map_read(c, 104 * 256, 256, 0, &p, &plan);
		serve_plan(c, &plan, 1);
		cookie = rc_write_start(c, 103, 8, false);
		rc_map_read(c, 103 * 256, 256, 0, &p, &plan);
		CHECK_EQ(plan.act, RC_READ_BYPASS);
		CHECK_EQ(rc_write_done(c, 103, cookie, 0, false, &idx), RC_WRITE_DONE);
		CHECK_EQ(hashed_idx(c, 103), RC_NONE);
		rc_map_read(c, 102 * 256, 256, 0, &p, &plan);
		if (active) {
			CHECK_EQ(plan.act, RC_READ_FILL);
			CHECK_EQ(plan.nr_fills, 3);
			for (k = 0; k < 3; k++)
				CHECK_EQ(plan.fills[k].seg, 100 + k);
			serve_plan(c, &plan, 1);
			CHECK_EQ(c->ctr.prefetches, 2);
		} else {
			CHECK_EQ(plan.act, RC_READ_BYPASS);
			CHECK_EQ(ghost_ahead(c, 102), 0);
			CHECK_EQ(ghost_ahead(c, 101), 1);
			CHECK_EQ(ghost_ahead(c, 100), 1);
		}
		CHECK_EQ(c->ctr.prefetch_paired, 0);
		CHECK_EQ(hashed_idx(c, 103), RC_NONE);
		check_invariants(c);
		rm(c);
		l.n = 0;
	}
}

/* 1 ms an access and 1 us a sector, whatever the disk. */
static bool size_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	(void)ctx, (void)vd, (void)sector, (void)now;
	*ns = 1000000 + sectors * 1000ull;
	return true;
}

/*
 * A pair's other half is speculation: it goes down in the miss's request,
 * which the budget pays beyond the read's bare price, and only where the
 * bar admits two segments, the miss's and its pair's: while the balance
 * is not negative, or with two of the overdraft left (one is the miss's
 * alone).  Both count in red, as segments.  Never while fills are held,
 * nor inactive.
 */
CTEST(pairs_are_paid_from_the_budget_and_held_like_fills_ahead)
{
	struct rc_cache *c = mk(8);
	const struct rc_pricer p = { .price = size_price, .capacity = 200 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	CHECK(rc_budgeted(c));
	CHECK_EQ(pair_read(c, &p, 10, &plan), 1);
	serve_plan(c, &plan, 1);
	CHECK_EQ(pair_read(c, &p, 20, &plan), 1);
	serve_plan(c, &plan, 1);
	/* at 0: the pair; one request of 512 sectors for a read of 8: 504 us beyond it */
	c->budget.balance = 0;
	c->budget.red = 0;
	c->budget.spent_ns = 0;
	CHECK_EQ(pair_read(c, &p, 8, &plan), 2);
	CHECK_EQ(plan.fills[0].seg, 8);
	CHECK_EQ(plan.fills[1].seg, 9);
	CHECK_EQ(c->budget.spent_ns, 504000);
	CHECK_EQ(c->budget.balance, -504000 + 1008000 / 128);
	CHECK_EQ(c->budget.red, 0);			/* paid at 0 */
	serve_plan(c, &plan, 1);
	/* in the red with two of the overdraft left: the pair, both in red */
	c->budget.red = RC_BUDGET_OVERDRAFT - 2;
	CHECK_EQ(pair_read(c, &p, 22, &plan), 2);
	CHECK_EQ(plan.fills[1].seg, 23);
	CHECK_EQ(c->budget.spent_ns, 2 * 504000);
	CHECK_EQ(c->budget.red, RC_BUDGET_OVERDRAFT);
	serve_plan(c, &plan, 1);
	/* one left: the miss only (25 is free, 22 near) */
	c->budget.red = RC_BUDGET_OVERDRAFT - 1;
	CHECK_EQ(pair_read(c, &p, 24, &plan), 1);
	CHECK_EQ(plan.fills[0].seg, 24);
	CHECK_EQ(c->budget.spent_ns, 2 * 504000 + 248000);
	CHECK_EQ(c->budget.red, RC_BUDGET_OVERDRAFT);
	serve_plan(c, &plan, 1);
	/* none left: neither */
	CHECK_EQ(pair_read(c, &p, 26, &plan), 0);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_CTR(c, .reads = 6, .read_misses = 5, .read_bypassed = 1, .read_bypassed_budget = 1,
		  .prefetches = 2, .prefetch_paired = 2, .fill_ios = 7, .fill_joined = 2,
		  .fill_sectors = 7 * 256);

	rc_hold_fills(c, true);
	c->budget.balance = 0;
	c->budget.red = 0;
	CHECK_EQ(pair_read(c, &p, 26, &plan), 0);	/* 24 near, 27 free */
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	rc_hold_fills(c, false);
	rc_adapt_set_active(&c->adapt, false);
	CHECK_EQ(pair_read(c, &p, 26, &plan), 0);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(c->ctr.prefetch_paired, 2);
	check_invariants(c);
	rm(c);
}

/* A pair's other half past the device's end, or with a write to it in flight, is not filled. */
CTEST(pairs_stop_at_the_device_end_and_at_writes_in_flight)
{
	struct rc_cache *c = mk(16);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 21 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;
	enum rc_write_action wa;
	u32 cookie, idx;

	CHECK_EQ(pair_read(c, &p, 18, &plan), 1);
	serve_plan(c, &plan, 1);
	CHECK_EQ(pair_read(c, &p, 20, &plan), 1);	/* 18 near, 21 past the end */
	serve_plan(c, &plan, 1);
	cookie = rc_write_start(c, 17, 8, false);
	CHECK_EQ(pair_read(c, &p, 16, &plan), 1);	/* 18 near, 17 being written */
	serve_plan(c, &plan, 1);
	wa = rc_write_done(c, 17, cookie, 0, false, &idx);
	CHECK_EQ(wa, RC_WRITE_DONE);
	CHECK_EQ(pair_read(c, &p, 14, &plan), 2);	/* 16 near: 14 and 15 */
	serve_plan(c, &plan, 1);
	CHECK_EQ(c->ctr.prefetch_paired, 1);
	check_invariants(c);
	rm(c);
}

#define MS 1000000ull

/*
 * The adversary's prices: 5 ms a segment's worth of a read on the bare
 * disk (a read of 8 pieces joined costs what 8 reads would), 7 ms a whole
 * segment on the cache's.
 */
static bool adversary_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now,
			    u64 *ns)
{
	(void)ctx;
	(void)sector;
	(void)now;
	*ns = vd == RC_VD_BARE ? 5 * MS * ((sectors + 255) / 256) : (u64)sectors * 7 * MS / 256;
	return true;
}

/*
 * Read-ahead that never pays: 300 backward streams of 8 whole segments,
 * far apart, prefetch 8, through rc_map_read() as the glue goes.  Each
 * stream ramps up and leaves its last batch unread.  A read's miss, pair
 * and batch pass the one bar: in the red, batches still go (trimmed) on
 * the overdraft, but once the balance is negative at most
 * RC_BUDGET_OVERDRAFT reads fill anything until it is back at 0, and none
 * at or below minus the cap: the balance never falls below it by more
 * than one read's fills (its miss, its pair and a batch).
 */
CTEST(budget_bounds_read_ahead_that_never_pays)
{
	struct rc_cache *c = mk(64);
	const struct rc_pricer p = { .price = adversary_price, .capacity = 1ull << 32,
				     .run_max = RC_FILL_RUN_MAX };
	const s64 cap = RC_BUDGET_CAP_MS * (s64)MS;
	const struct rc_fill_req *q;
	struct rc_read_plan plan;
	s64 low = 0, before;
	u64 base;
	u32 s, k, r, f, in_red = 0, batches = 0;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	c->prefetch = RC_PREFETCH_MAX;
	CHECK(rc_budgeted(c));
	for (s = 0; s < 300; s++) {
		base = (u64)(s * 7919 % 4096) * 64;
		for (k = 0; k < 8; k++) {
			before = c->budget.balance;
			rc_map_read(c, (base + 7 - k) * 256, 256, 0, &p, &plan);
			if (before >= 0) {
				in_red = 0;	/* the overdraft is whole */
			} else if (plan.nr_fills) {
				CHECK(before > -cap);
				CHECK(++in_red <= RC_BUDGET_OVERDRAFT);
				batches += plan.nr_fills > 1;
			}
			if (plan.act == RC_READ_HIT)
				rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx,
							       .sectors = 256, .end = MS / 10 });
			for (r = 0; r < plan.nr_reqs; r++) {
				q = &plan.reqs[r];
				for (f = q->first; f < q->first + q->nr; f++) {
					CHECK_EQ(rc_fill_done(c, plan.fills[f].idx, 0, 256,
							      f > q->first), RC_FILL_SERVE);
					rc_unpin(c, plan.fills[f].idx);
				}
			}
			if (c->budget.balance < low)
				low = c->budget.balance;
		}
	}
	check_invariants(c);
	/* batches went in the red, on the overdraft ... */
	CHECK(batches > 0);
	/* ... never further than one read's fills below minus the cap */
	CHECK(low > -cap - (s64)((RC_PREFETCH_MAX + 2) * 7 * MS));
	/* and there the budget refused the rest */
	CHECK(c->ctr.read_bypassed_budget > 2000);
	rm(c);
}

/*
 * The fills along a read are paid as fills ahead are: what they cost on
 * the cache's disk, at once; the rest of the read earns its bare price
 * back as it is served.  Reads of 8 segments at new places whose fills
 * never pay (7 ms a segment, 5 ms a piece on the bare disk): the budget
 * admits each read as a whole, by its first fill, so the balance never
 * falls below RC_BUDGET_OVERDRAFT + 1 reads' fills, and then it refuses.
 */
CTEST(budget_pays_the_fills_along_a_read_and_bounds_them)
{
	struct rc_cache *c = mk(64);
	const struct rc_pricer p = { .price = adversary_price, .capacity = 1ull << 32,
				     .run_max = RC_FILL_RUN_MAX };
	const s64 read_cost = 2 * MS + 7 * 7 * MS;
	struct rc_read_plan plan, rest;
	u64 sector, end;
	s64 low = 0;
	u32 r, k;

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	CHECK(rc_budgeted(c));
	for (r = 0; r < 2000; r++) {
		sector = (u64)r * 16 * 256;
		end = sector + 8 * 256;
		rc_map_read(c, sector, 8 * 256, 0, &p, &plan);
		if (r == 0)	/* the miss's fill beyond its read, and 7 fills along */
			CHECK_EQ(c->budget.spent_ns, read_cost);
		if (c->budget.balance < low)
			low = c->budget.balance;
		CHECK_EQ(plan.nr_fills, plan.act == RC_READ_FILL ? 8 : 0);
		for (sector += plan.sectors; sector < end; sector += rest.sectors) {
			rc_map_read(c, sector, end - sector, 0, &p, &rest);
			CHECK_EQ(rest.act, RC_READ_WAIT);
		}
		for (k = 0; k < plan.nr_fills; k++) {
			CHECK_EQ(rc_fill_done(c, plan.fills[k].idx, 0, 256, k > 0), RC_FILL_SERVE);
			rc_fill_waiters_done(c, plan.fills[k].idx, RC_FILL_SERVE, 1, k == 0);
		}
	}
	check_invariants(c);
	CHECK(low < -read_cost);
	CHECK(low >= -(RC_BUDGET_OVERDRAFT + 1) * read_cost);
	CHECK_EQ(c->ctr.fill_along, 7 * c->ctr.read_misses);
	CHECK_EQ(c->ctr.read_hits_waited, 7 * c->ctr.read_misses);
	/* the others went down whole, refused by their first piece */
	CHECK_EQ(c->ctr.read_bypassed, 8 * (2000 - c->ctr.read_misses));
	CHECK_EQ(c->ctr.read_joined, 7 * (2000 - c->ctr.read_misses));
	CHECK(c->ctr.read_bypassed_budget >= 2000 - c->ctr.read_misses);
	CHECK(c->ctr.read_misses > 5 && c->ctr.read_misses < 200);
	rm(c);
}

/* --- the budget's bar on a miss (rc_map_read()) ------------------------- */

/* An adaptive cache trusting the model, so budgeted, which reads nothing ahead. */
static struct rc_cache *mk_budgeted(u32 n)
{
	struct rc_cache *c = mk(n);

	rc_set_policy(c, RC_POLICY_ADAPTIVE);
	c->adapt.estimator = RC_EST_VDISK;
	c->adapt.window = RC_ADAPT_MAX_WINDOW;
	c->prefetch = 0;
	CHECK(rc_budgeted(c));
	return c;
}

/* The budget's bar refuses the next miss's segment: the balance at minus the cap. */
static void bar_refuses(struct rc_cache *c)
{
	c->budget.balance = -(s64)c->budget.cap_ns;
	c->budget.red = 0;
	CHECK_EQ(rc_budget_admit(&c->budget, 1), 0);
}

/* ... or admits it: the balance at 0. */
static void bar_admits(struct rc_cache *c)
{
	c->budget.balance = 0;
	c->budget.red = 0;
	CHECK_EQ(rc_budget_admit(&c->budget, 1), 1);
}

/* @plan is a miss filling one entry, in one request of @sectors at @sector. */
static void check_one_fill(const struct rc_read_plan *plan, u64 sector, u32 sectors)
{
	CHECK_EQ(plan->act, RC_READ_FILL);
	CHECK_EQ(plan->nr_fills, 1);
	CHECK_EQ(plan->fills[0].idx, plan->idx);
	CHECK(rc_fill_own(&plan->fills[0]));
	CHECK_EQ(plan->nr_reqs, 1);
	CHECK_EQ(plan->reqs[0].sector, sector);
	CHECK_EQ(plan->reqs[0].sectors, sectors);
	CHECK_EQ(plan->reqs[0].first, 0);
	CHECK_EQ(plan->reqs[0].nr, 1);
}

/* Fill @idx completes, @sectors read; its @n waiters (the miss among them) are served. */
static void serve_fill(struct rc_cache *c, u32 idx, u32 sectors, u32 n)
{
	CHECK_EQ(rc_fill_done(c, idx, 0, sectors, false), RC_FILL_SERVE);
	rc_fill_waiters_done(c, idx, RC_FILL_SERVE, n, 1);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	CHECK_EQ(c->entries[idx].pins, 0);
}

/*
 * A miss the budget's bar refuses bypasses (read_bypassed_budget), priced
 * on both disks as it goes down, and nothing of it is cached; the bar
 * admitting it, the segment fills whole.
 */
CTEST(budget_a_refused_miss_bypasses_and_an_admitted_one_fills_its_segment)
{
	struct rc_cache *c = mk_budgeted(8);
	struct price_log l = { 0 };
	const struct rc_pricer p = { .price = log_price, .ctx = &l, .capacity = 100 * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_read_plan plan;

	bar_refuses(c);
	rc_map_read(c, 2604, 12, 0, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.sectors, 12);
	CHECK_EQ(plan.nr_fills, 0);
	CHECK_EQ(plan.nr_reqs, 0);
	CHECK_PRICES(&l, { RC_VD_BARE, 2604, 12 }, { RC_VD_CACHE, 2604, 12 });
	CHECK_EQ(hashed_idx(c, 10), RC_NONE);
	CHECK_CTR(c, .reads = 1, .read_bypassed = 1, .read_bypassed_budget = 1);

	bar_admits(c);
	rc_map_read(c, 2604, 12, 0, &p, &plan);
	check_one_fill(&plan, 2560, 256);
	CHECK_EQ(hashed_idx(c, 10), plan.idx);
	CHECK_PRICES(&l, { RC_VD_BARE, 2604, 12 }, { RC_VD_CACHE, 2560, 256 });
	serve_fill(c, plan.idx, 256, 1);
	CHECK_CTR(c, .reads = 2, .read_misses = 1, .read_bypassed = 1, .read_bypassed_budget = 1,
		  .fill_ios = 1, .fill_sectors = 256);
	check_invariants(c);
	rm(c);
}

/* --- HDC: the misses per segment (rc_hot_attach()) ------------------------ */

/*
 * Every read piece the LRU does not serve counts a miss of its segment: a
 * fill, a bypass (each piece joined to it too), and, inactive, what the
 * simulated cache would not have served; a hit and a wait count nothing,
 * but a hit on a pinned segment does (the miss its pin saves).  A period
 * after the last halving, the next reads halve the counts,
 * RC_HOT_AGE_CHUNK positions each, once the caller starts the halving.
 */
CTEST(hot_counts_the_misses_hdc_could_save_and_halves_them_a_period_on)
{
	const u64 period = (u64)RC_HOT_PERIOD_S * 1000000000;
	const u64 regions = 100;	/* 100 segments: exact counters */
	const struct rc_pricer p = { .price = size_price, .capacity = regions * 256,
				     .run_max = RC_FILL_RUN_MAX };
	struct rc_cache *c = mk(4);
	struct rc_read_plan plan;
	struct rc_hot h;
	void *mem = calloc(1, rc_hot_mem_size(regions, rc_hot_slots_for(4)));
	u32 k;

	CHECK(mem != NULL);
	rc_hot_init(&h, mem, regions, rc_hot_slots_for(4));
	CHECK(rc_hot_exact(&h));
	rc_hot_attach(c, &h, 0);
	c->prefetch = 0;

	rc_map_read(c, 5 * 256, 8, 1, &p, &plan);		/* a miss: fills */
	CHECK_EQ(plan.act, RC_READ_FILL);
	rc_map_read(c, 5 * 256 + 8, 8, 2, &p, &plan);		/* waits on it */
	CHECK_EQ(plan.act, RC_READ_WAIT);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 1);
	serve_fill(c, plan.idx, 256, 2);
	rc_map_read(c, 5 * 256 + 16, 8, 3, &p, &plan);		/* a hit */
	CHECK_EQ(plan.act, RC_READ_HIT);
	rc_unpin(c, plan.idx);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 1);
	/* pinned, a hit counts */
	rc_set_tunable(c, RC_TUN_HDC, 50);
	CHECK_EQ(rc_hdc_pin(c, 5, &k), RC_HDC_PINNED);
	rc_map_read(c, 5 * 256 + 40, 8, 3, &p, &plan);	/* reads on: the same visit */
	rc_unpin(c, plan.idx);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 1);
	rc_map_read(c, 5 * 256, 8, 3, &p, &plan);		/* reads again */
	CHECK_EQ(plan.act, RC_READ_HIT);
	rc_unpin(c, plan.idx);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 2);
	CHECK(rc_hdc_unpin(c, 5));

	/* a stream reading on through a segment it bypasses: one visit, one miss */
	rc_hold_fills(c, true);
	for (k = 0; k < 8; k++)
		rc_map_read(c, 60 * 256 + 16 * k, 8, 3, &p, &plan);
	CHECK_EQ(rc_hot_count(&h, 60, NULL), 1);
	rc_map_read(c, 60 * 256 + 8, 8, 3, &p, &plan);		/* back: a new visit */
	CHECK_EQ(rc_hot_count(&h, 60, NULL), 2);
	rc_hold_fills(c, false);

	/* fills held: a read of 7 and 8 bypasses as one, each piece a miss */
	rc_hold_fills(c, true);
	rc_map_read(c, 7 * 256, 512, 4, &p, &plan);
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(plan.sectors, 512);
	rc_hold_fills(c, false);
	CHECK_EQ(rc_hot_count(&h, 7, NULL), 1);
	CHECK_EQ(rc_hot_count(&h, 8, NULL), 1);

	/* inactive: the simulated cache's misses count, its hits do not */
	rc_set_policy(c, RC_POLICY_OFF);
	rc_map_read(c, 9 * 256, 8, 5, &p, &plan);		/* a simulated miss */
	rc_map_read(c, 9 * 256, 8, 6, &p, &plan);		/* a simulated hit */
	rc_map_read(c, 5 * 256, 8, 7, &p, &plan);		/* held: a simulated hit */
	CHECK_EQ(plan.act, RC_READ_BYPASS);
	CHECK_EQ(rc_hot_count(&h, 9, NULL), 1);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 2);
	CHECK_EQ(rc_hot_total(&h), 5 + 2);

	/* a period on: 100 counters halved over two reads of 64 positions */
	rc_set_policy(c, RC_POLICY_ALWAYS);
	rc_hold_fills(c, true);					/* every read bypasses */
	for (k = 0; k < 4; k++)
		rc_map_read(c, 20 * 256, 8, 8 + k, &p, &plan);
	CHECK_EQ(rc_hot_count(&h, 20, NULL), 4);
	rc_map_read(c, 50 * 256, 8, period, &p, &plan);		/* ends it, then counts */
	CHECK_EQ(c->hot_aging, RC_HOT_IDLE);
	CHECK_EQ(c->hot_periods, 1);				/* a choice is due, ... */
	CHECK_EQ(rc_hot_count(&h, 50, NULL), 1);
	rc_hot_age_start(c);					/* ... then the halving */
	CHECK_EQ(c->hot_aging, 0);
	rc_map_read(c, 50 * 256, 8, period + 1, &p, &plan);	/* halves 0..63 */
	CHECK_EQ(c->hot_aging, RC_HOT_AGE_CHUNK);
	CHECK_EQ(rc_hot_count(&h, 20, NULL), 2);
	CHECK_EQ(rc_hot_count(&h, 5, NULL), 1);
	CHECK_EQ(rc_hot_count(&h, 9, NULL), 0);
	CHECK_EQ(rc_hot_count(&h, 50, NULL), 1);		/* 1 halved, 1 more */
	rc_map_read(c, 99 * 256, 8, period + 2, &p, &plan);	/* halves 64..99: done */
	CHECK_EQ(c->hot_aging, RC_HOT_IDLE);
	CHECK_EQ(c->hot_since, period);
	CHECK_EQ(rc_hot_count(&h, 99, NULL), 1);		/* counted after its halving */
	rc_map_read(c, 50 * 256, 8, 2 * period - 1, &p, &plan);	/* not a period yet */
	CHECK_EQ(c->hot_aging, RC_HOT_IDLE);
	CHECK_EQ(rc_hot_count(&h, 50, NULL), 2);
	CHECK_EQ(rc_hot_total(&h), 1 + 1 + 2 + 2 + 1);
	CHECK_EQ(c->hot_periods, 1);
	/* the period is a tunable: 10 s on, the next one ends */
	rc_set_tunable(c, RC_TUN_HOT_PERIOD, 10);
	CHECK_EQ(rc_get_tunable(c, RC_TUN_HOT_PERIOD), 10);
	rc_map_read(c, 50 * 256, 8, period + 10000000000ull, &p, &plan);
	CHECK_EQ(c->hot_periods, 2);
	CHECK_EQ(c->hot_aging, RC_HOT_IDLE);
	/* reset_stats forgets the counts, and a halving under way */
	rc_hot_age_start(c);
	rc_reset_counters(c);
	CHECK_EQ(rc_hot_total(&h), 0);
	CHECK_EQ(rc_hot_count(&h, 50, NULL), 0);
	CHECK_EQ(c->hot_aging, RC_HOT_IDLE);
	rc_hold_fills(c, false);
	check_invariants(c);
	rm(c);
	free(mem);
}

/* --- HDC: the pinned set (rc_hdc_pin(), rc_hdc_keep()) -------------------- */

/* A cache of @n entries whose HDC may pin @share % of them. */
static struct rc_cache *mk_hdc(u32 n, u32 share)
{
	struct rc_cache *c = mk(n);

	c->prefetch = 0;
	rc_set_tunable(c, RC_TUN_HDC, share);
	CHECK_EQ(rc_get_tunable(c, RC_TUN_HDC), share);
	return c;
}

/*
 * A cached segment is pinned where it is; from then on no flood of other
 * reads evicts it, and each read of it is a hit counted in hdc_hits.  The
 * LRU alone, 40 other segments through 8 entries, would have evicted it.
 */
CTEST(hdc_a_pinned_segment_survives_a_flood_of_other_reads)
{
	struct rc_cache *c = mk_hdc(8, 50);
	u32 idx, pin, k;

	CHECK_EQ(rc_hdc_max(c), 4);
	pin = fill_seg(c, 1);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_PINNED);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_PINNED);	/* once is enough */
	CHECK_EQ(c->nr_hdc, 1);
	CHECK(rc_hdc_pinned(c, 1));
	CHECK(!rc_hdc_pinned(c, 2));
	CHECK_EQ(c->hdc_head, pin);
	check_invariants(c);
	for (k = 10; k < 50; k++) {
		fill_seg(c, k);
		hit_seg(c, 1, pin);
	}
	check_invariants(c);
	CHECK_EQ(c->hdc_head, pin);
	CHECK_EQ(lru_len(c), 7);
	CHECK_CTR(c, .reads = 81, .read_hits = 40, .read_misses = 41, .fill_ios = 41,
		  .fill_sectors = 41 * 256, .evictions = 33, .hdc_hits = 40);
	rm(c);
}

/*
 * A segment not cached gets an entry filling for it, pinned by HDC before
 * its data is there: a read meanwhile waits on it and is served by it;
 * the fill is counted in hdc_fills, and the read as one that waited.
 */
CTEST(hdc_fills_a_segment_not_cached_and_pins_it)
{
	struct rc_cache *c = mk_hdc(8, 25);
	u32 idx = RC_NONE, w = RC_NONE;

	CHECK_EQ(rc_hdc_pin(c, 7, &idx), RC_HDC_FILL);
	CHECK(idx < 8);
	CHECK_EQ(c->entries[idx].state, RC_FILLING);
	CHECK(c->entries[idx].hdc && c->entries[idx].hfill);
	CHECK_EQ(c->nr_hdc, 1);
	check_invariants(c);
	CHECK_EQ(read_seg(c, 7, &w), RC_READ_WAIT);
	CHECK_EQ(w, idx);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_fill_waiters_done(c, idx, RC_FILL_SERVE, 1, 0);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	CHECK_EQ(c->hdc_head, idx);
	CHECK(!c->entries[idx].hfill);
	check_invariants(c);
	CHECK_CTR(c, .reads = 1, .read_hits_waited = 1, .fill_ios = 1, .fill_sectors = 256,
		  .hdc_fills = 1);
	rm(c);
}

/*
 * The set holds hdc % of the entries and no more (RC_HDC_FULL; 0 %: HDC
 * is off); a fill cannot start while fills are held or a write to the
 * segment's bucket is in flight, nor when every entry is busy
 * (RC_HDC_BUSY), and then nothing changes.
 */
CTEST(hdc_pins_at_most_its_share_and_waits_while_fills_cannot_start)
{
	struct rc_cache *c = mk_hdc(8, 25), *off = mk_hdc(8, 0), *tiny = mk_hdc(2, 50);
	u32 idx, a, b, cookie;

	CHECK_EQ(rc_hdc_pin(off, 3, &idx), RC_HDC_FULL);
	fill_seg(off, 3);
	CHECK_EQ(rc_hdc_pin(off, 3, &idx), RC_HDC_FULL);
	CHECK_EQ(off->nr_hdc, 0);

	CHECK_EQ(rc_hdc_max(c), 2);
	rc_hold_fills(c, true);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_BUSY);
	rc_hold_fills(c, false);
	cookie = rc_write_start(c, 1, 8, false);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_BUSY);
	CHECK_EQ(rc_write_done(c, 1, cookie, 0, false, &idx), RC_WRITE_DONE);
	CHECK_EQ(c->nr_hdc, 0);
	check_invariants(c);
	CHECK_EQ(rc_hdc_pin(c, 1, &a), RC_HDC_FILL);
	CHECK_EQ(rc_hdc_pin(c, 2, &b), RC_HDC_FILL);
	CHECK_EQ(rc_hdc_pin(c, 3, &idx), RC_HDC_FULL);
	CHECK_EQ(c->nr_hdc, 2);
	CHECK_CTR(c, .writes = 1, .write_sectors = 8, .hdc_fills = 2);
	check_invariants(c);

	/* one entry's fill in flight, the other's read pinned: no entry to take */
	CHECK_EQ(read_seg(tiny, 5, &a), RC_READ_FILL);
	fill_seg(tiny, 6);
	CHECK_EQ(read_seg(tiny, 6, &b), RC_READ_HIT);
	CHECK_EQ(rc_hdc_pin(tiny, 9, &idx), RC_HDC_BUSY);
	CHECK_EQ(tiny->nr_hdc, 0);
	check_invariants(tiny);
	rm(c);
	rm(off);
	rm(tiny);
}

/*
 * A pin ends by rc_hdc_unpin() (the entry back on the LRU, most recent) or
 * by rc_hdc_keep() walking the entries in chunks with the new set: those
 * not in it are unpinned, those in it stay.
 */
CTEST(hdc_unpin_and_a_new_set_put_segments_back_on_the_lru)
{
	struct rc_cache *c = mk_hdc(16, 50);
	const u64 keep[] = { 2, 40 };
	u32 idx[4], k, from;

	for (k = 0; k < 4; k++) {
		idx[k] = fill_seg(c, k + 1);
		CHECK_EQ(rc_hdc_pin(c, k + 1, &from), RC_HDC_PINNED);
	}
	fill_seg(c, 9);
	CHECK_EQ(lru_len(c), 1);
	CHECK(rc_hdc_unpin(c, 4));
	CHECK(!rc_hdc_unpin(c, 4));
	CHECK(!rc_hdc_unpin(c, 9));
	CHECK_EQ(c->lru_head, idx[3]);
	CHECK_EQ(c->nr_hdc, 3);
	check_invariants(c);
	for (from = 0; from < c->nr_entries;)
		from = rc_hdc_keep(c, keep, 2, from, 3);	/* 3 entries a step */
	CHECK_EQ(from, 16);
	CHECK_EQ(c->nr_hdc, 1);
	CHECK(rc_hdc_pinned(c, 2));
	CHECK(!rc_hdc_pinned(c, 1) && !rc_hdc_pinned(c, 3));
	CHECK_EQ(lru_len(c), 4);
	check_invariants(c);
	/* an empty set unpins all */
	CHECK_EQ(rc_hdc_keep(c, NULL, 0, 0, 100), 16);
	CHECK_EQ(c->nr_hdc, 0);
	CHECK_EQ(c->hdc_head, RC_NONE);
	CHECK_CTR(c, .reads = 5, .read_misses = 5, .fill_ios = 5, .fill_sectors = 5 * 256);
	check_invariants(c);
	rm(c);
}

/*
 * A pin also ends when its entry leaves the index, counted in hdc_dropped:
 * a write drops it (write policy invalidate), its fill fails or goes stale,
 * or drop_cache drops everything.  A fill that cannot be set up is taken
 * back from hdc_fills and is no read's miss.
 */
CTEST(hdc_a_pin_ends_when_its_entry_leaves_the_index)
{
	struct rc_cache *c = mk_hdc(8, 50);
	u32 idx, w, cookie;

	fill_seg(c, 1);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_PINNED);
	cookie = rc_write_start(c, 1, 8, false);
	CHECK(!rc_hdc_pinned(c, 1));
	CHECK_EQ(rc_write_done(c, 1, cookie, 0, false, &w), RC_WRITE_DONE);
	CHECK_EQ(c->nr_hdc, 0);
	check_invariants(c);

	CHECK_EQ(rc_hdc_pin(c, 2, &idx), RC_HDC_FILL);
	CHECK_EQ(rc_fill_done(c, idx, -5, 256, false), RC_FILL_ERROR);
	CHECK_EQ(rc_hdc_pin(c, 3, &idx), RC_HDC_FILL);
	cookie = rc_write_start(c, 3, 8, false);
	CHECK_EQ(rc_write_done(c, 3, cookie, 0, false, &w), RC_WRITE_DONE);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	CHECK_EQ(rc_hdc_pin(c, 4, &idx), RC_HDC_FILL);
	rc_fill_cancel(c, idx);
	CHECK_EQ(c->nr_hdc, 0);
	check_invariants(c);

	fill_seg(c, 5);
	CHECK_EQ(rc_hdc_pin(c, 5, &idx), RC_HDC_PINNED);
	CHECK_EQ(rc_drop_all(c), 0);
	CHECK_EQ(c->nr_valid, 0);
	CHECK_EQ(c->nr_hdc, 0);
	CHECK_CTR(c, .reads = 2, .read_misses = 2, .fill_ios = 4, .fill_sectors = 2 * 256 + 2 * 256,
		  .fill_errors = 1, .fill_stale = 1, .writes = 2, .write_sectors = 16,
		  .invalidations = 1, .hdc_fills = 2, .hdc_dropped = 4);
	check_invariants(c);
	rm(c);
}

/*
 * Inactive, the cache serves nothing but HDC's pinned segments: their data
 * is there, a hit costs the disk nothing.  Everything else bypasses, and
 * the simulated cache plays it.
 */
CTEST(hdc_pinned_segments_serve_while_the_cache_is_inactive)
{
	struct rc_cache *c = mk_hdc(8, 50);
	u32 pin, other, idx;

	pin = fill_seg(c, 1);
	other = fill_seg(c, 2);
	CHECK_EQ(rc_hdc_pin(c, 1, &idx), RC_HDC_PINNED);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK(!rc_active(c));
	hit_seg(c, 1, pin);
	CHECK_EQ(read_seg(c, 2, &idx), RC_READ_BYPASS);
	CHECK_EQ(c->entries[other].state, RC_VALID);
	CHECK_EQ(rc_hdc_pin(c, 3, &idx), RC_HDC_FILL);	/* its fills go on, too */
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
	rc_fill_waiters_done(c, idx, RC_FILL_SERVE, 0, 0);
	hit_seg(c, 3, idx);
	CHECK_CTR(c, .reads = 5, .read_hits = 2, .read_misses = 2, .read_bypassed = 1,
		  .read_bypassed_inactive = 1, .sim_hits = 1, .fill_ios = 3,
		  .fill_sectors = 3 * 256, .hdc_fills = 1, .hdc_hits = 2);
	check_invariants(c);
	rm(c);
}

/*
 * rc_hdc_want(): a read of a chosen segment pins it, a hit where it is and
 * a miss by a fill that nothing refuses (inactive too: it fills and is
 * served), counted in hdc_fills; while the set has room only, and never
 * a segment not chosen.
 */
CTEST(hdc_a_read_of_a_chosen_segment_pins_it)
{
	struct rc_cache *c = mk_hdc(8, 25);	/* room for 2 */
	const u64 want[] = { 3, 4, 5 };
	u32 idx, hit;

	hit = fill_seg(c, 3);
	rc_hdc_want(c, want, 3);
	hit_seg(c, 3, hit);				/* a hit: pinned where it is */
	CHECK(rc_hdc_pinned(c, 3));
	CHECK_EQ(c->hdc_head, hit);
	rc_set_policy(c, RC_POLICY_OFF);		/* inactive: misses bypass, */
	CHECK_EQ(read_seg(c, 9, &idx), RC_READ_BYPASS);
	CHECK_EQ(read_seg(c, 4, &idx), RC_READ_FILL);	/* but a chosen one fills */
	CHECK(c->entries[idx].hdc);
	serve_fill(c, idx, 256, 1);
	CHECK_EQ(c->hdc_head, idx);
	CHECK_EQ(c->nr_hdc, 2);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_BYPASS);	/* the set is full */
	CHECK(!rc_hdc_pinned(c, 5));
	check_invariants(c);
	CHECK_CTR(c, .reads = 5, .read_hits = 1, .read_misses = 2, .read_bypassed = 2,
		  .read_bypassed_inactive = 2, .sim_misses = 2, .fill_ios = 2,
		  .fill_sectors = 2 * 256, .hdc_fills = 1);
	/* a new set: what left it goes back to the LRU, the reads pin the rest */
	rc_set_policy(c, RC_POLICY_ALWAYS);
	rc_hdc_want(c, want + 2, 1);
	CHECK_EQ(rc_hdc_keep(c, want + 2, 1, 0, 8), 8);
	CHECK_EQ(c->nr_hdc, 0);
	CHECK_EQ(read_seg(c, 5, &idx), RC_READ_FILL);
	serve_fill(c, idx, 256, 1);
	CHECK(rc_hdc_pinned(c, 5));
	rc_hdc_want(c, NULL, 0);
	CHECK_EQ(c->hdc_nwant, 0);
	check_invariants(c);
	rm(c);
}

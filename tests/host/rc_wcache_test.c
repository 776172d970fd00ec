// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the redcap write cache (rc_wc_write(), rc_wb_take()
 * and what they change in the core): units, partial entries, the dirty
 * list, write-back requests, errors, discards over dirty data, and a
 * randomized model check that no write is ever lost or read back stale.
 */
#include <errno.h>

#include "ctest.h"
#include "rc-core.h"
#include "rc_read_seg.h"

#define SEG_SHIFT	8		/* 256 sectors: 32 units of 8 */

static struct rc_cache *mk_wc(u32 n, u32 seg_shift, enum rc_write_policy wp)
{
	struct rc_cache *c = malloc(sizeof(*c));
	void *mem = malloc(rc_cache_mem_size(n));

	CHECK(c && mem);
	CHECK_EQ(rc_cache_init(c, mem, n, seg_shift, 0), 0);
	rc_set_write_policy(c, wp);
	return c;
}

static void rm(struct rc_cache *c)
{
	free(c->entries);
	free(c);
}

static u32 rc_popcount_test(u64 x)
{
	return (u32)__builtin_popcountll(x);
}

static u64 sec(u64 seg, u32 unit)
{
	return (seg << SEG_SHIFT) + ((u64)unit << 3);
}

/* A cached write of units @u0..@u1 of @seg: its entry, unpinned again. */
static u32 cache_write(struct rc_cache *c, u64 seg, u32 u0, u32 u1)
{
	u32 idx = RC_NONE;

	CHECK_EQ(rc_wc_write(c, sec(seg, u0), (u1 - u0) * 8, false, &idx), RC_WC_CACHE);
	rc_wc_copied(c, idx, sec(seg, u0), (u1 - u0) * 8, true);
	return idx;
}

static u32 nr_on_dirty(const struct rc_cache *c)
{
	u32 i, n = 0, prev = RC_NONE;

	for (i = c->dirty_head; i != RC_NONE; prev = i, i = c->entries[i].next) {
		CHECK(c->entries[i].on_dirty);
		CHECK(!c->entries[i].on_list);
		CHECK(c->entries[i].dirty);
		CHECK_EQ(c->entries[i].prev, prev);
		if (prev != RC_NONE)	/* newest at the head */
			CHECK((s32)(c->entries[prev].dseq - c->entries[i].dseq) >= 0);
		n++;
	}
	CHECK_EQ(prev, c->dirty_tail);
	return n;
}

CTEST(units)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_cache *big = mk_wc(4, 11, RC_WRITE_BACK);	/* 1 MiB: units of 32 */
	struct rc_cache *small = mk_wc(4, 3, RC_WRITE_BACK);	/* 4 KiB: one unit */

	CHECK_EQ(c->unit_shift, 3);
	CHECK_EQ(c->unit_all, 0xffffffffull);
	CHECK_EQ(rc_units(c, 0, 8, true), 1);
	CHECK_EQ(rc_units(c, 0, 256, true), 0xffffffffull);
	CHECK_EQ(rc_units(c, 5 * 256 + 1, 6, false), 1);
	CHECK_EQ(rc_units(c, 5 * 256 + 1, 6, true), 0);
	CHECK_EQ(rc_units(c, 7, 10, false), 0x7);
	CHECK_EQ(rc_units(c, 7, 10, true), 0x2);
	CHECK_EQ(rc_units(c, 248, 8, true), 0x80000000ull);
	CHECK_EQ(big->unit_shift, 5);
	CHECK_EQ(big->unit_all, ~0ull);
	CHECK_EQ(rc_units(big, 2047, 1, false), 1ull << 63);
	CHECK_EQ(rc_units(big, 0, 2048, true), ~0ull);
	CHECK_EQ(rc_units(big, 0, 8, true), 0);
	CHECK_EQ(small->unit_shift, 3);
	CHECK_EQ(small->unit_all, 1);
	CHECK_EQ(rc_units(small, 8, 8, true), 1);
	rm(c);
	rm(big);
	rm(small);
}

CTEST(cached_write_partial_entry)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	u32 idx, hit = RC_NONE;

	idx = cache_write(c, 3, 4, 6);
	CHECK_EQ(c->entries[idx].state, RC_VALID);
	CHECK_EQ(c->entries[idx].valid, 0x30);
	CHECK_EQ(c->entries[idx].dirty, 0x30);
	CHECK_EQ(c->entries[idx].pins, 0);
	CHECK_EQ(c->nr_dirty, 1);
	CHECK_EQ(c->dirty_units, 2);
	CHECK_EQ(nr_on_dirty(c), 1);
	CHECK_EQ(c->ctr.writes, 1);
	CHECK_EQ(c->ctr.write_sectors, 16);
	CHECK_EQ(c->ctr.write_cached, 1);
	/* What was written is a hit; a read reaching past it merges. */
	CHECK_EQ(rc_read(c, &rs, sec(3, 4), 16, &hit), RC_READ_HIT);
	CHECK_EQ(hit, idx);
	rc_unpin(c, hit);
	CHECK_EQ(rc_read(c, &rs, sec(3, 3), 24, &hit), RC_READ_MERGE);
	CHECK_EQ(hit, idx);
	CHECK_EQ(c->entries[idx].pins, 1);
	CHECK_EQ(rc_merge_units(c, idx, sec(3, 3), 24), 0x30);
	rc_unpin(c, hit);
	CHECK_EQ(c->ctr.read_bypassed, 1);
	CHECK_EQ(c->ctr.read_bypassed_partial, 1);
	CHECK_EQ(c->ctr.read_hits, 1);
	/* Still on the dirty list, never the LRU: no victim there. */
	CHECK_EQ(nr_on_dirty(c), 1);
	CHECK_EQ(c->lru_head, RC_NONE);
	rm(c);
}

CTEST(newer_data_serves_while_inactive)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	u32 idx, hit = RC_NONE;

	/* A whole segment goes through: it is what write-back would send. */
	CHECK_EQ(rc_wc_write(c, sec(1, 0), 256, false, &hit), RC_WC_ORIGIN);
	idx = cache_write(c, 1, 0, 31);
	rc_set_policy(c, RC_POLICY_OFF);
	CHECK(!rc_active(c));
	CHECK_EQ(rc_read(c, &rs, sec(1, 0), 248, &hit), RC_READ_HIT);
	CHECK_EQ(hit, idx);
	rc_unpin(c, hit);
	/* A segment the cache does not hold is simulated, as ever. */
	CHECK_EQ(rc_read(c, &rs, sec(2, 0), 256, &hit), RC_READ_BYPASS);
	CHECK_EQ(c->ctr.read_bypassed_inactive, 1);
	rm(c);
}

CTEST(unaligned_write)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	u32 idx = RC_NONE, got = RC_NONE;

	/* Part of a unit no entry holds: the disk's, as ever. */
	CHECK_EQ(rc_wc_write(c, sec(2, 1) + 1, 2, false, &idx), RC_WC_ORIGIN);
	CHECK_EQ(c->ctr.write_through, 1);
	CHECK_EQ(c->ctr.writes, 0);	/* rc_write_start() counts it */
	idx = cache_write(c, 2, 1, 2);
	/* Part of a unit the entry holds: cached. */
	CHECK_EQ(rc_wc_write(c, sec(2, 1) + 1, 2, false, &got), RC_WC_CACHE);
	CHECK_EQ(got, idx);
	rc_wc_copied(c, got, sec(2, 1) + 1, 2, true);
	/* Part of a unit it does not: through, keeping the entry coherent. */
	CHECK_EQ(rc_wc_write(c, sec(2, 5) + 1, 2, false, &got), RC_WC_THROUGH);
	CHECK(c->entries[idx].wbusy);
	rc_wc_copied(c, got, sec(2, 5) + 1, 2, false);
	CHECK_EQ(c->entries[idx].valid, 0x2);
	CHECK_EQ(c->entries[idx].pins, 1);
	rc_wc_through_done(c, got, sec(2, 5) + 1, 2, 0);
	CHECK(!c->entries[idx].wbusy);
	CHECK_EQ(c->entries[idx].pins, 0);
	CHECK_EQ(c->nr_wbusy, 0);
	rm(c);
}

CTEST(through_and_wait)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_SELECTIVE);
	u32 idx, got = RC_NONE;

	idx = cache_write(c, 0, 0, 4);
	CHECK_EQ(rc_wc_write(c, sec(0, 0), 8, true, &got), RC_WC_THROUGH);
	rc_wc_copied(c, got, sec(0, 0), 8, false);
	/* One write of an entry to the disk at a time. */
	CHECK_EQ(rc_wc_write(c, sec(0, 8), 8, false, &got), RC_WC_WAIT);
	CHECK_EQ(got, idx);
	CHECK_EQ(c->ctr.writes, 2);
	rc_wc_through_done(c, idx, sec(0, 0), 8, 0);
	CHECK_EQ(rc_wc_write(c, sec(0, 8), 8, false, &got), RC_WC_CACHE);
	rc_wc_copied(c, got, sec(0, 8), 8, true);
	CHECK_EQ(c->entries[idx].dirty, 0x10f);
	CHECK_EQ(c->ctr.writes, 3);
	CHECK_EQ(c->ctr.write_cached, 2);
	CHECK_EQ(c->ctr.write_through, 1);
	/* No entry: a write that must go through takes the ordinary path. */
	CHECK_EQ(rc_wc_write(c, sec(1, 0), 8, true, &got), RC_WC_ORIGIN);
	rm(c);
}

/*
 * A write through refused by the disk: the copy holds it already, so the
 * units it wrote are dirty (not those the entry does not hold), to be
 * written back; the others stay as they were.
 */
CTEST(a_refused_write_through_leaves_its_units_dirty)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_SELECTIVE);
	struct rc_wb_item it[4];
	struct rc_wb_req r[4];
	u32 idx, got = RC_NONE, n = 4;

	idx = cache_write(c, 0, 0, 4);
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 4, 2048), 1);
	rc_wb_done(c, idx, r[0].sector, r[0].sectors, 0, true);
	CHECK_EQ(c->nr_dirty, 0);
	/* Unit 3 and half of 4, which the entry does not hold: 3 dirty, not 4. */
	CHECK_EQ(rc_wc_write(c, sec(0, 3), 12, true, &got), RC_WC_THROUGH);
	rc_wc_copied(c, got, sec(0, 3), 12, false);
	rc_wc_through_done(c, got, sec(0, 3), 12, -EIO);
	CHECK_EQ(c->entries[idx].dirty, 0x8);
	CHECK_EQ(c->dirty_units, 1);
	CHECK_EQ(c->nr_dirty, 1);
	CHECK_EQ(c->nr_wbusy, 0);
	CHECK_EQ(c->entries[idx].pins, 0);
	n = 4;
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 4, 2048), 1);
	CHECK_EQ(r[0].sector, sec(0, 3));
	CHECK_EQ(r[0].sectors, 8);
	rm(c);
}

CTEST(dirty_cap_and_victims)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	u32 a, b, idx = RC_NONE, i;

	rc_set_tunable(c, RC_TUN_DIRTY, 50);
	CHECK_EQ(rc_dirty_max(c), 2);
	a = cache_write(c, 10, 0, 1);
	b = cache_write(c, 11, 0, 1);
	/* At the cap: a new segment goes to the disk; a dirty one still caches. */
	CHECK_EQ(rc_wc_write(c, sec(12, 0), 8, false, &idx), RC_WC_ORIGIN);
	CHECK_EQ(cache_write(c, 10, 1, 2), a);
	CHECK_EQ(c->nr_dirty, 2);
	/* Reads fill the other two entries and then take only those. */
	for (i = 0; i < 6; i++) {
		CHECK_EQ(read_seg(c, 20 + i, &idx), RC_READ_FILL);
		CHECK(idx != a && idx != b);
		CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_SERVE);
		CHECK_EQ(c->entries[idx].valid, c->unit_all);
		rc_unpin(c, idx);
	}
	CHECK_EQ(c->ctr.evictions, 4);
	CHECK_EQ(c->entries[a].state, RC_VALID);
	CHECK_EQ(c->entries[b].state, RC_VALID);
	/* drop_cache leaves dirty data alone. */
	rc_drop_all(c);
	CHECK_EQ(c->nr_valid, 2);
	CHECK_EQ(nr_on_dirty(c), 2);
	rm(c);
}

/* At the cap, while a write to the disk is in flight, a write waits for it. */
CTEST(dirty_cap_waits_for_writeback)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 a, idx = RC_NONE, n = 1;

	rc_set_tunable(c, RC_TUN_DIRTY, 25);
	CHECK_EQ(rc_dirty_max(c), 2);
	a = cache_write(c, 1, 0, 1);
	cache_write(c, 2, 0, 1);
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(it[0].idx, a);
	cache_write(c, 3, 0, 1);		/* its place */
	CHECK_EQ(c->nr_dirty, 2);
	CHECK_EQ(rc_wc_write(c, sec(4, 0), 8, false, &idx), RC_WC_WAIT);
	CHECK_EQ(rc_wc_write(c, sec(1, 0), 8, false, &idx), RC_WC_WAIT);	/* in flight */
	CHECK_EQ(c->ctr.write_waits, 1);	/* that one waits for its own write */
	/* Not those that would not cache anyway, nor a dirty segment. */
	CHECK_EQ(rc_wc_write(c, sec(5, 0), 256, false, &idx), RC_WC_ORIGIN);
	CHECK_EQ(rc_wc_write(c, sec(4, 0), 8, true, &idx), RC_WC_ORIGIN);
	cache_write(c, 2, 1, 2);
	CHECK_EQ(c->ctr.writes, 4);
	/* Nothing in flight to wait for: down it goes. */
	rc_wb_done(c, a, r[0].sector, r[0].sectors, 0, true);
	CHECK_EQ(c->nr_wbusy, 0);
	CHECK_EQ(rc_wc_write(c, sec(4, 0), 8, false, &idx), RC_WC_ORIGIN);
	rm(c);
}

CTEST(writeback_requests)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 a, b, d, n = 8, nr, got = RC_NONE;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	d = cache_write(c, 9, 0, 1);		/* oldest */
	a = cache_write(c, 5, 30, 32);		/* runs on into segment 6 */
	b = cache_write(c, 6, 0, 2);
	cache_write(c, 6, 4, 5);		/* a second run of 6 */
	nr = rc_wb_take(c, NULL, it, &n, r, 8, 2048);
	CHECK_EQ(n, 3);
	CHECK_EQ(nr, 3);
	CHECK_EQ(it[0].seg, 5);
	CHECK_EQ(it[1].seg, 6);
	CHECK_EQ(it[2].seg, 9);
	CHECK_EQ(r[0].sector, sec(5, 30));
	CHECK_EQ(r[0].sectors, 32);
	CHECK_EQ(r[0].first, 0);
	CHECK_EQ(r[0].nr, 2);
	CHECK_EQ(r[1].sector, sec(6, 4));
	CHECK_EQ(r[1].sectors, 8);
	CHECK_EQ(r[1].first, 1);
	CHECK_EQ(r[1].nr, 1);
	CHECK_EQ(r[2].sector, sec(9, 0));
	CHECK_EQ(c->entries[b].wb_parts, 2);
	CHECK_EQ(c->nr_dirty, 0);
	CHECK_EQ(c->dirty_units, 0);
	CHECK_EQ(c->nr_wbusy, 3);
	CHECK_EQ(rc_wc_write(c, sec(5, 0), 8, false, &got), RC_WC_WAIT);
	/* Reads go on meanwhile. */
	CHECK_EQ(rc_read(c, &rs, sec(6, 0), 16, &got), RC_READ_HIT);
	rc_unpin(c, got);
	rc_wb_done(c, a, r[0].sector, r[0].sectors, 0, true);
	rc_wb_done(c, b, r[0].sector, r[0].sectors, 0, false);
	CHECK(!c->entries[a].wbusy);
	CHECK(c->entries[b].wbusy);		/* one part left */
	rc_wb_done(c, b, r[1].sector, r[1].sectors, -5, true);
	CHECK(!c->entries[b].wbusy);
	/* The failed part is dirty again, oldest; the rest stays clean. */
	CHECK_EQ(c->entries[b].dirty, 0x10);
	CHECK_EQ(c->dirty_tail, b);
	CHECK_EQ(c->wb_failed, 1);
	rc_wb_done(c, d, r[2].sector, r[2].sectors, 0, true);
	CHECK_EQ(c->ctr.writeback_ios, 3);
	CHECK_EQ(c->ctr.writeback_sectors, 48);
	CHECK_EQ(c->ctr.writeback_errors, 1);
	CHECK_EQ(c->nr_wbusy, 0);
	CHECK_EQ(c->nr_pinned, 0);
	CHECK_EQ(nr_on_dirty(c), 1);
	/* Clean entries are the LRU's again. */
	CHECK(c->entries[a].on_list);
	CHECK(c->entries[d].on_list);
	rm(c);
}

CTEST(writeback_limits_and_flush_seq)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 n, nr, s;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	cache_write(c, 1, 0, 1);
	cache_write(c, 2, 0, 1);
	cache_write(c, 2, 2, 3);
	cache_write(c, 2, 4, 5);
	s = rc_wb_flush_seq(c);
	CHECK_EQ(c->ctr.flushes, 1);
	cache_write(c, 3, 0, 1);		/* after the flush */
	/* Two requests only: segment 2's three runs do not fit. */
	n = 8;
	nr = rc_wb_take(c, &s, it, &n, r, 2, 2048);
	CHECK_EQ(n, 1);
	CHECK_EQ(nr, 1);
	CHECK_EQ(it[0].seg, 1);
	n = 8;
	nr = rc_wb_take(c, &s, it, &n, r, 8, 2048);
	CHECK_EQ(n, 1);
	CHECK_EQ(it[0].seg, 2);
	CHECK_EQ(nr, 3);
	/* What went dirty after the flush is not its business. */
	n = 8;
	CHECK_EQ(rc_wb_take(c, &s, it, &n, r, 8, 2048), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(c->nr_dirty, 1);
	/* A request never grows past max_sectors. */
	cache_write(c, 4, 0, 16);		/* whole segments go through: */
	cache_write(c, 4, 16, 32);		/* two halves each */
	cache_write(c, 5, 0, 16);
	cache_write(c, 5, 16, 32);
	n = 8;
	nr = rc_wb_take(c, NULL, it, &n, r, 8, 256);
	CHECK_EQ(n, 3);
	CHECK_EQ(nr, 3);
	rm(c);
}

/* A reader's pin does not hold write-back up; a write copying in does. */
CTEST(writeback_waits_for_writers_not_readers)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 a, b, hit = RC_NONE, w = RC_NONE, n = 8;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	a = cache_write(c, 1, 0, 1);
	b = cache_write(c, 2, 0, 1);
	CHECK_EQ(rc_read(c, &rs, sec(1, 0), 8, &hit), RC_READ_HIT);
	CHECK_EQ(hit, a);
	CHECK_EQ(rc_wc_write(c, sec(2, 1), 8, false, &w), RC_WC_CACHE);
	CHECK_EQ(w, b);
	CHECK_EQ(c->entries[b].wcopies, 1);
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(n, 1);
	CHECK_EQ(it[0].idx, a);			/* read, and taken */
	CHECK_EQ(c->entries[a].pins, 2);
	rc_unpin(c, hit);
	rc_wc_copied(c, w, sec(2, 1), 8, true);
	CHECK_EQ(c->entries[b].wcopies, 0);
	n = 8;
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(it[0].idx, b);			/* both units */
	CHECK_EQ(r[0].sectors, 16);
	rm(c);
}

/* Write-back sweeps up the disk from where it stopped, not oldest first. */
CTEST(writeback_sweeps_up_from_the_cursor)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 n;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	cache_write(c, 6, 0, 1);		/* oldest */
	cache_write(c, 1, 0, 1);
	cache_write(c, 3, 0, 1);
	n = 2;
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 2);
	CHECK_EQ(n, 2);
	CHECK_EQ(it[0].seg, 1);
	CHECK_EQ(it[1].seg, 3);
	CHECK_EQ(c->wb_cursor, 4);
	cache_write(c, 2, 0, 1);		/* behind the head now */
	n = 2;
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 2);
	CHECK_EQ(it[0].seg, 6);			/* on up, then round */
	CHECK_EQ(it[1].seg, 2);
	CHECK_EQ(r[0].sector, sec(6, 0));
	CHECK_EQ(r[1].sector, sec(2, 0));
	CHECK_EQ(c->wb_cursor, 3);
	CHECK_EQ(c->nr_dirty, 0);
	rm(c);
}

/*
 * A flush's sweep ends where the writer wrote last (a journal's blocks),
 * so that what it sends next (the commit block) lands under the head.
 */
CTEST(a_flush_sweep_ends_with_the_segment_written_last)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 n, s;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	c->wb_cursor = 5;
	rc_wb_flush_seq(c);			/* nothing cached yet: left where it is */
	CHECK_EQ(c->wb_cursor, 5);
	cache_write(c, 6, 0, 2);		/* a database's log */
	cache_write(c, 2, 0, 3);		/* then the journal's blocks */
	s = rc_wb_flush_seq(c);
	CHECK_EQ(c->wb_cursor, 3);
	n = 8;
	CHECK_EQ(rc_wb_take(c, &s, it, &n, r, 8, 2048), 2);
	CHECK_EQ(n, 2);
	CHECK_EQ(it[0].seg, 6);
	CHECK_EQ(it[1].seg, 2);
	CHECK_EQ(r[1].sector + r[1].sectors, sec(2, 3));
	rc_wb_done(c, it[0].idx, r[0].sector, r[0].sectors, 0, true);
	rc_wb_done(c, it[1].idx, r[1].sector, r[1].sectors, 0, true);
	rm(c);
}

/* selective: the journal goes through, and the sweep still ends before it */
CTEST(a_flush_sweep_ends_where_a_write_through_went)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 n, s, got = RC_NONE;

	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	cache_write(c, 2, 0, 1);		/* file data */
	cache_write(c, 6, 0, 1);
	CHECK_EQ(rc_wc_write(c, sec(4, 0), 8, true, &got), RC_WC_ORIGIN);
	s = rc_wb_flush_seq(c);
	CHECK_EQ(c->wb_cursor, 5);
	n = 8;
	CHECK_EQ(rc_wb_take(c, &s, it, &n, r, 8, 2048), 2);
	CHECK_EQ(it[0].seg, 6);
	CHECK_EQ(it[1].seg, 2);
	rc_wb_done(c, it[0].idx, r[0].sector, r[0].sectors, 0, true);
	rc_wb_done(c, it[1].idx, r[1].sector, r[1].sectors, 0, true);
	rm(c);
}

/* Nothing dirty and nothing on its way: a flush is the origin's alone. */
CTEST(a_flush_with_nothing_dirty_goes_to_the_origin)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_SELECTIVE);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 n = 8, s, got = RC_NONE;

	CHECK(rc_wb_flush_direct(c));
	CHECK_EQ(rc_wc_write(c, sec(4, 0), 8, true, &got), RC_WC_ORIGIN);
	CHECK(rc_wb_flush_direct(c));		/* went down, and completed before it */
	cache_write(c, 2, 0, 1);
	CHECK(!rc_wb_flush_direct(c));		/* dirty */
	s = rc_wb_flush_seq(c);
	CHECK_EQ(rc_wb_take(c, &s, it, &n, r, 8, 2048), 1);
	CHECK_EQ(c->nr_dirty, 0);
	CHECK(!rc_wb_flush_direct(c));		/* on its way to the origin */
	rc_wb_done(c, it[0].idx, r[0].sector, r[0].sectors, 0, true);
	CHECK(rc_wb_flush_direct(c));
	CHECK_EQ(c->ctr.flushes, 4);
	rm(c);
}

CTEST(a_pinned_dirty_entry_is_not_taken)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 a, b, got = RC_NONE, n = 8;

	a = cache_write(c, 1, 0, 1);
	b = cache_write(c, 2, 0, 1);
	/* a write copying into a (pinned, not yet marked dirty again) */
	CHECK_EQ(rc_wc_write(c, sec(1, 4), 8, false, &got), RC_WC_CACHE);
	CHECK_EQ(got, a);
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(n, 1);
	CHECK_EQ(it[0].idx, b);
	CHECK(!c->entries[a].wbusy);
	rc_wc_copied(c, a, sec(1, 4), 8, true);
	n = 8;
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 2);	/* units 0 and 4 */
	CHECK_EQ(it[0].idx, a);
	CHECK_EQ(r[1].sector, sec(1, 4));
	rm(c);
}

CTEST(discard_drops_dirty)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	u32 a, b, n = 1;

	a = cache_write(c, 1, 0, 4);
	b = cache_write(c, 2, 0, 4);
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(it[0].idx, a);
	rc_range_start(c, secs(c, 1), secs(c, 2));
	/* Segment 2's dirty data is dropped; segment 1's write is an orphan. */
	CHECK_EQ(c->ctr.dirty_dropped, 1);
	CHECK_EQ(c->nr_dirty, 0);
	CHECK_EQ(c->dirty_units, 0);
	CHECK_EQ(c->entries[b].state, RC_FREE);
	CHECK_EQ(c->entries[a].state, RC_DEAD);
	CHECK_EQ(c->wb_orphans, 1);
	rc_range_done(c, secs(c, 1), secs(c, 2));
	rc_wb_done(c, a, r[0].sector, r[0].sectors, -5, true);
	/* Its data went with the discard: not dirty again. */
	CHECK_EQ(c->wb_orphans, 0);
	CHECK_EQ(c->entries[a].state, RC_FREE);
	CHECK_EQ(c->nr_dirty, 0);
	CHECK_EQ(c->nr_pinned, 0);
	rm(c);
}

/*
 * A range over part of a dirty entry keeps the rest: covered units go,
 * the range's end inside a kept unit is zeroed by the caller and written
 * back; over an entry being written back, the range waits for that write.
 * (Until 2026-12-06 the whole entry went, its dirty data outside the range
 * with it: the soak's stale reads.)
 */
CTEST(range_over_part_of_a_dirty_entry_keeps_the_rest)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);
	struct rc_wb_item it[8];
	struct rc_wb_req r[8];
	struct rc_range_zero z;
	u32 a, b, n = 1;

	a = cache_write(c, 1, 0, 8);			/* units 0..7 of segment 1 */
	b = cache_write(c, 2, 0, 31);			/* units 0..30 of segment 2 */
	CHECK_EQ(c->dirty_units, 39);
	/* Segment 1 from the middle of unit 3 on, segment 2 to the middle of unit 1. */
	CHECK(!rc_range_begin(c, sec(1, 3) + 4, sec(2, 1) + 4 - (sec(1, 3) + 4), &z));
	CHECK_EQ(z.n, 2);
	CHECK_EQ(z.zero[0].idx, a);
	CHECK_EQ(z.zero[0].sector, sec(1, 3) + 4);
	CHECK_EQ(z.zero[0].sectors, 4);
	CHECK_EQ(z.zero[1].idx, b);
	CHECK_EQ(z.zero[1].sector, sec(2, 1));
	CHECK_EQ(z.zero[1].sectors, 4);
	CHECK_EQ(c->entries[a].valid, 0xfull);		/* units 4..7 went */
	CHECK_EQ(c->entries[b].valid, 0x7ffffffeull);	/* unit 0 went */
	CHECK_EQ(c->ctr.dirty_dropped, 2);
	CHECK_EQ(c->ctr.invalidations, 0);
	rc_range_zeroed(c, &z.zero[0]);
	rc_range_zeroed(c, &z.zero[1]);
	CHECK_EQ(c->entries[a].dirty, 0xfull);
	CHECK_EQ(c->entries[b].dirty, 0x7ffffffeull);
	CHECK_EQ(c->dirty_units, 4 + 30);
	CHECK_EQ(c->nr_pinned, 0);
	rc_range_done(c, sec(1, 3) + 4, sec(2, 1) + 4 - (sec(1, 3) + 4));

	/* Segment 1 being written back: a range over units 0..1 waits for it. */
	CHECK_EQ(rc_wb_take(c, NULL, it, &n, r, 8, 2048), 1);
	CHECK_EQ(it[0].idx, a);
	rc_range_start(c, sec(1, 0), 16);
	CHECK_EQ(c->wb_orphans, 1);
	CHECK_EQ(c->entries[a].valid, 0xcull);
	rc_range_done(c, sec(1, 0), 16);
	/* It fails: what the range dropped does not come back dirty. */
	rc_wb_done(c, a, r[0].sector, r[0].sectors, -5, true);
	CHECK_EQ(c->wb_orphans, 0);
	CHECK_EQ(c->entries[a].dirty, 0xcull);
	CHECK(c->entries[a].on_dirty);
	rm(c);
}

CTEST(write_over_a_fill)
{
	struct rc_cache *c = mk_wc(4, SEG_SHIFT, RC_WRITE_BACK);
	u32 idx = RC_NONE, got = RC_NONE, cookie;

	CHECK_EQ(read_seg(c, 7, &idx), RC_READ_FILL);
	CHECK_EQ(rc_wc_write(c, sec(7, 0), 8, false, &got), RC_WC_ORIGIN);
	cookie = rc_write_start(c, 7, 8, true);
	CHECK_EQ(rc_fill_done(c, idx, 0, 256, false), RC_FILL_STALE);
	/* No new entry while the write to the bucket flies. */
	CHECK_EQ(rc_wc_write(c, sec(7, 8), 8, false, &got), RC_WC_ORIGIN);
	rc_write_start(c, 7, 8, true);
	CHECK_EQ(rc_write_done(c, 7, cookie, 0, true, &got), RC_WRITE_DONE);
	CHECK_EQ(rc_write_done(c, 7, cookie + 1, 0, true, &got), RC_WRITE_DONE);
	CHECK_EQ(rc_wc_write(c, sec(7, 8), 8, false, &got), RC_WC_CACHE);
	rm(c);
}

CTEST(due)
{
	struct rc_cache *c = mk_wc(8, SEG_SHIFT, RC_WRITE_BACK);

	rc_set_tunable(c, RC_TUN_DIRTY, 50);
	CHECK(!rc_wb_due(c, true));
	cache_write(c, 1, 0, 1);
	CHECK(rc_wb_due(c, true));
	cache_write(c, 2, 0, 1);
	cache_write(c, 3, 0, 1);
	CHECK(!rc_wb_due(c, false));		/* busy: at the cap only (4) */
	cache_write(c, 4, 0, 1);
	CHECK(rc_wb_due(c, false));
	rc_set_tunable(c, RC_TUN_DIRTY, 90);
	CHECK(!rc_wb_due(c, false));
	rc_set_write_policy(c, RC_WRITE_INVALIDATE);	/* what is left goes */
	CHECK(rc_wc_on(c));
	CHECK(rc_wb_due(c, false));
	rm(c);
}

/*
 * --- the model check --------------------------------------------------
 * Every sector holds the version of the write that wrote it last: the
 * logical device (what a read must return), the disk, and each entry's
 * buffer.  Random writes (cached, through, unaligned), reads, fills,
 * discards, write-back requests that complete out of order or fail, and
 * flushes; after each step nothing newer than the disk may be anywhere
 * but in a valid unit of an indexed entry, and every read returns the
 * logical device's data.
 */
#define M_SEGS		12
#define M_ENTRIES	5
#define M_SECS		(M_SEGS << SEG_SHIFT)
#define M_REQS		64

struct m_req {
	struct rc_wb_req r;
	u32 idx[M_SEGS];
	u32 data[2 * 256];	/* the versions it writes */
};

struct model {
	struct rc_cache *c;
	u32 logical[M_SECS], disk[M_SECS], buf[M_ENTRIES][256];
	u32 version;
	struct m_req req[M_REQS];
	u32 nreq;
	bool failed;		/* a write-back failed since the last flush */
	bool zeroed;		/* ... or a range zeroed units in RAM */
};

static void m_check_reads(struct model *m)
{
	u32 s;

	for (s = 0; s < M_SECS; s++) {
		u32 i, have = m->disk[s];
		struct rc_entry *e;

		for (i = 0; i < M_ENTRIES; i++) {
			e = &m->c->entries[i];
			if (e->state == RC_VALID && e->seg == s >> SEG_SHIFT &&
			    (e->valid >> ((s & 255) >> 3) & 1))
				have = m->buf[i][s & 255];
		}
		CHECK_EQ(have, m->logical[s]);
	}
}

static void m_invariants(struct model *m)
{
	struct rc_cache *c = m->c;
	u32 i, ndirty = 0, nbusy = 0;
	u64 units = 0;

	for (i = 0; i < M_ENTRIES; i++) {
		struct rc_entry *e = &c->entries[i];

		ndirty += e->on_dirty;
		nbusy += e->wbusy;
		units += rc_popcount_test(e->dirty);
		/* A failed part of a write-back waits for the rest. */
		if (e->dirty)
			CHECK(e->state == RC_VALID && (e->on_dirty || e->wbusy));
		CHECK(!(e->dirty & ~e->valid));
	}
	CHECK_EQ(ndirty, c->nr_dirty);
	CHECK_EQ(nr_on_dirty(c), c->nr_dirty);
	CHECK_EQ(nbusy, c->nr_wbusy);
	CHECK_EQ(units, c->dirty_units);
	/* A failed write-back comes back dirty whatever the cap, and a range's zeroed ends. */
	CHECK(c->nr_dirty <= rc_dirty_max(c) || m->failed || m->zeroed);
	m_check_reads(m);
}

static void m_write(struct model *m, u64 sector, u32 sectors, bool through)
{
	u32 idx = RC_NONE, v = ++m->version, s, cookie;
	enum rc_wc_action a = rc_wc_write(m->c, sector, sectors, through, &idx);

	if (a == RC_WC_WAIT)
		return;		/* the glue queues it: not written yet */
	if (a == RC_WC_ORIGIN) {
		u64 seg = sector >> SEG_SHIFT;
		u32 got;

		cookie = rc_write_start(m->c, seg, sectors, true);
		for (s = 0; s < sectors; s++)
			m->disk[sector + s] = m->logical[sector + s] = v;
		CHECK_EQ(rc_write_done(m->c, seg, cookie, 0, true, &got), RC_WRITE_DONE);
		return;
	}
	for (s = 0; s < sectors; s++) {
		m->buf[idx][(sector + s) & 255] = v;
		m->logical[sector + s] = v;
	}
	rc_wc_copied(m->c, idx, sector, sectors, a == RC_WC_CACHE);
	if (a == RC_WC_THROUGH) {
		for (s = 0; s < sectors; s++)
			m->disk[sector + s] = v;
		rc_wc_through_done(m->c, idx, sector, sectors, 0);
	}
}

static void m_read(struct model *m, u64 seg)
{
	u32 idx = RC_NONE, s;
	enum rc_read_action a = read_seg(m->c, seg, &idx);
	u64 base = seg << SEG_SHIFT;

	if (a == RC_READ_FILL) {
		for (s = 0; s < 256; s++)
			m->buf[idx][s] = m->disk[base + s];
		if (rc_fill_done(m->c, idx, 0, 256, false) == RC_FILL_SERVE)
			rc_fill_waiters_done(m->c, idx, RC_FILL_SERVE, 1, 1);
		return;
	}
	CHECK(a != RC_READ_WAIT);
	if (a == RC_READ_BYPASS)	/* the disk's data must be the device's */
		for (s = 0; s < 256; s++)
			CHECK_EQ(m->disk[base + s], m->logical[base + s]);
	if (a == RC_READ_HIT || a == RC_READ_MERGE) {
		for (s = 0; s < 256; s++) {
			bool valid = m->c->entries[idx].valid >> (s >> 3) & 1;

			if (a == RC_READ_HIT)
				CHECK(valid);
			CHECK_EQ(valid ? m->buf[idx][s] : m->disk[base + s], m->logical[base + s]);
		}
		rc_unpin(m->c, idx);
	}
}

static void m_complete(struct model *m, u32 k, bool fail)
{
	struct m_req *q = &m->req[k];
	u32 s, j;

	if (!fail)
		for (s = 0; s < q->r.sectors; s++)
			m->disk[q->r.sector + s] = q->data[s];
	m->failed |= fail;
	for (j = 0; j < q->r.nr; j++)
		rc_wb_done(m->c, q->idx[j], q->r.sector, q->r.sectors, fail ? -5 : 0, !j);
	m->req[k] = m->req[--m->nreq];
}

static void m_take(struct model *m, const u32 *flush_seq)
{
	struct rc_wb_item it[M_ENTRIES];
	struct rc_wb_req r[M_REQS];
	u32 n = 1 + ctest_rand(M_ENTRIES), nr, k, j, s;

	nr = rc_wb_take(m->c, flush_seq, it, &n, r, M_REQS - m->nreq, 256 + ctest_rand(2) * 256);
	for (k = 0; k < nr; k++) {
		struct m_req *q = &m->req[m->nreq++];

		q->r = r[k];
		for (j = 0; j < r[k].nr; j++)
			q->idx[j] = it[r[k].first + j].idx;
		for (s = 0; s < r[k].sectors; s++) {
			u64 sector = r[k].sector + s;

			for (j = 0; j < r[k].nr; j++)
				if (it[r[k].first + j].seg == sector >> SEG_SHIFT)
					q->data[s] = m->buf[q->idx[j]][sector & 255];
		}
	}
}

/* A discard of @sectors at @sector, as the glue does it (redcap_range_start()). */
static void m_discard(struct model *m, u64 sector, u64 sectors)
{
	u32 v = ++m->version, k;
	struct rc_range_zero z;
	u64 s;

	if (rc_range_begin(m->c, sector, sectors, &z))
		rc_range_walk(m->c, sector, sectors, 0, m->c->nr_entries);
	/* The ends inside units the cache keeps: zeroed (here: v) in RAM. */
	for (k = 0; k < z.n; k++) {
		CHECK_EQ(m->c->entries[z.zero[k].idx].seg, z.zero[k].sector >> SEG_SHIFT);
		for (s = z.zero[k].sector; s < z.zero[k].sector + z.zero[k].sectors; s++)
			m->buf[z.zero[k].idx][s & 255] = v;
		rc_range_zeroed(m->c, &z.zero[k]);
		m->zeroed = true;
	}
	/* The glue holds the range until the writes it waits for are done. */
	while (m->c->wb_orphans) {
		CHECK(m->nreq);
		m_complete(m, ctest_rand(m->nreq), ctest_rand(8) == 0);
	}
	for (s = sector; s < sector + sectors; s++)
		m->disk[s] = m->logical[s] = v;
	rc_range_done(m->c, sector, sectors);
}

static void m_flush(struct model *m)
{
	u32 seq = rc_wb_flush_seq(m->c);

	m->failed = false;
	m->zeroed = false;
	while (m->c->nr_dirty && m->nreq < M_REQS) {
		u32 before = m->c->nr_dirty;

		m_take(m, &seq);
		if (m->c->nr_dirty == before)
			break;
	}
	while (m->nreq)
		m_complete(m, 0, false);
	/* Nothing failed: everything written before the flush is on the disk. */
	if (!m->failed && !m->c->nr_dirty)
		CHECK(!memcmp(m->disk, m->logical, sizeof(m->disk)));
}

CTEST(model)
{
	u32 round, step;

	for (round = 0; round < 40; round++) {
		struct model *m = calloc(1, sizeof(*m));

		CHECK(m);
		m->c = mk_wc(M_ENTRIES, SEG_SHIFT,
			     round & 1 ? RC_WRITE_SELECTIVE : RC_WRITE_BACK);
		rc_set_tunable(m->c, RC_TUN_DIRTY, 40 + 20 * (round % 3));
		for (step = 0; step < 3000; step++) {
			u64 seg = ctest_rand(M_SEGS);
			u32 u = ctest_rand(32), len = 1 + ctest_rand(32 - u);

			switch (ctest_rand(12)) {
			case 0: case 1: case 2:
				m_write(m, sec(seg, u), len * 8, false);
				break;
			case 3:		/* through (FUA, or selective's metadata) */
				m_write(m, sec(seg, u), len * 8, true);
				break;
			case 4:		/* unaligned */
				m_write(m, sec(seg, u) + 1 + ctest_rand(6), 1, false);
				break;
			case 5: case 6:
				m_read(m, seg);
				break;
			case 7:
				if (m->nreq < M_REQS)
					m_take(m, NULL);
				break;
			case 8: case 9:
				if (m->nreq)
					m_complete(m, ctest_rand(m->nreq), ctest_rand(10) == 0);
				break;
			case 10:
				if (!ctest_rand(16))	/* whole segments */
					m_discard(m, sec(seg, 0), sec(1 + ctest_rand(M_SEGS - seg), 0));
				else if (!ctest_rand(8))	/* any sectors */
					m_discard(m, sec(seg, u) + u % 8,
						  1 + ctest_rand(M_SECS - sec(seg, u) - u % 8));
				else
					m_flush(m);
				break;
			case 11:
				if (!ctest_rand(4))
					rc_drop_all(m->c);
				else if (!ctest_rand(4))	/* inactive: newer data still serves */
					rc_set_policy(m->c, rc_active(m->c) ? RC_POLICY_OFF :
						      RC_POLICY_ALWAYS);
				break;
			}
			m_invariants(m);
		}
		m_flush(m);
		m_flush(m);	/* retries what failed */
		CHECK_EQ(m->c->nr_dirty, 0);
		CHECK(!memcmp(m->disk, m->logical, sizeof(m->disk)));
		rm(m->c);
		free(m);
	}
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of the redcap segment cache: segment index, LRU, entry
 * states, write/fill generation logic and counters; shared by the kernel
 * target, the simulator and the host tests.
 *
 * Locking: the core takes no locks and never sleeps.  Every function that
 * takes a struct rc_cache must be called with the caller's cache lock held
 * (one spinlock around the whole core in the kernel glue).  Nothing here
 * allocates memory: rc_cache_init() carves everything out of one block the
 * caller provides, sized by rc_cache_mem_size().
 *
 * Vocabulary: a "segment" is an aligned run of seg_sectors disk sectors
 * (seg = sector >> seg_shift); an "entry" is one of the nr_entries cache
 * slots, named by its index 0..nr_entries-1.  The caller owns the data
 * buffer of each entry (index -> buffer) and the bios waiting on it.
 */
#ifndef RC_CORE_H
#define RC_CORE_H

#include "rc-types.h"
#include "rc-policy.h"
#include "rc-hot.h"

#define RC_NONE		0xffffffffu	/* "no entry" index */

/* Entry states. */
enum rc_state {
	RC_FREE = 0,		/* not in the index, on the free list */
	RC_FILLING,		/* in the index, its disk segment being read */
	RC_VALID,		/* in the index, buffer holds the segment */
	RC_DEAD,		/* out of the index, pinned; freed at unpin */
	RC_GHOST,		/* indexed, on the LRU, no data: simulated */
};

enum rc_policy {
	RC_POLICY_ALWAYS = 0,	/* cache every read miss */
	RC_POLICY_OFF,		/* pass every read to the origin, simulate the cache */
	RC_POLICY_ADAPTIVE,	/* activation-deactivation (rc_adapt) */
	RC_POLICY_CAWARE,	/* C-Aware placement of every miss (rc_caware) */
	RC_POLICY_ADAPTIVE_CAWARE, /* both */
	RC_POLICY_NR,
	/* a table line's without a policy, redcapctl create's */
	RC_POLICY_DEFAULT = RC_POLICY_ADAPTIVE_CAWARE,
};

enum rc_write_policy {
	RC_WRITE_INVALIDATE = 0, /* a write drops the cached segment */
	RC_WRITE_UPDATE,	 /* a write updates the cached segment in place */
	RC_WRITE_BACK,		 /* a write completes in the cache (rc_wc_write()) */
	RC_WRITE_SELECTIVE,	 /* ... but the caller's metadata goes through */
	RC_WRITE_NR,
};

/* What the caller must do with a read (rc_read()). */
enum rc_read_action {
	RC_READ_HIT,		/* copy from entry *idx, then rc_unpin() */
	RC_READ_WAIT,		/* queue the bio on entry *idx (filling) */
	RC_READ_FILL,		/* start a fill of entry *idx, queue the bio */
	RC_READ_BYPASS,		/* send the bio to the origin unchanged */
	/* send it to the origin, copy entry *idx's valid units over what it read
	 * (rc_merge_units()), then rc_unpin()
	 */
	RC_READ_MERGE,
};

/* What the caller must do when a fill completes (rc_fill_done()). */
enum rc_fill_action {
	RC_FILL_SERVE,		/* copy to every waiter, then rc_unpin() */
	RC_FILL_STALE,		/* a write raced the fill: resubmit waiters to origin */
	RC_FILL_ERROR,		/* fill failed, nothing cached: resubmit waiters to origin */
};

/* What the caller must do after a write completes (rc_write_done()). */
enum rc_write_action {
	RC_WRITE_DONE,		/* nothing */
	RC_WRITE_COPY,		/* copy the written data into entry *idx, then rc_unpin() */
};

struct rc_counters {
	u64 reads;		/* read bios seen */
	u64 read_hits;		/* served from a valid segment */
	u64 read_hits_waited;	/* served after waiting on a fill */
	u64 read_misses;	/* started a fill */
	u64 read_bypassed;	/* sent to the origin (policy, busy, write race) */
	u64 read_bypassed_busy;	/* ... of which because no entry was idle */
	u64 read_bypassed_caware; /* ... of which placed on the disk by C-Aware */
	u64 read_bypassed_nomem; /* ... of which because no fill could be set up */
	u64 read_bypassed_held;	/* ... of which because fills were held (suspend) */
	u64 read_bypassed_inactive; /* ... of which because the cache was inactive */
	u64 read_bypassed_budget; /* ... of which because the budget was spent */
	u64 read_bypassed_joined; /* ... of which to go down with the piece before */
	u64 read_bypassed_partial; /* ... of which merged with a partial entry (RC_READ_MERGE) */
	u64 read_joined;	/* bypassed pieces sent down with the piece before */
	u64 prefetches;		/* segments filled ahead (rc_plan(), rc_prefetch()) */
	u64 prefetch_hits;	/* ... read afterwards */
	u64 prefetch_unused;	/* ... evicted or dropped before any read */
	u64 prefetch_paired;	/* ... of which the other half of a miss's pair (RC_PAIR_NEAR) */
	u64 read_resent;	/* waited on a fill that failed or went stale: re-sent */
	u64 sim_hits;		/* inactive: reads the cache would have served */
	u64 sim_misses;		/* inactive: reads that would have filled */
	u64 fill_ios;		/* fills completed (success or error) */
	u64 fill_joined;	/* ... sent down in the request of the fill before */
	u64 fill_along;		/* segments filled for the rest of a miss's read */
	u64 fill_sectors;	/* sectors read by fills */
	u64 fill_errors;	/* fills that failed */
	u64 fill_stale;		/* fills dropped because a write raced them */
	u64 writes;		/* write/discard/write-zeroes bios seen */
	u64 write_sectors;
	u64 write_allocs;	/* segments filled from a whole-segment write */
	u64 invalidations;	/* segments dropped by writes */
	u64 updates;		/* segments updated in place by writes */
	u64 evictions;		/* valid segments reused by LRU */
	u64 hdc_fills;		/* segments HDC filled to pin them (rc_hdc_pin()) */
	u64 hdc_hits;		/* reads served from a segment HDC pinned */
	u64 hdc_dropped;	/* pins ended by a write, a failed fill or drop_cache */
	/* the write cache (rc_wc_write()) */
	u64 write_cached;	/* writes completed from the cache */
	u64 write_through;	/* writes sent to the origin while it is on */
	u64 write_waits;	/* writes held at the dirty cap for a write to the origin */
	u64 writeback_ios;	/* write-back requests completed */
	u64 writeback_sectors;
	u64 writeback_errors;	/* ... failed: their data stays dirty */
	u64 flushes;		/* flushes served (rc_wb_flush_seq(), rc_wb_flush_direct()) */
	u64 dirty_dropped;	/* dirty segments dropped by a discard or write-zeroes */
	/* the memory (rc_give_back()) */
	u64 given_back;		/* entries whose buffer went back to the kernel */
	u64 regrown;		/* ... and got one again (rc_regrown()) */
	/* the eviction history (RC_HIST_SPAN) */
	u64 x2_fills_saved;	/* read misses' fills a cache of twice the entries would not make */
	u64 x4_fills_saved;	/* ... of four times */
};

/*
 * The eviction history, for the RAM advice: the segments evicted (their
 * rc_hash32() keys) in a ring of 2 x RC_HIST_SPAN x nr_entries + 1 slots,
 * hashed by key; an evicted segment leaves it when it is filled again.
 * A segment evicted, with r - 1 segments evicted after it and not filled
 * since, is at depth nr_entries + r of the LRU stack: a fill of it is one
 * that a cache of twice the entries would not have made if r <=
 * nr_entries, of four times if r <= 3 x nr_entries (an LRU's inclusion
 * property: the larger cache holds what this one holds and what it
 * evicted last).  r is counted in a Fenwick tree of the slots holding a
 * key, O(log) a fill or eviction, nothing on a hit.  A segment whose slot
 * the ring reused is no longer counted: exact while fewer than 2 x
 * RC_HIST_SPAN x nr_entries evictions separate a fill from its
 * segment's eviction, a floor after.  Only a read miss's own fill counts
 * (the simulated cache's too): it is a request to the disk, where a fill
 * ahead of a stream, along a read or for HDC joins a request that goes
 * anyway or goes while the disk is idle; every fill and a write's
 * allocation take the segment out of the history.  Unlike the shadows
 * (rc-shadow.h), this sees the cache's own prefetch and bypass.
 */
#define RC_HIST_SPAN		3
#define RC_HIST_EMPTY		(RC_NONE - 1)

struct rc_entry {
	u64 seg;		/* disk segment held (valid in FILLING/VALID/DEAD) */
	u32 hnext;		/* next entry in the hash chain */
	u32 prev, next;		/* LRU (VALID, unpinned) or free list links */
	u32 pins;		/* copies in progress (hit, fill, update) */
	u32 wgen;		/* write-bucket generation when the fill started */
	u32 born;		/* on probation: c->demand_takes when it went on */
	u8 state;		/* enum rc_state */
	/* flags, changed under the cache's lock */
	u8 on_list:1;		/* linked on the LRU, probation or free list */
	u8 on_prob:1;		/* ... on probation */
	u8 updating:1;		/* an update copy was handed out; cleared at last unpin */
	u8 stale:1;		/* FILLING: a range write overlapped the fill */
	u8 walloc:1;		/* FILLING: from a write (rc_write_allocate()) */
	u8 pfill:1;		/* FILLING: started by rc_prefetch() */
	u8 along:1;		/* FILLING: for the rest of a miss's read (fill_along) */
	u8 ahead:1;		/* filled by rc_prefetch() and not read since */
	u8 gahead:1;		/* GHOST: simulated as filled ahead, not read since */
	u8 hdc:1;		/* FILLING/VALID: pinned by HDC, never an LRU victim */
	u8 on_hdc:1;		/* ... linked on the HDC list (VALID, unpinned) */
	u8 hfill:1;		/* FILLING: started by rc_hdc_pin() */
	u8 bare:1;		/* its buffer was given back (rc_give_back()): FREE or GHOST */
	/*
	 * The write cache (rc_wc_write()): a VALID entry may hold only some
	 * of its segment's units (valid), and units newer than the disk
	 * (dirty); dirty entries are on the dirty list (prev, next, oldest
	 * at its tail), in the order of dseq, never on the LRU (on_list 0).
	 */
	u8 on_dirty:1;
	u8 wbusy:1;		/* a write of it to the disk is in flight: writes wait */
	u8 rwait:1;		/* ... and a range over part of it waits too (wb_orphans) */
	u16 wb_parts;		/* ... write-back requests of it in flight */
	u16 wcopies;		/* writes copying into it (RC_WC_CACHE, pinned too) */
	u32 dseq;		/* c->dirty_seq when it went dirty */
	u64 valid, dirty;	/* units (rc_units()) */
};

/*
 * The segments the speculation budget refused lately, direct-mapped: a
 * later read of one, while a fill of it would still be cached (fewer
 * than nr_entries segments asked for since: demand takes and refusals),
 * is evidence for the fills refused (rc_budget_ghost()).
 */
#define RC_REFUSED_SLOTS	256
struct rc_refused_tab {
	u64 seg[RC_REFUSED_SLOTS];	/* segment + 1; 0: empty */
	u32 at[RC_REFUSED_SLOTS];	/* the clock when refused or read since */
	u32 refusals;			/* with demand_takes, the clock (wraps) */
};

/* Segments whose visit rc_hot_note() follows (16: the streams of a server). */
#define RC_HOT_VISITS	16

struct rc_cache {
	u32 nr_entries;
	u32 seg_shift;		/* log2(segment sectors) */
	u32 hash_mask;		/* hash buckets - 1 */
	u32 wb_mask;		/* write buckets - 1 */
	u32 lru_head, lru_tail;	/* head = most recent; tail = victim */
	/*
	 * Probation: the unpinned VALID entries filled ahead and not read
	 * since, newest at the head.  The oldest goes before the LRU's tail
	 * once RC_PROBATION(c) segments were asked for after it went on.
	 */
	u32 prob_head, prob_tail;
	u32 demand_takes;	/* entries taken for segments asked for (wraps) */
	u32 free_head;
	/* FREE entries without a buffer (bare), doubly linked; nr_bare counts GHOSTs too */
	u32 bare_head, bare_tail;
	u32 nr_bare;
	u64 disk_last_done;	/* the disk's last completion (rc_event()) */
	u32 nr_valid, nr_filling, nr_ghost;
	u32 nr_pinned;		/* entries with pins > 0 (FILLING, pinned VALID, DEAD) */
	u32 range_inflight;	/* large range writes in flight (rc_range_start) */
	u32 nr_ahead;		/* entries with ahead set */
	u32 prefetch;		/* the most segments to fill ahead of a stream; 0: none */
	/*
	 * HDC's pinned set: at most hdc_share % of the entries, FILLING or
	 * VALID with hdc set; the unpinned VALID ones on their own list,
	 * where no victim is looked for (rc_hdc_pin()).
	 */
	u32 hdc_share;
	u32 nr_hdc;
	u32 hdc_head, hdc_tail;
	const u64 *hdc_want;	/* the chosen set, sorted: pinned when read */
	u32 hdc_nwant;
	bool fills_held;	/* no fill starts (rc_hold_fills()) */
	enum rc_policy policy;
	enum rc_write_policy write_policy;
	struct rc_adapt adapt;	/* its .active is the cache's state */
	struct rc_caware caware;
	struct rc_budget budget; /* pays the fills of the adaptive policies */
	struct rc_refused_tab refused;
	struct rc_streams streams;
	/*
	 * HDC's counts (rc-hot.h), or NULL: the reads of each segment the
	 * LRU did not serve, halved every hot_period_s, RC_HOT_AGE_CHUNK
	 * positions a read while a halving is under way (hot_aging).
	 */
	struct rc_hot *hot;
	u64 hot_since;		/* the period's start */
	u64 hot_aging;		/* the next position to halve, or RC_HOT_IDLE */
	u32 hot_period_s;	/* the period, seconds (tunable hot_period) */
	/* the last segments counted, and where their last piece ended */
	struct {
		u64 seg, end;
	} hot_visit[RC_HOT_VISITS];
	u32 hot_visit_next;
	u32 hot_periods;	/* periods ended: a choice and a halving due (wraps) */
	/* the write cache (rc_wc_write()) */
	u32 unit_shift;		/* log2(sectors a unit): at most 64 units a segment */
	u64 unit_all;		/* every unit of a segment */
	u32 dirty_share;	/* % of the entries that may be dirty (tunable dirty) */
	u32 nr_dirty, nr_wbusy;
	u64 dirty_units;
	u32 dirty_head, dirty_tail;
	u32 dirty_seq;		/* entries gone dirty (wraps) */
	u32 wb_orphans;		/* entries dropped while a write of them was in flight */
	u32 wb_failed;		/* write-back requests failed (wraps) */
	u64 wb_cursor;		/* write-back's next segment: it sweeps up (C-SCAN) */
	u64 wb_last;		/* 1 + the segment the last write went to; 0: none */
	struct rc_entry *entries;
	u32 *hash;		/* bucket -> first entry or RC_NONE */
	/*
	 * The eviction history (RC_HIST_SPAN): slot -> key and the next slot
	 * of its bucket's chain (RC_HIST_EMPTY: holds none); bucket -> first.
	 */
	u32 *hist_key, *hist_chain, *hist_head;
	u32 *hist_tree;		/* slots holding a key: a Fenwick tree over slot + 1 */
	u32 hist_mask, hist_next;
	u32 *wb_inflight;	/* write bucket -> writes in flight */
	u32 *wb_gen;		/* write bucket -> writes issued (wraps) */
	struct rc_counters ctr;
};

/*
 * Bytes needed for a cache of @nr_entries (excluding the data buffers).
 * Pure function.
 */
size_t rc_cache_mem_size(u32 nr_entries);

/*
 * Lay the cache out in @mem (rc_cache_mem_size() bytes, any alignment of
 * at least 8) with every entry free and all counters zero.
 * @seg_shift: log2 of the segment size in sectors; @now: the caller's clock.
 * Returns 0, or -1 if nr_entries is 0 or above RC_MAX_ENTRIES.
 */
#define RC_MAX_ENTRIES	(1u << 24)
int rc_cache_init(struct rc_cache *c, void *mem, u32 nr_entries, u32 seg_shift, u64 now);

/*
 * What one read's decision leaves for its judgement and the planner,
 * rc_read() to rc_read_judge(), rc_plan() and rc_prefetch(): the caller's,
 * on its stack (rc_map_read()'s), never the cache's.
 */
struct rc_read_state {
	enum rc_sim sim;	/* inactive: what the cache would have done */
	enum rc_refused refused_by; /* what it did with the segments the budget refused */
	int dir;		/* the stream the piece went on with (rc_stream_read()) */
	u32 ahead_left;		/* the planner's proposal: segments left to rc_prefetch(), */
	int ahead_dir;		/* towards ahead_dir */
	u64 ahead_seg;		/* after this one */
	bool ahead_pair;	/* the proposal is a miss's pair */
	bool ahead_started;	/* a fill of it has started */
};

/*
 * The steps of a read's decision, rc_read() to rc_read_judge(): the glue
 * and the simulator call rc_map_read() (below), which takes them in order;
 * the host tests drive them one at a time.
 *
 * A read of @sectors at @sector arrived (a bio, or its piece in one segment).
 * Notes it in the stream table (rc_stream_read()), decides hit, wait, fill
 * or bypass and updates the counters.  On HIT and FILL the entry is pinned
 * for the caller; on WAIT the caller queues the bio on the entry, whose
 * fill holds the pin.  @idx is set except on BYPASS.
 *
 * Inactive (rc_active() false), every read bypasses and the cache is
 * simulated: the index and LRU go on as if the segment were cached, with
 * GHOST entries standing for segments that hold no data, and st->sim says
 * what the cache would have done, with C-Aware's rule where the policy
 * has it and, on estimator vdisk, its read-ahead (rc_map_read()), not the
 * budget.  Active, a GHOST entry is a miss, and
 * with a C-Aware policy rc_caware_rule() decides whether a miss fills;
 * with rc_budgeted(), a miss fills only while the budget's bar admits it
 * (rc_budget_admit()).  What to fill ahead of it is rc_plan()'s to propose.
 */
enum rc_read_action rc_read(struct rc_cache *c, struct rc_read_state *st, u64 sector, u32 sectors,
			    u32 *idx);

/*
 * The piece of a read bio in the segment after a piece rc_read() or
 * rc_read_join() just bypassed: whether it joins that one, so that both go
 * to the disk as one request.  False, with nothing touched, when the cache
 * holds the segment (valid or filling) and would serve it (rc_read()):
 * the piece goes on in a bio of its own, to rc_read().  Otherwise the piece is handled as
 * rc_read() would, but bypassed where a fill would start (counted in
 * read_bypassed_joined): a read is not cut in two to fill half of it.
 * Every piece that joins is counted in read_joined.
 */
bool rc_read_join(struct rc_cache *c, struct rc_read_state *st, u64 sector, u32 sectors);

/* Segments one bypassed read takes down together (a bound on one lock hold). */
#define RC_JOIN_MAX		32

/*
 * The planner: the one place that proposes speculation.  After rc_read()
 * or rc_read_join() took a piece of a read in segment @seg (@miss: the
 * piece is the whole read, and it filled, or inactive would have), it
 * proposes in @st one contiguous range of segments next to @seg, or none:
 *
 * - a stream's batch, forward or backward.  The stream's degree is what
 *   it has read in whole segments (its run), up to c->prefetch and up to
 *   its share of half the cache among the streams going on
 *   (rc_streams_live(): sixteen streams' batches of 8 in 64 segments
 *   pushed out one another's before they were read); when the
 *   read finds fewer than half its degree (rounded up) of the segments
 *   after its own cached or filling, the degree segments after those are
 *   proposed, so that a stream's fills go to the disk together and it
 *   reaches them while they are read.  The page cache reads ahead of a
 *   sequential forward stream, not of a backward or a strided one: at
 *   degree 8 the server bench's 8K-SR x16 went -15 -> -62 %, TAC -67 ->
 *   -83 %, 512K-SR x1 -22 -> -15 % (docs/results/2026-12-02-mechanisms.md).
 * - else, for a @miss, its pair: the other half of segments 2k and 2k + 1,
 *   when a segment within RC_PAIR_NEAR of @seg was read lately (cached or
 *   filling, and not filled ahead and unread; inactive, simulated so).
 *   Where reads cluster (copies of a tree read by many processes, strided
 *   or interleaved streams) a fill then costs the disk one access per two
 *   segments, as a cache of segments twice the size would, without filling
 *   twice the data for random reads.
 *
 * Nothing is proposed while c->prefetch is 0 (it turns all read-ahead
 * off), nor inactive without rc_budgeted() (nothing to price it on).
 * @limit is the device's segments.
 *
 * rc_prefetch() then takes the proposal under the same lock hold, one
 * segment a call, until it returns RC_NONE: the next proposed segment
 * below @limit that is not cached or filling, as an entry FILLING for it,
 * pinned by its fill, with *seg set.  What it takes is one run: segments
 * cached or filling are passed over before its first, and one after it
 * ends it (the stream's next reads propose the rest).  The caller starts the fill (no read
 * waits on it yet; reads that come meanwhile wait), prices it with
 * rc_prefetch_judge(), and completes it like any fill; or cancels it with
 * rc_fill_cancel().  Nothing starts while fills are held or a write to
 * the segment's bucket is in flight, nor beyond half the entries filled
 * ahead and not yet read (nr_ahead): streams never take more than half
 * the cache.  With rc_budgeted(), the budget's one bar (rc_budget_admit())
 * admits the proposal at its first fill, whole or trimmed, and each fill
 * that starts is taken from the overdraft while the balance is negative.
 * Inactive, rc_prefetch() returns GHOST entries instead, the simulated
 * cache's fills ahead (its read-ahead, admitted whole: it has no budget).
 * A fill of a pair is counted in prefetch_paired as well as prefetches.
 *
 * Probation: a segment filled ahead waits, until it is read, on a list of
 * its own.  Its oldest goes first, before the LRU's tail, once
 * RC_PROBATION(c) segments (an eighth of the cache, at least one) were
 * asked for after it went on (filled for a read miss or a write, or
 * simulated), fills ahead not counted: what a stream did not read
 * meanwhile is not kept at the cost of what was read, and a stream's next
 * batch does not push out the last.  A read moves it to the LRU.
 */
#define RC_PREFETCH_MAX		8
#define RC_PREFETCH_DEFAULT	8
#define RC_PAIR_NEAR		2
#define RC_PROBATION(c)		((c)->nr_entries / 8 ? (c)->nr_entries / 8 : 1)
void rc_plan(struct rc_cache *c, struct rc_read_state *st, u64 seg, bool miss, u64 limit);
u32 rc_prefetch(struct rc_cache *c, struct rc_read_state *st, u64 limit, u64 *seg);

/*
 * Pay for a request of fills rc_prefetch() returned: @cvd_ns, its price on
 * the cache's virtual disk, is all speculation (no read asked for any of it).
 * It comes out of the budget (rc_budgeted()) and goes into the window's
 * time with the cache (estimator vdisk; spk measures the fill itself).
 */
void rc_prefetch_judge(struct rc_cache *c, u64 cvd_ns, bool cvd_ok);

/*
 * Judge the read of @sectors at @sector that rc_read() just handled with
 * @act: @vd_ns is its price on the bare disk, @cvd_ns the price of what
 * the cache sent down for it (a fill, the read itself on a bypass, 0 on a
 * hit), or would have while inactive; a false @..._ok means the model
 * could not price it.  Feeds the adaptive state (rc_adapt_read()) and,
 * with rc_budgeted() and the cache active, the budget.
 */
void rc_read_judge(struct rc_cache *c, const struct rc_read_state *st, u64 sector, u32 sectors,
		   enum rc_read_action act, u64 vd_ns, bool vd_ok, u64 cvd_ns, bool cvd_ok);

/*
 * The policy contract for a read: the caller (the glue, the simulator)
 * hands each read to rc_map_read() under the cache lock, does what the
 * plan says, and reports the outcome with rc_event() (a hit: RC_EV_HIT) or,
 * for the fills it started, rc_fill_done() and what follows it.
 *
 * rc_map_read() needs prices from the caller's virtual disks, once it has
 * decided (each call plays the request on that disk): @vd is
 * RC_VD_BARE, the virtual disk of what the cache received, or
 * RC_VD_CACHE, the one of what the cache sends down (or would, inactive).
 * price() sets *ns and returns false when the model could not price the
 * request (*ns then counts as 0); it must not sleep.  @capacity is the
 * device's length in sectors: the last segment's fill is clipped there.
 */
enum rc_vd { RC_VD_BARE, RC_VD_CACHE };

struct rc_pricer {
	bool (*price)(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns);
	void *ctx;
	u64 capacity;
	u32 run_max;		/* segments one disk request may read (>= 1) */
};

/*
 * The fills one read leaves (its miss's, those along the rest of the read,
 * and those ahead of its stream) go to the disk as one request per run of
 * contiguous segments: a read over several segments, and a stream's batch
 * and the miss it follows, cost one access, forward or backward.  rc_fill_runs() sorts @n fills by segment (rc_map_read()
 * sorts its plan's); rc_fill_run() is the length of the run that starts
 * at @f (at most @max fills, and at least 1) among sorted fills; each
 * run's fills after its first complete with @joined true (rc_fill_done()):
 * then the origin's reads are fill_ios - fill_joined + read_bypassed -
 * read_joined + read_resent.
 */
struct rc_fill_item {
	u64 seg;
	u32 idx;
	bool ahead;		/* from rc_prefetch() */
	bool along;		/* for the rest of the miss's read */
};

/* The miss's own fill: its read waits on it (else no read does yet). */
static inline bool rc_fill_own(const struct rc_fill_item *f)
{
	return !f->ahead && !f->along;
}

#define RC_FILL_RUN_MAX		(1 + RC_PREFETCH_MAX)
void rc_fill_runs(struct rc_fill_item *f, u32 n);
u32 rc_fill_run(const struct rc_fill_item *f, u32 n, u32 max);

/*
 * One disk request of a plan: a run of contiguous segments' fills,
 * plan->fills[first .. first + nr), reading @sectors from @sector (the
 * last segment clipped at the device's end).  Its fills after the first
 * complete with @joined true (rc_fill_done()).
 */
struct rc_fill_req {
	u64 sector;
	u32 sectors;
	u32 first, nr;
};

/* What rc_map_read() decided for a read. */
struct rc_read_plan {
	enum rc_read_action act;
	u32 idx;		/* the entry, but on BYPASS (rc_read()) */
	u32 sectors;		/* taken from the read: the rest is a read of its own */
	u32 nr_fills;		/* fills to start, sorted by segment; the miss's, on FILL */
	struct rc_fill_item fills[RC_FILL_RUN_MAX];
	u32 nr_reqs;		/* the disk requests that read them, in order */
	struct rc_fill_req reqs[RC_FILL_RUN_MAX];
};

/*
 * One decision for the read of @sectors at @sector arriving at @now,
 * made first and priced after: C-Aware's decay, rc_read() on its piece in
 * its first segment, and for a bypass the pieces after it that
 * rc_read_join() lets join (up to RC_JOIN_MAX segments), for a fill the
 * segments the rest of the read covers (filled along, in the same
 * request: the rest comes back as a read of its own and waits on them),
 * and after each piece what the planner proposes (rc_plan(),
 * rc_prefetch()).  Then the read it took is played once on the bare disk,
 * and what the cache sends down for it (its requests and, on BYPASS or
 * MERGE, the read itself; inactive, what the simulated cache would have
 * sent) once per run of adjacent ones on the cache's: two pricings while
 * that is one run, which the planner's one range next to the read makes
 * every plan of a stream.  Each piece is judged (rc_read_judge()) on its
 * share of both, by sectors, a fill's share being its request's; a request
 * with none of the read's own fills is speculation (rc_prefetch_judge()).
 * On FILL and WAIT the caller queues the read on plan->idx before the
 * lock is dropped; on HIT it copies from it and reports RC_EV_HIT
 * (rc_event()).  The caller sends plan->reqs down (at most p->run_max
 * segments each), and on BYPASS or MERGE the read among them in sector
 * order, as they were priced; or cancels each fill of a request that
 * cannot be set up with rc_fill_cancel().
 */
void rc_map_read(struct rc_cache *c, u64 sector, u32 sectors, u64 now,
		 const struct rc_pricer *p, struct rc_read_plan *plan);

/*
 * What the caller reports back: each thing a plan (or a write) made it do,
 * once done, as one event.  The core routes it to the estimators
 * (rc_adapt) and to placement (rc_caware); the glue and the simulator
 * report through rc_event() alone and call no policy hook themselves.
 * Times are ns of the caller's monotonic clock.
 *
 * RC_EV_HIT	a hit of rc_map_read() on entry @idx was copied: @sectors,
 *		@start (the read's arrival) to @end.  Unpins the entry.
 * RC_EV_WAITED	a read queued on a fill was copied when it was served:
 *		@start (its arrival) to @end.
 * RC_EV_FILL	a fill's disk request of @sectors at @sector, submitted at
 *		@start, completed at @end with @error.
 * RC_EV_BYPASS	a read sent to the disk as received, likewise.
 * RC_EV_WRITE	a write that went to the disk only: @start (its arrival)
 *		to @end, with @error.
 * RC_EV_WRITE_COPY  a whole-segment write's data was copied into the entry
 *		rc_write_allocate() gave it: the write arrived at @start, the
 *		copy ran from @copy to @end.
 *
 * The disk is taken as a server of one request at a time: a request's
 * service is from its submission, or the completion before it if later,
 * to its completion.  Failed requests teach nothing.
 */
enum rc_event_kind {
	RC_EV_HIT,
	RC_EV_WAITED,
	RC_EV_FILL,
	RC_EV_BYPASS,
	RC_EV_WRITE,
	RC_EV_WRITE_COPY,
};

struct rc_event {
	enum rc_event_kind kind;
	int error;
	u32 idx;		/* RC_EV_HIT */
	u32 sectors;
	u64 sector;
	u64 start, copy, end;
};

void rc_event(struct rc_cache *c, const struct rc_event *ev);

/*
 * The fill of entry @idx finished with @error (0 or negative errno),
 * having read @sectors sectors; @joined: it went down in the request of
 * the fill before it (rc_fill_run(), counted in fill_joined).  Decides
 * what happens to the waiters:
 * SERVE installs the data (entry VALID, still pinned by the fill until
 * rc_fill_waiters_done()); STALE and ERROR free the entry.
 */
enum rc_fill_action rc_fill_done(struct rc_cache *c, u32 idx, int error,
				 u32 sectors, bool joined);

/*
 * The @n reads queued on entry @idx when its fill finished with @act have
 * gone: copied from the entry (SERVE: counted in read_hits_waited, and the
 * fill's pin dropped) or sent to the origin (STALE, ERROR: counted in
 * read_resent; the entry is free already and not touched).  @own, 0 or 1,
 * of them is the miss that started the fill, counted in read_misses when
 * it was decided.
 */
void rc_fill_waiters_done(struct rc_cache *c, u32 idx, enum rc_fill_action act, u32 n,
			  u32 own);

/* Count @n reads that were served after waiting on a fill. */
void rc_count_waited(struct rc_cache *c, u32 n);

/*
 * Count @n reads that waited on a fill which failed or went stale and were
 * sent to the origin (the fill's own miss is not among them).  Once every
 * read has completed: reads = read_hits + read_hits_waited + read_misses +
 * read_bypassed + read_resent.
 */
void rc_count_resent(struct rc_cache *c, u32 n);

/*
 * The fill rc_read() (RC_READ_FILL) or rc_write_allocate() just started on
 * entry @idx cannot be set up (no memory for it without sleeping).  The
 * entry is freed.  A read fill's miss counts as bypassed
 * (read_bypassed_nomem); the caller sends it, and any read queued on the
 * entry meanwhile, to the origin.  A write's fill counts nothing; nor does
 * a fill ahead (rc_prefetch()), which is taken out of prefetches.
 */
void rc_fill_cancel(struct rc_cache *c, u32 idx);

/*
 * Hold (@hold true) or allow new fills.  While held, read misses bypass
 * (read_bypassed_held) and writes allocate nothing; fills in flight go on.
 * The glue holds fills from presuspend until resume, so that suspend only
 * waits for the fills already in flight.
 */
static inline void rc_hold_fills(struct rc_cache *c, bool hold)
{
	c->fills_held = hold;
}

/*
 * Drop one pin of entry @idx; an unpinned VALID entry becomes the most
 * recently used, an unpinned DEAD entry becomes free.
 */
void rc_unpin(struct rc_cache *c, u32 idx);

/*
 * A write (or discard / write-zeroes) covering @sectors sectors of @seg is
 * being issued to the origin.  With RC_WRITE_INVALIDATE, or for discards
 * (@may_update false), a cached segment is invalidated now; a fill in
 * flight for @seg will complete STALE; no new fill of @seg starts until
 * the write completes.  Returns a cookie to hand to rc_write_done().
 */
u32 rc_write_start(struct rc_cache *c, u64 seg, u32 sectors, bool may_update);

/*
 * The write started with @cookie completed with @error.  Returns COPY (with
 * the entry pinned and *idx set) when the write policy is update, the write
 * succeeded, the segment is still cached VALID and no other write to its
 * bucket was issued meanwhile; otherwise drops any cached copy of @seg and
 * returns DONE.
 */
enum rc_write_action rc_write_done(struct rc_cache *c, u64 seg, u32 cookie,
				   int error, bool may_update, u32 *idx);

/*
 * A write covering all of @seg completed without error, and
 * rc_write_done() returned DONE.  With a C-Aware policy and the cache
 * active, when nothing of @seg is cached or being filled, no other write
 * to its bucket is in flight and @cookie is the newest, C-Aware's write
 * rules (2, 4, 5, 6) decide whether the written data becomes the
 * segment's.  On true, entry *idx is FILLING and pinned: the caller copies
 * the data in and completes it with rc_fill_done() like a fill (counted in
 * write_allocs, not fill_ios); readers arriving meanwhile wait on it.
 */
bool rc_write_allocate(struct rc_cache *c, u64 seg, u32 cookie, u32 *idx);

/*
 * A discard / write-zeroes / secure-erase of @sectors at @sector is being
 * issued; dm does not split these at segment boundaries.  What it covers
 * is dropped, fills of it in flight are made stale, and no fill of it
 * starts until rc_range_done(); it never updates in place.  Up to
 * RC_RANGE_SMALL segments are handled one by one like writes; a larger
 * range holds off every new fill and walks the entries once.
 *
 * Where an end of the range falls inside a segment whose entry holds
 * data newer than the disk (dirty, or being written back), the entry
 * stays with what the range leaves of it; a range's end inside a unit it
 * keeps is one of at most two zeroing requests: the caller zeroes those
 * sectors of the entry's buffer, then calls rc_range_zeroed() (the unit
 * is dirty then, written back zeroed with the rest of it).  While a write
 * of such an entry is in flight, wb_orphans counts it: the range goes to
 * the disk once it is done.
 */
#define RC_RANGE_SMALL	64
struct rc_range_zero_req {
	u32 idx;		/* the entry, pinned */
	u64 sector;		/* the range's sectors inside one of its units */
	u32 sectors;
};

struct rc_range_zero {
	u32 n;
	struct rc_range_zero_req zero[2];
};

/* All at once, with no buffer to zero (the simulator, host tests). */
void rc_range_start(struct rc_cache *c, u64 sector, u64 sectors);

/*
 * rc_range_start() in steps, so that no lock hold walks every entry.
 * rc_range_begin() counts the write, handles a small range whole and
 * returns false, or holds off every new fill (and ghost) and returns true:
 * then the caller calls rc_range_walk() from entry 0 with each returned
 * index until it returns nr_entries, and may drop its lock between calls
 * (no entry is taken for another segment meanwhile).  Each call looks at
 * @budget entries at most.  *@z: the zeroing the caller owes.
 */
bool rc_range_begin(struct rc_cache *c, u64 sector, u64 sectors, struct rc_range_zero *z);
u32 rc_range_walk(struct rc_cache *c, u64 sector, u64 sectors, u32 from, u32 budget);
void rc_range_zeroed(struct rc_cache *c, const struct rc_range_zero_req *r);
/* The range started with the same @sector and @sectors completed. */
void rc_range_done(struct rc_cache *c, u64 sector, u64 sectors);

/*
 * The write cache: a volatile write-back cache with a disk's contract
 * (Documentation/block/writeback_cache_control.rst), on while the write
 * policy is back or selective, and until what they left dirty is on the
 * disk (rc_wc_on()).  The write policy changes only while the cache is
 * quiescent and clean (the glue applies it at resume, after suspend wrote
 * everything back).
 *
 * Data is cached in units, the segment's 64th, at least 8 sectors
 * (4 KiB): an entry the write cache made holds only the units written
 * (valid); a read of others is sent to the disk and the valid units
 * copied over what it read (RC_READ_MERGE).  An entry with dirty units,
 * a write in flight or a part missing serves every read of it, active or
 * not (rc_holds_newer()).
 *
 * rc_wc_write() decides a write of @sectors at @sector within one segment
 * (@through: it must reach the disk before it completes; the caller's
 * REQ_FUA, and with selective its metadata):
 * RC_WC_CACHE	entry *idx, pinned: copy the data in, then rc_wc_copied()
 *		with @dirty true, and complete the write.
 * RC_WC_THROUGH  likewise, but with @dirty false, then send it down;
 *		the entry is wbusy until rc_wc_through_done(), which on
 *		the origin's @error makes the units written dirty (the copy
 *		holds them already: it is what is served and written back).
 * RC_WC_ORIGIN	no entry to keep coherent: send it down on the ordinary
 *		path (rc_write_start(), rc_write_done()).
 * RC_WC_WAIT	entry *idx has a write to the disk in flight, or the write
 *		would cache but rc_dirty_max() entries are dirty and some
 *		write to the disk is in flight: queue it and decide it again
 *		once one completes (writes to the disk of one entry go one at
 *		a time, so they reach it in order; at the cap, the disk writes
 *		only what write-back sweeps up).
 * A write caches when it is not of the whole segment (that goes
 * through: it is what write-back would send), every unit it touches ends
 * valid (the units it covers, and those already valid), fills are not
 * held, and the entry is
 * dirty already or fewer than rc_dirty_max() entries are; an entry is
 * made for it (a free one or the LRU's victim, never a dirty one) only
 * while no write or range to the segment's bucket is in flight.
 */
enum rc_wc_action {
	RC_WC_CACHE,
	RC_WC_THROUGH,
	RC_WC_ORIGIN,
	RC_WC_WAIT,
};

static inline bool rc_write_caches(const struct rc_cache *c)
{
	return c->write_policy == RC_WRITE_BACK || c->write_policy == RC_WRITE_SELECTIVE;
}

static inline bool rc_wc_on(const struct rc_cache *c)
{
	return rc_write_caches(c) || c->nr_dirty || c->nr_wbusy;
}

#define RC_DIRTY_SHARE		25	/* % of the entries, by default */
#define RC_DIRTY_MAX_SHARE	90

static inline u32 rc_dirty_max(const struct rc_cache *c)
{
	u32 n = (u32)((u64)c->nr_entries * c->dirty_share / 100);

	return n ? n : 1;
}

/*
 * The next run of set bits of @m from unit *@u on: true with *@u its
 * first unit and *@end one past its last; false when there is none.
 */
static inline bool rc_unit_run(u64 m, u32 *u, u32 *end)
{
	u32 i = *u;

	while (i < 64 && !((m >> i) & 1))
		i++;
	if (i >= 64)
		return false;
	*u = i;
	for (*end = i; *end < 64 && ((m >> *end) & 1); (*end)++)
		;
	return true;
}

/* The units of the segment that sectors @sector..+@sectors touch, or (@whole) cover. */
u64 rc_units(const struct rc_cache *c, u64 sector, u32 sectors, bool whole);

enum rc_wc_action rc_wc_write(struct rc_cache *c, u64 sector, u32 sectors, bool through,
			      u32 *idx);
/* The data is in (@dirty: CACHE, the pin dropped; else THROUGH, still pinned). */
void rc_wc_copied(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, bool dirty);
void rc_wc_through_done(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, int error);

/*
 * Write-back.  rc_wb_take() takes up to *@n dirty entries among the
 * RC_WB_WINDOW oldest (@flush_seq: only those gone dirty before
 * rc_wb_flush_seq() returned it; NULL: any): the first at or after the
 * cursor, ascending, wrapping to the lowest (C-SCAN: the disk's head sweeps
 * the whole dirty set, each seek short), into @items in that order.  It
 * plans the requests that write their dirty units into @reqs (at most
 * @max_reqs, each at most @max_sectors, contiguous units of consecutive
 * segments merged): it returns their number, and fewer entries in *@n when
 * @reqs ran out.
 * An entry a write is copying into, or wbusy, is not taken: the caller
 * tries again once the write is done; one that is only read is.
 * Each entry taken is wbusy and pinned, its dirty units now clean; the
 * caller writes each request from the entries' buffers and reports it with
 * rc_wb_done(), which on an error makes its units dirty again (counted in
 * writeback_errors and wb_failed: a flush that waited on it fails).
 * rc_wb_due(): whether write-back should run now, with the origin
 * @idle: any dirty entry then, else only at rc_dirty_max(): a busy disk
 * gives write-back its time only when writes would otherwise wait (the
 * longer data stays dirty, the more later writes to it are absorbed and
 * the denser write-back's sweep; 2000 random 4 KiB writes in 16 MiB took
 * 5.06 s rather than 8.62 s, written back from half the cap).
 */
#define RC_WB_WINDOW	1024

struct rc_wb_item {
	u64 seg;
	u32 idx;
};

struct rc_wb_req {
	u64 sector;
	u32 sectors;
	u32 first, nr;		/* items[first .. first + nr) */
};

u32 rc_wb_take(struct rc_cache *c, const u32 *flush_seq, struct rc_wb_item *items, u32 *n,
	       struct rc_wb_req *reqs, u32 max_reqs, u32 max_sectors);
/*
 * Request @sector..+@sectors of entry @idx finished with @error; @first:
 * the request's first entry (the request is counted once).
 */
void rc_wb_done(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, int error, bool first);
bool rc_wb_due(const struct rc_cache *c, bool idle);

/*
 * A flush arrived: what was dirty before it is what rc_wb_take() with the
 * returned sequence takes (counted in flushes).  Its sweep ends with the
 * segment written last: what a writer sends after a flush (a journal's
 * commit block, the next record of a log) continues there, under the head
 * (ext4's commit block after its journal blocks and PostgreSQL's WAL: the
 * head went from the journal to the WAL and back once per transaction).
 */
u32 rc_wb_flush_seq(struct rc_cache *c);

/*
 * A flush arrived with nothing dirty and no write of an entry to the
 * origin in flight: every write completed before it is on the origin, whose
 * own flush is all it needs, so the caller sends it there at once (counted
 * in flushes) rather than through write-back's one flush at a time.
 */
bool rc_wb_flush_direct(struct rc_cache *c);

/* Copy entry @idx's valid units over the read of @sectors at @sector: a mask of them. */
static inline u64 rc_merge_units(const struct rc_cache *c, u32 idx, u64 sector, u32 sectors)
{
	return c->entries[idx].valid & rc_units(c, sector, sectors, false);
}

/*
 * Drop every VALID unpinned entry.  Returns the number of entries still
 * busy (FILLING or pinned); the caller retries once they drain.
 */
u32 rc_drop_all(struct rc_cache *c);

/*
 * Drop at most @budget idle entries (VALID unpinned, GHOST); true when none
 * is left, and then the speculation budget starts again from 0 and the
 * stream table empty (the streams a probe left at creation would count as
 * going on, and cut the next streams' batches: rc_streams_live()).
 * rc_drop_all() in steps, for callers that drop their lock between them.
 */
bool rc_drop_some(struct rc_cache *c, u32 budget);

/*
 * The memory of a cache of @nr_segs segments of @seg_sectors sectors in
 * pages of 1 << @page_shift bytes, where an index of pages may address at
 * most @max_bytes bytes (SIZE_MAX in the kernel).
 */
struct rc_geometry {
	u64 seg_bytes;
	u32 pages_per_seg;
	u64 nr_pages;
	u64 data_bytes;		/* segment data, the pages */
};

/*
 * Fill @g; returns NULL, or the reason the geometry cannot be built (a
 * constructor error text): a segment smaller than a page (64 KiB pages),
 * or sizes that overflow @max_bytes (32-bit).  Pure function.
 */
const char *rc_geometry(u32 seg_sectors, u32 nr_segs, u32 page_shift, u64 max_bytes,
			struct rc_geometry *g);

/* Set the policy; the state follows (adaptive keeps the current one). */
void rc_set_policy(struct rc_cache *c, enum rc_policy p);

/*
 * Tunable @key (rc-policy.h): set it to a value in its range (rc-args.c
 * checks them), or read it; the module that owns it does either.
 */
void rc_set_tunable(struct rc_cache *c, enum rc_tunable key, u32 value);
u32 rc_get_tunable(const struct rc_cache *c, enum rc_tunable key);

/* Set the adaptive policies' estimator. */
static inline void rc_set_estimator(struct rc_cache *c, enum rc_estimator e)
{
	c->adapt.estimator = e;
}

static inline void rc_set_write_policy(struct rc_cache *c, enum rc_write_policy wp)
{
	c->write_policy = wp;
}

static inline bool rc_active(const struct rc_cache *c)
{
	return c->adapt.active;
}

static inline bool rc_policy_caware(enum rc_policy p)
{
	return p == RC_POLICY_CAWARE || p == RC_POLICY_ADAPTIVE_CAWARE;
}

/*
 * The budget gates the misses: an adaptive policy trusting the model
 * (estimator vdisk).  With spk, whose windows are measured, a model below
 * that has not yet seen a kind of request could price fills that pay as
 * losses.
 */
static inline bool rc_budgeted(const struct rc_cache *c)
{
	return c->adapt.switching && c->adapt.estimator == RC_EST_VDISK;
}

/* HDC: a period of miss counts, and how much of a halving a read does. */
#define RC_HOT_PERIOD_S		3600
#define RC_HOT_PERIOD_MAX_S	86400
#define RC_HDC_MAX_SHARE	50	/* % of the entries HDC may pin */
/*
 * By default a quarter: on the simulator's Zipf workloads it saves half of
 * what 50 % does (docs/results/2026-12-03-hdc-sim.md), and the LRU keeps
 * three quarters of the cache for what HDC's history does not predict.
 * Nothing is pinned before a period has ended, or a saved set is loaded.
 */
#define RC_HDC_SHARE		25
/*
 * HDC fills what the reads leave only once the disk is idle: nothing in
 * flight and no request for this long (a synchronous reader's gaps
 * between requests are not idle time).
 */
#define RC_HDC_IDLE_NS		100000000ull
#define RC_HOT_AGE_CHUNK	64
#define RC_HOT_IDLE		(~0ULL)

/*
 * The sketch's slots for a cache of @nr_entries: 4 an entry, so that a
 * pinned set as large as the cache is among what Space-Saving holds,
 * 256..RC_HOT_SLOTS (about 150 KiB), which keeps a copy of it short.
 */
#define RC_HOT_SLOTS		4096u
static inline u32 rc_hot_slots_for(u32 nr_entries)
{
	return nr_entries > RC_HOT_SLOTS / 4 ? RC_HOT_SLOTS :
	       nr_entries < 64 ? 256 : 4 * nr_entries;
}

/*
 * Count the misses of @c in @h (rc_hot_init()'d by the caller, who owns
 * its memory and keeps it until the cache goes), from @now: the read
 * pieces (one a segment) HDC could save, those the LRU did not serve (a
 * fill, a bypass; inactive, what the simulated cache would not have
 * served) and the hits on pinned segments, the misses the pins save.
 * Not the LRU's hits: a segment the LRU holds needs no pin, and a stream
 * reading a segment in many pieces is one miss, not many.
 */
void rc_hot_attach(struct rc_cache *c, struct rc_hot *h, u64 now);

/*
 * A period ends at the first read hot_period_s after the last end:
 * hot_periods moves, and the caller, having chosen HDC's set from the
 * period's counts, starts their halving with rc_hot_age_start() (no-op
 * while one is under way).  The reads then halve them, RC_HOT_AGE_CHUNK
 * positions each.
 */
void rc_hot_age_start(struct rc_cache *c);

/*
 * HDC's pinned set (Carrera and Bianchini's host-guided device caching):
 * the segments that missed most, held in RAM whatever else is read.
 *
 * rc_hdc_max() is the most entries it may hold, hdc_share % of them.
 * rc_hdc_pin() pins segment @seg (below the device's end: the caller's
 * check): one cached (VALID or FILLING) is pinned where it is
 * (RC_HDC_PINNED, also when it was already); one not cached gets an
 * entry FILLING for it, pinned by its fill,
 * in *@idx (RC_HDC_FILL): the caller reads the whole segment into it and
 * completes it like any fill, with no waiter of its own (counted in
 * hdc_fills, and in fill_ios once done; no read's miss).  RC_HDC_FULL: the set holds
 * rc_hdc_max() already; RC_HDC_BUSY: no fill can start now (held, a
 * write to its bucket in flight, or every entry busy): try later.  Pinned entries are never the LRU's victims
 * and serve reads even while the cache is inactive (their data is there:
 * hits cost the disk nothing).  A pin ends with rc_hdc_unpin() or
 * rc_hdc_keep() (back on the LRU, most recent) or when the entry leaves
 * the index: a write that drops it, a failed or stale fill, drop_cache
 * (counted in hdc_dropped).
 *
 * rc_hdc_keep() walks entries @from..@from + @budget and unpins each
 * pinned one whose segment is not in @keep (sorted, @n of them; 0: unpin
 * all), returning where to go on until nr_entries: a new period's set
 * replaces the old one a chunk per lock hold.
 *
 * rc_hdc_want() makes @want (sorted, @n of them; the caller keeps the
 * memory until it calls again, NULL to clear) the chosen set: while the
 * set has room, a read of one of them pins its segment, a hit where it
 * is, a miss by a fill of the whole segment (counted in hdc_fills) that
 * neither C-Aware nor the budget refuses, active or not.  Pinning on the
 * reads the set was chosen for costs the disk little more than the reads
 * themselves; rc_hdc_pin() fills what the reads leave, when the disk would
 * be idle.
 */
static inline u32 rc_hdc_max(const struct rc_cache *c)
{
	return (u32)((u64)c->nr_entries * c->hdc_share / 100);
}

enum rc_hdc_pin {
	RC_HDC_PINNED,
	RC_HDC_FILL,
	RC_HDC_FULL,
	RC_HDC_BUSY,
};

enum rc_hdc_pin rc_hdc_pin(struct rc_cache *c, u64 seg, u32 *idx);
bool rc_hdc_unpin(struct rc_cache *c, u64 seg);
bool rc_hdc_pinned(const struct rc_cache *c, u64 seg);
u32 rc_hdc_keep(struct rc_cache *c, const u64 *keep, u32 n, u32 from, u32 budget);
void rc_hdc_want(struct rc_cache *c, const u64 *want, u32 n);

/* True if no entry is FILLING or pinned. */
bool rc_idle(const struct rc_cache *c);

/*
 * The memory of a cache that does not earn goes back to the kernel.  While
 * the cache is inactive (policy off, or adaptive's verdict) and caches no
 * writes, an entry's buffer serves nothing but what HDC pinned; its
 * GHOSTs, the simulated cache that decides when to come back, need none.
 *
 * rc_give_back() makes at most @max idle entries bare, their indices in
 * @out, and the caller frees their buffers: FREE ones first, then, walking
 * entries from *@from (which it advances, wrapping at nr_entries) for at
 * most @budget of them, GHOSTs and VALID ones holding only what the disk
 * has (whole, clean, unpinned, not HDC's), which become GHOSTs where they
 * are, so the simulated cache does not change (an unread one filled ahead
 * is dropped: it would be the first victim).  It keeps buffers for
 * HDC's share while HDC has a set chosen.  Returns how many; 0 once
 * rc_may_give_back() is false.  rc_givable() is about how many it would
 * give now (a shrinker's count).
 *
 * A bare entry is FREE or GHOST only: an entry for data is never a bare
 * one (a bare victim is dropped, at most RC_BARE_SKIPS a take, and then
 * the take fails as if every entry were busy: the read goes to the disk).
 * Once rc_may_give_back() is false again (active, or caching writes) the
 * caller gives the bare entries a buffer each and calls rc_regrown(): @idx
 * serves as any entry again.
 */
#define RC_BARE_SKIPS	8
static inline bool rc_may_give_back(const struct rc_cache *c)
{
	return !rc_active(c) && !rc_wc_on(c);
}

static inline bool rc_bare(const struct rc_cache *c, u32 idx)
{
	return c->entries[idx].bare;
}

u32 rc_givable(const struct rc_cache *c);
u32 rc_give_back(struct rc_cache *c, u32 *from, u32 budget, u32 *out, u32 max);
void rc_regrown(struct rc_cache *c, u32 idx);

/*
 * Whether bare entries should get their buffers again: the cache may no
 * longer give them (active, or caching writes), or HDC chose a set after
 * they went and its share has no buffers.
 */
bool rc_regrow_due(const struct rc_cache *c);

/*
 * Every counter zero, the policies' statistics and HDC's counts too (what
 * HDC pinned stays pinned).
 */
void rc_reset_counters(struct rc_cache *c);

static inline u64 rc_sector_to_seg(const struct rc_cache *c, u64 sector)
{
	return sector >> c->seg_shift;
}

/* Segment @seg's sectors on a device of @capacity sectors: the last one may be short. */
static inline u32 rc_seg_len(const struct rc_cache *c, u64 seg, u64 capacity)
{
	u64 start = seg << c->seg_shift, left = capacity > start ? capacity - start : 0;

	return left < (1u << c->seg_shift) ? (u32)left : 1u << c->seg_shift;
}

/* Sectors from @sector to the end of its segment, at most @sectors. */
static inline u32 rc_in_seg(const struct rc_cache *c, u64 sector, u32 sectors)
{
	u32 left = (1u << c->seg_shift) - (u32)(sector & ((1ull << c->seg_shift) - 1));

	return sectors < left ? sectors : left;
}

static inline const char *rc_policy_name(enum rc_policy p)
{
	static const char * const names[RC_POLICY_NR] = {
		"always", "off", "adaptive", "caware", "adaptive+caware",
	};

	return p < RC_POLICY_NR ? names[p] : "?";
}

static inline const char *rc_write_policy_name(enum rc_write_policy wp)
{
	static const char * const names[RC_WRITE_NR] = {
		"invalidate", "update", "back", "selective",
	};

	return wp < RC_WRITE_NR ? names[wp] : "?";
}

/* Policy by name (any case); returns -1 when unknown. */
int rc_policy_parse(const char *name);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * Portable core of the redcap RAM segment cache: hashed segment index, LRU
 * and free lists, entry states, write/fill generations and counters.
 */
#include "rc-core.h"
#include "rc-parse.h"

#define RC_GOLDEN_RATIO_64	0x61C8864680B583EBull
#define RC_MIN_WBUCKETS		64u

/*
 * Layout of the block handed to rc_cache_init(), every part 8-byte aligned:
 * entries[nr_entries], hash[nr_hash], wb_inflight[nr_wb], wb_gen[nr_wb].
 */

static u32 rc_roundup_pow2(u32 n)
{
	u32 p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Hash buckets: at least twice the entries, so chains stay short. */
static u32 rc_nr_hash(u32 nr_entries)
{
	return rc_roundup_pow2(nr_entries << 1);
}

/* Write buckets: one per entry, at least RC_MIN_WBUCKETS. */
static u32 rc_nr_wb(u32 nr_entries)
{
	u32 n = rc_roundup_pow2(nr_entries);

	return n < RC_MIN_WBUCKETS ? RC_MIN_WBUCKETS : n;
}

/*
 * The eviction history's slots: twice the depth it counts, as segments
 * filled again leave holes, and one more, so that the eviction a fill's
 * own take makes does not overwrite the segment it fills.
 */
static u32 rc_hist_slots(u32 nr_entries)
{
	return nr_entries * RC_HIST_SPAN * 2 + 1;
}

/* ... and its buckets: at least its slots. */
static u32 rc_nr_hist(u32 nr_entries)
{
	return rc_roundup_pow2(rc_hist_slots(nr_entries));
}

static size_t rc_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static bool rc_nr_entries_ok(u32 nr_entries)
{
	return nr_entries && nr_entries <= RC_MAX_ENTRIES;
}

size_t rc_cache_mem_size(u32 nr_entries)
{
	size_t sz;

	if (!rc_nr_entries_ok(nr_entries))
		return 0;
	sz = rc_align8((size_t)nr_entries * sizeof(struct rc_entry));
	sz += rc_align8((size_t)rc_nr_hash(nr_entries) * sizeof(u32));
	sz += 2 * rc_align8((size_t)rc_nr_wb(nr_entries) * sizeof(u32));
	sz += 3 * rc_align8((size_t)rc_hist_slots(nr_entries) * sizeof(u32));
	sz += rc_align8((size_t)rc_nr_hist(nr_entries) * sizeof(u32));
	return sz;
}

/* Top 32 bits of a golden-ratio multiplicative hash of @seg. */
static u32 rc_hash32(u64 seg)
{
	return (u32)((seg * RC_GOLDEN_RATIO_64) >> 32);
}

/* The top bits of @h as a bucket number in [0, mask] (mask + 1 = 2^k). */
static u32 rc_bucket(u32 h, u32 mask)
{
	return (u32)(((u64)h * ((u64)mask + 1)) >> 32);
}

static u32 rc_hash_bucket(const struct rc_cache *c, u64 seg)
{
	return rc_bucket(rc_hash32(seg), c->hash_mask);
}

static u32 rc_wb_bucket(const struct rc_cache *c, u64 seg)
{
	return rc_bucket(rc_hash32(seg), c->wb_mask);
}

int rc_cache_init(struct rc_cache *c, void *mem, u32 nr_entries, u32 seg_shift, u64 now)
{
	u32 nr_hash, nr_wb, i;
	char *p = mem;

	if (!rc_nr_entries_ok(nr_entries) || seg_shift > 63)
		return -1;
	nr_hash = rc_nr_hash(nr_entries);
	nr_wb = rc_nr_wb(nr_entries);

	memset(c, 0, sizeof(*c));
	c->nr_entries = nr_entries;
	c->seg_shift = seg_shift;
	c->hash_mask = nr_hash - 1;
	c->wb_mask = nr_wb - 1;
	c->write_policy = RC_WRITE_INVALIDATE;
	rc_adapt_init(&c->adapt);
	rc_caware_init(&c->caware, now);
	rc_budget_init(&c->budget);
	rc_streams_init(&c->streams);
	c->prefetch = RC_PREFETCH_DEFAULT;
	rc_set_policy(c, RC_POLICY_ALWAYS);

	c->entries = (struct rc_entry *)p;
	p += rc_align8((size_t)nr_entries * sizeof(struct rc_entry));
	c->hash = (u32 *)p;
	p += rc_align8((size_t)nr_hash * sizeof(u32));
	c->wb_inflight = (u32 *)p;
	p += rc_align8((size_t)nr_wb * sizeof(u32));
	c->wb_gen = (u32 *)p;
	p += rc_align8((size_t)nr_wb * sizeof(u32));
	c->hist_key = (u32 *)p;
	p += rc_align8((size_t)rc_hist_slots(nr_entries) * sizeof(u32));
	c->hist_chain = (u32 *)p;
	p += rc_align8((size_t)rc_hist_slots(nr_entries) * sizeof(u32));
	c->hist_tree = (u32 *)p;
	p += rc_align8((size_t)rc_hist_slots(nr_entries) * sizeof(u32));
	c->hist_head = (u32 *)p;
	c->hist_mask = rc_nr_hist(nr_entries) - 1;

	memset(c->entries, 0, (size_t)nr_entries * sizeof(struct rc_entry));
	for (i = 0; i < nr_entries; i++) {
		struct rc_entry *e = &c->entries[i];

		e->hnext = RC_NONE;
		e->prev = RC_NONE;
		e->next = i + 1 < nr_entries ? i + 1 : RC_NONE;
		e->state = RC_FREE;
		e->on_list = 1;
	}
	memset(c->hash, 0xff, (size_t)nr_hash * sizeof(u32));
	memset(c->wb_inflight, 0, (size_t)nr_wb * sizeof(u32));
	memset(c->wb_gen, 0, (size_t)nr_wb * sizeof(u32));
	for (i = 0; i < rc_hist_slots(nr_entries); i++)
		c->hist_chain[i] = RC_HIST_EMPTY;
	memset(c->hist_tree, 0, (size_t)rc_hist_slots(nr_entries) * sizeof(u32));
	memset(c->hist_head, 0xff, (size_t)(c->hist_mask + 1) * sizeof(u32));

	c->lru_head = RC_NONE;
	c->lru_tail = RC_NONE;
	c->prob_head = RC_NONE;
	c->prob_tail = RC_NONE;
	c->hdc_head = RC_NONE;
	c->hdc_tail = RC_NONE;
	c->hot_period_s = RC_HOT_PERIOD_S;
	c->hdc_share = RC_HDC_SHARE;
	c->free_head = 0;
	c->bare_head = RC_NONE;
	c->bare_tail = RC_NONE;
	c->unit_shift = seg_shift > 9 ? seg_shift - 6 : 3;
	if (c->unit_shift > seg_shift)
		c->unit_shift = seg_shift;
	c->unit_all = seg_shift - c->unit_shift >= 6 ? ~0ull :
		      (1ull << (1u << (seg_shift - c->unit_shift))) - 1;
	c->dirty_share = RC_DIRTY_SHARE;
	c->dirty_head = RC_NONE;
	c->dirty_tail = RC_NONE;
	return 0;
}

/* --- hash chains ------------------------------------------------------- */

static u32 rc_lookup(const struct rc_cache *c, u64 seg)
{
	u32 i = c->hash[rc_hash_bucket(c, seg)];

	while (i != RC_NONE && c->entries[i].seg != seg)
		i = c->entries[i].hnext;
	return i;
}

static void rc_hash_add(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];
	u32 *head = &c->hash[rc_hash_bucket(c, e->seg)];

	e->hnext = *head;
	*head = idx;
}

static void rc_hash_del(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];
	u32 *p = &c->hash[rc_hash_bucket(c, e->seg)];

	while (*p != RC_NONE && *p != idx)
		p = &c->entries[*p].hnext;
	if (*p == idx)
		*p = e->hnext;
	e->hnext = RC_NONE;
	/* Out of the index, out of HDC's set: the only way but an unpin. */
	if (e->hdc) {
		e->hdc = 0;
		c->nr_hdc--;
		c->ctr.hdc_dropped++;
	}
}

/*
 * --- LRU and probation (doubly linked), free list (singly linked via next)
 */

static void rc_list_add_head(struct rc_cache *c, u32 *head, u32 *tail, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	e->prev = RC_NONE;
	e->next = *head;
	if (*head != RC_NONE)
		c->entries[*head].prev = idx;
	else
		*tail = idx;
	*head = idx;
	e->on_list = 1;
}

static void rc_lru_add_head(struct rc_cache *c, u32 idx)
{
	rc_list_add_head(c, &c->lru_head, &c->lru_tail, idx);
}

/* VALID entry @idx, filled ahead and unread, goes on probation. */
static void rc_prob_add(struct rc_cache *c, u32 idx)
{
	rc_list_add_head(c, &c->prob_head, &c->prob_tail, idx);
	c->entries[idx].on_prob = 1;
	c->entries[idx].born = c->demand_takes;
}

static void rc_list_del(struct rc_cache *c, u32 *head, u32 *tail, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	if (e->prev != RC_NONE)
		c->entries[e->prev].next = e->next;
	else
		*head = e->next;
	if (e->next != RC_NONE)
		c->entries[e->next].prev = e->prev;
	else
		*tail = e->prev;
	e->prev = RC_NONE;
	e->next = RC_NONE;
	e->on_list = 0;
	e->on_prob = 0;
	e->on_hdc = 0;
}

/* Off the LRU, probation or HDC's list, whichever @idx is on. */
static void rc_lru_del(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	rc_list_del(c, e->on_prob ? &c->prob_head : e->on_hdc ? &c->hdc_head : &c->lru_head,
		    e->on_prob ? &c->prob_tail : e->on_hdc ? &c->hdc_tail : &c->lru_tail, idx);
}

/* Unpinned VALID or GHOST entry @idx goes on the list it belongs to. */
static void rc_list_put(struct rc_cache *c, u32 idx)
{
	if (c->entries[idx].hdc) {
		rc_list_add_head(c, &c->hdc_head, &c->hdc_tail, idx);
		c->entries[idx].on_hdc = 1;
	} else if (c->entries[idx].ahead)
		rc_prob_add(c, idx);
	else
		rc_lru_add_head(c, idx);
}

/*
 * The victim for a new segment: the oldest on probation once
 * RC_PROBATION() segments were asked for after it went on, else the LRU's
 * tail, else the oldest on probation.
 */
static u32 rc_victim(const struct rc_cache *c)
{
	u32 p = c->prob_tail;

	if (p != RC_NONE &&
	    (c->lru_tail == RC_NONE || c->demand_takes - c->entries[p].born >= RC_PROBATION(c)))
		return p;
	return c->lru_tail;
}

/* Entry @e filled ahead is read (@used), or goes unread. */
static void rc_ahead_end(struct rc_cache *c, struct rc_entry *e, bool used)
{
	if (!e->ahead)
		return;
	e->ahead = 0;
	c->nr_ahead--;
	if (used)
		c->ctr.prefetch_hits++;
	else
		c->ctr.prefetch_unused++;
}

/* Make @idx (out of the index, on no list) free. */
static void rc_free_push(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	rc_ahead_end(c, e, false);
	e->state = RC_FREE;
	e->pins = 0;
	e->wcopies = 0;
	e->updating = 0;
	e->valid = 0;
	e->dirty = 0;
	if (e->bare) {		/* on its own list: no fill may take it */
		rc_list_add_head(c, &c->bare_head, &c->bare_tail, idx);
		return;
	}
	e->prev = RC_NONE;
	e->next = c->free_head;
	e->on_list = 1;
	c->free_head = idx;
}

/* A bare FREE entry, taken off its list, or RC_NONE. */
static u32 rc_bare_pop(struct rc_cache *c)
{
	u32 idx = c->bare_head;

	if (idx != RC_NONE)
		rc_list_del(c, &c->bare_head, &c->bare_tail, idx);
	return idx;
}

static u32 rc_free_pop(struct rc_cache *c)
{
	u32 idx = c->free_head;
	struct rc_entry *e;

	if (idx == RC_NONE)
		return RC_NONE;
	e = &c->entries[idx];
	c->free_head = e->next;
	e->next = RC_NONE;
	e->on_list = 0;
	return idx;
}

/* --- the dirty list (the write cache), oldest at the tail -------------- */

static u32 rc_popcount64(u64 x)
{
	u32 n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

/*
 * Dirty entry @idx goes on the dirty list: at its head, newest, or
 * (@oldest: a failed write-back) at its tail, its dseq no later than the
 * tail's, so that the list stays in dseq order for rc_wb_take().
 */
static void rc_dirty_add(struct rc_cache *c, u32 idx, bool oldest)
{
	struct rc_entry *e = &c->entries[idx];
	u32 t = c->dirty_tail;

	e->on_dirty = 1;
	c->nr_dirty++;
	if (!oldest) {
		e->dseq = ++c->dirty_seq;
		e->prev = RC_NONE;
		e->next = c->dirty_head;
		if (c->dirty_head != RC_NONE)
			c->entries[c->dirty_head].prev = idx;
		else
			c->dirty_tail = idx;
		c->dirty_head = idx;
		return;
	}
	if (t != RC_NONE && (s32)(c->entries[t].dseq - e->dseq) < 0)
		e->dseq = c->entries[t].dseq;
	e->next = RC_NONE;
	e->prev = t;
	if (t != RC_NONE)
		c->entries[t].next = idx;
	else
		c->dirty_head = idx;
	c->dirty_tail = idx;
}

static void rc_dirty_del(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	if (e->prev != RC_NONE)
		c->entries[e->prev].next = e->next;
	else
		c->dirty_head = e->next;
	if (e->next != RC_NONE)
		c->entries[e->next].prev = e->prev;
	else
		c->dirty_tail = e->prev;
	e->prev = RC_NONE;
	e->next = RC_NONE;
	e->on_dirty = 0;
	c->nr_dirty--;
}

/*
 * Entry @idx leaves the index: its dirty units are dropped (a discard or
 * write-zeroes over them), and a write of it in flight is an orphan the
 * range waits for (rc_range_begin()).
 */
static void rc_dirty_drop(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	if (e->on_dirty)
		rc_dirty_del(c, idx);
	if (e->dirty) {		/* on the list, or a failed part of a write in flight */
		c->dirty_units -= rc_popcount64(e->dirty);
		c->ctr.dirty_dropped++;
	}
	e->dirty = 0;
	if (e->wbusy)
		c->wb_orphans++;
}

/*
 * Whether VALID entry @e holds what the disk may not: dirty units, a
 * write in flight, or only a part of its segment (a read of the rest
 * needs the disk's data under its own).  Such an entry serves every read.
 */
static bool rc_holds_newer(const struct rc_cache *c, const struct rc_entry *e)
{
	return e->state == RC_VALID && (e->on_dirty || e->wbusy || e->valid != c->unit_all);
}

/* --- entry state changes ----------------------------------------------- */

/* Take one pin of VALID entry @idx; the first pin takes it off the LRU. */
static void rc_pin(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	if (!e->pins++) {
		if (e->on_list)
			rc_lru_del(c, idx);
		c->nr_pinned++;
	}
}

/*
 * Drop VALID entry @idx from the index: freed now if unpinned, else DEAD
 * until its last pin drops.
 */
static void rc_invalidate(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	rc_dirty_drop(c, idx);
	rc_hash_del(c, idx);
	c->nr_valid--;
	if (e->pins) {
		e->state = RC_DEAD;
		return;
	}
	if (e->on_list)
		rc_lru_del(c, idx);
	rc_free_push(c, idx);
}

/* Drop GHOST entry @idx (out of the index and the LRU) to the free list. */
static void rc_ghost_drop(struct rc_cache *c, u32 idx)
{
	rc_hash_del(c, idx);
	rc_lru_del(c, idx);
	c->nr_ghost--;
	rc_free_push(c, idx);
}

/* The Fenwick tree of slots holding a key: slot @slot gains @d. */
static void rc_hist_count(struct rc_cache *c, u32 slot, s32 d)
{
	u32 n = rc_hist_slots(c->nr_entries), i;

	for (i = slot + 1; i <= n; i += i & -i)
		c->hist_tree[i - 1] += (u32)d;
}

/* Slots below @slot holding a key. */
static u32 rc_hist_below(const struct rc_cache *c, u32 slot)
{
	u32 sum = 0, i;

	for (i = slot; i; i -= i & -i)
		sum += c->hist_tree[i - 1];
	return sum;
}

/* Unlink slot @slot from its bucket's chain; it holds no key after. */
static void rc_hist_unlink(struct rc_cache *c, u32 slot)
{
	u32 *pp = &c->hist_head[rc_bucket(c->hist_key[slot], c->hist_mask)];

	while (*pp != slot)
		pp = &c->hist_chain[*pp];
	*pp = c->hist_chain[slot];
	c->hist_chain[slot] = RC_HIST_EMPTY;
	rc_hist_count(c, slot, -1);
}

/* @seg was evicted: into the history, over its oldest slot. */
static void rc_hist_add(struct rc_cache *c, u64 seg)
{
	u32 slot = c->hist_next, key = rc_hash32(seg), *head;

	if (++c->hist_next == rc_hist_slots(c->nr_entries))
		c->hist_next = 0;
	if (c->hist_chain[slot] != RC_HIST_EMPTY)
		rc_hist_unlink(c, slot);
	head = &c->hist_head[rc_bucket(key, c->hist_mask)];
	c->hist_key[slot] = key;
	c->hist_chain[slot] = *head;
	*head = slot;
	rc_hist_count(c, slot, 1);
}

/*
 * @seg is filled, its entry taken when the history's next slot was
 * @next: out of the history, and if the fill is a read miss's own
 * (@demand), counted as one a larger cache would not make if @seg's depth
 * allows (RC_HIST_SPAN).  Its depth counts the segments evicted after it,
 * up to @next: the eviction the take itself made does not count, since in
 * the larger cache @seg is a hit and nothing is evicted.
 */
static void rc_hist_fill(struct rc_cache *c, u64 seg, u32 next, bool demand)
{
	u32 key = rc_hash32(seg), slot, n = rc_hist_slots(c->nr_entries), r;

	for (slot = c->hist_head[rc_bucket(key, c->hist_mask)]; slot != RC_NONE;
	     slot = c->hist_chain[slot]) {
		if (c->hist_key[slot] != key)
			continue;
		/* itself and the slots after it, before @next (circular) */
		r = rc_hist_below(c, next) - rc_hist_below(c, slot);
		if (next <= slot)
			r += rc_hist_below(c, n);
		if (demand) {
			c->ctr.x2_fills_saved += r <= c->nr_entries;
			c->ctr.x4_fills_saved += r <= c->nr_entries * RC_HIST_SPAN;
		}
		rc_hist_unlink(c, slot);
		return;
	}
}

/*
 * An entry for a new segment: a free one, else the least recently used
 * VALID or GHOST one, taken out of the index.  A GHOST (!@data) takes a
 * bare one first; data never does (rc_give_back()).  RC_NONE if all are
 * busy.
 */
static u32 rc_take_entry(struct rc_cache *c, bool data)
{
	u32 i = data ? RC_NONE : rc_bare_pop(c), skips = 0;

	if (i == RC_NONE)
		i = rc_free_pop(c);
	if (i != RC_NONE)
		return i;
	for (;;) {
		i = rc_victim(c);
		if (i == RC_NONE)
			return RC_NONE;
		if (!data || !c->entries[i].bare)
			break;
		if (skips++ == RC_BARE_SKIPS)
			return RC_NONE;
		rc_hist_add(c, c->entries[i].seg);
		rc_ghost_drop(c, i);
	}
	rc_lru_del(c, i);
	rc_hash_del(c, i);
	rc_hist_add(c, c->entries[i].seg);
	if (c->entries[i].state == RC_GHOST) {
		c->nr_ghost--;
	} else {
		c->nr_valid--;
		c->ctr.evictions++;
		rc_ahead_end(c, &c->entries[i], false);
	}
	return i;
}

/*
 * An entry for @seg in @state, pinned once, in the index, every flag
 * clear (@ghost: @seg's GHOST entry, or RC_NONE; @ahead: taken for a fill
 * ahead, not for a segment asked for; @demand: for a read miss's own
 * fill, which the eviction history counts).  RC_NONE if all are busy.
 */
static u32 rc_take_for(struct rc_cache *c, u64 seg, u32 ghost, enum rc_state state, bool ahead,
			bool demand)
{
	u32 next = c->hist_next, i;
	struct rc_entry *e;

	if (ghost != RC_NONE)
		rc_ghost_drop(c, ghost);	/* the simulated segment becomes real */
	i = rc_take_entry(c, true);
	if (i == RC_NONE)
		return RC_NONE;
	rc_hist_fill(c, seg, next, demand);
	if (ahead) {
		c->nr_ahead++;
		c->ctr.prefetches++;
	} else {
		c->demand_takes++;
	}
	e = &c->entries[i];
	e->seg = seg;
	e->state = state;
	e->pins = 1;
	e->updating = 0;
	e->stale = 0;
	e->walloc = 0;
	e->ahead = 0;
	e->gahead = 0;
	e->pfill = 0;
	e->along = 0;
	e->hdc = 0;
	e->hfill = 0;
	e->valid = 0;
	e->dirty = 0;
	rc_hash_add(c, i);
	c->nr_pinned++;
	return i;
}

/*
 * Make an entry FILLING for @seg, pinned by its fill, which will be stale
 * unless the bucket's write generation is still @wgen when it completes.
 * @ghost is @seg's GHOST entry or RC_NONE.  Returns RC_NONE if all are busy.
 */
static u32 rc_start_fill(struct rc_cache *c, u64 seg, u32 ghost, u32 wgen, bool walloc,
			 bool ahead, bool demand)
{
	u32 i = rc_take_for(c, seg, ghost, RC_FILLING, ahead, demand);
	struct rc_entry *e;

	if (i == RC_NONE)
		return RC_NONE;
	e = &c->entries[i];
	e->walloc = walloc;
	e->ahead = ahead;
	e->pfill = ahead;
	e->wgen = wgen;
	c->nr_filling++;
	return i;
}

/* Release FILLING entry @idx (the fill's pin included) to the free list. */
static void rc_fill_release(struct rc_cache *c, u32 idx)
{
	rc_hash_del(c, idx);
	c->nr_pinned--;
	rc_free_push(c, idx);
}

/* --- the operations of rc-core.h ---------------------------------------- */

/*
 * Whether C-Aware's rule, where the policy has it, bypasses a miss (rule
 * 5's probes are cached: rc_caware_probe()).
 */
static bool rc_caware_bypasses(struct rc_cache *c)
{
	int rule;

	if (!rc_policy_caware(c->policy))
		return false;
	rule = rc_caware_rule(&c->caware, false, c->free_head == RC_NONE);
	return !rc_caware_caches(rule) && !rc_caware_probe(&c->caware, rule);
}

/*
 * Whether a read of index entry @i (RC_NONE: not cached) is served from
 * RAM: a valid or filling segment while the cache is active.  Inactive,
 * every read goes to the disk, whatever the estimator: serving what the
 * cache still held (vdisk only, until 2026-12-02) moved no cell of the
 * simulator at a server's scale by a point
 * (docs/results/2026-12-02-mechanisms.md).
 */
static bool rc_serves(const struct rc_cache *c, u32 i, bool want)
{
	return i != RC_NONE && c->entries[i].state != RC_GHOST &&
	       (rc_active(c) || c->entries[i].hdc || want || rc_holds_newer(c, &c->entries[i]));
}

/* Whether sorted @keep (@n) holds @seg. */
static bool rc_hdc_kept(const u64 *keep, u32 n, u64 seg)
{
	u32 lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (keep[mid] == seg)
			return true;
		if (keep[mid] < seg)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Pin entry @i (FILLING or VALID): off the LRU, onto HDC's list. */
static void rc_hdc_take(struct rc_cache *c, u32 i)
{
	struct rc_entry *e = &c->entries[i];

	e->hdc = 1;
	c->nr_hdc++;
	if (e->on_list) {
		rc_lru_del(c, i);
		rc_list_put(c, i);
	}
}

/* HDC chose @seg, and has room for it (rc_hdc_want()). */
static bool rc_hdc_wants(const struct rc_cache *c, u64 seg)
{
	return c->hdc_nwant && c->nr_hdc < rc_hdc_max(c) &&
	       rc_hdc_kept(c->hdc_want, c->hdc_nwant, seg);
}

/*
 * A read of @sectors at @sector in cached entry @i: a hit (pinned), a wait
 * on its fill, or a merge with the disk's data where the entry holds only
 * part of what is read (pinned).
 */
static enum rc_read_action rc_read_cached(struct rc_cache *c, u32 i, u64 sector, u32 sectors,
					  u32 *idx)
{
	struct rc_entry *e = &c->entries[i];

	*idx = i;
	rc_ahead_end(c, e, true);
	if (e->state == RC_FILLING)
		return RC_READ_WAIT;
	rc_pin(c, i);
	if (rc_units(c, sector, sectors, false) & ~e->valid) {
		c->ctr.read_bypassed++;
		c->ctr.read_bypassed_partial++;
		return RC_READ_MERGE;
	}
	c->ctr.read_hits++;
	c->ctr.hdc_hits += c->entries[i].hdc;
	return RC_READ_HIT;
}

/*
 * Make a GHOST entry for @seg, not indexed, at the LRU's head: the
 * simulated cache holds it (@ahead: filled ahead of its reads).  Returns
 * it, or RC_NONE if a write or a range in flight holds it off, or every
 * entry is busy.
 */
static u32 rc_ghost_add(struct rc_cache *c, u64 seg, bool ahead)
{
	struct rc_entry *e;
	u32 i, next;

	if (c->wb_inflight[rc_wb_bucket(c, seg)] || c->range_inflight)
		return RC_NONE;
	next = c->hist_next;
	i = rc_take_entry(c, false);
	if (i == RC_NONE)
		return RC_NONE;
	rc_hist_fill(c, seg, next, !ahead);
	if (!ahead)
		c->demand_takes++;
	e = &c->entries[i];
	e->seg = seg;
	e->state = RC_GHOST;
	e->gahead = ahead;
	rc_hash_add(c, i);
	rc_lru_add_head(c, i);
	c->nr_ghost++;
	return i;
}

/*
 * Inactive: bypass every read, and play it on the simulated cache, which
 * runs C-Aware's rule where the policy has it, not the budget (see
 * docs/results/README.md: a simulated budget kept in the red what the
 * active one would have paid back).
 */
static enum rc_read_action rc_read_simulate(struct rc_cache *c, struct rc_read_state *st,
					    u64 seg, u32 i)
{
	struct rc_entry *e;
	u32 b;

	if (i != RC_NONE) {
		e = &c->entries[i];
		st->sim = RC_SIM_HIT;
		c->ctr.sim_hits++;
		e->gahead = 0;
		if (e->on_list) {	/* VALID unpinned or GHOST: now most recent */
			rc_lru_del(c, i);
			rc_list_put(c, i);
		}
	} else {
		/* As rc_read() active: no fill while a write to the bucket flies. */
		b = rc_wb_bucket(c, seg);
		if (c->wb_inflight[b] || c->range_inflight || rc_caware_bypasses(c) ||
		    rc_ghost_add(c, seg, false) == RC_NONE) {
			st->sim = RC_SIM_BYPASS;
		} else {
			st->sim = RC_SIM_MISS;
			c->ctr.sim_misses++;
		}
	}
	c->ctr.read_bypassed++;
	c->ctr.read_bypassed_inactive++;
	return RC_READ_BYPASS;
}

static u32 rc_refused_clock(const struct rc_cache *c)
{
	return c->demand_takes + c->refused.refusals;
}

/* Whether the budget refused @seg lately (its slot in *@slot), while a fill would be cached. */
static bool rc_refused_lately(const struct rc_cache *c, u64 seg, u32 *slot)
{
	const struct rc_refused_tab *t = &c->refused;

	*slot = rc_hash32(seg) & (RC_REFUSED_SLOTS - 1);
	return t->seg[*slot] == seg + 1 &&
	       rc_refused_clock(c) - t->at[*slot] < c->nr_entries;
}

/*
 * The budget refuses a fill of @seg (@lately: refused lately, in slot @s).
 * Refused lately, it is read again (a fill then would still serve it: no
 * segment more asked for); otherwise a new refusal, which a fill would
 * have taken an entry for: remember it.
 */
static enum rc_refused rc_refuse(struct rc_cache *c, u64 seg, bool lately, u32 s)
{
	struct rc_refused_tab *t = &c->refused;

	t->at[s] = rc_refused_clock(c);
	if (lately)
		return RC_REFUSED_REREAD;
	t->seg[s] = seg + 1;
	t->refusals++;
	return RC_REFUSED_NEW;
}

/* A demand fill starts (@lately, @s: rc_refuse()): a re-read of a segment refused lately. */
static enum rc_refused rc_refused_filled(struct rc_cache *c, bool lately, u32 s)
{
	if (!lately)
		return RC_REFUSED_NONE;
	c->refused.seg[s] = 0;
	return RC_REFUSED_REREAD;
}

/* rc_read(), and rc_read_join() with @join: bypass where a fill would start. */
static enum rc_read_action rc_read_piece(struct rc_cache *c, struct rc_read_state *st,
					 u64 sector, u32 sectors, u32 *idx, bool join)
{
	u64 seg = sector >> c->seg_shift;
	bool admitted, lately, want;
	enum rc_read_action act;
	u32 i, b, slot = 0;

	/* Only the budget and the planner look at streams. */
	st->dir = rc_budgeted(c) || c->prefetch ? rc_stream_read(&c->streams, sector, sectors) : 0;
	c->ctr.reads++;
	st->sim = RC_SIM_NONE;
	st->refused_by = RC_REFUSED_NONE;
	i = rc_lookup(c, seg);
	want = !join && rc_hdc_wants(c, seg);
	/* Inactive, HDC's pinned and chosen segments serve; the rest is simulated. */
	if (!rc_active(c) && !want && !rc_serves(c, i, false))
		return rc_read_simulate(c, st, seg, i);

	if (rc_serves(c, i, want)) {
		act = rc_read_cached(c, i, sector, sectors, idx);
		if (want && !c->entries[i].hdc)
			rc_hdc_take(c, i);
		return act;
	}

	if (c->fills_held) {
		c->ctr.read_bypassed_held++;
		goto bypass;
	}
	/* A write in flight to the bucket: a fill now could read old data. */
	b = rc_wb_bucket(c, seg);
	if (c->wb_inflight[b] || c->range_inflight)
		goto bypass;

	/* HDC's choice is no speculation: neither C-Aware nor the budget judges it. */
	if (!want && rc_caware_bypasses(c)) {
		c->ctr.read_bypassed_caware++;
		goto bypass;
	}
	lately = !want && rc_budgeted(c) && rc_refused_lately(c, seg, &slot);
	admitted = want || !rc_budgeted(c) || rc_budget_admit(&c->budget, 1);
	if (!admitted) {
		c->ctr.read_bypassed_budget++;
		if (!join)	/* a joining piece would not have filled */
			st->refused_by = rc_refuse(c, seg, lately, slot);
		goto bypass;
	}
	if (join) {
		c->ctr.read_bypassed_joined++;
		goto bypass;
	}

	i = rc_start_fill(c, seg, i, c->wb_gen[b], false, false, true);
	if (i == RC_NONE) {
		c->ctr.read_bypassed_busy++;
		goto bypass;
	}
	c->ctr.read_misses++;
	*idx = i;
	if (want) {
		rc_hdc_take(c, i);
		c->ctr.hdc_fills++;
		return RC_READ_FILL;
	}
	if (rc_budgeted(c))
		rc_budget_take(&c->budget, 1);
	st->refused_by = rc_refused_filled(c, lately, slot);
	return RC_READ_FILL;

bypass:
	c->ctr.read_bypassed++;
	return RC_READ_BYPASS;
}

enum rc_read_action rc_read(struct rc_cache *c, struct rc_read_state *st, u64 sector, u32 sectors,
			    u32 *idx)
{
	return rc_read_piece(c, st, sector, sectors, idx, false);
}

bool rc_read_join(struct rc_cache *c, struct rc_read_state *st, u64 sector, u32 sectors)
{
	u32 i = rc_lookup(c, sector >> c->seg_shift), idx;

	if (rc_serves(c, i, false))
		return false;
	rc_read_piece(c, st, sector, sectors, &idx, true);
	c->ctr.read_joined++;
	return true;
}

/*
 * Whether @seg is cached or filling for a read (not filled ahead and
 * unread); inactive, whether the simulated cache holds it so.
 */
static bool rc_read_lately(const struct rc_cache *c, u64 seg)
{
	u32 i = rc_lookup(c, seg);
	const struct rc_entry *e;

	if (i == RC_NONE)
		return false;
	e = &c->entries[i];
	if (e->state == RC_GHOST)
		return !rc_active(c) && !e->gahead;
	return (e->state == RC_VALID || e->state == RC_FILLING) && !e->ahead;
}

/* Whether a segment within RC_PAIR_NEAR of @seg (on a device of @limit) was read lately. */
static bool rc_near_read_lately(const struct rc_cache *c, u64 seg, u64 limit)
{
	u64 s;

	for (s = seg > RC_PAIR_NEAR ? seg - RC_PAIR_NEAR : 0; s <= seg + RC_PAIR_NEAR; s++)
		if (s != seg && s < limit && rc_read_lately(c, s))
			return true;
	return false;
}

/*
 * A stream's batch (rc-core.h, rc_plan()): its degree is what it has read
 * in whole segments, up to c->prefetch and to its share of half the cache
 * among the streams going on.  Once fewer than half the
 * degree (rounded up) of the segments after @seg are cached or filling,
 * the degree segments after those are proposed.  At most half the degree
 * lookups.
 */
static bool rc_plan_batch(struct rc_cache *c, struct rc_read_state *st, u64 seg)
{
	u64 run = c->streams.run >> c->seg_shift;
	u32 live = rc_streams_live(&c->streams);
	u32 share = c->nr_entries / (2 * (live ? live : 1));
	u32 degree = run < c->prefetch ? (u32)run : c->prefetch;
	u32 trigger, ahead, i;

	if (degree > share)
		degree = share;
	if (!degree)
		return false;
	trigger = (degree + 1) / 2;
	for (ahead = 0; ahead < trigger; ahead++) {
		i = rc_lookup(c, seg + (u64)(s64)st->dir);	/* below 0: no segment */
		if (i == RC_NONE || (c->entries[i].state == RC_GHOST && rc_active(c)))
			break;
		seg += (u64)(s64)st->dir;
	}
	if (ahead == trigger)
		return false;
	st->ahead_seg = seg;
	st->ahead_dir = st->dir;
	st->ahead_left = degree;
	return true;
}

void rc_plan(struct rc_cache *c, struct rc_read_state *st, u64 seg, bool miss, u64 limit)
{
	st->ahead_left = 0;
	st->ahead_pair = false;
	st->ahead_started = false;
	if (!c->prefetch || (!rc_active(c) && !rc_budgeted(c)))
		return;
	if (st->dir && rc_plan_batch(c, st, seg))
		return;
	if (miss && rc_near_read_lately(c, seg, limit)) {
		st->ahead_seg = seg;
		st->ahead_dir = seg & 1 ? -1 : 1;
		st->ahead_left = 1;
		st->ahead_pair = true;
	}
}

u32 rc_prefetch(struct rc_cache *c, struct rc_read_state *st, u64 limit, u64 *seg)
{
	bool sim = !rc_active(c);
	u32 i, b, k;
	u64 s;

	while (st->ahead_left) {
		st->ahead_left--;
		s = st->ahead_seg + (u64)(s64)st->ahead_dir;	/* below 0: wraps above @limit */
		st->ahead_seg = s;
		if (s >= limit)
			break;
		i = rc_lookup(c, s);
		if (i != RC_NONE && (sim || c->entries[i].state != RC_GHOST)) {
			/* cached, or on its way (inactive: simulated so) */
			if (st->ahead_started)
				break;	/* a range is one run: the rest waits for the stream */
			continue;
		}
		if (sim) {	/* the simulated cache admits them all */
			i = rc_ghost_add(c, s, true);
			if (i == RC_NONE)
				break;
			st->ahead_started = true;
			*seg = s;
			return i;
		}
		b = rc_wb_bucket(c, s);
		if (c->fills_held || c->wb_inflight[b] || c->range_inflight ||
		    2 * (c->nr_ahead + 1) > c->nr_entries)
			break;
		if (!st->ahead_started && rc_budgeted(c)) {
			/* the budget's bar admits the proposal whole or trimmed, at its first fill */
			k = rc_budget_admit(&c->budget, st->ahead_left + 1);
			if (!k)
				break;
			st->ahead_left = k - 1;
		}
		i = rc_start_fill(c, s, i, c->wb_gen[b], false, true, false);
		if (i == RC_NONE)
			break;
		if (rc_budgeted(c))
			rc_budget_take(&c->budget, 1);
		if (st->ahead_pair)
			c->ctr.prefetch_paired++;
		st->ahead_started = true;
		*seg = s;
		return i;
	}
	st->ahead_left = 0;
	return RC_NONE;
}

void rc_prefetch_judge(struct rc_cache *c, u64 cvd_ns, bool cvd_ok)
{
	if (!cvd_ok)
		return;
	if (rc_budgeted(c))
		rc_budget_spend(&c->budget, cvd_ns);
	rc_adapt_charge(&c->adapt, cvd_ns);
}

void rc_read_judge(struct rc_cache *c, const struct rc_read_state *st, u64 sector, u32 sectors,
		   enum rc_read_action act, u64 vd_ns, bool vd_ok, u64 cvd_ns, bool cvd_ok)
{
	bool served = act == RC_READ_HIT || act == RC_READ_WAIT;

	if (rc_budgeted(c) && st->sim == RC_SIM_NONE && vd_ok && cvd_ok) {
		rc_budget_read(&c->budget, served, act == RC_READ_FILL, vd_ns, cvd_ns);
		rc_budget_ghost(&c->budget, st->refused_by, vd_ns);
	}
	if (served)
		rc_adapt_served(&c->adapt);
	rc_adapt_read(&c->adapt, sector, sectors, 1u << c->seg_shift, st->sim, vd_ns, vd_ok,
		      cvd_ns, cvd_ok);
}

/* A piece of a read rc_map_read() took: where, and what rc_read() left of it. */
struct rc_piece {
	u64 sector;
	u32 sectors;
	enum rc_sim sim;
	enum rc_refused refused_by;
};

/*
 * Take what the planner proposed for a piece (rc_plan(), rc_prefetch()):
 * fills ahead into @plan; inactive, the GHOST entries the simulated cache
 * fills ahead, their segments into @segs (*@n of at most RC_FILL_RUN_MAX).
 */
static void rc_plan_take(struct rc_cache *c, struct rc_read_state *st, u64 limit,
			 struct rc_read_plan *plan, u64 *segs, u32 *n)
{
	bool sim = !rc_active(c);
	struct rc_fill_item *it;
	u32 i;
	u64 s;

	while (sim ? *n < RC_FILL_RUN_MAX : plan->nr_fills < RC_FILL_RUN_MAX) {
		i = rc_prefetch(c, st, limit, &s);
		if (i == RC_NONE)
			break;
		if (sim) {
			segs[(*n)++] = s;
			continue;
		}
		it = &plan->fills[plan->nr_fills++];
		*it = (struct rc_fill_item){ .seg = s, .idx = i, .ahead = true };
	}
}

/*
 * Start a fill of @seg along a miss's read for @plan, unless it is cached
 * or filling or a write or a range in flight holds it off.  False if it
 * did not start.
 */
static bool rc_plan_fill(struct rc_cache *c, u64 seg, struct rc_read_plan *plan)
{
	u32 i = rc_lookup(c, seg), b = rc_wb_bucket(c, seg);

	if ((i != RC_NONE && c->entries[i].state != RC_GHOST) || c->wb_inflight[b] ||
	    c->range_inflight)
		return false;
	i = rc_start_fill(c, seg, i, c->wb_gen[b], false, false, false);
	if (i == RC_NONE)
		return false;
	c->entries[i].along = 1;
	plan->fills[plan->nr_fills++] = (struct rc_fill_item){ .seg = seg, .idx = i, .along = true };
	return true;
}

/*
 * The segments the rest of a miss's read, the @sectors at @sector (at a
 * segment's start), covers whole: filled along with the miss's, in its
 * request, so that the read costs the disk one access, as it would
 * without the cache; the rest comes back (rc_map_read()) and waits on
 * them.  Nothing in them is speculation.  A segment the read only enters
 * is left to the rest's own decision (LKR's small files read across a
 * boundary lost 5 points on the hdd15k when filled along).  They follow
 * the miss's decision (the budget admits the read as a whole, by its
 * first fill, as it does a stream's batch) and go down in its request.
 * A segment cached or filling, or held off by a write or a range in
 * flight, ends the run.
 */
static void rc_plan_along(struct rc_cache *c, u64 sector, u32 sectors,
			  struct rc_read_plan *plan)
{
	u64 seg = rc_sector_to_seg(c, sector);
	u64 end = (sector + sectors) >> c->seg_shift;

	for (; seg < end && plan->nr_fills < RC_FILL_RUN_MAX; seg++) {
		if (!rc_plan_fill(c, seg, plan))
			break;
		c->ctr.fill_along++;
	}
}

/* Sort @plan's fills and cut them into disk requests of at most p->run_max segments. */
static void rc_plan_reqs(const struct rc_cache *c, const struct rc_pricer *p,
			 struct rc_read_plan *plan)
{
	u32 i, k, len, max = p->run_max ? p->run_max : 1;
	struct rc_fill_req *r;

	rc_fill_runs(plan->fills, plan->nr_fills);
	plan->nr_reqs = 0;
	for (i = 0; i < plan->nr_fills; i += len) {
		len = rc_fill_run(plan->fills + i, plan->nr_fills - i, max);
		r = &plan->reqs[plan->nr_reqs++];
		r->sector = plan->fills[i].seg << c->seg_shift;
		r->first = i;
		r->nr = len;
		r->sectors = 0;
		for (k = i; k < i + len; k++)
			r->sectors += rc_seg_len(c, plan->fills[k].seg, p->capacity);
	}
}

/* @total shared out in proportion: @part of @whole (@whole > 0). */
static u64 rc_share(u64 total, u32 part, u32 whole)
{
	return part == whole ? total : rc_div64(total * part, whole);
}

/*
 * A request the cache sends down, or inactive would have: [@from, @to),
 * whose it is (@tag: the caller's), and once played (rc_price_runs()) its
 * share of its run's price.
 */
struct rc_ext {
	u64 from, to;
	int tag;
	u64 ns;
	bool ok;
};

/*
 * Play @nx requests @x on the cache's disk as the caller sends them down,
 * in sector order (rc_map_read()): one request per run of adjacent ones,
 * each its share of the run's price by sectors.  Sorts @x.
 */
static void rc_price_runs(const struct rc_pricer *p, u64 now, struct rc_ext *x, u32 nx)
{
	struct rc_ext t;
	u64 run_ns;
	u32 i, j, k;
	bool ok;

	for (i = 1; i < nx; i++) {	/* insertion sort by start: a few, mostly in order */
		t = x[i];
		for (j = i; j && x[j - 1].from > t.from; j--)
			x[j] = x[j - 1];
		x[j] = t;
	}
	for (i = 0; i < nx; i = j) {
		for (j = i + 1; j < nx && x[j].from == x[j - 1].to; j++)
			;
		ok = p->price(p->ctx, RC_VD_CACHE, x[i].from, (u32)(x[j - 1].to - x[i].from),
			      now, &run_ns);
		for (k = i; k < j; k++) {
			x[k].ns = rc_share(run_ns, (u32)(x[k].to - x[k].from),
					   (u32)(x[j - 1].to - x[i].from));
			x[k].ok = ok;
		}
	}
}

/*
 * The price on the cache's disk of what the inactive cache would have sent
 * down for each of @n pieces, into @ns and @ok: a miss's segment, a
 * bypass's piece, nothing for a hit; and for the @nsegs segments @segs it
 * would have filled ahead (rc_plan_take()), charged as speculation.
 */
static void rc_price_simulated(struct rc_cache *c, const struct rc_pricer *p, u64 now,
			       const struct rc_piece *pc, u32 n, const u64 *segs, u32 nsegs,
			       u64 *ns, bool *ok)
{
	struct rc_ext x[RC_JOIN_MAX + RC_FILL_RUN_MAX];
	u64 ahead_ns = 0, seg;
	u32 i, nx = 0;
	bool ahead_ok = true;

	for (i = 0; i < n; i++) {
		ns[i] = 0;
		ok[i] = true;
		seg = rc_sector_to_seg(c, pc[i].sector);
		if (pc[i].sim == RC_SIM_MISS)
			x[nx++] = (struct rc_ext){ .from = seg << c->seg_shift,
						   .to = (seg << c->seg_shift) +
							 rc_seg_len(c, seg, p->capacity),
						   .tag = (int)i };
		else if (pc[i].sim == RC_SIM_BYPASS)
			x[nx++] = (struct rc_ext){ .from = pc[i].sector,
						   .to = pc[i].sector + pc[i].sectors,
						   .tag = (int)i };
	}
	for (i = 0; i < nsegs; i++)
		x[nx++] = (struct rc_ext){ .from = segs[i] << c->seg_shift,
					   .to = (segs[i] << c->seg_shift) +
						 rc_seg_len(c, segs[i], p->capacity),
					   .tag = -1 };
	rc_price_runs(p, now, x, nx);
	for (i = 0; i < nx; i++) {
		if (x[i].tag < 0) {
			ahead_ns += x[i].ns;
			ahead_ok &= x[i].ok;
		} else {
			ns[x[i].tag] = x[i].ns;
			ok[x[i].tag] = x[i].ok;
		}
	}
	if (nsegs && ahead_ok)
		rc_adapt_charge(&c->adapt, ahead_ns);
}

/*
 * Price and judge the read @plan took, decided piece by piece in @pc (@n
 * pieces): the read is played once on the bare disk, and what the cache
 * sends down for it, its requests and the read itself if it bypasses,
 * once per run of adjacent ones on the cache's (two pricings at most
 * while the plan's requests and the read are one run: every plan of a
 * stream).  Each piece is judged on its share of both (rc_read_judge());
 * a fill's share is its request's; a request with none of the read's own
 * fills is speculation (rc_prefetch_judge()).
 */
static void rc_plan_judge(struct rc_cache *c, const struct rc_pricer *p, u64 now,
			  const struct rc_piece *pc, u32 n, const u64 *segs, u32 nsegs,
			  struct rc_read_plan *plan)
{
	struct rc_ext x[RC_FILL_RUN_MAX + 1];
	u64 vd_ns, req_ns[RC_FILL_RUN_MAX], cvd_ns[RC_JOIN_MAX], bypass_ns = 0;
	bool vd_ok, req_ok[RC_FILL_RUN_MAX], cvd_ok[RC_JOIN_MAX], own, bypass_ok = true;
	bool bypass = pc[0].sim == RC_SIM_NONE &&
		      (plan->act == RC_READ_BYPASS || plan->act == RC_READ_MERGE);
	struct rc_read_state st = { 0 };
	const struct rc_fill_req *r;
	u32 i, k, nx = 0, own_req = RC_NONE;

	vd_ok = p->price(p->ctx, RC_VD_BARE, pc[0].sector, plan->sectors, now, &vd_ns);
	for (i = 0; i < plan->nr_reqs; i++)
		x[nx++] = (struct rc_ext){ .from = plan->reqs[i].sector,
					   .to = plan->reqs[i].sector + plan->reqs[i].sectors,
					   .tag = (int)i };
	if (bypass)
		x[nx++] = (struct rc_ext){ .from = pc[0].sector,
					   .to = pc[0].sector + plan->sectors, .tag = -1 };
	rc_price_runs(p, now, x, nx);
	for (i = 0; i < nx; i++) {
		if (x[i].tag < 0) {
			bypass_ns = x[i].ns;
			bypass_ok = x[i].ok;
			continue;
		}
		req_ns[x[i].tag] = x[i].ns;
		req_ok[x[i].tag] = x[i].ok;
	}
	for (i = 0; i < plan->nr_reqs; i++) {
		r = &plan->reqs[i];
		for (k = r->first, own = false; k < r->first + r->nr; k++)
			own |= rc_fill_own(&plan->fills[k]);
		if (own)
			own_req = i;
		else
			rc_prefetch_judge(c, req_ns[i], req_ok[i]);
	}
	if (pc[0].sim != RC_SIM_NONE)
		rc_price_simulated(c, p, now, pc, n, segs, nsegs, cvd_ns, cvd_ok);
	for (i = 0; i < n; i++) {
		if (pc[i].sim == RC_SIM_NONE) {
			cvd_ok[i] = own_req != RC_NONE ? req_ok[own_req] : bypass_ok;
			cvd_ns[i] = own_req != RC_NONE ? req_ns[own_req] :
				    rc_share(bypass_ns, pc[i].sectors, plan->sectors);
		}
		st.sim = pc[i].sim;
		st.refused_by = pc[i].refused_by;
		rc_read_judge(c, &st, pc[i].sector, pc[i].sectors, plan->act,
			      rc_share(vd_ns, pc[i].sectors, plan->sectors), vd_ok,
			      cvd_ns[i], cvd_ok[i]);
	}
}

void rc_hot_attach(struct rc_cache *c, struct rc_hot *h, u64 now)
{
	c->hot = h;
	c->hot_since = now;
	c->hot_aging = RC_HOT_IDLE;
}

/*
 * A period ends (hot_periods moves): the caller chooses from its counts,
 * then starts their halving (rc_hot_age_start()), which the reads do, a
 * chunk each (bounded work).
 */
static void rc_hot_tick(struct rc_cache *c, u64 now)
{
	if (c->hot_aging != RC_HOT_IDLE) {
		c->hot_aging = rc_hot_age_some(c->hot, c->hot_aging, RC_HOT_AGE_CHUNK);
		if (c->hot_aging >= rc_hot_age_end(c->hot))
			c->hot_aging = RC_HOT_IDLE;
	} else if (now - c->hot_since >= (u64)c->hot_period_s * 1000000000) {
		c->hot_since = now;
		c->hot_periods++;
	}
}

void rc_hot_age_start(struct rc_cache *c)
{
	if (c->hot && c->hot_aging == RC_HOT_IDLE)
		c->hot_aging = 0;
}

/*
 * Whether a piece of @sectors at @sector goes on a visit of its segment
 * that a recent piece began: it starts at or after where the last one of
 * the segment ended (a stream, reading on).  Notes where it ends.
 */
static bool rc_hot_visit(struct rc_cache *c, u64 sector, u32 sectors)
{
	u64 seg = sector >> c->seg_shift;
	bool on;
	u32 k;

	for (k = 0; k < RC_HOT_VISITS; k++) {
		if (c->hot_visit[k].seg != seg + 1)
			continue;
		on = sector >= c->hot_visit[k].end;
		c->hot_visit[k].end = sector + sectors;
		return on;
	}
	k = c->hot_visit_next++ % RC_HOT_VISITS;
	c->hot_visit[k].seg = seg + 1;
	c->hot_visit[k].end = sector + sectors;
	return false;
}

/*
 * A piece of @sectors at @sector that rc_read() handled with @act (@sim
 * inactive) on entry @idx: a miss HDC could save, unless the LRU served
 * it; a hit on a pinned segment counts, as the miss it would be without
 * the pin (else its count would fade and the next period unpin it).  A
 * visit counts once: the pieces of a stream reading on through a segment
 * it bypasses are one miss, not one each (the seed counts blocks, which a
 * scan misses once).
 */
static void rc_hot_note(struct rc_cache *c, u64 sector, u32 sectors, enum rc_read_action act,
			enum rc_sim sim, u32 idx)
{
	if (!c->hot)
		return;
	if (act == RC_READ_HIT ? c->entries[idx].hdc : act != RC_READ_WAIT && sim != RC_SIM_HIT)
		if (!rc_hot_visit(c, sector, sectors))
			rc_hot_miss(c->hot, sector >> c->seg_shift);
}

void rc_map_read(struct rc_cache *c, u64 sector, u32 sectors, u64 now,
		 const struct rc_pricer *p, struct rc_read_plan *plan)
{
	u64 limit = (p->capacity + (1u << c->seg_shift) - 1) >> c->seg_shift;	/* segments */
	u32 len = rc_in_seg(c, sector, sectors), n, nsegs = 0;
	u64 segs[RC_FILL_RUN_MAX];	/* inactive: what its read-ahead would fill */
	struct rc_piece pc[RC_JOIN_MAX];
	struct rc_read_state st;
	enum rc_read_action act;
	u32 np = 1;

	plan->idx = RC_NONE;
	plan->nr_fills = 0;
	if (rc_policy_caware(c->policy))
		rc_caware_decay(&c->caware, now);
	if (c->hot)
		rc_hot_tick(c, now);
	act = rc_read(c, &st, sector, len, &plan->idx);
	rc_hot_note(c, sector, len, act, st.sim, plan->idx);
	pc[0] = (struct rc_piece){ sector, len, st.sim, st.refused_by };
	if (act == RC_READ_FILL) {
		plan->fills[plan->nr_fills++] = (struct rc_fill_item){
			.seg = rc_sector_to_seg(c, sector), .idx = plan->idx };
		rc_plan_along(c, sector + len, sectors - len, plan);
	}
	rc_plan(c, &st, rc_sector_to_seg(c, sector),
		len == sectors && (act == RC_READ_FILL || st.sim == RC_SIM_MISS), limit);
	rc_plan_take(c, &st, limit, plan, segs, &nsegs);
	for (; act == RC_READ_BYPASS && len < sectors && np < RC_JOIN_MAX; np++) {
		n = rc_in_seg(c, sector + len, sectors - len);
		if (!rc_read_join(c, &st, sector + len, n))
			break;
		rc_hot_note(c, sector + len, n, RC_READ_BYPASS, st.sim, RC_NONE);
		pc[np] = (struct rc_piece){ sector + len, n, st.sim, st.refused_by };
		rc_plan(c, &st, rc_sector_to_seg(c, sector + len), false, limit);
		rc_plan_take(c, &st, limit, plan, segs, &nsegs);
		len += n;
	}
	plan->act = act;
	plan->sectors = len;
	rc_plan_reqs(c, p, plan);
	rc_plan_judge(c, p, now, pc, np, segs, nsegs, plan);
}

/* The service of a disk request submitted at @start that completed at @end. */
static u64 rc_disk_service(struct rc_cache *c, u64 start, u64 end)
{
	u64 from = c->disk_last_done < end ? c->disk_last_done : end;

	if (start > from)
		from = start;
	if (end > c->disk_last_done)
		c->disk_last_done = end;
	return end - from;
}

void rc_event(struct rc_cache *c, const struct rc_event *ev)
{
	u64 ns = ev->end - ev->start;

	switch (ev->kind) {
	case RC_EV_HIT:
		rc_unpin(c, ev->idx);
		rc_adapt_copy(&c->adapt, ev->sectors, ns);
		rc_caware_record(&c->caware, RC_CL_DIRECT_CACHE_READ, ns, ev->end);
		rc_caware_record(&c->caware, RC_CL_CACHE_READ, ns, ev->end);
		break;
	case RC_EV_WAITED:
		rc_caware_record(&c->caware, RC_CL_CACHE_READ, ns, ev->end);
		break;
	case RC_EV_FILL:
	case RC_EV_BYPASS:
		if (ev->error)
			break;
		rc_adapt_disk_done(&c->adapt, ev->kind == RC_EV_FILL ? RC_DISK_FILL : RC_DISK_BARE,
				   ev->sector, ev->sectors, rc_disk_service(c, ev->start, ev->end));
		if (ev->kind == RC_EV_BYPASS)
			rc_caware_record(&c->caware, RC_CL_SOURCE_READ, ns, ev->end);
		break;
	case RC_EV_WRITE:
		if (!ev->error)
			rc_caware_record(&c->caware, RC_CL_SOURCE_WRITE, ns, ev->end);
		break;
	case RC_EV_WRITE_COPY:
		rc_caware_record(&c->caware, RC_CL_DIRECT_CACHE_WRITE, ev->end - ev->copy, ev->end);
		rc_caware_record(&c->caware, RC_CL_CACHE_WRITE, ns, ev->end);
		break;
	}
}

enum rc_fill_action rc_fill_done(struct rc_cache *c, u32 idx, int error,
				 u32 sectors, bool joined)
{
	struct rc_entry *e;
	bool walloc;

	/* Misuse (not a filling entry): touch nothing, fail the waiters. */
	if (idx >= c->nr_entries || c->entries[idx].state != RC_FILLING)
		return RC_FILL_ERROR;
	e = &c->entries[idx];

	walloc = e->walloc;
	e->walloc = 0;
	e->pfill = 0;
	e->along = 0;
	e->hfill = 0;
	if (!walloc) {
		c->ctr.fill_ios++;
		c->ctr.fill_sectors += sectors;
		c->ctr.fill_joined += joined;
	}
	c->nr_filling--;

	if (error) {
		c->ctr.fill_errors++;
		rc_fill_release(c, idx);
		return RC_FILL_ERROR;
	}
	/* Any write issued to the bucket since the fill began: data may be old. */
	if (c->wb_gen[rc_wb_bucket(c, e->seg)] != e->wgen || e->stale) {
		c->ctr.fill_stale++;
		rc_fill_release(c, idx);
		return RC_FILL_STALE;
	}
	if (walloc)
		c->ctr.write_allocs++;
	e->state = RC_VALID;
	e->valid = c->unit_all;
	c->nr_valid++;
	return RC_FILL_SERVE;
}

void rc_fill_waiters_done(struct rc_cache *c, u32 idx, enum rc_fill_action act, u32 n,
			  u32 own)
{
	u32 others = n > own ? n - own : 0;

	if (act != RC_FILL_SERVE) {
		rc_count_resent(c, others);
		return;
	}
	rc_count_waited(c, others);
	rc_unpin(c, idx);
}

void rc_count_waited(struct rc_cache *c, u32 n)
{
	c->ctr.read_hits_waited += n;
}

void rc_count_resent(struct rc_cache *c, u32 n)
{
	c->ctr.read_resent += n;
}

void rc_fill_runs(struct rc_fill_item *f, u32 n)
{
	struct rc_fill_item t;
	u32 i, j;

	/* Insertion sort: a handful of fills, most often in order already. */
	for (i = 1; i < n; i++) {
		t = f[i];
		for (j = i; j && f[j - 1].seg > t.seg; j--)
			f[j] = f[j - 1];
		f[j] = t;
	}
}

u32 rc_fill_run(const struct rc_fill_item *f, u32 n, u32 max)
{
	u32 len = 1;

	while (len < n && len < max && f[len].seg == f[len - 1].seg + 1)
		len++;
	return len;
}

void rc_fill_cancel(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e;
	bool miss;

	if (idx >= c->nr_entries || c->entries[idx].state != RC_FILLING)
		return;
	e = &c->entries[idx];
	/* A write's fill only caches nothing; one ahead was never started. */
	miss = !e->walloc && !e->pfill && !e->along && !e->hfill;
	c->ctr.hdc_fills -= e->hfill;
	e->hfill = 0;
	if (e->hdc) {		/* a pin never begun ends uncounted */
		e->hdc = 0;
		c->nr_hdc--;
	}
	c->ctr.fill_along -= e->along;
	if (e->pfill) {
		c->ctr.prefetches--;
		if (e->ahead)
			c->nr_ahead--;
		else
			c->ctr.prefetch_hits--;	/* the read that waited is re-sent */
	}
	e->ahead = 0;
	e->pfill = 0;
	e->along = 0;
	e->walloc = 0;
	c->nr_filling--;
	rc_fill_release(c, idx);
	if (!miss)
		return;
	c->ctr.read_misses--;
	c->ctr.read_bypassed++;
	c->ctr.read_bypassed_nomem++;
}

void rc_unpin(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e;

	if (idx >= c->nr_entries)
		return;
	e = &c->entries[idx];
	/* A filling entry's only pin is the fill's, dropped by rc_fill_done(). */
	if (!e->pins || e->state == RC_FILLING || e->state == RC_FREE)
		return;
	if (--e->pins)
		return;
	c->nr_pinned--;
	e->updating = 0;
	if (e->state != RC_VALID)
		rc_free_push(c, idx);
	else if (!e->on_dirty)		/* a dirty one stays on the dirty list */
		rc_list_put(c, idx);
}

/* A write to @seg is in flight: no fill of its bucket starts, and those in flight are old. */
static void rc_write_hold(struct rc_cache *c, u64 seg)
{
	u32 b = rc_wb_bucket(c, seg);

	c->wb_inflight[b]++;
	c->wb_gen[b]++;
}

static u32 rc_write_begin(struct rc_cache *c, u64 seg, bool may_update)
{
	u32 i;

	rc_write_hold(c, seg);
	/* A FILLING entry is left alone: its fill will see the new gen. */
	i = rc_lookup(c, seg);
	if (i != RC_NONE && (c->write_policy != RC_WRITE_UPDATE || !may_update)) {
		if (c->entries[i].state == RC_VALID) {
			c->ctr.invalidations++;
			rc_invalidate(c, i);
		} else if (c->entries[i].state == RC_GHOST) {
			rc_ghost_drop(c, i);	/* as the real cache would */
		}
	}
	return c->wb_gen[rc_wb_bucket(c, seg)];
}

u32 rc_write_start(struct rc_cache *c, u64 seg, u32 sectors, bool may_update)
{
	c->ctr.writes++;
	c->ctr.write_sectors += sectors;
	return rc_write_begin(c, seg, may_update);
}

/* The segments a range of @sectors at @sector touches: *@first, *@nr. */
static void rc_range_segs(const struct rc_cache *c, u64 sector, u64 sectors, u64 *first, u64 *nr)
{
	*first = sector >> c->seg_shift;
	*nr = sectors ? ((sector + sectors - 1) >> c->seg_shift) - *first + 1 : 0;
}

/* The segments a range covers whole: *@first, *@nr (none: 0). */
static void rc_range_whole(const struct rc_cache *c, u64 sector, u64 sectors, u64 *first,
			   u64 *nr)
{
	u64 mask = (1ull << c->seg_shift) - 1, end = sector + sectors;

	*first = (sector + mask) >> c->seg_shift;
	*nr = (end >> c->seg_shift) > *first ? (end >> c->seg_shift) - *first : 0;
}

/* A range covers index entry @i whole: nothing of it stays. */
static void rc_range_drop(struct rc_cache *c, u32 i)
{
	struct rc_entry *e = &c->entries[i];

	if (e->state == RC_FILLING) {
		e->stale = 1;
	} else if (e->state == RC_VALID) {
		c->ctr.invalidations++;
		rc_invalidate(c, i);
	} else if (e->state == RC_GHOST) {
		rc_ghost_drop(c, i);
	}
}

/*
 * A range covers sectors [@s0, @s1) of entry @i's segment, not all of it.
 * An entry that holds nothing newer than the disk goes whole (the disk
 * has the rest).  One that does keeps what the range leaves: the units
 * it covers go (dirty ones counted dropped), and where an end of the
 * range falls inside a unit it keeps, that unit's sectors in the range
 * are zeroed in RAM by the caller (*@z, the entry pinned) and written
 * back: the unit's other sectors are newer than the disk.  A write of the
 * entry in flight may carry the dropped units' older data: the range
 * waits for it (an orphan, rwait).
 */
static void rc_range_part(struct rc_cache *c, u32 i, u64 s0, u64 s1, struct rc_range_zero *z)
{
	struct rc_entry *e = &c->entries[i];
	u64 covered = rc_units(c, s0, (u32)(s1 - s0), true);
	u64 touched = rc_units(c, s0, (u32)(s1 - s0), false);
	u64 umask = (1ull << c->unit_shift) - 1;
	u64 ends[2] = { s0, s1 - 1 };
	u32 k;

	if (e->state != RC_VALID || !(e->dirty || e->wbusy)) {
		rc_range_drop(c, i);
		return;
	}
	if (e->dirty & covered) {
		c->dirty_units -= rc_popcount64(e->dirty & covered);
		c->ctr.dirty_dropped++;
		e->dirty &= ~covered;
	}
	e->valid &= ~covered;
	if (!e->valid) {
		c->ctr.invalidations++;
		rc_invalidate(c, i);
		return;
	}
	if (e->on_dirty && !e->dirty) {
		rc_dirty_del(c, i);
		if (!e->pins)
			rc_list_put(c, i);
	}
	if (e->wbusy && !e->rwait) {
		e->rwait = 1;
		c->wb_orphans++;
	}
	for (k = 0; k < 2; k++) {
		u64 u0 = ends[k] & ~umask, a = s0 > u0 ? s0 : u0;
		u64 b = s1 < u0 + umask + 1 ? s1 : u0 + umask + 1;

		if (k && (ends[1] & ~umask) == (ends[0] & ~umask))
			break;		/* both ends in one unit: done */
		if (!(rc_units(c, u0, 1, false) & touched & ~covered & e->valid))
			continue;
		z->zero[z->n++] = (struct rc_range_zero_req){ i, a, (u32)(b - a) };
		e->wcopies++;	/* no write-back takes it until it is zeroed */
		rc_pin(c, i);
	}
}

/* The segment @seg's part of the range [@sector, @end). */
static void rc_range_seg(struct rc_cache *c, u64 seg, u64 sector, u64 end, struct rc_range_zero *z)
{
	u64 s0 = seg << c->seg_shift, s1 = s0 + (1ull << c->seg_shift);
	u32 i = rc_lookup(c, seg);

	if (i == RC_NONE)
		return;
	if (sector <= s0 && end >= s1)
		rc_range_drop(c, i);
	else
		rc_range_part(c, i, sector > s0 ? sector : s0, end < s1 ? end : s1, z);
}

bool rc_range_begin(struct rc_cache *c, u64 sector, u64 sectors, struct rc_range_zero *z)
{
	u64 first, nr, s, end = sector + sectors;

	z->n = 0;
	c->ctr.writes++;
	c->ctr.write_sectors += sectors;
	rc_range_segs(c, sector, sectors, &first, &nr);
	if (nr <= RC_RANGE_SMALL) {
		for (s = first; s < first + nr; s++) {
			rc_write_hold(c, s);
			rc_range_seg(c, s, sector, end, z);
		}
		return false;
	}
	c->range_inflight++;
	/* Its ends here; rc_range_walk() the segments it covers whole. */
	rc_range_seg(c, first, sector, end, z);
	rc_range_seg(c, first + nr - 1, sector, end, z);
	return true;
}

u32 rc_range_walk(struct rc_cache *c, u64 sector, u64 sectors, u32 from, u32 budget)
{
	u32 i, end = c->nr_entries;
	u64 first, nr;

	rc_range_whole(c, sector, sectors, &first, &nr);
	if (from < end && budget < end - from)
		end = from + budget;
	for (i = from; i < end; i++)
		if (c->entries[i].seg - first < nr)
			rc_range_drop(c, i);
	return end;
}

void rc_range_zeroed(struct rc_cache *c, const struct rc_range_zero_req *r)
{
	struct rc_entry *e = &c->entries[r->idx];
	u64 unit = rc_units(c, r->sector, r->sectors, false);

	e->wcopies--;
	if (e->state == RC_VALID && (e->valid & unit)) {
		c->dirty_units += rc_popcount64(unit & ~e->dirty);
		e->dirty |= unit;
		/* one being written goes on the list when that write ends */
		if (!e->on_dirty && !e->wbusy)
			rc_dirty_add(c, r->idx, false);
	}
	rc_unpin(c, r->idx);
}

void rc_range_start(struct rc_cache *c, u64 sector, u64 sectors)
{
	struct rc_range_zero z;
	u32 k;

	if (rc_range_begin(c, sector, sectors, &z))
		rc_range_walk(c, sector, sectors, 0, c->nr_entries);
	for (k = 0; k < z.n; k++)
		rc_range_zeroed(c, &z.zero[k]);
}

void rc_range_done(struct rc_cache *c, u64 sector, u64 sectors)
{
	u64 first, nr, s;
	u32 b;

	rc_range_segs(c, sector, sectors, &first, &nr);
	if (nr <= RC_RANGE_SMALL) {
		/* What it covered went at its start; what it left stays. */
		for (s = first; s < first + nr; s++) {
			b = rc_wb_bucket(c, s);
			if (c->wb_inflight[b])
				c->wb_inflight[b]--;
		}
		return;
	}
	/* Fills were held off and covered ones are stale: nothing cached to drop. */
	if (c->range_inflight)
		c->range_inflight--;
}

enum rc_write_action rc_write_done(struct rc_cache *c, u64 seg, u32 cookie,
				   int error, bool may_update, u32 *idx)
{
	u32 b = rc_wb_bucket(c, seg);
	struct rc_entry *e;
	u32 i;

	if (c->wb_inflight[b])
		c->wb_inflight[b]--;

	i = rc_lookup(c, seg);
	if (i == RC_NONE || c->entries[i].state != RC_VALID)
		return RC_WRITE_DONE;
	e = &c->entries[i];

	/*
	 * Copy only the newest write of the bucket, and never while an earlier
	 * update copy may still be running: two copies could land out of order.
	 */
	if (c->write_policy == RC_WRITE_UPDATE && may_update && !error &&
	    c->wb_gen[b] == cookie && !e->updating) {
		rc_pin(c, i);
		e->updating = 1;
		c->ctr.updates++;
		*idx = i;
		return RC_WRITE_COPY;
	}
	c->ctr.invalidations++;
	rc_invalidate(c, i);
	return RC_WRITE_DONE;
}

bool rc_write_allocate(struct rc_cache *c, u64 seg, u32 cookie, u32 *idx)
{
	u32 b = rc_wb_bucket(c, seg);
	u32 i;

	if (!rc_active(c) || !rc_policy_caware(c->policy) || c->fills_held)
		return false;
	i = rc_lookup(c, seg);
	if (i != RC_NONE && c->entries[i].state != RC_GHOST)
		return false;
	if (c->wb_inflight[b] || c->range_inflight || c->wb_gen[b] != cookie)
		return false;
	if (!rc_caware_caches(rc_caware_rule(&c->caware, true, c->free_head == RC_NONE)))
		return false;
	i = rc_start_fill(c, seg, i, cookie, true, false, false);
	if (i == RC_NONE)
		return false;
	*idx = i;
	return true;
}

/* --- the write cache --------------------------------------------------- */

u64 rc_units(const struct rc_cache *c, u64 sector, u32 sectors, bool whole)
{
	u64 seg_mask = (1ull << c->seg_shift) - 1, unit = 1ull << c->unit_shift;
	u64 off = sector & seg_mask, end = off + sectors;
	u64 u0, u1;

	if (end > seg_mask + 1)
		end = seg_mask + 1;
	u0 = (whole ? off + unit - 1 : off) >> c->unit_shift;
	u1 = (whole ? end : end + unit - 1) >> c->unit_shift;
	if (u1 <= u0)
		return 0;
	return (u1 - u0 >= 64 ? ~0ull : (1ull << (u1 - u0)) - 1) << u0;
}

/* A new entry, VALID with no unit yet, pinned, for a write to @seg (GHOST @ghost or RC_NONE). */
static u32 rc_wc_take(struct rc_cache *c, u64 seg, u32 ghost)
{
	u32 i = rc_take_for(c, seg, ghost, RC_VALID, false, false);

	if (i != RC_NONE)
		c->nr_valid++;
	return i;
}

enum rc_wc_action rc_wc_write(struct rc_cache *c, u64 sector, u32 sectors, bool through,
			      u32 *idx)
{
	u64 seg = sector >> c->seg_shift;
	u64 touched = rc_units(c, sector, sectors, false);
	u64 covered = rc_units(c, sector, sectors, true);
	/*
	 * A write of whole segments is what write-back would send down: it
	 * goes through (sequential 1 MiB writes on the emulated hdd7200 took
	 * 13 % longer cached, docs/results/2026-12-03-wcache-bench.md).
	 */
	bool cache = rc_write_caches(c) && !through && !c->fills_held &&
		     rc_units(c, sector, sectors, true) != c->unit_all;
	u32 i = rc_lookup(c, seg), b = rc_wb_bucket(c, seg);
	struct rc_entry *e = i != RC_NONE ? &c->entries[i] : NULL;
	bool valid = e && e->state == RC_VALID;

	/* Where the writer last wrote, cached or not: a flush's sweep ends there. */
	c->wb_last = seg + 1;
	/*
	 * At the dirty cap, a write that would cache waits for a write to
	 * the disk to end rather than go down itself: the disk then writes
	 * only in write-back's sweep (the random 4 KiB writes of the bench
	 * that went through at the cap cost a full seek each).
	 */
	if (cache && c->nr_dirty >= rc_dirty_max(c) && c->nr_wbusy &&
	    !(valid && (e->on_dirty || e->wbusy)) &&
	    !(touched & ~covered & ~(valid ? e->valid : 0))) {
		c->ctr.write_waits++;
		*idx = i;
		return RC_WC_WAIT;
	}
	if (valid) {
		*idx = i;
		if (e->wbusy)
			return RC_WC_WAIT;
		c->ctr.writes++;
		c->ctr.write_sectors += sectors;
		rc_pin(c, i);
		if (cache && !(touched & ~covered & ~e->valid) &&
		    (e->on_dirty || c->nr_dirty < rc_dirty_max(c))) {
			c->ctr.write_cached++;
			e->wcopies++;
			return RC_WC_CACHE;
		}
		e->wbusy = 1;
		c->nr_wbusy++;
		c->ctr.write_through++;
		return RC_WC_THROUGH;
	}
	/* A fill in flight is made stale by the ordinary path. */
	if (cache && (!e || e->state == RC_GHOST) && !(touched & ~covered) &&
	    c->nr_dirty < rc_dirty_max(c) && !c->wb_inflight[b] && !c->range_inflight) {
		i = rc_wc_take(c, seg, e ? i : RC_NONE);
		if (i != RC_NONE) {
			c->ctr.writes++;
			c->ctr.write_sectors += sectors;
			c->ctr.write_cached++;
			c->entries[i].wcopies++;
			*idx = i;
			return RC_WC_CACHE;
		}
	}
	c->ctr.write_through++;
	return RC_WC_ORIGIN;
}

void rc_wc_copied(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, bool dirty)
{
	struct rc_entry *e;
	u64 touched;

	if (idx >= c->nr_entries)
		return;
	e = &c->entries[idx];
	/* Dropped meanwhile (a discard over it): nothing to keep. */
	if (e->state == RC_VALID) {
		e->valid |= rc_units(c, sector, sectors, true);
		if (dirty) {
			touched = rc_units(c, sector, sectors, false);
			c->dirty_units += rc_popcount64(touched & ~e->dirty);
			e->dirty |= touched;
			if (!e->on_dirty)
				rc_dirty_add(c, idx, false);
		}
	}
	if (dirty) {
		e->wcopies--;
		rc_unpin(c, idx);
	}
}

/* Entry @e's write to the disk is done: writes may go on, a range may not wait for it. */
static void rc_wc_unbusy(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	e->wbusy = 0;
	c->nr_wbusy--;
	if (e->rwait) {		/* a range over part of it waited */
		e->rwait = 0;
		c->wb_orphans--;
	}
	if (e->state == RC_DEAD)
		c->wb_orphans--;
	else if (e->dirty && !e->on_dirty)	/* a failed write-back: oldest, written first */
		rc_dirty_add(c, idx, true);
	rc_unpin(c, idx);
}

void rc_wc_through_done(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, int error)
{
	struct rc_entry *e;
	u64 units;

	if (idx >= c->nr_entries || !c->entries[idx].wbusy)
		return;
	e = &c->entries[idx];
	/*
	 * The origin refused the write, but the copy already holds it: the
	 * copy is what the stack serves, so it is dirty now, written back
	 * like the rest (else dropping it would bring the older data back).
	 */
	if (error && e->state == RC_VALID) {
		units = rc_units(c, sector, sectors, false) & e->valid;
		c->dirty_units += rc_popcount64(units & ~e->dirty);
		e->dirty |= units;
	}
	rc_wc_unbusy(c, idx);
}

/*
 * Put dirty entry @i among @items[0..*got), kept in write-back order: the
 * segments at and after the cursor first, ascending, then those before it
 * (C-SCAN).  A full array keeps the @want first.
 */
static void rc_wb_pick(const struct rc_cache *c, struct rc_wb_item *items, u32 *got, u32 want,
		       u32 i)
{
	u64 seg = c->entries[i].seg, key = seg - c->wb_cursor;
	u32 j = *got;

	if (j == want) {
		if (key >= items[j - 1].seg - c->wb_cursor)
			return;
		j--;
	} else {
		(*got)++;
	}
	for (; j && items[j - 1].seg - c->wb_cursor > key; j--)
		items[j] = items[j - 1];
	items[j] = (struct rc_wb_item){ seg, i };
}

/* The runs of set bits in @m. */
static u32 rc_runs(u64 m)
{
	return rc_popcount64(m & ~(m << 1));
}

u32 rc_wb_take(struct rc_cache *c, const u32 *flush_seq, struct rc_wb_item *items, u32 *n,
	       struct rc_wb_req *reqs, u32 max_reqs, u32 max_sectors)
{
	u32 want = *n, got = 0, nreq = 0, scan = RC_WB_WINDOW, k, i, u, end;
	struct rc_wb_req *r = NULL;
	struct rc_entry *e;
	u64 m, sector, len;

	for (i = c->dirty_tail; i != RC_NONE && scan--; i = c->entries[i].prev) {
		if (flush_seq && (s32)(c->entries[i].dseq - *flush_seq) >= 0)
			break;
		/*
		 * A write copying into it, or one through it in flight: taken
		 * now, it would be dirty again while its write-back flies,
		 * taken twice, and two writes of it could reach the disk out
		 * of order.  Readers' pins do not matter: they only read.
		 */
		if (c->entries[i].wcopies || c->entries[i].wbusy)
			continue;
		rc_wb_pick(c, items, &got, want, i);
	}
	for (k = 0; k < got; k++) {
		e = &c->entries[items[k].idx];
		m = e->dirty;
		if (nreq + rc_runs(m) > max_reqs)
			break;
		e->wb_parts = 0;
		for (u = 0; rc_unit_run(m, &u, &end); u = end) {
			sector = (e->seg << c->seg_shift) + ((u64)u << c->unit_shift);
			len = (u64)(end - u) << c->unit_shift;
			if (r && r->sector + r->sectors == sector && r->sectors + len <= max_sectors) {
				r->sectors += (u32)len;
				if (r->first + r->nr == k)
					r->nr++;
			} else {
				r = &reqs[nreq++];
				*r = (struct rc_wb_req){ sector, (u32)len, k, 1 };
			}
			e->wb_parts++;
		}
	}
	*n = k;
	if (k)
		c->wb_cursor = items[k - 1].seg + 1;
	for (k = 0; k < *n; k++) {
		i = items[k].idx;
		e = &c->entries[i];
		rc_dirty_del(c, i);
		c->dirty_units -= rc_popcount64(e->dirty);
		e->dirty = 0;
		e->wbusy = 1;
		c->nr_wbusy++;
		rc_pin(c, i);
	}
	return nreq;
}

void rc_wb_done(struct rc_cache *c, u32 idx, u64 sector, u32 sectors, int error, bool first)
{
	struct rc_entry *e;
	u64 s0, s1, units;

	if (first) {
		c->ctr.writeback_ios++;
		c->ctr.writeback_sectors += sectors;
		if (error) {
			c->ctr.writeback_errors++;
			c->wb_failed++;
		}
	}
	if (idx >= c->nr_entries || !c->entries[idx].wbusy)
		return;
	e = &c->entries[idx];
	s0 = e->seg << c->seg_shift;
	s1 = s0 + (1ull << c->seg_shift);
	if (sector > s0)
		s0 = sector;
	if (sector + sectors < s1)
		s1 = sector + sectors;
	if (error && e->state == RC_VALID && s1 > s0) {
		/* not those a range dropped meanwhile (rc_range_part()) */
		units = rc_units(c, s0, (u32)(s1 - s0), false) & e->valid;
		c->dirty_units += rc_popcount64(units & ~e->dirty);
		e->dirty |= units;
	}
	if (e->wb_parts && --e->wb_parts)
		return;
	rc_wc_unbusy(c, idx);
}

bool rc_wb_due(const struct rc_cache *c, bool idle)
{
	return c->nr_dirty && (idle || !rc_write_caches(c) || c->nr_dirty >= rc_dirty_max(c));
}

bool rc_wb_flush_direct(struct rc_cache *c)
{
	if (c->nr_dirty || c->nr_wbusy)
		return false;
	c->ctr.flushes++;
	return true;
}

u32 rc_wb_flush_seq(struct rc_cache *c)
{
	c->ctr.flushes++;
	if (c->wb_last)
		c->wb_cursor = c->wb_last;
	return c->dirty_seq + 1;
}

/* --- HDC's pinned set -------------------------------------------------- */

enum rc_hdc_pin rc_hdc_pin(struct rc_cache *c, u64 seg, u32 *idx)
{
	u32 i = rc_lookup(c, seg), b = rc_wb_bucket(c, seg);
	struct rc_entry *e = i != RC_NONE ? &c->entries[i] : NULL;

	if (e && e->hdc)
		return RC_HDC_PINNED;
	if (c->nr_hdc >= rc_hdc_max(c))
		return RC_HDC_FULL;
	if (e && e->state != RC_GHOST) {
		rc_hdc_take(c, i);
		return RC_HDC_PINNED;
	}
	if (c->fills_held || c->wb_inflight[b] || c->range_inflight)
		return RC_HDC_BUSY;
	i = rc_start_fill(c, seg, i, c->wb_gen[b], false, false, false);
	if (i == RC_NONE)
		return RC_HDC_BUSY;
	c->entries[i].hfill = 1;
	rc_hdc_take(c, i);
	c->ctr.hdc_fills++;
	*idx = i;
	return RC_HDC_FILL;
}

/* Unpin pinned entry @i: back on the LRU, most recent, when on a list. */
static void rc_hdc_drop_pin(struct rc_cache *c, u32 i)
{
	struct rc_entry *e = &c->entries[i];
	bool listed = e->on_list;

	if (listed)
		rc_lru_del(c, i);
	e->hdc = 0;
	c->nr_hdc--;
	if (listed)
		rc_list_put(c, i);
}

bool rc_hdc_unpin(struct rc_cache *c, u64 seg)
{
	u32 i = rc_lookup(c, seg);

	if (i == RC_NONE || !c->entries[i].hdc)
		return false;
	rc_hdc_drop_pin(c, i);
	return true;
}

bool rc_hdc_pinned(const struct rc_cache *c, u64 seg)
{
	u32 i = rc_lookup(c, seg);

	return i != RC_NONE && c->entries[i].hdc;
}

void rc_hdc_want(struct rc_cache *c, const u64 *want, u32 n)
{
	c->hdc_want = n ? want : NULL;
	c->hdc_nwant = want ? n : 0;
}

u32 rc_hdc_keep(struct rc_cache *c, const u64 *keep, u32 n, u32 from, u32 budget)
{
	u32 end = from + budget < c->nr_entries && from + budget > from ? from + budget :
		  c->nr_entries;

	for (; from < end; from++)
		if (c->entries[from].hdc && !rc_hdc_kept(keep, n, c->entries[from].seg))
			rc_hdc_drop_pin(c, from);
	return end;
}

bool rc_drop_some(struct rc_cache *c, u32 budget)
{
	u32 i;

	/* HDC's pinned segments go last, and go: drop_cache drops all. */
	while ((i = rc_victim(c)) != RC_NONE || (i = c->hdc_head) != RC_NONE) {
		if (!budget--)
			return false;
		if (c->entries[i].state == RC_GHOST) {
			rc_ghost_drop(c, i);
			continue;
		}
		rc_lru_del(c, i);
		rc_hash_del(c, i);
		c->nr_valid--;
		rc_free_push(c, i);
	}
	rc_budget_cold(&c->budget);	/* what it earned was earned on what is gone */
	memset(&c->refused, 0, sizeof(c->refused));
	rc_streams_init(&c->streams);
	return true;
}

u32 rc_drop_all(struct rc_cache *c)
{
	rc_drop_some(c, c->nr_entries);
	return c->nr_pinned;
}

bool rc_idle(const struct rc_cache *c)
{
	return !c->nr_filling && !c->nr_pinned;
}

/* The entries that keep a buffer while the cache gives them back: HDC's share. */
static u32 rc_bare_keep(const struct rc_cache *c)
{
	return c->hdc_nwant ? rc_hdc_max(c) : 0;
}

u32 rc_givable(const struct rc_cache *c)
{
	u32 held = c->nr_entries - c->nr_bare, busy = c->nr_pinned + c->nr_hdc;

	if (!rc_may_give_back(c))
		return 0;
	busy = busy > rc_bare_keep(c) ? busy : rc_bare_keep(c);
	return held > busy ? held - busy : 0;
}

/* Entry @i's buffer may go: it holds nothing the cache serves. */
static bool rc_idle_buffer(const struct rc_cache *c, u32 i)
{
	const struct rc_entry *e = &c->entries[i];

	if (e->bare || !e->on_list || e->hdc)
		return false;
	return e->state == RC_GHOST || (e->state == RC_VALID && !rc_holds_newer(c, e));
}

u32 rc_give_back(struct rc_cache *c, u32 *from, u32 budget, u32 *out, u32 max)
{
	u32 n = 0, i;
	struct rc_entry *e;

	if (!rc_may_give_back(c))
		return 0;
	while (n < max && c->nr_entries - c->nr_bare > rc_bare_keep(c)) {
		i = rc_free_pop(c);
		if (i == RC_NONE) {
			if (!budget--)
				break;
			i = (*from)++;
			if (*from >= c->nr_entries)
				*from = 0;
			if (!rc_idle_buffer(c, i))
				continue;
		}
		e = &c->entries[i];
		e->bare = 1;
		c->nr_bare++;
		c->ctr.given_back++;
		out[n++] = i;
		if (e->state == RC_FREE) {
			rc_free_push(c, i);		/* onto the bare list */
		} else if (e->state == RC_VALID && e->on_prob) {
			rc_lru_del(c, i);		/* unread, filled ahead: the next victim */
			rc_hash_del(c, i);
			c->nr_valid--;
			rc_free_push(c, i);
		} else if (e->state == RC_VALID) {
			rc_ahead_end(c, e, false);	/* the simulated cache holds it still */
			e->state = RC_GHOST;
			e->gahead = 0;
			c->nr_valid--;
			c->nr_ghost++;
		}
	}
	return n;
}

bool rc_regrow_due(const struct rc_cache *c)
{
	return c->nr_bare &&
	       (!rc_may_give_back(c) || c->nr_entries - c->nr_bare < rc_bare_keep(c));
}

void rc_regrown(struct rc_cache *c, u32 idx)
{
	struct rc_entry *e = &c->entries[idx];

	if (!e->bare)
		return;
	e->bare = 0;
	c->nr_bare--;
	c->ctr.regrown++;
	if (e->state == RC_FREE && e->on_list) {
		rc_list_del(c, &c->bare_head, &c->bare_tail, idx);
		rc_free_push(c, idx);
	}
}

void rc_reset_counters(struct rc_cache *c)
{
	memset(&c->ctr, 0, sizeof(c->ctr));
	if (c->hot) {		/* HDC's counts are the period's statistics too */
		rc_hot_clear(c->hot);
		c->hot_aging = RC_HOT_IDLE;
		memset(c->hot_visit, 0, sizeof(c->hot_visit));
	}
	rc_adapt_reset_stats(&c->adapt);
	rc_caware_reset_stats(&c->caware);
	rc_budget_reset_stats(&c->budget);
}

/* The core's own tunables: the read-ahead's (rc_prefetch()) and HDC's. */
static u32 *rc_core_tunable(struct rc_cache *c, enum rc_tunable key)
{
	switch (key) {
	case RC_TUN_PREFETCH:
		return &c->prefetch;
	case RC_TUN_HDC:
		return &c->hdc_share;
	case RC_TUN_HOT_PERIOD:
		return &c->hot_period_s;
	case RC_TUN_DIRTY:
		return &c->dirty_share;
	default:
		return NULL;
	}
}

void rc_set_tunable(struct rc_cache *c, enum rc_tunable key, u32 value)
{
	u32 *t;

	if (!rc_adapt_set(&c->adapt, key, value) && !rc_caware_set(&c->caware, key, value) &&
	    !rc_budget_set(&c->budget, key, value)) {
		t = rc_core_tunable(c, key);
		if (t)
			*t = value;
	}
}

u32 rc_get_tunable(const struct rc_cache *c, enum rc_tunable key)
{
	u32 v = 0, *t;

	if (!rc_adapt_get(&c->adapt, key, &v) && !rc_caware_get(&c->caware, key, &v) &&
	    !rc_budget_get(&c->budget, key, &v)) {
		t = rc_core_tunable((struct rc_cache *)c, key);
		v = t ? *t : 0;
	}
	return v;
}

void rc_set_policy(struct rc_cache *c, enum rc_policy p)
{
	c->policy = p;
	c->adapt.switching = p == RC_POLICY_ADAPTIVE || p == RC_POLICY_ADAPTIVE_CAWARE;
	if (!c->adapt.switching)
		rc_adapt_set_active(&c->adapt, p != RC_POLICY_OFF);
}

const char *rc_geometry(u32 seg_sectors, u32 nr_segs, u32 page_shift, u64 max_bytes,
			struct rc_geometry *g)
{
	u64 page = (u64)1 << page_shift;

	memset(g, 0, sizeof(*g));
	g->seg_bytes = (u64)seg_sectors << 9;
	if (!seg_sectors || (seg_sectors & (seg_sectors - 1)))
		return "Segment size must be a power of 2";
	if (g->seg_bytes < page)
		return "Segment size smaller than a page";
	/* Both are powers of two: a segment is a whole number of pages. */
	g->pages_per_seg = (u32)(g->seg_bytes >> page_shift);
	g->nr_pages = (u64)g->pages_per_seg * nr_segs;	/* < 2^56: no wrap */
	g->data_bytes = g->seg_bytes * nr_segs;
	if (g->data_bytes > max_bytes ||
	    g->nr_pages > max_bytes / sizeof(void *) ||
	    (u64)nr_segs * 64 > max_bytes)	/* the per-segment arrays */
		return "Cache size too large for this machine";
	return NULL;
}

int rc_policy_parse(const char *name)
{
	int p;

	for (p = 0; p < RC_POLICY_NR; p++)
		if (rc_streq(name, rc_policy_name((enum rc_policy)p)))
			return p;
	return -1;
}

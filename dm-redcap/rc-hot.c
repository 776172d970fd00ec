// SPDX-License-Identifier: GPL-2.0
/*
 * HDC's miss counter: exact saturating counters or a Space-Saving sketch
 * (a min-heap of slots and a region -> slot hash); see rc-hot.h.
 */
#include "rc-hot.h"

#define RC_HOT_NONE	0xffffffffu	/* no slot */

/* Slots clamped to 1..RC_HOT_SLOTS_MAX, as rc_hot_mem_size() promises. */
static u32 rc_hot_clamp(u32 slots)
{
	if (!slots)
		return 1;
	return slots < RC_HOT_SLOTS_MAX ? slots : RC_HOT_SLOTS_MAX;
}

/* Log2 of the hash's buckets for @slots slots: the power of two >= 2 * slots. */
static u32 rc_hot_table_bits(u32 slots)
{
	u32 bits = 1;

	while ((1ull << bits) < 2ull * slots)
		bits++;
	return bits;
}

/* Bytes of a sketch of @slots (clamped) slots. */
static u64 rc_hot_sketch_bytes(u32 slots)
{
	return (u64)slots * (sizeof(struct rc_hot_entry) + 2 * sizeof(u32)) +
	       (sizeof(u32) << rc_hot_table_bits(slots));
}

/* Exact counters are no bigger than the sketch. */
static bool rc_hot_fits_exact(u64 nr_regions, u32 slots)
{
	return nr_regions <= rc_hot_sketch_bytes(slots) / sizeof(u16);
}

size_t rc_hot_mem_size(u64 nr_regions, u32 slots)
{
	slots = rc_hot_clamp(slots);
	if (rc_hot_fits_exact(nr_regions, slots))
		return (size_t)(nr_regions * sizeof(u16));
	return (size_t)rc_hot_sketch_bytes(slots);
}

void rc_hot_init(struct rc_hot *h, void *mem, u64 nr_regions, u32 slots)
{
	slots = rc_hot_clamp(slots);
	memset(h, 0, sizeof(*h));
	h->nr_regions = nr_regions;
	h->exact = rc_hot_fits_exact(nr_regions, slots);
	if (h->exact) {
		h->cnt = mem;
		return;
	}
	h->slots = slots;
	h->table_bits = rc_hot_table_bits(slots);
	h->slot = mem;
	h->heap = (u32 *)(h->slot + slots);
	h->hpos = h->heap + slots;
	h->table = h->hpos + slots;
}

void rc_hot_clear(struct rc_hot *h)
{
	if (h->exact)
		memset(h->cnt, 0, (size_t)h->nr_regions * sizeof(*h->cnt));
	else
		memset(h->slot, 0, (size_t)rc_hot_sketch_bytes(h->slots));
	h->used = 0;
	h->total = 0;
}

bool rc_hot_exact(const struct rc_hot *h)
{
	return h->exact;
}

u64 rc_hot_total(const struct rc_hot *h)
{
	return h->total;
}

/* --- the hash: region -> slot ----------------------------------------------- */

static u32 rc_hot_next_bucket(const struct rc_hot *h, u32 b)
{
	return (b + 1) & ((1u << h->table_bits) - 1);
}

/* The bucket holding @region, or RC_HOT_NONE. */
static u32 rc_hot_find_bucket(const struct rc_hot *h, u64 region)
{
	u32 b = rc_hot_bucket(region, h->table_bits);

	for (; h->table[b]; b = rc_hot_next_bucket(h, b))
		if (h->slot[h->table[b] - 1].region == region)
			return b;
	return RC_HOT_NONE;
}

/* The slot holding @region, or RC_HOT_NONE. */
static u32 rc_hot_find(const struct rc_hot *h, u64 region)
{
	u32 b = rc_hot_find_bucket(h, region);

	return b == RC_HOT_NONE ? RC_HOT_NONE : h->table[b] - 1;
}

/* Slot @s, holding a region not in the hash, enters it. */
static void rc_hot_hash_add(struct rc_hot *h, u32 s)
{
	u32 b = rc_hot_bucket(h->slot[s].region, h->table_bits);

	while (h->table[b])
		b = rc_hot_next_bucket(h, b);
	h->table[b] = s + 1;
}

/*
 * @region (held) leaves the hash.  Backward-shift deletion: each entry
 * after the hole, up to the next empty bucket, moves into the hole unless
 * its home bucket lies cyclically in (hole, its bucket], so that no probe
 * sequence crosses an empty bucket.
 */
static void rc_hot_hash_del(struct rc_hot *h, u64 region)
{
	u32 hole = rc_hot_find_bucket(h, region), b = hole, home;

	for (;;) {
		b = rc_hot_next_bucket(h, b);
		if (!h->table[b])
			break;
		home = rc_hot_bucket(h->slot[h->table[b] - 1].region, h->table_bits);
		if (hole <= b ? hole < home && home <= b : hole < home || home <= b)
			continue;
		h->table[hole] = h->table[b];
		hole = b;
	}
	h->table[hole] = 0;
}

/* --- the heap: slots by count, least at the root -------------------------- */

static u32 rc_hot_key(const struct rc_hot *h, u32 p)
{
	return h->slot[h->heap[p]].count;
}

static void rc_hot_heap_swap(struct rc_hot *h, u32 p, u32 q)
{
	u32 s = h->heap[p];

	h->heap[p] = h->heap[q];
	h->heap[q] = s;
	h->hpos[h->heap[p]] = p;
	h->hpos[h->heap[q]] = q;
}

static void rc_hot_sift_up(struct rc_hot *h, u32 p)
{
	u32 q;

	while (p) {
		q = (p - 1) / 2;
		if (rc_hot_key(h, q) <= rc_hot_key(h, p))
			return;
		rc_hot_heap_swap(h, p, q);
		p = q;
	}
}

static void rc_hot_sift_down(struct rc_hot *h, u32 p)
{
	u32 c;

	for (;;) {
		c = 2 * p + 1;
		if (c >= h->used)
			return;
		if (c + 1 < h->used && rc_hot_key(h, c + 1) < rc_hot_key(h, c))
			c++;
		if (rc_hot_key(h, c) >= rc_hot_key(h, p))
			return;
		rc_hot_heap_swap(h, p, c);
		p = c;
	}
}

/*
 * Free slot @s: out of the hash and the heap, and the last slot moved into
 * it so that slots 0..used-1 stay the held ones.
 */
static void rc_hot_free_slot(struct rc_hot *h, u32 s)
{
	u32 p = h->hpos[s], last, moved;

	rc_hot_hash_del(h, h->slot[s].region);
	h->used--;
	/*
	 * The heap's last position fills the hole at p; it moves up or, if
	 * it stays, down (moving up, it is below p's old children already).
	 */
	if (p < h->used) {
		moved = h->heap[h->used];
		h->heap[p] = moved;
		h->hpos[moved] = p;
		rc_hot_sift_up(h, p);
		if (h->hpos[moved] == p)
			rc_hot_sift_down(h, p);
	}
	last = h->used;
	if (s != last) {
		h->slot[s] = h->slot[last];
		h->hpos[s] = h->hpos[last];
		h->heap[h->hpos[s]] = s;
		h->table[rc_hot_find_bucket(h, h->slot[s].region)] = s + 1;
	}
	memset(&h->slot[last], 0, sizeof(h->slot[last]));
}

/* --- counting --------------------------------------------------------------- */

static void rc_hot_ss_miss(struct rc_hot *h, u64 region)
{
	u32 s = rc_hot_find(h, region);
	struct rc_hot_entry *e;

	if (s != RC_HOT_NONE) {
		e = &h->slot[s];
		if (e->count < RC_HOT_SS_MAX) {
			e->count++;
			h->total++;
			rc_hot_sift_down(h, h->hpos[s]);
		}
		return;
	}
	if (h->used < h->slots) {
		s = h->used++;
		h->slot[s] = (struct rc_hot_entry){ .region = region, .count = 1 };
		h->heap[s] = s;
		h->hpos[s] = s;
		rc_hot_hash_add(h, s);
		rc_hot_sift_up(h, s);
		h->total++;
		return;
	}
	/* Full: the region takes over the slot of least count. */
	s = h->heap[0];
	e = &h->slot[s];
	rc_hot_hash_del(h, e->region);
	e->region = region;
	e->err = e->count;
	if (e->count < RC_HOT_SS_MAX) {
		e->count++;
		h->total++;
	}
	rc_hot_hash_add(h, s);
	rc_hot_sift_down(h, 0);
}

void rc_hot_miss(struct rc_hot *h, u64 region)
{
	if (region >= h->nr_regions)
		return;
	if (!h->exact) {
		rc_hot_ss_miss(h, region);
	} else if (h->cnt[region] < RC_HOT_EXACT_MAX) {
		h->cnt[region]++;
		h->total++;
	}
}

u32 rc_hot_count(const struct rc_hot *h, u64 region, u32 *err)
{
	u32 s;

	if (err)
		*err = 0;
	if (region >= h->nr_regions)
		return 0;
	if (h->exact)
		return h->cnt[region];
	s = rc_hot_find(h, region);
	if (s == RC_HOT_NONE)
		return 0;
	if (err)
		*err = h->slot[s].err;
	return h->slot[s].count;
}

/* --- aging ---------------------------------------------------------------- */

u64 rc_hot_age_end(const struct rc_hot *h)
{
	return h->exact ? h->nr_regions : h->slots;
}

static u64 rc_hot_age_exact(struct rc_hot *h, u64 from, u64 budget)
{
	u64 i, end = from + (budget < h->nr_regions - from ? budget : h->nr_regions - from);

	for (i = from; i < end; i++) {
		h->total -= h->cnt[i] - h->cnt[i] / 2;
		h->cnt[i] /= 2;
	}
	return end;
}

/*
 * Slots from @from on, in slot order: halving a count moves its slot up
 * the heap, and a slot freed takes the last one, not yet seen, in its
 * place, to be seen next.
 */
static u64 rc_hot_age_ss(struct rc_hot *h, u64 from, u64 budget)
{
	struct rc_hot_entry *e;
	u32 i = (u32)from;

	for (; budget && i < h->used; budget--) {
		e = &h->slot[i];
		h->total -= e->count - e->count / 2;
		e->count /= 2;
		e->err = e->err / 2 + (e->err & 1);
		if (e->err > e->count)
			e->err = e->count;
		if (!e->count) {
			rc_hot_free_slot(h, i);
			continue;
		}
		rc_hot_sift_up(h, h->hpos[i]);
		i++;
	}
	return i < h->used ? i : h->slots;
}

u64 rc_hot_age_some(struct rc_hot *h, u64 from, u64 budget)
{
	u64 end = rc_hot_age_end(h);

	if (from >= end)
		return end;
	return h->exact ? rc_hot_age_exact(h, from, budget) : rc_hot_age_ss(h, from, budget);
}

/* --- the top regions -------------------------------------------------------- */

/* @a ranks below @b: a lower count, or the same count and a higher region. */
static bool rc_hot_below(const struct rc_hot_entry *a, const struct rc_hot_entry *b)
{
	return a->count < b->count || (a->count == b->count && a->region > b->region);
}

static void rc_hot_entry_swap(struct rc_hot_entry *a, struct rc_hot_entry *b)
{
	struct rc_hot_entry t = *a;

	*a = *b;
	*b = t;
}

/* In @out[0..k-1], a heap with the lowest-ranked at 0: sift @p down. */
static void rc_hot_top_down(struct rc_hot_entry *out, u32 k, u32 p)
{
	u32 c;

	for (;;) {
		c = 2 * p + 1;
		if (c >= k)
			return;
		if (c + 1 < k && rc_hot_below(&out[c + 1], &out[c]))
			c++;
		if (!rc_hot_below(&out[c], &out[p]))
			return;
		rc_hot_entry_swap(&out[c], &out[p]);
		p = c;
	}
}

/* Offer @e to the @n best kept in @out (*@k of them so far). */
static void rc_hot_top_offer(struct rc_hot_entry *out, u32 n, u32 *k,
			     const struct rc_hot_entry *e)
{
	u32 p, q;

	if (*k < n) {
		p = (*k)++;
		out[p] = *e;
		while (p) {
			q = (p - 1) / 2;
			if (!rc_hot_below(&out[p], &out[q]))
				break;
			rc_hot_entry_swap(&out[p], &out[q]);
			p = q;
		}
	} else if (rc_hot_below(&out[0], e)) {
		out[0] = *e;
		rc_hot_top_down(out, *k, 0);
	}
}

u32 rc_hot_top(const struct rc_hot *h, u32 n, struct rc_hot_entry *out)
{
	struct rc_hot_entry e = { 0 };
	u32 k = 0, m, s;
	u64 r;

	if (!n)
		return 0;
	if (h->exact) {
		for (r = 0; r < h->nr_regions; r++) {
			if (!h->cnt[r])
				continue;
			e.region = r;
			e.count = h->cnt[r];
			rc_hot_top_offer(out, n, &k, &e);
		}
	} else {
		for (s = 0; s < h->used; s++)
			if (h->slot[s].count)
				rc_hot_top_offer(out, n, &k, &h->slot[s]);
	}
	/* Heapsort: the lowest-ranked goes to the back each time. */
	for (m = k; m > 1; m--) {
		rc_hot_entry_swap(&out[0], &out[m - 1]);
		rc_hot_top_down(out, m - 1, 0);
	}
	return k;
}

/* --- HDC's choice -------------------------------------------------------- */

/* @a ranks before @b: by score (count x 4, x 5 pinned), then region. */
static bool rc_hdc_before(const struct rc_hdc_cand *a, const struct rc_hdc_cand *b,
			  bool by_region)
{
	u64 sa = (u64)a->count * (4 + a->pinned), sb = (u64)b->count * (4 + b->pinned);

	if (!by_region && sa != sb)
		return sa > sb;
	return a->region < b->region;
}

static void rc_hdc_sift(struct rc_hdc_cand *c, u32 n, u32 p, bool by_region)
{
	struct rc_hdc_cand t;
	u32 q;

	/* A heap whose root ranks last: popped to the end, it sorts in rank order. */
	while ((q = 2 * p + 1) < n) {
		if (q + 1 < n && rc_hdc_before(&c[q], &c[q + 1], by_region))
			q++;
		if (!rc_hdc_before(&c[p], &c[q], by_region))
			return;
		t = c[p];
		c[p] = c[q];
		c[q] = t;
		p = q;
	}
}

static void rc_hdc_sort(struct rc_hdc_cand *c, u32 n, bool by_region)
{
	struct rc_hdc_cand t;
	u32 i;

	for (i = n / 2; i--;)
		rc_hdc_sift(c, n, i, by_region);
	for (i = n; i-- > 1;) {
		t = c[0];
		c[0] = c[i];
		c[i] = t;
		rc_hdc_sift(c, i, 0, by_region);
	}
}

u32 rc_hdc_choose(struct rc_hdc_cand *cand, u32 n, u32 max)
{
	u32 k = 0;

	rc_hdc_sort(cand, n, false);
	while (k < n && k < max && cand[k].count >= RC_HDC_MIN_COUNT)
		k++;
	rc_hdc_sort(cand, k, true);
	return k;
}

u32 rc_hdc_merge(const u64 *set, u32 n, const u64 *add, u32 nadd, u32 max, u64 *out)
{
	u32 room = max > n ? max - n : 0, i = 0, j = 0, k = 0;

	while (i < n || (j < nadd && room)) {
		if (j < nadd && room && (i == n || add[j] < set[i])) {
			/* new, unless a repeat of what was just put */
			if (!k || out[k - 1] != add[j]) {
				out[k++] = add[j];
				room--;
			}
			j++;
		} else {
			if (j < nadd && add[j] == set[i])
				j++;
			out[k++] = set[i++];
		}
	}
	return k;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Portable core of redcap's adaptive policies: activation-deactivation
 * (REDCAP) and C-Aware placement.  See rc-policy.h and docs/redcap.rst.
 */
#include "rc-policy.h"
#include "rc-parse.h"

#define RC_U32_MAX		0xffffffffu
#define RC_MAX_SAMPLE_NS	1000000000000ull	/* 1000 s: beyond is a stall */
#define RC_COPY_HALVE_SECTORS	(1ull << 24)

static u64 rc_clamp_ns(u64 ns)
{
	return ns > RC_MAX_SAMPLE_NS ? RC_MAX_SAMPLE_NS : ns;
}

/* --- seconds per KiB -------------------------------------------------- */

void rc_spk_add(struct rc_spk *s, u32 sectors, u64 ns)
{
	ns = rc_clamp_ns(ns);
	if (s->count == RC_SPK_DEPTH) {
		s->sum_ns -= s->ns[s->next];
		s->sum_sectors -= s->sectors[s->next];
	} else {
		s->count++;
	}
	s->ns[s->next] = ns;
	s->sectors[s->next] = sectors;
	s->sum_ns += ns;
	s->sum_sectors += sectors;
	s->next = (s->next + 1) % RC_SPK_DEPTH;
}

bool rc_spk_estimate(const struct rc_spk *s, u32 sectors, u64 *ns)
{
	if (!s->sum_sectors) {
		*ns = 0;
		return false;
	}
	*ns = rc_div64(s->sum_ns * sectors, s->sum_sectors);
	return true;
}

/* The pool of a request at @sector after one that ended at @next. */
static int rc_spk_pool(u64 next, u64 sector)
{
	return sector >= next && sector - next <= RC_SPK_NEAR ? RC_SPK_NEAR_POOL : RC_SPK_FAR_POOL;
}

/*
 * Price @sectors with pool @p of @mine; while it has no sample, the other
 * distance of @mine, then the same and the other distance of @other.
 */
static bool rc_spk_price(const struct rc_spk *mine, const struct rc_spk *other, int p,
			 u32 sectors, u64 *ns)
{
	return rc_spk_estimate(&mine[p], sectors, ns) ||
	       rc_spk_estimate(&mine[!p], sectors, ns) ||
	       rc_spk_estimate(&other[p], sectors, ns) ||
	       rc_spk_estimate(&other[!p], sectors, ns);
}

/* --- activation-deactivation ------------------------------------------- */

static void rc_adapt_new_window(struct rc_adapt *a)
{
	a->reads = 0;
	a->served = 0;
	a->unpriced = 0;
	a->cache_ns = 0;
	a->disk_ns = 0;
}

void rc_adapt_init(struct rc_adapt *a)
{
	memset(a, 0, sizeof(*a));
	a->window = RC_ADAPT_WINDOW;
	a->margin = RC_ADAPT_MARGIN;
	a->dwell = RC_ADAPT_DWELL;
	a->estimator = RC_EST_SPK;
	a->active = true;
	a->since_switch = RC_U32_MAX;	/* the first window may switch */
	a->first = true;
}

bool rc_adapt_set(struct rc_adapt *a, enum rc_tunable key, u32 value)
{
	switch (key) {
	case RC_TUN_WINDOW:
		a->window = value;
		return true;
	case RC_TUN_MARGIN:
		a->margin = value;
		return true;
	default:
		return false;
	}
}

bool rc_adapt_get(const struct rc_adapt *a, enum rc_tunable key, u32 *value)
{
	switch (key) {
	case RC_TUN_WINDOW:
		*value = a->window;
		return true;
	case RC_TUN_MARGIN:
		*value = a->margin;
		return true;
	default:
		return false;
	}
}

void rc_adapt_reset_stats(struct rc_adapt *a)
{
	rc_adapt_new_window(a);
	a->switches = 0;
	a->windows = 0;
	a->windows_unjudged = 0;
	a->total_cache_ns = 0;
	a->total_disk_ns = 0;
	a->last_cache_ns = 0;
	a->last_disk_ns = 0;
}

/* A new state: an active spell starts with no evidence. */
static void rc_adapt_new_spell(struct rc_adapt *a)
{
	a->since_switch = 0;
	a->spell_cache_ns = 0;
	a->spell_disk_ns = 0;
}

void rc_adapt_set_active(struct rc_adapt *a, bool active)
{
	if (a->active != active)
		rc_adapt_new_spell(a);
	a->active = active;
	rc_adapt_new_window(a);
}

/*
 * Add the window just judged to the active spell: the sums decay by
 * 1/RC_ADAPT_SPELL a window, so the last RC_ADAPT_SPELL windows or so
 * weigh, and a change of the reads is seen within them.
 */
static void rc_adapt_spell_add(struct rc_adapt *a)
{
	a->spell_cache_ns -= a->spell_cache_ns / RC_ADAPT_SPELL;
	a->spell_disk_ns -= a->spell_disk_ns / RC_ADAPT_SPELL;
	a->spell_cache_ns += a->cache_ns;
	a->spell_disk_ns += a->disk_ns;
}

/* The learnt RAM copy time of @sectors (0 until a hit was timed). */
static u64 rc_adapt_copy_estimate(const struct rc_adapt *a, u32 sectors)
{
	return a->copy_sectors ? rc_div64(a->copy_ns * sectors, a->copy_sectors) : 0;
}

/*
 * spk prices reads that reach the disk as received with the rate of such
 * reads (the bare pools), fills with the rate of fills, each at its
 * distance.  The paper's v1 used the rate of whatever reached the disk
 * last, i.e. the fills while active, which the drive's own read-ahead
 * makes cheap: strided reads then look cheaper on the bare disk than they
 * are, the cache goes off, and comes back on once the bare reads are
 * measured; the state flaps.  A pool with no sample yet borrows as
 * rc_spk_price() says.
 */

/*
 * Windows a state holds after a switch before it is judged: the inactive
 * state the dwell; the active one its spell's horizon, RC_ADAPT_SPELL.
 * A spell starts with the fills that bring a cold cache up to its streams
 * (their batches ahead are charged to the windows that start them) and
 * repays them over the windows after; judged after the dwell, a cache of
 * 512 KiB or 1 MiB segments went off on its start and came back on one
 * simulated window, hundreds of times a run (docs/redcap.rst).
 */
static u32 rc_adapt_hold(const struct rc_adapt *a)
{
	return a->active ? RC_ADAPT_SPELL : a->dwell;
}

static bool rc_adapt_judge(struct rc_adapt *a)
{
	bool sw = false;

	a->first = false;
	a->windows++;
	if (a->since_switch < RC_U32_MAX)
		a->since_switch++;
	if (a->unpriced * 2 > a->reads || !a->disk_ns) {
		a->windows_unjudged++;
	} else {
		a->last_cache_ns = a->cache_ns;
		a->last_disk_ns = a->disk_ns;
		a->total_cache_ns += a->cache_ns;
		a->total_disk_ns += a->disk_ns;
		if (a->switching && a->active)
			rc_adapt_spell_add(a);
		if (a->switching && a->since_switch > rc_adapt_hold(a)) {
			if (a->active)
				sw = a->spell_cache_ns * 100 > a->spell_disk_ns * (100 + a->margin);
			else
				sw = a->cache_ns * 100 < a->disk_ns * (100 - a->margin);
		}
	}
	if (sw) {
		a->active = !a->active;
		a->switches++;
		rc_adapt_new_spell(a);
	}
	rc_adapt_new_window(a);
	return sw;
}

/*
 * Estimator vdisk: both sides are priced by the same latency model, the
 * bare disk on the stream redcap received and the cache on the stream the
 * cache sends down (real while active, simulated while inactive), so a
 * bias of the model, or of where it measures, falls on both alike.
 */
static bool rc_adapt_read_vdisk(struct rc_adapt *a, u32 sectors, enum rc_sim sim,
				u64 vd_ns, bool vd_ok, u64 cvd_ns, bool cvd_ok)
{
	a->disk_ns += vd_ns;
	a->cache_ns += cvd_ns;
	if (sim == RC_SIM_HIT || sim == RC_SIM_MISS)
		a->cache_ns += rc_adapt_copy_estimate(a, sectors);
	return vd_ok && cvd_ok;
}

/*
 * Estimator spk: the side the state lets happen is measured (the disk
 * reads in rc_adapt_disk_done(), the copies in rc_adapt_copy()); the
 * other is priced with the learnt rates.
 */
static bool rc_adapt_read_spk(struct rc_adapt *a, u64 sector, u32 sectors, u32 seg_sectors,
			      enum rc_sim sim)
{
	u64 start = sector & ~(u64)(seg_sectors - 1);
	bool ok = true;
	u64 ns = 0;

	switch (sim) {
	case RC_SIM_NONE:	/* active: the cache side is measured */
		ok = rc_spk_price(a->bare, a->fill, rc_spk_pool(a->recv_next, sector),
				  sectors, &ns);
		a->disk_ns += ns;
		break;
	case RC_SIM_HIT:	/* inactive: the disk side is measured */
		a->cache_ns += rc_adapt_copy_estimate(a, sectors);
		break;
	case RC_SIM_MISS:
		ok = rc_spk_price(a->fill, a->bare, rc_spk_pool(a->sim_next, start),
				  seg_sectors, &ns);
		a->cache_ns += ns + rc_adapt_copy_estimate(a, sectors);
		a->sim_next = start + seg_sectors;
		break;
	case RC_SIM_BYPASS:	/* would have gone to the disk as received */
		ok = rc_spk_price(a->bare, a->fill, rc_spk_pool(a->sim_next, sector),
				  sectors, &ns);
		a->cache_ns += ns;
		a->sim_next = sector + sectors;
		break;
	}
	return ok;
}

/*
 * Whether the first window is judged now, early (RC_ADAPT_EARLY_DIV).
 * Estimator vdisk only: spk prices the simulated cache's fills, once
 * inactive, at the rates it measured of the fills, and a quarter window
 * of them is too few (a guest test saw it come back on random reads).
 */
static bool rc_adapt_early(const struct rc_adapt *a)
{
	return a->first && a->switching && a->estimator == RC_EST_VDISK &&
	       a->active && !a->served &&
	       a->reads == a->window / RC_ADAPT_EARLY_DIV;
}

bool rc_adapt_read(struct rc_adapt *a, u64 sector, u32 sectors, u32 seg_sectors,
		   enum rc_sim sim, u64 vd_ns, bool vd_ok, u64 cvd_ns, bool cvd_ok)
{
	bool ok;

	if (a->estimator == RC_EST_VDISK)
		ok = rc_adapt_read_vdisk(a, sectors, sim, vd_ns, vd_ok, cvd_ns, cvd_ok);
	else
		ok = rc_adapt_read_spk(a, sector, sectors, seg_sectors, sim);
	a->recv_next = sector + sectors;
	if (!ok)
		a->unpriced++;
	if (++a->reads < a->window && !rc_adapt_early(a))
		return false;
	return rc_adapt_judge(a);
}

void rc_adapt_disk_done(struct rc_adapt *a, enum rc_disk_kind kind, u64 sector,
			u32 sectors, u64 ns)
{
	int p = rc_spk_pool(a->disk_next, sector);

	ns = rc_clamp_ns(ns);
	a->disk_next = sector + sectors;
	rc_spk_add(kind == RC_DISK_FILL ? &a->fill[p] : &a->bare[p], sectors, ns);
	if (a->estimator == RC_EST_VDISK)
		return;		/* both sides come from the model */
	if (a->active)
		a->cache_ns += ns;	/* all the cache made the disk do */
	else if (kind == RC_DISK_BARE)
		a->disk_ns += ns;	/* the bare disk at work */
}

void rc_adapt_copy(struct rc_adapt *a, u32 sectors, u64 ns)
{
	ns = rc_clamp_ns(ns);
	if (a->copy_sectors >= RC_COPY_HALVE_SECTORS) {
		a->copy_ns >>= 1;
		a->copy_sectors >>= 1;
	}
	a->copy_ns += ns;
	a->copy_sectors += sectors;
	if (a->active)
		a->cache_ns += ns;
}

static const char * const rc_estimator_names[RC_EST_NR] = { "spk", "vdisk" };

const char *rc_estimator_name(enum rc_estimator e)
{
	return e < RC_EST_NR ? rc_estimator_names[e] : "?";
}

int rc_estimator_parse(const char *name)
{
	int e;

	for (e = 0; e < RC_EST_NR; e++)
		if (rc_streq(name, rc_estimator_names[e]))
			return e;
	return -1;
}

/* --- speculation budget --------------------------------------------- */

void rc_budget_init(struct rc_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->share = RC_BUDGET_SHARE_DEFAULT;
	b->cap_ns = (u64)RC_BUDGET_CAP_MS * 1000000;
}

bool rc_budget_set(struct rc_budget *b, enum rc_tunable key, u32 value)
{
	switch (key) {
	case RC_TUN_BUDGET_SHARE:
		b->share = value;
		return true;
	case RC_TUN_BUDGET_CAP_MS:
		b->cap_ns = (u64)value * 1000000;
		if (b->balance > (s64)b->cap_ns)
			b->balance = b->cap_ns;
		return true;
	default:
		return false;
	}
}

bool rc_budget_get(const struct rc_budget *b, enum rc_tunable key, u32 *value)
{
	switch (key) {
	case RC_TUN_BUDGET_SHARE:
		*value = b->share;
		return true;
	case RC_TUN_BUDGET_CAP_MS:
		*value = (u32)rc_div64(b->cap_ns, 1000000);
		return true;
	default:
		return false;
	}
}

void rc_budget_reset_stats(struct rc_budget *b)
{
	b->earned_ns = 0;
	b->spent_ns = 0;
	b->ghost_earned_ns = 0;
}

void rc_budget_cold(struct rc_budget *b)
{
	b->balance = 0;
	b->red = 0;
	b->ghost_ns = 0;
}

/* Add @earn to the balance, up to the cap. */
static void rc_budget_earn(struct rc_budget *b, u64 earn)
{
	b->earned_ns += earn;
	b->balance += (s64)earn;
	if (b->balance > (s64)b->cap_ns)
		b->balance = b->cap_ns;
	if (b->balance >= 0)
		b->red = 0;
}

void rc_budget_read(struct rc_budget *b, bool served, bool fill, u64 vd_ns, u64 cvd_ns)
{
	u64 earn = 0, spend = 0;

	if (!b->share)
		return;
	vd_ns = rc_clamp_ns(vd_ns);
	cvd_ns = rc_clamp_ns(cvd_ns);
	if (served)
		earn = vd_ns;
	else if (fill && cvd_ns > vd_ns)
		spend = cvd_ns - vd_ns;
	if (fill) {
		if (!b->extra_ns)	/* the first fill's, then the average */
			b->extra_ns = spend;
		else
			b->extra_ns = b->extra_ns - (b->extra_ns >> RC_BUDGET_EXTRA_SHIFT) +
				      (spend >> RC_BUDGET_EXTRA_SHIFT);
	}
	earn += rc_div64(vd_ns, b->share);
	b->spent_ns += spend;
	b->balance -= (s64)spend;
	rc_budget_earn(b, earn);
}

/* @v + @delta, kept within the budget's cap either way. */
static s64 rc_budget_within(const struct rc_budget *b, s64 v, s64 delta)
{
	s64 cap = (s64)b->cap_ns;

	v += delta;
	return v < -cap ? -cap : v > cap ? cap : v;
}

void rc_budget_ghost(struct rc_budget *b, enum rc_refused r, u64 vd_ns)
{
	if (!b->share || r == RC_REFUSED_NONE)
		return;
	vd_ns = rc_clamp_ns(vd_ns);
	if (r == RC_REFUSED_NEW) {
		b->ghost_ns = rc_budget_within(b, b->ghost_ns, -(s64)b->extra_ns);
		return;
	}
	b->ghost_ns += (s64)vd_ns;
	if (b->ghost_ns > 0) {
		b->ghost_earned_ns += b->ghost_ns;
		rc_budget_earn(b, b->ghost_ns);
		b->ghost_ns = 0;
	}
}

void rc_budget_spend(struct rc_budget *b, u64 ns)
{
	if (!b->share)
		return;
	ns = rc_clamp_ns(ns);
	b->spent_ns += ns;
	b->balance -= (s64)ns;
}

/* --- streams ---------------------------------------------------------- */

void rc_streams_init(struct rc_streams *t)
{
	memset(t, 0, sizeof(*t));
}

int rc_stream_read(struct rc_streams *t, u64 sector, u32 sectors)
{
	u64 end = sector + sectors;
	struct rc_stream *e, *victim = &t->s[0];
	int i, dir, was;

	t->clock++;
	for (i = 0; i < RC_STREAMS; i++) {
		e = &t->s[i];
		if (!e->used)
			break;
		if (sector >= e->end && sector - e->end <= 2ull * sectors)
			dir = 1;
		else if (end <= e->start && e->start - end <= 2ull * sectors)
			dir = -1;
		else
			dir = 0;
		if (!dir) {
			if (e->used < victim->used)
				victim = e;
			continue;
		}
		e->used = t->clock;
		if (dir > 0 && e->dir < 0 && sector == e->end) {
			e->end = end;	/* the upper piece of a split backward read */
			e->run += sectors;
			t->run = e->run;
			return 0;
		}
		was = e->dir;
		/* A turn: the run starts again from the read before this one. */
		e->run = (was && was != dir ? e->end - e->start : e->run) + sectors;
		t->run = e->run;
		e->start = sector;
		e->end = end;
		e->dir = dir;
		return was == dir ? dir : 0;
	}
	if (i < RC_STREAMS)
		victim = e;
	victim->start = sector;
	victim->end = end;
	victim->used = t->clock;
	victim->run = sectors;
	victim->dir = 0;
	t->run = sectors;
	return 0;
}

u32 rc_streams_live(const struct rc_streams *t)
{
	u32 i, n = 0;

	for (i = 0; i < RC_STREAMS; i++)
		n += t->s[i].used && t->s[i].dir && t->clock - t->s[i].used < RC_STREAMS;
	return n;
}

/* --- C-Aware ---------------------------------------------------------- */

void rc_caware_init(struct rc_caware *w, u64 now)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->interval_ns = (u64)RC_CAWARE_DECAY_MS * 1000000;
	for (i = 0; i < RC_CL_NR; i++)
		w->cl[i].stamp = now;
}

bool rc_caware_set(struct rc_caware *w, enum rc_tunable key, u32 value)
{
	if (key != RC_TUN_DECAY_MS)
		return false;
	w->interval_ns = (u64)value * 1000000;
	return true;
}

bool rc_caware_get(const struct rc_caware *w, enum rc_tunable key, u32 *value)
{
	if (key != RC_TUN_DECAY_MS)
		return false;
	*value = (u32)rc_div64(w->interval_ns, 1000000);
	return true;
}

void rc_caware_reset_stats(struct rc_caware *w)
{
	memset(w->rule, 0, sizeof(w->rule));
	w->decays = 0;
	w->probes = 0;
}

void rc_caware_record(struct rc_caware *w, enum rc_class cl, u64 ns, u64 now)
{
	struct rc_trace *t = &w->cl[cl];

	ns = rc_clamp_ns(ns);
	t->totaltime = (7 * t->totaltime + 256 * ns) / 8;		/* (1) */
	t->samples = (7 * t->samples + 256) / 8;			/* (2) */
	t->meantime = rc_div64(t->totaltime + 128, t->samples);	/* (3) */
	t->n++;
	t->stamp = now;
}

void rc_caware_decay(struct rc_caware *w, u64 now)
{
	u64 steps;
	int i;

	if (!w->interval_ns)
		return;
	for (i = 0; i < RC_CL_NR; i++) {
		struct rc_trace *t = &w->cl[i];

		if (now <= t->stamp || now - t->stamp < w->interval_ns)
			continue;
		steps = rc_div64(now - t->stamp, w->interval_ns);
		t->stamp += steps * w->interval_ns;
		if (!t->n)
			continue;	/* never measured: nothing to halve */
		w->decays += steps;
		if (steps > 63)
			steps = 63;
		t->totaltime >>= steps;
		t->meantime >>= steps;
	}
}

int rc_caware_rule(struct rc_caware *w, bool write, bool full)
{
	const struct rc_trace *t = w->cl;
	int rule;

	if (!write && full)
		rule = t[RC_CL_CACHE_READ].meantime < t[RC_CL_SOURCE_READ].meantime ? 1 : 5;
	else if (write && full)
		rule = t[RC_CL_CACHE_WRITE].meantime < t[RC_CL_SOURCE_WRITE].meantime ? 2 : 5;
	else if (!write)
		rule = t[RC_CL_DIRECT_CACHE_READ].meantime > t[RC_CL_SOURCE_READ].meantime ? 3 : 6;
	else
		rule = t[RC_CL_DIRECT_CACHE_WRITE].meantime > t[RC_CL_SOURCE_WRITE].meantime ? 4 : 6;
	w->rule[rule]++;
	return rule;
}

bool rc_caware_probe(struct rc_caware *w, int rule)
{
	if (rule != 5 || ++w->starved < RC_CAWARE_PROBE)
		return false;
	w->starved = 0;
	w->probes++;
	return true;
}

const char *rc_class_name(enum rc_class cl)
{
	static const char * const names[RC_CL_NR] = {
		"cache_read", "direct_cache_read", "source_read",
		"cache_write", "direct_cache_write", "source_write",
	};

	return cl < RC_CL_NR ? names[cl] : "?";
}

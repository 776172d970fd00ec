/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of redcap's adaptive policies, shared by the kernel
 * target, the simulator and the host tests:
 *
 *  - rc_adapt: the REDCAP activation-deactivation algorithm.  Over windows
 *    of reads it compares the time the reads cost through the cache with
 *    the time they would cost on the bare disk; one side of each pair is
 *    measured and the other estimated, depending on the state.
 *  - rc_caware: the C-Aware tracer (EWMA response times per request class)
 *    and its rules 1-6, which place each miss in the cache or bypass it.
 *
 * Like rc-core, nothing here locks, sleeps or allocates: the caller holds
 * its cache lock and passes times in ns from one monotonic clock.
 */
#ifndef RC_POLICY_H
#define RC_POLICY_H

#include "rc-types.h"

/*
 * The runtime tunables ("set <key> <value>"), each owned by one module:
 * activation (window, margin), placement (decay_ms), admission
 * (budget_share, budget_cap_ms), read-ahead (prefetch, in rc-core) and
 * HDC (hdc, the pinned share in %; hot_period, in seconds; in rc-core).  A
 * module sets and reads its own with rc_<module>_set() and
 * rc_<module>_get(), which answer false for another module's key, as
 * dm-cache's policies own their config values; rc_set_tunable() and
 * rc_get_tunable() (rc-core.h) ask each in turn.  Everything else is a
 * constant at the value the bench chose
 * (docs/results/2026-12-02-mechanisms.md).
 */
enum rc_tunable {
	RC_TUN_WINDOW, RC_TUN_MARGIN, RC_TUN_DECAY_MS, RC_TUN_BUDGET_SHARE,
	RC_TUN_BUDGET_CAP_MS, RC_TUN_PREFETCH, RC_TUN_HDC, RC_TUN_HOT_PERIOD, RC_TUN_DIRTY,
	RC_TUN_NR
};

/* --- activation-deactivation --------------------------------------------- */

enum rc_estimator {
	RC_EST_SPK = 0,		/* seconds per KiB of recent disk reads */
	RC_EST_VDISK,		/* the virtual disk of dm-vdisk's latency model */
	RC_EST_NR,
};

/* Seconds per KiB, kept as ns and sectors over the last RC_SPK_DEPTH reads. */
#define RC_SPK_DEPTH	100
struct rc_spk {
	u64 ns[RC_SPK_DEPTH];
	u32 sectors[RC_SPK_DEPTH];
	u32 next, count;
	u64 sum_ns, sum_sectors;
};

/* What the simulated cache did with a read while the cache is inactive. */
enum rc_sim {
	RC_SIM_NONE = 0,	/* the cache is active: nothing simulated */
	RC_SIM_HIT,		/* the segment would have been cached */
	RC_SIM_MISS,		/* the segment would have been filled */
	RC_SIM_BYPASS,		/* it would have bypassed (all busy, or a write) */
};

/*
 * spk keeps its rates per kind of request and per distance: "near" is a
 * request starting at most RC_SPK_NEAR sectors after the end of the one
 * before it (the drive's read-ahead or a short seek serves it), "far" any
 * other.  Without the split, a few seeks among sequential fills (a probe
 * at device creation, the first fill of a run) make every fill look dear.
 */
#define RC_SPK_NEAR	2048	/* 1 MiB */
enum { RC_SPK_NEAR_POOL = 0, RC_SPK_FAR_POOL, RC_SPK_POOLS };

/* Where the time of a finished disk read goes. */
enum rc_disk_kind {
	RC_DISK_FILL,		/* a segment fill */
	RC_DISK_BARE,		/* a read passed to the disk as received */
};

#define RC_ADAPT_WINDOW		128	/* reads per judgement */
/*
 * The early verdict: with estimator vdisk, a cache's first window is
 * judged after a quarter of the window's reads if none of them was served
 * from RAM (a cold cache under reads with no locality to find), as any
 * window is.
 */
#define RC_ADAPT_EARLY_DIV	4
#define RC_ADAPT_MARGIN		3	/* percent the loser must lose by */
#define RC_ADAPT_DWELL		2	/* windows an inactive state holds after a switch */
/*
 * The active state is judged on its windows since it came on, each older
 * window weighing 1/RC_ADAPT_SPELL less: an exponential window of
 * RC_ADAPT_SPELL windows, and not before it has that many.  The inactive
 * state is judged on its last window.
 */
#define RC_ADAPT_SPELL		32
#define RC_ADAPT_MAX_WINDOW	1000000u
#define RC_ADAPT_MAX_MARGIN	100u

struct rc_adapt {
	/* tunables */
	u32 window, margin, dwell;
	enum rc_estimator estimator;
	bool switching;		/* the policy lets the state change */
	bool active;		/* the state */

	/* the window being filled */
	u32 reads;
	u32 served;		/* reads served from RAM (rc_adapt_served()) */
	bool first;		/* no window judged yet: the early verdict may come */
	u32 unpriced;		/* reads the estimator could not price */
	u64 cache_ns;		/* the reads' time with the cache */
	u64 disk_ns;		/* the same reads' time on the bare disk */
	u32 since_switch;	/* windows judged since the last switch */
	/* active: its judged windows since it came on, older ones decayed (RC_ADAPT_SPELL) */
	u64 spell_cache_ns, spell_disk_ns;

	/* learnt */
	struct rc_spk bare[RC_SPK_POOLS];	/* reads sent to the disk as received */
	struct rc_spk fill[RC_SPK_POOLS];	/* segment fills */
	u64 disk_next;		/* end of the last disk read measured */
	u64 recv_next;		/* end of the last read received */
	u64 sim_next;		/* end of the last read the simulated cache sent */
	u64 copy_ns, copy_sectors;	/* RAM copies of hits (halved when large) */

	/* totals */
	u64 switches, windows, windows_unjudged;
	u64 total_cache_ns, total_disk_ns;
	u64 last_cache_ns, last_disk_ns;	/* the last window judged */
};

void rc_adapt_init(struct rc_adapt *a);
bool rc_adapt_set(struct rc_adapt *a, enum rc_tunable key, u32 value);
bool rc_adapt_get(const struct rc_adapt *a, enum rc_tunable key, u32 *value);

/* Forget the windows and totals (not the tunables, state or learnt rates). */
void rc_adapt_reset_stats(struct rc_adapt *a);

/* The spk estimate of @sectors in ns; false while @s has no sample. */
bool rc_spk_estimate(const struct rc_spk *s, u32 sectors, u64 *ns);
void rc_spk_add(struct rc_spk *s, u32 sectors, u64 ns);

/* The read about to be judged was served from RAM (a hit or a wait). */
static inline void rc_adapt_served(struct rc_adapt *a)
{
	a->served++;
}

/*
 * A read of @sectors at @sector arrived and rc_read() handled it; @sim is what it
 * simulated (NONE while active).  Closes and judges the window after
 * @window reads, or the first window early (RC_ADAPT_EARLY_DIV); returns
 * true if the state changed.
 *
 * Estimator spk uses only the learnt rates and the measured times fed by
 * rc_adapt_disk_done() and rc_adapt_copy().  Estimator vdisk takes both
 * sides from the caller's virtual disks: @vd_ns / @vd_ok, the price of
 * this read on the bare disk; @cvd_ns / @cvd_ok, the price of what the
 * cache sent (or would have sent) down for it: a segment fill on a miss,
 * the read itself on a bypass, 0 on a hit.  A false @..._ok means the
 * model could not price it.
 */
bool rc_adapt_read(struct rc_adapt *a, u64 sector, u32 sectors, u32 seg_sectors,
		   enum rc_sim sim, u64 vd_ns, bool vd_ok, u64 cvd_ns, bool cvd_ok);

/* A disk read of @sectors at @sector finished after @ns of service. */
void rc_adapt_disk_done(struct rc_adapt *a, enum rc_disk_kind kind, u64 sector,
			u32 sectors, u64 ns);

/* A hit of @sectors was copied from RAM in @ns. */
void rc_adapt_copy(struct rc_adapt *a, u32 sectors, u64 ns);

/* Set the state by hand (a policy change); starts a new window. */
void rc_adapt_set_active(struct rc_adapt *a, bool active);

/*
 * The cache made (active) or would have made (inactive: simulated) the
 * disk do @ns of work no read asked for (a fill ahead of a stream): with
 * estimator vdisk, it counts in the window's time with the cache.  spk
 * measures it when it completes, and does not simulate it.
 */
static inline void rc_adapt_charge(struct rc_adapt *a, u64 ns)
{
	if (a->estimator == RC_EST_VDISK)
		a->cache_ns += ns;
}

const char *rc_estimator_name(enum rc_estimator e);
int rc_estimator_parse(const char *name);

/* ASCII case-insensitive equality, like the strcasecmp() dm uses. */

/* --- speculation budget ------------------------------------------------- */

/*
 * A fill reads a whole segment for a read of a few sectors: the rest is
 * speculation, and the budget pays for it.  Its balance (ns of modelled
 * disk time) pays at each fill what the fill costs beyond the read it
 * serves (the cache's virtual disk's price of the fill less the bare
 * disk's price of the read); it earns the bare price of each read the
 * cache serves (a hit, or a read that waited on a fill), and 1/share of
 * the bare price of every read, so that a drained budget tries again
 * after a while; the balance never exceeds the cap.  Only reads both
 * virtual disks priced count (estimator vdisk with a model); otherwise
 * the balance stays as it is.
 *
 * One bar admits all speculation, a miss's fill, its pair's other half
 * and a stream's batch alike (rc_budget_admit()): while the balance is not
 * negative, RC_BUDGET_OVERDRAFT segments more (the hits that pay for a
 * fill come after it, and several streams may be starting at once),
 * counted as they start (rc_budget_take()), and none once the balance is
 * at or below minus the cap.  A batch is trimmed to what is left.
 * Whatever the reads, speculation that never pays costs at most the cap,
 * the fills of RC_BUDGET_OVERDRAFT segments and one read's, and 1/share of
 * the bare disk's time.  It replaced three bars (a stream's miss and its
 * batch down to minus the cap, a pair at 0) with no cell of the simulator
 * at a server's scale moving by a point but TAC x1 on the hdd7200, 1.6
 * points better (docs/results/2026-12-02-mechanisms.md).
 *
 * On by default (share 128) since the bench showed TAC keeping its gain
 * with it, once the model priced seek direction and streams paid their own
 * fills (docs/redcap.rst); share 0 turns it off.
 */
#define RC_BUDGET_SHARE_DEFAULT	RC_BUDGET_SHARE
#define RC_BUDGET_SHARE		128
#define RC_BUDGET_MAX_SHARE	1000000u
#define RC_BUDGET_CAP_MS	100
#define RC_BUDGET_MAX_CAP_MS	3600000u
#define RC_BUDGET_OVERDRAFT	4

struct rc_budget {
	s64 balance;		/* ns */
	u32 share;		/* every read earns 1/share of its price; 0: no budget */
	u64 cap_ns;
	u32 red;		/* segments of speculation started since it went negative */
	u64 earned_ns, spent_ns;	/* totals */
	s64 ghost_ns;		/* what the refused fills would have made, net, not yet earned */
	u64 extra_ns;		/* a fill's cost beyond its read, averaged (RC_BUDGET_EXTRA_SHIFT) */
	u64 ghost_earned_ns;	/* total earned from ghost_ns (in earned_ns too) */
};

/*
 * What a read did with the segments the budget refused (rc_budget_ghost()):
 * nothing, refused a segment not remembered (NEW), or read a remembered
 * one again, refused or filled (REREAD).  A re-read balance of their own,
 * which refused the re-reads of refused segments while fills there would
 * not have paid, moved no cell of the simulator at a server's scale by a
 * point, and went (docs/results/2026-12-02-mechanisms.md).
 */
enum rc_refused {
	RC_REFUSED_NONE,
	RC_REFUSED_NEW,
	RC_REFUSED_REREAD,
};

/*
 * The refused fills' ghosts: a fill the budget refused is charged to
 * ghost_ns as what it would have cost beyond its read (extra_ns, the
 * average of the fills made: a refusal has no price of its own), and each
 * later read of that segment, while a fill of it would still be cached,
 * credits the bare price the fill would have saved.  Once ghost_ns is
 * above 0, the refused fills would have paid for themselves: it goes to
 * the balance, as if earned by hits.  ghost_ns never falls below minus
 * the cap, so old refusals do not hide new evidence for ever.
 */
#define RC_BUDGET_EXTRA_SHIFT	3	/* extra_ns moves 1/8 of the way per fill */
void rc_budget_ghost(struct rc_budget *b, enum rc_refused r, u64 vd_ns);

void rc_budget_init(struct rc_budget *b);
bool rc_budget_set(struct rc_budget *b, enum rc_tunable key, u32 value);
bool rc_budget_get(const struct rc_budget *b, enum rc_tunable key, u32 *value);

/* Forget the totals (not the balance or the tunables). */
void rc_budget_reset_stats(struct rc_budget *b);

/* The cache was emptied: start again from a balance of 0, no ghost. */
void rc_budget_cold(struct rc_budget *b);

/*
 * The admission bar (above): how many of @n segments of speculation may go
 * now.  Those that go are taken with rc_budget_take() as they start, so
 * that the next admission, in the same read or a later one, counts them.
 */
static inline u32 rc_budget_admit(const struct rc_budget *b, u32 n)
{
	u32 left;

	if (!b->share || b->balance >= 0)
		return n;
	if (b->balance <= -(s64)b->cap_ns || b->red >= RC_BUDGET_OVERDRAFT)
		return 0;
	left = RC_BUDGET_OVERDRAFT - b->red;
	return left < n ? left : n;
}

/* @n segments of speculation the bar admitted start: in the red, they count. */
static inline void rc_budget_take(struct rc_budget *b, u32 n)
{
	if (b->share && b->balance < 0)
		b->red += n;
}

/*
 * A read the active cache handled: @served from RAM (a hit, or it waited
 * on a fill), or it started a fill (@fill), or neither (it bypassed).
 * @vd_ns is its price on the bare disk, @cvd_ns that of what the cache
 * sent down for it.
 */
void rc_budget_read(struct rc_budget *b, bool served, bool fill, u64 vd_ns, u64 cvd_ns);

/* Pay @ns of speculation no read asked for (a fill ahead of a stream). */
void rc_budget_spend(struct rc_budget *b, u64 ns);

/* --- streams ----------------------------------------------------------- */

/*
 * Sequential streams, forward and backward, several at once: the last
 * read of each of RC_STREAMS recent streams.  A read continues a stream
 * when it starts after the stream's last read, or ends before it, with a
 * gap up to twice its length (buffered readers skip what the page cache
 * holds; a strided reader of 4 KiB skips 8 KiB).  Otherwise it starts a
 * stream in place of the one read least recently.  A stream has a
 * direction once a read continued it, and a read that goes on in that
 * direction is "streamed": a single adjacent pair (a random read and the
 * read-ahead behind it) is not.  dm splits a read at a segment boundary
 * and the lower piece comes first: the upper piece of a backward read
 * joins the lower one and leaves the stream backward.  A stream's run is
 * what it has read, in sectors, from its first read on.  A bounded scan
 * of RC_STREAMS entries per read.
 */
#define RC_STREAMS	32

struct rc_stream {
	u64 start, end;		/* the last read: sectors [start, end) */
	u64 used;		/* clock of that read; 0: empty */
	u64 run;		/* sectors read from its first read on */
	int dir;		/* +1 forward, -1 backward, 0 not yet known */
};

struct rc_streams {
	struct rc_stream s[RC_STREAMS];
	u64 clock;
	u64 run;		/* the run of the last read's stream */
};

void rc_streams_init(struct rc_streams *t);

/*
 * Note a read of @sectors at @sector: +1 if it goes on forward with a
 * stream already going forward, -1 backward likewise, else 0; t->run is
 * then its stream's run, this read included.
 */
int rc_stream_read(struct rc_streams *t, u64 sector, u32 sectors);

/*
 * The streams going on: those with a direction read within the last
 * RC_STREAMS reads (sixteen interleaved readers each read about every
 * sixteenth).  At least 1 right after a streamed read.
 */
u32 rc_streams_live(const struct rc_streams *t);

/* --- C-Aware placement -------------------------------------------------- */

enum rc_class {
	RC_CL_CACHE_READ = 0,	/* reads served by the cache: hits, waits, misses */
	RC_CL_DIRECT_CACHE_READ, /* ... of which hits copied without waiting */
	RC_CL_SOURCE_READ,	/* reads sent to the disk */
	RC_CL_CACHE_WRITE,	/* writes that also allocated a segment */
	RC_CL_DIRECT_CACHE_WRITE, /* ... their copy into the segment */
	RC_CL_SOURCE_WRITE,	/* writes that went to the disk only */
	RC_CL_NR,
};

/* One class of the tracer, formulas (1)-(3) of the C-Aware paper. */
struct rc_trace {
	u64 samples;		/* EWMA count, 256 per request (settles at 249) */
	u64 totaltime;		/* EWMA of 256 x time, ns */
	u64 meantime;		/* ns */
	u64 n;			/* requests recorded (not decayed) */
	u64 stamp;		/* last refresh: a request or a decay step */
};

#define RC_CAWARE_DECAY_MS	1000
#define RC_CAWARE_MAX_DECAY_MS	3600000u

/*
 * Rule 5 (a full cache whose reads are not faster than the disk's) starves
 * its own evidence: while it sends the misses to the disk, nothing new is
 * cached, cache_read gets no hits, and its mean stays at the misses' times
 * until decay halves it, a second or more (a row of workloads on the
 * bench's hdd7200: 437 reads bypassed, +90 % against the bare disk).  So
 * every RC_CAWARE_PROBE-th read that rule 5 sends to the disk is cached
 * all the same (a probe): its fill and the hits that follow it measure
 * cache_read again.  Where the cache is really slower, probes cost one
 * fill in RC_CAWARE_PROBE of the misses rule 5 decided, still subject to
 * the speculation budget.
 */
#define RC_CAWARE_PROBE		16

struct rc_caware {
	struct rc_trace cl[RC_CL_NR];
	u64 interval_ns;	/* halve a mean not refreshed for this long */
	u64 rule[7];		/* times each rule 1..6 decided */
	u64 decays;
	u64 probes;		/* rule 5's misses cached as probes */
	u32 starved;		/* rule 5's reads since the last probe */
};

void rc_caware_init(struct rc_caware *w, u64 now);
bool rc_caware_set(struct rc_caware *w, enum rc_tunable key, u32 value);
bool rc_caware_get(const struct rc_caware *w, enum rc_tunable key, u32 *value);

/* Forget the rule counters, decays and probes (not the means). */
void rc_caware_reset_stats(struct rc_caware *w);

/* One request of class @cl took @ns. */
void rc_caware_record(struct rc_caware *w, enum rc_class cl, u64 ns, u64 now);

/* Halve every mean not refreshed for an interval, once per interval. */
void rc_caware_decay(struct rc_caware *w, u64 now);

/*
 * The rule (1..6) that places a miss: a read or a write, with the cache
 * @full (no free segment) or not.  Rules 1, 2 and 6 cache; 3, 4 and 5
 * bypass (rc_caware_caches()).  Counts the rule.
 */
int rc_caware_rule(struct rc_caware *w, bool write, bool full);

static inline bool rc_caware_caches(int rule)
{
	return rule == 1 || rule == 2 || rule == 6;
}

/*
 * A read miss that @rule sends to the disk: true if it is cached all the
 * same as rule 5's probe (above), which is counted.
 */
bool rc_caware_probe(struct rc_caware *w, int rule);

const char *rc_class_name(enum rc_class cl);

#endif

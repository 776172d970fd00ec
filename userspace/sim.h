/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The replay engine of redcapctl simulate (issue 16): a block trace
 * (trace.h) replayed, in simulated time, through the hard-disk emulator
 * (vd-drive.c) alone ("bare") or through the kernel target's own cache core
 * (rc-core.c) over it, as the dm-redcap glue drives that core.
 *
 * Replay: each process of the trace is a closed loop.  A request that the
 * trace shows issued after its process's previous request completed is
 * issued that long after the previous one completes in the simulation (the
 * think time the trace shows); a request issued while the previous one was
 * still in flight keeps its distance from the previous issue; without
 * completion times in the trace (csv), each request of a process goes when
 * its previous one completes.  The first request of each process goes at
 * its trace time.  Different processes overlap as they did.
 *
 * What the glue does that is mirrored: reads and writes cut at segment
 * boundaries, but a bypassed read joined by the pieces after it that
 * rc_read_join() lets go with it, rc_read()'s hit / fill / wait / bypass, whole-segment
 * fills clipped to the device, waiters served at the fill's completion,
 * writes through rc_write_start() / rc_write_done(), discards through
 * rc_range_start() / rc_range_done().  As in the kernel, the pieces of a
 * read go at once, and a hit's segment becomes the most recent when its
 * copy is done, a fill's when the fill completes: within one read that
 * crosses segments, recency follows completion, not the order of the
 * pieces.  A copy between cache and request
 * costs SIM_COPY_NS_PER_KIB; a discard costs the disk nothing (the
 * emulated drive has no discard).
 *
 * The policies: rc_read() decides, as in the kernel, and the glue's
 * accounting is mirrored.  The stack is the one redcapctl builds: redcap
 * over a measuring vdisk whose latency model learns from every request the
 * disk serves (its service time, as a one-at-a-time server sees it).  The
 * two virtual disks of the vdisk estimator (what redcap received, and what
 * the cache sent or would have sent down) are priced from that model; spk
 * learns from the disk reads' service times and the hits' copies; C-Aware
 * records each class's response time at completion and decays at each
 * read.  The model starts empty (windows go unjudged until it holds
 * samples, as on a new stack) or from saved tables (sim_disk.model).
 *
 * HDC (the hdc and hot_period tunables): the glue's worker is mirrored.
 * At each period's end it chooses the set to pin from the counts and
 * starts their halving; the reads pin the chosen segments they find or
 * fill; the rest are filled one at a time whenever the disk is idle
 * (nothing queued, no request issued for RC_HDC_IDLE_NS), until the
 * trace's last request completes (the idle time after it is not the
 * run's).
 *
 * A bare run prices the requests on the same model as they reach the
 * disk (sim_result.vdisk): the virtual disk against the disk it stands for.
 *
 * The disk is the hard-disk emulator, or, with no drive given, the model
 * itself: each request takes the model's estimate for its size and
 * distance (a disk as learnt; that model does not learn further).
 *
 * Deterministic: the same trace, drive and configuration give the same
 * result.
 */
#ifndef REDCAP_SIM_H
#define REDCAP_SIM_H

#include <stdbool.h>

#include "rc-types.h"
#include "rc-args.h"
#include "rc-shadow.h"
#include "vd-drive.h"
#include "vd-lag.h"
#include "vd-model.h"
#include "trace.h"

#define SIM_ERR_MAX		256
#define SIM_COPY_NS_PER_KIB	100	/* 10 GB/s: a memcpy of the kernel's */

struct sim_config {
	bool bare;			/* the disk alone */
	u32 nr_segs;
	u32 seg_sectors;		/* a power of two */
	enum rc_policy policy;
	enum rc_write_policy write_policy;
	enum rc_estimator estimator;	/* vdisk unless given, as redcapctl builds */
	u32 tun[RC_TUN_NR];		/* "set" tunables given ... */
	u32 tun_given;			/* ... bit (1 << key) set */
	char spec[200];			/* as given */
	/* If set, gets each request's simulated issue time from time 0 (trace order). */
	u64 *issue_ns;
	/* If set, called every SIM_PROGRESS_EVERY requests completed. */
	void (*progress)(u64 done, u64 total, void *arg);
	void *progress_arg;
};

#define SIM_PROGRESS_EVERY	65536
/* The sample rings of a model, as dm-vdisk gives one (VDISK_MAX_RINGS). */
#define SIM_MODEL_RINGS		8192
/* The lagging virtual disk's queue (vd-lag.h): a run's whole lag fits. */
#define SIM_LAG_REQUESTS	(1 << 20)

/*
 * "bare", or "<segments>x<size>:<policy>[,<key>=<value>...]", e.g.
 * "64x128k:adaptive+caware,estimator=spk"; size with k, m (or K, M) or in
 * bytes, a power of two of at least 4 KiB; keys write_policy, estimator
 * and the tunables of the target's "set" message (window, margin,
 * decay_ms, budget_share, budget_cap_ms, prefetch), checked by the target's own
 * message parser.  0, or -1 with
 * the reason in @err (SIM_ERR_MAX).
 */
int sim_config_parse(const char *spec, struct sim_config *c, char *err);

struct sim_result {
	u64 app_ns;			/* first issue to last completion */
	u64 disk_busy_ns;		/* the drive's service times, summed */
	u64 disk_requests;
	u64 requests;			/* of the trace */
	struct rc_counters ctr;		/* the cache's (zero for bare) */
	struct rc_adapt adapt;		/* activation-deactivation, at the end */
	struct rc_caware caware;	/* C-Aware's tracer and rules */
	struct rc_budget budget;	/* the speculation budget */
	u32 tun[RC_TUN_NR];		/* the tunables in force */
	struct vd_vdisk vdisk;		/* the virtual disk of the requests received
					 * (bare: as the disk received them) */
	u32 segments_valid, segments_ghost;
	u32 hdc_pinned, hdc_max, hot_periods;	/* HDC's, at the end */
	bool active;			/* the cache's state at the end */
	/*
	 * The reads received on the bare disk in its own order (vd-lag.h),
	 * every one served by the end
	 */
	u64 lag_busy_ns, lag_forced;
	/*
	 * The shadow caches of the reads received (rc-shadow.h), as the
	 * glue keeps them: segment sizes by amounts of the cache's RAM.
	 */
	struct sim_shadow {
		u32 rate_shift;		/* 1 region in 2^rate_shift; 32: off */
		bool ok[RC_SHADOW_RAMS];
		u64 ppm[RC_SHADOW_RAMS];	/* disk time, of the bare disk's */
		u64 misses[RC_SHADOW_RAMS];	/* sampled */
	} shadow[RC_SHADOW_SIZES];
};

/* The disk a trace is replayed on. */
struct sim_disk {
	const struct vd_drive_params *drive;	/* emulated; NULL: the model is the disk */
	const struct vd_model *model;		/* tables to start from, or NULL */
	bool frozen;				/* the model does not learn ("train off") */
	const struct vd_dcache *dcache;		/* the model's drive cache, or NULL */
	u64 capacity;				/* sectors */
	/*
	 * If set, replayed first, through the same disk, model and cache, as
	 * the bench's mount before a run: then the drive is made cold (the
	 * vdisk "reset" message: idle, its cache empty) and the counters
	 * zeroed (redcap's "reset_stats": the cache's contents, the budget's
	 * balance and the policy's state stay), and @t starts when the last
	 * of it completed.  The result counts @t alone.
	 */
	const struct trace *warm;
	/*
	 * If set, gets what the model holds at the end of the run; it must
	 * have the geometry of @model, else VD_DEFAULT_ROWS over @capacity.
	 */
	struct vd_model *learnt;
	/*
	 * Every request goes at its trace time, whatever became of the one
	 * before it (an open loop), rather than each process's after its last.
	 */
	bool open_loop;
};

/*
 * Replays @t on @d (a capacity of at least the trace's last sector)
 * through @c.  0, or -1 with the reason in @err (SIM_ERR_MAX): no memory,
 * a request beyond the capacity, or a model-only disk whose model cannot
 * price a request.
 */
int sim_run(const struct trace *t, const struct sim_disk *d, const struct sim_config *c,
	    struct sim_result *r, char *err);

#endif

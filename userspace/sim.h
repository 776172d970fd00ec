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
 * What the glue does that is mirrored: reads split at segment boundaries
 * (dm's max_io_len), rc_read()'s hit / fill / wait / bypass, whole-segment
 * fills clipped to the device, waiters served at the fill's completion,
 * writes through rc_write_start() / rc_write_done(), discards through
 * rc_range_start() / rc_range_done().  As in the kernel, the pieces of a
 * read go at once, and a hit's segment becomes the most recent when its
 * copy is done, a fill's when the fill completes: within one read that
 * crosses segments, recency follows completion, not the order of the
 * pieces.  A copy between cache and request
 * costs SIM_COPY_NS_PER_KIB; a discard costs the disk nothing (the
 * emulated drive has no discard).  Not yet: the adaptive and C-Aware
 * policies (they need the virtual disks the glue prices with), which
 * sim_config_parse() refuses.
 *
 * Deterministic: the same trace, drive and configuration give the same
 * result.
 */
#ifndef REDCAP_SIM_H
#define REDCAP_SIM_H

#include <stdbool.h>

#include "rc-types.h"
#include "rc-core.h"
#include "vd-drive.h"
#include "trace.h"

#define SIM_ERR_MAX		256
#define SIM_COPY_NS_PER_KIB	100	/* 10 GB/s: a memcpy of the kernel's */

struct sim_config {
	bool bare;			/* the disk alone */
	u32 nr_segs;
	u32 seg_sectors;		/* a power of two */
	enum rc_policy policy;
	enum rc_write_policy write_policy;
	char spec[96];			/* as given */
	/* If set, called every SIM_PROGRESS_EVERY requests completed. */
	void (*progress)(u64 done, u64 total, void *arg);
	void *progress_arg;
};

#define SIM_PROGRESS_EVERY	65536

/*
 * "bare", or "<segments>x<size>:<policy>[,write_policy=invalidate|update]",
 * e.g. "64x128k:always"; size with k, m (or K, M) or in bytes, a power of
 * two of at least 4 KiB.  0, or -1 with the reason in @err (SIM_ERR_MAX).
 */
int sim_config_parse(const char *spec, struct sim_config *c, char *err);

struct sim_result {
	u64 app_ns;			/* first issue to last completion */
	u64 disk_busy_ns;		/* the drive's service times, summed */
	u64 disk_requests;
	u64 requests;			/* of the trace */
	struct rc_counters ctr;		/* the cache's (zero for bare) */
	bool active;			/* the cache's state at the end */
};

/*
 * Replays @t on a drive of @drive over @capacity sectors (at least the
 * trace's last sector) through @c.  0, or -1 with the reason in @err
 * (SIM_ERR_MAX): no memory, or a request beyond @capacity.
 */
int sim_run(const struct trace *t, const struct vd_drive_params *drive, u64 capacity,
	    const struct sim_config *c, struct sim_result *r, char *err);

#endif

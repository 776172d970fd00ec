/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of the vdisk hard-disk emulator: a single-actuator drive
 * with a seek curve, rotation, media rate and a segmented read-ahead cache,
 * serving one request at a time.  It only computes times; the kernel glue
 * holds each bio until the time it is given.
 *
 * Service time of a request that goes to the media:
 *   overhead + seek(cylinders) + rotation + length / media rate
 *   seek(n) = 0 (n = 0), alpha + beta * sqrt(n) (n <= theta), gamma + delta * n
 *   rotation = uniform in [0, one revolution), from a seeded generator; for
 *   a request that starts exactly under the head, none if it was queued
 *   behind the last access, else the wait for its sector to come round
 * A read that the drive cache holds costs overhead + length / bus rate.
 *
 * Drive cache: nr_segs segments of seg_sectors, LRU.  A read miss fills a
 * segment with the request and then keeps reading ahead (up to ra_sectors
 * past the request) at the media rate for as long as the head is not needed
 * elsewhere: cache hits do not stop it, the next media access does, and it
 * goes on while the drive takes a request's overhead.  A read that starts
 * inside the segment being read ahead waits only for the data still to
 * come once its overhead is taken: a reader that reads on at once, in
 * requests of any size, reads at the media rate.  Writes go to the media
 * (no write cache) and drop the segments they overlap.
 *
 * A device without platters (rpm 0: a cloud volume, a network block device)
 * has no seek, rotation or cache: every request costs a fixed latency plus
 * its transfer at media_mbps, and requests overlap in flight.  Two token
 * buckets of one request's depth pace them: the transfers share media_mbps
 * (a throughput cap), and the I/Os are spaced by 1 / iops, where a request
 * that continues the last one joins its I/O until io_sectors are in it (a
 * larger one counts as several).  Completions come in submission order.
 *
 * Locking: none; the caller serialises calls on one struct vd_drive.  No
 * allocation, never sleeps.
 */
#ifndef VD_DRIVE_H
#define VD_DRIVE_H

#include "rc-types.h"
#include "vd-model.h"

#define VD_DRIVE_MAX_SEGS	64

struct vd_drive_params {
	u32 rpm;
	u32 cylinders;
	u32 seek_alpha_ns;	/* seek(n) = alpha + beta * sqrt(n), n <= theta */
	u32 seek_beta_ns;
	u32 seek_theta;
	u32 seek_gamma_ns;	/* seek(n) = gamma + delta * n, n > theta */
	u32 seek_delta_ns;
	u32 media_mbps;		/* MB/s (10^6 bytes) off the platters */
	u32 bus_mbps;		/* MB/s for cache hits */
	u32 overhead_ns;	/* per request */
	u32 nr_segs;		/* drive cache segments, 0 = no cache */
	u32 seg_sectors;
	u32 ra_sectors;		/* read-ahead past a miss */
	u32 latency_ns;		/* rpm 0: per request */
	u32 iops;		/* rpm 0: I/Os a second, 0 = no cap */
	u32 io_sectors;		/* rpm 0: size of one I/O, 0 = one per request */
};

struct vd_drive_profile {
	const char *name;
	struct vd_drive_params p;
};

/* Built-in profiles, terminated by a NULL name. */
extern const struct vd_drive_profile vd_drive_profiles[];

/* The profile called @name, or NULL. */
const struct vd_drive_profile *vd_drive_profile(const char *name);

/*
 * 0 if @p can drive an emulation, else -1: zero rate, too many segments, a
 * drive with platters but no cylinders, or one without platters with a cache.
 */
int vd_drive_params_check(const struct vd_drive_params *p);

struct vd_drive_seg {
	u64 start;		/* first cached sector */
	u64 end;		/* after the last cached sector (frozen) */
	u64 lru;		/* last use, larger = newer */
	bool valid;
};

struct vd_drive_stats {
	u64 requests;
	u64 cache_hits;		/* reads served wholly from the drive cache */
	u64 ra_hits;		/* reads that waited on the read-ahead stream */
	u64 seeks;		/* media accesses that moved the head */
	u64 busy_ns;		/* sum of service times */
	u64 seek_ns;
	u64 rotation_ns;
	u64 transfer_ns;
};

struct vd_drive {
	struct vd_drive_params p;
	u64 capacity;		/* sectors spread over p.cylinders */
	u64 disk_sectors;	/* read-ahead stops here */
	u64 seed;
	u64 rng;
	u64 head;		/* sector under the head after the last access */
	u64 busy_until;		/* ns: when the drive is free */
	u64 media_end;		/* ns: head stopped at @head (rpm 0: transfer) */
	u64 io_next;		/* rpm 0: earliest start of the next I/O */
	u64 io_end;		/* rpm 0: sector after the last request */
	u32 io_left;		/* rpm 0: sectors the last I/O can still take */
	u64 tick;		/* LRU clock */
	int ra;			/* segment being read ahead, or -1 */
	u64 ra_base;		/* sectors of it read by time ra_t0 */
	u64 ra_t0;
	u64 ra_limit;		/* read-ahead stops at this sector */
	struct vd_drive_seg seg[VD_DRIVE_MAX_SEGS];
	struct vd_drive_stats st;
};

/*
 * Sets up an idle drive with an empty cache.  @capacity (sectors) is what
 * the cylinders are spread over; @disk_sectors is the emulated device size.
 * Returns 0 or -1 if vd_drive_params_check() fails or a size is 0.
 */
int vd_drive_init(struct vd_drive *d, const struct vd_drive_params *p,
		  u64 capacity, u64 disk_sectors, u64 seed);

/* Back to the state vd_drive_init() left: idle, empty cache, rng reseeded. */
void vd_drive_reset(struct vd_drive *d);

/* Seek time for a move of @cyl cylinders. */
u64 vd_drive_seek_ns(const struct vd_drive_params *p, u64 cyl);

/*
 * Queues a request arriving at @now (ns) behind the ones already queued and
 * returns when it completes; *service gets the time it added to the drive's:
 * from its arrival or the previous completion, whichever is later (on a
 * drive with platters, the time the drive spent on it).
 */
u64 vd_drive_submit(struct vd_drive *d, enum vd_dir dir, u64 sector,
		    u32 sectors, u64 now, u64 *service);

/*
 * The overlap (vd_overlap_of()) of the drive @p, as vdiskctl train measures
 * a real one: VD_OVERLAP_READS 4 KiB reads at random over @disk_sectors one
 * at a time, then as many with VD_OVERLAP_DEPTH in flight, on drive @d
 * (set up anew: @capacity and @disk_sectors as vd_drive_init() takes them).
 * 0 if @p is invalid.  Userspace only (the simulator's), not in the module.
 */
#define VD_OVERLAP_READS	2048
#define VD_OVERLAP_DEPTH	32
u64 vd_drive_overlap(struct vd_drive *d, const struct vd_drive_params *p, u64 capacity,
		     u64 disk_sectors);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Learning a drive's own cache (struct vd_dcache) from the times of the
 * requests it served: the virtual-disk paper's error is the disk cache, and
 * the model can only price it once it knows the cache's shape.
 *
 * A read that the drive's cache held costs the drive's overhead and a bus
 * transfer, far less than a media access; a read of a size is called a hit
 * when it took at most twice the fastest read of that size seen (a hit's
 * cost grows with its length no faster than in proportion, so a smaller
 * size's fastest, scaled, bounds it too).  A media read that was lucky in
 * its rotation looks like a hit too, so the learner never trusts one read:
 * it counts, for each kind of read, how many of them hit, and believes
 * what most of them did; and since a reader that thinks as long each time
 * can be lucky the same way at the same distance every time, it believes
 * a cache only as far as most reads hit at every distance (or rank) up to
 * there.
 *
 * It keeps the regions the drive read from the media lately (a miss opens
 * one, as a drive fills a segment with it) and places every read after the
 * newest region it could belong to:
 *
 * - ahead of the region's highest request end, by the distance it starts
 *   past that end: the read-ahead is the start of the last bucket of such
 *   distances most reads hit in (a drive serves a read that starts within
 *   its read-ahead, at its end too, waiting for the rest if it must; so a
 *   bucket's first sector is where reads aligned to it hit);
 * - inside the region, by how far it starts before that end: a segment
 *   holds the last such distance that most reads hit, and the read-ahead
 *   past that end (a drive's segment keeps its last sectors, and once the
 *   read-ahead has run they end that far past the region's; the probe of
 *   vdiskctl train --drive-cache reads back after it has);
 * - just inside or just ahead (VD_DCL_NEAR: near enough for any segment
 *   and read-ahead to hold it), by the region's LRU rank (how many other
 *   regions were used since): the drive has one segment more than the
 *   last rank most of such reads hit at;
 * - and apart from the regions, a read of at least VD_DCL_STREAM_SECTORS
 *   where the one before it ended: the drive streamed it off the media,
 *   reading on in the gap and through its overhead, so the time since that
 *   one completed is its length at the media rate (unless the gap was long
 *   enough for the read-ahead to end in it: then its own time less a hit's
 *   is what lay past the read-ahead).  The rate is the median of these.
 *
 * A workload learns only what it shows: one stream never shows a second
 * segment.  Writes go to the media and drop the regions they overlap, as a
 * drive drops the segments.  The counts are halved every VD_DCL_AGE reads,
 * so a changed drive (a cache turned off) is learnt again.
 *
 * A device without platters answers every read about as fast as its
 * fastest: it shows no misses, and no drive cache is learnt for it (its
 * distances cost nothing to begin with).  Nor is one that does not read
 * ahead at least VD_DCL_NEAR: a drive without a cache serves a read that
 * goes on from the last one as fast as a hit, and a read back into the
 * last one when the platter happens to come round just so.
 *
 * Locking: none; the caller serialises calls on one struct vd_dclearn.  No
 * allocation, never sleeps; a call walks VD_DCL_REGIONS regions (and
 * every VD_DCL_AGE-th, the counts: about 1,100 of them).
 */
#ifndef VD_DCLEARN_H
#define VD_DCLEARN_H

#include "rc-types.h"
#include "vd-model.h"

#define VD_DCL_REGIONS		32	/* regions kept: twice the segments priced */
#define VD_DCL_CONFIRM		4	/* reads a count or a bound needs */
#define VD_DCL_ROWS		64	/* fastest read per 4 KiB of size, to 256 KiB */
#define VD_DCL_BUCKET		8	/* sectors per distance counted */
#define VD_DCL_BUCKETS		512	/* distances counted: up to 2 MiB */
#define VD_DCL_WINDOW		(VD_DCL_BUCKET * VD_DCL_BUCKETS)
/*
 * Behind a region's end, coarser: reads back into a segment are fewer
 * than reads on past it, and a bucket needs VD_DCL_CONFIRM of them.
 */
#define VD_DCL_BACK_BUCKET	64	/* sectors per distance behind */
#define VD_DCL_BACK_BUCKETS	(VD_DCL_WINDOW / VD_DCL_BACK_BUCKET)
#define VD_DCL_NEAR		64	/* sectors from the end a read counts by rank */
#define VD_DCL_MIN_HITS		64	/* before anything is learnt */
#define VD_DCL_MIN_MISS_PCT	10	/* reads that went to the media, at least */
#define VD_DCL_AGE		(1U << 20)	/* reads between halvings */
#define VD_DCL_STREAM_SECTORS	64	/* streamed reads timed for the rate */
#define VD_DCL_RATE_STEP	4	/* MB/s per rate counted */
#define VD_DCL_RATES		128	/* rates counted: up to 512 MB/s */

struct vd_dcl_region {
	u64 start;		/* first sector read from it */
	u64 end;		/* highest request end in it */
	u64 lru;		/* last use, larger = newer */
	bool valid;
};

/* Reads of one kind, and how many of them hit. */
struct vd_dcl_count {
	u32 reads;
	u32 hits;
};

struct vd_dclearn {
	struct vd_dcl_region r[VD_DCL_REGIONS];
	u64 fastest[VD_DCL_ROWS];	/* ns; 0: none yet */
	u64 tick;
	u64 last_end;			/* the last read's end, and when it completed */
	u64 last_done;
	u64 reads;			/* counted as below, halved with them */
	u64 hits;
	u64 misses;
	u64 unmatched;			/* hits in no region kept */
	u64 seen;			/* reads ever */
	/*
	 * Bucket i: a read that starts [i, i + 1) * VD_DCL_BUCKET sectors
	 * ahead of its region's highest end, or (i, i + 1] *
	 * VD_DCL_BACK_BUCKET behind it.
	 */
	struct vd_dcl_count ahead[VD_DCL_BUCKETS];
	struct vd_dcl_count back[VD_DCL_BACK_BUCKETS];
	/* By LRU rank (the last: that or more); [1]: just ahead, [0]: just inside. */
	struct vd_dcl_count rank[VD_DCACHE_MAX_SEGS + 1][2];
	u32 rate[VD_DCL_RATES];		/* streamed reads by MB/s / VD_DCL_RATE_STEP */
};

void vd_dcl_init(struct vd_dclearn *l);

/*
 * A read of @sectors at @sector that the drive began at @begin and
 * completed at @done (ns; @done - @begin is what it cost the drive).
 */
void vd_dcl_read(struct vd_dclearn *l, u64 sector, u32 sectors, u64 begin,
		 u64 done);

/* A write: it went to the media, over any region it overlaps. */
void vd_dcl_write(struct vd_dclearn *l, u64 sector, u32 sectors);

/*
 * The drive cache learnt so far into @dc.  0 once the reads showed one (at
 * least VD_DCL_MIN_HITS hits, VD_DCL_MIN_MISS_PCT % misses, a read-ahead
 * of VD_DCL_NEAR, a rank most reads hit at and a confirmed media rate);
 * otherwise -1 and @dc has no segments.  Walks the counts:
 * O(VD_DCL_BUCKETS).
 */
int vd_dcl_result(const struct vd_dclearn *l, struct vd_dcache *dc);

#endif /* VD_DCLEARN_H */

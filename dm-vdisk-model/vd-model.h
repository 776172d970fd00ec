/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable core of the vdisk latency model: read and write tables indexed by
 * request size x seek distance, and the virtual disk that replays a
 * request stream through them.  Shared by dm-vdisk, dm-redcap and the tests.
 *
 * Table geometry (after the virtual-disk paper, section III-A):
 *  - rows: request size in 4 KiB units, row r holds sizes (r*4, (r+1)*4] KiB;
 *    a larger request than the last row is scaled from the last row.
 *  - columns: the seek distance, start - end of a recent request (struct
 *    vd_seek: of the nearest of the last VD_SEEK_ENDS requests), signed:
 *    forward (>= 0) and backward distances cost a drive differently, since
 *    its read-ahead serves a short forward skip and not a short step back.
 *    The F forward columns: column 0 is distance 0; columns 1..18 are
 *    [4 KiB * 2^(c-1), 4 KiB * 2^c) (column 1 also takes distances under
 *    4 KiB); column 18 + g is [g GiB, (g+1) GiB) for g >= 1, up to the
 *    capacity.  Then VD_BACK_COLS backward columns: column F - 1 + c holds
 *    the backward distances of forward column c, for c = 1..18; a backward
 *    distance of 1 GiB or more shares the forward column (a long seek costs
 *    the same both ways).  cols = F + VD_BACK_COLS.
 *  - each cell averages its last VD_WINDOW samples (ns).
 *  - an empty cell answers with a filled neighbour in its row (the column
 *    before it, or after it, on the same side: the same size, a seek one
 *    class shorter or longer), else with its column's average (of its
 *    cells' means, every size); in an empty forward column, with the
 *    nearest forward column that has samples (the shorter distance on a
 *    tie), or, when no forward column has any, the backward column nearest
 *    its twin; in an empty backward column, as the forward column of the
 *    same length would.  So tables
 *    learnt without direction (version 2 files, the forward columns only)
 *    price a backward distance as the forward one of its length.
 *
 * Memory: each cell keeps a 16-byte summary; the 64-sample rings (256 bytes)
 * come from a pool sized at init and are handed out to cells as they get
 * their first sample.  A cell that finds the pool empty keeps an exact sum
 * until it holds VD_WINDOW samples, then forgets 1/VD_WINDOW of it per new
 * sample (an exponential window of the same length).
 *
 * Locking: no locks, no allocation, never sleeps.  The caller serialises
 * every call on one struct vd_model (the kernel holds a spinlock).
 */
#ifndef VD_MODEL_H
#define VD_MODEL_H

#include "rc-types.h"

#define VD_WINDOW		64	/* samples averaged per cell */
#define VD_ROW_SECTORS		8	/* 4 KiB per row */
#define VD_POW2_COLS		18	/* 4 KiB .. 1 GiB */
#define VD_BACK_COLS		VD_POW2_COLS	/* backward, up to 1 GiB */
#define VD_SEEK_ENDS		4	/* request ends a distance is taken from */
#define VD_GIB_SECTORS		(1ULL << 21)
#define VD_DEFAULT_ROWS		64	/* 4 KiB .. 256 KiB */
#define VD_MAX_ROWS		2048	/* 8 MiB requests */
#define VD_MAX_SAMPLE_NS	0xffffffffu	/* samples saturate at ~4.3 s */
#define VD_NO_RING		0xffffffffu

enum vd_dir {
	VD_READ = 0,
	VD_WRITE,
	VD_NR_DIRS,
};

struct vd_cell {
	u64 sum;		/* ns, of the samples in the window */
	u32 ring;		/* its sample ring in the pool, or VD_NO_RING */
	u8 n;			/* samples in the window, 0..VD_WINDOW */
	u8 head;		/* ring slot the next sample overwrites */
};

struct vd_table {
	struct vd_cell *cells;	/* rows x cols, row-major */
	u64 *col_mean_sum;	/* per column: sum of its filled cells' means */
	u32 *col_filled;	/* per column: cells with samples */
	/*
	 * The columns with samples, as a bitmap and a bitmap of its non-zero
	 * words: an empty cell's nearest filled column is found in
	 * O(cols / 4096 + 1) words, not by a walk of the columns (up to 2^20).
	 */
	u64 *col_bits;
	u64 *col_words;
};

/*
 * The drive cache a virtual disk assumes (struct vd_seek): nr_segs segments
 * of seg_sectors, LRU, the one of the last media read reading ahead up to
 * ra_sectors past it at media_mbps while the drive is idle, as the vdisk
 * emulator's drive does (vd-drive.h).  nr_segs 0: no drive cache is
 * modelled, and a request's distance is taken from the nearest of the last
 * VD_SEEK_ENDS request ends.
 */
#define VD_DCACHE_MAX_SEGS	16

struct vd_dcache {
	u32 nr_segs;
	u32 seg_sectors;
	u32 ra_sectors;
	u32 media_mbps;
};

struct vd_model {
	struct vd_dcache dc;	/* vd_model_set_dcache(); none after init */
	u32 rows;
	u32 cols;
	u32 fwd_cols;		/* forward columns, then VD_BACK_COLS backward */
	u64 capacity;		/* sectors; sets the number of columns */
	struct vd_table t[VD_NR_DIRS];
	u32 (*rings)[VD_WINDOW];
	u32 nr_rings;
	u32 rings_used;
	u32 cells_filled;	/* cells of both tables with samples */
	u64 samples[VD_NR_DIRS];	/* samples added since init/reset */
	/*
	 * Of a request's time, what overlaps the others in flight (a network
	 * or cloud volume's latency): the virtual disk serves one request's
	 * rest at a time, and each completes overlap_ns after its rest.  0 (a
	 * hard disk): one request at a time.  vd_model_set_overlap().
	 */
	u64 overlap_ns;
};

/*
 * Columns needed for a disk of @capacity sectors (>= 1), and how many of
 * them are forward (the columns of a table without direction).
 */
u32 vd_model_cols(u64 capacity);
u32 vd_model_fwd_cols(u64 capacity);

/*
 * Bytes vd_model_init() needs for this geometry, or 0 if it is invalid
 * (rows outside 1..VD_MAX_ROWS, capacity 0).  @max_rings caps the ring
 * pool; the pool never exceeds the number of cells.
 */
size_t vd_model_mem_size(u64 capacity, u32 rows, u32 max_rings);

/*
 * Sets up an empty model in @mem (vd_model_mem_size() bytes, any content,
 * 8-byte aligned).  Returns 0, or -1 if the geometry is invalid.
 */
int vd_model_init(struct vd_model *m, void *mem, u64 capacity, u32 rows,
		  u32 max_rings);

/* Forgets every sample; geometry and memory stay. */
void vd_model_reset(struct vd_model *m);

/*
 * 0 if @dc is a drive cache a model can assume: at most VD_DCACHE_MAX_SEGS
 * segments, and with segments, a segment length and a media rate; else -1.
 */
int vd_dcache_check(const struct vd_dcache *dc);

/*
 * Sets the drive cache the model's virtual disks assume (nr_segs 0: none).
 * Returns -1, changing nothing, if nr_segs > VD_DCACHE_MAX_SEGS, or a
 * cache has no segment size or media rate.
 */
int vd_model_set_dcache(struct vd_model *m, const struct vd_dcache *dc);

#define VD_MAX_OVERLAP_NS	10000000000ULL	/* 10 s */

/*
 * The service time a measured request teaches the model: from its @start,
 * or if the device was still serving the one before (completed at
 * @prev_done), from the end of that one's serial part (@prev_done less the
 * model's @overlap_ns), to its completion @done.  With no overlap, a disk
 * that starts a request when the previous one ends; with it, requests in
 * flight together each take their whole time, not the gap between their
 * completions.
 */
static inline u64 vd_service_of(u64 start, u64 prev_done, u64 overlap_ns, u64 done)
{
	u64 from = prev_done > overlap_ns ? prev_done - overlap_ns : 0;

	if (from < start)
		from = start;
	return done > from ? done - from : 0;
}

/* Sets the model's overlap_ns; -1 (and nothing set) above VD_MAX_OVERLAP_NS. */
int vd_model_set_overlap(struct vd_model *m, u64 ns);

/*
 * The overlap of a device that was busy @alone_ns a read sent one at a time
 * and @side_ns a read sent side by side with many others: the difference,
 * or 0 where side by side is less than VD_OVERLAP_MIN_GAIN % faster (the
 * noise of a sample, a hard disk's shorter seeks in a deeper queue), at
 * most VD_MAX_OVERLAP_NS.  vdiskctl train and the simulator both use it.
 */
#define VD_OVERLAP_MIN_GAIN	125
u64 vd_overlap_of(u64 alone_ns, u64 side_ns);

/* Column of a seek distance in sectors (negative: backward). */
u32 vd_model_col(const struct vd_model *m, s64 distance);

/* Row of a request size in sectors (>= 1); oversize requests get the last. */
u32 vd_model_row(const struct vd_model *m, u32 sectors);

/*
 * Records that a request of @sectors (>= 1) at @distance took @ns.  A
 * request larger than the last row is recorded scaled down to that row's
 * size.
 */
void vd_model_add(struct vd_model *m, enum vd_dir dir, s64 distance,
		  u32 sectors, u64 ns);

/*
 * Estimated service time (ns) of a request, with the fallback rules above.
 * Returns false, with *ns = 0, when the table of @dir has no sample at all.
 */
bool vd_model_estimate(const struct vd_model *m, enum vd_dir dir,
		       s64 distance, u32 sectors, u64 *ns);

/*
 * One cell as saved by a table dump: sample count and sum (ns).
 * Returns -1 if @row/@col are out of range.
 */
int vd_model_get_cell(const struct vd_model *m, enum vd_dir dir, u32 row,
		      u32 col, u32 *n, u64 *sum);

/*
 * Replaces one cell with @n samples summing to @sum (the shape a dump
 * saved): a dump of the result gives back the same n and sum.  n = 0 empties
 * the cell.  Returns -1 if a value is out of range (row, col, n >
 * VD_WINDOW, sum > n * VD_MAX_SAMPLE_NS).
 */
int vd_model_set_cell(struct vd_model *m, enum vd_dir dir, u32 row, u32 col,
		      u32 n, u64 sum);

/* A segment of the drive cache a virtual disk assumes. */
struct vd_dseg {
	u64 start;		/* first sector held */
	u64 end;		/* after the last sector held (frozen) */
	u64 lru;		/* last use (vd_seek.tick), larger = newer */
	bool valid;
};

/*
 * Where a request's seek distance is taken from: the ends of the last
 * VD_SEEK_ENDS requests.  A drive's cache holds a segment around each
 * recent request, so a read that continues any of them, not only the
 * latest, is a short skip.  Before any request the head is at sector 0.
 */
struct vd_seek {
	u64 end[VD_SEEK_ENDS];
	u32 nr;			/* ends kept, up to VD_SEEK_ENDS */
	u32 next;		/* slot the next end overwrites */
	/* The drive cache (struct vd_dcache), when the model has one. */
	u64 head;		/* sector after the last media access */
	bool ra_on;		/* segment ra is reading ahead */
	bool ra_pending;	/* ... from when the request just begun ends */
	u32 ra;
	u64 ra_base;		/* sectors of it read by time ra_t0 */
	u64 ra_t0;
	u64 ra_limit;		/* read-ahead stops at this sector */
	u64 tick;
	struct vd_dseg seg[VD_DCACHE_MAX_SEGS];
};

static inline void vd_seek_init(struct vd_seek *s)
{
	memset(s, 0, sizeof(*s));
}

/*
 * Signed distance of a request at @sector from the nearest kept end (the
 * smallest |distance|; the newer end on a tie).
 */
s64 vd_seek_distance(const struct vd_seek *s, u64 sector);

/* Keeps the end of a request (its last sector + 1), dropping the oldest. */
void vd_seek_note(struct vd_seek *s, u64 end);

/*
 * With a drive cache @dc: the distance of a request the drive begins at
 * @start (ns), and the cache's state after it.  0 for a read the drive's
 * cache holds or its read-ahead is bringing in (what it costs is the
 * sequential column's); otherwise the signed distance from the head, where
 * the last media access, or the read-ahead after it, left it.
 * vd_seek_end() must follow with the time the request ends.
 */
s64 vd_seek_begin(struct vd_seek *s, const struct vd_dcache *dc,
		  enum vd_dir dir, u64 sector, u32 sectors, u64 start);
void vd_seek_end(struct vd_seek *s, u64 done);

/*
 * The virtual disk: a single server fed a request stream in arrival order.
 * Each request starts when it arrives or when the previous one's serial
 * part ends, whichever is later, and takes the model's estimate for its
 * size and its seek distance (struct vd_seek) among the virtual requests:
 * with the model's drive cache, in the virtual disk's time.  Of that
 * estimate, the model's overlap_ns (at most all of it) is not serial: the
 * request completes that long after its serial part, while the next one's
 * runs, and never before the request ahead of it.  A request's price is
 * what it adds to the time the disk is busy (anything in flight): from
 * its arrival or the previous completion, whichever is later, to its own,
 * as the vdisk target measures a real device's.
 *
 * A request may name its stream (the task that issued it) and say how it
 * came (VD_WAITS, VD_JOINS).  VD_WAITS: its issuer waited for the stream's
 * last request before issuing this one (a reader's next read; not the
 * second piece of one request cut in two).  It arrives on the virtual disk
 * no earlier than that one completes there: the overlap is for requests
 * in flight together, and a reader whose reads the cache serves at once
 * sends them back to back, which on the bare disk it could not have done.
 * VD_JOINS: it is the rest of the stream's last request, cut in two above
 * the disk (redcap cuts reads and writes at a segment's end), which the
 * bare disk would have received whole.  When that request (of the same
 * stream, or of none) was the last this virtual disk received, in the same
 * direction, and ends where this one begins, the two are priced as one
 * request of both sizes at the first one's distance: what this one adds is
 * the larger request's price less the first's, and it is not counted as a
 * request of its own.  A device that charges a latency per request (a
 * network or cloud volume) would otherwise be priced twice its latency for
 * every read cut at a segment's end.
 */
#define VD_WAITS		1
#define VD_JOINS		2

#define VD_STREAMS		32	/* streams whose last completion is kept */

struct vd_stream {
	u32 id;			/* 0: a free slot */
	u64 done;		/* ns: the virtual completion of its last request */
};

struct vd_vdisk {
	u64 busy_until;		/* ns: when the last request completes */
	u64 serial_until;	/* ns: when the last request's serial part ends */
	struct vd_seek seek;	/* ends of the last virtual requests */
	u64 requests;
	u64 busy_ns;		/* sum of service times: the virtual I/O time */
	u64 unestimated;	/* requests the model could not price (empty) */
	s64 distance;		/* the last request's, as priced */
	struct vd_stream stream[VD_STREAMS];
	/* The last request, as one that joins it would grow it */
	u32 last_stream;
	enum vd_dir last_dir;
	u64 last_end;
	s64 last_distance;	/* the distance it was priced at ... */
	u64 last_sectors;	/* ... its size, joined pieces included ... */
	u64 last_ns;		/* ... and its price at both */
};

/* Starts an idle virtual disk with its head at sector 0. */
static inline void vd_vdisk_init(struct vd_vdisk *v)
{
	memset(v, 0, sizeof(*v));
}

/* Zeroes the counters; the queue and the recent request ends stay. */
static inline void vd_vdisk_reset_stats(struct vd_vdisk *v)
{
	v->requests = 0;
	v->busy_ns = 0;
	v->unestimated = 0;
}

/*
 * Queues a request arriving at @now (ns) from @stream (0: none) and returns
 * its virtual completion time; @how: VD_WAITS, VD_JOINS or 0 (above).  The
 * model is read, not changed.
 */
u64 vd_vdisk_submit(struct vd_vdisk *v, const struct vd_model *m,
		    enum vd_dir dir, u64 sector, u32 sectors, u64 now,
		    u32 stream, unsigned int how);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * dm-redcap: a RAM cache of disk segments with prefetch-on-miss (REDCAP).
 * Kernel glue around the portable core in rc-core.c: bios, pages, locks.
 *
 * The cache (struct redcap_cache) is an object of its own, shared by the
 * tables of one device that have the same origin and geometry, like
 * dm-thin's pools: a reload finds it in the constructor and allocates
 * nothing, and the live and the loaded table see one whole cache.
 */
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <linux/delay.h>
#include <linux/blkdev.h>
#include <linux/ioprio.h>
#include <linux/refcount.h>
#include <linux/sort.h>
#include <linux/shrinker.h>

#include "rc-args.h"
#include "rc-shadow.h"
#include "vdisk.h"

#define DM_MSG_PREFIX "redcap"

#define REDCAP_DROP_TIMEOUT_MS	10000
/* Entries one lock hold may walk (discards, drop_cache): docs/results lockhold. */
#define REDCAP_WALK_CHUNK	1024
/* Fill bios kept in reserve; beyond them a miss that finds no memory bypasses. */
#define REDCAP_FILL_POOL	64
/*
 * Write-back: entries a batch takes, requests it may plan, segments one
 * request spans, requests in flight in the background (a flush or a
 * suspend has as many as it needs), and how often the worker looks.
 */
#define REDCAP_WB_BATCH		32
#define REDCAP_WB_REQS		64
#define REDCAP_WB_SEGS		32
#define REDCAP_WB_DEPTH		4
#define REDCAP_WB_PERIOD	(HZ / 10)
#define REDCAP_WB_RETRY		HZ	/* after a write-back failed */
/* Tasks whose cut read's rest is told from a read they waited for. */
#define REDCAP_CUTS		16
/*
 * Giving memory back (rc_give_back()): entries a lock hold gives or
 * regrows, entries it looks at; after a regrow found no memory, the next
 * try waits this long.
 */
#define REDCAP_GIVE_CHUNK	16
#define REDCAP_GIVE_WALK	256
#define REDCAP_REGROW_RETRY	HZ

#ifdef REDCAP_FAULT_INJECTION
/*
 * Test builds only (make modules FAULT_INJECTION=1, as make check does):
 * widen race windows and fail allocations on demand.
 */
static unsigned int fi_finish_delay_us;
module_param(fi_finish_delay_us, uint, 0644);
MODULE_PARM_DESC(fi_finish_delay_us,
		 "test builds: sleep this long in a failed or stale fill's completion");
static unsigned int fi_fill_alloc_fail;
module_param(fi_fill_alloc_fail, uint, 0644);
MODULE_PARM_DESC(fi_fill_alloc_fail, "test builds: fail every Nth fill set-up (0: none)");
static unsigned int fi_endio_delay_us;
module_param(fi_endio_delay_us, uint, 0644);
MODULE_PARM_DESC(fi_endio_delay_us,
		 "test builds: wait this long in a fill's bio completion, before its work is queued");
static bool fi_fill_hold;
module_param(fi_fill_hold, bool, 0644);
MODULE_PARM_DESC(fi_fill_hold,
		 "test builds: a fill's work waits while this is set (at most 60 s), its data not yet cached");
static unsigned int fi_preresume_delay_us;
module_param(fi_preresume_delay_us, uint, 0644);
MODULE_PARM_DESC(fi_preresume_delay_us,
		 "test builds: sleep this long in preresume, with the new table live (at most 10 s)");
static bool fi_warn;
module_param(fi_warn, bool, 0644);
MODULE_PARM_DESC(fi_warn,
		 "test builds: the next bio mapped fires a WARN_ON_ONCE (the gate's own test)");
static unsigned int fi_ctr_alloc_fail;
module_param(fi_ctr_alloc_fail, uint, 0644);
MODULE_PARM_DESC(fi_ctr_alloc_fail,
		 "test builds: a new cache's Nth page allocation fails (0: none)");
static unsigned int fi_ctr_page_delay_us;
module_param(fi_ctr_page_delay_us, uint, 0644);
MODULE_PARM_DESC(fi_ctr_page_delay_us,
		 "test builds: sleep this long (at most 10 ms) before each page of a new cache");
static unsigned int fi_drop_timeout_ms;
module_param(fi_drop_timeout_ms, uint, 0644);
MODULE_PARM_DESC(fi_drop_timeout_ms,
		 "test builds: drop_cache waits this long for busy segments (0: 10 s)");
static bool fi_flush_broken;
module_param(fi_flush_broken, bool, 0644);
MODULE_PARM_DESC(fi_flush_broken,
		 "test builds: a flush completes at once, nothing written back (crash tests' control)");
static bool fi_wb_hold;
module_param(fi_wb_hold, bool, 0644);
MODULE_PARM_DESC(fi_wb_hold,
		 "test builds: no write-back in the background (flushes and suspend still write back)");
static bool fi_hdc_alloc_fail;
module_param(fi_hdc_alloc_fail, bool, 0644);
MODULE_PARM_DESC(fi_hdc_alloc_fail, "test builds: HDC's choice finds no memory");
static bool fi_regrow_alloc_fail;
module_param(fi_regrow_alloc_fail, bool, 0644);
MODULE_PARM_DESC(fi_regrow_alloc_fail,
		 "test builds: the pages given back cannot be allocated again");
static bool fi_shrinker_fail;
module_param(fi_shrinker_fail, bool, 0644);
MODULE_PARM_DESC(fi_shrinker_fail, "test builds: a new cache's shrinker cannot be registered");
static bool fi_shadow_alloc_fail;
module_param(fi_shadow_alloc_fail, bool, 0644);
MODULE_PARM_DESC(fi_shadow_alloc_fail,
		 "test builds: the shadow caches find no memory (a new cache's, the shadows message's)");
static atomic_t fi_fill_allocs = ATOMIC_INIT(0);

static bool redcap_fi_alloc_fail(void)
{
	unsigned int n = READ_ONCE(fi_fill_alloc_fail);

	return n && !((unsigned int)atomic_inc_return(&fi_fill_allocs) % n);
}

/* A kernel report on demand, which make check's kernel-log scan must catch. */
static void redcap_fi_warn(void)
{
	WARN_ON_ONCE(READ_ONCE(fi_warn));
}

/* Before page @i of a new cache: a delay, then whether its allocation fails. */
static bool redcap_fi_ctr_page_fails(size_t i)
{
	unsigned int us = READ_ONCE(fi_ctr_page_delay_us);

	if (us)
		fsleep(min(us, 10000u));
	return i + 1 == READ_ONCE(fi_ctr_alloc_fail);
}

static unsigned int redcap_drop_timeout_ms(void)
{
	return READ_ONCE(fi_drop_timeout_ms) ?: REDCAP_DROP_TIMEOUT_MS;
}

static bool redcap_fi_hdc_alloc_fail(void)
{
	return READ_ONCE(fi_hdc_alloc_fail);
}

static bool redcap_fi_shadow_alloc_fail(void)
{
	return READ_ONCE(fi_shadow_alloc_fail);
}

static bool redcap_fi_regrow_alloc_fail(void)
{
	return READ_ONCE(fi_regrow_alloc_fail);
}

static bool redcap_fi_shrinker_fail(void)
{
	return READ_ONCE(fi_shrinker_fail);
}

static bool redcap_fi_wb_hold(void)
{
	return READ_ONCE(fi_wb_hold);
}

static bool redcap_fi_flush_broken(void)
{
	return READ_ONCE(fi_flush_broken);
}

static void redcap_fi_finish_delay(void)
{
	unsigned int us = READ_ONCE(fi_finish_delay_us);

	if (us)
		fsleep(us);
}

/*
 * A fill held with its data read and not yet in the cache, in process
 * context whatever context its bio completed in (fi_endio_delay_us cannot
 * sleep where the completion runs in interrupt context), until the test
 * lets it go: no time to guess.
 */
static void redcap_fi_fill_hold(void)
{
	unsigned long end = jiffies + 60 * HZ;

	while (READ_ONCE(fi_fill_hold) && time_before(jiffies, end))
		fsleep(1000);
}

static void redcap_fi_preresume_delay(void)
{
	unsigned int us = min(READ_ONCE(fi_preresume_delay_us), 10000000u);

	if (us)
		fsleep(us);
}

/*
 * A fill's completion may run in a thread (a driver that completes there,
 * dm-delay's worker) or in interrupt context: sleep there, at most 2 s,
 * busy-wait here, at most 10 ms.
 */
static void redcap_fi_endio_delay(void)
{
	unsigned int us = READ_ONCE(fi_endio_delay_us);

	if (!us)
		return;
	if (preemptible())
		fsleep(min(us, 2000000u));
	else
		udelay(min(us, 10000u));
}
#else
static inline bool redcap_fi_alloc_fail(void)
{
	return false;
}

static inline void redcap_fi_warn(void)
{
}

static inline bool redcap_fi_ctr_page_fails(size_t i)
{
	return false;
}

static inline unsigned int redcap_drop_timeout_ms(void)
{
	return REDCAP_DROP_TIMEOUT_MS;
}

static inline bool redcap_fi_wb_hold(void)
{
	return false;
}

static inline bool redcap_fi_flush_broken(void)
{
	return false;
}

static inline bool redcap_fi_regrow_alloc_fail(void)
{
	return false;
}

static inline bool redcap_fi_shrinker_fail(void)
{
	return false;
}

static inline bool redcap_fi_shadow_alloc_fail(void)
{
	return false;
}

static inline bool redcap_fi_hdc_alloc_fail(void)
{
	return false;
}

static inline void redcap_fi_finish_delay(void)
{
}

static inline void redcap_fi_endio_delay(void)
{
}

static inline void redcap_fi_fill_hold(void)
{
}

static inline void redcap_fi_preresume_delay(void)
{
}
#endif

/* Glue-side state of one cache entry; the core keeps the rest. */
struct redcap_entry {
	struct bio_list waiters;	/* reads waiting on the fill, miss first */
	u32 dirty_at;			/* jiffies when it went dirty (the write cache) */
};

#define REDCAP_NO_OWN	U32_MAX

/*
 * One fill: a run of contiguous segments read from the origin in one
 * request, into their entries (idx[], in segment order): a miss's
 * segment (own: its reader is the entry's first waiter) and those ahead
 * of its stream, which no read started; or a whole-segment write's data
 * (from_write, one entry).  It owns its state, so that nothing of it is
 * shared with an entry's next user once the core has freed the entry,
 * and its own work item, so that its completion touches the cache only
 * through a queued work that teardown waits for.  From the cache's
 * bioset, whose front pad it is: the bio comes last.
 */
struct redcap_fill {
	struct redcap_cache *cc;
	struct block_device *bdev;	/* the origin, for waiters re-sent to it */
	struct work_struct work;
	u64 start_ns;
	sector_t sector;		/* the request: whole segments from here, */
	u32 sectors;			/* the last one clipped at the end */
	u32 nr;
	u32 own;			/* which entry a miss started, or REDCAP_NO_OWN */
	u32 idx[RC_FILL_RUN_MAX];
	blk_status_t status;
	bool from_write;
	struct bio bio;
};

/*
 * The cache: the core's state, the segment pages and the fill machinery.
 * Found by (device, position, origin, geometry); a reference per table.
 */
struct redcap_cache {
	struct list_head list;		/* on redcap_caches */
	refcount_t ref;			/* one per table; under redcap_caches_lock */
	struct mapped_device *md;
	sector_t begin, len;		/* the target's place in the table */
	dev_t origin_dev;
	u32 seg_sectors;
	u32 nr_segs;
	u32 pages_per_seg;

	spinlock_t lock;		/* protects cache, entry waiters and below */
	struct rc_cache *cache;		/* with its policy state */
	void *core_mem;
	struct redcap_entry *ents;
	struct page **pages;		/* nr_segs * pages_per_seg; NULL: a bare entry's */
	/*
	 * The pages of an inactive cache go back to the kernel when it asks
	 * (a shrinker), and come back once the cache is active again
	 * (regrow, on wq); rc_give_back().  Before 6.7 (shrinker_alloc(),
	 * SHRINKER_ALLOCATED) the shrinker is ours to hold.
	 */
#ifndef SHRINKER_ALLOCATED
	struct shrinker shrinker_s;
#endif
	struct shrinker *shrinker;
	u32 give_from;			/* rc_give_back()'s walk; under lock */
	struct work_struct regrow;
	unsigned long regrow_after;	/* jiffies: no regrow before */

	struct bio_set bs;		/* fills: struct redcap_fill */
	struct workqueue_struct *wq;	/* fill completions, HDC's work; unbound */
	atomic_t fills_inflight;
	atomic_t origin_inflight;	/* bios remapped or re-sent to the origin */
	atomic_t reads_inflight;	/* reads map() did not complete (pb->read_inflight) */
	u64 last_bio_ns;		/* the last bio map saw (WRITE_ONCE) */
	wait_queue_head_t drain_wq;

	/*
	 * The virtual disks fed every read and write redcap receives, priced
	 * with the model of the table that received them: what they would
	 * have cost on the bare disk, and what the cache's own stream costs
	 * (or, inactive, would).
	 */
	struct vd_vdisk vdisk;
	struct vd_vdisk vdisk_cache;
	/*
	 * Bios map() cut, by task (a slot per pid modulo REDCAP_CUTS): the
	 * task's next bio starting at @sector is the rest of the same
	 * request, not a read it waited for.  Under lock.
	 */
	struct {
		pid_t pid;
		sector_t sector;
	} cut[REDCAP_CUTS];

	struct rc_hot hot;		/* HDC's miss counts, in hot_mem; under lock */
	void *hot_mem;
	/*
	 * The shadow caches of the reads received (rc-shadow.h), in
	 * shadow_mem, under lock; halved when hot_periods moves (HDC's
	 * period: the last one weighs as much as all before it).
	 */
	struct rc_shadow shadow;
	void *shadow_mem;
	/*
	 * HDC's chosen set, by LBA (the core's rc_hdc_want()), replaced under
	 * hdc_lock and lock (the worker's choice, prefill), its generation,
	 * and the next of it to fill (the resumed table's worker's, under lock).
	 */
	struct mutex hdc_lock;
	u64 *hdc_chosen;
	u32 hdc_nr, hdc_gen, hdc_next;

	/*
	 * The write cache (rc_wc_write()): dirty units go to the origin from
	 * wb_work, one batch at a time under wb_mutex, in requests of
	 * struct redcap_wb; flushes and ranges that must wait for them, and
	 * writes that wait on an entry's write, are queued under lock.
	 */
	struct block_device *origin_bdev;
	struct block_device *dm_bdev;	/* ours: is its write cache on? */
	struct workqueue_struct *wbq;
	struct delayed_work wb_work;
	struct work_struct wb_resume;
	struct mutex wb_mutex;
	struct bio_set wbs;
	struct rc_wb_item wb_items[REDCAP_WB_BATCH];
	struct rc_wb_req wb_reqs[REDCAP_WB_REQS];
	struct bio_list wb_waiting;
	struct bio_list wb_flushes;
	struct bio_list wb_ranges;
	atomic_t wb_inflight;
	wait_queue_head_t wb_wait;
	int wb_error;			/* the last write-back's error, or 0 */
	u32 wb_failed_seen;		/* cache->wb_failed at wb_work's last run */
};

/* One write-back request: dirty units of up to REDCAP_WB_SEGS entries. */
struct redcap_wb {
	struct redcap_cache *cc;
	sector_t sector;
	u32 sectors;
	u32 nr;
	u32 idx[REDCAP_WB_SEGS];
	struct bio bio;
};

/*
 * HDC's worker, one per table while it is resumed: at each period's end
 * (cache->hot_periods moved) or when more is pinned than the share allows
 * (it was cut), it chooses the set to pin from the miss counts and fills
 * the segments of it not cached, one at a time while the origin is idle.
 */
struct redcap_hdc {
	struct delayed_work work;
	u32 periods;			/* hot_periods when it last chose */
};

/* One table's target: its origin, its features and its model. */
struct redcap_c {
	struct dm_target *ti;
	struct dm_dev *origin;
	struct redcap_cache *cc;
	bool applied;			/* its features were applied to the cache */
	enum rc_policy policy;		/* the table's features */
	enum rc_write_policy write_policy;
	enum rc_estimator estimator;

	/*
	 * The latency model of the disk below, or NULL; when set, dm-vdisk's
	 * API (vm_api) is held with symbol_get(): dm-redcap links to nothing
	 * of dm-vdisk and loads without it.
	 */
	const struct vdisk_model_api *vm_api;
	struct vdisk_model *vm;
	dev_t model_dev;
	bool model_explicit;		/* named by the model feature */

	struct redcap_hdc hdc;
};

enum redcap_pb_kind {
	PB_ORIGIN,	/* remapped to the origin, nothing to do at end_io */
	PB_BYPASS,	/* a read redcap sent to the origin: timed at end_io */
	PB_CACHE,	/* completed by redcap from RAM */
	PB_WRITE,	/* write within one segment */
	PB_RANGE,	/* discard / write-zeroes over a range of segments */
	PB_MERGE,	/* a read sent to the origin, entry idx's units copied over it */
	PB_THROUGH,	/* a write to the origin that keeps entry idx coherent */
};

struct redcap_pb {
	enum redcap_pb_kind kind;
	u32 cookie;
	u32 idx;
	struct redcap_c *rc;	/* a write queued by the write cache, for its redo */
	u64 start_ns;		/* when map saw the bio */
	bool read_inflight;	/* counted in cc->reads_inflight */
	bool cut;		/* a write map() cut: its rest follows */
	u64 seg;
	struct bvec_iter saved_iter;	/* as map saw it (a completed bio's is spent) */
};

static LIST_HEAD(redcap_caches);
static DEFINE_MUTEX(redcap_caches_lock);

static struct redcap_pb *redcap_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct redcap_pb));
}

/*
 * Copy between @bio's data at @iter and the buffer of entry @idx.  Bios
 * read or written through the cache never span segments (redcap_cut()),
 * so the offset is within the entry.
 */
static void redcap_copy(struct redcap_cache *cc, u32 idx, struct bio *bio,
			struct bvec_iter iter, bool to_bio)
{
	struct page **pages = cc->pages + (size_t)idx * cc->pages_per_seg;
	size_t off = (size_t)(iter.bi_sector & (cc->seg_sectors - 1)) << SECTOR_SHIFT;
	struct bvec_iter it;
	struct bio_vec bv;

	__bio_for_each_segment(bv, bio, it, iter) {
		unsigned int done = 0;

		while (done < bv.bv_len) {
			struct page *cp = pages[off >> PAGE_SHIFT];
			size_t coff = offset_in_page(off);
			unsigned int n = min_t(size_t, bv.bv_len - done, PAGE_SIZE - coff);

			if (to_bio)
				memcpy_page(bv.bv_page, bv.bv_offset + done, cp, coff, n);
			else
				memcpy_page(cp, coff, bv.bv_page, bv.bv_offset + done, n);
			done += n;
			off += n;
		}
	}
}

/* Send @bio to the origin (returned DM_MAPIO_REMAPPED): end_io counts it back. */
static void redcap_remap(struct redcap_c *rc, struct bio *bio)
{
	atomic_inc(&rc->cc->origin_inflight);
	bio_set_dev(bio, rc->origin->bdev);
}

/* Report @ev to the core (cc->lock not held). */
static void redcap_event(struct redcap_cache *cc, const struct rc_event *ev)
{
	unsigned long flags;

	spin_lock_irqsave(&cc->lock, flags);
	rc_event(cc->cache, ev);
	spin_unlock_irqrestore(&cc->lock, flags);
}

/*
 * A fill's bio completed (any context).  Queueing its work is the last
 * thing done here: from then on the work owns the fill, and teardown
 * (which flushes the workqueue) waits for it.
 */
static void redcap_fill_endio(struct bio *bio)
{
	struct redcap_fill *f = container_of(bio, struct redcap_fill, bio);
	struct redcap_cache *cc = f->cc;

	f->status = bio->bi_status;
	redcap_event(cc, &(struct rc_event){ .kind = RC_EV_FILL,
		     .error = blk_status_to_errno(f->status), .sector = f->sector,
		     .sectors = f->sectors, .start = f->start_ns, .end = ktime_get_ns() });
	redcap_fi_endio_delay();
	queue_work(cc->wq, &f->work);
}

/* Send @bio, which waited on a fill that cannot serve it, to the origin. */
static void redcap_resend(struct redcap_cache *cc, struct block_device *bdev,
			  struct bio *bio)
{
	struct redcap_pb *pb = redcap_pb(bio);

	pb->kind = PB_BYPASS;
	pb->start_ns = ktime_get_ns();
	bio_set_dev(bio, bdev);
	atomic_inc(&cc->origin_inflight);
	submit_bio_noacct(bio);
}

/* Complete the waiters of entry @k of a finished fill (process context). */
static void redcap_fill_finish(struct redcap_fill *f, u32 k, int error)
{
	struct redcap_cache *cc = f->cc;
	sector_t start = f->sector + (sector_t)k * cc->seg_sectors;
	u32 idx = f->idx[k], sectors = min_t(sector_t, cc->seg_sectors,
					       f->sector + f->sectors - start);
	/* The first waiter of a miss's entry is the miss; the others have none. */
	u32 n = 0, own = k == f->own;
	enum rc_fill_action act;
	struct bio_list waiters;
	unsigned long flags;
	struct bio *bio;

	spin_lock_irqsave(&cc->lock, flags);
	/* k > 0: it went down in the request of the entry before */
	act = rc_fill_done(cc->cache, idx, error, sectors, k > 0);
	waiters = cc->ents[idx].waiters;
	bio_list_init(&cc->ents[idx].waiters);
	spin_unlock_irqrestore(&cc->lock, flags);

	if (act != RC_FILL_SERVE) {
		/*
		 * Stale: the origin has newer data.  Error: one bad block must
		 * not fail reads of the good ones in its segment; each reader
		 * gets the origin's own answer.  The entry is free again and
		 * may already be another fill's: only @f is used from here
		 * (rc_fill_waiters_done() does not touch the entry).
		 */
		redcap_fi_finish_delay();
		while ((bio = bio_list_pop(&waiters))) {
			redcap_resend(cc, f->bdev, bio);
			n++;
		}
	} else {
		while ((bio = bio_list_pop(&waiters))) {
			struct redcap_pb *pb = redcap_pb(bio);

			redcap_copy(cc, idx, bio, bio->bi_iter, true);
			redcap_event(cc, &(struct rc_event){ .kind = RC_EV_WAITED,
				     .start = pb->start_ns, .end = ktime_get_ns() });
			bio_endio(bio);
			n++;
		}
	}
	spin_lock_irqsave(&cc->lock, flags);
	rc_fill_waiters_done(cc->cache, idx, act, n, own);
	spin_unlock_irqrestore(&cc->lock, flags);
}

/* Complete the entries of one finished fill (process context). */
static void redcap_fill_work(struct work_struct *ws)
{
	struct redcap_fill *f = container_of(ws, struct redcap_fill, work);
	struct redcap_cache *cc = f->cc;
	int error = blk_status_to_errno(f->status);
	u32 k;

	redcap_fi_fill_hold();
	if (error)
		DMERR_LIMIT("%u:%u: fill of sectors %llu+%u failed: %d",
			    MAJOR(f->bdev->bd_dev), MINOR(f->bdev->bd_dev),
			    (unsigned long long)f->sector, f->sectors, error);
	for (k = 0; k < f->nr; k++)
		redcap_fill_finish(f, k, error);
	bio_put(&f->bio);
	/* Drain flushes the workqueue after this reaches zero: cc outlives us. */
	if (atomic_dec_and_test(&cc->fills_inflight))
		wake_up_all(&cc->drain_wq);
}

/*
 * A fill of @sectors at @sector, its entries not yet set: from the bioset
 * without sleeping (map must not wait on the fills in flight to free one;
 * end_io may hold the cache lock), or NULL.
 */
static struct redcap_fill *redcap_fill_alloc(struct redcap_c *rc, unsigned int nr_vecs,
					     sector_t sector, u32 sectors)
{
	struct redcap_cache *cc = rc->cc;
	struct redcap_fill *f;
	struct bio *bio;

	if (redcap_fi_alloc_fail())
		return NULL;
	bio = bio_alloc_bioset(rc->origin->bdev, nr_vecs, REQ_OP_READ,
			       GFP_NOWAIT | __GFP_NOWARN, &cc->bs);
	if (!bio)
		return NULL;
	f = container_of(bio, struct redcap_fill, bio);
	f->cc = cc;
	f->bdev = rc->origin->bdev;
	INIT_WORK(&f->work, redcap_fill_work);
	f->nr = 0;
	f->own = REDCAP_NO_OWN;
	f->sector = sector;
	f->sectors = sectors;
	f->status = BLK_STS_OK;
	f->from_write = false;
	f->start_ns = ktime_get_ns();
	return f;
}

/*
 * Fills of up to this many segments go down in one request: the bio
 * holds a vec for each page of them.
 */
static u32 redcap_run_max(struct redcap_cache *cc)
{
	return clamp_t(u32, BIO_MAX_VECS / cc->pages_per_seg, 1, RC_FILL_RUN_MAX);
}

/*
 * Read the segments of request @r of @plan into their entries.  Returns
 * false, having started nothing, when no fill can be set up.
 */
static bool redcap_start_req(struct redcap_c *rc, const struct rc_read_plan *plan,
			     const struct rc_fill_req *r, bool idle)
{
	const struct rc_fill_item *it = plan->fills + r->first;
	unsigned int bytes = r->sectors << SECTOR_SHIFT;
	struct redcap_cache *cc = rc->cc;
	u32 nr = r->nr;
	struct redcap_fill *f;
	unsigned int i, k;

	f = redcap_fill_alloc(rc, DIV_ROUND_UP(bytes, PAGE_SIZE), r->sector, r->sectors);
	if (!f)
		return false;
	f->bio.bi_iter.bi_sector = r->sector;
	for (k = 0; k < nr; k++) {
		struct page **pages = cc->pages + (size_t)it[k].idx * cc->pages_per_seg;

		f->idx[k] = it[k].idx;
		if (rc_fill_own(&it[k]))
			f->own = k;
		for (i = 0; bytes && i < cc->pages_per_seg; i++) {
			unsigned int n = min_t(unsigned int, bytes, PAGE_SIZE);

			/* Cannot fail: the bio has a vec for every page. */
			if (WARN_ON_ONCE(bio_add_page(&f->bio, pages[i], n, 0) != n))
				break;
			bytes -= n;
		}
	}
	f->nr = nr;
	if (idle)
		f->bio.bi_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
	f->bio.bi_end_io = redcap_fill_endio;
	atomic_inc(&cc->fills_inflight);
	submit_bio_noacct(&f->bio);
	return true;
}

/*
 * No fill could be set up on entry @idx for the miss @bio, or along the
 * rest of its read or ahead of a stream (@bio NULL): free the entry and
 * send @bio and whatever queued on it meanwhile to the origin.
 */
static void redcap_cancel_fill(struct redcap_c *rc, u32 idx, struct bio *bio)
{
	struct redcap_cache *cc = rc->cc;
	struct bio_list waiters;
	unsigned long flags;
	struct bio *w;

	spin_lock_irqsave(&cc->lock, flags);
	rc_fill_cancel(cc->cache, idx);
	waiters = cc->ents[idx].waiters;
	bio_list_init(&cc->ents[idx].waiters);
	rc_count_resent(cc->cache, bio_list_size(&waiters) - !!bio);
	spin_unlock_irqrestore(&cc->lock, flags);

	/* The miss was queued first, in the same lock hold as the decision. */
	if (bio) {
		w = bio_list_pop(&waiters);
		WARN_ON_ONCE(w != bio);
	}
	while ((w = bio_list_pop(&waiters)))
		redcap_resend(cc, rc->origin->bdev, w);
}

/*
 * Play a request on virtual disk @v; *ns is its virtual service time, and
 * the return value false if the model could not price it.  cc->lock held.
 */
static bool redcap_vdisk_submit(struct redcap_c *rc, struct vd_vdisk *v, enum vd_dir dir,
				sector_t sector, u32 sectors, u64 now, u32 stream, unsigned int how,
				u64 *ns)
{
	u64 busy = v->busy_ns, unest = v->unestimated;

	*ns = 0;
	if (!rc->vm)
		return false;
	rc->vm_api->vdisk_submit(rc->vm, v, dir, sector, sectors, now, stream, how);
	*ns = v->busy_ns - busy;
	return v->unestimated == unest;
}

/*
 * The bare disk would write what redcap receives; the cache's virtual disk
 * sees the write when it goes down now (@down: not completed in the cache).
 */
static void redcap_vdisk_write(struct redcap_c *rc, struct bio *bio, u64 now, bool down,
			       unsigned int how)
{
	u64 ns;

	redcap_vdisk_submit(rc, &rc->cc->vdisk, VD_WRITE, bio->bi_iter.bi_sector,
			    bio_sectors(bio), now, 0, how, &ns);
	if (down)
		redcap_vdisk_submit(rc, &rc->cc->vdisk_cache, VD_WRITE, bio->bi_iter.bi_sector,
				    bio_sectors(bio), now, 0, 0, &ns);
}

/* A shadow's fill, priced by the model. */
static bool redcap_shadow_price(void *ctx, s64 distance, u32 sectors, u64 *ns)
{
	struct redcap_c *rc = ctx;

	return rc->vm_api->estimate(rc->vm, VD_READ, distance, sectors, ns);
}

/*
 * A read's prices: its task's stream, and how the first request played on
 * each virtual disk came (vd_vdisk_submit()): after the task's last (no
 * read in flight, and not the rest of one map() cut), or, on the bare
 * disk, as the rest of that cut read, which it would have received whole.
 */
struct redcap_price_ctx {
	struct redcap_c *rc;
	u32 stream;
	unsigned int how[2];	/* by enum rc_vd */
};

/*
 * rc_map_read()'s prices: a request played on one of the two virtual
 * disks.  The read received goes to the shadows with its bare price.
 */
static bool redcap_price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	struct redcap_price_ctx *pc = ctx;
	struct redcap_c *rc = pc->rc;
	struct redcap_cache *cc = rc->cc;
	bool ok;

	ok = redcap_vdisk_submit(rc, vd == RC_VD_BARE ? &cc->vdisk : &cc->vdisk_cache,
				 VD_READ, sector, sectors, now, pc->stream, pc->how[vd], ns);
	pc->how[vd] = 0;
	if (vd == RC_VD_BARE && rc->vm)
		rc_shadow_read(&cc->shadow, sector, sectors, cc->vdisk.distance, *ns,
			       cc->cache->hot_periods);
	return ok;
}

/*
 * Start the fills of @plan (any context map runs in), one request per run
 * of contiguous segments, and send @down, the read it bypasses (remapped;
 * at @sector on the target), down among them in sector order: a stream's
 * batch goes down right after the read it follows, as rc_map_read()
 * priced them.  False if the miss's own fill (its reader @bio) could not
 * be set up: its entry is freed, and @bio is the caller's to send to the
 * origin.
 */
static bool redcap_start_fills(struct redcap_c *rc, struct rc_read_plan *plan, struct bio *bio,
			       struct bio *down, sector_t sector)
{
	const struct rc_fill_item *f = plan->fills;
	const struct rc_fill_req *r;
	bool own = true;
	u32 k;

	for (r = plan->reqs; r < plan->reqs + plan->nr_reqs; r++) {
		if (down && r->sector > sector) {
			dm_submit_bio_remap(down, NULL);
			down = NULL;
		}
		if (redcap_start_req(rc, plan, r, false))
			continue;
		for (k = r->first; k < r->first + r->nr; k++) {
			redcap_cancel_fill(rc, f[k].idx, rc_fill_own(&f[k]) ? bio : NULL);
			own &= !rc_fill_own(&f[k]);
		}
	}
	if (down)
		dm_submit_bio_remap(down, NULL);
	return own;
}

/*
 * Keep the first @sectors of @bio, to the end of its segment or of what
 * was joined; dm sends the rest to map() as a bio of its own.
 */
static bool redcap_cut(struct bio *bio, u32 sectors)
{
	if (sectors >= bio_sectors(bio))
		return false;
	dm_accept_partial_bio(bio, sectors);
	redcap_pb(bio)->saved_iter = bio->bi_iter;
	return true;
}

/*
 * Whether the current task's bio at @sector is the rest of the one its
 * last map() cut (the bare disk would have received the two as one
 * request); the cut is forgotten.  cc->lock held.
 */
static bool redcap_cut_rest(struct redcap_cache *cc, sector_t sector)
{
	pid_t pid = task_pid_nr(current);
	u32 slot = (u32)pid % REDCAP_CUTS;
	bool rest = cc->cut[slot].pid == pid && cc->cut[slot].sector == sector;

	cc->cut[slot].pid = 0;
	return rest;
}

/* map() cut the current task's bio at @end: its rest follows.  cc->lock held. */
static void redcap_cut_note(struct redcap_cache *cc, sector_t end)
{
	pid_t pid = task_pid_nr(current);

	cc->cut[(u32)pid % REDCAP_CUTS].pid = pid;
	cc->cut[(u32)pid % REDCAP_CUTS].sector = end;
}

/* After rc_regrow_due() said so under the lock. */
static void redcap_regrow_kick(struct redcap_cache *cc)
{
	if (time_after_eq(jiffies, READ_ONCE(cc->regrow_after)))
		queue_work(cc->wq, &cc->regrow);
}

/*
 * A read goes to rc_map_read(), which takes its piece in its first
 * segment or, for a bypass, the pieces after it that may go to the disk
 * with it (a read the cache does not serve goes down as received, not cut
 * at every segment boundary).  What is not taken comes back to map() as a
 * bio of its own.
 */
static int redcap_map_read(struct redcap_c *rc, struct bio *bio)
{
	struct redcap_cache *cc = rc->cc;
	struct redcap_pb *pb = redcap_pb(bio);
	pid_t pid = task_pid_nr(current);
	struct redcap_price_ctx pc = { .rc = rc, .stream = pid };
	const struct rc_pricer pricer = { .price = redcap_price, .ctx = &pc, .capacity = cc->len,
					  .run_max = redcap_run_max(cc) };
	sector_t sector = bio->bi_iter.bi_sector;
	struct rc_read_plan plan;
	unsigned long flags;
	bool regrow;

	spin_lock_irqsave(&cc->lock, flags);
	/*
	 * With no other read in flight, this one's task waited for its last
	 * (unless this is the rest of one map() cut): on the bare disk it
	 * could not have sent this one sooner than that one completed.  The
	 * rest of a cut read joins it there.
	 */
	if (redcap_cut_rest(cc, sector))
		pc.how[RC_VD_BARE] = VD_JOINS;
	else if (!atomic_read(&cc->reads_inflight))
		pc.how[RC_VD_BARE] = pc.how[RC_VD_CACHE] = VD_WAITS;
	rc_map_read(cc->cache, sector, bio_sectors(bio), pb->start_ns, &pricer, &plan);
	if (plan.sectors < bio_sectors(bio))
		redcap_cut_note(cc, sector + plan.sectors);
	if (plan.act != RC_READ_HIT) {
		pb->read_inflight = true;
		atomic_inc(&cc->reads_inflight);
	}
	/* Before the bio is queued on a fill, which may end on another CPU. */
	redcap_cut(bio, plan.sectors);
	if (plan.act == RC_READ_WAIT || plan.act == RC_READ_FILL) {
		pb->kind = PB_CACHE;
		bio_list_add(&cc->ents[plan.idx].waiters, bio);
	}
	regrow = unlikely(cc->cache->nr_bare) && rc_regrow_due(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (regrow)
		redcap_regrow_kick(cc);

	if (plan.act == RC_READ_BYPASS || plan.act == RC_READ_MERGE) {
		pb->kind = plan.act == RC_READ_MERGE ? PB_MERGE : PB_BYPASS;
		pb->idx = plan.idx;
		redcap_remap(rc, bio);
		if (!plan.nr_reqs)
			return DM_MAPIO_REMAPPED;
		/* down with its plan's requests, in sector order */
		redcap_start_fills(rc, &plan, NULL, bio, sector);
		return DM_MAPIO_SUBMITTED;
	}
	if (!redcap_start_fills(rc, &plan, plan.act == RC_READ_FILL ? bio : NULL, NULL, 0)) {
		/* the miss's own fill could not be set up */
		pb->kind = PB_BYPASS;
		redcap_remap(rc, bio);
		return DM_MAPIO_REMAPPED;
	}
	if (plan.act == RC_READ_HIT) {
		pb->kind = PB_CACHE;
		redcap_copy(cc, plan.idx, bio, bio->bi_iter, true);
		redcap_event(cc, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx,
			     .sectors = bio_sectors(bio), .start = pb->start_ns,
			     .end = ktime_get_ns() });
		bio_endio(bio);
	}
	return DM_MAPIO_SUBMITTED;	/* or queued on its fill */
}

/* --- the write cache (rc_wc_write()) ------------------------------------ */

/* Whether the device's write cache is on: writing "write through" to queue/write_cache turns it off. */
static bool redcap_wc_enabled(struct redcap_cache *cc)
{
	return bdev_write_cache(cc->dm_bdev);
}

/* Write-back now (@now), or within its period. */
static void redcap_wb_kick(struct redcap_cache *cc, bool now)
{
	if (now)
		mod_delayed_work(cc->wbq, &cc->wb_work, 0);
	else
		queue_delayed_work(cc->wbq, &cc->wb_work, REDCAP_WB_PERIOD);
}

/*
 * An empty flush, while the write cache is on and holds something the
 * origin does not (rc_wb_flush_direct()): queued for the write-back
 * worker, which completes it once what was written before it is on the
 * origin and the origin is flushed.  False: the origin's to handle.
 */
static bool redcap_wc_flush(struct redcap_cache *cc, struct bio *bio)
{
	unsigned long flags;
	bool on;

	spin_lock_irqsave(&cc->lock, flags);
	on = rc_wc_on(cc->cache) && !rc_wb_flush_direct(cc->cache);
	/* Only a flush redcap completes is PB_CACHE: end_io counts the others back. */
	if (on)
		redcap_pb(bio)->kind = PB_CACHE;
	if (on && !redcap_fi_flush_broken())
		bio_list_add(&cc->wb_flushes, bio);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (on && redcap_fi_flush_broken())
		bio_endio(bio);
	else if (on)
		redcap_wb_kick(cc, true);
	return on;
}

/* Copy the units @mask of entry @idx over @bio's data at @iter (RC_READ_MERGE). */
static void redcap_copy_units(struct redcap_cache *cc, u32 idx, struct bio *bio,
			      struct bvec_iter iter, u64 mask)
{
	u32 ushift = cc->cache->unit_shift, u, e;
	sector_t start = iter.bi_sector, end = start + (iter.bi_size >> SECTOR_SHIFT);
	sector_t base = start & ~(sector_t)(cc->seg_sectors - 1), s0, s1;
	struct bvec_iter it;

	for (u = 0; rc_unit_run(mask, &u, &e); u = e) {
		s0 = max_t(sector_t, start, base + ((sector_t)u << ushift));
		s1 = min_t(sector_t, end, base + ((sector_t)e << ushift));
		if (s0 >= s1)
			continue;
		it = iter;
		bio_advance_iter(bio, &it, (s0 - start) << SECTOR_SHIFT);
		it.bi_size = (s1 - s0) << SECTOR_SHIFT;
		redcap_copy(cc, idx, bio, it, true);
	}
}

/*
 * A write within one segment (map cut it).  With the write cache off, it
 * goes down and invalidates or updates the cached copy (rc_write_start()).
 * On (rc_wc_write()), it completes in the cache, goes through keeping the
 * entry coherent, goes down the same ordinary way, or waits for the
 * entry's write to the origin.  From map (@from_map: returns what map
 * returns) or from the work that redoes the writes that waited.
 */
static int redcap_write(struct redcap_c *rc, struct bio *bio, bool from_map)
{
	struct redcap_cache *cc = rc->cc;
	struct rc_cache *c = cc->cache;
	struct redcap_pb *pb = redcap_pb(bio);
	sector_t sector = bio->bi_iter.bi_sector;
	u32 sectors = bio_sectors(bio), idx = RC_NONE;
	enum rc_wc_action act = RC_WC_ORIGIN;
	unsigned long flags;
	bool through, clean, due = false;
	unsigned int how = 0;

	/*
	 * FUA must be on the disk at completion.  selective sends there
	 * too what someone waits for (REQ_SYNC: fsync's writeback, O_DIRECT,
	 * a journal) and metadata: a flush follows them, and cached they
	 * would only wait for it; what it caches is the background's writes.
	 */
	through = (bio->bi_opf & REQ_FUA) || !redcap_wc_enabled(cc) ||
		  ((bio->bi_opf & (REQ_META | REQ_SYNC)) &&
		   c->write_policy == RC_WRITE_SELECTIVE);
	spin_lock_irqsave(&cc->lock, flags);
	/* The rest of a write map() cut joins it on the bare disk. */
	if (from_map) {
		if (redcap_cut_rest(cc, sector))
			how = VD_JOINS;
		if (pb->cut)
			redcap_cut_note(cc, sector + sectors);
	}
	if (rc_wc_on(c))
		act = rc_wc_write(c, sector, sectors, through, &idx);
	switch (act) {
	case RC_WC_WAIT:
		pb->kind = PB_CACHE;
		pb->rc = rc;
		bio_list_add(&cc->wb_waiting, bio);
		spin_unlock_irqrestore(&cc->lock, flags);
		return DM_MAPIO_SUBMITTED;
	case RC_WC_ORIGIN:
		pb->kind = PB_WRITE;
		redcap_vdisk_write(rc, bio, pb->start_ns, true, how);
		pb->cookie = rc_write_start(c, pb->seg, sectors, true);
		spin_unlock_irqrestore(&cc->lock, flags);
		goto down;
	case RC_WC_CACHE:
	case RC_WC_THROUGH:
		redcap_vdisk_write(rc, bio, pb->start_ns, act == RC_WC_THROUGH, how);
		break;
	}
	spin_unlock_irqrestore(&cc->lock, flags);

	redcap_copy(cc, idx, bio, bio->bi_iter, false);
	spin_lock_irqsave(&cc->lock, flags);
	clean = !c->entries[idx].on_dirty;
	rc_wc_copied(c, idx, sector, sectors, act == RC_WC_CACHE);
	/* A failed write-back puts it back dirty: it keeps this time. */
	if (clean && c->entries[idx].on_dirty)
		cc->ents[idx].dirty_at = (u32)jiffies;
	due = rc_wb_due(c, false);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (act == RC_WC_CACHE) {
		pb->kind = PB_CACHE;
		bio_endio(bio);
		redcap_wb_kick(cc, due);
		return DM_MAPIO_SUBMITTED;
	}
	pb->kind = PB_THROUGH;
	pb->idx = idx;
down:
	redcap_remap(rc, bio);
	if (from_map)
		return DM_MAPIO_REMAPPED;
	submit_bio_noacct(bio);
	return DM_MAPIO_SUBMITTED;
}

/* The writes that waited on an entry's write to the origin, decided again. */
static void redcap_wb_resume(struct work_struct *ws)
{
	struct redcap_cache *cc = container_of(ws, struct redcap_cache, wb_resume);
	struct bio_list waiting;
	unsigned long flags;
	struct bio *bio;

	spin_lock_irqsave(&cc->lock, flags);
	waiting = cc->wb_waiting;
	bio_list_init(&cc->wb_waiting);
	spin_unlock_irqrestore(&cc->lock, flags);
	while ((bio = bio_list_pop(&waiting)))
		redcap_write(redcap_pb(bio)->rc, bio, false);
}

/*
 * An entry's write to the origin completed (cc->lock held): redo the
 * writes that waited, and let a range that waited on it go.
 */
static void redcap_wc_unbusy(struct redcap_cache *cc)
{
	if (!bio_list_empty(&cc->wb_waiting))
		queue_work(cc->wq, &cc->wb_resume);
	if (!bio_list_empty(&cc->wb_ranges) && !cc->cache->wb_orphans)
		mod_delayed_work(cc->wbq, &cc->wb_work, 0);
}

/* A write-back request completed (any context); the last thing done is its count. */
static void redcap_wb_endio(struct bio *bio)
{
	struct redcap_wb *w = container_of(bio, struct redcap_wb, bio);
	struct redcap_cache *cc = w->cc;
	int error = blk_status_to_errno(bio->bi_status);
	unsigned long flags;
	u32 k;

	if (error)
		DMERR_LIMIT("%u:%u: write-back of sectors %llu+%u failed: %d",
			    MAJOR(cc->origin_dev), MINOR(cc->origin_dev),
			    (unsigned long long)w->sector, w->sectors, error);
	spin_lock_irqsave(&cc->lock, flags);
	for (k = 0; k < w->nr; k++)
		rc_wb_done(cc->cache, w->idx[k], w->sector, w->sectors, error, !k);
	if (error)
		cc->wb_error = error;
	/*
	 * The last request in flight: the next batch now, not a period
	 * later, while writes wait at the dirty cap (rc_wc_write()).
	 */
	if (atomic_read(&cc->wb_inflight) == 1 && !error && rc_wb_due(cc->cache, false))
		mod_delayed_work(cc->wbq, &cc->wb_work, 0);
	redcap_wc_unbusy(cc);
	spin_unlock_irqrestore(&cc->lock, flags);
	bio_put(bio);
	/* Teardown waits for this count, then for the works queued above. */
	atomic_dec(&cc->wb_inflight);
	wake_up_all(&cc->wb_wait);
}

/*
 * Take a batch of dirty entries (rc_wb_take(): @seq as there) and send
 * their requests to the origin, at idle priority when @idle_prio.
 * Returns the entries taken.  wb_mutex held; sleeps for bios (the
 * bioset's reserve guarantees them).
 */
static u32 redcap_wb_batch(struct redcap_cache *cc, const u32 *seq, bool idle_prio)
{
	u32 shift = ilog2(cc->seg_sectors), n = REDCAP_WB_BATCH, nr, k, j;
	u32 max = min_t(u32, BIO_MAX_VECS << (PAGE_SHIFT - SECTOR_SHIFT),
			(REDCAP_WB_SEGS - 1) * cc->seg_sectors);
	unsigned long flags;

	spin_lock_irqsave(&cc->lock, flags);
	nr = rc_wb_take(cc->cache, seq, cc->wb_items, &n, cc->wb_reqs, REDCAP_WB_REQS, max);
	spin_unlock_irqrestore(&cc->lock, flags);

	for (k = 0; k < nr; k++) {
		const struct rc_wb_req *r = &cc->wb_reqs[k];
		const struct rc_wb_item *it = cc->wb_items + r->first;
		sector_t sct = r->sector, end = r->sector + r->sectors;
		struct redcap_wb *w;
		struct bio *bio;

		/* Units are whole pages (4 KiB pages): a vec a page, at most BIO_MAX_VECS. */
		bio = bio_alloc_bioset(cc->origin_bdev,
				       min_t(u32, DIV_ROUND_UP(r->sectors, PAGE_SECTORS) + r->nr - 1,
					     BIO_MAX_VECS), REQ_OP_WRITE, GFP_NOIO, &cc->wbs);
		w = container_of(bio, struct redcap_wb, bio);
		w->cc = cc;
		w->sector = r->sector;
		w->sectors = r->sectors;
		w->nr = r->nr;
		for (j = 0; j < r->nr; j++)
			w->idx[j] = it[j].idx;
		bio->bi_iter.bi_sector = r->sector;
		while (sct < end) {
			u32 idx = it[(sct >> shift) - it[0].seg].idx;
			size_t off = (size_t)(sct & (cc->seg_sectors - 1)) << SECTOR_SHIFT;
			size_t poff = offset_in_page(off);
			u32 len = min_t(u64, PAGE_SIZE - poff, (u64)(end - sct) << SECTOR_SHIFT);

			__bio_add_page(bio, cc->pages[(size_t)idx * cc->pages_per_seg +
						      (off >> PAGE_SHIFT)], len, poff);
			sct += len >> SECTOR_SHIFT;
		}
		if (idle_prio)
			bio->bi_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
		bio->bi_end_io = redcap_wb_endio;
		atomic_inc(&cc->wb_inflight);
		submit_bio_noacct(bio);
	}
	return n;
}

/*
 * Write back what went dirty before now, wait for it and flush the origin:
 * a flush's work (@flush: counted as one), and suspend's.  Returns 0, or
 * -EIO when a write-back failed meanwhile (its data stays dirty, to be
 * retried), or the origin's flush error.
 */
static int redcap_wb_round(struct redcap_cache *cc, bool flush)
{
	struct rc_cache *c = cc->cache;
	unsigned long flags;
	u32 seq, failed;
	bool left;
	int r;

	mutex_lock(&cc->wb_mutex);
	spin_lock_irqsave(&cc->lock, flags);
	if (!flush && !rc_wc_on(c)) {
		spin_unlock_irqrestore(&cc->lock, flags);
		mutex_unlock(&cc->wb_mutex);
		return 0;
	}
	seq = flush ? rc_wb_flush_seq(c) : c->dirty_seq + 1;
	failed = c->wb_failed;
	spin_unlock_irqrestore(&cc->lock, flags);
	for (;;) {
		/* A failed write-back fails the round: its data waits for the next. */
		spin_lock_irqsave(&cc->lock, flags);
		left = c->wb_failed == failed && c->dirty_tail != RC_NONE &&
		       (s32)(c->entries[c->dirty_tail].dseq - seq) < 0;
		spin_unlock_irqrestore(&cc->lock, flags);
		if (!left)
			break;
		if (redcap_wb_batch(cc, &seq, false))
			continue;
		/* Pinned by a copy in progress, or back from a failed part: soon. */
		wait_event_timeout(cc->wb_wait, !atomic_read(&cc->wb_inflight), HZ / 100);
	}
	wait_event(cc->wb_wait, !atomic_read(&cc->wb_inflight));
	spin_lock_irqsave(&cc->lock, flags);
	r = c->wb_failed != failed ? -EIO : 0;
	spin_unlock_irqrestore(&cc->lock, flags);
	if (!r)
		r = blkdev_issue_flush(cc->origin_bdev);
	mutex_unlock(&cc->wb_mutex);
	return r;
}

/*
 * The write-back worker: the flushes that arrived, the ranges whose
 * orphaned writes are done, and in the background what rc_wb_due() asks
 * for, a few requests in flight at a time, at idle priority unless the
 * origin is idle.  Runs every REDCAP_WB_PERIOD while anything is dirty;
 * once a write-back failed, the background waits REDCAP_WB_RETRY before
 * it tries again (an origin that refuses at once would keep it busy, and
 * its mutex held, for ever).
 */
static void redcap_wb_work(struct work_struct *ws)
{
	struct redcap_cache *cc = container_of(to_delayed_work(ws), struct redcap_cache, wb_work);
	struct rc_cache *c = cc->cache;
	struct bio_list flushes, ranges;
	unsigned long flags;
	bool idle, due, all, more, failed;
	struct bio *bio;
	int r = 0;

	bio_list_init(&ranges);
	spin_lock_irqsave(&cc->lock, flags);
	flushes = cc->wb_flushes;
	bio_list_init(&cc->wb_flushes);
	if (!c->wb_orphans) {
		ranges = cc->wb_ranges;
		bio_list_init(&cc->wb_ranges);
	}
	all = !redcap_wc_enabled(cc) && c->nr_dirty;
	failed = c->wb_failed != cc->wb_failed_seen;
	spin_unlock_irqrestore(&cc->lock, flags);

	while ((bio = bio_list_pop(&ranges)))
		submit_bio_noacct(bio);
	if (!bio_list_empty(&flushes) || all)
		r = redcap_wb_round(cc, !bio_list_empty(&flushes));
	while ((bio = bio_list_pop(&flushes))) {
		bio->bi_status = errno_to_blk_status(r);
		bio_endio(bio);
	}

	mutex_lock(&cc->wb_mutex);
	while (!failed && !redcap_fi_wb_hold() &&
	       atomic_read(&cc->wb_inflight) < REDCAP_WB_DEPTH) {
		idle = !atomic_read(&cc->origin_inflight) &&
		       ktime_get_ns() - READ_ONCE(cc->last_bio_ns) >= RC_HDC_IDLE_NS;
		spin_lock_irqsave(&cc->lock, flags);
		due = rc_wb_due(c, idle);
		failed = c->wb_failed != cc->wb_failed_seen;
		spin_unlock_irqrestore(&cc->lock, flags);
		if (failed || !due || !redcap_wb_batch(cc, NULL, !idle))
			break;
	}
	mutex_unlock(&cc->wb_mutex);

	spin_lock_irqsave(&cc->lock, flags);
	more = c->nr_dirty || !bio_list_empty(&cc->wb_flushes) || !bio_list_empty(&cc->wb_ranges);
	failed = c->wb_failed != cc->wb_failed_seen;
	cc->wb_failed_seen = c->wb_failed;
	spin_unlock_irqrestore(&cc->lock, flags);
	if (more)
		queue_delayed_work(cc->wbq, &cc->wb_work,
				   failed ? REDCAP_WB_RETRY : REDCAP_WB_PERIOD);
}

/* Zero @r's sectors of its entry's buffer (an end of a range inside a unit it keeps). */
static void redcap_zero(struct redcap_cache *cc, const struct rc_range_zero_req *r)
{
	struct page **pages = cc->pages + (size_t)r->idx * cc->pages_per_seg;
	size_t off = (size_t)(r->sector & (cc->seg_sectors - 1)) << SECTOR_SHIFT;
	size_t left = (size_t)r->sectors << SECTOR_SHIFT;

	while (left) {
		size_t n = min_t(size_t, left, PAGE_SIZE - offset_in_page(off));

		memzero_page(pages[off >> PAGE_SHIFT], offset_in_page(off), n);
		off += n;
		left -= n;
	}
}

/*
 * A discard / write-zeroes over many segments: walk the entries a chunk per
 * lock hold (interrupts on between chunks); new fills are held off until
 * the range completes, so nothing is cached behind the walk.  An end of
 * the range inside a unit an entry keeps is zeroed in RAM here, before
 * the range goes down (rc_range_begin()).
 */
static void redcap_range_start(struct redcap_cache *cc, struct redcap_pb *pb)
{
	u64 sector = pb->saved_iter.bi_sector, sectors = pb->saved_iter.bi_size >> SECTOR_SHIFT;
	struct rc_range_zero z;
	unsigned long flags;
	bool walk;
	u32 i = 0, k;

	spin_lock_irqsave(&cc->lock, flags);
	walk = rc_range_begin(cc->cache, sector, sectors, &z);
	spin_unlock_irqrestore(&cc->lock, flags);
	while (walk && i < cc->nr_segs) {
		spin_lock_irqsave(&cc->lock, flags);
		i = rc_range_walk(cc->cache, sector, sectors, i, REDCAP_WALK_CHUNK);
		spin_unlock_irqrestore(&cc->lock, flags);
	}
	for (k = 0; k < z.n; k++) {
		redcap_zero(cc, &z.zero[k]);
		spin_lock_irqsave(&cc->lock, flags);
		rc_range_zeroed(cc->cache, &z.zero[k]);
		spin_unlock_irqrestore(&cc->lock, flags);
	}
}

static int redcap_map(struct dm_target *ti, struct bio *bio)
{
	struct redcap_c *rc = ti->private;
	struct redcap_cache *cc = rc->cc;
	struct redcap_pb *pb = redcap_pb(bio);
	unsigned long flags;

	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	pb->kind = PB_ORIGIN;
	pb->read_inflight = false;
	pb->start_ns = ktime_get_ns();
	WRITE_ONCE(cc->last_bio_ns, pb->start_ns);
	pb->saved_iter = bio->bi_iter;
	redcap_fi_warn();

	if (!bio_sectors(bio)) {	/* empty flush */
		if (redcap_wc_flush(cc, bio))
			return DM_MAPIO_SUBMITTED;
		redcap_remap(rc, bio);
		return DM_MAPIO_REMAPPED;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return redcap_map_read(rc, bio);
	case REQ_OP_WRITE:
		/* One segment at a time: its entry is invalidated or updated. */
		pb->cut = redcap_cut(bio, rc_in_seg(cc->cache, bio->bi_iter.bi_sector,
						    bio_sectors(bio)));
		pb->kind = PB_WRITE;
		pb->seg = rc_sector_to_seg(cc->cache, bio->bi_iter.bi_sector);
		return redcap_write(rc, bio, true);
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
	case REQ_OP_SECURE_ERASE:
		/* Not cut at segment boundaries: may cover many. */
		pb->kind = PB_RANGE;
		redcap_range_start(cc, pb);
		redcap_remap(rc, bio);
		/* After the writes of the entries it dropped, never before. */
		spin_lock_irqsave(&cc->lock, flags);
		if (cc->cache->wb_orphans) {
			bio_list_add(&cc->wb_ranges, bio);
			bio = NULL;
		}
		spin_unlock_irqrestore(&cc->lock, flags);
		return bio ? DM_MAPIO_REMAPPED : DM_MAPIO_SUBMITTED;
	default:
		break;
	}
	redcap_remap(rc, bio);
	return DM_MAPIO_REMAPPED;
}

/* A write of exactly one whole segment, whose data can fill an entry. */
static bool redcap_whole_segment(struct redcap_cache *cc, struct redcap_pb *pb)
{
	return pb->saved_iter.bi_size == cc->seg_sectors << SECTOR_SHIFT &&
	       !(pb->saved_iter.bi_sector & (cc->seg_sectors - 1));
}

/*
 * Entry @f->idx[0] was allocated for the whole-segment write @bio (C-Aware's
 * write rules): copy the data in now, while the bio still holds it, and
 * complete the entry like a fill, from its work (waiting readers may have
 * to be re-sent to the origin, which is not done from end_io).
 */
static void redcap_write_fill(struct redcap_cache *cc, struct bio *bio, struct redcap_pb *pb,
			      struct redcap_fill *f)
{
	u64 now = ktime_get_ns();

	redcap_copy(cc, f->idx[0], bio, pb->saved_iter, false);
	redcap_event(cc, &(struct rc_event){ .kind = RC_EV_WRITE_COPY, .start = pb->start_ns,
		     .copy = now, .end = ktime_get_ns() });

	atomic_inc(&cc->fills_inflight);
	queue_work(cc->wq, &f->work);
}

static int redcap_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct redcap_c *rc = ti->private;
	struct redcap_cache *cc = rc->cc;
	struct redcap_pb *pb = redcap_pb(bio);
	struct redcap_fill *f = NULL;
	enum rc_write_action act;
	unsigned long flags;
	u32 idx, fidx;
	u64 now, mask;
	bool clean;

	if (pb->kind != PB_CACHE)
		atomic_dec(&cc->origin_inflight);
	if (pb->read_inflight)
		atomic_dec(&cc->reads_inflight);
	switch (pb->kind) {
	case PB_ORIGIN:
	case PB_CACHE:
		break;
	case PB_BYPASS:
		redcap_event(cc, &(struct rc_event){ .kind = RC_EV_BYPASS,
			     .error = blk_status_to_errno(*error),
			     .sector = pb->saved_iter.bi_sector,
			     .sectors = pb->saved_iter.bi_size >> SECTOR_SHIFT,
			     .start = pb->start_ns, .end = ktime_get_ns() });
		break;
	case PB_WRITE:
		now = ktime_get_ns();
		spin_lock_irqsave(&cc->lock, flags);
		act = rc_write_done(cc->cache, pb->seg, pb->cookie,
				    blk_status_to_errno(*error), true, &idx);
		/*
		 * A whole segment may fill an entry (C-Aware).  Its fill is set
		 * up in the same lock hold, without sleeping, so that no reader
		 * can queue on an entry that then gets no fill: end_io cannot
		 * re-send readers to the origin.
		 */
		if (act == RC_WRITE_DONE && !*error && redcap_whole_segment(cc, pb) &&
		    rc_write_allocate(cc->cache, pb->seg, pb->cookie, &fidx)) {
			f = redcap_fill_alloc(rc, 0, pb->saved_iter.bi_sector, cc->seg_sectors);
			if (f) {
				f->idx[0] = fidx;
				f->nr = 1;
			} else {
				rc_fill_cancel(cc->cache, fidx);
			}
		}
		if (!f)
			rc_event(cc->cache, &(struct rc_event){ .kind = RC_EV_WRITE,
				 .error = blk_status_to_errno(*error), .start = pb->start_ns,
				 .end = now });
		spin_unlock_irqrestore(&cc->lock, flags);
		if (f) {
			f->from_write = true;
			redcap_write_fill(cc, bio, pb, f);
		}
		if (act == RC_WRITE_COPY) {
			redcap_copy(cc, idx, bio, pb->saved_iter, false);
			spin_lock_irqsave(&cc->lock, flags);
			rc_unpin(cc->cache, idx);
			spin_unlock_irqrestore(&cc->lock, flags);
		}
		break;
	case PB_RANGE:
		spin_lock_irqsave(&cc->lock, flags);
		rc_range_done(cc->cache, pb->saved_iter.bi_sector,
			      pb->saved_iter.bi_size >> SECTOR_SHIFT);
		spin_unlock_irqrestore(&cc->lock, flags);
		break;
	case PB_MERGE:
		if (!*error) {
			spin_lock_irqsave(&cc->lock, flags);
			mask = rc_merge_units(cc->cache, pb->idx, pb->saved_iter.bi_sector,
					      pb->saved_iter.bi_size >> SECTOR_SHIFT);
			spin_unlock_irqrestore(&cc->lock, flags);
			redcap_copy_units(cc, pb->idx, bio, pb->saved_iter, mask);
		}
		spin_lock_irqsave(&cc->lock, flags);
		rc_unpin(cc->cache, pb->idx);
		spin_unlock_irqrestore(&cc->lock, flags);
		break;
	case PB_THROUGH:
		spin_lock_irqsave(&cc->lock, flags);
		clean = !cc->cache->entries[pb->idx].on_dirty;
		rc_wc_through_done(cc->cache, pb->idx, pb->saved_iter.bi_sector,
				   pb->saved_iter.bi_size >> SECTOR_SHIFT, blk_status_to_errno(*error));
		if (clean && cc->cache->entries[pb->idx].on_dirty)
			cc->ents[pb->idx].dirty_at = (u32)jiffies;
		rc_event(cc->cache, &(struct rc_event){ .kind = RC_EV_WRITE,
			 .error = blk_status_to_errno(*error), .start = pb->start_ns,
			 .end = ktime_get_ns() });
		redcap_wc_unbusy(cc);
		spin_unlock_irqrestore(&cc->lock, flags);
		wake_up_all(&cc->wb_wait);
		break;
	}
	return DM_ENDIO_DONE;
}

/*
 * A copy of HDC's counts in *@snap, taken a chunk per lock hold, to be
 * ranked outside the lock (a count that moves meanwhile is taken as it
 * was when its chunk was copied); kvfree() the return value.  NULL: no
 * memory.
 */
static void *redcap_hot_copy(struct redcap_cache *cc, struct rc_hot *snap)
{
	unsigned long flags;
	size_t bytes, from, k;
	void *copy;

	*snap = cc->hot;	/* its geometry: set at init, never changed */
	bytes = snap->exact ? snap->nr_regions * sizeof(*snap->cnt) :
			      snap->slots * sizeof(*snap->slot);
	copy = kvmalloc(bytes, GFP_KERNEL);
	if (!copy)
		return NULL;
	for (from = 0; from < bytes; from += k) {
		k = min_t(size_t, bytes - from, REDCAP_WALK_CHUNK * sizeof(*snap->slot));
		spin_lock_irqsave(&cc->lock, flags);
		memcpy(copy + from, (snap->exact ? (void *)cc->hot.cnt : (void *)cc->hot.slot) + from,
		       k);
		if (!from) {
			snap->used = cc->hot.used;
			snap->total = cc->hot.total;
		}
		spin_unlock_irqrestore(&cc->lock, flags);
		cond_resched();
	}
	if (snap->exact)
		snap->cnt = copy;
	else
		snap->slot = copy;
	return copy;
}

/* hot [N]: the @n segments that missed most this period and the last (halved). */
static int redcap_msg_hot(struct redcap_cache *cc, u32 n, char *result, unsigned int maxlen)
{
	struct rc_hot_entry top[RC_HOT_TOP_MAX];
	unsigned int sz = 0;
	struct rc_hot snap;
	void *copy;
	u32 i;

	copy = redcap_hot_copy(cc, &snap);
	if (!copy)
		return -ENOMEM;
	n = rc_hot_top(&snap, n, top);
	DMEMIT("misses=%llu\nexact=%d\n", snap.total, snap.exact);
	for (i = 0; i < n; i++)
		DMEMIT("segment=%llu misses=%u err=%u\n", top[i].region, top[i].count, top[i].err);
	kvfree(copy);
	return 1;
}

/*
 * Make *@set (@n segments, sorted) HDC's chosen set, all of it queued for
 * redcap_hdc_prefill(); *@set becomes the set before, for the caller to
 * free.  hdc_lock held.
 */
static void redcap_hdc_replace(struct redcap_cache *cc, u64 **set, u32 n)
{
	unsigned long flags;

	lockdep_assert_held(&cc->hdc_lock);
	spin_lock_irqsave(&cc->lock, flags);
	rc_hdc_want(cc->cache, *set, n);
	swap(cc->hdc_chosen, *set);
	cc->hdc_nr = n;
	cc->hdc_next = 0;
	cc->hdc_gen++;
	spin_unlock_irqrestore(&cc->lock, flags);
}

/*
 * Choose the set to pin (rc_hdc_choose()) among the 2 x max segments that
 * missed most, unpin those that left it (rc_hdc_keep(), a chunk of
 * entries per lock hold) and queue the rest for redcap_hdc_prefill().
 * Returns false when memory ran short: nothing changed, try later.
 */
static bool redcap_hdc_choose(struct redcap_c *rc)
{
	struct redcap_cache *cc = rc->cc;
	struct rc_hot_entry *top = NULL;
	struct rc_hdc_cand *cand = NULL;
	unsigned long flags;
	u64 *queue = NULL;
	struct rc_hot snap;
	void *copy;
	u32 max, n = 0, k = 0, i, from;
	size_t held;

	spin_lock_irqsave(&cc->lock, flags);
	max = rc_hdc_max(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (max) {
		copy = redcap_hot_copy(cc, &snap);
		/* no more candidates than the counts hold */
		held = min_t(u64, 2 * (u64)max, snap.exact ? snap.nr_regions : snap.slots);
		top = kvmalloc_array(held, sizeof(*top), GFP_KERNEL);
		cand = kvmalloc_array(held, sizeof(*cand), GFP_KERNEL);
		queue = redcap_fi_hdc_alloc_fail() ? NULL :
			kvmalloc_array(max, sizeof(*queue), GFP_KERNEL);
		if (copy && top && cand && queue)
			n = rc_hot_top(&snap, held, top);
		kvfree(copy);
		if (!copy || !top || !cand || !queue) {
			kvfree(top);
			kvfree(cand);
			kvfree(queue);
			return false;
		}
	}
	for (i = 0; i < n; i += k) {
		k = min_t(u32, n - i, REDCAP_WALK_CHUNK);
		spin_lock_irqsave(&cc->lock, flags);
		for (from = i; from < i + k; from++)
			cand[from] = (struct rc_hdc_cand){ .region = top[from].region,
				.count = top[from].count,
				.pinned = rc_hdc_pinned(cc->cache, top[from].region) };
		spin_unlock_irqrestore(&cc->lock, flags);
	}
	k = rc_hdc_choose(cand, n, max);
	for (i = 0; i < k; i++)
		queue[i] = cand[i].region;
	mutex_lock(&cc->hdc_lock);
	redcap_hdc_replace(cc, &queue, k);
	for (from = 0; from < cc->nr_segs;) {
		spin_lock_irqsave(&cc->lock, flags);
		from = rc_hdc_keep(cc->cache, cc->hdc_chosen, k, from, REDCAP_WALK_CHUNK);
		spin_unlock_irqrestore(&cc->lock, flags);
		cond_resched();
	}
	mutex_unlock(&cc->hdc_lock);
	kvfree(top);
	kvfree(cand);
	kvfree(queue);		/* the set before */
	return true;
}

/*
 * Read segment @seg into entry @idx, which rc_hdc_pin() set filling for
 * it, at the idle I/O priority; no read of its own waits on it (a fill
 * "ahead").  False, the entry freed, when no fill can be set up.
 */
static bool redcap_hdc_fill(struct redcap_c *rc, u64 seg, u32 idx)
{
	struct redcap_cache *cc = rc->cc;
	sector_t sector = seg * cc->seg_sectors;
	struct rc_read_plan plan = { .nr_fills = 1, .nr_reqs = 1 };

	plan.fills[0] = (struct rc_fill_item){ .seg = seg, .idx = idx, .ahead = true };
	plan.reqs[0] = (struct rc_fill_req){ .sector = sector,
		.sectors = min_t(sector_t, cc->seg_sectors, cc->len - sector), .first = 0, .nr = 1 };
	if (redcap_start_req(rc, &plan, &plan.reqs[0], true))
		return true;
	redcap_cancel_fill(rc, idx, NULL);
	return false;
}

/*
 * Pin the next queued segments: those cached at once, and the first not
 * cached by a fill, if the origin is idle (no fill, no demand request in
 * flight, none for RC_HDC_IDLE_NS).  Returns true while some are left.
 */
static bool redcap_hdc_prefill(struct redcap_c *rc)
{
	struct redcap_cache *cc = rc->cc;
	enum rc_hdc_pin r = RC_HDC_PINNED;
	unsigned long flags;
	u64 seg = 0;
	u32 idx;

	while (r == RC_HDC_PINNED) {
		if (atomic_read(&cc->fills_inflight) || atomic_read(&cc->origin_inflight) ||
		    ktime_get_ns() - READ_ONCE(cc->last_bio_ns) < RC_HDC_IDLE_NS)
			return true;
		spin_lock_irqsave(&cc->lock, flags);
		if (cc->hdc_next < cc->hdc_nr) {
			seg = cc->hdc_chosen[cc->hdc_next];
			r = rc_hdc_pin(cc->cache, seg, &idx);
			cc->hdc_next += r != RC_HDC_BUSY;
		} else {
			r = RC_HDC_FULL;
		}
		if (r == RC_HDC_FULL)
			cc->hdc_next = cc->hdc_nr;
		spin_unlock_irqrestore(&cc->lock, flags);
		cond_resched();
	}
	if (r == RC_HDC_FILL)
		redcap_hdc_fill(rc, seg, idx);
	return r != RC_HDC_FULL;
}

/* Pin queued segments every tick while any is left, else look each second. */
#define REDCAP_HDC_TICK		(HZ / 20 ? HZ / 20 : 1)

static void redcap_hdc_work(struct work_struct *ws)
{
	struct redcap_c *rc = container_of(to_delayed_work(ws), struct redcap_c, hdc.work);
	struct redcap_cache *cc = rc->cc;
	unsigned long flags;
	bool over;
	u32 periods;

	spin_lock_irqsave(&cc->lock, flags);
	periods = cc->cache->hot_periods;
	over = cc->cache->nr_hdc > rc_hdc_max(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	/*
	 * A period ended: choose from its counts, then halve them.  A share
	 * cut takes effect at once; a larger one waits for the period's end,
	 * the evidence to fill it from.
	 */
	if (periods != rc->hdc.periods || over) {
		if (!redcap_hdc_choose(rc))	/* no memory: again in a second */
			goto again;
		spin_lock_irqsave(&cc->lock, flags);
		if (periods != rc->hdc.periods)
			rc_hot_age_start(cc->cache);
		spin_unlock_irqrestore(&cc->lock, flags);
		rc->hdc.periods = periods;
	}
	if (redcap_hdc_prefill(rc)) {
		queue_delayed_work(cc->wq, &rc->hdc.work, REDCAP_HDC_TICK);
		return;
	}
again:
	queue_delayed_work(cc->wq, &rc->hdc.work, HZ);
}

/* Start HDC's worker as the table resumes: what is pinned stays so. */
static void redcap_hdc_start(struct redcap_c *rc)
{
	unsigned long flags;

	spin_lock_irqsave(&rc->cc->lock, flags);
	rc->hdc.periods = rc->cc->cache->hot_periods;
	spin_unlock_irqrestore(&rc->cc->lock, flags);
	queue_delayed_work(rc->cc->wq, &rc->hdc.work, 0);
}

/*
 * pin SEGMENT...: pin each, cached or filled now (at the idle priority);
 * unpin SEGMENT...: unpin each pinned one.  The segments are checked
 * first: one bad, nothing is done.  A pin that finds the set full or its
 * segment busy stops there, with the ones before it pinned.
 */
static int redcap_msg_pin(struct redcap_c *rc, bool pin, unsigned int argc, char **argv)
{
	struct redcap_cache *cc = rc->cc;
	u64 nr_segs = DIV_ROUND_UP_SECTOR_T(cc->len, cc->seg_sectors), seg;
	const char *verb = pin ? "pin" : "unpin", *err;
	enum rc_hdc_pin r = RC_HDC_PINNED;
	unsigned long flags;
	unsigned int i;
	char buf[128];
	u32 idx, max;

	for (i = 0; i < argc; i++) {
		err = rc_parse_segment(verb, argv[i], nr_segs, &seg, buf, sizeof(buf));
		if (err) {
			DMERR("%s", err);
			return -EINVAL;
		}
	}
	for (i = 0; i < argc && r != RC_HDC_FULL && r != RC_HDC_BUSY; i++) {
		rc_parse_segment(verb, argv[i], nr_segs, &seg, buf, sizeof(buf));
		spin_lock_irqsave(&cc->lock, flags);
		if (pin)
			r = rc_hdc_pin(cc->cache, seg, &idx);
		else
			rc_hdc_unpin(cc->cache, seg);
		max = rc_hdc_max(cc->cache);
		spin_unlock_irqrestore(&cc->lock, flags);
		if (r == RC_HDC_FILL && !redcap_hdc_fill(rc, seg, idx)) {
			DMERR("pin: segment %llu: no memory for its fill", seg);
			return -ENOMEM;
		}
	}
	if (r == RC_HDC_FULL) {
		if (max)
			DMERR("pin: the pinned set is full (%u segments)", max);
		else
			DMERR("pin: hdc is 0: set a pinned share first");
		return -ENOSPC;
	}
	if (r == RC_HDC_BUSY) {
		DMERR("pin: segment %llu is busy, try again", seg);
		return -EBUSY;
	}
	return 0;
}

/*
 * chosen [FROM]: HDC's chosen set (the segments it pins, or fills to pin
 * when idle), RC_CHOSEN_CHUNK of them from index FROM, with the set's size
 * and generation: a reader of several answers starts again when it moved.
 */
static int redcap_msg_chosen(struct redcap_cache *cc, u32 from, char *result,
			     unsigned int maxlen)
{
	unsigned int sz = 0;
	u32 i;

	mutex_lock(&cc->hdc_lock);
	DMEMIT("chosen=%u\ngen=%u\nfrom=%u\nsegments=", cc->hdc_nr, cc->hdc_gen, from);
	for (i = from; i < cc->hdc_nr && i - from < RC_CHOSEN_CHUNK; i++)
		DMEMIT("%s%llu", i > from ? " " : "", cc->hdc_chosen[i]);
	DMEMIT("\n");
	mutex_unlock(&cc->hdc_lock);
	return 1;
}

static int redcap_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * prefill SEGMENT...: add them to HDC's chosen set, as many as the pinned
 * share has room for, lowest first, for the worker to pin when read or
 * to fill while the origin is idle (a saved set loaded after a restart;
 * pin fills at once).  The segments are checked first: one bad, nothing
 * is done.  Answers the set's size and how many it gained.
 */
static int redcap_msg_prefill(struct redcap_c *rc, unsigned int argc, char **argv,
			      char *result, unsigned int maxlen)
{
	struct redcap_cache *cc = rc->cc;
	u64 nr_segs = DIV_ROUND_UP_SECTOR_T(cc->len, cc->seg_sectors);
	u64 *add, *set = NULL;
	unsigned int sz = 0, i;
	unsigned long flags;
	const char *err;
	char buf[128];
	u32 max, n, before;

	add = kvmalloc_array(argc, sizeof(*add), GFP_KERNEL);
	if (!add)
		return -ENOMEM;
	for (i = 0; i < argc; i++) {
		err = rc_parse_segment("prefill", argv[i], nr_segs, &add[i], buf, sizeof(buf));
		if (err) {
			DMERR("%s", err);
			kvfree(add);
			return -EINVAL;
		}
	}
	sort(add, argc, sizeof(*add), redcap_cmp_u64, NULL);
	mutex_lock(&cc->hdc_lock);
	spin_lock_irqsave(&cc->lock, flags);
	max = rc_hdc_max(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	before = cc->hdc_nr;
	if (!max) {
		DMERR("prefill: hdc is 0: set a pinned share first");
		mutex_unlock(&cc->hdc_lock);
		kvfree(add);
		return -ENOSPC;
	}
	if (!redcap_fi_hdc_alloc_fail())
		set = kvmalloc_array(before + min_t(u32, argc, max), sizeof(*set), GFP_KERNEL);
	if (!set) {
		mutex_unlock(&cc->hdc_lock);
		kvfree(add);
		DMERR("prefill: no memory for the chosen set");
		return -ENOMEM;
	}
	n = rc_hdc_merge(cc->hdc_chosen, before, add, argc, max, set);
	redcap_hdc_replace(cc, &set, n);
	mutex_unlock(&cc->hdc_lock);
	kvfree(set);		/* the set before */
	kvfree(add);
	DMEMIT("chosen=%u\nadded=%u\n", n, n - before);
	return 1;
}

/* Construction */

static void redcap_free_pages(struct redcap_cache *cc)
{
	size_t i;

	if (!cc->pages)
		return;
	for (i = 0; i < (size_t)cc->nr_segs * cc->pages_per_seg; i++)
		if (cc->pages[i])
			__free_page(cc->pages[i]);
	kvfree(cc->pages);
	cc->pages = NULL;
}

/* --- memory that does not earn goes back (rc_give_back()) --------------- */

static void redcap_free_list(struct list_head *pages)
{
	struct page *page, *tmp;

	list_for_each_entry_safe(page, tmp, pages, lru) {
		list_del(&page->lru);
		__free_page(page);
	}
}

static struct redcap_cache *redcap_shrinker_cache(struct shrinker *s)
{
#ifndef SHRINKER_ALLOCATED
	return container_of(s, struct redcap_cache, shrinker_s);
#else
	return s->private_data;
#endif
}

/* Pages: what the cache would give back now. */
static unsigned long redcap_shrink_count(struct shrinker *s, struct shrink_control *sc)
{
	struct redcap_cache *cc = redcap_shrinker_cache(s);
	unsigned long flags, n;

	spin_lock_irqsave(&cc->lock, flags);
	n = (unsigned long)rc_givable(cc->cache) * cc->pages_per_seg;
	spin_unlock_irqrestore(&cc->lock, flags);
	return n ?: SHRINK_EMPTY;
}

/*
 * Give back about @sc->nr_to_scan pages, whole entries, REDCAP_GIVE_CHUNK
 * a lock hold: their page pointers go NULL under the lock, with the
 * entries made bare, and the pages are freed after it.
 */
static unsigned long redcap_shrink_scan(struct shrinker *s, struct shrink_control *sc)
{
	struct redcap_cache *cc = redcap_shrinker_cache(s);
	u32 out[REDCAP_GIVE_CHUNK], n, k, j, want;
	unsigned long flags, freed = 0;
	struct page **p;
	LIST_HEAD(pages);

	while (freed < sc->nr_to_scan) {
		want = min_t(unsigned long, REDCAP_GIVE_CHUNK,
			     DIV_ROUND_UP(sc->nr_to_scan - freed, cc->pages_per_seg));
		spin_lock_irqsave(&cc->lock, flags);
		n = rc_give_back(cc->cache, &cc->give_from, REDCAP_GIVE_WALK, out, want);
		for (k = 0; k < n; k++) {
			p = cc->pages + (size_t)out[k] * cc->pages_per_seg;
			for (j = 0; j < cc->pages_per_seg; j++) {
				list_add(&p[j]->lru, &pages);
				p[j] = NULL;
			}
		}
		spin_unlock_irqrestore(&cc->lock, flags);
		if (!n)
			break;
		redcap_free_list(&pages);
		freed += (unsigned long)n * cc->pages_per_seg;
		cond_resched();
	}
	return freed ?: SHRINK_STOP;
}

/*
 * The bare entries get pages again, REDCAP_GIVE_CHUNK at a time, for as
 * long as rc_regrow_due(); the pages are allocated outside the lock.  No
 * memory: the entries stay bare (the cache serves with the others) and
 * the next try waits REDCAP_REGROW_RETRY.
 */
static void redcap_regrow(struct work_struct *work)
{
	struct redcap_cache *cc = container_of(work, struct redcap_cache, regrow);
	u32 got[REDCAP_GIVE_CHUNK], n, k, j, i = 0, walked;
	struct page *page, **p;
	unsigned long flags;
	LIST_HEAD(pages);

	while (i < cc->nr_segs) {
		n = 0;
		spin_lock_irqsave(&cc->lock, flags);
		if (!rc_regrow_due(cc->cache)) {
			spin_unlock_irqrestore(&cc->lock, flags);
			return;
		}
		for (walked = 0; i < cc->nr_segs && walked < REDCAP_GIVE_WALK &&
		     n < REDCAP_GIVE_CHUNK; i++, walked++)
			if (rc_bare(cc->cache, i))
				got[n++] = i;
		spin_unlock_irqrestore(&cc->lock, flags);
		for (k = 0; k < n * cc->pages_per_seg; k++) {
			page = redcap_fi_regrow_alloc_fail() ? NULL :
			       alloc_page(GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
			if (!page) {
				redcap_free_list(&pages);
				WRITE_ONCE(cc->regrow_after, jiffies + REDCAP_REGROW_RETRY);
				return;
			}
			list_add(&page->lru, &pages);
		}
		spin_lock_irqsave(&cc->lock, flags);
		for (k = 0; k < n; k++) {
			if (!rc_bare(cc->cache, got[k]))
				continue;
			p = cc->pages + (size_t)got[k] * cc->pages_per_seg;
			for (j = 0; j < cc->pages_per_seg; j++) {
				p[j] = list_first_entry(&pages, struct page, lru);
				list_del(&p[j]->lru);
			}
			rc_regrown(cc->cache, got[k]);
		}
		spin_unlock_irqrestore(&cc->lock, flags);
		redcap_free_list(&pages);	/* none, unless an entry was regrown meanwhile */
		cond_resched();
	}
}

static int redcap_shrinker_add(struct redcap_cache *cc)
{
	if (redcap_fi_shrinker_fail())
		return -ENOMEM;
#ifndef SHRINKER_ALLOCATED
	cc->shrinker_s.count_objects = redcap_shrink_count;
	cc->shrinker_s.scan_objects = redcap_shrink_scan;
	cc->shrinker_s.seeks = DEFAULT_SEEKS;
	if (register_shrinker(&cc->shrinker_s, "dm-redcap:%u:%u", MAJOR(cc->origin_dev),
			      MINOR(cc->origin_dev)))
		return -ENOMEM;
	cc->shrinker = &cc->shrinker_s;
#else
	cc->shrinker = shrinker_alloc(0, "dm-redcap:%u:%u", MAJOR(cc->origin_dev),
				      MINOR(cc->origin_dev));
	if (!cc->shrinker)
		return -ENOMEM;
	cc->shrinker->count_objects = redcap_shrink_count;
	cc->shrinker->scan_objects = redcap_shrink_scan;
	cc->shrinker->private_data = cc;
	shrinker_register(cc->shrinker);
#endif
	return 0;
}

static void redcap_shrinker_del(struct redcap_cache *cc)
{
	if (!cc->shrinker)
		return;
#ifndef SHRINKER_ALLOCATED
	unregister_shrinker(cc->shrinker);
#else
	shrinker_free(cc->shrinker);
#endif
	cc->shrinker = NULL;
}

/* Safe on a partly built cache. */
static void redcap_cache_free(struct redcap_cache *cc)
{
	redcap_shrinker_del(cc);
	cancel_work_sync(&cc->regrow);
	if (cc->wbq) {
		wait_event(cc->wb_wait, !atomic_read(&cc->wb_inflight));
		cancel_delayed_work_sync(&cc->wb_work);
		destroy_workqueue(cc->wbq);
	}
	if (cc->wq)
		destroy_workqueue(cc->wq);
	/* Suspend wrote everything back, unless the origin refused it. */
	if (cc->cache && cc->cache->nr_dirty)
		DMCRIT("%u:%u: %u dirty segments lost with the cache (write-back error %d)",
		       MAJOR(cc->origin_dev), MINOR(cc->origin_dev), cc->cache->nr_dirty,
		       cc->wb_error);
	bioset_exit(&cc->wbs);
	bioset_exit(&cc->bs);
	redcap_free_pages(cc);
	kvfree(cc->ents);
	kvfree(cc->hot_mem);
	kvfree(cc->shadow_mem);
	kvfree(cc->hdc_chosen);
	kvfree(cc->core_mem);
	kfree(cc->cache);
	kfree(cc);
}

static void redcap_cache_put(struct redcap_cache *cc)
{
	mutex_lock(&redcap_caches_lock);
	if (!refcount_dec_and_test(&cc->ref)) {
		mutex_unlock(&redcap_caches_lock);
		return;
	}
	list_del(&cc->list);
	mutex_unlock(&redcap_caches_lock);
	redcap_cache_free(cc);
}

/* HDC's regions: the device's segments. */
static u64 redcap_hot_regions(const struct redcap_cache *cc)
{
	return DIV_ROUND_UP_ULL(cc->len, cc->seg_sectors);
}

/*
 * A new cache of the geometry in @cc (filled in by the caller), with its
 * memory.  A cache larger than memory is a user error, not a kernel
 * warning: every large allocation is __GFP_NOWARN.
 */
static int redcap_cache_alloc(struct redcap_cache *cc, struct dm_target *ti)
{
	size_t i, nr_pages = (size_t)cc->nr_segs * cc->pages_per_seg;
	u64 ram;

	ti->error = "Cannot allocate cache memory";
	/* More than half of RAM would starve the system before failing. */
	if (nr_pages > totalram_pages() / 2)
		return -ENOMEM;
	cc->cache = kzalloc(sizeof(*cc->cache), GFP_KERNEL);
	cc->core_mem = kvzalloc(rc_cache_mem_size(cc->nr_segs), GFP_KERNEL | __GFP_NOWARN);
	cc->ents = kvcalloc(cc->nr_segs, sizeof(*cc->ents), GFP_KERNEL | __GFP_NOWARN);
	cc->pages = kvcalloc(nr_pages, sizeof(*cc->pages), GFP_KERNEL | __GFP_NOWARN);
	if (!cc->cache || !cc->core_mem || !cc->ents || !cc->pages)
		return -ENOMEM;
	/* Gigabytes take seconds: a killed dmsetup stops them, and says so. */
	for (i = 0; i < nr_pages; i++) {
		if (redcap_fi_ctr_page_fails(i))
			return -ENOMEM;
		cc->pages[i] = alloc_page(GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
		if (!cc->pages[i])
			return -ENOMEM;
		if (fatal_signal_pending(current)) {
			ti->error = "Interrupted while allocating cache memory";
			return -EINTR;
		}
		cond_resched();
	}
	for (i = 0; i < cc->nr_segs; i++)
		bio_list_init(&cc->ents[i].waiters);

	if (rc_cache_init(cc->cache, cc->core_mem, cc->nr_segs, ilog2(cc->seg_sectors),
			  ktime_get_ns())) {
		ti->error = "Cannot initialise cache";
		return -EINVAL;
	}
	vd_vdisk_init(&cc->vdisk);
	vd_vdisk_init(&cc->vdisk_cache);

	cc->hot_mem = kvzalloc(rc_hot_mem_size(redcap_hot_regions(cc), rc_hot_slots_for(cc->nr_segs)),
			       GFP_KERNEL | __GFP_NOWARN);
	if (!cc->hot_mem)
		return -ENOMEM;
	rc_hot_init(&cc->hot, cc->hot_mem, redcap_hot_regions(cc), rc_hot_slots_for(cc->nr_segs));
	rc_hot_attach(cc->cache, &cc->hot, ktime_get_ns());

	ram = (u64)cc->nr_segs * cc->seg_sectors << SECTOR_SHIFT;
	if (!redcap_fi_shadow_alloc_fail())
		cc->shadow_mem = kvmalloc(rc_shadow_mem_size(ram, RC_SHADOW_ENTRIES),
					  GFP_KERNEL | __GFP_NOWARN);
	if (!cc->shadow_mem)
		return -ENOMEM;
	rc_shadow_init(&cc->shadow, cc->shadow_mem, ram, RC_SHADOW_ENTRIES);

	if (bioset_init(&cc->bs, REDCAP_FILL_POOL, offsetof(struct redcap_fill, bio),
			BIOSET_NEED_BVECS)) {
		ti->error = "Cannot allocate fill bioset";
		return -ENOMEM;
	}
	/* Completions copy up to a segment per waiter: spread them over CPUs. */
	cc->wq = alloc_workqueue("dm-" DM_MSG_PREFIX, WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	/* Write-back: one worker, which waits on what it sent (flushes). */
	cc->wbq = alloc_ordered_workqueue("dm-" DM_MSG_PREFIX "-wb", WQ_MEM_RECLAIM);
	if (!cc->wq || !cc->wbq) {
		ti->error = "Cannot allocate workqueue";
		return -ENOMEM;
	}
	if (bioset_init(&cc->wbs, REDCAP_WB_DEPTH, offsetof(struct redcap_wb, bio),
			BIOSET_NEED_BVECS)) {
		ti->error = "Cannot allocate write-back bioset";
		return -ENOMEM;
	}
	return 0;
}

/*
 * The cache of this target: the one its device's other table has at the
 * same place over the same origin with the same geometry (a reload), with
 * a reference taken; else a new one.
 */
/*
 * The cache of @md's table at @ti's place over @origin with this geometry,
 * with a reference taken, or NULL.  redcap_caches_lock held.
 */
static struct redcap_cache *redcap_cache_lookup(struct mapped_device *md, struct dm_target *ti,
						dev_t origin, u32 seg_sectors, u32 nr_segs)
{
	struct redcap_cache *cc;

	list_for_each_entry(cc, &redcap_caches, list) {
		if (cc->md == md && cc->begin == ti->begin && cc->len == ti->len &&
		    cc->origin_dev == origin && cc->seg_sectors == seg_sectors &&
		    cc->nr_segs == nr_segs) {
			refcount_inc(&cc->ref);
			return cc;
		}
	}
	return NULL;
}

static int redcap_cache_get(struct redcap_c *rc, struct dm_target *ti, u32 seg_sectors,
			    u32 nr_segs, u32 pages_per_seg)
{
	struct mapped_device *md = dm_table_get_md(ti->table);
	dev_t origin = rc->origin->bdev->bd_dev;
	struct redcap_cache *cc;
	int r;

	mutex_lock(&redcap_caches_lock);
	rc->cc = redcap_cache_lookup(md, ti, origin, seg_sectors, nr_segs);
	mutex_unlock(&redcap_caches_lock);
	if (rc->cc)
		return 0;

	cc = kzalloc(sizeof(*cc), GFP_KERNEL);
	if (!cc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	INIT_LIST_HEAD(&cc->list);
	refcount_set(&cc->ref, 1);
	cc->md = md;
	cc->begin = ti->begin;
	cc->len = ti->len;
	cc->origin_dev = origin;
	cc->seg_sectors = seg_sectors;
	cc->nr_segs = nr_segs;
	cc->pages_per_seg = pages_per_seg;
	spin_lock_init(&cc->lock);
	mutex_init(&cc->hdc_lock);
	atomic_set(&cc->fills_inflight, 0);
	init_waitqueue_head(&cc->drain_wq);
	cc->origin_bdev = rc->origin->bdev;
	cc->dm_bdev = dm_disk(md)->part0;
	mutex_init(&cc->wb_mutex);
	INIT_DELAYED_WORK(&cc->wb_work, redcap_wb_work);
	INIT_WORK(&cc->wb_resume, redcap_wb_resume);
	INIT_WORK(&cc->regrow, redcap_regrow);
	bio_list_init(&cc->wb_waiting);
	bio_list_init(&cc->wb_flushes);
	bio_list_init(&cc->wb_ranges);
	atomic_set(&cc->wb_inflight, 0);
	init_waitqueue_head(&cc->wb_wait);
	r = redcap_cache_alloc(cc, ti);
	if (!r && redcap_shrinker_add(cc)) {
		ti->error = "Cannot register shrinker";
		r = -ENOMEM;
	}
	if (r) {
		redcap_cache_free(cc);
		return r;
	}
	/*
	 * No other load of this device added one meanwhile: dm-ioctl's
	 * table_load() runs a device's constructors under its type lock.
	 */
	mutex_lock(&redcap_caches_lock);
	list_add(&cc->list, &redcap_caches);
	mutex_unlock(&redcap_caches_lock);
	rc->cc = cc;
	return 0;
}

/* Safe on a partly built context: every constructor failure ends here. */
static void redcap_dtr(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	cancel_delayed_work_sync(&rc->hdc.work);
	if (rc->cc)
		redcap_cache_put(rc->cc);
	if (rc->vm) {
		rc->vm_api->put(rc->vm);
		symbol_put(vdisk_model_api);
	}
	if (rc->origin)
		dm_put_device(ti, rc->origin);
	kfree(rc);
}

/*
 * The vdisk model named by the model feature, else the origin's if the
 * origin is a vdisk device; none is fine.  Without dm-vdisk loaded there
 * is no vdisk device, hence no model.
 */
static int redcap_find_model(struct redcap_c *rc, struct dm_target *ti,
			     const char *path)
{
	dev_t dev = rc->origin->bdev->bd_dev;

	if (path && lookup_bdev(path, &dev)) {
		ti->error = "Model device lookup failed";
		return -ENODEV;
	}
	rc->vm_api = symbol_get(vdisk_model_api);
	if (rc->vm_api) {
		rc->vm = rc->vm_api->get(dev);
		if (!rc->vm) {
			symbol_put(vdisk_model_api);
			rc->vm_api = NULL;
		}
	}
	if (path && !rc->vm) {
		ti->error = "Model device is not a vdisk device";
		return -EINVAL;
	}
	rc->model_dev = dev;
	rc->model_explicit = path;
	return 0;
}

/* The estimator a table line without one runs: the model's where there is one. */
static enum rc_estimator redcap_default_estimator(const struct redcap_c *rc)
{
	return rc->vm ? RC_EST_VDISK : RC_EST_SPK;
}

/* The table line: rc_parse_table() in rc-args.h. */
static int redcap_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct rc_table_args t;
	struct rc_geometry g;
	const char *err;
	struct redcap_c *rc;
	int r;

	err = rc_parse_table(argc, argv, &t);
	if (err) {
		ti->error = (char *)err;
		return -EINVAL;
	}

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	ti->private = rc;
	rc->ti = ti;
	INIT_DELAYED_WORK(&rc->hdc.work, redcap_hdc_work);
	rc->policy = t.policy;
	rc->write_policy = t.write_policy;
	rc->estimator = t.estimator;

	/* 64 KiB pages, 32-bit sizes: refused here, not met in the I/O path. */
	err = rc_geometry(t.seg_sectors, t.nr_segs, PAGE_SHIFT, SIZE_MAX, &g);
	if (err) {
		ti->error = (char *)err;
		r = -EINVAL;
		goto bad;
	}

	r = dm_get_device(ti, t.origin, dm_table_get_mode(ti->table), &rc->origin);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	r = redcap_find_model(rc, ti, t.model);
	if (r)
		goto bad;
	if (rc->estimator == RC_EST_NR)
		rc->estimator = redcap_default_estimator(rc);
	if (rc->estimator == RC_EST_VDISK && !rc->vm) {
		ti->error = "Estimator vdisk needs a vdisk model";
		r = -EINVAL;
		goto bad;
	}

	r = redcap_cache_get(rc, ti, t.seg_sectors, t.nr_segs, g.pages_per_seg);
	if (r)
		goto bad;

	/*
	 * No max_io_len: a read the cache does not serve goes down whole;
	 * map() cuts the rest at segment boundaries (redcap_cut()).
	 */
	ti->num_flush_bios = 1;
	/* A volatile write cache: the device shows one, and gets flushes and FUA. */
	ti->flush_supported = rc->write_policy == RC_WRITE_BACK ||
			      rc->write_policy == RC_WRITE_SELECTIVE;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct redcap_pb);
	return 0;

bad:
	redcap_dtr(ti);
	return r;
}

/* Suspend, status, messages */

/*
 * Suspend: dm calls presuspend before it stops new bios, so waiting for
 * the fills there could wait as long as readers keep missing.  From
 * presuspend on, misses bypass and writes allocate nothing; postsuspend,
 * once dm has waited for the bios in flight, waits for the fills still
 * running and their completion work.  presuspend_undo and resume let
 * fills start again.
 */
static void redcap_hold_fills(struct redcap_cache *cc, bool hold)
{
	unsigned long flags;

	spin_lock_irqsave(&cc->lock, flags);
	rc_hold_fills(cc->cache, hold);
	spin_unlock_irqrestore(&cc->lock, flags);
}

static void redcap_presuspend(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	cancel_delayed_work_sync(&rc->hdc.work);
	redcap_hold_fills(rc->cc, true);
}

static void redcap_presuspend_undo(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	redcap_hold_fills(rc->cc, false);
	redcap_hdc_start(rc);
}

/*
 * Nothing new comes in: the fills in flight finish, and what the write
 * cache holds goes to the origin (fills are held, so writes meanwhile went
 * through).  A write-back that fails leaves its data dirty, said loudly.
 */
static void redcap_postsuspend(struct dm_target *ti)
{
	struct redcap_cache *cc = ((struct redcap_c *)ti->private)->cc;
	unsigned long flags;
	u32 dirty;
	bool on;
	int r;

	wait_event(cc->drain_wq, !atomic_read(&cc->fills_inflight));
	flush_workqueue(cc->wq);
	spin_lock_irqsave(&cc->lock, flags);
	on = rc_wc_on(cc->cache);
	dirty = cc->cache->nr_dirty;
	spin_unlock_irqrestore(&cc->lock, flags);
	if (!on)
		return;
	if (dirty)
		DMINFO("%s: writing back %u dirty segments", dm_device_name(cc->md), dirty);
	r = redcap_wb_round(cc, false);
	spin_lock_irqsave(&cc->lock, flags);
	dirty = cc->cache->nr_dirty;
	spin_unlock_irqrestore(&cc->lock, flags);
	if (r || dirty)
		DMERR("%s: %u dirty segments not written back: %d", dm_device_name(cc->md),
		      dirty, r);
}

/*
 * The table's features are applied to the cache when the table first
 * resumes: a loaded table does not change the live one's cache, and what
 * was learnt (state, rates, means, tunables) stays.
 */
static int redcap_preresume(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;
	struct redcap_cache *cc = rc->cc;
	unsigned long flags;
	bool regrow;

	redcap_fi_preresume_delay();
	if (rc->applied)
		return 0;
	spin_lock_irqsave(&cc->lock, flags);
	rc_set_write_policy(cc->cache, rc->write_policy);
	rc_set_estimator(cc->cache, rc->estimator);
	rc_set_policy(cc->cache, rc->policy);
	regrow = rc_regrow_due(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (regrow)
		redcap_regrow_kick(cc);
	rc->applied = true;
	return 0;
}

static void redcap_resume(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	redcap_hold_fills(rc->cc, false);
	redcap_hdc_start(rc);
}

static const char *redcap_state(struct redcap_c *rc)
{
	return rc_active(rc->cc->cache) ? "active" : "inactive";
}

/*
 * The choices a table line shows: the cache's own once this table's
 * features were applied (messages may have changed them), else the table's.
 */
struct redcap_choices {
	enum rc_policy policy;
	enum rc_write_policy write_policy;
	enum rc_estimator estimator;
};

static struct redcap_choices redcap_choices(struct redcap_c *rc)
{
	struct rc_cache *c = rc->cc->cache;

	if (!rc->applied)
		return (struct redcap_choices){ rc->policy, rc->write_policy, rc->estimator };
	return (struct redcap_choices){ READ_ONCE(c->policy), READ_ONCE(c->write_policy),
					READ_ONCE(c->adapt.estimator) };
}

static void redcap_status(struct dm_target *ti, status_type_t type,
			  unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct redcap_c *rc = ti->private;
	struct redcap_cache *cc = rc->cc;
	struct redcap_choices ch;
	struct rc_counters ctr;
	u32 valid, filling;
	unsigned int sz = 0, nfeat = 0;
	unsigned long flags;
	enum rc_policy policy;
	u64 switches;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&cc->lock, flags);
		ctr = cc->cache->ctr;
		valid = cc->cache->nr_valid;
		filling = cc->cache->nr_filling;
		switches = cc->cache->adapt.switches;
		policy = cc->cache->policy;
		spin_unlock_irqrestore(&cc->lock, flags);
		DMEMIT("%s %s %u/%u %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		       redcap_state(rc), rc_policy_name(policy),
		       valid, cc->nr_segs, filling,
		       ctr.read_hits, ctr.read_hits_waited, ctr.read_misses,
		       ctr.read_bypassed, ctr.fill_ios, ctr.fill_sectors,
		       ctr.fill_errors, ctr.writes, ctr.invalidations, switches);
		break;
	case STATUSTYPE_TABLE:
		ch = redcap_choices(rc);
		/* only what differs from the target's own choices */
		nfeat += ch.policy != RC_POLICY_DEFAULT ? 2 : 0;
		nfeat += ch.write_policy != RC_WRITE_INVALIDATE ? 2 : 0;
		nfeat += ch.estimator != redcap_default_estimator(rc) ? 2 : 0;
		nfeat += rc->model_explicit ? 2 : 0;
		DMEMIT("%s %u %u", rc->origin->name, cc->seg_sectors, cc->nr_segs);
		if (nfeat)
			DMEMIT(" %u", nfeat);
		if (ch.policy != RC_POLICY_DEFAULT)
			DMEMIT(" policy %s", rc_policy_name(ch.policy));
		if (ch.write_policy != RC_WRITE_INVALIDATE)
			DMEMIT(" write_policy %s", rc_write_policy_name(ch.write_policy));
		if (ch.estimator != redcap_default_estimator(rc))
			DMEMIT(" estimator %s", rc_estimator_name(ch.estimator));
		if (rc->model_explicit)
			DMEMIT(" model %u:%u", MAJOR(rc->model_dev), MINOR(rc->model_dev));
		break;
	case STATUSTYPE_IMA:
		ch = redcap_choices(rc);
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin_name=%s,segment_sectors=%u,segments=%u,policy=%s,write_policy=%s",
		       rc->origin->name, cc->seg_sectors, cc->nr_segs,
		       rc_policy_name(ch.policy), rc_write_policy_name(ch.write_policy));
		DMEMIT(",estimator=%s", rc_estimator_name(ch.estimator));
		if (rc->model_explicit)
			DMEMIT(",model_name=%u:%u", MAJOR(rc->model_dev), MINOR(rc->model_dev));
		DMEMIT(";");
		break;
	}
}

static unsigned long long redcap_us(u64 ns)
{
	return div_u64(ns, NSEC_PER_USEC);
}

/* The policy half of the stats: activation-deactivation and C-Aware. */
static unsigned int redcap_emit_policy(struct redcap_c *rc, const struct rc_adapt *a,
				       const struct rc_caware *w, const struct rc_budget *b,
				       const u32 *tun, char *result, unsigned int maxlen,
				       unsigned int sz)
{
	int i;

	DMEMIT("estimator=%s\n", rc_estimator_name(a->estimator));
	for (i = 0; i < RC_TUN_NR; i++)
		DMEMIT("%s=%u\n", rc_tunable_name(i), tun[i]);
	DMEMIT("switches=%llu\nwindows=%llu\nwindows_unjudged=%llu\n",
	       a->switches, a->windows, a->windows_unjudged);
	DMEMIT("cache_time_us=%llu\nest_disk_time_us=%llu\n",
	       redcap_us(a->total_cache_ns), redcap_us(a->total_disk_ns));
	DMEMIT("last_cache_time_us=%llu\nlast_est_disk_time_us=%llu\n",
	       redcap_us(a->last_cache_ns), redcap_us(a->last_disk_ns));
	DMEMIT("spell_cache_time_us=%llu\nspell_est_disk_time_us=%llu\n",
	       redcap_us(a->spell_cache_ns), redcap_us(a->spell_disk_ns));
	DMEMIT("budget_us=%lld\nbudget_earned_us=%llu\nbudget_spent_us=%llu\n",
	       div_s64(b->balance, NSEC_PER_USEC), redcap_us(b->earned_ns),
	       redcap_us(b->spent_ns));
	DMEMIT("budget_ghost_us=%lld\nbudget_ghost_earned_us=%llu\nbudget_fill_extra_us=%llu\n",
	       div_s64(b->ghost_ns, NSEC_PER_USEC), redcap_us(b->ghost_earned_ns),
	       redcap_us(b->extra_ns));
	for (i = 1; i <= 6; i++)
		DMEMIT("caware_rule%d=%llu\n", i, w->rule[i]);
	DMEMIT("caware_decays=%llu\ncaware_probes=%llu\n", w->decays, w->probes);
	for (i = 0; i < RC_CL_NR; i++)
		DMEMIT("caware_%s_us=%llu\ncaware_%s_n=%llu\n",
		       rc_class_name(i), redcap_us(w->cl[i].meantime),
		       rc_class_name(i), w->cl[i].n);
	return sz;
}

static int redcap_msg_stats(struct redcap_c *rc, char *result, unsigned int maxlen)
{
	struct rc_counters c;
	struct rc_budget b;
	u64 vd_requests, vd_busy_ns, vd_unestimated;
	struct rc_adapt *a;
	struct rc_caware *w;
	u32 valid, filling, ghost, bare, tun[RC_TUN_NR], hdc_pinned, hdc_max, periods;
	u32 dirty, dirty_max, wbusy, dirty_age = 0;
	u64 dirty_sectors;
	int wb_error;
	unsigned int sz = 0;
	unsigned long flags;
	int i;

	/* Too big for the stack: a snapshot taken under the lock. */
	a = kmalloc(sizeof(*a), GFP_KERNEL);
	w = kmalloc(sizeof(*w), GFP_KERNEL);
	if (!a || !w) {
		kfree(a);
		kfree(w);
		return -ENOMEM;
	}
	spin_lock_irqsave(&rc->cc->lock, flags);
	c = rc->cc->cache->ctr;
	valid = rc->cc->cache->nr_valid;
	filling = rc->cc->cache->nr_filling;
	ghost = rc->cc->cache->nr_ghost;
	bare = rc->cc->cache->nr_bare;
	hdc_pinned = rc->cc->cache->nr_hdc;
	hdc_max = rc_hdc_max(rc->cc->cache);
	periods = rc->cc->cache->hot_periods;
	dirty = rc->cc->cache->nr_dirty;
	dirty_max = rc_dirty_max(rc->cc->cache);
	wbusy = rc->cc->cache->nr_wbusy;
	if (rc->cc->cache->dirty_tail != RC_NONE)
		dirty_age = jiffies_to_msecs((u32)jiffies -
					     rc->cc->ents[rc->cc->cache->dirty_tail].dirty_at);
	dirty_sectors = rc->cc->cache->dirty_units << rc->cc->cache->unit_shift;
	wb_error = rc->cc->wb_error;
	vd_requests = rc->cc->vdisk.requests;
	vd_busy_ns = rc->cc->vdisk.busy_ns;
	vd_unestimated = rc->cc->vdisk.unestimated;
	*a = rc->cc->cache->adapt;
	*w = rc->cc->cache->caware;
	b = rc->cc->cache->budget;
	for (i = 0; i < RC_TUN_NR; i++)
		tun[i] = rc_get_tunable(rc->cc->cache, i);
	spin_unlock_irqrestore(&rc->cc->lock, flags);

	DMEMIT("state=%s\npolicy=%s\nwrite_policy=%s\n", redcap_state(rc),
	       rc_policy_name(rc->cc->cache->policy),
	       rc_write_policy_name(rc->cc->cache->write_policy));
	DMEMIT("segment_sectors=%u\nsegments=%u\nsegments_valid=%u\nsegments_filling=%u\n",
	       rc->cc->seg_sectors, rc->cc->nr_segs, valid, filling);
	DMEMIT("segments_ghost=%u\nsegments_bare=%u\n", ghost, bare);
	DMEMIT("reads=%llu\nread_hits=%llu\nread_hits_waited=%llu\n",
	       c.reads, c.read_hits, c.read_hits_waited);
	DMEMIT("read_misses=%llu\n", c.read_misses);
	DMEMIT("read_bypassed=%llu\nread_bypassed_busy=%llu\ncaware_bypassed=%llu\n",
	       c.read_bypassed, c.read_bypassed_busy, c.read_bypassed_caware);
	DMEMIT("read_bypassed_nomem=%llu\nread_bypassed_held=%llu\nread_resent=%llu\n",
	       c.read_bypassed_nomem, c.read_bypassed_held, c.read_resent);
	DMEMIT("read_bypassed_inactive=%llu\nread_bypassed_budget=%llu\n",
	       c.read_bypassed_inactive, c.read_bypassed_budget);
	DMEMIT("read_bypassed_joined=%llu\nread_joined=%llu\n", c.read_bypassed_joined,
	       c.read_joined);
	DMEMIT("prefetches=%llu\nprefetch_hits=%llu\nprefetch_unused=%llu\nprefetch_paired=%llu\n",
	       c.prefetches, c.prefetch_hits, c.prefetch_unused, c.prefetch_paired);
	DMEMIT("sim_hits=%llu\nsim_misses=%llu\n", c.sim_hits, c.sim_misses);
	DMEMIT("fill_ios=%llu\nfill_sectors=%llu\nfill_errors=%llu\nfill_stale=%llu\n",
	       c.fill_ios, c.fill_sectors, c.fill_errors, c.fill_stale);
	DMEMIT("fill_joined=%llu\nfill_along=%llu\n", c.fill_joined, c.fill_along);
	DMEMIT("writes=%llu\nwrite_sectors=%llu\ninvalidations=%llu\nupdates=%llu\n",
	       c.writes, c.write_sectors, c.invalidations, c.updates);
	DMEMIT("write_allocs=%llu\n", c.write_allocs);
	DMEMIT("write_cache=%s\n", !rc_write_caches(rc->cc->cache) ? "none" :
	       !redcap_wc_enabled(rc->cc) ? "off" : "on");
	DMEMIT("write_cached=%llu\nwrite_through=%llu\nwrite_waits=%llu\n", c.write_cached,
	       c.write_through, c.write_waits);
	DMEMIT("read_bypassed_partial=%llu\n", c.read_bypassed_partial);
	DMEMIT("dirty_segments=%u\ndirty_max=%u\ndirty_sectors=%llu\nwrites_inflight=%u\n",
	       dirty, dirty_max, dirty_sectors, wbusy);
	DMEMIT("dirty_age_ms=%u\n", dirty_age);
	DMEMIT("writeback_ios=%llu\nwriteback_sectors=%llu\nwriteback_errors=%llu\n",
	       c.writeback_ios, c.writeback_sectors, c.writeback_errors);
	DMEMIT("writeback_error=%d\nflushes=%llu\ndirty_dropped=%llu\n", wb_error, c.flushes,
	       c.dirty_dropped);
	DMEMIT("given_back=%llu\nregrown=%llu\n", c.given_back, c.regrown);
	DMEMIT("evictions=%llu\n", c.evictions);
	DMEMIT("x2_fills_saved=%llu\nx4_fills_saved=%llu\n", c.x2_fills_saved, c.x4_fills_saved);
	DMEMIT("hdc_pinned=%u\nhdc_max=%u\nhdc_fills=%llu\nhdc_hits=%llu\nhdc_dropped=%llu\n",
	       hdc_pinned, hdc_max, c.hdc_fills, c.hdc_hits, c.hdc_dropped);
	DMEMIT("hot_periods=%u\n", periods);
	if (rc->vm)
		DMEMIT("model=%u:%u\n", MAJOR(rc->model_dev), MINOR(rc->model_dev));
	else
		DMEMIT("model=none\n");
	DMEMIT("vdisk_requests=%llu\nvdisk_time_us=%llu\nvdisk_unestimated=%llu\n",
	       vd_requests, redcap_us(vd_busy_ns), vd_unestimated);
	sz = redcap_emit_policy(rc, a, w, &b, tun, result, maxlen, sz);
	kfree(a);
	kfree(w);
	return 1;
}

static void redcap_msg_reset_stats(struct redcap_cache *cc)
{
	rc_reset_counters(cc->cache);
	vd_vdisk_reset_stats(&cc->vdisk);
	vd_vdisk_reset_stats(&cc->vdisk_cache);
	rc_shadow_reset_stats(&cc->shadow);
}

static const char *const redcap_shadow_rams[RC_SHADOW_RAMS] = { "half", "x1", "x2", "x4" };

/*
 * shadows: what the reads received would have cost the disk with other
 * segment sizes and RAM (docs/redcap.rst), as parts per million of their
 * price on the bare disk; a shadow that has priced nothing is left out.
 * The fills are priced on a copy of the counts, outside the lock.
 */
static int redcap_msg_shadows(struct redcap_c *rc, char *result, unsigned int maxlen)
{
	struct redcap_cache *cc = rc->cc;
	struct {
		struct rc_shadow sh;
		struct rc_shadow_eval ev;
		u32 counts[];
	} *x;
	unsigned int sz = 0;
	unsigned long flags;
	u32 i, k;

	x = redcap_fi_shadow_alloc_fail() ? NULL :
	    kvmalloc(struct_size(x, counts, cc->shadow.nr_counts), GFP_KERNEL);
	if (!x) {
		DMERR("shadows: out of memory");
		return -ENOMEM;
	}
	spin_lock_irqsave(&cc->lock, flags);
	rc_shadow_copy(&x->sh, x->counts, &cc->shadow);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (rc->vm)
		rc_shadow_eval(&x->sh, redcap_shadow_price, rc, &x->ev);
	else
		memset(&x->ev, 0, sizeof(x->ev));

	DMEMIT("shadow_ram=%llu\nshadow_bare_us=%llu\n", x->sh.ram_bytes,
	       redcap_us(x->sh.bare_ns));
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		u64 kib = rc_shadow_seg_bytes(i) >> 10;
		u32 rate = x->sh.sz[i].rate_shift;

		if (rate >= 32)
			continue;
		DMEMIT("shadow_%lluk_sampled=%u\nshadow_%lluk_reads=%llu\n", kib, 1u << rate,
		       kib, x->sh.sz[i].reads);
		for (k = 0; k < RC_SHADOW_RAMS; k++)
			if (x->ev.ok[i][k])
				DMEMIT("shadow_%lluk_%s=%llu\n", kib, redcap_shadow_rams[k],
				       x->ev.ppm[i][k]);
	}
	kvfree(x);
	return 1;
}

static int redcap_msg_drop_cache(struct redcap_c *rc)
{
	struct redcap_cache *cc = rc->cc;
	unsigned long flags;
	unsigned int waited = 0;
	bool done;
	u32 busy;
	int r;

	/*
	 * Dirty data is dropped only once it is on the origin: what the
	 * origin refused stays (the clean entries go all the same), and the
	 * message fails.
	 */
	r = redcap_wb_round(cc, false);
	if (r)
		DMERR("drop_cache: write-back failed (%d): dirty segments stay", r);

	/* The shadows stand for this cache with other geometries: empty too. */
	spin_lock_irqsave(&cc->lock, flags);
	rc_shadow_reset(&cc->shadow);
	spin_unlock_irqrestore(&cc->lock, flags);
	for (;;) {
		spin_lock_irqsave(&cc->lock, flags);
		done = rc_drop_some(cc->cache, REDCAP_WALK_CHUNK);
		busy = cc->cache->nr_pinned;
		spin_unlock_irqrestore(&cc->lock, flags);
		if (!done) {
			cond_resched();
			continue;
		}
		if (!busy)
			return r;
		if (waited >= redcap_drop_timeout_ms()) {
			DMERR("drop_cache: %u segments still busy", busy);
			return -EBUSY;
		}
		msleep(20);
		waited += 20;
	}
}

/* The messages: rc_parse_message() in rc-args.h, docs/redcap.rst. */
static int redcap_message(struct dm_target *ti, unsigned int argc, char **argv,
			  char *result, unsigned int maxlen)
{
	struct redcap_c *rc = ti->private;
	struct redcap_cache *cc = rc->cc;
	const char *err;
	struct rc_msg m;
	unsigned long flags;
	bool regrow;
	char buf[128];

	err = rc_parse_message(argc, argv, &m, buf, sizeof(buf));
	if (err) {
		DMERR("%s", err);
		return -EINVAL;
	}
	switch (m.verb) {
	case RC_MSG_STATS:
		return redcap_msg_stats(rc, result, maxlen);
	case RC_MSG_DROP_CACHE:
		return redcap_msg_drop_cache(rc);
	case RC_MSG_HOT:
		return redcap_msg_hot(cc, m.uvalue, result, maxlen);
	case RC_MSG_PIN:
	case RC_MSG_UNPIN:
		return redcap_msg_pin(rc, m.verb == RC_MSG_PIN, argc - 1, argv + 1);
	case RC_MSG_CHOSEN:
		return redcap_msg_chosen(cc, m.uvalue, result, maxlen);
	case RC_MSG_SHADOWS:
		return redcap_msg_shadows(rc, result, maxlen);
	case RC_MSG_PREFILL:
		return redcap_msg_prefill(rc, argc - 1, argv + 1, result, maxlen);
	case RC_MSG_ESTIMATOR:
		if (m.value == RC_EST_VDISK && !rc->vm) {
			DMERR("estimator: no vdisk model below or named");
			return -EINVAL;
		}
		break;
	case RC_MSG_WRITE_POLICY:
		/* The table says whether the device has a write cache (flushes). */
		if ((m.value >= RC_WRITE_BACK) != (rc->write_policy >= RC_WRITE_BACK)) {
			DMERR("write_policy: %s takes a table reload (redcapctl set does it)",
			      rc_write_policy_name(m.value));
			return -EINVAL;
		}
		break;
	default:
		break;
	}

	spin_lock_irqsave(&cc->lock, flags);
	switch (m.verb) {
	case RC_MSG_RESET_STATS:
		redcap_msg_reset_stats(cc);
		break;
	case RC_MSG_POLICY:
		rc_set_policy(cc->cache, m.value);
		break;
	case RC_MSG_ESTIMATOR:
		rc_set_estimator(cc->cache, m.value);
		break;
	case RC_MSG_WRITE_POLICY:
		rc_set_write_policy(cc->cache, m.value);
		break;
	case RC_MSG_SET:
		rc_set_tunable(cc->cache, m.key, m.uvalue);
		break;
	default:
		break;
	}
	regrow = rc_regrow_due(cc->cache);
	spin_unlock_irqrestore(&cc->lock, flags);
	if (regrow)
		redcap_regrow_kick(cc);
	return 0;
}

static int redcap_iterate_devices(struct dm_target *ti,
				  iterate_devices_callout_fn fn, void *data)
{
	struct redcap_c *rc = ti->private;

	return fn(ti, rc->origin, 0, ti->len, data);
}

static struct target_type redcap_target = {
	.name = "redcap",
	.version = {0, 3, 0},
	.module = THIS_MODULE,
	.ctr = redcap_ctr,
	.dtr = redcap_dtr,
	.map = redcap_map,
	.end_io = redcap_end_io,
	.presuspend = redcap_presuspend,
	.presuspend_undo = redcap_presuspend_undo,
	.postsuspend = redcap_postsuspend,
	.preresume = redcap_preresume,
	.resume = redcap_resume,
	.status = redcap_status,
	.message = redcap_message,
	.iterate_devices = redcap_iterate_devices,
};

static int __init dm_redcap_init(void)
{
	return dm_register_target(&redcap_target);
}

static void __exit dm_redcap_exit(void)
{
	dm_unregister_target(&redcap_target);
}

module_init(dm_redcap_init);
module_exit(dm_redcap_exit);

MODULE_DESCRIPTION(DM_NAME " RAM segment cache with prefetch-on-miss (REDCAP)");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * dm-redcap: a RAM cache of disk segments with prefetch-on-miss (REDCAP).
 * Kernel glue around the portable core in rc-core.c: bios, pages, locks.
 */
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <linux/delay.h>
#include <linux/blkdev.h>

#include "rc-core.h"
#include "vdisk.h"

#define DM_MSG_PREFIX "redcap"

#define REDCAP_MIN_SEG_SECTORS	(4096 >> SECTOR_SHIFT)
#define REDCAP_MAX_SEG_SECTORS	((1024 * 1024) >> SECTOR_SHIFT)
#define REDCAP_DROP_TIMEOUT_MS	10000

/* Glue-side state of one cache entry; the core keeps the rest. */
struct redcap_entry {
	struct bio_list waiters;	/* reads waiting on the fill, miss first */
	struct llist_node done;		/* on fills_done when the fill completed */
	struct bio *fill_bio;
	u32 fill_sectors;
	blk_status_t fill_status;
	u64 fill_start_ns;
};

struct redcap_c {
	struct dm_target *ti;
	struct dm_dev *origin;
	struct mapped_device *md;
	struct list_head list;		/* on redcap_devices */
	bool suspended;
	u32 seg_sectors;
	u32 nr_segs;
	u32 pages_per_seg;

	spinlock_t lock;		/* protects cache and entry waiters */
	struct rc_cache *cache;		/* with its policy state: swapped whole at take-over */
	void *core_mem;
	struct redcap_entry *ents;
	struct page **pages;		/* nr_segs * pages_per_seg */

	struct bio_set bs;		/* fill bios */
	struct workqueue_struct *wq;
	struct work_struct fill_work;
	struct llist_head fills_done;
	atomic_t fills_inflight;
	wait_queue_head_t drain_wq;

	/*
	 * The latency model of the disk below (dm-vdisk), or NULL, and the
	 * virtual disk fed every read and write redcap receives: what they
	 * would have cost on the bare disk.  vdisk is under rc->lock.
	 */
	struct vdisk_model *vm;
	dev_t model_dev;
	bool model_explicit;		/* named by the model feature */
	struct vd_vdisk vdisk;
	/* the fills the simulated cache would issue while inactive */
	struct vd_vdisk vdisk_cache;

	/* end of the last disk read redcap saw complete (service times) */
	u64 disk_last_done;
};

enum redcap_pb_kind {
	PB_ORIGIN,	/* remapped to the origin, nothing to do at end_io */
	PB_BYPASS,	/* a read redcap sent to the origin: timed at end_io */
	PB_CACHE,	/* completed by redcap from RAM */
	PB_WRITE,	/* write within one segment */
	PB_RANGE,	/* discard / write-zeroes over a range of segments */
};

struct redcap_pb {
	enum redcap_pb_kind kind;
	u32 cookie;
	u64 start_ns;		/* when map saw the bio */
	u64 seg;
	u64 nr_segs;
	struct bvec_iter saved_iter;	/* as map saw it (a completed bio's is spent) */
};

/* Every live context, so a reloaded table can take over its predecessor's cache. */
static LIST_HEAD(redcap_devices);
static DEFINE_MUTEX(redcap_devices_lock);

static struct redcap_pb *redcap_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct redcap_pb));
}

static sector_t redcap_seg_start(struct redcap_c *rc, u64 seg)
{
	return (sector_t)seg << rc->cache->seg_shift;
}

/*
 * Copy between @bio's data at @iter and the buffer of entry @idx.  Bios
 * never span segments (max_io_len), so the offset is within the entry.
 */
static void redcap_copy(struct redcap_c *rc, u32 idx, struct bio *bio,
			struct bvec_iter iter, bool to_bio)
{
	struct page **pages = rc->pages + (size_t)idx * rc->pages_per_seg;
	size_t off = (size_t)(iter.bi_sector & (rc->seg_sectors - 1)) << SECTOR_SHIFT;
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

static void redcap_remap(struct redcap_c *rc, struct bio *bio)
{
	bio_set_dev(bio, rc->origin->bdev);
}

/*
 * A disk read of @sectors submitted at @start finished now: its service
 * time as a one-at-a-time server sees it, i.e. not counting the time it
 * queued behind the previous completion.  rc->lock held.
 */
static u64 redcap_disk_done(struct redcap_c *rc, enum rc_disk_kind kind,
			    sector_t sector, u32 sectors, u64 start)
{
	u64 now = ktime_get_ns();
	u64 ns = now - max(start, min(rc->disk_last_done, now));

	rc->disk_last_done = max(rc->disk_last_done, now);
	rc_adapt_disk_done(&rc->cache->adapt, kind, sector, sectors, ns);
	return now;
}

static void redcap_fill_endio(struct bio *fill)
{
	struct redcap_entry *e = fill->bi_private;
	struct redcap_c *rc = container_of(fill->bi_pool, struct redcap_c, bs);
	unsigned long flags;

	if (!fill->bi_status) {
		spin_lock_irqsave(&rc->lock, flags);
		redcap_disk_done(rc, RC_DISK_FILL,
				 redcap_seg_start(rc, rc->cache->entries[e - rc->ents].seg),
				 e->fill_sectors, e->fill_start_ns);
		spin_unlock_irqrestore(&rc->lock, flags);
	}
	e->fill_status = fill->bi_status;
	llist_add(&e->done, &rc->fills_done);
	queue_work(rc->wq, &rc->fill_work);
}

/* Complete the waiters of one finished fill (process context). */
static void redcap_finish_fill(struct redcap_c *rc, struct redcap_entry *e)
{
	u32 idx = e - rc->ents;
	int error = blk_status_to_errno(e->fill_status);
	enum rc_fill_action act;
	struct bio_list waiters;
	unsigned long flags;
	struct bio *bio;
	bool from_write = !e->fill_bio;
	sector_t start;
	u64 now;
	u32 n = 0;

	spin_lock_irqsave(&rc->lock, flags);
	start = redcap_seg_start(rc, rc->cache->entries[idx].seg);
	act = rc_fill_done(rc->cache, idx, error, e->fill_sectors);
	waiters = e->waiters;
	bio_list_init(&e->waiters);
	spin_unlock_irqrestore(&rc->lock, flags);

	if (error)
		DMERR_LIMIT("%s: fill of sectors %llu+%u failed: %d", rc->origin->name,
			    (unsigned long long)start,
			    e->fill_sectors, error);
	if (!from_write)
		bio_put(e->fill_bio);
	e->fill_bio = NULL;

	while ((bio = bio_list_pop(&waiters))) {
		struct redcap_pb *pb = redcap_pb(bio);

		switch (act) {
		case RC_FILL_SERVE:
			redcap_copy(rc, idx, bio, bio->bi_iter, true);
			now = ktime_get_ns();
			spin_lock_irqsave(&rc->lock, flags);
			rc_caware_record(&rc->cache->caware, RC_CL_CACHE_READ,
					 now - pb->start_ns, now);
			spin_unlock_irqrestore(&rc->lock, flags);
			bio_endio(bio);
			n++;
			break;
		case RC_FILL_STALE:
		case RC_FILL_ERROR:
			/*
			 * Stale: the origin has newer data.  Error: one bad block
			 * must not fail reads of the good ones in its segment;
			 * each reader gets the origin's own answer.
			 */
			pb->kind = PB_BYPASS;
			pb->start_ns = ktime_get_ns();
			redcap_remap(rc, bio);
			submit_bio_noacct(bio);
			break;
		}
	}

	if (act == RC_FILL_SERVE) {
		spin_lock_irqsave(&rc->lock, flags);
		/* The first waiter of a read fill is its miss; a write's has none. */
		if (n > !from_write)
			rc_count_waited(rc->cache, n - !from_write);
		rc_unpin(rc->cache, idx);
		spin_unlock_irqrestore(&rc->lock, flags);
	}

	if (atomic_dec_and_test(&rc->fills_inflight))
		wake_up_all(&rc->drain_wq);
}

static void redcap_fill_work(struct work_struct *ws)
{
	struct redcap_c *rc = container_of(ws, struct redcap_c, fill_work);
	struct llist_node *list = llist_del_all(&rc->fills_done);
	struct redcap_entry *e, *tmp;

	llist_for_each_entry_safe(e, tmp, list, done)
		redcap_finish_fill(rc, e);
}

/* Read the whole disk segment held by entry @idx (clipped at the end). */
static void redcap_start_fill(struct redcap_c *rc, u32 idx, u64 seg)
{
	struct redcap_entry *e = &rc->ents[idx];
	struct page **pages = rc->pages + (size_t)idx * rc->pages_per_seg;
	sector_t start = redcap_seg_start(rc, seg);
	u32 sectors = min_t(sector_t, rc->seg_sectors, rc->ti->len - start);
	unsigned int bytes = sectors << SECTOR_SHIFT;
	struct bio *fill;
	unsigned int i;

	/* From a mempool with GFP_NOIO: waits, never fails. */
	fill = bio_alloc_bioset(rc->origin->bdev, DIV_ROUND_UP(bytes, PAGE_SIZE),
				REQ_OP_READ, GFP_NOIO, &rc->bs);
	fill->bi_iter.bi_sector = start;
	for (i = 0; bytes; i++) {
		unsigned int n = min_t(unsigned int, bytes, PAGE_SIZE);

		/* Cannot fail: the bio has a vec for every page. */
		if (WARN_ON_ONCE(bio_add_page(fill, pages[i], n, 0) != n))
			break;
		bytes -= n;
	}
	fill->bi_private = e;
	fill->bi_end_io = redcap_fill_endio;
	e->fill_bio = fill;
	e->fill_sectors = sectors;
	e->fill_start_ns = ktime_get_ns();
	atomic_inc(&rc->fills_inflight);
	submit_bio_noacct(fill);
}

/*
 * Play a request on virtual disk @v; *ns is its virtual service time, and
 * the return value false if the model could not price it.  rc->lock held.
 */
static bool redcap_vdisk_submit(struct redcap_c *rc, struct vd_vdisk *v, enum vd_dir dir,
				sector_t sector, u32 sectors, u64 now, u64 *ns)
{
	u64 busy = v->busy_ns, unest = v->unestimated;

	*ns = 0;
	if (!rc->vm)
		return false;
	vdisk_model_vdisk_submit(rc->vm, v, dir, sector, sectors, now);
	*ns = v->busy_ns - busy;
	return v->unestimated == unest;
}

/* A write goes to the disk whatever the cache does: both virtual disks see it. */
static void redcap_vdisk_write(struct redcap_c *rc, struct bio *bio, u64 now)
{
	u64 ns;

	redcap_vdisk_submit(rc, &rc->vdisk, VD_WRITE, bio->bi_iter.bi_sector,
			    bio_sectors(bio), now, &ns);
	redcap_vdisk_submit(rc, &rc->vdisk_cache, VD_WRITE, bio->bi_iter.bi_sector,
			    bio_sectors(bio), now, &ns);
}

/*
 * Judge the read that rc_read() just handled with @act: its price on the
 * bare disk (the virtual disk of what redcap received) and the price of
 * what the cache sent down for it, or would have while inactive (the
 * virtual disk of the cache's own stream).  rc->lock held.
 */
static void redcap_adapt_read(struct redcap_c *rc, struct bio *bio, enum rc_read_action act,
			      u64 vd_ns, bool vd_ok, u64 now)
{
	struct rc_cache *c = rc->cache;
	sector_t start = redcap_seg_start(rc, rc_sector_to_seg(c, bio->bi_iter.bi_sector));
	bool cvd_ok = true;
	u64 cvd_ns = 0;

	if (act == RC_READ_FILL || c->sim == RC_SIM_MISS)
		cvd_ok = redcap_vdisk_submit(rc, &rc->vdisk_cache, VD_READ, start,
					     min_t(sector_t, rc->seg_sectors, rc->ti->len - start),
					     now, &cvd_ns);
	else if (act == RC_READ_BYPASS && c->sim != RC_SIM_HIT)
		cvd_ok = redcap_vdisk_submit(rc, &rc->vdisk_cache, VD_READ,
					     bio->bi_iter.bi_sector, bio_sectors(bio),
					     now, &cvd_ns);
	rc_adapt_read(&c->adapt, bio->bi_iter.bi_sector, bio_sectors(bio), rc->seg_sectors,
		      c->sim, vd_ns, vd_ok, cvd_ns, cvd_ok);
}

static int redcap_map_read(struct redcap_c *rc, struct bio *bio)
{
	struct redcap_pb *pb = redcap_pb(bio);
	u64 seg = rc_sector_to_seg(rc->cache, bio->bi_iter.bi_sector);
	enum rc_read_action act;
	unsigned long flags;
	u32 idx = RC_NONE;
	u64 vd_ns, now;
	bool vd_ok;

	spin_lock_irqsave(&rc->lock, flags);
	vd_ok = redcap_vdisk_submit(rc, &rc->vdisk, VD_READ, bio->bi_iter.bi_sector,
				    bio_sectors(bio), pb->start_ns, &vd_ns);
	if (rc_policy_caware(rc->cache->policy))
		rc_caware_decay(&rc->cache->caware, pb->start_ns);
	act = rc_read(rc->cache, seg, &idx);
	redcap_adapt_read(rc, bio, act, vd_ns, vd_ok, pb->start_ns);
	if (act == RC_READ_WAIT || act == RC_READ_FILL) {
		pb->kind = PB_CACHE;
		bio_list_add(&rc->ents[idx].waiters, bio);
	}
	spin_unlock_irqrestore(&rc->lock, flags);

	switch (act) {
	case RC_READ_HIT:
		pb->kind = PB_CACHE;
		redcap_copy(rc, idx, bio, bio->bi_iter, true);
		now = ktime_get_ns();
		spin_lock_irqsave(&rc->lock, flags);
		rc_unpin(rc->cache, idx);
		rc_adapt_copy(&rc->cache->adapt, bio_sectors(bio), now - pb->start_ns);
		rc_caware_record(&rc->cache->caware, RC_CL_DIRECT_CACHE_READ,
				 now - pb->start_ns, now);
		rc_caware_record(&rc->cache->caware, RC_CL_CACHE_READ, now - pb->start_ns, now);
		spin_unlock_irqrestore(&rc->lock, flags);
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	case RC_READ_FILL:
		redcap_start_fill(rc, idx, seg);
		return DM_MAPIO_SUBMITTED;
	case RC_READ_WAIT:
		return DM_MAPIO_SUBMITTED;
	case RC_READ_BYPASS:
		break;
	}
	pb->kind = PB_BYPASS;
	redcap_remap(rc, bio);
	return DM_MAPIO_REMAPPED;
}

static int redcap_map(struct dm_target *ti, struct bio *bio)
{
	struct redcap_c *rc = ti->private;
	struct redcap_pb *pb = redcap_pb(bio);
	unsigned long flags;

	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	pb->kind = PB_ORIGIN;
	pb->start_ns = ktime_get_ns();
	pb->saved_iter = bio->bi_iter;

	if (!bio_sectors(bio)) {	/* empty flush */
		redcap_remap(rc, bio);
		return DM_MAPIO_REMAPPED;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return redcap_map_read(rc, bio);
	case REQ_OP_WRITE:
		pb->kind = PB_WRITE;
		pb->seg = rc_sector_to_seg(rc->cache, bio->bi_iter.bi_sector);
		spin_lock_irqsave(&rc->lock, flags);
		redcap_vdisk_write(rc, bio, pb->start_ns);
		pb->cookie = rc_write_start(rc->cache, pb->seg, bio_sectors(bio), true);
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
	case REQ_OP_SECURE_ERASE:
		/* Not split at segment boundaries by dm: may cover many. */
		pb->kind = PB_RANGE;
		pb->seg = rc_sector_to_seg(rc->cache, bio->bi_iter.bi_sector);
		pb->nr_segs = rc_sector_to_seg(rc->cache, bio_end_sector(bio) - 1) - pb->seg + 1;
		spin_lock_irqsave(&rc->lock, flags);
		rc_range_start(rc->cache, pb->seg, pb->nr_segs, bio_sectors(bio));
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	default:
		break;
	}
	redcap_remap(rc, bio);
	return DM_MAPIO_REMAPPED;
}

/* A write of exactly one whole segment, whose data can fill an entry. */
static bool redcap_whole_segment(struct redcap_c *rc, struct redcap_pb *pb)
{
	return pb->saved_iter.bi_size == rc->seg_sectors << SECTOR_SHIFT &&
	       !(pb->saved_iter.bi_sector & (rc->seg_sectors - 1));
}

/*
 * Entry @idx was allocated for the whole-segment write @bio (C-Aware's
 * write rules): copy the data in now, while the bio still holds it, and
 * complete the entry like a fill, from the fill worker (waiting readers
 * may have to be re-sent to the origin, which is not done from end_io).
 */
static void redcap_write_fill(struct redcap_c *rc, struct bio *bio, struct redcap_pb *pb,
			      u32 idx)
{
	struct redcap_entry *e = &rc->ents[idx];
	unsigned long flags;
	u64 copied, now = ktime_get_ns();

	redcap_copy(rc, idx, bio, pb->saved_iter, false);
	copied = ktime_get_ns();
	spin_lock_irqsave(&rc->lock, flags);
	rc_caware_record(&rc->cache->caware, RC_CL_DIRECT_CACHE_WRITE, copied - now, copied);
	rc_caware_record(&rc->cache->caware, RC_CL_CACHE_WRITE, copied - pb->start_ns, copied);
	spin_unlock_irqrestore(&rc->lock, flags);

	e->fill_bio = NULL;
	e->fill_sectors = rc->seg_sectors;
	e->fill_status = BLK_STS_OK;
	atomic_inc(&rc->fills_inflight);
	llist_add(&e->done, &rc->fills_done);
	queue_work(rc->wq, &rc->fill_work);
}

static int redcap_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct redcap_c *rc = ti->private;
	struct redcap_pb *pb = redcap_pb(bio);
	enum rc_write_action act;
	unsigned long flags;
	bool alloc = false;
	u64 now;
	u32 idx;

	switch (pb->kind) {
	case PB_ORIGIN:
	case PB_CACHE:
		break;
	case PB_BYPASS:
		if (*error)
			break;
		spin_lock_irqsave(&rc->lock, flags);
		now = redcap_disk_done(rc, RC_DISK_BARE, pb->saved_iter.bi_sector,
				       pb->saved_iter.bi_size >> SECTOR_SHIFT, pb->start_ns);
		rc_caware_record(&rc->cache->caware, RC_CL_SOURCE_READ, now - pb->start_ns, now);
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	case PB_WRITE:
		now = ktime_get_ns();
		spin_lock_irqsave(&rc->lock, flags);
		act = rc_write_done(rc->cache, pb->seg, pb->cookie,
				    blk_status_to_errno(*error), true, &idx);
		if (act == RC_WRITE_DONE && !*error && redcap_whole_segment(rc, pb))
			alloc = rc_write_allocate(rc->cache, pb->seg, pb->cookie, &idx);
		if (!*error && !alloc)
			rc_caware_record(&rc->cache->caware, RC_CL_SOURCE_WRITE,
					 now - pb->start_ns, now);
		spin_unlock_irqrestore(&rc->lock, flags);
		if (alloc)
			redcap_write_fill(rc, bio, pb, idx);
		if (act == RC_WRITE_COPY) {
			redcap_copy(rc, idx, bio, pb->saved_iter, false);
			spin_lock_irqsave(&rc->lock, flags);
			rc_unpin(rc->cache, idx);
			spin_unlock_irqrestore(&rc->lock, flags);
		}
		break;
	case PB_RANGE:
		spin_lock_irqsave(&rc->lock, flags);
		rc_range_done(rc->cache, pb->seg, pb->nr_segs);
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	}
	return DM_ENDIO_DONE;
}

/* Construction */

static void redcap_free_pages(struct redcap_c *rc)
{
	size_t i;

	if (!rc->pages)
		return;
	for (i = 0; i < (size_t)rc->nr_segs * rc->pages_per_seg; i++)
		if (rc->pages[i])
			__free_page(rc->pages[i]);
	kvfree(rc->pages);
	rc->pages = NULL;
}

/* Safe on a partly built context: every constructor failure ends here. */
static void redcap_dtr(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	mutex_lock(&redcap_devices_lock);
	if (!list_empty(&rc->list))
		list_del(&rc->list);
	mutex_unlock(&redcap_devices_lock);
	if (rc->wq)
		destroy_workqueue(rc->wq);
	bioset_exit(&rc->bs);
	redcap_free_pages(rc);
	kvfree(rc->ents);
	kvfree(rc->core_mem);
	kfree(rc->cache);
	if (rc->vm)
		vdisk_model_put(rc->vm);
	if (rc->origin)
		dm_put_device(ti, rc->origin);
	kfree(rc);
}

static int redcap_parse_write_policy(const char *name)
{
	if (!strcasecmp(name, "invalidate"))
		return RC_WRITE_INVALIDATE;
	if (!strcasecmp(name, "update"))
		return RC_WRITE_UPDATE;
	return -1;
}

enum { RF_POLICY, RF_WRITE_POLICY, RF_ESTIMATOR, RF_MODEL, RF_NR };

/* Every feature is "<name> <argument>" and may be given once. */
static const struct redcap_feature {
	const char *name;
	int (*parse)(const char *arg);	/* NULL: the argument is kept as it is */
	char *missing, *duplicated, *unknown;	/* ti->error texts */
} redcap_features[RF_NR] = {
	[RF_POLICY] = { "policy", rc_policy_parse, "Feature policy requires a name",
			"Feature policy duplicated", "Unknown policy" },
	[RF_WRITE_POLICY] = { "write_policy", redcap_parse_write_policy,
			      "Feature write_policy requires a name",
			      "Feature write_policy duplicated", "Unknown write_policy" },
	[RF_ESTIMATOR] = { "estimator", rc_estimator_parse, "Feature estimator requires a name",
			   "Feature estimator duplicated", "Unknown estimator" },
	[RF_MODEL] = { "model", NULL, "Feature model requires a device",
		       "Feature model duplicated", NULL },
};

struct redcap_features {
	const char *arg[RF_NR];		/* NULL: not given */
	int val[RF_NR];			/* the argument parsed */
};

static int redcap_parse_features(struct dm_arg_set *as, struct dm_target *ti,
				 struct redcap_features *f)
{
	static const struct dm_arg _args[] = {
		{0, 2 * RF_NR, "Invalid number of feature args"},
	};
	const struct redcap_feature *ft;
	unsigned int argc;
	const char *name;
	int r;

	r = dm_read_arg_group(_args, as, &argc, &ti->error);
	if (r)
		return r;

	while (argc) {
		name = dm_shift_arg(as);
		argc--;
		for (ft = redcap_features; ft < redcap_features + RF_NR; ft++)
			if (!strcasecmp(name, ft->name))
				break;
		if (ft == redcap_features + RF_NR) {
			ti->error = "Unrecognised feature requested";
			return -EINVAL;
		}
		if (!argc) {
			ti->error = ft->missing;
			return -EINVAL;
		}
		if (f->arg[ft - redcap_features]) {
			ti->error = ft->duplicated;
			return -EINVAL;
		}
		f->arg[ft - redcap_features] = dm_shift_arg(as);
		argc--;
		if (!ft->parse)
			continue;
		f->val[ft - redcap_features] = ft->parse(f->arg[ft - redcap_features]);
		if (f->val[ft - redcap_features] < 0) {
			ti->error = ft->unknown;
			return -EINVAL;
		}
	}
	return 0;
}

static int redcap_alloc_cache(struct redcap_c *rc, struct dm_target *ti)
{
	size_t i, nr_pages = (size_t)rc->nr_segs * rc->pages_per_seg;

	/* More than half of RAM would starve the system before failing. */
	if (nr_pages > totalram_pages() / 2)
		goto nomem;

	/* A cache larger than memory is a user error, not a kernel warning. */
	rc->cache = kzalloc(sizeof(*rc->cache), GFP_KERNEL);
	rc->core_mem = kvzalloc(rc_cache_mem_size(rc->nr_segs), GFP_KERNEL | __GFP_NOWARN);
	rc->ents = kvcalloc(rc->nr_segs, sizeof(*rc->ents), GFP_KERNEL | __GFP_NOWARN);
	rc->pages = kvcalloc(nr_pages, sizeof(*rc->pages), GFP_KERNEL | __GFP_NOWARN);
	if (!rc->cache || !rc->core_mem || !rc->ents || !rc->pages)
		goto nomem;
	for (i = 0; i < nr_pages; i++) {
		rc->pages[i] = alloc_page(GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
		if (!rc->pages[i])
			goto nomem;
		if (fatal_signal_pending(current))
			goto nomem;
		cond_resched();
	}
	for (i = 0; i < rc->nr_segs; i++)
		bio_list_init(&rc->ents[i].waiters);
	return 0;

nomem:
	ti->error = "Cannot allocate cache memory";
	return -ENOMEM;
}

/*
 * The vdisk model named by the model feature, else the origin's if the
 * origin is a vdisk device; none is fine.
 */
static int redcap_find_model(struct redcap_c *rc, struct dm_target *ti,
			     const char *path)
{
	dev_t dev = rc->origin->bdev->bd_dev;

	vd_vdisk_init(&rc->vdisk);
	vd_vdisk_init(&rc->vdisk_cache);
	if (path && lookup_bdev(path, &dev)) {
		ti->error = "Model device lookup failed";
		return -ENODEV;
	}
	rc->vm = vdisk_model_get(dev);
	if (path && !rc->vm) {
		ti->error = "Model device is not a vdisk device";
		return -EINVAL;
	}
	rc->model_dev = dev;
	rc->model_explicit = path;
	return 0;
}

/*
 * redcap <origin dev> <segment sectors> <nr segments> [<#features> <feature>*]
 *   features: policy always|off|adaptive|caware|adaptive+caware,
 *             write_policy invalidate|update, estimator spk|vdisk,
 *             model <vdisk dev>
 */
static int redcap_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	static const struct dm_arg _args[] = {
		{REDCAP_MIN_SEG_SECTORS, REDCAP_MAX_SEG_SECTORS, "Invalid segment size"},
		{1, RC_MAX_ENTRIES, "Invalid number of segments"},
	};
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct redcap_features f = {
		.val = {
			[RF_POLICY] = RC_POLICY_ALWAYS,
			[RF_WRITE_POLICY] = RC_WRITE_INVALIDATE,
			[RF_ESTIMATOR] = RC_EST_SPK,
		},
	};
	const char *devname;
	struct redcap_c *rc;
	int r;

	if (argc < 3) {
		ti->error = "Invalid argument count";
		return -EINVAL;
	}

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	ti->private = rc;
	rc->ti = ti;
	rc->md = dm_table_get_md(ti->table);
	INIT_LIST_HEAD(&rc->list);
	spin_lock_init(&rc->lock);
	init_llist_head(&rc->fills_done);
	INIT_WORK(&rc->fill_work, redcap_fill_work);
	init_waitqueue_head(&rc->drain_wq);

	devname = dm_shift_arg(&as);
	r = dm_read_arg(_args, &as, &rc->seg_sectors, &ti->error);
	if (r)
		goto bad;
	if (!is_power_of_2(rc->seg_sectors)) {
		ti->error = "Segment size must be a power of 2";
		r = -EINVAL;
		goto bad;
	}
	r = dm_read_arg(_args + 1, &as, &rc->nr_segs, &ti->error);
	if (r)
		goto bad;

	if (as.argc) {
		r = redcap_parse_features(&as, ti, &f);
		if (r)
			goto bad;
	}
	if (as.argc) {
		ti->error = "Too many arguments";
		r = -EINVAL;
		goto bad;
	}

	r = dm_get_device(ti, devname, dm_table_get_mode(ti->table), &rc->origin);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	r = redcap_find_model(rc, ti, f.arg[RF_MODEL]);
	if (r)
		goto bad;
	if (f.val[RF_ESTIMATOR] == RC_EST_VDISK && !rc->vm) {
		ti->error = "Estimator vdisk needs a vdisk model";
		r = -EINVAL;
		goto bad;
	}

	rc->pages_per_seg = (rc->seg_sectors << SECTOR_SHIFT) >> PAGE_SHIFT;
	r = redcap_alloc_cache(rc, ti);
	if (r)
		goto bad;
	if (rc_cache_init(rc->cache, rc->core_mem, rc->nr_segs, ilog2(rc->seg_sectors))) {
		ti->error = "Cannot initialise cache";
		r = -EINVAL;
		goto bad;
	}
	rc->cache->write_policy = f.val[RF_WRITE_POLICY];
	rc->cache->adapt.estimator = f.val[RF_ESTIMATOR];
	rc_set_policy(rc->cache, f.val[RF_POLICY]);
	rc_caware_init(&rc->cache->caware, ktime_get_ns());

	r = bioset_init(&rc->bs, 16, 0, BIOSET_NEED_BVECS);
	if (r) {
		ti->error = "Cannot allocate fill bioset";
		goto bad;
	}
	rc->wq = alloc_workqueue("dm-" DM_MSG_PREFIX, WQ_MEM_RECLAIM, 0);
	if (!rc->wq) {
		ti->error = "Cannot allocate workqueue";
		r = -ENOMEM;
		goto bad;
	}

	r = dm_set_target_max_io_len(ti, rc->seg_sectors);
	if (r)
		goto bad;
	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct redcap_pb);

	mutex_lock(&redcap_devices_lock);
	list_add(&rc->list, &redcap_devices);
	mutex_unlock(&redcap_devices_lock);
	return 0;

bad:
	redcap_dtr(ti);
	return r;
}

/* Suspend, status, messages */

/* Wait until no fill is in flight and no fill completion is running. */
static void redcap_drain(struct redcap_c *rc)
{
	wait_event(rc->drain_wq, !atomic_read(&rc->fills_inflight));
	flush_workqueue(rc->wq);
}

static void redcap_presuspend(struct dm_target *ti)
{
	redcap_drain(ti->private);
}

static void redcap_postsuspend(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private;

	/*
	 * Bios that arrived after presuspend may have started fills; dm has
	 * waited for their readers, but the completion work may still hold pins.
	 */
	redcap_drain(rc);
	mutex_lock(&redcap_devices_lock);
	rc->suspended = true;
	mutex_unlock(&redcap_devices_lock);
}

/*
 * Take the cache of the table this one replaces when it has the same
 * origin and geometry.  The old table is suspended: its fills are drained
 * and no bio is in it, so its cache is idle and consistent with the origin.
 */
static void redcap_take_over(struct redcap_c *rc, struct redcap_c *old)
{
	enum rc_write_policy wpolicy = rc->cache->write_policy;
	enum rc_estimator est = rc->cache->adapt.estimator;
	enum rc_policy policy = rc->cache->policy;

	/* What was learnt (state, rates, means) comes along; the table's choices win. */
	swap(rc->cache, old->cache);
	swap(rc->core_mem, old->core_mem);
	swap(rc->ents, old->ents);
	swap(rc->pages, old->pages);
	rc->cache->write_policy = wpolicy;
	rc->cache->adapt.estimator = est;
	rc_set_policy(rc->cache, policy);
}

static int redcap_preresume(struct dm_target *ti)
{
	struct redcap_c *rc = ti->private, *old;

	mutex_lock(&redcap_devices_lock);
	list_for_each_entry(old, &redcap_devices, list) {
		if (old != rc && old->md == rc->md && old->suspended &&
		    old->origin->bdev == rc->origin->bdev &&
		    old->seg_sectors == rc->seg_sectors && old->nr_segs == rc->nr_segs &&
		    old->ti->len == rc->ti->len &&	/* same clipped last segment */
		    rc_idle(old->cache)) {
			redcap_take_over(rc, old);
			break;
		}
	}
	rc->suspended = false;
	mutex_unlock(&redcap_devices_lock);
	return 0;
}

static const char *redcap_write_policy_name(struct redcap_c *rc)
{
	return rc->cache->write_policy == RC_WRITE_UPDATE ? "update" : "invalidate";
}

static const char *redcap_state(struct redcap_c *rc)
{
	return rc_active(rc->cache) ? "active" : "inactive";
}

static void redcap_status(struct dm_target *ti, status_type_t type,
			  unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct redcap_c *rc = ti->private;
	struct rc_counters ctr;
	u32 valid, filling;
	unsigned int sz = 0, nfeat = 0;
	unsigned long flags;
	u64 switches;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&rc->lock, flags);
		ctr = rc->cache->ctr;
		valid = rc->cache->nr_valid;
		filling = rc->cache->nr_filling;
		switches = rc->cache->adapt.switches;
		spin_unlock_irqrestore(&rc->lock, flags);
		DMEMIT("%s %s %u/%u %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		       redcap_state(rc), rc_policy_name(rc->cache->policy),
		       valid, rc->nr_segs, filling,
		       ctr.read_hits, ctr.read_hits_waited, ctr.read_misses,
		       ctr.read_bypassed, ctr.fill_ios, ctr.fill_sectors,
		       ctr.fill_errors, ctr.writes, ctr.invalidations, switches);
		break;
	case STATUSTYPE_TABLE:
		nfeat += rc->cache->policy != RC_POLICY_ALWAYS ? 2 : 0;
		nfeat += rc->cache->write_policy != RC_WRITE_INVALIDATE ? 2 : 0;
		nfeat += rc->cache->adapt.estimator != RC_EST_SPK ? 2 : 0;
		nfeat += rc->model_explicit ? 2 : 0;
		DMEMIT("%s %u %u", rc->origin->name, rc->seg_sectors, rc->nr_segs);
		if (nfeat)
			DMEMIT(" %u", nfeat);
		if (rc->cache->policy != RC_POLICY_ALWAYS)
			DMEMIT(" policy %s", rc_policy_name(rc->cache->policy));
		if (rc->cache->write_policy != RC_WRITE_INVALIDATE)
			DMEMIT(" write_policy %s", redcap_write_policy_name(rc));
		if (rc->cache->adapt.estimator != RC_EST_SPK)
			DMEMIT(" estimator %s", rc_estimator_name(rc->cache->adapt.estimator));
		if (rc->model_explicit)
			DMEMIT(" model %u:%u", MAJOR(rc->model_dev), MINOR(rc->model_dev));
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin_name=%s,segment_sectors=%u,segments=%u,policy=%s,write_policy=%s",
		       rc->origin->name, rc->seg_sectors, rc->nr_segs,
		       rc_policy_name(rc->cache->policy), redcap_write_policy_name(rc));
		DMEMIT(",estimator=%s;", rc_estimator_name(rc->cache->adapt.estimator));
		break;
	}
}

static unsigned long long redcap_us(u64 ns)
{
	return div_u64(ns, NSEC_PER_USEC);
}

/* The policy half of the stats: activation-deactivation and C-Aware. */
static unsigned int redcap_emit_policy(struct redcap_c *rc, const struct rc_adapt *a,
				       const struct rc_caware *w, char *result,
				       unsigned int maxlen, unsigned int sz)
{
	int i;

	DMEMIT("estimator=%s\nwindow=%u\nmargin=%u\ndwell=%u\ndecay_ms=%llu\n",
	       rc_estimator_name(a->estimator), a->window, a->margin, a->dwell,
	       div_u64(w->interval_ns, NSEC_PER_MSEC));
	DMEMIT("switches=%llu\nwindows=%llu\nwindows_unjudged=%llu\n",
	       a->switches, a->windows, a->windows_unjudged);
	DMEMIT("cache_time_us=%llu\nest_disk_time_us=%llu\n",
	       redcap_us(a->total_cache_ns), redcap_us(a->total_disk_ns));
	DMEMIT("last_cache_time_us=%llu\nlast_est_disk_time_us=%llu\n",
	       redcap_us(a->last_cache_ns), redcap_us(a->last_disk_ns));
	for (i = 1; i <= 6; i++)
		DMEMIT("caware_rule%d=%llu\n", i, w->rule[i]);
	DMEMIT("caware_decays=%llu\n", w->decays);
	for (i = 0; i < RC_CL_NR; i++)
		DMEMIT("caware_%s_us=%llu\ncaware_%s_n=%llu\n",
		       rc_class_name(i), redcap_us(w->cl[i].meantime),
		       rc_class_name(i), w->cl[i].n);
	return sz;
}

static int redcap_msg_stats(struct redcap_c *rc, char *result, unsigned int maxlen)
{
	struct rc_counters c;
	struct vd_vdisk v;
	struct rc_adapt *a;
	struct rc_caware *w;
	u32 valid, filling, ghost;
	unsigned int sz = 0;
	unsigned long flags;

	/* Too big for the stack: a snapshot taken under the lock. */
	a = kmalloc(sizeof(*a), GFP_KERNEL);
	w = kmalloc(sizeof(*w), GFP_KERNEL);
	if (!a || !w) {
		kfree(a);
		kfree(w);
		return -ENOMEM;
	}
	spin_lock_irqsave(&rc->lock, flags);
	c = rc->cache->ctr;
	valid = rc->cache->nr_valid;
	filling = rc->cache->nr_filling;
	ghost = rc->cache->nr_ghost;
	v = rc->vdisk;
	*a = rc->cache->adapt;
	*w = rc->cache->caware;
	spin_unlock_irqrestore(&rc->lock, flags);

	DMEMIT("state=%s\npolicy=%s\nwrite_policy=%s\n", redcap_state(rc),
	       rc_policy_name(rc->cache->policy), redcap_write_policy_name(rc));
	DMEMIT("segment_sectors=%u\nsegments=%u\nsegments_valid=%u\nsegments_filling=%u\n",
	       rc->seg_sectors, rc->nr_segs, valid, filling);
	DMEMIT("segments_ghost=%u\n", ghost);
	DMEMIT("reads=%llu\nread_hits=%llu\nread_hits_waited=%llu\nread_misses=%llu\n",
	       c.reads, c.read_hits, c.read_hits_waited, c.read_misses);
	DMEMIT("read_bypassed=%llu\nread_bypassed_busy=%llu\ncaware_bypassed=%llu\n",
	       c.read_bypassed, c.read_bypassed_busy, c.read_bypassed_caware);
	DMEMIT("sim_hits=%llu\nsim_misses=%llu\n", c.sim_hits, c.sim_misses);
	DMEMIT("fill_ios=%llu\nfill_sectors=%llu\nfill_errors=%llu\nfill_stale=%llu\n",
	       c.fill_ios, c.fill_sectors, c.fill_errors, c.fill_stale);
	DMEMIT("writes=%llu\nwrite_sectors=%llu\ninvalidations=%llu\nupdates=%llu\n",
	       c.writes, c.write_sectors, c.invalidations, c.updates);
	DMEMIT("write_allocs=%llu\n", c.write_allocs);
	DMEMIT("evictions=%llu\n", c.evictions);
	if (rc->vm)
		DMEMIT("model=%u:%u\n", MAJOR(rc->model_dev), MINOR(rc->model_dev));
	else
		DMEMIT("model=none\n");
	DMEMIT("vdisk_requests=%llu\nvdisk_time_us=%llu\nvdisk_unestimated=%llu\n",
	       v.requests, redcap_us(v.busy_ns), v.unestimated);
	sz = redcap_emit_policy(rc, a, w, result, maxlen, sz);
	kfree(a);
	kfree(w);
	return 1;
}

struct redcap_tunable {
	const char *key;
	u32 max;
};

static const struct redcap_tunable redcap_tunables[] = {
	{ "window", RC_ADAPT_MAX_WINDOW },
	{ "margin", RC_ADAPT_MAX_MARGIN - 1 },
	{ "dwell", RC_ADAPT_MAX_DWELL },
	{ "decay_ms", RC_CAWARE_MAX_DECAY_MS },
};

/* set <key> <value>: the tunables of the adaptive policies. */
static int redcap_msg_set(struct redcap_c *rc, const char *key, const char *val)
{
	const struct redcap_tunable *t;
	unsigned long flags;
	u32 v;

	for (t = redcap_tunables; t < redcap_tunables + ARRAY_SIZE(redcap_tunables); t++)
		if (!strcasecmp(key, t->key))
			break;
	if (t == redcap_tunables + ARRAY_SIZE(redcap_tunables)) {
		DMERR("set: unknown key '%s'", key);
		return -EINVAL;
	}
	if (kstrtou32(val, 10, &v) || v > t->max || (v == 0 && !strcmp(t->key, "window"))) {
		DMERR("set: %s must be %u..%u", t->key, strcmp(t->key, "window") ? 0 : 1,
		      t->max);
		return -EINVAL;
	}
	spin_lock_irqsave(&rc->lock, flags);
	if (!strcmp(t->key, "window"))
		rc->cache->adapt.window = v;
	else if (!strcmp(t->key, "margin"))
		rc->cache->adapt.margin = v;
	else if (!strcmp(t->key, "dwell"))
		rc->cache->adapt.dwell = v;
	else
		rc->cache->caware.interval_ns = (u64)v * NSEC_PER_MSEC;
	spin_unlock_irqrestore(&rc->lock, flags);
	return 0;
}

static int redcap_msg_drop_cache(struct redcap_c *rc)
{
	unsigned long flags;
	unsigned int waited = 0;
	u32 busy;

	for (;;) {
		spin_lock_irqsave(&rc->lock, flags);
		busy = rc_drop_all(rc->cache);
		spin_unlock_irqrestore(&rc->lock, flags);
		if (!busy)
			return 0;
		if (waited >= REDCAP_DROP_TIMEOUT_MS) {
			DMERR("drop_cache: %u segments still busy", busy);
			return -EBUSY;
		}
		msleep(20);
		waited += 20;
	}
}

static int redcap_message(struct dm_target *ti, unsigned int argc, char **argv,
			  char *result, unsigned int maxlen)
{
	struct redcap_c *rc = ti->private;
	unsigned long flags;
	int v;

	if (!argc) {
		DMERR("Empty message");
		return -EINVAL;
	}
	if (!strcasecmp(argv[0], "stats") && argc == 1)
		return redcap_msg_stats(rc, result, maxlen);
	if (!strcasecmp(argv[0], "reset_stats") && argc == 1) {
		spin_lock_irqsave(&rc->lock, flags);
		rc_reset_counters(rc->cache);
		rc->vdisk.requests = 0;
		rc->vdisk.busy_ns = 0;
		rc->vdisk.unestimated = 0;
		rc->vdisk_cache.requests = 0;
		rc->vdisk_cache.busy_ns = 0;
		rc->vdisk_cache.unestimated = 0;
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "drop_cache") && argc == 1)
		return redcap_msg_drop_cache(rc);
	if (!strcasecmp(argv[0], "policy") && argc == 2) {
		v = rc_policy_parse(argv[1]);
		if (v < 0) {
			DMERR("policy: unknown policy '%s'", argv[1]);
			return -EINVAL;
		}
		spin_lock_irqsave(&rc->lock, flags);
		rc_set_policy(rc->cache, v);
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "estimator") && argc == 2) {
		v = rc_estimator_parse(argv[1]);
		if (v < 0) {
			DMERR("estimator: unknown estimator '%s'", argv[1]);
			return -EINVAL;
		}
		if (v == RC_EST_VDISK && !rc->vm) {
			DMERR("estimator: no vdisk model below or named");
			return -EINVAL;
		}
		spin_lock_irqsave(&rc->lock, flags);
		rc->cache->adapt.estimator = v;
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "set") && argc == 3)
		return redcap_msg_set(rc, argv[1], argv[2]);
	if (!strcasecmp(argv[0], "write_policy") && argc == 2) {
		v = redcap_parse_write_policy(argv[1]);
		if (v < 0) {
			DMERR("write_policy: unknown write policy '%s'", argv[1]);
			return -EINVAL;
		}
		spin_lock_irqsave(&rc->lock, flags);
		rc->cache->write_policy = v;
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "stats") || !strcasecmp(argv[0], "reset_stats") ||
	    !strcasecmp(argv[0], "drop_cache") || !strcasecmp(argv[0], "policy") ||
	    !strcasecmp(argv[0], "write_policy") || !strcasecmp(argv[0], "estimator") ||
	    !strcasecmp(argv[0], "set")) {
		DMERR("%s: wrong number of arguments", argv[0]);
		return -EINVAL;
	}
	DMERR("Unrecognised message '%s'", argv[0]);
	return -EINVAL;
}

static int redcap_iterate_devices(struct dm_target *ti,
				  iterate_devices_callout_fn fn, void *data)
{
	struct redcap_c *rc = ti->private;

	return fn(ti, rc->origin, 0, ti->len, data);
}

static struct target_type redcap_target = {
	.name = "redcap",
	.version = {0, 2, 0},
	.module = THIS_MODULE,
	.ctr = redcap_ctr,
	.dtr = redcap_dtr,
	.map = redcap_map,
	.end_io = redcap_end_io,
	.presuspend = redcap_presuspend,
	.postsuspend = redcap_postsuspend,
	.preresume = redcap_preresume,
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

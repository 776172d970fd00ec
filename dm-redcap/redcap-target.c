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
	struct rc_cache cache;
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
};

enum redcap_pb_kind {
	PB_ORIGIN,	/* remapped to the origin, nothing to do at end_io */
	PB_CACHE,	/* completed by redcap from RAM */
	PB_WRITE,	/* write within one segment */
	PB_RANGE,	/* discard / write-zeroes over a range of segments */
};

struct redcap_pb {
	enum redcap_pb_kind kind;
	u32 cookie;
	u64 seg;
	u64 nr_segs;
	struct bvec_iter saved_iter;
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
	return (sector_t)seg << rc->cache.seg_shift;
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

static void redcap_fill_endio(struct bio *fill)
{
	struct redcap_entry *e = fill->bi_private;
	struct redcap_c *rc = container_of(fill->bi_pool, struct redcap_c, bs);

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
	sector_t start;
	u32 n = 0;

	spin_lock_irqsave(&rc->lock, flags);
	start = redcap_seg_start(rc, rc->cache.entries[idx].seg);
	act = rc_fill_done(&rc->cache, idx, error, e->fill_sectors);
	waiters = e->waiters;
	bio_list_init(&e->waiters);
	spin_unlock_irqrestore(&rc->lock, flags);

	if (error)
		DMERR_LIMIT("%s: fill of sectors %llu+%u failed: %d", rc->origin->name,
			    (unsigned long long)start,
			    e->fill_sectors, error);
	bio_put(e->fill_bio);
	e->fill_bio = NULL;

	while ((bio = bio_list_pop(&waiters))) {
		struct redcap_pb *pb = redcap_pb(bio);

		switch (act) {
		case RC_FILL_SERVE:
			redcap_copy(rc, idx, bio, bio->bi_iter, true);
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
			pb->kind = PB_ORIGIN;
			redcap_remap(rc, bio);
			submit_bio_noacct(bio);
			break;
		}
	}

	if (act == RC_FILL_SERVE) {
		spin_lock_irqsave(&rc->lock, flags);
		if (n > 1)
			rc_count_waited(&rc->cache, n - 1);
		rc_unpin(&rc->cache, idx);
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
	atomic_inc(&rc->fills_inflight);
	submit_bio_noacct(fill);
}

/* The bare disk's time for what redcap received; rc->lock held. */
static void redcap_feed_vdisk(struct redcap_c *rc, struct bio *bio, enum vd_dir dir)
{
	if (rc->vm)
		vdisk_model_vdisk_submit(rc->vm, &rc->vdisk, dir, bio->bi_iter.bi_sector,
					 bio_sectors(bio), ktime_get_ns());
}

static int redcap_map_read(struct redcap_c *rc, struct bio *bio)
{
	struct redcap_pb *pb = redcap_pb(bio);
	u64 seg = rc_sector_to_seg(&rc->cache, bio->bi_iter.bi_sector);
	enum rc_read_action act;
	unsigned long flags;
	u32 idx = RC_NONE;

	spin_lock_irqsave(&rc->lock, flags);
	redcap_feed_vdisk(rc, bio, VD_READ);
	act = rc_read(&rc->cache, seg, &idx);
	if (act == RC_READ_WAIT || act == RC_READ_FILL) {
		pb->kind = PB_CACHE;
		bio_list_add(&rc->ents[idx].waiters, bio);
	}
	spin_unlock_irqrestore(&rc->lock, flags);

	switch (act) {
	case RC_READ_HIT:
		pb->kind = PB_CACHE;
		redcap_copy(rc, idx, bio, bio->bi_iter, true);
		spin_lock_irqsave(&rc->lock, flags);
		rc_unpin(&rc->cache, idx);
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
	pb->kind = PB_ORIGIN;
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

	if (!bio_sectors(bio)) {	/* empty flush */
		redcap_remap(rc, bio);
		return DM_MAPIO_REMAPPED;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return redcap_map_read(rc, bio);
	case REQ_OP_WRITE:
		pb->kind = PB_WRITE;
		pb->seg = rc_sector_to_seg(&rc->cache, bio->bi_iter.bi_sector);
		pb->saved_iter = bio->bi_iter;
		spin_lock_irqsave(&rc->lock, flags);
		redcap_feed_vdisk(rc, bio, VD_WRITE);
		pb->cookie = rc_write_start(&rc->cache, pb->seg, bio_sectors(bio), true);
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
	case REQ_OP_SECURE_ERASE:
		/* Not split at segment boundaries by dm: may cover many. */
		pb->kind = PB_RANGE;
		pb->seg = rc_sector_to_seg(&rc->cache, bio->bi_iter.bi_sector);
		pb->nr_segs = rc_sector_to_seg(&rc->cache, bio_end_sector(bio) - 1) - pb->seg + 1;
		spin_lock_irqsave(&rc->lock, flags);
		rc_range_start(&rc->cache, pb->seg, pb->nr_segs, bio_sectors(bio));
		spin_unlock_irqrestore(&rc->lock, flags);
		break;
	default:
		break;
	}
	redcap_remap(rc, bio);
	return DM_MAPIO_REMAPPED;
}

static int redcap_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct redcap_c *rc = ti->private;
	struct redcap_pb *pb = redcap_pb(bio);
	enum rc_write_action act;
	unsigned long flags;
	u32 idx;

	switch (pb->kind) {
	case PB_ORIGIN:
	case PB_CACHE:
		break;
	case PB_WRITE:
		spin_lock_irqsave(&rc->lock, flags);
		act = rc_write_done(&rc->cache, pb->seg, pb->cookie,
				    blk_status_to_errno(*error), true, &idx);
		spin_unlock_irqrestore(&rc->lock, flags);
		if (act == RC_WRITE_COPY) {
			redcap_copy(rc, idx, bio, pb->saved_iter, false);
			spin_lock_irqsave(&rc->lock, flags);
			rc_unpin(&rc->cache, idx);
			spin_unlock_irqrestore(&rc->lock, flags);
		}
		break;
	case PB_RANGE:
		spin_lock_irqsave(&rc->lock, flags);
		rc_range_done(&rc->cache, pb->seg, pb->nr_segs);
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

static int redcap_parse_features(struct dm_arg_set *as, struct dm_target *ti,
				 enum rc_policy *policy, enum rc_write_policy *wpolicy,
				 const char **model)
{
	static const struct dm_arg _args[] = {
		{0, 6, "Invalid number of feature args"},
	};
	bool seen_policy = false, seen_write = false;
	unsigned int argc;
	const char *name;
	int r, v;

	r = dm_read_arg_group(_args, as, &argc, &ti->error);
	if (r)
		return r;

	while (argc) {
		name = dm_shift_arg(as);
		argc--;

		if (!strcasecmp(name, "policy")) {
			if (!argc) {
				ti->error = "Feature policy requires a name";
				return -EINVAL;
			}
			if (seen_policy) {
				ti->error = "Feature policy duplicated";
				return -EINVAL;
			}
			seen_policy = true;
			v = rc_policy_parse(dm_shift_arg(as));
			argc--;
			if (v < 0) {
				ti->error = "Unknown policy";
				return -EINVAL;
			}
			*policy = v;
			continue;
		}

		if (!strcasecmp(name, "write_policy")) {
			if (!argc) {
				ti->error = "Feature write_policy requires a name";
				return -EINVAL;
			}
			if (seen_write) {
				ti->error = "Feature write_policy duplicated";
				return -EINVAL;
			}
			seen_write = true;
			v = redcap_parse_write_policy(dm_shift_arg(as));
			argc--;
			if (v < 0) {
				ti->error = "Unknown write_policy";
				return -EINVAL;
			}
			*wpolicy = v;
			continue;
		}

		if (!strcasecmp(name, "model")) {
			if (!argc) {
				ti->error = "Feature model requires a device";
				return -EINVAL;
			}
			if (*model) {
				ti->error = "Feature model duplicated";
				return -EINVAL;
			}
			*model = dm_shift_arg(as);
			argc--;
			continue;
		}

		ti->error = "Unrecognised feature requested";
		return -EINVAL;
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
	rc->core_mem = kvzalloc(rc_cache_mem_size(rc->nr_segs), GFP_KERNEL | __GFP_NOWARN);
	rc->ents = kvcalloc(rc->nr_segs, sizeof(*rc->ents), GFP_KERNEL | __GFP_NOWARN);
	rc->pages = kvcalloc(nr_pages, sizeof(*rc->pages), GFP_KERNEL | __GFP_NOWARN);
	if (!rc->core_mem || !rc->ents || !rc->pages)
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
 *   features: policy always|off, write_policy invalidate|update,
 *             model <vdisk dev>
 */
static int redcap_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	static const struct dm_arg _args[] = {
		{REDCAP_MIN_SEG_SECTORS, REDCAP_MAX_SEG_SECTORS, "Invalid segment size"},
		{1, RC_MAX_ENTRIES, "Invalid number of segments"},
	};
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	enum rc_write_policy wpolicy = RC_WRITE_INVALIDATE;
	enum rc_policy policy = RC_POLICY_ALWAYS;
	const char *devname, *model = NULL;
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
		r = redcap_parse_features(&as, ti, &policy, &wpolicy, &model);
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

	r = redcap_find_model(rc, ti, model);
	if (r)
		goto bad;

	rc->pages_per_seg = (rc->seg_sectors << SECTOR_SHIFT) >> PAGE_SHIFT;
	r = redcap_alloc_cache(rc, ti);
	if (r)
		goto bad;
	if (rc_cache_init(&rc->cache, rc->core_mem, rc->nr_segs, ilog2(rc->seg_sectors))) {
		ti->error = "Cannot initialise cache";
		r = -EINVAL;
		goto bad;
	}
	rc->cache.policy = policy;
	rc->cache.write_policy = wpolicy;

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
	enum rc_write_policy wpolicy = rc->cache.write_policy;
	enum rc_policy policy = rc->cache.policy;

	swap(rc->cache, old->cache);
	swap(rc->core_mem, old->core_mem);
	swap(rc->ents, old->ents);
	swap(rc->pages, old->pages);
	rc->cache.policy = policy;
	rc->cache.write_policy = wpolicy;
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
		    rc_idle(&old->cache)) {
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
	return rc->cache.write_policy == RC_WRITE_UPDATE ? "update" : "invalidate";
}

static const char *redcap_state(struct redcap_c *rc)
{
	return rc->cache.policy == RC_POLICY_OFF ? "inactive" : "active";
}

static void redcap_status(struct dm_target *ti, status_type_t type,
			  unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct redcap_c *rc = ti->private;
	struct rc_counters ctr;
	u32 valid, filling;
	unsigned int sz = 0, nfeat = 0;
	unsigned long flags;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&rc->lock, flags);
		ctr = rc->cache.ctr;
		valid = rc->cache.nr_valid;
		filling = rc->cache.nr_filling;
		spin_unlock_irqrestore(&rc->lock, flags);
		DMEMIT("%s %s %u/%u %u %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		       redcap_state(rc), rc_policy_name(rc->cache.policy),
		       valid, rc->nr_segs, filling,
		       ctr.read_hits, ctr.read_hits_waited, ctr.read_misses,
		       ctr.read_bypassed, ctr.fill_ios, ctr.fill_sectors,
		       ctr.fill_errors, ctr.writes, ctr.invalidations);
		break;
	case STATUSTYPE_TABLE:
		nfeat += rc->cache.policy != RC_POLICY_ALWAYS ? 2 : 0;
		nfeat += rc->cache.write_policy != RC_WRITE_INVALIDATE ? 2 : 0;
		nfeat += rc->model_explicit ? 2 : 0;
		DMEMIT("%s %u %u", rc->origin->name, rc->seg_sectors, rc->nr_segs);
		if (nfeat)
			DMEMIT(" %u", nfeat);
		if (rc->cache.policy != RC_POLICY_ALWAYS)
			DMEMIT(" policy %s", rc_policy_name(rc->cache.policy));
		if (rc->cache.write_policy != RC_WRITE_INVALIDATE)
			DMEMIT(" write_policy %s", redcap_write_policy_name(rc));
		if (rc->model_explicit)
			DMEMIT(" model %u:%u", MAJOR(rc->model_dev), MINOR(rc->model_dev));
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin_name=%s,segment_sectors=%u,segments=%u,policy=%s,write_policy=%s;",
		       rc->origin->name, rc->seg_sectors, rc->nr_segs,
		       rc_policy_name(rc->cache.policy), redcap_write_policy_name(rc));
		break;
	}
}

static int redcap_msg_stats(struct redcap_c *rc, char *result, unsigned int maxlen)
{
	struct rc_counters c;
	struct vd_vdisk v;
	u32 valid, filling;
	unsigned int sz = 0;
	unsigned long flags;

	spin_lock_irqsave(&rc->lock, flags);
	c = rc->cache.ctr;
	valid = rc->cache.nr_valid;
	filling = rc->cache.nr_filling;
	v = rc->vdisk;
	spin_unlock_irqrestore(&rc->lock, flags);

	DMEMIT("state=%s\npolicy=%s\nwrite_policy=%s\n", redcap_state(rc),
	       rc_policy_name(rc->cache.policy), redcap_write_policy_name(rc));
	DMEMIT("segment_sectors=%u\nsegments=%u\nsegments_valid=%u\nsegments_filling=%u\n",
	       rc->seg_sectors, rc->nr_segs, valid, filling);
	DMEMIT("reads=%llu\nread_hits=%llu\nread_hits_waited=%llu\nread_misses=%llu\n",
	       c.reads, c.read_hits, c.read_hits_waited, c.read_misses);
	DMEMIT("read_bypassed=%llu\nread_bypassed_busy=%llu\n",
	       c.read_bypassed, c.read_bypassed_busy);
	DMEMIT("fill_ios=%llu\nfill_sectors=%llu\nfill_errors=%llu\nfill_stale=%llu\n",
	       c.fill_ios, c.fill_sectors, c.fill_errors, c.fill_stale);
	DMEMIT("writes=%llu\nwrite_sectors=%llu\ninvalidations=%llu\nupdates=%llu\n",
	       c.writes, c.write_sectors, c.invalidations, c.updates);
	DMEMIT("evictions=%llu\n", c.evictions);
	if (rc->vm)
		DMEMIT("model=%u:%u\n", MAJOR(rc->model_dev), MINOR(rc->model_dev));
	else
		DMEMIT("model=none\n");
	DMEMIT("vdisk_requests=%llu\nvdisk_time_us=%llu\nvdisk_unestimated=%llu\n",
	       v.requests, div_u64(v.busy_ns, NSEC_PER_USEC), v.unestimated);
	return 1;
}

static int redcap_msg_drop_cache(struct redcap_c *rc)
{
	unsigned long flags;
	unsigned int waited = 0;
	u32 busy;

	for (;;) {
		spin_lock_irqsave(&rc->lock, flags);
		busy = rc_drop_all(&rc->cache);
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
		rc_reset_counters(&rc->cache);
		rc->vdisk.requests = 0;
		rc->vdisk.busy_ns = 0;
		rc->vdisk.unestimated = 0;
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
		rc->cache.policy = v;
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "write_policy") && argc == 2) {
		v = redcap_parse_write_policy(argv[1]);
		if (v < 0) {
			DMERR("write_policy: unknown write policy '%s'", argv[1]);
			return -EINVAL;
		}
		spin_lock_irqsave(&rc->lock, flags);
		rc->cache.write_policy = v;
		spin_unlock_irqrestore(&rc->lock, flags);
		return 0;
	}
	if (!strcasecmp(argv[0], "stats") || !strcasecmp(argv[0], "reset_stats") ||
	    !strcasecmp(argv[0], "drop_cache") || !strcasecmp(argv[0], "policy") ||
	    !strcasecmp(argv[0], "write_policy")) {
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
	.version = {0, 1, 0},
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

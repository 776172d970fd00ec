// SPDX-License-Identifier: GPL-2.0
/*
 * dm-vdisk: a target stacked on a disk that times every request and keeps
 * the disk's latency model current (measure), or emulates a hard disk over
 * a fast device (emulate); the model is exported to dm-redcap.
 */
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/ktime.h>
#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/mm.h>

#include "vdisk.h"
#include "vd-args.h"
#include "vd-dclearn.h"

#define DM_MSG_PREFIX "vdisk"

#ifdef REDCAP_FAULT_INJECTION
/* Test builds only (make modules FAULT_INJECTION=1, as make check does). */
static bool fi_reset_alloc_fail;
module_param(fi_reset_alloc_fail, bool, 0644);
MODULE_PARM_DESC(fi_reset_alloc_fail, "test builds: reset finds no memory for its tables");
#define vdisk_fi_reset_alloc_fail()	READ_ONCE(fi_reset_alloc_fail)
#else
#define vdisk_fi_reset_alloc_fail()	false
#endif

#define VDISK_MAX_RINGS		8192	/* 2 MiB of 64-sample rings */

static const char * const vdisk_mode_names[] = { "measure", "emulate" };

/*
 * The latency model of one vdisk device.  It outlives table reloads (a new
 * table of the same geometry takes it over) and is shared with dm-redcap.
 */
struct vdisk_model {
	struct list_head list;	/* on vdisk_models while registered */
	struct kref kref;
	/*
	 * vdisk tables built on it, under vdisk_models_lock: the last one's
	 * destructor unregisters it, so that a removed device (whose minor
	 * may be reused) is no longer found, whoever still holds the model.
	 */
	unsigned int tables;
	dev_t dev;		/* the vdisk mapped device */
	spinlock_t lock;	/* protects everything below */
	bool train;		/* update the tables from completed requests */
	struct vd_model m;
	struct vd_dclearn dcl;	/* the drive's cache, from reads timed alone */
	size_t mem_size;
	void *mem;
};

static LIST_HEAD(vdisk_models);
static DEFINE_MUTEX(vdisk_models_lock);

struct vdisk_c {
	struct dm_dev *dev;
	struct vdisk_model *vm;
	dev_t md_dev;

	/* The table line. */
	u32 features;			/* bitmap of the enum vd_feature given */
	enum vd_mode table_mode;
	const struct vd_drive_profile *profile;
	struct vd_drive_params params;
	u64 capacity;			/* as given, else ti->len */
	u64 seed;
	u32 rows;

	struct bio_set bs;		/* emulate: clones sent to the device */
	struct hrtimer timer;		/* emulate: the next completion is due */

	spinlock_t lock;		/* protects everything below */
	enum vd_mode mode;
	bool draining;			/* suspending: hold nothing back */
	u64 last_done;			/* ns: latest completion */
	u32 inflight;
	u64 busy_since;
	u64 busy_ns;			/* time with requests in flight */
	u64 samples[VD_NR_DIRS];
	u64 total_ns[VD_NR_DIRS];
	u64 errors;
	u64 submitted;			/* requests timed so far */
	struct vd_vdisk self;		/* virtual disk of this stream */
	struct vd_drive drive;		/* emulate mode */
	struct list_head held;		/* emulate: bios in deadline order */
	u32 queued;			/* ... how many */
	u32 queued_max;
};

/*
 * In emulate mode the data moves at once (a clone goes to the device) and
 * the bio completes when both the clone is done and the drive's time is up.
 */
struct vdisk_pb {
	u64 start;		/* ns at map */
	u64 sector;		/* at map, in the device */
	u64 nr;			/* vc->submitted after it, if it came to an idle device */
	s64 distance;		/* seek distance, as vc->self priced it */
	u64 deadline;		/* emulate: ns at which the bio completes */
	u64 service;		/* emulate: the drive's time for it */
	u32 sectors;		/* size at map: bi_iter is spent at end_io */
	u8 dir;
	bool timed;		/* a read or write with data */
	bool emulated;
	bool clone_done;	/* emulate: the device finished the clone */
	bool due;		/* emulate: the deadline has passed */
	blk_status_t status;	/* emulate: the clone's */
	struct list_head list;	/* emulate: on vc->held */
	struct vdisk_c *vc;
};

/* --- the shared model ---------------------------------------------------- */

/* Called by kref_put_mutex() with vdisk_models_lock held; drops it. */
static void vdisk_model_release(struct kref *kref)
{
	struct vdisk_model *vm = container_of(kref, struct vdisk_model, kref);

	list_del(&vm->list);
	mutex_unlock(&vdisk_models_lock);
	kvfree(vm->mem);
	kvfree(vm);
}

static void vdisk_model_put(struct vdisk_model *vm)
{
	kref_put_mutex(&vm->kref, vdisk_model_release, &vdisk_models_lock);
}

static struct vdisk_model *vdisk_model_get(dev_t dev)
{
	struct vdisk_model *vm, *found = NULL;

	mutex_lock(&vdisk_models_lock);
	list_for_each_entry(vm, &vdisk_models, list)
		if (vm->dev == dev) {
			kref_get(&vm->kref);
			found = vm;
			break;
		}
	mutex_unlock(&vdisk_models_lock);
	return found;
}

static bool vdisk_model_estimate(struct vdisk_model *vm, enum vd_dir dir,
			  s64 distance, u32 sectors, u64 *ns)
{
	unsigned long flags;
	bool r;

	spin_lock_irqsave(&vm->lock, flags);
	r = vd_model_estimate(&vm->m, dir, distance, sectors, ns);
	spin_unlock_irqrestore(&vm->lock, flags);
	return r;
}

static u64 vdisk_model_vdisk_submit(struct vdisk_model *vm, struct vd_vdisk *v,
				    enum vd_dir dir, u64 sector, u32 sectors, u64 now,
				    u32 stream, unsigned int how)
{
	unsigned long flags;
	u64 done;

	spin_lock_irqsave(&vm->lock, flags);
	done = vd_vdisk_submit(v, &vm->m, dir, sector, sectors, now, stream, how);
	spin_unlock_irqrestore(&vm->lock, flags);
	return done;
}

const struct vdisk_model_api vdisk_model_api = {
	.get = vdisk_model_get,
	.put = vdisk_model_put,
	.estimate = vdisk_model_estimate,
	.vdisk_submit = vdisk_model_vdisk_submit,
};
EXPORT_SYMBOL_GPL(vdisk_model_api);

/*
 * The registered model of @dev if its geometry matches (a reload keeps what
 * was learnt), else a new unregistered one, or NULL without memory.
 */
static struct vdisk_model *vdisk_model_find_or_alloc(dev_t dev, u64 capacity,
						     u32 rows)
{
	size_t sz = vd_model_mem_size(capacity, rows, VDISK_MAX_RINGS);
	struct vdisk_model *vm = vdisk_model_get(dev);

	if (vm && vm->m.rows == rows && vm->m.capacity == capacity)
		return vm;
	if (vm)
		vdisk_model_put(vm);

	vm = kvzalloc(sizeof(*vm), GFP_KERNEL);
	if (!vm)
		return NULL;
	/* Table sizes come from a table line: too large is an error, not a WARN. */
	vm->mem = kvmalloc(sz, GFP_KERNEL | __GFP_NOWARN);
	if (!vm->mem) {
		kvfree(vm);
		return NULL;
	}
	INIT_LIST_HEAD(&vm->list);
	kref_init(&vm->kref);
	spin_lock_init(&vm->lock);
	vm->dev = dev;
	vm->train = true;
	vm->mem_size = sz;
	vd_model_init(&vm->m, vm->mem, capacity, rows, VDISK_MAX_RINGS);
	vd_dcl_init(&vm->dcl);
	return vm;
}

/* Makes @vm the model dev_t lookups find, replacing an older one. */
static void vdisk_model_register(struct vdisk_model *vm)
{
	struct vdisk_model *old;

	mutex_lock(&vdisk_models_lock);
	if (list_empty(&vm->list)) {
		list_for_each_entry(old, &vdisk_models, list)
			if (old->dev == vm->dev) {
				list_del_init(&old->list);
				break;
			}
		list_add(&vm->list, &vdisk_models);
	}
	mutex_unlock(&vdisk_models_lock);
}

/* --- constructor ----------------------------------------------------------- */

static enum hrtimer_restart vdisk_timer_fn(struct hrtimer *timer);

/* A table of @vm's device was built (@delta 1) or destroyed (-1). */
static void vdisk_model_tables(struct vdisk_model *vm, int delta)
{
	mutex_lock(&vdisk_models_lock);
	vm->tables += delta;
	if (!vm->tables)
		list_del_init(&vm->list);
	mutex_unlock(&vdisk_models_lock);
}

static void vdisk_dtr(struct dm_target *ti)
{
	struct vdisk_c *vc = ti->private;

	hrtimer_cancel(&vc->timer);
	if (bioset_initialized(&vc->bs))
		bioset_exit(&vc->bs);
	if (vc->vm) {
		vdisk_model_tables(vc->vm, -1);
		vdisk_model_put(vc->vm);
	}
	if (vc->dev)
		dm_put_device(ti, vc->dev);
	kfree(vc);
}

/* The table line: vd_parse_table() in vd-args.h. */
static int vdisk_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct vd_table_args t;
	struct vdisk_c *vc;
	const char *err;
	int r;

	err = vd_parse_table(argc, argv, &t);
	if (err) {
		ti->error = (char *)err;
		return -EINVAL;
	}
	vc = kzalloc(sizeof(*vc), GFP_KERNEL);
	if (!vc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	ti->private = vc;
	spin_lock_init(&vc->lock);
	INIT_LIST_HEAD(&vc->held);
	hrtimer_init(&vc->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	vc->timer.function = vdisk_timer_fn;
	vc->features = t.features;
	vc->table_mode = t.mode;
	vc->profile = t.profile;
	vc->params = t.params;
	vc->capacity = t.capacity;
	vc->seed = t.seed;
	vc->rows = t.rows;

	r = -EINVAL;
	if (!vc->capacity)
		vc->capacity = ti->len;
	if (vc->capacity < ti->len) {
		ti->error = "Capacity smaller than the device";
		goto bad;
	}

	r = dm_get_device(ti, t.dev, dm_table_get_mode(ti->table), &vc->dev);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	vc->md_dev = disk_devt(dm_disk(dm_table_get_md(ti->table)));
	r = -ENOMEM;
	vc->vm = vdisk_model_find_or_alloc(vc->md_dev, vc->capacity, vc->rows);
	if (!vc->vm) {
		ti->error = "Cannot allocate model tables";
		goto bad;
	}
	vdisk_model_tables(vc->vm, 1);
	vd_drive_init(&vc->drive, &vc->params, vc->capacity, ti->len, vc->seed);
	vd_vdisk_init(&vc->self);
	vc->mode = vc->table_mode;

	r = bioset_init(&vc->bs, BIO_POOL_SIZE, 0, 0);
	if (r) {
		ti->error = "Cannot allocate bioset";
		goto bad;
	}

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct vdisk_pb);
	return 0;
bad:
	vdisk_dtr(ti);
	return r;
}

/* --- I/O --------------------------------------------------------------------- */

static int vdisk_bio_dir(struct bio *bio)
{
	if (!bio_sectors(bio))
		return -1;
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return VD_READ;
	case REQ_OP_WRITE:
		return VD_WRITE;
	default:
		return -1;
	}
}

/* Moves the held bios that may complete now to @done; vc->lock held. */
static void vdisk_collect(struct vdisk_c *vc, u64 now, struct list_head *done)
{
	struct vdisk_pb *pb, *tmp;

	list_for_each_entry_safe(pb, tmp, &vc->held, list) {
		if (!vc->draining && pb->deadline > now) {
			hrtimer_start(&vc->timer, ns_to_ktime(pb->deadline),
				      HRTIMER_MODE_ABS_SOFT);
			break;
		}
		pb->due = true;
		if (pb->clone_done) {
			list_move_tail(&pb->list, done);
			vc->queued--;
		}
	}
}

static void vdisk_complete(struct list_head *done)
{
	struct vdisk_pb *pb, *tmp;
	struct bio *bio;

	list_for_each_entry_safe(pb, tmp, done, list) {
		bio = dm_bio_from_per_bio_data(pb, sizeof(*pb));
		bio->bi_status = pb->status;
		bio_endio(bio);
	}
}

static enum hrtimer_restart vdisk_timer_fn(struct hrtimer *timer)
{
	struct vdisk_c *vc = container_of(timer, struct vdisk_c, timer);
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&vc->lock, flags);
	vdisk_collect(vc, ktime_get_ns(), &done);
	spin_unlock_irqrestore(&vc->lock, flags);
	vdisk_complete(&done);
	return HRTIMER_NORESTART;
}

static void vdisk_clone_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	struct vdisk_c *vc = pb->vc;
	unsigned long flags;
	bool now_done;

	spin_lock_irqsave(&vc->lock, flags);
	pb->status = clone->bi_status;
	pb->clone_done = true;
	now_done = pb->due;
	if (now_done) {
		list_del(&pb->list);
		vc->queued--;
	}
	spin_unlock_irqrestore(&vc->lock, flags);
	bio_put(clone);
	if (now_done) {
		bio->bi_status = pb->status;
		bio_endio(bio);
	}
}

/*
 * Queues @bio (already remapped) on the emulated drive and sends its data
 * down at once; it completes at the drive's time.  Called with vc->lock held.
 */
static void vdisk_hold(struct vdisk_c *vc, struct bio *bio, struct bio *clone,
		       u64 now)
{
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));

	pb->emulated = true;
	pb->clone_done = false;
	pb->due = false;
	pb->vc = vc;
	pb->deadline = vd_drive_submit(&vc->drive, pb->dir,
				       bio->bi_iter.bi_sector, pb->sectors,
				       now, &pb->service);
	/*
	 * Deadlines only grow: a queued timer is for an earlier one and its
	 * run arms the next.  With none queued (nothing held, or only bios
	 * already due and waiting for their clones) this one must arm it.
	 */
	if (!hrtimer_is_queued(&vc->timer))
		hrtimer_start(&vc->timer, ns_to_ktime(pb->deadline),
			      HRTIMER_MODE_ABS_SOFT);
	list_add_tail(&pb->list, &vc->held);
	if (++vc->queued > vc->queued_max)
		vc->queued_max = vc->queued;
	clone->bi_end_io = vdisk_clone_endio;
	clone->bi_private = bio;
}

static int vdisk_map(struct dm_target *ti, struct bio *bio)
{
	struct vdisk_c *vc = ti->private;
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	int dir = vdisk_bio_dir(bio);
	struct bio *clone = NULL;
	unsigned long flags;
	u64 sector, now;

	bio_set_dev(bio, vc->dev->bdev);
	if (bio_sectors(bio) || op_is_zone_mgmt(bio_op(bio)))
		bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	pb->timed = false;
	pb->emulated = false;
	if (dir < 0)
		return DM_MAPIO_REMAPPED;

	sector = bio->bi_iter.bi_sector;
	pb->timed = true;
	pb->dir = dir;
	pb->sector = sector;
	pb->sectors = bio_sectors(bio);
	/* From the mempool: waits, never fails. */
	if (READ_ONCE(vc->mode) == VD_MODE_EMULATE)
		clone = bio_alloc_clone(vc->dev->bdev, bio, GFP_NOIO, &vc->bs);
	now = ktime_get_ns();
	pb->start = now;

	spin_lock_irqsave(&vc->lock, flags);
	vc->submitted++;
	pb->nr = vc->inflight ? 0 : vc->submitted;
	if (!vc->inflight++)
		vc->busy_since = now;
	/*
	 * vc->self has seen every request so far: the distance it priced
	 * this one at is the stream's, and what the sample is learnt under.
	 */
	vdisk_model_vdisk_submit(vc->vm, &vc->self, dir, sector, pb->sectors, now, 0, false);
	pb->distance = vc->self.distance;
	if (clone && !vc->draining)
		vdisk_hold(vc, bio, clone, now);
	spin_unlock_irqrestore(&vc->lock, flags);

	if (!pb->emulated) {
		if (clone)
			bio_put(clone);
		return DM_MAPIO_REMAPPED;
	}
	submit_bio_noacct(clone);
	return DM_MAPIO_SUBMITTED;
}

static int vdisk_end_io(struct dm_target *ti, struct bio *bio,
			blk_status_t *error)
{
	struct vdisk_c *vc = ti->private;
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	struct vdisk_model *vm = vc->vm;
	u64 now, done, service;
	unsigned long flags;
	bool alone;

	if (!pb->timed)
		return DM_ENDIO_DONE;

	now = ktime_get_ns();
	spin_lock_irqsave(&vc->lock, flags);
	if (!--vc->inflight)
		vc->busy_ns += now - vc->busy_since;
	if (*error) {
		vc->errors++;
		spin_unlock_irqrestore(&vc->lock, flags);
		return DM_ENDIO_DONE;
	}
	if (pb->emulated)
		service = pb->service;
	else
		service = vd_service_of(pb->start, vc->last_done, READ_ONCE(vm->m.overlap_ns), now);
	vc->last_done = max(vc->last_done, now);
	vc->samples[pb->dir]++;
	vc->total_ns[pb->dir] += service;
	/* Alone on the device all its life: what it cost is its own. */
	alone = pb->nr && pb->nr == vc->submitted;
	spin_unlock_irqrestore(&vc->lock, flags);

	spin_lock_irqsave(&vm->lock, flags);
	if (vm->train)
		vd_model_add(&vm->m, pb->dir, pb->distance, pb->sectors, service);
	/* Emulated, the drive's own times: not when the timer got to it. */
	done = pb->emulated ? pb->deadline : now;
	if (pb->dir == VD_WRITE)
		vd_dcl_write(&vm->dcl, pb->sector, pb->sectors);
	else if (alone)
		vd_dcl_read(&vm->dcl, pb->sector, pb->sectors, done - min(done, service), done);
	spin_unlock_irqrestore(&vm->lock, flags);
	return DM_ENDIO_DONE;
}

/* --- suspend and resume ------------------------------------------------------- */

static void vdisk_presuspend(struct dm_target *ti)
{
	struct vdisk_c *vc = ti->private;
	LIST_HEAD(done);

	hrtimer_cancel(&vc->timer);
	spin_lock_irq(&vc->lock);
	vc->draining = true;
	vdisk_collect(vc, ktime_get_ns(), &done);
	spin_unlock_irq(&vc->lock);
	vdisk_complete(&done);
}

/* A suspend was aborted: emulate again. */
static void vdisk_presuspend_undo(struct dm_target *ti)
{
	struct vdisk_c *vc = ti->private;

	spin_lock_irq(&vc->lock);
	vc->draining = false;
	spin_unlock_irq(&vc->lock);
}

static void vdisk_resume(struct dm_target *ti)
{
	struct vdisk_c *vc = ti->private;

	vdisk_model_register(vc->vm);
	spin_lock_irq(&vc->lock);
	vc->draining = false;
	spin_unlock_irq(&vc->lock);
}

/* --- status and messages -------------------------------------------------- */

static u64 vdisk_us(u64 ns)
{
	return div_u64(ns, NSEC_PER_USEC);
}

static u64 vdisk_mean_us(struct vdisk_c *vc, enum vd_dir dir)
{
	return vc->samples[dir] ?
	       vdisk_us(div64_u64(vc->total_ns[dir], vc->samples[dir])) : 0;
}

static void vdisk_emit_features(struct vdisk_c *vc, char *result,
				unsigned int maxlen, unsigned int *szp)
{
	const struct vd_drive_params *p = &vc->params;
	unsigned int sz = *szp, nargs = 0, f;

	for (f = 0; f < VDF_NR; f++)
		if (vc->features & (1u << f))
			nargs += 1 + vd_feature_nargs(f);
	if (!nargs)
		return;
	DMEMIT(" %u", nargs);
	if (vc->features & (1u << VDF_MODE))
		DMEMIT(" mode %s", vdisk_mode_names[vc->table_mode]);
	if (vc->features & (1u << VDF_PROFILE))
		DMEMIT(" profile %s", vc->profile->name);
	if (vc->features & (1u << VDF_CAPACITY))
		DMEMIT(" capacity %llu", vc->capacity);
	if (vc->features & (1u << VDF_SEED))
		DMEMIT(" seed %llu", vc->seed);
	if (vc->features & (1u << VDF_ROWS))
		DMEMIT(" rows %u", vc->rows);
	if (vc->features & (1u << VDF_RPM))
		DMEMIT(" rpm %u", p->rpm);
	if (vc->features & (1u << VDF_CYLINDERS))
		DMEMIT(" cylinders %u", p->cylinders);
	if (vc->features & (1u << VDF_SEEK))
		DMEMIT(" seek %u %u %u %u %u", p->seek_alpha_ns, p->seek_beta_ns,
		       p->seek_theta, p->seek_gamma_ns, p->seek_delta_ns);
	if (vc->features & (1u << VDF_MEDIA))
		DMEMIT(" media_mbps %u", p->media_mbps);
	if (vc->features & (1u << VDF_BUS))
		DMEMIT(" bus_mbps %u", p->bus_mbps);
	if (vc->features & (1u << VDF_OVERHEAD))
		DMEMIT(" overhead_us %u", p->overhead_ns / 1000);
	if (vc->features & (1u << VDF_CACHE))
		DMEMIT(" cache %u %u", p->nr_segs, p->seg_sectors);
	if (vc->features & (1u << VDF_READAHEAD))
		DMEMIT(" readahead %u", p->ra_sectors);
	if (vc->features & (1u << VDF_LATENCY))
		DMEMIT(" latency_us %u", p->latency_ns / 1000);
	if (vc->features & (1u << VDF_IOPS))
		DMEMIT(" iops %u %u", p->iops, p->io_sectors);
	*szp = sz;
}

static void vdisk_status(struct dm_target *ti, status_type_t type,
			 unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct vdisk_c *vc = ti->private;
	unsigned int sz = 0, filled;
	unsigned long flags;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&vc->vm->lock, flags);
		filled = vc->vm->m.cells_filled;
		spin_unlock_irqrestore(&vc->vm->lock, flags);
		spin_lock_irqsave(&vc->lock, flags);
		DMEMIT("%s %llu %llu %u %llu %llu %llu %llu %llu",
		       vdisk_mode_names[vc->mode], vc->samples[VD_READ],
		       vc->samples[VD_WRITE], filled,
		       vdisk_mean_us(vc, VD_READ), vdisk_mean_us(vc, VD_WRITE),
		       vc->drive.st.requests, vc->drive.st.cache_hits,
		       vc->drive.st.seeks);
		spin_unlock_irqrestore(&vc->lock, flags);
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s", vc->dev->name);
		vdisk_emit_features(vc, result, maxlen, &sz);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",device_name=%s,mode=%s,profile=%s,capacity=%llu,rows=%u;",
		       vc->dev->name, vdisk_mode_names[vc->table_mode],
		       vc->profile->name, vc->capacity, vc->rows);
		break;
	}
}

/* A drive cache's shape, as stats lines @what_segments=... (0: none). */
static void vdisk_emit_dcache(const char *what, const struct vd_dcache *dc,
			      char *result, unsigned int maxlen, unsigned int *szp)
{
	unsigned int sz = *szp;

	DMEMIT("%s_segments=%u\n%s_segment_sectors=%u\n", what, dc->nr_segs, what,
	       dc->seg_sectors);
	DMEMIT("%s_readahead_sectors=%u\n%s_media_mbps=%u\n", what, dc->ra_sectors,
	       what, dc->media_mbps);
	*szp = sz;
}

static int vdisk_stats(struct vdisk_c *vc, char *result, unsigned int maxlen)
{
	struct vdisk_model *vm = vc->vm;
	const struct vd_drive_stats *st = &vc->drive.st;
	struct vd_dcache dc;
	unsigned int sz = 0;
	unsigned long flags;

	spin_lock_irqsave(&vm->lock, flags);
	DMEMIT("train=%s\nrows=%u\ncols=%u\nwindow=%u\ncells_filled=%u\n",
	       vm->train ? "on" : "off", vm->m.rows, vm->m.cols, VD_WINDOW,
	       vm->m.cells_filled);
	DMEMIT("model_read_samples=%llu\nmodel_write_samples=%llu\nmodel_bytes=%zu\n",
	       vm->m.samples[VD_READ], vm->m.samples[VD_WRITE], vm->mem_size);
	DMEMIT("overlap_us=%llu\n", div_u64(vm->m.overlap_ns, NSEC_PER_USEC));
	vdisk_emit_dcache("dcache", &vm->m.dc, result, maxlen, &sz);
	vd_dcl_result(&vm->dcl, &dc);
	vdisk_emit_dcache("learnt_dcache", &dc, result, maxlen, &sz);
	DMEMIT("learnt_dcache_reads=%llu\nlearnt_dcache_hits=%llu\n", vm->dcl.reads,
	       vm->dcl.hits);
	spin_unlock_irqrestore(&vm->lock, flags);

	spin_lock_irqsave(&vc->lock, flags);
	DMEMIT("mode=%s\nprofile=%s\ncapacity=%llu\n", vdisk_mode_names[vc->mode],
	       vc->profile->name, vc->capacity);
	DMEMIT("read_samples=%llu\nwrite_samples=%llu\nerrors=%llu\n",
	       vc->samples[VD_READ], vc->samples[VD_WRITE], vc->errors);
	DMEMIT("mean_read_us=%llu\nmean_write_us=%llu\n",
	       vdisk_mean_us(vc, VD_READ), vdisk_mean_us(vc, VD_WRITE));
	DMEMIT("busy_us=%llu\nvirtual_busy_us=%llu\nvirtual_requests=%llu\nvirtual_unestimated=%llu\n",
	       vdisk_us(vc->busy_ns), vdisk_us(vc->self.busy_ns),
	       vc->self.requests, vc->self.unestimated);
	DMEMIT("inflight=%u\nqueued=%u\nqueued_max=%u\n", vc->inflight,
	       vc->queued, vc->queued_max);
	DMEMIT("emu_requests=%llu\nemu_cache_hits=%llu\nemu_ra_hits=%llu\nemu_seeks=%llu\n",
	       st->requests, st->cache_hits, st->ra_hits, st->seeks);
	DMEMIT("emu_busy_us=%llu\nemu_seek_us=%llu\nemu_rotation_us=%llu\nemu_transfer_us=%llu\n",
	       vdisk_us(st->busy_ns), vdisk_us(st->seek_ns),
	       vdisk_us(st->rotation_ns), vdisk_us(st->transfer_ns));
	spin_unlock_irqrestore(&vc->lock, flags);
	return 1;
}

/* Counters of this target and its virtual disk; the tables stay. */
static void vdisk_reset_stats(struct vdisk_c *vc)
{
	spin_lock_irq(&vc->lock);
	memset(vc->samples, 0, sizeof(vc->samples));
	memset(vc->total_ns, 0, sizeof(vc->total_ns));
	vc->errors = 0;
	vc->busy_ns = 0;
	if (vc->inflight)
		vc->busy_since = ktime_get_ns();
	vc->queued_max = vc->queued;
	vc->self.busy_ns = 0;
	vc->self.requests = 0;
	vc->self.unestimated = 0;
	memset(&vc->drive.st, 0, sizeof(vc->drive.st));
	spin_unlock_irq(&vc->lock);
}

/* estimate <r|w> <[-]distance sectors> <size sectors>: microseconds. */
static int vdisk_estimate_msg(struct vdisk_c *vc, const struct vd_msg *m, char *result,
			      unsigned int maxlen)
{
	unsigned int sz = 0;
	u64 ns;

	if (!vdisk_model_estimate(vc->vm, m->dir, m->distance, m->sectors, &ns)) {
		DMERR("estimate: no %s samples yet", m->dir == VD_READ ? "read" : "write");
		return -ENODATA;
	}
	DMEMIT("%llu\n", vdisk_us(ns));
	return 1;
}

/* Cells one lock hold of table and load may visit (a 1 PiB disk has ~1M columns). */
#define VDISK_CELL_CHUNK	1024

/* table <r|w> <first row> <nr rows>: one line per row, non-empty cells. */
static int vdisk_table_msg(struct vdisk_c *vc, const struct vd_msg *m, char *result,
			   unsigned int maxlen)
{
	struct vdisk_model *vm = vc->vm;
	u32 row, col, end, n;
	unsigned int sz = 0;
	unsigned long flags;
	u64 sum;

	for (row = m->row; row < m->row + m->nr_rows; row++) {
		DMEMIT("%u", row);
		for (col = 0; col < vm->m.cols; col = end) {
			end = min(vm->m.cols, col + VDISK_CELL_CHUNK);
			spin_lock_irqsave(&vm->lock, flags);
			for (; col < end; col++) {
				vd_model_get_cell(&vm->m, m->dir, row, col, &n, &sum);
				if (n)
					DMEMIT(" %u:%u:%llu", col, n, sum);
			}
			spin_unlock_irqrestore(&vm->lock, flags);
			cond_resched();
		}
		DMEMIT("\n");
	}
	return 1;
}

/*
 * load <r|w> <row> [<col>:<n>:<sum>]...: replaces one row of a table (a
 * sample trained meanwhile may land in the part not yet cleared).
 */
static int vdisk_load_msg(struct vdisk_c *vc, const struct vd_msg *m, unsigned int argc,
			  char **argv)
{
	struct vdisk_model *vm = vc->vm;
	u32 col, end, n;
	unsigned int i;
	u64 sum;

	for (col = 0; col < vm->m.cols; col = end) {
		end = min(vm->m.cols, col + VDISK_CELL_CHUNK);
		spin_lock_irq(&vm->lock);
		for (; col < end; col++)
			vd_model_set_cell(&vm->m, m->dir, m->row, col, 0, 0);
		spin_unlock_irq(&vm->lock);
		cond_resched();
	}
	spin_lock_irq(&vm->lock);
	for (i = m->first_cell; i < argc; i++) {
		vd_parse_cell(argv[i], &col, &n, &sum);	/* vd_parse_message() checked it */
		vd_model_set_cell(&vm->m, m->dir, m->row, col, n, sum);
	}
	spin_unlock_irq(&vm->lock);
	return 0;
}

/* dcache learnt|none|<shape>: the drive cache the model prices with. */
static int vdisk_dcache_msg(struct vdisk_c *vc, struct vd_msg *m)
{
	struct vdisk_model *vm = vc->vm;
	u64 reads, hits;
	int r = 0;

	spin_lock_irq(&vm->lock);
	if (m->dcache_learnt && vd_dcl_result(&vm->dcl, &m->dcache)) {
		reads = vm->dcl.reads;
		hits = vm->dcl.hits;
		r = -ENODATA;
	} else {
		vd_model_set_dcache(&vm->m, &m->dcache);	/* in range: parsed */
	}
	spin_unlock_irq(&vm->lock);
	if (r)
		DMERR("dcache: no drive cache learnt yet (%llu reads timed alone, %llu hits)",
		      reads, hits);
	return r;
}

/*
 * Tables, counters and the emulated drive back to their state at load.  The
 * empty tables are built aside and swapped in: the lock is held for the
 * swap, not for clearing rows x columns cells.
 */
static int vdisk_reset(struct vdisk_c *vc)
{
	struct vdisk_model *vm = vc->vm;
	struct vd_model fresh;
	void *mem, *old;

	mem = vdisk_fi_reset_alloc_fail() ? NULL :
	      kvmalloc(vm->mem_size, GFP_KERNEL | __GFP_NOWARN);
	if (!mem) {
		DMERR("reset: cannot allocate model tables");
		return -ENOMEM;
	}
	vd_model_init(&fresh, mem, vm->m.capacity, vm->m.rows, VDISK_MAX_RINGS);
	vdisk_reset_stats(vc);
	spin_lock_irq(&vm->lock);
	old = vm->mem;
	vm->mem = mem;
	vm->m = fresh;
	vd_dcl_init(&vm->dcl);
	spin_unlock_irq(&vm->lock);
	kvfree(old);

	spin_lock_irq(&vc->lock);
	vd_vdisk_init(&vc->self);
	vd_drive_reset(&vc->drive);
	spin_unlock_irq(&vc->lock);
	return 0;
}

/* The messages: vd_parse_message() in vd-args.h, docs/vdisk.rst. */
static int vdisk_message(struct dm_target *ti, unsigned int argc, char **argv,
			 char *result, unsigned int maxlen)
{
	struct vdisk_c *vc = ti->private;
	const char *err;
	struct vd_msg m;
	char buf[128];

	err = vd_parse_message(argc, argv, vc->vm->m.rows, vc->vm->m.cols, &m, buf,
			       sizeof(buf));
	if (err) {
		DMERR("%s", err);
		return -EINVAL;
	}

	switch (m.verb) {
	case VD_MSG_STATS:
		return vdisk_stats(vc, result, maxlen);
	case VD_MSG_RESET:
		return vdisk_reset(vc);
	case VD_MSG_RESET_STATS:
		vdisk_reset_stats(vc);
		return 0;
	case VD_MSG_MODE:
		spin_lock_irq(&vc->lock);
		vc->mode = m.mode;
		spin_unlock_irq(&vc->lock);
		return 0;
	case VD_MSG_TRAIN:
		spin_lock_irq(&vc->vm->lock);
		vc->vm->train = m.train;
		spin_unlock_irq(&vc->vm->lock);
		return 0;
	case VD_MSG_ESTIMATE:
		return vdisk_estimate_msg(vc, &m, result, maxlen);
	case VD_MSG_TABLE:
		return vdisk_table_msg(vc, &m, result, maxlen);
	case VD_MSG_OVERLAP:
		spin_lock_irq(&vc->vm->lock);
		vd_model_set_overlap(&vc->vm->m, m.overlap_ns);	/* in range: parsed */
		spin_unlock_irq(&vc->vm->lock);
		return 0;
	case VD_MSG_DCACHE:
		return vdisk_dcache_msg(vc, &m);
	default:
		return vdisk_load_msg(vc, &m, argc, argv);
	}
}

static int vdisk_iterate_devices(struct dm_target *ti,
				 iterate_devices_callout_fn fn, void *data)
{
	struct vdisk_c *vc = ti->private;

	return fn(ti, vc->dev, 0, ti->len, data);
}

static struct target_type vdisk_target = {
	.name = "vdisk",
	.version = {0, 3, 0},
	.module = THIS_MODULE,
	.ctr = vdisk_ctr,
	.dtr = vdisk_dtr,
	.map = vdisk_map,
	.end_io = vdisk_end_io,
	.presuspend = vdisk_presuspend,
	.presuspend_undo = vdisk_presuspend_undo,
	.resume = vdisk_resume,
	.status = vdisk_status,
	.message = vdisk_message,
	.iterate_devices = vdisk_iterate_devices,
};

static int __init dm_vdisk_init(void)
{
	return dm_register_target(&vdisk_target);
}

static void __exit dm_vdisk_exit(void)
{
	dm_unregister_target(&vdisk_target);
}

module_init(dm_vdisk_init);
module_exit(dm_vdisk_exit);

MODULE_DESCRIPTION(DM_NAME " disk timing sidecar, latency model and disk emulator");
MODULE_LICENSE("GPL");

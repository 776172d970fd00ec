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
#include "vd-drive.h"

#define DM_MSG_PREFIX "vdisk"

#define VDISK_MAX_RINGS		8192	/* 2 MiB of 64-sample rings */

enum vdisk_mode { VDISK_MEASURE, VDISK_EMULATE };

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
	size_t mem_size;
	void *mem;
};

static LIST_HEAD(vdisk_models);
static DEFINE_MUTEX(vdisk_models_lock);

/* Which table-line features were given (status TABLE repeats them). */
enum vdisk_feature {
	VDF_MODE, VDF_PROFILE, VDF_CAPACITY, VDF_SEED, VDF_ROWS, VDF_RPM,
	VDF_CYLINDERS, VDF_SEEK, VDF_MEDIA, VDF_BUS, VDF_OVERHEAD, VDF_CACHE,
	VDF_READAHEAD, VDF_NR,
};

struct vdisk_c {
	struct dm_dev *dev;
	struct vdisk_model *vm;
	dev_t md_dev;

	/* The table line. */
	unsigned long features;		/* bitmap of enum vdisk_feature */
	enum vdisk_mode table_mode;
	const struct vd_drive_profile *profile;
	struct vd_drive_params params;
	u64 capacity;			/* as given, else ti->len */
	u64 seed;
	u32 rows;

	struct bio_set bs;		/* emulate: clones sent to the device */
	struct hrtimer timer;		/* emulate: the next completion is due */

	spinlock_t lock;		/* protects everything below */
	enum vdisk_mode mode;
	bool draining;			/* suspending: hold nothing back */
	u64 next_sector;		/* end of the previous request */
	u64 last_done;			/* ns: latest completion */
	u32 inflight;
	u64 busy_since;
	u64 busy_ns;			/* time with requests in flight */
	u64 samples[VD_NR_DIRS];
	u64 total_ns[VD_NR_DIRS];
	u64 errors;
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
	u64 distance;		/* sectors from the previous request's end */
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
	kfree(vm);
}

void vdisk_model_put(struct vdisk_model *vm)
{
	kref_put_mutex(&vm->kref, vdisk_model_release, &vdisk_models_lock);
}
EXPORT_SYMBOL_GPL(vdisk_model_put);

struct vdisk_model *vdisk_model_get(dev_t dev)
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
EXPORT_SYMBOL_GPL(vdisk_model_get);

bool vdisk_model_estimate(struct vdisk_model *vm, enum vd_dir dir,
			  u64 distance, u32 sectors, u64 *ns)
{
	unsigned long flags;
	bool r;

	spin_lock_irqsave(&vm->lock, flags);
	r = vd_model_estimate(&vm->m, dir, distance, sectors, ns);
	spin_unlock_irqrestore(&vm->lock, flags);
	return r;
}
EXPORT_SYMBOL_GPL(vdisk_model_estimate);

u64 vdisk_model_vdisk_submit(struct vdisk_model *vm, struct vd_vdisk *v,
			     enum vd_dir dir, u64 sector, u32 sectors, u64 now)
{
	unsigned long flags;
	u64 done;

	spin_lock_irqsave(&vm->lock, flags);
	done = vd_vdisk_submit(v, &vm->m, dir, sector, sectors, now);
	spin_unlock_irqrestore(&vm->lock, flags);
	return done;
}
EXPORT_SYMBOL_GPL(vdisk_model_vdisk_submit);

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

	vm = kzalloc(sizeof(*vm), GFP_KERNEL);
	if (!vm)
		return NULL;
	/* Table sizes come from a table line: too large is an error, not a WARN. */
	vm->mem = kvmalloc(sz, GFP_KERNEL | __GFP_NOWARN);
	if (!vm->mem) {
		kfree(vm);
		return NULL;
	}
	INIT_LIST_HEAD(&vm->list);
	kref_init(&vm->kref);
	spin_lock_init(&vm->lock);
	vm->dev = dev;
	vm->train = true;
	vm->mem_size = sz;
	vd_model_init(&vm->m, vm->mem, capacity, rows, VDISK_MAX_RINGS);
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

struct vdisk_feature_spec {
	const char *name;
	unsigned int nargs;
	char *error;		/* for a missing or bad value */
};

static const struct vdisk_feature_spec vdisk_feature_specs[VDF_NR] = {
	[VDF_MODE] = { "mode", 1, "Invalid mode" },
	[VDF_PROFILE] = { "profile", 1, "Unknown profile" },
	[VDF_CAPACITY] = { "capacity", 1, "Invalid capacity" },
	[VDF_SEED] = { "seed", 1, "Invalid seed" },
	[VDF_ROWS] = { "rows", 1, "Invalid rows" },
	[VDF_RPM] = { "rpm", 1, "Invalid rpm" },
	[VDF_CYLINDERS] = { "cylinders", 1, "Invalid cylinders" },
	[VDF_SEEK] = { "seek", 5, "Invalid seek curve" },
	[VDF_MEDIA] = { "media_mbps", 1, "Invalid media_mbps" },
	[VDF_BUS] = { "bus_mbps", 1, "Invalid bus_mbps" },
	[VDF_OVERHEAD] = { "overhead_us", 1, "Invalid overhead_us" },
	[VDF_CACHE] = { "cache", 2, "Invalid cache geometry" },
	[VDF_READAHEAD] = { "readahead", 1, "Invalid readahead" },
};

static int vdisk_parse_u32s(char **argv, unsigned int n, u32 *v)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (kstrtou32(argv[i], 10, &v[i]))
			return -EINVAL;
	return 0;
}

/* One feature's values into @vc; 0 or -EINVAL. */
static int vdisk_parse_feature(struct vdisk_c *vc, enum vdisk_feature f,
			       char **argv)
{
	struct vd_drive_params *p = &vc->params;
	u32 v[5];

	switch (f) {
	case VDF_MODE:
		if (!strcasecmp(argv[0], "measure"))
			vc->table_mode = VDISK_MEASURE;
		else if (!strcasecmp(argv[0], "emulate"))
			vc->table_mode = VDISK_EMULATE;
		else
			return -EINVAL;
		return 0;
	case VDF_PROFILE:
		vc->profile = vd_drive_profile(argv[0]);
		return vc->profile ? 0 : -EINVAL;
	case VDF_CAPACITY:
		return kstrtou64(argv[0], 10, &vc->capacity) || !vc->capacity ?
		       -EINVAL : 0;
	case VDF_SEED:
		return kstrtou64(argv[0], 10, &vc->seed);
	case VDF_ROWS:
		return kstrtou32(argv[0], 10, &vc->rows) || !vc->rows ||
		       vc->rows > VD_MAX_ROWS ? -EINVAL : 0;
	default:
		break;
	}

	if (vdisk_parse_u32s(argv, vdisk_feature_specs[f].nargs, v))
		return -EINVAL;
	switch (f) {
	case VDF_RPM:
		p->rpm = v[0];
		return v[0] ? 0 : -EINVAL;
	case VDF_CYLINDERS:
		p->cylinders = v[0];
		return v[0] ? 0 : -EINVAL;
	case VDF_SEEK:
		p->seek_alpha_ns = v[0];
		p->seek_beta_ns = v[1];
		p->seek_theta = v[2];
		p->seek_gamma_ns = v[3];
		p->seek_delta_ns = v[4];
		return 0;
	case VDF_MEDIA:
		p->media_mbps = v[0];
		return v[0] ? 0 : -EINVAL;
	case VDF_BUS:
		p->bus_mbps = v[0];
		return v[0] ? 0 : -EINVAL;
	case VDF_OVERHEAD:
		if (v[0] > 1000000)
			return -EINVAL;
		p->overhead_ns = v[0] * 1000;
		return 0;
	case VDF_CACHE:
		if (v[0] > VD_DRIVE_MAX_SEGS || (v[0] && !v[1]))
			return -EINVAL;
		p->nr_segs = v[0];
		p->seg_sectors = v[1];
		return 0;
	case VDF_READAHEAD:
		p->ra_sectors = v[0];
		return 0;
	default:
		return -EINVAL;
	}
}

/* Explicit drive parameters override the profile's, in any order. */
static int vdisk_parse_features(struct vdisk_c *vc, struct dm_target *ti,
				struct dm_arg_set *as)
{
	static const struct dm_arg _args[] = {
		{0, 40, "Invalid number of feature args"},
	};
	const struct vdisk_feature_spec *spec;
	char **vals[VDF_NR] = { NULL };
	unsigned int argc, f;
	const char *name;
	int r;

	r = dm_read_arg_group(_args, as, &argc, &ti->error);
	if (r)
		return r;
	while (argc) {
		name = dm_shift_arg(as);
		argc--;
		for (f = 0; f < VDF_NR; f++)
			if (!strcasecmp(name, vdisk_feature_specs[f].name))
				break;
		if (f == VDF_NR) {
			ti->error = "Unrecognised feature requested";
			return -EINVAL;
		}
		spec = &vdisk_feature_specs[f];
		if (argc < spec->nargs) {
			ti->error = spec->error;
			return -EINVAL;
		}
		if (__test_and_set_bit(f, &vc->features)) {
			ti->error = "Duplicate feature";
			return -EINVAL;
		}
		vals[f] = as->argv;
		dm_consume_args(as, spec->nargs);
		argc -= spec->nargs;
	}

	/* The profile first, so that explicit values land on top of it. */
	if (vals[VDF_PROFILE]) {
		if (vdisk_parse_feature(vc, VDF_PROFILE, vals[VDF_PROFILE])) {
			ti->error = vdisk_feature_specs[VDF_PROFILE].error;
			return -EINVAL;
		}
		vc->params = vc->profile->p;
	}
	for (f = 0; f < VDF_NR; f++) {
		if (f == VDF_PROFILE || !vals[f])
			continue;
		if (vdisk_parse_feature(vc, f, vals[f])) {
			ti->error = vdisk_feature_specs[f].error;
			return -EINVAL;
		}
	}
	if (vd_drive_params_check(&vc->params)) {
		ti->error = "Invalid drive parameters";
		return -EINVAL;
	}
	return 0;
}

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

/*
 * vdisk <dev> [<#features> <feature>*]
 *   mode measure|emulate, profile <name>, capacity <sectors>, seed <n>,
 *   rows <n>, rpm <n>, cylinders <n>, seek <a_ns> <b_ns> <theta> <c_ns> <d_ns>,
 *   media_mbps <n>, bus_mbps <n>, overhead_us <n>,
 *   cache <segments> <segment sectors>, readahead <sectors>
 */
static int vdisk_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct vdisk_c *vc;
	const char *path;
	int r;

	if (!argc) {
		ti->error = "Missing device argument";
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
	vc->seed = 1;
	vc->rows = VD_DEFAULT_ROWS;
	vc->profile = &vd_drive_profiles[0];
	vc->params = vc->profile->p;

	path = dm_shift_arg(&as);
	r = -EINVAL;
	if (as.argc && vdisk_parse_features(vc, ti, &as))
		goto bad;
	if (as.argc) {
		ti->error = "Too many arguments";
		goto bad;
	}
	if (!test_bit(VDF_CAPACITY, &vc->features))
		vc->capacity = ti->len;
	if (vc->capacity < ti->len) {
		ti->error = "Capacity smaller than the device";
		goto bad;
	}

	r = dm_get_device(ti, path, dm_table_get_mode(ti->table), &vc->dev);
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
	pb->sectors = bio_sectors(bio);
	/* From the mempool: waits, never fails. */
	if (READ_ONCE(vc->mode) == VDISK_EMULATE)
		clone = bio_alloc_clone(vc->dev->bdev, bio, GFP_NOIO, &vc->bs);
	now = ktime_get_ns();
	pb->start = now;

	spin_lock_irqsave(&vc->lock, flags);
	pb->distance = sector > vc->next_sector ? sector - vc->next_sector :
						  vc->next_sector - sector;
	vc->next_sector = sector + pb->sectors;
	if (!vc->inflight++)
		vc->busy_since = now;
	vdisk_model_vdisk_submit(vc->vm, &vc->self, dir, sector, pb->sectors, now);
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
	u64 now, service;
	unsigned long flags;

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
	/* A single-actuator disk starts a request when the previous one ends. */
	if (pb->emulated)
		service = pb->service;
	else
		service = now - max(pb->start, vc->last_done);
	vc->last_done = max(vc->last_done, now);
	vc->samples[pb->dir]++;
	vc->total_ns[pb->dir] += service;
	spin_unlock_irqrestore(&vc->lock, flags);

	spin_lock_irqsave(&vm->lock, flags);
	if (vm->train)
		vd_model_add(&vm->m, pb->dir, pb->distance, pb->sectors, service);
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
		if (test_bit(f, &vc->features))
			nargs += 1 + vdisk_feature_specs[f].nargs;
	if (!nargs)
		return;
	DMEMIT(" %u", nargs);
	if (test_bit(VDF_MODE, &vc->features))
		DMEMIT(" mode %s", vdisk_mode_names[vc->table_mode]);
	if (test_bit(VDF_PROFILE, &vc->features))
		DMEMIT(" profile %s", vc->profile->name);
	if (test_bit(VDF_CAPACITY, &vc->features))
		DMEMIT(" capacity %llu", vc->capacity);
	if (test_bit(VDF_SEED, &vc->features))
		DMEMIT(" seed %llu", vc->seed);
	if (test_bit(VDF_ROWS, &vc->features))
		DMEMIT(" rows %u", vc->rows);
	if (test_bit(VDF_RPM, &vc->features))
		DMEMIT(" rpm %u", p->rpm);
	if (test_bit(VDF_CYLINDERS, &vc->features))
		DMEMIT(" cylinders %u", p->cylinders);
	if (test_bit(VDF_SEEK, &vc->features))
		DMEMIT(" seek %u %u %u %u %u", p->seek_alpha_ns, p->seek_beta_ns,
		       p->seek_theta, p->seek_gamma_ns, p->seek_delta_ns);
	if (test_bit(VDF_MEDIA, &vc->features))
		DMEMIT(" media_mbps %u", p->media_mbps);
	if (test_bit(VDF_BUS, &vc->features))
		DMEMIT(" bus_mbps %u", p->bus_mbps);
	if (test_bit(VDF_OVERHEAD, &vc->features))
		DMEMIT(" overhead_us %u", p->overhead_ns / 1000);
	if (test_bit(VDF_CACHE, &vc->features))
		DMEMIT(" cache %u %u", p->nr_segs, p->seg_sectors);
	if (test_bit(VDF_READAHEAD, &vc->features))
		DMEMIT(" readahead %u", p->ra_sectors);
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

static int vdisk_stats(struct vdisk_c *vc, char *result, unsigned int maxlen)
{
	struct vdisk_model *vm = vc->vm;
	const struct vd_drive_stats *st = &vc->drive.st;
	unsigned int sz = 0;
	unsigned long flags;

	spin_lock_irqsave(&vm->lock, flags);
	DMEMIT("train=%s\nrows=%u\ncols=%u\nwindow=%u\ncells_filled=%u\n",
	       vm->train ? "on" : "off", vm->m.rows, vm->m.cols, VD_WINDOW,
	       vm->m.cells_filled);
	DMEMIT("model_read_samples=%llu\nmodel_write_samples=%llu\nmodel_bytes=%zu\n",
	       vm->m.samples[VD_READ], vm->m.samples[VD_WRITE], vm->mem_size);
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

static int vdisk_parse_dir(const char *s)
{
	if (!strcasecmp(s, "r") || !strcasecmp(s, "read"))
		return VD_READ;
	if (!strcasecmp(s, "w") || !strcasecmp(s, "write"))
		return VD_WRITE;
	return -EINVAL;
}

/* estimate <r|w> <distance sectors> <size sectors>: microseconds. */
static int vdisk_estimate_msg(struct vdisk_c *vc, char **argv, char *result,
			      unsigned int maxlen)
{
	int dir = vdisk_parse_dir(argv[1]);
	unsigned int sz = 0;
	u64 distance, ns;
	u32 sectors;

	if (dir < 0 || kstrtou64(argv[2], 10, &distance) ||
	    kstrtou32(argv[3], 10, &sectors) || !sectors) {
		DMERR("estimate: usage: estimate <r|w> <distance sectors> <size sectors>");
		return -EINVAL;
	}
	if (!vdisk_model_estimate(vc->vm, dir, distance, sectors, &ns)) {
		DMERR("estimate: no %s samples yet", dir == VD_READ ? "read" : "write");
		return -ENODATA;
	}
	DMEMIT("%llu\n", vdisk_us(ns));
	return 1;
}

/* table <r|w> <first row> <nr rows>: one line per row, non-empty cells. */
static int vdisk_table_msg(struct vdisk_c *vc, char **argv, char *result,
			   unsigned int maxlen)
{
	struct vdisk_model *vm = vc->vm;
	int dir = vdisk_parse_dir(argv[1]);
	u32 first, nr, row, col, n;
	unsigned int sz = 0;
	unsigned long flags;
	u64 sum;

	if (dir < 0 || kstrtou32(argv[2], 10, &first) ||
	    kstrtou32(argv[3], 10, &nr) || first >= vm->m.rows ||
	    nr > vm->m.rows - first) {
		DMERR("table: usage: table <r|w> <first row> <nr rows> (rows 0..%u)",
		       vm->m.rows - 1);
		return -EINVAL;
	}
	spin_lock_irqsave(&vm->lock, flags);
	for (row = first; row < first + nr; row++) {
		DMEMIT("%u", row);
		for (col = 0; col < vm->m.cols; col++) {
			vd_model_get_cell(&vm->m, dir, row, col, &n, &sum);
			if (n)
				DMEMIT(" %u:%u:%llu", col, n, sum);
		}
		DMEMIT("\n");
	}
	spin_unlock_irqrestore(&vm->lock, flags);
	return 1;
}

static int vdisk_parse_cell(const char *s, u32 *col, u32 *n, u64 *sum)
{
	char end;

	if (sscanf(s, "%u:%u:%llu%c", col, n, sum, &end) != 3)
		return -EINVAL;
	return 0;
}

/* load <r|w> <row> [<col>:<n>:<sum>]...: replaces one row of a table. */
static int vdisk_load_msg(struct vdisk_c *vc, unsigned int argc, char **argv)
{
	struct vdisk_model *vm = vc->vm;
	int dir = vdisk_parse_dir(argv[1]);
	u32 row, col, n;
	unsigned long flags;
	unsigned int i;
	u64 sum;

	if (dir < 0 || kstrtou32(argv[2], 10, &row) || row >= vm->m.rows) {
		DMERR("load: usage: load <r|w> <row> [<col>:<n>:<sum ns>]...");
		return -EINVAL;
	}
	for (i = 3; i < argc; i++)
		if (vdisk_parse_cell(argv[i], &col, &n, &sum) ||
		    col >= vm->m.cols || n > VD_WINDOW ||
		    sum > (u64)n * VD_MAX_SAMPLE_NS) {
			DMERR("load: bad cell '%s'", argv[i]);
			return -EINVAL;
		}

	spin_lock_irqsave(&vm->lock, flags);
	for (col = 0; col < vm->m.cols; col++)
		vd_model_set_cell(&vm->m, dir, row, col, 0, 0);
	for (i = 3; i < argc; i++) {
		vdisk_parse_cell(argv[i], &col, &n, &sum);
		vd_model_set_cell(&vm->m, dir, row, col, n, sum);
	}
	spin_unlock_irqrestore(&vm->lock, flags);
	return 0;
}

static int vdisk_mode_msg(struct vdisk_c *vc, const char *arg)
{
	enum vdisk_mode mode;

	if (!strcasecmp(arg, "measure")) {
		mode = VDISK_MEASURE;
	} else if (!strcasecmp(arg, "emulate")) {
		mode = VDISK_EMULATE;
	} else {
		DMERR("mode: unknown mode '%s'", arg);
		return -EINVAL;
	}
	spin_lock_irq(&vc->lock);
	vc->mode = mode;
	spin_unlock_irq(&vc->lock);
	return 0;
}

static int vdisk_train_msg(struct vdisk_c *vc, const char *arg)
{
	bool on;

	if (kstrtobool(arg, &on)) {
		DMERR("train: expected on or off, not '%s'", arg);
		return -EINVAL;
	}
	spin_lock_irq(&vc->vm->lock);
	vc->vm->train = on;
	spin_unlock_irq(&vc->vm->lock);
	return 0;
}

/* Tables, counters and the emulated drive back to their state at load. */
static void vdisk_reset(struct vdisk_c *vc)
{
	vdisk_reset_stats(vc);
	spin_lock_irq(&vc->vm->lock);
	vd_model_reset(&vc->vm->m);
	spin_unlock_irq(&vc->vm->lock);
	spin_lock_irq(&vc->lock);
	vd_vdisk_init(&vc->self);
	vd_drive_reset(&vc->drive);
	vc->next_sector = 0;
	spin_unlock_irq(&vc->lock);
}

enum vdisk_msg {
	VMSG_STATS, VMSG_RESET, VMSG_RESET_STATS, VMSG_MODE, VMSG_TRAIN,
	VMSG_ESTIMATE, VMSG_TABLE, VMSG_LOAD, VMSG_NR,
};

static const struct {
	const char *verb;
	unsigned int min_args, max_args;
} vdisk_messages[VMSG_NR] = {
	[VMSG_STATS] = { "stats", 0, 0 },
	[VMSG_RESET] = { "reset", 0, 0 },
	[VMSG_RESET_STATS] = { "reset_stats", 0, 0 },
	[VMSG_MODE] = { "mode", 1, 1 },
	[VMSG_TRAIN] = { "train", 1, 1 },
	[VMSG_ESTIMATE] = { "estimate", 3, 3 },
	[VMSG_TABLE] = { "table", 3, 3 },
	[VMSG_LOAD] = { "load", 2, UINT_MAX },
};

static int vdisk_message(struct dm_target *ti, unsigned int argc, char **argv,
			 char *result, unsigned int maxlen)
{
	struct vdisk_c *vc = ti->private;
	const char *cmd = argv[0];
	enum vdisk_msg i;

	for (i = 0; i < VMSG_NR; i++)
		if (!strcasecmp(cmd, vdisk_messages[i].verb))
			break;
	if (i == VMSG_NR) {
		DMERR("Unrecognised message '%s'", cmd);
		return -EINVAL;
	}
	if (argc - 1 < vdisk_messages[i].min_args ||
	    argc - 1 > vdisk_messages[i].max_args) {
		DMERR("%s: wrong number of arguments", vdisk_messages[i].verb);
		return -EINVAL;
	}

	switch (i) {
	case VMSG_STATS:
		return vdisk_stats(vc, result, maxlen);
	case VMSG_RESET:
		vdisk_reset(vc);
		return 0;
	case VMSG_RESET_STATS:
		vdisk_reset_stats(vc);
		return 0;
	case VMSG_MODE:
		return vdisk_mode_msg(vc, argv[1]);
	case VMSG_TRAIN:
		return vdisk_train_msg(vc, argv[1]);
	case VMSG_ESTIMATE:
		return vdisk_estimate_msg(vc, argv, result, maxlen);
	case VMSG_TABLE:
		return vdisk_table_msg(vc, argv, result, maxlen);
	default:
		return vdisk_load_msg(vc, argc, argv);
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
	.version = {0, 2, 0},
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

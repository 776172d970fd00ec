// SPDX-License-Identifier: GPL-2.0
/*
 * dm-vdisk: a pass-through target stacked on a real disk that times every
 * bio from submission to completion (measure mode).
 */
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/ktime.h>
#include <linux/atomic.h>

#define DM_MSG_PREFIX "vdisk"

enum vdisk_dir { VD_READ, VD_WRITE, VD_NR_DIRS };

struct vdisk_c {
	struct dm_dev *dev;
	atomic64_t samples[VD_NR_DIRS];
	atomic64_t total_ns[VD_NR_DIRS];
};

struct vdisk_pb {
	ktime_t start;
	unsigned int sectors;	/* size at submission: bi_iter is spent at end_io */
};

static int vdisk_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct vdisk_c *vc;
	int r;

	if (argc != 1) {
		ti->error = argc ? "Too many arguments" : "Missing device argument";
		return -EINVAL;
	}

	vc = kzalloc(sizeof(*vc), GFP_KERNEL);
	if (!vc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}

	r = dm_get_device(ti, argv[0], dm_table_get_mode(ti->table), &vc->dev);
	if (r) {
		ti->error = "Device lookup failed";
		kfree(vc);
		return r;
	}

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct vdisk_pb);
	ti->private = vc;
	return 0;
}

static void vdisk_dtr(struct dm_target *ti)
{
	struct vdisk_c *vc = ti->private;

	dm_put_device(ti, vc->dev);
	kfree(vc);
}

static int vdisk_map(struct dm_target *ti, struct bio *bio)
{
	struct vdisk_c *vc = ti->private;
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));

	bio_set_dev(bio, vc->dev->bdev);
	if (bio_sectors(bio) || op_is_zone_mgmt(bio_op(bio)))
		bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	pb->sectors = bio_sectors(bio);
	pb->start = ktime_get();
	return DM_MAPIO_REMAPPED;
}

static int vdisk_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct vdisk_c *vc = ti->private;
	struct vdisk_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	enum vdisk_dir dir;

	if (*error || !pb->sectors)
		return DM_ENDIO_DONE;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		dir = VD_READ;
		break;
	case REQ_OP_WRITE:
		dir = VD_WRITE;
		break;
	default:
		return DM_ENDIO_DONE;
	}
	atomic64_inc(&vc->samples[dir]);
	atomic64_add(ktime_to_ns(ktime_sub(ktime_get(), pb->start)), &vc->total_ns[dir]);
	return DM_ENDIO_DONE;
}

static u64 vdisk_mean_us(struct vdisk_c *vc, enum vdisk_dir dir)
{
	u64 n = atomic64_read(&vc->samples[dir]);

	return n ? div64_u64(atomic64_read(&vc->total_ns[dir]), n * NSEC_PER_USEC) : 0;
}

static void vdisk_status(struct dm_target *ti, status_type_t type,
			 unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct vdisk_c *vc = ti->private;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("measure %llu %llu %llu %llu",
		       (unsigned long long)atomic64_read(&vc->samples[VD_READ]),
		       (unsigned long long)atomic64_read(&vc->samples[VD_WRITE]),
		       vdisk_mean_us(vc, VD_READ), vdisk_mean_us(vc, VD_WRITE));
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s", vc->dev->name);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",device_name=%s,mode=measure;", vc->dev->name);
		break;
	}
}

static int vdisk_message(struct dm_target *ti, unsigned int argc, char **argv,
			 char *result, unsigned int maxlen)
{
	struct vdisk_c *vc = ti->private;
	unsigned int sz = 0;
	int i;

	if (argc == 1 && !strcasecmp(argv[0], "stats")) {
		DMEMIT("mode=measure\n");
		DMEMIT("read_samples=%llu\n",
		       (unsigned long long)atomic64_read(&vc->samples[VD_READ]));
		DMEMIT("write_samples=%llu\n",
		       (unsigned long long)atomic64_read(&vc->samples[VD_WRITE]));
		DMEMIT("mean_read_us=%llu\n", vdisk_mean_us(vc, VD_READ));
		DMEMIT("mean_write_us=%llu\n", vdisk_mean_us(vc, VD_WRITE));
		return 1;
	}
	if (argc == 1 && !strcasecmp(argv[0], "reset")) {
		for (i = 0; i < VD_NR_DIRS; i++) {
			atomic64_set(&vc->samples[i], 0);
			atomic64_set(&vc->total_ns[i], 0);
		}
		return 0;
	}
	DMWARN("Unrecognised message received");
	return -EINVAL;
}

static int vdisk_iterate_devices(struct dm_target *ti,
				 iterate_devices_callout_fn fn, void *data)
{
	struct vdisk_c *vc = ti->private;

	return fn(ti, vc->dev, 0, ti->len, data);
}

static struct target_type vdisk_target = {
	.name = "vdisk",
	.version = {0, 1, 0},
	.module = THIS_MODULE,
	.ctr = vdisk_ctr,
	.dtr = vdisk_dtr,
	.map = vdisk_map,
	.end_io = vdisk_end_io,
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

MODULE_DESCRIPTION(DM_NAME " disk timing sidecar and disk model");
MODULE_LICENSE("GPL");

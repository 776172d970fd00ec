/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The API dm-vdisk exports to other modules (dm-redcap): find the latency
 * model of a vdisk device and price requests, or replay a request stream on
 * a virtual disk, with it.  See docs/vdisk.rst, "Model API".
 *
 * It is one table, vdisk_model_api, which a user takes with
 * symbol_get(vdisk_model_api) when it looks for a model and gives back with
 * symbol_put(vdisk_model_api) after its last ->put(): the user then links
 * to nothing of dm-vdisk, loads without it, and holds it loaded only while
 * it holds a model.
 */
#ifndef DM_VDISK_H
#define DM_VDISK_H

#include <linux/types.h>
#include "vd-model.h"

struct vdisk_model;

struct vdisk_model_api {
	/*
	 * The model of the vdisk device @dev (a mapped device whose table is
	 * one vdisk target), with a reference held, or NULL if @dev is not
	 * one.  The model stays valid until ->put(), across reloads and even
	 * after the vdisk device is removed.  Process context; may sleep.
	 */
	struct vdisk_model *(*get)(dev_t dev);

	/* Drops the reference of ->get().  Process context. */
	void (*put)(struct vdisk_model *vm);

	/*
	 * Estimated service time in ns of a request of @sectors at seek
	 * @distance (sectors from the end of a recent request, negative
	 * backward).  Returns false (and *ns = 0) while the model has no
	 * sample of that direction.  Any context.
	 */
	bool (*estimate)(struct vdisk_model *vm, enum vd_dir dir, s64 distance,
			 u32 sectors, u64 *ns);

	/*
	 * Feeds one request arriving at @now (ns, ktime_get_ns()) to the
	 * caller's virtual disk @v and returns its virtual completion time;
	 * v->busy_ns sums the virtual I/O time.  The caller serialises calls
	 * on one @v.  Any context.
	 */
	u64 (*vdisk_submit)(struct vdisk_model *vm, struct vd_vdisk *v, enum vd_dir dir,
			    u64 sector, u32 sectors, u64 now, u32 stream, unsigned int how);
};

extern const struct vdisk_model_api vdisk_model_api;

#endif

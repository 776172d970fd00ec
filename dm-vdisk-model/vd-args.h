/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The vdisk table line and messages, parsed in portable C so that the
 * kernel target and the host's fuzzer (tests/fuzz) run the same code.
 * Nothing here looks at devices or the running model: the glue resolves
 * the path and applies what was parsed.
 */
#ifndef VD_ARGS_H
#define VD_ARGS_H

#include "vd-drive.h"
#include "vd-model.h"

enum vd_mode { VD_MODE_MEASURE, VD_MODE_EMULATE };

/* The table-line features, in the order status TABLE repeats them. */
enum vd_feature {
	VDF_MODE, VDF_PROFILE, VDF_CAPACITY, VDF_SEED, VDF_ROWS, VDF_RPM,
	VDF_CYLINDERS, VDF_SEEK, VDF_MEDIA, VDF_BUS, VDF_OVERHEAD, VDF_CACHE,
	VDF_READAHEAD, VDF_LATENCY, VDF_IOPS, VDF_NR,
};

/*
 * vdisk <dev> [<#features> <feature>*]
 *   mode measure|emulate, profile <name>, capacity <sectors>, seed <n>,
 *   rows <n>, rpm <n>, cylinders <n>, seek <a_ns> <b_ns> <theta> <c_ns> <d_ns>,
 *   media_mbps <n>, bus_mbps <n>, overhead_us <n>,
 *   cache <segments> <segment sectors>, readahead <sectors>,
 *   latency_us <n>, iops <n> <sectors of one I/O>
 * Explicit drive parameters override the profile's, in any order; rpm 0
 * is a device without platters (latency, iops and media_mbps apply).
 */
struct vd_table_args {
	const char *dev;
	u32 features;			/* bitmap of the enum vd_feature given */
	enum vd_mode mode;
	const struct vd_drive_profile *profile;
	struct vd_drive_params params;
	u64 capacity;			/* sectors; 0: not given */
	u64 seed;
	u32 rows;
};

/* NULL, or the constructor's error text (for ti->error). */
const char *vd_parse_table(unsigned int argc, char **argv, struct vd_table_args *t);

/* How many values follow feature @f's name. */
unsigned int vd_feature_nargs(enum vd_feature f);

enum vd_msg_verb {
	VD_MSG_STATS, VD_MSG_RESET, VD_MSG_RESET_STATS, VD_MSG_MODE, VD_MSG_TRAIN,
	VD_MSG_ESTIMATE, VD_MSG_TABLE, VD_MSG_LOAD, VD_MSG_OVERLAP, VD_MSG_DCACHE,
	VD_MSG_NR,
};

struct vd_msg {
	enum vd_msg_verb verb;
	enum vd_mode mode;		/* mode */
	bool train;			/* train */
	enum vd_dir dir;		/* estimate, table, load */
	s64 distance;			/* estimate: negative backward */
	u32 sectors;			/* estimate */
	u32 row, nr_rows;		/* table: first and count; load: the row */
	unsigned int first_cell;	/* load: argv index of the first cell */
	u64 overlap_ns;			/* overlap */
	struct vd_dcache dcache;	/* dcache: the shape (none: no segments) */
	bool dcache_learnt;		/* dcache learnt: the learnt shape */
};

/*
 * NULL, or the error to log, formatted into @buf (@len bytes).  @rows and
 * @cols are the model's, for the range checks of table and load; every
 * cell of a load is checked, so that the glue can apply them blindly.
 */
const char *vd_parse_message(unsigned int argc, char **argv, u32 rows, u32 cols,
			     struct vd_msg *m, char *buf, size_t len);

/* One "<col>:<n>:<sum ns>" cell of load, syntax only: 0 or -1. */
int vd_parse_cell(const char *s, u32 *col, u32 *n, u64 *sum);

#endif

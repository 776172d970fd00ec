/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The latency tables of a vdisk device: saved to and loaded from a file,
 * filled by off-line training (vdisk-tables.c).  What vdiskctl and redcapctl
 * share; errors exit through die(), reading "<progname>: <what>: <why>".
 */
#ifndef VDISK_TABLES_H
#define VDISK_TABLES_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dmctl.h"
#include "vd-model.h"

struct vdt_train {
	uint64_t seconds, seed, max_kib;
	bool write;
	bool drive_cache;	/* probe the drive's cache; the model prices it */
};

#define VDT_TRAIN_DEFAULTS	{ .seconds = 60, .seed = 1, .max_kib = 0 }

/* train's options for getopt_long (--time, --write, --seed, --max-kib, --drive-cache, --help)... */
extern const struct option vdt_train_options[];
/* ... and what one of them sets in the struct vdt_train at @ctx (usage_error if bad). */
void vdt_train_opt(int c, const char *arg, void *ctx);

/*
 * Who the disk @maj:@min is, as it would be known after a reboot, one word
 * of printable ASCII: its loop file, dm UUID or name, WWN or serial (a
 * partition: its whole disk's and "-part<N>"), else "dev:<maj>:<min>".
 */
char *vdt_identity(unsigned int maj, unsigned int min);

/*
 * A file written whole or not at all: vdt_create() opens "@file.tmp"
 * (removed at exit unless committed), vdt_commit() syncs it, renames it
 * over @file and syncs the directory.  Errors exit, naming @what.
 */
FILE *vdt_create(const char *what, const char *file);
void vdt_commit(FILE *f, const char *what, const char *file);

/* Both tables of @d, its disk's identity and capacity to @file, atomically. */
void vdt_save(const struct dev *d, const char *file);
/* Both tables of @d replaced by those of @file, once all of it is checked. */
void vdt_load(const struct dev *d, const char *file);
/* Off-line training of @d: 0, or 130 when interrupted by SIGINT or SIGTERM. */
int vdt_train(const struct dev *d, const struct vdt_train *o);
/*
 * The drive cache a vdisk's stats @st give as <@what>_segments and so on
 * ("dcache": the one priced, "learnt_dcache"): false, and none, from a
 * module that does not answer them (loaded before an upgrade).
 */
bool vdt_dcache(const struct dev *d, const struct stats *st, const char *what,
		struct vd_dcache *dc);
/* What a tables file says of itself. */
struct vdt_file_info {
	uint32_t version, rows, cols, window;
	uint64_t capacity;	/* sectors of the disk it was learnt on; 0 in version 1 */
	uint64_t overlap_us;	/* the model's overlap (vd-model.h); 0 before version 4 */
	struct vd_dcache dcache;	/* the model's drive cache; none before version 5 */
};
/*
 * Versions 1 and 2 hold the forward columns of a table (no seek direction):
 * a device of cols + VD_BACK_COLS columns loads them, and its backward
 * columns stay empty.
 */
uint32_t vdt_device_cols(const struct vdt_file_info *info);
/* One filled cell of a file's table @dir ('r' or 'w'). */
typedef void vdt_cell_fn(void *arg, char dir, uint32_t row, uint32_t col, uint32_t n,
			 uint64_t sum);
/*
 * Reads @file without a device: all of it is checked first, as load does
 * (an error exits with "<what>: <file>:<line>: <why>"), then @info is set
 * and every filled cell handed to @cell (if not NULL).
 */
void vdt_read_cells(const char *what, const char *file, struct vdt_file_info *info,
		    vdt_cell_fn *cell, void *arg);
/* One filled cell of a row. */
struct vdt_cell {
	uint32_t col, n;
	uint64_t sum;
};
/* The filled cells of row @row of table @dir ('r' or 'w') into @cells, in column order; how many. */
typedef uint32_t vdt_row_fn(void *arg, char dir, uint32_t row, struct vdt_cell *cells);
/*
 * Writes tables of geometry @info learnt on disk @id (one word) to @file,
 * atomically, as save does: @row gives each row, table 'r' then 'w', rows
 * in order.  Errors exit with "<what>: <file>: <why>".
 */
void vdt_write(const char *what, const char *file, const struct vdt_file_info *info,
	       const char *id, vdt_row_fn *row, void *arg);
/* Checks @file without a device and prints what it holds on stdout. */
void vdt_check_file(const char *file);
/* What to undo at exit (a temporary file, "train off"); register with atexit(). */
void vdt_cleanup(void);

#endif

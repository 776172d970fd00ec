/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reads of vdiskctl train --drive-cache's probe (dcache-probe.c): the
 * one plan that vdisk-tables.c sends to a disk and the host tests play on
 * the emulator's code (tests/host/vd_dclearn_test.c).  Plain C, no I/O.
 */
#ifndef DCACHE_PROBE_H
#define DCACHE_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#define DCACHE_BLOCK		4096u	/* bytes: the probe's unit */
#define DCACHE_READERS		16
#define DCACHE_SKIP_BLOCKS	256
#define DCACHE_STREAM_BLOCKS	128	/* the largest read, blocks */
#define DCACHE_MIN_BLOCKS	(DCACHE_READERS * 4 * DCACHE_SKIP_BLOCKS)	/* 64 MiB */

/*
 * One read: @blocks blocks at block @block, then @think_ms of the prober's
 * own time before the next.  false stops the probe.
 */
typedef bool (*dcache_probe_read)(void *ctx, uint64_t block, uint32_t blocks,
				  unsigned int think_ms);

/*
 * The probe's reads on a disk of @nblocks blocks (at least
 * DCACHE_MIN_BLOCKS), one at a time, through @read; false if it stopped
 * them.
 */
bool dcache_probe(uint64_t nblocks, dcache_probe_read read, void *ctx);

#endif /* DCACHE_PROBE_H */

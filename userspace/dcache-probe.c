// SPDX-License-Identifier: GPL-2.0
/*
 * vdiskctl train --drive-cache's probe: reads one at a time that a drive
 * cache serves if it has one, for the vdisk target to learn its shape from
 * their times (vd-dclearn.h).  Sixteen readers in turn, each 4 KiB on in
 * its own part of the disk (the segments); one reader skipping forward up
 * to 1 MiB as it thinks, every length of skip as often (the read-ahead);
 * 512 KiB read in a row and read back from inside, from its end down, each
 * block of a run's length read back once over the runs (a segment's
 * length: a read back that misses opens a segment at it, and one above it
 * would then be taken for a read after that); 512 KiB reads streamed (the
 * media rate).  About 12 s on a hard disk, less on anything faster.
 */
#include "dcache-probe.h"

#define DCACHE_TURNS		32
#define DCACHE_SKIPS		1536
#define DCACHE_SKIP_STEP	97	/* coprime with DCACHE_SKIP_BLOCKS: each skip as often */
#define DCACHE_RUNS		8
#define DCACHE_RUN_BLOCKS	128
#define DCACHE_STREAM		16

bool dcache_probe(uint64_t nblocks, dcache_probe_read read, void *ctx)
{
	uint64_t part = nblocks / DCACHE_READERS, at, i, j;

	for (i = 0; i < DCACHE_TURNS; i++)
		for (j = 0; j < DCACHE_READERS; j++)
			if (!read(ctx, j * part + i, 1, 2))
				return false;
	/* Over the second half of the disk, from its start again at its end. */
	for (i = 0, at = 0; i < DCACHE_SKIPS; i++) {
		if (!read(ctx, nblocks / 2 + at, 1, 5))
			return false;
		at = (at + 1 + i * DCACHE_SKIP_STEP % DCACHE_SKIP_BLOCKS) % (nblocks / 2);
	}
	for (i = 0; i < DCACHE_RUNS; i++) {
		at = part / 2 + i * part;
		/* the run, then 10 ms for the read-ahead to end */
		for (j = 0; j < DCACHE_RUN_BLOCKS; j++)
			if (!read(ctx, at + j, 1, j + 1 < DCACHE_RUN_BLOCKS ? 0 : 10))
				return false;
		for (j = DCACHE_RUN_BLOCKS / DCACHE_RUNS; j--; )
			if (!read(ctx, at + j * DCACHE_RUNS + i, 1, 0))
				return false;
	}
	at = part / 4;
	for (i = 0; i < DCACHE_STREAM; i++)
		if (!read(ctx, at + i * DCACHE_STREAM_BLOCKS, DCACHE_STREAM_BLOCKS, 0))
			return false;
	return true;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The longest time one lock hold spends walking entries for a discard over
 * a 1M-segment cache, before (one walk of every entry) and after (chunks of
 * REDCAP_WALK_CHUNK), and the time the vdisk model takes to price a request
 * whose cell is empty on a 1 PiB disk (2^20 columns), which it does on
 * every bio under both locks: the portable cores built with -O2 on the host.
 * usage: make lockhold && build/bench/lockhold
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rc-core.h"
#include "vd-model.h"

#define ENTRIES		(1u << 20)
#define CHUNK		1024	/* REDCAP_WALK_CHUNK in redcap-target.c */
#define REPEAT		20

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A full cache: every entry VALID, half of them in the discarded range. */
static void fill(struct rc_cache *c)
{
	u32 i, idx;

	for (i = 0; i < ENTRIES; i++) {
		if (rc_read(c, (u64)i * 2 << c->seg_shift, 1u << c->seg_shift, &idx) != RC_READ_FILL)
			abort();
		rc_fill_done(c, idx, 0, 256);
		rc_unpin(c, idx);
	}
}

/* The walk of the columns vd_model_estimate() did before the column index. */
static bool walk_estimate(const struct vd_model *m, u32 col, u64 *ns)
{
	u32 d;

	for (d = 0; d < m->cols; d++) {
		if (d <= col && m->t[VD_READ].col_filled[col - d]) {
			*ns = m->t[VD_READ].col_mean_sum[col - d] / m->t[VD_READ].col_filled[col - d];
			return true;
		}
		if (col + d < m->cols && m->t[VD_READ].col_filled[col + d]) {
			*ns = m->t[VD_READ].col_mean_sum[col + d] / m->t[VD_READ].col_filled[col + d];
			return true;
		}
	}
	return false;
}

/* One sample in column 0; a read priced at the far end of a 1 PiB disk. */
static void model_estimate(void)
{
	u64 cap = 1ull << 41, ns, t, walk = 0, idx = 0;
	struct vd_model m;
	void *mem = malloc(vd_model_mem_size(cap, 1, 64));
	int r;

	if (!mem || vd_model_init(&m, mem, cap, 1, 64) ||
	    vd_model_set_cell(&m, VD_READ, 0, 0, 1, 5000000))
		abort();
	for (r = 0; r < REPEAT; r++) {
		t = now_ns();
		if (!walk_estimate(&m, m.cols - 1, &ns))
			abort();
		t = now_ns() - t;
		walk = t > walk ? t : walk;
		t = now_ns();
		if (!vd_model_estimate(&m, VD_READ, cap - 8, 8, &ns))
			abort();
		t = now_ns() - t;
		idx = t > idx ? t : idx;
	}
	printf("vdisk model, %u columns, nearest filled column at the other end:\n", m.cols);
	printf("  walk of the columns (before): worst %.1f us\n", walk / 1e3);
	printf("  column index (now): worst %.1f us\n", idx / 1e3);
	free(mem);
}

int main(void)
{
	struct rc_cache c;
	void *mem = malloc(rc_cache_mem_size(ENTRIES));
	unsigned long long full_max = 0, chunk_max = 0, t;
	static unsigned long long chunks[REPEAT * (ENTRIES / CHUNK)];
	size_t nchunks = 0;
	int r;

	if (!mem)
		return 1;
	for (r = 0; r < REPEAT; r++) {
		u32 i = 0;

		rc_cache_init(&c, mem, ENTRIES, 8, 0);
		fill(&c);
		t = now_ns();
		rc_range_start(&c, 0, ENTRIES, (u64)ENTRIES * 256);
		t = now_ns() - t;
		full_max = t > full_max ? t : full_max;
		rc_range_done(&c, 0, ENTRIES);

		rc_cache_init(&c, mem, ENTRIES, 8, 0);
		fill(&c);
		rc_range_begin(&c, 0, ENTRIES, (u64)ENTRIES * 256);
		while (i < ENTRIES) {
			t = now_ns();
			i = rc_range_walk(&c, 0, ENTRIES, i, CHUNK);
			t = now_ns() - t;
			chunk_max = t > chunk_max ? t : chunk_max;
			chunks[nchunks++] = t;
		}
		rc_range_done(&c, 0, ENTRIES);
	}
	model_estimate();
	printf("entries=%u chunk=%u repeats=%d\n", ENTRIES, CHUNK, REPEAT);
	printf("one walk of every entry: worst %.1f us\n", full_max / 1e3);
	qsort(chunks, nchunks, sizeof(chunks[0]), cmp_ull);
	printf("chunked walk: %zu chunks, median %.1f us, p99 %.1f us, worst %.1f us\n",
	       nchunks, chunks[nchunks / 2] / 1e3, chunks[nchunks * 99 / 100] / 1e3,
	       chunk_max / 1e3);
	free(mem);
	return 0;
}

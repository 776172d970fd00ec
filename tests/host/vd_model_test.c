// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the vdisk latency model (dm-vdisk-model/vd-model.c):
 * table geometry, 64-sample windows, the ring pool, fallback rules,
 * oversize scaling, dump/load of cells, counters, memory and the virtual
 * disk.
 */
#include "ctest.h"
#include "vd-model.h"

#define CAP_1G		VD_GIB_SECTORS
#define CAP_400G	781250000ULL	/* 400 GB in 512-byte sectors */
#define MS		1000000ULL
#define US		1000ULL

/* --- helpers ------------------------------------------------------------ */

static struct vd_model *mk(u64 capacity, u32 rows, u32 max_rings)
{
	struct vd_model *m = malloc(sizeof(*m));
	size_t sz = vd_model_mem_size(capacity, rows, max_rings);
	void *mem;

	CHECK(m);
	CHECK(sz > 0);
	mem = malloc(sz);
	CHECK(mem);
	memset(mem, 0xa5, sz);	/* "any content" */
	CHECK_EQ(vd_model_init(m, mem, capacity, rows, max_rings), 0);
	CHECK((void *)m->t[0].cells == mem);
	return m;
}

static void rm(struct vd_model *m)
{
	free(m->t[0].cells);
	free(m);
}

/* A distance that falls in column @c (its first sector distance). */
static u64 dist_of_col(u32 c)
{
	if (!c)
		return 0;
	if (c <= VD_POW2_COLS)
		return 8ULL << (c - 1);
	return (u64)(c - VD_POW2_COLS) * VD_GIB_SECTORS;
}

/* A distance that falls in column @c of @m, backward ones included. */
static s64 dist_in(const struct vd_model *m, u32 c)
{
	if (c >= m->fwd_cols)
		return -(s64)dist_of_col(c - (m->fwd_cols - 1));
	return (s64)dist_of_col(c);
}

static u64 est(const struct vd_model *m, enum vd_dir dir, s64 distance,
	       u32 sectors)
{
	u64 ns = 12345;

	CHECK(vd_model_estimate(m, dir, distance, sectors, &ns));
	return ns;
}

static void cell(const struct vd_model *m, enum vd_dir dir, u32 row, u32 col,
		 u32 *n, u64 *sum)
{
	CHECK_EQ(vd_model_get_cell(m, dir, row, col, n, sum), 0);
}

/* --- geometry ------------------------------------------------------------ */

CTEST(fwd_cols_up_to_1gib_is_19)
{
	CHECK_EQ(vd_model_fwd_cols(1), 19);
	CHECK_EQ(vd_model_fwd_cols(8), 19);
	CHECK_EQ(vd_model_fwd_cols(1000000), 19);
	CHECK_EQ(vd_model_fwd_cols(CAP_1G - 1), 19);
}

CTEST(fwd_cols_exactly_1gib_is_19)
{
	CHECK_EQ(vd_model_fwd_cols(CAP_1G), 19);
}

CTEST(fwd_cols_1gib_plus_one_sector_is_20)
{
	CHECK_EQ(vd_model_fwd_cols(CAP_1G + 1), 20);
	CHECK_EQ(vd_model_fwd_cols(2 * CAP_1G), 20);
	CHECK_EQ(vd_model_fwd_cols(2 * CAP_1G + 1), 21);
}

CTEST(fwd_cols_400gb)
{
	/* 781250000 sectors = 372.5 GiB: columns 19..390 for 1..372 GiB. */
	CHECK_EQ(vd_model_fwd_cols(CAP_400G), 391);
}

CTEST(cols_are_forward_then_18_backward)
{
	CHECK_EQ(vd_model_cols(1), 19 + 18);
	CHECK_EQ(vd_model_cols(CAP_1G + 1), 20 + 18);
	CHECK_EQ(vd_model_cols(CAP_400G), 391 + 18);
}

CTEST(col_distance_0_is_col_0)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);

	CHECK_EQ(vd_model_col(m, 0), 0);
	rm(m);
}

CTEST(col_under_8k_is_col_1)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);
	u64 d;

	for (d = 1; d <= 15; d++)
		CHECK_EQ(vd_model_col(m, d), 1);
	CHECK_EQ(vd_model_col(m, 8), 1);	/* 4 KiB */
	CHECK_EQ(vd_model_col(m, 15), 1);
	CHECK_EQ(vd_model_col(m, 16), 2);	/* 8 KiB */
	rm(m);
}

CTEST(col_pow2_edges)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);
	u32 k;

	/* Column c is [4 KiB * 2^(c-1), 4 KiB * 2^c): 4 KiB * 2^k opens c = k+1. */
	CHECK_EQ(vd_model_col(m, 7), 1);
	CHECK_EQ(vd_model_col(m, 8), 1);
	for (k = 1; k <= 18; k++) {
		u64 edge = 8ULL << k;

		CHECK_EQ(vd_model_col(m, edge - 1), k);
		CHECK_EQ(vd_model_col(m, edge), k + 1);
		CHECK_EQ(vd_model_col(m, dist_of_col(k + 1)), k + 1);
	}
	rm(m);
}

CTEST(col_gib_columns)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);

	CHECK_EQ(vd_model_col(m, CAP_1G - 1), 18);
	CHECK_EQ(vd_model_col(m, CAP_1G), 19);
	CHECK_EQ(vd_model_col(m, 2 * CAP_1G - 1), 19);
	CHECK_EQ(vd_model_col(m, 2 * CAP_1G), 20);
	CHECK_EQ(vd_model_col(m, 3 * CAP_1G), 21);
	CHECK_EQ(vd_model_col(m, 372 * CAP_1G), 390);
	CHECK_EQ(vd_model_col(m, CAP_400G - 1), 390);
	rm(m);
}

CTEST(col_beyond_capacity_clamps_to_last)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);
	struct vd_model *g1 = mk(CAP_1G, 1, 0);
	struct vd_model *g1p = mk(CAP_1G + 1, 1, 0);
	struct vd_model *tiny = mk(1000, 1, 0);

	CHECK_EQ(m->fwd_cols, 391);
	CHECK_EQ(m->cols, 391 + 18);
	CHECK_EQ(vd_model_col(m, CAP_400G), 390);
	CHECK_EQ(vd_model_col(m, 373 * CAP_1G), 390);
	CHECK_EQ(vd_model_col(m, 1LL << 40), 390);
	CHECK_EQ(vd_model_col(m, INT64_MAX), 390);
	CHECK_EQ(vd_model_col(m, -INT64_MAX), 390);
	CHECK_EQ(vd_model_col(m, INT64_MIN), 390);
	CHECK_EQ(g1->fwd_cols, 19);
	CHECK_EQ(vd_model_col(g1, CAP_1G), 18);
	CHECK_EQ(vd_model_col(g1, 5 * CAP_1G), 18);
	CHECK_EQ(vd_model_col(g1, -(s64)CAP_1G), 18);
	CHECK_EQ(g1p->fwd_cols, 20);
	CHECK_EQ(vd_model_col(g1p, CAP_1G), 19);
	CHECK_EQ(vd_model_col(g1p, 2 * CAP_1G), 19);
	CHECK_EQ(tiny->fwd_cols, 19);
	CHECK_EQ(vd_model_col(tiny, INT64_MAX), 18);
	rm(tiny);
	rm(g1p);
	rm(g1);
	rm(m);
}

CTEST(row_boundaries)
{
	struct vd_model *m = mk(CAP_1G, VD_DEFAULT_ROWS, 0);
	u32 s;

	for (s = 1; s <= 8; s++)
		CHECK_EQ(vd_model_row(m, s), 0);
	CHECK_EQ(vd_model_row(m, 9), 1);
	CHECK_EQ(vd_model_row(m, 16), 1);
	CHECK_EQ(vd_model_row(m, 17), 2);
	CHECK_EQ(vd_model_row(m, 64 * 8), 63);
	rm(m);
}

CTEST(row_oversize_clamps_to_last)
{
	struct vd_model *m = mk(CAP_1G, VD_DEFAULT_ROWS, 0);
	struct vd_model *one = mk(CAP_1G, 1, 0);

	CHECK_EQ(vd_model_row(m, 64 * 8 + 1), 63);
	CHECK_EQ(vd_model_row(m, 1u << 20), 63);
	CHECK_EQ(vd_model_row(m, ~0u), 63);
	CHECK_EQ(vd_model_row(one, 9), 0);
	CHECK_EQ(vd_model_row(one, 100000), 0);
	rm(one);
	rm(m);
}

/* --- the 64-sample window ------------------------------------------------ */

CTEST(window_64_new_samples_replace_old)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 i, n;
	u64 sum;

	for (i = 0; i < 64; i++)
		vd_model_add(m, VD_READ, 100, 8, 1000);
	for (i = 0; i < 64; i++)
		vd_model_add(m, VD_READ, 100, 8, 3000);
	cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 64 * 3000);
	CHECK_EQ(est(m, VD_READ, 100, 8), 3000);
	rm(m);
}

CTEST(window_half_replaced_mean_is_midpoint)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 i, n;
	u64 sum;

	for (i = 0; i < 64; i++)
		vd_model_add(m, VD_READ, 100, 8, 1000);
	for (i = 0; i < 32; i++)
		vd_model_add(m, VD_READ, 100, 8, 3000);
	cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 32 * 1000 + 32 * 3000);
	CHECK_EQ(est(m, VD_READ, 100, 8), (1000 + 3000) / 2);
	rm(m);
}

CTEST(window_n_saturates_at_64)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 sum, want = 0;
	u32 i, n;

	for (i = 1; i <= 200; i++) {
		vd_model_add(m, VD_WRITE, 0, 16, 10 * i);
		want += 10 * i;
		if (i > 64)
			want -= 10 * (i - 64);
		cell(m, VD_WRITE, 1, 0, &n, &sum);
		CHECK_EQ(n, i < 64 ? i : 64);
		CHECK_EQ(sum, want);
	}
	rm(m);
}

CTEST(sample_saturates_at_max_sample_ns)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 10000000000ULL);
	cell(m, VD_READ, 0, 0, &n, &sum);
	CHECK_EQ(n, 1);
	CHECK_EQ(sum, VD_MAX_SAMPLE_NS);
	rm(m);
}

CTEST(estimate_of_filled_cell_is_its_mean)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);

	vd_model_add(m, VD_READ, 0, 8, 1000);
	vd_model_add(m, VD_READ, 0, 8, 1003);
	vd_model_add(m, VD_READ, 0, 8, 1000);
	/* Another cell of the column must not blend in. */
	vd_model_add(m, VD_READ, 0, 16, 9000);
	CHECK_EQ(est(m, VD_READ, 0, 8), 1001);
	CHECK_EQ(est(m, VD_READ, 0, 16), 9000);
	rm(m);
}

/* --- ring pool exhaustion ------------------------------------------------ */

CTEST(pool_exhausted_cell_keeps_exact_sum_until_full)
{
	struct vd_model *m = mk(CAP_1G, 4, 1);
	u64 sum, want = 0;
	u32 i, n;

	CHECK_EQ(m->nr_rings, 1);
	vd_model_add(m, VD_READ, 0, 8, 500);	/* takes the only ring */
	CHECK_EQ(m->rings_used, 1);
	for (i = 0; i < 64; i++) {
		vd_model_add(m, VD_READ, 100, 8, 1000 + i);
		want += 1000 + i;
		cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
		CHECK_EQ(n, i + 1);
		CHECK_EQ(sum, want);
		CHECK_EQ(est(m, VD_READ, 100, 8), want / (i + 1));
	}
	CHECK_EQ(m->rings_used, 1);
	rm(m);
}

CTEST(pool_exhausted_full_cell_is_exponential_window)
{
	struct vd_model *m = mk(CAP_1G, 4, 1);
	u64 sum, want = 0;
	u32 i, n;

	vd_model_add(m, VD_READ, 0, 8, 500);	/* takes the only ring */
	for (i = 0; i < 64; i++) {
		vd_model_add(m, VD_READ, 100, 8, 1000 + i);
		want += 1000 + i;
	}
	CHECK_EQ(want, 66016);
	/* 66016 - 66016 / 64 (1031) + 5000; a ring would drop 1000 instead. */
	vd_model_add(m, VD_READ, 100, 8, 5000);
	cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 69985);
	/* 69985 - 1093 + 0 */
	vd_model_add(m, VD_READ, 100, 8, 0);
	cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 68892);
	CHECK_EQ(est(m, VD_READ, 100, 8), 68892 / 64);
	rm(m);
}

CTEST(pool_cell_with_ring_unaffected_by_exhaustion)
{
	struct vd_model *m = mk(CAP_1G, 4, 1);
	u32 i, n;
	u64 sum;

	for (i = 0; i < 64; i++)
		vd_model_add(m, VD_READ, 0, 8, 1000 + i);
	vd_model_add(m, VD_READ, 100, 8, 7);	/* no ring left */
	vd_model_add(m, VD_READ, 0, 8, 5000);	/* drops exactly 1000 */
	cell(m, VD_READ, 0, 0, &n, &sum);
	CHECK_EQ(sum, 66016 - 1000 + 5000);
	rm(m);
}

/* --- fallback rules ------------------------------------------------------ */

CTEST(fallback_empty_cell_uses_column_average_of_means)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 d5 = dist_of_col(5);

	/* Row 0: three samples of 1000; row 2: one of 3001 (mean of means 2000). */
	vd_model_add(m, VD_READ, d5, 8, 1000);
	vd_model_add(m, VD_READ, d5, 8, 1000);
	vd_model_add(m, VD_READ, d5, 8, 1000);
	vd_model_add(m, VD_READ, d5, 24, 3001);
	vd_model_add(m, VD_READ, dist_of_col(7), 16, 99999);	/* not a neighbour */
	CHECK_EQ(est(m, VD_READ, d5, 16), (1000 + 3001) / 2);
	CHECK_EQ(est(m, VD_READ, d5, 32), (1000 + 3001) / 2);
	CHECK_EQ(est(m, VD_READ, d5, 8), 1000);
	CHECK_EQ(est(m, VD_READ, d5, 24), 3001);
	rm(m);
}

CTEST(fallback_empty_column_uses_nearest_filled_column)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);

	vd_model_add(m, VD_READ, dist_of_col(3), 8, 1000);
	vd_model_add(m, VD_READ, dist_of_col(10), 8, 5000);
	vd_model_add(m, VD_READ, dist_of_col(10), 16, 7000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(0), 8), 1000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(4), 8), 1000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(5), 32), 1000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(8), 8), 6000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(11), 24), 6000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(18), 8), 6000);
	rm(m);
}

CTEST(fallback_tie_prefers_shorter_distance_column)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);

	vd_model_add(m, VD_READ, dist_of_col(3), 8, 1000);
	vd_model_add(m, VD_READ, dist_of_col(7), 8, 5000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(5), 8), 1000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(6), 8), 5000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(4), 8), 1000);
	rm(m);
}

CTEST(fallback_empty_table_returns_false_and_zero)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 ns = 777;

	CHECK(!vd_model_estimate(m, VD_READ, 0, 8, &ns));
	CHECK_EQ(ns, 0);
	ns = 777;
	CHECK(!vd_model_estimate(m, VD_WRITE, 1ULL << 30, 100000, &ns));
	CHECK_EQ(ns, 0);
	rm(m);
}

CTEST(col_backward_columns)
{
	struct vd_model *m = mk(CAP_400G, 1, 0);
	const u32 back = m->fwd_cols - 1;
	u32 k;

	CHECK_EQ(vd_model_col(m, -1), back + 1);
	CHECK_EQ(vd_model_col(m, -15), back + 1);
	CHECK_EQ(vd_model_col(m, -16), back + 2);
	for (k = 1; k <= 18; k++) {
		s64 edge = 8LL << k;

		CHECK_EQ(vd_model_col(m, -(edge - 1)), back + k);
		CHECK_EQ(vd_model_col(m, -edge), k == 18 ? 19 : back + k + 1);
	}
	/* A backward seek of 1 GiB or more shares the forward column. */
	CHECK_EQ(vd_model_col(m, -(s64)CAP_1G + 1), back + 18);
	CHECK_EQ(vd_model_col(m, -(s64)CAP_1G), 19);
	CHECK_EQ(vd_model_col(m, -2 * (s64)CAP_1G), 20);
	CHECK_EQ(back + 18, m->cols - 1);
	rm(m);
}

CTEST(backward_estimate_cell_then_column_then_forward_twin)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	s64 d5 = (s64)dist_of_col(5);

	vd_model_add(m, VD_READ, d5, 8, 1000);		/* forward column 5 */
	vd_model_add(m, VD_READ, d5, 16, 3000);
	vd_model_add(m, VD_READ, -d5, 8, 8000);		/* backward column 5 */
	CHECK_EQ(est(m, VD_READ, -d5, 8), 8000);
	/* Empty cell, filled backward column: that column's mean. */
	CHECK_EQ(est(m, VD_READ, -d5, 16), 8000);
	/* Empty backward column: as its forward twin, cell first, then columns. */
	vd_model_add(m, VD_READ, (s64)dist_of_col(7), 16, 7000);
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(7), 16), 7000);
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(7), 8), 7000);
	/* ... whose empty cell answers from its row's neighbour (column 5). */
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(4), 16), 3000);
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(6), 8), 1000);
	/* No neighbour in the row: the nearest column's mean. */
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(3), 16), 2000);
	/* Forward columns never answer from backward ones while they have samples. */
	CHECK_EQ(est(m, VD_READ, d5, 8), 1000);
	CHECK_EQ(est(m, VD_READ, (s64)dist_of_col(18), 8), 7000);
	CHECK_EQ(est(m, VD_READ, 0, 8), 2000);
	rm(m);
}

CTEST(forward_estimate_from_backward_columns_only_when_forward_empty)
{
	struct vd_model *m = mk(CAP_400G, 4, 1024);

	vd_model_add(m, VD_READ, -(s64)dist_of_col(3), 8, 1000);
	vd_model_add(m, VD_READ, -(s64)dist_of_col(9), 8, 5000);
	/* The backward column of the same length's nearest, the shorter on a tie. */
	CHECK_EQ(est(m, VD_READ, 0, 8), 1000);
	CHECK_EQ(est(m, VD_READ, (s64)dist_of_col(6), 8), 1000);
	CHECK_EQ(est(m, VD_READ, (s64)dist_of_col(7), 8), 5000);
	CHECK_EQ(est(m, VD_READ, 300 * CAP_1G, 8), 5000);
	CHECK_EQ(est(m, VD_READ, -(s64)dist_of_col(4), 8), 1000);
	CHECK_EQ(est(m, VD_READ, -(s64)(300 * CAP_1G), 8), 5000);
	rm(m);
}

/*
 * Tables learnt without direction (a version 2 file: forward columns only)
 * price a backward distance exactly as its forward twin.
 */
CTEST(forward_only_tables_price_both_directions_alike)
{
	struct vd_model *m = mk(CAP_400G, 8, 4096);
	u64 seed = 88172645463325252ULL, a, b;
	s64 d;
	u32 i, n;

	for (i = 0; i < 300; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		d = (s64)(seed % CAP_400G) >> (seed % 40);
		vd_model_add(m, VD_READ, d, 1 + (u32)(seed >> 40) % 64, 1000 + seed % 9000000);
	}
	for (i = 0; i < 2000; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		d = 1 + (s64)((seed % CAP_400G) >> (seed % 40));
		n = 1 + (u32)(seed >> 40) % 80;
		a = est(m, VD_READ, d, n);
		b = est(m, VD_READ, -d, n);
		CHECK_EQ(a, b);
	}
	rm(m);
}

CTEST(read_and_write_tables_are_independent)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 ns = 777;
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 1000);
	CHECK(!vd_model_estimate(m, VD_WRITE, 0, 8, &ns));
	CHECK_EQ(ns, 0);
	cell(m, VD_WRITE, 0, 0, &n, &sum);
	CHECK_EQ(n, 0);
	vd_model_add(m, VD_WRITE, 0, 8, 4000);
	CHECK_EQ(est(m, VD_READ, 0, 8), 1000);
	CHECK_EQ(est(m, VD_WRITE, 0, 8), 4000);
	/* Fallbacks stay within a table too. */
	vd_model_add(m, VD_WRITE, dist_of_col(9), 8, 8000);
	CHECK_EQ(est(m, VD_READ, dist_of_col(9), 8), 1000);
	rm(m);
}

/* --- oversize requests --------------------------------------------------- */

CTEST(oversize_request_recorded_at_scaled_time)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);	/* last row: 32 sectors */
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 64, 10000);
	cell(m, VD_READ, 3, 0, &n, &sum);
	CHECK_EQ(n, 1);
	CHECK_EQ(sum, 5000);
	rm(m);
}

/* ns * last would wrap 64 bits: the sample saturates instead of wrapping. */
CTEST(oversize_huge_sample_saturates)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);	/* last row: 32 sectors */
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 64, (1ULL << 59) + 1000);	/* wraps to 32000 */
	cell(m, VD_READ, 3, 0, &n, &sum);
	CHECK_EQ(n, 1);
	CHECK_EQ(sum, VD_MAX_SAMPLE_NS);
	/* Just under the wrap point it scales, then saturates at the cap. */
	vd_model_add(m, VD_WRITE, 0, 64, ~0ULL / 32);
	cell(m, VD_WRITE, 3, 0, &n, &sum);
	CHECK_EQ(sum, VD_MAX_SAMPLE_NS);
	/* An ordinary oversize sample right after still scales exactly. */
	vd_model_add(m, VD_WRITE, 8, 64, 8000);
	cell(m, VD_WRITE, 3, 1, &n, &sum);
	CHECK_EQ(n, 1);
	CHECK_EQ(sum, 4000);
	rm(m);
}

CTEST(oversize_request_estimated_at_scaled_time)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);

	CHECK_EQ(vd_model_set_cell(m, VD_READ, 3, 0, 2, 2 * 3000), 0);
	CHECK_EQ(est(m, VD_READ, 0, 32), 3000);
	CHECK_EQ(est(m, VD_READ, 0, 64), 6000);
	/* A recorded 2x request estimates back at its own time. */
	vd_model_add(m, VD_WRITE, 0, 64, 10000);
	CHECK_EQ(est(m, VD_WRITE, 0, 64), 10000);
	CHECK_EQ(est(m, VD_WRITE, 0, 32), 5000);
	rm(m);
}

/*
 * A network volume: 1 ms a request and 35 us a 4 KiB row of transfer.  A
 * request beyond the last row costs the last row plus the transfer of
 * the rest at column 0's rate, not the last row scaled (which scales the
 * 1 ms too: a 1 MiB fill over 256 KiB rows priced 12.96 ms for 9.96), and
 * is learnt the same way back; without column 0's first and last rows it
 * is scaled as before.
 */
CTEST(oversize_request_beyond_the_last_row_at_column_0s_transfer_rate)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);	/* last row: 32 sectors */
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 1035 * US);
	vd_model_add(m, VD_READ, 0, 32, 1140 * US);
	CHECK_EQ(est(m, VD_READ, 0, 64), 1280 * US);
	vd_model_add(m, VD_READ, (s64)dist_of_col(5), 64, 1280 * US);
	cell(m, VD_READ, 3, 5, &n, &sum);
	CHECK_EQ(sum, 1140 * US);
	CHECK_EQ(est(m, VD_READ, (s64)dist_of_col(5), 64), 1280 * US);
	/* A sample faster than the transfer alone is scaled. */
	vd_model_add(m, VD_READ, (s64)dist_of_col(6), 64, 100 * US);
	cell(m, VD_READ, 3, 6, &n, &sum);
	CHECK_EQ(sum, 50 * US);
	/* The writes have no column 0: scaled. */
	vd_model_add(m, VD_WRITE, (s64)dist_of_col(5), 32, 1140 * US);
	CHECK_EQ(est(m, VD_WRITE, (s64)dist_of_col(5), 64), 2280 * US);
	rm(m);
}

/* --- dump / load --------------------------------------------------------- */

CTEST(set_get_cell_round_trip_random)
{
	/* 8 x 391 cells per table, 1000 rings: some cells load without one. */
	struct vd_model *m = mk(CAP_400G, 8, 1000);
	u32 cols = m->cols, rows = m->rows, i, d, r, c, n, filled = 0;
	u32 *wn = calloc((size_t)VD_NR_DIRS * rows * cols, sizeof(u32));
	u64 *ws = calloc((size_t)VD_NR_DIRS * rows * cols, sizeof(u64));
	u64 sum, msum;
	unsigned int undiv = 0;

	CHECK(wn && ws);
	ctest_rng = 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < 8000; i++) {
		u32 idx;

		d = ctest_rand(VD_NR_DIRS);
		r = ctest_rand(rows);
		c = ctest_rand(cols);
		n = ctest_rand(VD_WINDOW + 1);
		switch (ctest_rand(4)) {
		case 0:
			sum = (u64)n * VD_MAX_SAMPLE_NS;
			break;
		case 1:
			sum = (u64)n * ctest_rand(100000) + (n ? ctest_rand(n) : 0);
			break;
		default:
			sum = ctest_rand64() % ((u64)n * VD_MAX_SAMPLE_NS + 1);
			break;
		}
		if (n && sum % n)
			undiv++;
		CHECK_EQ(vd_model_set_cell(m, d, r, c, n, sum), 0);
		idx = (d * rows + r) * cols + c;
		wn[idx] = n;
		ws[idx] = sum;
		cell(m, d, r, c, &n, &sum);
		CHECK_EQ(n, wn[idx]);
		CHECK_EQ(sum, ws[idx]);
	}
	CHECK(undiv > 1000);
	CHECK_EQ(m->rings_used, 1000);
	for (d = 0; d < VD_NR_DIRS; d++) {
		for (c = 0; c < cols; c++) {
			u32 cf = 0;

			msum = 0;
			for (r = 0; r < rows; r++) {
				u32 idx = (d * rows + r) * cols + c;

				cell(m, d, r, c, &n, &sum);
				CHECK_EQ(n, wn[idx]);
				CHECK_EQ(sum, ws[idx]);
				if (n) {
					cf++;
					msum += sum / n;
					CHECK_EQ(est(m, d, dist_in(m, c), 8 * r + 1),
						 sum / n);
				}
			}
			filled += cf;
			CHECK_EQ(m->t[d].col_filled[c], cf);
			CHECK_EQ(m->t[d].col_mean_sum[c], msum);
		}
	}
	CHECK_EQ(m->cells_filled, filled);
	free(wn);
	free(ws);
	rm(m);
}

CTEST(set_cell_full_window_evolves_like_ring)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 n;
	u64 sum;

	CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, 2, 64, 64 * 1000), 0);
	vd_model_add(m, VD_READ, dist_of_col(2), 16, 2000);
	cell(m, VD_READ, 1, 2, &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 64 * 1000 - 1000 + 2000);
	rm(m);
}

CTEST(set_cell_undivisible_sum_evolves_like_ring)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 sum, s0 = 64 * 1000 + 10;
	u32 i, n;

	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 64, s0), 0);
	for (i = 1; i <= 64; i++) {
		vd_model_add(m, VD_READ, 0, 8, 0);
		cell(m, VD_READ, 0, 0, &n, &sum);
		CHECK_EQ(n, 64);
		/* Each step drops one loaded value: 1000, or 1001 ten times. */
		CHECK(sum + 1000ULL * i <= s0);
		CHECK(sum + 1000ULL * i + (i < 10 ? i : 10) >= s0);
	}
	CHECK_EQ(sum, 0);
	rm(m);
}

CTEST(set_cell_partial_window_evolves_like_ring)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 i, n;
	u64 sum;

	CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 0, 1, 10, 10 * 500), 0);
	for (i = 0; i < 54; i++)
		vd_model_add(m, VD_WRITE, 1, 8, 700);
	cell(m, VD_WRITE, 0, 1, &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 10 * 500 + 54 * 700);
	vd_model_add(m, VD_WRITE, 1, 8, 700);	/* drops a loaded 500 */
	cell(m, VD_WRITE, 0, 1, &n, &sum);
	CHECK_EQ(sum, 9 * 500 + 55 * 700);
	for (i = 0; i < 9; i++)
		vd_model_add(m, VD_WRITE, 1, 8, 700);
	cell(m, VD_WRITE, 0, 1, &n, &sum);
	CHECK_EQ(sum, 64 * 700);
	rm(m);
}

CTEST(set_cell_rejects_out_of_range)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 n;
	u64 sum;

	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 3, 3000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 65, 65), -1);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 3, 3ULL * VD_MAX_SAMPLE_NS + 1), -1);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 0, 1), -1);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 4, 0, 1, 1), -1);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, m->cols, 1, 1), -1);
	CHECK_EQ(vd_model_set_cell(m, VD_NR_DIRS, 0, 0, 1, 1), -1);
	cell(m, VD_READ, 0, 0, &n, &sum);
	CHECK_EQ(n, 3);
	CHECK_EQ(sum, 3000);
	CHECK_EQ(m->cells_filled, 1);
	/* The limits themselves are accepted. */
	CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 3, 18, 64, 64ULL * VD_MAX_SAMPLE_NS), 0);
	cell(m, VD_WRITE, 3, 18, &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 64ULL * VD_MAX_SAMPLE_NS);
	rm(m);
}

CTEST(get_cell_rejects_out_of_range)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u32 n = 7;
	u64 sum = 7;

	CHECK_EQ(vd_model_get_cell(m, VD_READ, 4, 0, &n, &sum), -1);
	CHECK_EQ(vd_model_get_cell(m, VD_READ, 0, m->cols, &n, &sum), -1);
	CHECK_EQ(vd_model_get_cell(m, VD_NR_DIRS, 0, 0, &n, &sum), -1);
	CHECK_EQ(vd_model_get_cell(m, VD_WRITE, 3, m->cols - 1, &n, &sum), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(sum, 0);
	rm(m);
}

CTEST(set_cell_zero_empties_cell)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 ns = 1;
	u32 n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 1000);
	vd_model_add(m, VD_READ, 0, 16, 3000);
	CHECK_EQ(m->cells_filled, 2);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, 0, 0, 0), 0);
	CHECK_EQ(m->cells_filled, 1);
	cell(m, VD_READ, 1, 0, &n, &sum);
	CHECK_EQ(n, 0);
	CHECK_EQ(sum, 0);
	/* The emptied cell now answers with the column's remaining average. */
	CHECK_EQ(est(m, VD_READ, 0, 16), 1000);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 0, 0), 0);
	CHECK_EQ(m->cells_filled, 0);
	CHECK(!vd_model_estimate(m, VD_READ, 0, 8, &ns));
	/* Emptying an empty cell changes nothing. */
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 0, 0), 0);
	CHECK_EQ(m->cells_filled, 0);
	rm(m);
}

/* --- counters, reset, memory --------------------------------------------- */

CTEST(counters_cells_filled_and_samples)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);

	CHECK_EQ(m->cells_filled, 0);
	CHECK_EQ(m->samples[VD_READ], 0);
	CHECK_EQ(m->samples[VD_WRITE], 0);
	vd_model_add(m, VD_READ, 0, 8, 1);
	vd_model_add(m, VD_READ, 0, 8, 2);
	vd_model_add(m, VD_READ, 0, 8, 3);
	vd_model_add(m, VD_WRITE, 0, 8, 4);
	vd_model_add(m, VD_WRITE, 100, 8, 5);
	vd_model_add(m, VD_READ, 100, 30, 6);
	CHECK_EQ(m->cells_filled, 4);
	CHECK_EQ(m->samples[VD_READ], 4);
	CHECK_EQ(m->samples[VD_WRITE], 2);
	CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 2, 2, 5, 50), 0);
	CHECK_EQ(m->cells_filled, 5);
	rm(m);
}

CTEST(reset_empties_everything)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	u64 ns = 1;
	u32 r, c, d, n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 1);
	vd_model_add(m, VD_WRITE, 1000, 24, 2);
	CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 3, 18, 64, 64000), 0);
	vd_model_reset(m);
	CHECK_EQ(m->cells_filled, 0);
	CHECK_EQ(m->samples[VD_READ], 0);
	CHECK_EQ(m->samples[VD_WRITE], 0);
	CHECK_EQ(m->rings_used, 0);
	CHECK_EQ(m->rows, 4);
	CHECK_EQ(m->cols, 19 + 18);
	for (d = 0; d < VD_NR_DIRS; d++)
		for (r = 0; r < 4; r++)
			for (c = 0; c < m->cols; c++) {
				cell(m, d, r, c, &n, &sum);
				CHECK_EQ(n, 0);
				CHECK_EQ(sum, 0);
			}
	CHECK(!vd_model_estimate(m, VD_READ, 0, 8, &ns));
	CHECK(!vd_model_estimate(m, VD_WRITE, 0, 8, &ns));
	rm(m);
}

CTEST(reset_returns_rings_to_pool)
{
	struct vd_model *m = mk(CAP_1G, 4, 1);
	u32 i, n;
	u64 sum;

	vd_model_add(m, VD_READ, 0, 8, 1);	/* takes the only ring */
	vd_model_reset(m);
	for (i = 0; i < 64; i++)
		vd_model_add(m, VD_READ, 100, 8, 1000 + i);
	CHECK_EQ(m->rings_used, 1);
	vd_model_add(m, VD_READ, 100, 8, 5000);	/* ring: drops exactly 1000 */
	cell(m, VD_READ, 0, vd_model_col(m, 100), &n, &sum);
	CHECK_EQ(sum, 66016 - 1000 + 5000);
	rm(m);
}

CTEST(mem_size_rejects_bad_geometry)
{
	struct vd_model m;
	static u64 mem[1024];

	CHECK_EQ(vd_model_mem_size(CAP_1G, 0, 16), 0);
	CHECK_EQ(vd_model_mem_size(CAP_1G, VD_MAX_ROWS + 1, 16), 0);
	CHECK_EQ(vd_model_mem_size(0, 4, 16), 0);
	CHECK(vd_model_mem_size(CAP_1G, VD_MAX_ROWS, 16) > 0);
	CHECK(vd_model_mem_size(1, 1, 0) > 0);
	CHECK_EQ(vd_model_init(&m, mem, CAP_1G, 0, 16), -1);
	CHECK_EQ(vd_model_init(&m, mem, CAP_1G, VD_MAX_ROWS + 1, 16), -1);
	CHECK_EQ(vd_model_init(&m, mem, 0, 4, 16), -1);
}

CTEST(mem_size_pool_capped_by_cells)
{
	u64 cells = 2ULL * 4 * (19 + 18);

	CHECK_EQ(vd_model_mem_size(CAP_1G, 4, 0xffffffffu),
		 vd_model_mem_size(CAP_1G, 4, cells));
	CHECK(vd_model_mem_size(CAP_1G, 4, cells - 1) <
	      vd_model_mem_size(CAP_1G, 4, cells));
	CHECK_EQ(vd_model_mem_size(CAP_1G, 4, 10) - vd_model_mem_size(CAP_1G, 4, 0),
		 10 * VD_WINDOW * sizeof(u32));
}

CTEST(mem_size_400gb_below_7mb)
{
	size_t sz = vd_model_mem_size(CAP_400G, 32, 8192);
	struct vd_model *m;

	printf("vd_model memory, 400 GB, 32 rows, 8192 rings: %zu bytes (%.2f MB)\n",
	       sz, sz / 1e6);
	CHECK(sz > 0);
	CHECK(sz < 7000000);
	m = mk(CAP_400G, 32, 8192);
	CHECK_EQ(m->cols, 391 + 18);
	CHECK_EQ(m->nr_rings, 8192);
	vd_model_add(m, VD_WRITE, CAP_400G - 1, 256, 12345678);
	CHECK_EQ(est(m, VD_WRITE, CAP_400G, 256), 12345678);
	rm(m);
}

/* --- the virtual disk ---------------------------------------------------- */

/* Reads of up to 8 sectors cost @ns at every distance. */
static struct vd_model *mk_flat(u64 ns)
{
	struct vd_model *m = mk(CAP_400G, 4, 4096);
	u32 c;

	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, c, 64, 64 * ns), 0);
	return m;
}

CTEST(vdisk_init_is_idle_at_sector_0)
{
	struct vd_vdisk v;

	memset(&v, 0xa5, sizeof(v));
	vd_vdisk_init(&v);
	CHECK_EQ(v.busy_until, 0);
	CHECK_EQ(v.seek.nr, 0);
	CHECK_EQ(v.seek.next, 0);
	CHECK_EQ(v.requests, 0);
	CHECK_EQ(v.busy_ns, 0);
	CHECK_EQ(v.unestimated, 0);
}

CTEST(vdisk_requests_arriving_together_queue)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1000, 8, 0, 0, 0), 1 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 500000, 8, 0, 0, 0), 2 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 8, 8, MS / 2, 0, 0), 3 * MS);
	CHECK_EQ(v.busy_until, 3 * MS);
	CHECK_EQ(v.requests, 3);
	rm(m);
}

/*
 * A device that overlaps requests in flight (vd_model.overlap_ns): of each
 * 1 ms, 0.9 overlaps, so 16 arriving together take 0.1 ms each in turn
 * and complete 0.9 ms later, in order; the disk is busy 2.5 ms, not 16.
 */
CTEST(vdisk_overlap_serves_only_the_rest_one_at_a_time)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;
	u32 k;

	CHECK_EQ(vd_model_set_overlap(m, 900 * US), 0);
	vd_vdisk_init(&v);
	for (k = 0; k < 16; k++)
		CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, k * 1000, 8, 0, 0, 0), (k + 1) * 100 * US + 900 * US);
	CHECK_EQ(v.busy_ns, 2500 * US);
	CHECK_EQ(v.busy_until, 2500 * US);
	/* After idle: its whole time again, from its arrival. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 0, 8, 10 * MS, 0, 0), 11 * MS);
	CHECK_EQ(v.busy_ns, 3500 * US);

	/* More overlap than a request's time: all of it overlaps, in order. */
	CHECK_EQ(vd_model_set_overlap(m, 2 * MS), 0);
	vd_vdisk_init(&v);
	for (k = 0; k < 4; k++)
		CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, k * 1000, 8, 0, 0, 0), 1 * MS);
	CHECK_EQ(v.busy_ns, 1 * MS);

	/* Out of range: refused, nothing changed; a reset forgets it. */
	CHECK_EQ(vd_model_set_overlap(m, VD_MAX_OVERLAP_NS + 1), -1);
	CHECK_EQ(m->overlap_ns, 2 * MS);
	vd_model_reset(m);
	CHECK_EQ(m->overlap_ns, 0);
	rm(m);
}

/*
 * A stream's read that its reader waited for arrives on the virtual disk
 * when the stream's last one completes there: a reader served from the
 * cache sends its reads back to back, but on the bare disk each would
 * have waited the whole millisecond.  The rest of a cut request does not
 * wait, and other streams still overlap it.
 */
CTEST(vdisk_a_stream_waits_for_its_last_read)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;
	u32 k;

	CHECK_EQ(vd_model_set_overlap(m, 900 * US), 0);
	vd_vdisk_init(&v);
	for (k = 0; k < 4; k++)
		CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, k * 1000, 8, k * US, 7, VD_WAITS),
			 (k + 1) * MS);
	CHECK_EQ(v.busy_ns, 4 * MS);
	/* The rest of the last one, cut: with it, 0.1 ms after. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 3008, 8, 5 * US, 7, 0), 4100 * US);
	/* Another stream overlaps the first: its serial part follows. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 9000, 8, 6 * US, 8, VD_WAITS), 4200 * US);
	/* The first waits for its cut piece; the second for its own read. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 3016, 8, 7 * US, 7, VD_WAITS), 5100 * US);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 9008, 8, 8 * US, 8, VD_WAITS), 5200 * US);
	CHECK_EQ(v.busy_ns, 5200 * US);

	/* More streams than slots: the one that completed longest ago goes. */
	vd_vdisk_init(&v);
	for (k = 1; k <= VD_STREAMS + 1; k++)
		vd_vdisk_submit(&v, m, VD_READ, k * 1000, 8, 0, k, VD_WAITS);
	for (k = 0; k < VD_STREAMS; k++)
		CHECK(v.stream[k].id != 1);
	rm(m);
}

/*
 * The rest of a request cut above the disk joins it: the two are priced as
 * one request of both sizes (a network volume's 1 ms a request is paid
 * once), and counted once.  It joins only the stream's request that was
 * the virtual disk's last and ends where it begins, in its direction.
 */
CTEST(vdisk_the_rest_of_a_cut_request_joins_it)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;
	u32 c;

	/* 8 KiB: 1.1 ms at every distance */
	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, c, 64, 64 * 1100 * US), 0);
	vd_vdisk_init(&v);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1000, 8, 0, 7, VD_WAITS), 1 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1008, 8, 5 * US, 7, VD_JOINS), 1100 * US);
	CHECK_EQ(v.busy_ns, 1100 * US);
	CHECK_EQ(v.requests, 1);
	CHECK_EQ(v.distance, 0);
	/* As a request of its own, it would have queued behind the first. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1016, 8, 10 * US, 7, 0), 2100 * US);
	CHECK_EQ(v.requests, 2);
	/* Another stream's request in between: its own. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 5000, 8, 20 * US, 8, 0), 3100 * US);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1024, 8, 30 * US, 7, VD_JOINS), 4100 * US);
	/* Not where the last ended, or the other direction: its own. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1040, 8, 40 * US, 7, VD_JOINS), 5100 * US);
	CHECK_EQ(v.requests, 5);
	/* Joined pieces grow the request: three make 12 KiB, priced at row 2. */
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1048, 8, 50 * US, 7, VD_JOINS), 5200 * US);
	CHECK_EQ(v.busy_ns, 5200 * US);

	/* A write's rest, of no stream, joins the write; not a read's. */
	for (c = 0; c < m->cols; c++) {
		CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 0, c, 64, 64 * MS), 0);
		CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 1, c, 64, 64 * 1100 * US), 0);
	}
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_WRITE, 2000, 8, 6 * MS, 0, 0), 7 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_WRITE, 2008, 8, 6 * MS, 0, VD_JOINS), 7100 * US);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 2016, 8, 6 * MS, 0, VD_JOINS), 8100 * US);
	CHECK_EQ(v.requests, 7);

	/* With an overlap: the serial part grows by what the join adds. */
	CHECK_EQ(vd_model_set_overlap(m, 900 * US), 0);
	vd_vdisk_init(&v);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1000, 8, 0, 7, VD_WAITS), 1 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 1008, 8, 0, 7, VD_JOINS), 1100 * US);
	CHECK_EQ(v.serial_until, 200 * US);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 9000, 8, 0, 8, 0), 1200 * US);
	rm(m);
}

/*
 * What a measured request teaches the model.  A disk with no overlap
 * starts a request when the one before ends; a device that overlaps
 * requests in flight (0.9 ms of a 1 ms request) serves four readers' at
 * once, each in its whole millisecond, not the quarter between their
 * completions; saturated, it starts one when the last one's serial part
 * ends.
 */
CTEST(service_learnt_from_a_measured_request)
{
	/* No overlap: from the previous completion, or the start if later. */
	CHECK_EQ(vd_service_of(0, 3 * MS, 0, 4 * MS), 1 * MS);
	CHECK_EQ(vd_service_of(5 * MS, 3 * MS, 0, 6 * MS), 1 * MS);
	/* Four in flight, 0.25 ms apart, each 1 ms: 1 ms each. */
	CHECK_EQ(vd_service_of(250 * US, 1 * MS, 900 * US, 1250 * US), 1 * MS);
	/* Queued behind the last one's serial part: from where it ended. */
	CHECK_EQ(vd_service_of(0, 1 * MS, 900 * US, 1100 * US), 1 * MS);
	/* Early on, overlap larger than the time so far; never negative. */
	CHECK_EQ(vd_service_of(0, 100 * US, 900 * US, 1 * MS), 1 * MS);
	CHECK_EQ(vd_service_of(2 * MS, 0, 0, 1 * MS), 0);
}

CTEST(overlap_of_a_measured_device)
{
	/* Side by side 8 times faster: the difference. */
	CHECK_EQ(vd_overlap_of(1000 * US, 125 * US), 875 * US);
	/* 25 % faster or less: a disk that serves one at a time. */
	CHECK_EQ(vd_overlap_of(1250 * US, 1000 * US), 0);
	CHECK_EQ(vd_overlap_of(1251 * US, 1000 * US), 251 * US);
	CHECK_EQ(vd_overlap_of(900 * US, 1000 * US), 0);
	CHECK_EQ(vd_overlap_of(1000 * US, 0), 0);
	CHECK(vd_overlap_of(100 * VD_MAX_OVERLAP_NS, 1) == VD_MAX_OVERLAP_NS);
}

CTEST(vdisk_request_after_idle_starts_at_arrival)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 0, 8, 0, 0, 0), 1 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 8, 8, 5 * MS, 0, 0), 6 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 16, 8, 6 * MS, 0, 0), 7 * MS);
	rm(m);
}

/* What the virtual disk charges for a read of @n at @sector. */
static u64 charge(struct vd_vdisk *v, const struct vd_model *m, u64 sector, u32 n)
{
	u64 busy = v->busy_ns;

	vd_vdisk_submit(v, m, VD_READ, sector, n, 0, 0, 0);
	return v->busy_ns - busy;
}

CTEST(vdisk_distance_from_nearest_of_last_4_ends)
{
	struct vd_model *m = mk(CAP_400G, 4, 4096);
	const u64 back = m->fwd_cols - 1;	/* backward column c is back + c */
	struct vd_vdisk v;
	u32 c;

	/* Column c costs (c + 1) * 100 us. */
	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, c, 1, (c + 1) * 100000ULL), 0);
	vd_vdisk_init(&v);
	/* Head starts at 0: distance 0. */
	CHECK_EQ(charge(&v, m, 0, 8), 100000);
	/* From end 8: +992 sectors, column 7. */
	CHECK_EQ(charge(&v, m, 1000, 8), 800000);
	/* From end 8, the nearer of 8 and 1008: +8, column 1. */
	CHECK_EQ(charge(&v, m, 16, 8), 200000);
	/* Back 8 from end 1008: backward column 1. */
	CHECK_EQ(charge(&v, m, 1000, 8), (back + 1 + 1) * 100000);
	/* From end 1008 to 4 GiB: column 21.  End 8 is the oldest of 5: dropped. */
	CHECK_EQ(charge(&v, m, 4 * CAP_1G, 8), (21 + 1) * 100000);
	CHECK_EQ(v.seek.nr, 4);
	/* So sector 8 is 16 back from end 24, not 0 from end 8: backward column 2. */
	CHECK_EQ(charge(&v, m, 8, 8), (back + 2 + 1) * 100000);
	CHECK_EQ(v.requests, 6);
	rm(m);
}

/*
 * A model whose read column c costs (c + 1) * 100 us, and a drive cache of
 * 2 segments of 64 sectors reading 32 ahead at 1 sector a microsecond
 * (512 MB/s).
 */
static struct vd_model *mk_dcache(void)
{
	const struct vd_dcache dc = {
		.nr_segs = 2, .seg_sectors = 64, .ra_sectors = 32, .media_mbps = 512,
	};
	struct vd_model *m = mk(CAP_400G, 4, 4096);
	u32 c;

	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, c, 1, (c + 1) * 100000ULL), 0);
	CHECK_EQ(vd_model_set_dcache(m, &dc), 0);
	return m;
}

/* The price of the column of @distance in mk_dcache()'s model. */
static u64 col_price(const struct vd_model *m, s64 distance)
{
	return (vd_model_col(m, distance) + 1) * 100000ULL;
}

/* What the virtual disk charges for a read of 8 at @sector arriving at @now. */
static u64 charge_at(struct vd_vdisk *v, const struct vd_model *m, u64 sector, u64 now)
{
	u64 busy = v->busy_ns;

	vd_vdisk_submit(v, m, VD_READ, sector, 8, now, 0, 0);
	return v->busy_ns - busy;
}

CTEST(model_dcache_is_checked_and_off_after_init)
{
	struct vd_model *m = mk(CAP_400G, 4, 4096);
	struct vd_dcache dc = { .nr_segs = VD_DCACHE_MAX_SEGS + 1, .seg_sectors = 64,
				.media_mbps = 100 };

	CHECK_EQ(m->dc.nr_segs, 0);
	CHECK_EQ(vd_model_set_dcache(m, &dc), -1);
	dc.nr_segs = 4;
	dc.seg_sectors = 0;
	CHECK_EQ(vd_model_set_dcache(m, &dc), -1);
	dc.seg_sectors = 64;
	dc.media_mbps = 0;
	CHECK_EQ(vd_model_set_dcache(m, &dc), -1);
	CHECK_EQ(m->dc.nr_segs, 0);	/* nothing changed */
	dc.media_mbps = 100;
	CHECK_EQ(vd_model_set_dcache(m, &dc), 0);
	CHECK_EQ(m->dc.nr_segs, 4);
	dc.nr_segs = 0;			/* none: no size or rate needed */
	dc.seg_sectors = 0;
	CHECK_EQ(vd_model_set_dcache(m, &dc), 0);
	CHECK_EQ(m->dc.nr_segs, 0);
	rm(m);
}

/*
 * One reader with think time between reads: the drive reads ahead while
 * idle, so a short skip forward is served from its cache (column 0), and
 * a request past the read-ahead is a seek from where it stopped.
 */
CTEST(vdisk_dcache_serves_a_single_stream_from_its_read_ahead)
{
	struct vd_model *m = mk_dcache();
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	/* 0+8 at 0: the head is at 0, column 0; done at 100 us */
	CHECK_EQ(charge_at(&v, m, 0, 0), 100000);
	CHECK_EQ(v.distance, 0);
	/* 16+8 at 200 us: read ahead to 40 while idle, a hit */
	CHECK_EQ(charge_at(&v, m, 16, 200000), 100000);
	CHECK_EQ(v.distance, 0);
	/* 48+8 at 300 us: the read-ahead had gone on to 24 + 32 = 56 */
	CHECK_EQ(charge_at(&v, m, 48, 300000), 100000);
	CHECK_EQ(v.distance, 0);
	/* 200+8 at 600 us: past the read-ahead (56 + 32), a seek from 88 */
	CHECK_EQ(charge_at(&v, m, 200, 600000), col_price(m, 200 - 88));
	CHECK_EQ(v.distance, 200 - 88);
	/* the old rule took the distance from the last request's end */
	CHECK_EQ(v.seek.nr, 0);
	rm(m);
}

/*
 * Two readers whose requests queue behind each other: the drive never
 * idles, a read-ahead is stopped as soon as it starts, and a reader's next
 * read 8 sectors on is a seek back from the other reader's request, not
 * the short skip the nearest request end would make it.
 */
CTEST(vdisk_dcache_interleaved_streams_seek_between_them)
{
	struct vd_model *m = mk_dcache();
	const u64 b = 1000000;
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	CHECK_EQ(charge_at(&v, m, 0, 0), 100000);
	CHECK_EQ(charge_at(&v, m, b, 0), col_price(m, b - 8));
	CHECK_EQ(v.distance, b - 8);
	/* A's segment holds 0..8 only: 16 is a seek back from b + 8 */
	CHECK_EQ(charge_at(&v, m, 16, 0), col_price(m, 16 - (s64)(b + 8)));
	CHECK_EQ(v.distance, 16 - (s64)(b + 8));
	/* B's holds b..b+8: b + 16 is a seek from 24 */
	CHECK_EQ(charge_at(&v, m, b + 16, 0), col_price(m, b + 16 - 24));
	CHECK_EQ(v.distance, b + 16 - 24);
	rm(m);
}

/*
 * What a stopped read-ahead brought in stays in its segment: a later read
 * inside it is a hit, one past it a seek; the least recently used segment
 * goes first, and a write drops the segments it overlaps.
 */
CTEST(vdisk_dcache_keeps_segments_lru_and_writes_drop_them)
{
	struct vd_model *m = mk_dcache();
	const u64 b = 1000000, c = 2000000;
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	CHECK_EQ(charge_at(&v, m, 0, 0), 100000);	/* done at 100 us */
	/* B at 130 us: A's read-ahead got to 8 + 30 = 38 */
	CHECK_EQ(charge_at(&v, m, b, 130000), col_price(m, b - 38));
	CHECK_EQ(v.distance, b - 38);
	/* 16+8 ends within 38: from A's segment (B's read-ahead goes on) */
	CHECK_EQ(charge_at(&v, m, 16, 0), 100000);
	CHECK_EQ(v.distance, 0);
	/*
	 * 36+8 ends past 38: a seek.  The hit did not stop B's read-ahead,
	 * which went on for its 100 us, to b + 8 + 32: the head is there.
	 */
	CHECK_EQ(charge_at(&v, m, 36, 0), col_price(m, 36 - (s64)(b + 40)));
	CHECK_EQ(v.distance, 36 - (s64)(b + 40));
	/* a third segment (C) takes the least recently used one's place: B's */
	CHECK_EQ(charge_at(&v, m, c, 0), col_price(m, c - 44));
	CHECK_EQ(v.distance, c - 44);
	CHECK_EQ(charge_at(&v, m, b, 0), col_price(m, b - (s64)(c + 8)));
	CHECK_EQ(v.distance, b - (s64)(c + 8));
	/* a write over C's segment drops it; the head goes to its end */
	vd_vdisk_submit(&v, m, VD_WRITE, c, 8, 0, 0, 0);
	CHECK_EQ(v.distance, c - (s64)(b + 8));
	CHECK_EQ(charge_at(&v, m, c, 0), col_price(m, -8));
	CHECK_EQ(v.distance, -8);
	rm(m);
}

CTEST(seek_distance_nearest_end_newer_on_a_tie)
{
	struct vd_seek sk;

	vd_seek_init(&sk);
	CHECK_EQ(vd_seek_distance(&sk, 0), 0);
	CHECK_EQ(vd_seek_distance(&sk, 5000), 5000);
	vd_seek_note(&sk, 100);
	CHECK_EQ(vd_seek_distance(&sk, 5000), 4900);
	CHECK_EQ(vd_seek_distance(&sk, 0), -100);
	vd_seek_note(&sk, 300);
	/* 200 is 100 past end 100 and 100 before end 300: the newer, 300. */
	CHECK_EQ(vd_seek_distance(&sk, 200), -100);
	vd_seek_note(&sk, 100);
	CHECK_EQ(vd_seek_distance(&sk, 200), 100);
	vd_seek_note(&sk, 1000);
	vd_seek_note(&sk, 2000);
	/* Ends 300, 100, 1000, 2000: the first 100 left, the second stays. */
	CHECK_EQ(sk.nr, 4);
	CHECK_EQ(vd_seek_distance(&sk, 90), -10);
	vd_seek_note(&sk, 5000);
	vd_seek_note(&sk, 6000);
	/* Ends 1000, 2000, 5000, 6000. */
	CHECK_EQ(vd_seek_distance(&sk, 90), -910);
	CHECK_EQ(vd_seek_distance(&sk, 1 + (1ULL << 40)), (s64)(1ULL << 40) - 5999);
}

CTEST(vdisk_busy_ns_sums_service_times)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;

	CHECK_EQ(vd_model_set_cell(m, VD_WRITE, 1, 0, 4, 4 * 3 * MS), 0);
	vd_vdisk_init(&v);
	vd_vdisk_submit(&v, m, VD_READ, 0, 8, 0, 0, 0);
	vd_vdisk_submit(&v, m, VD_READ, 1000, 8, 0, 0, 0);
	vd_vdisk_submit(&v, m, VD_READ, 2000, 8, 100 * MS, 0, 0);
	vd_vdisk_submit(&v, m, VD_WRITE, 2008, 16, 100 * MS, 0, 0);
	CHECK_EQ(v.busy_ns, 3 * MS + 3 * MS);
	CHECK_EQ(v.busy_until, 100 * MS + 4 * MS);
	CHECK_EQ(v.requests, 4);
	CHECK_EQ(v.unestimated, 0);
	rm(m);
}

CTEST(vdisk_unpriced_request_counts_and_costs_zero)
{
	struct vd_model *m = mk(CAP_1G, 4, 1024);
	struct vd_vdisk v;

	vd_vdisk_init(&v);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 100, 8, 5 * MS, 0, 0), 5 * MS);
	CHECK_EQ(v.unestimated, 1);
	CHECK_EQ(v.busy_ns, 0);
	CHECK_EQ(v.requests, 1);
	CHECK_EQ(v.seek.nr, 1);
	CHECK_EQ(v.seek.end[0], 108);
	/* A read-only model cannot price writes either. */
	vd_model_add(m, VD_READ, 0, 8, MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_WRITE, 0, 8, 6 * MS, 0, 0), 6 * MS);
	CHECK_EQ(vd_vdisk_submit(&v, m, VD_READ, 8, 8, 6 * MS, 0, 0), 7 * MS);
	CHECK_EQ(v.unestimated, 2);
	CHECK_EQ(v.busy_ns, MS);
	rm(m);
}

CTEST(vdisk_does_not_change_model)
{
	struct vd_model *m = mk_flat(MS);
	struct vd_vdisk v;
	u64 sum;
	u32 n;

	vd_vdisk_init(&v);
	vd_vdisk_submit(&v, m, VD_READ, 0, 8, 0, 0, 0);
	vd_vdisk_submit(&v, m, VD_READ, 77777, 8, 0, 0, 0);
	CHECK_EQ(m->samples[VD_READ], 0);
	cell(m, VD_READ, 0, 0, &n, &sum);
	CHECK_EQ(n, 64);
	CHECK_EQ(sum, 64 * MS);
	rm(m);
}

/*
 * The estimate of an empty cell of a forward column as it was computed
 * before the column index.
 */
static bool ref_estimate(const struct vd_model *m, enum vd_dir dir, u64 distance,
			 u32 sectors, u64 *ns)
{
	u32 row = vd_model_row(m, sectors), col = vd_model_col(m, distance), d, n;
	bool found = false;
	u64 sum;

	for (d = 0; d < m->fwd_cols && !found; d++) {
		u32 cand[2] = { col - d, col + d };
		int k;

		for (k = 0; k < 2 && !found; k++) {
			if ((k == 0 && d > col) || (k == 1 && col + d >= m->fwd_cols))
				continue;
			if (m->t[dir].col_filled[cand[k]]) {
				*ns = m->t[dir].col_mean_sum[cand[k]] / m->t[dir].col_filled[cand[k]];
				found = true;
			}
		}
	}
	CHECK_EQ(vd_model_get_cell(m, dir, row, col, &n, &sum), 0);
	CHECK_EQ(n, 0);
	return found;
}

/*
 * Issue 13, defect 4: an empty cell is priced from the nearest filled
 * column found through the column bitmaps, exactly as the old walk of the
 * columns found it (ties to the lower one), on a 64 TiB model (65,555
 * columns) whose columns fill and empty at random.
 */
CTEST(estimate_of_empty_cell_uses_nearest_filled_column_as_the_walk_did)
{
	struct vd_model *m = mk(1ull << 37, 4, 64);
	u64 ns, want;
	int i, j;

	CHECK(m->cols > 65000);
	CHECK(!vd_model_estimate(m, VD_READ, 12345, 8, &ns));
	for (i = 0; i < 4000; i++) {
		u32 col = ctest_rand64() % m->fwd_cols;
		u32 row = 1 + ctest_rand64() % 3;	/* row 0 stays empty */
		u32 n = (i % 3) ? 1 + ctest_rand64() % 64 : 0;

		CHECK_EQ(vd_model_set_cell(m, VD_READ, row, col, n, n * (1000 + col)), 0);
		for (j = 0; j < 4; j++) {
			u64 col2 = ctest_rand64() % m->fwd_cols;
			u64 dist = col2 < 19 ? (col2 ? 8ull << (col2 - 1) : 0) :
					       (col2 - 18) << 21;
			bool got = vd_model_estimate(m, VD_READ, dist, 8, &ns);

			CHECK_EQ(got, ref_estimate(m, VD_READ, dist, 8, &want));
			if (got)
				CHECK_EQ(ns, want);
		}
	}
	/* Column 0 and the last forward column, alone. */
	for (i = 0; i < (int)m->fwd_cols; i++) {
		if (!m->t[VD_READ].col_filled[i])
			continue;
		for (j = 1; j < 4; j++)
			CHECK_EQ(vd_model_set_cell(m, VD_READ, j, i, 0, 0), 0);
	}
	CHECK(!vd_model_estimate(m, VD_READ, 0, 8, &ns));
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, m->fwd_cols - 1, 1, 777), 0);
	CHECK(vd_model_estimate(m, VD_READ, 0, 8, &ns));
	CHECK_EQ(ns, 777);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, 0, 1, 555), 0);
	CHECK(vd_model_estimate(m, VD_READ, 1ull << 40, 8, &ns));
	CHECK_EQ(ns, 777);
	CHECK(vd_model_estimate(m, VD_READ, 8, 8, &ns));
	CHECK_EQ(ns, 555);
	rm(m);
}

/*
 * An empty cell next to a filled one of its own row answers with that
 * cell: a request of the same size, its seek a class shorter or longer.
 * The column's mean, over every size, priced a 4 KiB read on a network
 * device (1 ms and its transfer, whatever the distance) as the column's
 * mix of 4 to 256 KiB reads: twice its time.  Past the neighbours, the
 * column's mean still answers: a long seek costs what the column says.
 */
CTEST(empty_cell_answers_with_its_rows_neighbour)
{
	struct vd_model *m = mk(CAP_400G, 64, 64);
	u32 back1 = m->fwd_cols;	/* backward twin of column 1 */
	u64 ns;

	/* Row 0 (4 KiB) at columns 0 and 2; row 63 (256 KiB) at column 1. */
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 0, 1, 1000000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, 2, 1, 1100000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 63, 1, 1, 3000000), 0);
	/* Column 1 (4 KiB skips): the shorter neighbour, not column 1's 3 ms. */
	CHECK(vd_model_estimate(m, VD_READ, 8, 8, &ns));
	CHECK_EQ(ns, 1000000);
	/* Column 3: column 2, its only filled neighbour. */
	CHECK(vd_model_estimate(m, VD_READ, 32, 8, &ns));
	CHECK_EQ(ns, 1100000);
	/* Column 4 has no filled neighbour in row 0: the nearest column's mean. */
	CHECK(vd_model_estimate(m, VD_READ, 64, 8, &ns));
	CHECK_EQ(ns, 1100000);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 63, 4, 1, 9000000), 0);
	CHECK(vd_model_estimate(m, VD_READ, 64, 8, &ns));
	CHECK_EQ(ns, 9000000);
	/*
	 * Backward: the neighbour within the backward columns, never the last
	 * forward column beside the first backward one (nor the other way).
	 */
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, back1 + 1, 1, 1200000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 63, back1, 1, 5000000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, back1 - 1, 1, 7000000), 0);
	CHECK(vd_model_estimate(m, VD_READ, -8, 8, &ns));
	CHECK_EQ(ns, 1200000);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, back1 - 1, 0, 0), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 63, back1 - 1, 1, 6000000), 0);
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, back1, 1, 4000000), 0);
	CHECK(vd_model_estimate(m, VD_READ, (s64)(m->fwd_cols - 19) << 21, 8, &ns));
	CHECK_EQ(ns, 6000000);	/* the last forward column's mean, not 4 ms */
	CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, back1, 0, 0), 0);
	/* Row 63 at column 0: its neighbour at column 1. */
	CHECK(vd_model_estimate(m, VD_READ, 0, 512, &ns));
	CHECK_EQ(ns, 3000000);
	rm(m);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Portable core of the vdisk latency model: size x distance tables with
 * 64-sample cells, the paper's fallback rules, and the virtual disk.
 */
#include "vd-model.h"

#define VD_MAX_COLS	(VD_POW2_COLS + 1 + (1u << 20))	/* 1 PiB */

u32 vd_model_fwd_cols(u64 capacity)
{
	u64 g;

	if (capacity <= VD_GIB_SECTORS)
		return VD_POW2_COLS + 1;
	g = (capacity - 1) / VD_GIB_SECTORS;
	if (g > VD_MAX_COLS - VD_POW2_COLS - 1)
		g = VD_MAX_COLS - VD_POW2_COLS - 1;
	return VD_POW2_COLS + 1 + (u32)g;
}

u32 vd_model_cols(u64 capacity)
{
	return vd_model_fwd_cols(capacity) + VD_BACK_COLS;
}

static u64 vd_cells(u64 capacity, u32 rows)
{
	return (u64)rows * vd_model_cols(capacity);
}

static u32 vd_pool_rings(u64 capacity, u32 rows, u32 max_rings)
{
	u64 cells = VD_NR_DIRS * vd_cells(capacity, rows);

	return cells < max_rings ? (u32)cells : max_rings;
}

/* 64-bit words of a bitmap of @n bits. */
static u64 vd_words(u64 n)
{
	return (n + 63) / 64;
}

size_t vd_model_mem_size(u64 capacity, u32 rows, u32 max_rings)
{
	u64 cols = vd_model_cols(capacity);

	if (!capacity || !rows || rows > VD_MAX_ROWS)
		return 0;
	return VD_NR_DIRS * (vd_cells(capacity, rows) * sizeof(struct vd_cell) +
			     cols * (sizeof(u64) + sizeof(u32)) +
			     (vd_words(cols) + vd_words(vd_words(cols))) * sizeof(u64)) +
	       (u64)vd_pool_rings(capacity, rows, max_rings) * VD_WINDOW * sizeof(u32);
}

int vd_model_init(struct vd_model *m, void *mem, u64 capacity, u32 rows,
		  u32 max_rings)
{
	u64 cells = vd_cells(capacity, rows);
	char *p = mem;
	int d;

	if (!vd_model_mem_size(capacity, rows, max_rings))
		return -1;
	memset(m, 0, sizeof(*m));
	m->rows = rows;
	m->cols = vd_model_cols(capacity);
	m->fwd_cols = vd_model_fwd_cols(capacity);
	m->capacity = capacity;
	m->nr_rings = vd_pool_rings(capacity, rows, max_rings);
	for (d = 0; d < VD_NR_DIRS; d++) {
		m->t[d].cells = (struct vd_cell *)p;
		p += cells * sizeof(struct vd_cell);
	}
	for (d = 0; d < VD_NR_DIRS; d++) {
		m->t[d].col_mean_sum = (u64 *)p;
		p += m->cols * sizeof(u64);
		m->t[d].col_bits = (u64 *)p;
		p += vd_words(m->cols) * sizeof(u64);
		m->t[d].col_words = (u64 *)p;
		p += vd_words(vd_words(m->cols)) * sizeof(u64);
	}
	m->rings = (u32 (*)[VD_WINDOW])p;
	p += (size_t)m->nr_rings * VD_WINDOW * sizeof(u32);
	for (d = 0; d < VD_NR_DIRS; d++) {
		m->t[d].col_filled = (u32 *)p;
		p += m->cols * sizeof(u32);
	}
	vd_model_reset(m);
	return 0;
}

void vd_model_reset(struct vd_model *m)
{
	u64 i, cells = (u64)m->rows * m->cols;
	int d;

	for (d = 0; d < VD_NR_DIRS; d++) {
		for (i = 0; i < cells; i++) {
			m->t[d].cells[i].sum = 0;
			m->t[d].cells[i].ring = VD_NO_RING;
			m->t[d].cells[i].n = 0;
			m->t[d].cells[i].head = 0;
		}
		memset(m->t[d].col_mean_sum, 0, m->cols * sizeof(u64));
		memset(m->t[d].col_filled, 0, m->cols * sizeof(u32));
		memset(m->t[d].col_bits, 0, vd_words(m->cols) * sizeof(u64));
		memset(m->t[d].col_words, 0, vd_words(vd_words(m->cols)) * sizeof(u64));
		m->samples[d] = 0;
	}
	m->rings_used = 0;
	m->cells_filled = 0;
	m->overlap_ns = 0;
}

static int vd_fls64(u64 x)
{
	int r = 0;

	while (x >>= 1)
		r++;
	return r;
}

u32 vd_model_col(const struct vd_model *m, s64 distance)
{
	u64 d = distance < 0 ? -(u64)distance : (u64)distance, c;

	if (!d)
		return 0;
	if (d < VD_GIB_SECTORS) {
		c = d < VD_ROW_SECTORS ? 1 : 1 + vd_fls64(d / VD_ROW_SECTORS);
		return distance < 0 ? m->fwd_cols - 1 + (u32)c : (u32)c;
	}
	c = VD_POW2_COLS + d / VD_GIB_SECTORS;
	return c < m->fwd_cols ? (u32)c : m->fwd_cols - 1;
}

u32 vd_model_row(const struct vd_model *m, u32 sectors)
{
	u32 r = sectors ? (sectors - 1) / VD_ROW_SECTORS : 0;

	return r < m->rows ? r : m->rows - 1;
}

static struct vd_cell *vd_cell(const struct vd_model *m, enum vd_dir dir,
			       u32 row, u32 col)
{
	return &m->t[dir].cells[(u64)row * m->cols + col];
}

static u64 vd_cell_mean(const struct vd_cell *c)
{
	return c->n ? rc_div64(c->sum, c->n) : 0;
}

/* Takes a cell's mean out of its column's summary before a change. */
/* Lowest set bit of @x (not 0). */
static u32 vd_ffs64(u64 x)
{
	return vd_fls64(x & -x);
}

/* Bits @from..63 of a word, and bits 0..@to. */
static u64 vd_bits_from(u32 from)
{
	return ~0ull << from;
}

static u64 vd_bits_to(u32 to)
{
	return ~0ull >> (63 - to);
}

/* The filled column nearest below or at @col, or -1. */
static s64 vd_prev_filled(const struct vd_table *t, u32 col)
{
	u32 w = col / 64, s;
	u64 x = t->col_bits[w] & vd_bits_to(col % 64);

	if (x)
		return (s64)w * 64 + vd_fls64(x);
	if (!w--)
		return -1;
	s = w / 64;
	x = t->col_words[s] & vd_bits_to(w % 64);
	while (!x) {
		if (!s--)
			return -1;
		x = t->col_words[s];
	}
	w = s * 64 + vd_fls64(x);
	return (s64)w * 64 + vd_fls64(t->col_bits[w]);
}

/* The filled column nearest above or at @col, or -1. */
static s64 vd_next_filled(const struct vd_table *t, u32 cols, u32 col)
{
	u32 w = col / 64, nw = vd_words(cols), s;
	u64 x = t->col_bits[w] & vd_bits_from(col % 64);

	if (x)
		return (s64)w * 64 + vd_ffs64(x);
	if (++w >= nw)
		return -1;
	s = w / 64;
	x = t->col_words[s] & vd_bits_from(w % 64);
	while (!x) {
		if (++s >= vd_words(nw))
			return -1;
		x = t->col_words[s];
	}
	w = s * 64 + vd_ffs64(x);
	return (s64)w * 64 + vd_ffs64(t->col_bits[w]);
}

static void vd_col_remove(struct vd_model *m, enum vd_dir dir, u32 col,
			  const struct vd_cell *c)
{
	struct vd_table *t = &m->t[dir];

	if (!c->n)
		return;
	t->col_mean_sum[col] -= vd_cell_mean(c);
	m->cells_filled--;
	if (--t->col_filled[col])
		return;
	t->col_bits[col / 64] &= ~(1ull << (col % 64));
	if (!t->col_bits[col / 64])
		t->col_words[col / 4096] &= ~(1ull << (col / 64 % 64));
}

static void vd_col_insert(struct vd_model *m, enum vd_dir dir, u32 col,
			  const struct vd_cell *c)
{
	struct vd_table *t = &m->t[dir];

	if (!c->n)
		return;
	t->col_mean_sum[col] += vd_cell_mean(c);
	m->cells_filled++;
	if (t->col_filled[col]++)
		return;
	t->col_bits[col / 64] |= 1ull << (col % 64);
	t->col_words[col / 4096] |= 1ull << (col / 64 % 64);
}

static void vd_cell_get_ring(struct vd_model *m, struct vd_cell *c)
{
	if (c->ring == VD_NO_RING && m->rings_used < m->nr_rings)
		c->ring = m->rings_used++;
}

/* Largest request size, in sectors, the last row stands for. */
static u64 vd_last_row_sectors(const struct vd_model *m)
{
	return (u64)m->rows * VD_ROW_SECTORS;
}

/*
 * The transfer time of @sectors beyond the last row's size, from column 0
 * (sequential requests: transfer and a fixed cost): what the last row's
 * time exceeds the first's by, per sector.  False when either cell is
 * empty or the slope is not positive.
 */
static bool vd_beyond_last(const struct vd_model *m, enum vd_dir dir, u64 sectors,
			   u64 *ns)
{
	const struct vd_cell *lo = vd_cell(m, dir, 0, 0), *hi = vd_cell(m, dir, m->rows - 1, 0);
	u64 a, b;

	if (m->rows < 2 || !lo->n || !hi->n)
		return false;
	a = vd_cell_mean(lo);
	b = vd_cell_mean(hi);
	if (b <= a)
		return false;
	/* b - a < 2^32 and sectors < 2^32: the product fits */
	*ns = rc_div64((b - a) * sectors, (u64)(m->rows - 1) * VD_ROW_SECTORS);
	return true;
}

void vd_model_add(struct vd_model *m, enum vd_dir dir, s64 distance,
		  u32 sectors, u64 ns)
{
	u32 row = vd_model_row(m, sectors), col = vd_model_col(m, distance);
	struct vd_cell *c = vd_cell(m, dir, row, col);
	u64 last = vd_last_row_sectors(m);
	u32 x;

	/*
	 * To the last row's size: less the transfer of the sectors beyond it
	 * (vd_beyond_last()), else scaled; a product that overflows saturates.
	 */
	if (sectors > last) {
		u64 extra;

		if (vd_beyond_last(m, dir, sectors - last, &extra) && ns > extra)
			ns -= extra;
		else
			ns = ns > rc_div64(~0ULL, last) ? VD_MAX_SAMPLE_NS :
			     rc_div64(ns * last, sectors);
	}
	x = ns > VD_MAX_SAMPLE_NS ? VD_MAX_SAMPLE_NS : (u32)ns;

	vd_col_remove(m, dir, col, c);
	vd_cell_get_ring(m, c);
	if (c->ring != VD_NO_RING) {
		u32 *ring = m->rings[c->ring];

		if (c->n == VD_WINDOW)
			c->sum -= ring[c->head];
		else
			c->n++;
		ring[c->head] = x;
		c->head = (c->head + 1) % VD_WINDOW;
	} else if (c->n == VD_WINDOW) {
		c->sum -= c->sum / VD_WINDOW;
	} else {
		c->n++;
	}
	c->sum += x;
	vd_col_insert(m, dir, col, c);
	m->samples[dir]++;
}

static bool vd_col_mean(const struct vd_model *m, enum vd_dir dir, u32 col,
			u64 *ns)
{
	u32 filled = m->t[dir].col_filled[col];

	if (!filled)
		return false;
	*ns = rc_div64(m->t[dir].col_mean_sum[col], filled);
	return true;
}

/*
 * The mean of the filled column nearest @col among columns @first..@end - 1
 * (the lower one on a tie).
 */
static bool vd_nearest_mean(const struct vd_model *m, enum vd_dir dir, u32 col,
			    u32 first, u32 end, u64 *ns)
{
	s64 lo = vd_prev_filled(&m->t[dir], col);
	s64 hi = vd_next_filled(&m->t[dir], m->cols, col);

	if (lo < first)
		lo = -1;
	if (hi >= end)
		hi = -1;
	if (lo >= 0 && (hi < 0 || col - lo <= hi - col))
		return vd_col_mean(m, dir, (u32)lo, ns);
	return hi >= 0 && vd_col_mean(m, dir, (u32)hi, ns);
}

/*
 * The filled cell of @row next to @col (the shorter distance first) among
 * columns @first..@end - 1, or NULL: a request of the same size, its seek
 * a class shorter or longer.
 */
static const struct vd_cell *vd_row_neighbour(const struct vd_model *m, enum vd_dir dir,
					      u32 row, u32 col, u32 first, u32 end)
{
	const struct vd_cell *c;

	if (col > first) {
		c = vd_cell(m, dir, row, col - 1);
		if (c->n)
			return c;
	}
	if (col + 1 < end) {
		c = vd_cell(m, dir, row, col + 1);
		if (c->n)
			return c;
	}
	return NULL;
}

bool vd_model_estimate(const struct vd_model *m, enum vd_dir dir,
		       s64 distance, u32 sectors, u64 *ns)
{
	u32 row = vd_model_row(m, sectors), col = vd_model_col(m, distance);
	const struct vd_cell *c = vd_cell(m, dir, row, col);
	u64 last = vd_last_row_sectors(m);
	u32 fwd = m->fwd_cols, back;
	const struct vd_cell *nb;
	bool found;

	/* An empty backward column answers as its forward twin would. */
	if (col >= fwd && !m->t[dir].col_filled[col]) {
		col -= fwd - 1;
		c = vd_cell(m, dir, row, col);
	}
	*ns = 0;
	nb = c->n ? c : col < fwd ? vd_row_neighbour(m, dir, row, col, 0, fwd) :
		vd_row_neighbour(m, dir, row, col, fwd, m->cols);
	if (nb) {
		*ns = vd_cell_mean(nb);
		found = true;
	} else if (col >= fwd) {
		found = vd_col_mean(m, dir, col, ns);
	} else {
		/*
		 * The nearest filled forward column; the backward ones, from
		 * the twin of @col, only when no forward column has samples.
		 */
		back = fwd - 1 + (!col ? 1 : col > VD_BACK_COLS ? VD_BACK_COLS : col);
		found = vd_nearest_mean(m, dir, col, 0, fwd, ns) ||
			vd_nearest_mean(m, dir, back, fwd, m->cols, ns);
	}
	if (found && sectors > last) {
		u64 extra;

		if (vd_beyond_last(m, dir, sectors - last, &extra))
			*ns += extra;
		else
			*ns = rc_div64(*ns * sectors, last);
	}
	return found;
}

int vd_model_get_cell(const struct vd_model *m, enum vd_dir dir, u32 row,
		      u32 col, u32 *n, u64 *sum)
{
	const struct vd_cell *c;

	if (dir >= VD_NR_DIRS || row >= m->rows || col >= m->cols)
		return -1;
	c = vd_cell(m, dir, row, col);
	*n = c->n;
	*sum = c->sum;
	return 0;
}

int vd_model_set_cell(struct vd_model *m, enum vd_dir dir, u32 row, u32 col,
		      u32 n, u64 sum)
{
	struct vd_cell *c;
	u64 base, rem;
	u32 i;

	if (dir >= VD_NR_DIRS || row >= m->rows || col >= m->cols ||
	    n > VD_WINDOW || sum > (u64)n * VD_MAX_SAMPLE_NS)
		return -1;
	c = vd_cell(m, dir, row, col);
	vd_col_remove(m, dir, col, c);
	c->n = n;
	c->sum = n ? sum : 0;
	c->head = n % VD_WINDOW;
	if (n)
		vd_cell_get_ring(m, c);
	if (n && c->ring != VD_NO_RING) {
		base = rc_div64(sum, n);
		rem = sum - base * n;
		for (i = 0; i < n; i++)
			m->rings[c->ring][i] = (u32)(base + (i < rem));
	}
	vd_col_insert(m, dir, col, c);
	return 0;
}

s64 vd_seek_distance(const struct vd_seek *s, u64 sector)
{
	s64 best = (s64)sector, d;
	u32 i, k;

	for (i = 0; i < s->nr; i++) {
		/* Newest first, so that a tie keeps the newer end. */
		k = (s->next + VD_SEEK_ENDS - 1 - i) % VD_SEEK_ENDS;
		d = (s64)(sector - s->end[k]);
		if (!i || (d < 0 ? -d : d) < (best < 0 ? -best : best))
			best = d;
	}
	return best;
}

void vd_seek_note(struct vd_seek *s, u64 end)
{
	s->end[s->next] = end;
	s->next = (s->next + 1) % VD_SEEK_ENDS;
	if (s->nr < VD_SEEK_ENDS)
		s->nr++;
}

int vd_dcache_check(const struct vd_dcache *dc)
{
	return dc->nr_segs > VD_DCACHE_MAX_SEGS ||
	       (dc->nr_segs && (!dc->seg_sectors || !dc->media_mbps)) ? -1 : 0;
}

int vd_model_set_dcache(struct vd_model *m, const struct vd_dcache *dc)
{
	if (vd_dcache_check(dc))
		return -1;
	m->dc = *dc;
	return 0;
}

/* Sectors of the read-ahead segment read by time @t. */
static u64 vd_ra_cur(const struct vd_seek *s, const struct vd_dcache *dc,
		     u64 t)
{
	u64 cur = s->ra_base;

	if (t > s->ra_t0)
		cur += rc_div64((t - s->ra_t0) * dc->media_mbps, 512000);
	return cur < s->ra_limit ? cur : s->ra_limit;
}

/* First sector a segment still holds when it ends at @end. */
static u64 vd_dseg_start(const struct vd_dcache *dc, const struct vd_dseg *g,
			 u64 end)
{
	return end - g->start > dc->seg_sectors ? end - dc->seg_sectors :
						  g->start;
}

/* The head is needed elsewhere at @t: the read-ahead stops where it got. */
static void vd_ra_stop(struct vd_seek *s, const struct vd_dcache *dc, u64 t)
{
	struct vd_dseg *g = &s->seg[s->ra];

	if (!s->ra_on)
		return;
	g->end = vd_ra_cur(s, dc, t);
	g->start = vd_dseg_start(dc, g, g->end);
	s->head = g->end;
	s->ra_on = false;
}

/* Segment @i reads ahead from @base up to ra_sectors past @req_end. */
static void vd_ra_start(struct vd_seek *s, const struct vd_dcache *dc, u32 i,
			u64 base, u64 t, u64 req_end)
{
	u64 limit = req_end + dc->ra_sectors;

	if (limit < base)
		limit = base;
	if (s->ra_on && s->ra == i && limit < s->ra_limit)
		limit = s->ra_limit;
	s->ra_on = true;
	s->ra = i;
	s->ra_base = base;
	s->ra_t0 = t;
	s->ra_limit = limit;
}

static u32 vd_dseg_victim(const struct vd_seek *s, const struct vd_dcache *dc)
{
	u32 i, v = 0;

	for (i = 0; i < dc->nr_segs; i++) {
		if (!s->seg[i].valid)
			return i;
		if (s->seg[i].lru < s->seg[v].lru)
			v = i;
	}
	return v;
}

/* A read the cache serves, or the read-ahead brings in: distance 0. */
static bool vd_seek_cached(struct vd_seek *s, const struct vd_dcache *dc,
			   u64 a, u64 b, u64 t)
{
	struct vd_dseg *g;
	u64 cur, first;
	u32 i;

	if (s->ra_on) {
		g = &s->seg[s->ra];
		cur = vd_ra_cur(s, dc, t);
		first = vd_dseg_start(dc, g, cur);
		if (a >= first && a <= (cur > s->ra_limit ? cur : s->ra_limit)) {
			g->start = first;
			g->lru = s->tick;
			if (b <= cur) {
				vd_ra_start(s, dc, s->ra, cur, t, b);
			} else {
				/* it waits for the rest; on from its end */
				vd_ra_start(s, dc, s->ra, b, t, b);
				s->ra_pending = true;
			}
			return true;
		}
	}
	for (i = 0; i < dc->nr_segs; i++) {
		g = &s->seg[i];
		if ((!s->ra_on || i != s->ra) && g->valid && g->start <= a &&
		    b <= g->end) {
			g->lru = s->tick;
			return true;
		}
	}
	return false;
}

s64 vd_seek_begin(struct vd_seek *s, const struct vd_dcache *dc,
		  enum vd_dir dir, u64 sector, u32 sectors, u64 start)
{
	u64 b = sector + sectors;
	struct vd_dseg *g;
	s64 d;
	u32 i;

	s->tick++;
	s->ra_pending = false;
	if (dir == VD_READ && vd_seek_cached(s, dc, sector, b, start))
		return 0;
	vd_ra_stop(s, dc, start);
	d = (s64)(sector - s->head);
	s->head = b;
	if (dir == VD_WRITE) {
		for (i = 0; i < dc->nr_segs; i++) {
			g = &s->seg[i];
			if (g->valid && g->start < b && sector < g->end)
				g->valid = false;
		}
		return d;
	}
	i = vd_dseg_victim(s, dc);
	g = &s->seg[i];
	g->start = sector;
	g->end = b;
	g->lru = s->tick;
	g->valid = true;
	vd_ra_start(s, dc, i, b, start, b);
	s->ra_pending = true;
	return d;
}

void vd_seek_end(struct vd_seek *s, u64 done)
{
	if (s->ra_pending)
		s->ra_t0 = done;
	s->ra_pending = false;
}

int vd_model_set_overlap(struct vd_model *m, u64 ns)
{
	if (ns > VD_MAX_OVERLAP_NS)
		return -1;
	m->overlap_ns = ns;
	return 0;
}

u64 vd_overlap_of(u64 alone_ns, u64 side_ns)
{
	u64 o;

	if (!side_ns || alone_ns * 100 <= side_ns * VD_OVERLAP_MIN_GAIN)
		return 0;
	o = alone_ns - side_ns;
	return o < VD_MAX_OVERLAP_NS ? o : VD_MAX_OVERLAP_NS;
}

/* The slot of @id, or the one of the stream that completed longest ago. */
static struct vd_stream *vd_stream_get(struct vd_vdisk *v, u32 id)
{
	struct vd_stream *st, *old = v->stream;

	for (st = v->stream; st < v->stream + VD_STREAMS; st++) {
		if (st->id == id)
			return st;
		if (st->done < old->done)
			old = st;
	}
	old->id = id;
	old->done = 0;
	return old;
}

/*
 * The rest of @v's last request, from @stream at @sector: priced with it as
 * one request (VD_JOINS); false if it does not continue that request.
 */
static bool vd_vdisk_join(struct vd_vdisk *v, const struct vd_model *m,
			  enum vd_dir dir, u64 sector, u32 sectors, u32 stream)
{
	u64 ns, extra;

	if (!v->requests || v->last_stream != stream || v->last_dir != dir ||
	    v->last_end != sector)
		return false;
	if (!vd_model_estimate(m, dir, v->last_distance, v->last_sectors + sectors, &ns))
		v->unestimated++;
	extra = ns > v->last_ns ? ns - v->last_ns : 0;
	v->serial_until += extra;
	v->busy_until += extra;
	v->busy_ns += extra;
	v->last_end += sectors;
	v->last_sectors += sectors;
	v->last_ns = ns;
	v->distance = 0;
	if (m->dc.nr_segs) {
		/* the drive reads on from where the request's first part ended */
		vd_seek_begin(&v->seek, &m->dc, dir, sector, sectors, v->serial_until);
		vd_seek_end(&v->seek, v->busy_until);
	} else {
		vd_seek_note(&v->seek, sector + sectors);
	}
	vd_stream_get(v, stream)->done = v->busy_until;
	return true;
}

u64 vd_vdisk_submit(struct vd_vdisk *v, const struct vd_model *m,
		    enum vd_dir dir, u64 sector, u32 sectors, u64 now,
		    u32 stream, unsigned int how)
{
	struct vd_stream *st;
	u64 start, from, ns, overlap, done;
	s64 distance;

	if ((how & VD_JOINS) && vd_vdisk_join(v, m, dir, sector, sectors, stream))
		return v->busy_until;
	st = stream ? vd_stream_get(v, stream) : NULL;
	if (st && (how & VD_WAITS) && st->done > now)
		now = st->done;
	start = now > v->serial_until ? now : v->serial_until;
	from = now > v->busy_until ? now : v->busy_until;

	if (m->dc.nr_segs)
		distance = vd_seek_begin(&v->seek, &m->dc, dir, sector,
					 sectors, start);
	else
		distance = vd_seek_distance(&v->seek, sector);
	if (!vd_model_estimate(m, dir, distance, sectors, &ns))
		v->unestimated++;
	overlap = m->overlap_ns < ns ? m->overlap_ns : ns;
	v->serial_until = start + ns - overlap;
	done = v->serial_until + overlap;
	if (done < v->busy_until)
		done = v->busy_until;	/* completions in submission order */
	if (m->dc.nr_segs)
		vd_seek_end(&v->seek, done);
	else
		vd_seek_note(&v->seek, sector + sectors);
	v->distance = distance;
	v->requests++;
	v->busy_ns += done > from ? done - from : 0;
	v->busy_until = done;
	if (st)
		st->done = done;
	v->last_stream = stream;
	v->last_dir = dir;
	v->last_end = sector + sectors;
	v->last_distance = distance;
	v->last_sectors = sectors;
	v->last_ns = ns;
	return done;
}

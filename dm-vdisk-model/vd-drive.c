// SPDX-License-Identifier: GPL-2.0
/*
 * Portable core of the vdisk hard-disk emulator: seek curve, rotation,
 * media and bus rates, and a segmented drive cache that reads ahead.
 */
#include "rc-parse.h"
#include "vd-drive.h"

/*
 * hdd7200: a 7200 rpm SATA drive (seek curve fitted to 1.0 ms track to
 * track, 8.5 ms mean, 14.4 ms full stroke over 100,000 cylinders; 150 MB/s;
 * 8 MiB cache as 16 x 512 KiB reading 256 KiB ahead).  hdd15k: the IBM
 * Ultrastar 36Z15 of the FOR/HDC paper (3.4 ms mean seek, 2 ms mean
 * rotation, 4 MiB cache as 16 x 256 KiB reading 128 KiB ahead).  Read-ahead
 * shorter than a segment keeps what the host just read in the segment.
 *
 * st1: a throughput-optimised cloud HDD volume, AWS EBS st1's published
 * figures for 1 TiB at its burst rate (250 MiB/s; 500 I/Os a second, where
 * sequential requests merge into I/Os of 1 MiB), with 3 ms a request.  nbd:
 * a network block device over gigabit Ethernet, 1 ms a request, 117 MB/s.
 */
const struct vd_drive_profile vd_drive_profiles[] = {
	{ "hdd7200", {
		.rpm = 7200, .cylinders = 100000,
		.seek_alpha_ns = 941000, .seek_beta_ns = 59000,
		.seek_theta = 10000,
		.seek_gamma_ns = 6000000, .seek_delta_ns = 84,
		.media_mbps = 150, .bus_mbps = 300, .overhead_ns = 150000,
		.nr_segs = 16, .seg_sectors = 1024, .ra_sectors = 512,
	} },
	{ "hdd15k", {
		.rpm = 15000, .cylinders = 10400,
		.seek_alpha_ns = 933600, .seek_beta_ns = 36400,
		.seek_theta = 1150,
		.seek_gamma_ns = 1550300, .seek_delta_ns = 540,
		.media_mbps = 50, .bus_mbps = 160, .overhead_ns = 100000,
		.nr_segs = 16, .seg_sectors = 512, .ra_sectors = 256,
	} },
	{ "st1", {
		.media_mbps = 262, .bus_mbps = 262,
		.latency_ns = 3000000, .iops = 500, .io_sectors = 2048,
	} },
	{ "nbd", {
		.media_mbps = 117, .bus_mbps = 117, .latency_ns = 1000000,
	} },
	{ NULL, { 0 } },
};

const struct vd_drive_profile *vd_drive_profile(const char *name)
{
	const struct vd_drive_profile *pr;

	for (pr = vd_drive_profiles; pr->name; pr++)
		if (rc_streq(pr->name, name))
			return pr;
	return NULL;
}

int vd_drive_params_check(const struct vd_drive_params *p)
{
	if (!p->media_mbps || !p->bus_mbps || p->nr_segs > VD_DRIVE_MAX_SEGS ||
	    (p->nr_segs && !p->seg_sectors))
		return -1;
	if (p->rpm ? !p->cylinders : p->nr_segs != 0)
		return -1;
	return 0;
}

static u64 vd_isqrt(u64 x)
{
	u64 r = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

u64 vd_drive_seek_ns(const struct vd_drive_params *p, u64 cyl)
{
	if (!cyl)
		return 0;
	if (cyl <= p->seek_theta)	/* sqrt in 8.8 fixed point */
		return p->seek_alpha_ns +
		       ((p->seek_beta_ns * vd_isqrt(cyl << 16)) >> 8);
	return p->seek_gamma_ns + p->seek_delta_ns * cyl;
}

int vd_drive_init(struct vd_drive *d, const struct vd_drive_params *p,
		  u64 capacity, u64 disk_sectors, u64 seed)
{
	if (vd_drive_params_check(p) || !capacity || !disk_sectors)
		return -1;
	memset(d, 0, sizeof(*d));
	d->p = *p;
	d->capacity = capacity;
	d->disk_sectors = disk_sectors;
	d->seed = seed;
	vd_drive_reset(d);
	return 0;
}

void vd_drive_reset(struct vd_drive *d)
{
	memset(d->seg, 0, sizeof(d->seg));
	memset(&d->st, 0, sizeof(d->st));
	d->rng = d->seed ? d->seed : 0x9e3779b97f4a7c15ULL;
	d->head = 0;
	d->busy_until = 0;
	d->media_end = 0;
	d->io_next = 0;
	d->io_end = 0;
	d->io_left = 0;
	d->tick = 0;
	d->ra = -1;
}

/* xorshift64*: small, deterministic for a seed, good enough for rotation. */
static u64 vd_rand(struct vd_drive *d)
{
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return d->rng * 0x2545f4914f6cdd1dULL;
}

static u64 vd_xfer_ns(u64 sectors, u32 mbps)
{
	return rc_div64(sectors * 512000, mbps);
}

static u64 vd_cyl(const struct vd_drive *d, u64 sector)
{
	return rc_div64(sector * d->p.cylinders, d->capacity);
}

/* Sectors of the read-ahead segment read by time @t. */
static u64 vd_ra_end(const struct vd_drive *d, u64 t)
{
	u64 end = d->ra_base;

	if (t > d->ra_t0)
		end += rc_div64((t - d->ra_t0) * d->p.media_mbps, 512000);
	return end < d->ra_limit ? end : d->ra_limit;
}

/* First sector a segment still holds when it ends at @end. */
static u64 vd_seg_start(const struct vd_drive *d, const struct vd_drive_seg *s,
			u64 end)
{
	if (end - s->start > d->p.seg_sectors)
		return end - d->p.seg_sectors;
	return s->start;
}

/* The head is needed elsewhere at @t: the read-ahead stops where it got. */
static void vd_ra_stop(struct vd_drive *d, u64 t)
{
	struct vd_drive_seg *s;

	if (d->ra < 0)
		return;
	s = &d->seg[d->ra];
	s->end = vd_ra_end(d, t);
	s->start = vd_seg_start(d, s, s->end);
	d->head = s->end;
	d->media_end = t;
	d->ra = -1;
}

/*
 * Segment @i reads ahead from @base (sectors read by time @t) up to
 * ra_sectors past @req_end, the end of the request that started it.
 */
static void vd_ra_start(struct vd_drive *d, int i, u64 base, u64 t,
			u64 req_end)
{
	u64 limit = req_end + d->p.ra_sectors;

	if (limit > d->disk_sectors)
		limit = d->disk_sectors;
	if (limit < base)
		limit = base;
	if (d->ra == i && limit < d->ra_limit)
		limit = d->ra_limit;
	d->ra = i;
	d->ra_base = base;
	d->ra_t0 = t;
	d->ra_limit = limit;
}

/*
 * Head movement, rotation and transfer of a media access starting at @at
 * (ns).  A request that starts where the head stopped goes on at once if
 * it was queued (its command overhead overlapped the last transfer);
 * after an idle gap the sector has passed under the head and comes round
 * again a revolution after the last transfer ended, less the gap.
 */
static u64 vd_media_ns(struct vd_drive *d, u64 sector, u32 sectors, u64 at)
{
	u64 cyl = vd_cyl(d, sector), hcyl = vd_cyl(d, d->head);
	u64 dist = cyl > hcyl ? cyl - hcyl : hcyl - cyl;
	u64 seek = vd_drive_seek_ns(&d->p, dist);
	u64 rev = rc_div64(60ULL * 1000000000ULL, d->p.rpm);
	u64 rot = 0, xfer = vd_xfer_ns(sectors, d->p.media_mbps), r;

	if (sector != d->head) {
		r = vd_rand(d);
		rot = r - rc_div64(r, rev) * rev;
	} else if (at > d->media_end + d->p.overhead_ns) {
		r = at - d->media_end;
		r -= rc_div64(r, rev) * rev;
		rot = r ? rev - r : 0;
	}
	if (dist)
		d->st.seeks++;
	d->st.seek_ns += seek;
	d->st.rotation_ns += rot;
	d->st.transfer_ns += xfer;
	d->head = sector + sectors;
	d->media_end = at + seek + rot + xfer;
	return seek + rot + xfer;
}

static int vd_victim(const struct vd_drive *d)
{
	int i, v = 0;

	for (i = 0; i < (int)d->p.nr_segs; i++) {
		if (!d->seg[i].valid)
			return i;
		if (d->seg[i].lru < d->seg[v].lru)
			v = i;
	}
	return v;
}

/* A read, with the drive cache.  Returns the service time. */
static u64 vd_drive_read(struct vd_drive *d, u64 a, u32 n, u64 s)
{
	u64 b = a + n, t = d->p.overhead_ns, cur, got, first;
	struct vd_drive_seg *sg;
	int i;

	if (d->ra >= 0) {
		sg = &d->seg[d->ra];
		cur = vd_ra_end(d, s);
		first = vd_seg_start(d, sg, cur);
		if (a >= first && a <= (cur > d->ra_limit ? cur : d->ra_limit)) {
			sg->start = first;
			sg->lru = d->tick;
			/* what it has in once the overhead is taken: it reads on meanwhile */
			got = vd_ra_end(d, s + t);
			if (b <= got) {
				d->st.cache_hits++;
				t += vd_xfer_ns(n, d->p.bus_mbps);
				d->st.transfer_ns += vd_xfer_ns(n, d->p.bus_mbps);
				vd_ra_start(d, d->ra, cur, s, b);
			} else {
				d->st.ra_hits++;
				t += vd_xfer_ns(b - got, d->p.media_mbps);
				d->st.transfer_ns += vd_xfer_ns(b - got, d->p.media_mbps);
				vd_ra_start(d, d->ra, b, s + t, b);
			}
			return t;
		}
	}
	for (i = 0; i < (int)d->p.nr_segs; i++) {
		sg = &d->seg[i];
		if (i != d->ra && sg->valid && sg->start <= a && b <= sg->end) {
			sg->lru = d->tick;
			d->st.cache_hits++;
			d->st.transfer_ns += vd_xfer_ns(n, d->p.bus_mbps);
			return t + vd_xfer_ns(n, d->p.bus_mbps);
		}
	}

	vd_ra_stop(d, s);
	t += vd_media_ns(d, a, n, s + t);
	i = vd_victim(d);
	sg = &d->seg[i];
	sg->start = a;
	sg->end = b;
	sg->lru = d->tick;
	sg->valid = true;
	vd_ra_start(d, i, b, s + t, b);
	return t;
}

/* A write, or a read on a drive without cache. */
static u64 vd_drive_media(struct vd_drive *d, enum vd_dir dir, u64 a, u32 n,
			  u64 s)
{
	u64 t;
	u32 i;

	vd_ra_stop(d, s);
	t = d->p.overhead_ns + vd_media_ns(d, a, n, s + d->p.overhead_ns);
	if (dir == VD_WRITE)
		for (i = 0; i < d->p.nr_segs; i++)
			if (d->seg[i].valid && d->seg[i].start < a + n &&
			    a < d->seg[i].end)
				d->seg[i].valid = false;
	return t;
}

/* I/Os a request of a device without platters counts against its iops. */
static u32 vd_flat_ios(struct vd_drive *d, u64 a, u32 n)
{
	u32 unit = d->p.io_sectors, left = a == d->io_end ? d->io_left : 0;
	u32 ios;

	d->io_end = a + n;
	if (!unit) {
		d->io_left = 0;
		return 1;
	}
	if (n <= left) {
		d->io_left = left - n;
		return 0;
	}
	n -= left;
	ios = n / unit + (n % unit != 0);
	d->io_left = ios * unit - n;
	return ios;
}

/*
 * A device without platters: the request starts when an I/O slot is free,
 * then its transfer waits for the throughput bucket; it completes one
 * latency after its transfer.  Both clocks only grow, so do completions.
 */
static u64 vd_flat_submit(struct vd_drive *d, u64 a, u32 n, u64 now,
			  u64 *service)
{
	u64 xfer = vd_xfer_ns(n, d->p.media_mbps), t = now, done;
	u32 ios = vd_flat_ios(d, a, n);

	if (d->p.iops && ios) {
		if (t < d->io_next)
			t = d->io_next;
		d->io_next = t + rc_div64(ios * 1000000000ULL, d->p.iops);
	}
	if (t < d->media_end)
		t = d->media_end;
	d->media_end = t + xfer;
	done = d->media_end + d->p.latency_ns;
	/*
	 * What a request adds to the device's time, as the vdisk glue measures
	 * a real device's: from its arrival or the previous completion,
	 * whichever is later.  Behind others in flight, its latency is theirs.
	 */
	*service = done - (now > d->busy_until ? now : d->busy_until);
	d->st.requests++;
	d->st.transfer_ns += xfer;
	/* So busy while anything is in flight: the union of the spans. */
	d->st.busy_ns += *service;
	d->busy_until = done;
	return done;
}

u64 vd_drive_submit(struct vd_drive *d, enum vd_dir dir, u64 sector,
		    u32 sectors, u64 now, u64 *service)
{
	u64 s, t;

	if (!d->p.rpm)
		return vd_flat_submit(d, sector, sectors, now, service);
	s = now > d->busy_until ? now : d->busy_until;
	d->tick++;
	if (dir == VD_READ && d->p.nr_segs)
		t = vd_drive_read(d, sector, sectors, s);
	else
		t = vd_drive_media(d, dir, sector, sectors, s);
	d->st.requests++;
	d->st.busy_ns += t;
	d->busy_until = s + t;
	*service = t;
	return d->busy_until;
}

#ifndef __KERNEL__	/* the simulator's (redcapctl simulate --save-model), not the module's */

/* Busy time per read of VD_OVERLAP_READS random 4 KiB reads, @depth in flight. */
static u64 vd_overlap_phase(struct vd_drive *d, u64 disk_sectors, u32 depth, u64 *rng)
{
	u64 done[VD_OVERLAP_DEPTH] = { 0 }, busy = 0, service, sector;
	u32 k;

	for (k = 0; k < VD_OVERLAP_READS; k++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		sector = *rng >> 1;
		sector = (sector - rc_div64(sector, disk_sectors / 8) * (disk_sectors / 8)) * 8;
		/* Closed loop: a read goes out when the one @depth before it is done. */
		done[k % depth] = vd_drive_submit(d, VD_READ, sector, 8, done[k % depth],
						  &service);
		busy += service;
	}
	return rc_div64(busy, VD_OVERLAP_READS);
}

u64 vd_drive_overlap(struct vd_drive *d, const struct vd_drive_params *p, u64 capacity,
		     u64 disk_sectors)
{
	u64 rng = 0x9e3779b97f4a7c15ULL, alone, side;

	if (disk_sectors < 8 || vd_drive_init(d, p, capacity, disk_sectors, 1))
		return 0;
	alone = vd_overlap_phase(d, disk_sectors, 1, &rng);
	vd_drive_reset(d);
	side = vd_overlap_phase(d, disk_sectors, VD_OVERLAP_DEPTH, &rng);
	return vd_overlap_of(alone, side);
}
#endif

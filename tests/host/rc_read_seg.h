/* SPDX-License-Identifier: GPL-2.0 */
/* The core tests' read: one read of the whole segment @seg. */
#ifndef RC_READ_SEG_H
#define RC_READ_SEG_H

#include "rc-core.h"

/* The last read's state (rc_read()), as rc_map_read() keeps it on its stack. */
static struct rc_read_state rs;

/*
 * rc_read() of @sectors at @sector, and the planner's batch after it (no
 * pair: rc_map_read()'s tests have those), left in rs for rc_prefetch().
 */
static inline enum rc_read_action read_plan(struct rc_cache *c, u64 sector, u32 sectors,
					    u32 *idx)
{
	enum rc_read_action act = rc_read(c, &rs, sector, sectors, idx);

	rc_plan(c, &rs, sector >> c->seg_shift, false, ~0ULL);
	return act;
}

/* The sectors of @segs whole segments (a range's start or length). */
static inline u64 secs(const struct rc_cache *c, u64 segs)
{
	return segs << c->seg_shift;
}

static inline enum rc_read_action read_seg(struct rc_cache *c, u64 seg, u32 *idx)
{
	return read_plan(c, seg << c->seg_shift, 1u << c->seg_shift, idx);
}

#endif

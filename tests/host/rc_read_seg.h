/* SPDX-License-Identifier: GPL-2.0 */
/* The core tests' read: one read of the whole segment @seg. */
#ifndef RC_READ_SEG_H
#define RC_READ_SEG_H

#include "rc-core.h"

/* The last read's state (rc_read()), as rc_map_read() keeps it on its stack. */
static struct rc_read_state rs;

static inline enum rc_read_action read_seg(struct rc_cache *c, u64 seg, u32 *idx)
{
	return rc_read(c, &rs, seg << c->seg_shift, 1u << c->seg_shift, idx);
}

#endif

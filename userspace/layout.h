/* SPDX-License-Identifier: GPL-2.0 */
/*
 * FOR's layout on the userspace side (layout.c): files' extents made into
 * runs of units of the stack, and the runs into layout_runs messages.
 */
#ifndef REDCAP_LAYOUT_H
#define REDCAP_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAYOUT_UNIT_MIN		4096u		/* bytes */
#define LAYOUT_UNIT_MAX		(1u << 20)
#define LAYOUT_UNIT_DEFAULT	4096u
#define LAYOUT_MSG_MAX		16384		/* bytes of text in one message */
#define LAYOUT_WORD_MAX		34		/* "+ffffffffffffffff:ffffffffffffffff" */

/* A file's run of units of the stack: [start, start + len). */
struct layout_run {
	uint64_t start, len;
};

/* A growing array of runs. */
struct layout_runs {
	struct layout_run *r;
	size_t nr, alloc;
};

/* One extent as FIEMAP gives it: bytes, and FIEMAP_EXTENT_* flags. */
struct layout_extent {
	uint64_t logical, physical, length;
	uint32_t flags;
};

/*
 * Where a filesystem's device lies on the stack, in bytes: its bytes
 * [from, from + len) are the stack's [to, to + len).  A map is an array of
 * segments sorted by @from, not overlapping; bytes outside every segment
 * are nowhere on the stack.
 */
struct layout_seg {
	uint64_t from, len, to;
};

/* Extents to runs, one file after another (layout_conv_*). */
struct layout_conv {
	unsigned int shift;		/* log2 of the unit in bytes */
	const struct layout_seg *map;
	size_t map_nr;
	struct layout_runs *out;
	bool open;			/* a run is being extended */
	uint64_t log_end;		/* the open run: where it ends in the file, */
	uint64_t phys_start, phys_end;	/* and where it lies on the stack (bytes) */
	uint64_t extents, skipped;	/* extents seen; of them, skipped for their flags */
};

/*
 * Why @unit (bytes) cannot be a layout's unit (a power of two from 4K to
 * 1M), or NULL.  Does not block.
 */
const char *layout_unit_check(uint64_t unit);

/* Appends [start, start + len) to @rs.  0, or -1 when out of memory. */
int layout_runs_push(struct layout_runs *rs, uint64_t start, uint64_t len);
void layout_runs_free(struct layout_runs *rs);

/*
 * Starts converting into @out, in units of 1 << @shift bytes, with the
 * filesystem's device at @map (@map_nr segments; see struct layout_seg)
 * on the stack.  @map must outlive the conversion.
 */
void layout_conv_init(struct layout_conv *c, unsigned int shift, const struct layout_seg *map,
		      size_t map_nr, struct layout_runs *out);

/*
 * The next extent of the current file, in file order (FIEMAP's batches
 * one after the other).  Extents flagged DELALLOC, UNKNOWN, ENCODED,
 * NOT_ALIGNED, DATA_INLINE or DATA_TAIL are skipped: they have no place of
 * their own on the device.  An UNWRITTEN extent is a run of its own;
 * others extend the open run when they follow it both in the file and on
 * the stack.  A run covers the units from the one its first byte is in
 * to the one its last byte is in.  0, or -1 when out of memory.
 */
int layout_conv_add(struct layout_conv *c, const struct layout_extent *e);

/* The end of the current file: its open run is closed.  0, or -1 (memory). */
int layout_conv_end(struct layout_conv *c);

/*
 * Sorts @r by start, then length, and drops runs identical to the one
 * before.  Returns how many remain (at the front of @r).
 */
size_t layout_sort_dedupe(struct layout_run *r, size_t nr);

/*
 * One layout_runs message of at most @max bytes of text into @buf (which
 * has room for @max + 1), from run *@pos of the sorted @r on; *@pos moves
 * past the runs it holds.  Each word is START:LEN in lower-case hex, or
 * +GAP:LEN for a run that starts GAP units after the end of the word
 * before; the first word of a message, and a run that starts before the
 * end of the one before, are written START:LEN.  Returns the message's
 * length, or 0 if not even one run fits in @max.
 */
size_t layout_format(const struct layout_run *r, size_t nr, size_t *pos, char *buf,
		     size_t max);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * redcapctl's commands that live in files of their own (hot-cmd.c,
 * simulate.c), and what they take from redcapctl.c.
 */
#ifndef REDCAPCTL_H
#define REDCAPCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmctl.h"

/* redcapctl hot save|load NAME ...: argv[0] is "hot".  The exit status. */
int redcapctl_hot(int argc, char **argv);

/* What a stack with its cache is, for the commands that message it. */
struct redcapctl_cache {
	struct dev dev;			/* NAME */
	dev_t origin;			/* the disk under it (and its model layer) */
	uint64_t sectors;
	uint32_t seg_sectors;
};

/*
 * Stack @name's cache: 0 and *@c; 1, said on standard output, if it is a
 * linear device without cache and @linear_ok; else -1, the error printed.
 */
int redcapctl_cache_get(const char *name, bool linear_ok, struct redcapctl_cache *c);

#endif

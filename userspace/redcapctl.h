/* SPDX-License-Identifier: GPL-2.0 */
/* redcapctl layout (layout-cmd.c), and what it takes from redcapctl.c. */
#ifndef REDCAP_LAYOUT_CMD_H
#define REDCAP_LAYOUT_CMD_H

#include <stdbool.h>
#include <sys/types.h>

/* redcapctl layout NAME ...: argv[0] is "layout".  The exit status. */
int redcapctl_layout(int argc, char **argv);

/*
 * The device of stack @name (redcapctl.c): one of ours (DM UUID
 * REDCAP-NAME), and with @cache one that has its cache, not a linear one.
 * 0 and *@devno, or -1 with the error printed.
 */
int redcapctl_stack_dev(const char *name, bool cache, dev_t *devno);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/* redcapctl simulate (simulate.c): argv[0] is "simulate". */
#ifndef REDCAP_SIMULATE_H
#define REDCAP_SIMULATE_H

int redcapctl_simulate(int argc, char **argv);

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/* redcapctl simulate (simulate.c): argv[0] is "simulate". */
#ifndef REDCAP_SIMULATE_H
#define REDCAP_SIMULATE_H

struct option;

int redcapctl_simulate(int argc, char **argv);

/*
 * redcapctl's parser of a command's options (redcapctl.c): each option
 * through @opt, --help and the errors as for every command; returns the
 * index of the first operand.
 */
int redcapctl_parse_opts(int argc, char **argv, const struct option *longopts,
			 void (*opt)(int c, const char *arg, void *ctx), void *ctx);

#endif

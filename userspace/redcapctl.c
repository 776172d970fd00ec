// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl: the administrator's tool for redcap stacks (redcapctl(8)).
 *
 * A stack is two device-mapper devices: NAME-vd, a vdisk layer over the
 * origin that measures it (hidden from udev's other rules, as lvm2 hides its
 * sub-volumes), and NAME, the redcap cache over it.  Their DM UUIDs are
 * REDCAP-NAME-vd and REDCAP-NAME; that prefix is how redcapctl knows its own
 * devices.  Every device-mapper operation goes through libdevmapper, with
 * udev synchronisation; origins are resolved with libblkid, their users found
 * with libmount and sysfs, modules loaded with libkmod, JSON made by json-c.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmctl.h"
#include "redcapctl.h"
#include "vdisk-tables.h"

/*
 * A command of redcapctl and its command lines, declared as lvm2's
 * command-lines.in declares them: the usage, the help of all commands and
 * of each, the dispatch, and (through the usage) the checks of the man
 * page's synopsis and of the bash completion (tests/host/
 * test_redcapctl_docs.py) all come from this one table.
 */
struct command {
	const char *name;
	/*
	 * Its usage lines after "redcapctl NAME ", at most two (model's verbs
	 * take other options); "\n" continues a line under the first operand.
	 */
	const char *synopsis[2];
	/* The options of each usage line, the ones its handler parses. */
	const struct option *options[2];
	command_fn *fn;
	/* What it does, a line of the help and its continuations after "\n". */
	const char *help;
	/* Or, where the words are the target's (set's keys), what makes them. */
	const char *(*help_fn)(void);
	/* In the help of all commands, said on the line of the command before it. */
	bool joined;
};

/* The help's text starts in this column and ends before the 80th. */
#define HELP_INDENT	15
#define HELP_WIDTH	(79 - HELP_INDENT)

static const char *set_help(void)
{
	return set_keys(HELP_WIDTH);
}

static const char start_stop_help[] =
	"the stacks of " DEFAULT_TAB " (redcaptab(5)): one by name, or\n"
	"--all (start skips noauto entries); start --initramfs: the\n"
	"initramfs entries, each origin waited for";

static const struct command commands[] = {
	{
		.name = "create",
		.synopsis = { "NAME ORIGIN [--ram SIZE] [--segment SIZE] [--policy P]\n"
			      "[--write-policy invalidate|update|back|selective] [--estimator spk|vdisk]\n"
			      "[--no-model] [--readahead auto|SIZE]" },
		.options = { create_options },
		.fn = cmd_create,
		.help = "build a stack over ORIGIN (a /dev path, PARTUUID= or PARTLABEL=);\n"
			"cache 64M of 128K segments, policy adaptive+caware, estimator\n"
			"vdisk (spk with --no-model) by default; read-ahead auto (1M,\n"
			"or the origin's if larger)",
	},
	{
		.name = "remove",
		.synopsis = { "NAME [--keep-device]" },
		.options = { remove_options },
		.fn = cmd_remove,
		.help = "tear it down; --keep-device leaves NAME as a linear device\n"
			"over the origin, so a mounted filesystem stays mounted",
	},
	{
		.name = "list",
		.synopsis = { "[--json]" },
		.options = { list_options },
		.fn = cmd_list,
		.help = "the stacks, one line each",
	},
	{
		.name = "status",
		.synopsis = { "NAME [--json]" },
		.options = { list_options },
		.fn = cmd_status,
		.help = "geometry, policy, state and why, counters, model",
	},
	{
		.name = "stats",
		.synopsis = { "NAME|--all [--format text|json|prometheus] [--json]\n"
			      "[--watch[=SECONDS]] [--out FILE]" },
		.options = { stats_options },
		.fn = cmd_stats,
		.help = "rates per second over one second; --watch redraws them every\n"
			"SECONDS (default 1) until interrupted; --format prometheus:\n"
			"the counters as they are, of NAME or of --all stacks, in\n"
			"Prometheus' text format (--out FILE: written whole, renamed)",
	},
	{
		.name = "set",
		.synopsis = { "NAME KEY=VALUE..." },
		.options = { dmctl_help_only },
		.fn = cmd_set,
		.help_fn = set_help,
	},
	{
		.name = "drop-cache",
		.synopsis = { "NAME" },
		.options = { dmctl_help_only },
		.fn = cmd_drop_cache,
		.help = "empty the cache",
	},
	{
		.name = "reset-stats",
		.synopsis = { "NAME" },
		.options = { dmctl_help_only },
		.fn = cmd_reset_stats,
		.help = "zero the counters",
		.joined = true,
	},
	{
		.name = "model",
		.synopsis = { "save|load NAME [FILE] [--if-present]",
			      "train NAME [--time SECONDS] [--write] [--seed N] [--max-kib K] [--drive-cache]" },
		.options = { if_present_options, vdt_train_options },
		.fn = cmd_model,
		.help = "save, load or train the latency tables of NAME-vd (default FILE:\n"
			MODEL_DIR "/NAME.vdisk)",
	},
	{
		.name = "hot",
		.synopsis = { "save|load NAME [FILE] [--if-present]" },
		.options = { if_present_options },
		.fn = cmd_hot,
		.help = "save HDC's hot set (the segments it pins) or load it back, to\n"
			"be filled while the disk is idle (default FILE:\n"
			MODEL_DIR "/NAME.hot)",
	},
	{
		.name = "start",
		.synopsis = { "NAME|--all|--initramfs [--tab FILE]" },
		.options = { start_options },
		.fn = cmd_start,
		.help = start_stop_help,
	},
	{
		.name = "stop",
		.synopsis = { "NAME|--all [--tab FILE]" },
		.options = { tab_options },
		.fn = cmd_stop,
		.help = start_stop_help,
	},
	{
		.name = "upgrade",
		.synopsis = { "NAME|--all [--tab FILE]" },
		.options = { tab_options },
		.fn = cmd_upgrade,
		.help = "swap the cache in, live, under a stack started linear\n"
			"(on-fail=linear) once the redcap module loads",
	},
	{
		.name = "check",
		.synopsis = { "[--tab FILE] [--fstab FILE]" },
		.options = { check_options },
		.fn = cmd_check,
		.help = "what stands between this host and its stacks",
	},
	{
		.name = "simulate",
		.synopsis = { "--trace FILE [--warm FILE] [--format blkparse|csv] [--disk PROFILE]\n"
			      "[--model FILE] [--save-model FILE] [--no-train] [--drive-cache]\n"
			      "[--capacity SECTORS] [--open-loop] [--issue-times FILE]\n"
			      "--config SPEC... [--shadows] [--json]" },
		.options = { simulate_options },
		.fn = cmd_simulate,
		.help = "replay a block trace through the emulated disk (--disk hdd7200,\n"
			"hdd15k, st1 or nbd) or a saved model (--model), and through redcap\n"
			"configurations (--config bare, or SEGMENTSxSIZE:POLICY[,KEY=VALUE],\n"
			"e.g. 64x128k:adaptive+caware)",
	},
};

#define NR_COMMANDS	(sizeof(commands) / sizeof(commands[0]))

static const char about[] =
	"Build, inspect and tune redcap stacks: a RAM read cache (/dev/mapper/NAME)\n"
	"over a measuring vdisk layer (NAME-vd) over a disk.  Sizes take K, M, G, T.\n";

static const char exit_status[] =
	"Exit status: 0 success, 1 error, 2 usage error.  See redcapctl(8).\n";

/* Whether usage line @syn names the long option @opt ("--tab FILE", "--watch[=S]"). */
static bool names_option(const char *syn, const char *opt, size_t len)
{
	for (const char *p = strstr(syn, "--"); p; p = strstr(p + 2, "--"))
		if (!strncmp(p + 2, opt, len) && !strchr("abcdefghijklmnopqrstuvwxyz-", p[2 + len]))
			return true;
	return false;
}

/*
 * Each usage line names the options its handler parses, and no other
 * (--help aside): the man page and the completion, checked against the
 * usage, are then right about the parser too.  A mistake in the table is
 * the program's: every --help finds it.
 */
static void table_check(void)
{
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		const struct command *c = &commands[i];

		for (int l = 0; l < 2 && c->synopsis[l]; l++) {
			const struct option *o;
			const char *p = c->synopsis[l];

			for (o = c->options[l]; o->name; o++)
				if (strcmp(o->name, "help") &&
				    !names_option(p, o->name, strlen(o->name)))
					die("command table: %s: no --%s in its usage", c->name,
					    o->name);
			for (p = strstr(p, "--"); p; p = strstr(p + 2, "--")) {
				size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");

				for (o = c->options[l]; o->name; o++)
					if (strlen(o->name) == len && !strncmp(o->name, p + 2, len))
						break;
				if (!o->name)
					die("command table: %s: --%.*s is not an option of it",
					    c->name, (int)len, p + 2);
			}
		}
	}
}

/* The usage lines of @c on @f, the first of all after "usage: ". */
static void usage_of(FILE *f, const struct command *c, bool first)
{
	int indent = (int)strlen("usage: redcapctl  ") + (int)strlen(c->name);

	for (int l = 0; l < 2 && c->synopsis[l]; l++, first = false) {
		fprintf(f, "%s redcapctl %s ", first ? "usage:" : "      ", c->name);
		for (const char *p = c->synopsis[l]; *p; p++) {
			fputc(*p, f);
			if (*p == '\n')
				fprintf(f, "%*s", indent, "");
		}
		fputc('\n', f);
	}
}

static void usage(FILE *f)
{
	for (size_t i = 0; i < NR_COMMANDS; i++)
		usage_of(f, &commands[i], !i);
	fputs("       redcapctl -h|--help\n", f);
}

/* @c's help under @label, its continuation lines under the first. */
static void help_of(const struct command *c, const char *label)
{
	printf("  %-*s ", HELP_INDENT - 3, label);
	for (const char *p = c->help ? c->help : c->help_fn(); *p; p++) {
		putchar(*p);
		if (*p == '\n')
			printf("%*s", HELP_INDENT, "");
	}
}

/* -h, --help: the usage and the help of all commands (@cmd NULL), or of @cmd's. */
static void help(const char *cmd)
{
	char label[32];

	table_check();
	for (size_t i = 0; cmd && i < NR_COMMANDS; i++) {
		if (strcmp(commands[i].name, cmd))
			continue;
		usage_of(stdout, &commands[i], true);
		putchar('\n');
		help_of(&commands[i], cmd);
		putchar('\n');
		return;
	}
	usage(stdout);
	printf("%s\n", about);
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		const struct command *c = &commands[i];

		if (c->joined)
			continue;
		snprintf(label, sizeof(label), "%s", c->name);
		/* Commands of one help share a line: "start, stop". */
		for (; c->help && i + 1 < NR_COMMANDS && commands[i + 1].help == c->help; i++)
			snprintf(label + strlen(label), sizeof(label) - strlen(label), ", %s",
				 commands[i + 1].name);
		help_of(c, label);
		if (i + 1 < NR_COMMANDS && commands[i + 1].joined)
			printf(";  %s: %s", commands[i + 1].name, commands[i + 1].help);
		putchar('\n');
	}
	printf("\n%s", exit_status);
}

int main(int argc, char **argv)
{
	/* A usage error prints its reason and where to read more, not all commands. */
	dmctl_init("redcapctl", "Try 'redcapctl --help' for more information.\n", help);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help(NULL);
		return 0;
	}
	atexit(vdt_cleanup);
	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	dmctl_unknown(argv[1]);
}

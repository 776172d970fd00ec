// SPDX-License-Identifier: GPL-2.0
/*
 * vdiskctl: userspace control of the vdisk target: its statistics, its
 * latency tables saved to and loaded from a file, and off-line training.
 * The table commands are vdisk-tables.c's, shared with redcapctl.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmctl.h"
#include "vdisk-tables.h"

static const char vdiskctl_usage[] =
"usage: vdiskctl stats <dev> [--json]\n"
"       vdiskctl save <dev> <file>\n"
"       vdiskctl load <dev> <file>\n"
"       vdiskctl train <dev> [--time SECONDS] [--write] [--seed N] [--max-kib K]\n"
"                      [--drive-cache]\n"
"       vdiskctl check-file <file>\n"
"       vdiskctl -h|--help\n";

static const char help_text[] =
"Control the latency tables of a vdisk device-mapper device.\n"
"<dev> is a device-mapper name or /dev/mapper/<name>.\n"
"\n"
"  stats <dev> [--json]   print the target's statistics (key=value lines,\n"
"                         or one JSON object)\n"
"  save <dev> <file>      write the read and write tables to <file>, with the\n"
"                         identity and capacity of the disk under <dev>\n"
"  load <dev> <file>      replace both tables with those of <file>; it must\n"
"                         have been saved from the same disk and capacity, and\n"
"                         its rows and cols must equal the device's\n"
"  train <dev>            off-line training: O_DIRECT requests of 4 KiB..K KiB\n"
"                         (4 KiB steps), half where the previous one ended,\n"
"                         a quarter 4 KiB..8 MiB forward or back from there,\n"
"                         a quarter at 4 KiB-aligned random offsets, learning\n"
"                         switched on meanwhile\n"
"      --time SECONDS     how long (default 60)\n"
"      --write            half of the requests are writes: each reads a range\n"
"                         and writes the same data back.  The content is kept\n"
"                         unless something else writes to the device at the\n"
"                         same time: do not use it on a device in use\n"
"      --seed N           random pattern (default 1; same seed, same pattern)\n"
"      --max-kib K        largest request, a multiple of 4 (default: the\n"
"                         model's last row, 256 KiB with 64 rows)\n"
"      --drive-cache      then about 12 s of reads that show the drive's own\n"
"                         cache (learning off): the target learns its\n"
"                         segments, read-ahead and media rate, and the\n"
"                         model prices it from then on\n"
"  check-file <file>      check a saved file offline, without a device (for\n"
"                         scripts); prints its geometry, disk and filled cells\n"
"\n"
"Exit status: 0 success, 1 error, 2 usage error.  See vdiskctl(8).\n";

/* --- commands ------------------------------------------------------------ */

/* -h, --help: every command's. */
static void help(const char *cmd)
{
	(void)cmd;
	fputs(usage_text, stdout);
	fputs(help_text, stdout);
}

/*
 * A stats value as JSON: an integer (-?(0|[1-9][0-9]*), within int64 or
 * uint64) as a number, anything else as a string.
 */
static struct json_object *json_value(const char *s)
{
	const char *p = s + (*s == '-');
	uint64_t v;

	if ((p[0] != '0' || !p[1]) && take_u64(&p, &v) && !*p) {
		if (*s != '-' && v > INT64_MAX)
			return json_object_new_uint64(v);
		if (*s != '-')
			return json_object_new_int64((int64_t)v);
		if (v <= (uint64_t)INT64_MAX)
			return json_object_new_int64(-(int64_t)v);
		if (v == (uint64_t)INT64_MAX + 1)
			return json_object_new_int64(INT64_MIN);
	}
	return json_object_new_string(s);
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, longopts, dmctl_flag_opt, &json);
	struct json_object *obj, *val;
	struct stats st;
	struct dev d;

	dmctl_operands(argc, argv, i, 1, 1);
	dev_resolve(argv[i], &d);
	if (!json) {
		char *text = dm_message(&d, "stats");
		size_t n = strlen(text);

		fputs(text, stdout);
		if (n && text[n - 1] != '\n')
			putchar('\n');
		free(text);
		return 0;
	}
	stats_get(&d, &st);
	obj = json_object_new_object();
	if (!obj)
		die("out of memory");
	for (i = 0; i < st.n; i++) {
		val = json_value(st.kv[i].val);
		if (!val || json_object_object_add(obj, st.kv[i].key, val))
			die("out of memory");
	}
	puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	free(st.text);
	return 0;
}

/* A command whose operands are a device and a file. */
static int dev_file_cmd(int argc, char **argv, void (*fn)(const struct dev *d, const char *file))
{
	int i = dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);
	struct dev d;

	dmctl_operands(argc, argv, i, 2, 2);
	dev_resolve(argv[i], &d);
	fn(&d, argv[i + 1]);
	return 0;
}

static int cmd_save(int argc, char **argv)
{
	return dev_file_cmd(argc, argv, vdt_save);
}

static int cmd_load(int argc, char **argv)
{
	return dev_file_cmd(argc, argv, vdt_load);
}

static int cmd_check_file(int argc, char **argv)
{
	int i = dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);

	dmctl_operands(argc, argv, i, 1, 1);
	vdt_check_file(argv[i]);
	return 0;
}

static int cmd_train(int argc, char **argv)
{
	struct vdt_train o = VDT_TRAIN_DEFAULTS;
	int i = dmctl_parse_opts(argc, argv, vdt_train_options, vdt_train_opt, &o);
	struct dev d;

	dmctl_operands(argc, argv, i, 1, 1);
	dev_resolve(argv[i], &d);
	return vdt_train(&d, &o);
}

int main(int argc, char **argv)
{
	static const struct dmctl_cmd cmds[] = {
		{ "stats", cmd_stats },
		{ "save", cmd_save },
		{ "load", cmd_load },
		{ "train", cmd_train },
		{ "check-file", cmd_check_file },
	};

	dmctl_init("vdiskctl", vdiskctl_usage, help);
	if (argc < 2)
		usage_error(NULL);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help(NULL);
		return 0;
	}
	atexit(vdt_cleanup);
	return dmctl_dispatch(argc, argv, cmds, sizeof(cmds) / sizeof(cmds[0]));
}

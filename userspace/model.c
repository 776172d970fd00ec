// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl model save|load|train: vdiskctl's table commands
 * (vdisk-tables.c) on a stack's model layer, NAME-vd; and the verbs and
 * default files that model and hot (hot-cmd.c) share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmctl.h"
#include "redcapctl.h"
#include "vdisk-tables.h"

/* --- verbs on a stack's file: model save|load, hot save|load ------------- */

/* model save|load's options, and hot's. */
const struct option if_present_options[] = {
	{ "if-present", no_argument, NULL, 'i' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int verb_parse(int argc, char **argv, const char *const *verbs, const struct option *longopts,
	       void (*opt)(int c, const char *arg, void *ctx), void *ctx)
{
	const char *verb = argc > 1 ? argv[1] : "";
	char list[64] = "";
	size_t v;
	int i;

	if (!strcmp(verb, "-h") || !strcmp(verb, "--help"))
		dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);
	for (v = 0; verbs[v] && strcmp(verb, verbs[v]); v++)
		;
	if (!verbs[v]) {
		for (v = 0; verbs[v]; v++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 v ? ", " : "", verbs[v]);
		if (*verb)
			usage_error("%s: unknown verb '%s' (%s)", argv[0], verb, list);
		usage_error("%s: missing verb (%s)", argv[0], list);
	}
	/* "model save NAME": parse from "save", as "model" for the messages. */
	argv[1] = argv[0];
	i = dmctl_parse_opts(argc - 1, argv + 1, longopts, opt, ctx) + 1;
	argv[1] = (char *)verb;
	return i;
}

void verb_file(int argc, char **argv, int i, const char *dir, const char *ext, char *file,
	       size_t len)
{
	if (argc - i == 2) {
		snprintf(file, len, "%s", argv[i + 1]);
		return;
	}
	snprintf(file, len, "%s/%s.%s", dir, argv[i], ext);
	if (!strcmp(argv[1], "save") && mkdir(dir, 0755) && errno != EEXIST)
		die("%s save: %s: %s", argv[0], dir, strerror(errno));
}

/* --- model: vdiskctl's table commands on NAME-vd ------------------------- */

int cmd_model(int argc, char **argv)
{
	struct vdt_train t = VDT_TRAIN_DEFAULTS;
	static const char *const verbs[] = { "save", "load", "train", NULL };
	const char *verb = argc > 1 ? argv[1] : "";
	bool if_present = false;
	char file[PATH_MAX];
	struct stack k;
	int i, r = 0;

	if (!strcmp(verb, "train")) {
		i = verb_parse(argc, argv, verbs, vdt_train_options, vdt_train_opt, &t);
		dmctl_operands(argc, argv, i, 1, 1);
	} else {
		/*
		 * --if-present, for the boot units: no file yet (before the first
		 * save), a stack started linear or made without a model layer, is
		 * nothing to do, not an error.
		 */
		i = verb_parse(argc, argv, verbs, if_present_options, dmctl_flag_opt, &if_present);
		dmctl_operands(argc, argv, i, 1, 2);
	}
	if (stack_load(argv[i], &k))
		return 1;
	if (!k.has_vd && if_present) {
		printf("%s: %s: no model to %s\n", argv[i], is_redcap(&k) ?
		       "created with --no-model" : "a linear device without cache", verb);
		stack_free(&k);
		return 0;
	}
	if (!k.has_vd) {
		fail("%s: no model layer (%s)", argv[i], is_redcap(&k) ?
		     "created with --no-model" : "a linear device without cache");
		stack_free(&k);
		return 1;
	}
	verb_file(argc, argv, i, MODEL_DIR, "vdisk", file, sizeof(file));
	if (!strcmp(verb, "save")) {
		vdt_save(&k.vdev, file);
		printf("%s: model saved to %s\n", argv[i], file);
	} else if (!strcmp(verb, "load")) {
		if (if_present && access(file, F_OK) && errno == ENOENT) {
			printf("%s: no saved model in %s: the model learns from nothing\n", argv[i],
			       file);
		} else {
			vdt_load(&k.vdev, file);
			printf("%s: model loaded from %s\n", argv[i], file);
		}
	} else {
		r = vdt_train(&k.vdev, &t);
	}
	stack_free(&k);
	return r;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl model save|load|train: vdiskctl's table commands
 * (vdisk-tables.c) on a stack's model layer, NAME-vd.
 */
#define _GNU_SOURCE
#include <dirent.h>
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

/* --- model: vdiskctl's table commands on NAME-vd ------------------------- */

/* model save|load's options, and hot's. */
const struct option if_present_options[] = {
	{ "if-present", no_argument, NULL, 'i' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_model(int argc, char **argv)
{
	struct vdt_train t = VDT_TRAIN_DEFAULTS;
	const char *verb = argc > 1 ? argv[1] : "";
	bool if_present = false;
	char file[PATH_MAX];
	struct stack k;
	int i, r = 0;

	if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
		dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);
	}
	if (strcmp(verb, "save") && strcmp(verb, "load") && strcmp(verb, "train"))
		usage_error(*verb ? "model: unknown verb '%s' (save, load, train)" :
			    "model: missing verb (save, load, train)%s", verb);
	argv[1] = argv[0];	/* "model save NAME": parse from "save" */
	if (!strcmp(verb, "train")) {
		i = dmctl_parse_opts(argc - 1, argv + 1, vdt_train_options, vdt_train_opt, &t) + 1;
		dmctl_operands(argc, argv, i, 1, 1);
	} else {
		/*
		 * --if-present, for the boot units: no file yet (before the first
		 * save), a stack started linear or made without a model layer, is
		 * nothing to do, not an error.
		 */
		i = dmctl_parse_opts(argc - 1, argv + 1, if_present_options, dmctl_flag_opt, &if_present) + 1;
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
	if (argc - i == 2)
		snprintf(file, sizeof(file), "%s", argv[i + 1]);
	else
		snprintf(file, sizeof(file), MODEL_DIR "/%s.vdisk", argv[i]);
	if (!strcmp(verb, "save")) {
		if (argc - i == 1 && mkdir(MODEL_DIR, 0755) && errno != EEXIST)
			die("model save: %s: %s", MODEL_DIR, strerror(errno));
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

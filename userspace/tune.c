// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl set, drop-cache, reset-stats: messages to a running cache,
 * each checked first with the target's own parser (dm-redcap/rc-args.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dmctl.h"
#include "rc-args.h"
#include "rc-policy.h"
#include "redcapctl.h"

/* --- set, drop-cache, reset-stats ---------------------------------------- */

/* A stack that has a cache: 0, or -1 printed. */
static int cache_load(const char *name, struct stack *k)
{
	if (stack_load(name, k))
		return -1;
	if (!is_redcap(k)) {
		stack_free(k);
		return fail("%s: a linear device without cache (once the redcap module loads, "
			    "redcapctl upgrade swaps the cache in)", name);
	}
	return 0;
}

int redcapctl_cache_get(const char *name, bool linear_ok, struct redcapctl_cache *c)
{
	struct stack k;

	if (stack_load(name, &k))
		return -1;
	if (!is_redcap(&k) && linear_ok) {
		printf("%s: a linear device without cache: nothing to do\n", name);
		stack_free(&k);
		return 1;
	}
	if (!is_redcap(&k)) {
		stack_free(&k);
		return fail("%s: a linear device without cache (once the redcap module loads, "
			    "redcapctl upgrade swaps the cache in)", name);
	}
	*c = (struct redcapctl_cache){ .dev = k.dev, .origin = k.origin, .sectors = k.sectors,
				       .seg_sectors = k.seg_sectors };
	stack_free(&k);
	return 0;
}

#define SET_KEYS	"policy, write_policy, estimator, window, margin, decay_ms, " \
			"budget_share, budget_cap_ms, prefetch, hdc, hot_period"

/* A key of the target's "set" message. */
static bool is_tunable(const char *key)
{
	int k;

	for (k = 0; k < RC_TUN_NR; k++)
		if (!strcmp(key, rc_tunable_name((enum rc_tunable)k)))
			return true;
	return false;
}

int cmd_set(int argc, char **argv)
{
	int i = dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL), nr;
	char *(*words)[3], buf[256], *key;
	struct stack k;
	struct rc_msg m;

	dmctl_operands(argc, argv, i, 2, INT_MAX);
	nr = argc - i - 1;
	words = xmalloc((size_t)nr * sizeof(*words));
	/* Every pair is checked with the target's own parser before any is sent. */
	for (int j = 0; j < nr; j++) {
		char *kv = argv[i + 1 + j], *val = strchr(kv, '=');
		unsigned int n;
		const char *err;

		if (!val || val == kv || !val[1])
			usage_error("set: '%s' is not KEY=VALUE", kv);
		key = strndup(kv, (size_t)(val - kv));
		if (!key)
			die("out of memory");
		val++;
		if (!strcmp(key, "policy") || !strcmp(key, "write_policy") ||
		    !strcmp(key, "estimator")) {
			words[j][0] = key;
			words[j][1] = val;
			n = 2;
		} else if (is_tunable(key)) {
			words[j][0] = "set";
			words[j][1] = key;
			words[j][2] = val;
			n = 3;
		} else {
			usage_error("set: unknown key '%s' (" SET_KEYS ")", key);
		}
		err = rc_parse_message(n, words[j], &m, buf, sizeof(buf));
		if (err) {
			/* The parser's text names its verb ("set: ...", "policy: ..."). */
			const char *colon = strstr(err, ": ");

			usage_error("set: %s=%s: %s", key, val, colon ? colon + 2 : err);
		}
		if (n == 2)
			words[j][2] = NULL;
	}
	if (cache_load(argv[i], &k))
		return 1;
	for (int j = 0; j < nr; j++) {
		if (!strcmp(words[j][0], "estimator") && !k.has_vd &&
		    rc_estimator_parse(words[j][1]) == RC_EST_VDISK)
			die("%s: estimator=vdisk needs the model layer, which this stack has not "
			    "(created with --no-model)", argv[i]);
	}
	for (int j = 0; j < nr; j++) {
		snprintf(buf, sizeof(buf), "%s %s%s%s", words[j][0], words[j][1],
			 words[j][2] ? " " : "", words[j][2] ? words[j][2] : "");
		free(dm_message(&k.dev, buf));
	}
	stack_free(&k);
	free(words);
	return 0;
}

static int cmd_simple_message(int argc, char **argv, const char *msg)
{
	int i = dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);
	struct stack k;
	const char *why;
	char *answer;

	dmctl_operands(argc, argv, i, 1, 1);
	if (cache_load(argv[i], &k))
		return 1;
	why = dm_send(&k.dev, msg, &answer);
	stack_free(&k);
	if (why) {
		fail("%s: %s: %s", argv[i], argv[0], !strcmp(why, strerror(EBUSY)) ?
		     "segments stayed busy for 10 s; try again" : why);
		return 1;
	}
	free(answer);
	return 0;
}

int cmd_drop_cache(int argc, char **argv)
{
	return cmd_simple_message(argc, argv, "drop_cache");
}

int cmd_reset_stats(int argc, char **argv)
{
	return cmd_simple_message(argc, argv, "reset_stats");
}

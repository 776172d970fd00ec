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

/* A stack that has a cache: 0, or -1 printed; 1, said, if it has none and @linear_ok. */
static int cache_load(const char *name, bool linear_ok, struct stack *k)
{
	if (stack_load(name, k))
		return -1;
	if (is_redcap(k))
		return 0;
	stack_free(k);
	if (linear_ok) {
		printf("%s: a linear device without cache: nothing to do\n", name);
		return 1;
	}
	return fail("%s: a linear device without cache (once the redcap module loads, "
		    "redcapctl upgrade swaps the cache in)", name);
}

int redcapctl_cache_get(const char *name, bool linear_ok, struct redcapctl_cache *c)
{
	struct stack k;
	int r = cache_load(name, linear_ok, &k);

	if (r)
		return r;
	*c = (struct redcapctl_cache){ .dev = k.dev, .origin = k.origin, .sectors = k.sectors,
				       .seg_sectors = k.seg_sectors };
	stack_free(&k);
	return 0;
}

/*
 * set's keys, as the target has them (rc-args.c): the messages that take
 * a value of their own, then the tunables of its "set" message.
 */
static const enum rc_msg_verb value_msgs[] = {
	RC_MSG_POLICY, RC_MSG_WRITE_POLICY, RC_MSG_ESTIMATOR,
};

#define NR_VALUE_MSGS	(sizeof(value_msgs) / sizeof(value_msgs[0]))
#define NR_KEYS		(NR_VALUE_MSGS + RC_TUN_NR)

static const char *key_name(size_t i)
{
	return i < NR_VALUE_MSGS ? rc_msg_name(value_msgs[i]) :
	       rc_tunable_name((enum rc_tunable)(i - NR_VALUE_MSGS));
}

const char *set_keys(size_t width)
{
	static char buf[512];
	size_t len = 0, line = 0;

	for (size_t i = 0; i < NR_KEYS; i++) {
		const char *sep = i + 1 < NR_KEYS ? "," : "";
		size_t n = strlen(key_name(i)) + strlen(sep);

		if (i && width && line + 1 + n > width) {
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "\n");
			line = 0;
		} else if (i) {
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " ");
			line++;
		}
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", key_name(i), sep);
		line += n;
	}
	return buf;
}

/* The key @key, exactly as the target names it: its index in set_keys(), or -1. */
static int set_key(const char *key)
{
	for (size_t i = 0; i < NR_KEYS; i++)
		if (!strcmp(key, key_name(i)))
			return (int)i;
	return -1;
}

/* Whether write policy @wp makes the cache a write cache (rc-core.h). */
static bool caches_writes(int wp)
{
	return wp == RC_WRITE_BACK || wp == RC_WRITE_SELECTIVE;
}

/*
 * The redcap table @params ("ORIGIN SEG N [COUNT FEATURES...]") with its
 * write_policy feature @wp; *@was: the one it had (invalidate without).
 * A new string, or NULL when @params is not such a line.
 */
static char *with_write_policy(const char *params, const char *wp, int *was)
{
	char *copy = xstrdup(params), *w[64], *save = NULL, *out;
	size_t n = 0, len = strlen(params) + strlen(wp) + 32;
	unsigned int nfeat = 0, kept = 0;
	int at;

	for (char *t = strtok_r(copy, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save))
		w[n++] = t;
	if (n < 3 || (n > 3 && (sscanf(w[3], "%u", &nfeat) != 1 || nfeat != n - 4 || nfeat % 2))) {
		free(copy);
		return NULL;
	}
	out = xmalloc(len);
	*was = RC_WRITE_INVALIDATE;
	at = snprintf(out, len, "%s %s %s", w[0], w[1], w[2]);

	for (size_t f = 4; f + 1 < n; f += 2)
		kept += strcmp(w[f], "write_policy") ? 2 : 0;
	at += snprintf(out + at, len - (size_t)at, " %u", kept + 2);
	for (size_t f = 4; f + 1 < n; f += 2) {
		if (!strcmp(w[f], "write_policy"))
			*was = rc_write_policy_parse(w[f + 1]);
		else
			at += snprintf(out + at, len - (size_t)at, " %s %s", w[f], w[f + 1]);
	}
	snprintf(out + at, len - (size_t)at, " write_policy %s", wp);
	free(copy);
	return out;
}

/*
 * write_policy=@wp on stack @k: a message, unless the write cache comes or
 * goes, which takes a table reload (the device's write cache is the
 * table's; suspend writes the cache back first).
 */
static void set_write_policy(struct stack *k, const char *wp)
{
	int was;
	char *params = with_write_policy(k->params, wp, &was), *r;

	if (!params)
		die("%s: cannot read its table '%s'", k->name, k->params);
	if (caches_writes(was) == caches_writes(rc_write_policy_parse(wp))) {
		char msg[64];

		snprintf(msg, sizeof(msg), "write_policy %s", wp);
		r = dm_message(&k->dev, msg);
		free(r);
	} else if (dm_swap_table(k->name, k->sectors, "redcap", params,
				 (uint32_t)(k->ra_bytes >> 9))) {
		die("%s: write_policy %s: reloading the table failed: %s", k->name, wp, dm_why);
	} else {
		printf("%s: write_policy %s: table reloaded%s\n", k->name, wp,
		       caches_writes(was) ? " (the cache was written back first)" : "");
	}
	free(params);
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
		int c;

		if (!val || val == kv || !val[1])
			usage_error("set: '%s' is not KEY=VALUE", kv);
		key = strndup(kv, (size_t)(val - kv));
		if (!key)
			die("out of memory");
		val++;
		c = set_key(key);
		if (c < 0)
			usage_error("set: unknown key '%s' (%s)", key, set_keys(0));
		if ((size_t)c < NR_VALUE_MSGS) {
			words[j][0] = key;
			words[j][1] = val;
			n = 2;
		} else {
			words[j][0] = (char *)rc_msg_name(RC_MSG_SET);
			words[j][1] = key;
			words[j][2] = val;
			n = 3;
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
	if (cache_load(argv[i], false, &k))
		return 1;
	for (int j = 0; j < nr; j++) {
		if (!strcmp(words[j][0], rc_msg_name(RC_MSG_ESTIMATOR)) && !k.has_vd &&
		    rc_estimator_parse(words[j][1]) == RC_EST_VDISK)
			die("%s: estimator=vdisk needs the model layer, which this stack has not "
			    "(created with --no-model)", argv[i]);
	}
	for (int j = 0; j < nr; j++) {
		if (!strcmp(words[j][0], rc_msg_name(RC_MSG_WRITE_POLICY))) {
			set_write_policy(&k, words[j][1]);
			continue;
		}
		snprintf(buf, sizeof(buf), "%s %s%s%s", words[j][0], words[j][1],
			 words[j][2] ? " " : "", words[j][2] ? words[j][2] : "");
		free(dm_message(&k.dev, buf));
	}
	stack_free(&k);
	free(words);
	return 0;
}

static int cmd_simple_message(int argc, char **argv, enum rc_msg_verb msg)
{
	int i = dmctl_parse_opts(argc, argv, dmctl_help_only, dmctl_no_opts, NULL);
	struct stack k;
	const char *why;
	char *answer;

	dmctl_operands(argc, argv, i, 1, 1);
	if (cache_load(argv[i], false, &k))
		return 1;
	why = dm_send(&k.dev, rc_msg_name(msg), &answer);
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
	return cmd_simple_message(argc, argv, RC_MSG_DROP_CACHE);
}

int cmd_reset_stats(int argc, char **argv)
{
	return cmd_simple_message(argc, argv, RC_MSG_RESET_STATS);
}

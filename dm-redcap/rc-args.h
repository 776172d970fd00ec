/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The redcap table line and messages, parsed in portable C so that the
 * kernel target and the host's fuzzer (tests/fuzz) run the same code.
 * Nothing here looks at devices or the running cache: the glue resolves
 * paths and applies what was parsed.
 */
#ifndef RC_ARGS_H
#define RC_ARGS_H

#include "rc-core.h"

/* Segment sizes the target accepts, in 512-byte sectors: 4 KiB .. 1 MiB. */
#define RC_MIN_SEG_SECTORS	8u
#define RC_MAX_SEG_SECTORS	2048u

/*
 * redcap <origin dev> <segment sectors> <nr segments> [<#features> <feature>*]
 *   features: policy always|off|adaptive|caware|adaptive+caware,
 *             write_policy invalidate|update, estimator spk|vdisk,
 *             model <vdisk dev>
 * A feature not given is the target's choice, the one redcapctl create's
 * stack runs: policy RC_POLICY_DEFAULT, write_policy invalidate, and
 * estimator RC_EST_NR here, which the constructor makes vdisk where it
 * finds a model (named, or the origin's) and spk where it does not.
 */
struct rc_table_args {
	const char *origin;
	u32 seg_sectors, nr_segs;
	enum rc_policy policy;
	enum rc_write_policy write_policy;
	enum rc_estimator estimator;
	const char *model;		/* NULL: not given */
};

/* NULL, or the constructor's error text (for ti->error). */
const char *rc_parse_table(unsigned int argc, char **argv, struct rc_table_args *t);

int rc_write_policy_parse(const char *name);

enum rc_msg_verb {
	RC_MSG_STATS, RC_MSG_RESET_STATS, RC_MSG_DROP_CACHE, RC_MSG_POLICY,
	RC_MSG_WRITE_POLICY, RC_MSG_ESTIMATOR, RC_MSG_SET, RC_MSG_HOT,
	RC_MSG_PIN, RC_MSG_UNPIN, RC_MSG_CHOSEN, RC_MSG_PREFILL, RC_MSG_SHADOWS, RC_MSG_NR,
};

/* The first word of message @verb ("policy", "drop_cache", ...). */
const char *rc_msg_name(enum rc_msg_verb verb);

/* The name of tunable @key ("window", ...: enum rc_tunable, rc-policy.h). */
const char *rc_tunable_name(enum rc_tunable key);
/* The tunable named @name (any case), or -1. */
int rc_tunable_key(const char *name);
/*
 * Word @s as a value of tunable @key: true and *@v; false when it is not
 * a number in the key's range, *@min..*@max (set either way).
 */
bool rc_tunable_value(enum rc_tunable key, const char *s, u32 *v, u32 *min, u32 *max);

struct rc_msg {
	enum rc_msg_verb verb;
	int value;			/* policy, write_policy, estimator */
	enum rc_tunable key;		/* set */
	u32 uvalue;			/* set; hot's number of regions; chosen's FROM */
};

/* hot [N]: the N segments that missed most, 1..RC_HOT_TOP_MAX, RC_HOT_TOP_DEFAULT without N. */
#define RC_HOT_TOP_DEFAULT	16
#define RC_HOT_TOP_MAX		64

/* pin, unpin, prefill SEGMENT...: at most this many a message. */
#define RC_PIN_MAX		1024

/* chosen [FROM]: at most this many segments an answer, from index FROM. */
#define RC_CHOSEN_CHUNK		512

/*
 * Segment number @word of a pin, unpin or prefill message (@verb) on a device of
 * @nr_segs segments, into *@seg; NULL, or the error, formatted into @buf.
 */
const char *rc_parse_segment(const char *verb, const char *word, u64 nr_segs, u64 *seg,
			     char *buf, size_t len);

/*
 * NULL, or the error to log, formatted into @buf (@len bytes) when it
 * names the offending word.
 */
const char *rc_parse_message(unsigned int argc, char **argv, struct rc_msg *m,
			     char *buf, size_t len);

#endif

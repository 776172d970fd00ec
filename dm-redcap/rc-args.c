// SPDX-License-Identifier: GPL-2.0
/*
 * The redcap table line and messages; see rc-args.h.
 */
#include "rc-args.h"
#include "rc-parse.h"

int rc_write_policy_parse(const char *name)
{
	if (rc_streq(name, "invalidate"))
		return RC_WRITE_INVALIDATE;
	if (rc_streq(name, "update"))
		return RC_WRITE_UPDATE;
	if (rc_streq(name, "back"))
		return RC_WRITE_BACK;
	if (rc_streq(name, "selective"))
		return RC_WRITE_SELECTIVE;
	return -1;
}

enum { RF_POLICY, RF_WRITE_POLICY, RF_ESTIMATOR, RF_MODEL, RF_NR };

/* Every feature is "<name> <argument>" and may be given once. */
static const struct rc_feature {
	const char *name;
	int (*parse)(const char *arg);	/* NULL: the argument is kept as it is */
	const char *missing, *duplicated, *unknown;
} rc_features[RF_NR] = {
	[RF_POLICY] = { "policy", rc_policy_parse, "Feature policy requires a name",
			"Feature policy duplicated", "Unknown policy" },
	[RF_WRITE_POLICY] = { "write_policy", rc_write_policy_parse,
			      "Feature write_policy requires a name",
			      "Feature write_policy duplicated", "Unknown write_policy" },
	[RF_ESTIMATOR] = { "estimator", rc_estimator_parse, "Feature estimator requires a name",
			   "Feature estimator duplicated", "Unknown estimator" },
	[RF_MODEL] = { "model", NULL, "Feature model requires a device",
		       "Feature model duplicated", NULL },
};

/* A number min..max, as dm_read_arg() reads one. */
static bool rc_arg(const char *s, u32 min, u32 max, u32 *v)
{
	return !rc_parse_u32(s, v) && *v >= min && *v <= max;
}

static const char *rc_parse_features(unsigned int argc, char **argv, struct rc_table_args *t)
{
	const char *arg[RF_NR] = { NULL };
	const struct rc_feature *ft;
	unsigned int i = 1, f;
	u32 nr;
	int v;

	if (!rc_arg(argv[0], 0, 2 * RF_NR, &nr) || nr > argc - 1)
		return "Invalid number of feature args";

	while (i < 1 + nr) {
		for (f = 0; f < RF_NR; f++)
			if (rc_streq(argv[i], rc_features[f].name))
				break;
		if (f == RF_NR)
			return "Unrecognised feature requested";
		ft = &rc_features[f];
		if (++i == 1 + nr)
			return ft->missing;
		if (arg[f])
			return ft->duplicated;
		arg[f] = argv[i++];
		if (!ft->parse)
			continue;
		v = ft->parse(arg[f]);
		if (v < 0)
			return ft->unknown;
		switch (f) {
		case RF_POLICY:
			t->policy = (enum rc_policy)v;
			break;
		case RF_WRITE_POLICY:
			t->write_policy = (enum rc_write_policy)v;
			break;
		default:
			t->estimator = (enum rc_estimator)v;
			break;
		}
	}
	t->model = arg[RF_MODEL];
	return argc > 1 + nr ? "Too many arguments" : NULL;
}

const char *rc_parse_table(unsigned int argc, char **argv, struct rc_table_args *t)
{
	memset(t, 0, sizeof(*t));
	t->policy = RC_POLICY_DEFAULT;
	t->write_policy = RC_WRITE_INVALIDATE;
	t->estimator = RC_EST_NR;	/* the constructor's choice */

	if (argc < 3)
		return "Invalid argument count";
	t->origin = argv[0];
	if (!rc_arg(argv[1], RC_MIN_SEG_SECTORS, RC_MAX_SEG_SECTORS, &t->seg_sectors))
		return "Invalid segment size";
	if (t->seg_sectors & (t->seg_sectors - 1))
		return "Segment size must be a power of 2";
	if (!rc_arg(argv[2], 1, RC_MAX_ENTRIES, &t->nr_segs))
		return "Invalid number of segments";
	if (argc > 3)
		return rc_parse_features(argc - 3, argv + 3, t);
	return NULL;
}

static const struct rc_verb rc_msgs[RC_MSG_NR] = {
	[RC_MSG_STATS] = { "stats", 0, 0 },
	[RC_MSG_RESET_STATS] = { "reset_stats", 0, 0 },
	[RC_MSG_DROP_CACHE] = { "drop_cache", 0, 0 },
	[RC_MSG_POLICY] = { "policy", 1, 1 },
	[RC_MSG_WRITE_POLICY] = { "write_policy", 1, 1 },
	[RC_MSG_ESTIMATOR] = { "estimator", 1, 1 },
	[RC_MSG_SET] = { "set", 2, 2 },
	[RC_MSG_HOT] = { "hot", 0, 1 },
	/* the segments themselves: rc_parse_segment(), against the device */
	[RC_MSG_PIN] = { "pin", 1, RC_PIN_MAX },
	[RC_MSG_UNPIN] = { "unpin", 1, RC_PIN_MAX },
	[RC_MSG_CHOSEN] = { "chosen", 0, 1 },
	[RC_MSG_PREFILL] = { "prefill", 1, RC_PIN_MAX },
	[RC_MSG_SHADOWS] = { "shadows", 0, 0 },
};

const char *rc_msg_name(enum rc_msg_verb verb)
{
	return verb < RC_MSG_NR ? rc_msgs[verb].verb : "?";
}

static const struct {
	const char *key;
	u32 min, max;
} rc_tunables[RC_TUN_NR] = {
	[RC_TUN_WINDOW] = { "window", 1, RC_ADAPT_MAX_WINDOW },
	[RC_TUN_MARGIN] = { "margin", 0, RC_ADAPT_MAX_MARGIN - 1 },
	[RC_TUN_DECAY_MS] = { "decay_ms", 0, RC_CAWARE_MAX_DECAY_MS },
	[RC_TUN_BUDGET_SHARE] = { "budget_share", 0, RC_BUDGET_MAX_SHARE },
	[RC_TUN_BUDGET_CAP_MS] = { "budget_cap_ms", 0, RC_BUDGET_MAX_CAP_MS },
	[RC_TUN_PREFETCH] = { "prefetch", 0, RC_PREFETCH_MAX },
	[RC_TUN_HDC] = { "hdc", 0, RC_HDC_MAX_SHARE },
	[RC_TUN_HOT_PERIOD] = { "hot_period", 1, RC_HOT_PERIOD_MAX_S },
	[RC_TUN_DIRTY] = { "dirty", 1, RC_DIRTY_MAX_SHARE },
};

const char *rc_tunable_name(enum rc_tunable key)
{
	return key < RC_TUN_NR ? rc_tunables[key].key : "?";
}

int rc_tunable_key(const char *name)
{
	int k;

	for (k = 0; k < RC_TUN_NR; k++)
		if (rc_streq(name, rc_tunables[k].key))
			return k;
	return -1;
}

bool rc_tunable_value(enum rc_tunable key, const char *s, u32 *v, u32 *min, u32 *max)
{
	*min = rc_tunables[key].min;
	*max = rc_tunables[key].max;
	return rc_arg(s, *min, *max, v);
}

static const char *rc_parse_set(char **argv, struct rc_msg *m, char *buf, size_t len)
{
	int k = rc_tunable_key(argv[1]);
	u32 min, max;

	if (k < 0) {
		snprintf(buf, len, "set: unknown key '%s'", argv[1]);
		return buf;
	}
	if (!rc_tunable_value(k, argv[2], &m->uvalue, &min, &max)) {
		snprintf(buf, len, "set: %s must be %u..%u", rc_tunables[k].key, min, max);
		return buf;
	}
	m->key = (enum rc_tunable)k;
	return NULL;
}

const char *rc_parse_segment(const char *verb, const char *word, u64 nr_segs, u64 *seg,
			     char *buf, size_t len)
{
	if (rc_parse_u64(word, ~0ULL, seg)) {
		snprintf(buf, len, "%s: '%s' is not a segment number", verb, word);
		return buf;
	}
	if (*seg >= nr_segs) {
		snprintf(buf, len, "%s: segment %llu is beyond the device's %llu", verb,
			 (unsigned long long)*seg, (unsigned long long)nr_segs);
		return buf;
	}
	return NULL;
}

const char *rc_parse_message(unsigned int argc, char **argv, struct rc_msg *m,
			     char *buf, size_t len)
{
	const char *err;
	unsigned int i = 0;

	memset(m, 0, sizeof(*m));
	err = rc_parse_verb(rc_msgs, RC_MSG_NR, argc, argv, &i, buf, len);
	if (err)
		return err;
	m->verb = (enum rc_msg_verb)i;
	switch (m->verb) {
	case RC_MSG_POLICY:
		m->value = rc_policy_parse(argv[1]);
		if (m->value < 0) {
			snprintf(buf, len, "policy: unknown policy '%s'", argv[1]);
			return buf;
		}
		break;
	case RC_MSG_WRITE_POLICY:
		m->value = rc_write_policy_parse(argv[1]);
		if (m->value < 0) {
			snprintf(buf, len, "write_policy: unknown write policy '%s'", argv[1]);
			return buf;
		}
		break;
	case RC_MSG_ESTIMATOR:
		m->value = rc_estimator_parse(argv[1]);
		if (m->value < 0) {
			snprintf(buf, len, "estimator: unknown estimator '%s'", argv[1]);
			return buf;
		}
		break;
	case RC_MSG_SET:
		return rc_parse_set(argv, m, buf, len);
	case RC_MSG_HOT:
		m->uvalue = RC_HOT_TOP_DEFAULT;
		if (argc == 2 && !rc_arg(argv[1], 1, RC_HOT_TOP_MAX, &m->uvalue)) {
			snprintf(buf, len, "hot: N must be 1..%u", RC_HOT_TOP_MAX);
			return buf;
		}
		break;
	case RC_MSG_CHOSEN:
		if (argc == 2 && !rc_arg(argv[1], 0, 0xffffffffu, &m->uvalue)) {
			snprintf(buf, len, "chosen: FROM must be 0..4294967295");
			return buf;
		}
		break;
	default:
		break;
	}
	return NULL;
}

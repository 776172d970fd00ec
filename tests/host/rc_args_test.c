// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the redcap table line and message parsers
 * (dm-redcap/rc-args.c): what each accepts, and the exact error texts the
 * target logs for what it refuses.
 */
#include "ctest.h"
#include "rc-args.h"

#define MAX_WORDS 32

static const char *table(const char *line, struct rc_table_args *t)
{
	char *argv[MAX_WORDS];

	return rc_parse_table(ctest_words(line, argv, MAX_WORDS), argv, t);
}

static const char *refused_table(const char *line)
{
	struct rc_table_args t;

	return table(line, &t);
}

static const char *message(const char *line, struct rc_msg *m)
{
	static char buf[128];
	char *argv[MAX_WORDS];

	return rc_parse_message(ctest_words(line, argv, MAX_WORDS), argv, m, buf, sizeof(buf));
}

static const char *refused_message(const char *line)
{
	struct rc_msg m;

	return message(line, &m);
}

CTEST(table_defaults)
{
	struct rc_table_args t;

	CHECK(!table("/dev/sdb 256 16", &t));
	CHECK_STREQ(t.origin, "/dev/sdb");
	CHECK_EQ(t.seg_sectors, 256);
	CHECK_EQ(t.nr_segs, 16);
	/* what redcapctl create runs; the estimator is the constructor's */
	CHECK_EQ(t.policy, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(t.write_policy, RC_WRITE_INVALIDATE);
	CHECK_EQ(t.estimator, RC_EST_NR);
	CHECK(!t.model);
}

CTEST(table_every_feature_in_any_case)
{
	struct rc_table_args t;

	CHECK(!table("8:16 8 16777216 8 POLICY Adaptive+CAware write_policy update "
		     "Estimator vdisk model /dev/mapper/vd", &t));
	CHECK_EQ(t.seg_sectors, 8);
	CHECK_EQ(t.nr_segs, 1u << 24);
	CHECK_EQ(t.policy, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(t.write_policy, RC_WRITE_UPDATE);
	CHECK_EQ(t.estimator, RC_EST_VDISK);
	CHECK_STREQ(t.model, "/dev/mapper/vd");
	CHECK(!table("x 2048 1 0", &t));
	CHECK_EQ(t.seg_sectors, 2048);
	CHECK(!table("x 000256 01 0", &t));
	CHECK_EQ(t.seg_sectors, 256);
}

/* The texts tests/guest/test_redcap_faults.py expects from the kernel. */
CTEST(table_errors)
{
	static const struct ctest_refusal bad[] = {
		{ "", "Invalid argument count" },
		{ "d 256", "Invalid argument count" },
		{ "d abc 16", "Invalid segment size" },
		{ "d 24 16", "Segment size must be a power of 2" },
		{ "d 4 16", "Invalid segment size" },
		{ "d 4096 16", "Invalid segment size" },
		{ "d +256 16", "Invalid segment size" },
		{ "d 4294967552 16", "Invalid segment size" },
		{ "d 256 0", "Invalid number of segments" },
		{ "d 256 x", "Invalid number of segments" },
		{ "d 256 16777217", "Invalid number of segments" },
		{ "d 256 16 9 policy off write_policy update estimator spk model x y",
		  "Invalid number of feature args" },
		{ "d 256 16 x", "Invalid number of feature args" },
		{ "d 256 16 -1", "Invalid number of feature args" },
		{ "d 256 16 2 policy", "Invalid number of feature args" },
		{ "d 256 16 1 bogus", "Unrecognised feature requested" },
		{ "d 256 16 1 policy", "Feature policy requires a name" },
		{ "d 256 16 2 policy bogus", "Unknown policy" },
		{ "d 256 16 4 policy off policy always", "Feature policy duplicated" },
		{ "d 256 16 1 write_policy", "Feature write_policy requires a name" },
		{ "d 256 16 2 write_policy bogus", "Unknown write_policy" },
		{ "d 256 16 4 write_policy update write_policy invalidate",
		  "Feature write_policy duplicated" },
		{ "d 256 16 1 estimator", "Feature estimator requires a name" },
		{ "d 256 16 2 estimator bogus", "Unknown estimator" },
		{ "d 256 16 4 estimator spk estimator spk", "Feature estimator duplicated" },
		{ "d 256 16 1 model", "Feature model requires a device" },
		{ "d 256 16 4 model a model b", "Feature model duplicated" },
		{ "d 256 16 2 policy off extra", "Too many arguments" },
		/* A bad feature is named before the words left over. */
		{ "d 256 16 2 policy bogus extra", "Unknown policy" },
		{ "d 256 16 0 extra", "Too many arguments" },
	};
	CHECK_REFUSALS(bad, refused_table);
}

CTEST(message_verbs)
{
	struct rc_msg m;

	CHECK(!message("stats", &m));
	CHECK_EQ(m.verb, RC_MSG_STATS);
	CHECK(!message("RESET_STATS", &m));
	CHECK_EQ(m.verb, RC_MSG_RESET_STATS);
	CHECK(!message("drop_cache", &m));
	CHECK_EQ(m.verb, RC_MSG_DROP_CACHE);
	CHECK(!message("policy caware", &m));
	CHECK_EQ(m.verb, RC_MSG_POLICY);
	CHECK_EQ(m.value, RC_POLICY_CAWARE);
	CHECK(!message("write_policy UPDATE", &m));
	CHECK_EQ(m.verb, RC_MSG_WRITE_POLICY);
	CHECK_EQ(m.value, RC_WRITE_UPDATE);
	CHECK(!message("estimator vdisk", &m));
	CHECK_EQ(m.verb, RC_MSG_ESTIMATOR);
	CHECK_EQ(m.value, RC_EST_VDISK);
	CHECK(!message("set window 1000000", &m));
	CHECK_EQ(m.verb, RC_MSG_SET);
	CHECK_EQ(m.key, RC_TUN_WINDOW);
	CHECK_EQ(m.uvalue, 1000000);
	CHECK(!message("set margin 0", &m));
	CHECK_EQ(m.key, RC_TUN_MARGIN);
	CHECK(!message("set decay_ms 3600000", &m));
	CHECK_EQ(m.key, RC_TUN_DECAY_MS);
	CHECK_EQ(m.uvalue, 3600000);
	CHECK(!message("set budget_share 0", &m));
	CHECK_EQ(m.key, RC_TUN_BUDGET_SHARE);
	CHECK_EQ(m.uvalue, 0);
	CHECK(!message("set budget_share 1000000", &m));
	CHECK_EQ(m.uvalue, 1000000);
	CHECK(!message("set budget_cap_ms 3600000", &m));
	CHECK_EQ(m.key, RC_TUN_BUDGET_CAP_MS);
	CHECK_EQ(m.uvalue, 3600000);
	CHECK(!message("set prefetch 8", &m));
	CHECK_EQ(m.key, RC_TUN_PREFETCH);
	CHECK_EQ(m.uvalue, 8);
	CHECK(!message("chosen", &m));
	CHECK_EQ(m.verb, RC_MSG_CHOSEN);
	CHECK_EQ(m.uvalue, 0);
	CHECK(!message("chosen 4294967295", &m));
	CHECK_EQ(m.uvalue, 4294967295u);
	CHECK(!message("prefill 1 2 3", &m));
	CHECK_EQ(m.verb, RC_MSG_PREFILL);
}

/*
 * Every tunable set through the shared accessor reads back, set in the
 * module that owns it; the cap bounds the balance.  Six: what the
 * simulator found worth a knob; and HDC's two, its share and its period.
 */
CTEST(tunables_set_and_read_back)
{
	static const u32 values[RC_TUN_NR] = { 64, 10, 250, 0, 7, 5, 20, 60 };
	size_t sz = rc_cache_mem_size(4);
	struct rc_cache c;
	void *mem = malloc(sz);
	u32 v = 0;
	int k;

	CHECK_EQ(rc_cache_init(&c, mem, 4, 8, 0), 0);
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_WINDOW), RC_ADAPT_WINDOW);
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_DECAY_MS), RC_CAWARE_DECAY_MS);
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_BUDGET_SHARE), RC_BUDGET_SHARE);	/* on */
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_BUDGET_CAP_MS), RC_BUDGET_CAP_MS);
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_PREFETCH), RC_PREFETCH_DEFAULT);	/* 8 */
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_HDC), RC_HDC_SHARE);		/* a quarter */
	CHECK_EQ(RC_HDC_SHARE, 25);
	CHECK_EQ(rc_get_tunable(&c, RC_TUN_HOT_PERIOD), RC_HOT_PERIOD_S);
	CHECK_EQ(RC_PREFETCH_DEFAULT, 8);
	c.budget.balance = 50000000;
	for (k = 0; k < RC_TUN_NR; k++)
		rc_set_tunable(&c, k, values[k]);
	for (k = 0; k < RC_TUN_NR; k++)
		CHECK_EQ(rc_get_tunable(&c, k), values[k]);
	CHECK_EQ(c.adapt.window, 64);
	CHECK_EQ(c.caware.interval_ns, 250000000);
	CHECK_EQ(c.budget.cap_ns, 7000000);
	CHECK_EQ(c.budget.balance, 7000000);
	CHECK_EQ(c.prefetch, 5);
	CHECK_EQ(c.hdc_share, 20);
	CHECK_EQ(c.hot_period_s, 60);
	CHECK_EQ(c.adapt.margin, 10);
	CHECK_EQ(c.budget.share, 0);
	/* each module answers for its own keys only, and changes nothing else */
	CHECK(!rc_adapt_set(&c.adapt, RC_TUN_DECAY_MS, 1));
	CHECK(!rc_caware_set(&c.caware, RC_TUN_WINDOW, 1));
	CHECK(!rc_budget_set(&c.budget, RC_TUN_PREFETCH, 1));
	CHECK(!rc_budget_get(&c.budget, RC_TUN_MARGIN, &v));
	for (k = 0; k < RC_TUN_NR; k++)
		CHECK_EQ(rc_get_tunable(&c, k), values[k]);
	CHECK(!strcmp(rc_tunable_name(RC_TUN_BUDGET_CAP_MS), "budget_cap_ms"));
	CHECK(!strcmp(rc_tunable_name(RC_TUN_NR), "?"));
	free(mem);
}

/* The texts tests/guest/test_redcap_faults.py expects in the kernel log. */
CTEST(message_errors)
{
	static const struct ctest_refusal bad[] = {
		{ "", "Empty message" },
		{ "frobnicate", "Unrecognised message 'frobnicate'" },
		{ "policy", "policy: wrong number of arguments" },
		{ "policy bogus", "policy: unknown policy 'bogus'" },
		{ "write_policy bogus", "write_policy: unknown write policy 'bogus'" },
		{ "stats extra", "stats: wrong number of arguments" },
		{ "reset_stats now", "reset_stats: wrong number of arguments" },
		{ "drop_cache now", "drop_cache: wrong number of arguments" },
		{ "estimator", "estimator: wrong number of arguments" },
		{ "estimator bogus", "estimator: unknown estimator 'bogus'" },
		{ "set window", "set: wrong number of arguments" },
		{ "set bogus 1", "set: unknown key 'bogus'" },
		{ "set window 0", "set: window must be 1..1000000" },
		{ "set window 1000001", "set: window must be 1..1000000" },
		{ "set margin 100", "set: margin must be 0..99" },
		{ "set dwell 2", "set: unknown key 'dwell'" },
		{ "set decay_ms 3600001", "set: decay_ms must be 0..3600000" },
		{ "set margin 0x10", "set: margin must be 0..99" },
		{ "set budget_share 1000001", "set: budget_share must be 0..1000000" },
		{ "set budget_cap_ms -1", "set: budget_cap_ms must be 0..3600000" },
		{ "set prefetch 9", "set: prefetch must be 0..8" },
		{ "set prefetch_forward 0", "set: unknown key 'prefetch_forward'" },
		{ "set prefetch_pairs 1", "set: unknown key 'prefetch_pairs'" },
		{ "set margin 18446744073709551626", "set: margin must be 0..99" },
		{ "chosen x", "chosen: FROM must be 0..4294967295" },
		{ "chosen 4294967296", "chosen: FROM must be 0..4294967295" },
		{ "chosen 1 2", "chosen: wrong number of arguments" },
		{ "prefill", "prefill: wrong number of arguments" },
	};
	CHECK_REFUSALS(bad, refused_message);
}

/* A long word is cut to the buffer, never written past it. */
CTEST(message_error_truncated_to_buffer)
{
	char word[300], buf[16], *argv[1] = { word };
	struct rc_msg m;
	const char *err;

	memset(word, 'x', sizeof(word) - 1);
	word[sizeof(word) - 1] = '\0';
	err = rc_parse_message(1, argv, &m, buf, sizeof(buf));
	CHECK(err == buf);
	CHECK_STREQ(err, "Unrecognised me");
}

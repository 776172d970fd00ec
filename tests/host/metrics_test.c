// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of redcapctl stats --format prometheus's formatting
 * (userspace/metrics.c): stats answers in, the exact exposition text out.
 * With METRICS_TEST_OUT=DIR each test also leaves its text in
 * DIR/<test>.prom, for promtool (test_metrics.py).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>

#include "ctest.h"
#include "metrics.h"
#include "rc-args.h"

/* What the target answers, every key in its order (redcap_msg_stats()). */
static const char full_answer[] =
	"state=active\npolicy=adaptive+caware\nwrite_policy=invalidate\n"
	"segment_sectors=256\nsegments=512\nsegments_valid=380\nsegments_filling=2\n"
	"segments_ghost=17\nsegments_bare=19\nreads=120000\nread_hits=90000\nread_hits_waited=1200\n"
	"read_misses=20000\nread_bypassed=8700\nread_bypassed_busy=3\ncaware_bypassed=5000\n"
	"read_bypassed_nomem=0\nread_bypassed_held=0\nread_resent=100\n"
	"read_bypassed_inactive=2000\nread_bypassed_budget=1500\nread_bypassed_joined=190\n"
	"read_joined=400\nprefetches=3000\nprefetch_hits=2500\nprefetch_unused=120\n"
	"prefetch_paired=60\nsim_hits=7000\nsim_misses=900\nfill_ios=21000\n"
	"fill_sectors=5376000\nfill_errors=0\nfill_stale=4\nfill_joined=30\nfill_along=12\n"
	"writes=4000\nwrite_sectors=64000\ninvalidations=800\nupdates=0\nwrite_allocs=2\n"
	"write_cache=on\nwrite_cached=3100\nwrite_through=900\nwrite_waits=7\n"
	"read_bypassed_partial=40\n"
	"dirty_segments=60\ndirty_max=128\ndirty_sectors=4096\nwrites_inflight=3\ndirty_age_ms=2500\n"
	"writeback_ios=700\nwriteback_sectors=90000\nwriteback_errors=1\n"
	"writeback_error=-5\nflushes=210\ndirty_dropped=2\ngiven_back=23\nregrown=4\n"
	"evictions=19000\nx2_fills_saved=880\nx4_fills_saved=1200\n"
	"hdc_pinned=100\nhdc_max=128\nhdc_fills=140\nhdc_hits=9000\n"
	"hdc_dropped=1\nhot_periods=5\n"
	"model=253:4\nvdisk_requests=41000\nvdisk_time_us=512345678\nvdisk_unestimated=7\n"
	"estimator=vdisk\nwindow=128\nmargin=3\ndecay_ms=1000\nbudget_share=128\n"
	"budget_cap_ms=100\nprefetch=2\nhdc=25\nhot_period=3600\ndirty=25\nswitches=4\nwindows=937\nwindows_unjudged=12\n"
	"cache_time_us=401234567\nest_disk_time_us=612000000\nlast_cache_time_us=350100\n"
	"last_est_disk_time_us=512000\nspell_cache_time_us=9600300\nspell_est_disk_time_us=15360000\n"
	"budget_us=-1500\nbudget_earned_us=9000000\n"
	"budget_spent_us=8990000\nbudget_ghost_us=2500\nbudget_ghost_earned_us=40000\n"
	"budget_fill_extra_us=850\ncaware_rule1=100\ncaware_rule2=0\ncaware_rule3=7\n"
	"caware_rule4=0\ncaware_rule5=60\ncaware_rule6=2\ncaware_decays=30\ncaware_probes=8\n"
	"caware_cache_read_us=120\ncaware_cache_read_n=90000\n"
	"caware_direct_cache_read_us=0\ncaware_direct_cache_read_n=0\n"
	"caware_source_read_us=8123\ncaware_source_read_n=20000\n"
	"caware_cache_write_us=0\ncaware_cache_write_n=0\n"
	"caware_direct_cache_write_us=0\ncaware_direct_cache_write_n=0\n"
	"caware_source_write_us=9500\ncaware_source_write_n=4000\n";

static struct metrics_stack st[4];
static char texts[4][8192];

/* Stack @i named @name: @answer's metrics, or @kind's (linear, failed). */
static void stack(int i, const char *name, enum metrics_kind kind, const char *answer)
{
	char why[160];

	st[i].name = name;
	st[i].kind = kind;
	st[i].n = 0;
	if (kind != METRICS_CACHE)
		return;
	CHECK(strlen(answer) < sizeof(texts[i]));
	strcpy(texts[i], answer);
	if (metrics_parse(&st[i], texts[i], why, sizeof(why))) {
		fprintf(stderr, "metrics_parse: %s\n", why);
		CHECK(0);
	}
}

/* The text of @nr stacks; also DIR/@test.prom with METRICS_TEST_OUT=DIR. */
static const char *render(size_t nr, const char *test)
{
	static char *buf;
	const char *dir = getenv("METRICS_TEST_OUT");
	size_t size;
	FILE *f;

	free(buf);
	f = open_memstream(&buf, &size);
	CHECK(f);
	CHECK_EQ(metrics_write(f, st, nr), 0);
	CHECK(!fclose(f));
	if (dir) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s.prom", dir, test);
		f = fopen(path, "w");
		CHECK(f);
		fputs(buf, f);
		CHECK(!fclose(f));
	}
	return buf;
}

/* Why metrics_parse() refuses @answer. */
static const char *refusal(const char *answer)
{
	static char why[160];

	strcpy(texts[0], answer);
	why[0] = '\0';
	CHECK_EQ(metrics_parse(&st[0], texts[0], why, sizeof(why)), -1);
	return why;
}

/* The one sample line of @metric in @text, without the name: "{...} v". */
static const char *sample(const char *text, const char *metric)
{
	static char line[512];
	const char *p = text, *end;
	int found = 0;

	line[0] = '\0';
	while ((p = strstr(p, metric))) {
		if ((p == text || p[-1] == '\n') && p[strlen(metric)] == '{') {
			end = strchr(p, '\n');
			snprintf(line, sizeof(line), "%.*s", (int)(end - p - strlen(metric)),
				 p + strlen(metric));
			found++;
		}
		p += strlen(metric);
	}
	CHECK_EQ(found, 1);
	return line;
}

/* --- exact text ------------------------------------------------------------ */

CTEST(metrics_of_a_stack_exactly)
{
	stack(0, "srv", METRICS_CACHE,
	      "state=inactive\npolicy=adaptive\nwrite_policy=update\nsegment_sectors=128\n"
	      "segments=64\nreads=7\nfill_sectors=3\nmodel=none\nvdisk_time_us=1500\n"
	      "estimator=spk\nmargin=5\ndecay_ms=1500\nbudget_us=-2500000\n"
	      "caware_source_read_us=8123\ncaware_source_read_n=20\n");
	CHECK_STREQ(render(1, "metrics_of_a_stack_exactly"),
		"# HELP redcap_cache_present Whether the stack has its cache: 0 for a linear "
		"device over the origin\n"
		"# TYPE redcap_cache_present gauge\n"
		"redcap_cache_present{stack=\"srv\"} 1\n"
		"# HELP redcap_info The cache's policy, estimator and write policy (stats keys "
		"policy, estimator, write_policy)\n"
		"# TYPE redcap_info gauge\n"
		"redcap_info{stack=\"srv\",policy=\"adaptive\",estimator=\"spk\","
		"write_policy=\"update\"} 1\n"
		"# HELP redcap_active Whether the cache is active: 1 if the stats key state is "
		"active, else 0\n"
		"# TYPE redcap_active gauge\n"
		"redcap_active{stack=\"srv\"} 0\n"
		"# HELP redcap_segment_bytes Size of a cache segment (stats key segment_sectors, "
		"in bytes)\n"
		"# TYPE redcap_segment_bytes gauge\n"
		"redcap_segment_bytes{stack=\"srv\"} 65536\n"
		"# HELP redcap_segments Segments of the cache (stats key segments)\n"
		"# TYPE redcap_segments gauge\n"
		"redcap_segments{stack=\"srv\"} 64\n"
		"# HELP redcap_reads_total Counter reads of the stats message\n"
		"# TYPE redcap_reads_total counter\n"
		"redcap_reads_total{stack=\"srv\"} 7\n"
		"# HELP redcap_fill_bytes_total Counter fill_sectors of the stats message, in "
		"bytes\n"
		"# TYPE redcap_fill_bytes_total counter\n"
		"redcap_fill_bytes_total{stack=\"srv\"} 1536\n"
		"# HELP redcap_vdisk_time_seconds_total Counter vdisk_time_us of the stats "
		"message, in seconds\n"
		"# TYPE redcap_vdisk_time_seconds_total counter\n"
		"redcap_vdisk_time_seconds_total{stack=\"srv\"} 0.0015\n"
		"# HELP redcap_margin_ratio Tunable: how much the losing side must lose by (stats "
		"key margin, as a ratio)\n"
		"# TYPE redcap_margin_ratio gauge\n"
		"redcap_margin_ratio{stack=\"srv\"} 0.05\n"
		"# HELP redcap_decay_seconds Tunable decay_ms of the stats message, in seconds\n"
		"# TYPE redcap_decay_seconds gauge\n"
		"redcap_decay_seconds{stack=\"srv\"} 1.5\n"
		"# HELP redcap_budget_seconds Balance of the speculation budget, negative while "
		"fills wait for it (stats key budget_us, in seconds)\n"
		"# TYPE redcap_budget_seconds gauge\n"
		"redcap_budget_seconds{stack=\"srv\"} -2.5\n"
		"# HELP redcap_caware_source_read_seconds C-Aware's mean time of the requests of "
		"its class (stats key caware_source_read_us, in seconds)\n"
		"# TYPE redcap_caware_source_read_seconds gauge\n"
		"redcap_caware_source_read_seconds{stack=\"srv\"} 0.008123\n"
		"# HELP redcap_caware_source_read_requests_total Requests of its class C-Aware "
		"timed (stats key caware_source_read_n)\n"
		"# TYPE redcap_caware_source_read_requests_total counter\n"
		"redcap_caware_source_read_requests_total{stack=\"srv\"} 20\n");
}

CTEST(metrics_families_come_once_with_every_stack_under_them)
{
	stack(0, "srv", METRICS_CACHE, "state=inactive\npolicy=off\nreads=7\nbudget_us=-1\n");
	stack(1, "data", METRICS_CACHE, "state=active\npolicy=always\nreads=9\nwrites=2\n"
	      "budget_us=0\n");
	stack(2, "old", METRICS_LINEAR, NULL);
	stack(3, "gone", METRICS_FAILED, NULL);
	CHECK_STREQ(render(4, "metrics_families_come_once_with_every_stack_under_them"),
		"# HELP redcap_cache_present Whether the stack has its cache: 0 for a linear "
		"device over the origin\n"
		"# TYPE redcap_cache_present gauge\n"
		"redcap_cache_present{stack=\"srv\"} 1\n"
		"redcap_cache_present{stack=\"data\"} 1\n"
		"redcap_cache_present{stack=\"old\"} 0\n"
		"# HELP redcap_scrape_error Whether the stack could not be read (redcapctl said "
		"why on standard error)\n"
		"# TYPE redcap_scrape_error gauge\n"
		"redcap_scrape_error{stack=\"gone\"} 1\n"
		"# HELP redcap_info The cache's policy, estimator and write policy (stats keys "
		"policy, estimator, write_policy)\n"
		"# TYPE redcap_info gauge\n"
		"redcap_info{stack=\"srv\",policy=\"off\"} 1\n"
		"redcap_info{stack=\"data\",policy=\"always\"} 1\n"
		"# HELP redcap_active Whether the cache is active: 1 if the stats key state is "
		"active, else 0\n"
		"# TYPE redcap_active gauge\n"
		"redcap_active{stack=\"srv\"} 0\n"
		"redcap_active{stack=\"data\"} 1\n"
		"# HELP redcap_reads_total Counter reads of the stats message\n"
		"# TYPE redcap_reads_total counter\n"
		"redcap_reads_total{stack=\"srv\"} 7\n"
		"redcap_reads_total{stack=\"data\"} 9\n"
		"# HELP redcap_budget_seconds Balance of the speculation budget, negative while "
		"fills wait for it (stats key budget_us, in seconds)\n"
		"# TYPE redcap_budget_seconds gauge\n"
		"redcap_budget_seconds{stack=\"srv\"} -0.000001\n"
		"redcap_budget_seconds{stack=\"data\"} 0\n"
		"# HELP redcap_writes_total Counter writes of the stats message\n"
		"# TYPE redcap_writes_total counter\n"
		"redcap_writes_total{stack=\"data\"} 2\n");
}

CTEST(metrics_a_linear_stack_has_cache_present_0_and_nothing_else)
{
	stack(0, "old", METRICS_LINEAR, NULL);
	CHECK_STREQ(render(1, "metrics_a_linear_stack_has_cache_present_0_and_nothing_else"),
		"# HELP redcap_cache_present Whether the stack has its cache: 0 for a linear "
		"device over the origin\n"
		"# TYPE redcap_cache_present gauge\n"
		"redcap_cache_present{stack=\"old\"} 0\n");
}

CTEST(metrics_a_stack_not_read_is_a_scrape_error_alone)
{
	stack(0, "gone", METRICS_FAILED, NULL);
	CHECK_STREQ(render(1, "metrics_a_stack_not_read_is_a_scrape_error_alone"),
		"# HELP redcap_scrape_error Whether the stack could not be read (redcapctl said "
		"why on standard error)\n"
		"# TYPE redcap_scrape_error gauge\n"
		"redcap_scrape_error{stack=\"gone\"} 1\n");
}

CTEST(metrics_of_no_stack_are_empty)
{
	CHECK_STREQ(render(0, "metrics_of_no_stack_are_empty"), "");
}

/* --- names, types and units ------------------------------------------------ */

CTEST(metrics_of_keys_no_rule_knows_are_counters_in_the_unit_of_their_suffix)
{
	stack(0, "x", METRICS_CACHE, "new_thing=5\nnew_wait_us=1500000\nnew_read_sectors=3\n"
	      "new_delay_ms=250\nnew_age_s=9\n");
	const char *text = render(1, "metrics_of_keys_no_rule_knows_are_counters_in_the_unit_"
				  "of_their_suffix");

	CHECK_STREQ(sample(text, "redcap_new_thing_total"), "{stack=\"x\"} 5");
	CHECK_STREQ(sample(text, "redcap_new_wait_seconds_total"), "{stack=\"x\"} 1.5");
	CHECK_STREQ(sample(text, "redcap_new_read_bytes_total"), "{stack=\"x\"} 1536");
	CHECK_STREQ(sample(text, "redcap_new_delay_seconds_total"), "{stack=\"x\"} 0.25");
	CHECK_STREQ(sample(text, "redcap_new_age_seconds_total"), "{stack=\"x\"} 9");
	CHECK(strstr(text, "# TYPE redcap_new_wait_seconds_total counter\n"));
	CHECK(strstr(text, "# HELP redcap_new_read_bytes_total Counter new_read_sectors of the "
		     "stats message, in bytes\n"));
}

CTEST(metrics_every_tunable_of_the_target_is_a_gauge)
{
	char answer[64];

	for (int t = 0; t < RC_TUN_NR; t++) {
		snprintf(answer, sizeof(answer), "%s=1\n", rc_tunable_name((enum rc_tunable)t));
		stack(0, "x", METRICS_CACHE, answer);
		CHECK_EQ(st[0].n, 1);
		CHECK_EQ(st[0].kv[0].type, METRICS_GAUGE);
		CHECK(!strstr(st[0].kv[0].metric, "_total"));
		CHECK(strstr(render(1, "metrics_every_tunable_of_the_target_is_a_gauge"), " gauge\n"));
	}
}

CTEST(metrics_values_are_exact_decimals)
{
	stack(0, "x", METRICS_CACHE, "budget_us=1\nbudget_ghost_us=-0\nvdisk_time_us=1234567\n"
	      "cache_time_us=18446744073709551615\nfill_sectors=36028797018963967\n"
	      "write_sectors=36028797018963968\nmargin=99\nbudget_cap_ms=3600000\n");
	const char *text = render(1, "metrics_values_are_exact_decimals");

	CHECK_STREQ(sample(text, "redcap_budget_seconds"), "{stack=\"x\"} 0.000001");
	CHECK_STREQ(sample(text, "redcap_budget_ghost_seconds"), "{stack=\"x\"} 0");
	CHECK_STREQ(sample(text, "redcap_vdisk_time_seconds_total"), "{stack=\"x\"} 1.234567");
	CHECK_STREQ(sample(text, "redcap_cache_time_seconds_total"),
		    "{stack=\"x\"} 18446744073709.551615");
	CHECK_STREQ(sample(text, "redcap_fill_bytes_total"),
		    "{stack=\"x\"} 18446744073709551104");
	/* Beyond 64 bits of bytes: as a float, which is what Prometheus keeps anyway. */
	CHECK_STREQ(sample(text, "redcap_write_bytes_total"),
		    "{stack=\"x\"} 1.8446744073709552e+19");
	CHECK_STREQ(sample(text, "redcap_margin_ratio"), "{stack=\"x\"} 0.99");
	CHECK_STREQ(sample(text, "redcap_budget_cap_seconds"), "{stack=\"x\"} 3600");
}

CTEST(metrics_text_values_and_odd_keys_make_no_metric)
{
	stack(0, "x", METRICS_CACHE, "model=253:4\ncolour=blue\nodd-key=3\ndecay_ms=oops\nreads=1\n");
	CHECK_STREQ(render(1, "metrics_text_values_and_odd_keys_make_no_metric"),
		"# HELP redcap_cache_present Whether the stack has its cache: 0 for a linear "
		"device over the origin\n"
		"# TYPE redcap_cache_present gauge\n"
		"redcap_cache_present{stack=\"x\"} 1\n"
		"# HELP redcap_info The cache's policy, estimator and write policy (stats keys "
		"policy, estimator, write_policy)\n"
		"# TYPE redcap_info gauge\n"
		"redcap_info{stack=\"x\"} 1\n"
		"# HELP redcap_reads_total Counter reads of the stats message\n"
		"# TYPE redcap_reads_total counter\n"
		"redcap_reads_total{stack=\"x\"} 1\n");
}

CTEST(metrics_label_values_are_escaped)
{
	stack(0, "a\\b\"c", METRICS_CACHE, "policy=p\"q\\r\n");
	CHECK_STREQ(sample(render(1, "metrics_label_values_are_escaped"), "redcap_info"),
		    "{stack=\"a\\\\b\\\"c\",policy=\"p\\\"q\\\\r\"} 1");
}

/* --- answers refused --------------------------------------------------------- */

CTEST(metrics_refuse_a_bad_answer_and_say_why)
{
	char many[METRICS_MAX_KEYS * 16 + 16];
	size_t n = 0;

	CHECK_STREQ(refusal("reads=1\nrubbish\n"),
		    "bad answer to 'stats': 'rubbish' is not key=value");
	CHECK_STREQ(refusal("=3\n"), "bad answer to 'stats': '=3' is not key=value");
	CHECK_STREQ(refusal("reads=1\nreads=2\n"), "bad answer to 'stats': reads= twice");
	CHECK_STREQ(refusal("reads=-1\n"),
		    "bad answer to 'stats': reads=-1: a counter below zero");
	CHECK_STREQ(refusal("reads=18446744073709551616\n"),
		    "bad answer to 'stats': reads=18446744073709551616: out of range");
	CHECK_STREQ(refusal("segments=many\n"),
		    "bad answer to 'stats': segments=many: not a number");
	for (int i = 0; i <= METRICS_MAX_KEYS; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "k%d=1\n", i);
	CHECK_STREQ(refusal(many), "bad answer to 'stats': more than 256 lines");
}

/* --- the whole answer -------------------------------------------------------- */

CTEST(metrics_of_the_whole_answer_have_every_number_once)
{
	char copy[sizeof(full_answer)], *line, *save = NULL, metric[METRICS_NAME_MAX + 8];
	const char *text;
	int samples = 0, numbers = 0;

	stack(0, "data", METRICS_CACHE, full_answer);
	text = render(1, "metrics_of_the_whole_answer_have_every_number_once");
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		samples += p[1] && p[1] != '#';
	strcpy(copy, full_answer);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *val = strchr(line, '=') + 1;

		if (strspn(val, "-0123456789") != strlen(val))
			continue;
		numbers++;
	}
	/* Every number a sample, plus cache_present, info and active. */
	CHECK_EQ(samples, numbers + 3);
	CHECK_EQ(numbers, st[0].n - 6);		/* not: state, the 3 names, write_cache, model */
	for (int i = 0; i < st[0].n; i++) {
		if (!st[0].kv[i].metric[0])
			continue;
		snprintf(metric, sizeof(metric), "\n%s{", st[0].kv[i].metric);
		CHECK(strstr(text, metric));
		snprintf(metric, sizeof(metric), "# TYPE %s ", st[0].kv[i].metric);
		CHECK(strstr(text, metric) && !strstr(strstr(text, metric) + 1, metric));
	}
	CHECK_STREQ(sample(text, "redcap_read_hits_total"), "{stack=\"data\"} 90000");
	CHECK_STREQ(sample(text, "redcap_caware_rule5_total"), "{stack=\"data\"} 60");
	CHECK_STREQ(sample(text, "redcap_segment_bytes"), "{stack=\"data\"} 131072");
	CHECK_STREQ(sample(text, "redcap_budget_fill_extra_seconds"), "{stack=\"data\"} 0.00085");
}

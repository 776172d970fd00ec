// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the vdisk table line and message parsers
 * (dm-vdisk-model/vd-args.c): what each accepts, and the exact error
 * texts the target reports for what it refuses.
 */
#include "ctest.h"
#include "vd-args.h"

#define MAX_WORDS 32
#define ROWS 64
#define COLS 19

static char *argv_msg[MAX_WORDS];

static const char *table(const char *line, struct vd_table_args *t)
{
	char *argv[MAX_WORDS];

	return vd_parse_table(ctest_words(line, argv, MAX_WORDS), argv, t);
}

static const char *refused_table(const char *line)
{
	struct vd_table_args t;

	return table(line, &t);
}

static const char *message(const char *line, struct vd_msg *m, unsigned int *argc)
{
	static char buf[128];
	unsigned int n = ctest_words(line, argv_msg, MAX_WORDS);

	if (argc)
		*argc = n;
	return vd_parse_message(n, argv_msg, ROWS, COLS, m, buf, sizeof(buf));
}

static const char *refused_message(const char *line)
{
	struct vd_msg m;

	return message(line, &m, NULL);
}

CTEST(table_defaults)
{
	struct vd_table_args t;

	CHECK(!table("/dev/sdb", &t));
	CHECK_STREQ(t.dev, "/dev/sdb");
	CHECK_EQ(t.features, 0);
	CHECK_EQ(t.mode, VD_MODE_MEASURE);
	CHECK(t.profile == &vd_drive_profiles[0]);
	CHECK(!memcmp(&t.params, &vd_drive_profiles[0].p, sizeof(t.params)));
	CHECK_EQ(t.capacity, 0);
	CHECK_EQ(t.seed, 1);
	CHECK_EQ(t.rows, VD_DEFAULT_ROWS);
}

/* Explicit values land on the profile's whatever their order. */
CTEST(table_features_over_profile)
{
	const struct vd_drive_profile *pr = vd_drive_profile("hdd15k");
	struct vd_table_args t;

	CHECK(pr);
	CHECK(!table("d 12 rpm 5400 MODE Emulate profile hdd15k capacity 1000 seed 0 "
		     "rows 2048", &t));
	CHECK_EQ(t.features, (1u << VDF_RPM) | (1u << VDF_MODE) | (1u << VDF_PROFILE) |
		 (1u << VDF_CAPACITY) | (1u << VDF_SEED) | (1u << VDF_ROWS));
	CHECK(t.profile == pr);
	CHECK_EQ(t.params.rpm, 5400);
	CHECK_EQ(t.params.cylinders, pr->p.cylinders);
	CHECK_EQ(t.mode, VD_MODE_EMULATE);
	CHECK_EQ(t.capacity, 1000);
	CHECK_EQ(t.seed, 0);
	CHECK_EQ(t.rows, 2048);

	CHECK(!table("d 13 seek 1 2 3 4 5 cache 0 0 overhead_us 1000000 readahead 7", &t));
	CHECK_EQ(t.params.seek_alpha_ns, 1);
	CHECK_EQ(t.params.seek_delta_ns, 5);
	CHECK_EQ(t.params.nr_segs, 0);
	CHECK_EQ(t.params.overhead_ns, 1000000000u);
	CHECK_EQ(t.params.ra_sectors, 7);
}

/* A device without platters: rpm 0, its latency and I/O cap, no cache. */
CTEST(table_flat_device)
{
	const struct vd_drive_profile *pr = vd_drive_profile("st1");
	struct vd_table_args t;

	CHECK(pr);
	CHECK(!table("d 2 profile st1", &t));
	CHECK(!memcmp(&t.params, &pr->p, sizeof(t.params)));
	CHECK_EQ(t.params.rpm, 0);
	CHECK_EQ(t.params.latency_ns, 3000000);
	CHECK_EQ(t.params.iops, 500);
	CHECK_EQ(t.params.io_sectors, 2048);

	CHECK(!table("d 7 profile nbd latency_us 250 iops 1000 0", &t));
	CHECK_EQ(t.features, (1u << VDF_PROFILE) | (1u << VDF_LATENCY) | (1u << VDF_IOPS));
	CHECK_EQ(t.params.latency_ns, 250000);
	CHECK_EQ(t.params.iops, 1000);
	CHECK_EQ(t.params.io_sectors, 0);
	CHECK_EQ(t.params.media_mbps, 117);

	CHECK(!table("d 5 rpm 0 cache 0 0", &t));
	CHECK_EQ(t.params.rpm, 0);
	CHECK_EQ(t.params.nr_segs, 0);
}

/* The texts tests/guest/test_vdisk.py expects from the kernel. */
CTEST(table_errors)
{
	static const struct ctest_refusal bad[] = {
		{ "", "Missing device argument" },
		{ "d 3 mode emulate", "Invalid number of feature args" },
		{ "d 41", "Invalid number of feature args" },
		{ "d x", "Invalid number of feature args" },
		{ "d 1 turbo", "Unrecognised feature requested" },
		{ "d 2 mode fast", "Invalid mode" },
		{ "d 2 profile ssd", "Unknown profile" },
		{ "d 4 mode emulate mode measure", "Duplicate feature" },
		{ "d 2 capacity 0", "Invalid capacity" },
		{ "d 2 capacity 18446744073709551616", "Invalid capacity" },
		{ "d 2 seed -1", "Invalid seed" },
		{ "d 2 rows 0", "Invalid rows" },
		{ "d 2 rows 4096", "Invalid rows" },
		{ "d 2 rpm x", "Invalid rpm" },
		{ "d 2 rpm 0", "Invalid drive parameters" },
		{ "d 4 profile nbd rpm 7200", "Invalid drive parameters" },
		{ "d 2 latency_us 1000001", "Invalid latency_us" },
		{ "d 2 iops 500", "Invalid iops" },
		{ "d 3 iops 500 x", "Invalid iops" },
		{ "d 2 cylinders 0", "Invalid cylinders" },
		{ "d 3 seek 1 2", "Invalid seek curve" },
		{ "d 6 seek 1 2 3 4 x", "Invalid seek curve" },
		{ "d 3 cache 65 512", "Invalid cache geometry" },
		{ "d 3 cache 4 0", "Invalid cache geometry" },
		{ "d 2 media_mbps 0", "Invalid media_mbps" },
		{ "d 2 bus_mbps 0", "Invalid bus_mbps" },
		{ "d 2 overhead_us 1000001", "Invalid overhead_us" },
		{ "d 2 readahead 4294967296", "Invalid readahead" },
		{ "d 1 mode", "Invalid mode" },
		{ "d 2 mode emulate extra", "Too many arguments" },
	};
	CHECK_REFUSALS(bad, refused_table);
}

CTEST(message_verbs)
{
	unsigned int argc;
	struct vd_msg m;
	u32 col, n;
	u64 sum;

	CHECK(!message("stats", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_STATS);
	CHECK(!message("reset", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_RESET);
	CHECK(!message("reset_stats", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_RESET_STATS);
	CHECK(!message("mode EMULATE", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_MODE);
	CHECK_EQ(m.mode, VD_MODE_EMULATE);
	CHECK(!message("train off", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_TRAIN);
	CHECK(!m.train);
	CHECK(!message("train 1", &m, NULL));
	CHECK(m.train);
	CHECK(!message("estimate write 9223372036854775807 8", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_ESTIMATE);
	CHECK_EQ(m.dir, VD_WRITE);
	CHECK(m.distance == INT64_MAX);
	CHECK_EQ(m.sectors, 8);
	CHECK(!message("estimate r -9223372036854775807 8", &m, NULL));
	CHECK(m.distance == -INT64_MAX);
	CHECK(!message("estimate r -8 1", &m, NULL));
	CHECK(m.distance == -8);
	CHECK(!message("estimate r -0 1", &m, NULL));
	CHECK(m.distance == 0);
	CHECK(!message("table r 60 4", &m, NULL));
	CHECK_EQ(m.verb, VD_MSG_TABLE);
	CHECK_EQ(m.row, 60);
	CHECK_EQ(m.nr_rows, 4);
	CHECK(!message("table w 0 0", &m, NULL));
	CHECK(!message("load w 63 0:64:274877906880 18:1:5", &m, &argc));
	CHECK_EQ(m.verb, VD_MSG_LOAD);
	CHECK_EQ(m.dir, VD_WRITE);
	CHECK_EQ(m.row, 63);
	CHECK_EQ(argc, 5);
	CHECK_EQ(m.first_cell, 3);
	CHECK_EQ(vd_parse_cell(argv_msg[3], &col, &n, &sum), 0);
	CHECK_EQ(col, 0);
	CHECK_EQ(n, 64);
	CHECK(sum == 64ULL * VD_MAX_SAMPLE_NS);
	CHECK(!message("load r 0", &m, &argc));
	CHECK_EQ(argc, 3);
	CHECK(!message("overlap 10000000", &m, &argc));
	CHECK_EQ(m.verb, VD_MSG_OVERLAP);
	CHECK(m.overlap_ns == VD_MAX_OVERLAP_NS);
	CHECK(!message("overlap 0", &m, &argc));
	CHECK(m.overlap_ns == 0);
	CHECK(!message("dcache learnt", &m, &argc));
	CHECK_EQ(m.verb, VD_MSG_DCACHE);
	CHECK(m.dcache_learnt);
	CHECK(!message("dcache none", &m, &argc));
	CHECK(!m.dcache_learnt);
	CHECK_EQ(m.dcache.nr_segs, 0);
	CHECK(!message("dcache 16 1024 512 150", &m, &argc));
	CHECK(!m.dcache_learnt);
	CHECK_EQ(m.dcache.nr_segs, 16);
	CHECK_EQ(m.dcache.seg_sectors, 1024);
	CHECK_EQ(m.dcache.ra_sectors, 512);
	CHECK_EQ(m.dcache.media_mbps, 150);
	CHECK(!message("dcache 0 0 0 0", &m, &argc));
	CHECK_EQ(m.dcache.nr_segs, 0);
}

CTEST(cells)
{
	static const char *const bad[] = {
		"", ":", "1:2", "1:2:", ":2:3", "1::3", "1:2:3:", "1:2:3x", "x:2:3",
		"4294967296:1:1", "1:4294967296:1", "1:1:18446744073709551616",
		"1:1:000000000000000000000000001", "-1:1:1",
	};
	u32 col, n;
	u64 sum;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!vd_parse_cell(bad[i], &col, &n, &sum)) {
			fprintf(stderr, "cell '%s' accepted\n", bad[i]);
			exit(1);
		}
	CHECK_EQ(vd_parse_cell("4294967295:0:18446744073709551615", &col, &n, &sum), 0);
	CHECK_EQ(col, 0xffffffffu);
	CHECK_EQ(n, 0);
	CHECK(sum == ~0ULL);
}

#define DCACHE_USAGE \
	"dcache: usage: dcache learnt|none|<segments 0..16> <segment sectors> " \
	"<readahead sectors> <media MB/s>"

/* The texts tests/guest/test_vdisk.py expects in the kernel log. */
CTEST(message_errors)
{
	static const struct ctest_refusal bad[] = {
		{ "", "Empty message" },
		{ "frobnicate", "Unrecognised message 'frobnicate'" },
		{ "stats now", "stats: wrong number of arguments" },
		{ "mode", "mode: wrong number of arguments" },
		{ "load r", "load: wrong number of arguments" },
		{ "mode fast", "mode: unknown mode 'fast'" },
		{ "train maybe", "train: expected on or off, not 'maybe'" },
		{ "estimate x 0 8", "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r 0 0", "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r 9223372036854775808 8",
		  "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r -9223372036854775808 8",
		  "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r --8 8", "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r +8 8", "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "estimate r - 8", "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>" },
		{ "table r 64 1", "table: usage: table <r|w> <first row> <nr rows> (rows 0..63)" },
		{ "table r 60 5", "table: usage: table <r|w> <first row> <nr rows> (rows 0..63)" },
		{ "table r 1 4294967295",
		  "table: usage: table <r|w> <first row> <nr rows> (rows 0..63)" },
		{ "load r 64", "load: usage: load <r|w> <row> [<col>:<n>:<sum ns>]..." },
		{ "load r 0 1:65:100", "load: bad cell '1:65:100'" },
		{ "load r 0 19:1:100", "load: bad cell '19:1:100'" },
		{ "load r 0 1:1:4294967296", "load: bad cell '1:1:4294967296'" },
		{ "load r 0 1:1:100x", "load: bad cell '1:1:100x'" },
		{ "load r 0 1:1:1 2:2", "load: bad cell '2:2'" },
		{ "overlap", "overlap: wrong number of arguments" },
		{ "overlap 10000001", "overlap: expected microseconds from 0 to 10000000, not '10000001'" },
		{ "overlap -1", "overlap: expected microseconds from 0 to 10000000, not '-1'" },
		{ "overlap 1ms", "overlap: expected microseconds from 0 to 10000000, not '1ms'" },
		{ "dcache", "dcache: wrong number of arguments" },
		{ "dcache 1 2 3 4 5", "dcache: wrong number of arguments" },
		{ "dcache learned", DCACHE_USAGE },
		{ "dcache 16 1024 512", DCACHE_USAGE },
		{ "dcache 17 1024 512 150", DCACHE_USAGE },
		{ "dcache 16 0 512 150", DCACHE_USAGE },
		{ "dcache 16 1024 512 0", DCACHE_USAGE },
		{ "dcache 16 1024 -1 150", DCACHE_USAGE },
		{ "dcache learnt 1024 512 150", DCACHE_USAGE },
	};
	CHECK_REFUSALS(bad, refused_message);
}

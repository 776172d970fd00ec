// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the /etc/redcaptab parser (userspace/redcaptab.c):
 * what a good line gives, the exact reason for every bad one, sizes and
 * time spans, and a whole file whose good lines still work.
 */
#include <stdlib.h>

#include "ctest.h"
#include "redcaptab.h"
#include "rc-args.h"

static struct rctab_entry ent;
static char err[RCTAB_ERR_MAX];

static int parse(const char *line)
{
	return rctab_parse_line(line, 7, &ent, err);
}

/* The reason a bad line gives ("" if the line was accepted). */
static const char *refused(const char *line)
{
	if (parse(line) != -1)
		return "";
	return err;
}

CTEST(redcaptab_minimal_line_gets_the_defaults)
{
	CHECK_EQ(parse("data /dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1 64M\n"), 1);
	CHECK_EQ(ent.line, 7);
	CHECK_STREQ(ent.name, "data");
	CHECK_EQ(ent.origin_kind, RCTAB_ORIGIN_PATH);
	CHECK_STREQ(ent.origin, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1");
	CHECK_EQ(ent.ram_bytes, 64ull << 20);
	CHECK_EQ(ent.segment_bytes, 128u << 10);
	CHECK_EQ(ent.nr_segments, 512);
	CHECK_EQ(ent.policy, -1);
	CHECK_EQ(ent.write_policy, -1);
	CHECK_EQ(ent.estimator, -1);
	CHECK_EQ(ent.readahead_bytes, RCTAB_READAHEAD_AUTO);
	CHECK(!ent.nomodel && !ent.nofail && !ent.noauto && !ent.device_timeout[0]);
	CHECK_EQ(ent.on_fail, RCTAB_ON_FAIL_FAIL);
	CHECK_EQ(ent.tunables_set, 0);
	CHECK_STREQ(ent.warning, "");
}

/* Every tunable of the target's set message is an option of its own name. */
CTEST(redcaptab_tunables_are_options)
{
	CHECK_EQ(parse("data /dev/sdb 64M hdc=50,hot_period=60,prefetch=0,window=1000000\n"), 1);
	CHECK_EQ(ent.tunables_set, (1u << RC_TUN_HDC) | (1u << RC_TUN_HOT_PERIOD) |
		 (1u << RC_TUN_PREFETCH) | (1u << RC_TUN_WINDOW));
	CHECK_EQ(ent.tunable[RC_TUN_HDC], 50);
	CHECK_EQ(ent.tunable[RC_TUN_HOT_PERIOD], 60);
	CHECK_EQ(ent.tunable[RC_TUN_PREFETCH], 0);
	CHECK_EQ(ent.tunable[RC_TUN_WINDOW], 1000000);
	for (int k = 0; k < RC_TUN_NR; k++) {
		char line[128];

		snprintf(line, sizeof(line), "data /dev/sdb 64M %s=1", rc_tunable_name(k));
		CHECK_EQ(parse(line), 1);
		CHECK_EQ(ent.tunables_set, 1u << k);
	}
	CHECK_STREQ(refused("data /dev/sdb 64M hdc=51"), "hdc=51: a number from 0 to 50");
	CHECK_STREQ(refused("data /dev/sdb 64M hot_period=0"),
		    "hot_period=0: a number from 1 to 86400");
	CHECK_STREQ(refused("data /dev/sdb 64M window=x"), "window=x: a number from 1 to 1000000");
	CHECK_STREQ(refused("data /dev/sdb 64M hdc"), "option 'hdc' needs a value");
	CHECK_STREQ(refused("data /dev/sdb 64M hdc=1,hdc=2"), "option 'hdc' given twice");
	CHECK_STREQ(refused("data /dev/sdb 64M HDC=1"), "unknown option 'HDC'");
}

CTEST(redcaptab_readahead_takes_auto_none_and_sizes)
{
	static const struct { const char *opt; uint64_t bytes; } ok[] = {
		{ "readahead=auto", RCTAB_READAHEAD_AUTO }, { "readahead=0", 0 },
		{ "readahead=4K", 4096 }, { "readahead=512KiB", 512u << 10 },
		{ "readahead=64M", 64u << 20 },
	};
	char line[64];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(line, sizeof(line), "data /dev/sdb 64M %s", ok[i].opt);
		CHECK_EQ(parse(line), 1);
		CHECK_EQ(ent.readahead_bytes, ok[i].bytes);
	}
}

CTEST(redcaptab_every_option)
{
	CHECK_EQ(parse("  web\tPARTLABEL=web-data   1G  segment=32K,policy=Adaptive+CAware,"
		       "write_policy=update,estimator=vdisk,nofail,noauto,on-fail=linear,readahead=2M,"
		       "x-systemd.device-timeout=90s,x-other.tool=whatever  "), 1);
	CHECK_STREQ(ent.name, "web");
	CHECK_EQ(ent.origin_kind, RCTAB_ORIGIN_PARTLABEL);
	CHECK_STREQ(ent.origin, "web-data");
	CHECK_EQ(ent.ram_bytes, 1ull << 30);
	CHECK_EQ(ent.segment_bytes, 32u << 10);
	CHECK_EQ(ent.nr_segments, 32768);
	CHECK_EQ(ent.policy, RC_POLICY_ADAPTIVE_CAWARE);
	CHECK_EQ(ent.write_policy, RC_WRITE_UPDATE);
	CHECK_EQ(ent.estimator, RC_EST_VDISK);
	CHECK_EQ(ent.readahead_bytes, 2ull << 20);
	CHECK(!ent.nomodel && ent.nofail && ent.noauto);
	CHECK_EQ(ent.on_fail, RCTAB_ON_FAIL_LINEAR);
	CHECK_EQ(ent.device_timeout_us, 90000000ull);
	CHECK_STREQ(ent.device_timeout, "90s");

	CHECK_EQ(parse("a PARTUUID=0f6a3c1e-01 4M nomodel,policy=off"), 1);
	CHECK_EQ(ent.origin_kind, RCTAB_ORIGIN_PARTUUID);
	CHECK_STREQ(ent.origin, "0f6a3c1e-01");
	CHECK(ent.nomodel);
	CHECK_EQ(ent.policy, RC_POLICY_OFF);
	CHECK(!ent.initramfs);
}

CTEST(redcaptab_initramfs_implies_on_fail_linear_unless_said)
{
	CHECK_EQ(parse("root /dev/disk/by-id/ata-A-part2 256M initramfs"), 1);
	CHECK(ent.initramfs);
	CHECK_EQ(ent.on_fail, RCTAB_ON_FAIL_LINEAR);
	CHECK_EQ(parse("root /dev/disk/by-id/ata-A-part2 256M on-fail=fail,initramfs"), 1);
	CHECK(ent.initramfs);
	CHECK_EQ(ent.on_fail, RCTAB_ON_FAIL_FAIL);
	CHECK_EQ(parse("root /dev/disk/by-id/ata-A-part2 256M nofail"), 1);
	CHECK_EQ(ent.on_fail, RCTAB_ON_FAIL_FAIL);
}

CTEST(redcaptab_blank_and_comment_lines_are_nothing)
{
	CHECK_EQ(parse(""), 0);
	CHECK_EQ(parse("   \t \n"), 0);
	CHECK_EQ(parse("# data /dev/sdb 64M"), 0);
	CHECK_EQ(parse("   #data /dev/sdb 64M"), 0);
}

CTEST(redcaptab_kernel_names_are_accepted_with_a_warning)
{
	CHECK_EQ(parse("a /dev/sdb1 8M"), 1);
	CHECK_STREQ(ent.warning, "origin /dev/sdb1 is a kernel name, which may name another "
		    "disk after a reboot: prefer /dev/disk/by-id/... or PARTUUID=");
	CHECK_EQ(parse("a /dev/nvme0n1p2 8M"), 1);
	CHECK(ent.warning[0]);
	CHECK_EQ(parse("a /dev/mapper/vg-lv 8M"), 1);
	CHECK_STREQ(ent.warning, "");
}

CTEST(redcaptab_every_bad_line_says_why)
{
	CHECK_STREQ(refused("data"), "no origin or size: want 'name origin size [options]'");
	CHECK_STREQ(refused("data /dev/sdb"), "no size: want 'name origin size [options]'");
	CHECK_STREQ(refused("data /dev/sdb 64M nofail noauto"),
		    "more than 4 fields: options are one field, comma-separated");
	/* names */
	CHECK_STREQ(refused("da/ta /dev/sdb 64M"),
		    "name 'da/ta': use letters, digits and + _ . - (not first: - or .)");
	CHECK_STREQ(refused("-data /dev/sdb 64M"),
		    "name '-data': use letters, digits and + _ . - (not first: - or .)");
	CHECK_STREQ(refused(".. /dev/sdb 64M"),
		    "name '..': use letters, digits and + _ . - (not first: - or .)");
	CHECK_STREQ(refused("data-vd /dev/sdb 64M"),
		    "name 'data-vd': names ending in -vd are the model layers'");
	/* origins */
	CHECK_STREQ(refused("data UUID=1234-abcd 64M"),
		    "origin 'UUID=1234-abcd' names a filesystem, which the redcap device shows "
		    "too: use /dev/disk/by-id/..., PARTUUID= or PARTLABEL=");
	CHECK_STREQ(refused("data LABEL=home 64M"),
		    "origin 'LABEL=home' names a filesystem, which the redcap device shows "
		    "too: use /dev/disk/by-id/..., PARTUUID= or PARTLABEL=");
	CHECK_STREQ(refused("data PARTUUID= 64M"), "origin 'PARTUUID=' has no value");
	CHECK_STREQ(refused("data sdb 64M"),
		    "origin 'sdb' is not a /dev path, PARTUUID= or PARTLABEL=");
	/* sizes */
	CHECK_STREQ(refused("data /dev/sdb 64X"), "size '64X' is not a size in bytes (64M, 1G)");
	CHECK_STREQ(refused("data /dev/sdb 0"), "size '0' is not a size in bytes (64M, 1G)");
	CHECK_STREQ(refused("data /dev/sdb -64M"), "size '-64M' is not a size in bytes (64M, 1G)");
	CHECK_STREQ(refused("data /dev/sdb 100K"),
		    "size 100K is not a multiple of the segment (131072 bytes)");
	CHECK_STREQ(refused("data /dev/sdb 4T segment=4K"),
		    "size 4T is more than 16777216 segments of 4096 bytes");
	/* options */
	CHECK_STREQ(refused("data /dev/sdb 64M nofial"), "unknown option 'nofial'");
	CHECK_STREQ(refused("data /dev/sdb 64M nofail,nofail"), "option 'nofail' given twice");
	CHECK_STREQ(refused("data /dev/sdb 64M nofail=yes"), "option 'nofail' takes no value");
	CHECK_STREQ(refused("data /dev/sdb 64M initramfs=1"), "option 'initramfs' takes no value");
	CHECK_STREQ(refused("data /dev/sdb 64M initramfs,noauto"),
		    "initramfs and noauto: the initramfs starts every initramfs entry");
	CHECK_STREQ(refused("data /dev/sdb 64M policy"), "option 'policy' needs a value");
	CHECK_STREQ(refused("data /dev/sdb 64M policy="), "option 'policy' needs a value");
	CHECK_STREQ(refused("data /dev/sdb 64M segment=lots"), "segment=lots is not a size");
	CHECK_STREQ(refused("data /dev/sdb 64M readahead=lots"),
		    "readahead=lots: auto or a size (1M, 512K, 0)");
	CHECK_STREQ(refused("data /dev/sdb 64M readahead=1000"),
		    "readahead=1000: a multiple of 4K from 0 to 64M, or auto");
	CHECK_STREQ(refused("data /dev/sdb 64M readahead=128M"),
		    "readahead=128M: a multiple of 4K from 0 to 64M, or auto");
	CHECK_STREQ(refused("data /dev/sdb 64M readahead=auto,readahead=0"),
		    "option 'readahead' given twice");
	CHECK_STREQ(refused("data /dev/sdb 64M segment=96K"),
		    "segment=96K: a power of 2 from 4K to 1M");
	CHECK_STREQ(refused("data /dev/sdb 64M segment=2K"),
		    "segment=2K: a power of 2 from 4K to 1M");
	CHECK_STREQ(refused("data /dev/sdb 64M segment=2M"),
		    "segment=2M: a power of 2 from 4K to 1M");
	CHECK_STREQ(refused("data /dev/sdb 64M policy=fast"),
		    "policy=fast: one of always, off, adaptive, caware, adaptive+caware");
	CHECK_STREQ(refused("data /dev/sdb 64M write_policy=later"),
		    "write_policy=later: one of invalidate, update, back, selective");
	CHECK_STREQ(refused("data /dev/sdb 64M estimator=guess"), "estimator=guess: spk or vdisk");
	CHECK_STREQ(refused("data /dev/sdb 64M on-fail=ignore"), "on-fail=ignore: linear or fail");
	CHECK_STREQ(refused("data /dev/sdb 64M x-systemd.device-timeout=soon"),
		    "x-systemd.device-timeout=soon is not a time span (30s, 2min, infinity)");
	CHECK_STREQ(refused("data /dev/sdb 64M nomodel,estimator=vdisk"),
		    "estimator=vdisk needs the model that nomodel leaves out");
}

CTEST(redcaptab_long_names_and_origins)
{
	char line[8192], name[RCTAB_NAME_MAX + 2];

	memset(name, 'n', RCTAB_NAME_MAX);
	name[RCTAB_NAME_MAX] = '\0';
	snprintf(line, sizeof(line), "%s /dev/vdb 8M", name);
	CHECK_EQ(parse(line), 1);
	CHECK_EQ(strlen(ent.name), RCTAB_NAME_MAX);
	strcat(name, "n");
	snprintf(line, sizeof(line), "%s /dev/vdb 8M", name);
	CHECK_STREQ(refused(line), "name 'nnnnnnnnnnnnnnnnnnnn...' is longer than 124 characters");

	strcpy(line, "a /");
	memset(line + 3, 'x', RCTAB_ORIGIN_MAX);
	strcpy(line + 3 + RCTAB_ORIGIN_MAX, " 8M");
	CHECK_STREQ(refused(line), "origin is longer than 4095 characters");
	line[3 + RCTAB_ORIGIN_MAX - 1] = ' ';
	memcpy(line + 3 + RCTAB_ORIGIN_MAX, "8M", 3);
	CHECK_EQ(parse(line), 1);
	CHECK_EQ(strlen(ent.origin), RCTAB_ORIGIN_MAX);
}

CTEST(redcaptab_sizes)
{
	uint64_t v;

	CHECK(!rctab_parse_size("4096", &v) && v == 4096);
	CHECK(!rctab_parse_size("4k", &v) && v == 4096);
	CHECK(!rctab_parse_size("64M", &v) && v == 64ull << 20);
	CHECK(!rctab_parse_size("64MiB", &v) && v == 64ull << 20);
	CHECK(!rctab_parse_size("2g", &v) && v == 2ull << 30);
	CHECK(!rctab_parse_size("3T", &v) && v == 3ull << 40);
	CHECK(!rctab_parse_size("16777215T", &v) && v == 16777215ull << 40);
	CHECK(!rctab_parse_size("18446744073709551615", &v) && v == UINT64_MAX);
	CHECK(rctab_parse_size("18446744073709551616", &v));
	CHECK(rctab_parse_size("16777216T", &v));
	CHECK(rctab_parse_size("", &v));
	CHECK(rctab_parse_size("M", &v));
	CHECK(rctab_parse_size("64MB", &v));
	CHECK(rctab_parse_size("64 M", &v));
	CHECK(rctab_parse_size("0x40", &v));
	CHECK(rctab_parse_size("64P", &v));
	CHECK(rctab_parse_size("00000000000000000000000064", &v));
}

CTEST(redcaptab_time_spans)
{
	uint64_t us;

	CHECK(!rctab_parse_timespan("30", &us) && us == 30000000ull);
	CHECK(!rctab_parse_timespan("30s", &us) && us == 30000000ull);
	CHECK(!rctab_parse_timespan("500ms", &us) && us == 500000ull);
	CHECK(!rctab_parse_timespan("2min", &us) && us == 120000000ull);
	CHECK(!rctab_parse_timespan("1h", &us) && us == 3600000000ull);
	CHECK(!rctab_parse_timespan("0", &us) && us == 0);
	CHECK(!rctab_parse_timespan("infinity", &us) && us == UINT64_MAX);
	CHECK(rctab_parse_timespan("", &us));
	CHECK(rctab_parse_timespan("s", &us));
	CHECK(rctab_parse_timespan("1d", &us));
	CHECK(rctab_parse_timespan("1 min", &us));
	CHECK(rctab_parse_timespan("99999999999999999h", &us));
}

struct collected {
	char names[8][RCTAB_NAME_MAX + 1];
	unsigned int nr;
	char bad[8][RCTAB_ERR_MAX + 64];
	unsigned int nr_bad;
};

static void on_entry(const struct rctab_entry *e, void *arg)
{
	struct collected *c = arg;

	strcpy(c->names[c->nr++], e->name);
}

static void on_bad(unsigned int line, const char *why, void *arg)
{
	struct collected *c = arg;

	(void)line;
	strcpy(c->bad[c->nr_bad++], why);
}

CTEST(redcaptab_file_keeps_its_good_lines)
{
	static const char text[] =
		"# redcaptab\n"
		"\n"
		"data /dev/disk/by-id/ata-A 64M policy=adaptive+caware,nofail\n"
		"logs /dev/disk/by-id/ata-B 32Q\n"
		"web PARTLABEL=web 128M\n"
		"data /dev/disk/by-id/ata-C 64M\n"
		"last /dev/disk/by-id/ata-D 8M";	/* no newline at the end */
	struct collected c = { .nr = 0 };
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");

	CHECK(f);
	CHECK_EQ(rctab_read(f, on_entry, on_bad, &c), 2);
	fclose(f);
	CHECK_EQ(c.nr, 3);
	CHECK_STREQ(c.names[0], "data");
	CHECK_STREQ(c.names[1], "web");
	CHECK_STREQ(c.names[2], "last");
	CHECK_EQ(c.nr_bad, 2);
	CHECK_STREQ(c.bad[0], "line 4: size '32Q' is not a size in bytes (64M, 1G)");
	CHECK_STREQ(c.bad[1], "line 6: name 'data' is already used on line 3");
}

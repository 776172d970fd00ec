// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of FOR's layout in userspace (userspace/layout.c): which
 * extents become which runs (flags, unwritten, merging, units, where the
 * filesystem lies on the stack), sort and dedupe, and the layout_runs
 * messages: exact words, the size limit, every run back exactly once, and
 * the target's own loader (dm-redcap/rc-layout.c) setting each run's end.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <linux/fiemap.h>
#include <stdlib.h>

#include "ctest.h"
#include "layout.h"
#include "rc-layout.h"

#define K		1024ull
#define SHIFT_4K	12
#define SHIFT_64K	16

static const struct layout_seg whole = { 0, 1ull << 50, 0 };	/* the stack itself */

static struct layout_runs runs;
static struct layout_conv conv;

static void start(unsigned int shift, const struct layout_seg *map, size_t nr)
{
	layout_runs_free(&runs);
	layout_conv_init(&conv, shift, map, nr, &runs);
}

static void add(uint64_t logical, uint64_t physical, uint64_t length, uint32_t flags)
{
	struct layout_extent e = { logical, physical, length, flags };

	CHECK_EQ(layout_conv_add(&conv, &e), 0);
}

static void end_file(void)
{
	CHECK_EQ(layout_conv_end(&conv), 0);
}

/* The runs so far, as "start+len start+len ..." in decimal units. */
static const char *got(void)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < runs.nr; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%" PRIu64 "+%" PRIu64,
				      i ? " " : "", runs.r[i].start, runs.r[i].len);
	return buf;
}

/* --- extents to runs ------------------------------------------------------- */

CTEST(layout_skips_extents_without_a_place_of_their_own)
{
	static const uint32_t skipped[] = {
		FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN, FIEMAP_EXTENT_UNKNOWN,
		FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_ENCODED,
		FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED, FIEMAP_EXTENT_NOT_ALIGNED,
		FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED, FIEMAP_EXTENT_DATA_INLINE,
		FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED, FIEMAP_EXTENT_DATA_TAIL,
		FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_LAST,
	};

	for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++) {
		start(SHIFT_4K, &whole, 1);
		add(0, 40 * K, 8 * K, skipped[i]);
		end_file();
		CHECK_STREQ(got(), "");
		CHECK_EQ(conv.extents, 1);
		CHECK_EQ(conv.skipped, 1);
	}
	/* Flags that say nothing against the place are kept. */
	start(SHIFT_4K, &whole, 1);
	add(0, 40 * K, 4 * K, FIEMAP_EXTENT_SHARED);
	end_file();
	add(0, 48 * K, 4 * K, FIEMAP_EXTENT_MERGED | FIEMAP_EXTENT_LAST);
	end_file();
	add(0, 56 * K, 4 * K, FIEMAP_EXTENT_DATA_ENCRYPTED);
	end_file();
	CHECK_STREQ(got(), "10+1 12+1 14+1");
	CHECK_EQ(conv.skipped, 0);
}

CTEST(layout_a_skipped_extent_does_not_join_its_neighbours)
{
	/* 0-4K written, 4K-8K delayed, 8K-12K written right after on disk. */
	start(SHIFT_4K, &whole, 1);
	add(0, 400 * K, 4 * K, 0);
	add(4 * K, 0, 4 * K, FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN);
	add(8 * K, 404 * K, 4 * K, FIEMAP_EXTENT_LAST);
	end_file();
	CHECK_STREQ(got(), "100+1 101+1");
	CHECK_EQ(conv.skipped, 1);
}

CTEST(layout_empty_and_overflowing_extents_are_skipped)
{
	start(SHIFT_4K, &whole, 1);
	add(0, 400 * K, 0, 0);
	add(0, UINT64_MAX - 4095, 8 * K, 0);
	add(UINT64_MAX - 4095, 400 * K, 8 * K, 0);
	end_file();
	CHECK_STREQ(got(), "");
	CHECK_EQ(conv.skipped, 3);
}

CTEST(layout_an_unwritten_extent_is_a_run_of_its_own)
{
	/* fallocate 64K, then a 4K write at 16K: as ext4 reports it. */
	start(SHIFT_4K, &whole, 1);
	add(0, 1000 * K, 16 * K, FIEMAP_EXTENT_UNWRITTEN);
	add(16 * K, 1016 * K, 4 * K, 0);
	add(20 * K, 1020 * K, 44 * K, FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST);
	end_file();
	CHECK_STREQ(got(), "250+4 254+1 255+11");
	/* Two unwritten extents in a row do not merge either. */
	start(SHIFT_4K, &whole, 1);
	add(0, 1000 * K, 8 * K, FIEMAP_EXTENT_UNWRITTEN);
	add(8 * K, 1008 * K, 8 * K, FIEMAP_EXTENT_UNWRITTEN);
	add(16 * K, 1016 * K, 8 * K, 0);
	add(24 * K, 1024 * K, 8 * K, 0);
	end_file();
	CHECK_STREQ(got(), "250+2 252+2 254+4");
}

CTEST(layout_merges_extents_contiguous_in_the_file_and_on_disk)
{
	/* ext4 cuts an extent at 32768 blocks: one run again. */
	start(SHIFT_4K, &whole, 1);
	add(0, 1ull << 30, 128 * K * K, 0);
	add(128 * K * K, (1ull << 30) + 128 * K * K, 4 * K, FIEMAP_EXTENT_LAST);
	end_file();
	CHECK_STREQ(got(), "262144+32769");
}

CTEST(layout_does_not_merge_what_is_contiguous_on_one_side_only)
{
	/* A hole in the file, the blocks next to each other on disk. */
	start(SHIFT_4K, &whole, 1);
	add(0, 400 * K, 4 * K, 0);
	add(8 * K, 404 * K, 4 * K, 0);
	end_file();
	CHECK_STREQ(got(), "100+1 101+1");
	/* Next in the file, elsewhere on disk (before, and after a gap). */
	start(SHIFT_4K, &whole, 1);
	add(0, 400 * K, 4 * K, 0);
	add(4 * K, 200 * K, 4 * K, 0);
	add(8 * K, 212 * K, 4 * K, 0);
	end_file();
	CHECK_STREQ(got(), "100+1 50+1 53+1");
}

CTEST(layout_files_never_share_a_run)
{
	/* The second file starts on disk where the first ends. */
	start(SHIFT_4K, &whole, 1);
	add(0, 400 * K, 8 * K, FIEMAP_EXTENT_LAST);
	end_file();
	add(0, 408 * K, 8 * K, FIEMAP_EXTENT_LAST);
	end_file();
	CHECK_STREQ(got(), "100+2 102+2");
}

CTEST(layout_a_run_grows_across_fiemap_batches)
{
	/* Batches of one extent: the converter keeps the run open between calls. */
	start(SHIFT_4K, &whole, 1);
	for (uint64_t i = 0; i < 1000; i++)
		add(i * 4 * K, 4000 * K + i * 4 * K, 4 * K, i == 999 ? FIEMAP_EXTENT_LAST : 0);
	CHECK_EQ(runs.nr, 0);
	end_file();
	CHECK_STREQ(got(), "1000+1000");
	CHECK_EQ(conv.extents, 1000);
}

CTEST(layout_runs_cover_every_unit_they_touch)
{
	start(SHIFT_4K, &whole, 1);
	add(0, 4 * K + 512, 1000, 0);		/* inside unit 1 */
	end_file();
	add(0, 6 * K, 4 * K, 0);		/* 6K..10K: units 1 and 2 */
	end_file();
	add(0, 8 * K, 4 * K, 0);		/* exactly unit 2 */
	end_file();
	add(0, 12 * K - 1, 2, 0);		/* the last byte of 2, the first of 3 */
	end_file();
	CHECK_STREQ(got(), "1+1 1+2 2+1 2+2");
	start(SHIFT_64K, &whole, 1);
	add(0, 60 * K, 8 * K, 0);		/* 60K..68K: units 0 and 1 of 64K */
	end_file();
	add(0, 64 * K, 64 * K, 0);		/* exactly unit 1 */
	end_file();
	add(0, 4 * K, 4 * K, 0);		/* two small files in unit 0 */
	end_file();
	add(0, 12 * K, 4 * K, 0);
	end_file();
	add(0, 128 * K, 4 * K, FIEMAP_EXTENT_UNWRITTEN);
	add(4 * K, 132 * K, 4 * K, 0);		/* unwritten then written: both unit 2 */
	end_file();
	CHECK_STREQ(got(), "0+2 1+1 0+1 0+1 2+1 2+1");
}

CTEST(layout_adds_where_the_filesystem_lies_on_the_stack)
{
	/* A linear device at 1 MiB of the stack (dmsetup's "linear NAME 2048"). */
	static const struct layout_seg lin = { 0, 100 * K * K, 1 * K * K };

	start(SHIFT_4K, &lin, 1);
	add(0, 0, 4 * K, 0);
	end_file();
	add(0, 40 * K, 8 * K, 0);
	end_file();
	CHECK_STREQ(got(), "256+1 266+2");
	/* At 1 MiB + 512 bytes: a 4K block straddles two units. */
	static const struct layout_seg odd = { 0, 100 * K * K, 1 * K * K + 512 };

	start(SHIFT_4K, &odd, 1);
	add(0, 0, 4 * K, 0);
	end_file();
	CHECK_STREQ(got(), "256+2");
}

CTEST(layout_follows_a_device_made_of_several_pieces)
{
	/*
	 * An LV of two segments: its first 8K at 100K of the stack, the next
	 * 8K at 0; then 16K..20K nowhere on the stack (not in the map).
	 */
	static const struct layout_seg map[] = {
		{ 0, 8 * K, 100 * K }, { 8 * K, 8 * K, 0 }, { 20 * K, 1 * K * K, 200 * K },
	};

	start(SHIFT_4K, map, 3);
	add(0, 4 * K, 8 * K, 0);		/* 4K..12K: 104K..108K, then 0..4K */
	end_file();
	CHECK_STREQ(got(), "26+1 0+1");
	start(SHIFT_4K, map, 3);
	add(0, 8 * K, 16 * K, 0);		/* 8K..24K: 0..8K, a hole, 200K..204K */
	end_file();
	CHECK_STREQ(got(), "0+2 50+1");
	start(SHIFT_4K, map, 3);
	add(0, 16 * K, 4 * K, 0);		/* nowhere */
	add(0, 2 * K * K, 4 * K, 0);		/* past the map's end */
	end_file();
	CHECK_STREQ(got(), "");
	/* Contiguous across two segments that are contiguous on the stack: one run. */
	static const struct layout_seg joined[] = { { 0, 8 * K, 64 * K }, { 8 * K, 8 * K, 72 * K } };

	start(SHIFT_4K, joined, 2);
	add(0, 0, 16 * K, 0);
	end_file();
	CHECK_STREQ(got(), "16+4");
}

/* --- sort and dedupe ------------------------------------------------------- */

CTEST(layout_sort_dedupe_drops_identical_runs_only)
{
	struct layout_run r[] = {
		{ 9, 1 }, { 3, 2 }, { 3, 2 }, { 3, 1 }, { 0, 5 }, { 9, 1 }, { 9, 1 }, { 4, 1 },
	};
	const struct layout_run want[] = { { 0, 5 }, { 3, 1 }, { 3, 2 }, { 4, 1 }, { 9, 1 } };
	size_t n = layout_sort_dedupe(r, sizeof(r) / sizeof(r[0]));

	CHECK_EQ(n, 5);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ(r[i].start, want[i].start);
		CHECK_EQ(r[i].len, want[i].len);
	}
	CHECK_EQ(layout_sort_dedupe(r, 0), 0);
	CHECK_EQ(layout_sort_dedupe(r, 1), 1);
}

/* --- messages -------------------------------------------------------------- */

/* All messages of @r (sorted) of at most @max bytes, one per line. */
static char *format_all(const struct layout_run *r, size_t nr, size_t max, size_t *msgs)
{
	size_t pos = 0, len = 0, n;
	char *out = malloc(nr * (LAYOUT_WORD_MAX + 1) + 64 * (nr + 1)), *buf = malloc(max + 1);

	CHECK(out && buf);
	*msgs = 0;
	out[0] = '\0';
	while (pos < nr) {
		n = layout_format(r, nr, &pos, buf, max);
		CHECK(n > 0);
		CHECK_EQ(strlen(buf), n);
		CHECK(n <= max);
		memcpy(out + len, buf, n);
		len += n;
		out[len++] = '\n';
		out[len] = '\0';
		(*msgs)++;
	}
	free(buf);
	return out;
}

static uint64_t hex(const char **p)
{
	uint64_t v = 0;
	const char *s = *p;

	CHECK((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'));
	for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++)
		v = v * 16 + (uint64_t)(*s <= '9' ? *s - '0' : *s - 'a' + 10);
	*p = s;
	return v;
}

/*
 * The runs of messages @text (one per line), read back as the target is
 * to read them: the first word of a message is absolute.
 */
static size_t parse_all(const char *text, struct layout_run *r, size_t max)
{
	size_t n = 0;
	const char *p = text;

	while (*p) {
		uint64_t prev_end = 0;
		bool first = true;

		CHECK(!strncmp(p, "layout_runs ", 12));
		p += 11;
		while (*p == ' ') {
			bool gap = *++p == '+';

			CHECK(!(gap && first));
			p += gap;
			uint64_t v = hex(&p);

			CHECK(*p++ == ':');
			CHECK(n < max);
			r[n].start = gap ? prev_end + v : v;
			r[n].len = hex(&p);
			CHECK(r[n].len > 0);
			/* absolute only where +GAP cannot say it */
			CHECK(gap || first || r[n].start < prev_end);
			prev_end = r[n].start + r[n].len;
			first = false;
			n++;
		}
		CHECK(!first);
		CHECK(*p++ == '\n');
	}
	return n;
}

CTEST(layout_format_writes_gaps_and_absolute_starts)
{
	const struct layout_run r[] = {
		{ 0x10, 2 }, { 0x14, 1 }, { 0x14, 3 }, { 0x20, 1 }, { 0x21, 0x1f }, { 0x25, 1 },
		{ 0xabcdef0123, 0x10000 },
	};
	char buf[LAYOUT_MSG_MAX + 1];
	size_t pos = 0;

	CHECK_EQ(layout_format(r, 7, &pos, buf, LAYOUT_MSG_MAX), strlen(buf));
	/* 14:3 starts before 14:1 ends (0x15); 21 touches 20's end: +0 */
	CHECK_STREQ(buf, "layout_runs 10:2 +2:1 14:3 +9:1 +0:1f 25:1 +abcdef00fd:10000");
	CHECK_EQ(pos, 7);
	CHECK_EQ(layout_format(r, 7, &pos, buf, LAYOUT_MSG_MAX), 0);
}

CTEST(layout_format_starts_every_message_absolute)
{
	const struct layout_run r[] = { { 0x10, 2 }, { 0x14, 1 }, { 0x18, 1 }, { 0x1a, 1 } };
	size_t msgs;
	char *text = format_all(r, 4, strlen("layout_runs 10:2 +2:1"), &msgs);

	CHECK_STREQ(text, "layout_runs 10:2 +2:1\nlayout_runs 18:1 +1:1\n");
	CHECK_EQ(msgs, 2);
	free(text);
}

CTEST(layout_format_refuses_a_limit_too_small_for_one_run)
{
	const struct layout_run r[] = { { 0x123, 0x45 } };
	char buf[64];
	size_t pos = 0;

	CHECK_EQ(layout_format(r, 1, &pos, buf, strlen("layout_runs 123:4")), 0);
	CHECK_EQ(pos, 0);
	CHECK_EQ(layout_format(r, 1, &pos, buf, strlen("layout_runs 123:45")), 18);
	CHECK_STREQ(buf, "layout_runs 123:45");
	CHECK_EQ(pos, 1);
}

/* Random sorted runs, some overlapping, some far apart, deduped. */
static size_t random_runs(struct layout_run *r, size_t nr)
{
	uint64_t at = ctest_rand(1000);

	for (size_t i = 0; i < nr; i++) {
		switch (ctest_rand(4)) {
		case 0:
			at += ctest_rand(4);		/* overlaps or touches */
			break;
		case 1:
			at += ctest_rand(1ull << 40);	/* far */
			break;
		default:
			at += ctest_rand(300);
		}
		r[i].start = at;
		r[i].len = 1 + (ctest_rand(8) ? ctest_rand(16) : ctest_rand(1ull << 32));
	}
	return layout_sort_dedupe(r, nr);
}

CTEST(layout_messages_hold_every_run_once_within_the_limit)
{
	static const size_t limits[] = { 50, 100, 333, 4096, LAYOUT_MSG_MAX };
	size_t nr = 20000, msgs, back;
	struct layout_run *r = malloc(nr * sizeof(*r)), *p = malloc(nr * sizeof(*p));

	CHECK(r && p);
	ctest_rng = 47;
	nr = random_runs(r, nr);
	for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		char *text = format_all(r, nr, limits[l], &msgs);

		back = parse_all(text, p, nr);
		CHECK_EQ(back, nr);
		for (size_t i = 0; i < nr; i++) {
			CHECK_EQ(p[i].start, r[i].start);
			CHECK_EQ(p[i].len, r[i].len);
		}
		/* each message as full as the next word allows */
		for (char *line = text, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (nl[1])
				CHECK((size_t)(nl - line) + 1 + LAYOUT_WORD_MAX > limits[l]);
		}
		free(text);
	}
	free(r);
	free(p);
}

CTEST(layout_a_million_runs_pack_into_few_messages)
{
	size_t nr = 1000000, pos = 0, msgs = 0, n;
	struct layout_run *r = malloc(nr * sizeof(*r));
	char *buf = malloc(LAYOUT_MSG_MAX + 1);

	CHECK(r && buf);
	/* a file of 1 to 4 units every few units, as a filesystem of small files */
	ctest_rng = 1;
	for (size_t i = 0, at = 0; i < nr; i++) {
		r[i].start = at;
		r[i].len = 1 + ctest_rand(4);
		at += r[i].len + ctest_rand(3);
	}
	while ((n = layout_format(r, nr, &pos, buf, LAYOUT_MSG_MAX))) {
		CHECK(n <= LAYOUT_MSG_MAX);
		msgs++;
	}
	CHECK_EQ(pos, nr);
	/* after the first word, " +g:l" is 5 bytes here: 3272 words a message or more */
	CHECK(msgs <= (nr + 3272) / 3273);
	free(r);
	free(buf);
}

CTEST(layout_the_targets_loader_reads_every_message)
{
	/* An origin of 2^30 units of 4K; sparse runs, deduped, some overlapping. */
	const u64 origin = 8ull << 30;
	size_t nr = 5000, pos = 0, n, words, set = 0;
	struct layout_run *r = malloc(nr * sizeof(*r));
	char buf[LAYOUT_MSG_MAX + 1], err[128], *argv[LAYOUT_MSG_MAX / 4];
	struct rc_layout l;
	unsigned long *bits;

	CHECK(r);
	words = rc_layout_words(origin, 3);
	bits = calloc(words, sizeof(*bits));
	CHECK(bits);
	rc_layout_init(&l, origin, 3, bits);
	ctest_rng = 2;
	for (size_t i = 0; i < nr; i++) {
		r[i].start = ctest_rand(1ull << 30);
		r[i].len = 1 + ctest_rand(64);
		if (r[i].start + r[i].len > 1ull << 30)
			r[i].start = (1ull << 30) - r[i].len;
	}
	nr = layout_sort_dedupe(r, nr);
	while ((n = layout_format(r, nr, &pos, buf, 1000))) {
		unsigned int argc = 0;

		for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "))
			argv[argc++] = w;
		CHECK(!strcmp(argv[0], "layout_runs"));
		CHECK(!rc_layout_parse_runs(&l, argc - 1, argv + 1, err, sizeof(err)));
	}
	CHECK_EQ(pos, nr);
	/* The bit of each run's last unit, and no other. */
	for (size_t i = 0; i < nr; i++) {
		u64 last = r[i].start + r[i].len - 1;

		CHECK((bits[last / RC_LAYOUT_BITS_PER_WORD] >> (last % RC_LAYOUT_BITS_PER_WORD)) & 1);
	}
	for (size_t w = 0; w < words; w++)
		set += (size_t)__builtin_popcountl(bits[w]);
	CHECK_EQ(set, l.nr_set);
	/* as many bits as distinct ends: each run's start:len as 0:end, deduped */
	for (size_t i = 0; i < nr; i++)
		r[i] = (struct layout_run){ 0, r[i].start + r[i].len };
	CHECK_EQ(set, layout_sort_dedupe(r, nr));
	free(bits);
	free(r);
}

/* --- the unit -------------------------------------------------------------- */

CTEST(layout_unit_is_a_power_of_two_from_4k_to_1m)
{
	for (uint64_t u = 4096; u <= (1u << 20); u <<= 1)
		CHECK(!layout_unit_check(u));
	static const uint64_t bad[] = { 0, 512, 2048, 12288, 65535, 2u << 20, 1ull << 40 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_STREQ(layout_unit_check(bad[i]), "a power of two from 4K to 1M");
}

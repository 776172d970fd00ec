// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the block trace reader (userspace/trace.c): what a
 * good CSV and a realistic blkparse excerpt give, request by request and
 * with their completions; the exact reason for every kind of bad line; a
 * million requests; and binary blktrace files read through blkparse.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctest.h"
#include "trace.h"

static char err[TRACE_ERR_MAX];

/* trace_read() of @len bytes of @text, named "t.csv" or "t.txt". */
static int read_n(const char *text, size_t len, enum trace_format fmt, struct trace *t)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int ret;

	CHECK(f);
	err[0] = '\0';
	ret = trace_read(f, fmt == TRACE_FMT_CSV ? "t.csv" : "t.txt", fmt, t, err, sizeof(err));
	fclose(f);
	if (ret)
		CHECK(!t->req && !t->nr);
	return ret;
}

static int read_text(const char *text, enum trace_format fmt, struct trace *t)
{
	/* fmemopen() refuses a size of 0: an empty file is "\n" read as 0 bytes of it. */
	return read_n(text[0] ? text : "\n", strlen(text), fmt, t);
}

/* The error that reading @text gives, or "(accepted)". */
static const char *refused(const char *text, enum trace_format fmt)
{
	struct trace t;

	if (!read_text(text, fmt, &t)) {
		trace_free(&t);
		return "(accepted)";
	}
	return err;
}

/* For CHECK_REFUSALS: the error, or NULL if accepted. */
static const char *refusal_csv(const char *text)
{
	const char *e = refused(text, TRACE_FMT_CSV);

	return strcmp(e, "(accepted)") ? e : NULL;
}

static const char *refusal_blkparse(const char *text)
{
	const char *e = refused(text, TRACE_FMT_BLKPARSE);

	return strcmp(e, "(accepted)") ? e : NULL;
}

#define CHECK_REQ(q, time, done, sect, n, who, kind)			\
	do {								\
		CHECK_EQ((q).time_ns, time);				\
		CHECK((q).done_ns == (uint64_t)(done));			\
		CHECK_EQ((q).sector, sect);				\
		CHECK_EQ((q).sectors, n);				\
		CHECK_EQ((q).pid, who);					\
		CHECK_EQ((q).op, kind);					\
	} while (0)

CTEST(trace_format_names)
{
	CHECK_EQ(trace_format_parse("csv"), TRACE_FMT_CSV);
	CHECK_EQ(trace_format_parse("blkparse"), TRACE_FMT_BLKPARSE);
	CHECK_EQ(trace_format_parse("CSV"), -1);
	CHECK_EQ(trace_format_parse(""), -1);
	CHECK_EQ(trace_format_parse("blktrace"), -1);
}

CTEST(trace_csv_good_file_is_sorted_with_equal_times_in_file_order)
{
	static const char text[] =
		"# captured on the test box\n"
		"time_ns,pid,op,sector,sectors\n"
		"3000,12,W,100,8\n"
		"\n"
		"1000,11,R,0,8\r\n"
		"   \t\n"
		"1000,12,D,4096,2048\n"
		"# the last sector a request may reach\n"
		"5000,4294967295,R,36028797018963960,8\n"
		"1000,13,R,7,4294967295\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_CSV, &t), 0);
	CHECK_EQ(t.nr, 5);
	CHECK_REQ(t.req[0], 0, TRACE_NO_TIME, 0, 8, 11, TRACE_READ);
	CHECK_REQ(t.req[1], 0, TRACE_NO_TIME, 4096, 2048, 12, TRACE_DISCARD);
	CHECK_REQ(t.req[2], 0, TRACE_NO_TIME, 7, 4294967295u, 13, TRACE_READ);
	CHECK_REQ(t.req[3], 2000, TRACE_NO_TIME, 100, 8, 12, TRACE_WRITE);
	CHECK_REQ(t.req[4], 4000, TRACE_NO_TIME, 36028797018963960ull, 8, 4294967295u,
		  TRACE_READ);
	trace_free(&t);
	CHECK(!t.req && !t.nr);
	trace_free(&t);
}

CTEST(trace_csv_bad_lines_give_their_number_and_why)
{
	static const struct ctest_refusal cases[] = {
		{ "time_ns,pid,op,sector\n1,2,R,3,4\n",
		  "t.csv: line 1: expected the header \"time_ns,pid,op,sector,sectors\"" },
		{ "# a comment\n\ntime_ns, pid, op, sector, sectors\n",
		  "t.csv: line 3: expected the header \"time_ns,pid,op,sector,sectors\"" },
		{ "1,2,R,3,4\n",
		  "t.csv: line 1: expected the header \"time_ns,pid,op,sector,sectors\"" },
		{ "time_ns,pid,op,sector,sectors\n1,2,R,3,4\n# x\n\n5,6,X,7,8\n",
		  "t.csv: line 5: op: \"X\" is not R, W or D" },
		{ "time_ns,pid,op,sector,sectors\n5,6,r,7,8\n",
		  "t.csv: line 2: op: \"r\" is not R, W or D" },
		{ "time_ns,pid,op,sector,sectors\n5,6,RW,7,8\n",
		  "t.csv: line 2: op: \"RW\" is not R, W or D" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,abc,8\n",
		  "t.csv: line 2: sector: \"abc\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,0x10,8\n",
		  "t.csv: line 2: sector: \"0x10\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,,8\n",
		  "t.csv: line 2: sector: \"\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,7,0\n",
		  "t.csv: line 2: sectors: 0, a request has at least one sector" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,7\n",
		  "t.csv: line 2: 4 fields, expected 5 (time_ns,pid,op,sector,sectors)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,7,8,9\n",
		  "t.csv: line 2: 6 fields, expected 5 (time_ns,pid,op,sector,sectors)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,7,8,\n",
		  "t.csv: line 2: 6 fields, expected 5 (time_ns,pid,op,sector,sectors)" },
		{ "time_ns,pid,op,sector,sectors\n-5,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \"-5\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n+5,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \"+5\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n 5,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \" 5\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n5,-6,R,7,8\n",
		  "t.csv: line 2: pid: \"-6\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n18446744073709551616,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \"18446744073709551616\" is out of range "
		  "(at most 18446744073709551615)" },
		{ "time_ns,pid,op,sector,sectors\n99999999999999999999999,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \"99999999999999999999999\" is out of range "
		  "(at most 18446744073709551615)" },
		{ "time_ns,pid,op,sector,sectors\n99999999999999999999999x,6,R,7,8\n",
		  "t.csv: line 2: time_ns: \"99999999999999999999999x\" is not a decimal number" },
		{ "time_ns,pid,op,sector,sectors\n5,4294967296,R,7,8\n",
		  "t.csv: line 2: pid: \"4294967296\" is out of range (at most 4294967295)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,R,7,4294967296\n",
		  "t.csv: line 2: sectors: \"4294967296\" is out of range (at most 4294967295)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,W,18446744073709551616,8\n",
		  "t.csv: line 2: sector: \"18446744073709551616\" is out of range "
		  "(at most 18446744073709551615)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,W,36028797018963961,8\n",
		  "t.csv: line 2: sector: 36028797018963961 + 8 ends beyond 2^55 sectors (16 EiB)" },
		{ "time_ns,pid,op,sector,sectors\n5,6,W,18446744073709551615,8\n",
		  "t.csv: line 2: sector: 18446744073709551615 + 8 ends beyond 2^55 sectors "
		  "(16 EiB)" },
		{ "", "t.csv: no requests" },
		{ "\n# nothing\n", "t.csv: no requests" },
		{ "time_ns,pid,op,sector,sectors\n", "t.csv: no requests" },
	};

	CHECK_REFUSALS(cases, refusal_csv);
}

CTEST(trace_csv_binary_data_is_named)
{
	static const char nul[] = "time_ns,pid,op,sector,sectors\n1,2,R\0,3,4\n";
	uint32_t magic[2] = { 0x65617407, 1 };
	struct trace t;

	CHECK_EQ(read_n(nul, sizeof(nul) - 1, TRACE_FMT_CSV, &t), -1);
	CHECK_STREQ(err, "t.csv: line 2: a NUL byte (not a text file?)");
	CHECK_EQ(read_n((const char *)magic, sizeof(magic), TRACE_FMT_CSV, &t), -1);
	CHECK_STREQ(err, "t.csv: a binary blktrace file, not CSV");
	CHECK_EQ(read_n((const char *)magic, sizeof(magic), TRACE_FMT_BLKPARSE, &t), -1);
	CHECK_STREQ(err, "t.txt: a binary blktrace file, not text (blkparse -i prints it)");
	/* The magic in the other byte order: a capture from a big-endian machine. */
	magic[0] = __builtin_bswap32(magic[0]);
	CHECK_EQ(read_n((const char *)magic, sizeof(magic), TRACE_FMT_CSV, &t), -1);
	CHECK_STREQ(err, "t.csv: a binary blktrace file, not CSV");
}

/*
 * What blkparse -i prints for a trace of /dev/sdb: fio reading (one read
 * plugged, a readahead split in two), jbd2 writing two bios merged into one
 * request and a flush, fstrim discarding; blkparse's summary after.  The
 * header of each event is blkparse's "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ".
 */
static const char realistic[] =
	"  8,16   1        1     0.000000000     0  m   N bfq4321S /fio dispatch\n"
	"  8,16   1        2     0.000040000  4321  A   R 2048 + 8 <- (8,17) 0\n"
	"  8,16   1        3     0.000050000  4321  Q   R 2048 + 8 [fio]\n"
	"  8,16   1        4     0.000051200  4321  G   R 2048 + 8 [fio]\n"
	"  8,16   1        5     0.000051500  4321  P   N [fio]\n"
	"  8,16   1        6     0.000052000  4321  I   R 2048 + 8 [fio]\n"
	"  8,16   1        7     0.000052500  4321  U   N [fio] 1\n"
	"  8,16   1        8     0.000053000  4321  D   R 2048 + 8 [fio]\n"
	"  8,16   0        1     0.000060000   987  Q  WS 100 + 8 [jbd2/sdb1-8]\n"
	"  8,16   0        2     0.000060500   987  G  WS 100 + 8 [jbd2/sdb1-8]\n"
	"  8,16   0        3     0.000061000   987  Q  WS 108 + 8 [jbd2/sdb1-8]\n"
	"  8,16   0        4     0.000061200   987  M  WS 108 + 8 [jbd2/sdb1-8]\n"
	"  8,16   0        5     0.000061500   987  Q FWS [jbd2/sdb1-8]\n"
	"  8,16   0        6     0.000062000   987  I  WS 100 + 16 [jbd2/sdb1-8]\n"
	"  8,16   0        7     0.000062500   987  D  WS 100 + 16 [jbd2/sdb1-8]\n"
	"  8,16   1        9     0.000200000     0  C   R 2048 + 8 [0]\n"
	"  8,16   0        8     0.000250000  4400  Q   D 4096 + 2048 [fstrim]\n"
	"  8,16   0        9     0.000250400  4400  G   D 4096 + 2048 [fstrim]\n"
	"  8,16   0       10     0.000250600  4400  I   D 4096 + 2048 [fstrim]\n"
	"  8,16   0       11     0.000251000  4400  D   D 4096 + 2048 [fstrim]\n"
	"  8,16   0       12     0.000450000     0  C  WS 100 + 16 [0]\n"
	"  8,16   0       13     0.000460000     0  C FWS 0 [0]\n"
	"  8,16   1       10     0.000550000  4321  Q  RA 8192 + 256 [fio]\n"
	"  8,16   1       11     0.000550100  4321  X  RA 8192 / 8320 [fio]\n"
	"  8,16   1       12     0.000550200  4321  G  RA 8192 + 128 [fio]\n"
	"  8,16   1       13     0.000551000  4321  D  RA 8192 + 128 [fio]\n"
	"  8,16   1       14     0.000551500  4321  D  RA 8320 + 128 [fio]\n"
	"  8,16   1       15     0.000552000  4321 UT   N [fio] 2\n"
	"  8,16   0       14     0.000950000     0  C   D 4096 + 2048 [0]\n"
	"  8,16   1       16     0.001050000     0  C  RA 8192 + 128 [0]\n"
	"  8,16   1       17     0.001250000     0  C  RA 8320 + 128 [0]\n"
	"  8,16   1       18     0.002050000  4321  Q   W 5000 + 8 [fio]\n"
	"  8,16   1       19     0.002050500  4321  Q WFS 6000 + 8 [fio]\n"
	"CPU0 (8,16):\n"
	" Reads Queued:           0,        0KiB\t Writes Queued:           3,     1040KiB\n"
	" Read Dispatches:        0,        0KiB\t Write Dispatches:        2,     1032KiB\n"
	" Reads Requeued:         0\t\t Writes Requeued:         0\n"
	" Reads Completed:        0,        0KiB\t Writes Completed:        2,     1032KiB\n"
	" Read Merges:            0,        0KiB\t Write Merges:            1,        4KiB\n"
	" Read depth:             1        \t Write depth:             2\n"
	" IO unplugs:             0        \t Timer unplugs:           0\n"
	"CPU1 (8,16):\n"
	" Reads Queued:           2,      132KiB\t Writes Queued:           2,        8KiB\n"
	"\n"
	"Total (8,16):\n"
	" Reads Queued:           2,      132KiB\t Writes Queued:           5,     1048KiB\n"
	"\n"
	"Throughput (R/W): 105KiB/s / 825KiB/s\n"
	"Events (8,16): 33 entries\n"
	"Skips: 0 forward (0 -   0.0%)\n"
	"Input file sdb.blktrace.0 added\n"
	"Input file sdb.blktrace.1 added\n";

/* The requests of realistic[], times from the first Q (at 50 us). */
static void check_realistic(const struct trace *t)
{
	CHECK_EQ(t->nr, 7);
	/* Plugged, inserted, issued, completed: 150 us. */
	CHECK_REQ(t->req[0], 0, 150000, 2048, 8, 4321, TRACE_READ);
	/* Two bios merged into one request: both complete with its C. */
	CHECK_REQ(t->req[1], 10000, 400000, 100, 8, 987, TRACE_WRITE);
	CHECK_REQ(t->req[2], 11000, 400000, 108, 8, 987, TRACE_WRITE);
	/* (The flush, with no sectors, is no request.) */
	CHECK_REQ(t->req[3], 200000, 900000, 4096, 2048, 4400, TRACE_DISCARD);
	/* Split in two: done when its second half is. */
	CHECK_REQ(t->req[4], 500000, 1200000, 8192, 256, 4321, TRACE_READ);
	/* Still in flight when the trace ended. */
	CHECK_REQ(t->req[5], 2000000, TRACE_NO_TIME, 5000, 8, 4321, TRACE_WRITE);
	/* FUA write, preflushed: a write. */
	CHECK_REQ(t->req[6], 2000500, TRACE_NO_TIME, 6000, 8, 4321, TRACE_WRITE);
}

CTEST(trace_blkparse_realistic_excerpt)
{
	struct trace t;

	CHECK_EQ(read_text(realistic, TRACE_FMT_BLKPARSE, &t), 0);
	check_realistic(&t);
	trace_free(&t);
}

CTEST(trace_blkparse_reading_twice_gives_the_same_requests)
{
	struct trace a, b;
	size_t i;

	CHECK_EQ(read_text(realistic, TRACE_FMT_BLKPARSE, &a), 0);
	CHECK_EQ(read_text(realistic, TRACE_FMT_BLKPARSE, &b), 0);
	CHECK_EQ(a.nr, b.nr);
	for (i = 0; i < a.nr; i++)
		CHECK_REQ(a.req[i], b.req[i].time_ns, b.req[i].done_ns, b.req[i].sector,
			  b.req[i].sectors, b.req[i].pid, b.req[i].op);
	trace_free(&a);
	trace_free(&b);
}

CTEST(trace_blkparse_one_c_completes_the_requests_merged_into_it)
{
	static const char text[] =
		"  8,0    0        1     0.000001000   100  Q   R 0 + 8 [dd]\n"
		"  8,0    0        2     0.000002000   100  G   R 0 + 8 [dd]\n"
		"  8,0    0        3     0.000003000   100  Q   R 8 + 8 [dd]\n"
		"  8,0    0        4     0.000004000   100  M   R 8 + 8 [dd]\n"
		"  8,0    0        5     0.000005000   100  Q   R 16 + 8 [dd]\n"
		"  8,0    0        6     0.000006000   100  M   R 16 + 8 [dd]\n"
		"  8,0    0        7     0.000006500   200  Q   R 24 + 8 [cat]\n"
		"  8,0    0        8     0.000006600   200  G   R 24 + 8 [cat]\n"
		"  8,0    0        9     0.000007000   100  D   R 0 + 24 [dd]\n"
		"  8,0    0       10     0.000007100   200  D   R 24 + 8 [cat]\n"
		/* Two processes with the same block in flight: one C each, oldest first. */
		"  8,0    0       11     0.000008000   300  Q   R 500 + 8 [a]\n"
		"  8,0    0       12     0.000008100   301  Q   R 500 + 8 [b]\n"
		"  8,0    0       13     0.000009000     0  C   R 0 + 24 [0]\n"
		"  8,0    0       14     0.000010000     0  C   R 500 + 8 [0]\n"
		"  8,0    0       15     0.000011000     0  C   R 500 + 8 [0]\n"
		"  8,0    0       16     0.000012000     0  C   R 24 + 8 [0]\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_BLKPARSE, &t), 0);
	CHECK_EQ(t.nr, 6);
	CHECK_REQ(t.req[0], 0, 8000, 0, 8, 100, TRACE_READ);
	CHECK_REQ(t.req[1], 2000, 8000, 8, 8, 100, TRACE_READ);
	CHECK_REQ(t.req[2], 4000, 8000, 16, 8, 100, TRACE_READ);
	CHECK_REQ(t.req[3], 5500, 11000, 24, 8, 200, TRACE_READ);
	CHECK_REQ(t.req[4], 7000, 9000, 500, 8, 300, TRACE_READ);
	CHECK_REQ(t.req[5], 7100, 10000, 500, 8, 301, TRACE_READ);
	trace_free(&t);
}

CTEST(trace_blkparse_completions_across_regions_and_large_requests)
{
	/*
	 * A 4 MiB request completed in 1 MiB pieces, a 1 MiB one merged from
	 * bios on both sides of a 1 MiB boundary, one split at a boundary (its
	 * second piece starts in the region after its own), and one far away
	 * (in the same list as the others) that the pieces must not touch.
	 */
	static const char text[] =
		"  8,0    0        1     0.000000000     1  Q   W 10000 + 8192 [w]\n"
		"  8,0    0        2     0.000000100     2  Q   R 2040 + 8 [r]\n"
		"  8,0    0        3     0.000000200     2  Q   R 2048 + 2040 [r]\n"
		"  8,0    0        4     0.000000300     3  Q   R 67110912 + 8 [far]\n"
		"  8,0    0        5     0.000000400     4  Q   R 6140 + 8 [s]\n"
		"  8,0    0        6     0.000000500     4  X   R 6140 / 6144 [s]\n"
		"  8,0    0        7     0.000001000     0  C   W 10000 + 2048 [0]\n"
		"  8,0    0        8     0.000002000     0  C   W 12048 + 2048 [0]\n"
		"  8,0    0        9     0.000003000     0  C   R 2040 + 2048 [0]\n"
		"  8,0    0       10     0.000004000     0  C   W 14096 + 2048 [0]\n"
		"  8,0    0       11     0.000005000     0  C   W 16144 + 2048 [0]\n"
		"  8,0    0       12     0.000006000     0  C   R 6140 + 4 [0]\n"
		"  8,0    0       13     0.000007000     0  C   R 6144 + 4 [0]\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_BLKPARSE, &t), 0);
	CHECK_EQ(t.nr, 5);
	CHECK_REQ(t.req[0], 0, 5000, 10000, 8192, 1, TRACE_WRITE);
	CHECK_REQ(t.req[1], 100, 3000, 2040, 8, 2, TRACE_READ);
	CHECK_REQ(t.req[2], 200, 3000, 2048, 2040, 2, TRACE_READ);
	CHECK_REQ(t.req[3], 300, TRACE_NO_TIME, 67110912, 8, 3, TRACE_READ);
	CHECK_REQ(t.req[4], 400, 7000, 6140, 8, 4, TRACE_READ);
	trace_free(&t);
}

CTEST(trace_blkparse_completion_is_never_before_its_request)
{
	/* CPU 0's clock a little behind CPU 1's: the C seems to come first. */
	static const char text[] =
		"  8,0    1        1     0.000020000   100  Q   R 0 + 8 [dd]\n"
		"  8,0    0        1     0.000019000     0  C   R 0 + 8 [0]\n"
		"  8,0    1        2     0.000030000   100  Q   R 8 + 8 [dd]\n"
		"  8,0    0        2     0.000029000     0  C   R 0 + 16 [0]\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_BLKPARSE, &t), 0);
	CHECK_EQ(t.nr, 2);
	CHECK_REQ(t.req[0], 0, 0, 0, 8, 100, TRACE_READ);
	CHECK_REQ(t.req[1], 10000, 10000, 8, 8, 100, TRACE_READ);
	trace_free(&t);
}

CTEST(trace_blkparse_without_q_events_uses_the_d_events)
{
	static const char text[] =
		"  8,32   0        1     0.100000000   700  D   R 64 + 16 [kworker/0:1]\n"
		"  8,32   1        1     0.100000500   701  D   W 4000 + 8 [postgres]\n"
		"  8,32   1        2     0.100002000     0  C   W 4000 + 8 [0]\n"
		"  8,32   0        2     0.100003000     0  C   R 64 + 16 [0]\n"
		"  8,32   0        3     0.100004000   700  D  DS 9000 + 4096 [kworker/0:1]\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_BLKPARSE, &t), 0);
	CHECK_EQ(t.nr, 3);
	CHECK_REQ(t.req[0], 0, 3000, 64, 16, 700, TRACE_READ);
	CHECK_REQ(t.req[1], 500, 2000, 4000, 8, 701, TRACE_WRITE);
	CHECK_REQ(t.req[2], 4000, TRACE_NO_TIME, 9000, 4096, 700, TRACE_DISCARD);
	trace_free(&t);
}

CTEST(trace_blkparse_other_layouts_are_accepted_and_ignored)
{
	/* Each of blkparse's other layouts (blkparse_fmt.c process_default()), -t's too. */
	static const char text[] =
		"  8,0    0        1     0.000000000   100  Q   R 0 + 8 (     12) [dd]\n"
		"  8,0    0        2     0.000000100   100  Q   R 36 [smartctl]\n"
		"  8,0    0        3     0.000000200   100  D   R 36 (12 00 00 00 24 00 ..) [smartctl]\n"
		"  8,0    0        4     0.000000300     0  C   N (12 00 00 00 24 00 ..) [0]\n"
		"  8,0    0        5     0.000000400   100  Q   R 8 + 8 |4| [Web Content]\n"
		"  8,0    0        6     0.000000500   100  S   R 8 + 8 [Web Content]\n"
		"  8,0    0        7     0.000000600   100  B   R 8 + 8 [Web Content]\n"
		"  8,0    0        8     0.000000700   100  F   R 16 + 8 [Web Content]\n"
		"  8,0    0        9     0.000000800   100  R   R 8 + 8 [0]\n"
		"  8,0    0       10     0.000000900   100  T   N [dd] 3\n"
		"  8,0    0       11     0.000001000   100  Q  FN [dd]\n"
		"  8,0    0       12     0.000001100   100  Q  FN (     10) [dd]\n"
		"  8,0    0       13     0.000001200     0  C  FN 0 (     20) [0]\n"
		"  8,0    0       14     0.000001300   100  Q  ZR 4096 + 524288 [zonectl]\n"
		"  8,0    0       15     0.000001400   100  Q ZAS 8192 + 8 [f2fs]\n"
		"  8,0    0       16     0.000002000     0  C   R 0 + 8 (     2000) [-5]\n"
		"259,0    3        1     0.000003000     0  m   N cfq schedule dispatch (12)\n";
	struct trace t;

	CHECK_EQ(read_text(text, TRACE_FMT_BLKPARSE, &t), 0);
	CHECK_EQ(t.nr, 3);
	CHECK_REQ(t.req[0], 0, 2000, 0, 8, 100, TRACE_READ);
	CHECK_REQ(t.req[1], 400, TRACE_NO_TIME, 8, 8, 100, TRACE_READ);
	/* A zone append writes; a zone reset moves no data. */
	CHECK_REQ(t.req[2], 1400, TRACE_NO_TIME, 8192, 8, 100, TRACE_WRITE);
	trace_free(&t);
}

CTEST(trace_blkparse_summary_of_s_ends_the_events)
{
	static const char text[] =
		"  8,0    0        1     0.000000000   100  Q   R 0 + 8 [dd]\n"
		"dd (100)\n"
		" Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB\n"
		"this is after the summary: not read\n";

	CHECK_STREQ(refused(text, TRACE_FMT_BLKPARSE), "(accepted)");
}

#define EV "  8,16   1       13     0.000312553  4321 "

CTEST(trace_blkparse_bad_lines_give_their_number_and_why)
{
	static const struct ctest_refusal cases[] = {
		{ "hello world\n", "t.txt: line 1: not a blkparse event line" },
		{ EV " Q   R 2048 + 8 [fio]\n\nhello world\n",
		  "t.txt: line 3: not a blkparse event line" },
		{ "8 16   1 13 0.000312553 4321 Q R 2048 + 8 [fio]\n",
		  "t.txt: line 1: not a blkparse event line" },
		{ "time_ns,pid,op,sector,sectors\n", "t.txt: line 1: not a blkparse event line" },
		{ "  8,16   1       13     0.000312553  4321  Q\n",
		  "t.txt: line 1: event line cut short" },
		{ "  8,99999999999   1       13     0.000312553  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: device: \"8,99999999999\" is not MAJOR,MINOR" },
		{ "  8,16   x       13     0.000312553  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: cpu: \"x\" is not a decimal number" },
		{ "  8,16   1       1x     0.000312553  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: sequence: \"1x\" is not a decimal number" },
		{ "  8,16   1       13     0.00031255  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: time: \"0.00031255\" is not SECONDS.NANOSECONDS" },
		{ "  8,16   1       13     312553  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: time: \"312553\" is not SECONDS.NANOSECONDS" },
		{ "  8,16   1       13     -1.000312553  4321  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: time: \"-1.000312553\" is not SECONDS.NANOSECONDS" },
		{ "  8,16   1       13     0.000312553  fio  Q   R 2048 + 8 [fio]\n",
		  "t.txt: line 1: pid: \"fio\" is not a decimal number" },
		{ EV " Z   R 2048 + 8 [fio]\n", "t.txt: line 1: action: \"Z\" unknown" },
		{ EV " q   R 2048 + 8 [fio]\n", "t.txt: line 1: action: \"q\" unknown" },
		{ EV " Q  XY 2048 + 8 [fio]\n", "t.txt: line 1: RWBS: \"XY\" unknown" },
		{ EV " Q   r 2048 + 8 [fio]\n", "t.txt: line 1: RWBS: \"r\" unknown" },
		{ EV " Q   R 2048 + 8\n",
		  "t.txt: line 1: Q event: expected \"SECTOR + SECTORS [PROCESS]\"" },
		{ EV " D   R 2048 8 fio\n",
		  "t.txt: line 1: D event: expected \"SECTOR + SECTORS [PROCESS]\"" },
		{ EV " Q   R 2048 + 8 (12 [fio\n",
		  "t.txt: line 1: Q event: expected \"SECTOR + SECTORS [PROCESS]\"" },
		{ EV " C   R 2048 + 8\n",
		  "t.txt: line 1: C event: expected \"SECTOR + SECTORS [ERROR]\"" },
		{ EV " Q   R 2048 + [fio]\n",
		  "t.txt: line 1: sectors: \"[fio]\" is not a decimal number" },
		{ EV " Q   R 2048 + 4294967296 [fio]\n",
		  "t.txt: line 1: sectors: \"4294967296\" is out of range (at most 4294967295)" },
		{ EV " Q   R 18446744073709551616 + 8 [fio]\n",
		  "t.txt: line 1: sector: \"18446744073709551616\" is out of range "
		  "(at most 18446744073709551615)" },
		{ EV " Q   R 18446744073709551615 + 8 [fio]\n",
		  "t.txt: line 1: sector: 18446744073709551615 + 8 ends beyond 2^55 sectors "
		  "(16 EiB)" },
		{ EV " Q   R 2048 + 8 [fio]\n  8,32   0        1     0.1  4321  Q   R 0 + 8 [fio]\n",
		  "t.txt: line 2: time: \"0.1\" is not SECONDS.NANOSECONDS" },
		{ EV " Q   R 2048 + 8 [fio]\n"
		  "  8,32   0        1     0.100000000  4321  Q   R 0 + 8 [fio]\n",
		  "t.txt: line 2: device 8,32: the events before are of 8,16 (one device at a time)" },
		{ "", "t.txt: no requests (no Q or D event with sectors)" },
		{ EV " P   N [fio]\n" EV " Q  FN [fio]\n" EV " C FWS 0 [0]\nCPU0 (8,16):\n",
		  "t.txt: no requests (no Q or D event with sectors)" },
	};

	CHECK_REFUSALS(cases, refusal_blkparse);
}

/*
 * A million requests, in no time order in the file (time i * 7919 mod 10^6
 * us: each time once): read whole and sorted.
 */
CTEST(trace_csv_a_million_requests)
{
	const size_t n = 1000000;
	struct trace t;
	char *buf = NULL;
	size_t len = 0, i, k;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f);
	fputs("time_ns,pid,op,sector,sectors\n", f);
	for (i = 0; i < n; i++)
		fprintf(f, "%zu,%zu,%c,%zu,%zu\n", i * 7919 % n * 1000, i % 32, "RWD"[i % 3], i * 8,
			8 + i % 2 * 248);
	fclose(f);
	CHECK_EQ(read_n(buf, len, TRACE_FMT_CSV, &t), 0);
	free(buf);
	CHECK_EQ(t.nr, n);
	for (k = 0; k < n; k++) {
		i = t.req[k].sector / 8;
		CHECK_EQ(t.req[k].time_ns, k * 1000);
		CHECK_EQ(i * 7919 % n, k);
		CHECK_EQ(t.req[k].pid, i % 32);
		CHECK_EQ(t.req[k].op, i % 3);
		CHECK_EQ(t.req[k].sectors, 8 + i % 2 * 248);
		CHECK(t.req[k].done_ns == TRACE_NO_TIME);
	}
	/* Request 0 is at time 0, request 1 at 7919 us: spot checks of the mapping. */
	CHECK_REQ(t.req[0], 0, TRACE_NO_TIME, 0, 8, 0, TRACE_READ);
	CHECK_REQ(t.req[7919], 7919000, TRACE_NO_TIME, 8, 256, 1, TRACE_WRITE);
	trace_free(&t);
}

/* ---- trace_open(): files, and binary captures through blkparse ---- */

/* struct blk_io_trace (blktrace_api.h), 48 bytes, in this machine's byte order. */
struct bt_event {
	uint32_t magic, sequence;
	uint64_t time, sector;
	uint32_t bytes, action, pid, device, cpu;
	uint16_t error, pdu_len;
};
_Static_assert(sizeof(struct bt_event) == 48, "struct blk_io_trace is 48 bytes");

#define BT_MAGIC	0x65617407u	/* BLK_IO_TRACE_MAGIC | version 7 */
#define BT_TC(c)	((uint32_t)(c) << 16)
#define BT_WRITE	BT_TC(1 << 1)
#define BT_QUEUE	(1 | BT_TC(1 << 4))	/* __BLK_TA_QUEUE | BLK_TC_QUEUE */
#define BT_ISSUE	(7 | BT_TC(1 << 6))
#define BT_COMPLETE	(8 | BT_TC(1 << 7))
#define BT_FS		BT_TC(1 << 8)
#define BT_PROCESS	BT_TC(1 << 10)		/* BLK_TC_NOTIFY | BLK_TN_PROCESS: a pid's name */

static char tmpdir[64];

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/trace_test.XXXXXX");
	CHECK(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	CHECK_EQ(system(cmd), 0);
}

static void bt_write(FILE *f, uint32_t cpu, uint64_t time, uint64_t sector, uint32_t bytes,
		     uint32_t action, uint32_t pid, const char *pdu)
{
	static uint32_t seq;
	struct bt_event e = {
		.magic = BT_MAGIC, .sequence = ++seq, .time = time, .sector = sector,
		.bytes = bytes, .action = action, .pid = pid, .device = 8 << 20 | 16,
		.cpu = cpu, .pdu_len = pdu ? strlen(pdu) + 1 : 0,
	};

	CHECK_EQ(fwrite(&e, sizeof(e), 1, f), 1);
	if (pdu)
		CHECK_EQ(fwrite(pdu, e.pdu_len, 1, f), 1);
}

/*
 * A small capture: fio (pid 4321) reads 8 sectors at 2048 on CPU 0, dd
 * (pid 77) writes 16 at 4096 on CPU 1.  @f0 gets CPU 0's events, @f1 CPU
 * 1's (the same file for blktrace -o -).
 */
static void bt_capture(FILE *f0, FILE *f1)
{
	bt_write(f0, 0, 1000, 0, 0, BT_PROCESS, 4321, "fio");
	bt_write(f1, 1, 1000, 0, 0, BT_PROCESS, 77, "dd");
	bt_write(f0, 0, 5000, 2048, 4096, BT_QUEUE | BT_FS, 4321, NULL);
	bt_write(f1, 1, 6000, 4096, 8192, BT_QUEUE | BT_FS | BT_WRITE, 77, NULL);
	bt_write(f0, 0, 7000, 2048, 4096, BT_ISSUE | BT_FS, 4321, NULL);
	bt_write(f1, 1, 8000, 4096, 8192, BT_ISSUE | BT_FS | BT_WRITE, 77, NULL);
	bt_write(f0, 0, 105000, 2048, 4096, BT_COMPLETE | BT_FS, 0, NULL);
	bt_write(f1, 1, 206000, 4096, 8192, BT_COMPLETE | BT_FS | BT_WRITE, 0, NULL);
}

static void check_capture(const struct trace *t)
{
	CHECK_EQ(t->nr, 2);
	CHECK_REQ(t->req[0], 0, 100000, 2048, 8, 4321, TRACE_READ);
	CHECK_REQ(t->req[1], 1000, 201000, 4096, 16, 77, TRACE_WRITE);
}

static FILE *create(const char *name, char *path)
{
	FILE *f;

	sprintf(path, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	CHECK(f);
	return f;
}

static bool blkparse_installed(void)
{
	return !system("command -v blkparse >/dev/null 2>&1");
}

CTEST(trace_open_binary_capture_through_blkparse)
{
	char one[128], cpu0[128], cpu1[128], csv[256];
	struct trace t;
	FILE *f, *g;

	if (!blkparse_installed()) {
		fprintf(stderr, "blkparse is not installed: run 'make deps' (tests/vm/setup "
			"installs the Debian package blktrace)\n");
		exit(1);
	}
	make_tmpdir();
	/* blktrace -o - > FILE: one stream, given to blkparse on its standard input. */
	f = create("it's a capture.bin", one);
	bt_capture(f, f);
	fclose(f);
	CHECK_EQ(trace_open(one, TRACE_FMT_BLKPARSE, &t, err, sizeof(err)), 0);
	check_capture(&t);
	trace_free(&t);
	/* blktrace -d /dev/sdb: one file per CPU; either names the whole capture. */
	f = create("sdb.blktrace.0", cpu0);
	g = create("sdb.blktrace.1", cpu1);
	bt_capture(f, g);
	fclose(f);
	fclose(g);
	CHECK_EQ(trace_open(cpu1, TRACE_FMT_BLKPARSE, &t, err, sizeof(err)), 0);
	check_capture(&t);
	trace_free(&t);
	CHECK_EQ(trace_open(cpu0, TRACE_FMT_BLKPARSE, &t, err, sizeof(err)), 0);
	check_capture(&t);
	trace_free(&t);
	/* Binary data given as CSV. */
	CHECK_EQ(trace_open(cpu0, TRACE_FMT_CSV, &t, err, sizeof(err)), -1);
	snprintf(csv, sizeof(csv), "%s: a binary blktrace file, not CSV", cpu0);
	CHECK_STREQ(err, csv);
	remove_tmpdir();
}

CTEST(trace_open_binary_capture_without_blkparse_names_the_package)
{
	char path[128], want[256], *saved = strdup(getenv("PATH") ? getenv("PATH") : "");
	struct trace t;
	FILE *f;

	make_tmpdir();
	f = create("sdb.blktrace.0", path);
	bt_capture(f, f);
	fclose(f);
	setenv("PATH", tmpdir, 1);
	CHECK_EQ(trace_open(path, TRACE_FMT_BLKPARSE, &t, err, sizeof(err)), -1);
	setenv("PATH", saved, 1);
	free(saved);
	snprintf(want, sizeof(want), "%s: a binary blktrace file: reading it needs blkparse, "
		 "not installed (Debian package blktrace)", path);
	CHECK_STREQ(err, want);
	CHECK(!t.req && !t.nr);
	remove_tmpdir();
}

CTEST(trace_open_text_files)
{
	char text[128], csv[128], want[256];
	struct trace t;
	FILE *f;

	make_tmpdir();
	f = create("sdb.txt", text);
	fputs(realistic, f);
	fclose(f);
	CHECK_EQ(trace_open(text, TRACE_FMT_BLKPARSE, &t, err, sizeof(err)), 0);
	check_realistic(&t);
	trace_free(&t);
	f = create("t.csv", csv);
	fputs("time_ns,pid,op,sector,sectors\n7,1,R,0,8\n7,1,Q,0,8\n", f);
	fclose(f);
	CHECK_EQ(trace_open(csv, TRACE_FMT_CSV, &t, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: line 3: op: \"Q\" is not R, W or D", csv);
	CHECK_STREQ(err, want);
	remove_tmpdir();
	CHECK_EQ(trace_open(csv, TRACE_FMT_CSV, &t, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: No such file or directory", csv);
	CHECK_STREQ(err, want);
}

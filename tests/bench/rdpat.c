// SPDX-License-Identifier: GPL-2.0
/*
 * rdpat: read a file in one of the benchmark suite's access patterns.
 *
 * usage: rdpat [-d] <file> seq <bs>
 *        rdpat [-d] <file> back <bs>
 *        rdpat [-d] <file> stride <bs> <skip> [<offset>]
 *        rdpat [-d] <file> random <bs> <count> <seed>
 *
 * seq     requests of <bs> bytes from offset 0 to the end (IOR-R);
 * back    the same requests last first, down to offset 0 (TAC): every byte
 *         once, which neither GNU tac (8 KiB chunks) nor fio's negative skip
 *         (block 0 twice, the last block never) does;
 * stride  read <bs>, skip <skip>, from <offset> to the end (4K-SR, 8K-SR, one
 *         series of 512K-SR);
 * random  <count> requests at <bs>-aligned offsets drawn with xorshift64*
 *         from <seed> (the same seed gives the same offsets).
 * A request that would cross the end of the file is cut short at it.
 * -d opens the file with O_DIRECT.
 *
 * fio does all of this too, but it links 63 shared libraries: in a guest
 * under icount its start-up alone costs seconds of guest time, more than
 * most of the workloads.  This is one static binary.
 *
 * Exit status 0, 1 with a message on any I/O error or short read, 2 on a
 * usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *path;
static int fd;
static void *buf;

static int usage(void)
{
	fprintf(stderr,
		"usage: rdpat [-d] <file> seq|back <bs>\n"
		"       rdpat [-d] <file> stride <bs> <skip> [<offset>]\n"
		"       rdpat [-d] <file> random <bs> <count> <seed>\n");
	return 2;
}

static int number(const char *s, uint64_t *v)
{
	char *e;

	errno = 0;
	*v = strtoull(s, &e, 0);
	if (errno || e == s || *e) {
		fprintf(stderr, "rdpat: bad number '%s'\n", s);
		return -1;
	}
	return 0;
}

static int rd(uint64_t off, uint64_t len)
{
	ssize_t r = pread(fd, buf, len, off);

	if (r != (ssize_t)len) {
		fprintf(stderr, "rdpat: %s: read %" PRIu64 " at %" PRIu64 ": %s\n", path,
			len, off, r < 0 ? strerror(errno) : "short read");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t size, bs, a = 0, b = 0, off;
	int flags = O_RDONLY, i = 1, nargs;
	const char *mode;
	struct stat st;

	if (i < argc && !strcmp(argv[i], "-d")) {
		flags |= O_DIRECT;
		i++;
	}
	if (argc - i < 3)
		return usage();
	path = argv[i];
	mode = argv[i + 1];
	nargs = argc - i - 2;
	if (number(argv[i + 2], &bs) || (nargs > 1 && number(argv[i + 3], &a)) ||
	    (nargs > 2 && number(argv[i + 4], &b)))
		return 2;
	if (!bs) {
		fprintf(stderr, "rdpat: the request size must not be 0\n");
		return 2;
	}
	if (!((!strcmp(mode, "seq") || !strcmp(mode, "back")) && nargs == 1) &&
	    !(!strcmp(mode, "stride") && (nargs == 2 || nargs == 3)) &&
	    !(!strcmp(mode, "random") && nargs == 3))
		return usage();

	fd = open(path, flags);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "rdpat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (posix_memalign(&buf, 4096, bs)) {
		fprintf(stderr, "rdpat: out of memory\n");
		return 1;
	}
	size = st.st_size;

	if (!strcmp(mode, "seq")) {
		for (off = 0; off < size; off += bs)
			if (rd(off, size - off < bs ? size - off : bs))
				return 1;
	} else if (!strcmp(mode, "back")) {
		for (off = size - (size % bs ? size % bs : bs); size; off -= bs) {
			if (rd(off, size - off))
				return 1;
			size = off;
		}
	} else if (!strcmp(mode, "stride")) {
		for (off = b; off < size; off += bs + a)
			if (rd(off, size - off < bs ? size - off : bs))
				return 1;
	} else {
		uint64_t x = b ? b : 1, n = size / bs;

		for (; a && n; a--) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			if (rd((x * UINT64_C(0x2545F4914F6CDD1D) >> 11) % n * bs, bs))
				return 1;
		}
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The latency tables of a vdisk device: saved to a file, loaded back,
 * checked offline, and filled by off-line training.  What vdiskctl's and
 * redcapctl's table commands run; every error exits through die().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "dmctl.h"
#include "vdisk-tables.h"

#define TABLES_MAGIC		"vdisk-tables"
#define TABLES_VERSION		1
#define MAX_ROWS_PER_QUERY	16	/* rows per "table" message ... */
#define MAX_CELLS_PER_QUERY	1024	/* ... fewer when the rows are wide */
#define MAX_ROWS		(1u << 20)
#define MAX_COLS		(1u << 24)
#define MAX_WINDOW		255	/* a cell's n is a byte in the target */
#define BLOCK			4096u

/* What to undo when the program exits, on success or on error. */
static struct {
	char *tmp_file;		/* unlinked */
	bool train_off;		/* "train off" sent to train_dev */
	struct dev train_dev;
} pending;

/* Learning back off if train switched it on; a failure is reported, not fatal. */
static void train_restore(void)
{
	const char *why;
	char *answer;

	if (!pending.train_off)
		return;
	pending.train_off = false;
	why = dm_send(&pending.train_dev, "train off", &answer);
	if (why)
		fprintf(stderr, "%s: %s: cannot switch learning back off: %s\n",
			progname, pending.train_dev.arg, why);
	else
		free(answer);
}

void vdt_cleanup(void)
{
	if (pending.tmp_file)
		unlink(pending.tmp_file);
	train_restore();
}

/* --- the tables file and the table answers ------------------------------- */

struct geom {
	uint32_t rows, cols, window;
};

struct cell {
	uint32_t col, n;
	uint64_t sum;
};

/* One row of a table: its non-empty cells in column order. */
struct row {
	uint32_t nr;
	struct cell *cell;	/* room for geom.cols */
};

static void device_geom(const struct dev *d, struct geom *g)
{
	struct stats st;

	stats_get(d, &st);
	g->rows = (uint32_t)stats_u64(d, &st, "rows", 1, MAX_ROWS);
	g->cols = (uint32_t)stats_u64(d, &st, "cols", 1, MAX_COLS);
	g->window = (uint32_t)stats_u64(d, &st, "window", 1, MAX_WINDOW);
	free(st.text);
}

/*
 * Parses "<row>[ <col>:<n>:<sum>]..." (a line of a table answer, or of a
 * file after its "r "/"w ") into @r, checking it is row @row of geometry @g.
 * Returns NULL, or why not in @why.
 */
static const char *parse_row(const char *s, const struct geom *g, uint32_t row,
			     struct row *r, char *why, size_t len)
{
	uint64_t v, col, n, sum;
	const char *tok;

	if (!take_u64(&s, &v) || (*s && *s != ' ') || v != row) {
		snprintf(why, len, "expected row %" PRIu32, row);
		return why;
	}
	r->nr = 0;
	while (*s) {
		if (*s++ != ' ' || !*s || *s == ' ') {
			snprintf(why, len, "stray space in row %" PRIu32, row);
			return why;
		}
		tok = s;
		if (!take_u64(&s, &col) || !take(&s, ":") || !take_u64(&s, &n) || !take(&s, ":") ||
		    !take_u64(&s, &sum) || (*s && *s != ' ')) {
			snprintf(why, len, "bad cell '%.*s' (expected <col>:<n>:<sum_ns>)",
				 (int)strcspn(tok, " "), tok);
			return why;
		}
		if (col >= g->cols)
			snprintf(why, len, "cell '%.*s': column %" PRIu64 " out of range 0..%" PRIu32,
				 (int)(s - tok), tok, col, g->cols - 1);
		else if (r->nr && col <= r->cell[r->nr - 1].col)
			snprintf(why, len, "cell '%.*s': columns out of order", (int)(s - tok), tok);
		else if (n < 1 || n > g->window)
			snprintf(why, len, "cell '%.*s': n=%" PRIu64 " out of range 1..%" PRIu32,
				 (int)(s - tok), tok, n, g->window);
		else if (sum > n * UINT32_MAX)
			snprintf(why, len, "cell '%.*s': sum over n * %" PRIu32 " ns",
				 (int)(s - tok), tok, UINT32_MAX);
		else
			why[0] = '\0';
		if (why[0])
			return why;
		r->cell[r->nr++] = (struct cell){ (uint32_t)col, (uint32_t)n, sum };
	}
	return NULL;
}

static void put_cells(FILE *f, const struct row *r)
{
	for (uint32_t i = 0; i < r->nr; i++)
		fprintf(f, " %" PRIu32 ":%" PRIu32 ":%" PRIu64, r->cell[i].col, r->cell[i].n,
			r->cell[i].sum);
}

/* A tables file being read, line by line. */
struct tfile {
	const char *what, *path;
	FILE *f;
	char *line;
	size_t cap;
	unsigned int lineno;
	struct geom g;
	struct row r;
	uint64_t cells;		/* filled cells read so far */
};

static void tfile_die(const struct tfile *t, const char *why) __attribute__((noreturn));
static void tfile_die(const struct tfile *t, const char *why)
{
	die("%s: %s:%u: %s", t->what, t->path, t->lineno, why);
}

/* The next line without its newline, or NULL at the end of the file. */
static const char *tfile_line(struct tfile *t)
{
	ssize_t n = getline(&t->line, &t->cap, t->f);

	if (n < 0) {
		if (ferror(t->f))
			die("%s: %s: %s", t->what, t->path, strerror(errno));
		return NULL;
	}
	t->lineno++;
	if (n && t->line[n - 1] == '\n')
		t->line[--n] = '\0';
	if (strlen(t->line) != (size_t)n)
		tfile_die(t, "NUL byte in line");
	return t->line;
}

/* Opens @path and checks its header line; exits on an error. */
static void tfile_open(struct tfile *t, const char *what, const char *path)
{
	static const char expected[] = "bad header (expected '" TABLES_MAGIC " 1 rows=<R> cols=<C> window=<W>')";
	uint64_t version, rows, cols, window;
	const char *p;
	char why[80];

	memset(t, 0, sizeof(*t));
	t->what = what;
	t->path = path;
	t->f = fopen(path, "r");
	if (!t->f)
		die("%s: %s: %s", what, path, strerror(errno));
	p = tfile_line(t);
	if (!p) {
		t->lineno = 1;
		tfile_die(t, "empty file");
	}
	if (!take(&p, TABLES_MAGIC " ") || !take_u64(&p, &version))
		tfile_die(t, expected);
	if (version != TABLES_VERSION) {
		snprintf(why, sizeof(why), "unsupported version %" PRIu64 " (expected %d)", version,
			 TABLES_VERSION);
		tfile_die(t, why);
	}
	if (!take(&p, " rows=") || !take_u64(&p, &rows) || !take(&p, " cols=") ||
	    !take_u64(&p, &cols) || !take(&p, " window=") || !take_u64(&p, &window) || *p)
		tfile_die(t, expected);
	if (rows < 1 || rows > MAX_ROWS || cols < 1 || cols > MAX_COLS || window < 1 ||
	    window > MAX_WINDOW) {
		snprintf(why, sizeof(why), "geometry rows=%" PRIu64 " cols=%" PRIu64 " window=%" PRIu64
			 " out of range", rows, cols, window);
		tfile_die(t, why);
	}
	t->g = (struct geom){ (uint32_t)rows, (uint32_t)cols, (uint32_t)window };
	t->r.cell = xmalloc(cols * sizeof(*t->r.cell));
}

/* Reads the line of row @row of table @dir ('r' or 'w') into t->r. */
static void tfile_row(struct tfile *t, char dir, uint32_t row)
{
	const char *p = tfile_line(t);
	char want[16], why[160];
	int n = snprintf(want, sizeof(want), "%c %" PRIu32, dir, row);

	if (!p) {
		snprintf(why, sizeof(why), "file ends before row '%s'", want);
		t->lineno++;
		tfile_die(t, why);
	}
	if (strncmp(p, want, (size_t)n) || (p[n] && p[n] != ' ')) {
		snprintf(why, sizeof(why), "expected row '%s'", want);
		tfile_die(t, why);
	}
	if (parse_row(p + 2, &t->g, row, &t->r, why, sizeof(why)))
		tfile_die(t, why);
	t->cells += t->r.nr;
}

static void tfile_close(struct tfile *t)
{
	fclose(t->f);
	free(t->line);
	free(t->r.cell);
}

/* Reads the whole file: every row of both tables, then the end. */
static void tfile_check(struct tfile *t, const char *what, const char *path)
{
	tfile_open(t, what, path);
	for (const char *dir = "rw"; *dir; dir++)
		for (uint32_t row = 0; row < t->g.rows; row++)
			tfile_row(t, *dir, row);
	if (tfile_line(t))
		tfile_die(t, "data after the last row");
}

/* --- commands ------------------------------------------------------------ */

void vdt_save(const struct dev *d, const char *file)
{
	char msg[64], why[160];
	uint32_t chunk;
	struct geom g;
	struct row r;
	FILE *f;

	device_geom(d, &g);
	r.cell = xmalloc(g.cols * sizeof(*r.cell));
	chunk = MAX_CELLS_PER_QUERY / g.cols;
	chunk = chunk < 1 ? 1 : chunk > MAX_ROWS_PER_QUERY ? MAX_ROWS_PER_QUERY : chunk;

	if (asprintf(&pending.tmp_file, "%s.tmp", file) < 0)
		die("out of memory");
	f = fopen(pending.tmp_file, "w");
	if (!f)
		die("save: %s: %s", pending.tmp_file, strerror(errno));
	fprintf(f, TABLES_MAGIC " %d rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 "\n",
		TABLES_VERSION, g.rows, g.cols, g.window);
	for (const char *dir = "rw"; *dir; dir++) {
		for (uint32_t first = 0; first < g.rows; first += chunk) {
			uint32_t nr = g.rows - first < chunk ? g.rows - first : chunk;
			char *answer, *line, *next;

			snprintf(msg, sizeof(msg), "table %c %" PRIu32 " %" PRIu32, *dir, first, nr);
			answer = dm_message(d, msg);
			line = answer;
			for (uint32_t row = first; row < first + nr; row++) {
				next = line + strcspn(line, "\n");
				if (!*next)
					die("%s: bad answer to '%s': row %" PRIu32 " missing or unterminated",
					    d->arg, msg, row);
				*next++ = '\0';
				if (parse_row(line, &g, row, &r, why, sizeof(why)))
					die("%s: bad answer to '%s': %s", d->arg, msg, why);
				fprintf(f, "%c %" PRIu32, *dir, row);
				put_cells(f, &r);
				fputc('\n', f);
				line = next;
			}
			if (*line)
				die("%s: bad answer to '%s': more than %" PRIu32 " rows", d->arg, msg, nr);
			free(answer);
		}
	}
	if (fflush(f) || fsync(fileno(f)) || ferror(f) || fclose(f))
		die("save: %s: %s", pending.tmp_file, strerror(errno));
	if (rename(pending.tmp_file, file))
		die("save: %s: %s", file, strerror(errno));
	free(pending.tmp_file);
	pending.tmp_file = NULL;
	free(r.cell);
}

void vdt_load(const struct dev *d, const char *file)
{
	struct tfile t;
	struct geom g;

	/* The whole file is checked before the device is touched. */
	tfile_check(&t, "load", file);
	tfile_close(&t);
	device_geom(d, &g);
	if (t.g.rows != g.rows || t.g.cols != g.cols)
		die("load: %s: table geometry rows=%" PRIu32 " cols=%" PRIu32
		    " does not match device rows=%" PRIu32 " cols=%" PRIu32,
		    file, t.g.rows, t.g.cols, g.rows, g.cols);
	if (t.g.window != g.window)
		die("load: %s: window=%" PRIu32 " does not match device window=%" PRIu32,
		    file, t.g.window, g.window);

	tfile_open(&t, "load", file);
	for (const char *dir = "rw"; *dir; dir++) {
		for (uint32_t row = 0; row < g.rows; row++) {
			char *msg = NULL;
			size_t len;
			FILE *m;

			tfile_row(&t, *dir, row);
			m = open_memstream(&msg, &len);
			if (!m)
				die("out of memory");
			fprintf(m, "load %c %" PRIu32, *dir, row);
			put_cells(m, &t.r);
			if (fclose(m))
				die("out of memory");
			free(dm_message(d, msg));
			free(msg);
		}
	}
	tfile_close(&t);
}

void vdt_check_file(const char *file)
{
	struct tfile t;

	tfile_check(&t, "check-file", file);
	printf("%s: rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 " cells_filled=%" PRIu64 "\n",
	       file, t.g.rows, t.g.cols, t.g.window, t.cells);
	tfile_close(&t);
}

/* --- train ---------------------------------------------------------------- */

/* xorshift64*: small, fast, and the same pattern for the same seed everywhere. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static uint64_t rng_seed(uint64_t seed)
{
	/* One splitmix64 step: never 0, and nearby seeds give unrelated states. */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* One whole read or write of @len bytes at @off; exits on an error. */
static void do_io(int fd, const char *path, void *buf, size_t len, off_t off, bool write)
{
	ssize_t n;

	do
		n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		die("train: %s: %s of %zu bytes at %jd: %s", path, write ? "write" : "read", len,
		    (intmax_t)off, strerror(errno));
	if ((size_t)n != len)
		die("train: %s: short %s at %jd: %zd of %zu bytes", path, write ? "write" : "read",
		    (intmax_t)off, n, len);
}

static uint64_t cells_filled(const struct dev *d)
{
	struct stats st;
	uint64_t v;

	stats_get(d, &st);
	v = stats_u64(d, &st, "cells_filled", 0, UINT64_MAX);
	free(st.text);
	return v;
}

int vdt_train(const struct dev *d, const struct vdt_train *o)
{
	uint64_t size, nblocks, maxb, reads = 0, writes = 0, bytes = 0, state, next;
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	bool tty = isatty(STDERR_FILENO);
	double t0, elapsed, next_report = 1;
	struct stats st;
	void *buf;
	int fd;

	/* A vdisk device, learning while we train. */
	stats_get(d, &st);
	if (!strcmp(stats_str(d, &st, "train"), "off")) {
		free(dm_message(d, "train on"));
		pending.train_dev = *d;
		pending.train_off = true;
	}
	free(st.text);

	fd = open(d->path, (o->write ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		die("train: %s: %s", d->path, strerror(errno));
	if (ioctl(fd, BLKGETSIZE64, &size))
		die("train: %s: cannot get its size: %s", d->path, strerror(errno));
	nblocks = size / BLOCK;
	if (!nblocks)
		die("train: %s: smaller than 4 KiB", d->path);
	maxb = o->max_kib / 4 < nblocks ? o->max_kib / 4 : nblocks;
	if (posix_memalign(&buf, BLOCK, maxb * BLOCK))
		die("out of memory");
	memset(buf, 0, maxb * BLOCK);

	interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	state = rng_seed(o->seed);
	next = nblocks;
	t0 = now();
	while (!interrupted && (elapsed = now() - t0) < (double)o->seconds) {
		uint64_t len = 1 + rng_next(&state) % maxb;
		uint64_t off = rng_next(&state) % (nblocks - len + 1);
		bool write = o->write && (rng_next(&state) >> 63);

		/*
		 * Half the requests go on where the last one ended: column 0
		 * (sequential) is what the drive's own read-ahead makes cheap,
		 * and random requests alone never measure it.
		 */
		if ((rng_next(&state) >> 63) && next + len <= nblocks)
			off = next;
		next = off + len;

		if (elapsed >= next_report) {
			uint64_t filled = cells_filled(d);

			fprintf(stderr, "%strain: %.0f/%" PRIu64 " s, %" PRIu64 " requests, cells_filled=%"
				PRIu64 "%s", tty ? "\r" : "", elapsed, o->seconds, reads + writes, filled,
				tty ? "  " : "\n");
			progress_line = tty;
			next_report = (double)(uint64_t)elapsed + 1;
		}
		do_io(fd, d->path, buf, len * BLOCK, (off_t)(off * BLOCK), false);
		if (write) {
			do_io(fd, d->path, buf, len * BLOCK, (off_t)(off * BLOCK), true);
			writes++;
		} else {
			reads++;
		}
		bytes += len * BLOCK;
	}
	elapsed = now() - t0;
	if (progress_line)
		fputc('\n', stderr);
	progress_line = false;
	close(fd);
	free(buf);
	printf("train: %s%.0f s, %" PRIu64 " requests (%" PRIu64 " reads, %" PRIu64
	       " writes), %" PRIu64 " MiB, seed=%" PRIu64 ", cells_filled=%" PRIu64 "\n",
	       interrupted ? "interrupted after " : "", elapsed, reads + writes, reads, writes,
	       bytes >> 20, o->seed, cells_filled(d));
	fflush(stdout);
	train_restore();
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return interrupted ? 130 : 0;
}

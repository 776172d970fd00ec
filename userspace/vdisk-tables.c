// SPDX-License-Identifier: GPL-2.0
/*
 * The latency tables of a vdisk device: saved to a file with the identity
 * and capacity of the disk they were learnt on, loaded back (on that disk
 * only), checked offline, and filled by off-line training.  What vdiskctl's
 * and redcapctl's table commands run; every error exits through die().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libdevmapper.h>
#include <libgen.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "dcache-probe.h"
#include "dmctl.h"
#include "vd-drive.h"
#include "vd-model.h"
#include "vdisk-tables.h"

#define TABLES_MAGIC		"vdisk-tables"
/*
 * Written: 5.  Still read: 4 (no drive cache: none), 3 (no overlap: 0
 * either), 2 (no backward columns either) and 1 (no capacity, no id
 * either).
 */
#define TABLES_VERSION		5
#define MAX_ROWS_PER_QUERY	16	/* rows per "table" message ... */
#define MAX_CELLS_PER_QUERY	1024	/* ... fewer when the rows are wide */
#define MAX_ROWS		(1u << 20)
#define MAX_COLS		(1u << 24)
#define MAX_WINDOW		255	/* a cell's n is a byte in the target */
#define BLOCK			4096u

#define EXPECTED_V1	"bad header (expected '" TABLES_MAGIC " 1 rows=<R> cols=<C> window=<W>')"
#define EXPECTED	"bad header (expected '" TABLES_MAGIC " 5 rows=<R> cols=<C> window=<W>" \
			" capacity=<sectors> overlap_us=<us> dcache=<S>,<G>,<R>,<M> id=<disk>')"
#define MAX_OVERLAP_US	10000000	/* the target's (vd-model.h) */

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
		fail("%s: cannot switch learning back off: %s", pending.train_dev.arg, why);
	else
		free(answer);
}

void vdt_cleanup(void)
{
	if (pending.tmp_file)
		unlink(pending.tmp_file);
	train_restore();
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("out of memory");
	return s;
}

/* --- the device: geometry, capacity, identity ---------------------------- */

struct geom {
	uint32_t rows, cols, window;
};

/*
 * The tables' geometry, the capacity (sectors) of the disk @d stands for,
 * and the model's overlap and drive cache (@i's version is 0).
 */
static void device_info(const struct dev *d, struct vdt_file_info *i)
{
	struct vd_dcache *dc = &i->dcache;
	struct stats st;

	stats_get(d, &st);
	i->version = 0;
	i->rows = (uint32_t)stats_u64(d, &st, "rows", 1, MAX_ROWS);
	i->cols = (uint32_t)stats_u64(d, &st, "cols", 1, MAX_COLS);
	i->window = (uint32_t)stats_u64(d, &st, "window", 1, MAX_WINDOW);
	i->capacity = stats_u64(d, &st, "capacity", 1, UINT64_MAX);
	i->overlap_us = stats_u64(d, &st, "overlap_us", 0, MAX_OVERLAP_US);
	/* A module from before the drive cache (not reloaded since an upgrade): none. */
	vdt_dcache(d, &st, "dcache", dc);
	free(st.text);
}

bool vdt_dcache(const struct dev *d, const struct stats *st, const char *what,
		struct vd_dcache *dc)
{
	char key[4][48];

	memset(dc, 0, sizeof(*dc));
	snprintf(key[0], sizeof(key[0]), "%s_segments", what);
	if (!stats_find(st, key[0]))
		return false;
	snprintf(key[1], sizeof(key[1]), "%s_segment_sectors", what);
	snprintf(key[2], sizeof(key[2]), "%s_readahead_sectors", what);
	snprintf(key[3], sizeof(key[3]), "%s_media_mbps", what);
	dc->nr_segs = (u32)stats_u64(d, st, key[0], 0, VD_DCACHE_MAX_SEGS);
	dc->seg_sectors = (u32)stats_u64(d, st, key[1], 0, UINT32_MAX);
	dc->ra_sectors = (u32)stats_u64(d, st, key[2], 0, UINT32_MAX);
	dc->media_mbps = (u32)stats_u64(d, st, key[3], 0, UINT32_MAX);
	return true;
}

/* "<segments>,<segment sectors>,<readahead sectors>,<media MB/s>" at *p. */
static bool take_dcache(const char **p, struct vd_dcache *dc)
{
	uint64_t v[4];

	for (int i = 0; i < 4; i++)
		if ((i && !take(p, ",")) || !take_u64(p, &v[i]) || v[i] > UINT32_MAX)
			return false;
	*dc = (struct vd_dcache){ (u32)v[0], (u32)v[1], (u32)v[2], (u32)v[3] };
	return true;
}

/* The "dcache" message that gives a model the drive cache @dc. */
static void dcache_message(char *buf, size_t len, const struct vd_dcache *dc)
{
	if (dc->nr_segs)
		snprintf(buf, len, "dcache %u %u %u %u", dc->nr_segs, dc->seg_sectors,
			 dc->ra_sectors, dc->media_mbps);
	else
		snprintf(buf, len, "dcache none");
}

/* "<major>:<minor>" at *p: *p moved past it. */
static bool take_devno(const char **p, unsigned int *maj, unsigned int *min)
{
	const char *s = *p;
	uint64_t a, b;

	if (!take_u64(&s, &a) || !take(&s, ":") || !take_u64(&s, &b) || a > UINT_MAX || b > UINT_MAX)
		return false;
	*maj = (unsigned int)a;
	*min = (unsigned int)b;
	*p = s;
	return true;
}

/*
 * The disk under the vdisk target of @d: the device of its table line
 * ("<major>:<minor> [features]"), which the stats answer does not name.
 */
static void vdisk_disk(const struct dev *d, unsigned int *maj, unsigned int *min)
{
	char *type = NULL, *params = NULL;
	const char *why = NULL, *p;
	uint64_t start, length;
	struct dm_task *dmt;

	if (!dm_available())
		die("%s: table: device-mapper is not available (no /dev/mapper/control)", d->arg);
	dm_log_clear();
	dmt = dm_task_create(DM_DEVICE_TABLE);
	if (!dmt)
		die("%s: table: %s", d->arg,
		    *dm_last_error() ? dm_last_error() : "cannot talk to device-mapper");
	if (!(d->name ? dm_task_set_name(dmt, d->name) :
	      dm_task_set_major(dmt, d->major) && dm_task_set_minor(dmt, d->minor))) {
		why = *dm_last_error() ? dm_last_error() : "out of memory";
	} else if (!dm_task_run(dmt)) {
		why = dm_task_why(dmt);
	} else {
		dm_get_next_target(dmt, NULL, &start, &length, &type, &params);
		p = params;
		if (!type || start || strcmp(type, "vdisk"))
			why = "no vdisk target at sector 0";
		else if (!p || !take_devno(&p, maj, min) || (*p && *p != ' '))
			why = "its table line does not start with <major>:<minor>";
	}
	if (why)
		die("%s: table: %s", d->arg, why);
	dm_task_destroy(dmt);
}

/* The first line of <@dir>/<@name> without its newline; false if none or empty. */
static bool sysfs_line(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf[0] != '\0';
}

/* The disk's WWN, else its serial number, as udev recorded them; NULL if neither. */
static char *udev_identity(unsigned int maj, unsigned int min)
{
	static const struct {
		const char *key, *prefix;
	} keys[] = {
		{ "E:ID_WWN_WITH_EXTENSION=", "wwn:" },
		{ "E:ID_WWN=", "wwn:" },
		{ "E:ID_SERIAL=", "serial:" },
	};
	char path[64], *line = NULL, *found[3] = { NULL }, *id = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/run/udev/data/b%u:%u", maj, min);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		for (size_t k = 0; k < 3; k++) {
			size_t len = strlen(keys[k].key);

			if (!found[k] && !strncmp(line, keys[k].key, len) && line[len])
				found[k] = xasprintf("%s%s", keys[k].prefix, line + len);
		}
	}
	fclose(f);
	free(line);
	for (size_t k = 0; k < 3; k++) {
		if (!id)
			id = found[k];
		else
			free(found[k]);
	}
	return id;
}

/* Who the whole disk @maj:@min is, as it would be known after a reboot. */
static char *disk_identity(unsigned int maj, unsigned int min)
{
	char sys[64], buf[PATH_MAX + 16], *id;

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", maj, min);
	if (sysfs_line(sys, "loop/backing_file", buf, sizeof(buf)))
		return xasprintf("loop:%s", buf);
	if (sysfs_line(sys, "dm/uuid", buf, sizeof(buf)))
		return xasprintf("dm-uuid:%s", buf);
	if (sysfs_line(sys, "dm/name", buf, sizeof(buf)))
		return xasprintf("dm-name:%s", buf);
	id = udev_identity(maj, min);
	return id ? id : xasprintf("dev:%u:%u", maj, min);
}

char *vdt_identity(unsigned int maj, unsigned int min)
{
	char sys[64], partition[32], whole_dev[32], *raw, *id, *p;
	unsigned int wmaj, wmin;
	const char *s = whole_dev;
	uint64_t part;

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", maj, min);
	/* A partition's sysfs directory is in its whole disk's. */
	if (sysfs_line(sys, "partition", partition, sizeof(partition)) &&
	    parse_u64(partition, 1, UINT32_MAX, &part) &&
	    sysfs_line(sys, "../dev", whole_dev, sizeof(whole_dev)) &&
	    take_devno(&s, &wmaj, &wmin) && !*s) {
		char *whole = disk_identity(wmaj, wmin);

		raw = xasprintf("%s-part%" PRIu64, whole, part);
		free(whole);
	} else {
		raw = disk_identity(maj, min);
	}
	id = p = xmalloc(3 * strlen(raw) + 1);
	for (s = raw; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c >= 0x7f || c == '%')
			p += snprintf(p, 4, "%%%02X", c);
		else
			*p++ = (char)c;
	}
	*p = '\0';
	free(raw);
	return id;
}

/* The identity of the disk under @d (vdt_identity()). */
static char *device_identity(const struct dev *d)
{
	unsigned int maj, min;

	vdisk_disk(d, &maj, &min);
	return vdt_identity(maj, min);
}

/* --- the tables file and the table answers ------------------------------- */

/* One row of a table: its non-empty cells in column order. */
struct row {
	uint32_t nr;
	struct vdt_cell *cell;	/* room for geom.cols */
};

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
		r->cell[r->nr++] = (struct vdt_cell){ (uint32_t)col, (uint32_t)n, sum };
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
	uint32_t version;
	struct geom g;
	uint64_t capacity;	/* version >= 2: of the disk the tables were learnt on */
	uint64_t overlap_us;	/* version >= 4: the model's overlap; 0 before */
	struct vd_dcache dcache;	/* version >= 5: the model's drive cache; none before */
	char *id;		/* version >= 2: that disk's identity; NULL in version 1 */
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

/* Reads and checks the header line; exits on an error. */
static void tfile_header(struct tfile *t)
{
	uint64_t version, rows, cols, window, capacity = 0, overlap_us = 0;
	const char *p = tfile_line(t), *expected = EXPECTED;
	struct vd_dcache dcache = { 0 };
	char why[160];

	if (!p) {
		t->lineno = 1;
		tfile_die(t, "empty file");
	}
	if (!take(&p, TABLES_MAGIC " ") || !take_u64(&p, &version))
		tfile_die(t, expected);
	if (version < 1 || version > TABLES_VERSION) {
		snprintf(why, sizeof(why), "unsupported version %" PRIu64 " (expected 1 to %d)",
			 version, TABLES_VERSION);
		tfile_die(t, why);
	}
	if (version == 1)
		expected = EXPECTED_V1;
	if (!take(&p, " rows=") || !take_u64(&p, &rows) || !take(&p, " cols=") ||
	    !take_u64(&p, &cols) || !take(&p, " window=") || !take_u64(&p, &window))
		tfile_die(t, expected);
	if (version >= 2 && (!take(&p, " capacity=") || !take_u64(&p, &capacity)))
		tfile_die(t, expected);
	if (version >= 4 && (!take(&p, " overlap_us=") || !take_u64(&p, &overlap_us)))
		tfile_die(t, expected);
	if (version >= 5 && (!take(&p, " dcache=") || !take_dcache(&p, &dcache)))
		tfile_die(t, expected);
	if (version >= 2 && (!take(&p, " id=") || !*p))
		tfile_die(t, expected);
	if (version == 1 && *p)
		tfile_die(t, expected);
	if (rows < 1 || rows > MAX_ROWS || cols < 1 || cols > MAX_COLS || window < 1 ||
	    window > MAX_WINDOW) {
		snprintf(why, sizeof(why), "geometry rows=%" PRIu64 " cols=%" PRIu64 " window=%" PRIu64
			 " out of range", rows, cols, window);
		tfile_die(t, why);
	}
	if (version >= 2) {
		if (!capacity)
			tfile_die(t, "capacity=0 out of range");
		for (const char *s = p; *s; s++) {
			if (*s <= ' ' || *s >= 0x7f) {
				snprintf(why, sizeof(why), "id '%.60s' is not one word of printable "
					 "ASCII", p);
				tfile_die(t, why);
			}
		}
		free(t->id);
		t->id = strdup(p);
		if (!t->id)
			die("out of memory");
	}
	if (overlap_us > MAX_OVERLAP_US) {
		snprintf(why, sizeof(why), "overlap_us=%" PRIu64 " out of range (at most %d)",
			 overlap_us, MAX_OVERLAP_US);
		tfile_die(t, why);
	}
	if (vd_dcache_check(&dcache)) {
		snprintf(why, sizeof(why), "dcache=%u,%u,%u,%u out of range (segments 0 to %d; "
			 "with segments, segment sectors and MB/s above 0)", dcache.nr_segs,
			 dcache.seg_sectors, dcache.ra_sectors, dcache.media_mbps,
			 VD_DCACHE_MAX_SEGS);
		tfile_die(t, why);
	}
	t->version = (uint32_t)version;
	t->capacity = capacity;
	t->overlap_us = overlap_us;
	t->dcache = dcache;
	t->g = (struct geom){ (uint32_t)rows, (uint32_t)cols, (uint32_t)window };
}

uint32_t vdt_device_cols(const struct vdt_file_info *info)
{
	return info->version < 3 ? info->cols + VD_BACK_COLS : info->cols;
}

/* Opens @path and checks its header line; exits on an error. */
static void tfile_open(struct tfile *t, const char *what, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->what = what;
	t->path = path;
	t->f = fopen(path, "re");
	if (!t->f)
		die("%s: %s: %s", what, path, strerror(errno));
	tfile_header(t);
	t->r.cell = xmalloc(t->g.cols * sizeof(*t->r.cell));
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
	free(t->id);
}

/* Opens and reads the whole file: every row of both tables, then the end. */
static void tfile_check(struct tfile *t, const char *what, const char *path)
{
	tfile_open(t, what, path);
	for (const char *dir = "rw"; *dir; dir++)
		for (uint32_t row = 0; row < t->g.rows; row++)
			tfile_row(t, *dir, row);
	if (tfile_line(t))
		tfile_die(t, "data after the last row");
}

/*
 * Back to the first row of the file tfile_check() read: the same open file,
 * so a file replaced meanwhile (a save to the same name) does not mix in.
 */
static void tfile_rewind(struct tfile *t)
{
	struct geom g = t->g;

	if (fseek(t->f, 0, SEEK_SET))
		die("%s: %s: %s", t->what, t->path, strerror(errno));
	t->lineno = 0;
	t->cells = 0;
	tfile_header(t);
	if (t->g.rows != g.rows || t->g.cols != g.cols || t->g.window != g.window)
		tfile_die(t, "file changed while being read");
}

/* --- commands ------------------------------------------------------------ */

/* Makes the rename of a file in the directory of @file durable. */
static void sync_dir(const char *file)
{
	char *copy = strdup(file);
	const char *dir;
	int fd;

	if (!copy)
		die("out of memory");
	dir = dirname(copy);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("save: %s: %s", dir, strerror(errno));
	/* EINVAL: a file system whose directories cannot be synced (and need not be). */
	if (fsync(fd) && errno != EINVAL)
		die("save: %s: %s", dir, strerror(errno));
	close(fd);
	free(copy);
}

FILE *vdt_create(const char *what, const char *file)
{
	char *tmp = xasprintf("%s.tmp", file);
	FILE *f;
	int fd;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		die("%s: %s: %s", what, tmp, strerror(errno));
	pending.tmp_file = tmp;
	f = fdopen(fd, "w");
	if (!f)
		die("%s: %s: %s", what, tmp, strerror(errno));
	return f;
}

void vdt_commit(FILE *f, const char *what, const char *file)
{
	char *tmp = pending.tmp_file;

	if (fflush(f) || fsync(fileno(f)) || ferror(f))
		die("%s: %s: %s", what, tmp, strerror(errno));
	if (fclose(f))
		die("%s: %s: %s", what, tmp, strerror(errno));
	if (rename(tmp, file))
		die("%s: %s: %s", what, file, strerror(errno));
	pending.tmp_file = NULL;
	free(tmp);
	sync_dir(file);
}

/*
 * Writes a tables file (vdt_create(), vdt_commit()): @row gives each
 * row's cells, table 'r' then 'w', rows in order; then @end, if any, may
 * still refuse (exit) before the rename.
 */
static void tables_write(const char *what, const char *file, const struct vdt_file_info *info,
			 const char *id, vdt_row_fn *row, void (*end)(void *arg), void *arg)
{
	const struct vd_dcache *dc = &info->dcache;
	FILE *f = vdt_create(what, file);
	struct row r;

	r.cell = xmalloc(info->cols * sizeof(*r.cell));
	fprintf(f, TABLES_MAGIC " %d rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32
		" capacity=%" PRIu64 " overlap_us=%" PRIu64 " dcache=%u,%u,%u,%u id=%s\n",
		TABLES_VERSION, info->rows, info->cols, info->window, info->capacity,
		info->overlap_us, dc->nr_segs, dc->seg_sectors, dc->ra_sectors, dc->media_mbps,
		id);
	for (const char *dir = "rw"; *dir; dir++) {
		for (uint32_t i = 0; i < info->rows; i++) {
			r.nr = row(arg, *dir, i, r.cell);
			fprintf(f, "%c %" PRIu32, *dir, i);
			put_cells(f, &r);
			fputc('\n', f);
		}
	}
	if (end)
		end(arg);
	vdt_commit(f, what, file);
	free(r.cell);
}

/* The rows of a device's tables, asked for a chunk of rows at a time. */
struct device_rows {
	const struct dev *d;
	struct geom g;
	uint32_t chunk;
	char dir;
	uint32_t first, nr;	/* the rows of the answer held */
	char *answer, *line;
};

/* The answer held is used up: no row more than asked for. */
static void device_rows_end(void *arg)
{
	const struct device_rows *q = arg;
	char msg[64];

	if (!q->answer || !*q->line)
		return;
	snprintf(msg, sizeof(msg), "table %c %" PRIu32 " %" PRIu32, q->dir, q->first, q->nr);
	die("%s: bad answer to '%s': more than %" PRIu32 " rows", q->d->arg, msg, q->nr);
}

static uint32_t device_row(void *arg, char dir, uint32_t row, struct vdt_cell *cells)
{
	struct device_rows *q = arg;
	struct row r = { 0, cells };
	char msg[64], why[160], *next;

	if (dir != q->dir || row >= q->first + q->nr) {
		device_rows_end(q);
		free(q->answer);
		q->dir = dir;
		q->first = row;
		q->nr = q->g.rows - row < q->chunk ? q->g.rows - row : q->chunk;
		snprintf(msg, sizeof(msg), "table %c %" PRIu32 " %" PRIu32, dir, row, q->nr);
		q->answer = dm_message(q->d, msg);
		q->line = q->answer;
	}
	snprintf(msg, sizeof(msg), "table %c %" PRIu32 " %" PRIu32, q->dir, q->first, q->nr);
	next = q->line + strcspn(q->line, "\n");
	if (!*next)
		die("%s: bad answer to '%s': row %" PRIu32 " missing or unterminated", q->d->arg,
		    msg, row);
	*next++ = '\0';
	if (parse_row(q->line, &q->g, row, &r, why, sizeof(why)))
		die("%s: bad answer to '%s': %s", q->d->arg, msg, why);
	q->line = next;
	return r.nr;
}

void vdt_save(const struct dev *d, const char *file)
{
	struct device_rows q = { .d = d };
	struct vdt_file_info info;
	char *id;

	device_info(d, &info);
	q.g = (struct geom){ info.rows, info.cols, info.window };
	id = device_identity(d);
	q.chunk = MAX_CELLS_PER_QUERY / q.g.cols;
	q.chunk = q.chunk < 1 ? 1 : q.chunk > MAX_ROWS_PER_QUERY ? MAX_ROWS_PER_QUERY : q.chunk;
	tables_write("save", file, &info, id, device_row, device_rows_end, &q);
	free(q.answer);
	free(id);
}

void vdt_write(const char *what, const char *file, const struct vdt_file_info *info,
	       const char *id, vdt_row_fn *row, void *arg)
{
	tables_write(what, file, info, id, row, NULL, arg);
}

void vdt_load(const struct dev *d, const char *file)
{
	struct vdt_file_info info, dev;
	char overlap[64], dcache[80];
	uint64_t capacity;
	struct tfile t;
	struct geom g;
	char *id;

	/* The whole file is checked before the device is touched. */
	tfile_check(&t, "load", file);
	device_info(d, &dev);
	g = (struct geom){ dev.rows, dev.cols, dev.window };
	capacity = dev.capacity;
	id = device_identity(d);
	if (t.id && (strcmp(t.id, id) || t.capacity != capacity))
		die("load: %s: made for disk '%s' (capacity %" PRIu64 " sectors), not for '%s'"
		    " (capacity %" PRIu64 " sectors)", file, t.id, t.capacity, id, capacity);
	info = (struct vdt_file_info){ t.version, t.g.rows, t.g.cols, t.g.window, t.capacity,
				       t.overlap_us, t.dcache };
	if (t.g.rows != g.rows || vdt_device_cols(&info) != g.cols)
		die("load: %s: table geometry rows=%" PRIu32 " cols=%" PRIu32 "%s"
		    " does not match device rows=%" PRIu32 " cols=%" PRIu32,
		    file, t.g.rows, t.g.cols, t.version < 3 ? " (forward only)" : "",
		    g.rows, g.cols);
	if (t.g.window != g.window)
		die("load: %s: window=%" PRIu32 " does not match device window=%" PRIu32,
		    file, t.g.window, g.window);
	if (!t.id)
		fprintf(stderr, "%s: load: %s: warning: a version 1 file does not say which disk it "
			"was made for; not checked against '%s' (capacity %" PRIu64 " sectors)\n",
			progname, file, id, capacity);

	tfile_rewind(&t);
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
	/* A file before version 4 was made for a disk served one request at a time. */
	snprintf(overlap, sizeof(overlap), "overlap %" PRIu64, t.overlap_us);
	free(dm_message(d, overlap));
	/* Only when it changes anything: a module from before it has no such message. */
	if (t.dcache.nr_segs || dev.dcache.nr_segs) {
		dcache_message(dcache, sizeof(dcache), &t.dcache);
		free(dm_message(d, dcache));
	}
	if (t.version < 5)
		fprintf(stderr, "%s: load: %s: warning: a version %" PRIu32 " file does not say the "
			"drive's cache; the model prices none\n", progname, file, t.version);
	tfile_close(&t);
	free(id);
}

void vdt_read_cells(const char *what, const char *file, struct vdt_file_info *info,
		    vdt_cell_fn *cell, void *arg)
{
	struct tfile t;

	tfile_check(&t, what, file);
	*info = (struct vdt_file_info){ t.version, t.g.rows, t.g.cols, t.g.window, t.capacity,
					t.overlap_us, t.dcache };
	tfile_rewind(&t);
	for (const char *dir = "rw"; cell && *dir; dir++) {
		for (uint32_t row = 0; row < t.g.rows; row++) {
			tfile_row(&t, *dir, row);
			for (uint32_t i = 0; i < t.r.nr; i++)
				cell(arg, *dir, row, t.r.cell[i].col, t.r.cell[i].n,
				     t.r.cell[i].sum);
		}
	}
	tfile_close(&t);
}

void vdt_check_file(const char *file)
{
	struct tfile t;

	tfile_check(&t, "check-file", file);
	if (t.version >= 5)
		printf("%s: rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 " capacity=%" PRIu64
		       " overlap_us=%" PRIu64 " dcache=%u,%u,%u,%u id=%s cells_filled=%" PRIu64 "\n",
		       file, t.g.rows, t.g.cols, t.g.window, t.capacity, t.overlap_us,
		       t.dcache.nr_segs, t.dcache.seg_sectors, t.dcache.ra_sectors,
		       t.dcache.media_mbps, t.id, t.cells);
	else if (t.version >= 4)
		printf("%s: rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 " capacity=%" PRIu64
		       " overlap_us=%" PRIu64 " id=%s cells_filled=%" PRIu64 "\n", file, t.g.rows,
		       t.g.cols, t.g.window, t.capacity, t.overlap_us, t.id, t.cells);
	else if (t.id)
		printf("%s: rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 " capacity=%" PRIu64
		       " id=%s cells_filled=%" PRIu64 "\n", file, t.g.rows, t.g.cols, t.g.window,
		       t.capacity, t.id, t.cells);
	else
		printf("%s: rows=%" PRIu32 " cols=%" PRIu32 " window=%" PRIu32 " cells_filled=%"
		       PRIu64 "\n", file, t.g.rows, t.g.cols, t.g.window, t.cells);
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

/*
 * The overlap (vd-model.h): 4 KiB reads at random, one at a time for
 * OVERLAP_S, then OVERLAP_READERS at once for as long, each phase timed by
 * the device itself (its busy time over the reads it timed, as its model
 * learns them: this program's own time per read is not the disk's).  A disk
 * that serves one at a time is busy as long a read side by side as alone;
 * a network or cloud volume completes them as fast as their serial part
 * (or this machine) allows, and the rest of a read's time alone is what
 * overlaps (vd_overlap_of(): 0 below a speed-up of 25 %).
 */
#define OVERLAP_S		1.0
#define OVERLAP_READERS		VD_OVERLAP_DEPTH

struct overlap_reader {
	int fd;
	const char *path;
	uint64_t nblocks, seed;
	double until;
	pthread_t thread;
};

static void *overlap_read(void *arg)
{
	struct overlap_reader *r = arg;
	uint64_t state = rng_seed(r->seed);
	void *buf;

	if (posix_memalign(&buf, BLOCK, BLOCK))
		die("out of memory");
	while (!interrupted && now_s() < r->until) {
		do_io(r->fd, r->path, buf, BLOCK,
		      (off_t)(rng_next(&state) % r->nblocks * BLOCK), false);
	}
	free(buf);
	return NULL;
}

/* The device's busy time per read it timed while @n readers ran side by side. */
static double overlap_phase(const struct dev *d, int fd, uint64_t nblocks, uint64_t seed,
			    unsigned int n)
{
	struct overlap_reader r[OVERLAP_READERS];
	uint64_t busy0, reads0, busy, reads;
	unsigned int i;
	struct stats st;
	double until;
	int err;

	stats_get(d, &st);
	busy0 = stats_u64(d, &st, "busy_us", 0, UINT64_MAX);
	reads0 = stats_u64(d, &st, "read_samples", 0, UINT64_MAX);
	free(st.text);
	until = now_s() + OVERLAP_S;
	for (i = 0; i < n; i++) {
		r[i] = (struct overlap_reader){ .fd = fd, .path = d->path, .nblocks = nblocks,
						.seed = seed + i, .until = until };
		err = pthread_create(&r[i].thread, NULL, overlap_read, &r[i]);
		if (err)
			die("train: cannot start a reader: %s", strerror(err));
	}
	for (i = 0; i < n; i++)
		pthread_join(r[i].thread, NULL);
	stats_get(d, &st);
	busy = stats_u64(d, &st, "busy_us", 0, UINT64_MAX) - busy0;
	reads = stats_u64(d, &st, "read_samples", 0, UINT64_MAX) - reads0;
	free(st.text);
	return reads ? (double)busy / (double)reads : 0;
}

/*
 * Measures the overlap of @d and sets it: *us, from *one_us a read alone and
 * *gap_us a read side by side; false if interrupted.
 */
static bool train_overlap(const struct dev *d, int fd, uint64_t nblocks, uint64_t seed,
			  double *one_us, double *gap_us, uint64_t *us)
{
	char msg[64];

	*one_us = overlap_phase(d, fd, nblocks, seed, 1);
	/* The model would learn a read's serial part as its time: not these. */
	free(dm_message(d, "train off"));
	*gap_us = overlap_phase(d, fd, nblocks, seed + 1, OVERLAP_READERS);
	free(dm_message(d, "train on"));
	if (interrupted || !*one_us || !*gap_us)
		return false;
	*us = vd_overlap_of((u64)(*one_us * 1000), (u64)(*gap_us * 1000)) / 1000;
	snprintf(msg, sizeof(msg), "overlap %" PRIu64, *us);
	free(dm_message(d, msg));
	return true;
}

/* The drive's own cache (vd-dclearn.h), shown to the target: dcache-probe.h. */
static void think_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR && !interrupted)
		;
}

struct probe_io {
	const struct dev *d;
	int fd;
	void *buf;
};

static bool probe_read(void *ctx, uint64_t block, uint32_t blocks, unsigned int ms)
{
	struct probe_io *p = ctx;

	do_io(p->fd, p->d->path, p->buf, blocks * DCACHE_BLOCK, (off_t)(block * DCACHE_BLOCK),
	      false);
	if (ms)
		think_ms(ms);
	return !interrupted;
}

/* The probe's reads; false if interrupted or the disk is too small for it. */
static bool probe_dcache(const struct dev *d, int fd, uint64_t nblocks)
{
	struct probe_io p = { d, fd, NULL };
	bool done;

	if (nblocks < DCACHE_MIN_BLOCKS)
		return false;
	if (posix_memalign(&p.buf, DCACHE_BLOCK, DCACHE_STREAM_BLOCKS * DCACHE_BLOCK))
		die("out of memory");
	done = dcache_probe(nblocks, probe_read, &p);
	free(p.buf);
	return done;
}

/*
 * Shows @d its drive cache (dcache_probe(), the model's tables not learning),
 * and reports what it learnt; the model prices it from now on.  false if
 * nothing was learnt.
 */
static bool train_dcache(const struct dev *d, int fd, uint64_t nblocks)
{
	struct vd_dcache dc;
	uint64_t reads, hits;
	struct stats st;
	bool probed;

	free(dm_message(d, "train off"));
	probed = probe_dcache(d, fd, nblocks);
	free(dm_message(d, "train on"));
	if (!probed) {
		if (!interrupted)
			printf("train: drive cache: not probed (the disk is smaller than %d MiB)\n",
			       (int)((uint64_t)DCACHE_MIN_BLOCKS * DCACHE_BLOCK >> 20));
		return false;
	}
	stats_get(d, &st);
	vdt_dcache(d, &st, "learnt_dcache", &dc);
	reads = stats_u64(d, &st, "learnt_dcache_reads", 0, UINT64_MAX);
	hits = stats_u64(d, &st, "learnt_dcache_hits", 0, UINT64_MAX);
	free(st.text);
	if (!dc.nr_segs) {
		printf("train: drive cache: none learnt (%" PRIu64 " reads timed alone, %" PRIu64
		       " hits)\n", reads, hits);
		return false;
	}
	printf("train: drive cache: %u segments of %u KiB, read-ahead %u KiB, media %u MB/s (%"
	       PRIu64 " reads timed alone, %" PRIu64 " hits)\n", dc.nr_segs, dc.seg_sectors / 2,
	       dc.ra_sectors / 2, dc.media_mbps, reads, hits);
	free(dm_message(d, "dcache learnt"));
	return true;
}

/* Train's short skips: 4 KiB up to 8 MiB, the model's columns 2..13. */
#define TRAIN_SKIP_BITS		12

int vdt_train(const struct dev *d, const struct vdt_train *o)
{
	uint64_t size, nblocks, maxb, reads = 0, writes = 0, bytes = 0, state, next, overlap_us = 0;
	uint64_t skip, max_kib;
	double one_us = 0, gap_us = 0;
	bool measured;
	struct sigaction sa = { .sa_handler = on_interrupt }, old_int, old_term;
	bool tty = isatty(STDERR_FILENO);
	double t0, elapsed, next_report = 1;
	struct stats st;
	void *buf;
	int fd;

	/* A vdisk device, learning while we train. */
	stats_get(d, &st);
	/*
	 * Every row of the model by default: a request beyond the last row
	 * is priced from the last one (vd_model_estimate()), and a row never
	 * measured is priced from other sizes.
	 */
	max_kib = o->max_kib ? o->max_kib :
		  stats_u64(d, &st, "rows", 1, VD_MAX_ROWS) * VD_ROW_SECTORS / 2;
	if (o->drive_cache && !stats_find(&st, "learnt_dcache_segments"))
		die("train: --drive-cache: %s: its dm-vdisk module does not learn the drive's cache "
		    "(loaded before an upgrade? reload it)", d->arg);
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
	maxb = max_kib / 4 < nblocks ? max_kib / 4 : nblocks;
	if (posix_memalign(&buf, BLOCK, maxb * BLOCK))
		die("out of memory");
	memset(buf, 0, maxb * BLOCK);

	/* It may be a disk in production: say so before keeping it busy. */
	fprintf(stderr, "train: loading %s with %s for %" PRIu64 " s (SIGINT stops early)\n",
		d->path, o->write ? "reads and writes" : "reads", o->seconds);
	interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	state = rng_seed(o->seed);
	next = nblocks;
	t0 = now_s();
	while (!interrupted && (elapsed = now_s() - t0) < (double)o->seconds) {
		uint64_t len = 1 + rng_next(&state) % maxb;
		uint64_t off = rng_next(&state) % (nblocks - len + 1);
		bool write = o->write && (rng_next(&state) >> 63);

		/*
		 * Half the requests go on where the last one ended: column 0
		 * (sequential) is what the drive's own read-ahead makes cheap,
		 * and random requests alone never measure it.  A quarter skip
		 * 4 KiB << k (k < TRAIN_SKIP_BITS) forward or back from there:
		 * the short distances between interleaved streams, which a
		 * random offset on a large disk almost never lands at, and an
		 * empty cell is priced from another size's mean.  The rest at
		 * random.
		 */
		switch (rng_next(&state) >> 62) {
		case 0:
		case 1:
			if (next + len <= nblocks)
				off = next;
			break;
		case 2:
			skip = (uint64_t)1 << (rng_next(&state) % TRAIN_SKIP_BITS);
			if (rng_next(&state) >> 63) {
				if (next + skip + len <= nblocks)
					off = next + skip;
			} else if (skip + len <= next) {
				off = next - skip - len;	/* ends @skip before */
			}
			break;
		}
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
	elapsed = now_s() - t0;
	if (progress_line)
		fputc('\n', stderr);
	progress_line = false;
	measured = !interrupted &&
		   train_overlap(d, fd, nblocks, o->seed, &one_us, &gap_us, &overlap_us);
	printf("train: %s%.0f s, %" PRIu64 " requests (%" PRIu64 " reads, %" PRIu64
	       " writes), %" PRIu64 " MiB, seed=%" PRIu64 ", cells_filled=%" PRIu64 "\n",
	       interrupted ? "interrupted after " : "", elapsed, reads + writes, reads, writes,
	       bytes >> 20, o->seed, cells_filled(d));
	if (measured)
		printf("train: overlap_us=%" PRIu64 " (the disk busy %.0f us a 4 KiB read alone, "
		       "%.0f us with %d side by side)\n", overlap_us, one_us, gap_us, OVERLAP_READERS);
	if (!interrupted && o->drive_cache)
		train_dcache(d, fd, nblocks);
	fflush(stdout);
	close(fd);
	free(buf);
	train_restore();
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return interrupted ? 130 : 0;
}

/* --- train's options, for vdiskctl train and redcapctl model train --------- */

const struct option vdt_train_options[] = {
	{ "time", required_argument, NULL, 't' },
	{ "write", no_argument, NULL, 'w' },
	{ "seed", required_argument, NULL, 's' },
	{ "max-kib", required_argument, NULL, 'k' },
	{ "drive-cache", no_argument, NULL, 'D' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

void vdt_train_opt(int c, const char *arg, void *ctx)
{
	struct vdt_train *o = ctx;

	switch (c) {
	case 't':
		if (!parse_u64(arg, 1, INT_MAX, &o->seconds))
			usage_error("train: --time: '%s' is not a number of seconds (1 or more)", arg);
		break;
	case 's':
		if (!parse_u64(arg, 0, UINT64_MAX, &o->seed))
			usage_error("train: --seed: '%s' is not a number", arg);
		break;
	case 'k':
		if (!parse_u64(arg, 4, 65536, &o->max_kib) || o->max_kib % 4)
			usage_error("train: --max-kib: '%s' is not a multiple of 4 from 4 to 65536", arg);
		break;
	case 'w':
		o->write = true;
		break;
	case 'D':
		o->drive_cache = true;
		break;
	}
}

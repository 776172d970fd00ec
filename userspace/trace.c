// SPDX-License-Identifier: GPL-2.0
/*
 * Block trace reader for redcapctl simulate (trace.h): CSV, blkparse's
 * default text, and binary blktrace captures through blkparse.  One pass
 * over the text, one growing array of requests, then a stable sort by time.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace.h"

/*
 * blktrace_api.h: every record of a binary trace starts with
 * BLK_IO_TRACE_MAGIC | version, in the byte order of the machine that
 * captured it (blkparse reads both orders, so both are recognised).
 */
#define BLK_IO_TRACE_MAGIC	0x65617400u
#define BLK_IO_TRACE_MASK	0xffffff00u

/* A request must end within 2^64 bytes, so that the replay may count in bytes. */
#define SECTOR_LIMIT		(1ull << 55)

#define CSV_HEADER		"time_ns,pid,op,sector,sectors"
#define CSV_FIELDS		5

/* The op of an event that moves no data (flush, zone management, pass-through). */
#define OP_NONE			(-1)

/*
 * Outstanding requests (queued, not completed yet) are listed by the 1 MiB
 * region of their first sector, modulo OUT_SLOTS lists; those longer than a
 * region are on one list of their own.  A C event then looks at the lists of
 * the regions it spans and the one before (where a request overlapping its
 * start may begin), so matching costs the few requests in flight near it,
 * not the whole trace.
 */
#define OUT_SHIFT		11
#define OUT_SLOTS		(1u << 14)
#define NONE			SIZE_MAX

struct reqs {
	struct trace_req *req;
	size_t nr, alloc;
	/* For blkparse only (completions): */
	uint32_t *left;		/* sectors of each request not completed yet */
	size_t *next;		/* the next on its outstanding list */
	size_t *slot;		/* OUT_SLOTS list heads */
	size_t large;		/* the list of those longer than 1 << OUT_SHIFT sectors */
};

struct reader {
	const char *name;
	char *err;
	size_t errlen;
	unsigned long line;
	bool header;		/* csv: the header was read */
	bool track;		/* blkparse: keep what completions need */
	bool seen_q;		/* blkparse: Q events are the requests, D ones are not kept */
	bool dev_set;
	unsigned long major, minor;
	struct reqs q;		/* the requests (csv), the Q events (blkparse) */
	struct reqs d;		/* the D events, while no Q was seen */
};

static int vsay(char *err, size_t errlen, const char *name, unsigned long line, const char *fmt,
		va_list ap)
{
	int n;

	if (!err || !errlen)
		return -1;
	if (line)
		n = snprintf(err, errlen, "%s: line %lu: ", name, line);
	else
		n = snprintf(err, errlen, "%s: ", name);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - n, fmt, ap);
	return -1;
}

static int say(char *err, size_t errlen, const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(err, errlen, name, 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* A message about the current line. */
static int bad(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(r->err, r->errlen, r->name, r->line, fmt, ap);
	va_end(ap);
	return -1;
}

/* The digits of @s as *@v.  0, -1 if @s is not only digits, -2 if it is above @max. */
static int decimal(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	const char *p;

	if (!*s)
		return -1;
	for (p = s; *p; p++) {
		unsigned int d = (unsigned char)*p - '0';

		if (d > 9)
			return -1;
		if (x > (max - d) / 10) {
			/* Digits still make it a number, only too big; anything else is not one. */
			while (isdigit((unsigned char)*++p))
				;
			return *p ? -1 : -2;
		}
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static int number(struct reader *r, const char *field, const char *s, uint64_t max, uint64_t *v)
{
	switch (decimal(s, max, v)) {
	case 0:
		return 0;
	case -2:
		return bad(r, "%s: \"%.40s\" is out of range (at most %llu)", field, s,
			   (unsigned long long)max);
	default:
		return bad(r, "%s: \"%.40s\" is not a decimal number", field, s);
	}
}

static bool is_magic(uint32_t w)
{
	return (w & BLK_IO_TRACE_MASK) == BLK_IO_TRACE_MAGIC ||
	       (__builtin_bswap32(w) & BLK_IO_TRACE_MASK) == BLK_IO_TRACE_MAGIC;
}

static void reqs_free(struct reqs *s)
{
	free(s->req);
	free(s->left);
	free(s->next);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

static size_t *out_list(struct reqs *s, uint64_t sector, uint32_t sectors)
{
	if (sectors > 1u << OUT_SHIFT)
		return &s->large;
	return &s->slot[(sector >> OUT_SHIFT) & (OUT_SLOTS - 1)];
}

/* Appends @q to @s (and to its outstanding requests if @track).  0, or -1 out of memory. */
static int reqs_push(struct reqs *s, bool track, const struct trace_req *q)
{
	size_t *list;
	void *p;

	if (s->nr == s->alloc) {
		size_t n = s->alloc ? 2 * s->alloc : 4096;

		if (n > SIZE_MAX / sizeof(*s->req))
			return -1;
		p = realloc(s->req, n * sizeof(*s->req));
		if (!p)
			return -1;
		s->req = p;
		if (track) {
			p = realloc(s->left, n * sizeof(*s->left));
			if (!p)
				return -1;
			s->left = p;
			p = realloc(s->next, n * sizeof(*s->next));
			if (!p)
				return -1;
			s->next = p;
		}
		s->alloc = n;
	}
	if (track) {
		if (!s->slot) {
			s->slot = malloc(OUT_SLOTS * sizeof(*s->slot));
			if (!s->slot)
				return -1;
			memset(s->slot, 0xff, OUT_SLOTS * sizeof(*s->slot));	/* NONE */
			s->large = NONE;
		}
		list = out_list(s, q->sector, q->sectors);
		s->left[s->nr] = q->sectors;
		s->next[s->nr] = *list;
		*list = s->nr;
	}
	s->req[s->nr++] = *q;
	return 0;
}

/*
 * A completion is never before its request: the CPUs' clocks of a capture
 * may differ by a little, and a replay counts done_ns - time_ns.
 */
static uint64_t done_time(const struct trace_req *q, uint64_t time)
{
	return time < q->time_ns ? q->time_ns : time;
}

/* Credits [@sector, @end) done at @time to each outstanding request of the list at @link. */
static void credit(struct reqs *s, size_t *link, uint64_t sector, uint64_t end, uint64_t time)
{
	while (*link != NONE) {
		size_t i = *link;
		struct trace_req *q = &s->req[i];
		uint64_t lo = q->sector > sector ? q->sector : sector;
		uint64_t hi = q->sector + q->sectors < end ? q->sector + q->sectors : end;

		if (lo < hi) {
			s->left[i] -= hi - lo < s->left[i] ? hi - lo : s->left[i];
			if (!s->left[i]) {
				q->done_ns = done_time(q, time);
				*link = s->next[i];
				continue;
			}
		}
		link = &s->next[i];
	}
}

/*
 * A C event of [@sector, @sector + @n) at @time.  The oldest outstanding
 * request of exactly that extent is the one completed (two processes may
 * have the same block in flight: one C each); failing that, the C is of a
 * request the block layer built from several (merges: each completes with
 * it) or of a piece of one (splits, partial completions: the request
 * completes when its last sector does).
 */
static void reqs_complete(struct reqs *s, uint64_t sector, uint32_t n, uint64_t time)
{
	uint64_t end = sector + n, first, last, b;
	size_t *link, *oldest = NULL;

	if (!s->slot)
		return;
	for (link = out_list(s, sector, n); *link != NONE; link = &s->next[*link]) {
		size_t i = *link;

		if (s->req[i].sector == sector && s->req[i].sectors == n && s->left[i] == n &&
		    (!oldest || i < *oldest))
			oldest = link;
	}
	if (oldest) {
		s->left[*oldest] = 0;
		s->req[*oldest].done_ns = done_time(&s->req[*oldest], time);
		*oldest = s->next[*oldest];
		return;
	}
	credit(s, &s->large, sector, end, time);
	first = sector >> OUT_SHIFT;
	if (first)
		first--;
	last = (end - 1) >> OUT_SHIFT;
	if (last - first >= OUT_SLOTS - 1) {
		first = 0;
		last = OUT_SLOTS - 1;
	}
	for (b = first; b <= last; b++)
		credit(s, &s->slot[b & (OUT_SLOTS - 1)], sector, end, time);
}

/* Range and overflow of a request's extent, for both formats. */
static int check_extent(struct reader *r, uint64_t sector, uint64_t sectors)
{
	if (sector >= SECTOR_LIMIT || sectors > SECTOR_LIMIT - sector)
		return bad(r, "sector: %llu + %llu ends beyond 2^55 sectors (16 EiB)",
			   (unsigned long long)sector, (unsigned long long)sectors);
	return 0;
}

static int push(struct reader *r, struct reqs *s, const struct trace_req *q)
{
	if (reqs_push(s, r->track, q))
		return say(r->err, r->errlen, r->name, "out of memory");
	return 0;
}

/* ---- csv ---- */

static int csv_line(struct reader *r, char *s)
{
	static const char *const names[CSV_FIELDS] = { "time_ns", "pid", "op", "sector", "sectors" };
	char *field[CSV_FIELDS];
	struct trace_req q = { .done_ns = TRACE_NO_TIME };
	uint64_t v[CSV_FIELDS];
	unsigned int n = 1, i;
	char *p;

	if (!r->header) {
		if (strcmp(s, CSV_HEADER))
			return bad(r, "expected the header \"" CSV_HEADER "\"");
		r->header = true;
		return 0;
	}
	field[0] = s;
	for (p = strchr(s, ','); p; p = strchr(p + 1, ',')) {
		if (n < CSV_FIELDS)
			field[n] = p + 1;
		n++;
	}
	if (n != CSV_FIELDS)
		return bad(r, "%u fields, expected %u (" CSV_HEADER ")", n, CSV_FIELDS);
	for (i = 0; i + 1 < CSV_FIELDS; i++)
		field[i + 1][-1] = '\0';
	for (i = 0; i < CSV_FIELDS; i++) {
		if (i == 2)
			continue;
		if (number(r, names[i], field[i],
			   i == 1 || i == 4 ? UINT32_MAX : UINT64_MAX, &v[i]))
			return -1;
	}
	if (!strcmp(field[2], "R"))
		q.op = TRACE_READ;
	else if (!strcmp(field[2], "W"))
		q.op = TRACE_WRITE;
	else if (!strcmp(field[2], "D"))
		q.op = TRACE_DISCARD;
	else
		return bad(r, "op: \"%.40s\" is not R, W or D", field[2]);
	if (!v[4])
		return bad(r, "sectors: 0, a request has at least one sector");
	if (check_extent(r, v[3], v[4]))
		return -1;
	q.time_ns = v[0];
	q.pid = v[1];
	q.sector = v[3];
	q.sectors = v[4];
	return push(r, &r->q, &q);
}

/* ---- blkparse ---- */

/* blkparse separates fields with spaces; tabs are accepted too.  (A loop: strspn() costs more.) */
static inline bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline char *skip_blanks(char *s)
{
	while (blank(*s))
		s++;
	return s;
}

/* The next word of *@p (NUL-terminated in place), *@p moved past it; NULL at the end. */
static char *word(char **p)
{
	char *s = skip_blanks(*p), *e;

	if (!*s) {
		*p = s;
		return NULL;
	}
	for (e = s; *e && !blank(*e); e++)
		;
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * Lines of blkparse that are not events: 1 for the first line of the summary
 * it ends with (per process with -s, per CPU, total, throughput, events,
 * skips, the note on driver data), 2 for "Input file X added" (printed on
 * standard output, anywhere), 0 for neither.
 */
static int bp_other(const char *s)
{
	static const char *const summary[] = { "Total (", "Throughput (", "Events (", "Skips:",
					       "discarded traces" };
	size_t i, len = strlen(s);

	if (starts(s, "Input file ") && len > 6 && !strcmp(s + len - 6, " added"))
		return 2;
	for (i = 0; i < sizeof(summary) / sizeof(summary[0]); i++)
		if (starts(s, summary[i]))
			return 1;
	if (starts(s, "CPU") && isdigit((unsigned char)s[3]))
		return 1;
	for (i = 0; blank(s[i]); i++)
		;
	if (starts(s + i, "Reads Queued:"))
		return 1;
	/* -s: "COMMAND (PID)" */
	if (len > 3 && !isspace((unsigned char)s[0]) && s[len - 1] == ')') {
		i = len - 1;
		while (i > 0 && isdigit((unsigned char)s[i - 1]))
			i--;
		if (i < len - 1 && i >= 2 && s[i - 1] == '(' && s[i - 2] == ' ')
			return 1;
	}
	return 0;
}

/*
 * Whether @s starts as an event does: "MAJ,MIN" then a blank (blkparse's
 * "%3d,%-3d"), the only lines that do.  Asked first, so that a message event
 * ending like a summary line is still an event.
 */
static bool bp_is_event(const char *s)
{
	const char *d;

	while (blank(*s))
		s++;
	for (d = s; isdigit((unsigned char)*d); d++)
		;
	if (d == s || *d != ',')
		return false;
	for (s = ++d; isdigit((unsigned char)*d); d++)
		;
	return d > s && blank(*d);
}

/* "MAJ,MIN" */
static bool bp_device(char *s, unsigned long *major, unsigned long *minor)
{
	char *comma = strchr(s, ',');
	uint64_t a = 0, b = 0;
	bool ok;

	if (!comma)
		return false;
	*comma = '\0';
	ok = !decimal(s, UINT32_MAX, &a) && !decimal(comma + 1, UINT32_MAX, &b);
	*comma = ',';
	*major = a;
	*minor = b;
	return ok;
}

/* "SECONDS.NANOSECONDS", nine digits after the point as blkparse prints them. */
static bool bp_time(char *s, uint64_t *ns)
{
	char *dot = strchr(s, '.');
	uint64_t sec = 0, nsec = 0;
	bool ok;

	if (!dot || strlen(dot + 1) != 9)
		return false;
	*dot = '\0';
	ok = !decimal(s, UINT64_MAX / 1000000000 - 1, &sec) && !decimal(dot + 1, 999999999, &nsec);
	*dot = '.';
	*ns = sec * 1000000000 + nsec;
	return ok;
}

/*
 * The op of an RWBS field (blkparse_fmt.c fill_rwbs(): F if a flush comes
 * first, then D discard, W write, R read or N no data (newer versions: Z and
 * a letter for zone operations, ZA an append), then F (FUA), A, S, M: the
 * flags), OP_NONE if it moves no data, or -2 if it is no RWBS.
 */
static int bp_op(const char *rwbs)
{
	const char *o = rwbs[0] == 'F' && rwbs[1] ? rwbs + 1 : rwbs, *c;

	for (c = rwbs; *c; c++)
		if (*c < 'A' || *c > 'Z' || c - rwbs == 8)
			return -2;
	switch (*o) {
	case 'R':
		return TRACE_READ;
	case 'W':
		return TRACE_WRITE;
	case 'D':
		return TRACE_DISCARD;
	case 'N':
		return OP_NONE;
	case 'Z':
		return o[1] == 'A' ? TRACE_WRITE : OP_NONE;
	default:
		return -2;
	}
}

/*
 * The extent of a Q, D or C event, from what follows its RWBS:
 * "SECTOR + SECTORS", any "(...)" or "|...|" (-t's elapsed time, the
 * alignment of newer versions), then "[PROCESS]" (Q, D) or "[ERROR]" (C).
 * *@n is 0 for the layouts of events without sectors: "[...]" or "(...)
 * [...]" (no data, pass-through commands), "BYTES ... [...]" (pass-through),
 * "SECTOR [ERROR]" (a C of no data).
 */
static int bp_extent(struct reader *r, char act, char *s, uint64_t *sector, uint32_t *n)
{
	uint64_t v, len;
	char *w, *e;

	*n = 0;
	s = skip_blanks(s);
	if (isdigit((unsigned char)*s)) {
		w = word(&s);
		if (number(r, "sector", w, UINT64_MAX, &v))
			return -1;
		s = skip_blanks(s);
		if (s[0] == '+' && (s[1] == ' ' || s[1] == '\t')) {
			s++;
			w = word(&s);
			if (!w)
				goto bad;
			if (number(r, "sectors", w, UINT32_MAX, &len))
				return -1;
			*sector = v;
			*n = len;
		}
	}
	for (;;) {
		s = skip_blanks(s);
		if (*s == '(')
			e = strchr(s, ')');
		else if (*s == '|')
			e = strchr(s + 1, '|');
		else
			break;
		if (!e)
			goto bad;
		s = e + 1;
	}
	if (*s == '[' && s[strlen(s) - 1] == ']')
		return 0;
bad:
	return bad(r, "%c event: expected \"SECTOR + SECTORS [%s]\"", act,
		   act == 'C' ? "ERROR" : "PROCESS");
}

static int bp_line(struct reader *r, char *s)
{
	char *p = s, *dev, *cpu, *seq, *tm, *pid, *act, *rwbs;
	unsigned long major, minor;
	struct trace_req q = { .done_ns = TRACE_NO_TIME };
	uint64_t v;
	int op;

	if (!bp_is_event(s)) {
		switch (bp_other(s)) {
		case 1:
			return 1;
		case 2:
			return 0;
		default:
			return bad(r, "not a blkparse event line");
		}
	}
	dev = word(&p);
	if (!bp_device(dev, &major, &minor))
		return bad(r, "device: \"%.40s\" is not MAJOR,MINOR", dev);
	cpu = word(&p);
	seq = word(&p);
	tm = word(&p);
	pid = word(&p);
	act = word(&p);
	rwbs = word(&p);
	if (!rwbs)
		return bad(r, "event line cut short");
	if (number(r, "cpu", cpu, UINT32_MAX, &v) ||
	    number(r, "sequence", seq + (*seq == '-'), UINT32_MAX, &v))
		return -1;
	if (!bp_time(tm, &q.time_ns))
		return bad(r, "time: \"%.40s\" is not SECONDS.NANOSECONDS", tm);
	if (number(r, "pid", pid, UINT32_MAX, &v))
		return -1;
	q.pid = v;
	/* blkparse.c's actions: one letter (m: a message), or UT (unplug by the timer). */
	if (!(act[0] && !act[1] && strchr("ABCDFGIMPQRSTUXm", act[0])) && strcmp(act, "UT"))
		return bad(r, "action: \"%.8s\" unknown", act);
	op = bp_op(rwbs);
	if (op == -2)
		return bad(r, "RWBS: \"%.8s\" unknown", rwbs);
	if (strcmp(act, "Q") && strcmp(act, "D") && strcmp(act, "C"))
		return 0;
	if (bp_extent(r, *act, p, &q.sector, &q.sectors))
		return -1;
	if (!q.sectors || op == OP_NONE)
		return 0;
	if (check_extent(r, q.sector, q.sectors))
		return -1;
	if (!r->dev_set) {
		r->dev_set = true;
		r->major = major;
		r->minor = minor;
	} else if (major != r->major || minor != r->minor) {
		return bad(r, "device %lu,%lu: the events before are of %lu,%lu "
			   "(one device at a time)", major, minor, r->major, r->minor);
	}
	q.op = op;
	switch (*act) {
	case 'Q':
		if (!r->seen_q) {
			/* The application's own requests: the issued ones are not needed. */
			r->seen_q = true;
			reqs_free(&r->d);
		}
		return push(r, &r->q, &q);
	case 'D':
		return r->seen_q ? 0 : push(r, &r->d, &q);
	default:
		reqs_complete(&r->q, q.sector, q.sectors, q.time_ns);
		if (!r->seen_q)
			reqs_complete(&r->d, q.sector, q.sectors, q.time_ns);
		return 0;
	}
}

/* ---- the whole trace ---- */

struct sort_key {
	uint64_t time;
	size_t i;
};

static int key_cmp(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Times from the first request, requests in time order (stable).  0, or -1 out of memory. */
static int finish(struct reqs *s)
{
	struct trace_req *sorted;
	struct sort_key *key;
	uint64_t t0 = UINT64_MAX;
	bool in_order = true;
	size_t i;

	for (i = 0; i < s->nr; i++) {
		if (s->req[i].time_ns < t0)
			t0 = s->req[i].time_ns;
		if (i && s->req[i].time_ns < s->req[i - 1].time_ns)
			in_order = false;
	}
	for (i = 0; i < s->nr; i++) {
		s->req[i].time_ns -= t0;
		if (s->req[i].done_ns != TRACE_NO_TIME)
			s->req[i].done_ns -= t0;
	}
	if (in_order)
		return 0;
	key = malloc(s->nr * sizeof(*key));
	sorted = malloc(s->nr * sizeof(*sorted));
	if (!key || !sorted) {
		free(key);
		free(sorted);
		return -1;
	}
	for (i = 0; i < s->nr; i++)
		key[i] = (struct sort_key){ s->req[i].time_ns, i };
	qsort(key, s->nr, sizeof(*key), key_cmp);
	for (i = 0; i < s->nr; i++)
		sorted[i] = s->req[key[i].i];
	free(key);
	free(s->req);
	s->req = sorted;
	return 0;
}

int trace_format_parse(const char *name)
{
	if (!strcmp(name, "csv"))
		return TRACE_FMT_CSV;
	if (!strcmp(name, "blkparse"))
		return TRACE_FMT_BLKPARSE;
	return -1;
}

int trace_read(FILE *f, const char *name, enum trace_format fmt, struct trace *t,
	       char *err, size_t errlen)
{
	struct reader r = { .name = name, .err = err, .errlen = errlen,
			    .track = fmt == TRACE_FMT_BLKPARSE };
	struct reqs *res;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	t->req = NULL;
	t->nr = 0;
	while (!ret && (len = getline(&line, &cap, f)) >= 0) {
		r.line++;
		if (r.line == 1 && len >= 4) {
			uint32_t w;

			memcpy(&w, line, sizeof(w));
			if (is_magic(w)) {
				ret = say(err, errlen, name, fmt == TRACE_FMT_CSV ?
					  "a binary blktrace file, not CSV" :
					  "a binary blktrace file, not text (blkparse -i prints it)");
				break;
			}
		}
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (memchr(line, '\0', len)) {
			ret = bad(&r, "a NUL byte (not a text file?)");
			break;
		}
		if (!*skip_blanks(line) || line[0] == '#')
			continue;
		if (fmt == TRACE_FMT_CSV)
			ret = csv_line(&r, line);
		else
			ret = bp_line(&r, line);
	}
	free(line);
	if (ret > 0)	/* blkparse's summary */
		ret = 0;
	if (!ret && ferror(f))
		ret = say(err, errlen, name, "read error: %s", strerror(errno));
	res = &r.q;
	if (!ret && fmt == TRACE_FMT_BLKPARSE && !r.seen_q)
		res = &r.d;
	if (!ret && !res->nr)
		ret = say(err, errlen, name, fmt == TRACE_FMT_CSV ? "no requests" :
			  "no requests (no Q or D event with sectors)");
	if (!ret && finish(res))
		ret = say(err, errlen, name, "out of memory");
	if (!ret) {
		t->req = res->req;
		t->nr = res->nr;
		res->req = NULL;
	}
	reqs_free(&r.q);
	reqs_free(&r.d);
	return ret;
}

/* @name on $PATH, as the shell would find it. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *e;
	char buf[4096];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
	for (p = path; ; p = e + 1) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		/* An empty entry is the current directory. */
		if (e == p)
			snprintf(buf, sizeof(buf), "./%s", name);
		else if ((size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - p), p, name) >=
			 sizeof(buf))
			buf[0] = '\0';
		if (buf[0] && !access(buf, X_OK))
			return true;
		if (!*e)
			return false;
	}
}

/* Appends @s to @cmd (@size bytes) quoted for sh.  0, or -1 if it does not fit. */
static int sh_quote(char *cmd, size_t size, const char *s)
{
	size_t n = strlen(cmd);

	if (n + 1 >= size)
		return -1;
	cmd[n++] = '\'';
	for (; *s; s++) {
		if (n + 5 >= size)
			return -1;
		if (*s == '\'') {
			memcpy(cmd + n, "'\\''", 4);
			n += 4;
		} else {
			cmd[n++] = *s;
		}
	}
	cmd[n++] = '\'';
	cmd[n] = '\0';
	return 0;
}

/*
 * blkparse reads a capture by its base name (DEV.blktrace.0, .1, ... for
 * each CPU), so a per-CPU file is given as its base, for all of its CPUs;
 * "-i -" reads any other file (blktrace -o -) on standard input.
 */
static int blkparse_command(const char *path, char *cmd, size_t size)
{
	const char *suffix = strstr(path, ".blktrace."), *next;
	char base[4096];

	while (suffix && (next = strstr(suffix + 1, ".blktrace.")))
		suffix = next;
	strcpy(cmd, "exec blkparse -q -i ");
	if (suffix && suffix[10] && strspn(suffix + 10, "0123456789") == strlen(suffix + 10)) {
		if ((size_t)(suffix - path) >= sizeof(base))
			return -1;
		memcpy(base, path, suffix - path);
		base[suffix - path] = '\0';
		return sh_quote(cmd, size, base);
	}
	if (strlen(cmd) + 5 >= size)
		return -1;
	strcat(cmd, "- < ");
	return sh_quote(cmd, size, path);
}

static int read_blkparse(const char *path, struct trace *t, char *err, size_t errlen)
{
	char cmd[8400], name[4200], buf[4096];
	int ret, status;
	FILE *p;

	if (!on_path("blkparse"))
		return say(err, errlen, path, "a binary blktrace file: reading it needs blkparse, "
			   "not installed (Debian package blktrace)");
	if (blkparse_command(path, cmd, sizeof(cmd)))
		return say(err, errlen, path, "path too long");
	snprintf(name, sizeof(name), "%s (blkparse -i)", path);
	p = popen(cmd, "r");
	if (!p)
		return say(err, errlen, path, "cannot run blkparse: %s", strerror(errno));
	ret = trace_read(p, name, TRACE_FMT_BLKPARSE, t, err, errlen);
	/* The rest (after the summary, or after a bad line), so that blkparse ends by itself. */
	while (fread(buf, 1, sizeof(buf), p) > 0)
		;
	status = pclose(p);
	if (status == 0)
		return ret;
	trace_free(t);
	if (status == -1)
		return say(err, errlen, path, "blkparse: %s", strerror(errno));
	if (WIFEXITED(status))
		return say(err, errlen, path, "blkparse failed (exit status %d)",
			   WEXITSTATUS(status));
	return say(err, errlen, path, "blkparse failed (signal %d)", WTERMSIG(status));
}

int trace_open(const char *path, enum trace_format fmt, struct trace *t, char *err,
	       size_t errlen)
{
	struct stat st;
	uint32_t w;
	FILE *f;
	int ret;

	t->req = NULL;
	t->nr = 0;
	f = fopen(path, "r");
	if (!f)
		return say(err, errlen, path, "%s", strerror(errno));
	/* pread: a pipe (<(...)) cannot be rewound, and is read as text. */
	if (fmt == TRACE_FMT_BLKPARSE && !fstat(fileno(f), &st) && S_ISREG(st.st_mode) &&
	    pread(fileno(f), &w, sizeof(w), 0) == sizeof(w) && is_magic(w)) {
		fclose(f);
		return read_blkparse(path, t, err, errlen);
	}
	ret = trace_read(f, path, fmt, t, err, errlen);
	fclose(f);
	return ret;
}

void trace_free(struct trace *t)
{
	free(t->req);
	t->req = NULL;
	t->nr = 0;
}

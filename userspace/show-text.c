// SPDX-License-Identifier: GPL-2.0
/*
 * The text view of redcapctl's statistics (show.h), for people: status'
 * lines, list's columns, and stats' rates with --watch's sparklines.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redcapctl.h"
#include "show.h"


/*
 * The RAM advice: the reads' disk time with twice and four times the RAM,
 * against now, from the eviction history (the fills a larger cache would
 * not make); with half the RAM, from the shadow of the stack's segment size.
 */
static void advice_text(const struct stack_stats *s)
{
	const struct more_ram *m = &s->more_ram;
	const struct shadows *h = &s->shadows;
	bool half = h->have && h->live >= 0 && h->size[h->live].ok[0] &&
		    h->size[h->live].ok[1] && h->size[h->live].ppm[1];

	if (!m->have && !half)
		return;
	printf("  advice:     ");
	if (m->have && m->requests)
		printf("the reads' disk time with twice the RAM %+.1f %%, four times %+.1f %%"
		       " (the fills they would not make)", 100 * more_ram_change(m, 0),
		       100 * more_ram_change(m, 1));
	else if (m->have)
		printf("no read sent to the disk yet");
	if (half)
		printf("%swith half the RAM %+.1f %% (an LRU's)", m->have ? "; " : "",
		       100.0 * ((double)h->size[h->live].ppm[0] / h->size[h->live].ppm[1] - 1));
	printf("\n");
}

/* "16 segments of 512 KiB, read-ahead 256 KiB, 150 MB/s", or "none". */
static void dcache_text(const struct vd_dcache *d)
{
	if (!d->nr_segs) {
		printf("none");
		return;
	}
	printf("%" PRIu32 " segments of %" PRIu32 " KiB, read-ahead %" PRIu32 " KiB, %" PRIu32
	       " MB/s", d->nr_segs, d->seg_sectors / 2, d->ra_sectors / 2,
	       d->media_mbps);
}

void stack_text(const struct stack_stats *s)
{
	const struct bypass *b = &s->bypassed;
	char a[32], c[32], d[32];

	printf("%s: /dev/mapper/%s\n", s->name, s->name);
	printf("  origin:     %s\n", s->origin);
	printf("  read-ahead: %s\n", fmt_size(s->read_ahead_bytes, a, sizeof(a)));
	if (s->linear) {
		printf("  state:      linear: %s\n", s->state_reason);
		return;
	}
	printf("  cache:      %s = %" PRIu64 " x %s; %" PRIu64 " segments hold data (%s), %" PRIu64
	       " filling\n", fmt_size(s->ram_bytes, a, sizeof(a)), s->segments,
	       fmt_size(s->segment_bytes, c, sizeof(c)), s->segments_valid,
	       fmt_size(s->ram_used_bytes, d, sizeof(d)), s->segments_filling);
	if (s->ram_held_bytes < s->ram_bytes)
		printf("  memory:     %s held, %s given back to the kernel while inactive\n",
		       fmt_size(s->ram_held_bytes, a, sizeof(a)),
		       fmt_size(s->ram_bytes - s->ram_held_bytes, c, sizeof(c)));
	printf("  policy:     %s, write policy %s, estimator %s\n", s->policy, s->write_policy,
	       s->estimator);
	printf("  state:      %s: %s\n", s->state, s->state_reason);
	printf("  reads:      %" PRIu64 ": %" PRIu64 " hits, %" PRIu64 " hits after a wait, %"
	       PRIu64 " misses, %" PRIu64 " bypassed, %" PRIu64 " resent\n", s->reads,
	       s->read_hits, s->read_hits_waited, s->read_misses, s->read_bypassed,
	       s->read_resent);
	printf("  bypassed:   inactive %" PRIu64 ", busy %" PRIu64 ", C-Aware %" PRIu64
	       ", budget %" PRIu64 ", suspending %" PRIu64 ", no memory %" PRIu64
	       ", joined %" PRIu64 ", write in flight %" PRIu64 "\n",
	       b->inactive, b->busy, b->caware, b->budget, b->held, b->nomem, b->joined, b->write);
	printf("  hit ratio:  %.1f %%\n", 100.0 * s->hit_ratio);
	printf("  fills:      %" PRIu64 " (%s), %" PRIu64 " failed\n", s->fill_ios,
	       fmt_size(s->fill_bytes, a, sizeof(a)), s->fill_errors);
	printf("  writes:     %" PRIu64 ", %" PRIu64 " cached segments invalidated\n",
	       s->writes, s->invalidations);
	if (strcmp(s->write_cache, "none"))
		printf("  write cache: %s; %" PRIu64 " segments dirty (%s, the oldest for %.1f s) of %"
		       PRIu64 " at most; %" PRIu64 " writes cached, %" PRIu64 " through, %" PRIu64
		       " waited at the cap; %" PRIu64 " write-backs (%s), %" PRIu64 " failed; %" PRIu64
		       " flushes\n", s->write_cache, s->dirty_segments,
		       fmt_size(s->dirty_bytes, a, sizeof(a)), (double)s->dirty_age_ms / 1000,
		       s->dirty_max, s->write_cached, s->write_through, s->write_waits,
		       s->writeback_ios, fmt_size(s->writeback_bytes, c, sizeof(c)),
		       s->writeback_errors, s->flushes);
	printf("  switches:   %" PRIu64 " in %" PRIu64 " windows\n", s->switches, s->windows);
	if (s->has_model)
		printf("  model:      %s, %s, learning %s, %" PRIu64 " cells filled, %" PRIu64
		       " reads and %" PRIu64 " writes timed\n", s->model_device, s->model_mode,
		       s->model_learning ? "on" : "off", s->model_cells_filled,
		       s->model_read_samples, s->model_write_samples);
	if (s->has_model && s->model_dcache_known) {
		printf("  drive cache: priced: ");
		dcache_text(&s->model_dcache);
		printf("; learnt: ");
		dcache_text(&s->model_dcache_learnt);
		printf("\n");
	}
	if (!s->has_model)
		printf("  model:      none (created with --no-model)\n");
	advice_text(s);
}

void list_text(const struct stack_stats *s, size_t n)
{
	char ram[32], seg[32];

	if (n)
		printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", "NAME", "ORIGIN", "CACHE",
		       "SEGMENT", "POLICY", "STATE", "HITS");
	for (size_t i = 0; i < n; i++, s++) {
		if (s->linear) {
			printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", s->name, s->origin, "-",
			       "-", "-", "linear", "-");
			continue;
		}
		printf("%-16s %-20s %-9s %-8s %-16s %-8s %.1f%%\n", s->name, s->origin,
		       fmt_size(s->ram_bytes, ram, sizeof(ram)),
		       fmt_size(s->segment_bytes, seg, sizeof(seg)), s->policy, s->state,
		       100.0 * s->hit_ratio);
	}
}

/*
 * @v (@n values) as a sparkline of eighth blocks, 0 to @hi: the lowest
 * block for 0 or less, a space for NAN.
 */
static void sparkline(const double *v, int n, double hi)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-~=+*#";	/* a terminal without UTF-8 */
	static int utf8 = -1;

	if (utf8 < 0) {
		setlocale(LC_CTYPE, "");
		utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	}
	for (int i = 0; i < n; i++) {
		int b = hi > 0 && v[i] > 0 ? (int)(v[i] / hi * 8) : 0;

		b = b > 7 ? 7 : b;
		if (isnan(v[i]))
			putchar(' ');
		else if (utf8)
			fputs(blocks[b], stdout);
		else
			putchar(ascii[b]);
	}
}

static void history_show(const struct history *h, double interval)
{
	double lo = INFINITY, hi = -INFINITY, peak = 0, sum = 0;

	for (int i = 0; i < h->n; i++) {
		if (!isnan(h->hit[i])) {
			lo = fmin(lo, h->hit[i]);
			hi = fmax(hi, h->hit[i]);
		}
		peak = fmax(peak, h->saved[i]);
		sum += h->saved[i] * interval;
	}
	printf("  hit ratio   ");
	sparkline(h->hit, h->n, 1.0);
	if (lo <= hi)
		printf("%*s  %.1f to %.1f %%", SPARK_N - h->n, "", 100 * lo, 100 * hi);
	else
		printf("%*s  no reads", SPARK_N - h->n, "");
	printf("\n  disk saved  ");
	sparkline(h->saved, h->n, peak);
	printf("%*s  %.2f s in all, at most %.2f s a second\n", SPARK_N - h->n, "", sum, peak);
	printf("              (the last %g s)\n", h->n * interval);
}

void rates_text(const struct rates *r, bool watch, double interval, const struct history *h)
{
	const struct sample *b = r->now;
	char clock[16];
	time_t t = time(NULL);

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (watch && isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);	/* redraw in place */
	printf("%s at %s: %s, policy %s, %u of %u segments hold data", r->name, clock, b->state,
	       b->policy, b->valid, b->segments);
	if (watch)
		printf(" (every %g s; Ctrl-C stops)", interval);
	printf("\n  reads/s     %10.1f   (%" PRIu64 " reads in all)\n", r->reads, b->reads);
	printf("  hits/s      %10.1f   %.1f %% of the reads\n", r->hits,
	       r->reads > 0 ? 100.0 * r->hits / r->reads : 0.0);
	printf("  misses/s    %10.1f\n", r->misses);
	printf("  bypassed/s  %10.1f   inactive %.1f, busy %.1f, C-Aware %.1f, budget %.1f,"
	       " suspending %.1f, no memory %.1f, joined %.1f,"
	       " write in flight %.1f\n",
	       r->bypassed, r->bypassed_by.inactive, r->bypassed_by.busy, r->bypassed_by.caware,
	       r->bypassed_by.budget, r->bypassed_by.held, r->bypassed_by.nomem,
	       r->bypassed_by.joined, r->bypassed_by.write);
	printf("  fill MiB/s  %10.1f\n", r->fill_mib);
	if (watch)
		history_show(h, interval);
	if (watch && !isatty(STDOUT_FILENO))
		putchar('\n');
	fflush(stdout);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * redcap's counters as Prometheus metrics, for redcapctl stats --format
 * prometheus: no device-mapper here, only the stats answers' text.
 *
 * The metrics follow the answers' keys: a key with a number makes a counter
 * redcap_<key>_total, in base units (_sectors: _bytes, x 512; _us, _ms, _s:
 * _seconds), so that a counter a newer module adds appears by itself.  The
 * rules below name the exceptions: gauges (sizes, balances, means, the
 * tunables of the target's own table) and keys whose unit is not in their
 * suffix.  Text values make no metric but redcap_active (state) and
 * redcap_info (policy, estimator, write_policy).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "kv.h"
#include "metrics.h"
#include "rc-args.h"

#define PREFIX		"redcap_"

static const struct metrics_rule {
	const char *key, *metric;	/* a '*' in both: the same run of characters */
	enum metrics_type type;
	enum metrics_unit unit;
	const char *help;
} rules[] = {
	{ "segment_sectors", "segment_bytes", METRICS_GAUGE, METRICS_SECTORS,
	  "Size of a cache segment" },
	{ "segments", "segments", METRICS_GAUGE, METRICS_AS_IS, "Segments of the cache" },
	{ "segments_valid", "segments_valid", METRICS_GAUGE, METRICS_AS_IS,
	  "Segments that hold data" },
	{ "segments_filling", "segments_filling", METRICS_GAUGE, METRICS_AS_IS,
	  "Segments being filled" },
	{ "segments_ghost", "segments_ghost", METRICS_GAUGE, METRICS_AS_IS,
	  "Entries of the simulated cache that hold no data" },
	{ "segments_bare", "segments_bare", METRICS_GAUGE, METRICS_AS_IS,
	  "Entries whose pages went back to the kernel" },
	{ "hdc_pinned", "hdc_pinned_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Segments HDC holds pinned" },
	{ "hdc_max", "hdc_max_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Most segments HDC may pin" },
	{ "dirty_segments", "dirty_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Segments the write cache holds dirty" },
	{ "dirty_max", "dirty_max_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Most segments the write cache may hold dirty" },
	{ "dirty_sectors", "dirty_bytes", METRICS_GAUGE, METRICS_SECTORS,
	  "Data the write cache holds dirty" },
	{ "dirty_age_ms", "dirty_age_seconds", METRICS_GAUGE, METRICS_MS,
	  "How long the oldest dirty segment has been dirty" },
	{ "writes_inflight", "writes_inflight_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Segments with a write to the origin in flight" },
	{ "writeback_error", "writeback_error", METRICS_GAUGE, METRICS_AS_IS,
	  "The last write-back's error (a negative errno), 0 for none" },
	{ "last_cache_time_us", "last_cache_time_seconds", METRICS_GAUGE, METRICS_US,
	  "The cache's time over the last judged window" },
	{ "last_est_disk_time_us", "last_est_disk_time_seconds", METRICS_GAUGE, METRICS_US,
	  "The bare disk's time over the last judged window" },
	{ "spell_cache_time_us", "spell_cache_time_seconds", METRICS_GAUGE, METRICS_US,
	  "The cache's time over its active spell (decayed windows)" },
	{ "spell_est_disk_time_us", "spell_est_disk_time_seconds", METRICS_GAUGE, METRICS_US,
	  "The bare disk's time over the cache's active spell (decayed windows)" },
	{ "budget_us", "budget_seconds", METRICS_GAUGE, METRICS_US,
	  "Balance of the speculation budget, negative while fills wait for it" },
	{ "budget_ghost_us", "budget_ghost_seconds", METRICS_GAUGE, METRICS_US,
	  "Balance of the fills the budget refused" },
	{ "budget_fill_extra_us", "budget_fill_extra_seconds", METRICS_GAUGE, METRICS_US,
	  "Average cost of a fill beyond its read" },
	{ "caware_*_us", "caware_*_seconds", METRICS_GAUGE, METRICS_US,
	  "C-Aware's mean time of the requests of its class" },
	{ "caware_*_n", "caware_*_requests", METRICS_COUNTER, METRICS_AS_IS,
	  "Requests of its class C-Aware timed" },
	/* The tunables whose unit is not their key's; any other is a gauge too. */
	{ "window", "window_reads", METRICS_GAUGE, METRICS_AS_IS,
	  "Tunable: reads per judged window" },
	{ "margin", "margin_ratio", METRICS_GAUGE, METRICS_PERCENT,
	  "Tunable: how much the losing side must lose by" },
	{ "prefetch", "prefetch_segments", METRICS_GAUGE, METRICS_AS_IS,
	  "Tunable: most segments filled ahead of a stream" },
	{ "hdc", "hdc_ratio", METRICS_GAUGE, METRICS_PERCENT,
	  "Tunable: share of the segments HDC may pin" },
	{ "hot_period", "hot_period_seconds", METRICS_GAUGE, METRICS_AS_IS,
	  "Tunable: period of HDC's miss counts" },
	{ "dirty", "dirty_ratio", METRICS_GAUGE, METRICS_PERCENT,
	  "Tunable: share of the segments the write cache may hold dirty" },
};

/* Units in a key's suffix, for the keys of no rule. */
static const struct {
	const char *suffix, *metric;
	enum metrics_unit unit;
} suffixes[] = {
	{ "_sectors", "_bytes", METRICS_SECTORS },
	{ "_us", "_seconds", METRICS_US },
	{ "_ms", "_seconds", METRICS_MS },
	{ "_s", "_seconds", METRICS_AS_IS },
};

/* The families every scrape may have, whatever the keys. */
static const char * const fixed[] = {
	PREFIX "cache_present", PREFIX "scrape_error", PREFIX "info", PREFIX "active",
};

static const char * const unit_words[] = {
	[METRICS_AS_IS] = "", [METRICS_SECTORS] = ", in bytes", [METRICS_US] = ", in seconds",
	[METRICS_MS] = ", in seconds", [METRICS_PERCENT] = ", as a ratio",
};

static int why_set(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whether @key matches @pattern; *@star and *@star_len: what the '*' took. */
static bool key_match(const char *pattern, const char *key, const char **star, size_t *star_len)
{
	const char *p = strchr(pattern, '*');
	size_t klen = strlen(key), pre, post;

	*star = NULL;
	*star_len = 0;
	if (!p)
		return !strcmp(pattern, key);
	pre = (size_t)(p - pattern);
	post = strlen(p + 1);
	if (klen <= pre + post || strncmp(key, pattern, pre) || strcmp(key + klen - post, p + 1))
		return false;
	*star = key + pre;
	*star_len = klen - pre - post;
	return true;
}

static bool is_tunable(const char *key)
{
	for (int t = 0; t < RC_TUN_NR; t++)
		if (!strcmp(key, rc_tunable_name((enum rc_tunable)t)))
			return true;
	return false;
}

/* Letters, digits and '_': a key that can be part of a metric's name. */
static bool key_usable(const char *key)
{
	size_t n = strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

	return n && !key[n] && n < METRICS_NAME_MAX - 32;
}

static const struct metrics_rule *rule_of(const char *key, const char **star, size_t *star_len)
{
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++)
		if (key_match(rules[r].key, key, star, star_len))
			return &rules[r];
	return NULL;
}

/* Give @kv its metric's name, type and unit; the name "" if its key cannot make one. */
static void kv_metric(struct metrics_kv *kv)
{
	const struct metrics_rule *rule;
	const char *star, *p, *tail = "";
	size_t star_len, len = strlen(kv->key), n;
	char *m = kv->metric;

	m[0] = '\0';
	if (!key_usable(kv->key))
		return;
	rule = rule_of(kv->key, &star, &star_len);
	if (rule) {
		kv->type = rule->type;
		kv->unit = rule->unit;
		kv->help = rule->help;
		p = strchr(rule->metric, '*');
		if (!p)
			p = rule->metric + strlen(rule->metric);
		snprintf(m, METRICS_NAME_MAX, PREFIX "%.*s%.*s%s%s", (int)(p - rule->metric),
			 rule->metric, (int)star_len, star ? star : "", *p ? p + 1 : "",
			 kv->type == METRICS_COUNTER ? "_total" : "");
	} else {
		/* A tunable by the target's own table; any other number counts. */
		kv->type = is_tunable(kv->key) ? METRICS_GAUGE : METRICS_COUNTER;
		kv->unit = METRICS_AS_IS;
		kv->help = NULL;
		for (size_t s = 0; s < sizeof(suffixes) / sizeof(suffixes[0]); s++) {
			n = strlen(suffixes[s].suffix);
			if (len > n && !strcmp(kv->key + len - n, suffixes[s].suffix)) {
				len -= n;
				tail = suffixes[s].metric;
				kv->unit = suffixes[s].unit;
				break;
			}
		}
		snprintf(m, METRICS_NAME_MAX, PREFIX "%.*s%s%s", (int)len, kv->key, tail,
			 kv->type == METRICS_COUNTER ? "_total" : "");
	}
	for (size_t f = 0; f < sizeof(fixed) / sizeof(fixed[0]); f++)
		if (!strcmp(m, fixed[f]))
			m[0] = '\0';
}

enum number { NUMBER, TEXT, TOO_LARGE };

/* Whether @s is a whole decimal number (*@negative, *@v: its sign and size). */
static enum number number(const char *s, bool *negative, uint64_t *v)
{
	*negative = *s == '-';
	s += *negative;
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return TEXT;
	*v = 0;
	for (; *s; s++) {
		if (*v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return TOO_LARGE;
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	return NUMBER;
}

int metrics_parse(struct metrics_stack *m, char *text, char *why, size_t len)
{
	char *line, *val;
	struct metrics_kv *kv;
	int r;

	m->kind = METRICS_CACHE;
	m->n = 0;
	while ((r = kv_next(&text, &line, &val))) {
		if (r < 0)
			return why_set(why, len, "bad answer to 'stats': '%.60s' is not key=value",
				       line);
		if (m->n == METRICS_MAX_KEYS)
			return why_set(why, len, "bad answer to 'stats': more than %d lines",
				       METRICS_MAX_KEYS);
		for (int i = 0; i < m->n; i++)
			if (!strcmp(m->kv[i].key, line))
				return why_set(why, len, "bad answer to 'stats': %.60s= twice", line);
		kv = &m->kv[m->n++];
		memset(kv, 0, sizeof(*kv));
		kv->key = line;
		kv->val = val;
		kv_metric(kv);
		if (!kv->metric[0])
			continue;
		switch (number(kv->val, &kv->negative, &kv->magnitude)) {
		case TOO_LARGE:
			return why_set(why, len, "bad answer to 'stats': %s=%.40s: out of range",
				       kv->key, kv->val);
		case TEXT:
			/* A state, a name: no metric; where a rule wants a number, wrong. */
			if (kv->help)
				return why_set(why, len, "bad answer to 'stats': %s=%.40s: not a "
					       "number", kv->key, kv->val);
			kv->metric[0] = '\0';
			continue;
		case NUMBER:
			break;
		}
		if (kv->negative && kv->magnitude && kv->type == METRICS_COUNTER)
			return why_set(why, len, "bad answer to 'stats': %s=%.40s: a counter below "
				       "zero", kv->key, kv->val);
	}
	return 0;
}

/* --- the text format ------------------------------------------------------ */

static void put_escaped(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\' || (quote && *s == '"'))
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_family(FILE *f, const char *name, enum metrics_type type, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put_family(FILE *f, const char *name, enum metrics_type type, const char *fmt, ...)
{
	char help[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(help, sizeof(help), fmt, ap);
	va_end(ap);
	fprintf(f, "# HELP %s ", name);
	put_escaped(f, help, false);
	fprintf(f, "\n# TYPE %s %s\n", name, type == METRICS_COUNTER ? "counter" : "gauge");
}

static void put_label(FILE *f, const char *label, const char *value)
{
	fprintf(f, "%s=\"", label);
	put_escaped(f, value, true);
	fputc('"', f);
}

/* "name{stack="NAME"" : the caller adds its labels, then ends it with put_end(). */
static void put_start(FILE *f, const char *name, const struct metrics_stack *m)
{
	fprintf(f, "%s{", name);
	put_label(f, "stack", m->name);
}

static void put_end(FILE *f, uint64_t v)
{
	fprintf(f, "} %" PRIu64 "\n", v);
}

/* @v / 10^@digits, exactly: "0.0015", not a binary fraction's digits. */
static void put_fraction(FILE *f, bool negative, uint64_t v, int digits)
{
	uint64_t div = 1, frac;

	for (int i = 0; i < digits; i++)
		div *= 10;
	frac = v % div;
	fprintf(f, "%s%" PRIu64, negative && v ? "-" : "", v / div);
	if (!frac)
		return;
	while (!(frac % 10)) {
		frac /= 10;
		digits--;
	}
	fprintf(f, ".%0*" PRIu64, digits, frac);
}

static void put_value(FILE *f, const struct metrics_kv *kv)
{
	uint64_t v = kv->magnitude;
	bool neg = kv->negative && v;

	fputs("} ", f);
	switch (kv->unit) {
	case METRICS_SECTORS:
		if (v <= UINT64_MAX / 512)
			fprintf(f, "%s%" PRIu64, neg ? "-" : "", v * 512);
		else
			fprintf(f, "%s%.17g", neg ? "-" : "", (double)v * 512.0);
		break;
	case METRICS_US:
		put_fraction(f, neg, v, 6);
		break;
	case METRICS_MS:
		put_fraction(f, neg, v, 3);
		break;
	case METRICS_PERCENT:
		put_fraction(f, neg, v, 2);
		break;
	default:
		fprintf(f, "%s%" PRIu64, neg ? "-" : "", v);
		break;
	}
	fputc('\n', f);
}

static const char *text_of(const struct metrics_stack *m, const char *key)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->kv[i].key, key))
			return m->kv[i].val;
	return NULL;
}

static const struct metrics_kv *kv_of(const struct metrics_stack *m, const char *metric)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->kv[i].metric, metric))
			return &m->kv[i];
	return NULL;
}

/* Whether the metric of s[i].kv[j] came before it, in this stack or an earlier one. */
static bool seen_before(const struct metrics_stack *s, size_t i, int j)
{
	const char *metric = s[i].kv[j].metric;

	for (size_t a = 0; a <= i; a++) {
		if (s[a].kind != METRICS_CACHE)
			continue;
		for (int b = 0; b < (a == i ? j : s[a].n); b++)
			if (!strcmp(s[a].kv[b].metric, metric))
				return true;
	}
	return false;
}

static bool any(const struct metrics_stack *s, size_t nr, enum metrics_kind kind)
{
	for (size_t i = 0; i < nr; i++)
		if (s[i].kind == kind)
			return true;
	return false;
}

/* The start of gauge @name's sample of @m; its family's lines first unless *@header says so. */
static void put_gauge_start(FILE *f, bool *header, const char *name, const char *help,
			    const struct metrics_stack *m)
{
	if (!*header)
		put_family(f, name, METRICS_GAUGE, "%s", help);
	*header = true;
	put_start(f, name, m);
}

static void put_info(FILE *f, const struct metrics_stack *s, size_t nr)
{
	static const char * const labels[] = { "policy", "estimator", "write_policy" };
	bool header = false;
	const char *v;

	for (size_t i = 0; i < nr; i++) {
		if (s[i].kind != METRICS_CACHE)
			continue;
		put_gauge_start(f, &header, PREFIX "info", "The cache's policy, estimator and "
				"write policy (stats keys policy, estimator, write_policy)", &s[i]);
		for (size_t l = 0; l < sizeof(labels) / sizeof(labels[0]); l++) {
			v = text_of(&s[i], labels[l]);
			if (v) {
				fputc(',', f);
				put_label(f, labels[l], v);
			}
		}
		put_end(f, 1);
	}
}

static void put_active(FILE *f, const struct metrics_stack *s, size_t nr)
{
	bool header = false;
	const char *state;

	for (size_t i = 0; i < nr; i++) {
		state = s[i].kind == METRICS_CACHE ? text_of(&s[i], "state") : NULL;
		if (!state)
			continue;
		put_gauge_start(f, &header, PREFIX "active", "Whether the cache is active: 1 if "
				"the stats key state is active, else 0", &s[i]);
		put_end(f, !strcmp(state, "active"));
	}
}

/* The family of s[i].kv[j], with every stack from s[i] on that has it. */
static void put_counters(FILE *f, const struct metrics_stack *s, size_t nr, size_t i, int j)
{
	const struct metrics_kv *kv = &s[i].kv[j], *other;

	if (kv->help)
		put_family(f, kv->metric, kv->type, "%s (stats key %s%s)", kv->help, kv->key,
			   unit_words[kv->unit]);
	else
		put_family(f, kv->metric, kv->type, "%s %s of the stats message%s",
			   kv->type == METRICS_COUNTER ? "Counter" : "Tunable", kv->key,
			   unit_words[kv->unit]);
	for (size_t a = i; a < nr; a++) {
		other = s[a].kind == METRICS_CACHE ? kv_of(&s[a], kv->metric) : NULL;
		if (!other)
			continue;
		put_start(f, kv->metric, &s[a]);
		put_value(f, other);
	}
}

int metrics_write(FILE *f, const struct metrics_stack *s, size_t nr)
{
	if (any(s, nr, METRICS_CACHE) || any(s, nr, METRICS_LINEAR)) {
		put_family(f, PREFIX "cache_present", METRICS_GAUGE, "Whether the stack has its "
			   "cache: 0 for a linear device over the origin");
		for (size_t i = 0; i < nr; i++) {
			if (s[i].kind == METRICS_FAILED)
				continue;
			put_start(f, PREFIX "cache_present", &s[i]);
			put_end(f, s[i].kind == METRICS_CACHE);
		}
	}
	if (any(s, nr, METRICS_FAILED)) {
		put_family(f, PREFIX "scrape_error", METRICS_GAUGE, "Whether the stack could not "
			   "be read (redcapctl said why on standard error)");
		for (size_t i = 0; i < nr; i++) {
			if (s[i].kind != METRICS_FAILED)
				continue;
			put_start(f, PREFIX "scrape_error", &s[i]);
			put_end(f, 1);
		}
	}
	put_info(f, s, nr);
	put_active(f, s, nr);
	for (size_t i = 0; i < nr; i++) {
		if (s[i].kind != METRICS_CACHE)
			continue;
		for (int j = 0; j < s[i].n; j++)
			if (s[i].kv[j].metric[0] && !seen_before(s, i, j))
				put_counters(f, s, nr, i, j);
	}
	return fflush(f) || ferror(f) ? -1 : 0;
}

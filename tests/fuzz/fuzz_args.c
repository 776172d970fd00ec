// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness of the table-line and message parsers of both targets
 * (dm-redcap/rc-args.c, dm-vdisk-model/vd-args.c).  One source, built once
 * per parser (tests/fuzz/Makefile):
 *   -DFUZZ_RC_TABLE	rc_parse_table()
 *   -DFUZZ_RC_MESSAGE	rc_parse_message()
 *   -DFUZZ_VD_TABLE	vd_parse_table()
 *   -DFUZZ_VD_MESSAGE	vd_parse_message(); the first two input bytes give
 *			the model's size (vd_geometry() below), the rest is
 *			the message
 *
 * The input is split into words the way dm_split_args() does, every word
 * copied into a heap block of its exact size so that ASan sees a read past
 * its NUL.  After a successful parse the result is checked against the
 * words by an independent reading of them; after a refusal, the error text.
 * A broken invariant abort()s with the line that failed.
 *
 * FUZZ_ARGS_VERBOSE=1 in the environment prints what each input parsed to,
 * e.g. "FUZZ_ARGS_VERBOSE=1 build/fuzz/rc_table tests/fuzz/corpus/rc_table/<file>...".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(FUZZ_RC_TABLE) || defined(FUZZ_RC_MESSAGE)
#include "rc-args.h"
#elif defined(FUZZ_VD_TABLE) || defined(FUZZ_VD_MESSAGE)
#include "vd-args.h"
#else
#error "build with one of -DFUZZ_RC_TABLE -DFUZZ_RC_MESSAGE -DFUZZ_VD_TABLE -DFUZZ_VD_MESSAGE"
#endif

#include "fuzz_gen.h"

/* The table parsers have a generator of valid lines too (gen_valid()). */
#if defined(FUZZ_RC_TABLE) || defined(FUZZ_VD_TABLE)
#define GEN_VALID 1
#endif

#define MAX_INPUT	4096	/* bytes of a line; longer inputs are skipped */
#define MAX_WORDS	64	/* words of a line; more and the input is skipped */
#define ERR_LEN		128	/* the buffer both targets' message functions pass */

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_args: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

static int verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *v = getenv("FUZZ_ARGS_VERBOSE");

	verbose = v && *v && strcmp(v, "0");
#ifdef GEN_VALID
	atexit(gen_report);
#endif
	return 0;
}

#include "fuzz_words.h"

static void report(const struct words *w, const char *err)
{
	unsigned int i;

	if (!verbose)
		return;
	fprintf(stderr, "fuzz_args: %u words:", w->argc);
	for (i = 0; i < w->argc; i++)
		fprintf(stderr, " [%s]", w->argv[i]);
	fprintf(stderr, " -> %s\n", err ? err : "ok");
}

/* --- Independent readings of the words --------------------------------- */

/* A decimal number 0..@max, digits only: true and *@v, or false. */
static int ref_dec(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' ||
		    __builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(*s - '0'), &n))
			return 0;
	}
	if (n > max)
		return 0;
	*v = n;
	return 1;
}

/* ref_dec() that must succeed: the parser accepted the word as a number. */
static uint64_t dec(const char *s, uint64_t max)
{
	uint64_t v = 0;

	CHECK(ref_dec(s, max, &v));
	return v;
}

/* Is @p one of the words? (A pointer the parser hands back must be.) */
static __attribute__((unused)) int is_word(const struct words *w, const char *p)
{
	unsigned int i;

	for (i = 0; i < w->argc; i++)
		if (p == w->argv[i])
			return 1;
	return 0;
}

/*
 * An error: non-empty, NUL-terminated within @len.  Table errors are
 * constant texts for ti->error, so printable ASCII too.  @buf is the
 * message buffer, of exactly @len bytes (ASan catches an unterminated one).
 */
static void check_error(const char *err, size_t len, int printable)
{
	size_t n = strlen(err);
	size_t i;

	CHECK(n > 0);
	CHECK(n < len);
	if (printable)
		for (i = 0; i < n; i++)
			CHECK(err[i] >= 0x20 && err[i] < 0x7f);
}

static __attribute__((unused)) char *err_buf(void)
{
	char *buf = malloc(ERR_LEN);

	CHECK(buf);
	memset(buf, 'X', ERR_LEN);	/* no NUL but the one the parser writes */
	return buf;
}

/* --- rc_parse_table() -------------------------------------------------- */

#ifdef FUZZ_RC_TABLE
static void fuzz(struct words *w)
{
	struct rc_table_args t;
	int seen_policy = 0, seen_wp = 0, seen_est = 0, seen_model = 0;
	uint64_t nr;
	unsigned int i;
	const char *err;

	memset(&t, 0x5a, sizeof(t));
	err = rc_parse_table(w->argc, w->argv, &t);
	report(w, err);
	if (err) {
		check_error(err, ERR_LEN, 1);
		return;
	}

	CHECK(w->argc >= 3);
	CHECK(t.origin && t.origin == w->argv[0]);
	CHECK(t.seg_sectors >= RC_MIN_SEG_SECTORS && t.seg_sectors <= RC_MAX_SEG_SECTORS);
	CHECK(!(t.seg_sectors & (t.seg_sectors - 1)));
	CHECK(t.seg_sectors == dec(w->argv[1], UINT32_MAX));
	CHECK(t.nr_segs >= 1 && t.nr_segs <= (1u << 24) && t.nr_segs <= RC_MAX_ENTRIES);
	CHECK(t.nr_segs == dec(w->argv[2], UINT32_MAX));
	CHECK((unsigned int)t.policy < RC_POLICY_NR);
	CHECK((unsigned int)t.write_policy <= RC_WRITE_UPDATE);
	CHECK((unsigned int)t.estimator <= RC_EST_NR);	/* RC_EST_NR: not given */
	CHECK(!t.model || is_word(w, t.model));

	if (w->argc == 3) {
		CHECK(t.policy == RC_POLICY_DEFAULT && t.write_policy == RC_WRITE_INVALIDATE &&
		      t.estimator == RC_EST_NR && !t.model);
		return;
	}
	/* <#features> counts every word after it: pairs of name and value. */
	nr = dec(w->argv[3], UINT32_MAX);
	CHECK(nr == w->argc - 4 && nr % 2 == 0 && nr <= 8);
	for (i = 4; i < w->argc; i += 2) {
		const char *name = w->argv[i], *val = w->argv[i + 1];

		if (!strcasecmp(name, "policy")) {
			CHECK(!seen_policy++);
			CHECK(!strcasecmp(rc_policy_name(t.policy), val));
		} else if (!strcasecmp(name, "write_policy")) {
			CHECK(!seen_wp++);
			CHECK(!strcasecmp(t.write_policy == RC_WRITE_UPDATE ? "update" : "invalidate",
					  val));
		} else if (!strcasecmp(name, "estimator")) {
			CHECK(!seen_est++);
			CHECK(!strcasecmp(rc_estimator_name(t.estimator), val));
		} else if (!strcasecmp(name, "model")) {
			CHECK(!seen_model++);
			CHECK(t.model == val);
		} else {
			CHECK(!"unknown feature accepted");
		}
	}
	CHECK(seen_policy || t.policy == RC_POLICY_DEFAULT);
	CHECK(seen_wp || t.write_policy == RC_WRITE_INVALIDATE);
	CHECK(seen_est || t.estimator == RC_EST_NR);
	CHECK(seen_model || !t.model);
}

/*
 * A valid redcap table line from the input's bytes: an origin, a power-of-two
 * segment size in range, a segment count in range, and any of the features in
 * any order, keywords in any case, numbers with leading zeros, words
 * separated by any of the kernel's whitespace and partly backslash-escaped.
 * It must be accepted as meant, pass fuzz()'s own reading, and the table line
 * status TABLE writes back (redcap_status()) must parse to the same.
 */
static void gen_valid(const uint8_t *data, size_t size)
{
	static const char *const origins[] = { "/dev/loop0", "8:16", "/dev/disk/by-id/ata-X",
					       "253:3", "/dev/mapper/data-vd" };
	static const char *const feats[] = { "policy", "write_policy", "estimator", "model" };
	static const char *const wps[] = { "invalidate", "update" };
	struct gen g = { data, size };
	static struct gen_line l, back;	/* static: large */
	struct rc_table_args t, t2;
	struct words w, w2;
	unsigned int order[4], nfeat, i, pol, wp, est;
	const char *origin, *model, *err;
	uint32_t seg, nr;

	l.len = back.len = 0;
	origin = origins[gen_pick(&g, 5)];
	model = origins[gen_pick(&g, 5)];
	seg = 1u << gen_range(&g, 3, 11);
	nr = (uint32_t)gen_range(&g, 1, RC_MAX_ENTRIES);
	pol = gen_pick(&g, RC_POLICY_NR);
	wp = gen_pick(&g, 2);
	est = gen_pick(&g, RC_EST_NR);
	nfeat = gen_pick(&g, 5);
	gen_shuffle(&g, order, 4);

	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &l);
	gen_word(&g, &l, origin, 0, 1);
	gen_dm_space(&g, &l);
	gen_number(&g, &l, seg);
	gen_dm_space(&g, &l);
	gen_number(&g, &l, nr);
	if (nfeat || gen_pick(&g, 2)) {
		gen_dm_space(&g, &l);
		gen_number(&g, &l, 2 * nfeat);
	}
	for (i = 0; i < nfeat; i++) {
		unsigned int f = order[i];

		gen_dm_space(&g, &l);
		gen_word(&g, &l, feats[f], 1, 1);
		gen_dm_space(&g, &l);
		gen_word(&g, &l, f == 0 ? rc_policy_name((enum rc_policy)pol) :
			 f == 1 ? wps[wp] : f == 2 ? rc_estimator_name((enum rc_estimator)est) :
			 model, f != 3, 1);
	}
	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &l);

	CHECK(split((const uint8_t *)l.s, l.len, &w) == 0);
	err = rc_parse_table(w.argc, w.argv, &t);
	if (err)
		fprintf(stderr, "fuzz_gen: refused: %s\n", err);
	GEN_CHECK(!err, l.s);
	GEN_CHECK(!strcmp(t.origin, origin) && t.seg_sectors == seg && t.nr_segs == nr, l.s);
	for (i = 0; i < 4; i++) {
		unsigned int f = order[i], given = i < nfeat;

		if (f == 0)
			GEN_CHECK(t.policy == (given ? pol : RC_POLICY_DEFAULT), l.s);
		else if (f == 1)
			GEN_CHECK(t.write_policy == (given ? wp : RC_WRITE_INVALIDATE), l.s);
		else if (f == 2)
			GEN_CHECK(t.estimator == (given ? est : RC_EST_NR), l.s);
		else
			GEN_CHECK(given ? t.model && !strcmp(t.model, model) : !t.model, l.s);
	}
	fuzz(&w);

	/*
	 * Back as redcap_status() writes the table: only what is not the
	 * default (the estimator the constructor chose is the glue's: here,
	 * only one given is written).
	 */
	nfeat = 2 * ((t.policy != RC_POLICY_DEFAULT) + (t.write_policy != RC_WRITE_INVALIDATE) +
		     (t.estimator != RC_EST_NR) + !!t.model);
	line_put(&back, "%s %u %u", t.origin, t.seg_sectors, t.nr_segs);
	if (nfeat)
		line_put(&back, " %u", nfeat);
	if (t.policy != RC_POLICY_DEFAULT)
		line_put(&back, " policy %s", rc_policy_name(t.policy));
	if (t.write_policy != RC_WRITE_INVALIDATE)
		line_put(&back, " write_policy %s", wps[t.write_policy]);
	if (t.estimator != RC_EST_NR)
		line_put(&back, " estimator %s", rc_estimator_name(t.estimator));
	if (t.model)
		line_put(&back, " model %s", t.model);
	CHECK(split((const uint8_t *)back.s, back.len, &w2) == 0);
	err = rc_parse_table(w2.argc, w2.argv, &t2);
	GEN_CHECK(!err, back.s);
	GEN_CHECK(!strcmp(t2.origin, t.origin) && t2.seg_sectors == t.seg_sectors &&
		  t2.nr_segs == t.nr_segs && t2.policy == t.policy &&
		  t2.write_policy == t.write_policy && t2.estimator == t.estimator &&
		  (t.model ? t2.model && !strcmp(t2.model, t.model) : !t2.model), back.s);
	words_free(&w2);
	words_free(&w);
	gen_valid_lines++;
}
#endif

/* --- rc_parse_message() ------------------------------------------------ */

#ifdef FUZZ_RC_MESSAGE
static void fuzz(struct words *w)
{
	static const struct {
		const char *verb;
		unsigned int args;	/* ~0u: any number, at least one */
	} verbs[] = {
		[RC_MSG_STATS] = { "stats", 0 },
		[RC_MSG_RESET_STATS] = { "reset_stats", 0 },
		[RC_MSG_DROP_CACHE] = { "drop_cache", 0 },
		[RC_MSG_POLICY] = { "policy", 1 },
		[RC_MSG_WRITE_POLICY] = { "write_policy", 1 },
		[RC_MSG_ESTIMATOR] = { "estimator", 1 },
		[RC_MSG_SET] = { "set", 2 },
		[RC_MSG_HOT] = { "hot", 1 },
		[RC_MSG_PIN] = { "pin", ~0u },
		[RC_MSG_UNPIN] = { "unpin", ~0u },
		[RC_MSG_CHOSEN] = { "chosen", 1 },
		[RC_MSG_PREFILL] = { "prefill", ~0u },
		[RC_MSG_SHADOWS] = { "shadows", 0 },
	};
	static const struct {
		const char *key;
		uint32_t min, max;
	} keys[] = {
		[RC_TUN_WINDOW] = { "window", 1, 1000000 },
		[RC_TUN_MARGIN] = { "margin", 0, 99 },
		[RC_TUN_DECAY_MS] = { "decay_ms", 0, 3600000 },
		[RC_TUN_BUDGET_SHARE] = { "budget_share", 0, 1000000 },
		[RC_TUN_BUDGET_CAP_MS] = { "budget_cap_ms", 0, 3600000 },
		[RC_TUN_PREFETCH] = { "prefetch", 0, 8 },
		[RC_TUN_HDC] = { "hdc", 0, 50 },
		[RC_TUN_HOT_PERIOD] = { "hot_period", 1, 86400 },
		[RC_TUN_DIRTY] = { "dirty", 1, 90 },
	};
	_Static_assert(sizeof(verbs) / sizeof(verbs[0]) == RC_MSG_NR, "verbs");
	_Static_assert(sizeof(keys) / sizeof(keys[0]) == RC_TUN_NR, "tunables");
	struct rc_msg m;
	char *buf = err_buf();
	const char *err;

	memset(&m, 0x5a, sizeof(m));
	err = rc_parse_message(w->argc, w->argv, &m, buf, ERR_LEN);
	report(w, err);
	if (err) {
		check_error(err, ERR_LEN, 0);
		free(buf);
		return;
	}
	free(buf);

	CHECK((unsigned int)m.verb < RC_MSG_NR);
	CHECK(w->argc >= 1 && !strcasecmp(w->argv[0], verbs[m.verb].verb));
	if (m.verb == RC_MSG_PIN || m.verb == RC_MSG_UNPIN || m.verb == RC_MSG_PREFILL)
		CHECK(w->argc >= 2 && w->argc <= 1 + RC_PIN_MAX);
	else if (m.verb == RC_MSG_HOT || m.verb == RC_MSG_CHOSEN)
		CHECK(w->argc <= 2);
	else
		CHECK(w->argc == 1 + verbs[m.verb].args);
	switch (m.verb) {
	case RC_MSG_PIN:
	case RC_MSG_UNPIN:
	case RC_MSG_PREFILL: {
		/* each word against a device of 1000 segments, as the glue does */
		uint64_t seg, ref;
		unsigned int i;

		for (i = 1; i < w->argc; i++) {
			buf = err_buf();
			err = rc_parse_segment(verbs[m.verb].verb, w->argv[i], 1000, &seg, buf,
					       ERR_LEN);
			if (err)
				check_error(err, ERR_LEN, 0);
			else
				CHECK(seg < 1000);
			CHECK(!err == (ref_dec(w->argv[i], UINT64_MAX, &ref) && ref < 1000));
			free(buf);
		}
		break;
	}
	case RC_MSG_HOT:
		CHECK(m.uvalue == (w->argc == 1 ? RC_HOT_TOP_DEFAULT : dec(w->argv[1], UINT32_MAX)));
		CHECK(m.uvalue >= 1 && m.uvalue <= RC_HOT_TOP_MAX);
		break;
	case RC_MSG_CHOSEN:
		CHECK(m.uvalue == (w->argc == 1 ? 0 : dec(w->argv[1], UINT32_MAX)));
		break;
	case RC_MSG_POLICY:
		CHECK(m.value >= 0 && m.value < RC_POLICY_NR);
		CHECK(!strcasecmp(rc_policy_name((enum rc_policy)m.value), w->argv[1]));
		break;
	case RC_MSG_WRITE_POLICY:
		CHECK(m.value == RC_WRITE_INVALIDATE || m.value == RC_WRITE_UPDATE);
		CHECK(!strcasecmp(m.value == RC_WRITE_UPDATE ? "update" : "invalidate",
				  w->argv[1]));
		break;
	case RC_MSG_ESTIMATOR:
		CHECK(m.value >= 0 && m.value < RC_EST_NR);
		CHECK(!strcasecmp(rc_estimator_name((enum rc_estimator)m.value), w->argv[1]));
		break;
	case RC_MSG_SET:
		CHECK((unsigned int)m.key < RC_TUN_NR);
		CHECK(!strcasecmp(keys[m.key].key, w->argv[1]));
		CHECK(m.uvalue >= keys[m.key].min && m.uvalue <= keys[m.key].max);
		CHECK(m.uvalue == dec(w->argv[2], UINT32_MAX));
		break;
	default:
		break;
	}
}
#endif

/* --- vd_parse_table() -------------------------------------------------- */

#ifdef FUZZ_VD_TABLE
static const char *const vd_feature_names[VDF_NR] = {
	[VDF_MODE] = "mode", [VDF_PROFILE] = "profile", [VDF_CAPACITY] = "capacity",
	[VDF_SEED] = "seed", [VDF_ROWS] = "rows", [VDF_RPM] = "rpm",
	[VDF_CYLINDERS] = "cylinders", [VDF_SEEK] = "seek", [VDF_MEDIA] = "media_mbps",
	[VDF_BUS] = "bus_mbps", [VDF_OVERHEAD] = "overhead_us", [VDF_CACHE] = "cache",
	[VDF_READAHEAD] = "readahead", [VDF_LATENCY] = "latency_us", [VDF_IOPS] = "iops",
};
static const unsigned int vd_nargs[VDF_NR] = {
	[VDF_SEEK] = 5, [VDF_CACHE] = 2, [VDF_IOPS] = 2,
	[VDF_MODE] = 1, [VDF_PROFILE] = 1, [VDF_CAPACITY] = 1, [VDF_SEED] = 1,
	[VDF_ROWS] = 1, [VDF_RPM] = 1, [VDF_CYLINDERS] = 1, [VDF_MEDIA] = 1,
	[VDF_BUS] = 1, [VDF_OVERHEAD] = 1, [VDF_READAHEAD] = 1, [VDF_LATENCY] = 1,
};

static void fuzz(struct words *w)
{
	struct vd_table_args t;
	struct vd_drive_params want;
	const struct vd_drive_profile *pr;
	char **val[VDF_NR] = { NULL };
	uint64_t nr;
	uint32_t seen = 0;
	unsigned int i, f = 0;
	const char *err;

	memset(&t, 0x5a, sizeof(t));
	err = vd_parse_table(w->argc, w->argv, &t);
	report(w, err);
	if (err) {
		check_error(err, ERR_LEN, 1);
		return;
	}

	CHECK(w->argc >= 1 && t.dev == w->argv[0]);
	CHECK(t.rows >= 1 && t.rows <= VD_MAX_ROWS);
	CHECK(vd_drive_params_check(&t.params) == 0);
	CHECK(t.mode == VD_MODE_MEASURE || t.mode == VD_MODE_EMULATE);
	CHECK(t.features < (1u << VDF_NR));
	for (pr = vd_drive_profiles; pr->name && pr != t.profile; pr++)
		;
	CHECK(t.profile && pr == t.profile);

	/*
	 * Which features the words name, and where their values are.  The
	 * count's bound (vd-args.c's VD_MAX_FEATURE_ARGS): every feature with
	 * all its values is 36 words.
	 */
	if (w->argc > 1) {
		nr = dec(w->argv[1], UINT32_MAX);
		CHECK(nr == w->argc - 2 && nr <= 40);
		for (i = 2; i < w->argc; i += 1 + vd_nargs[f]) {
			for (f = 0; f < VDF_NR; f++)
				if (!strcasecmp(w->argv[i], vd_feature_names[f]))
					break;
			CHECK(f < VDF_NR);
			CHECK(vd_feature_nargs((enum vd_feature)f) == vd_nargs[f]);
			CHECK(!(seen & (1u << f)));
			CHECK(i + vd_nargs[f] < w->argc);
			seen |= 1u << f;
			val[f] = w->argv + i + 1;
		}
	}
	CHECK(t.features == seen);

	CHECK(t.mode == (val[VDF_MODE] && !strcasecmp(val[VDF_MODE][0], "emulate") ?
			 VD_MODE_EMULATE : VD_MODE_MEASURE));
	if (val[VDF_MODE])
		CHECK(!strcasecmp(val[VDF_MODE][0], "emulate") ||
		      !strcasecmp(val[VDF_MODE][0], "measure"));
	if (val[VDF_PROFILE])
		CHECK(!strcasecmp(t.profile->name, val[VDF_PROFILE][0]));
	else
		CHECK(t.profile == &vd_drive_profiles[0]);
	if (val[VDF_CAPACITY])
		CHECK(t.capacity && t.capacity == dec(val[VDF_CAPACITY][0], UINT64_MAX));
	else
		CHECK(t.capacity == 0);
	CHECK(t.seed == (val[VDF_SEED] ? dec(val[VDF_SEED][0], UINT64_MAX) : 1));
	CHECK(t.rows == (val[VDF_ROWS] ? dec(val[VDF_ROWS][0], UINT32_MAX) : VD_DEFAULT_ROWS));

	/* The profile's drive, with every explicit value on top. */
	want = t.profile->p;
	if (val[VDF_RPM])
		want.rpm = dec(val[VDF_RPM][0], UINT32_MAX);
	if (val[VDF_CYLINDERS])
		want.cylinders = dec(val[VDF_CYLINDERS][0], UINT32_MAX);
	if (val[VDF_SEEK]) {
		want.seek_alpha_ns = dec(val[VDF_SEEK][0], UINT32_MAX);
		want.seek_beta_ns = dec(val[VDF_SEEK][1], UINT32_MAX);
		want.seek_theta = dec(val[VDF_SEEK][2], UINT32_MAX);
		want.seek_gamma_ns = dec(val[VDF_SEEK][3], UINT32_MAX);
		want.seek_delta_ns = dec(val[VDF_SEEK][4], UINT32_MAX);
	}
	if (val[VDF_MEDIA])
		want.media_mbps = dec(val[VDF_MEDIA][0], UINT32_MAX);
	if (val[VDF_BUS])
		want.bus_mbps = dec(val[VDF_BUS][0], UINT32_MAX);
	if (val[VDF_OVERHEAD])
		want.overhead_ns = dec(val[VDF_OVERHEAD][0], 1000000) * 1000;
	if (val[VDF_CACHE]) {
		want.nr_segs = dec(val[VDF_CACHE][0], VD_DRIVE_MAX_SEGS);
		want.seg_sectors = dec(val[VDF_CACHE][1], UINT32_MAX);
	}
	if (val[VDF_READAHEAD])
		want.ra_sectors = dec(val[VDF_READAHEAD][0], UINT32_MAX);
	if (val[VDF_LATENCY])
		want.latency_ns = dec(val[VDF_LATENCY][0], 1000000) * 1000;
	if (val[VDF_IOPS]) {
		want.iops = dec(val[VDF_IOPS][0], UINT32_MAX);
		want.io_sectors = dec(val[VDF_IOPS][1], UINT32_MAX);
	}
	CHECK(!memcmp(&want, &t.params, sizeof(want)));
}

/*
 * A valid vdisk table line from the input's bytes: any of the features in
 * any order, each value in its range (non-zero where the drive needs it, a
 * cache of 0..64 segments with a size, overhead and latency up to a second,
 * rpm 0 too), then made a drive that vd_drive_params_check() takes (below),
 * keywords in any case (the profile's name too), numbers with leading zeros,
 * the kernel's whitespace, backslash escapes.  It
 * must be accepted as meant, pass fuzz()'s own reading, and the line that
 * status TABLE writes back (vdisk_emit_features()) must parse to the same.
 */
static void gen_valid(const uint8_t *data, size_t size)
{
	static const char *const devs[] = { "/dev/loop0", "8:16", "/dev/ram0", "/dev/vdb" };
	static const char *const modes[] = { "measure", "emulate" };
	struct gen g = { data, size };
	static struct gen_line l, back;	/* static: large */
	struct vd_table_args t, t2;
	struct words w, w2;
	const struct vd_drive_params *base;
	unsigned int order[VDF_NR], nfeat, nargs = 0, i, k, f;
	uint64_t v[VDF_NR][5], rpm, cyl, segs;
	uint32_t chosen = 0;
	const char *dev, *err;

	l.len = back.len = 0;
	dev = devs[gen_pick(&g, 4)];
	nfeat = gen_pick(&g, VDF_NR + 1);
	gen_shuffle(&g, order, VDF_NR);
	for (f = 0; f < VDF_NR; f++)
		memset(v[f], 0, sizeof(v[f]));
	for (i = 0; i < nfeat; i++) {
		f = order[i];
		chosen |= 1u << f;
		nargs += 1 + vd_feature_nargs((enum vd_feature)f);
		switch (f) {
		case VDF_MODE:
			v[f][0] = gen_pick(&g, 2);
			break;
		case VDF_PROFILE:
			for (k = 0; vd_drive_profiles[k].name; k++)
				;
			v[f][0] = gen_pick(&g, k);
			break;
		case VDF_CAPACITY:
			v[f][0] = gen_range(&g, 1, UINT64_MAX);
			break;
		case VDF_SEED:
			v[f][0] = gen_range(&g, 0, UINT64_MAX);
			break;
		case VDF_ROWS:
			v[f][0] = gen_range(&g, 1, VD_MAX_ROWS);
			break;
		case VDF_CYLINDERS: case VDF_MEDIA: case VDF_BUS:
			v[f][0] = gen_range(&g, 1, UINT32_MAX);
			break;
		case VDF_SEEK:
			for (k = 0; k < 5; k++)
				v[f][k] = gen_range(&g, 0, UINT32_MAX);
			break;
		case VDF_OVERHEAD: case VDF_LATENCY:
			v[f][0] = gen_range(&g, 0, 1000000);
			break;
		case VDF_CACHE:
			v[f][0] = gen_range(&g, 0, VD_DRIVE_MAX_SEGS);
			v[f][1] = gen_range(&g, v[f][0] ? 1 : 0, UINT32_MAX);
			break;
		case VDF_IOPS:
			v[f][0] = gen_range(&g, 0, UINT32_MAX);
			v[f][1] = gen_range(&g, 0, UINT32_MAX);
			break;
		default:	/* VDF_RPM, VDF_READAHEAD */
			v[f][0] = gen_range(&g, 0, UINT32_MAX);
			break;
		}
	}

	/*
	 * A drive vd_drive_params_check() takes: with platters (rpm != 0) it
	 * needs cylinders, without them no cache.  The effective rpm,
	 * cylinders and cache: the explicit value, else the profile's (the
	 * first one's if none is named).  The profiles pass the check and an
	 * explicit cylinders is non-zero, so whatever breaks it has an
	 * explicit rpm or cache.
	 */
	base = &vd_drive_profiles[(chosen & (1u << VDF_PROFILE)) ? v[VDF_PROFILE][0] : 0].p;
	rpm = (chosen & (1u << VDF_RPM)) ? v[VDF_RPM][0] : base->rpm;
	cyl = (chosen & (1u << VDF_CYLINDERS)) ? v[VDF_CYLINDERS][0] : base->cylinders;
	segs = (chosen & (1u << VDF_CACHE)) ? v[VDF_CACHE][0] : base->nr_segs;
	if (rpm && !cyl) {
		/* An explicit rpm over a flat profile, without cylinders: flat. */
		CHECK(chosen & (1u << VDF_RPM));
		v[VDF_RPM][0] = rpm = 0;
	}
	if (!rpm && segs) {
		if (chosen & (1u << VDF_CACHE)) {
			/* Flat with an explicit cache: no cache. */
			v[VDF_CACHE][0] = v[VDF_CACHE][1] = 0;
		} else {
			/* An explicit rpm 0 over a profile with a cache (and cylinders). */
			CHECK((chosen & (1u << VDF_RPM)) && cyl);
			v[VDF_RPM][0] = 7200;
		}
	}

	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &l);
	gen_word(&g, &l, dev, 0, 1);
	if (nfeat || gen_pick(&g, 2)) {
		gen_dm_space(&g, &l);
		gen_number(&g, &l, nargs);
	}
	for (i = 0; i < nfeat; i++) {
		f = order[i];
		gen_dm_space(&g, &l);
		gen_word(&g, &l, vd_feature_names[f], 1, 1);
		gen_dm_space(&g, &l);
		if (f == VDF_MODE)
			gen_word(&g, &l, modes[v[f][0]], 1, 1);
		else if (f == VDF_PROFILE)
			gen_word(&g, &l, vd_drive_profiles[v[f][0]].name, 1, 1);
		else
			for (k = 0; k < vd_feature_nargs((enum vd_feature)f); k++) {
				if (k)
					gen_dm_space(&g, &l);
				gen_number(&g, &l, v[f][k]);
			}
	}
	if (gen_pick(&g, 4) == 0)
		gen_dm_space(&g, &l);

	CHECK(split((const uint8_t *)l.s, l.len, &w) == 0);
	err = vd_parse_table(w.argc, w.argv, &t);
	if (err)
		fprintf(stderr, "fuzz_gen: refused: %s\n", err);
	GEN_CHECK(!err, l.s);
	GEN_CHECK(!strcmp(t.dev, dev), l.s);
	for (i = 0; i < VDF_NR; i++) {
		f = order[i];
		GEN_CHECK(!!(t.features & (1u << f)) == (i < nfeat), l.s);
		if (i >= nfeat)
			continue;
		switch (f) {
		case VDF_MODE:
			GEN_CHECK(t.mode == (v[f][0] ? VD_MODE_EMULATE : VD_MODE_MEASURE), l.s);
			break;
		case VDF_PROFILE:
			GEN_CHECK(t.profile == &vd_drive_profiles[v[f][0]], l.s);
			break;
		case VDF_CAPACITY:
			GEN_CHECK(t.capacity == v[f][0], l.s);
			break;
		case VDF_SEED:
			GEN_CHECK(t.seed == v[f][0], l.s);
			break;
		case VDF_ROWS:
			GEN_CHECK(t.rows == v[f][0], l.s);
			break;
		case VDF_RPM:
			GEN_CHECK(t.params.rpm == v[f][0], l.s);
			break;
		case VDF_OVERHEAD:
			GEN_CHECK(t.params.overhead_ns == v[f][0] * 1000, l.s);
			break;
		case VDF_CACHE:
			GEN_CHECK(t.params.nr_segs == v[f][0] && t.params.seg_sectors == v[f][1], l.s);
			break;
		case VDF_LATENCY:
			GEN_CHECK(t.params.latency_ns == v[f][0] * 1000, l.s);
			break;
		case VDF_IOPS:
			GEN_CHECK(t.params.iops == v[f][0] && t.params.io_sectors == v[f][1], l.s);
			break;
		default:	/* the rest: fuzz()'s reading below */
			break;
		}
	}
	fuzz(&w);

	/* Back as vdisk_emit_features() writes the table, in the enum's order. */
	line_put(&back, "%s", t.dev);
	for (nargs = 0, f = 0; f < VDF_NR; f++)
		if (t.features & (1u << f))
			nargs += 1 + vd_feature_nargs((enum vd_feature)f);
	if (nargs)
		line_put(&back, " %u", nargs);
	for (f = 0; f < VDF_NR; f++) {
		const struct vd_drive_params *p = &t.params;

		if (!(t.features & (1u << f)))
			continue;
		line_put(&back, " %s", vd_feature_names[f]);
		switch (f) {
		case VDF_MODE:
			line_put(&back, " %s", modes[t.mode == VD_MODE_EMULATE]);
			break;
		case VDF_PROFILE:
			line_put(&back, " %s", t.profile->name);
			break;
		case VDF_CAPACITY:
			line_put(&back, " %llu", (unsigned long long)t.capacity);
			break;
		case VDF_SEED:
			line_put(&back, " %llu", (unsigned long long)t.seed);
			break;
		case VDF_ROWS:
			line_put(&back, " %u", t.rows);
			break;
		case VDF_RPM:
			line_put(&back, " %u", p->rpm);
			break;
		case VDF_CYLINDERS:
			line_put(&back, " %u", p->cylinders);
			break;
		case VDF_SEEK:
			line_put(&back, " %u %u %u %u %u", p->seek_alpha_ns, p->seek_beta_ns,
				 p->seek_theta, p->seek_gamma_ns, p->seek_delta_ns);
			break;
		case VDF_MEDIA:
			line_put(&back, " %u", p->media_mbps);
			break;
		case VDF_BUS:
			line_put(&back, " %u", p->bus_mbps);
			break;
		case VDF_OVERHEAD:
			line_put(&back, " %u", p->overhead_ns / 1000);
			break;
		case VDF_CACHE:
			line_put(&back, " %u %u", p->nr_segs, p->seg_sectors);
			break;
		case VDF_READAHEAD:
			line_put(&back, " %u", p->ra_sectors);
			break;
		case VDF_LATENCY:
			line_put(&back, " %u", p->latency_ns / 1000);
			break;
		default:	/* VDF_IOPS */
			line_put(&back, " %u %u", p->iops, p->io_sectors);
			break;
		}
	}
	CHECK(split((const uint8_t *)back.s, back.len, &w2) == 0);
	err = vd_parse_table(w2.argc, w2.argv, &t2);
	GEN_CHECK(!err, back.s);
	GEN_CHECK(!strcmp(t2.dev, t.dev) && t2.features == t.features && t2.mode == t.mode &&
		  t2.profile == t.profile && t2.capacity == t.capacity && t2.seed == t.seed &&
		  t2.rows == t.rows && !memcmp(&t2.params, &t.params, sizeof(t.params)), back.s);
	words_free(&w2);
	words_free(&w);
	gen_valid_lines++;
}
#endif

/* --- vd_parse_message() ------------------------------------------------ */

#ifdef FUZZ_VD_MESSAGE
/*
 * The model's size from the first two bytes, big-endian v: rows 1..2048
 * (1 + v % 2048), cols 1, 4, .., 91 (1 + 3k for k = v / 2048 < 31) or 2^20,
 * the most a capacity gives.  "0?" is rows 64, cols 19 (the guest tests').
 */
static void vd_geometry(const uint8_t *data, uint32_t *rows, uint32_t *cols)
{
	unsigned int v = (unsigned int)data[0] << 8 | data[1];

	*rows = 1 + v % 2048;
	*cols = v / 2048 < 31 ? 1 + 3 * (v / 2048) : 1u << 20;
}

static enum vd_dir dir_of(const char *s)
{
	if (!strcasecmp(s, "r") || !strcasecmp(s, "read"))
		return VD_READ;
	CHECK(!strcasecmp(s, "w") || !strcasecmp(s, "write"));
	return VD_WRITE;
}

/* A cell by an independent reading: three ':'-separated decimal fields. */
static void ref_cell(const char *s, uint32_t *col, uint32_t *n, uint64_t *sum)
{
	char f[3][32];
	const char *colon;
	unsigned int i;
	size_t len;

	for (i = 0; i < 3; i++) {
		colon = strchr(s, ':');
		CHECK(i < 2 ? colon != NULL : colon == NULL);
		len = colon ? (size_t)(colon - s) : strlen(s);
		CHECK(len < sizeof(f[i]));
		memcpy(f[i], s, len);
		f[i][len] = '\0';
		s += len + 1;
	}
	*col = (uint32_t)dec(f[0], UINT32_MAX);
	*n = (uint32_t)dec(f[1], UINT32_MAX);
	*sum = dec(f[2], UINT64_MAX);
}

static void fuzz_vd_message(struct words *w, uint32_t rows, uint32_t cols)
{
	static const struct {
		const char *verb;
		unsigned int min_args, max_args;
	} verbs[] = {
		[VD_MSG_STATS] = { "stats", 0, 0 },
		[VD_MSG_RESET] = { "reset", 0, 0 },
		[VD_MSG_RESET_STATS] = { "reset_stats", 0, 0 },
		[VD_MSG_MODE] = { "mode", 1, 1 },
		[VD_MSG_TRAIN] = { "train", 1, 1 },
		[VD_MSG_ESTIMATE] = { "estimate", 3, 3 },
		[VD_MSG_TABLE] = { "table", 3, 3 },
		[VD_MSG_LOAD] = { "load", 2, ~0u },
		[VD_MSG_OVERLAP] = { "overlap", 1, 1 },
		[VD_MSG_DCACHE] = { "dcache", 1, 4 },
	};
	_Static_assert(sizeof(verbs) / sizeof(verbs[0]) == VD_MSG_NR, "verbs");
	static const char *const yes[] = { "on", "1", "y", "yes", "true" };
	static const char *const no[] = { "off", "0", "n", "no", "false" };
	struct vd_msg m;
	char *buf = err_buf();
	const char *err;
	unsigned int i, on = 0, off = 0;

	memset(&m, 0x5a, sizeof(m));
	err = vd_parse_message(w->argc, w->argv, rows, cols, &m, buf, ERR_LEN);
	report(w, err);
	if (err) {
		check_error(err, ERR_LEN, 0);
		free(buf);
		return;
	}
	free(buf);

	CHECK((unsigned int)m.verb < VD_MSG_NR);
	CHECK(w->argc >= 1 && !strcasecmp(w->argv[0], verbs[m.verb].verb));
	CHECK(w->argc - 1 >= verbs[m.verb].min_args && w->argc - 1 <= verbs[m.verb].max_args);
	switch (m.verb) {
	case VD_MSG_MODE:
		CHECK(m.mode == (!strcasecmp(w->argv[1], "emulate") ?
				 VD_MODE_EMULATE : VD_MODE_MEASURE));
		CHECK(!strcasecmp(w->argv[1], "emulate") || !strcasecmp(w->argv[1], "measure"));
		break;
	case VD_MSG_TRAIN:
		for (i = 0; i < 5; i++) {
			on += !strcasecmp(w->argv[1], yes[i]);
			off += !strcasecmp(w->argv[1], no[i]);
		}
		CHECK(on + off == 1 && m.train == (on == 1));
		break;
	case VD_MSG_ESTIMATE:
		CHECK(m.dir == dir_of(w->argv[1]));
		CHECK(w->argv[2][0] == '-' ?
		      m.distance == -(int64_t)dec(w->argv[2] + 1, INT64_MAX) :
		      m.distance == (int64_t)dec(w->argv[2], INT64_MAX));
		CHECK(m.sectors && m.sectors == dec(w->argv[3], UINT32_MAX));
		break;
	case VD_MSG_TABLE:
		CHECK(m.dir == dir_of(w->argv[1]));
		CHECK(m.row == dec(w->argv[2], UINT32_MAX));
		CHECK(m.nr_rows == dec(w->argv[3], UINT32_MAX));
		CHECK(m.row < rows && (uint64_t)m.row + m.nr_rows <= rows);
		break;
	case VD_MSG_LOAD:
		CHECK(m.dir == dir_of(w->argv[1]));
		CHECK(m.row == dec(w->argv[2], UINT32_MAX) && m.row < rows);
		CHECK(m.first_cell >= 3 && m.first_cell <= w->argc);
		for (i = m.first_cell; i < w->argc; i++) {
			uint32_t col = 0, n = 0, rcol, rn;
			uint64_t sum = 0, rsum;

			CHECK(vd_parse_cell(w->argv[i], &col, &n, &sum) == 0);
			ref_cell(w->argv[i], &rcol, &rn, &rsum);
			CHECK(col == rcol && n == rn && sum == rsum);
			CHECK(col < cols && n <= VD_WINDOW);
			CHECK(sum <= (uint64_t)n * VD_MAX_SAMPLE_NS);
		}
		break;
	case VD_MSG_OVERLAP:
		CHECK(m.overlap_ns == dec(w->argv[1], VD_MAX_OVERLAP_NS / 1000) * 1000);
		break;
	case VD_MSG_DCACHE:
		if (w->argc == 2) {
			CHECK(m.dcache_learnt == !strcasecmp(w->argv[1], "learnt"));
			CHECK(m.dcache_learnt || !strcasecmp(w->argv[1], "none"));
			CHECK(!m.dcache.nr_segs);
			break;
		}
		CHECK(w->argc == 5 && !m.dcache_learnt);
		CHECK(m.dcache.nr_segs == dec(w->argv[1], UINT32_MAX));
		CHECK(m.dcache.seg_sectors == dec(w->argv[2], UINT32_MAX));
		CHECK(m.dcache.ra_sectors == dec(w->argv[3], UINT32_MAX));
		CHECK(m.dcache.media_mbps == dec(w->argv[4], UINT32_MAX));
		CHECK(m.dcache.nr_segs <= VD_DCACHE_MAX_SEGS);
		CHECK(!m.dcache.nr_segs || (m.dcache.seg_sectors && m.dcache.media_mbps));
		break;
	default:
		break;
	}
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct words w;

#ifdef FUZZ_VD_MESSAGE
	uint32_t rows, cols;

	if (size < 2)
		return 0;
	vd_geometry(data, &rows, &cols);
	data += 2;
	size -= 2;
#endif
	if (split(data, size, &w))
		return 0;
#ifdef FUZZ_VD_MESSAGE
	fuzz_vd_message(&w, rows, cols);
#else
	fuzz(&w);
#endif
	words_free(&w);
#ifdef GEN_VALID
	gen_valid(data, size);
#endif
	return 0;
}

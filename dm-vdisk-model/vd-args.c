// SPDX-License-Identifier: GPL-2.0
/*
 * The vdisk table line and messages; see vd-args.h.
 */
#include "vd-args.h"
#include "rc-parse.h"

static const struct {
	const char *name;
	unsigned int nargs;
	const char *error;
} vd_features[VDF_NR] = {
	[VDF_MODE] = { "mode", 1, "Invalid mode" },
	[VDF_PROFILE] = { "profile", 1, "Unknown profile" },
	[VDF_CAPACITY] = { "capacity", 1, "Invalid capacity" },
	[VDF_SEED] = { "seed", 1, "Invalid seed" },
	[VDF_ROWS] = { "rows", 1, "Invalid rows" },
	[VDF_RPM] = { "rpm", 1, "Invalid rpm" },
	[VDF_CYLINDERS] = { "cylinders", 1, "Invalid cylinders" },
	[VDF_SEEK] = { "seek", 5, "Invalid seek curve" },
	[VDF_MEDIA] = { "media_mbps", 1, "Invalid media_mbps" },
	[VDF_BUS] = { "bus_mbps", 1, "Invalid bus_mbps" },
	[VDF_OVERHEAD] = { "overhead_us", 1, "Invalid overhead_us" },
	[VDF_CACHE] = { "cache", 2, "Invalid cache geometry" },
	[VDF_READAHEAD] = { "readahead", 1, "Invalid readahead" },
	[VDF_LATENCY] = { "latency_us", 1, "Invalid latency_us" },
	[VDF_IOPS] = { "iops", 2, "Invalid iops" },
};

/* The feature count's bound: every feature with all its values. */
#define VD_MAX_FEATURE_ARGS	40

unsigned int vd_feature_nargs(enum vd_feature f)
{
	return vd_features[f].nargs;
}

static int vd_parse_mode(const char *s, enum vd_mode *mode)
{
	if (rc_streq(s, "measure"))
		*mode = VD_MODE_MEASURE;
	else if (rc_streq(s, "emulate"))
		*mode = VD_MODE_EMULATE;
	else
		return -1;
	return 0;
}

static int vd_parse_u32s(char **argv, unsigned int n, u32 *v)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (rc_parse_u32(argv[i], &v[i]))
			return -1;
	return 0;
}

/* One feature's values into @t: 0 or -1. */
static int vd_parse_feature(struct vd_table_args *t, enum vd_feature f, char **argv)
{
	struct vd_drive_params *p = &t->params;
	u32 v[5];

	switch (f) {
	case VDF_MODE:
		return vd_parse_mode(argv[0], &t->mode);
	case VDF_PROFILE:
		t->profile = vd_drive_profile(argv[0]);
		return t->profile ? 0 : -1;
	case VDF_CAPACITY:
		return rc_parse_u64(argv[0], ~0ULL, &t->capacity) || !t->capacity ? -1 : 0;
	case VDF_SEED:
		return rc_parse_u64(argv[0], ~0ULL, &t->seed);
	case VDF_ROWS:
		return rc_parse_u32(argv[0], &t->rows) || !t->rows ||
		       t->rows > VD_MAX_ROWS ? -1 : 0;
	default:
		break;
	}

	if (vd_parse_u32s(argv, vd_features[f].nargs, v))
		return -1;
	switch (f) {
	case VDF_RPM:
		p->rpm = v[0];
		return 0;
	case VDF_CYLINDERS:
		p->cylinders = v[0];
		return v[0] ? 0 : -1;
	case VDF_SEEK:
		p->seek_alpha_ns = v[0];
		p->seek_beta_ns = v[1];
		p->seek_theta = v[2];
		p->seek_gamma_ns = v[3];
		p->seek_delta_ns = v[4];
		return 0;
	case VDF_MEDIA:
		p->media_mbps = v[0];
		return v[0] ? 0 : -1;
	case VDF_BUS:
		p->bus_mbps = v[0];
		return v[0] ? 0 : -1;
	case VDF_OVERHEAD:
		if (v[0] > 1000000)
			return -1;
		p->overhead_ns = v[0] * 1000;
		return 0;
	case VDF_CACHE:
		if (v[0] > VD_DRIVE_MAX_SEGS || (v[0] && !v[1]))
			return -1;
		p->nr_segs = v[0];
		p->seg_sectors = v[1];
		return 0;
	case VDF_READAHEAD:
		p->ra_sectors = v[0];
		return 0;
	case VDF_LATENCY:
		if (v[0] > 1000000)
			return -1;
		p->latency_ns = v[0] * 1000;
		return 0;
	case VDF_IOPS:
		p->iops = v[0];
		p->io_sectors = v[1];
		return 0;
	default:
		return -1;
	}
}

static const char *vd_parse_features(unsigned int argc, char **argv, struct vd_table_args *t)
{
	char **vals[VDF_NR] = { NULL };
	unsigned int i = 1, f;
	u32 nr;

	if (rc_parse_u32(argv[0], &nr) || nr > VD_MAX_FEATURE_ARGS || nr > argc - 1)
		return "Invalid number of feature args";
	while (i < 1 + nr) {
		for (f = 0; f < VDF_NR; f++)
			if (rc_streq(argv[i], vd_features[f].name))
				break;
		if (f == VDF_NR)
			return "Unrecognised feature requested";
		i++;
		if (1 + nr - i < vd_features[f].nargs)
			return vd_features[f].error;
		if (t->features & (1u << f))
			return "Duplicate feature";
		t->features |= 1u << f;
		vals[f] = argv + i;
		i += vd_features[f].nargs;
	}
	if (argc > 1 + nr)
		return "Too many arguments";

	/* The profile first, so that explicit values land on top of it. */
	if (vals[VDF_PROFILE]) {
		if (vd_parse_feature(t, VDF_PROFILE, vals[VDF_PROFILE]))
			return vd_features[VDF_PROFILE].error;
		t->params = t->profile->p;
	}
	for (f = 0; f < VDF_NR; f++) {
		if (f == VDF_PROFILE || !vals[f])
			continue;
		if (vd_parse_feature(t, (enum vd_feature)f, vals[f]))
			return vd_features[f].error;
	}
	if (vd_drive_params_check(&t->params))
		return "Invalid drive parameters";
	return NULL;
}

const char *vd_parse_table(unsigned int argc, char **argv, struct vd_table_args *t)
{
	memset(t, 0, sizeof(*t));
	t->mode = VD_MODE_MEASURE;
	t->seed = 1;
	t->rows = VD_DEFAULT_ROWS;
	t->profile = &vd_drive_profiles[0];
	t->params = t->profile->p;

	if (!argc)
		return "Missing device argument";
	t->dev = argv[0];
	if (argc > 1)
		return vd_parse_features(argc - 1, argv + 1, t);
	return NULL;
}

static const struct rc_verb vd_msgs[VD_MSG_NR] = {
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

static int vd_parse_dir(const char *s, enum vd_dir *dir)
{
	if (rc_streq(s, "r") || rc_streq(s, "read"))
		*dir = VD_READ;
	else if (rc_streq(s, "w") || rc_streq(s, "write"))
		*dir = VD_WRITE;
	else
		return -1;
	return 0;
}

/* A seek distance in sectors, with '-' in front when backward. */
static int vd_parse_distance(const char *s, s64 *distance)
{
	bool back = *s == '-';
	u64 d;

	if (rc_parse_u64(s + back, ~0ULL >> 1, &d))
		return -1;
	*distance = back ? -(s64)d : (s64)d;
	return 0;
}

/* What kstrtobool() takes for on and off. */
static int vd_parse_bool(const char *s, bool *on)
{
	static const char *const yes[] = { "on", "1", "y", "yes", "true" };
	static const char *const no[] = { "off", "0", "n", "no", "false" };
	unsigned int i;

	for (i = 0; i < 5; i++) {
		if (rc_streq(s, yes[i])) {
			*on = true;
			return 0;
		}
		if (rc_streq(s, no[i])) {
			*on = false;
			return 0;
		}
	}
	return -1;
}

/* Up to the next ':' or the end: a number 0..@max. */
static const char *vd_parse_field(const char *s, u64 max, u64 *v, char end)
{
	char word[24];
	unsigned int i = 0;

	while (s[i] && s[i] != ':') {
		if (i == sizeof(word) - 1)
			return NULL;
		word[i] = s[i];
		i++;
	}
	word[i] = '\0';
	if (s[i] != end || rc_parse_u64(word, max, v))
		return NULL;
	return s + i + (end ? 1 : 0);
}

int vd_parse_cell(const char *s, u32 *col, u32 *n, u64 *sum)
{
	u64 c, k;

	s = vd_parse_field(s, 0xffffffffu, &c, ':');
	if (s)
		s = vd_parse_field(s, 0xffffffffu, &k, ':');
	if (!s || !vd_parse_field(s, ~0ULL, sum, '\0'))
		return -1;
	*col = (u32)c;
	*n = (u32)k;
	return 0;
}

static const char *vd_parse_rows(char **argv, u32 rows, struct vd_msg *m,
				 char *buf, size_t len)
{
	if (vd_parse_dir(argv[1], &m->dir) || rc_parse_u32(argv[2], &m->row) ||
	    rc_parse_u32(argv[3], &m->nr_rows) || m->row >= rows ||
	    m->nr_rows > rows - m->row) {
		snprintf(buf, len, "table: usage: table <r|w> <first row> <nr rows> (rows 0..%u)",
			 rows - 1);
		return buf;
	}
	return NULL;
}

static const char *vd_parse_load(unsigned int argc, char **argv, u32 rows, u32 cols,
				 struct vd_msg *m, char *buf, size_t len)
{
	unsigned int i;
	u32 col, n;
	u64 sum;

	if (vd_parse_dir(argv[1], &m->dir) || rc_parse_u32(argv[2], &m->row) ||
	    m->row >= rows)
		return "load: usage: load <r|w> <row> [<col>:<n>:<sum ns>]...";
	for (i = 3; i < argc; i++)
		if (vd_parse_cell(argv[i], &col, &n, &sum) || col >= cols ||
		    n > VD_WINDOW || sum > (u64)n * VD_MAX_SAMPLE_NS) {
			snprintf(buf, len, "load: bad cell '%s'", argv[i]);
			return buf;
		}
	m->first_cell = 3;
	return NULL;
}

/*
 * dcache learnt|none|<segments> <segment sectors> <readahead sectors> <media MB/s>:
 * with segments, their length and the rate above 0.
 */
static const char *vd_parse_dcache(unsigned int argc, char **argv, struct vd_msg *m)
{
	static const char usage[] =
		"dcache: usage: dcache learnt|none|<segments 0..16> <segment sectors> <readahead sectors> <media MB/s>";
	struct vd_dcache *dc = &m->dcache;

	if (argc == 2 && rc_streq(argv[1], "learnt")) {
		m->dcache_learnt = true;
		return NULL;
	}
	if (argc == 2 && rc_streq(argv[1], "none"))
		return NULL;
	if (argc != 5 || rc_parse_u32(argv[1], &dc->nr_segs) ||
	    rc_parse_u32(argv[2], &dc->seg_sectors) ||
	    rc_parse_u32(argv[3], &dc->ra_sectors) ||
	    rc_parse_u32(argv[4], &dc->media_mbps) || vd_dcache_check(dc))
		return usage;
	return NULL;
}

const char *vd_parse_message(unsigned int argc, char **argv, u32 rows, u32 cols,
			     struct vd_msg *m, char *buf, size_t len)
{
	const char *err;
	unsigned int i;

	memset(m, 0, sizeof(*m));
	err = rc_parse_verb(vd_msgs, VD_MSG_NR, argc, argv, &i, buf, len);
	if (err)
		return err;
	m->verb = (enum vd_msg_verb)i;
	switch (m->verb) {
	case VD_MSG_MODE:
		if (vd_parse_mode(argv[1], &m->mode)) {
			snprintf(buf, len, "mode: unknown mode '%s'", argv[1]);
			return buf;
		}
		return NULL;
	case VD_MSG_TRAIN:
		if (vd_parse_bool(argv[1], &m->train)) {
			snprintf(buf, len, "train: expected on or off, not '%s'", argv[1]);
			return buf;
		}
		return NULL;
	case VD_MSG_ESTIMATE:
		if (vd_parse_dir(argv[1], &m->dir) ||
		    vd_parse_distance(argv[2], &m->distance) ||
		    rc_parse_u32(argv[3], &m->sectors) || !m->sectors)
			return "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>";
		return NULL;
	case VD_MSG_TABLE:
		return vd_parse_rows(argv, rows, m, buf, len);
	case VD_MSG_LOAD:
		return vd_parse_load(argc, argv, rows, cols, m, buf, len);
	case VD_MSG_OVERLAP:
		if (rc_parse_u64(argv[1], VD_MAX_OVERLAP_NS / 1000, &m->overlap_ns)) {
			snprintf(buf, len, "overlap: expected microseconds from 0 to %llu, not '%s'",
				 VD_MAX_OVERLAP_NS / 1000, argv[1]);
			return buf;
		}
		m->overlap_ns *= 1000;
		return NULL;
	case VD_MSG_DCACHE:
		return vd_parse_dcache(argc, argv, m);
	default:
		return NULL;
	}
}

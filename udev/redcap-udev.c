// SPDX-License-Identifier: GPL-2.0
/*
 * redcap-udev: the IMPORT{program} of 59-redcap-member.rules and
 * 63-redcap-member.rules.  Is this block device the origin of an entry of
 * /etc/redcaptab?  If so, the properties that make it a redcap member.
 *
 * usage: redcap-udev --early|--late [--tab FILE] DEVNODE [LINK...]
 *
 * DEVNODE is udev's $devnode and the LINKs its $links: the symlinks the rules
 * before the caller gave the device in this event (relative to /dev).  An
 * entry names the device if its origin is
 *   - DEVNODE, /dev/LINK for one of the LINKs, or /dev/block/MAJ:MIN;
 *   - a path that already resolves to the device (a link of an earlier event);
 *   - PARTUUID= (in any case)/PARTLABEL= of its partition entry: read from the
 *     partition table with libblkid (--early: 60-persistent-storage's blkid
 *     has not run, and will not, for a member), or from the ID_PART_ENTRY_*
 *     properties that blkid left in the environment (--late).
 * The first entry that names the device wins.  With redcap=0 on the kernel
 * command line (as the generator reads it) no device is named.
 *
 * Output (udev's KEY=value; names with a dot are udev's own for the event
 * only, not kept in its database):
 *   REDCAP_NAME=NAME                  the entry (both modes)
 *   .REDCAP_UNIT=redcap@NAME.service  the unit to start (not for noauto)
 *   ID_PART_TABLE_*, ID_PART_ENTRY_*  --early: what blkid would have said of
 *                                     the partitions, for the by-partuuid and
 *                                     by-partlabel links
 *   .REDCAP_FIX_LINKS=1, .REDCAP_LINKS=...
 *                                     --late: the LINKs without the
 *                                     disk/by-uuid/ and disk/by-label/ ones,
 *                                     which name the filesystem, now the
 *                                     cache device's (only when one is there)
 * --late with REDCAP_NAME already in the environment (the early rule named
 * the device) prints only the last two.
 *
 * Nothing on no match; status 0 whatever happens, but for a wrong command
 * line (2): udev runs this for every block device and logs stderr only when
 * debugging.  It reads /etc/redcaptab (or --tab FILE, or $REDCAPTAB) and
 * never writes.
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "redcaptab.h"

#define PROG		"redcap-udev"
#define DEFAULT_TAB	"/etc/redcaptab"

struct entry {
	char name[RCTAB_NAME_MAX + 1];
	enum rctab_origin kind;
	char *origin;		/* a simplified path, or the PARTUUID=/PARTLABEL= value */
	bool noauto;
};

struct tab {
	struct entry *e;
	size_t nr, cap;
	const char *path;
};

/* The device the rule asks about. */
struct device {
	const char *devnode;
	char **links;		/* as given, each without a leading /dev/ */
	int nr_links;
	bool have_devt;
	dev_t devt;
	bool probed;		/* --early: its partitions were read (parts is valid) */
	char **parts;		/* --early: "ID_PART_...=value" lines, from libblkid */
	size_t nr_parts;
	const char *part_uuid;	/* ID_PART_ENTRY_UUID: libblkid's or the environment's */
	const char *part_name;	/* ID_PART_ENTRY_NAME, encoded as udev's blkid does */
};

static void usage(void)
{
	fputs("usage: " PROG " --early|--late [--tab FILE] DEVNODE [LINK...]\n", stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fputs(PROG ": out of memory\n", stderr);
		exit(0);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xrealloc(NULL, strlen(s) + 1), s);
}

/* --- the kernel command line -------------------------------------------- */

static void bad_switch(const char *word, void *arg)
{
	(void)arg;
	fprintf(stderr, PROG ": kernel command line: '%s' is not redcap=0 or redcap=1, ignored\n",
		word);
}

/* --- the table ----------------------------------------------------------- */

/* "/dev//disk/./by-id/x/" -> "/dev/disk/by-id/x", as systemd's path_simplify(). */
static char *simplify(const char *path)
{
	char *s = xstrdup(path), *out = s;
	const char *p = path;

	while (*p) {
		if (*p == '/') {
			while (*p == '/')
				p++;
			if (p[0] == '.' && (p[1] == '/' || !p[1])) {
				p++;
				continue;
			}
			*out++ = '/';
			continue;
		}
		*out++ = *p++;
	}
	if (out > s + 1 && out[-1] == '/')
		out--;
	if (out == s)
		*out++ = '/';
	*out = '\0';
	return s;
}

static void add_entry(const struct rctab_entry *re, void *arg)
{
	struct tab *t = arg;
	struct entry *e;

	if (t->nr == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->e = xrealloc(t->e, t->cap * sizeof(*t->e));
	}
	e = &t->e[t->nr++];
	strcpy(e->name, re->name);
	e->kind = re->origin_kind;
	e->origin = re->origin_kind == RCTAB_ORIGIN_PATH ? simplify(re->origin) : xstrdup(re->origin);
	e->noauto = re->noauto;
}

/* A bad line is the generator's and redcapctl's to report; udev logs this when debugging. */
static void bad_line(unsigned int line, const char *why, void *arg)
{
	const struct tab *t = arg;

	(void)line;
	fprintf(stderr, PROG ": %s: %s\n", t->path, why);
}

static void read_tab(struct tab *t)
{
	FILE *f = fopen(t->path, "re");

	if (!f) {
		if (errno != ENOENT)
			fprintf(stderr, PROG ": %s: %s\n", t->path, strerror(errno));
		return;
	}
	if (rctab_read(f, add_entry, bad_line, t) < 0)
		fprintf(stderr, PROG ": %s: %s\n", t->path, strerror(errno ? errno : EIO));
	fclose(f);
}

/* --- the device ---------------------------------------------------------- */

static bool sysfs_has(const struct device *d, const char *attr)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u%s%s", major(d->devt), minor(d->devt),
		 *attr ? "/" : "", attr);
	return !access(path, F_OK);
}

/*
 * One "KEY=value" line, the value encoded as udev's blkid builtin encodes
 * PART_ENTRY_NAME and PART_ENTRY_TYPE (a space is \x20); the other values
 * (UUIDs, numbers, scheme names) have nothing to encode.
 */
static void add_part(struct device *d, const char *key, const char *value)
{
	size_t len = strlen(key) + 1 + 4 * strlen(value) + 1;
	char *line = xrealloc(NULL, len);
	int n = sprintf(line, "%s=", key);

	if (blkid_encode_string(value, line + n, len - n) || !line[n]) {
		/* udev refuses an empty value */
		free(line);
		return;
	}
	d->parts = xrealloc(d->parts, (d->nr_parts + 1) * sizeof(*d->parts));
	d->parts[d->nr_parts++] = line;
	if (!strcmp(key, "ID_PART_ENTRY_UUID"))
		d->part_uuid = line + n;
	else if (!strcmp(key, "ID_PART_ENTRY_NAME"))
		d->part_name = line + n;
}

/*
 * --early: read the partition table as 60-persistent-storage's blkid builtin
 * would (no filesystems): for a partition its entry (PARTUUID, PARTLABEL, ...),
 * for a whole disk its table.  Only for a device sysfs knows (never opens
 * anything else), once.
 */
static void probe_parts(struct device *d)
{
	static const struct { const char *blkid, *udev; } names[] = {
		{ "PTTYPE", "ID_PART_TABLE_TYPE" }, { "PTUUID", "ID_PART_TABLE_UUID" },
	};
	const char *name, *data;
	char key[64];
	blkid_probe pr;
	int fd, i, n;
	size_t k;

	if (d->probed)
		return;
	d->probed = true;
	if (!d->have_devt || !sysfs_has(d, ""))
		return;
	fd = open(d->devnode, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0))
		goto out;
	blkid_probe_enable_superblocks(pr, 0);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
	if (blkid_do_safeprobe(pr) < 0)
		goto out;
	n = blkid_probe_numof_values(pr);
	for (i = 0; i < n; i++) {
		if (blkid_probe_get_value(pr, i, &name, &data, NULL))
			continue;
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (!strcmp(name, names[k].blkid))
				add_part(d, names[k].udev, data);
		if (!strncmp(name, "PART_ENTRY_", 11)) {
			snprintf(key, sizeof(key), "ID_%s", name);
			add_part(d, key, data);
		}
	}
out:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
}

/* Is /dev/@link (@link relative to /dev, or absolute) one of the device's links? */
static bool has_link(const struct device *d, const char *path)
{
	int i;

	if (strncmp(path, "/dev/", 5))
		return false;
	for (i = 0; i < d->nr_links; i++)
		if (!strcmp(d->links[i], path + 5))
			return true;
	return false;
}

static bool names_path(const struct device *d, const char *path)
{
	char block[64];
	struct stat st;

	if (!strcmp(path, d->devnode) || has_link(d, path))
		return true;
	if (!d->have_devt)
		return false;
	snprintf(block, sizeof(block), "/dev/block/%u:%u", major(d->devt), minor(d->devt));
	if (!strcmp(path, block))
		return true;
	/*
	 * A link of an earlier event (a change, the coldplug after the initrd).
	 * Only under /dev: a path elsewhere could be on a filesystem that hangs.
	 */
	return !strncmp(path, "/dev/", 5) && !stat(path, &st) && S_ISBLK(st.st_mode) &&
	       st.st_rdev == d->devt;
}

static bool names_part(struct device *d, const struct entry *e, bool early)
{
	char link[RCTAB_ORIGIN_MAX * 4 + 64], *l;
	bool uuid = e->kind == RCTAB_ORIGIN_PARTUUID;
	char enc[RCTAB_ORIGIN_MAX * 4 + 1];
	const char *have;

	/*
	 * Compared as udev keeps them: a partition name encoded (a space is
	 * \x20), a UUID in any case (blkid gives it in lower case, and the
	 * generator binds the unit to that by-partuuid link).
	 */
	if (blkid_encode_string(e->origin, enc, sizeof(enc)))
		return false;
	l = link + snprintf(link, sizeof(link), "/dev/disk/by-part%s/", uuid ? "uuid" : "label");
	snprintf(l, sizeof(link) - (l - link), "%s", enc);
	for (; uuid && *l; l++)
		if (*l >= 'A' && *l <= 'Z')
			*l += 'a' - 'A';
	if (has_link(d, link))
		return true;
	if (early && d->have_devt && sysfs_has(d, "partition"))
		probe_parts(d);
	have = uuid ? d->part_uuid : d->part_name;
	return have && (uuid ? !strcasecmp(have, enc) : !strcmp(have, enc));
}

static const struct entry *find_entry(struct tab *t, struct device *d, bool early)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		const struct entry *e = &t->e[i];

		if (e->kind == RCTAB_ORIGIN_PATH ? names_path(d, e->origin) : names_part(d, e, early))
			return e;
	}
	return NULL;
}

/* --- output -------------------------------------------------------------- */

/* The unit the generator makes for entry @name (rctab_unit_escape()). */
static void print_unit(const char *name)
{
	char inst[4 * RCTAB_NAME_MAX + 1];

	rctab_unit_escape(name, inst);
	printf(".REDCAP_UNIT=redcap@%s.service\n", inst);
}

/*
 * --late: the links without those that name the filesystem (by-uuid,
 * by-label), which the probes of 60-persistent-storage (for a device named by
 * a link made there), 60-persistent-storage-dm and 63-md-raid-arrays gave it;
 * the rule sets them (SYMLINK=, udev 252 has no SYMLINK-=).
 */
static void print_links(const struct device *d)
{
	bool dropped = false, first = true;
	int i;

	for (i = 0; i < d->nr_links; i++)
		if (!strncmp(d->links[i], "disk/by-uuid/", 13) ||
		    !strncmp(d->links[i], "disk/by-label/", 14))
			dropped = true;
	if (!dropped)
		return;
	puts(".REDCAP_FIX_LINKS=1");
	for (i = 0; i < d->nr_links; i++) {
		if (!strncmp(d->links[i], "disk/by-uuid/", 13) ||
		    !strncmp(d->links[i], "disk/by-label/", 14) || !*d->links[i])
			continue;
		printf("%s%s", first ? ".REDCAP_LINKS=" : " ", d->links[i]);
		first = false;
	}
	if (!first)
		putchar('\n');
}

int main(int argc, char **argv)
{
	struct tab tab = { .path = getenv("REDCAPTAB") };
	struct device dev = { 0 };
	const struct entry *e;
	const char *known;
	struct stat st;
	bool early;
	int i = 1;
	size_t k;

	if (argc < 3)
		usage();
	if (!strcmp(argv[i], "--early"))
		early = true;
	else if (!strcmp(argv[i], "--late"))
		early = false;
	else
		usage();
	i++;
	if (!strcmp(argv[i], "--tab")) {
		if (i + 2 >= argc)
			usage();
		tab.path = argv[i + 1];
		i += 2;
	}
	if (!tab.path || !*tab.path)
		tab.path = DEFAULT_TAB;
	dev.devnode = argv[i++];
	dev.links = argv + i;
	dev.nr_links = argc - i;
	for (k = 0; k < (size_t)dev.nr_links; k++)
		if (!strncmp(dev.links[k], "/dev/", 5))
			dev.links[k] += 5;
	if (!stat(dev.devnode, &st) && S_ISBLK(st.st_mode)) {
		dev.have_devt = true;
		dev.devt = st.st_rdev;
	}

	known = getenv("REDCAP_NAME");
	if (!early && known && *known) {
		print_links(&dev);
		return 0;
	}
	if (!rctab_enabled_by_cmdline(bad_switch, NULL))
		return 0;
	read_tab(&tab);
	if (!early) {
		dev.part_uuid = getenv("ID_PART_ENTRY_UUID");
		dev.part_name = getenv("ID_PART_ENTRY_NAME");
	}
	e = find_entry(&tab, &dev, early);
	if (!e)
		return 0;

	printf("REDCAP_NAME=%s\n", e->name);
	if (!e->noauto)
		print_unit(e->name);
	if (early) {
		probe_parts(&dev);
		for (k = 0; k < dev.nr_parts; k++)
			puts(dev.parts[k]);
	} else {
		print_links(&dev);
	}
	return 0;
}

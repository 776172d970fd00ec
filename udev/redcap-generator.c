// SPDX-License-Identifier: GPL-2.0
/*
 * redcap-generator: a systemd generator (systemd.generator(7)) that turns
 * each entry of /etc/redcaptab (redcaptab(5)) into units, as
 * systemd-cryptsetup-generator does for /etc/crypttab (docs/boot.rst):
 *
 *   redcap@NAME.service        redcapctl start/stop NAME, bound to the
 *                              origin's device unit, before
 *                              blockdev@dev-mapper-NAME.target;
 *   redcap-model@NAME.service  model and hot set load at start (once
 *                              /var/lib/redcap is mounted), save at stop,
 *                              and the hourly redcap-model-save@NAME.timer
 *                              (static units); nomodel: the hot set only;
 *
 * and the symlinks and drop-ins that pull them in.  Called with the normal,
 * early and late generator directories; only the normal one is used.
 * "redcap=0" on the kernel command line disables it.  A bad line is reported
 * (in the kernel log at boot, see log_open()) and the other lines still make
 * units; the exit status is 1 only when units could not be written or the
 * table could not be read.
 *
 * For the tests: REDCAPTAB names the table; SYSTEMD_PROC_CMDLINE replaces
 * the kernel command line, SYSTEMD_IN_INITRD says whether this is the
 * initrd and SYSTEMD_LOG_TARGET where messages go, as for systemd's own
 * generators; REDCAPCTL replaces the path of redcapctl in the units.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "redcaptab.h"

#ifndef REDCAPCTL
#define REDCAPCTL "/usr/sbin/redcapctl"
#endif
/* Where the static units are: the wants symlink of an instance points there. */
#ifndef SYSTEMD_UNIT_DIR
#define SYSTEMD_UNIT_DIR "/lib/systemd/system"
#endif
#define DEFAULT_TAB	"/etc/redcaptab"
#define MODEL_DIR	"/var/lib/redcap"
#define PROG		"redcap-generator"
/* systemd's UNIT_NAME_MAX, with the NUL. */
#define UNIT_NAME_MAX	256

struct gen {
	int dir;			/* the normal generator directory */
	const char *dir_name;
	const char *tab;		/* the table's path */
	const char *redcapctl;
	bool write_failed;
	/* The origin device units given a timeout, to set each one once. */
	struct timeout_seen { char *unit; char *timeout; unsigned int line; } *timeouts;
	size_t nr_timeouts;
};

/*
 * Messages: systemd does not log what a generator writes to stderr, so at
 * boot they go to /dev/kmsg, whence journald takes them (journalctl -b -t
 * redcap-generator), as systemd's own generators do: SYSTEMD_LOG_TARGET=
 * console, or an unset target and stderr a terminal, is stderr; otherwise
 * /dev/kmsg if it opens, else stderr.
 */
static int kmsg = -1;

static void log_open(void)
{
	const char *target = getenv("SYSTEMD_LOG_TARGET");

	if (target && !strcmp(target, "console"))
		return;
	if ((!target || !strcmp(target, "auto")) && isatty(STDERR_FILENO))
		return;
	kmsg = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC);
}

/* @level: LOG_ERR (3) or LOG_WARNING (4), for the kernel log. */
static void say_at(int level, const char *fmt, va_list ap)
{
	char msg[2048], rec[2100];
	int n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/*
	 * One write() per record, as /dev/kmsg wants; not dprintf(), whose
	 * lseek(SEEK_CUR) /dev/kmsg refuses with EINVAL, so that glibc gives
	 * up before writing anything.
	 */
	n = snprintf(rec, sizeof(rec), "<%d>" PROG "[%ld]: %s\n", level, (long)getpid(), msg);
	if (kmsg < 0 || n < 0 || write(kmsg, rec, (size_t)n < sizeof(rec) ? (size_t)n : sizeof(rec) - 1) < 0)
		fprintf(stderr, PROG ": %s\n", msg);
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_at(3, fmt, ap);
	va_end(ap);
}

static void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_at(4, fmt, ap);
	va_end(ap);
}

/* --- names ---------------------------------------------------------------- */

/*
 * systemd-escape --path: the path simplified (no empty or "." components),
 * its slashes at either end dropped, escaped.  A ".." component makes it
 * refuse, as systemd does.  @out has room for 4 * strlen(@path) + 2.
 */
static int path_escape(const char *path, char *out)
{
	char *copy = strdup(path), *save, *c, *simple;
	size_t n = 0;

	if (!copy)
		return -1;
	simple = malloc(strlen(path) + 1);
	if (!simple) {
		free(copy);
		return -1;
	}
	simple[0] = '\0';
	for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			free(copy);
			free(simple);
			return -1;
		}
		n += sprintf(simple + n, "%s%s", n ? "/" : "", c);
	}
	if (n)
		rctab_unit_escape(simple, out);
	else
		strcpy(out, "-");
	free(copy);
	free(simple);
	return 0;
}

/* The length of the valid UTF-8 character at @s (2 to 4), or 0. */
static int utf8_char(const unsigned char *s)
{
	unsigned int cp, len, i, min;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * udev's encoding of a link name (systemd's encode_devnode_name(), libblkid's
 * blkid_encode_string(), which name /dev/disk/by-partlabel/...): valid UTF-8
 * and [A-Za-z0-9#+-.:=@_] as they are, any other byte as \xNN.
 */
static void devnode_encode(const char *s, char *out)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789#+-.:=@_";
	int len;

	while (*s) {
		len = utf8_char((const unsigned char *)s);
		if (len) {
			memcpy(out, s, len);
			out += len;
			s += len;
		} else if (strchr(plain, *s)) {
			*out++ = *s++;
		} else {
			out += sprintf(out, "\\x%02x", (unsigned char)*s++);
		}
	}
	*out = '\0';
}

/* The udev link an origin stands for: the path, or /dev/disk/by-part... */
static char *origin_path(const struct rctab_entry *e)
{
	char *path, *p;

	if (e->origin_kind == RCTAB_ORIGIN_PATH)
		return strdup(e->origin);
	path = malloc(sizeof("/dev/disk/by-partlabel/") + 4 * strlen(e->origin));
	if (!path)
		return NULL;
	if (e->origin_kind == RCTAB_ORIGIN_PARTUUID) {
		/* udev's links carry blkid's lower-case form of the UUID. */
		p = path + sprintf(path, "/dev/disk/by-partuuid/");
		devnode_encode(e->origin, p);
		for (; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p += 'a' - 'A';
	} else {
		p = path + sprintf(path, "/dev/disk/by-partlabel/");
		devnode_encode(e->origin, p);
	}
	return path;
}

/* @s with systemd's specifier character doubled, for a unit file's value. */
static char *specifier_escape(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == '%')
			*o++ = '%';
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* --- files ---------------------------------------------------------------- */

static void write_error(struct gen *g, const char *file)
{
	say("%s/%s: %s", g->dir_name, file, strerror(errno));
	g->write_failed = true;
}

/* mkdir @sub in the generator directory, if it is not there. */
static int make_dir(struct gen *g, const char *sub)
{
	if (mkdirat(g->dir, sub, 0755) && errno != EEXIST) {
		write_error(g, sub);
		return -1;
	}
	return 0;
}

/* A new file @name, with @text (written whole, or an error said). */
static void write_file(struct gen *g, const char *name, const char *text)
{
	size_t len = strlen(text), done = 0;
	ssize_t n;
	int fd;

	fd = openat(g->dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		write_error(g, name);
		return;
	}
	while (done < len) {
		n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EIO;
			write_error(g, name);
			break;
		}
		done += n;
	}
	if (close(fd) && done == len)
		write_error(g, name);
}

/* @unit.@kind/@link -> @target: "wants" or "requires" of @unit. */
static void add_link(struct gen *g, const char *unit, const char *kind, const char *link,
		     const char *target)
{
	char dir[UNIT_NAME_MAX + 16], path[2 * UNIT_NAME_MAX + 16];

	snprintf(dir, sizeof(dir), "%s.%s", unit, kind);
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	if (make_dir(g, dir))
		return;
	if (symlinkat(target, g->dir, path))
		write_error(g, path);
}

/* A growing text; NULL once out of memory. */
struct text { char *s; size_t len, cap; };

static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char *grown;
	int n;

	if (!t->s && t->cap)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			break;
		if (t->s && t->len + n < t->cap) {
			t->len += n;
			return;
		}
		t->cap = 2 * (t->len + n + 256);
		grown = realloc(t->s, t->cap);
		if (!grown)
			break;
		t->s = grown;
	}
	free(t->s);
	t->s = NULL;
	t->cap = 1;
}

/*
 * An argument of an Exec line: as it is if it holds nothing systemd would
 * read otherwise, else in double quotes with \, ", % and $ escaped.
 */
static void add_exec_arg(struct text *t, const char *arg)
{
	const char *p;

	if (*arg && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789/._+-=:,@") == strlen(arg)) {
		add(t, " %s", arg);
		return;
	}
	add(t, " \"");
	for (p = arg; *p; p++) {
		if (*p == '\\' || *p == '"')
			add(t, "\\%c", *p);
		else if (*p == '%' || *p == '$')
			add(t, "%c%c", *p, *p);
		else
			add(t, "%c", *p);
	}
	add(t, "\"");
}

/* " --tab FILE" when the table is not the default one. */
static void add_tab_arg(const struct gen *g, struct text *t)
{
	if (strcmp(g->tab, DEFAULT_TAB)) {
		add(t, " --tab");
		add_exec_arg(t, g->tab);
	}
}

/* --- one entry ------------------------------------------------------------ */

/*
 * The origin's device unit gets @e's x-systemd.device-timeout=, once: a
 * second entry over the same device keeps the first one's, with a note.
 */
static void device_timeout(struct gen *g, const struct rctab_entry *e, const char *dev_unit)
{
	char dir[UNIT_NAME_MAX + 8], path[UNIT_NAME_MAX + 64];
	struct timeout_seen *seen, *grown;
	const char *value = e->device_timeout_us == UINT64_MAX ? "infinity" : e->device_timeout;
	struct text t = { 0 };
	size_t i;

	for (i = 0; i < g->nr_timeouts; i++) {
		seen = &g->timeouts[i];
		if (strcmp(seen->unit, dev_unit))
			continue;
		if (strcmp(seen->timeout, value))
			warn("%s: line %u: x-systemd.device-timeout=%s left out: line %u gives "
			    "the same origin x-systemd.device-timeout=%s", g->tab, e->line,
			    e->device_timeout, seen->line, seen->timeout);
		return;
	}
	grown = realloc(g->timeouts, (g->nr_timeouts + 1) * sizeof(*grown));
	if (!grown)
		return;
	g->timeouts = grown;
	seen = &g->timeouts[g->nr_timeouts];
	seen->unit = strdup(dev_unit);
	seen->timeout = strdup(value);
	seen->line = e->line;
	if (!seen->unit || !seen->timeout) {
		free(seen->unit);
		free(seen->timeout);
		return;
	}
	g->nr_timeouts++;

	snprintf(dir, sizeof(dir), "%s.d", dev_unit);
	snprintf(path, sizeof(path), "%s/40-redcap-device-timeout.conf", dir);
	add(&t, "# Automatically generated by " PROG "\n"
	    "# from x-systemd.device-timeout=%s of %s, line %u\n\n"
	    "[Unit]\nJobRunningTimeoutSec=%s\n", e->device_timeout, g->tab, e->line, value);
	if (t.s && !make_dir(g, dir))
		write_file(g, path, t.s);
	free(t.s);
}

static void entry(const struct rctab_entry *e, void *arg)
{
	struct gen *g = arg;
	char inst[4 * RCTAB_NAME_MAX + 1], mapper[sizeof("/dev/mapper/") + RCTAB_NAME_MAX];
	char *origin = origin_path(e), *dev_unit = NULL, *blockdev = NULL, *shown = NULL;
	char unit[4 * RCTAB_NAME_MAX + 32], model[4 * RCTAB_NAME_MAX + 32];
	char timer[4 * RCTAB_NAME_MAX + 32];
	char target[4 * RCTAB_NAME_MAX + 64], mapper_dev[UNIT_NAME_MAX + 16];
	struct text t = { 0 };

	if (!origin)
		goto oom;
	dev_unit = malloc(4 * strlen(origin) + 16);
	blockdev = malloc(4 * sizeof(mapper) + 32);
	/*
	 * The description names the origin: when it never comes, systemd's
	 * "Dependency failed for ..." line says which device the stack lacked.
	 */
	shown = specifier_escape(origin);
	if (!dev_unit || !blockdev || !shown)
		goto oom;

	/* The names, all checked before anything is written. */
	rctab_unit_escape(e->name, inst);
	snprintf(mapper, sizeof(mapper), "/dev/mapper/%s", e->name);
	strcpy(blockdev, "blockdev@");
	path_escape(mapper, blockdev + strlen(blockdev));
	strcat(blockdev, ".target");
	if (path_escape(origin, dev_unit)) {
		say("%s: line %u: origin '%s' has a '..' component, which no device unit "
		    "names: write the path without it", g->tab, e->line, e->origin);
		goto out;
	}
	strcat(dev_unit, ".device");
	if (strlen(dev_unit) >= UNIT_NAME_MAX) {
		say("%s: line %u: origin '%s' is too long for a systemd device unit name "
		    "(%zu characters once escaped, at most %d)", g->tab, e->line, e->origin,
		    strlen(dev_unit), UNIT_NAME_MAX - 1);
		goto out;
	}
	snprintf(unit, sizeof(unit), "redcap@%s.service", inst);
	snprintf(model, sizeof(model), "redcap-model@%s.service", inst);
	snprintf(timer, sizeof(timer), "redcap-model-save@%s.timer", inst);
	/* blockdev@dev-mapper-NAME.target is the longest name NAME makes. */
	if (strlen(blockdev) >= UNIT_NAME_MAX) {
		say("%s: line %u: name '%s' makes unit names too long for systemd "
		    "(%s: %zu characters, at most %d)", g->tab, e->line, e->name, blockdev,
		    strlen(blockdev), UNIT_NAME_MAX - 1);
		goto out;
	}

	/* redcap@NAME.service */
	add(&t, "# Automatically generated by " PROG "\n# from %s, line %u\n\n", g->tab,
	    e->line);
	add(&t, "[Unit]\n"
	    "Description=redcap stack %s over %s\n"
	    "Documentation=man:redcaptab(5) man:redcapctl(8) man:redcap-generator(8)\n"
	    "SourcePath=%s\n"
	    "DefaultDependencies=no\n"
	    "IgnoreOnIsolate=true\n"
	    "After=systemd-udevd-kernel.socket systemd-modules-load.service\n"
	    "BindsTo=%s\n"
	    "After=%s\n"
	    "Before=%s\n"
	    "Wants=%s\n", e->name, shown, g->tab, dev_unit, dev_unit, blockdev, blockdev);
	if (!e->nofail)
		add(&t, "Before=redcap.target\n");
	add(&t, "Conflicts=umount.target\n"
	    "Before=umount.target\n\n"
	    "[Service]\n"
	    "Type=oneshot\n"
	    "RemainAfterExit=yes\n"
	    "TimeoutSec=2min\n"
	    "ExecStart=%s start %s", g->redcapctl, e->name);
	add_tab_arg(g, &t);
	/*
	 * An initramfs entry's stack was built before the root was mounted,
	 * linear if the initramfs could not load the module: swap the cache
	 * in now.  It holds the root (or what the initramfs mounted), which
	 * stays mounted to the end: nothing stops it.
	 */
	if (e->initramfs) {
		add(&t, "\nExecStart=%s upgrade %s", g->redcapctl, e->name);
		add_tab_arg(g, &t);
		add(&t, "\n");
	} else {
		add(&t, "\nExecStop=%s stop %s\n", g->redcapctl, e->name);
	}
	if (!t.s)
		goto oom;
	write_file(g, unit, t.s);
	snprintf(target, sizeof(target), "../%s", unit);
	if (!e->noauto)
		add_link(g, "redcap.target", "wants", unit, target);
	/* A mount of /dev/mapper/NAME pulls the stack in, noauto or not. */
	snprintf(mapper_dev, sizeof(mapper_dev), "%.*s.device",
		 (int)(strlen(blockdev) - strlen("blockdev@") - strlen(".target")),
		 blockdev + strlen("blockdev@"));
	add_link(g, mapper_dev, "requires", unit, target);

	if (e->device_timeout[0])
		device_timeout(g, e, dev_unit);

	/*
	 * redcap-model@NAME.service, and its hourly save: the model's tables
	 * (unless nomodel) and the hot set, the state a restart keeps.
	 */
	free(t.s);
	t = (struct text){ 0 };
	add(&t, "# Automatically generated by " PROG "\n# from %s, line %u\n\n", g->tab,
	    e->line);
	add(&t, "[Unit]\n"
	    "Description=redcap %s of %s\n"
	    "Documentation=man:redcapctl(8)\n"
	    "SourcePath=%s\n"
	    "DefaultDependencies=no\n"
	    "IgnoreOnIsolate=true\n"
	    "BindsTo=%s\n"
	    "After=%s\n"
	    "RequiresMountsFor=" MODEL_DIR "\n"
	    "Conflicts=umount.target\n"
	    "Before=umount.target\n\n"
	    "[Service]\n"
	    "Type=oneshot\n"
	    "RemainAfterExit=yes\n", e->nomodel ? "hot set" : "model tables and hot set", e->name, g->tab, unit,
	    unit);
	if (!e->nomodel)
		add(&t, "ExecStart=%s model load --if-present %s\n", g->redcapctl, e->name);
	add(&t, "ExecStart=%s hot load --if-present %s\n"
	    "ExecStop=%s hot save --if-present %s\n", g->redcapctl, e->name, g->redcapctl,
	    e->name);
	if (!e->nomodel)
		add(&t, "ExecStop=%s model save --if-present %s\n", g->redcapctl, e->name);
	if (!t.s)
		goto oom;
	write_file(g, model, t.s);
	snprintf(target, sizeof(target), "../%s", model);
	add_link(g, unit, "wants", model, target);
	add_link(g, model, "wants", timer, SYSTEMD_UNIT_DIR "/redcap-model-save@.timer");
	goto out;
oom:
	say("%s: line %u: out of memory", g->tab, e->line);
	g->write_failed = true;
out:
	free(t.s);
	free(origin);
	free(shown);
	free(dev_unit);
	free(blockdev);
}

static void bad(unsigned int line, const char *why, void *arg)
{
	struct gen *g = arg;

	(void)line;
	say("%s: %s", g->tab, why);
}

/* --- switches ------------------------------------------------------------- */

static void bad_switch(const char *word, void *arg)
{
	(void)arg;
	warn("kernel command line: '%s' is not redcap=0 or redcap=1, ignored", word);
}

/*
 * In the initrd there is no redcapctl nor module (and no root-filesystem
 * caching yet): nothing to do there.  SYSTEMD_IN_INITRD overrides, as for
 * systemd's own generators.
 */
static bool in_initrd(void)
{
	const char *env = getenv("SYSTEMD_IN_INITRD");

	if (env && rctab_parse_boolean(env) >= 0)
		return rctab_parse_boolean(env);
	return !access("/etc/initrd-release", F_OK);
}

int main(int argc, char **argv)
{
	struct gen g = { .dir = -1 };
	FILE *f;
	size_t i;
	int r;

	if (argc != 2 && argc != 4) {
		say("usage: " PROG " NORMAL-DIR [EARLY-DIR LATE-DIR]");
		return 1;
	}
	umask(022);
	log_open();
	if (in_initrd() || !rctab_enabled_by_cmdline(bad_switch, NULL))
		return 0;

	g.tab = getenv("REDCAPTAB") && *getenv("REDCAPTAB") ? getenv("REDCAPTAB") : DEFAULT_TAB;
	g.redcapctl = getenv("REDCAPCTL") && *getenv("REDCAPCTL") ? getenv("REDCAPCTL")
								 : REDCAPCTL;
	f = fopen(g.tab, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		say("%s: %s", g.tab, strerror(errno));
		return 1;
	}
	g.dir_name = argv[1];
	g.dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g.dir < 0) {
		say("%s: %s", argv[1], strerror(errno));
		fclose(f);
		return 1;
	}
	r = rctab_read(f, entry, bad, &g);
	if (r < 0) {
		say("%s: %s", g.tab, strerror(errno ? errno : EIO));
		g.write_failed = true;
	}
	fclose(f);
	close(g.dir);
	for (i = 0; i < g.nr_timeouts; i++) {
		free(g.timeouts[i].unit);
		free(g.timeouts[i].timeout);
	}
	free(g.timeouts);
	return g.write_failed ? 1 : 0;
}

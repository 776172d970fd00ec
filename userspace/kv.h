/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The key=value lines of a target's answer (its "stats", "chosen", ...),
 * split in place: for dmctl.c's answers and metrics.c's scrape alike.
 */
#ifndef REDCAP_KV_H
#define REDCAP_KV_H

#include <string.h>

/*
 * The next line of *@text that is not empty, ended in place, *@text moved
 * past it: 1 with *@key and *@val when it is key=value (its '=' ended
 * too), -1 with the line in *@key when it is not, 0 at the end.
 */
static inline int kv_next(char **text, char **key, char **val)
{
	char *line, *eq;

	do {
		line = *text;
		if (!*line)
			return 0;
		*text = line + strcspn(line, "\n");
		if (**text)
			*(*text)++ = '\0';
	} while (!*line);
	*key = line;
	eq = strchr(line, '=');
	if (!eq || eq == line)
		return -1;
	*eq = '\0';
	*val = eq + 1;
	return 1;
}

#endif

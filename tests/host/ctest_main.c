// SPDX-License-Identifier: GPL-2.0
/*
 * Entry point of every host unit-test binary: "--list" prints the test
 * names, "<name>" runs one test (exit 0 = pass), no argument runs all.
 */
#include "ctest.h"

struct ctest ctest_table[CTEST_MAX];
int ctest_count;

int main(int argc, char **argv)
{
	int i, ran = 0;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < ctest_count; i++)
			printf("%s\n", ctest_table[i].name);
		return 0;
	}
	for (i = 0; i < ctest_count; i++) {
		if (argc == 2 && strcmp(argv[1], ctest_table[i].name))
			continue;
		ctest_table[i].fn();
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "no such test: %s\n", argc == 2 ? argv[1] : "(none)");
		return 2;
	}
	return 0;
}

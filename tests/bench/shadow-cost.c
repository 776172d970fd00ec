// SPDX-License-Identifier: GPL-2.0
/*
 * What the shadow caches cost a read on the host: rc_shadow_read() of
 * 4 KiB reads, half over 16 GiB at random, half over twice the cache's RAM
 * (the fills are counted, and priced only by rc_shadow_eval()).
 *
 *   gcc -O2 -Iinclude -Idm-redcap -Itests/host tests/bench/shadow-cost.c dm-redcap/rc-shadow.c \
 *       -o build/shadow-cost && build/shadow-cost 64 1024 16384
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctest.h"		/* its reproducible random numbers */
#include "rc-shadow.h"

int main(int argc, char **argv)
{
	const u64 span = 16ULL << 21, n = 4000000;
	struct timespec a, b;
	int i;

	for (i = 1; i < argc; i++) {
		u64 ram = strtoull(argv[i], NULL, 0) << 20, j, sector;
		size_t sz = rc_shadow_mem_size(ram, RC_SHADOW_ENTRIES);
		struct rc_shadow sh;
		void *mem = malloc(sz);

		if (!sz || !mem || rc_shadow_init(&sh, mem, ram, RC_SHADOW_ENTRIES))
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (j = 0; j < n; j++) {
			sector = j % 2 ? ctest_rand64() % (span / 8) * 8 : ctest_rand64() % ((ram >> 9) * 2 / 8) * 8;
			rc_shadow_read(&sh, sector, 8, 12345, 5000000, 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%6llu MiB: %zu bytes of shadows, %.1f ns a read\n",
		       (unsigned long long)(ram >> 20), sz,
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
		free(mem);
	}
	return 0;
}

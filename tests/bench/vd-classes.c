// SPDX-License-Identifier: GPL-2.0
/*
 * What the emulated drive charges against what the model prices, per
 * request class (2026-12-06-counterfactual-sim.md): a csv trace's processes
 * replayed round-robin (closed loops on a FIFO drive: the order the bare
 * disk serves them), or one after another ("serial"), through vd-drive.c,
 * and priced by vd-model.c frozen on saved tables with the kernel's
 * distance rule; aggregated by (row, column, the drive cache's outcome).
 *
 * cc -O2 -w -Iinclude -Idm-redcap -Idm-vdisk-model -o vd-classes \
 *    tests/bench/vd-classes.c dm-vdisk-model/vd-drive.c dm-vdisk-model/vd-model.c
 * usage: vd-classes TABLES PROFILE TRACE.csv CAPACITY [serial]   (ALL=1: every class)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vd-drive.h"
#include "vd-model.h"

#define MAXP 16
struct req { unsigned long long s; unsigned n; };
static struct req *q[MAXP]; static size_t qn[MAXP], qc[MAXP];
struct agg { unsigned long long cnt; double charged, priced; };
static struct agg A[64][1000][3];

int main(int argc, char **argv)
{
	const char *tables = argv[1], *prof_name = argv[2], *trace = argv[3];
	unsigned long long cap = strtoull(argv[4], 0, 10);
	int rows = 64, np = 0;
	struct vd_model m; struct vd_drive d; struct vd_seek sk; char line[4096];
	const struct vd_drive_profile *pr = vd_drive_profile(prof_name);
	void *mem = calloc(1, vd_model_mem_size(cap, rows, 1u << 20));
	FILE *f;

	memset(&sk, 0, sizeof(sk));
	if (vd_model_init(&m, mem, cap, rows, 1u << 20)) return 1;
	f = fopen(tables, "r");
	while (fgets(line, sizeof line, f)) {
		char *p = line, *tok; int row; char dir;
		if (line[0] != 'r' && line[0] != 'w') continue;
		dir = line[0]; strtok(p, " \n"); row = atoi(strtok(NULL, " \n"));
		while ((tok = strtok(NULL, " \n"))) {
			unsigned col, n; unsigned long long sum;
			sscanf(tok, "%u:%u:%llu", &col, &n, &sum);
			vd_model_set_cell(&m, dir == 'r' ? VD_READ : VD_WRITE, row, col, n, sum);
		}
	}
	fclose(f);
	vd_drive_init(&d, &pr->p, cap, cap, 1);
	f = fopen(trace, "r"); fgets(line, sizeof line, f);
	while (fgets(line, sizeof line, f)) {
		unsigned long long t, s; int pid; char op; unsigned n;
		sscanf(line, "%llu,%d,%c,%llu,%u", &t, &pid, &op, &s, &n);
		pid--; if (pid >= np) np = pid + 1;
		if (qn[pid] == qc[pid]) { qc[pid] = qc[pid] ? 2 * qc[pid] : 1024; q[pid] = realloc(q[pid], qc[pid] * sizeof(struct req)); }
		q[pid][qn[pid]++] = (struct req){ s, n };
	}
	size_t idx[MAXP] = { 0 }; int left = np; unsigned long long now = 0;
	double tc = 0, tp = 0;
	int serial = argc > 5 && !strcmp(argv[5], "serial");
	while (left) {
		left = 0;
		for (int p = 0; p < np; p++) {
			if (idx[p] >= qn[p]) continue;
			if (serial) { int e = 0; for (int k = 0; k < p; k++) if (idx[k] < qn[k]) e = 1; if (e) { left = 1; continue; } }
			left = 1;
			struct req r = q[p][idx[p]++];
			unsigned long long svc, h0 = d.st.cache_hits, r0 = d.st.ra_hits, ns = 0;
			now = vd_drive_submit(&d, VD_READ, r.s, r.n, now, &svc);
			int out = d.st.cache_hits > h0 ? 0 : d.st.ra_hits > r0 ? 1 : 2;
			long long dist = vd_seek_distance(&sk, r.s);
			vd_model_estimate(&m, VD_READ, dist, r.n, &ns);
			vd_seek_note(&sk, r.s + r.n);
			unsigned row = vd_model_row(&m, r.n), col = vd_model_col(&m, dist);
			struct agg *a = &A[row][col < m.fwd_cols ? col : 500 + col - m.fwd_cols][out];
			a->cnt++; a->charged += svc; a->priced += ns; tc += svc; tp += ns;
		}
	}
	printf("total charged %.3f s priced %.3f s (%+.1f %%)\n", tc / 1e9, tp / 1e9, 100 * (tp / tc - 1));
	printf("row(KiB) col outcome count charged_ms_mean priced_ms_mean share_of_charged diff_s\n");
	for (int r = 0; r < 64; r++) for (int c = 0; c < 1000; c++) for (int o = 0; o < 3; o++) {
		struct agg *a = &A[r][c][o];
		if (!a->cnt || (a->charged < tc * 0.01 && a->priced < tp * 0.01 && a->cnt * 100 < 1)) continue;
		if (!getenv("ALL") && a->charged < tc * 0.005 && a->priced < tc * 0.005) continue;
		char cl[16]; if (c >= 500) snprintf(cl, 16, "b%d", c - 500 + 1); else snprintf(cl, 16, "%d", c);
		printf("%3dK %4s %s %7llu %7.2f %7.2f %5.1f%% %+8.2f\n", (r + 1) * 4, cl, o == 0 ? "hit " : o == 1 ? "ra  " : "miss",
		       a->cnt, a->charged / a->cnt / 1e6, a->priced / a->cnt / 1e6, 100 * a->charged / tc, (a->priced - a->charged) / 1e9);
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of userspace/modsig.c: a kernel's Secure Boot state read
 * from a directory laid out as /sys, and redcapctl check's exact lines on
 * redcap's modules and their signatures.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>

#include "ctest.h"
#include "modsig.h"

#define SB_VAR "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aa0d-00e098032b8c"

static char root[64];

static void put(const char *path, const void *data, size_t len)
{
	char p[512], cmd[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, path);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	CHECK_EQ(system(cmd), 0);
	f = fopen(p, "wb");
	CHECK(f);
	CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void fresh_root(void)
{
	char cmd[128];

	if (root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		CHECK_EQ(system(cmd), 0);
	}
	strcpy(root, "/tmp/modsig_test.XXXXXX");
	CHECK(mkdtemp(root));
}

static const char *kernel_line(struct modsig_kernel *k)
{
	static char msg[256];

	modsig_kernel_read(root, k);
	CHECK_EQ(modsig_kernel_finding(k, msg, sizeof(msg)), MODSIG_OK);
	return msg;
}

CTEST(modsig_reads_the_kernels_state)
{
	static const char on[] = { 6, 0, 0, 0, 1 }, off[] = { 6, 0, 0, 0, 0 };
	struct modsig_kernel k;
	char cmd[128];

	fresh_root();
	CHECK_STREQ(kernel_line(&k), "Secure Boot: off (not a UEFI boot); this kernel loads "
		    "unsigned modules too");
	CHECK_EQ(k.secure_boot, -1);
	put(SB_VAR, off, sizeof(off));
	put("/sys/kernel/security/lockdown", "[none] integrity confidentiality\n", 33);
	CHECK_STREQ(kernel_line(&k), "Secure Boot: off; this kernel loads unsigned modules too");
	CHECK(!k.enforced && !strcmp(k.lockdown, "none"));
	put("/sys/module/module/parameters/sig_enforce", "Y\n", 2);
	CHECK_STREQ(kernel_line(&k), "Secure Boot: off; this kernel loads signed modules only "
		    "(module.sig_enforce=1)");
	put(SB_VAR, on, sizeof(on));
	put("/sys/module/module/parameters/sig_enforce", "N\n", 2);
	put("/sys/kernel/security/lockdown", "none [integrity] confidentiality\n", 33);
	CHECK_STREQ(kernel_line(&k), "Secure Boot: on; this kernel loads signed modules only "
		    "(lockdown: integrity)");
	CHECK(k.enforced && k.secure_boot == 1);
	/* A variable too short to say: as if absent, under an EFI boot. */
	put(SB_VAR, on, 3);
	kernel_line(&k);
	CHECK_EQ(k.secure_boot, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ(system(cmd), 0);
	root[0] = '\0';
}

CTEST(modsig_says_what_an_unsigned_module_needs_where_signatures_are_enforced)
{
	struct modsig_kernel enforcing = { .secure_boot = 1, .enforced = true,
					   .lockdown = "integrity" };
	struct modsig_kernel open = { .secure_boot = 0 };
	char msg[512];

	CHECK_EQ(modsig_module_finding("dm-redcap", "DKMS module signing key", &enforcing, msg,
				       sizeof(msg)), MODSIG_OK);
	CHECK_STREQ(msg, "dm-redcap: signed by 'DKMS module signing key' (its certificate must be "
		    "enrolled: for DKMS's, mokutil --import /var/lib/dkms/mok.pub)");
	CHECK_EQ(modsig_module_finding("dm-redcap", "DKMS module signing key", &open, msg,
				       sizeof(msg)), MODSIG_OK);
	CHECK_STREQ(msg, "dm-redcap: signed by 'DKMS module signing key'");
	CHECK_EQ(modsig_module_finding("dm-vdisk", NULL, &open, msg, sizeof(msg)), MODSIG_OK);
	CHECK_STREQ(msg, "dm-vdisk: not signed, which this kernel allows");
	CHECK_EQ(modsig_module_finding("dm-vdisk", "", &enforcing, msg, sizeof(msg)),
		 MODSIG_PROBLEM);
	CHECK_STREQ(msg, "dm-vdisk: not signed, and this kernel loads signed modules only: DKMS "
		    "signs the modules it builds with /var/lib/dkms/mok.key (apt install openssl, "
		    "then dkms install --force redcap/VERSION -k $(uname -r)); enrol its "
		    "certificate: mokutil --import /var/lib/dkms/mok.pub, reboot, and confirm it "
		    "in MokManager");
}

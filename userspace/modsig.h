/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Secure Boot and redcap's modules, for redcapctl check: whether this
 * kernel loads signed modules only, and what check says of a module's
 * signature.  The readers take a root directory ("" on a machine, a
 * directory of files in the tests).
 */
#ifndef MODSIG_H
#define MODSIG_H

#include <stdbool.h>
#include <stddef.h>

enum modsig_verdict { MODSIG_OK, MODSIG_WARNING, MODSIG_PROBLEM };

struct modsig_kernel {
	int secure_boot;	/* 1 on, 0 off, -1 unknown (no EFI variable: not UEFI) */
	bool enforced;		/* signed modules only: lockdown, or module.sig_enforce */
	bool sig_enforce;	/* module.sig_enforce=1 */
	char lockdown[32];	/* the lockdown mode in force, "" if the kernel has none */
};

/*
 * What the kernel under @root says: the SecureBoot EFI variable,
 * /sys/kernel/security/lockdown and /sys/module/module/parameters/sig_enforce.
 */
void modsig_kernel_read(const char *root, struct modsig_kernel *k);

/* check's line on the kernel: "Secure Boot: ..." into @msg (@len bytes). */
enum modsig_verdict modsig_kernel_finding(const struct modsig_kernel *k, char *msg, size_t len);

/*
 * check's line on module @mod (as "dm-redcap"), signed by @signer (NULL:
 * not signed), on kernel @k, into @msg (@len bytes).  An unsigned module
 * on a kernel that loads signed modules only is a problem, and the line
 * says how DKMS signs it and how its key is enrolled.
 */
enum modsig_verdict modsig_module_finding(const char *mod, const char *signer,
					  const struct modsig_kernel *k, char *msg, size_t len);

#endif

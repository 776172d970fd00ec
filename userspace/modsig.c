// SPDX-License-Identifier: GPL-2.0
/*
 * Secure Boot and redcap's modules (modsig.h).  On a Secure Boot machine
 * Debian's kernel locks itself down and loads only modules signed by a key
 * it trusts, the Machine Owner Keys among them; Debian's DKMS signs what it
 * builds with /var/lib/dkms/mok.key (made with openssl at its first build),
 * whose certificate /var/lib/dkms/mok.pub the owner enrols with mokutil.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "modsig.h"

#define EFI_SECURE_BOOT \
	"/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aa0d-00e098032b8c"
#define MOK_KEY		"/var/lib/dkms/mok.key"
#define MOK_CERT	"/var/lib/dkms/mok.pub"

/* Up to @len - 1 bytes of @root/@path, NUL-terminated: their number, or -1. */
static int read_file(const char *root, const char *path, char *buf, size_t len)
{
	char p[4096];
	size_t n;
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "rbe");
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

void modsig_kernel_read(const char *root, struct modsig_kernel *k)
{
	char buf[128], efi[4096], *open, *close;

	memset(k, 0, sizeof(*k));
	/* The variable: 4 bytes of attributes, then 1 when Secure Boot is on. */
	if (read_file(root, EFI_SECURE_BOOT, buf, sizeof(buf)) >= 5) {
		k->secure_boot = buf[4] == 1;
	} else {
		snprintf(efi, sizeof(efi), "%s/sys/firmware/efi", root);
		k->secure_boot = access(efi, F_OK) ? -1 : 0;
	}
	/* "none [integrity] confidentiality": the mode in force is bracketed. */
	if (read_file(root, "/sys/kernel/security/lockdown", buf, sizeof(buf)) > 0) {
		open = strchr(buf, '[');
		close = open ? strchr(open, ']') : NULL;
		if (close && close - open - 1 < (long)sizeof(k->lockdown)) {
			memcpy(k->lockdown, open + 1, close - open - 1);
			k->lockdown[close - open - 1] = '\0';
		}
	}
	k->sig_enforce = read_file(root, "/sys/module/module/parameters/sig_enforce", buf,
				   sizeof(buf)) > 0 && buf[0] == 'Y';
	k->enforced = (k->lockdown[0] && strcmp(k->lockdown, "none")) || k->sig_enforce;
}

enum modsig_verdict modsig_kernel_finding(const struct modsig_kernel *k, char *msg, size_t len)
{
	const char *sb = k->secure_boot > 0 ? "on" : k->secure_boot == 0 ? "off" :
			 "off (not a UEFI boot)";

	if (k->enforced && k->lockdown[0] && strcmp(k->lockdown, "none"))
		snprintf(msg, len, "Secure Boot: %s; this kernel loads signed modules only "
			 "(lockdown: %s)", sb, k->lockdown);
	else if (k->enforced)
		snprintf(msg, len, "Secure Boot: %s; this kernel loads signed modules only "
			 "(module.sig_enforce=1)", sb);
	else
		snprintf(msg, len, "Secure Boot: %s; this kernel loads unsigned modules too", sb);
	return MODSIG_OK;
}

enum modsig_verdict modsig_module_finding(const char *mod, const char *signer,
					  const struct modsig_kernel *k, char *msg, size_t len)
{
	if (signer && *signer) {
		snprintf(msg, len, "%s: signed by '%s'%s", mod, signer,
			 k->enforced ? " (its certificate must be enrolled: for DKMS's, "
			 "mokutil --import " MOK_CERT ")" : "");
		return MODSIG_OK;
	}
	if (!k->enforced) {
		snprintf(msg, len, "%s: not signed, which this kernel allows", mod);
		return MODSIG_OK;
	}
	snprintf(msg, len, "%s: not signed, and this kernel loads signed modules only: "
		 "DKMS signs the modules it builds with " MOK_KEY " (apt install openssl, "
		 "then dkms install --force redcap/VERSION -k $(uname -r)); enrol its "
		 "certificate: mokutil --import " MOK_CERT ", reboot, and confirm it in "
		 "MokManager", mod);
	return MODSIG_PROBLEM;
}

/* Saved special registers made fit for the restoring host; see snapshot_sregs.h. */
#include "vmm/snapshot/snapshot_sregs.h"

#include <string.h>

/* SDM vol. 3, 3.5 "System descriptor types": 64-bit (or 32-bit) TSS. */
#define TSS_AVAILABLE 0x9
#define TSS_BUSY 0xb

bool snap_vendor_is_svm(const char *vendor)
{
	/* Hygon's Dhyana is a Zen core: kvm_amd drives it. */
	return !strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine");
}

void snap_sregs_fit_host(struct kvm_sregs *s, bool svm)
{
	if (svm && s->tr.type == TSS_BUSY)
		s->tr.type = TSS_AVAILABLE;
}

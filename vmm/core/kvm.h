/*
 * kvm: opening /dev/kvm and checking what kiln needs from it.
 */
#ifndef KILN_KVM_H
#define KILN_KVM_H

#include "lib/base/err.h"

struct kvm_cap_need {
	int cap;
	const char *name;
};

/* Capabilities kiln-vmm cannot run without, with their names for errors. */
extern const struct kvm_cap_need kvm_required_caps[];

/* Open /dev/kvm, check the API version and every required capability.
 * Returns the fd or -errno with a message naming what is missing. */
int kvm_open(struct err *e);

#endif

/*
 * snapshot_sregs: a vCPU's saved special registers, made fit for the
 * host that restores them.
 *
 * The task register. On AMD (SVM) KVM_GET_SREGS reports TR's type with
 * the busy bit set even when the VMCB holds an available TSS (type 9):
 * svm_get_segment() ORs it in so that a snapshot can move to Intel, where
 * VM entry requires a busy TSS (type 11) in 64-bit mode. Written back
 * unchanged, an AMD guest restarts with a TR that a cold boot never has,
 * and QEMU's emulated SVM (the nested harness) then refuses every port
 * access through the TSS I/O bitmap with #GP: it checks the I/O bitmap
 * only of an available TSS. The guest's first user-space OUT after a
 * restore (kiln-init's shutdown milestone) kills PID 1 and panics the
 * guest. So on SVM the busy bit goes back to what the VMCB had; on Intel
 * the busy type is the one VMX accepts and stays.
 *
 * Pure: no KVM, no CPUID; the caller says which extension the host has.
 */
#ifndef KILN_SNAPSHOT_SREGS_H
#define KILN_SNAPSHOT_SREGS_H

#include <linux/kvm.h>
#include <stdbool.h>

/* True for the CPU vendors whose KVM runs vCPUs under SVM; `vendor` is
 * CPUID leaf 0's string as snap_cpu_from_cpuid() spells it. */
bool snap_vendor_is_svm(const char *vendor);

/* Adjust sregs saved by KVM_GET_SREGS for KVM_SET_SREGS on this host. */
void snap_sregs_fit_host(struct kvm_sregs *s, bool svm);

#endif

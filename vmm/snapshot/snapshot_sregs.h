/*
 * snapshot_sregs: a vCPU's saved special registers, made fit for the
 * host that restores them.
 *
 * The task register. On AMD (SVM) KVM_GET_SREGS reports TR's type with
 * the busy bit set even when the VMCB holds an available TSS (type 9):
 * svm_get_segment() ORs it in unconditionally ("the busy flag in the tr
 * selector isn't exposed"); a busy TSS (type 11) is also what VMX needs to
 * enter a 64-bit guest. Written back unchanged, an AMD guest restarts with
 * a TR that a cold boot never has, and QEMU's emulated SVM (the nested
 * harness) then refuses every user-space port access with #GP: it reads
 * the TSS I/O bitmap only of an available TSS. The guest's first such OUT
 * after a restore (kiln-init's shutdown milestone) killed PID 1 and
 * panicked the guest. So on SVM the busy bit goes back to what the VMCB
 * had; on Intel the busy type is the one VMX accepts and stays.
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

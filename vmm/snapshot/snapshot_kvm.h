/*
 * snapshot_kvm: KVM's part of a snapshot — each vCPU's registers, FPU,
 * MSRs, local APIC, events and MP state, and the VM's PIC, IOAPIC, PIT
 * and kvmclock — read into state-file sections and written back.
 *
 * Contract: save only with every vCPU out of KVM_RUN (vm_pause); load
 * into a freshly created VM whose vCPUs were given the same CPUID, before
 * any of them runs. The payloads are KVM's own uapi structs, whose layout
 * is ABI; a section of the wrong size is refused with its name. MSRs are
 * saved as (index, value) pairs: every MSR KVM lists that reads back on
 * this host, so a restore on the same host writes them all or says which
 * one it refused.
 */
#ifndef KILN_SNAPSHOT_KVM_H
#define KILN_SNAPSHOT_KVM_H

#include "vmm/snapshot/snapshot_file.h"
#include "vmm/core/vm_internal.h"

/* The digest of the feature bits in KVM's CPUID table `t` (the host
 * record's `features`): the VM keeps it, not the table. */
uint64_t snap_kvm_cpu_features(const struct kvm_cpuid2 *t);

/* The host record a snapshot of `vm` carries and a restore must match. */
int snap_kvm_compat(struct vm *vm, struct snap_compat *out, struct err *e);

int snap_kvm_save_vcpu(struct vm *vm, struct vcpu *v, struct snap_writer *w, struct err *e);
int snap_kvm_save_vm(struct vm *vm, struct snap_writer *w, struct err *e);

int snap_kvm_load_vcpu(struct vm *vm, struct vcpu *v, const struct snap_view *s, struct err *e);
int snap_kvm_load_vm(struct vm *vm, const struct snap_view *s, struct err *e);

#endif

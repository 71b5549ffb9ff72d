/*
 * snapshot: saving a VM to a snapshot directory and the two steps of
 * bringing one back, for vm.c (embedders use vm_snapshot,
 * vm_config.restore_dir and vm_load in vm.h).
 *
 * Restore: vm_restore_open (in vm_create, with the privileges the VMM
 * starts with: the snapshot's directory and files opened, nothing read,
 * snapshot_src.h), then vm_restore_read (from vm_load, on its own thread
 * under the restore filter, in kiln-vmm's jail: state file read and
 * checked against this host and this VM, overlays replaced by the
 * snapshot's copies and their headers read, RAM mapped or inflated and
 * layers applied, vCPU, irqchip, PIT, clock, UART and device state set).
 */
#ifndef KILN_SNAPSHOT_H
#define KILN_SNAPSHOT_H

#include "vmm/snapshot/snapshot_file.h"
#include "vmm/core/vm_internal.h"

int vm_restore_open(struct vm *vm, struct err *e);
int vm_restore_read(struct vm *vm, struct err *e);

#endif

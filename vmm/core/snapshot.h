/*
 * snapshot: saving a VM to a snapshot directory and the steps of bringing
 * one back, for vm.c (embedders use vm_snapshot and
 * vm_config.restore_dir in vm.h).
 *
 * Restore, in vm_create's order: vm_restore_open (the directory),
 * vm_restore_disks (before the disks open: overlays start as the
 * snapshot's copies), vm_restore_state (read and check the state file
 * against this host), vm_restore_memory (after RAM is mapped and the
 * devices exist: checks the VM's shape, maps or decompresses RAM),
 * vm_restore_cpus_devices (after the vCPUs exist, before any runs).
 */
#ifndef KILN_SNAPSHOT_H
#define KILN_SNAPSHOT_H

#include "vmm/snapshot/snapshot_file.h"
#include "vmm/core/vm_internal.h"

int vm_restore_open(const struct vm_config *cfg, struct err *e);
int vm_restore_disks(const struct vm_config *cfg, int snapfd, struct err *e);
/* On success *buf holds the bytes `view` points into: free both after. */
int vm_restore_state(struct vm *vm, int snapfd, struct snap_view *view, uint8_t **buf,
		     struct err *e);
int vm_restore_memory(struct vm *vm, int snapfd, const struct snap_view *view, struct err *e);
int vm_restore_cpus_devices(struct vm *vm, const struct snap_view *view, struct err *e);

#endif

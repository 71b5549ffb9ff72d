/*
 * vm_internal: the parts of struct vm shared by vm.c and vcpu.c.
 * Not for embedders: they use vm.h.
 */
#ifndef KILN_VM_INTERNAL_H
#define KILN_VM_INTERNAL_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stddef.h>

#include "vmm/boot/boot_linux.h"
#include "devices/pseudo/boot_timer.h"
#include "vmm/boot/cmdline.h"
#include "lib/guest/guest_mem.h"
#include "devices/legacy/i8042.h"
#include "vmm/core/io_bus.h"
#include "devices/legacy/serial.h"
#include "vmm/snapshot/vm_workingset.h"
#include "vmm/snapshot/snapshot_src.h"
#include "devices/pseudo/timeline.h"
#include "lib/guest/event_loop.h"
#include "devices/virtio/virtio_mmio.h"
#include "vmm/core/vm.h"

/* virtio-mmio windows: 4 KiB each from 0xd0000000, GSIs from 5 (4 is the
 * UART) up to the IOAPIC's last pin, 23. */
#define VM_VIRTIO_BASE 0xd0000000ULL
#define VM_VIRTIO_FIRST_GSI 5
#define VM_VIRTIO_MAX 19

struct vcpu {
	struct vm *vm;
	int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	int started;
};

struct vm {
	struct vm_config cfg;
	int kvm_fd, vm_fd;
	int prepared; /* kvm_fd, vm_fd (its irqchip and PIT) and cpuid came from cfg.prep */
	struct guest_mem mem;
	struct io_bus pio, mmio;
	struct serial serial;
	struct i8042 kbd;
	struct boot_timer bt;
	struct timeline tl;
	struct cmdline *cmdline; /* the kernel's, only while vm_create builds and loads it */
	struct boot_entry entry;
	size_t run_size;
	/* What KVM supports, before per-vCPU fixes: only until the vCPUs
	 * exist; snapshots keep its cpu_features (snap_kvm_cpu_features). */
	struct kvm_cpuid2 *cpuid;
	uint64_t cpu_features;
	int ncpus;
	struct vcpu vcpu[VM_MAX_CPUS];

	pthread_mutex_t lock; /* guards the stop and pause fields below */
	int stopping;
	struct vm_result result;
	/* Pause (vm_pause.c): vCPUs park at their next exit while pause_req
	 * is set; `paused` once all are parked and the device thread stopped. */
	pthread_cond_t pause_cond;
	int pause_req, parked, paused;
	int stop_efd;       /* eventfd: the VM has stopped */
	int verbose_budget; /* unhandled-access log lines left */

	int restored; /* came from cfg.restore_dir */
	/* Until vm_load: the snapshot's files, opened at create (snapshot_src.h). */
	struct snap_src src;
	int needs_load; /* a restore, or a disk overlay whose header vm_load reads */
	int loaded; /* vm_load: 0 not yet, 1 done, -errno failed (atomic: the control thread reads it) */
	struct virtio_dev *disk_dev[VM_MAX_DISKS]; /* disk i's device, for vm_load */
	int tsc_deadline, tsc_deadline_known;      /* KVM_CAP_TSC_DEADLINE_TIMER, asked once */
	/* Each overlay opened at create, for snapshots to copy from and a
	 * restore to copy into (then read-write): a jailed VMM no longer
	 * reaches the overlay by its path. -1: none. */
	int overlay_fd[VM_MAX_DISKS];
	uint32_t *snap_msrs; /* the MSRs a snapshot saves (snapshot_kvm.c), found once */
	uint32_t nsnap_msrs;
	/*
	 * Incremental snapshots (vm_snapshot.c): from the first snapshot or
	 * restore on, KVM logs the guest's writes to RAM (the slots carry
	 * KVM_MEM_LOG_DIRTY_PAGES) and guest_mem marks the VMM's own; both
	 * are taken at each snapshot. base_id names the snapshot RAM is
	 * tracked against (the last one taken or restored), when valid.
	 */
	int tracking;
	int base_valid;
	uint8_t base_id[16];
	struct vm_workingset
		workingset; /* working set: recorded since a lazy restore, prefetched after one (vm_workingset.h) */
	struct event_loop *loop; /* the device thread; NULL without devices */
	int nvirtio;
	struct virtio_mmio virtio[VM_VIRTIO_MAX];
};

/* Create vCPU `id`, give it CPUID, LAPIC and (for 0) the boot registers. */
int vcpu_create(struct vm *vm, int id, struct err *e);
/* Start the vCPU's thread. */
int vcpu_start(struct vcpu *v);
/* In the vCPU thread, when pause_req is set: finish the exit KVM is half
 * way through, then wait until resumed or stopped. */
void vcpu_park(struct vcpu *v);
/* 0, or -EAGAIN with e saying "cannot <what>" until vm_load ran: a
 * restored VM's state is not the snapshot's yet, its disks have no size. */
int vm_loaded(struct vm *vm, const char *what, struct err *e);
/* Stop the VM with `exit` and a printf message; the first caller wins. */
void vm_stop(struct vm *vm, enum vm_exit exit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* (Re)register guest RAM with KVM as slots 0 and 1 with `flags`. 0 or -errno. */
int vm_set_slots(struct vm *vm, uint32_t flags, struct err *e);

/* A virtio-net device for `c` (vm_net.c): MAC, backend (tap or passt), packet filter. */
int vm_net_create(struct vm *vm, const struct vm_net_cfg *c, struct virtio_dev **out,
		  struct err *e);

/* Per-vCPU CPUID fix-ups (pure): APIC ids, hypervisor bit, TSC deadline. */
void cpuid_fixup(struct kvm_cpuid2 *c, int id, int ncpus, int tsc_deadline);

#endif

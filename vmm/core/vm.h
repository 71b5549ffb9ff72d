/*
 * vm: kiln-vmm's embeddable core — one KVM virtual machine booting Linux.
 *
 * Usage: fill a vm_config, vm_create(), vm_run() (blocks
 * until the guest resets or fails), read the timeline, vm_destroy().
 * No globals, no exit(): every failure comes back as -errno with a message
 * for the user in the err. One process may hold several VMs.
 *
 * Signals: vCPU threads are kicked out of KVM_RUN with cfg.kick_signal
 * (0: SIGUSR1). The caller installs a handler for it (libkiln's
 * kiln_kick_signal_install, or its own): vm_create() refuses a signal
 * whose disposition is SIG_DFL or SIG_IGN, and nothing here touches
 * process-wide signal state.
 */
#ifndef KILN_VM_H
#define KILN_VM_H

#include <signal.h>
#include <stdint.h>

#include "vmm/core/devcfg.h"
#include "lib/base/err.h"
#include "devices/pseudo/timeline.h"

#define VM_KICK_SIGNAL_DEFAULT SIGUSR1
#define VM_MIN_MEM_MIB 32
#define VM_MAX_CPUS 64

struct vm;

/* Who a VM thread is, for vm_config.thread_enter. */
enum vm_thread_role { VM_THREAD_VCPU, VM_THREAD_DEVICE, VM_THREAD_RUNNER, VM_THREAD_RESTORE };

struct vm_config {
	const char *kernel;  /* bzImage or PVH-capable ELF vmlinux */
	const char *initrd;  /* optional */
	const char *cmdline; /* extra kernel parameters, appended; optional */
	uint64_t mem_mib;
	int cpus;
	int hugepages;      /* back guest RAM with 2 MiB hugetlb pages */
	int console_out_fd; /* serial console output; -1 = console off */
	int console_in_fd;  /* serial console input; -1 = none */
	int verbose;        /* log unhandled port/MMIO accesses to log_fd */
	int log_fd;         /* where verbose, firewall_log and device_log lines go */
	int device_log;     /* devices' own lines on log_fd: a guest breaking a virtio
			       * device's protocol, a dead network backend */
	int kick_signal;    /* kicks vCPUs out of KVM_RUN; 0: VM_KICK_SIGNAL_DEFAULT */
	uint64_t t0_ns;     /* CLOCK_MONOTONIC origin of the timeline; 0 = now */
	int rng;            /* attach a virtio-rng device */
	int nnet;
	struct vm_net_cfg net[VM_MAX_NETS];
	int ndisk; /* without an initrd, disk 0 is the root (/dev/vda) */
	struct vm_disk_cfg disk[VM_MAX_DISKS];
	int nshare;
	struct vm_share_cfg share[VM_MAX_SHARES];
	int share_remote_timeout_ms; /* client-served shares' reply timeout; 0: 5000 */
	struct vm_vsock_cfg vsock;   /* uds == NULL: no vsock device */
	/*
	 * The packet filter of every network device (docs/architecture.md,
	 * "Packet filter"): a JSON rule set (net_rules.h), firewall_len bytes.
	 * NULL: no filter, every frame passes (and net_rate is not used).
	 */
	const char *firewall;
	size_t firewall_len;
	int firewall_log; /* denied and cut flows on log_fd (rate-limited) */
	/* The egress proxy's Unix socket: the firewall's `http` rules steer
	 * guest TCP there (net_steer.h). NULL: nothing is steered. */
	const char *egress_proxy;
	struct vm_net_rate_cfg net_rate; /* the filter's token buckets, per second */
	/*
	 * Restore the snapshot in this directory instead of booting `kernel`
	 * (which may then be NULL). mem_mib, cpus and the devices must be the
	 * ones the snapshot was taken with; each disk overlay is replaced by
	 * the snapshot's copy. vm_create only opens it; vm_load reads it.
	 * NULL: boot.
	 */
	const char *restore_dir;
	/*
	 * Run by each VM thread on itself before its first guest-reachable
	 * work: a vCPU before KVM_RUN, the device thread before its first
	 * handler, vm_run's caller right after starting them (so they do not
	 * inherit its filter), vm_load's thread before it reads the snapshot. libkiln installs the thread's seccomp filter
	 * here (docs/security.md). 0, or -errno: the VM then stops with a
	 * failure naming the thread. NULL: nothing to do.
	 */
	int (*thread_enter)(void *ctx, enum vm_thread_role role);
	void *thread_ctx;
	/*
	 * KVM's parts made ahead (vm_kvm_prepare), or NULL: vm_create takes
	 * them (the caller's pointer is then stale) instead of opening
	 * /dev/kvm and making the VM, its irqchip and PIT itself.
	 */
	struct vm_kvm_prep *prep;
};

/*
 * What of a VM depends on no configuration: /dev/kvm opened and checked,
 * the supported CPUID, a KVM VM with its TSS and identity-map addresses,
 * in-kernel irqchip and PIT. The VM is tied to the calling process's
 * address space: only that process can use it.
 */
struct vm_kvm_prep {
	int kvm_fd, vm_fd;
	struct kvm_cpuid2 *cpuid;
};

/* Make them. 0 with *out, or -errno with e (no KVM, kvm-pvm, ...). */
int vm_kvm_prepare(struct vm_kvm_prep **out, struct err *e);
/* Close and free what vm_create did not take. NULL is fine. */
void vm_kvm_prep_free(struct vm_kvm_prep *p);

/* What vm_snapshot wrote. */
struct vm_snapshot_info {
	uint64_t memory_bytes;        /* guest RAM */
	uint64_t memory_stored_bytes; /* of it, bytes in the memory file (nonzero pages, or compressed) */
	uint64_t state_bytes;         /* the state file */
	uint64_t disk_bytes;          /* overlay copies (allocated bytes) */
	double ms;                    /* pause to written and synced */
	char base[64];                /* layered on this sibling snapshot; "" when full */
	uint64_t dirty_pages;         /* RAM pages written since the base (layered only) */
};

enum vm_exit {
	VM_EXIT_RESET,        /* the guest reset or powered off */
	VM_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	VM_EXIT_FAILURE,      /* KVM error or an exit kiln cannot handle */
	VM_EXIT_STOPPED,      /* vm_request_stop */
};

struct vm_result {
	enum vm_exit exit;
	char msg[ERR_MSG_MAX]; /* one line: what happened */
};

/*
 * Set up KVM, memory, devices and vCPUs and load the kernel. With
 * cfg.restore_dir, the same from the config alone, and the snapshot's
 * directory and files opened but not read (vmm/snapshot/snapshot_src.h):
 * vm_load reads them. 0 or -errno.
 */
int vm_create(const struct vm_config *cfg, struct vm **out, struct err *e);

/*
 * What vm_create opened but did not read, read and checked: each disk
 * overlay's header and bitmap (bytes an earlier VMM wrote), and for a
 * restored VM its snapshot first (state file, the snapshot's disk copies
 * written into the open overlays, RAM, vCPU, irqchip, clock and device
 * state). Runs on a thread of its own that calls cfg.thread_enter
 * (VM_THREAD_RESTORE) first, and is joined; call it after vm_create and
 * before vm_run, with the privileges reading hostile bytes should have
 * (kiln-vmm: in its jail). Once: a later call returns the first result.
 * 0 (also when there is nothing to read) or -errno; after a failure the
 * VM cannot run.
 */
int vm_load(struct vm *vm, struct err *e);

/* Run until the guest ends. 0 (result filled) or -errno on a setup error. */
int vm_run(struct vm *vm, struct vm_result *res, struct err *e);

/*
 * Pause and resume, from any thread while vm_run() runs. Pause
 * returns once every vCPU is out of KVM_RUN with its last exit completed
 * and the device thread has stopped (requests it took are done; guest
 * notifications wait in their eventfds). Pausing a paused VM is a no-op;
 * -ESRCH when the VM has stopped, -EINVAL to resume a VM not paused.
 */
int vm_pause(struct vm *vm, struct err *e);
int vm_resume(struct vm *vm, struct err *e);
int vm_is_paused(struct vm *vm);

/*
 * Write a snapshot of the VM into the directory `dir` (absolute; created,
 * or replaced whole only once the new one is complete and synced: a
 * failure leaves an earlier snapshot there intact). Pauses the VM for the
 * duration unless it is paused already (then it stays paused). `compress`:
 * zlib-compressed RAM instead of a sparse file that restores lazily.
 * Refused with a message for hugepage RAM, writable disks without an
 * overlay, and a mounted virtio-fs share. From any thread while
 * vm_run() runs. 0 or -errno.
 *
 * `base` (may be NULL): the name of a sibling snapshot directory. When it
 * is the snapshot this VM last took or was restored from (same id), RAM
 * is written as a layer on it: only the pages written since
 * (snapshot_layer.h). Otherwise, or with `compress`, or when the chain
 * below it is already SNAP_LAYER_DEPTH_MAX deep, the snapshot is full;
 * info->base says which it was.
 */
int vm_snapshot(struct vm *vm, const char *dir, int compress, const char *base,
		struct vm_snapshot_info *info, struct err *e);

/*
 * Replace the packet filter's rules on every network device with the JSON
 * rule set text[len], atomically per device (each frame is decided by the
 * old rules or the new); flows the new rules deny are cut, *cut says how
 * many. 0; -EINVAL with net_rules' message (nothing replaced); -ENODEV
 * when no device has a filter (kiln-vmm ran without --firewall). From any
 * thread, also while paused.
 */
int vm_firewall_set(struct vm *vm, const char *text, size_t len, size_t *cut, struct err *e);

/*
 * Graft fd (an O_PATH directory, a detached clone; the share's on
 * success) as name in the root of the share tagged tag, or with fd -1
 * drop that graft (devices/fs/fuse_server.h, "Grafts"). 0; -ENODEV (no
 * share of that tag), -EINVAL, -ENOTDIR, -EXDEV, -ENOSPC, -ENOENT with e. Any
 * thread, also while paused.
 */
int vm_share_graft(struct vm *vm, const char *tag, const char *name, int fd, struct err *e);

/*
 * The first filtered network device's rules and counters as one line of
 * JSON (net_filter_to_json(), plus the device's frame counters under
 * counters.device), malloc'd; NULL with e (-ENODEV: no filter).
 */
char *vm_firewall_get(struct vm *vm, struct err *e);

/* 1 when the VM was restored from a snapshot rather than booted. */
int vm_restored(const struct vm *vm);

/* The VM's boot timeline (valid until vm_destroy). */
struct timeline *vm_timeline(struct vm *vm);

/* Stop the VM from the host (exit VM_EXIT_STOPPED) unless it has ended;
 * returns at once, vm_run() returns soon after. Any thread. */
void vm_request_stop(struct vm *vm);

/* Free the VM. Not while vm_run() runs: stop it and let vm_run return. */
void vm_destroy(struct vm *vm);

#endif

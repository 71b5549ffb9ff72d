/*
 * vm: kiln-vmm's embeddable core — one KVM virtual machine booting Linux.
 *
 * Usage: fill a kiln_vm_config, kiln_vm_create(), kiln_vm_run() (blocks
 * until the guest resets or fails), read the timeline, kiln_vm_destroy().
 * No globals, no exit(): every failure comes back as -errno with a message
 * for the user in the kiln_error. One process may hold several VMs.
 *
 * Signals: vCPU threads are kicked out of KVM_RUN with KILN_KICK_SIGNAL;
 * kiln_vm_run() installs a handler that does nothing for it.
 */
#ifndef KILN_VM_H
#define KILN_VM_H

#include <signal.h>
#include <stdint.h>

#include "vmm/core/devspec.h"
#include "lib/base/error.h"
#include "vmm/core/timeline.h"

#define KILN_KICK_SIGNAL SIGUSR1
#define KILN_MIN_MEM_MIB 32
#define KILN_MAX_CPUS 64

struct kiln_vm;

struct kiln_vm_config {
	const char *kernel;   /* bzImage or PVH-capable ELF vmlinux */
	const char *initrd;   /* optional */
	const char *cmdline;  /* extra kernel parameters, appended; optional */
	uint64_t mem_mib;
	int cpus;
	int hugepages;        /* back guest RAM with 2 MiB hugetlb pages */
	int console_out_fd;   /* serial console output; -1 = console off */
	int console_in_fd;    /* serial console input; -1 = none */
	int verbose;          /* log unhandled port/MMIO accesses to stderr */
	uint64_t t0_ns;       /* CLOCK_MONOTONIC origin of the timeline; 0 = now */
	int rng;              /* attach a virtio-rng device */
	int nnet;
	struct kiln_net_cfg net[KILN_MAX_NETS];
	int ndisk;            /* without an initrd, disk 0 is the root (/dev/vda) */
	struct kiln_disk_cfg disk[KILN_MAX_DISKS];
	int nshare;
	struct kiln_share_cfg share[KILN_MAX_SHARES];
	struct kiln_vsock_cfg vsock; /* uds == NULL: no vsock device */
	/*
	 * The packet filter of every network device (docs/architecture.md,
	 * "Packet filter"): a JSON rule set (net_rules.h), firewall_len bytes.
	 * NULL: no filter, every frame passes (and net_rate is not used).
	 */
	const char *firewall;
	size_t firewall_len;
	int firewall_log;                /* denied and cut flows on stderr (rate-limited) */
	struct kiln_net_rate_cfg net_rate; /* the filter's token buckets, per second */
	/*
	 * Restore the snapshot in this directory instead of booting `kernel`
	 * (which may then be NULL). mem_mib, cpus and the devices must be the
	 * ones the snapshot was taken with; each disk overlay is replaced by
	 * the snapshot's copy. NULL: boot.
	 */
	const char *restore_dir;
};

/* What kiln_vm_snapshot wrote. */
struct kiln_snapshot_info {
	uint64_t memory_bytes;        /* guest RAM */
	uint64_t memory_stored_bytes; /* of it, bytes in the memory file (nonzero pages, or compressed) */
	uint64_t state_bytes;         /* the state file */
	uint64_t disk_bytes;          /* overlay copies (allocated bytes) */
	double ms;                    /* pause to written and synced */
};

enum kiln_exit {
	KILN_EXIT_RESET,        /* the guest reset or powered off */
	KILN_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	KILN_EXIT_FAILURE,      /* KVM error or an exit kiln cannot handle */
};

struct kiln_vm_result {
	enum kiln_exit exit;
	char msg[256]; /* one line: what happened */
};

/* Set up KVM, memory, devices and vCPUs and load the kernel. 0 or -errno. */
int kiln_vm_create(const struct kiln_vm_config *cfg, struct kiln_vm **out, struct kiln_error *e);

/* Run until the guest ends. 0 (result filled) or -errno on a setup error. */
int kiln_vm_run(struct kiln_vm *vm, struct kiln_vm_result *res, struct kiln_error *e);

/*
 * Pause and resume, from any thread while kiln_vm_run() runs. Pause
 * returns once every vCPU is out of KVM_RUN with its last exit completed
 * and the device thread has stopped (requests it took are done; guest
 * notifications wait in their eventfds). Pausing a paused VM is a no-op;
 * -ESRCH when the VM has stopped, -EINVAL to resume a VM not paused.
 */
int kiln_vm_pause(struct kiln_vm *vm, struct kiln_error *e);
int kiln_vm_resume(struct kiln_vm *vm, struct kiln_error *e);
int kiln_vm_is_paused(struct kiln_vm *vm);

/*
 * Write a snapshot of the VM into the directory `dir` (absolute; created,
 * or replaced whole only once the new one is complete and synced: a
 * failure leaves an earlier snapshot there intact). Pauses the VM for the
 * duration unless it is paused already (then it stays paused). `compress`:
 * zlib-compressed RAM instead of a sparse file that restores lazily.
 * Refused with a message for hugepage RAM, writable disks without an
 * overlay, and a mounted virtio-fs share. From any thread while
 * kiln_vm_run() runs. 0 or -errno.
 */
int kiln_vm_snapshot(struct kiln_vm *vm, const char *dir, int compress, struct kiln_snapshot_info *info,
		     struct kiln_error *e);

/*
 * Replace the packet filter's rules on every network device with the JSON
 * rule set text[len], atomically per device (each frame is decided by the
 * old rules or the new); flows the new rules deny are cut, *cut says how
 * many. 0; -EINVAL with net_rules' message (nothing replaced); -ENODEV
 * when no device has a filter (kiln-vmm ran without --firewall). From any
 * thread, also while paused.
 */
int kiln_vm_firewall_set(struct kiln_vm *vm, const char *text, size_t len, size_t *cut, struct kiln_error *e);

/*
 * The first filtered network device's rules and counters as one line of
 * JSON (net_filter_to_json(), plus the device's frame counters under
 * counters.device), malloc'd; NULL with e (-ENODEV: no filter).
 */
char *kiln_vm_firewall_get(struct kiln_vm *vm, struct kiln_error *e);

/* 1 when the VM was restored from a snapshot rather than booted. */
int kiln_vm_restored(const struct kiln_vm *vm);

/* The VM's boot timeline (valid until kiln_vm_destroy). */
struct timeline *kiln_vm_timeline(struct kiln_vm *vm);

/* The kernel command line the guest was given. */
const char *kiln_vm_cmdline(const struct kiln_vm *vm);

void kiln_vm_destroy(struct kiln_vm *vm);

#endif

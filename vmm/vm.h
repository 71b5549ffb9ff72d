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

#include "devspec.h"
#include "error.h"
#include "timeline.h"

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

/* The VM's boot timeline (valid until kiln_vm_destroy). */
struct timeline *kiln_vm_timeline(struct kiln_vm *vm);

/* The kernel command line the guest was given. */
const char *kiln_vm_cmdline(const struct kiln_vm *vm);

void kiln_vm_destroy(struct kiln_vm *vm);

#endif

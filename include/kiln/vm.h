/*
 * kiln/vm.h: one KVM virtual machine booting Linux, in the caller's
 * process. A process may hold several VMs.
 *
 *   kiln_vm_config *c = kiln_vm_config_new();
 *   kiln_vm_config_set_kernel(c, "bzImage");
 *   kiln_vm_config_add_disk(c, "rootfs.ext4", KILN_DISK_READ_ONLY, NULL);
 *   kiln_vm_config_set_vsock(c, "/run/vm1/vsock", 0);
 *   kiln_kick_signal_install(SIGUSR1);        // or install your own handler
 *   kiln_vm_create(c, &vm);                   // message: kiln_vm_config_errmsg(c)
 *   kiln_vm_start(vm);                        // runs on libkiln's threads
 *   ... kiln/agent.h on kiln_vm_vsock_path(vm) ...
 *   kiln_vm_stop(vm); kiln_vm_wait(vm, -1); kiln_vm_destroy(vm);
 *
 * Signals. A vCPU thread sits in KVM_RUN; to pause or stop the VM,
 * libkiln sends that thread the config's kick signal (default SIGUSR1)
 * with pthread_kill(). The signal must have a handler (one that does
 * nothing is enough); libkiln never installs one by itself. Either the
 * program installs one, or it calls kiln_kick_signal_install().
 * kiln_vm_create() fails with -EINVAL when the signal's disposition is
 * SIG_DFL or SIG_IGN. libkiln unblocks the signal in the vCPU threads it
 * creates; the caller's threads are not touched.
 *
 * Processes. A passt network backend is a child process; libkiln reaps it
 * by pid and never waits for other children.
 */
#ifndef KILN_PUBLIC_VM_H
#define KILN_PUBLIC_VM_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

KILN_BEGIN_DECLS

typedef struct kiln_vm_config kiln_vm_config;
typedef struct kiln_vm kiln_vm;
typedef struct kiln_vm_prepared kiln_vm_prepared;

/*
 * Install a handler that does nothing for `signo` (no SA_RESTART, empty
 * mask), replacing the process's disposition for it: the one process-wide
 * change libkiln makes, and only here. 0 or -EINVAL (not a catchable
 * signal). Any thread.
 */
KILN_API int kiln_kick_signal_install(int signo);

/* ---- configuration ----
 * A configuration is a value: setters copy what they are given, and
 * kiln_vm_create() copies the whole configuration into the VM, so it may
 * be changed or freed right after. One thread at a time per config. */

/*
 * A new configuration: 128 MiB, 1 vCPU, console off, virtio-rng on, kick
 * signal SIGUSR1, no devices. NULL when out of memory. Any thread.
 */
KILN_API kiln_vm_config *kiln_vm_config_new(void);

/* Free a configuration (VMs made from it keep their own copy). NULL is
 * fine. Not while another call on cfg runs. */
KILN_API void kiln_vm_config_free(kiln_vm_config *cfg);

/*
 * The message of the last failed call on cfg, including kiln_vm_create,
 * kiln_vm_restore and kiln_vm_fork made with it; "" when none. Valid until
 * the next call on cfg. One thread at a time per config, like the setters.
 */
KILN_API const char *kiln_vm_config_errmsg(const kiln_vm_config *cfg);

/* The kernel: a bzImage or an uncompressed vmlinux with a PVH note
 * (checked at create). 0 or -ENOMEM. */
KILN_API int kiln_vm_config_set_kernel(kiln_vm_config *cfg, const char *path);

/* An initramfs (cpio, optionally compressed); NULL: none (then disk 0 is
 * the root filesystem). 0 or -ENOMEM. */
KILN_API int kiln_vm_config_set_initrd(kiln_vm_config *cfg, const char *path);

/* Extra kernel parameters appended to kiln's defaults; NULL: none.
 * 0 or -ENOMEM (its length is checked at create). */
KILN_API int kiln_vm_config_set_cmdline(kiln_vm_config *cfg, const char *extra);

/* Guest RAM in MiB (default 128); at least 32 and at most the host's RAM,
 * checked at create. 0. */
KILN_API int kiln_vm_config_set_memory(kiln_vm_config *cfg, uint64_t mib);

/* vCPUs (default 1): 1..64 and KVM's own limit, checked at create. 0. */
KILN_API int kiln_vm_config_set_cpus(kiln_vm_config *cfg, unsigned cpus);

/* Back guest RAM with 2 MiB hugetlb pages (such a VM cannot be
 * snapshotted). 0. */
KILN_API int kiln_vm_config_set_hugepages(kiln_vm_config *cfg, int on);

/*
 * Serial console: guest output written to out_fd, input read from in_fd
 * (-1: none). Both -1 (the default): console off, the fastest boot. The
 * fds stay the caller's: libkiln neither closes them nor changes their
 * flags or terminal mode. 0 or -EBADF (below -1).
 */
KILN_API int kiln_vm_config_set_console(kiln_vm_config *cfg, int in_fd, int out_fd);

/* Attach a virtio-rng device fed by getrandom() (on by default). 0. */
KILN_API int kiln_vm_config_set_rng(kiln_vm_config *cfg, int on);

/* The signal that kicks vCPU threads out of KVM_RUN (see the top of this
 * header); default SIGUSR1. 0 or -EINVAL (not a catchable signal, or
 * SIGPIPE/SIGCHLD). */
KILN_API int kiln_vm_config_set_kick_signal(kiln_vm_config *cfg, int signo);

/* The CLOCK_MONOTONIC time (ns) the boot timeline counts from; 0 (the
 * default): when kiln_vm_create is called. 0. */
KILN_API int kiln_vm_config_set_time_origin(kiln_vm_config *cfg, uint64_t monotonic_ns);

/*
 * KVM's part of a VM made before anything about the VM is known (a VM
 * kept ready, as kilnd's parked kiln-vmms do): /dev/kvm opened and its
 * capabilities checked, the supported CPUID read, and a KVM VM with its
 * in-kernel irqchip and PIT. The VM belongs to the calling process (its
 * address space): only this process can use it, so make it in the
 * process, after any fork, that will run the VM. 0 with *out, or -errno
 * (no usable KVM: the message kiln_vm_create would give, in msg[cap]).
 */
KILN_API int kiln_vm_prepare(kiln_vm_prepared **out, char *msg, size_t cap);

/*
 * Hand p to the next kiln_vm_create, kiln_vm_restore or kiln_vm_fork made
 * with cfg, which then skips those steps; that call takes p whether it
 * succeeds or not. A p given before is freed; NULL drops it. cfg owns p
 * until then (kiln_vm_config_free frees it). 0.
 */
KILN_API int kiln_vm_config_set_prepared(kiln_vm_config *cfg, kiln_vm_prepared *p);

/* Close and free a p no config took. NULL is fine. */
KILN_API void kiln_vm_prepared_free(kiln_vm_prepared *p);

/*
 * The descriptors p holds (/dev/kvm's and the VM's), into fds[cap]: for a
 * program that closes every descriptor it did not mean to keep before
 * using p. Their count (2), or -ENOSPC when cap is smaller.
 */
KILN_API int kiln_vm_prepared_fds(const kiln_vm_prepared *p, int *fds, int cap);

/* Modes of kiln_vm_config_set_seccomp (docs/security.md, "seccomp
 * filters per thread"). */
enum kiln_seccomp_mode {
	KILN_SECCOMP_KILL =
		0, /* the default: a syscall outside the thread's allowlist kills the process */
	KILN_SECCOMP_LOG = 1, /* diagnosis only: such a syscall runs and the kernel logs it */
	KILN_SECCOMP_OFF = 2, /* no filters */
};

/*
 * Seccomp filters on the VM's threads: each vCPU thread, the device
 * thread and the thread that runs the VM (libkiln's own with
 * kiln_vm_start; the caller's with kiln_vm_run, which stays filtered
 * after it returns) load their role's allowlist on themselves before
 * guest-reachable work. Filters are per thread: the caller's other
 * threads are not touched (see kiln_seccomp_apply_control). 0 or -EINVAL.
 */
KILN_API int kiln_vm_config_set_seccomp(kiln_vm_config *cfg, enum kiln_seccomp_mode mode);

/* What kiln_vm_config_set_log writes. */
enum {
	KILN_LOG_FIREWALL = 1u << 0,  /* denied and cut flows, at most 10 lines a second */
	KILN_LOG_UNHANDLED = 1u << 1, /* guest accesses to ports/MMIO with no device */
	/* Devices' own lines, once each: a guest that breaks a virtio
	 * device's protocol ("virtio-blk: guest driver error: ...; device
	 * needs reset"), a network backend that died ("virtio-net: passt
	 * backend failed: ...") */
	KILN_LOG_DEVICE = 1u << 2
};

/* Write the log lines `flags` selects to `fd` (the caller's; -1 or flags
 * 0: no log, the default). KILN_LOG_FIREWALL needs a firewall. 0 or
 * -EBADF. */
KILN_API int kiln_vm_config_set_log(kiln_vm_config *cfg, int fd, unsigned flags);

/* ---- devices ----
 * One call per device, libkrun's way: each copies its strings and checks
 * what it can now (files are opened at create), returning 0 or -errno
 * with the message in kiln_vm_config_errmsg(cfg). A refused call leaves
 * cfg as it was. kiln-vmm's option syntax (--disk PATH,overlay=...) is
 * its own, parsed in the program into these calls. */

/* Flags of kiln_vm_config_add_disk. */
enum {
	KILN_DISK_READ_ONLY = 1u << 0 /* the guest cannot write the disk */
};

/*
 * Add a virtio-blk disk on the raw image `path`. Disks are numbered in the
 * order added, from 0 (/dev/vda); without an initrd disk 0 is the root
 * filesystem. overlay != NULL: `path` is a read-only base and writes go to
 * the sparse copy-on-write file `overlay` (created if missing; not with
 * KILN_DISK_READ_ONLY); a VM is snapshotted only when each writable disk
 * has an overlay. 0, -EINVAL, -E2BIG (at most 8 disks), -ENOMEM.
 */
KILN_API int kiln_vm_config_add_disk(kiln_vm_config *cfg, const char *path, unsigned flags,
				     const char *overlay);

/*
 * The virtual size in MiB (1..1048576) of disk `index`'s overlay when
 * create makes it (an existing overlay keeps its own); 0: the base
 * image's size. Only for a disk with an overlay (a raw image has its
 * file's size). 0, -ERANGE (no such disk), -EINVAL.
 */
KILN_API int kiln_vm_config_set_disk_size(kiln_vm_config *cfg, unsigned index, uint64_t mib);

/*
 * The serial the guest reads for disk `index` (VIRTIO_BLK_T_GET_ID,
 * /sys/block/vdX/serial): 1..20 bytes; NULL: none. 0, -ERANGE (no such
 * disk), -EINVAL, -ENOMEM.
 */
KILN_API int kiln_vm_config_set_disk_serial(kiln_vm_config *cfg, unsigned index,
					    const char *serial);

/* Flags of kiln_vm_config_add_share, _add_share_fd and _add_remote_share. */
enum {
	KILN_SHARE_READ_ONLY = 1u << 0 /* the guest cannot write the share */
};

/*
 * Share the host directory `host_dir` with the guest as virtio-fs mount
 * tag `tag` (1..36 bytes, no space, ',' or ':'; kiln-init mounts the
 * shares named on its command line). The path is resolved at create. 0,
 * -EINVAL, -E2BIG (at most 8 shares), -ENOMEM.
 */
KILN_API int kiln_vm_config_add_share(kiln_vm_config *cfg, const char *tag, const char *host_dir,
				      unsigned flags);

/*
 * The same for a directory the caller has open as `dir_fd` (>= 3): no
 * path is resolved, so a caller that opened it carefully (without
 * following symbolic links) shares exactly that directory. The fd stays
 * the caller's and must stay open until kiln_vm_create returns. 0,
 * -EINVAL, -E2BIG, -ENOMEM.
 */
KILN_API int kiln_vm_config_add_share_fd(kiln_vm_config *cfg, const char *tag, int dir_fd,
					 unsigned flags);

/*
 * A client-served share (docs/architecture.md, "Client-served shares"):
 * virtio-fs mount tag `tag` whose files a server on the Unix socket
 * `sock_path` (shorter than 108 bytes) serves in the share line protocol
 * (kilnd relays it to an API client). kiln-vmm connects at the guest's
 * first request that needs it; no server there is EIO to the guest, not
 * an error here. flags: KILN_SHARE_READ_ONLY (answered EROFS in kiln-vmm,
 * never asked). Counts toward the 8 shares. A VM with one cannot be
 * snapshotted. 0, -EINVAL, -E2BIG, -ENOMEM.
 */
KILN_API int kiln_vm_config_add_remote_share(kiln_vm_config *cfg, const char *sock_path,
					     const char *tag, unsigned flags);

/*
 * How long kiln-vmm waits for a client-served share's reply before the
 * guest's request fails with EIO and the connection is dropped:
 * 100..60000 ms, one value for every such share (default 5000). 0 or
 * -EINVAL.
 */
KILN_API int kiln_vm_config_set_remote_share_timeout(kiln_vm_config *cfg, unsigned timeout_ms);

/*
 * The virtio-vsock device: its host side is a Unix socket bound at
 * `uds_path` (Firecracker's CONNECT <port> protocol; the agent listens on
 * port 1024, see kiln/agent.h); guest connections to CID 2 port P go to
 * "<uds_path>_P". cid: the guest's CID, 3..4294967294; 0: 3. uds_path
 * NULL: no vsock device. A second call replaces the first. 0, -EINVAL,
 * -ENAMETOOLONG (longer than a sun_path), -ENOMEM.
 */
KILN_API int kiln_vm_config_set_vsock(kiln_vm_config *cfg, const char *uds_path, uint32_t cid);

/*
 * Add a virtio-net device on the TAP interface `tap` (created at create
 * if missing; needs CAP_NET_ADMIN). mac: "02:00:00:00:00:01" (unicast);
 * NULL: a random locally administered one. ip: the guest's IPv4
 * "ADDR/PREFIX" (prefix 1-30), the only source address the packet filter
 * lets out; NULL: any. 0, -EINVAL, -E2BIG (at most 4 network devices),
 * -ENOMEM.
 */
KILN_API int kiln_vm_config_add_net_tap(kiln_vm_config *cfg, const char *tap, const char *mac,
					const char *ip);

/*
 * Add a virtio-net device behind a passt child (rootless NAT, IPv4). The
 * guest is ip ("ADDR/PREFIX", default "10.0.2.15/24") behind gateway gw
 * (default "10.0.2.2", in the guest's network); DNS the guest sends to
 * dns (default "10.0.2.3") goes to resolver (a nameserver on the host's
 * side; NULL: the first of the host's /etc/resolv.conf). mac as for
 * add_net_tap. NULL takes the default. 0, -EINVAL (message names the
 * field), -E2BIG, -ENOMEM.
 */
KILN_API int kiln_vm_config_add_net_passt(kiln_vm_config *cfg, const char *mac, const char *ip,
					  const char *gw, const char *dns, const char *resolver);

/*
 * The packet filter's rate limits on every network device, per second
 * (0: unlimited; at most 2^48): frames over the limit wait, never drop.
 * Needs a firewall (kiln_vm_config_set_firewall; checked at create).
 * 0, -EINVAL.
 */
KILN_API int kiln_vm_config_set_net_rate(kiln_vm_config *cfg, uint64_t tx_bytes,
					 uint64_t tx_packets, uint64_t rx_bytes,
					 uint64_t rx_packets);

/* The largest rule set kiln_vm_config_set_firewall accepts, in bytes. */
#define KILN_VM_FIREWALL_MAX (256 * 1024)

/*
 * Put kiln's packet filter (default deny) on every network device, with
 * the JSON rule set json[len] (docs/architecture.md, "Packet filter").
 * Parsed now. json NULL: no filter (the default). 0, -EINVAL (message
 * names the bad field), -EFBIG, -ENOMEM.
 */
KILN_API int kiln_vm_config_set_firewall(kiln_vm_config *cfg, const char *json, size_t len);

/*
 * The egress proxy (kiln-egress, or any program reading PROXY v2
 * headers) at the Unix socket path: guest TCP to the ports the
 * firewall's `http` rules list is terminated by kiln-vmm and relayed to
 * a new connection to path, opened by a PROXY v2 header (the guest's
 * address and port, where it connected, and the name it resolved for
 * that address); a connection that fails is a reset for the guest
 * (docs/architecture.md, "Packet filter"). Needs a firewall; a firewall
 * whose rules have `http` needs it (checked at create, and by
 * kiln_vm_firewall_set). The socket must be reachable from the jail
 * (kiln-vmm: inside its --jail directory). path NULL: none. 0,
 * -ENAMETOOLONG, -ENOMEM.
 */
KILN_API int kiln_vm_config_set_egress_proxy(kiln_vm_config *cfg, const char *path);

/* 1 when the firewall's rules have `http` and no egress proxy is set
 * (kiln_vm_create would refuse the config), else 0. */
KILN_API int kiln_vm_config_needs_egress_proxy(const kiln_vm_config *cfg);

/* What kiln_vm_create says of `http` rules without an egress proxy. */
#define KILN_VM_EGRESS_PROXY_MISSING \
	"firewall: \"http\" rules steer guest HTTP(S) to an egress proxy: add --egress-proxy PATH, the proxy's Unix socket"

/* ---- create, run, stop ---- */

/*
 * Set up KVM, guest memory, devices and vCPUs and load the kernel; the VM
 * does not run yet. Disk overlays are opened here and their headers read
 * when the VM starts (kiln_vm_start/run, on the restore thread: a bad
 * overlay fails there, message in kiln_vm_errmsg). 0 with *out, or -errno with the message in
 * kiln_vm_config_errmsg(cfg) (-EINVAL bad settings or a kick signal
 * without handler; -ENOENT a file; -ENODEV no /dev/kvm). Any thread (one
 * at a time per cfg).
 */
KILN_API int kiln_vm_create(kiln_vm_config *cfg, kiln_vm **out);

/*
 * Create a VM from the snapshot in directory `snapshot_dir` instead of
 * booting cfg's kernel (which may be unset). cfg's memory, CPUs and
 * devices must be the ones the snapshot was taken with. In two steps
 * (docs/security.md, "Restore"): this call makes the VM from cfg alone
 * and opens the snapshot's directory and files without reading them;
 * kiln_vm_start or kiln_vm_run reads them first, on a thread of its own
 * under the restore seccomp filter, with the caller's privileges then
 * (kiln-vmm: in its jail): each disk overlay is replaced by the
 * snapshot's copy, and RAM is mapped copy-on-write from the snapshot's
 * memory file (lazy; restores of one snapshot share its page cache), so
 * the snapshot must stay while the VM lives. A snapshot that does not fit
 * (damaged, another host, other RAM, vCPUs or devices) fails there, with
 * the message in kiln_vm_errmsg(); until then kiln_vm_pause and
 * kiln_vm_snapshot answer -EAGAIN. After the start the guest resumes
 * where it was: call kiln_agent_sync_clock() once its agent answers. 0 or
 * -errno, message in cfg. Any thread (one at a time per cfg).
 */
KILN_API int kiln_vm_restore(kiln_vm_config *cfg, const char *snapshot_dir, kiln_vm **out);

/*
 * Fork: restore `snapshot_dir` into a second VM with per-VM files of its
 * own under the existing directory `fork_dir`: each disk overlay becomes
 * fork_dir/disk<N>.overlay (a copy of the snapshot's, written when the VM
 * starts, as for kiln_vm_restore) and the vsock socket fork_dir/vsock;
 * everything else comes from cfg, which is not modified.
 * Refused (-EBUSY) when cfg has a TAP network (one interface cannot serve
 * two VMs). Once the fork's agent answers, give it its own clock and
 * random seed (kiln_agent_sync_clock with KILN_AGENT_RESEED). 0 or -errno,
 * message in cfg. Any thread (one at a time per cfg).
 */
KILN_API int kiln_vm_fork(kiln_vm_config *cfg, const char *snapshot_dir, const char *fork_dir,
			  kiln_vm **out);

/*
 * Start the VM on threads libkiln owns (one per vCPU, one for devices, one
 * that waits for the end and pumps console input) and return at once.
 * 0, -EALREADY (started or run before), or -errno. Any thread not carrying
 * a seccomp filter (the VM's threads would inherit it).
 */
KILN_API int kiln_vm_start(kiln_vm *vm);

/*
 * Run the VM on the calling thread until the guest ends or kiln_vm_stop
 * is called (kiln_vm_start + kiln_vm_wait(-1) without the extra thread).
 * 0 when it ran and ended (see kiln_vm_exit_reason), -EALREADY, or -errno.
 * Any thread; once per VM.
 */
KILN_API int kiln_vm_run(kiln_vm *vm);

/*
 * Put the calling thread under the control role's seccomp filter of vm
 * (the one libkiln's runner has: pause, resume, snapshot, firewall,
 * status, destroy, Unix socket I/O; no exec, no new threads or processes,
 * no new sockets): for a thread of the caller's that drives the VM, such
 * as kiln-vmm's control socket thread. The filter cannot be removed; the
 * thread's later threads inherit it. Call it after kiln_vm_start, or
 * from another thread than the one that will call kiln_vm_run. 0 (also
 * when the config's mode is KILN_SECCOMP_OFF), or -errno with
 * kiln_vm_errmsg set.
 */
KILN_API int kiln_seccomp_apply_control(kiln_vm *vm);

/*
 * Wait until the VM has ended, at most timeout_ms (< 0: no limit; 0: just
 * look). 0 when it has ended; -ETIMEDOUT; -EINVAL when it was never
 * started. Any thread, several at once.
 */
KILN_API int kiln_vm_wait(kiln_vm *vm, int timeout_ms);

/*
 * Ask the VM to end (exit reason KILN_VM_EXIT_STOPPED) as if its power
 * were cut; returns at once, kiln_vm_wait() for the end. A no-op on a VM
 * that has ended. 0. Any thread (not from a signal handler).
 */
KILN_API int kiln_vm_stop(kiln_vm *vm);

/*
 * Pause: returns once every vCPU is out of KVM_RUN with its last exit
 * completed and the device thread has stopped. Pausing a paused VM is a
 * no-op. 0, -ESRCH (the VM has ended). Any thread while it runs.
 */
KILN_API int kiln_vm_pause(kiln_vm *vm);

/* Resume a paused VM. 0, -EINVAL (not paused), -ESRCH (ended). Any
 * thread. */
KILN_API int kiln_vm_resume(kiln_vm *vm);

/* 1 when paused, 0 otherwise. Any thread. */
KILN_API int kiln_vm_is_paused(const kiln_vm *vm);

/* Flags of kiln_vm_snapshot. */
enum {
	KILN_SNAPSHOT_COMPRESS = 1u << 0 /* zlib RAM instead of a sparse file restored lazily */
};

/*
 * Write a snapshot into directory `dir` (absolute; created, or replaced
 * whole once the new one is complete and synced). Pauses the VM for the
 * duration unless it is paused already (then it stays paused). Refused
 * with a message for hugepage RAM, a writable disk without an overlay, a
 * mounted virtio-fs share. 0 or -errno. Any thread while the VM runs or
 * is paused; snapshots of one VM are taken one at a time.
 */
KILN_API int kiln_vm_snapshot(kiln_vm *vm, const char *dir, unsigned flags);

/*
 * The same, as an incremental snapshot when it can be: `base` names a
 * sibling of `dir` (a directory in the same folder). When `base` is the
 * snapshot this VM last took or was restored from, only the RAM pages
 * written since are stored, layered on it; restoring `dir` then needs
 * `base` beside it (and its own base, down to a full snapshot). Otherwise
 * (another snapshot, compressed, a chain already 32 deep) the snapshot is
 * full, as kiln_vm_snapshot writes it. kiln_vm_snapshot_base says which.
 * 0 or -errno.
 */
KILN_API int kiln_vm_snapshot_layered(kiln_vm *vm, const char *dir, const char *base,
				      unsigned flags);

/*
 * The base the last successful snapshot was layered on, into buf[n]
 * (NUL-terminated, cut to fit), and the RAM pages it stored (written
 * since the base) in *pages (may be NULL). 1 when it was layered, 0 when
 * it was full (buf ""). Any thread.
 */
KILN_API int kiln_vm_snapshot_base(const kiln_vm *vm, char *buf, size_t n, uint64_t *pages);

/*
 * Figures of the last successful kiln_vm_snapshot (all 0 before one):
 * guest RAM bytes, bytes stored for it, the state file's bytes, the
 * overlay copies' allocated bytes, and pause-to-synced milliseconds. Any
 * pointer may be NULL. Any thread.
 */
KILN_API void kiln_vm_snapshot_stats(const kiln_vm *vm, uint64_t *memory_bytes,
				     uint64_t *stored_bytes, uint64_t *state_bytes,
				     uint64_t *disk_bytes, double *ms);

/*
 * Replace the packet filter's rules on every network device with
 * json[len], atomically per device; flows the new rules deny are cut and
 * *cut (may be NULL) says how many. 0; -EINVAL (nothing replaced);
 * -ENODEV (created without a firewall). Any thread, also while paused.
 */
KILN_API int kiln_vm_firewall_set(kiln_vm *vm, const char *json, size_t len, size_t *cut);

/*
 * Attach the directory fd (an O_PATH descriptor of a mount's root, a
 * detached clone: open_tree(OPEN_TREE_CLONE), so ".." from it leads
 * nowhere; anything else is -EXDEV) as name (one path component) in the
 * root of the running VM's virtio-fs share tagged tag: the guest finds
 * it there at its next lookup, although the share was given at create.
 * On success fd is the VM's; a graft of the same name is replaced. With
 * fd -1, drop that graft. 0; -ENODEV (no such share), -EINVAL (the
 * name), -ENOTDIR, -EXDEV, -ENOSPC (64 grafts), -ENOENT (dropping none). Any
 * thread, also while paused.
 */
KILN_API int kiln_vm_share_graft(kiln_vm *vm, const char *tag, const char *name, int fd);

/* The first filtered device's rules and counters as one line of JSON,
 * malloc'd into *json (kiln_free). 0, -ENODEV, -ENOMEM. Any thread. */
KILN_API int kiln_vm_firewall_get(kiln_vm *vm, char **json);

/*
 * Destroy the VM: stop it if it runs, join libkiln's threads, close every
 * fd and the vsock socket, stop passt, free everything. Overlay files and
 * snapshots stay. NULL is fine. No other call on vm may run or follow.
 */
KILN_API void kiln_vm_destroy(kiln_vm *vm);

/* ---- accessors ---- */

/*
 * The message of the last failed call on vm; "" when none. Valid until
 * the next failing call on vm: with calls failing on several threads at
 * once, use kiln_vm_errmsg_copy. Any thread.
 */
KILN_API const char *kiln_vm_errmsg(const kiln_vm *vm);

/* Copy the last message into buf (n bytes, NUL-terminated, cut if need
 * be) under the VM's lock. Returns the message's full length. Any
 * thread. */
KILN_API size_t kiln_vm_errmsg_copy(const kiln_vm *vm, char *buf, size_t n);

/* How a VM ended. */
enum kiln_vm_exit {
	KILN_VM_EXIT_NONE = 0, /* still running, or not started */
	KILN_VM_EXIT_RESET, /* the guest reset or powered off (also a triple fault after kiln-init asked for a reset) */
	KILN_VM_EXIT_EARLY_RESET, /* it reset before its init started: a kernel panic, most often */
	KILN_VM_EXIT_TRIPLE_FAULT, /* the guest crashed (KVM_EXIT_SHUTDOWN) */
	KILN_VM_EXIT_FAILURE,      /* a KVM error or an exit kiln cannot handle */
	KILN_VM_EXIT_STOPPED       /* kiln_vm_stop or kiln_vm_destroy */
};

/* How the VM ended; KILN_VM_EXIT_NONE while it runs. Any thread. */
KILN_API enum kiln_vm_exit kiln_vm_exit_reason(const kiln_vm *vm);

/* A stable short name for an exit reason: "running", "reset",
 * "reset_before_init", "triple_fault", "failure", "stopped". Static
 * storage. Any thread. */
KILN_API const char *kiln_vm_exit_name(enum kiln_vm_exit reason);

/* One line saying what ended the VM ("guest triple fault on vCPU 0 ...");
 * "" while it runs. Valid until kiln_vm_destroy. Any thread. */
KILN_API const char *kiln_vm_exit_message(const kiln_vm *vm);

/*
 * The boot timeline: milestones in the order recorded, host-side
 * ("vm_ready", "first_kvm_run", "vm_exit") and guest-side ("init_started",
 * "agent_ready", ...); at most 64 (a guest cannot grow it further). The
 * number recorded so far. Any thread.
 */
KILN_API size_t kiln_vm_timeline_count(const kiln_vm *vm);

/*
 * Milestone i (< kiln_vm_timeline_count): its name copied into
 * name[name_size] (may be NULL), *ns since the time origin, *derived 1
 * when computed from the guest's clock rather than observed. Pointers may
 * be NULL. 0 or -ERANGE. Any thread.
 */
KILN_API int kiln_vm_timeline_get(const kiln_vm *vm, size_t i, char *name, size_t name_size,
				  uint64_t *ns, int *derived);

/* The first milestone called `name`: 0 with *ns (may be NULL), or
 * -ENOENT. Any thread. */
KILN_API int kiln_vm_timeline_find(const kiln_vm *vm, const char *name, uint64_t *ns);

/* 1 when the VM was restored from a snapshot (kiln_vm_restore or
 * kiln_vm_fork), 0 when booted. Any thread. */
KILN_API int kiln_vm_restored(const kiln_vm *vm);

/* The vsock device's host socket path (kiln/agent.h connects to it), or
 * NULL without vsock. Valid until destroy. Any thread. */
KILN_API const char *kiln_vm_vsock_path(const kiln_vm *vm);

KILN_END_DECLS

#endif

/*
 * seccomp_filter: the allowlists of kiln-vmm's thread roles, as tables
 * (see seccomp_filter.h and docs/security.md). A table lists syscalls a
 * role may make with any arguments; the few calls worth narrowing by
 * argument (ioctl, socket, mmap/mprotect, tgkill) have rules of their own
 * below the tables. What no table names is refused: notably execve,
 * fork/clone (no role starts threads or processes once the VM runs:
 * passt is forked at create), ptrace, process_vm_*, mount, pivot_root,
 * setuid and friends, bpf, perf_event_open, and inet sockets.
 */
#include "vmm/jail/seccomp_filter.h"

#include <errno.h>
#include <limits.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define END INT_MIN /* no syscall number, not even a pseudo one */

/*
 * Groups of syscalls, each ended by END; a role is a list of groups.
 * Every thread of every role has `base`.
 */
static const int base[] = {
	/* malloc, free, thread stacks given back at thread exit (mmap and
	 * mprotect have their rule: never executable) */
	SCMP_SYS(brk),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	/* mutexes and condition variables, clocks when the vDSO is not used,
	 * the short sleeps of teardown */
	SCMP_SYS(futex),
	SCMP_SYS(sched_yield),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep),
	SCMP_SYS(restart_syscall),
	/* signals: the kick that takes a vCPU out of KVM_RUN returns through
	 * rt_sigreturn; kiln-vmm's crash report resets and re-raises (tgkill
	 * has its rule: this process only) */
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	/* log lines (dprintf on the log fd), eventfds (stop, irqfd), closing */
	SCMP_SYS(read),
	SCMP_SYS(write),
	SCMP_SYS(close),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	END,
};

/* Watches and timers of the device thread's event loop: the loop itself,
 * and a vCPU activating or resetting a device, teardown removing them. */
static const int loop_watches[] = {
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(timerfd_create),
	SCMP_SYS(timerfd_settime),
	END,
};

/* I/O on sockets already open: vsock connections (also pumped by a vCPU
 * when the guest activates the device), passt, the control socket. */
static const int socket_io[] = {
	SCMP_SYS(recvfrom), SCMP_SYS(recvmsg),  SCMP_SYS(sendto),
	SCMP_SYS(sendmsg),  SCMP_SYS(shutdown), END,
};

/* File data: virtio-blk's images and overlays (flush, discard as punch
 * hole), virtio-fs's reads and writes, a snapshot's files and overlay
 * copies (holes kept). */
static const int file_io[] = {
	SCMP_SYS(pread64),   SCMP_SYS(pwrite64),        SCMP_SYS(preadv),
	SCMP_SYS(pwritev),   SCMP_SYS(preadv2),         SCMP_SYS(pwritev2),
	SCMP_SYS(readv),     SCMP_SYS(writev),          SCMP_SYS(lseek),
	SCMP_SYS(fsync),     SCMP_SYS(fdatasync),       SCMP_SYS(fallocate),
	SCMP_SYS(ftruncate), SCMP_SYS(copy_file_range), END,
};

/* Names below a directory fd: virtio-fs (every path walked below the
 * share, handles reopened through /proc/self/fd), a snapshot's new
 * directory written and renamed into place. */
static const int dir_ops[] = {
	SCMP_SYS(openat),    SCMP_SYS(newfstatat),
	SCMP_SYS(fstat),     SCMP_SYS(statx),
	SCMP_SYS(fstatfs),   SCMP_SYS(getdents64),
	SCMP_SYS(mkdirat),   SCMP_SYS(unlinkat),
	SCMP_SYS(renameat),  SCMP_SYS(renameat2),
	SCMP_SYS(faccessat), SCMP_SYS(faccessat2),
	SCMP_SYS(fcntl),     END,
};

/* virtio-fs's other operations on the share: RESOLVE_BENEATH walks,
 * links, nodes, attributes, locks. */
static const int share_ops[] = {
	SCMP_SYS(openat2),    SCMP_SYS(mknodat),   SCMP_SYS(symlinkat), SCMP_SYS(linkat),
	SCMP_SYS(readlinkat), SCMP_SYS(fchmod),    SCMP_SYS(fchmodat),  SCMP_SYS(fchown),
	SCMP_SYS(fchownat),   SCMP_SYS(utimensat), SCMP_SYS(flock),     END,
};

/* A snapshot of a mounted share (control thread): each node's path read
 * from /proc/self/fd and checked by resolving it again beneath the share
 * (devices/fs/fuse_server.c, fuse_server_save). */
static const int share_save[] = { SCMP_SYS(openat2), SCMP_SYS(readlinkat), END };

/* The device thread's own: waiting for events, vsock's connections to
 * the host, virtio-net's steered flows' to the egress proxy and a
 * client-served share's to its server (socket has its rule: AF_UNIX
 * only; the share waits for its reply line with poll), virtio-rng. */
static const int device_own[] = {
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(poll),
	SCMP_SYS(ppoll),      SCMP_SYS(connect),     SCMP_SYS(accept4),
	SCMP_SYS(getsockopt), SCMP_SYS(getrandom),   END,
};

/* The control role's own: the console pump, the control socket's one
 * client at a time, a snapshot's random id, teardown (sockets unlinked,
 * passt ended and reaped). */
static const int control_own[] = {
	SCMP_SYS(poll),   SCMP_SYS(ppoll), SCMP_SYS(accept4), SCMP_SYS(getrandom),
	SCMP_SYS(unlink), SCMP_SYS(kill),  SCMP_SYS(wait4),   END,
};

/* KVM ioctls of a running vCPU: its run loop and the serial IRQ line. */
static const unsigned long vcpu_ioctls[] = { KVM_RUN, KVM_IRQ_LINE };

/*
 * The control role's ioctls: a snapshot reads every vCPU's and the VM's
 * state (vmm/snapshot/snapshot_kvm.c) and reflinks overlays; the console
 * pump raises the serial IRQ; kiln-vmm gives the terminal back
 * (--console).
 */
static const unsigned long control_ioctls[] = {
	KVM_GET_REGS,
	KVM_GET_SREGS,
	KVM_GET_XSAVE,
	KVM_GET_XCRS,
	KVM_GET_LAPIC,
	KVM_GET_VCPU_EVENTS,
	KVM_GET_MP_STATE,
	KVM_GET_DEBUGREGS,
	KVM_GET_MSRS,
	KVM_GET_MSR_INDEX_LIST,
	KVM_GET_IRQCHIP,
	KVM_GET_PIT2,
	KVM_GET_CLOCK,
	KVM_IRQ_LINE,
	KVM_GET_DIRTY_LOG,
	KVM_SET_USER_MEMORY_REGION,
	FICLONE,
	TCGETS,
	TCSETS,
	TCSETSW,
};

/*
 * The restore role's ioctls: the snapshot's vCPU, irqchip, PIT and clock
 * state set (vmm/snapshot/snapshot_kvm.c, which reads some back as it goes),
 * RAM's slots set again with the dirty log (vm_vm_snapshot.c track_start), an
 * overlay reflinked from the snapshot's copy (snapshot_io.c).
 */
static const unsigned long restore_ioctls[] = {
	KVM_SET_REGS,
	KVM_SET_SREGS,
	KVM_SET_XSAVE,
	KVM_SET_XCRS,
	KVM_SET_LAPIC,
	KVM_SET_VCPU_EVENTS,
	KVM_SET_MP_STATE,
	KVM_SET_DEBUGREGS,
	KVM_SET_MSRS,
	KVM_SET_IRQCHIP,
	KVM_SET_PIT2,
	KVM_SET_CLOCK,
	KVM_GET_REGS,
	KVM_GET_SREGS,
	KVM_GET_LAPIC,
	KVM_GET_VCPU_EVENTS,
	KVM_GET_MSRS,
	KVM_GET_IRQCHIP,
	KVM_SET_USER_MEMORY_REGION,
	FICLONE,
};

struct role_spec {
	const char *name;
	const int *groups[8]; /* NULL-terminated */
	const unsigned long *ioctls;
	size_t nioctls;
	int unix_sockets; /* socket(AF_UNIX, ...) */
	int reap_nohang;  /* wait4(..., WNOHANG, ...) */
};

/*
 * vcpu: KVM_RUN and what an exit handled on the vCPU does (serial output,
 * interrupts, a virtio status write activating or resetting a device).
 * device: every device backend. control: vm_run's caller, kiln-vmm's
 * control socket thread, snapshots and teardown. restore: a restored VM's
 * snapshot read before it runs.
 */
static const struct role_spec roles[SECCOMP_ROLE_COUNT] = {
	[SECCOMP_ROLE_VCPU] = { "vcpu",
				{ base, loop_watches, socket_io },
				vcpu_ioctls,
				N(vcpu_ioctls),
				0 },
	[SECCOMP_ROLE_DEVICE] = { "device",
				  { base, loop_watches, socket_io, file_io, dir_ops, share_ops,
				    device_own },
				  NULL,
				  0,
				  1,
				  1 },
	[SECCOMP_ROLE_CONTROL] = { "control",
				   { base, loop_watches, socket_io, file_io, dir_ops, share_save,
				     control_own },
				   control_ioctls,
				   N(control_ioctls),
				   0 },
	/* restore: vm_load's thread, in the jail before any VM thread runs
	 * (every VM: overlay headers; a restore: the snapshot too): the
	 * snapshot's files and the overlays' headers read (file_io, dir_ops), RAM mapped from them,
	 * overlays written in place, each virtio-fs node and handle reopened
	 * beneath its share (share_save: openat2, readlinkat), a vsock
	 * device's retry timer armed (loop_watches), a network device's held
	 * frames and probes to its backend (socket_io), KVM state set. */
	[SECCOMP_ROLE_RESTORE] = { "restore",
				   { base, loop_watches, socket_io, file_io, dir_ops, share_save },
				   restore_ioctls,
				   N(restore_ioctls),
				   0 },
};

const char *seccomp_role_name(enum seccomp_role role)
{
	return (unsigned)role < SECCOMP_ROLE_COUNT ? roles[role].name : "?";
}

static int add_group(scmp_filter_ctx ctx, const int *calls)
{
	int r;

	for (; *calls != END; calls++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, *calls, 0)) < 0)
			return r;
	return 0;
}

/* The argument rules every role shares. */
static int add_common(scmp_filter_ctx ctx)
{
	int r;

	/* No new executable memory: a guest that takes over a thread cannot
	 * map code of its own (PROT_EXEC bit clear). */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				  SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))) < 0 ||
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				  SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))) < 0)
		return r;
	/* pthread_kill (vCPU kicks) and raise: threads of this process only. */
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
}

static int add_role(scmp_filter_ctx ctx, const struct role_spec *s)
{
	int r;

	if ((r = add_common(ctx)))
		return r;
	for (size_t i = 0; i < N(s->groups) && s->groups[i]; i++)
		if ((r = add_group(ctx, s->groups[i])))
			return r;
	for (size_t i = 0; i < s->nioctls; i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					  SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)s->ioctls[i]))) < 0)
			return r;
	if (s->unix_sockets &&
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				  SCMP_A0(SCMP_CMP_EQ, AF_UNIX))) < 0)
		return r;
	/* A network backend that finds passt's socket closed asks how passt
	 * ended (devices/net/net_passt.c, passt_gone): a reap that never
	 * waits. The control role reaps at teardown (control_own). */
	if (s->reap_nohang &&
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(wait4), 1,
				  SCMP_A2(SCMP_CMP_EQ, WNOHANG))) < 0)
		return r;
	return 0;
}

/* libseccomp 2.5 exports BPF only to an fd: a memfd, read back. */
static int export_prog(scmp_filter_ctx ctx, struct seccomp_prog *out)
{
	int fd = memfd_create("kiln-seccomp", MFD_CLOEXEC);
	off_t len;
	void *buf;
	int r;

	if (fd < 0)
		return -errno;
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	len = lseek(fd, 0, SEEK_END);
	if (len <= 0 || len % (off_t)sizeof(struct sock_filter) ||
	    len / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		r = -E2BIG;
		goto out;
	}
	buf = malloc((size_t)len);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	if (pread(fd, buf, (size_t)len, 0) != len) {
		r = -EIO;
		free(buf);
		goto out;
	}
	out->insns = buf;
	out->len = (unsigned short)(len / (off_t)sizeof(struct sock_filter));
	r = 0;
out:
	close(fd);
	return r;
}

int seccomp_filter_build(enum seccomp_role role, enum seccomp_filter_mode mode,
			 struct seccomp_prog *out, struct err *e)
{
	uint32_t deny = mode == SECCOMP_FILTER_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx ctx;
	int r;

	memset(out, 0, sizeof(*out));
	if ((unsigned)role >= SECCOMP_ROLE_COUNT)
		return err_set(e, EINVAL, "seccomp: no thread role %d", (int)role);
	ctx = seccomp_init(deny);
	if (!ctx)
		return err_set(e, ENOMEM, "seccomp: cannot start the %s filter (out of memory?)",
			       roles[role].name);
	/* The program is loaded by seccomp_filter_load, which sets NO_NEW_PRIVS
	 * itself; a foreign architecture's syscall numbers are refused by the
	 * default architecture check. */
	r = add_role(ctx, &roles[role]);
	if (!r)
		r = export_prog(ctx, out);
	seccomp_release(ctx);
	if (r)
		return err_set(e, -r, "seccomp: cannot build the %s thread filter: %s",
			       roles[role].name, strerror(-r));
	return 0;
}

int seccomp_filter_load(const struct seccomp_prog *p)
{
	struct sock_fprog f = { .len = p->len, .filter = p->insns };

	if (!p->insns)
		return -EINVAL;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f) < 0)
		return -errno;
	return 0;
}

void seccomp_prog_free(struct seccomp_prog *p)
{
	free(p->insns);
	memset(p, 0, sizeof(*p));
}

/* The importer's own seccomp filter; see import_seccomp.h. */
#include "api/image-import/import_seccomp.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Refused with EPERM, whatever the arguments. */
static const int refused[] = {
	/* other processes */
	SCMP_SYS(ptrace),
	SCMP_SYS(process_vm_readv),
	SCMP_SYS(process_vm_writev),
	SCMP_SYS(kcmp),
	SCMP_SYS(pidfd_getfd),
	/* namespaces and mounts */
	SCMP_SYS(unshare),
	SCMP_SYS(setns),
	SCMP_SYS(mount),
	SCMP_SYS(umount2),
	SCMP_SYS(pivot_root),
	SCMP_SYS(chroot),
	SCMP_SYS(open_tree),
	SCMP_SYS(move_mount),
	SCMP_SYS(fsopen),
	SCMP_SYS(fsconfig),
	SCMP_SYS(fsmount),
	SCMP_SYS(fspick),
	SCMP_SYS(mount_setattr),
	SCMP_SYS(open_by_handle_at),
	SCMP_SYS(name_to_handle_at),
	/* kernel surface an importer never needs */
	SCMP_SYS(bpf),
	SCMP_SYS(perf_event_open),
	SCMP_SYS(userfaultfd),
	SCMP_SYS(io_uring_setup),
	SCMP_SYS(io_uring_enter),
	SCMP_SYS(io_uring_register),
	SCMP_SYS(keyctl),
	SCMP_SYS(add_key),
	SCMP_SYS(request_key),
	SCMP_SYS(init_module),
	SCMP_SYS(finit_module),
	SCMP_SYS(delete_module),
	SCMP_SYS(kexec_load),
	SCMP_SYS(kexec_file_load),
	SCMP_SYS(reboot),
	SCMP_SYS(swapon),
	SCMP_SYS(swapoff),
	SCMP_SYS(acct),
	SCMP_SYS(quotactl),
	SCMP_SYS(syslog),
	SCMP_SYS(iopl),
	SCMP_SYS(ioperm),
	SCMP_SYS(settimeofday),
	SCMP_SYS(clock_settime),
	SCMP_SYS(clock_adjtime),
	SCMP_SYS(adjtimex),
	SCMP_SYS(sethostname),
	SCMP_SYS(setdomainname),
	SCMP_SYS(fanotify_init),
	SCMP_SYS(vhangup),
	SCMP_SYS(lookup_dcookie),
	/* leaving its process group, which kilnd kills whole when it ends */
	SCMP_SYS(setsid),
	SCMP_SYS(setpgid),
};

/* Terminal ioctls that type into, or drive, a terminal it might hold. */
static const unsigned long refused_ioctls[] = { TIOCSTI, TIOCLINUX };

static const unsigned long ns_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
};

static int add_rules(scmp_filter_ctx ctx)
{
	int r;

	for (size_t i = 0; i < N(refused); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), refused[i], 0)) < 0)
			return r;
	/* A new namespace through clone: one rule per flag (rules on one
	 * call are alternatives). clone3's flags sit in memory the filter
	 * cannot read, so clone3 answers ENOSYS and the C library falls
	 * back to clone. */
	for (size_t i = 0; i < N(ns_flags); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					  SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))) <
		    0)
			return r;
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
		return r;
	for (size_t i = 0; i < N(refused_ioctls); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
					  SCMP_A1(SCMP_CMP_EQ, refused_ioctls[i]))) < 0)
			return r;
	/* Unix sockets only (the C library's name service may use one). */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
				  SCMP_A0(SCMP_CMP_NE, AF_UNIX))) < 0)
		return r;
	return 0;
}

int import_seccomp_load(struct err *e)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return err_set(e, ENOMEM,
			       "seccomp: cannot start the importer's filter (out of memory?)");
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)) < 0)
		goto out;
	if ((r = add_rules(ctx)) < 0)
		goto out;
	r = seccomp_load(ctx);
out:
	seccomp_release(ctx);
	if (r < 0)
		return err_set(e, -r, "seccomp: cannot load the importer's filter: %s",
			       strerror(-r));
	return 0;
}

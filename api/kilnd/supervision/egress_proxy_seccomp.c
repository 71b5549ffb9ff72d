/* The egress proxy's seccomp allowlist; see egress_proxy_seccomp.h. */
#include "api/kilnd/supervision/egress_proxy_seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <linux/seccomp.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Allowed whatever the arguments. */
static const int allowed[] = {
	/* descriptors and files (its egress/ directory, the C library's /etc files) */
	SCMP_SYS(read),
	SCMP_SYS(write),
	SCMP_SYS(readv),
	SCMP_SYS(writev),
	SCMP_SYS(pread64),
	SCMP_SYS(pwrite64),
	SCMP_SYS(close),
	SCMP_SYS(close_range),
	SCMP_SYS(openat),
	SCMP_SYS(open),
	SCMP_SYS(newfstatat),
	SCMP_SYS(fstat),
	SCMP_SYS(stat),
	SCMP_SYS(lstat),
	SCMP_SYS(statx),
	SCMP_SYS(lseek),
	SCMP_SYS(access),
	SCMP_SYS(faccessat),
	SCMP_SYS(faccessat2),
	SCMP_SYS(readlink),
	SCMP_SYS(readlinkat),
	SCMP_SYS(getcwd),
	SCMP_SYS(getdents64),
	SCMP_SYS(unlink),
	SCMP_SYS(unlinkat),
	SCMP_SYS(rename),
	SCMP_SYS(renameat),
	SCMP_SYS(renameat2),
	SCMP_SYS(mkdir),
	SCMP_SYS(mkdirat),
	SCMP_SYS(fsync),
	SCMP_SYS(fdatasync),
	SCMP_SYS(ftruncate),
	SCMP_SYS(fchmod),
	SCMP_SYS(umask),
	SCMP_SYS(fadvise64),
	SCMP_SYS(dup),
	SCMP_SYS(dup2),
	SCMP_SYS(dup3),
	SCMP_SYS(pipe),
	SCMP_SYS(pipe2),
	SCMP_SYS(fcntl),
	SCMP_SYS(eventfd2),
	SCMP_SYS(timerfd_create),
	SCMP_SYS(timerfd_settime),
	SCMP_SYS(timerfd_gettime),
	/* memory */
	SCMP_SYS(mmap),
	SCMP_SYS(munmap),
	SCMP_SYS(mprotect),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	SCMP_SYS(brk),
	/* threads, signals, time */
	SCMP_SYS(futex),
	SCMP_SYS(set_robust_list),
	SCMP_SYS(get_robust_list),
	SCMP_SYS(rseq),
	SCMP_SYS(set_tid_address),
	SCMP_SYS(arch_prctl),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigtimedwait),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(signalfd),
	SCMP_SYS(signalfd4),
	SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	SCMP_SYS(getppid),
	SCMP_SYS(tgkill),
	SCMP_SYS(getrandom),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(time),
	SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(membarrier),
	/* waiting */
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	SCMP_SYS(select),
	SCMP_SYS(pselect6),
	SCMP_SYS(epoll_create1),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	/* the network, on sockets it made (socket() is filtered by family below) */
	SCMP_SYS(connect),
	SCMP_SYS(accept),
	SCMP_SYS(accept4),
	SCMP_SYS(bind),
	SCMP_SYS(listen),
	SCMP_SYS(getsockname),
	SCMP_SYS(getpeername),
	SCMP_SYS(setsockopt),
	SCMP_SYS(getsockopt),
	SCMP_SYS(sendto),
	SCMP_SYS(recvfrom),
	SCMP_SYS(sendmsg),
	SCMP_SYS(recvmsg),
	SCMP_SYS(sendmmsg),
	SCMP_SYS(recvmmsg),
	SCMP_SYS(shutdown),
	/* who it is, what it may use */
	SCMP_SYS(getuid),
	SCMP_SYS(geteuid),
	SCMP_SYS(getgid),
	SCMP_SYS(getegid),
	SCMP_SYS(getgroups),
	SCMP_SYS(uname),
	SCMP_SYS(prlimit64),
	SCMP_SYS(getrlimit),
	SCMP_SYS(sysinfo),
	/* the exec of kiln-egress itself (the filter is installed before it) */
	SCMP_SYS(execve),
	SCMP_SYS(execveat),
};

/* ioctl only for these (stdio's isatty, non-blocking and readiness queries). */
static const unsigned long allowed_ioctls[] = { TCGETS, FIONBIO, FIONREAD, FIOCLEX };

static const int families[] = { AF_INET, AF_INET6, AF_NETLINK };

/* A thread: the flags pthread_create passes; never a new process or namespace. */
#define THREAD_FLAGS (CLONE_VM | CLONE_THREAD)
#define NS_FLAGS                                                                                   \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	 CLONE_NEWCGROUP)

static int add_rules(scmp_filter_ctx ctx)
{
	int r;

	for (size_t i = 0; i < N(allowed); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0)) < 0)
			return r;
	for (size_t i = 0; i < N(allowed_ioctls); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					  SCMP_A1(SCMP_CMP_EQ, allowed_ioctls[i]))) < 0)
			return r;
	for (size_t i = 0; i < N(families); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
					  SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]))) < 0)
			return r;
	/* clone for threads only: CLONE_VM and CLONE_THREAD set, no namespace flag. */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				  SCMP_A0(SCMP_CMP_MASKED_EQ, THREAD_FLAGS | NS_FLAGS,
					  THREAD_FLAGS))) < 0)
		return r;
	/* clone3's flags are in memory the filter cannot read. */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
		return r;
	return 0;
}

/* The program libseccomp made, read back from a memory file. */
static int export(scmp_filter_ctx ctx, struct egress_filter *f)
{
	int fd = memfd_create("egress-seccomp", MFD_CLOEXEC), r = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		r = -EINVAL;
		goto out;
	}
	f->insns = malloc((size_t)st.st_size);
	if (!f->insns) {
		r = -ENOMEM;
		goto out;
	}
	if (pread(fd, f->insns, (size_t)st.st_size, 0) != st.st_size) {
		r = -EIO;
		goto out;
	}
	f->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
out:
	close(fd);
	return r;
}

int egress_filter_build(struct egress_filter *f, struct err *e)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	memset(f, 0, sizeof(*f));
	if (!ctx)
		return err_set(e, ENOMEM,
			       "seccomp: cannot start the egress proxy's filter (out of memory?)");
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (r = add_rules(ctx)) < 0 || (r = export(ctx, f)) < 0)
		egress_filter_free(f);
	seccomp_release(ctx);
	if (r < 0)
		return err_set(e, -r, "seccomp: cannot build the egress proxy's filter: %s",
			       strerror(-r));
	return 0;
}

void egress_filter_free(struct egress_filter *f)
{
	free(f->insns);
	f->insns = NULL;
	f->len = 0;
}

int egress_filter_install(const struct egress_filter *f)
{
	struct sock_fprog prog = { f->len, f->insns };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

/*
 * api/kilnd/supervision/egress_proxy_seccomp.c: the allowlist kilnd puts
 * on the egress proxy. What a proxy does works under it (files, threads,
 * IPv4/IPv6/netlink sockets); what a compromised one would try next fails
 * with EPERM: ptrace, a new process, namespaces, mounts, bpf, io_uring,
 * userfaultfd, a Unix socket (the host's abstract ones share its network
 * namespace), setuid; clone3 is ENOSYS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/kilnd/supervision/egress_proxy_seccomp.h"
#include "tests/unit/in_child.h"

static int refused(long r, int want)
{
	return r == -1 && errno == want;
}

static void *thread_main(void *arg)
{
	return arg;
}

static int probe(void *arg)
{
	const struct egress_filter *f = arg;
	pthread_t th;
	void *ret = NULL;
	int fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || egress_filter_install(f) < 0)
		return 1;
	/* what the proxy does */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 2;
	close(fd);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 3;
	close(fd);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 4;
	close(fd);
	fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 5;
	close(fd);
	if (pthread_create(&th, NULL, thread_main, (void *)7) || pthread_join(th, &ret) ||
	    ret != (void *)7)
		return 6;
	/* what it may not */
	if (!refused(socket(AF_UNIX, SOCK_STREAM, 0), EPERM))
		return 10;
	if (!refused(socket(AF_PACKET, SOCK_RAW, 0), EPERM))
		return 11;
	if (!refused(ptrace(PTRACE_ATTACH, getppid(), 0, 0), EPERM))
		return 12;
	if (!refused(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0), EPERM))
		return 13;
	if (!refused(syscall(SYS_clone3, NULL, 0), ENOSYS))
		return 14;
	if (!refused(syscall(SYS_unshare, CLONE_NEWNS), EPERM))
		return 15;
	if (!refused(mount("none", "/", NULL, MS_REMOUNT, NULL), EPERM))
		return 16;
	if (!refused(syscall(SYS_bpf, 0, NULL, 0), EPERM))
		return 17;
	if (!refused(syscall(SYS_io_uring_setup, 1, NULL), EPERM))
		return 18;
	if (!refused(syscall(SYS_userfaultfd, 0), EPERM))
		return 19;
	if (!refused(syscall(SYS_setresuid, 0, 0, 0), EPERM))
		return 20;
	if (!refused(kill(getppid(), 0), EPERM))
		return 21;
	if (!refused(syscall(SYS_clone, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_NEWNET, 0,
			     0, 0, 0),
		     EPERM))
		return 22;
	return 0;
}

static void test_allowlist(void **state)
{
	struct egress_filter f;
	struct err e;

	(void)state;
	assert_int_equal(egress_filter_build(&f, &e), 0);
	assert_true(f.len > 0);
	assert_int_equal(in_child(probe, &f), 0);
	egress_filter_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowlist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

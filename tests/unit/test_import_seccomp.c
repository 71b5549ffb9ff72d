/*
 * Unit tests of api/image-import/import_seccomp.c: the seccomp filter
 * kiln-image-import puts on itself before it reads a byte of the archive
 * (docs/security.md, "Image import"). The importer parses hostile archives
 * with libarchive and runs mkfs.ext4 and debugfs, so it cannot have an
 * allowlist as tight as kiln-vmm's threads; instead every call that reaches
 * past its own files is refused with EPERM: other processes (ptrace,
 * process_vm_*, kcmp), namespaces and mounts (unshare, setns, mount and the
 * new mount API, pivot_root, chroot, clone with namespace flags), the
 * kernel's attack surface it never needs (bpf, perf_event_open,
 * userfaultfd, io_uring, keyrings, modules, kexec, reboot, swap, the clock,
 * host names), and every socket that is not AF_UNIX, leaving its process
 * group (setsid, setpgid) and the terminal ioctls TIOCSTI and TIOCLINUX.
 * clone3 answers ENOSYS, so the C library falls back to clone, whose flags
 * the filter can see. The filter is inherited by what the importer
 * executes; calls of a foreign ABI (i386, x32) kill the process.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "api/image-import/import_seccomp.h"
#include "tests/unit/in_child.h"

static int refused(long r, int want)
{
	return r == -1 && errno == want;
}

static int filtered(void *arg)
{
	struct err e;
	int fd, st;
	pid_t pid;

	(void)arg;
	if (import_seccomp_load(&e) < 0)
		return 1;
	if (!refused(syscall(SYS_unshare, CLONE_NEWUTS), EPERM))
		return 2;
	if (!refused(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0), EPERM))
		return 3;
	if (!refused(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), EPERM) ||
	    !refused(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0), EPERM))
		return 4;
	fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 5;
	close(fd);
	if (!refused(syscall(SYS_clone3, NULL, 0), ENOSYS))
		return 6;
	if (!refused(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM))
		return 7;
	if (!refused(syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, NULL), EPERM) ||
	    !refused(syscall(SYS_bpf, 0, NULL, 0), EPERM))
		return 8;
	/* it stays in its process group, and types into no terminal */
	if (!refused(syscall(SYS_setsid), EPERM) || !refused(syscall(SYS_setpgid, 0, 0), EPERM) ||
	    !refused(syscall(SYS_ioctl, 0, TIOCSTI, "x"), EPERM))
		return 10;
	/* What it runs inherits the filter, and plain processes still start:
	 * unshare(1) (util-linux) is refused inside; true is not. */
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		char *argv[] = { "sh", "-c", "unshare -u true 2>/dev/null && exit 1; true", NULL };

		execve("/bin/sh", argv, (char *[]){ "PATH=/usr/bin:/bin:/usr/sbin:/sbin", NULL });
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 9;
	return 0;
}

static void test_seccomp_refuses_what_an_importer_never_needs(void **state)
{
	(void)state;
	assert_int_equal(in_child(filtered, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seccomp_refuses_what_an_importer_never_needs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * vmm/jail/seccomp_filter.c: each thread role's filter, loaded in a forked
 * child, lets that role's calls through and kills the whole process with
 * SIGSYS at the first call outside its allowlist: execve, ptrace, an inet
 * socket, an ioctl the role does not use, executable memory, a signal to
 * another process. In log mode the same calls run. The children make raw
 * syscall()s and leave with _exit: once the filter is in, nothing of the
 * sanitizers' runtime (which makes syscalls of its own) may run there.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "devices/fs/fuse_remote_io.h"
#include "vmm/jail/seccomp_filter.h"

/* The process the filters were built in (the children's parent). */
static pid_t builder;

/* What a child does once filtered; returns its exit code (0: as hoped). */
typedef int probe_fn(void);

/* Fork; the child loads role's filter in mode and runs probe. The wait status. */
static int run_filtered(enum seccomp_role role, enum seccomp_filter_mode mode, probe_fn *probe)
{
	struct seccomp_prog p;
	struct err e = { { 0 } };
	int status = -1;
	pid_t pid;

	assert_int_equal(seccomp_filter_build(role, mode, &p, &e), 0);
	assert_non_null(p.insns);
	builder = getpid();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (seccomp_filter_load(&p) < 0)
			syscall(SYS_exit_group, 100);
		syscall(SYS_exit_group, probe());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	seccomp_prog_free(&p);
	return status;
}

static void assert_sigsys(int status)
{
	if (!WIFSIGNALED(status))
		fail_msg("child not killed: exit status %d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	assert_int_equal(WTERMSIG(status), SIGSYS);
}

static void assert_exit0(int status)
{
	if (WIFSIGNALED(status))
		fail_msg("child killed by signal %d", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Calls every role makes: the allowed half of each probe. */
static int allowed_only(void)
{
	void *p;

	if (syscall(SYS_getpid) <= 0 || syscall(SYS_gettid) <= 0)
		return 1;
	p = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || syscall(SYS_munmap, p, 4096) < 0)
		return 2;
	/* a signal into the process the filter was built in (the parent
	 * here; in kiln-vmm its own): allowed (signal 0 sends nothing) */
	if (syscall(SYS_tgkill, builder, builder, 0) < 0)
		return 3;
	return 0;
}

static int do_execve(void)
{
	char *argv[] = { "/bin/true", NULL }, *envp[] = { NULL };

	syscall(SYS_execve, "/bin/true", argv, envp);
	return 10;
}

static int do_ptrace(void)
{
	syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
	return 10;
}

static int do_inet_socket(void)
{
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	return 10;
}

static int do_unix_socket(void)
{
	return syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0) >= 0 ? 0 : 11;
}

static int do_exec_memory(void)
{
	syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return 10;
}

static int do_kill_other(void)
{
	/* tgkill of any other process (this child is one: the filter was
	 * built in its parent; signal 0 sends nothing) */
	syscall(SYS_tgkill, getpid(), getpid(), 0);
	return 10;
}

static int do_kvm_create_vm(void)
{
	syscall(SYS_ioctl, -1, KVM_CREATE_VM, 0);
	return 10;
}

static int do_kvm_run(void)
{
	/* allowed for a vCPU: fails with EBADF, does not kill */
	return syscall(SYS_ioctl, -1, KVM_RUN, 0) < 0 && errno == EBADF ? 0 : 11;
}

static int do_fork(void)
{
	syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	return 10;
}

static int do_openat(void)
{
	syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY);
	return 10;
}

static const enum seccomp_role all_roles[] = { SECCOMP_ROLE_VCPU, SECCOMP_ROLE_DEVICE,
					       SECCOMP_ROLE_CONTROL, SECCOMP_ROLE_RESTORE };
#define NROLES (sizeof(all_roles) / sizeof(all_roles[0]))

static void test_allowed_calls_run_in_every_role(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROLES; i++)
		assert_exit0(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, allowed_only));
}

static void test_execve_ptrace_fork_kill_every_role(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROLES; i++) {
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_execve));
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_ptrace));
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_fork));
	}
}

static void test_exec_memory_and_foreign_signals_kill_every_role(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROLES; i++) {
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_exec_memory));
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_kill_other));
	}
}

static void test_inet_sockets_kill_every_role(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROLES; i++)
		assert_sigsys(run_filtered(all_roles[i], SECCOMP_FILTER_KILL, do_inet_socket));
}

static void test_device_role_opens_unix_sockets_and_files(void **state)
{
	(void)state;
	assert_exit0(run_filtered(SECCOMP_ROLE_DEVICE, SECCOMP_FILTER_KILL, do_unix_socket));
	/* a vCPU opens nothing: its sockets come from the device model */
	assert_sigsys(run_filtered(SECCOMP_ROLE_VCPU, SECCOMP_FILTER_KILL, do_unix_socket));
	assert_sigsys(run_filtered(SECCOMP_ROLE_VCPU, SECCOMP_FILTER_KILL, do_openat));
}

/* A client-served share's exchange (devices/fs/fuse_remote_io.c) with a
 * server that listens and never answers: connect, send, poll until the
 * timeout, close. */
static char share_sock[108];

static int do_share_exchange(void)
{
	struct fuse_remote_io io;
	const char *reply;
	long n;

	if (fuse_remote_io_init(&io, share_sock, FS_REMOTE_TIMEOUT_MS_MIN) < 0)
		return 12;
	n = fuse_remote_io_call(&io, "{}\n", 3, &reply);
	fuse_remote_io_fini(&io);
	return n == -ETIMEDOUT && io.st.connects == 1 ? 0 : 11;
}

static void test_device_role_waits_for_a_share_reply(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)state;
	snprintf(share_sock, sizeof(share_sock), "/tmp/kiln-seccomp-share-%d.sock", getpid());
	strcpy(sa.sun_path, share_sock);
	unlink(share_sock);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_exit0(run_filtered(SECCOMP_ROLE_DEVICE, SECCOMP_FILTER_KILL, do_share_exchange));
	close(l);
	unlink(share_sock);
}

static int do_reap_nohang(void)
{
	/* no child: ECHILD, not a kill */
	return syscall(SYS_wait4, -1, NULL, WNOHANG, NULL) < 0 && errno == ECHILD ? 0 : 11;
}

static int do_reap_blocking(void)
{
	syscall(SYS_wait4, -1, NULL, 0, NULL);
	return 10;
}

/* The device thread learns how passt ended when its socket closes (a
 * host without an uplink: passt exits at once). It was killed for it,
 * so kiln-vmm died with no word of why; it may only reap without waiting. */
static void test_device_role_reaps_without_waiting(void **state)
{
	(void)state;
	assert_exit0(run_filtered(SECCOMP_ROLE_DEVICE, SECCOMP_FILTER_KILL, do_reap_nohang));
	assert_sigsys(run_filtered(SECCOMP_ROLE_DEVICE, SECCOMP_FILTER_KILL, do_reap_blocking));
	assert_sigsys(run_filtered(SECCOMP_ROLE_VCPU, SECCOMP_FILTER_KILL, do_reap_nohang));
	assert_exit0(run_filtered(SECCOMP_ROLE_CONTROL, SECCOMP_FILTER_KILL, do_reap_nohang));
}

static void test_vcpu_ioctls_are_only_its_kvm_ones(void **state)
{
	(void)state;
	assert_exit0(run_filtered(SECCOMP_ROLE_VCPU, SECCOMP_FILTER_KILL, do_kvm_run));
	assert_sigsys(run_filtered(SECCOMP_ROLE_VCPU, SECCOMP_FILTER_KILL, do_kvm_create_vm));
	/* the device thread has no ioctl at all; control reads state, never creates */
	assert_sigsys(run_filtered(SECCOMP_ROLE_DEVICE, SECCOMP_FILTER_KILL, do_kvm_run));
	assert_sigsys(run_filtered(SECCOMP_ROLE_CONTROL, SECCOMP_FILTER_KILL, do_kvm_run));
	assert_sigsys(run_filtered(SECCOMP_ROLE_CONTROL, SECCOMP_FILTER_KILL, do_kvm_create_vm));
}

static int do_kvm_set_regs(void)
{
	/* allowed for the restore thread: fails with EBADF, does not kill */
	return syscall(SYS_ioctl, -1, KVM_SET_REGS, 0) < 0 && errno == EBADF ? 0 : 11;
}

static int do_open_file(void)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY);

	return fd >= 0 ? 0 : 11;
}

/* The restore thread reads snapshot files and sets KVM state; it never
 * runs a vCPU, makes a VM or opens a socket. */
static void test_restore_role_reads_files_and_sets_kvm_state_only(void **state)
{
	(void)state;
	assert_exit0(run_filtered(SECCOMP_ROLE_RESTORE, SECCOMP_FILTER_KILL, do_open_file));
	assert_exit0(run_filtered(SECCOMP_ROLE_RESTORE, SECCOMP_FILTER_KILL, do_kvm_set_regs));
	assert_sigsys(run_filtered(SECCOMP_ROLE_RESTORE, SECCOMP_FILTER_KILL, do_kvm_run));
	assert_sigsys(run_filtered(SECCOMP_ROLE_RESTORE, SECCOMP_FILTER_KILL, do_kvm_create_vm));
	assert_sigsys(run_filtered(SECCOMP_ROLE_RESTORE, SECCOMP_FILTER_KILL, do_unix_socket));
	/* control only reads KVM state */
	assert_sigsys(run_filtered(SECCOMP_ROLE_CONTROL, SECCOMP_FILTER_KILL, do_kvm_set_regs));
	assert_string_equal(seccomp_role_name(SECCOMP_ROLE_RESTORE), "restore");
}

static void test_log_mode_kills_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROLES; i++) {
		assert_exit0(run_filtered(all_roles[i], SECCOMP_FILTER_LOG, allowed_only));
		assert_int_equal(WEXITSTATUS(
					 run_filtered(all_roles[i], SECCOMP_FILTER_LOG, do_ptrace)),
				 10);
		assert_int_equal(WEXITSTATUS(run_filtered(all_roles[i], SECCOMP_FILTER_LOG,
							  do_inet_socket)),
				 10);
	}
}

static void test_bad_role_is_refused(void **state)
{
	struct seccomp_prog p;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(seccomp_filter_build(SECCOMP_ROLE_COUNT, SECCOMP_FILTER_KILL, &p, &e),
			 -EINVAL);
	assert_null(p.insns);
	assert_non_null(strstr(e.msg, "no thread role"));
	assert_int_equal(seccomp_filter_load(&p), -EINVAL);
	assert_string_equal(seccomp_role_name(SECCOMP_ROLE_DEVICE), "device");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed_calls_run_in_every_role),
		cmocka_unit_test(test_execve_ptrace_fork_kill_every_role),
		cmocka_unit_test(test_exec_memory_and_foreign_signals_kill_every_role),
		cmocka_unit_test(test_inet_sockets_kill_every_role),
		cmocka_unit_test(test_device_role_waits_for_a_share_reply),
		cmocka_unit_test(test_device_role_opens_unix_sockets_and_files),
		cmocka_unit_test(test_device_role_reaps_without_waiting),
		cmocka_unit_test(test_vcpu_ioctls_are_only_its_kvm_ones),
		cmocka_unit_test(test_restore_role_reads_files_and_sets_kvm_state_only),
		cmocka_unit_test(test_log_mode_kills_nothing),
		cmocka_unit_test(test_bad_role_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

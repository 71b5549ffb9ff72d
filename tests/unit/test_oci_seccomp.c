/*
 * oci_seccomp: the BPF filter compiled from ctr_create's `seccomp` is
 * installed for real in a child (no_new_privs, so no privilege needed)
 * and judged by the system calls it then makes: each rule's action, the
 * 64-bit argument comparisons on both words, the first matching rule
 * deciding, the default action, and the bound on the program's length.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest-init/agent/oci_seccomp.h"

/* The result of syscall(nr, a0) under s's filter: its value, or -errno. */
static long under(const struct agent_seccomp *s, long nr, unsigned long a0)
{
	struct oci_seccomp f;
	char why[128];
	int p[2], st;
	long r = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(oci_seccomp_compile(s, &f, why, sizeof(why)), 0);
	assert_int_equal(pipe(p), 0);
	/* The calls tried include close(0x100000005), which the filter lets
	 * through and the kernel reads as close(5): the write end must not be
	 * a number any of them names (it was 5 under tests/unit/run now and
	 * then, and the child's answer was lost). */
	{
		int w = fcntl(p[1], F_DUPFD, 700);

		assert_true(w >= 700);
		close(p[1]);
		p[1] = w;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long v;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || oci_seccomp_install(&f) < 0)
			_exit(2);
		v = syscall(nr, a0, 0, 0, 0, 0, 0);
		v = v < 0 ? -errno : v;
		if (write(p[1], &v, sizeof(v)) != sizeof(v))
			_exit(errno > 0 && errno < 100 ? 100 + errno : 3);
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], &r, sizeof(r));
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* The child's end first: it says why nothing was read (2: the filter
	 * was not installed, 100 + errno: the write failed, a signal). */
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the filtered child ended with %s %d (read %zd)",
			 WIFEXITED(st) ? "status" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), n);
	assert_int_equal(n, sizeof(r));
	oci_seccomp_free(&f);
	return r;
}

static void test_rules_and_default(void **state)
{
	struct agent_sc_rule rules[] = {
		{ .nr = SYS_getppid, .action = AGENT_SC_ERRNO, .errno_ret = 42 },
		/* close(fd): fd compared as the 64-bit register it is */
		{ .nr = SYS_close,
		  .action = AGENT_SC_ERRNO,
		  .errno_ret = 77,
		  .args = { { .index = 0, .op = AGENT_SC_GT, .value = 0x100000005ull } },
		  .nargs = 1 },
		{ .nr = SYS_close,
		  .action = AGENT_SC_ERRNO,
		  .errno_ret = 78,
		  .args = { { .index = 0,
			      .op = AGENT_SC_MASKED_EQ,
			      .value = 0xff,
			      .value_two = 0x42 } },
		  .nargs = 1 },
		{ .nr = SYS_close,
		  .action = AGENT_SC_ERRNO,
		  .errno_ret = 79,
		  .args = { { .index = 0, .op = AGENT_SC_GE, .value = 1000 },
			    { .index = 0, .op = AGENT_SC_LE, .value = 1001 } },
		  .nargs = 2 },
		{ .nr = SYS_close,
		  .action = AGENT_SC_ERRNO,
		  .errno_ret = 80,
		  .args = { { .index = 0, .op = AGENT_SC_LT, .value = 0x100000000ull },
			    { .index = 0, .op = AGENT_SC_NE, .value = 5000 },
			    { .index = 0, .op = AGENT_SC_EQ, .value = 5001 } },
		  .nargs = 3 },
		/* never reached for getppid: the first rule decides */
		{ .nr = SYS_getppid, .action = AGENT_SC_ALLOW },
	};
	struct agent_seccomp s = { .default_action = AGENT_SC_ALLOW,
				   .rules = rules,
				   .nrules = sizeof(rules) / sizeof(rules[0]) };

	(void)state;
	assert_int_equal(under(&s, SYS_getppid, 0), -42);
	assert_true(under(&s, SYS_getpid, 0) > 0); /* the default */
	assert_int_equal(under(&s, SYS_close, 0x100000006ull), -77);
	assert_int_equal(under(&s, SYS_close, 0x200000000ull), -77);
	/* high word below, low word above: not greater */
	assert_int_equal(under(&s, SYS_close, 0x0ffffffffull), -EBADF);
	assert_int_equal(under(&s, SYS_close, 0x100000005ull), -EBADF);
	assert_int_equal(under(&s, SYS_close, 0x1342), -78);
	assert_int_equal(under(&s, SYS_close, 999), -EBADF);
	assert_int_equal(under(&s, SYS_close, 1000), -79);
	assert_int_equal(under(&s, SYS_close, 1001), -79);
	assert_int_equal(under(&s, SYS_close, 1002), -EBADF);
	assert_int_equal(under(&s, SYS_close, 5001), -80);
	assert_int_equal(under(&s, SYS_close, 5000), -EBADF);
	assert_int_equal(under(&s, SYS_close, 0x100001389ull), -77); /* 5001 above 2^32: GT first */
}

/* An allow list, as Docker's and Podman's profiles are: what is not
 * named gets the default errno. */
static void test_allow_list(void **state)
{
	struct agent_sc_rule rules[] = {
		{ .nr = SYS_write, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_exit_group, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_exit, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_getppid, .action = AGENT_SC_ALLOW },
		/* what the sanitizers' runtime calls on its way out */
		{ .nr = SYS_sigaltstack, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_mmap, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_munmap, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_rt_sigprocmask, .action = AGENT_SC_ALLOW },
		{ .nr = SYS_rt_sigaction, .action = AGENT_SC_ALLOW },
	};
	struct agent_seccomp s = { .default_action = AGENT_SC_ERRNO,
				   .default_errno = 38,
				   .log = true,
				   .rules = rules,
				   .nrules = sizeof(rules) / sizeof(rules[0]) };

	(void)state;
	assert_true(under(&s, SYS_getppid, 0) > 0);
	assert_int_equal(under(&s, SYS_getpid, 0), -38);
}

static void test_bounded(void **state)
{
	static struct agent_sc_rule rules[AGENT_SECCOMP_RULES_MAX];
	struct agent_seccomp s = { .default_action = AGENT_SC_ALLOW, .rules = rules };
	struct oci_seccomp f;
	char why[128];

	(void)state;
	for (size_t i = 0; i < AGENT_SECCOMP_RULES_MAX; i++) {
		rules[i] = (struct agent_sc_rule){ .nr = (uint32_t)(i % 400),
						   .action = AGENT_SC_ALLOW };
		rules[i].nargs = AGENT_SECCOMP_ARGS_MAX;
	}
	s.nrules = AGENT_SECCOMP_RULES_MAX;
	assert_int_equal(oci_seccomp_compile(&s, &f, why, sizeof(why)), -E2BIG);
	assert_non_null(strstr(why, "BPF instructions, the kernel at most 4096"));
	/* 2047 rules without conditions: 4095 instructions */
	for (size_t i = 0; i < AGENT_SECCOMP_RULES_MAX; i++)
		rules[i].nargs = 0;
	s.nrules = 2044;
	assert_int_equal(oci_seccomp_compile(&s, &f, why, sizeof(why)), 0);
	assert_int_equal(f.prog.len, 6 + 2 * 2044 + 1);
	oci_seccomp_free(&f);
	s.nrules = 2045;
	assert_int_equal(oci_seccomp_compile(&s, &f, why, sizeof(why)), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_and_default),
		cmocka_unit_test(test_allow_list),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

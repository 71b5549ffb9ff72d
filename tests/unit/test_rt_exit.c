/*
 * api/runtime/rt_exit.c: the shim ends as its container did (exit code,
 * or death by the same signal, 255 for a crashed VM), and the exit file's
 * one line round trips; anything else in it is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_exit.h"

static void end_is(struct rt_exit x, enum rt_end_kind kind, int value)
{
	struct rt_end end;

	rt_exit_end(&x, &end);
	if (end.kind != kind || end.value != value)
		fail_msg("exit_code %d signal %d crashed %d: got %d/%d, want %d/%d", x.exit_code,
			 x.signo, x.vm_crashed, end.kind, end.value, kind, value);
}

static void test_end(void **state)
{
	(void)state;
	end_is((struct rt_exit){ 0, 0, false }, RT_END_EXIT, 0);
	end_is((struct rt_exit){ 7, 0, false }, RT_END_EXIT, 7);
	end_is((struct rt_exit){ 127, 0, false }, RT_END_EXIT, 127);
	/* conmon computes 137 from the shim's death by KILL, as for runc */
	end_is((struct rt_exit){ -1, SIGKILL, false }, RT_END_SIGNAL, SIGKILL);
	end_is((struct rt_exit){ -1, SIGTERM, false }, RT_END_SIGNAL, SIGTERM);
	end_is((struct rt_exit){ -1, SIGSEGV, false }, RT_END_SIGNAL, SIGSEGV);
	end_is((struct rt_exit){ -1, 40, false }, RT_END_SIGNAL, 40);
	/* these cannot end the shim if raised: a shell's 128 + n */
	end_is((struct rt_exit){ -1, SIGWINCH, false }, RT_END_EXIT, 128 + SIGWINCH);
	end_is((struct rt_exit){ -1, SIGSTOP, false }, RT_END_EXIT, 128 + SIGSTOP);
	end_is((struct rt_exit){ -1, SIGCHLD, false }, RT_END_EXIT, 128 + SIGCHLD);
	end_is((struct rt_exit){ -1, 0, true }, RT_END_EXIT, RT_EXIT_VM_CRASHED);
	end_is((struct rt_exit){ 3, 0, true }, RT_END_EXIT, RT_EXIT_VM_CRASHED);
	end_is((struct rt_exit){ -1, 0, false }, RT_END_EXIT, RT_EXIT_VM_CRASHED);
	end_is((struct rt_exit){ 300, 0, false }, RT_END_EXIT, RT_EXIT_VM_CRASHED);
}

static void test_file(void **state)
{
	static const struct rt_exit cases[] = {
		{ 0, 0, false },  { 7, 0, false },   { 255, 0, false },
		{ -1, 9, false }, { -1, 64, false }, { -1, 0, true },
	};
	char line[RT_EXIT_LINE_MAX];
	struct rt_exit got;
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = rt_exit_encode(&cases[i], line);

		assert_int_equal(rt_exit_decode(line, n, &got, &e), 0);
		assert_memory_equal(&got, &cases[i], sizeof(got));
	}
	assert_int_equal(rt_exit_encode(&cases[1], line),
			 strlen("exit_code=7 signal=0 vm_crashed=0\n"));
	assert_string_equal(line, "exit_code=7 signal=0 vm_crashed=0\n");
	static const char *const bad[] = {
		"",
		"exit_code=7 signal=0 vm_crashed=0",     /* no newline */
		"exit_code=7 signal=0 vm_crashed=0\n\n", /* two lines */
		"exit_code=7 signal=9 vm_crashed=0\n",   /* both */
		"exit_code=-1 signal=0 vm_crashed=0\n",  /* neither */
		"exit_code=256 signal=0 vm_crashed=0\n",
		"exit_code=-2 signal=9 vm_crashed=0\n",
		"exit_code=-0 signal=9 vm_crashed=0\n",
		"exit_code=-1 signal=65 vm_crashed=0\n",
		"exit_code=1 signal=0 vm_crashed=2\n",
		"exit_code=1  signal=0 vm_crashed=0\n",
		"exit_code=+1 signal=0 vm_crashed=0\n",
		"signal=0 exit_code=1 vm_crashed=0\n",
		"exit_code=1 signal=0 vm_crashed=0 x\n",
		"exit_code=1\n",
		"exit_code=-1 signal=02 vm_crashed=1\n", /* one spelling per value (fuzz_rt_exit) */
		"exit_code=007 signal=0 vm_crashed=0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rt_exit_decode(bad[i], strlen(bad[i]), &got, &e) != -EINVAL)
			fail_msg("taken: \"%s\"", bad[i]);
		assert_non_null(strstr(e.msg, "the exit file is not one line"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

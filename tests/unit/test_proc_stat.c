/*
 * proc_stat: /proc/PID/stat's start time read as hostile input (a process
 * name with spaces and parentheses, fields cut short, signs and garbage),
 * and the real file of this process.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/proc_stat.h"

#define S(x) (x), strlen(x)

static void test_proc_stat_start(void **state)
{
	uint64_t start = 7;
	/* Fields 3..22 after the name; 22 is 555. */
	const char *ok =
		"42 (kiln-vmm) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 555 12345 67 18446744073709551615\n";
	/* A name with spaces and ") (": counted from the last ')'. */
	const char *tricky =
		"42 (a) 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 (x) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 556 1 2\n";

	(void)state;
	assert_int_equal(proc_stat_start_time(S(ok), &start), 0);
	assert_true(start == 555);
	assert_int_equal(proc_stat_start_time(S(tricky), &start), 0);
	assert_true(start == 556);
	/* Cut short before field 22, no ')', double spaces, a sign, garbage. */
	assert_int_equal(proc_stat_start_time(
				 S("42 (kiln-vmm) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0\n"),
				 &start),
			 -EINVAL);
	assert_int_equal(
		proc_stat_start_time(
			S("42 kiln-vmm S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 555\n"),
			&start),
		-EINVAL);
	assert_int_equal(proc_stat_start_time(
				 S("42 (k) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0  555\n"),
				 &start),
			 -EINVAL);
	assert_int_equal(proc_stat_start_time(
				 S("42 (k) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 -555\n"),
				 &start),
			 -EINVAL);
	assert_int_equal(proc_stat_start_time(
				 S("42 (k) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 55x5\n"),
				 &start),
			 -EINVAL);
	assert_int_equal(proc_stat_start_time(S("42 (k)"), &start), -EINVAL);
	assert_int_equal(proc_stat_start_time("", 0, &start), -EINVAL);
	assert_true(start == 556);
}

/* The state letter after the name's last ')'; a cut or odd text refused. */
static void test_proc_stat_state(void **state)
{
	char st = '?';

	(void)state;
	assert_int_equal(proc_stat_state(S("42 (a) b) Z 1 42\n"), &st), 0);
	assert_int_equal(st, 'Z');
	assert_int_equal(proc_stat_state(S("42 (sleep) S 1"), &st), 0);
	assert_int_equal(st, 'S');
	assert_int_equal(proc_stat_state(S("42 (k) "), &st), -EINVAL);
	assert_int_equal(proc_stat_state(S("42 (k)  S 1"), &st), -EINVAL);
	assert_int_equal(proc_stat_state(S("42 (k) SS 1"), &st), -EINVAL);
	assert_int_equal(proc_stat_state(S("42 k S 1"), &st), -EINVAL);
	assert_int_equal(st, 'S');
}

/* The real file: this process's own start time, stable; no such pid: -ESRCH. */
static void test_proc_start_time_live(void **state)
{
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(proc_start_time(getpid(), &a), 0);
	assert_int_equal(proc_start_time(getpid(), &b), 0);
	assert_true(a == b);
	assert_int_equal(proc_start_time(0, &a), -ESRCH);
	assert_int_equal(proc_start_time(PROC_PID_MAX + 1, &a), -ESRCH);
	char st = 0;
	assert_int_equal(proc_stat_read(getpid(), &b, &st), 0);
	assert_true(a == b && st == 'R');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_stat_start),
		cmocka_unit_test(test_proc_stat_state),
		cmocka_unit_test(test_proc_start_time_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

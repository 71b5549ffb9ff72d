/*
 * fd_close: in a forked child (the way kiln-init and kiln-runtime use it),
 * every descriptor from 3 up is closed but the kept ones, whatever their
 * order, with -1 and 0..2 in keep ignored and 0..2 never closed; with
 * nothing kept, only 0..2 stay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base/fd_close.h"

/* In a child: open descriptors up to 40, keep keep[] (n of them), and
 * exit 0 exactly when 0..2 and want[] (a bit per fd) are what stays. */
static void expect_left(int *keep, size_t n, uint64_t want)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t left = 0;

		while (fcntl(0, F_DUPFD, 3) < 40)
			;
		fd_close_except(keep, n);
		for (int fd = 0; fd < 64; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				left |= 1ull << fd;
		_exit(left == (want | 7) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_keeps_only_those(void **state)
{
	int unsorted[3] = { 30, 5, 17 };
	int with_none[4] = { -1, 9, 1, 10 };
	int last[1] = { 3 };

	(void)state;
	expect_left(unsorted, 3, 1ull << 5 | 1ull << 17 | 1ull << 30);
	expect_left(with_none, 4, 1ull << 9 | 1ull << 10); /* adjacent: no empty range */
	expect_left(last, 1, 1ull << 3);
	expect_left(NULL, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_only_those),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * thread_start: the thread runs with THREAD_STACK_BYTES of stack, below
 * the 2 MiB a transparent huge page needs, and gets its argument.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/base/thread_start.h"

static void *report_stack(void *arg)
{
	pthread_attr_t a;
	size_t *size = arg;

	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstacksize(&a, size);
		pthread_attr_destroy(&a);
	}
	return arg;
}

static void test_stack_size_and_argument(void **state)
{
	size_t size = 0;
	pthread_t t;
	void *ret = NULL;

	(void)state;
	assert_int_equal(thread_start(&t, report_stack, &size), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, &size);
	assert_int_equal(size, THREAD_STACK_BYTES);
	assert_true(size < 2u << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_size_and_argument),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

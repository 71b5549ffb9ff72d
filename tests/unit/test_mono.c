/*
 * lib/base/mono.c, the one monotonic clock: the units are truncations of
 * one reading (never ahead of a later ns reading), time does not go back,
 * "no deadline" is 0 for ms <= 0, and the timespec deadline normalises
 * its nanoseconds (a carry at 999 ms, none for negative input).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "lib/base/mono.h"

static void test_units_agree(void **state)
{
	(void)state;
	for (int i = 0; i < 1000; i++) {
		uint64_t ns0 = mono_ns();
		int64_t us = mono_us(), ms = mono_ms();
		double msf = mono_ms_f();
		uint64_t ns1 = mono_ns();

		assert_true(ns1 >= ns0); /* never backwards */
		assert_true((uint64_t)us >= ns0 / 1000 && (uint64_t)us <= ns1 / 1000 + 1);
		assert_true((uint64_t)ms >= ns0 / 1000000 && (uint64_t)ms <= ns1 / 1000000 + 1);
		assert_true(msf >= (double)ns0 / 1e6 - 0.001 && msf <= (double)ns1 / 1e6 + 0.001);
		assert_true(ms >= 0 && us >= 0);
	}
}

static void test_same_clock_as_clock_gettime(void **state)
{
	struct timespec ts;
	uint64_t a, b, t;

	(void)state;
	a = mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	b = mono_ns();
	t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	assert_true(a <= t && t <= b);
}

static void test_deadline_ms(void **state)
{
	int64_t before, dl;

	(void)state;
	assert_int_equal(mono_deadline_ms(0), 0);
	assert_int_equal(mono_deadline_ms(-5), 0);
	assert_int_equal(mono_deadline_ms(INT64_MIN), 0);
	before = mono_ms();
	dl = mono_deadline_ms(1500);
	assert_true(dl >= before + 1500 && dl <= mono_ms() + 1500);
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void test_deadline_in(void **state)
{
	struct timespec dl;
	int64_t before;

	(void)state;
	for (int64_t ms = 0; ms < 3000; ms += 37) {
		before = (int64_t)mono_ns();
		mono_deadline_in(&dl, ms);
		assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L); /* normalised */
		assert_true(ts_ns(&dl) >= before + ms * 1000000);
		assert_true(ts_ns(&dl) <= (int64_t)mono_ns() + ms * 1000000);
	}
	/* 999 ms forces a carry into tv_sec whenever now's ns are >= 1 ms. */
	mono_deadline_in(&dl, 999);
	assert_true(dl.tv_nsec < 1000000000L);
	/* A negative wait is "now", never a time in the past that a
	 * timedwait would take as already passed... or an unnormalised one. */
	before = (int64_t)mono_ns();
	mono_deadline_in(&dl, -1500);
	assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
	assert_true(ts_ns(&dl) >= before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_agree),
		cmocka_unit_test(test_same_clock_as_clock_gettime),
		cmocka_unit_test(test_deadline_ms),
		cmocka_unit_test(test_deadline_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * reattach: what a restarted kilnd does with each record's VMM, for every
 * state and every answer it can meet (a keeper for this VMM, for another,
 * none, a damaged or missing vmm.exit, a record without a start time).
 * A VMM is kept or killed only after a verified attach; nothing else is
 * ever signalled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "api/kilnd/supervision/reattach.h"

static enum reattach_fate decide(enum sandbox_state st, int pid, uint64_t start, int attach,
				 bool recorded)
{
	struct reattach_seen s = { .state = st,
				   .pid = pid,
				   .vmm_start = start,
				   .attach = attach,
				   .exit_recorded = recorded };

	return reattach_decide(&s);
}

static void test_no_vmm_states(void **state)
{
	static const enum sandbox_state none[] = { SANDBOX_STOPPED, SANDBOX_CRASHED,
						   SANDBOX_HIBERNATED };

	(void)state;
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		assert_false(reattach_should_try(none[i], 42, 7));
		/* Even a stale pid and a keeper's answer change nothing. */
		assert_int_equal(decide(none[i], 42, 7, 0, true), REATTACH_NONE);
	}
}

static void test_running_and_paused(void **state)
{
	static const enum sandbox_state kept[] = { SANDBOX_RUNNING, SANDBOX_PAUSED };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		enum sandbox_state st = kept[i];

		assert_true(reattach_should_try(st, 42, 7));
		assert_int_equal(decide(st, 42, 7, 0, false), REATTACH_KEEP);
		/* Ended while no kilnd ran, its end recorded. */
		assert_int_equal(decide(st, 42, 7, -ESRCH, true), REATTACH_RECORDED);
		assert_int_equal(decide(st, 42, 7, -ESRCH, false), REATTACH_LOST);
		/* A keeper for another VMM, a recycled pid, another protocol: never
		 * kept, and its vmm.exit (even if it named ours) is not trusted. */
		assert_int_equal(decide(st, 42, 7, -ESTALE, true), REATTACH_LOST);
		assert_int_equal(decide(st, 42, 7, -EPROTO, true), REATTACH_LOST);
		assert_int_equal(decide(st, 42, 7, -EACCES, false), REATTACH_LOST);
		/* A record without a pid or a start time: nothing to look for. */
		assert_false(reattach_should_try(st, 0, 7));
		assert_false(reattach_should_try(st, 42, 0));
		assert_false(reattach_should_try(st, -3, 7));
		assert_int_equal(decide(st, 0, 7, 0, true), REATTACH_LOST);
		assert_int_equal(decide(st, 42, 0, 0, true), REATTACH_LOST);
	}
}

/* Their owner (a request of the old kilnd) is gone: a verified VMM is killed. */
static void test_transient_states(void **state)
{
	static const enum sandbox_state tr[] = { SANDBOX_BOOTING, SANDBOX_STOPPING,
						 SANDBOX_HIBERNATING };

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		assert_true(reattach_should_try(tr[i], 42, 7));
		assert_int_equal(decide(tr[i], 42, 7, 0, false), REATTACH_KILL);
		assert_int_equal(decide(tr[i], 42, 7, -ESRCH, true), REATTACH_RECORDED);
		assert_int_equal(decide(tr[i], 42, 7, -ESTALE, false), REATTACH_LOST);
		assert_int_equal(decide(tr[i], 0, 0, -ESRCH, false), REATTACH_LOST);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(reattach_fate_name(REATTACH_KEEP), "keep");
	assert_string_equal(reattach_fate_name(REATTACH_KILL), "kill");
	assert_string_equal(reattach_fate_name(REATTACH_RECORDED), "recorded");
	assert_string_equal(reattach_fate_name(REATTACH_LOST), "lost");
	assert_string_equal(reattach_fate_name((enum reattach_fate)99), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_vmm_states),
		cmocka_unit_test(test_running_and_paused),
		cmocka_unit_test(test_transient_states),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

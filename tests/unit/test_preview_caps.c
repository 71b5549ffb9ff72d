/*
 * Unit tests of api/kilnd/preview/preview_caps.c: the preview listener's
 * connection caps (one pool of PREVIEW_CONNS_MAX, a share per client
 * address and per sandbox) as pure accounting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "api/kilnd/preview/preview_caps.h"

#define A1 0x0100007fu /* 127.0.0.1 in network order */
#define A2 0x0200007fu
#define SB1 "0123456789ab"
#define SB2 "ba9876543210"

static struct preview_caps *caps_new(unsigned per_client, unsigned per_sandbox)
{
	struct preview_caps *c = malloc(sizeof(*c));

	assert_non_null(c);
	preview_caps_init(c, per_client, per_sandbox);
	return c;
}

/* The case: 300 connections from one address take their share,
 * and another address still gets in. */
static void test_one_client_cannot_take_the_pool(void **state)
{
	struct preview_caps *c = caps_new(PREVIEW_PER_CLIENT_DEFAULT, PREVIEW_PER_SANDBOX_DEFAULT);
	unsigned ok = 0, client = 0;

	(void)state;
	for (int i = 0; i < 300; i++) {
		enum preview_cap r = preview_caps_admit(c, A1);

		ok += r == PREVIEW_CAP_OK;
		client += r == PREVIEW_CAP_CLIENT;
	}
	assert_int_equal(ok, PREVIEW_PER_CLIENT_DEFAULT);
	assert_int_equal(client, 300 - PREVIEW_PER_CLIENT_DEFAULT);
	assert_int_equal(preview_caps_client_count(c, A1), PREVIEW_PER_CLIENT_DEFAULT);
	assert_int_equal(preview_caps_admit(c, A2), PREVIEW_CAP_OK);
	assert_int_equal(c->active, PREVIEW_PER_CLIENT_DEFAULT + 1);
	free(c);
}

/* Leaving gives the slot back to that address, and only once. */
static void test_leave_gives_back(void **state)
{
	struct preview_caps *c = caps_new(2, 2);

	(void)state;
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_CLIENT);
	preview_caps_leave(c, A1);
	assert_int_equal(preview_caps_client_count(c, A1), 1);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	preview_caps_leave(c, A1);
	preview_caps_leave(c, A1);
	assert_int_equal(preview_caps_client_count(c, A1), 0);
	assert_int_equal(c->active, 0);
	/* A leave too many (a caller's bug) does not wrap round. */
	preview_caps_leave(c, A1);
	assert_int_equal(c->active, 0);
	assert_int_equal(preview_caps_client_count(c, A1), 0);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_client_count(c, A1), 1);
	free(c);
}

/* The pool: PREVIEW_CONNS_MAX distinct addresses fill it; the next is
 * refused as FULL (503), not as over its own share (429). */
static void test_pool_full(void **state)
{
	struct preview_caps *c = caps_new(PREVIEW_CONNS_MAX, PREVIEW_CONNS_MAX);

	(void)state;
	for (uint32_t i = 0; i < PREVIEW_CONNS_MAX; i++)
		assert_int_equal(preview_caps_admit(c, A1 + (i << 24)), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A2 + 0x00010000u), PREVIEW_CAP_FULL);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_FULL);
	preview_caps_leave(c, A1 + (5u << 24));
	/* The entry freed is taken by a new address. */
	assert_int_equal(preview_caps_admit(c, A2 + 0x00010000u), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_FULL);
	free(c);
}

/* One address with the whole pool allowed to it (per_client 128). */
static void test_per_client_max(void **state)
{
	struct preview_caps *c = caps_new(PREVIEW_CONNS_MAX, 1);

	(void)state;
	for (int i = 0; i < PREVIEW_CONNS_MAX; i++)
		assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_FULL);
	assert_int_equal(preview_caps_admit(c, A2), PREVIEW_CAP_FULL);
	free(c);
}

/* One sandbox (a guest server that never answers) takes its share. */
static void test_one_sandbox_cannot_take_the_pool(void **state)
{
	struct preview_caps *c = caps_new(PREVIEW_CONNS_MAX, 3);

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(preview_caps_sandbox_enter(c, SB1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_sandbox_enter(c, SB1), PREVIEW_CAP_SANDBOX);
	assert_int_equal(preview_caps_sandbox_count(c, SB1), 3);
	assert_int_equal(preview_caps_sandbox_enter(c, SB2), PREVIEW_CAP_OK);
	preview_caps_sandbox_leave(c, SB1);
	assert_int_equal(preview_caps_sandbox_enter(c, SB1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_sandbox_enter(c, SB1), PREVIEW_CAP_SANDBOX);
	for (int i = 0; i < 3; i++)
		preview_caps_sandbox_leave(c, SB1);
	preview_caps_sandbox_leave(c, SB1); /* one too many: no wrap */
	assert_int_equal(preview_caps_sandbox_count(c, SB1), 0);
	assert_int_equal(preview_caps_sandbox_count(c, SB2), 1);
	free(c);
}

/* PREVIEW_CONNS_MAX sandboxes named at once still fit the table, and an
 * entry freed is used again. */
static void test_many_sandboxes(void **state)
{
	struct preview_caps *c = caps_new(PREVIEW_CONNS_MAX, 1);
	char id[SANDBOX_ID_LEN + 1];

	(void)state;
	for (int i = 0; i < PREVIEW_CONNS_MAX; i++) {
		snprintf(id, sizeof(id), "%012x", i);
		assert_int_equal(preview_caps_sandbox_enter(c, id), PREVIEW_CAP_OK);
	}
	assert_int_equal(preview_caps_sandbox_enter(c, "ffffffffffff"), PREVIEW_CAP_SANDBOX);
	preview_caps_sandbox_leave(c, "000000000007");
	assert_int_equal(preview_caps_sandbox_enter(c, "ffffffffffff"), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_sandbox_count(c, "ffffffffffff"), 1);
	assert_int_equal(preview_caps_sandbox_count(c, "000000000007"), 0);
	free(c);
}

/* Limits out of range are clamped: 0 would refuse everyone, more than the
 * pool means nothing. */
static void test_limits_clamped(void **state)
{
	struct preview_caps *c = caps_new(0, 100000);

	(void)state;
	assert_int_equal(c->per_client, 1);
	assert_int_equal(c->per_sandbox, PREVIEW_CONNS_MAX);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_OK);
	assert_int_equal(preview_caps_admit(c, A1), PREVIEW_CAP_CLIENT);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_client_cannot_take_the_pool),
		cmocka_unit_test(test_leave_gives_back),
		cmocka_unit_test(test_pool_full),
		cmocka_unit_test(test_per_client_max),
		cmocka_unit_test(test_one_sandbox_cannot_take_the_pool),
		cmocka_unit_test(test_many_sandboxes),
		cmocka_unit_test(test_limits_clamped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

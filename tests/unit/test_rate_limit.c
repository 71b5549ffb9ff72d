/*
 * rate_limit: token buckets refill evenly over their period, the one-time
 * burst is spent first and never comes back, oversize requests leave a
 * debt, frequent small refills add up, and a limiter takes from both of
 * its buckets or from neither.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "devices/net/rate_limit.h"

#define MS 1000000ULL

static void test_refill(void **state)
{
	struct rate_bucket_cfg c = { .size = 1000, .refill_ms = 1000 };
	struct rate_bucket b;

	(void)state;
	rate_bucket_init(&b, &c, 0);
	assert_true(rate_bucket_take(&b, 600, 0));
	assert_false(rate_bucket_take(&b, 600, 0)); /* 400 left */
	assert_true(rate_bucket_take(&b, 400, 0));
	assert_false(rate_bucket_take(&b, 1, 0));
	/* 1000 tokens a second: after 250 ms, 250 of them. */
	assert_int_equal(rate_bucket_wait_ns(&b, 250, 0), 250 * MS);
	assert_false(rate_bucket_take(&b, 251, 250 * MS));
	assert_true(rate_bucket_take(&b, 250, 250 * MS));
	/* Never more than the bucket holds, however long it rests. */
	assert_true(rate_bucket_take(&b, 1000, 3600000 * MS));
	assert_false(rate_bucket_take(&b, 1, 3600000 * MS));
	/* Time going backwards adds nothing. */
	assert_false(rate_bucket_take(&b, 1, 10 * MS));
}

/* Many calls a microsecond apart still refill the bucket (fractions are kept). */
static void test_fractions(void **state)
{
	struct rate_bucket_cfg c = { .size = 10, .refill_ms = 1000 }; /* one token per 100 ms */
	struct rate_bucket b;
	uint64_t t = 0;
	int got = 0;

	(void)state;
	rate_bucket_init(&b, &c, 0);
	assert_true(rate_bucket_take(&b, 10, 0));
	for (int i = 0; i < 1000000; i++) { /* one second in 1 us steps */
		t += 1000;
		if (rate_bucket_take(&b, 1, t))
			got++;
	}
	assert_int_equal(got, 10);
}

static void test_burst_and_oversize(void **state)
{
	struct rate_bucket_cfg c = { .size = 100, .one_time_burst = 500, .refill_ms = 100 };
	struct rate_bucket b;

	(void)state;
	rate_bucket_init(&b, &c, 0);
	assert_true(rate_bucket_take(&b, 550, 0)); /* 500 from the burst, 50 from the bucket */
	assert_true(rate_bucket_take(&b, 50, 0));
	assert_false(rate_bucket_take(&b, 1, 0));
	/* The burst does not refill; the bucket does. */
	assert_true(rate_bucket_take(&b, 100, 100 * MS));
	assert_false(rate_bucket_take(&b, 1, 100 * MS));

	/* 1000 through a 100-token bucket: only from a full bucket, then a debt of 900. */
	assert_false(rate_bucket_take(&b, 1000, 150 * MS));
	assert_int_equal(rate_bucket_wait_ns(&b, 1000, 150 * MS), 50 * MS);
	assert_true(rate_bucket_take(&b, 1000, 200 * MS));
	assert_false(rate_bucket_take(&b, 1, 200 * MS + 899 * MS));
	assert_true(rate_bucket_take(&b, 1, 200 * MS + 910 * MS));
}

static void test_unlimited_and_limiter(void **state)
{
	struct rate_bucket_cfg none = { 0 }, bytes = { .size = 3000, .refill_ms = 1000 },
			       pkts = { .size = 2, .refill_ms = 1000 };
	struct rate_limiter rl;

	(void)state;
	rate_limiter_init(&rl, &none, &none, 0);
	for (int i = 0; i < 1000; i++)
		assert_true(rate_limiter_take(&rl, 65536, 0));
	assert_int_equal(rate_limiter_wait_ns(&rl, 65536, 0), 0);

	rate_limiter_init(&rl, &bytes, &pkts, 0);
	assert_true(rate_limiter_take(&rl, 1000, 0));
	assert_true(rate_limiter_take(&rl, 1000, 0));
	/* Bytes remain but packets do not: nothing is taken from either. */
	assert_false(rate_limiter_take(&rl, 500, 0));
	assert_int_equal(rl.bytes.tokens, 1000);
	assert_int_equal(rate_limiter_wait_ns(&rl, 500, 0), 500 * MS);
	assert_true(rate_limiter_take(&rl, 500, 500 * MS));
	/* Packets remain but bytes do not. */
	assert_true(rate_limiter_take(&rl, 2900, 1000 * MS));  /* 100 bytes and no packet left */
	assert_false(rate_limiter_take(&rl, 2000, 1500 * MS)); /* 1600 bytes, 1 packet */
	assert_int_equal(rl.packets.tokens, 1);
	assert_int_equal(rl.bytes.tokens, 1600);
}

static void test_cfg_check(void **state)
{
	struct rate_bucket_cfg c = { .size = 10, .refill_ms = 0 };
	struct err e;

	(void)state;
	assert_int_equal(rate_bucket_cfg_check(&c, "tx bytes", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "tx bytes: refill_time must be 1.."));
	c.refill_ms = RATE_REFILL_MS_MAX + 1;
	assert_int_equal(rate_bucket_cfg_check(&c, "tx bytes", &e), -EINVAL);
	c.refill_ms = 100;
	c.size = RATE_SIZE_MAX + 1;
	assert_int_equal(rate_bucket_cfg_check(&c, "rx packets", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "rx packets: size"));
	c.size = 10;
	assert_int_equal(rate_bucket_cfg_check(&c, "x", &e), 0);
	c = (struct rate_bucket_cfg){ 0 };
	assert_int_equal(rate_bucket_cfg_check(&c, "x", &e), 0); /* unlimited */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refill),
		cmocka_unit_test(test_fractions),
		cmocka_unit_test(test_burst_and_oversize),
		cmocka_unit_test(test_unlimited_and_limiter),
		cmocka_unit_test(test_cfg_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * byte_queue: the pipe between an agent transfer and an HTTP response.
 * Bytes arrive whole and in order through a queue much smaller than the
 * transfer (bounded memory, backpressure), a producer's error reaches the
 * consumer after the bytes before it, and a consumer that goes away stops
 * a producer blocked on a full queue.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "api/kilnd/http/byte_queue.h"

#define TOTAL (1u << 20)

static void *producer(void *arg)
{
	struct byte_queue *q = arg;
	uint8_t chunk[1000];
	size_t sent = 0;

	while (sent < TOTAL) {
		size_t n = TOTAL - sent < sizeof(chunk) ? TOTAL - sent : sizeof(chunk);

		for (size_t i = 0; i < n; i++)
			chunk[i] = (uint8_t)((sent + i) * 7);
		if (byte_queue_push(q, chunk, n))
			return (void *)1;
		sent += n;
	}
	byte_queue_close(q, 0);
	return NULL;
}

static void test_stream_through_small_queue(void **state)
{
	struct byte_queue q;
	pthread_t th;
	uint8_t buf[777];
	size_t got = 0;
	ssize_t n;
	int err = 1;

	(void)state;
	assert_int_equal(byte_queue_init(&q, 4096), 0);
	assert_int_equal(pthread_create(&th, NULL, producer, &q), 0);
	assert_true(byte_queue_wait_first(&q, &err));
	while ((n = byte_queue_pop(&q, buf, sizeof(buf), -1, &err)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != (uint8_t)((got + (size_t)i) * 7))
				fail_msg("byte %zu differs", got + (size_t)i);
		got += (size_t)n;
		assert_true(q.len <= q.cap);
	}
	assert_int_equal(n, -1);
	assert_int_equal(err, 0);
	assert_int_equal(got, TOTAL);
	pthread_join(th, NULL);
	byte_queue_destroy(&q);
}

static void test_error_after_data(void **state)
{
	struct byte_queue q;
	char buf[16];
	int err = 0;

	(void)state;
	assert_int_equal(byte_queue_init(&q, 64), 0);
	assert_int_equal(byte_queue_push(&q, "abc", 3), 0);
	byte_queue_close(&q, -EIO);
	assert_true(byte_queue_wait_first(&q, &err));
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), 0, &err), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), 0, &err), -1);
	assert_int_equal(err, -EIO);
	byte_queue_destroy(&q);
}

static void test_close_without_data(void **state)
{
	struct byte_queue q;
	char buf[4];
	int err = 0;

	(void)state;
	assert_int_equal(byte_queue_init(&q, 64), 0);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), 10, &err),
			 0); /* times out: nothing yet */
	byte_queue_close(&q, -ENOENT);
	assert_false(byte_queue_wait_first(&q, &err));
	assert_int_equal(err, -ENOENT);
	byte_queue_destroy(&q);
	/* A clean, empty end (an empty file). */
	assert_int_equal(byte_queue_init(&q, 64), 0);
	byte_queue_close(&q, 0);
	assert_false(byte_queue_wait_first(&q, &err));
	assert_int_equal(err, 0);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), -1, &err), -1);
	assert_int_equal(err, 0);
	byte_queue_destroy(&q);
}

/* An exec that writes nothing for a while: the answer begins anyway (a
 * client can tell kilnd at work from a socket that never answers), and
 * a failure after that is the producer's to report in the stream. */
static void test_begin_quiet_producer(void **state)
{
	struct byte_queue q;
	char buf[4];
	int err = 0;

	(void)state;
	assert_int_equal(byte_queue_init(&q, 64), 0);
	assert_true(byte_queue_wait_begin(&q, 20, &err));
	assert_false(byte_queue_fail_unbegun(&q, -EIO)); /* begun: not closed */
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), 10, &err), 0);
	assert_int_equal(byte_queue_push(&q, "err", 3), 0);
	byte_queue_close(&q, 0);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), -1, &err), 3);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), -1, &err), -1);
	assert_int_equal(err, 0);
	byte_queue_destroy(&q);
	/* A failure before the answer began: the consumer answers with it. */
	assert_int_equal(byte_queue_init(&q, 64), 0);
	assert_true(byte_queue_fail_unbegun(&q, -ENOENT));
	assert_false(byte_queue_wait_begin(&q, 1000, &err));
	assert_int_equal(err, -ENOENT);
	byte_queue_destroy(&q);
	/* Bytes first: begun by them, a later failure is the stream's. */
	assert_int_equal(byte_queue_init(&q, 64), 0);
	assert_int_equal(byte_queue_push(&q, "x", 1), 0);
	assert_true(byte_queue_wait_begin(&q, 1000, &err));
	assert_false(byte_queue_fail_unbegun(&q, -EIO));
	byte_queue_destroy(&q);
}

static void *blocked_producer(void *arg)
{
	struct byte_queue *q = arg;
	static uint8_t big[10000];

	return (void *)(intptr_t)byte_queue_push(q, big, sizeof(big));
}

static void test_abort_wakes_blocked_producer(void **state)
{
	struct byte_queue q;
	pthread_t th;
	void *ret;
	char buf[8];
	int err;

	(void)state;
	assert_int_equal(byte_queue_init(&q, 100), 0);
	assert_int_equal(pthread_create(&th, NULL, blocked_producer, &q), 0);
	assert_int_equal(byte_queue_pop(&q, buf, sizeof(buf), -1, &err),
			 8); /* it is stuck on a full queue */
	byte_queue_abort(&q);
	pthread_join(th, &ret);
	assert_int_equal((intptr_t)ret, -ECANCELED);
	assert_int_equal(byte_queue_push(&q, "x", 1), -ECANCELED);
	byte_queue_destroy(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_through_small_queue),
		cmocka_unit_test(test_error_after_data),
		cmocka_unit_test(test_close_without_data),
		cmocka_unit_test(test_begin_quiet_producer),
		cmocka_unit_test(test_abort_wakes_blocked_producer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

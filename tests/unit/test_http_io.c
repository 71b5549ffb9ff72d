/*
 * kilnd's HTTP socket writes (http_io): http_io_sendv gathers pieces into
 * as few writes as the socket takes, resumes mid-piece after a partial
 * write, and gives up on a reader that stopped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/kilnd/http/http_io.h"

/* ---- http_io_sendv ---------------------------------------------------- */

struct drain {
	int fd;
	size_t want, got;
	char *buf;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;

	while (d->got < d->want) {
		ssize_t n = recv(d->fd, d->buf + d->got, d->want - d->got, 0);

		if (n <= 0)
			break;
		d->got += (size_t)n;
	}
	return NULL;
}

/* Pieces much larger than the socket buffer: partial writes, each resumed
 * mid-piece, the bytes in order; empty pieces are skipped. */
static void test_sendv_partial_writes(void **state)
{
	static char a[300000], c[500001];
	struct iovec iov[4] = {
		{ .iov_base = a, .iov_len = sizeof(a) },
		{ .iov_base = NULL, .iov_len = 0 },
		{ .iov_base = c, .iov_len = sizeof(c) },
		{ .iov_base = "!", .iov_len = 1 },
	};
	size_t total = sizeof(a) + sizeof(c) + 1;
	struct drain d = { .want = total };
	int sv[2], sndbuf = 4096;
	pthread_t th;

	(void)state;
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(c); i++)
		c[i] = (char)('0' + i % 10);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	d.fd = sv[1];
	d.buf = malloc(total);
	assert_non_null(d.buf);
	assert_int_equal(pthread_create(&th, NULL, drain_thread, &d), 0);
	assert_int_equal(http_io_sendv(sv[0], iov, 4, 5000, -1), 0);
	pthread_join(th, NULL);
	assert_int_equal(d.got, total);
	assert_memory_equal(d.buf, a, sizeof(a));
	assert_memory_equal(d.buf + sizeof(a), c, sizeof(c));
	assert_int_equal(d.buf[total - 1], '!');
	free(d.buf);
	close(sv[0]);
	close(sv[1]);
}

/* A reader that stopped: -ETIMEDOUT, not a thread held for ever. */
static void test_sendv_times_out(void **state)
{
	static char big[1 << 20];
	struct iovec iov = { .iov_base = big, .iov_len = sizeof(big) };
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(http_io_sendv(sv[0], &iov, 1, 100, -1), -ETIMEDOUT);
	close(sv[1]);
	iov = (struct iovec){ .iov_base = big, .iov_len = 1 };
	assert_int_equal(http_io_sendv(sv[0], &iov, 1, 100, -1), -EPIPE);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sendv_partial_writes),
		cmocka_unit_test(test_sendv_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

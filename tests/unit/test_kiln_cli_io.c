/*
 * kiln CLI's whole writes (api/kiln/cli_io.c): everything arrives although a
 * timer's signal (no SA_RESTART) keeps cutting the writes short or
 * failing them with EINTR while a slow reader drains a pipe or socket far
 * smaller than the buffer; a failed write is its -errno; and a socket
 * whose peer is gone is -EPIPE, not a SIGPIPE that ends kiln.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/kiln/cli_io.h"

#define BIG (1u << 20) /* far above a pipe's 64 KiB: the writer blocks, and the timer cuts in */

struct drain {
	int fd;
	uint8_t *buf;
	size_t len;
};

/* The reader takes 4 KiB at a time, slowly, so the writer blocks often. */
static void *drain_run(void *arg)
{
	struct drain *d = arg;
	ssize_t n;

	while (d->len < BIG && (n = read(d->fd, d->buf + d->len, BIG - d->len < 4096 ? BIG - d->len : 4096)) > 0) {
		d->len += (size_t)n;
		usleep(100);
	}
	return NULL;
}

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
}

static uint8_t *pattern(void)
{
	uint8_t *p = malloc(BIG);

	assert_non_null(p);
	for (size_t i = 0; i < BIG; i++)
		p[i] = (uint8_t)(i * 7 + (i >> 11));
	return p;
}

static void whole(int rfd, int wfd, int (*put)(int, const void *, size_t))
{
	uint8_t *src = pattern();
	struct drain d = { rfd, calloc(1, BIG), 0 };
	struct sigaction tick = { .sa_handler = on_tick }, old; /* no SA_RESTART */
	struct itimerval every = { { 0, 200 }, { 0, 200 } }, off = { { 0, 0 }, { 0, 0 } };
	sigset_t alrm;
	pthread_t t;

	assert_non_null(d.buf);
	/* The reader never sees the signal; the writer does. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &alrm, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, drain_run, &d), 0);
	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &alrm, NULL), 0);
	assert_int_equal(sigaction(SIGALRM, &tick, &old), 0);
	ticks = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	assert_int_equal(put(wfd, src, BIG), 0);
	close(wfd); /* a short count shows as the reader's end of file, not a hang */
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_true(ticks > 0); /* the writes were interrupted */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(d.len, BIG);
	assert_memory_equal(d.buf, src, BIG);
	free(d.buf);
	free(src);
}

static void test_write_all_pipe(void **state)
{
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	whole(p[0], p[1], cli_write_all);
	close(p[0]);
}

static void test_send_all_socket(void **state)
{
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	whole(sv[0], sv[1], cli_send_all);
	close(sv[0]);
}

static void test_errors(void **state)
{
	int sv[2], fd;
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;

	(void)state;
	/* A socket is not a file: write() works on it, send() on a file does not. */
	fd = open("/dev/null", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(cli_send_all(fd, "x", 1), -ENOTSOCK);
	assert_int_equal(cli_write_all(fd, "x", 1), 0);
	close(fd);
	assert_int_equal(cli_write_all(-1, "x", 1), -EBADF);
	assert_int_equal(cli_write_all(-1, "", 0), 0); /* nothing to write: no call */

	/* SIGPIPE at its default would end this test: MSG_NOSIGNAL must hold. */
	assert_int_equal(sigaction(SIGPIPE, &dfl, &old), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	assert_int_equal(cli_send_all(sv[1], "gone", 4), -EPIPE);
	close(sv[1]);
	sigaction(SIGPIPE, &old, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_all_pipe),
		cmocka_unit_test(test_send_all_socket),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

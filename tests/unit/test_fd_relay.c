/*
 * lib/base/fd_relay.c: one-way pumps over real pipes, socketpairs and
 * files: a MiB in order through a small buffer, each kind of EOF passed
 * on, backpressure (a full buffer is not read into), a reader that left,
 * stop and timeout, and three pumps at once as a shim's stdio.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/fd_io.h"
#include "lib/base/fd_relay.h"

#define BIG (1 << 20)

struct feeder {
	int fd;
	const uint8_t *data;
	size_t n;
	bool shut; /* shutdown(SHUT_WR) at the end instead of close */
};

/* Writes data into fd from a thread, then ends the stream. */
static void *feed(void *arg)
{
	struct feeder *f = arg;

	fd_io_write_all(f->fd, f->data, f->n);
	if (f->shut)
		shutdown(f->fd, SHUT_WR);
	else
		close(f->fd);
	return NULL;
}

static uint8_t *pattern(size_t n)
{
	uint8_t *p = malloc(n);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + i / 251);
	return p;
}

/* Everything from fd until EOF, compared with want. */
static void drained(int fd, const uint8_t *want, size_t n)
{
	uint8_t *got = malloc(n + 1);
	ssize_t k = fd_io_read_full(fd, got, n + 1);

	assert_int_equal(k, n);
	assert_memory_equal(got, want, n);
	free(got);
}

/* stdin's way: the engine's pipe to the agent's socket; the EOF is a
 * half-close, and the other half of the socket still works. */
static void test_pipe_to_socket(void **state)
{
	int pp[2], sp[2];
	uint8_t buf[1000], *data = pattern(BIG);
	struct feeder f;
	struct fd_pump p;
	pthread_t t;
	pid_t r;
	int st;

	(void)state;
	assert_int_equal(pipe(pp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	f = (struct feeder){ pp[1], data, BIG, false };
	pthread_create(&t, NULL, feed, &f);
	assert_int_equal(fd_pump_init(&p, pp[0], sp[0], buf, sizeof(buf), FD_PUMP_SHUT_WR), 0);
	assert_false(p.src_sock);
	assert_true(p.dst_sock);
	/* the reader runs beside the relay (a socket buffers less than a
	 * MiB) and answers once it has read to the EOF */
	r = fork();
	if (r == 0) {
		uint8_t *got = malloc(BIG + 1);
		ssize_t k;

		close(sp[0]);
		close(pp[0]);
		close(pp[1]); /* or the pipe never reaches its EOF */
		k = fd_io_read_full(sp[1], got, BIG + 1);
		_exit(k == BIG && !memcmp(got, data, BIG) && send(sp[1], "!", 1, 0) == 1 ? 0 : 1);
	}
	close(sp[1]);
	assert_int_equal(fd_relay_run(&p, 1, -1, 10000), FD_RELAY_DONE);
	assert_int_equal(p.bytes, BIG);
	assert_int_equal(p.err, 0);
	/* half-closed only: the child's answer still comes back */
	assert_int_equal(read(sp[0], buf, 1), 1);
	assert_int_equal(buf[0], '!');
	waitpid(r, &st, 0);
	assert_int_equal(st, 0);
	pthread_join(t, NULL);
	close(pp[0]);
	close(sp[0]);
	free(data);
}

/* stdout's way: the agent's socket to the engine's pipe; the socket's
 * EOF closes the pipe, whose reader sees every byte and then EOF. */
static void test_socket_to_pipe(void **state)
{
	int pp[2], sp[2];
	uint8_t buf[333], *data = pattern(BIG);
	struct feeder f;
	struct fd_pump p;
	pthread_t t;
	pid_t r;
	int st;

	(void)state;
	assert_int_equal(pipe(pp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	f = (struct feeder){ sp[1], data, BIG, true };
	pthread_create(&t, NULL, feed, &f);
	r = fork();
	if (r == 0) {
		uint8_t *got = malloc(BIG + 1);

		close(pp[1]);
		close(sp[0]);
		close(sp[1]);
		_exit(fd_io_read_full(pp[0], got, BIG + 1) == BIG && !memcmp(got, data, BIG) ? 0
											     : 1);
	}
	close(pp[0]);
	assert_int_equal(fd_pump_init(&p, sp[0], pp[1], buf, sizeof(buf), FD_PUMP_CLOSE), 0);
	assert_int_equal(fd_relay_run(&p, 1, -1, 10000), FD_RELAY_DONE);
	assert_int_equal(p.bytes, BIG);
	waitpid(r, &st, 0);
	assert_int_equal(st, 0); /* EOF came: the pump closed the pipe */
	pthread_join(t, NULL);
	close(sp[0]);
	close(sp[1]);
	free(data);
}

/* containerd may pass files: a file as stdin, a file as stdout. */
static void test_files(void **state)
{
	char in[] = "/tmp/test_fd_relay.in.XXXXXX", out[] = "/tmp/test_fd_relay.out.XXXXXX";
	int fi = mkstemp(in), fo = mkstemp(out), sp[2];
	uint8_t buf[4096], *data = pattern(100000);
	struct fd_pump p[2];

	(void)state;
	assert_int_equal(fd_io_write_all(fi, data, 100000), 0);
	lseek(fi, 0, SEEK_SET);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	/* file -> socket -> (the same socketpair's far end) -> file */
	assert_int_equal(fd_pump_init(&p[0], fi, sp[0], buf, 2048, FD_PUMP_SHUT_WR), 0);
	assert_int_equal(fd_pump_init(&p[1], sp[1], fo, buf + 2048, 2048, FD_PUMP_KEEP), 0);
	assert_int_equal(fd_relay_run(p, 2, -1, 10000), FD_RELAY_DONE);
	assert_int_equal(p[0].bytes, 100000);
	assert_int_equal(p[1].bytes, 100000);
	lseek(fo, 0, SEEK_SET);
	drained(fo, data, 100000);
	/* /dev/null as stdin: EOF at once */
	int null = open("/dev/null", O_RDONLY);
	assert_int_equal(fd_pump_init(&p[0], null, sp[0], buf, 16, FD_PUMP_KEEP), 0);
	assert_int_equal(fd_relay_run(p, 1, -1, 1000), FD_RELAY_DONE);
	assert_int_equal(p[0].bytes, 0);
	close(null);
	close(fi);
	close(fo);
	unlink(in);
	unlink(out);
	close(sp[0]);
	close(sp[1]);
	free(data);
}

/* A full buffer is not read into: the source waits for the destination. */
static void test_backpressure(void **state)
{
	int a[2], b[2];
	uint8_t buf[8];
	struct fd_pump p;
	struct pollfd pfd[2];

	(void)state;
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	assert_int_equal(fd_pump_init(&p, a[0], b[1], buf, sizeof(buf), FD_PUMP_KEEP), 0);
	assert_int_equal(write(a[1], "0123456789abcdef", 16), 16);
	fd_pump_poll(&p, pfd);
	assert_int_equal(pfd[0].fd, a[0]);
	assert_int_equal(pfd[1].fd, -1);
	pfd[0].revents = POLLIN;
	pfd[1].revents = 0;
	pfd[1].fd = -1;
	assert_int_equal(fd_pump_step(&p, pfd), 1);
	assert_int_equal(p.end - p.off, 8);
	fd_pump_poll(&p, pfd);
	assert_int_equal(pfd[0].fd, -1); /* buffered bytes first */
	assert_int_equal(pfd[1].fd, b[1]);
	/* nothing reads b: the relay times out holding 8 bytes, 8 left in a */
	int full = 0;
	while (write(b[1], "x", 1) == 1 && ++full < 1 << 20) {
		if (full == 65536)
			break;
	}
	close(a[1]);
	assert_int_equal(fd_relay_run(&p, 1, -1, 50), FD_RELAY_TIMEOUT);
	assert_false(p.done);
	close(a[0]);
	close(b[0]);
	close(b[1]);
}

/* The engine closed its end of stdout: the pump ends with EPIPE, the
 * others go on. */
static void test_reader_gone(void **state)
{
	int pp[2], sp[2];
	uint8_t buf[64];
	struct fd_pump p;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(pp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	close(pp[0]);
	assert_int_equal(send(sp[1], "out", 3, 0), 3);
	assert_int_equal(fd_pump_init(&p, sp[0], pp[1], buf, sizeof(buf), FD_PUMP_CLOSE), 0);
	assert_int_equal(fd_relay_run(&p, 1, -1, 1000), FD_RELAY_DONE);
	assert_true(p.done);
	assert_int_equal(p.err, EPIPE);
	assert_int_equal(fcntl(pp[1], F_GETFD), -1); /* closed by the pump */
	close(sp[0]);
	close(sp[1]);
}

static void test_stop(void **state)
{
	int a[2], b[2], stop[2];
	uint8_t buf[8];
	struct fd_pump p;

	(void)state;
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	assert_int_equal(pipe(stop), 0);
	assert_int_equal(fd_pump_init(&p, a[0], b[1], buf, sizeof(buf), FD_PUMP_KEEP), 0);
	assert_int_equal(write(stop[1], "s", 1), 1);
	assert_int_equal(fd_relay_run(&p, 1, stop[0], -1), FD_RELAY_STOPPED);
	assert_int_equal(fd_relay_run(&p, 9, stop[0], -1), FD_RELAY_FAILED);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
		close(stop[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipe_to_socket), cmocka_unit_test(test_socket_to_pipe),
		cmocka_unit_test(test_files),          cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_reader_gone),    cmocka_unit_test(test_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

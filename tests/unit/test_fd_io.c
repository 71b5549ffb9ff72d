/*
 * lib/base/fd_io.c, the one whole-read/whole-write loop: everything arrives
 * although a timer's signal (no SA_RESTART) keeps cutting the writes short
 * or failing them with EINTR while a slow reader drains a pipe or socket
 * far smaller than the buffer; a failed write is its -errno with errno
 * set to the same; a socket whose peer is gone is -EPIPE, not a SIGPIPE;
 * a full non-blocking pipe is -EAGAIN, or waits through the waiter; a
 * write that moves 0 bytes is -EIO instead of a loop that never ends.
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

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "lib/base/fd_io.h"

/*
 * A write that moves nothing (a broken device or filesystem can do it):
 * while zero_writes is set, write/pwrite/send/sendmsg report 0 bytes.
 * These definitions take the place of libc's for fd_io.o in this binary.
 */
static int zero_writes;
/* While short_cap is set, write() and pwrite() take at most that many
 * bytes per call: short writes on demand. */
static size_t short_cap;

ssize_t write(int fd, const void *buf, size_t n)
{
	if (short_cap && n > short_cap)
		n = short_cap;
	return zero_writes ? 0 : syscall(SYS_write, fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (short_cap && n > short_cap)
		n = short_cap;
	return zero_writes ? 0 : syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	return zero_writes ? 0 : syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}

ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
	return zero_writes ? 0 : syscall(SYS_sendmsg, fd, mh, flags);
}

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

	while (d->len < BIG &&
	       (n = read(d->fd, d->buf + d->len, BIG - d->len < 4096 ? BIG - d->len : 4096)) > 0) {
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
	whole(p[0], p[1], fd_io_write_all);
	close(p[0]);
}

static void test_send_all_socket(void **state)
{
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	whole(sv[0], sv[1], fd_io_send_all);
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
	assert_int_equal(fd_io_send_all(fd, "x", 1), -ENOTSOCK);
	assert_int_equal(fd_io_write_all(fd, "x", 1), 0);
	close(fd);
	assert_int_equal(fd_io_write_all(-1, "x", 1), -EBADF);
	assert_int_equal(fd_io_write_all(-1, "", 0), 0); /* nothing to write: no call */

	/* SIGPIPE at its default would end this test: MSG_NOSIGNAL must hold. */
	assert_int_equal(sigaction(SIGPIPE, &dfl, &old), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	assert_int_equal(fd_io_send_all(sv[1], "gone", 4), -EPIPE);
	close(sv[1]);
	sigaction(SIGPIPE, &old, NULL);
}

/* A put function with a waiter, for whole(). */
static int drain_wait_calls;

static int count_wait(void *arg, int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	(void)arg;
	drain_wait_calls++;
	return poll(&p, 1, 1000) < 0 && errno != EINTR ? -errno : 0;
}

static int put_nonblock_waiting(int fd, const void *p, size_t n)
{
	int fl = fcntl(fd, F_GETFL);

	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	return fd_io_put_all(fd, p, n, 0, &(struct fd_io_waiter){ count_wait, NULL });
}

static int sendv_in_pieces(int fd, const void *p, size_t n)
{
	/* Uneven pieces with empty vectors among them, first and last too. */
	struct iovec iov[5] = {
		{ NULL, 0 }, { (void *)p, 1 }, { (char *)p + 1, 0 }, { (char *)p + 1, n - 1 },
		{ NULL, 0 },
	};
	size_t sent = 0;
	int r = fd_io_sendv_all(fd, iov, 5, NULL, &sent);

	assert_int_equal(sent, r ? sent : n);
	return r;
}

static void test_waiter_nonblocking_pipe(void **state)
{
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	drain_wait_calls = 0;
	whole(p[0], p[1], put_nonblock_waiting);
	assert_true(drain_wait_calls > 0); /* the pipe was full, and waited on */
	close(p[0]);
}

static void test_sendv_socket(void **state)
{
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	whole(sv[0], sv[1], sendv_in_pieces);
	close(sv[0]);
}

/* A full non-blocking pipe without a waiter: -EAGAIN, errno EAGAIN. */
static void test_eagain_full_pipe(void **state)
{
	uint8_t *buf = calloc(1, BIG);
	int p[2];

	(void)state;
	assert_non_null(buf);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(fd_io_write_all(p[1], buf, BIG), -EAGAIN);
	assert_int_equal(errno, EAGAIN);
	/* Still full: the next write of one byte does not get through either. */
	assert_int_equal(fd_io_write_all(p[1], "x", 1), -EAGAIN);
	close(p[0]);
	close(p[1]);
	free(buf);
}

static int give_up(void *arg, int fd, short events)
{
	(void)fd;
	assert_true(events == POLLOUT || events == POLLIN);
	++*(int *)arg;
	return -ETIMEDOUT;
}

/* The waiter's negative result ends the write as is. */
static void test_waiter_result_returned(void **state)
{
	uint8_t *buf = calloc(1, BIG);
	int p[2], calls = 0;
	struct iovec iov = { buf, BIG };
	size_t sent = 0;
	int sv[2];

	(void)state;
	assert_non_null(buf);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(fd_io_put_all(p[1], buf, BIG, 0,
				       &(struct fd_io_waiter){ give_up, &calls }),
			 -ETIMEDOUT);
	assert_int_equal(errno, ETIMEDOUT);
	assert_int_equal(calls, 1);
	close(p[0]);
	close(p[1]);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	calls = 0;
	assert_int_equal(fd_io_sendv_all(sv[1], &iov, 1, &(struct fd_io_waiter){ give_up, &calls },
					 &sent),
			 -ETIMEDOUT);
	assert_int_equal(calls, 1);
	assert_true(sent > 0 && sent < BIG); /* what did go out is counted */
	close(sv[0]);
	close(sv[1]);
	free(buf);
}

/* A 0-byte write used to loop forever in four of the old copies. */
static void test_zero_byte_write_is_eio(void **state)
{
	struct iovec iov = { "abc", 3 };
	size_t sent = 7;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	zero_writes = 1;
	errno = 0;
	assert_int_equal(fd_io_write_all(p[1], "abc", 3), -EIO);
	assert_int_equal(errno, EIO); /* not a stale errno */
	assert_int_equal(fd_io_send_all(p[1], "abc", 3), -EIO);
	assert_int_equal(fd_io_pwrite_all(p[1], "abc", 3, 0), -EIO);
	assert_int_equal(fd_io_sendv_all(p[1], &iov, 1, NULL, &sent), -EIO);
	assert_int_equal(sent, 0);
	zero_writes = 0;
	assert_int_equal(fd_io_write_all(p[1], "abc", 0), 0);
	close(p[0]);
	close(p[1]);
}

/* Every write short (7 bytes of 1000): the bytes still arrive in order,
 * and pwrite's offset advances with them. */
static void test_short_writes(void **state)
{
	char path[] = "/tmp/kiln-fd-io-XXXXXX", src[1000], got[1000];
	int fd = mkstemp(path), p[2];

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 31 + 7);
	assert_int_equal(pipe(p), 0);
	short_cap = 7;
	assert_int_equal(fd_io_write_all(p[1], src, sizeof(src)), 0);
	assert_int_equal(fd_io_pwrite_all(fd, src, sizeof(src), 5), 0);
	short_cap = 0;
	assert_int_equal(fd_io_read_full(p[0], got, sizeof(got)), sizeof(got));
	assert_memory_equal(got, src, sizeof(src));
	assert_int_equal(fd_io_pread_all(fd, got, sizeof(got), 5), 0);
	assert_memory_equal(got, src, sizeof(src));
	assert_int_equal(lseek(fd, 0, SEEK_END), 1005);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* pwrite/pread at offsets; end of file before n bytes is -EIO. */
static void test_pread_pwrite(void **state)
{
	char path[] = "/tmp/kiln-fd-io-XXXXXX", got[8] = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(fd_io_pwrite_all(fd, "world", 5, 6), 0);
	assert_int_equal(fd_io_pwrite_all(fd, "hello ", 6, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0); /* the file offset did not move */
	assert_int_equal(fd_io_pread_all(fd, got, 5, 6), 0);
	assert_memory_equal(got, "world", 5);
	errno = 0;
	assert_int_equal(fd_io_pread_all(fd, got, 5, 7), -EIO); /* 4 bytes left */
	assert_int_equal(errno, EIO);
	assert_int_equal(fd_io_pread_all(fd, got, 0, 1000), 0);
	assert_int_equal(fd_io_pread_all(-1, got, 1, 0), -EBADF);
	assert_int_equal(fd_io_pwrite_all(-1, got, 1, 0), -EBADF);
	close(fd);
}

/* read_full: up to n, fewer only at end of file; EAGAIN is an error. */
static void test_read_full(void **state)
{
	char buf[16];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fd_io_write_all(p[1], "12345", 5), 0);
	assert_int_equal(fd_io_read_full(p[0], buf, 3), 3);
	close(p[1]);
	assert_int_equal(fd_io_read_full(p[0], buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "45", 2);
	assert_int_equal(fd_io_read_full(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(fd_io_read_full(p[0], buf, sizeof(buf)), -EAGAIN);
	close(p[0]);
	close(p[1]);
	assert_int_equal(fd_io_read_full(-1, buf, 1), -EBADF);
}

static int feed_wait(void *arg, int fd, short events)
{
	int *wfd = arg;

	(void)fd;
	assert_int_equal(events, POLLIN);
	assert_int_equal(write(*wfd, "late", 4), 4); /* data arrives while we wait */
	return 0;
}

/* read_some: one read; EAGAIN waits through the waiter or is -EAGAIN. */
static void test_read_some(void **state)
{
	char buf[16];
	int p[2], calls = 0;

	(void)state;
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(fd_io_read_some(p[0], buf, sizeof(buf), NULL), -EAGAIN);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fd_io_read_some(p[0], buf, sizeof(buf),
					 &(struct fd_io_waiter){ feed_wait, &p[1] }),
			 4);
	assert_memory_equal(buf, "late", 4);
	assert_int_equal(fd_io_read_some(p[0], buf, sizeof(buf),
					 &(struct fd_io_waiter){ give_up, &calls }),
			 -ETIMEDOUT);
	assert_int_equal(calls, 1);
	assert_int_equal(fd_io_write_all(p[1], "abc", 3), 0);
	assert_int_equal(fd_io_read_some(p[0], buf, 2, NULL), 2); /* no more than asked */
	close(p[1]);
	assert_int_equal(fd_io_read_some(p[0], buf, sizeof(buf), NULL), 1);
	assert_int_equal(fd_io_read_some(p[0], buf, sizeof(buf), NULL), 0); /* end of file */
	close(p[0]);
	assert_int_equal(fd_io_read_some(-1, buf, 1, NULL), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_all_pipe),
		cmocka_unit_test(test_send_all_socket),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_waiter_nonblocking_pipe),
		cmocka_unit_test(test_sendv_socket),
		cmocka_unit_test(test_eagain_full_pipe),
		cmocka_unit_test(test_waiter_result_returned),
		cmocka_unit_test(test_zero_byte_write_is_eio),
		cmocka_unit_test(test_short_writes),
		cmocka_unit_test(test_pread_pwrite),
		cmocka_unit_test(test_read_full),
		cmocka_unit_test(test_read_some),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

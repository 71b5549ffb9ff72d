/*
 * net_passt: passt's qemu stream framing over a real socketpair, the test
 * playing passt. Frames come out whole however the stream is cut; a length
 * outside 14..65536 or the end of the stream closes the backend with a
 * message; send() never puts half a frame on the stream, and says -EAGAIN
 * (taking nothing) when its bounded buffer is full; close() stops and
 * reaps the passt process; a passt that cannot be run is a clear error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devices/net/net_passt.h"

struct fx {
	int peer; /* passt's end */
	struct net_backend *b;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct err e;
	int sv[2];

	assert_non_null(f);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->peer = sv[1];
	assert_int_equal(net_passt_attach(sv[0], 0, &f->b, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->b)
		f->b->close(f->b);
	if (f->peer >= 0)
		close(f->peer);
	free(f);
	return 0;
}

static void put_frame(uint8_t *out, uint32_t len, uint8_t fill)
{
	out[0] = (uint8_t)(len >> 24);
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	memset(out + 4, fill, len);
}

static void write_all(int fd, const void *p, size_t n)
{
	assert_int_equal(write(fd, p, n), (ssize_t)n);
}

static void test_frames_come_out_whole(void **state)
{
	struct fx *f = *state;
	static uint8_t stream[3 * (4 + 1500)], buf[NET_MAX_FRAME];
	size_t n = 0;

	/* Two frames in one write, then a third one byte at a time. */
	put_frame(stream, 60, 0xa1);
	n += 4 + 60;
	put_frame(stream + n, 1500, 0xb2);
	n += 4 + 1500;
	write_all(f->peer, stream, n);
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 60);
	assert_int_equal(buf[0], 0xa1);
	assert_int_equal(buf[59], 0xa1);
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 1500);
	assert_int_equal(buf[1499], 0xb2);
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 0);

	put_frame(stream, 100, 0xc3);
	for (size_t i = 0; i < 4 + 100; i++) {
		write_all(f->peer, stream + i, 1);
		if (i < 4 + 99)
			assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 0);
	}
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 100);
	assert_int_equal(buf[99], 0xc3);
}

static void test_largest_frame_and_many_small_ones(void **state)
{
	struct fx *f = *state;
	static uint8_t stream[4 + NET_MAX_FRAME], buf[NET_MAX_FRAME];
	int got = 0;

	put_frame(stream, NET_MAX_FRAME, 0x5a);
	/* The socket buffer may be smaller than a frame: feed and read in turns. */
	for (size_t off = 0; off < sizeof(stream);) {
		ssize_t k = send(f->peer, stream + off, sizeof(stream) - off, MSG_DONTWAIT);
		ssize_t r;

		if (k > 0)
			off += (size_t)k;
		r = f->b->recv(f->b, buf, sizeof(buf));
		assert_true(r == 0 || r == NET_MAX_FRAME);
		got += r == NET_MAX_FRAME;
	}
	if (!got)
		assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), NET_MAX_FRAME);
	assert_int_equal(buf[NET_MAX_FRAME - 1], 0x5a);

	/* 200 minimum frames back to back. */
	for (int i = 0; i < 200; i++) {
		put_frame(stream, NET_MIN_FRAME, (uint8_t)i);
		write_all(f->peer, stream, 4 + NET_MIN_FRAME);
	}
	for (int i = 0; i < 200; i++) {
		assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), NET_MIN_FRAME);
		assert_int_equal(buf[0], (uint8_t)i);
	}
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 0);
}

static void test_bad_lengths_close_the_backend(void **state)
{
	struct fx *f = *state;
	static uint8_t buf[NET_MAX_FRAME];
	const uint8_t huge[4] = { 0x00, 0x01, 0x00, 0x01 }; /* 65537 */
	const uint8_t tiny[4] = { 0, 0, 0, 13 };
	struct fx *g;

	write_all(f->peer, huge, 4);
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), -EPROTO);
	assert_non_null(strstr(f->b->why, "frame length of 65537"));

	setup((void **)&g);
	write_all(g->peer, tiny, 4);
	assert_int_equal(g->b->recv(g->b, buf, sizeof(buf)), -EPROTO);
	assert_non_null(strstr(g->b->why, "frame length of 13"));
	teardown((void **)&g);
}

static void test_end_of_stream_is_the_end(void **state)
{
	struct fx *f = *state;
	static uint8_t stream[4 + 64], buf[NET_MAX_FRAME];

	/* A whole frame, then half of one, then passt goes away. */
	put_frame(stream, 64, 7);
	write_all(f->peer, stream, sizeof(stream));
	write_all(f->peer, stream, 10);
	close(f->peer);
	f->peer = -1;
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), 64);
	assert_int_equal(f->b->recv(f->b, buf, sizeof(buf)), -EPIPE);
	assert_non_null(strstr(f->b->why, "passt closed its socket"));
	assert_int_equal(f->b->send(f->b, buf, 60), -EPIPE);
}

/* Parse the framed stream read from the peer; returns the frames seen, checks each. */
static int drain_peer(int fd, int *next_fill)
{
	static uint8_t acc[8 * (4 + NET_MAX_FRAME)];
	static size_t have;
	int frames = 0;

	for (;;) {
		ssize_t k = recv(fd, acc + have, sizeof(acc) - have, MSG_DONTWAIT);

		if (k > 0)
			have += (size_t)k;
		while (have >= 4) {
			uint32_t len = (uint32_t)acc[0] << 24 | (uint32_t)acc[1] << 16 |
				(uint32_t)acc[2] << 8 | acc[3];

			assert_true(len >= NET_MIN_FRAME && len <= NET_MAX_FRAME);
			if (have < 4 + len)
				break;
			assert_int_equal(acc[4], (uint8_t)*next_fill);
			assert_int_equal(acc[4 + len - 1], (uint8_t)*next_fill);
			(*next_fill)++;
			frames++;
			memmove(acc, acc + 4 + len, have - 4 - len);
			have -= 4 + len;
		}
		if (k <= 0)
			return frames;
	}
}

static void test_send_never_splits_a_frame_and_says_full(void **state)
{
	struct fx *f = *state;
	static uint8_t frame[9000];
	int small = 4096, sent = 0, seen = 0, fill = 0, r;

	/* Small socket buffers, and nobody reading: the backend fills up. */
	setsockopt(f->b->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(f->peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	for (;;) {
		ssize_t k;

		memset(frame, sent, sizeof(frame));
		k = f->b->send(f->b, frame, sizeof(frame));
		if (k == -EAGAIN)
			break;
		assert_int_equal(k, sizeof(frame));
		assert_true(++sent < 1000);
	}
	/* Full means nothing taken: the same frame is refused again. */
	assert_int_equal(f->b->send(f->b, frame, sizeof(frame)), -EAGAIN);
	assert_true(sent >= 2);
	/* Now passt reads: flush and drain until everything came, whole and in order. */
	for (int i = 0; i < 10000 && seen < sent; i++) {
		r = f->b->flush(f->b);
		assert_true(r == 0 || r == -EAGAIN);
		seen += drain_peer(f->peer, &fill);
	}
	assert_int_equal(seen, sent);
	assert_int_equal(f->b->flush(f->b), 0);
	assert_int_equal(f->b->send(f->b, frame, 10),
			 -EINVAL); /* shorter than an Ethernet header */
	assert_int_equal(f->b->send(f->b, frame, NET_MAX_FRAME + 1), -EINVAL);
}

static void test_close_stops_and_reaps_passt(void **state)
{
	struct net_backend *b;
	struct err e;
	int sv[2];
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A passt that never quits by itself. */
		signal(SIGTERM, SIG_DFL);
		for (;;)
			pause();
	}
	assert_int_equal(net_passt_attach(sv[0], pid, &b, &e), 0);
	b->close(b);
	/* Reaped: no such child any more. */
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	close(sv[1]);
}

static void test_a_passt_that_cannot_run(void **state)
{
	struct net_passt_cfg c = {
		.program = "/nonexistent/kiln-test/passt",
		.address = "10.0.2.15",
		.prefix = 24,
		.gateway = "10.0.2.2",
		.dns = "10.0.2.3",
	};
	struct net_backend *b = NULL;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net_passt_open(&c, &b, &e), -ENOENT);
	assert_null(b);
	assert_non_null(strstr(e.msg, "cannot run '/nonexistent/kiln-test/passt'"));
	assert_non_null(strstr(e.msg, "passt package"));
	c.prefix = 31;
	assert_int_equal(net_passt_open(&c, &b, &e), -EINVAL);
}

/* Whether this process may make a mount namespace (root with CAP_SYS_ADMIN). */
static int can_unshare_mounts(void)
{
	int st;
	pid_t p = fork();

	if (p == 0)
		_exit(unshare(CLONE_NEWNS) == 0 ? 0 : 1);
	return p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * resolver=: passt (here a script in its place) sees a resolv.conf of its
 * own naming the resolver, the host's stays as it was, and the file made
 * for it is gone. Without CAP_SYS_ADMIN the mount namespace is refused,
 * saying so; a resolver that is not one IPv4 address never reaches a file.
 */
static void test_a_resolver_of_its_own(void **state)
{
	char dir[] = "/tmp/kiln-passt-test.XXXXXX", prog[128], outp[128], got[128] = "", *oldtmp;
	struct net_passt_cfg c = {
		.program = prog,
		.address = "10.0.2.15",
		.prefix = 24,
		.gateway = "10.0.2.2",
		.dns = "10.0.2.3",
		.resolver = "192.0.2.53",
	};
	struct net_backend *b = NULL;
	struct err e = { { 0 } };
	FILE *f;
	int r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/passt", dir);
	snprintf(outp, sizeof(outp), "%s/seen", dir);
	f = fopen(prog, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\ncat /etc/resolv.conf >%s\nexec sleep 30\n", outp);
	fclose(f);
	assert_int_equal(chmod(prog, 0755), 0);
	oldtmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	setenv("TMPDIR", dir, 1);
	r = net_passt_open(&c, &b, &e);
	if (oldtmp)
		setenv("TMPDIR", oldtmp, 1);
	else
		unsetenv("TMPDIR");
	free(oldtmp);
	if (!can_unshare_mounts()) {
		assert_int_equal(r, -EPERM);
		assert_non_null(
			strstr(e.msg,
			       "resolver=192.0.2.53: cannot give passt a mount namespace of its own"));
	} else if (access("/etc/resolv.conf", F_OK) != 0) {
		assert_int_equal(r, -ENOENT);
		assert_non_null(
			strstr(e.msg, "cannot bind-mount a resolv.conf over /etc/resolv.conf"));
	} else {
		assert_int_equal(r, 0);
		for (int i = 0; i < 500 && !got[0]; i++) {
			f = fopen(outp, "r");
			if (f) {
				if (!fgets(got, sizeof(got), f))
					got[0] = '\0';
				fclose(f);
			}
			if (!got[0])
				usleep(10000);
		}
		b->close(b);
		assert_string_equal(got, "nameserver 192.0.2.53\n");
		f = fopen("/etc/resolv.conf", "r");
		if (f) {
			if (fgets(got, sizeof(got), f))
				assert_string_not_equal(got, "nameserver 192.0.2.53\n");
			fclose(f);
		}
		unlink(outp);
	}
	/* The file made for passt's namespace is gone: only the script is left. */
	unlink(prog);
	assert_int_equal(rmdir(dir), 0);
	c.resolver = "192.0.2.53\nsearch evil.example";
	assert_int_equal(net_passt_open(&c, &b, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not an IPv4 address"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frames_come_out_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_largest_frame_and_many_small_ones, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_lengths_close_the_backend, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_end_of_stream_is_the_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_never_splits_a_frame_and_says_full, setup,
						teardown),
		cmocka_unit_test(test_close_stops_and_reaps_passt),
		cmocka_unit_test(test_a_passt_that_cannot_run),
		cmocka_unit_test(test_a_resolver_of_its_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * park: kiln-vmm --park's command line, split from hostile bytes, and the
 * wait on a real SOCK_SEQPACKET pair: descriptors placed at PARK_FD_BASE,
 * the socket's end, a message too large.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vmm/kiln-vmm/park.h"

static void test_split(void **state)
{
	char buf[] = "kiln-vmm\0--mem\0"
		     "64\0\0";
	char *argv[PARK_ARGS_MAX + 1];
	struct err e;
	int argc = -1;

	(void)state;
	assert_int_equal(park_msg_split(buf, sizeof(buf) - 1, argv, &argc, &e), 0);
	assert_int_equal(argc, 4);
	assert_string_equal(argv[0], "kiln-vmm");
	assert_string_equal(argv[1], "--mem");
	assert_string_equal(argv[2], "64");
	assert_string_equal(argv[3], ""); /* an empty argument is one */
	assert_null(argv[4]);
}

static void test_split_hostile(void **state)
{
	char *argv[PARK_ARGS_MAX + 1], *many;
	char none[1] = "x", unended[] = "kiln-vmm\0--mem";
	struct err e;
	int argc = -1;

	(void)state;
	assert_int_equal(park_msg_split(none, 0, argv, &argc, &e), -EINVAL);
	assert_int_equal(argc, 0);
	assert_int_equal(park_msg_split(unended, sizeof(unended) - 1, argv, &argc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "NUL"));
	/* PARK_ARGS_MAX empty arguments pass; one more is refused. */
	many = calloc(PARK_ARGS_MAX + 1, 1);
	assert_non_null(many);
	assert_int_equal(park_msg_split(many, PARK_ARGS_MAX, argv, &argc, &e), 0);
	assert_int_equal(argc, PARK_ARGS_MAX);
	assert_int_equal(park_msg_split(many, PARK_ARGS_MAX + 1, argv, &argc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "arguments"));
	assert_int_equal(park_msg_split(many, PARK_MSG_MAX + 1, argv, &argc, &e), -EINVAL);
	free(many);
}

static void send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 4)];
	} c;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		m.msg_control = c.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), fds, sizeof(int) * (size_t)nfds);
	}
	assert_int_equal(sendmsg(sock, &m, 0), (ssize_t)len);
}

/* argv for park_wait naming sp[1], which it closes. */
static void park_args(int fd, char *num, char **argv)
{
	snprintf(num, 16, "%d", fd);
	argv[0] = "kiln-vmm";
	argv[1] = "--park";
	argv[2] = num;
	argv[3] = NULL;
}

static void test_wait_places_descriptors(void **state)
{
	static const char line[] = "kiln-vmm\0--share\0fd=100:kiln0\0";
	char num[16], *argv[4], **out = NULL, comm[17] = "", got[4] = "";
	int sp[2], pipe_a[2], pipe_b[2], argc = 0;
	struct err e;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(pipe_a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pipe_b, O_CLOEXEC), 0);
	send_msg(sp[0], line, sizeof(line) - 1, (int[]){ pipe_a[1], pipe_b[1] }, 2);
	close(pipe_a[1]);
	close(pipe_b[1]);
	/* the socket itself at the number the first descriptor takes */
	assert_int_equal(dup2(sp[1], PARK_FD_BASE), PARK_FD_BASE);
	close(sp[1]);
	sp[1] = PARK_FD_BASE;
	park_args(sp[1], num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(out[2], "fd=100:kiln0");
	/* the descriptors are where the line says (the socket is closed) */
	assert_int_equal(fcntl(PARK_FD_BASE + 2, F_GETFD), -1);
	assert_int_equal(write(PARK_FD_BASE, "a", 1), 1);
	assert_int_equal(write(PARK_FD_BASE + 1, "b", 1), 1);
	assert_int_equal(read(pipe_a[0], got, 1), 1);
	assert_int_equal(read(pipe_b[0], got + 1, 1), 1);
	assert_string_equal(got, "ab");
	/* inherited by the exec of passt only if asked: not close-on-exec, as fd=N given on a command line */
	assert_int_equal(fcntl(PARK_FD_BASE, F_GETFD) & FD_CLOEXEC, 0);
	prctl(PR_GET_NAME, comm);
	assert_string_equal(comm, "kiln-vmm");
	close(PARK_FD_BASE);
	close(PARK_FD_BASE + 1);
	close(pipe_a[0]);
	close(pipe_b[0]);
	close(sp[0]);
	free(out[0]);
	free(out);
}

static void test_wait_end_and_refusals(void **state)
{
	char num[16], *argv[4], **out = NULL, *big;
	int sp[2], argc = 0;
	struct err e;

	(void)state;
	/* kilnd gone before it sent anything: 1, a quiet end */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	close(sp[0]);
	park_args(sp[1], num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), 1);
	/* a message beyond PARK_MSG_MAX: refused, not cut */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int)),
			 0);
	big = calloc(PARK_MSG_MAX + 8, 1);
	assert_non_null(big);
	send_msg(sp[0], big, PARK_MSG_MAX + 8, NULL, 0);
	free(big);
	park_args(sp[1], num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EMSGSIZE);
	close(sp[0]);
	/* not a socket, not a number, other options beside it */
	park_args(0, num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EINVAL);
	park_args(STDERR_FILENO + 1000, num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EBADF);
	argv[2] = "x";
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EINVAL);
	assert_int_equal(park_wait(2, argv, &argc, &out, &e), -EINVAL);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* More descriptors than PARK_FDS_MAX: refused (MSG_CTRUNC), none kept. */
static void test_wait_refuses_too_many_descriptors(void **state)
{
	char num[16], *argv[4], **out = NULL;
	int sp[2], p[2], fds[PARK_FDS_MAX + 1], argc = 0, before, after;
	static const char line[] = "kiln-vmm\0";
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * (PARK_FDS_MAX + 1))];
	} c;
	struct iovec iov = { .iov_base = (void *)line, .iov_len = sizeof(line) - 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)
	};
	struct err e;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i <= PARK_FDS_MAX; i++)
		fds[i] = p[0];
	c.h.cmsg_level = SOL_SOCKET;
	c.h.cmsg_type = SCM_RIGHTS;
	c.h.cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(&c.h), fds, sizeof(fds));
	assert_int_equal(sendmsg(sp[0], &m, 0), (ssize_t)sizeof(line) - 1);
	before = open_fds();
	park_args(sp[1], num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EMSGSIZE);
	after = open_fds();
	assert_int_equal(after, before - 1); /* its socket, and no received descriptor kept */
	close(sp[0]);
	close(p[0]);
	close(p[1]);
}

/* A number the descriptors go to that is open already: refused. */
static void test_wait_refuses_a_taken_number(void **state)
{
	static const char line[] = "kiln-vmm\0";
	char num[16], *argv[4], **out = NULL;
	int sp[2], p[2], argc = 0;
	struct err e;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(dup2(p[1], PARK_FD_BASE), PARK_FD_BASE);
	send_msg(sp[0], line, sizeof(line) - 1, &p[0], 1);
	park_args(sp[1], num, argv);
	assert_int_equal(park_wait(3, argv, &argc, &out, &e), -EEXIST);
	assert_non_null(strstr(e.msg, "descriptor 100 is open already"));
	close(PARK_FD_BASE);
	close(sp[0]);
	close(p[0]);
	close(p[1]);
}

/* kilnd's side: what it would send is what kiln-vmm takes. */
static void test_pack(void **state)
{
	char *argv[PARK_ARGS_MAX + 2], *msg, *back[PARK_ARGS_MAX + 1], *big;
	size_t len;
	struct err e;
	int argc;

	(void)state;
	argv[0] = "kiln-vmm";
	argv[1] = "";
	argv[2] = "--mem";
	argv[3] = NULL;
	assert_int_equal(park_msg_pack(argv, &msg, &len, &e), 0);
	assert_int_equal(len, sizeof("kiln-vmm\0\0--mem"));
	assert_int_equal(park_msg_split(msg, len, back, &argc, &e), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(back[2], "--mem");
	free(msg);
	for (int i = 0; i <= PARK_ARGS_MAX; i++)
		argv[i] = "x";
	argv[PARK_ARGS_MAX + 1] = NULL;
	assert_int_equal(park_msg_pack(argv, &msg, &len, &e), -E2BIG);
	assert_null(msg);
	big = malloc(PARK_MSG_MAX + 1);
	assert_non_null(big);
	memset(big, 'a', PARK_MSG_MAX);
	big[PARK_MSG_MAX] = '\0';
	argv[0] = big;
	argv[1] = NULL;
	assert_int_equal(park_msg_pack(argv, &msg, &len, &e), -E2BIG);
	argv[0] = NULL;
	assert_int_equal(park_msg_pack(argv, &msg, &len, &e), -E2BIG);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_hostile),
		cmocka_unit_test(test_wait_places_descriptors),
		cmocka_unit_test(test_wait_end_and_refusals),
		cmocka_unit_test(test_wait_refuses_too_many_descriptors),
		cmocka_unit_test(test_wait_refuses_a_taken_number),
		cmocka_unit_test(test_pack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * api/runtime/console_sock.c: the pty master handed over --console-socket
 * as runc hands it (one message, the name as data, exactly one
 * SCM_RIGHTS descriptor), received as conmon receives it; a message
 * carrying no descriptor or several is refused and leaks none.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/runtime/console_sock.h"

static struct err e;

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* The master that came over the socket is the pty's: bytes written to
 * the slave are read from it. */
static void same_pty(int got, int slave)
{
	char buf[8];

	assert_true(isatty(got));
	assert_int_equal(write(slave, "hi\n", 3), 3);
	assert_true(read(got, buf, sizeof(buf)) > 0);
	assert_int_equal(buf[0], 'h');
}

static void test_pair(void **state)
{
	int sv[2], m, s, got = -1;
	char name[CONSOLE_NAME_MAX];

	(void)state;
	assert_int_equal(console_pty_open(&m, &s, &e), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(console_sock_send(sv[0], m, CONSOLE_MASTER_NAME, &e), 0);
	assert_int_equal(console_sock_recv(sv[1], &got, name, sizeof(name), &e), 0);
	assert_string_equal(name, "/dev/ptmx");
	assert_true(got >= 0 && got != m);
	same_pty(got, s);
	close(got);
	/* an empty name is not runc's message */
	assert_int_equal(console_sock_send(sv[0], m, "", &e), -EINVAL);
	close(sv[0]);
	close(sv[1]);
	close(m);
	close(s);
}

/* The shim's pty: raw (bytes pass as they are, no echo, no \n -> \r\n),
 * and a size set on the master (the engine's TIOCSWINSZ) read on the
 * slave. */
static void test_raw_and_size(void **state)
{
	int m, s;
	char buf[16];
	unsigned rows, cols;
	struct termios t;

	(void)state;
	assert_int_equal(console_pty_open_raw(&m, &s, &e), 0);
	assert_int_equal(tcgetattr(s, &t), 0);
	assert_false(t.c_lflag & (ICANON | ECHO | ISIG));
	assert_false(t.c_oflag & OPOST);
	assert_int_equal(write(s, "a\nb", 3), 3);
	assert_int_equal(read(m, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "a\nb", 3);
	assert_int_equal(write(m, "\x03x", 2), 2); /* ^C is a byte, not SIGINT */
	assert_int_equal(read(s, buf, sizeof(buf)), 2);
	assert_int_equal(buf[0], 3);
	assert_int_equal(console_pty_set_size(m, 40, 120, &e), 0);
	assert_int_equal(console_pty_get_size(s, &rows, &cols, &e), 0);
	assert_int_equal(rows, 40);
	assert_int_equal(cols, 120);
	assert_int_equal(console_pty_set_size(m, 70000, 1, &e), -EINVAL);
	assert_int_equal(console_pty_get_size(-1, &rows, &cols, &e), -EBADF);
	close(m);
	close(s);
}

static void send_fds(int sock, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	memset(&ctl, 0, sizeof(ctl));
	if (n) {
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	assert_int_equal(sendmsg(sock, &msg, 0), 1);
}

static void test_recv_refuses(void **state)
{
	int sv[2], got = -1, before, fds[2];
	char name[16];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fds[0] = dup(0);
	fds[1] = dup(0);
	/* no descriptor */
	send_fds(sv[0], fds, 0);
	assert_int_equal(console_sock_recv(sv[1], &got, name, sizeof(name), &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "exactly one descriptor"));
	/* two: refused, and both received copies closed */
	send_fds(sv[0], fds, 2);
	before = open_fds();
	assert_int_equal(console_sock_recv(sv[1], &got, name, sizeof(name), &e), -EBADMSG);
	assert_int_equal(open_fds(), before);
	assert_int_equal(got, -1);
	close(fds[0]);
	close(fds[1]);
	close(sv[0]);
	close(sv[1]);
}

/* Through a listening socket as the engine makes it, at a path longer
 * than sun_path (reached through its directory). */
static void handover_at(const char *dir, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l, c, m, s, got = -1;
	char name[64], cwd[4096];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", strrchr(path, '/') + 1);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(console_pty_open(&m, &s, &e), 0);
	assert_int_equal(console_sock_hand_over(path, m, &e), 0);
	c = accept(l, NULL, NULL);
	assert_true(c >= 0);
	assert_int_equal(console_sock_recv(c, &got, name, sizeof(name), &e), 0);
	assert_string_equal(name, CONSOLE_MASTER_NAME);
	same_pty(got, s);
	/* the runtime closed its end: nothing more comes */
	assert_int_equal(read(c, name, sizeof(name)), 0);
	close(got);
	close(c);
	close(l);
	close(m);
	close(s);
	unlink(path);
}

static void test_hand_over(void **state)
{
	char dir[] = "/tmp/test_console_sock.XXXXXX", deep[512], path[600];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ts", dir);
	handover_at(dir, path);
	snprintf(deep, sizeof(deep), "%s/%0120d", dir, 0);
	assert_int_equal(mkdir(deep, 0700), 0);
	snprintf(path, sizeof(path), "%s/console.sock", deep);
	assert_true(strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path));
	handover_at(deep, path);
	/* nobody listening: the engine's mistake, said so */
	assert_int_equal(console_sock_hand_over(path, 0, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "connect"));
	rmdir(deep);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair),
		cmocka_unit_test(test_raw_and_size),
		cmocka_unit_test(test_recv_refuses),
		cmocka_unit_test(test_hand_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

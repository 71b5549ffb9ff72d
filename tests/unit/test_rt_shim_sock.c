/*
 * api/runtime/rt_shim_sock.c: a command's call to a container's shim
 * over <id>/shim.sock, with a thread as the shim: replies ok and err
 * come back, a bad request is dropped, a silent shim times out, no shim
 * is one line, the socket is 0600 and found through the directory's
 * descriptor however long --root is.
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
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/runtime/rt_shim_sock.h"

static char dir[300];
static int dfd;
static struct err e;

struct shim {
	int lfd;
	int n;       /* requests to serve */
	bool silent; /* accept, never answer */
	struct rt_shim_req got[4];
	int bad;
};

static void *shim_main(void *arg)
{
	struct shim *s = arg;
	struct err se;

	for (int i = 0; i < s->n; i++) {
		int c;
		struct rt_shim_req r;

		if (rt_shim_sock_accept(s->lfd, &c, &r, &se) < 0) {
			s->bad++;
			continue;
		}
		s->got[i] = r;
		if (s->silent) {
			usleep(400 * 1000);
			close(c);
		} else if (r.op == RT_SHIM_KILL && r.signo == 0) {
			rt_shim_sock_reply(c, "container not running");
		} else {
			rt_shim_sock_reply(c, NULL);
		}
	}
	return NULL;
}

static int setup(void **state)
{
	char cmd[400];

	(void)state;
	/* longer than sun_path: only the descriptor's path reaches it */
	snprintf(dir, sizeof(dir), "/tmp/test_rt_shim_sock.%d/%0150d", getpid(), 0);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
	if (system(cmd) != 0)
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[100];

	(void)state;
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/test_rt_shim_sock.%d", getpid());
	return system(cmd) == 0 ? 0 : -1;
}

static void test_calls(void **state)
{
	struct shim s = { .n = 3 };
	struct rt_shim_req start = { .op = RT_SHIM_START };
	struct rt_shim_req kill0 = { .op = RT_SHIM_KILL, .signo = 0 };
	struct rt_shim_req kill9 = { .op = RT_SHIM_KILL, .signo = 9, .all = true };
	struct stat st;
	pthread_t t;

	(void)state;
	assert_int_equal(rt_shim_sock_listen(dfd, &s.lfd, &e), 0);
	assert_int_equal(fstatat(dfd, RT_SHIM_SOCK, &st, 0), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	pthread_create(&t, NULL, shim_main, &s);
	assert_int_equal(rt_shim_sock_call(dfd, &start, 2000, &e), 0);
	assert_int_equal(rt_shim_sock_call(dfd, &kill0, 2000, &e), -EIO);
	assert_string_equal(e.msg, "container not running");
	assert_int_equal(rt_shim_sock_call(dfd, &kill9, 2000, &e), 0);
	pthread_join(t, NULL);
	assert_int_equal(s.got[2].signo, 9);
	assert_true(s.got[2].all);
	close(s.lfd);
}

static void test_bad_and_silent(void **state)
{
	struct shim s = { .n = 2 };
	struct rt_shim_req start = { .op = RT_SHIM_START };
	pthread_t t;
	int c;

	(void)state;
	assert_int_equal(rt_shim_sock_listen(dfd, &s.lfd, &e), 0); /* the stale one replaced */
	pthread_create(&t, NULL, shim_main, &s);
	/* a bad line: the shim drops it, the caller sees the connection end */
	{
		char buf[8];
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		c = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/shim.sock", dfd);
		assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(send(c, "stop\n", 5, 0), 5);
		assert_int_equal(read(c, buf, sizeof(buf)), 0);
		close(c);
	}
	assert_int_equal(rt_shim_sock_call(dfd, &start, 2000, &e), 0);
	pthread_join(t, NULL);
	assert_int_equal(s.bad, 1);
	/* a shim that never answers: the call gives up */
	s = (struct shim){ .lfd = s.lfd, .n = 1, .silent = true };
	pthread_create(&t, NULL, shim_main, &s);
	assert_int_equal(rt_shim_sock_call(dfd, &start, 100, &e), -ETIMEDOUT);
	assert_string_equal(e.msg, "the container's shim did not answer in 100 ms");
	pthread_join(t, NULL);
	close(s.lfd);
	/* nobody listens */
	assert_int_equal(rt_shim_sock_call(dfd, &start, 100, &e), -ECONNREFUSED);
	assert_non_null(strstr(e.msg, "the container's shim is not running"));
	unlinkat(dfd, RT_SHIM_SOCK, 0);
	assert_int_equal(rt_shim_sock_call(dfd, &start, 100, &e), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls),
		cmocka_unit_test(test_bad_and_silent),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}

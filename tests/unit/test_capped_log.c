/*
 * lib/base/capped_log.c: a log fed from a real pipe never holds more than
 * its cap (one rotation kept as .1, the older bytes gone), a pipe's end is
 * seen, a planted symbolic link is not written through, and a log that
 * could not be opened swallows writes without failing its caller.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/capped_log.h"

struct fx {
	char dir[64];
	int dirfd;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_capped_log.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dirfd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	const char *names[] = { "log", "log.1", "target", "link" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(f->dirfd, names[i], 0);
	close(f->dirfd);
	rmdir(f->dir);
	free(f);
	return 0;
}

static off_t size_of(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_size : -1;
}

static void test_rotates_at_cap(void **state)
{
	struct fx *f = *state;
	struct capped_log l;
	char chunk[100];

	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(capped_log_open(&l, f->dirfd, "log", "log.1", 1000), 0);
	for (int i = 0; i < 25; i++)
		capped_log_write(&l, chunk, sizeof(chunk));
	/* 2500 bytes in: the log and its one rotation hold at most 2 * cap */
	assert_true(size_of(f->dirfd, "log") <= 1000);
	assert_int_equal(size_of(f->dirfd, "log.1"), 1000);
	assert_int_equal(size_of(f->dirfd, "log"), 500);
	capped_log_close(&l);
	/* a new open starts afresh: the rotation is gone, the log empty */
	assert_int_equal(capped_log_open(&l, f->dirfd, "log", "log.1", 1000), 0);
	assert_int_equal(size_of(f->dirfd, "log.1"), -1);
	assert_int_equal(size_of(f->dirfd, "log"), 0);
	capped_log_close(&l);
}

static void test_pumps_a_pipe_to_its_end(void **state)
{
	struct fx *f = *state;
	struct capped_log l;
	int p[2];
	char buf[32] = { 0 };
	int fd;

	assert_int_equal(capped_log_open(&l, f->dirfd, "log", "log.1", 1 << 20), 0);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	capped_log_attach(&l, p[0]);
	assert_true(capped_log_pump(&l)); /* nothing yet: still open */
	assert_int_equal(write(p[1], "hello\n", 6), 6);
	assert_true(capped_log_pump(&l));
	close(p[1]);
	assert_false(capped_log_pump(&l)); /* the writer left */
	assert_int_equal(l.pipe_r, -1);
	assert_false(capped_log_pump(&l));
	capped_log_close(&l);
	fd = openat(f->dirfd, "log", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "hello\n");
	close(fd);
}

/* A writer that keeps the pipe full: one pump returns after at most
 * CAPPED_LOG_PUMP_MAX (plus one read) with the pipe still open. */
static void test_pump_is_bounded(void **state)
{
	struct fx *f = *state;
	struct capped_log l;
	static char chunk[4096];
	int p[2];
	pid_t pid;

	assert_int_equal(capped_log_open(&l, f->dirfd, "log", "log.1", 1 << 20), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		for (;;)
			if (write(p[1], chunk, sizeof(chunk)) < 0)
				_exit(0);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	/* the pipe full first (64 KiB), so the pump has more than its bound */
	for (int i = 0, q = 0; i < 500 && (ioctl(p[0], FIONREAD, &q) < 0 || q < 65536); i++)
		usleep(10000);
	capped_log_attach(&l, p[0]);
	assert_true(capped_log_pump(&l));
	assert_true(l.written <= CAPPED_LOG_PUMP_MAX + 16384);
	assert_true(l.written >= CAPPED_LOG_PUMP_MAX / 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	capped_log_close(&l);
}

static void test_link_not_followed(void **state)
{
	struct fx *f = *state;
	struct capped_log l;
	int fd = openat(f->dirfd, "target", O_WRONLY | O_CREAT, 0600);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlinkat("target", f->dirfd, "link"), 0);
	assert_int_equal(capped_log_open(&l, f->dirfd, "link", "log.1", 100), -ELOOP);
	capped_log_write(&l, "dropped", 7); /* no log: swallowed, no crash */
	capped_log_close(&l);
	assert_int_equal(size_of(f->dirfd, "target"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rotates_at_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pumps_a_pipe_to_its_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pump_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_not_followed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * lib/base/open_beneath.c: what a jailed kiln-vmm can plant in the
 * directories it writes, opened by root from a trusted directory. A
 * symbolic link anywhere on the way (even one that points back inside),
 * a ".." or absolute path, a mount point crossed, a fifo, a socket, or a
 * directory where a file is meant (and the other way round) is refused,
 * each with its own error; a fifo is refused at once (an alarm ends the
 * test if the open blocks).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/open_beneath.h"

/* <dir>/top is the trusted directory; <dir>/other holds what a planted
 * link would lead to. */
struct fx {
	char dir[64], path[160];
	int top;
};

static const char *at(struct fx *f, const char *rel)
{
	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, rel);
	return f->path;
}

static void put(struct fx *f, const char *rel, const char *text)
{
	int fd = open(at(f, rel), O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-beneath-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	if (mkdir(at(f, "top"), 0700) || mkdir(at(f, "top/cp"), 0700) ||
	    mkdir(at(f, "top/cp/ready"), 0700) || mkdir(at(f, "other"), 0700))
		return -1;
	put(f, "top/cp/ready/disk0", "template disk");
	put(f, "other/disk0", "another tenant's disk");
	f->top = open(at(f, "top"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	*state = f;
	/* A blocking open of a fifo would hang the test: end it instead. */
	alarm(10);
	return f->top < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	alarm(0);
	close(f->top);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void test_file_and_dir_opened(void **state)
{
	struct fx *f = *state;
	struct stat st;
	struct err e;
	char buf[32] = "";
	int fd = open_beneath(f->top, "cp/ready/disk0", OPEN_BENEATH_FILE, &st, &e);

	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 13);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 13);
	assert_string_equal(buf, "template disk");
	/* what is returned blocks as a file does: a copy never sees EAGAIN */
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	fd = open_beneath(f->top, "cp/ready", OPEN_BENEATH_DIR, NULL, &e);
	assert_true(fd >= 0);
	close(fd);
}

static void test_link_above_refused(void **state)
{
	struct fx *f = *state;
	struct err e;

	char other[160];

	/* ready replaced by a link to a directory with a disk0 of its own */
	snprintf(other, sizeof(other), "%s", at(f, "top/cp/was-ready"));
	assert_int_equal(rename(at(f, "top/cp/ready"), other), 0);
	snprintf(other, sizeof(other), "%s", at(f, "other"));
	assert_int_equal(symlink(other, at(f, "top/cp/ready")), 0);
	assert_int_equal(open_beneath(f->top, "cp/ready/disk0", OPEN_BENEATH_FILE, NULL, &e),
			 -ELOOP);
	assert_non_null(strstr(e.msg, "'cp/ready/disk0': a component is a symbolic link"));
	assert_int_equal(open_beneath(f->top, "cp/ready", OPEN_BENEATH_DIR, NULL, &e), -ELOOP);
}

static void test_link_inside_refused_too(void **state)
{
	struct fx *f = *state;
	struct err e;

	/* a relative link that stays beneath: still not followed */
	assert_int_equal(symlink("ready", at(f, "top/cp/alias")), 0);
	assert_int_equal(open_beneath(f->top, "cp/alias/disk0", OPEN_BENEATH_FILE, NULL, &e),
			 -ELOOP);
	assert_int_equal(symlink("disk0", at(f, "top/cp/ready/disk1")), 0);
	assert_int_equal(open_beneath(f->top, "cp/ready/disk1", OPEN_BENEATH_FILE, NULL, &e),
			 -ELOOP);
}

static void test_fifo_refused_at_once(void **state)
{
	struct fx *f = *state;
	struct err e;

	assert_int_equal(unlink(at(f, "top/cp/ready/disk0")), 0);
	assert_int_equal(mkfifo(at(f, "top/cp/ready/disk0"), 0600), 0);
	assert_int_equal(open_beneath(f->top, "cp/ready/disk0", OPEN_BENEATH_FILE, NULL, &e),
			 -EINVAL);
	assert_string_equal(e.msg, "'cp/ready/disk0' is a fifo, not a regular file: refused");
	/* as a directory it is not even opened */
	assert_int_equal(open_beneath(f->top, "cp/ready/disk0", OPEN_BENEATH_DIR, NULL, &e),
			 -ENOTDIR);
	assert_non_null(strstr(e.msg, "is not a directory"));
}

static void test_socket_refused(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct err e;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(strlen(at(f, "top/cp/sock")) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* a socket cannot be opened at all: the kernel says ENXIO */
	assert_true(open_beneath(f->top, "cp/sock", OPEN_BENEATH_FILE, NULL, &e) < 0);
	close(s);
}

static void test_wrong_kind_refused(void **state)
{
	struct fx *f = *state;
	struct err e;

	assert_int_equal(open_beneath(f->top, "cp/ready", OPEN_BENEATH_FILE, NULL, &e), -EINVAL);
	assert_string_equal(e.msg, "'cp/ready' is a directory, not a regular file: refused");
	assert_int_equal(open_beneath(f->top, "cp/ready/disk0", OPEN_BENEATH_DIR, NULL, &e),
			 -ENOTDIR);
	assert_int_equal(open_beneath(f->top, "cp/ready/disk0/x", OPEN_BENEATH_FILE, NULL, &e),
			 -ENOTDIR);
	assert_non_null(strstr(e.msg, "a component above it is not a directory"));
	assert_int_equal(open_beneath(f->top, "cp/none", OPEN_BENEATH_FILE, NULL, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "'cp/none': No such file"));
}

static void test_escapes_refused(void **state)
{
	struct fx *f = *state;
	struct err e;
	int root;

	assert_int_equal(open_beneath(f->top, "../other/disk0", OPEN_BENEATH_FILE, NULL, &e),
			 -EXDEV);
	assert_non_null(strstr(e.msg, "leaves its directory or crosses a mount point"));
	assert_int_equal(open_beneath(f->top, at(f, "other/disk0"), OPEN_BENEATH_FILE, NULL, &e),
			 -EXDEV);
	/* ".." that stays beneath is fine */
	root = open_beneath(f->top, "cp/../cp/ready/disk0", OPEN_BENEATH_FILE, NULL, &e);
	assert_true(root >= 0);
	close(root);
	/* /proc is a mount of its own; its magic links are links too */
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(open_beneath(root, "proc/self/status", OPEN_BENEATH_FILE, NULL, &e),
			 -EXDEV);
	close(root);
	root = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(open_beneath(root, "root/etc/hostname", OPEN_BENEATH_FILE, NULL, &e),
			 -ELOOP);
	close(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_and_dir_opened, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_above_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_inside_refused_too, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_refused_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_kind_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

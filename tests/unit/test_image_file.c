/*
 * api/kilnd/images/image_file.c: kilnd takes over the image file an
 * importer made only if fstat of the descriptor says it is a regular file
 * of the importer's uid with one link; a symlink, a fifo, a hard link to
 * another file (/etc/shadow) or another owner's file is refused; the
 * descriptor checked is what gets linked, and nothing is replaced.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/kilnd/images/image_file.h"

struct fx {
	char dir[64];
	char img[96], dest[96], other[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int fd;

	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-imgfile-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->img, sizeof(f->img), "%s/image.ext4", f->dir);
	snprintf(f->dest, sizeof(f->dest), "%s/NAME.ext4", f->dir);
	snprintf(f->other, sizeof(f->other), "%s/secret", f->dir);
	fd = open(f->other, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "root's", 6) != 6)
		return -1;
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void make_image(struct fx *f)
{
	int fd = open(f->img, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ext4", 4), 4);
	close(fd);
}

static void test_good_file_linked_by_fd(void **state)
{
	struct fx *f = *state;
	struct stat st, dst;
	struct err e;
	char moved[96];
	int fd;

	make_image(f);
	fd = image_file_open(f->img, geteuid(), &st, &e);
	assert_true(fd >= 0);
	/* the path is swapped after the check: the fd's file is linked */
	snprintf(moved, sizeof(moved), "%s/moved", f->dir);
	assert_int_equal(rename(f->img, moved), 0);
	assert_int_equal(rename(f->other, f->img), 0);
	assert_int_equal(image_file_link(fd, f->dest, &e), 0);
	assert_int_equal(stat(f->dest, &dst), 0);
	assert_int_equal(dst.st_ino, st.st_ino);
	/* never replaces what is there */
	assert_int_equal(image_file_link(fd, f->dest, &e), -EEXIST);
	close(fd);
}

static void test_hard_link_refused(void **state)
{
	struct fx *f = *state;
	struct stat st;
	struct err e;

	assert_int_equal(link(f->other, f->img), 0);
	assert_int_equal(image_file_open(f->img, geteuid(), &st, &e), -EMLINK);
	assert_non_null(strstr(e.msg, "2 links"));
}

static void test_symlink_and_fifo_refused(void **state)
{
	struct fx *f = *state;
	struct stat st;
	struct err e;

	assert_int_equal(symlink(f->other, f->img), 0);
	assert_int_equal(image_file_open(f->img, geteuid(), &st, &e), -ELOOP);
	assert_int_equal(unlink(f->img), 0);
	assert_int_equal(mkfifo(f->img, 0600), 0);
	/* opened without blocking, then refused */
	assert_int_equal(image_file_open(f->img, geteuid(), &st, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a regular file"));
}

static void test_other_owner_refused(void **state)
{
	struct fx *f = *state;
	struct stat st;
	struct err e;

	make_image(f);
	assert_int_equal(image_file_open(f->img, geteuid() + 1, &st, &e), -EPERM);
	assert_non_null(strstr(e.msg, "owned by uid"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_file_linked_by_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_and_fifo_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_owner_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

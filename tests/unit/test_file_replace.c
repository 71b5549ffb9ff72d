/* file_replace: whole replacement, no temporary file left either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/file_replace.h"

static void read_back(const char *dir, const char *name, char *out, size_t cap)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, out, cap - 1);
	assert_true(n >= 0);
	out[n] = 0;
	close(fd);
}

static void test_replaces(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", got[64], path[600];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(file_replace(dir, "meta.json", "{\"a\":1}", 7, 0600), 0);
	read_back(dir, "meta.json", got, sizeof(got));
	assert_string_equal(got, "{\"a\":1}");
	assert_int_equal(file_replace(dir, "meta.json", "{}", 2, 0600), 0);
	read_back(dir, "meta.json", got, sizeof(got));
	assert_string_equal(got, "{}");
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/meta.json.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);
	/* A temporary name that is a symlink is not followed (and goes). */
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(file_replace(dir, "meta.json", "{}", 2, 0600), -ELOOP);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(unlink(path), -1);
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	unlink(path);
	rmdir(dir);
}

static void test_failures(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", path[600];

	(void)state;
	assert_int_equal(file_replace("/nonexistent-kiln-dir", "x", "", 0, 0600), -ENOENT);
	assert_non_null(mkdtemp(dir));
	/* The target is a directory: the rename fails, the temporary file goes. */
	snprintf(path, sizeof(path), "%s/d", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/d/f", dir);
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0600)), 0);
	assert_int_equal(file_replace(dir, "d", "x", 1, 0600), -EISDIR);
	snprintf(path, sizeof(path), "%s/d.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/d/f", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/d", dir);
	rmdir(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replaces),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* file_replace: whole replacement, no temporary file left either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
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
	/* A temporary name that is a symlink is not followed: it goes, and
	 * the file is written afresh. */
	assert_int_equal(symlink("/nonexistent-kiln-target", path), 0);
	assert_int_equal(file_replace(dir, "meta.json", "{\"b\":2}", 7, 0600), 0);
	assert_int_equal(access("/nonexistent-kiln-target", F_OK), -1);
	assert_int_equal(unlink(path), -1);
	read_back(dir, "meta.json", got, sizeof(got));
	assert_string_equal(got, "{\"b\":2}");
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	unlink(path);
	rmdir(dir);
}

/* A temporary file a crash left with wider permissions does not carry
 * them into a file asked for 0600 (the sandbox CA's key, lib/tlsmint). */
static void test_leftover_tmp_mode(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", got[64], path[600];
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key.pem.tmp", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_equal(write(fd, "stale and longer", 16), 16);
	close(fd);
	/* Someone holding the leftover open learns nothing of what is written. */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(file_replace(dir, "key.pem", "secret", 6, 0600), 0);
	assert_int_equal(read(fd, got, sizeof(got)), 16);
	assert_memory_equal(got, "stale and longer", 16);
	close(fd);
	read_back(dir, "key.pem", got, sizeof(got));
	assert_string_equal(got, "secret");
	snprintf(path, sizeof(path), "%s/key.pem", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
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

/* file_replace_at: a path below dirfd, an absolute one by AT_FDCWD, and
 * names that are too long. */
static void test_at_paths(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", got[64], path[PATH_MAX + 8];
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(file_replace_at(dfd, "sub/a", "one", 3, 0600), 0);
	read_back(path, "a", got, sizeof(got));
	assert_string_equal(got, "one");
	snprintf(path, sizeof(path), "%s/sub/a", dir);
	assert_int_equal(file_replace_at(AT_FDCWD, path, "two", 3, 0600), 0);
	read_back(dir, "sub/a", got, sizeof(got));
	assert_string_equal(got, "two");
	/* the whole path, and one name longer than NAME_MAX with ".tmp" */
	memset(path, 'n', PATH_MAX);
	path[PATH_MAX] = 0;
	assert_int_equal(file_replace_at(dfd, path, "x", 1, 0600), -ENAMETOOLONG);
	path[NAME_MAX - 2] = 0;
	assert_int_equal(file_replace_at(dfd, path, "x", 1, 0600), -ENAMETOOLONG);
	assert_int_equal(errno, ENAMETOOLONG);
	snprintf(path, sizeof(path), "%s/sub/a", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	close(dfd);
	rmdir(dir);
}

/* A name that ends in '/' (or is empty) names no file: refused before
 * "<name>.tmp", which would be ".tmp" inside that directory, someone
 * else's file there truncated and removed. */
static void test_at_names_no_file(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", got[64], path[600];
	int dfd, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	snprintf(path, sizeof(path), "%s/d", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	fd = openat(dfd, "d/.tmp", O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	assert_int_equal(file_replace_at(dfd, "d/", "x", 1, 0600), -EINVAL);
	assert_int_equal(file_replace_at(dfd, "", "x", 1, 0600), -EINVAL);
	assert_int_equal(faccessat(dfd, ".tmp", F_OK, 0), -1);
	read_back(path, ".tmp", got, sizeof(got));
	assert_string_equal(got, "keep");
	unlinkat(dfd, "d/.tmp", 0);
	unlinkat(dfd, "d", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

/* file_replace_owned_at: in place already owned by the reader it is for
 * (as root; elsewhere a chown to another uid is EPERM, and nothing is
 * left behind). */
static void test_owned(void **state)
{
	char dir[] = "/tmp/kiln-replace-XXXXXX", got[64], path[PATH_MAX + 8];
	struct stat st;
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(file_replace_owned_at(dfd, "f", "own", 3, 0600, (uid_t)-1, (gid_t)-1), 0);
	assert_int_equal(fstatat(dfd, "f", &st, 0), 0);
	assert_int_equal(st.st_uid, geteuid());
	if (geteuid() == 0) {
		assert_int_equal(file_replace_owned_at(dfd, "f", "new", 3, 0600, 65534, 65533), 0);
		assert_int_equal(fstatat(dfd, "f", &st, 0), 0);
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65533);
		assert_int_equal(st.st_mode & 07777, 0600);
		read_back(dir, "f", got, sizeof(got));
		assert_string_equal(got, "new");
	} else {
		assert_int_equal(file_replace_owned_at(dfd, "f", "new", 3, 0600, 65534, 65534),
				 -EPERM);
		read_back(dir, "f", got, sizeof(got));
		assert_string_equal(got, "own");
	}
	assert_int_equal(faccessat(dfd, "f.tmp", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	snprintf(path, sizeof(path), "%s/f", dir);
	unlink(path);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replaces),         cmocka_unit_test(test_leftover_tmp_mode),
		cmocka_unit_test(test_failures),         cmocka_unit_test(test_at_paths),
		cmocka_unit_test(test_at_names_no_file), cmocka_unit_test(test_owned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

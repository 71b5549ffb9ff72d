/*
 * file_copy_sparse (lib/base/file_copy.c): a sparse file copied with its
 * holes, within a filesystem and across two (a snapshot in /run copied
 * into an engine's checkpoint directory elsewhere: copy_file_range's
 * EXDEV falls back to reading and writing).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/file_copy.h"

#define MIB (1 << 20)

static void copy_into(const char *dir)
{
	char src[] = "/tmp/file-copy.XXXXXX", dst[256], buf[16];
	struct stat st;
	uint64_t used = 0;
	int in, out;

	in = mkstemp(src);
	assert_true(in >= 0);
	/* 64 MiB, data only at 1 MiB and 40 MiB */
	assert_int_equal(ftruncate(in, 64 * MIB), 0);
	assert_int_equal(pwrite(in, "first", 5, MIB), 5);
	assert_int_equal(pwrite(in, "second", 6, 40 * MIB), 6);
	snprintf(dst, sizeof(dst), "%s/file-copy-out.%d", dir, (int)getpid());
	out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(out >= 0);
	assert_int_equal(file_copy_sparse(in, out, &used), 0);
	assert_true(used > 0 && used < 8 * MIB);
	assert_int_equal(fstat(out, &st), 0);
	assert_int_equal(st.st_size, 64 * MIB);
	assert_true((uint64_t)st.st_blocks * 512 < 8 * MIB); /* the holes stayed holes */
	assert_int_equal(pread(out, buf, 5, MIB), 5);
	assert_memory_equal(buf, "first", 5);
	assert_int_equal(pread(out, buf, 6, 40 * MIB), 6);
	assert_memory_equal(buf, "second", 6);
	assert_int_equal(pread(out, buf, 4, 20 * MIB), 4);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	close(in);
	close(out);
	unlink(src);
	unlink(dst);
}

static void test_same_filesystem(void **state)
{
	(void)state;
	copy_into("/tmp");
}

static void test_across_filesystems(void **state)
{
	struct stat a, b;

	(void)state;
	if (stat("/tmp", &a) < 0 || stat("/dev/shm", &b) < 0 || a.st_dev == b.st_dev)
		skip(); /* /dev/shm is another filesystem on every machine kiln runs on */
	copy_into("/dev/shm");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_filesystem),
		cmocka_unit_test(test_across_filesystems),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * lib/digest: image digests over nettle's SHA-256. The FIPS 180-4 test
 * vectors through nettle and digest_str (what kilnd and the importer
 * write into image records and compare with OCI digests), and digest_fd
 * over files, pipes and descriptors that cannot be read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/digest/digest.h"

#define ABC "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define TWO_BLOCKS "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
#define MILLION_A "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

static void hash_str(const void *p, size_t n, char out[DIGEST_STR_LEN])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, n, p);
	sha256_digest(&h, sizeof(d), d);
	digest_str(d, out);
}

static void test_fips_vectors(void **state)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	char s[DIGEST_STR_LEN], hex[DIGEST_HEX_LEN];
	struct sha256_ctx h;
	char *a = malloc(1000000);

	(void)state;
	hash_str("abc", 3, s);
	assert_string_equal(s, ABC);
	hash_str("", 0, s);
	assert_string_equal(s, EMPTY);
	/* 56 bytes: the padding needs a second block */
	hash_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, s);
	assert_string_equal(s, TWO_BLOCKS);
	/* a million 'a', fed in uneven pieces */
	assert_non_null(a);
	memset(a, 'a', 1000000);
	sha256_init(&h);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 3 % 977 + 1)
		sha256_update(&h, off + step > 1000000 ? 1000000 - off : step,
			      (const uint8_t *)a + off);
	sha256_digest(&h, sizeof(d), d);
	digest_str(d, s);
	assert_string_equal(s, MILLION_A);
	/* the hex alone is the string without its prefix */
	digest_hex(d, hex);
	assert_int_equal(strlen(hex), 64);
	assert_string_equal(hex, MILLION_A + 7);
	free(a);
}

static void test_fd(void **state)
{
	char path[] = "/tmp/kiln-digest-XXXXXX", s[DIGEST_STR_LEN];
	char *a = malloc(1000000);
	int fd = mkstemp(path), p[2];

	(void)state;
	assert_true(fd >= 0);
	assert_non_null(a);
	unlink(path);
	/* more than one 64 KiB read, and a partial last one */
	memset(a, 'a', 1000000);
	assert_int_equal(write(fd, a, 1000000), 1000000);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(digest_fd(fd, s), 0);
	assert_string_equal(s, MILLION_A);
	/* at end of file: the empty input's digest */
	assert_int_equal(digest_fd(fd, s), 0);
	assert_string_equal(s, EMPTY);
	/* from the current offset, not the start */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "xxabc", 5, 0), 5);
	assert_int_equal(lseek(fd, 2, SEEK_SET), 2);
	assert_int_equal(digest_fd(fd, s), 0);
	assert_string_equal(s, ABC);
	close(fd);
	/* a pipe: short reads until the writer is gone */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	assert_int_equal(digest_fd(p[0], s), 0);
	assert_string_equal(s, ABC);
	close(p[0]);
	free(a);
}

/* A read that fails is its -errno, whatever was hashed before. */
static void test_fd_unreadable(void **state)
{
	char s[DIGEST_STR_LEN];
	int fd;

	(void)state;
	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(digest_fd(fd, s), -EISDIR);
	close(fd);
	fd = open("/dev/null", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(digest_fd(fd, s), -EBADF);
	close(fd);
	assert_int_equal(digest_fd(-1, s), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fips_vectors),
		cmocka_unit_test(test_fd),
		cmocka_unit_test(test_fd_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

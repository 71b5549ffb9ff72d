/* rootfs_grow: the ext4 superblock's geometry and the growth target. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guest-init/sys/rootfs_grow.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A superblock: magic, log2(block size / 1024), block count, 64bit feature. */
static void sb_make(uint8_t *sb, uint32_t log, uint64_t blocks, int is64)
{
	memset(sb, 0, ROOTFS_SB_SIZE);
	sb[0x38] = 0x53;
	sb[0x39] = 0xEF;
	put32(sb + 0x18, log);
	put32(sb + 0x04, (uint32_t)blocks);
	if (is64) {
		put32(sb + 0x60, 0x80);
		put32(sb + 0x150, (uint32_t)(blocks >> 32));
	}
}

static void test_geometry(void **state)
{
	uint8_t sb[ROOTFS_SB_SIZE];
	struct rootfs_ext4 fs;

	(void)state;
	/* The minimal image: 32 MiB of 1 KiB blocks. */
	sb_make(sb, 0, 32768, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), 0);
	assert_int_equal(fs.block_size, 1024);
	assert_true(fs.blocks == 32768);
	/* 64bit: the high word counts; without the feature it is ignored. */
	sb_make(sb, 2, (3ull << 32) | 5, 1);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), 0);
	assert_int_equal(fs.block_size, 4096);
	assert_true(fs.blocks == ((3ull << 32) | 5));
	put32(sb + 0x60, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), 0);
	assert_true(fs.blocks == 5);
}

static void test_refuses_what_is_not_ext4(void **state)
{
	uint8_t sb[ROOTFS_SB_SIZE];
	struct rootfs_ext4 fs = { 0 };

	(void)state;
	sb_make(sb, 0, 100, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb) - 1, &fs), -EINVAL); /* short read */
	sb[0x38] = 0;
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), -EINVAL); /* no magic */
	sb_make(sb, 7, 100, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), -EINVAL); /* 128 KiB blocks */
	sb_make(sb, 0xffffffffu, 100, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs),
			 -EINVAL); /* a shift that would overflow */
	sb_make(sb, 0, 0, 0);
	assert_int_equal(rootfs_ext4_parse(sb, sizeof(sb), &fs), -EINVAL); /* no blocks */
	assert_true(fs.blocks == 0); /* nothing written on failure */
}

static void test_target(void **state)
{
	struct rootfs_ext4 fs = { .block_size = 1024, .blocks = 32768 };

	(void)state;
	assert_true(rootfs_grow_target(&fs, 32ull << 20) == 0); /* the same size */
	assert_true(rootfs_grow_target(&fs, (32ull << 20) + 1023) ==
		    0); /* not a whole block more */
	assert_true(rootfs_grow_target(&fs, (32ull << 20) + 1024) == 32769);
	assert_true(rootfs_grow_target(&fs, 16ull << 20) == 0); /* never shrinks */
	assert_true(rootfs_grow_target(&fs, 4096ull << 20) == 4194304);
	fs.block_size = 65536;
	fs.blocks = 1;
	assert_true(rootfs_grow_target(&fs, UINT64_MAX) == UINT64_MAX / 65536);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_geometry),
		cmocka_unit_test(test_refuses_what_is_not_ext4),
		cmocka_unit_test(test_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

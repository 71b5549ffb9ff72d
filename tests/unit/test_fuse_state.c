/*
 * fuse_state: the saved node and handle tables of a share (the format of
 * fuse_server_save). Round trips, and every way a damaged or planted
 * table is refused with its message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/fs/fuse_server.h"
#include "devices/fs/fuse_state.h"
#include "lib/base/le.h"

static uint8_t buf[4096];

static long two_nodes_one_handle(void)
{
	struct fuse_state st = { .flags = FUSE_STATE_ACTIVE,
				 .root_dev = 7,
				 .root_ino = 9,
				 .inode_cap = 64,
				 .handle_cap = 64 };
	struct fuse_state_node free_slot = { .slot = 2, .gen = 5 };
	struct fuse_state_node n = { .slot = 3,
				     .gen = 1,
				     .nlookup = 4,
				     .mode = S_IFREG,
				     .dev = 7,
				     .ino = 11,
				     .path = "dir/file",
				     .path_len = 8 };
	struct fuse_state_handle h = {
		.slot = 1, .gen = 2, .nodeid = ((uint64_t)1 << 32) | 4, .flags = 02001
	};
	struct fuse_state_writer w;

	fuse_state_begin(&w, buf, sizeof(buf), &st);
	fuse_state_put_node(&w, &free_slot);
	fuse_state_put_node(&w, &n);
	fuse_state_put_handle(&w, &h);
	return fuse_state_finish(&w);
}

static void test_round_trip(void **state)
{
	struct fuse_state st;
	struct err e = { { 0 } };
	long len = two_nodes_one_handle();

	(void)state;
	assert_int_equal(len, 40 + 40 + 48 + 24);
	assert_int_equal(fuse_state_parse(buf, (size_t)len, &st, &e), 0);
	assert_int_equal(st.nnodes, 2);
	assert_int_equal(st.nhandles, 1);
	assert_int_equal(st.root_ino, 9);
	assert_int_equal(st.nodes[0].nlookup, 0);
	assert_int_equal(st.nodes[0].gen, 5);
	assert_int_equal(st.nodes[1].path_len, 8);
	assert_memory_equal(st.nodes[1].path, "dir/file", 8);
	assert_int_equal(st.nodes[1].ino, 11);
	assert_int_equal(st.handles[0].flags, 02001);
	fuse_state_free(&st);
}

static void test_writer_bounds(void **state)
{
	struct fuse_state st = { .inode_cap = 64 };
	struct fuse_state_node n = {
		.slot = 1, .nlookup = 1, .mode = S_IFREG, .path = "x", .path_len = 1
	};
	struct fuse_state_handle h = { .slot = 0 };
	struct fuse_state_writer w;

	(void)state;
	fuse_state_begin(&w, buf, 39, &st);
	assert_int_equal(fuse_state_finish(&w), -E2BIG);
	fuse_state_begin(&w, buf, 80, &st);
	fuse_state_put_node(&w, &n); /* 41 bytes: one too many */
	assert_int_equal(fuse_state_finish(&w), -E2BIG);
	fuse_state_begin(&w, buf, sizeof(buf), &st);
	fuse_state_put_handle(&w, &h);
	fuse_state_put_node(&w, &n); /* nodes after handles: a bug */
	assert_int_equal(fuse_state_finish(&w), -EINVAL);
}

static void test_paths(void **state)
{
	static const char *const good[] = { "a", "a/b", "a b/.c", "...", "a/..b" };
	static const char *const bad[] = { "",   "/a",     "a/",  "a//b", ".",
					   "..", "a/../b", "a/.", "./a",  "../x" };
	char longname[NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(fuse_state_path_ok(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(fuse_state_path_ok(bad[i], strlen(bad[i])));
	assert_false(fuse_state_path_ok("a\0b", 3));
	memset(longname, 'n', sizeof(longname));
	assert_true(fuse_state_path_ok(longname, NAME_MAX));
	assert_false(fuse_state_path_ok(longname, NAME_MAX + 1));
}

/* Damage one field of a good table; expect -EINVAL and `msg` in the error. */
static void refused(size_t off, uint32_t v, size_t len, const char *msg)
{
	struct fuse_state st;
	struct err e = { { 0 } };
	long good = two_nodes_one_handle();

	if (off < (size_t)good)
		le_put32(buf + off, v);
	assert_int_equal(fuse_state_parse(buf, len ? len : (size_t)good, &st, &e), -EINVAL);
	if (!strstr(e.msg, msg))
		fprintf(stderr, "off %zu: got \"%s\", want \"%s\"\n", off, e.msg, msg);
	assert_non_null(strstr(e.msg, msg));
	assert_null(st.nodes);
}

static void test_refused(void **state)
{
	(void)state;
	refused(0, 0x6b667331u, 0, "not a kiln virtio-fs state");
	refused(0, 0, 39, "not a kiln virtio-fs state");
	refused(4, 3, 0, "table sizes");
	refused(24, 65, 0, "table sizes"); /* not a power of two */
	refused(24, FUSE_SERVER_MAX_INODES * 2, 0, "table sizes");
	refused(28, 32, 0, "table sizes");
	refused(32, 0xffffffffu, 0, "do not fit"); /* absurd counts */
	refused(36, 1000, 0, "do not fit");
	refused(32, 3, 0, "do not fit"); /* more nodes than the bytes hold */
	refused(4, 0, 0, "without a session");
	refused(40, 0, 0, "out of range");             /* slot 0: the root */
	refused(40, 64, 0, "out of range");            /* beyond the table */
	refused(80, 2, 0, "out of order");             /* slot 2 twice */
	refused(80 + 20, 200, 0, "runs past the end"); /* path length */
	refused(80 + 16, 0777, 0, "no valid file type");
	refused(40 + 16, S_IFREG, 0, "no valid file type"); /* a free slot with a type */
	refused(80 + 40, 0x2f2e2e2f /* "/../" */, 0, "not a plain path");
	refused(80 + 40, 0x002f7269 /* "ir/\0" */, 0, "not a plain path");
	refused(128, 64, 0, "handle slot");
	refused(128 + 20, 4, 0, "malformed");
	refused(0, FUSE_STATE_MAGIC, 40 + 40 + 48 + 24 - 1, "handles should be");
	refused(0, FUSE_STATE_MAGIC, 40 + 40 + 40, "do not fit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_writer_bounds),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * snapshot_io: a snapshot replaces the previous one only when it is whole.
 * A full disk is simulated with RLIMIT_FSIZE (writes past it fail with
 * EFBIG, as they would with ENOSPC): the old file or checkpoint must
 * survive untouched and no temporary may be left behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"

static void expect_contents(int dfd, const char *name, const void *want, size_t len)
{
	struct err e = { { 0 } };
	uint8_t *b;
	size_t n;

	assert_int_equal(snap_read_file(dfd, name, 1 << 20, &b, &n, &e), 0);
	assert_int_equal(n, len);
	assert_memory_equal(b, want, len);
	free(b);
}

/* Writes past `bytes` fail with EFBIG (SIGXFSZ ignored) until restored. */
static void limit_file_size(rlim_t bytes, struct rlimit *old)
{
	struct rlimit r;

	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, old), 0);
	r = *old;
	r.rlim_cur = bytes;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &r), 0);
}

static void test_write_atomic_replaces(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };

	assert_int_equal(snap_write_atomic(f->dfd, "state", "first", 5, &e), 0);
	expect_contents(f->dfd, "state", "first", 5);
	assert_int_equal(snap_write_atomic(f->dfd, "state", "second!", 7, &e), 0);
	expect_contents(f->dfd, "state", "second!", 7);
	assert_false(tmpdir_exists(f->dfd, "state.tmp"));
	/* An empty file is a file. */
	assert_int_equal(snap_write_atomic(f->dfd, "empty", "", 0, &e), 0);
	expect_contents(f->dfd, "empty", "", 0);
}

/* A full disk mid-write: the old file is kept whole, the temporary removed. */
static void test_full_disk_keeps_old(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct rlimit old;
	size_t big = 256 << 10;
	uint8_t *buf = malloc(big);
	int r;

	assert_non_null(buf);
	memset(buf, 0x5a, big);
	assert_int_equal(snap_write_atomic(f->dfd, "state", "previous", 8, &e), 0);
	limit_file_size(64 << 10, &old);
	r = snap_write_atomic(f->dfd, "state", buf, big, &e);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(r, -EFBIG);
	assert_non_null(strstr(e.msg, "previous 'state' is kept"));
	expect_contents(f->dfd, "state", "previous", 8);
	assert_false(tmpdir_exists(f->dfd, "state.tmp"));
	free(buf);
}

/* A stale NAME.tmp a crash left is not mistaken for anything and is replaced. */
static void test_stale_tmp(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	int fd = openat(f->dfd, "state.tmp", O_WRONLY | O_CREAT, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "half-written junk", 17), 17);
	close(fd);
	assert_int_equal(snap_write_atomic(f->dfd, "state", "whole", 5, &e), 0);
	expect_contents(f->dfd, "state", "whole", 5);
	assert_false(tmpdir_exists(f->dfd, "state.tmp"));

	/* A stale name that is a hard link to another file is unlinked, not
	 * written through: kilnd writes where a jailed kiln-vmm can plant one. */
	fd = openat(f->dfd, "victim", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep me", 7), 7);
	close(fd);
	assert_int_equal(linkat(f->dfd, "victim", f->dfd, "memory.tmp", 0), 0);
	assert_int_equal(snap_write_atomic(f->dfd, "memory", "new", 3, &e), 0);
	expect_contents(f->dfd, "victim", "keep me", 7);
	expect_contents(f->dfd, "memory", "new", 3);
}

static void test_bad_names(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	char longname[300];

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(snap_write_atomic(f->dfd, "a/b", "x", 1, &e), -EINVAL);
	assert_int_equal(snap_write_atomic(f->dfd, "..", "x", 1, &e), -EINVAL);
	assert_int_equal(snap_write_atomic(f->dfd, ".", "x", 1, &e), -EINVAL);
	assert_int_equal(snap_write_atomic(f->dfd, "", "x", 1, &e), -EINVAL);
	assert_int_equal(snap_write_atomic(f->dfd, longname, "x", 1, &e), -EINVAL);
	assert_int_equal(snap_dir_begin(f->dfd, "../up", &e), -EINVAL);
}

static void test_read_file_limits(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	uint8_t *b;
	size_t n;

	assert_int_equal(snap_write_atomic(f->dfd, "state", "0123456789", 10, &e), 0);
	assert_int_equal(snap_read_file(f->dfd, "state", 10, &b, &n, &e), 0);
	free(b);
	assert_int_equal(snap_read_file(f->dfd, "state", 9, &b, &n, &e), -EFBIG);
	assert_null(b);
	assert_non_null(strstr(e.msg, "state"));
	assert_int_equal(snap_read_file(f->dfd, "missing", 10, &b, &n, &e), -ENOENT);
	assert_int_equal(mkdirat(f->dfd, "adir", 0700), 0);
	assert_int_equal(snap_read_file(f->dfd, "adir", 10, &b, &n, &e), -EINVAL);
	/* Symlinks are not followed out of the snapshot directory. */
	assert_int_equal(symlinkat("/etc/passwd", f->dfd, "link"), 0);
	assert_int_equal(snap_read_file(f->dfd, "link", 1 << 20, &b, &n, &e), -ELOOP);
}

/* A restore opens only the snapshot's own regular files: a symlink planted
 * in the directory (to /etc/shadow, say) is refused by name, and a fifo is
 * refused without blocking in open() (alarm() fails a hang). */
static void test_read_file_not_followed(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	uint8_t *b;
	size_t n;

	assert_int_equal(symlinkat("/etc/passwd", f->dfd, "state"), 0);
	assert_int_equal(snap_read_file(f->dfd, "state", 1 << 20, &b, &n, &e), -ELOOP);
	assert_null(b);
	assert_non_null(strstr(e.msg, "'state' is a symbolic link"));
	assert_int_equal(mkfifoat(f->dfd, "fifo", 0600), 0);
	alarm(5);
	assert_int_equal(snap_read_file(f->dfd, "fifo", 1 << 20, &b, &n, &e), -EINVAL);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
	assert_int_equal(snap_file_open(f->dfd, "state", &e), -ELOOP);
	assert_non_null(strstr(e.msg, "symbolic link"));
}

/* A whole checkpoint directory: first, replaced, a failed one, an abandoned one. */
static void test_dir_checkpoints(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct rlimit old;
	int sfd, dfd;
	uint8_t big[16384];

	/* The first checkpoint: nothing to exchange with. */
	dfd = snap_dir_begin(f->dfd, "snap", &e);
	assert_true(dfd >= 0);
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, "one", 3, &e), 0);
	assert_int_equal(snap_write_atomic(dfd, SNAP_MEM_FILE, "mem-one", 7, &e), 0);
	assert_int_equal(snap_dir_commit(f->dfd, "snap", dfd, &e), 0);
	assert_false(tmpdir_exists(f->dfd, "snap.tmp"));
	sfd = openat(f->dfd, "snap", O_RDONLY | O_DIRECTORY);
	assert_true(sfd >= 0);
	expect_contents(sfd, SNAP_STATE_FILE, "one", 3);
	close(sfd);

	/* The second replaces it whole; the first is gone. */
	dfd = snap_dir_begin(f->dfd, "snap", &e);
	assert_true(dfd >= 0);
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, "two", 3, &e), 0);
	assert_int_equal(snap_dir_commit(f->dfd, "snap", dfd, &e), 0);
	assert_false(tmpdir_exists(f->dfd, "snap.tmp"));
	sfd = openat(f->dfd, "snap", O_RDONLY | O_DIRECTORY);
	assert_true(sfd >= 0);
	expect_contents(sfd, SNAP_STATE_FILE, "two", 3);
	assert_false(tmpdir_exists(sfd, SNAP_MEM_FILE));
	close(sfd);

	/* The third fails on a full disk: abandoned, the second stays. */
	dfd = snap_dir_begin(f->dfd, "snap", &e);
	assert_true(dfd >= 0);
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, "three", 5, &e), 0);
	memset(big, 1, sizeof(big));
	limit_file_size(4096, &old);
	assert_int_equal(snap_write_atomic(dfd, SNAP_MEM_FILE, big, sizeof(big), &e), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	snap_dir_abort(f->dfd, "snap", dfd);
	assert_false(tmpdir_exists(f->dfd, "snap.tmp"));
	sfd = openat(f->dfd, "snap", O_RDONLY | O_DIRECTORY);
	assert_true(sfd >= 0);
	expect_contents(sfd, SNAP_STATE_FILE, "two", 3);
	close(sfd);

	/* A crash left a half-made snap.tmp: the next begin clears it; the checkpoint is untouched. */
	dfd = snap_dir_begin(f->dfd, "snap", &e);
	assert_true(dfd >= 0);
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, "partial", 7, &e), 0);
	close(dfd); /* "crash" */
	dfd = snap_dir_begin(f->dfd, "snap", &e);
	assert_true(dfd >= 0);
	assert_false(tmpdir_exists(dfd, SNAP_STATE_FILE));
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, "four", 4, &e), 0);
	assert_int_equal(snap_dir_commit(f->dfd, "snap", dfd, &e), 0);
	sfd = openat(f->dfd, "snap", O_RDONLY | O_DIRECTORY);
	assert_true(sfd >= 0);
	expect_contents(sfd, SNAP_STATE_FILE, "four", 4);
	close(sfd);
}

/* The state file end to end: written atomically, read back under a cap, parsed. */
static void test_state_file_on_disk(void **state)
{
	static const struct snap_compat who = { .kiln_version = "0.1.0",
						.cpu = { .vendor = "AuthenticAMD" } };
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_writer w;
	struct snap_view v;
	const uint8_t *out;
	uint8_t *b;
	size_t len, n;

	assert_int_equal(snap_writer_init(&w, &who, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_VCPU_REGS, 0, "regs", "registers", 9, &e), 0);
	assert_int_equal(snap_finish(&w, &out, &len, &e), 0);
	assert_int_equal(snap_write_atomic(f->dfd, SNAP_STATE_FILE, out, len, &e), 0);
	snap_writer_free(&w);
	assert_int_equal(snap_read_file(f->dfd, SNAP_STATE_FILE, SNAP_STATE_MAX, &b, &n, &e), 0);
	assert_int_equal(snap_parse(b, n, &who, &v, &e), 0);
	assert_non_null(snap_find(&v, SNAP_SEC_VCPU_REGS, 0));
	snap_view_free(&v);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_atomic_replaces, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_full_disk_keeps_old, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_stale_tmp, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_read_file_limits, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_read_file_not_followed, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_dir_checkpoints, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_state_file_on_disk, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * snapshot_src: a snapshot's files opened by one set of credentials and
 * read by another (kiln-vmm opens as root, reads in its jail). Checked:
 * what is opened ahead (the snapshot's own files; siblings only for a
 * layer), what is refused (a symlink, a hard link, a fifo), that a file
 * is handed over once, and that a process that dropped to another uid
 * reads through the descriptors files it could not open itself (a fork of
 * another sandbox's 0600 checkpoint) but opens nothing new beyond them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_src.h"

struct fx {
	char base[64]; /* mkdtemp: holds the snapshots */
	char snap[96], parent[96], other[96];
};

static void put(const char *dir, const char *name, const char *data, mode_t mode)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->base, sizeof(f->base), "/tmp/ksrc.XXXXXX");
	assert_non_null(mkdtemp(f->base));
	snprintf(f->snap, sizeof(f->snap), "%s/snap", f->base);
	snprintf(f->parent, sizeof(f->parent), "%s/parent", f->base);
	snprintf(f->other, sizeof(f->other), "%s/other", f->base);
	assert_int_equal(mkdir(f->snap, 0700), 0);
	assert_int_equal(mkdir(f->parent, 0700), 0);
	assert_int_equal(mkdir(f->other, 0700), 0);
	put(f->snap, "state", "the state", 0600);
	put(f->snap, "memory", "the memory", 0600);
	put(f->snap, "disk1", "disk one", 0600);
	put(f->parent, "state", "parent state", 0600);
	put(f->parent, "memory", "parent memory", 0600);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	nftw(f->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* The fd's whole contents, compared with want; the fd is closed. */
static void assert_reads(int fd, const char *want)
{
	char buf[64] = { 0 };

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(want));
	assert_string_equal(buf, want);
	close(fd);
}

static void test_files_opened_ahead_and_handed_over_once(void **state)
{
	struct fx *f = *state;
	struct snap_src s;
	struct err e = { { 0 } };

	assert_int_equal(snap_src_open(&s, f->snap, &e), 0);
	assert_int_equal(s.ndirs, 1); /* not a layer: no sibling opened */
	assert_reads(snap_src_take(&s, 0, SNAP_SRC_STATE, &e), "the state");
	assert_reads(snap_src_take(&s, 0, SNAP_SRC_DISK0 + 1, &e), "disk one");
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_DISK0, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "disk0"));
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_WORKINGSET, &e), -ENOENT);
	/* Handed over: a second take is refused. */
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_STATE, &e), -EBADF);
	assert_int_equal(snap_src_take(&s, 5, SNAP_SRC_STATE, &e), -EINVAL);
	snap_src_close(&s);
	snap_src_close(&s); /* twice is fine */
}

/*
 * As root the directories kept for the jail come from a read-only clone
 * of the snapshot's folder: ".." from the folder and from the snapshot's
 * directory stays in the folder (on the tree kiln-vmm held before, ".."
 * reached the host's /), nothing can be made there, and "snap/." and
 * "snap/" name the same snapshot. Not root: skipped.
 */
static void test_folder_is_a_clone_of_its_own(void **state)
{
	static const char *const forms[] = { "", "/.", "/" };
	struct fx *f = *state;
	struct stat folder, top, root;
	char path[128];

	if (geteuid() != 0)
		skip();
	assert_int_equal(stat(f->base, &folder), 0);
	assert_int_equal(stat("/", &root), 0);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct snap_src s;
		struct err e = { { 0 } };
		int up, d;

		snprintf(path, sizeof(path), "%s%s", f->snap, forms[i]);
		assert_int_equal(snap_src_open(&s, path, &e), 0);
		up = openat(s.dirs[0].dirfd, "../../../..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		assert_true(up >= 0);
		assert_int_equal(fstat(up, &top), 0);
		assert_true(top.st_dev == folder.st_dev && top.st_ino == folder.st_ino);
		assert_false(top.st_dev == root.st_dev && top.st_ino == root.st_ino &&
			     folder.st_ino != root.st_ino);
		close(up);
		d = openat(s.updir, "made-by-the-jail", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			   0600);
		assert_int_equal(d, -1);
		assert_int_equal(errno, EROFS);
		assert_reads(snap_src_take(&s, 0, SNAP_SRC_STATE, &e), "the state");
		snap_src_close(&s);
	}
}

static void test_symlink_hard_link_and_fifo_refused(void **state)
{
	struct fx *f = *state;
	char p[256], q[256];
	struct snap_src s;
	struct err e = { { 0 } };

	/* A planted hard link to a file outside (say, root's only): root's
	 * open must not read it for the jail. */
	put(f->base, "secret", "root only", 0600);
	snprintf(p, sizeof(p), "%s/secret", f->base);
	snprintf(q, sizeof(q), "%s/memory.z", f->snap);
	assert_int_equal(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/workingset", f->snap);
	assert_int_equal(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/disk0", f->snap);
	assert_int_equal(mkfifo(q, 0600), 0);
	assert_int_equal(snap_src_open(&s, f->snap, &e), 0);
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_MEMZ, &e), -EMLINK);
	assert_non_null(strstr(e.msg, "'memory.z' has other hard links"));
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_WORKINGSET, &e), -ELOOP);
	assert_non_null(strstr(e.msg, "symbolic link"));
	assert_int_equal(snap_src_take(&s, 0, SNAP_SRC_DISK0, &e),
			 -EINVAL); /* opened O_NONBLOCK, refused unread */
	assert_non_null(strstr(e.msg, "not a regular file"));
	snap_src_close(&s);
	/* The directory itself given as a symlink. */
	snprintf(q, sizeof(q), "%s/link", f->base);
	assert_int_equal(symlink(f->snap, q), 0);
	assert_int_equal(snap_src_open(&s, q, &e), -ELOOP);
	assert_non_null(strstr(e.msg, "symbolic link"));
}

static void test_layer_opens_its_siblings(void **state)
{
	struct fx *f = *state;
	struct snap_src s;
	struct err e = { { 0 } };
	int i;

	put(f->snap, "memory.layer", "a layer", 0600);
	assert_int_equal(snap_src_open(&s, f->snap, &e), 0);
	assert_true(s.ndirs >= 3); /* itself, parent, other (and snap again, as a sibling) */
	i = snap_src_sibling(&s, "parent", &e);
	assert_true(i > 0);
	assert_reads(snap_src_take(&s, i, SNAP_SRC_STATE, &e), "parent state");
	assert_reads(snap_src_take(&s, i, SNAP_SRC_MEM, &e), "parent memory");
	/* A sibling holds only what a parent is read for. */
	assert_int_equal(snap_src_take(&s, i, SNAP_SRC_DISK0, &e), -ENOENT);
	assert_int_equal(snap_src_sibling(&s, "missing", &e), -ENOENT);
	assert_int_equal(snap_src_sibling(&s, "..", &e), -ENOENT);
	snap_src_close(&s);
}

/*
 * Opened as root, read as nobody: the files are 0600 root and the
 * directories 0700 root, so nobody reads them only through what was
 * opened ahead (a fork of another sandbox's checkpoint); a sibling not
 * opened ahead is out of its reach.
 */
static void test_read_after_dropping_to_another_uid(void **state)
{
	struct fx *f = *state;
	struct snap_src s;
	struct err e = { { 0 } };
	pid_t pid;
	int status;

	if (geteuid() != 0)
		skip();
	put(f->snap, "memory.layer", "a layer", 0600);
	assert_int_equal(snap_src_open(&s, f->snap, &e), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[16] = { 0 };
		int fd, i;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (open(f->snap, O_RDONLY | O_DIRECTORY) >= 0)
			_exit(11); /* the test means nothing if nobody can open it anyway */
		fd = snap_src_take(&s, 0, SNAP_SRC_STATE, &e);
		if (fd < 0 || pread(fd, buf, sizeof(buf) - 1, 0) != 9 || strcmp(buf, "the state"))
			_exit(12);
		i = snap_src_sibling(&s, "parent", &e);
		fd = i > 0 ? snap_src_take(&s, i, SNAP_SRC_MEM, &e) : -1;
		if (fd < 0 || pread(fd, buf, sizeof(buf) - 1, 0) != 13)
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	snap_src_close(&s);
}

/* snap_copy_over: a file made the copy of another in place (an open
 * overlay a restore fills), holes and all, longer and shorter. */
static void test_copy_over_in_place(void **state)
{
	struct fx *f = *state;
	char p[256], buf[8192];
	int in, out;
	struct stat st;

	snprintf(p, sizeof(p), "%s/in", f->base);
	in = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	snprintf(p, sizeof(p), "%s/out", f->base);
	out = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(in >= 0 && out >= 0);
	/* in: data, a 1 MiB hole, data; out: longer, data everywhere */
	assert_int_equal(pwrite(in, "head", 4, 0), 4);
	assert_int_equal(pwrite(in, "tail", 4, 1 << 20), 4);
	memset(buf, 'x', sizeof(buf));
	for (off_t o = 0; o < (3 << 20); o += (off_t)sizeof(buf))
		assert_int_equal(pwrite(out, buf, sizeof(buf), o), (ssize_t)sizeof(buf));
	assert_int_equal(snap_copy_over(in, out), 0);
	assert_int_equal(fstat(out, &st), 0);
	assert_int_equal(st.st_size, (1 << 20) + 4);
	assert_int_equal(pread(out, buf, 8, 0), 8);
	assert_memory_equal(buf, "head\0\0\0\0", 8);
	assert_int_equal(pread(out, buf, 4, 4096 * 10), 4);
	assert_memory_equal(buf, "\0\0\0\0", 4); /* the hole reads as zeros, not the old x's */
	assert_int_equal(pread(out, buf, 8, 1 << 20), 4);
	assert_memory_equal(buf, "tail", 4);
	close(in);
	close(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files_opened_ahead_and_handed_over_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_folder_is_a_clone_of_its_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_hard_link_and_fifo_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_layer_opens_its_siblings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_after_dropping_to_another_uid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_copy_over_in_place, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

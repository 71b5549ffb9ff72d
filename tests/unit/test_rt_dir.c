/*
 * api/runtime/rt_dir.c: the state directory on a real filesystem under
 * /tmp: the root's checks, a container's directory made once, its lock
 * held by one command at a time, state.json's atomic write, liveness
 * across pid reuse and zombies, listing, and a delete that follows no
 * link and never enters a bind still mounted in it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/runtime/rt_dir.h"
#include "lib/base/proc_stat.h"

static struct err e;
static char top[64], root[128];

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/test_rt_dir.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(root, sizeof(root), "%s/run/kiln-runtime", top);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_root(void **state)
{
	int fd;
	struct stat st;
	char open_dir[160];

	(void)state;
	assert_int_equal(rt_dir_open_root(root, false, &fd, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "--root"));
	assert_int_equal(rt_dir_open_root(root, true, &fd, &e), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	close(fd);
	/* a root others may write is refused: anyone could plant a record */
	snprintf(open_dir, sizeof(open_dir), "%s/open", top);
	assert_int_equal(mkdir(open_dir, 0777), 0);
	assert_int_equal(chmod(open_dir, 0777), 0);
	assert_int_equal(rt_dir_open_root(open_dir, false, &fd, &e), -EPERM);
	assert_non_null(strstr(e.msg, "writable by others"));
}

static void fill(struct rt_state_rec *r, const char *id, int pid, uint64_t start)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->bundle, sizeof(r->bundle), "/b");
	snprintf(r->rootfs, sizeof(r->rootfs), "/b/rootfs");
	snprintf(r->created, sizeof(r->created), "2026-11-29T10:15:09Z");
	r->status = RT_STATUS_RUNNING;
	r->shim = (struct rt_proc_id){ pid, start };
}

static void test_container(void **state)
{
	int rfd, d, d2, l1, l2;
	struct rt_state_rec a, b;

	(void)state;
	assert_int_equal(rt_dir_open_root(root, true, &rfd, &e), 0);
	assert_int_equal(rt_dir_open(rfd, "c1", &d, &e), -ENOENT);
	assert_string_equal(e.msg, "container \"c1\" does not exist");
	assert_int_equal(rt_dir_make(rfd, "c1", &d, &e), 0);
	assert_int_equal(rt_dir_make(rfd, "c1", &d2, &e), -EEXIST);
	assert_string_equal(e.msg, "container \"c1\" already exists");
	/* one command at a time: a second lock waits, then says busy */
	assert_int_equal(rt_dir_lock(d, "c1", 0, &l1, &e), 0);
	assert_int_equal(rt_dir_lock(d, "c1", 100, &l2, &e), -EBUSY);
	assert_non_null(strstr(e.msg, "container \"c1\" is busy"));
	close(l1);
	assert_int_equal(rt_dir_lock(d, "c1", 0, &l2, &e), 0);
	close(l2);
	/* no record yet: a create that died midway */
	assert_int_equal(rt_dir_read_state(d, "c1", &a, &e), -ENOENT);
	fill(&a, "c1", 77, 5);
	assert_int_equal(rt_dir_write_state(d, &a, &e), 0);
	assert_int_equal(faccessat(d, "state.json.tmp", F_OK, 0), -1);
	assert_int_equal(rt_dir_read_state(d, "c1", &b, &e), 0);
	assert_int_equal(b.shim.pid, 77);
	/* a link planted as state.json is not followed */
	assert_int_equal(unlinkat(d, RT_STATE_FILE, 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", d, RT_STATE_FILE), 0);
	assert_int_equal(rt_dir_read_state(d, "c1", &b, &e), -ELOOP);
	close(d);
	close(rfd);
}

/* Whole reads: bounded, regular files only, links followed only when
 * asked (config.json may be a link in a bundle; state.json never). */
static void test_file_read(void **state)
{
	int d = open(top, O_RDONLY | O_DIRECTORY);
	char *buf;
	size_t n;

	(void)state;
	assert_true(d >= 0);
	close(openat(d, "f", O_CREAT | O_WRONLY, 0600));
	{
		int fd = openat(d, "f", O_WRONLY);

		assert_int_equal(write(fd, "12345", 5), 5);
		close(fd);
	}
	assert_int_equal(rt_file_read(d, "f", false, 5, "f", &buf, &n, &e), 0);
	assert_int_equal(n, 5);
	assert_string_equal(buf, "12345");
	free(buf);
	assert_int_equal(rt_file_read(d, "f", false, 4, "the file", &buf, &n, &e), -EFBIG);
	assert_string_equal(e.msg, "the file is larger than 4 bytes");
	assert_null(buf);
	assert_int_equal(symlinkat("f", d, "l"), 0);
	assert_int_equal(rt_file_read(d, "l", false, 5, "l", &buf, &n, &e), -ELOOP);
	assert_int_equal(rt_file_read(d, "l", true, 5, "l", &buf, &n, &e), 0);
	free(buf);
	assert_int_equal(mkdirat(d, "dir", 0700), 0);
	assert_int_equal(rt_file_read(d, "dir", true, 5, "dir", &buf, &n, &e), -EINVAL);
	assert_string_equal(e.msg, "dir is not a regular file");
	close(d);
}

static void test_pid_file(void **state)
{
	char path[160], link[160];
	struct stat st;
	int d = open(top, O_RDONLY | O_DIRECTORY);
	char *buf;
	size_t n;

	(void)state;
	snprintf(path, sizeof(path), "%s/init.pid", top);
	assert_int_equal(rt_pid_file_write(path, 4242, &e), 0);
	assert_int_equal(rt_file_read(d, "init.pid", false, 64, "pid", &buf, &n, &e), 0);
	assert_string_equal(buf, "4242"); /* runc's: no newline */
	free(buf);
	assert_int_equal(faccessat(d, "init.pid.tmp", F_OK, 0), -1);
	/* over an old one, atomically */
	assert_int_equal(rt_pid_file_write(path, 7, &e), 0);
	assert_int_equal(rt_file_read(d, "init.pid", false, 64, "pid", &buf, &n, &e), 0);
	assert_string_equal(buf, "7");
	free(buf);
	/* a link planted at the temporary name is not followed: it goes */
	snprintf(link, sizeof(link), "%s/init.pid.tmp", top);
	assert_int_equal(symlink("/etc/kiln-should-not-exist", link), 0);
	assert_int_equal(rt_pid_file_write(path, 8, &e), 0);
	assert_int_equal(stat("/etc/kiln-should-not-exist", &st), -1);
	assert_int_equal(lstat(link, &st), -1);
	assert_int_equal(rt_file_read(d, "init.pid", false, 64, "pid", &buf, &n, &e), 0);
	assert_string_equal(buf, "8");
	free(buf);
	snprintf(path, sizeof(path), "%s/no/such/dir/init.pid", top);
	assert_int_equal(rt_pid_file_write(path, 8, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "--pid-file"));
	/* a directory's path: told to give a file's, not "Invalid argument" */
	snprintf(path, sizeof(path), "%s/", top);
	assert_int_equal(rt_pid_file_write(path, 8, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "give the path of a file"));
	close(d);
}

static void test_ids(void **state)
{
	uint32_t a, b, c;
	int rfd;
	char path[200];

	(void)state;
	assert_int_equal(rt_dir_open_root(root, true, &rfd, &e), 0);
	assert_int_equal(rt_ids_take(rfd, "c1", 2, &a, &e), 0);
	assert_int_equal(rt_ids_take(rfd, "c2", 2, &b, &e), 0);
	assert_true(a != b);
	assert_true(a >= RT_IDS_BASE && a < RT_IDS_BASE + 2 * RT_IDS_SIZE);
	assert_int_equal((a - RT_IDS_BASE) % RT_IDS_SIZE, 0);
	/* all taken: one line saying what to do */
	assert_int_equal(rt_ids_take(rfd, "c3", 2, &c, &e), -EAGAIN);
	assert_non_null(strstr(e.msg, "no free host id range"));
	/* only its holder gives a range back */
	assert_int_equal(rt_ids_free(rfd, a, "c2", &e), 0);
	assert_int_equal(rt_ids_take(rfd, "c3", 2, &c, &e), -EAGAIN);
	assert_int_equal(rt_ids_free(rfd, a, "c1", &e), 0);
	assert_int_equal(rt_ids_take(rfd, "c3", 2, &c, &e), 0);
	assert_int_equal(c, a);
	assert_int_equal(rt_ids_free(rfd, a, "c1", &e), 0); /* c3's now: kept */
	snprintf(path, sizeof(path), "%s/.ids/%u", root, a);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(rt_ids_free(rfd, 12345, "c1", &e), 0); /* none: nothing to do */
	assert_int_equal(RT_IDS_BASE + (uint64_t)RT_IDS_SLOTS * RT_IDS_SIZE <= 0x7fffffffu, 1);
	close(rfd);
}

static void test_alive(void **state)
{
	uint64_t me;
	pid_t z;
	struct rt_state_rec r;
	int pid;

	(void)state;
	assert_int_equal(proc_start_time(getpid(), &me), 0);
	assert_true(rt_proc_alive(getpid(), me));
	assert_false(rt_proc_alive(getpid(), me + 1)); /* pid reused by another process */
	assert_false(rt_proc_alive(0, 0));
	assert_false(rt_proc_alive(PROC_PID_MAX + 1, 0));
	z = fork();
	if (z == 0)
		_exit(0);
	uint64_t zs;
	for (int i = 0; i < 200; i++) {
		char path[64], buf[512];
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/stat", z);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0 && (buf[n] = 0, strstr(buf, ") Z ")))
			break;
		usleep(5000);
	}
	assert_int_equal(proc_start_time(z, &zs), 0);
	assert_false(rt_proc_alive(z, zs)); /* a zombie has ended */
	waitpid(z, NULL, 0);
	fill(&r, "c1", getpid(), me);
	assert_int_equal(rt_dir_status(&r, &pid), RT_STATUS_RUNNING);
	assert_int_equal(pid, getpid());
	r.status = RT_STATUS_CREATED;
	assert_int_equal(rt_dir_status(&r, &pid), RT_STATUS_CREATED);
	fill(&r, "c1", z, zs);
	assert_int_equal(rt_dir_status(&r, &pid), RT_STATUS_STOPPED);
	assert_int_equal(pid, 0);
	fill(&r, "c1", 0, 0);
	assert_int_equal(rt_dir_status(&r, &pid), RT_STATUS_STOPPED);
}

static void test_list(void **state)
{
	int rfd, d;
	char **ids;
	size_t n;

	(void)state;
	assert_int_equal(rt_dir_open_root(root, true, &rfd, &e), 0);
	assert_int_equal(rt_dir_make(rfd, "b2", &d, &e), 0);
	close(d);
	assert_int_equal(rt_dir_make(rfd, "a1", &d, &e), 0);
	close(d);
	assert_int_equal(mkdirat(rfd, "not valid", 0700), 0);
	mkdirat(rfd, RT_IDS_DIR, 0700);
	close(openat(rfd, "afile", O_CREAT | O_WRONLY, 0600));
	assert_int_equal(rt_dir_list(rfd, &ids, &n, &e), 0);
	assert_true(n >= 2);
	assert_string_equal(ids[0], "a1");
	assert_string_equal(ids[1], "b2");
	for (size_t i = 0; i < n; i++)
		assert_true(strcmp(ids[i], "not valid") && strcmp(ids[i], "afile") &&
			    strcmp(ids[i], RT_IDS_DIR));
	rt_dir_list_free(ids, n);
	close(rfd);
}

static void test_remove(void **state)
{
	int rfd, d;
	char outside[160], path[256];

	(void)state;
	assert_int_equal(rt_dir_open_root(root, true, &rfd, &e), 0);
	assert_int_equal(rt_dir_make(rfd, "gone", &d, &e), 0);
	/* what the jailed VMM may have left: nested dirs, a link outside */
	snprintf(outside, sizeof(outside), "%s/outside", top);
	assert_int_equal(mkdir(outside, 0700), 0);
	snprintf(path, sizeof(path), "%s/keep", outside);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(mkdirat(d, "vm", 0700), 0);
	assert_int_equal(mkdirat(d, "vm/checkpoints", 0700), 0);
	close(openat(d, "vm/checkpoints/mem", O_CREAT | O_WRONLY, 0600));
	assert_int_equal(symlinkat(outside, d, "vm/escape"), 0);
	close(d);
	assert_int_equal(rt_dir_remove(rfd, "gone", &e), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(rt_dir_remove(rfd, "gone", &e), -ENOENT);
	close(rfd);
}

/* A bind still mounted in the state directory is the user's volume:
 * delete refuses, and nothing in it is removed. In a child with a mount
 * namespace of its own, so the host's mounts are untouched. */
static void test_remove_mounted(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	if (pid == 0) {
		char vol[160], mnt[256], file[200];
		int rfd, d, r;

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77); /* not root: skipped */
		snprintf(vol, sizeof(vol), "%s/volume", top);
		snprintf(file, sizeof(file), "%s/data", vol);
		if (mkdir(vol, 0700) < 0 || close(open(file, O_CREAT | O_WRONLY, 0600)) < 0 ||
		    rt_dir_open_root(root, true, &rfd, &e) < 0 || rt_dir_make(rfd, "m", &d, &e) < 0)
			_exit(2);
		mkdirat(d, "binds", 0700);
		mkdirat(d, "binds/rw", 0700);
		mkdirat(d, "binds/rw/0", 0700);
		snprintf(mnt, sizeof(mnt), "%s/m/binds/rw/0", root);
		if (mount(vol, mnt, NULL, MS_BIND, NULL) < 0)
			_exit(3);
		r = rt_dir_remove(rfd, "m", &e);
		if (r != -EBUSY || !strstr(e.msg, "0 is still mounted"))
			_exit(4);
		if (access(file, F_OK) < 0)
			_exit(5);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* kiln-vmm's jail directory and the TAP: short and the container's own,
 * whatever the runtime root's length (Docker's is 98 bytes). */
static void test_jail_and_tap(void **state)
{
	char a[RT_JAIL_PATH_MAX], b[RT_JAIL_PATH_MAX], tap[RT_TAP_NAME_MAX];

	(void)state;
	rt_jail_path("/var/run/docker/runtime-runc/moby/"
		     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		     a);
	rt_jail_path("/run/kiln-runtime/c1", b);
	assert_int_equal(strlen(a), strlen(RT_JAIL_ROOT "/") + 16);
	assert_string_not_equal(a, b);
	rt_tap_name(a, tap);
	assert_int_equal(strlen(tap), 14); /* IFNAMSIZ holds 15 */
	assert_memory_equal(tap, "kt", 2);
	assert_memory_equal(tap + 2, a + strlen(RT_JAIL_ROOT "/"), 12);
	rt_tap_name(b, tap);
	assert_memory_equal(tap + 2, b + strlen(RT_JAIL_ROOT "/"), 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_container),
		cmocka_unit_test(test_file_read),
		cmocka_unit_test(test_alive),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_remove_mounted),
		cmocka_unit_test(test_pid_file),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_jail_and_tap),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

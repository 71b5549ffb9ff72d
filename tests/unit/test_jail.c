/*
 * vmm/jail/jail.c, for real: a child made pid 1 of a new pid namespace
 * enters a jail on a scratch directory and then checks, from inside, each
 * promise of jail.h (uid and gid, no capabilities in any set,
 * no_new_privs, a root holding only that directory at its own path and
 * its own /proc, read-only elsewhere, no way back to mount). Needs root and namespaces:
 * skipped (not passed) without them. Also the refusals: a bad spec, a
 * second thread, not pid 1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/jail/jail.h"

#define JAIL_UID 4242
#define JAIL_GID 4343

static char scratch[256];

/* One check per bit of the jailed child's exit status, so a failure says which. */
enum {
	BAD_ENTER = 1 << 0,
	BAD_IDS = 1 << 1,
	BAD_CAPS = 1 << 2,
	BAD_NNP = 1 << 3,
	BAD_ROOT = 1 << 4, /* the host's files are visible, or a /proc not the jail's own */
	BAD_DIR = 1 << 5,  /* the jail directory is not at its own path */
	BAD_RO = 1 << 6,   /* the root outside it is writable */
	BAD_MOUNT = 1 << 7 /* mount still works */
};

/* The jail's /proc: its own pid namespace's processes (only pid 1 here),
 * self, thread-self, and nothing else (no sys, no kcore, no mounts of
 * the host), read-only. */
static int proc_is_own(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	struct statvfs sv;
	int bad = !d || access("/proc/self/fd", F_OK) != 0 || access("/proc/sys", F_OK) == 0 ||
		access("/proc/kcore", F_OK) == 0 || access("/proc/sysrq-trigger", F_OK) == 0 ||
		statvfs("/proc", &sv) != 0 || !(sv.f_flag & ST_RDONLY);

	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "1") && strcmp(de->d_name, "self") &&
		    strcmp(de->d_name, "thread-self"))
			bad = 1;
	}
	if (d)
		closedir(d);
	return bad;
}

static int jailed_checks(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct jail_spec j = { .dir = scratch, .uid = JAIL_UID, .gid = JAIL_GID };
	struct err e = { { 0 } };
	char path[512], host[64] = "";
	int bad = 0, fd;

	if (jail_enter(&j, &e) < 0) {
		fprintf(stderr, "jail_enter: %s\n", e.msg);
		return BAD_ENTER;
	}
	if (getuid() != JAIL_UID || geteuid() != JAIL_UID || getgid() != JAIL_GID ||
	    getgroups(0, NULL) != 0)
		bad |= BAD_IDS;
	if (syscall(SYS_capget, &h, d) < 0 || d[0].effective || d[0].permitted || d[1].effective ||
	    d[1].permitted || prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0 ||
	    prctl(PR_CAPBSET_READ, CAP_NET_RAW, 0, 0, 0) != 0)
		bad |= BAD_CAPS;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		bad |= BAD_NNP;
	if (access("/etc/passwd", F_OK) == 0 || access("/usr", F_OK) == 0 ||
	    access("/dev", F_OK) == 0)
		bad |= BAD_ROOT;
	if (proc_is_own())
		bad |= BAD_ROOT;
	snprintf(path, sizeof(path), "%s/marker", scratch);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		bad |= BAD_DIR;
	else
		close(fd);
	if (mkdir("/escape", 0700) == 0 || errno != EROFS)
		bad |= BAD_RO;
	if (mount("none", scratch, "tmpfs", 0, NULL) == 0 || errno != EPERM ||
	    gethostname(host, sizeof(host)) < 0 || strcmp(host, "kiln-vmm") != 0)
		bad |= BAD_MOUNT;
	return bad;
}

/* Run fn in a grandchild that is pid 1 of a new pid namespace; its exit
 * status, or -1 when the namespace cannot be made here. */
static int in_pid_namespace(int (*fn)(void))
{
	pid_t pid = fork(), inner;
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWPID) < 0)
			_exit(255);
		inner = fork();
		if (inner == 0)
			_exit(fn()); /* _exit: no sanitizer exit work in the jail */
		if (inner < 0 || waitpid(inner, &st, 0) < 0 || !WIFEXITED(st))
			_exit(254);
		_exit(WEXITSTATUS(st));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st) == 255 ? -1 : WEXITSTATUS(st);
}

static void test_jail_enter_keeps_its_promises(void **state)
{
	char marker[300];
	int fd, r;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(marker, sizeof(marker), "%s/marker", scratch);
	fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	r = in_pid_namespace(jailed_checks);
	if (r < 0)
		skip(); /* no pid namespaces here */
	assert_int_equal(r, 0);
}

static int enter_then_report(void)
{
	struct jail_spec j = { .dir = scratch, .uid = JAIL_UID, .gid = JAIL_GID };
	struct err e = { { 0 } };

	return -jail_enter(&j, &e);
}

static void test_not_pid1_refused(void **state)
{
	struct jail_spec j = { .dir = scratch, .uid = JAIL_UID, .gid = JAIL_GID };
	struct err e = { { 0 } };

	(void)state;
	/* This test process is not pid 1, so nothing is changed. */
	assert_int_equal(jail_enter(&j, &e), -EPERM);
	assert_non_null(strstr(e.msg, "pid 1"));
}

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static int with_a_thread(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, sleeper, NULL))
		return 99;
	return enter_then_report();
}

static void test_second_thread_refused(void **state)
{
	int r;

	(void)state;
	if (geteuid() != 0)
		skip();
	r = in_pid_namespace(with_a_thread);
	if (r < 0)
		skip();
	assert_int_equal(r, EBUSY);
}

static void test_spec_checks(void **state)
{
	static const char *bad_dirs[] = { "",      "relative", "/",     "/a/../b", "/a/./b",
					  "/a//b", "/a/",      "/proc", "/proc/1", NULL };
	struct jail_spec j = { .uid = 1000, .gid = 1000 };
	struct err e = { { 0 } };

	(void)state;
	for (int i = 0; bad_dirs[i]; i++) {
		j.dir = bad_dirs[i];
		assert_int_equal(jail_spec_check(&j, &e), -EINVAL);
	}
	j.dir = NULL;
	assert_int_equal(jail_spec_check(&j, &e), -EINVAL);
	j.dir = "/run/kiln/vm1";
	assert_int_equal(jail_spec_check(&j, &e), 0);
	j.uid = 0;
	assert_int_equal(jail_spec_check(&j, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unprivileged"));
	j.uid = 1000;
	j.gid = 0;
	assert_int_equal(jail_spec_check(&j, &e), -EINVAL);
	j.gid = (gid_t)-1;
	assert_int_equal(jail_spec_check(&j, &e), -EINVAL);
}

static void test_thread_count(void **state)
{
	(void)state;
	assert_int_equal(jail_thread_count(), 1);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/kiln-jail-test.XXXXXX", *d;

	(void)state;
	d = mkdtemp(tmpl);
	if (!d || !realpath(d, scratch))
		return -1;
	chmod(scratch, 0755);
	return 0;
}

static int teardown(void **state)
{
	char marker[300];

	(void)state;
	snprintf(marker, sizeof(marker), "%s/marker", scratch);
	unlink(marker);
	rmdir(scratch);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_checks),
		cmocka_unit_test(test_thread_count),
		cmocka_unit_test(test_not_pid1_refused),
		cmocka_unit_test(test_second_thread_refused),
		cmocka_unit_test(test_jail_enter_keeps_its_promises),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

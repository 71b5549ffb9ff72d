/*
 * lib/cgroup/cgroup_leaf.c: the event counters' parsing and reading
 * (garbled or missing are zeros, never stale); a leaf whose limits cannot
 * be written leaves nothing and says which file; on the real cgroup2 (a
 * subtree of this process's cgroup, removed after; skipped without root
 * or cgroup2): an existing leaf is refused with -EEXIST, a child enters
 * through the cgroup.procs descriptor and another by cgroup_leaf_enter,
 * removal kills both and takes the empty cgroups below; where the
 * controllers are offered, the limits read back as written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cgroup/cgroup_file.h"
#include "lib/cgroup/cgroup_leaf.h"
#include "lib/cgroup/cgroup_tree.h"
#include "tests/unit/cgroup_scratch.h"

static void put(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_events_value(void **state)
{
	const char *mem = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
	uint64_t v;

	(void)state;
	assert_int_equal(cgroup_events_value(mem, "oom_kill", &v), 0);
	assert_int_equal(v, 1);
	/* "oom" is not "oom_kill", nor "max" a suffix of another key. */
	assert_int_equal(cgroup_events_value(mem, "oom", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(cgroup_events_value(mem, "max", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(cgroup_events_value(mem, "kill", &v), -1);
	assert_int_equal(cgroup_events_value("max x\n", "max", &v), -1);
	assert_int_equal(cgroup_events_value("max 3junk\n", "max", &v), -1);
	assert_int_equal(cgroup_events_value("max 7", "max", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(cgroup_events_value("", "max", &v), -1);
}

static void test_events_and_remove(void **state)
{
	char tmpl[] = "/tmp/cgleaf.XXXXXX", p[PATH_MAX];
	struct cgroup_events ev;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	put(tmpl, "memory.events", "low 0\nhigh 0\nmax 40\noom 2\noom_kill 2\noom_group_kill 1\n");
	put(tmpl, "pids.events", "max 5\n");
	cgroup_leaf_events(tmpl, &ev);
	assert_int_equal(ev.oom_kill, 2);
	assert_int_equal(ev.pids_max, 5);
	/* Unreadable or garbled counters are zeros, never stale values. */
	put(tmpl, "memory.events", "oom_kill 3junk\n");
	unlink(strcat(strcpy(p, tmpl), "/pids.events"));
	cgroup_leaf_events(tmpl, &ev);
	assert_int_equal(ev.oom_kill, 0);
	assert_int_equal(ev.pids_max, 0);
	unlink(strcat(strcpy(p, tmpl), "/memory.events"));
	/* Removing: an empty directory goes, a missing one is fine. */
	assert_int_equal(cgroup_leaf_remove(tmpl), 0);
	assert_int_equal(access(tmpl, F_OK), -1);
	assert_int_equal(cgroup_leaf_remove(tmpl), 0);
}

static void test_create_cleans_up_on_failure(void **state)
{
	char tmpl[] = "/tmp/cgleaf.XXXXXX", dir[PATH_MAX];
	struct cgroup_limits l = { "134217728", "64", "max 100000", true };
	struct err e = { { 0 } };
	int fd = 7;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	/* A directory without the controllers' files: memory.max cannot be set. */
	snprintf(dir, sizeof(dir), "%s/leaf", tmpl);
	assert_int_equal(cgroup_leaf_create(dir, &l, &fd, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "memory.max"));
	assert_non_null(strstr(e.msg, dir));
	assert_int_equal(fd, -1);
	assert_int_equal(access(dir, F_OK), -1);
	/* Its parent missing: nothing made either. */
	snprintf(dir, sizeof(dir), "%s/none/leaf", tmpl);
	assert_int_equal(cgroup_leaf_create(dir, &l, &fd, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "cannot create"));
	assert_int_equal(rmdir(tmpl), 0);
}

/* A child that enters dir (by fd when fd >= 0, else by cgroup_leaf_enter) and waits to be killed. */
static pid_t child_in(const char *dir, int fd)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct err e;
		int ok = fd >= 0 ? write(fd, "0", 1) == 1 : cgroup_leaf_enter(dir, &e) == 0;

		(void)!write(ready[1], ok ? "y" : "n", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');
	return pid;
}

/* Whether pid's cgroup (its "0::" line) ends in the path below the mount that dir ends in. */
static void assert_in(pid_t pid, const char *dir)
{
	char p[64], line[1024];
	const char *tail = strstr(dir, "/kiln-cgtest-");
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && strncmp(line, "0::", 3))
		;
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (!strstr(line, tail))
		fail_msg("pid %d is in '%s', not %s", (int)pid, line, dir);
}

static void test_real_leaf(void **state)
{
	char dir[1100], sub[1200];
	struct cgroup_limits none = { 0 };
	struct err e = { { 0 } };
	int fd, st;
	pid_t a, b;

	(void)state;
	cgroup_scratch_path(dir, sizeof(dir), "leaf");
	/* No limits: a leaf any cgroup2 takes. */
	assert_int_equal(cgroup_leaf_create(dir, &none, &fd, &e), 0);
	assert_true(fd >= 0);
	assert_int_equal(cgroup_leaf_create(dir, &none, NULL, &e), -EEXIST);
	assert_int_equal(access(dir, F_OK), 0);
	a = child_in(dir, fd);
	close(fd);
	b = child_in(dir, -1);
	assert_in(a, dir);
	assert_in(b, dir);
	/* An empty cgroup below (a kiln-passt-<pid> of a VMM's) does not keep it. */
	snprintf(sub, sizeof(sub), "%s/kiln-passt-1", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(cgroup_leaf_remove(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(waitpid(a, &st, 0), a);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(waitpid(b, &st, 0), b);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void test_real_limits(void **state)
{
	char base[1100], dir[1200], v[128];
	struct cgroup_limits l = { "134217728", "64", "50000 100000", true };
	struct err e = { { 0 } };

	(void)state;
	cgroup_scratch_path(base, sizeof(base), "limits");
	if (cgroup_tree_enable(base, &e) < 0) {
		rmdir(base);
		print_message("cgroup: limits skipped: %s\n", e.msg);
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/vmm", base);
	assert_int_equal(cgroup_leaf_create(dir, &l, NULL, &e), 0);
	assert_int_equal(cgroup_file_read(dir, "memory.max", v, sizeof(v)), 0);
	assert_string_equal(v, "134217728");
	assert_int_equal(cgroup_file_read(dir, "pids.max", v, sizeof(v)), 0);
	assert_string_equal(v, "64");
	assert_int_equal(cgroup_file_read(dir, "cpu.max", v, sizeof(v)), 0);
	assert_string_equal(v, "50000 100000");
	assert_int_equal(cgroup_file_read(dir, "memory.oom.group", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	if (cgroup_file_read(dir, "memory.swap.max", v, sizeof(v)) == 0)
		assert_string_equal(v, "0");
	/* A value the kernel refuses: said which, and the leaf is gone. */
	l.pids_max = "lots";
	assert_int_equal(cgroup_leaf_remove(dir), 0);
	assert_int_equal(cgroup_leaf_create(dir, &l, NULL, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "pids.max"));
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(cgroup_leaf_remove(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_value),
		cmocka_unit_test(test_events_and_remove),
		cmocka_unit_test(test_create_cleans_up_on_failure),
		cmocka_unit_test(test_real_leaf),
		cmocka_unit_test(test_real_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

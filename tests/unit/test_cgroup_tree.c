/*
 * lib/cgroup/cgroup_tree.c: which paths are clean; a path on no cgroup2
 * is refused in one line and nothing is made; on the real cgroup2 (a
 * subtree of this process's cgroup, removed after; skipped without root
 * or cgroup2), every missing level is made and hands memory, pids and
 * cpu to its children, or, where the hierarchy cannot (a controller not
 * offered, a level holding processes), the refusal says why and nothing
 * is made.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cgroup/cgroup_file.h"
#include "lib/cgroup/cgroup_tree.h"
#include "tests/unit/cgroup_scratch.h"

static void test_path_clean(void **state)
{
	static const char *const good[] = { "/", "/sys/fs/cgroup", "/a/.b/c..", "/a/b.slice" };
	static const char *const bad[] = { "",       "a/b",     "//a", "/a//b", "/a/",
					   "/a/./b", "/a/../b", "/..", "/a/.",  "/a/.." };

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!cgroup_tree_path_clean(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cgroup_tree_path_clean(bad[i]))
			fail_msg("'%s' taken", bad[i]);
}

static void test_refusals(void **state)
{
	char tmpl[] = "/tmp/cgtree.XXXXXX", dir[PATH_MAX];
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(cgroup_tree_enable("/sys/fs/cgroup/../kiln", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "without empty, . or .."));
	/* An ordinary directory (tmpfs, ext4) is no cgroup: said, and nothing made. */
	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s/kiln/a", tmpl);
	assert_int_equal(cgroup_tree_enable(dir, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "is not on a cgroup v2 file system"));
	assert_non_null(strstr(e.msg, "mount -t cgroup2"));
	assert_null(strchr(e.msg, '\n'));
	snprintf(dir, sizeof(dir), "%s/kiln", tmpl);
	assert_int_equal(access(dir, F_OK), -1);
	rmdir(tmpl);
}

/* Whether every required controller is in dir's cgroup.subtree_control. */
static void assert_hands_on(const char *dir)
{
	static const char *const want[] = { "memory", "pids", "cpu" };
	char on[512];

	assert_int_equal(cgroup_file_read(dir, "cgroup.subtree_control", on, sizeof(on)), 0);
	for (size_t i = 0; i < 3; i++)
		if (!strstr(on, want[i]))
			fail_msg("%s hands on '%s', not %s", dir, on, want[i]);
}

static void test_real_tree(void **state)
{
	char base[1100], mid[1200], leaf[1300];
	struct err e = { { 0 } };
	int r;

	(void)state;
	cgroup_scratch_path(base, sizeof(base), "tree");
	snprintf(mid, sizeof(mid), "%s/a", base);
	snprintf(leaf, sizeof(leaf), "%s/b", mid);
	r = cgroup_tree_enable(leaf, &e);
	if (r < 0) {
		/* This hierarchy cannot give them (a hybrid host's controller-less
		 * cgroup2, a cgroup holding this very process): said why, and
		 * nothing was made below. */
		if (!strstr(e.msg, "is not available in") && !strstr(e.msg, "processes live in it"))
			fail_msg("unexpected refusal: %s", e.msg);
		assert_null(strchr(e.msg, '\n'));
		rmdir(leaf);
		rmdir(mid);
		rmdir(base);
		print_message("cgroup: controllers not available here (%s): the rest skipped\n",
			      e.msg);
		skip();
	}
	assert_hands_on(base);
	assert_hands_on(mid);
	assert_hands_on(leaf);
	/* Again, on what exists: nothing to do, still 0. */
	assert_int_equal(cgroup_tree_enable(leaf, &e), 0);
	assert_int_equal(rmdir(leaf), 0);
	assert_int_equal(rmdir(mid), 0);
	assert_int_equal(rmdir(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_clean),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_real_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

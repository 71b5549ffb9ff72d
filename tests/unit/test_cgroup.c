/*
 * kilnd's cgroup policy (api/kilnd/supervision/cgroup.c) where no cgroup2
 * is needed: a --cgroup-parent that is not absolute, has . or .. in it, or
 * is not on a cgroup2 file system is refused with one line naming the
 * option; a sandbox's cgroup whose limits cannot be written leaves
 * nothing behind. (lib/cgroup's own tests: test_cgroup_tree.c,
 * test_cgroup_leaf.c; the real hierarchy under kilnd:
 * tests/integration/kilnd_sandboxes.sh.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/supervision/cgroup.h"

static void test_setup_refusals(void **state)
{
	static const struct {
		const char *parent;
		const char *needle;
	} cases[] = {
		{ "sys/fs/cgroup/kiln", "absolute path" },
		{ "/sys/fs/cgroup/../kiln", "without . or .." },
		{ "/sys/fs/cgroup/./kiln", "without . or .." },
		{ "/sys/fs/cgroup//kiln", "without . or .." },
		{ "/sys/fs/cgroup/kiln/..", "without . or .." },
	};
	char parent[PATH_MAX], tmpl[] = "/tmp/cgtest.XXXXXX";
	struct err err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(parent, sizeof(parent), "%s", cases[i].parent);
		err.msg[0] = '\0';
		assert_int_equal(cgroup_setup(parent, sizeof(parent), &err), -1);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("%s: '%s' lacks '%s'", cases[i].parent, err.msg, cases[i].needle);
	}
	/* An ordinary directory (tmpfs, ext4) is no cgroup: said, and nothing made. */
	assert_non_null(mkdtemp(tmpl));
	snprintf(parent, sizeof(parent), "%s/kiln/", tmpl);
	assert_int_equal(cgroup_setup(parent, sizeof(parent), &err), -1);
	assert_non_null(strstr(err.msg, "is not on a cgroup v2 file system"));
	assert_non_null(strstr(err.msg, "mount -t cgroup2"));
	assert_non_null(strstr(err.msg, "--cgroup-parent"));
	assert_null(strchr(err.msg, '\n'));
	snprintf(parent, sizeof(parent), "%s/kiln", tmpl);
	assert_int_equal(access(parent, F_OK), -1);
	rmdir(tmpl);
}

static void test_create_cleans_up_on_failure(void **state)
{
	char tmpl[] = "/tmp/cgtest.XXXXXX", path[PATH_MAX];
	struct cg_limits l;
	struct api_err e = { 0 };
	int fd = 7;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	cg_limits_default(1, 128, &l);
	/* A directory without the controllers' files: memory.max cannot be set. */
	assert_int_equal(cgroup_create(tmpl, "0123456789ab", &l, 0, path, sizeof(path), &fd, &e),
			 -1);
	assert_int_equal(e.code, API_E_SPAWN_FAILED);
	assert_non_null(strstr(e.msg, "memory.max"));
	assert_int_equal(fd, -1);
	assert_int_equal(access(path, F_OK), -1);
	/* A parent path too long for the cgroup's. */
	{
		char longp[PATH_MAX];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[0] = '/';
		longp[sizeof(longp) - 1] = '\0';
		assert_int_equal(cgroup_create(longp, "0123456789ab", &l, 0, path, sizeof(path),
					       &fd, &e),
				 -1);
		assert_non_null(strstr(e.msg, "too long"));
	}
	rmdir(tmpl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_refusals),
		cmocka_unit_test(test_create_cleans_up_on_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

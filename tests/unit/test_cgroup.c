/*
 * kilnd's cgroup files (api/kilnd/supervision/cgroup.c) where no cgroup2 is
 * needed: a --cgroup-parent that is not absolute, has . or .. in it, or
 * is not on a cgroup2 file system is refused with one line; a cgroup whose
 * limits cannot be written leaves nothing behind; the event counters are
 * read from memory.events and pids.events; removing a missing cgroup is
 * fine. (The real hierarchy is exercised by tests/integration/kilnd_sandboxes.sh.)
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

#include "lib/base/cgroup_self.h"
#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/supervision/cgroup.h"

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
	assert_int_equal(cgroup_create(tmpl, "0123456789ab", &l, path, sizeof(path), &fd, &e), -1);
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
		assert_int_equal(cgroup_create(longp, "0123456789ab", &l, path, sizeof(path), &fd,
					       &e),
				 -1);
		assert_non_null(strstr(e.msg, "too long"));
	}
	rmdir(tmpl);
}

static void test_events_and_remove(void **state)
{
	char tmpl[] = "/tmp/cgtest.XXXXXX", cg[PATH_MAX];
	struct cg_events ev;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	put(tmpl, "memory.events", "low 0\nhigh 0\nmax 40\noom 2\noom_kill 2\noom_group_kill 1\n");
	put(tmpl, "pids.events", "max 5\n");
	cgroup_read_events(tmpl, &ev);
	assert_int_equal(ev.oom_kill, 2);
	assert_int_equal(ev.pids_max, 5);
	/* Unreadable or garbled counters are zeros, never stale values. */
	put(tmpl, "memory.events", "oom_kill lots\n");
	unlink(strcat(strcpy(cg, tmpl), "/pids.events"));
	cgroup_read_events(tmpl, &ev);
	assert_int_equal(ev.oom_kill, 0);
	assert_int_equal(ev.pids_max, 0);
	unlink(strcat(strcpy(cg, tmpl), "/memory.events"));
	/* Removing: an empty directory goes, a missing one is fine. */
	assert_int_equal(cgroup_remove(tmpl), 0);
	assert_int_equal(access(tmpl, F_OK), -1);
	assert_int_equal(cgroup_remove(tmpl), 0);
}

/* The cgroup v2 directory of this process, or "" when there is none. */
static void own_cgroup2(char *dir, size_t cap)
{
	if (cgroup_self_dir(dir, cap) < 0)
		dir[0] = '\0';
}

/* A kiln-passt-<pid> cgroup a standalone-minded kiln-vmm left below the sandbox's does not keep it. */
static void test_remove_takes_children(void **state)
{
	char own[800], cg[900], child[1000];

	(void)state;
	own_cgroup2(own, sizeof(own));
	if (geteuid() != 0 || !own[0]) {
		print_message("cgroup: skipped: needs root and a cgroup v2 mount\n");
		skip();
	}
	snprintf(cg, sizeof(cg), "%s/kiln-cgtest-%d", own, (int)getpid());
	snprintf(child, sizeof(child), "%s/kiln-passt-1", cg);
	assert_int_equal(mkdir(cg, 0755), 0);
	assert_int_equal(mkdir(child, 0755), 0);
	assert_int_equal(cgroup_remove(cg), 0);
	assert_int_equal(access(cg, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_refusals),
		cmocka_unit_test(test_create_cleans_up_on_failure),
		cmocka_unit_test(test_events_and_remove),
		cmocka_unit_test(test_remove_takes_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

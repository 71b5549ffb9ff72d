/*
 * share_open: the share swap. A share's path is opened at every kiln-vmm
 * start without following symbolic links and, for a non-root owner,
 * checked to lie beneath a --share-root by what was opened. The old check
 * (realpath once, at create) accepted each of the swapped trees below:
 * realpath follows the link, and a link to somewhere beneath a root, or
 * any link for root's sandboxes, passed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/share_open.h"

struct tree {
	char base[256];
	char roots[2][PATH_MAX]; /* <base>/roots, <base>/other-root */
};

static void pathf(char *out, const struct tree *t, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", t->base, rel);
}

static void mk(const struct tree *t, const char *rel)
{
	char p[PATH_MAX];

	pathf(p, t, rel);
	assert_int_equal(mkdir(p, 0700), 0);
}

static void ln(const struct tree *t, const char *target_rel, const char *rel)
{
	char p[PATH_MAX], target[PATH_MAX];

	pathf(p, t, rel);
	pathf(target, t, target_rel);
	assert_int_equal(symlink(target, p), 0);
}

/* <base>/roots/alice/data/, <base>/outside/secret/, <base>/other-root/. */
static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char tmpl[] = "/tmp/kiln-share-XXXXXX", real[PATH_MAX];

	assert_non_null(t);
	assert_non_null(mkdtemp(tmpl));
	/* The walk refuses links anywhere: start from a real path. */
	assert_non_null(realpath(tmpl, real));
	assert_true(strlen(real) < sizeof(t->base));
	memcpy(t->base, real, strlen(real) + 1);
	mk(t, "roots");
	mk(t, "roots/alice");
	mk(t, "roots/alice/data");
	mk(t, "roots/alice/data/sub");
	mk(t, "outside");
	mk(t, "outside/secret");
	mk(t, "other-root");
	pathf(t->roots[0], t, "roots");
	pathf(t->roots[1], t, "other-root");
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->base);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

/* The directory fd refers to is the one at rel. */
static void assert_same(const struct tree *t, int fd, const char *rel)
{
	struct stat a, b;
	char p[PATH_MAX];

	pathf(p, t, rel);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(p, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	assert_true(fd >= 3);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static void test_opens_beneath_root(void **state)
{
	struct tree *t = *state;
	char p[PATH_MAX];
	struct err err;
	int fd = -1;

	pathf(p, t, "roots/alice/data");
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), 0);
	assert_same(t, fd, "roots/alice/data");
	close(fd);
	/* A root itself, and any path without a root check (root's own). */
	assert_int_equal(share_open(t->roots[1], (const char(*)[PATH_MAX])t->roots, 2, &fd, &err),
			 0);
	close(fd);
	pathf(p, t, "outside/secret");
	assert_int_equal(share_open(p, NULL, 0, &fd, &err), 0);
	assert_same(t, fd, "outside/secret");
	close(fd);
	/* Repeated slashes are one separator. */
	snprintf(p, sizeof(p), "%s//roots///alice/data/", t->base);
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), 0);
	assert_same(t, fd, "roots/alice/data");
	close(fd);
}

/* The shared directory itself swapped for a link to a place beneath the
 * same root: realpath would say fine; refused, naming the component. */
static void test_swapped_share_refused(void **state)
{
	struct tree *t = *state;
	char p[PATH_MAX], moved[PATH_MAX];
	struct err err;
	int fd = -1;

	pathf(p, t, "roots/alice/data");
	pathf(moved, t, "roots/alice/data.real");
	assert_int_equal(rename(p, moved), 0);
	ln(t, "roots/alice/data.real", "roots/alice/data");
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "component 'data'"));
	assert_non_null(strstr(err.msg, "symbolic link"));
	/* Root's sandboxes too: no link is ever followed. */
	assert_int_equal(share_open(p, NULL, 0, &fd, &err), -ELOOP);
}

/* An ancestor swapped for a link out of every root. */
static void test_swapped_ancestor_refused(void **state)
{
	struct tree *t = *state;
	char p[PATH_MAX], moved[PATH_MAX];
	struct err err;
	int fd = -1;

	pathf(moved, t, "roots/alice.old");
	pathf(p, t, "roots/alice");
	assert_int_equal(rename(p, moved), 0);
	mk(t, "outside/data");
	ln(t, "outside", "roots/alice");
	pathf(p, t, "roots/alice/data");
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "component 'alice'"));
	assert_null(strstr(err.msg, "component 'data'"));
}

/* A path that opens fine but lies outside every root. */
static void test_outside_roots_refused(void **state)
{
	struct tree *t = *state;
	char p[PATH_MAX];
	struct err err;
	int fd = -1;

	pathf(p, t, "outside/secret");
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), -EPERM);
	assert_non_null(strstr(err.msg, "not beneath a --share-root"));
	/* No roots at all: nothing is beneath one. */
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 0, &fd, &err), -EPERM);
	/* A root that is itself reached through a link allows nothing. */
	ln(t, "outside", "outside-link");
	pathf(t->roots[1], t, "outside-link");
	assert_int_equal(share_open(p, (const char(*)[PATH_MAX])t->roots, 2, &fd, &err), -EPERM);
}

static void test_bad_paths(void **state)
{
	struct tree *t = *state;
	char p[PATH_MAX], file[PATH_MAX];
	struct err err;
	int fd = -1, f;

	assert_int_equal(share_open("relative/dir", NULL, 0, &fd, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "absolute"));
	snprintf(p, sizeof(p), "%s/roots/alice/../../outside", t->base);
	assert_int_equal(share_open(p, NULL, 0, &fd, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'..'"));
	pathf(p, t, "roots/missing/x");
	assert_int_equal(share_open(p, NULL, 0, &fd, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "component 'missing'"));
	pathf(file, t, "roots/file");
	f = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	close(f);
	assert_int_equal(share_open(file, NULL, 0, &fd, &err), -ENOTDIR);
	assert_non_null(strstr(err.msg, "not a directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_opens_beneath_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_share_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_ancestor_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_roots_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_paths, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

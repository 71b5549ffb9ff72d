/*
 * tmpdir: a fresh directory under /tmp per test (cmocka setup and
 * teardown), for tests of code that works relative to a directory fd
 * (snapshot files, layers). Removed whole, links not followed.
 */
#ifndef KILN_TEST_TMPDIR_H
#define KILN_TEST_TMPDIR_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tmpdir_fx {
	char dir[64];
	int dfd;
};

static inline int tmpdir_setup(void **state)
{
	struct tmpdir_fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->dir, "/tmp/kiln-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY);
	assert_true(f->dfd >= 0);
	*state = f;
	return 0;
}

static inline int tmpdir_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline int tmpdir_teardown(void **state)
{
	struct tmpdir_fx *f = *state;

	close(f->dfd);
	nftw(f->dir, tmpdir_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* Write text to dir/rel (created or truncated). */
static inline void tmpdir_put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* NAME exists below dfd (a symlink counts as itself). */
static inline int tmpdir_exists(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

#endif

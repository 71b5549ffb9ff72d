/* Opening a share's directory without following symbolic links; see share_open.h. */
#include "lib/base/share_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* More ".." steps than this: a loop, not a directory tree. */
#define SHARE_MAX_DEPTH (PATH_MAX / 2)

struct dir_id {
	dev_t dev;
	ino_t ino;
};

/* One component beneath dirfd, as a directory, no symbolic link anywhere. */
static int open_component(int dirfd, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static int walk_fail(int r, const char *path, const char *name, size_t prefix_len, struct err *e)
{
	if (r == -ELOOP)
		err_set(e, EINVAL,
			"'%s': component '%s' (%.*s) is a symbolic link; shares are opened without following symbolic links, so give the directory's real path",
			path, name, (int)prefix_len, path);
	else if (r == -ENOTDIR)
		err_set(e, EINVAL, "'%s': component '%s' (%.*s) is not a directory", path, name,
			(int)prefix_len, path);
	else
		err_set(e, -r, "'%s': component '%s' (%.*s): %s", path, name, (int)prefix_len, path,
			strerror(-r));
	return r;
}

/* Open path from "/" component by component (share_open.h). */
static int walk(const char *path, int *out, struct err *e)
{
	const char *p = path;
	int cur, next;

	if (path[0] != '/') {
		err_set(e, EINVAL, "'%s' is not an absolute path", path);
		return -EINVAL;
	}
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0) {
		err_set(e, errno, "'/': %s", strerror(errno));
		return -errno;
	}
	for (;;) {
		char name[NAME_MAX + 1];
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len > NAME_MAX) {
			close(cur);
			err_set(e, EINVAL, "'%.200s...': a component is longer than %d bytes", path,
				NAME_MAX);
			return -ENAMETOOLONG;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p += len;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			close(cur);
			err_set(e, EINVAL, "'%s': component '%s' is not allowed in a share's path",
				path, name);
			return -EINVAL;
		}
		next = open_component(cur, name);
		close(cur);
		if (next < 0)
			return walk_fail(next, path, name, (size_t)(p - path), e);
		cur = next;
	}
	*out = cur;
	return 0;
}

static int dir_id_of(int fd, struct dir_id *id)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

/* 1: the directory fd is `want` or beneath it (through its ".." chain);
 * 0: not; -errno. */
static int beneath(int fd, const struct dir_id *want)
{
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), r = 0;

	if (cur < 0)
		return -errno;
	for (int depth = 0; depth < SHARE_MAX_DEPTH; depth++) {
		struct dir_id here = { 0 }, up = { 0 };
		int parent;

		if ((r = dir_id_of(cur, &here)))
			break;
		if (here.dev == want->dev && here.ino == want->ino) {
			r = 1;
			break;
		}
		parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0) {
			r = -errno;
			break;
		}
		close(cur);
		cur = parent;
		if ((r = dir_id_of(cur, &up)))
			break;
		/* "/" is its own parent: nothing above it. */
		if (up.dev == here.dev && up.ino == here.ino)
			break;
	}
	close(cur);
	return r;
}

/* 1: dir is the root at path or beneath it; 0: not (or the root cannot be
 * opened without a symbolic link: it allows nothing); -errno. */
static int beneath_root(int dir, const char *root)
{
	struct dir_id id = { 0 };
	int rfd, r;

	if (walk(root, &rfd, NULL))
		return 0;
	r = dir_id_of(rfd, &id);
	close(rfd);
	return r ? r : beneath(dir, &id);
}

int share_open(const char *path, const char (*roots)[PATH_MAX], size_t nroots, int *fd,
	       struct err *e)
{
	int dir, r;

	if ((r = walk(path, &dir, e)))
		return r;
	if (roots) {
		r = 0;
		for (size_t i = 0; i < nroots && r == 0; i++)
			r = beneath_root(dir, roots[i]);
		if (r <= 0) {
			close(dir);
			if (r == 0) {
				err_set(e, EINVAL,
					"'%s' is not beneath a --share-root of this kilnd (now); only root may share other directories",
					path);
				return -EPERM;
			}
			err_set(e, -r, "'%s': checking where it is: %s", path, strerror(-r));
			return r;
		}
	}
	if (dir < 3) {
		/* kilnd's stdio was closed: keep clear of the child's 0-2. */
		int moved = fcntl(dir, F_DUPFD_CLOEXEC, 3);

		r = moved < 0 ? -errno : 0;
		close(dir);
		if (r) {
			err_set(e, -r, "'%s': %s", path, strerror(-r));
			return r;
		}
		dir = moved;
	}
	*fd = dir;
	return 0;
}

/* Opening what a less privileged process could have planted; see open_beneath.h. */
#include "lib/base/open_beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* openat2 says EAGAIN when a rename raced a ".." under RESOLVE_BENEATH;
 * its man page says to retry. A few times: a racer must not spin us. */
#define OPEN_BENEATH_TRIES 8

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a fifo";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "of an unknown type";
	}
}

static int open_fail(int err, const char *path, enum open_beneath_kind kind, struct err *e)
{
	switch (err) {
	case ELOOP:
		return err_set(
			e, err,
			"'%s': a component is a symbolic link; nothing here is opened through one",
			path);
	case EXDEV:
		return err_set(e, err,
			       "'%s' leaves its directory or crosses a mount point: refused", path);
	case ENOTDIR:
		return err_set(e, err,
			       kind == OPEN_BENEATH_DIR
				       ? "'%s' or a component above it is not a directory"
				       : "'%s': a component above it is not a directory",
			       path);
	case ENOSYS:
		return err_set(e, err, "'%s': openat2 is missing: kiln needs Linux 5.6 or later",
			       path);
	default:
		return err_set(e, err, "'%s': %s", path, strerror(err));
	}
}

int open_beneath(int dirfd, const char *path, enum open_beneath_kind kind, struct stat *st,
		 struct err *e)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			(kind == OPEN_BENEATH_DIR ? O_DIRECTORY : 0),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			RESOLVE_NO_XDEV,
	};
	struct stat own;
	long fd = -1;
	int r;

	if (!st)
		st = &own;
	for (int i = 0; i < OPEN_BENEATH_TRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0)
		return open_fail(errno, path, kind, e);
	if (fstat((int)fd, st) < 0) {
		r = err_set(e, errno, "'%s': %s", path, strerror(errno));
		goto fail;
	}
	if (kind == OPEN_BENEATH_FILE ? !S_ISREG(st->st_mode) : !S_ISDIR(st->st_mode)) {
		r = err_set(e, EINVAL, "'%s' is %s, not %s: refused", path, type_name(st->st_mode),
			    kind == OPEN_BENEATH_FILE ? "a regular file" : "a directory");
		goto fail;
	}
	/* Reads of what it is do not need it; a caller's copy must not see EAGAIN. */
	if (fcntl((int)fd, F_SETFL, 0) < 0) {
		r = err_set(e, errno, "'%s': %s", path, strerror(errno));
		goto fail;
	}
	return (int)fd;
fail:
	close((int)fd);
	return r;
}

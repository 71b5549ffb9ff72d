/* A file replaced whole and durably; see file_replace.h. */
#include "lib/base/file_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

/* The temporary file, always made afresh with mode (O_EXCL). One a crash
 * left there is removed first, never reused: open()'s mode applies only to
 * a file it creates, so a leftover 0644 file would carry a 0600 secret (the
 * sandbox CA's key) into place, and a leftover owned by someone else, who
 * may still hold it open, would hand them what is written. Someone who
 * makes the name again between the two calls gets EEXIST, not the data. */
static int open_tmp(int dirfd, const char *tmp, mode_t mode)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dirfd, tmp, flags, mode);

	if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0)
		fd = openat(dirfd, tmp, flags, mode);
	return fd >= 0 ? fd : -errno;
}

int file_replace_owned_at(int dirfd, const char *name, const void *buf, size_t n, mode_t mode,
			  uid_t uid, gid_t gid)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	const char *slash = strrchr(name, '/');
	int pfd, fd, err = 0;

	/* no file's name: "<name>.tmp" would be ".tmp" inside the directory */
	if (!name[0] || (slash && !slash[1]))
		return errno = EINVAL, -EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return errno = ENAMETOOLONG, -ENAMETOOLONG;
	/* the directory the rename is in, for its fsync: name's own */
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else
		snprintf(parent, sizeof(parent), "%.*s", slash == name ? 1 : (int)(slash - name),
			 name);
	fd = open_tmp(dirfd, tmp, mode);
	if (fd < 0)
		err = -fd;
	/* before the first byte: the data is never readable by the old owner */
	if (!err && (uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) < 0)
		err = errno;
	if (!err && fd_io_write_all(fd, buf, n) < 0)
		err = errno;
	if (!err && fsync(fd) < 0)
		err = errno;
	if (fd >= 0 && close(fd) < 0 && !err)
		err = errno;
	if (!err && renameat(dirfd, tmp, dirfd, name) < 0)
		err = errno;
	if (err) {
		unlinkat(dirfd, tmp, 0);
		errno = err;
		return -err;
	}
	pfd = openat(dirfd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* renamed, maybe not durably: still a failure to report */
	if (pfd < 0 || fsync(pfd) < 0)
		err = errno;
	if (pfd >= 0)
		close(pfd);
	errno = err;
	return -err;
}

int file_replace_at(int dirfd, const char *name, const void *buf, size_t n, mode_t mode)
{
	return file_replace_owned_at(dirfd, name, buf, n, mode, (uid_t)-1, (gid_t)-1);
}

int file_replace(const char *dir, const char *name, const void *buf, size_t n, mode_t mode)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (dfd < 0)
		return -errno;
	r = file_replace_at(dfd, name, buf, n, mode);
	close(dfd);
	errno = -r;
	return r;
}

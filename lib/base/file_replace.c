/* A file replaced whole and durably; see file_replace.h. */
#include "lib/base/file_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

int file_replace(const char *dir, const char *name, const void *buf, size_t n, mode_t mode)
{
	char tmp[NAME_MAX + 1];
	int dfd, fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return errno = ENAMETOOLONG, -ENAMETOOLONG;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		err = errno;
	if (!err && fd_io_write_all(fd, buf, n) < 0)
		err = errno;
	if (!err && fsync(fd) < 0)
		err = errno;
	if (fd >= 0 && close(fd) < 0 && !err)
		err = errno;
	if (!err && renameat(dfd, tmp, dfd, name) < 0)
		err = errno;
	if (err)
		unlinkat(dfd, tmp, 0);
	else if (fsync(dfd) < 0)
		err = errno; /* renamed, maybe not durably: still a failure to report */
	close(dfd);
	errno = err;
	return -err;
}

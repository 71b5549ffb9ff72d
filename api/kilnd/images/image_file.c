/* Taking over an importer's image file; see image_file.h. */
#include "api/kilnd/images/image_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int image_file_open(const char *path, uid_t owner, struct stat *st, struct err *e)
{
	/* O_NONBLOCK: a fifo planted there must not hang kilnd */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0)
		return err_set(e, errno, "open %s: %s", path, strerror(errno));
	if (fstat(fd, st) < 0) {
		r = err_set(e, errno, "stat %s: %s", path, strerror(errno));
	} else if (!S_ISREG(st->st_mode)) {
		r = err_set(e, EINVAL, "%s is not a regular file (mode 0%o)", path,
			    (unsigned)st->st_mode);
	} else if (st->st_uid != owner) {
		r = err_set(e, EPERM, "%s is owned by uid %u, not the importer's uid %u", path,
			    (unsigned)st->st_uid, (unsigned)owner);
	} else if (st->st_nlink != 1) {
		r = err_set(e, EMLINK,
			    "%s has %lu links, not 1: refused (it may be a link to another file)",
			    path, (unsigned long)st->st_nlink);
	} else {
		return fd;
	}
	close(fd);
	return r;
}

int image_file_link(int fd, const char *dest, struct err *e)
{
	char self[32];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, self, AT_FDCWD, dest, AT_SYMLINK_FOLLOW) < 0)
		return err_set(e, errno, "link %s: %s", dest, strerror(errno));
	return 0;
}

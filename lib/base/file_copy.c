/* A file's data extents copied, holes kept; see file_copy.h. */
#include "lib/base/file_copy.h"

#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOUNCE 65536 /* the read-and-write fallback's buffer */

/* What copy_file_range cannot do across filesystems: read and write. */
static int copy_bounce(int in, int out, off_t off, off_t end)
{
	char buf[BOUNCE];

	while (off < end) {
		size_t want = (size_t)(end - off) < sizeof(buf) ? (size_t)(end - off) : sizeof(buf);
		ssize_t n = pread(in, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -EIO : -errno;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = pwrite(out, buf + w, (size_t)(n - w), off + w);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return k == 0 ? -EIO : -errno;
			w += k;
		}
		off += n;
	}
	return 0;
}

int file_copy_extent(int in, int out, off_t data, off_t hole)
{
	for (off_t off = data; off < hole;) {
		off_t o = off;
		ssize_t n = copy_file_range(in, &o, out, &o, (size_t)(hole - off), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS))
			return copy_bounce(in, out, off, hole);
		if (n <= 0)
			return n == 0 ? -EIO : -errno;
		off += n;
	}
	return 0;
}

int file_copy_sparse(int in, int out, uint64_t *bytes)
{
	struct stat st;
	off_t off = 0;

	if (fstat(in, &st) < 0)
		return -errno;
	if (bytes)
		*bytes = (uint64_t)st.st_blocks * 512;
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	if (ftruncate(out, st.st_size) < 0)
		return -errno;
	while (off < st.st_size) {
		off_t data = lseek(in, off, SEEK_DATA), hole;
		int r;

		if (data < 0)
			return errno == ENXIO ? 0 : -errno; /* ENXIO: only a hole is left */
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		/* a file that grows meanwhile is copied as fstat found it */
		if (data >= st.st_size)
			break;
		if (hole > st.st_size)
			hole = st.st_size;
		if ((r = file_copy_extent(in, out, data, hole)))
			return r;
		off = hole;
	}
	return 0;
}

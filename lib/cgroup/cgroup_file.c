/* A cgroup's interface files read and written whole; see cgroup_file.h. */
#include "lib/cgroup/cgroup_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

int cgroup_file_read(const char *dir, const char *name, char *out, size_t cap)
{
	char p[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fd_io_read_full(fd, out, cap - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	/* One line of words in most files: no newline in messages. */
	while (n > 0 && out[n - 1] == '\n')
		n--;
	out[n] = '\0';
	return 0;
}

int cgroup_file_write(const char *dir, const char *name, const char *value)
{
	char p[PATH_MAX];
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	n = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	close(fd);
	return (int)n;
}

bool cgroup_file_is_v2(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

#include "vmm/snapshot/snapshot_io.h"

#include "lib/base/fd_io.h"
#include "lib/base/file_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SUFFIX ".tmp"

/* NAME must be one path component with room for ".tmp" after it; fills tmp with NAME.tmp. */
static int tmp_name(const char *name, char tmp[NAME_MAX + 1], struct err *e)
{
	size_t n = strnlen(name, NAME_MAX + 1);

	if (n == 0 || n + strlen(TMP_SUFFIX) > NAME_MAX || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return err_set(e, EINVAL, "snapshot: '%.64s' is not a usable file name", name);
	memcpy(tmp, name, n);
	memcpy(tmp + n, TMP_SUFFIX, sizeof(TMP_SUFFIX));
	return 0;
}

int snap_file_openat(int dirfd, const char *name)
{
	/* O_NONBLOCK so a fifo cannot stall the open; cleared once the file
	 * is known to be regular (snap_file_check). */
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	return fd < 0 ? -errno : fd;
}

int snap_file_open(int dirfd, const char *name, struct err *e)
{
	return snap_file_check(snap_file_openat(dirfd, name), name, e);
}

int snap_file_check(int fd, const char *name, struct err *e)
{
	struct stat st;
	int r;

	if (fd == -ELOOP)
		return err_set(
			e, ELOOP,
			"snapshot: '%s' is a symbolic link; a snapshot's files are never followed: replace it with the file itself",
			name);
	if (fd == -EMLINK)
		return err_set(
			e, EMLINK,
			"snapshot: '%s' has other hard links; a snapshot's files are never links to other files: copy the snapshot (cp -r, not cp -l)",
			name);
	if (fd < 0)
		return err_set(e, -fd, "snapshot: opening '%s': %s", name, strerror(-fd));
	if (fstat(fd, &st) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		r = err_set(e, errno, "snapshot: '%s': %s", name, strerror(errno));
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, EINVAL, "snapshot: '%s' is not a regular file", name);
	}
	return fd;
}

int snap_tmp_open(int dirfd, const char *name, struct err *e)
{
	char tmp[NAME_MAX + 1];
	int fd, r = tmp_name(name, tmp, e);

	if (r)
		return r;
	/* A stale one is removed, never truncated: kilnd (root) writes in
	 * directories a jailed kiln-vmm owns, which could leave a hard link
	 * to some other file under this name. */
	if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
		return err_set(e, errno, "snapshot: removing a stale '%s': %s", tmp,
			       strerror(errno));
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_set(e, errno, "snapshot: creating '%s': %s", tmp, strerror(errno));
	return fd;
}

void snap_tmp_abort(int dirfd, const char *name, int fd)
{
	char tmp[NAME_MAX + 1];

	if (fd >= 0)
		close(fd);
	if (!tmp_name(name, tmp, NULL))
		unlinkat(dirfd, tmp, 0);
}

int snap_tmp_commit(int dirfd, const char *name, int fd, struct err *e)
{
	char tmp[NAME_MAX + 1];
	int r = tmp_name(name, tmp, e);

	if (r) {
		close(fd);
		return r;
	}
	/* Data before name: a rename that reaches the disk before the data would publish a hole. */
	if (fsync(fd) < 0) {
		r = errno;
		snap_tmp_abort(dirfd, name, fd);
		return err_set(e, r, "snapshot: syncing '%s': %s", tmp, strerror(r));
	}
	if (close(fd) < 0) {
		r = errno;
		snap_tmp_abort(dirfd, name, -1);
		return err_set(e, r, "snapshot: closing '%s': %s", tmp, strerror(r));
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		r = errno;
		snap_tmp_abort(dirfd, name, -1);
		return err_set(e, r, "snapshot: renaming '%s' to '%s': %s", tmp, name, strerror(r));
	}
	if (fsync(dirfd) < 0)
		return err_set(e, errno, "snapshot: syncing the directory of '%s': %s", name,
			       strerror(errno));
	return 0;
}

int snap_write_atomic(int dirfd, const char *name, const void *buf, size_t len, struct err *e)
{
	int fd = snap_tmp_open(dirfd, name, e), r;

	if (fd < 0)
		return fd;
	r = fd_io_pwrite_all(fd, buf, len, 0);
	if (r) {
		snap_tmp_abort(dirfd, name, fd);
		return err_set(e, -r, "snapshot: writing '%s': %s (the previous '%s' is kept)",
			       name, strerror(-r), name);
	}
	return snap_tmp_commit(dirfd, name, fd, e);
}

int snap_read_file(int dirfd, const char *name, size_t cap, uint8_t **buf, size_t *len,
		   struct err *e)
{
	return snap_read_fd(snap_file_open(dirfd, name, e), name, cap, buf, len, e);
}

int snap_read_fd(int fd, const char *name, size_t cap, uint8_t **buf, size_t *len, struct err *e)
{
	struct stat st;
	uint8_t *b;
	size_t size, got = 0;
	int r;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = errno;
		close(fd);
		return err_set(e, r, "snapshot: '%s': %s", name, strerror(r));
	}
	if ((uint64_t)st.st_size > cap) {
		close(fd);
		return err_set(e, EFBIG, "snapshot: '%s' is %lld bytes, more than the %zu allowed",
			       name, (long long)st.st_size, cap);
	}
	size = (size_t)st.st_size;
	/* One byte more than the size, to see a file that grew since fstat. */
	b = malloc(size + 1);
	if (!b) {
		close(fd);
		return err_set(e, ENOMEM, "snapshot: out of memory reading '%s'", name);
	}
	for (;;) {
		ssize_t n = read(fd, b + got, size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errno;
			free(b);
			close(fd);
			return err_set(e, r, "snapshot: reading '%s': %s", name, strerror(r));
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > size) {
			free(b);
			close(fd);
			return err_set(e, EAGAIN, "snapshot: '%s' changed while it was read", name);
		}
	}
	close(fd);
	*buf = b;
	*len = got;
	return 0;
}

int snap_dir_remove(int parentfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	/* Only files: a snapshot directory has no subdirectories, and this must not recurse anywhere. */
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) < 0 && !err)
			err = -errno;
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && !err)
		err = -errno;
	return err;
}

int snap_dir_begin(int parentfd, const char *name, struct err *e)
{
	char tmp[NAME_MAX + 1];
	int fd, r = tmp_name(name, tmp, e);

	if (r)
		return r;
	/* A crash mid-snapshot leaves NAME.tmp behind; it never held the checkpoint. */
	r = snap_dir_remove(parentfd, tmp);
	if (r && r != -ENOENT)
		return err_set(e, -r, "snapshot: removing the unfinished '%s': %s", tmp,
			       strerror(-r));
	if (mkdirat(parentfd, tmp, 0700) < 0)
		return err_set(e, errno, "snapshot: creating '%s': %s", tmp, strerror(errno));
	fd = openat(parentfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		r = errno;
		unlinkat(parentfd, tmp, AT_REMOVEDIR);
		return err_set(e, r, "snapshot: opening '%s': %s", tmp, strerror(r));
	}
	return fd;
}

void snap_dir_abort(int parentfd, const char *name, int dirfd)
{
	char tmp[NAME_MAX + 1];

	if (dirfd >= 0)
		close(dirfd);
	if (!tmp_name(name, tmp, NULL))
		snap_dir_remove(parentfd, tmp);
}

int snap_dir_commit(int parentfd, const char *name, int dirfd, struct err *e)
{
	char tmp[NAME_MAX + 1];
	int r = tmp_name(name, tmp, e), exchanged = 1;

	if (r) {
		close(dirfd);
		return r;
	}
	/* The files' own renames must be on disk before the directory is published. */
	if (fsync(dirfd) < 0) {
		r = errno;
		snap_dir_abort(parentfd, name, dirfd);
		return err_set(e, r, "snapshot: syncing '%s': %s", tmp, strerror(r));
	}
	close(dirfd);
	if (renameat2(parentfd, tmp, parentfd, name, RENAME_EXCHANGE) < 0) {
		r = errno;
		exchanged = 0;
		/* No previous checkpoint: a plain rename, which must not replace one made meanwhile. */
		if (r == ENOENT && renameat2(parentfd, tmp, parentfd, name, RENAME_NOREPLACE) == 0)
			r = 0;
		else if (r == ENOENT)
			r = errno;
		if (r) {
			snap_dir_abort(parentfd, name, -1);
			return err_set(
				e, r,
				"snapshot: replacing '%s' with '%s': %s (the previous snapshot is kept)",
				name, tmp, strerror(r));
		}
	}
	if (fsync(parentfd) < 0)
		return err_set(e, errno, "snapshot: syncing the directory of '%s': %s", name,
			       strerror(errno));
	/* NAME.tmp now holds the previous checkpoint; a failure here only leaves it for the next begin. */
	if (exchanged)
		snap_dir_remove(parentfd, tmp);
	return 0;
}

int snap_copy_over(int in, int out)
{
	struct stat st;
	off_t off = 0;

	if (fstat(in, &st) < 0)
		return -errno;
	if (ioctl(out, FICLONE, in) == 0)
		return ftruncate(out, st.st_size) < 0 || fsync(out) < 0 ? -errno : 0;
	while (off < st.st_size) {
		off_t data = lseek(in, off, SEEK_DATA), hole;
		int r;

		if (data < 0 && errno != ENXIO)
			return -errno;
		if (data < 0)
			data = st.st_size; /* ENXIO: only a hole is left */
		if ((r = fd_io_zero_range(out, FALLOC_FL_PUNCH_HOLE, (uint64_t)off,
					  (uint64_t)(data - off))))
			return r;
		if (data == st.st_size)
			break;
		if ((hole = lseek(in, data, SEEK_HOLE)) < 0)
			return -errno;
		if ((r = file_copy_extent(in, out, data, hole)))
			return r;
		off = hole;
	}
	return ftruncate(out, st.st_size) < 0 || fsync(out) < 0 ? -errno : 0;
}

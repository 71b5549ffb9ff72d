/* The staging tree; see import_tree.h. */
#include "api/image-import/import_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/image-import/oci_path.h"

/* Keep a's attributes for the entry st describes (with a device's numbers). */
static int keep(struct import_tree *t, const struct stat *st, const struct import_attr *a,
		uint32_t rdev, const char *path, struct err *e)
{
	const struct import_attrs_slot s = { .ino = st->st_ino,
					     .mtime = a->mtime,
					     .uid = a->uid,
					     .gid = a->gid,
					     .mode = a->mode,
					     .rdev = rdev };

	if (!t->keep_attrs)
		return 0;
	if (import_attrs_put(&t->attrs, &s) < 0)
		return err_set(e, ENOMEM, "'%s': out of memory for its attributes", path);
	return 0;
}

/* keep() for the entry base in dfd. */
static int keep_at(struct import_tree *t, int dfd, const char *base, const struct import_attr *a,
		   const char *path, struct err *e)
{
	struct stat st;

	if (!t->keep_attrs)
		return 0;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_set(e, errno, "stat '%s': %s", path, strerror(errno));
	return keep(t, &st, a, 0, path, e);
}

static int count(struct import_tree *t, uint64_t bytes, struct err *e)
{
	t->entries++;
	t->bytes += (bytes + 4095) & ~(uint64_t)4095;
	if (t->max_entries && t->entries > t->max_entries)
		return err_set(
			e, EFBIG,
			"more than %llu entries (the member cap): the image is too large to import",
			(unsigned long long)t->max_entries);
	if (t->max_bytes && t->bytes > t->max_bytes)
		return err_set(
			e, EFBIG,
			"more than %llu bytes of content (the size cap): the image is too large to import",
			(unsigned long long)t->max_bytes);
	return 0;
}

int tree_parent(struct import_tree *t, const char *path, int create, int *dirfd, const char **base,
		struct err *e)
{
	int fd = dup(t->root);
	const char *p = path, *slash;
	char comp[OCI_NAME_MAX + 1];

	if (fd < 0)
		return err_set(e, errno, "dup: %s", strerror(errno));
	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);
		int next;

		if (n > OCI_NAME_MAX) {
			close(fd);
			return err_set(e, ENAMETOOLONG, "component too long");
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			/* a parent no member names: root's, 0755, its mtime left */
			const struct import_attr a = { .mode = S_IFDIR | 0755,
						       .mtime = IMPORT_NO_MTIME };
			char sofar[OCI_PATH_MAX + 1];
			int r;

			if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
				r = err_set(e, errno, "mkdir '%s': %s", comp, strerror(errno));
				close(fd);
				return r;
			}
			snprintf(sofar, sizeof(sofar), "%.*s", (int)(slash - path), path);
			if ((r = keep_at(t, fd, comp, &a, sofar, e)) < 0 ||
			    (r = count(t, 0, e)) < 0) {
				close(fd);
				return r;
			}
			next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			int er = errno;

			close(fd);
			/* O_NOFOLLOW|O_DIRECTORY on a symlink is ELOOP or ENOTDIR */
			if (er == ELOOP || er == ENOTDIR)
				return err_set(
					e, ELOOP,
					"'%.*s' is a symlink or not a directory: nothing may be created below it",
					(int)(slash - path), path);
			return err_set(e, er, "open '%.*s': %s", (int)(slash - path), path,
				       strerror(er));
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*dirfd = fd;
	*base = p;
	return 0;
}

/* Remove name in dirfd and what is below it; depth bounds the recursion. */
static int remove_at(int at, const char *name, int depth)
{
	DIR *dh;
	struct dirent *de;
	int fd, r = 0;

	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth > OCI_DEPTH_MAX + 8)
		return -ELOOP;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dh = fdopendir(fd);
	if (!dh) {
		close(fd);
		return -ENOMEM;
	}
	while (!r && (de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = remove_at(dirfd(dh), de->d_name, depth + 1);
	closedir(dh);
	if (!r && unlinkat(at, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

int tree_remove(struct import_tree *t, const char *path, struct err *e)
{
	const char *base;
	int dfd, r;

	if (!*path)
		return tree_empty_dir(t, path, e);
	r = tree_parent(t, path, 0, &dfd, &base, e);
	if (r == -ENOENT)
		return 0; /* nothing to remove */
	if (r < 0)
		return r;
	r = remove_at(dfd, base, 0);
	close(dfd);
	return r < 0 ? err_set(e, -r, "remove '%s': %s", path, strerror(-r)) : 0;
}

int tree_empty_dir(struct import_tree *t, const char *path, struct err *e)
{
	int fd, r = 0;
	struct dirent *de;
	DIR *dh;

	if (*path) {
		const char *base;
		int dfd;

		r = tree_parent(t, path, 0, &dfd, &base, e);
		if (r == -ENOENT || r == -ELOOP)
			return 0;
		if (r < 0)
			return r;
		fd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		if (fd < 0)
			return 0; /* not a directory: nothing of it to hide */
	} else {
		fd = dup(t->root);
	}
	dh = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dh) {
		if (fd >= 0)
			close(fd);
		return err_set(e, ENOMEM, "opendir '%s': out of memory", path);
	}
	while (!r && (de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = remove_at(dirfd(dh), de->d_name, 0);
	closedir(dh);
	return r < 0 ? err_set(e, -r, "empty '%s': %s", path, strerror(-r)) : 0;
}

/* Make room for a new entry base in dfd: whatever is there goes (a later
 * layer's entry replaces a lower one's, a directory with its contents). */
static int clear(int dfd, const char *base, const char *path, struct err *e)
{
	int r = remove_at(dfd, base, 0);

	return r < 0 ? err_set(e, -r, "replace '%s': %s", path, strerror(-r)) : 0;
}

static void set_time(int dfd, const char *base, const struct import_attr *a)
{
	struct timespec ts[2] = { { .tv_sec = a->mtime }, { .tv_sec = a->mtime } };

	utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW);
}

int tree_mkdir(struct import_tree *t, const char *path, const struct import_attr *a, struct err *e)
{
	mode_t stage = (a->mode & 0777) | 0700; /* the importer must fill it */
	const char *base;
	struct stat st;
	int dfd, r;

	if (!*path) { /* the root's own entry: its owner, mode and mtime */
		if (fstat(t->root, &st) < 0)
			return err_set(e, errno, "stat the image root: %s", strerror(errno));
		return keep(t, &st, a, 0, "/", e);
	}
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) < 0)
		return r;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    (r = clear(dfd, base, path, e)) < 0)
		goto out;
	if (mkdirat(dfd, base, stage) < 0 && errno != EEXIST) {
		r = err_set(e, errno, "mkdir '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fchmodat(dfd, base, stage, 0) < 0) {
		r = err_set(e, errno, "chmod '%s': %s", path, strerror(errno));
		goto out;
	}
	/* its mtime is set once the tree is complete (import_own.h): what
	 * is written into it until then moves it */
	if ((r = keep_at(t, dfd, base, a, path, e)) == 0)
		r = count(t, 0, e);
out:
	close(dfd);
	return r;
}

int tree_file_open(struct import_tree *t, const char *path, const struct import_attr *a, int *fd,
		   struct err *e)
{
	/* mkfs.ext4 -d must read it; no set-uid file of the importer's (and
	 * a write would clear the bit): import_own.h sets those bits */
	mode_t stage = (a->mode & 0777) | 0600;
	struct stat st;
	const char *base;
	int dfd, r;

	if (!*path)
		return err_set(e, EINVAL, "a file may not replace the image root");
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) < 0)
		return r;
	if ((r = clear(dfd, base, path, e)) == 0) {
		*fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (*fd < 0)
			r = err_set(e, errno, "create '%s': %s", path, strerror(errno));
		else if (fchmod(*fd, stage) < 0 || fstat(*fd, &st) < 0)
			r = err_set(e, errno, "chmod '%s': %s", path, strerror(errno));
		else
			r = keep(t, &st, a, 0, path, e);
		if (r < 0 && *fd >= 0)
			close(*fd);
	}
	close(dfd);
	return r;
}

int tree_file_done(struct import_tree *t, int fd, uint64_t size, struct err *e)
{
	/* the attribute's mtime is set by the caller through futimens */
	if (close(fd) < 0)
		return err_set(e, errno, "close: %s", strerror(errno));
	return count(t, size, e);
}

int tree_symlink(struct import_tree *t, const char *path, const char *target,
		 const struct import_attr *a, struct err *e)
{
	const char *base;
	int dfd, r;

	if (!*path)
		return err_set(e, EINVAL, "a symlink may not replace the image root");
	if ((r = oci_symlink_check(path, target, e)) < 0)
		return r;
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) < 0)
		return r;
	if ((r = clear(dfd, base, path, e)) == 0) {
		if (symlinkat(target, dfd, base) < 0)
			r = err_set(e, errno, "symlink '%s': %s", path, strerror(errno));
		else {
			set_time(dfd, base, a);
			if ((r = keep_at(t, dfd, base, a, path, e)) == 0)
				r = count(t, 0, e);
		}
	}
	close(dfd);
	return r;
}

/* The symlink tbase (in tfd) read as if it stood at path: oci_symlink_check's rule. */
static int link_check_at(int tfd, const char *tbase, const char *path, const char *target,
			 struct err *e)
{
	char to[PATH_MAX];
	struct err why;
	ssize_t n = readlinkat(tfd, tbase, to, sizeof(to) - 1);
	int r;

	if (n < 0)
		return err_set(e, errno, "hard link to '%.200s': reading the symlink: %s", target,
			       strerror(errno));
	to[n] = '\0';
	if ((r = oci_symlink_check(path, to, &why)) < 0)
		return err_set(e, -r, "hard link '%.200s' to the symlink '%.200s': %s", path,
			       target, why.msg);
	return 0;
}

int tree_hardlink(struct import_tree *t, const char *path, const char *target, struct err *e)
{
	const char *base, *tbase;
	int dfd, tfd, r;
	struct err why;
	struct stat st;

	if (!*path || !*target)
		return err_set(e, EINVAL, "a hard link may not be or name the image root");
	if ((r = tree_parent(t, target, 0, &tfd, &tbase, &why)) < 0)
		return err_set(e, -r, "hard link to '%.200s': %s", target, why.msg);
	if (fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode)) {
		close(tfd);
		return err_set(e, ENOENT,
			       "hard link to '%.200s', which is not an earlier non-directory member",
			       target);
	}
	/* A hard link to a symlink is that symlink at another depth: its
	 * target is read from `path` now, so it must pass the symlink rule
	 * from there (a/b/l -> ../../x is inside; top -> ../../x is not). */
	if (S_ISLNK(st.st_mode) && (r = link_check_at(tfd, tbase, path, target, e)) < 0) {
		close(tfd);
		return r;
	}
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) == 0) {
		if (strcmp(path, target) != 0 && (r = clear(dfd, base, path, e)) == 0 &&
		    linkat(tfd, tbase, dfd, base, 0) < 0)
			r = err_set(e, errno, "link '%s': %s", path, strerror(errno));
		if (r == 0)
			r = count(t, 0, e);
		close(dfd);
	}
	close(tfd);
	return r;
}

int tree_fifo(struct import_tree *t, const char *path, const struct import_attr *a, struct err *e)
{
	const char *base;
	int dfd, r;

	if (!*path)
		return err_set(e, EINVAL, "a fifo may not replace the image root");
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) < 0)
		return r;
	if ((r = clear(dfd, base, path, e)) == 0) {
		if (mkfifoat(dfd, base, 0600) < 0)
			r = err_set(e, errno, "mkfifo '%s': %s", path, strerror(errno));
		else {
			set_time(dfd, base, a);
			if ((r = keep_at(t, dfd, base, a, path, e)) == 0)
				r = count(t, 0, e);
		}
	}
	close(dfd);
	return r;
}

int tree_device(struct import_tree *t, const char *path, const struct import_attr *a,
		unsigned major, unsigned minor, struct err *e)
{
	const char *base;
	struct stat st;
	int dfd, fd, r;

	if (!*path || !t->keep_attrs)
		return err_set(e, EINVAL, "device node where none can be");
	/* Linux's dev_t: 12 bits of major, 20 of minor */
	if (major > 0xfff || minor > 0xfffff)
		return err_set(e, EINVAL, "device numbers %u:%u are out of range", major, minor);
	if ((r = tree_parent(t, path, 1, &dfd, &base, e)) < 0)
		return r;
	if ((r = clear(dfd, base, path, e)) == 0) {
		fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || fstat(fd, &st) < 0)
			r = err_set(e, errno, "create '%s': %s", path, strerror(errno));
		else
			r = keep(t, &st, a, major << 20 | minor, path, e);
		if (fd >= 0)
			close(fd);
	}
	close(dfd);
	return r < 0 ? r : count(t, 0, e);
}

/* Only a top-level name: a longer path could pass through a symlink. */
int tree_readlink(struct import_tree *t, const char *name, char *buf, size_t n)
{
	ssize_t k;

	if (strchr(name, '/'))
		return -EINVAL;
	k = readlinkat(t->root, name, buf, n - 1);
	buf[k > 0 ? k : 0] = '\0';
	return k > 0 ? 0 : -errno;
}

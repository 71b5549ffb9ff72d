/* The host side of a container's bind mounts; see rt_binds.h. */
#include "api/runtime/rt_binds.h"

#include "api/runtime/rt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *group(bool readonly)
{
	return readonly ? RT_BINDS_DIR "/ro" : RT_BINDS_DIR "/rw";
}

/* binds/, binds/ro, binds/rw: 0711, so the jail's uid may pass through
 * to the binds (what it may do there is each source's own mode). */
static int make_dirs(int dirfd, struct err *e)
{
	static const char *const dirs[] = { RT_BINDS_DIR, RT_BINDS_DIR "/ro", RT_BINDS_DIR "/rw" };

	for (size_t i = 0; i < 3; i++)
		if (mkdirat(dirfd, dirs[i], 0711) < 0 && errno != EEXIST)
			return err_set(e, errno, "the state directory's %s: %s", dirs[i],
				       strerror(errno));
	return 0;
}

/* The source, opened without following any link: RESOLVE_NO_SYMLINKS
 * refuses one anywhere, the last component included (O_NOFOLLOW would
 * instead open an O_PATH link itself). */
static int open_source(const char *path, struct stat *st, struct err *e)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how)), r;

	if (fd < 0) {
		r = errno;
		if (r == ELOOP)
			return err_set(e, ELOOP,
				       "bind mount source %.200s: a symbolic link on the way; give the "
				       "real path",
				       path);
		return err_set(e, r, "bind mount source %.200s: %s", path, strerror(r));
	}
	if (fstat(fd, st) < 0 || !(S_ISDIR(st->st_mode) || S_ISREG(st->st_mode))) {
		close(fd);
		return err_set(e, EINVAL,
			       "bind mount source %.200s: only a directory or a regular file can be "
			       "shared with a VM",
			       path);
	}
	return fd;
}

/* The detached clone of src, read-only when asked. */
static int clone_source(int src, const struct rt_bind *b, struct err *e)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
		(b->recursive ? AT_RECURSIVE : 0);
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					   MOUNT_ATTR_NODEV };
	int t = (int)syscall(SYS_open_tree, src, "", flags), r;

	if (t < 0)
		return err_set(e, errno, "bind mount source %.200s: cloning it: %s", b->source,
			       strerror(errno));
	if (!b->readonly)
		attr.attr_set &= ~(uint64_t)MOUNT_ATTR_RDONLY;
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | (b->recursive ? AT_RECURSIVE : 0),
		    &attr, sizeof(attr)) < 0) {
		r = errno;
		close(t);
		return err_set(e, r, "bind mount source %.200s: %s", b->source, strerror(r));
	}
	return t;
}

/* The mount point: an empty directory, or an empty file for a file. */
static int make_entry(int dirfd, const char *entry, bool dir)
{
	int fd;

	if (dir)
		return mkdirat(dirfd, entry, 0700);
	fd = openat(dirfd, entry, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* b's source bound at dirfd's entry. */
static int bind_at(int dirfd, const char *entry, const struct rt_bind *b, struct err *e)
{
	struct stat st;
	int src, tree, r;

	src = open_source(b->source, &st, e);
	if (src < 0)
		return src;
	if (make_entry(dirfd, entry, S_ISDIR(st.st_mode)) < 0) {
		r = err_set(e, errno, "bind mount %.200s: its mount point %s: %s", b->source, entry,
			    strerror(errno));
		close(src);
		return r;
	}
	tree = clone_source(src, b, e);
	close(src);
	if (tree < 0)
		return tree;
	r = (int)syscall(SYS_move_mount, tree, "", dirfd, entry, MOVE_MOUNT_F_EMPTY_PATH);
	if (r < 0)
		r = err_set(e, errno, "bind mount %.200s: attaching it: %s", b->source,
			    strerror(errno));
	close(tree);
	return r;
}

static int bind_one(int dirfd, const struct rt_bind *b, struct err *e)
{
	char entry[64];

	snprintf(entry, sizeof(entry), "%s/%u", group(b->readonly), b->index);
	return bind_at(dirfd, entry, b, e);
}

int rt_binds_prepare(int dirfd, const struct rt_bind *b, size_t n, struct err *e)
{
	struct err ignored;
	int r = n ? make_dirs(dirfd, e) : 0;

	for (size_t i = 0; !r && i < n; i++)
		r = bind_one(dirfd, &b[i], e);
	if (r < 0)
		rt_binds_release(dirfd, &ignored);
	return r;
}

/* Detach every entry of one group directory. */
static int release_group(int dirfd, const char *grp, struct err *e)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int gfd, r = 0;

	gfd = openat(dirfd, grp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gfd < 0)
		return errno == ENOENT ? 0 : err_set(e, errno, "%s: %s", grp, strerror(errno));
	d = fdopendir(gfd);
	if (!d) {
		close(gfd);
		return err_set(e, errno, "%s: %s", grp, strerror(errno));
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		/* through the descriptor: no path from / is resolved again */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%.20s", gfd, de->d_name);
		if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && !r)
			r = err_set(e, errno, "%s/%s: unmounting: %s", grp, de->d_name,
				    strerror(errno));
	}
	closedir(d);
	return r;
}

int rt_binds_release(int dirfd, struct err *e)
{
	int r = release_group(dirfd, group(true), e);
	int w = release_group(dirfd, group(false), r ? NULL : e);

	return r ? r : w;
}

/* ---- a pod's further containers ---- */

int rt_binds_pod_dir(int dirfd, struct err *e)
{
	static const char *const dirs[] = { RT_POD_DIR, RT_POD_SLOTS };

	for (size_t i = 0; i < 2; i++)
		if (mkdirat(dirfd, dirs[i], 0711) < 0 && errno != EEXIST)
			return err_set(e, errno, "the state directory's %s: %s", dirs[i],
				       strerror(errno));
	return 0;
}

int rt_binds_member(int sandbox_dirfd, const char *id, const char *rootfs, bool readonly,
		    const struct rt_bind *b, size_t n, struct err *e)
{
	const struct rt_bind root = { rootfs, readonly, true, 0 };
	char slot[RT_ID_MAX + 16];
	struct err ignored;
	int fd, r;

	/* a slot a killed member left is taken back first */
	if (rt_binds_member_release(sandbox_dirfd, id, e) < 0)
		return -EBUSY;
	snprintf(slot, sizeof(slot), RT_POD_SLOTS "/%s", id);
	if (mkdirat(sandbox_dirfd, slot, 0711) < 0)
		return err_set(e, errno, "the pod's sandbox: its %s: %s", slot, strerror(errno));
	fd = openat(sandbox_dirfd, slot, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "the pod's sandbox: its %s: %s", slot, strerror(errno));
	r = bind_at(fd, RT_POD_ROOT, &root, e);
	if (!r)
		r = rt_binds_prepare(fd, b, n, e);
	close(fd);
	if (r < 0)
		rt_binds_member_release(sandbox_dirfd, id, &ignored);
	return r;
}

int rt_binds_member_release(int sandbox_dirfd, const char *id, struct err *e)
{
	char root[RT_ID_MAX + 8 + 32];
	int pod, fd, r;

	pod = openat(sandbox_dirfd, RT_POD_SLOTS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pod < 0)
		return errno == ENOENT ? 0
				       : err_set(e, errno, "%s: %s", RT_POD_SLOTS, strerror(errno));
	fd = openat(pod, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = errno == ENOENT
			? 0
			: err_set(e, errno, "%s/%s: %s", RT_POD_SLOTS, id, strerror(errno));
		close(pod);
		return r;
	}
	r = rt_binds_release(fd, e);
	snprintf(root, sizeof(root), "/proc/self/fd/%d/" RT_POD_ROOT, fd);
	if (!r && umount2(root, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL &&
	    errno != ENOENT)
		r = err_set(e, errno, "%s/%s/%s: unmounting: %s", RT_POD_SLOTS, id, RT_POD_ROOT,
			    strerror(errno));
	close(fd);
	/* never enters a mount: what is still mounted stays, and says so */
	if (!r)
		r = rt_dir_remove(pod, id, e);
	close(pod);
	return r;
}

int rt_binds_pod_release(int dirfd, struct err *e)
{
	struct dirent *de;
	DIR *d;
	int pod, r = 0;

	pod = openat(dirfd, RT_POD_SLOTS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pod < 0)
		return errno == ENOENT ? 0
				       : err_set(e, errno, "%s: %s", RT_POD_SLOTS, strerror(errno));
	d = fdopendir(pod);
	if (!d) {
		close(pod);
		return err_set(e, errno, "%s: %s", RT_POD_SLOTS, strerror(errno));
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' &&
		    rt_binds_member_release(dirfd, de->d_name, r ? NULL : e) < 0)
			r = -EBUSY;
	closedir(d);
	return r;
}

int rt_binds_member_clone(int sandbox_dirfd, const char *id, int *tree, struct err *e)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					   MOUNT_ATTR_NOEXEC };
	struct mount_attr top = { .attr_set = MOUNT_ATTR_RDONLY };
	char slot[RT_ID_MAX + 16];
	int r;

	snprintf(slot, sizeof(slot), RT_POD_SLOTS "/%s", id);
	*tree = (int)syscall(SYS_open_tree, sandbox_dirfd, slot,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
				     AT_SYMLINK_NOFOLLOW);
	if (*tree < 0)
		return err_set(e, errno, "%s: cloning it for the pod's VM: %s", slot,
			       strerror(errno));
	/* and the slot itself (not its mounts) read-only: the VMM's uid may
	 * not make, rename or remove a name beside the container's files */
	if (syscall(SYS_mount_setattr, *tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) < 0 ||
	    syscall(SYS_mount_setattr, *tree, "", AT_EMPTY_PATH, &top, sizeof(top)) < 0) {
		r = err_set(e, errno, "%s: %s", slot, strerror(errno));
		close(*tree);
		*tree = -1;
		return r;
	}
	return 0;
}

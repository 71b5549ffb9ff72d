/* The system calls of confinement; see confine_apply.h. */
#include "guest-init/agent/confine_apply.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/proto/agent_proto.h"

enum confine_kind confine_probe(void *ctx, const char *path, char *link, size_t linksz)
{
	struct stat st;
	ssize_t n;

	(void)ctx;
	if (lstat(path, &st) < 0)
		return CONFINE_ABSENT;
	if (S_ISDIR(st.st_mode))
		return CONFINE_DIR;
	if (!S_ISLNK(st.st_mode))
		return CONFINE_NODE;
	if (!link || !linksz)
		return CONFINE_LINK;
	n = readlink(path, link, linksz);
	/* A target that does not fit is left out rather than cut short. */
	if (n < 0 || (size_t)n >= linksz)
		return CONFINE_ABSENT;
	link[n] = 0;
	return CONFINE_LINK;
}

int confine_workspace_ensure(void)
{
	if (mkdir(CONFINE_WORKSPACE, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	if (chown(CONFINE_WORKSPACE, AGENT_USER_UID, AGENT_USER_GID) < 0)
		return -errno;
	return 0;
}

/*
 * Make dst the root. pivot_root(".", ".") stacks the old root under the
 * new one and the lazy unmount drops it, so nothing of it stays reachable.
 * An initramfs root cannot be pivoted (EINVAL: it has no parent mount);
 * there the new root is moved over it and entered with chroot, as
 * switch_root does. The old root is then only covered, and a process whose
 * root is the top of this namespace cannot look under it (".." at the top
 * of a mount crosses back into what is mounted there).
 */
static int pivot(const char *dst)
{
	if (chdir(dst) < 0)
		return -1;
	if (syscall(SYS_pivot_root, ".", ".") == 0) {
		if (umount2(".", MNT_DETACH) < 0)
			return -1;
	} else {
		if (errno != EINVAL)
			return -1;
		if (mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0)
			return -1;
	}
	return chdir("/");
}

/*
 * dst and every mount below it nosuid and nodev. Not a bind remount
 * (MS_REMOUNT | MS_BIND): that sets one mount's flags only, not those of
 * the mounts under it, and sets all of them, so it would also make a
 * read-only share writable unless each one's flags were read back first.
 * mount_setattr (Linux 5.12) adds the two attributes to the whole tree
 * and leaves the rest as it is.
 */
static int nosuid(const char *dst)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, dst, AT_RECURSIVE, &attr, sizeof(attr));
}

static int apply_step(const struct confine_step *s)
{
	int fd;

	switch (s->op) {
	case CONFINE_UNSHARE:
		return unshare(CLONE_NEWNS);
	case CONFINE_PRIVATE:
		return mount(NULL, s->dst, NULL, MS_REC | MS_PRIVATE, NULL);
	case CONFINE_MKDIR:
		if (mkdir(s->dst, s->mode) == 0)
			return 0;
		return errno == EEXIST ? 0 : -1;
	case CONFINE_FILE:
		fd = open(s->dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -1;
		close(fd);
		return 0;
	case CONFINE_SYMLINK:
		return symlink(s->src, s->dst);
	case CONFINE_MOUNT:
		return mount(s->fstype, s->dst, s->fstype, s->flags, s->data);
	case CONFINE_BIND:
		return mount(s->src, s->dst, NULL, MS_BIND | s->flags, NULL);
	case CONFINE_READONLY:
		return mount(NULL, s->dst, NULL,
			     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
	case CONFINE_NOSUID:
		return nosuid(s->dst);
	case CONFINE_PIVOT:
		return pivot(s->dst);
	}
	errno = EINVAL;
	return -1;
}

int confine_apply(const struct confine_plan *p, size_t *failed)
{
	for (size_t i = 0; i < p->n; i++) {
		if (apply_step(&p->step[i]) < 0) {
			*failed = i;
			return -1;
		}
	}
	return 0;
}

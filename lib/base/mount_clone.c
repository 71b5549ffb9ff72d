/* A directory as a detached mount of its own; see mount_clone.h. */
#include "lib/base/mount_clone.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

int mount_clone_dir(int *fd, int read_only, const char *what, int *cloned, struct err *e)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
			(read_only ? MOUNT_ATTR_RDONLY : 0),
	};
	int tree;

	*cloned = 0;
	/* Submounts come along (AT_RECURSIVE): what the directory showed
	 * before it still shows, all of it beneath the clone's root. */
	tree = (int)syscall(SYS_open_tree, *fd, "",
			    OPEN_TREE_CLONE | AT_EMPTY_PATH | AT_RECURSIVE | O_CLOEXEC);
	/* Only a process that is not root may go on without the clone: it
	 * can never jail itself. Root (about to jail itself, maybe) fails
	 * closed rather than keep a way out. */
	if (tree < 0 && errno == EPERM && geteuid() != 0)
		return 0;
	if (tree < 0)
		return err_set(
			e, errno, "%s: cloning it as a mount of its own: %s%s", what,
			strerror(errno),
			errno == ENOSYS ? " (Linux 5.2 or later is needed)"
				: errno == EINVAL
				? " (open it in this process's own mount namespace, and not on an unbindable mount)"
				: errno == EPERM
				? " (root without CAP_SYS_ADMIN, as in a user namespace: run as real root, or as an ordinary user without --jail)"
				: "");
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) < 0) {
		int r = err_set(e, errno, "%s: making its mount nosuid,nodev,noexec%s: %s%s", what,
				read_only ? ",ro" : "", strerror(errno),
				errno == ENOSYS ? " (Linux 5.12 or later is needed)" : "");

		close(tree);
		return r;
	}
	close(*fd);
	*fd = tree;
	*cloned = 1;
	return 0;
}

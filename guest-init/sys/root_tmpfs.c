/* The move from the initramfs to a tmpfs root; see root_tmpfs.h. */
#include "guest-init/sys/root_tmpfs.h"

#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_TMPFS_STAGE "/.kiln-root"

int root_tmpfs_enter(const char **why)
{
	*why = "creating " ROOT_TMPFS_STAGE;
	if (mkdir(ROOT_TMPFS_STAGE, 0755) < 0 && errno != EEXIST)
		return -errno;
	*why = "mounting a tmpfs on " ROOT_TMPFS_STAGE;
	if (mount("tmpfs", ROOT_TMPFS_STAGE, "tmpfs", 0, "mode=0755") < 0)
		return -errno;
	*why = "moving the tmpfs over /";
	if (chdir(ROOT_TMPFS_STAGE) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0)
		return -errno;
	*why = "entering the tmpfs root";
	if (chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/*
 * share_mount: the directory a share serves, as a mount of its own.
 *
 * A descriptor of a host directory keeps leading to the rest of the host
 * from inside any jail: openat(fd, "..") walks up the mount tree it was
 * opened in, whatever the process's root, and every descriptor found
 * beneath it (virtio-fs holds one per guest inode) does the same. A
 * detached clone of the directory (open_tree(OPEN_TREE_CLONE)) is a
 * mount with no parent: ".." at its root stays at its root, for the
 * server's confined lookups and for a compromised VMM's own openat alike.
 * The clone is also nosuid, nodev, noexec, and read-only for a read-only
 * share, so the kernel refuses what the server would refuse.
 *
 * Cloning needs CAP_SYS_ADMIN: a VMM without it (an unprivileged user's,
 * never jailed, holding nothing it could not open itself) keeps the
 * directory as it is, and says so through *cloned.
 */
#ifndef KILN_SHARE_MOUNT_H
#define KILN_SHARE_MOUNT_H

#include "lib/base/err.h"

/*
 * Replace *fd (a directory, any open mode; closed here on success) with
 * an O_PATH descriptor of the root of a detached clone of it, submounts
 * included. *cloned 1 when cloned, 0 when the process may not (EPERM) and
 * *fd is left as it was. 0, or -errno with e (name for the message); *fd
 * is then still the caller's.
 */
int share_mount_detach(int *fd, int read_only, const char *name, int *cloned, struct err *e);

#endif

/*
 * mount_clone: a directory as a mount of its own.
 *
 * A descriptor of a host directory keeps leading to the rest of the host
 * from inside any jail: openat(fd, "..") walks up the mount tree it was
 * opened in, whatever the process's root, and every descriptor found
 * beneath it does the same. A detached clone of the directory
 * (open_tree(OPEN_TREE_CLONE)) is a mount with no parent: ".." at its
 * root stays at its root, for a program's confined lookups and for a
 * compromised VMM's own openat alike. The clone is also nosuid, nodev,
 * noexec, and read-only when asked, so the kernel refuses what the
 * program would refuse. kiln-vmm serves its shares (virtio-fs) and reads
 * a snapshot it restores from such clones.
 *
 * Cloning needs CAP_SYS_ADMIN and a directory of the caller's own mount
 * namespace: a process that is not root (an unprivileged user's
 * kiln-vmm, never jailed, holding nothing it could not open itself)
 * keeps the directory as it is, and says so through *cloned; root that
 * cannot clone fails, since only root can go on to jail itself.
 */
#ifndef KILN_MOUNT_CLONE_H
#define KILN_MOUNT_CLONE_H

#include "lib/base/err.h"

/*
 * Replace *fd (a directory, any open mode; closed here on success) with
 * an O_PATH descriptor of the root of a detached clone of it, submounts
 * included. *cloned 1 when cloned, 0 when a process that is not root may
 * not (EPERM) and *fd is left as it was. 0, or -errno with e ("what" names the directory
 * in the message); *fd is then still the caller's.
 */
int mount_clone_dir(int *fd, int read_only, const char *what, int *cloned, struct err *e);

#endif

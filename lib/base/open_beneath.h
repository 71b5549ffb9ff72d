/*
 * open_beneath: opening, from a directory the caller trusts, a file or a
 * directory that a less privileged process could have planted or
 * replaced (docs/security.md, "What kilnd opens in jail-writable
 * directories").
 *
 * kilnd runs as root and reads what a jailed kiln-vmm wrote: a
 * checkpoint's disk, a hibernation snapshot. O_NOFOLLOW guards only a
 * path's last component; a directory above it replaced by a symbolic
 * link still leads anywhere root can read, and open(O_RDONLY) of a fifo
 * waits for a writer that never comes.
 *
 * Contract:
 *  - path is relative to dirfd and resolved by openat2 with
 *    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 *    RESOLVE_NO_XDEV: a symbolic link in any component, an absolute
 *    path, a ".." that leaves dirfd or a mount point on the way is
 *    refused by the kernel during the walk, so no rename racing the
 *    walk gets past it (Linux 5.6+).
 *  - Opened O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC (O_DIRECTORY
 *    too for OPEN_BENEATH_DIR): a fifo or a device never blocks the open
 *    nor becomes a controlling terminal. fstat then refuses anything but
 *    the kind asked for. O_NONBLOCK is cleared on what is returned.
 *  - Returns the descriptor (st filled when not NULL), or -errno with a
 *    message naming path: -ELOOP (a symbolic link on the way), -EXDEV
 *    (leaves dirfd or crosses a mount point), -ENOTDIR (a component on
 *    the way, or the directory asked for, is not a directory), -EINVAL
 *    (not the kind asked for: the message says what it is), -ENOSYS (no
 *    openat2: a kernel before 5.6), -ENOENT and others from the kernel.
 */
#ifndef KILN_OPEN_BENEATH_H
#define KILN_OPEN_BENEATH_H

#include <sys/stat.h>

#include "lib/base/err.h"

enum open_beneath_kind {
	OPEN_BENEATH_FILE, /* a regular file */
	OPEN_BENEATH_DIR,  /* a directory */
};

int open_beneath(int dirfd, const char *path, enum open_beneath_kind kind, struct stat *st,
		 struct err *e);

#endif

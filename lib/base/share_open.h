/*
 * share_open: a share's host directory, opened for one kiln-vmm start.
 *
 * A share's path was checked when the sandbox was created, but its owner
 * may change the tree afterwards: replace the shared directory or one of
 * its ancestors with a symbolic link, and a check done once would let the
 * next start share the link's target. So every start (boot, wake, fork,
 * restore) opens the path again, here, and hands kiln-vmm the opened
 * directory, never the path.
 *
 * Contract:
 *  - The path must be absolute. It is opened from "/" one component at a
 *    time with openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) and
 *    O_DIRECTORY: a component that is a symbolic link (even one pointing
 *    somewhere allowed), not a directory, "." or ".." is refused, and the
 *    message names the component.
 *  - With roots (a client other than root owns the sandbox), the opened
 *    directory must be one of the roots or beneath one: its ancestors,
 *    walked up through ".." from the opened descriptor, must meet a root's
 *    (st_dev, st_ino), each root opened the same way (a root that cannot
 *    be opened so matches nothing). Checking the opened directory rather
 *    than the path string also holds when a directory is renamed during
 *    the walk.
 *  - The descriptor is O_PATH, O_CLOEXEC and at least 3 (never a stdio
 *    number the child's dup2s would replace).
 *  - Returns 0 with *fd, or -errno with a message in e: -ELOOP (a
 *    symbolic link), -ENOTDIR, -ENOENT, -EINVAL (not absolute, "." or
 *    ".."), -ENAMETOOLONG, -EPERM (not beneath a root), others from the
 *    kernel.
 */
#ifndef KILN_SHARE_OPEN_H
#define KILN_SHARE_OPEN_H

#include <limits.h>
#include <stddef.h>

#include "lib/base/err.h"

/* roots: nroots absolute paths; NULL/0: no root check (root's sandboxes). */
int share_open(const char *path, const char (*roots)[PATH_MAX], size_t nroots, int *fd,
	       struct err *e);

#endif

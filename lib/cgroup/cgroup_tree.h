/*
 * cgroup_tree: the levels above a cgroup made usable for it: every
 * directory from the cgroup2 mount down to a parent exists and hands
 * memory, pids and cpu (and io where offered) to its children. kilnd
 * makes its --cgroup-parent so (api/kilnd/supervision/cgroup.c),
 * kiln-runtime a container's cgroup's parent (api/runtime/rt_cgroup.c).
 *
 * Contract:
 *  - Only missing levels are made and only missing controllers enabled;
 *    nothing is ever removed or turned off here.
 *  - The mount is the shortest prefix of the path on a cgroup2 file
 *    system; a path on none is refused before anything is made.
 *  - Errors are -errno with e: one line saying what failed and what to
 *    do, which a caller may extend with its own option's name.
 */
#ifndef KILN_CGROUP_TREE_H
#define KILN_CGROUP_TREE_H

#include <stdbool.h>

#include "lib/base/err.h"

#define CGROUP_MOUNT_DEFAULT "/sys/fs/cgroup"

/* Whether path is absolute with no empty, "." or ".." component and no
 * trailing '/' (only such a path is given to the calls below). */
bool cgroup_tree_path_clean(const char *path);

/*
 * dir (a clean path) and every level above it up to the cgroup2 mount
 * exist and enable memory, pids and cpu (io where offered) in
 * cgroup.subtree_control, dir's own included: a directory made below dir
 * has them. 0, or -errno with e: -EINVAL for an unclean path, one not on
 * cgroup2, a controller the hierarchy does not offer, or a level that
 * holds processes (which cannot hand controllers on).
 */
int cgroup_tree_enable(const char *dir, struct err *e);

#endif

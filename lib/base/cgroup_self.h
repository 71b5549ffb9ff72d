/*
 * cgroup_self: the cgroup v2 directory of the calling process, as a path
 * under the cgroup2 mount (from /proc/self/mountinfo and the "0::" line
 * of /proc/self/cgroup). One reading for every place that needs it: the
 * egress programs' own cgroup for passt (lib/egress) and the tests that
 * make cgroups below their own.
 */
#ifndef KILN_CGROUP_SELF_H
#define KILN_CGROUP_SELF_H

#include <stddef.h>

/* 0 with dir set; -ENOENT without a cgroup2 mount or a "0::" line,
 * -EINVAL for a path with "..", -ENAMETOOLONG when it does not fit cap. */
int cgroup_self_dir(char *dir, size_t cap);

#endif

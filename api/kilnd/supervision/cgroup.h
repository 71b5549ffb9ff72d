/*
 * cgroup: the cgroup v2 directories kilnd keeps for its VMMs
 * (docs/api.md "limits", docs/security.md "cgroup limits"): kilnd's
 * policy (the --cgroup-parent, sandbox-id names, its errors) over
 * lib/cgroup, which makes, enters, reads and removes them.
 *
 * Contract:
 *  - One parent directory per kilnd (--cgroup-parent; default
 *    <cgroup2 mount>/kiln), made at start with memory, pids and cpu
 *    enabled in cgroup.subtree_control on every level from the mount
 *    down to it. Beneath it, one directory per running VMM, named by the
 *    sandbox id: made (with its limits written) before each spawn, removed
 *    once the VMM has ended. Nothing else of the hierarchy is touched.
 *  - The VMM enters its cgroup between fork and exec, by writing "0" to
 *    the cgroup.procs descriptor cgroup_create() opened (supervise.c):
 *    from its first instruction everything it allocates is charged there.
 *  - A VMM's cgroup is removed with cgroup_leaf_remove (lib/cgroup/
 *    cgroup_leaf.h): processes left in it (a passt the VMM started) are
 *    killed first, empty cgroups below it go with it; its counters are
 *    read with cgroup_leaf_events.
 *  - Errors are values: -1 with a message saying what failed and what to
 *    do; nothing here exits.
 */
#ifndef KILN_CGROUP_H
#define KILN_CGROUP_H

#include <stddef.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/cgroup_limits.h"
#include "lib/base/err.h"
#include "lib/cgroup/cgroup_leaf.h"

/*
 * Make parent usable (parent[0] == '\0': CGROUP_MOUNT_DEFAULT "/kiln",
 * written back): it must lie on a cgroup2 file system whose root offers
 * memory, pids and cpu; the missing levels are made and the controllers
 * enabled down to it. Then remove what a previous kilnd left in it (empty
 * directories named like sandbox ids). 0, or -1 with e (one line).
 */
int cgroup_setup(char *parent, size_t cap, struct err *e);

/*
 * The cgroup of one VMM of sandbox id: <parent>/<id> into path[cap], made
 * afresh (a leftover one is emptied and removed first) with l's limits
 * (memory.max extra_mib above memory_max_mib: cg_ram_state_mib), and
 * *procs_fd its cgroup.procs opened for writing (O_CLOEXEC). 0, or -1
 * with e (spawn_failed) and nothing left behind.
 */
int cgroup_create(const char *parent, const char *id, const struct cg_limits *l, uint64_t extra_mib,
		  char *path, size_t cap, int *procs_fd, struct api_err *e);

#endif

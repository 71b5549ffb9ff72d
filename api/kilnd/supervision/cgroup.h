/*
 * cgroup: the cgroup v2 directories kilnd keeps for its VMMs
 * (docs/api.md "limits", docs/security.md "cgroup limits").
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
 *  - A directory is only ever removed empty (rmdir); processes left in
 *    one (a passt the VMM started) are killed first through cgroup.kill,
 *    and empty cgroups below it (a kiln-passt-<pid> a kiln-vmm made for
 *    its passt, lib/egress/egress_subgroup.h) are removed with it.
 *  - Errors are values: -1 with a message saying what failed and what to
 *    do; nothing here exits.
 */
#ifndef KILN_CGROUP_H
#define KILN_CGROUP_H

#include <stddef.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/cgroup_limits.h"
#include "lib/base/err.h"

#define CGROUP_DEFAULT_MOUNT "/sys/fs/cgroup"

/*
 * Make parent usable (parent[0] == '\0': CGROUP_DEFAULT_MOUNT "/kiln",
 * written back): it must lie on a cgroup2 file system whose root offers
 * memory, pids and cpu; the missing levels are made and the controllers
 * enabled down to it. Then remove what a previous kilnd left in it (empty
 * directories named like sandbox ids). 0, or -1 with e (one line).
 */
int cgroup_setup(char *parent, size_t cap, struct err *e);

/*
 * The cgroup of one VMM of sandbox id: <parent>/<id> into path[cap], made
 * afresh (a leftover one is emptied and removed first) with l's limits,
 * and *procs_fd its cgroup.procs opened for writing (O_CLOEXEC). 0, or
 * -1 with e (spawn_failed) and nothing left behind.
 */
int cgroup_create(const char *parent, const char *id, const struct cg_limits *l, char *path,
		  size_t cap, int *procs_fd, struct api_err *e);

/* What the cgroup counted (memory.events, pids.events); zeros where unreadable. */
void cgroup_read_events(const char *path, struct cg_events *ev);

/* Kill what is left in it and remove it; a missing one is fine. 0, or -errno. */
int cgroup_remove(const char *path);

#endif

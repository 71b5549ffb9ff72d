/*
 * rt_cgroup: a container's host cgroup (docs/oci-runtime.md "The VM"),
 * on lib/cgroup: create makes it with the VM's host limits and records it
 * in state.json (`cgroup`); the shim moves itself into it before it starts
 * kiln-vmm, which inherits it; delete, and a create that fails, kill what
 * is left in it and remove it.
 *
 * Contract:
 *  - The directory is rt_plan_cgroup's. Its missing parents are made with
 *    memory, pids and cpu enabled on every level from the cgroup2 mount
 *    down; they are the engine's (or shared) and never removed: only the
 *    leaf create made is.
 *  - --cgroup-manager disabled: nothing is made and rec->cgroup stays "".
 *  - Limits: memory.max the sizing's host_memory_max (guest RAM plus the
 *    VMM's overhead), cpu.max the sizing's quota and period, pids.max
 *    RT_CGROUP_PIDS_MAX (kiln-vmm's threads and the shim: the container's
 *    own pids limit applies in the guest).
 *  - An existing leaf is taken over only when empty (a crashed create of
 *    the same ID left it); one that holds processes or cgroups is refused.
 *  - Errors are -errno with e, one line.
 */
#ifndef KILN_RT_CGROUP_H
#define KILN_RT_CGROUP_H

#include "api/runtime/rt_cli.h"
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

#define RT_CGROUP_PIDS_MAX 1024

/* Make the cgroup of c's container from cfg; its path into rec->cgroup. */
int rt_cgroup_make(const struct rt_cmd *c, const struct rt_config *cfg, struct rt_state_rec *rec,
		   struct err *e);

/* The calling process (the shim) into rec->cgroup; "" is no cgroup: 0. */
int rt_cgroup_enter(const struct rt_state_rec *rec, struct err *e);

/* Kill what is left in rec->cgroup and remove it ("" or gone: 0). A path
 * that is not a clean one below the cgroup2 mount is not touched. */
int rt_cgroup_remove(const struct rt_state_rec *rec, struct err *e);

#endif

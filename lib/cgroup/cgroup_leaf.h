/*
 * cgroup_leaf: one cgroup v2 directory that holds processes (a VMM, or
 * kiln-runtime's shim and its VMM): made with its limits, entered, its
 * event counters read, and removed with whatever is left in it.
 *
 * Contract:
 *  - The parent is made usable first (cgroup_tree.h); this touches the
 *    leaf and the empty cgroups below it only, never a level above.
 *  - A leaf is made afresh (mkdir fails on an existing one) and is left
 *    behind by no failing call.
 *  - Removal is rmdir: processes still in it are killed first through
 *    cgroup.kill (Linux 5.14+), and empty cgroups below it (a
 *    kiln-passt-<pid> a kiln-vmm made for its passt,
 *    lib/egress/egress_subgroup.h) go with it.
 *  - Errors are -errno, with e where a user must act.
 */
#ifndef KILN_CGROUP_LEAF_H
#define KILN_CGROUP_LEAF_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/base/err.h"

/* The values written at creation, as the files take them; NULL: the
 * kernel's default ("max") is left. */
struct cgroup_limits {
	const char *memory_max; /* bytes; memory.swap.max is set to 0 with it */
	const char *pids_max;
	const char *cpu_max; /* "QUOTA PERIOD" in microseconds */
	bool oom_group;      /* memory.oom.group: an OOM kill takes every process in it */
};

/*
 * Make dir (whose parent enables the controllers) with l's limits, and
 * when procs_fd is not NULL open its cgroup.procs for writing (O_CLOEXEC)
 * into *procs_fd, for a child to write "0" between fork and exec. 0, or
 * -errno with e (-EEXIST: dir exists) and nothing made.
 */
int cgroup_leaf_create(const char *dir, const struct cgroup_limits *l, int *procs_fd,
		       struct err *e);

/* Move the calling process into dir: what it forks from now on starts there. 0, or -errno with e. */
int cgroup_leaf_enter(const char *dir, struct err *e);

/* What the cgroup counted. */
struct cgroup_events {
	uint64_t oom_kill; /* memory.events oom_kill */
	uint64_t pids_max; /* pids.events max: forks refused at pids.max */
};

/* dir's memory.events and pids.events; zeros where unreadable or garbled. */
void cgroup_leaf_events(const char *dir, struct cgroup_events *ev);

/*
 * The value of key in a flat-keyed cgroup file ("key value" lines:
 * memory.events, pids.events). 0 with *out, or -1 when the key is absent
 * or its value is not a number.
 */
int cgroup_events_value(const char *text, const char *key, uint64_t *out);

/* Kill what is left in dir and remove it (waiting up to 2 s for the
 * killed to leave); a missing one is fine. 0, or -errno. */
int cgroup_leaf_remove(const char *dir);

#endif

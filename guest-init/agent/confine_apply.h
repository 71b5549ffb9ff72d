/*
 * confine_apply: the system calls of confinement (confine_plan.h lays out
 * what they do).
 *
 * Contract:
 *  - confine_probe() and confine_workspace_ensure() run in the agent,
 *    before fork().
 *  - confine_apply() runs in the forked child of the multithreaded agent,
 *    as root, before the switch to the process's user: raw system calls
 *    only (async-signal-safe), no allocation, no locks. It stops at the
 *    first failing step: the caller must then not exec anything (a process
 *    asked to be confined never runs unconfined).
 */
#ifndef KILN_CONFINE_APPLY_H
#define KILN_CONFINE_APPLY_H

#include <stddef.h>

#include "guest-init/agent/confine_plan.h"

/* confine_probe_fn over the real filesystem (lstat, readlink). */
enum confine_kind confine_probe(void *ctx, const char *path, char *link, size_t linksz);

/* Create /workspace (0755, owned by uid/gid 1000, the default user) when
 * the image has none, so every image can be confined. 0 or -errno. */
int confine_workspace_ensure(void);

/* Run the plan. 0, or -1 with errno set and *failed the failing step. */
int confine_apply(const struct confine_plan *p, size_t *failed);

#endif

/*
 * oci_apply: the system calls of a container's process before its execve
 * (docs/agent-protocol.md, 7.9 `ctr_create`, steps 4 to 8; `ctr_exec`,
 * steps 4 to 7), with oci_privs.h's limits and privileges: it runs in the child the agent cloned into the
 * container's cgroup and, for the init, new namespaces; an exec's child,
 * cloned into the init's PID namespace, joins the init's others itself.
 *
 * Contract:
 *  - oci_child_run() runs in the cloned child of the multithreaded agent,
 *    as root: raw system calls only (async-signal-safe), no allocation, no
 *    locks; what it needs was prepared by the agent (oci_plan.h, the
 *    request's NULL-terminated vectors).
 *  - It reports through `report` (close-on-exec): one struct oci_report
 *    with stage OCI_STAGE_READY once it is set up and waits on `start`;
 *    then a byte on `start` makes it execve (the pipe's EOF is the
 *    success), EOF on `start` makes it exit. Any failure is reported with
 *    its stage, errno and plan step, and the child exits 127: nothing of
 *    the container runs half set up.
 *  - An exec's child is not dumpable until its execve, and closes the
 *    agent's descriptors before it joins anything: a container process
 *    of another user cannot trace it meanwhile.
 *  - It keeps no descriptor but its stdio and its two pipes: it may wait
 *    for its start as long as the host likes, and must not hold another
 *    container's pipes open meanwhile.
 *  - Destinations are created and opened inside the new root
 *    (RESOLVE_IN_ROOT) and mounted through their descriptor, a bind's
 *    source is opened beneath its share without following any symbolic
 *    link (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a link in the image or
 *    in a volume cannot point a mount at the guest's own files.
 */
#ifndef KILN_OCI_APPLY_H
#define KILN_OCI_APPLY_H

#include <stddef.h>
#include <sys/resource.h>

#include "guest-init/agent/oci_plan.h"
#include "guest-init/agent/oci_seccomp.h"

enum oci_stage {
	OCI_STAGE_READY = 0, /* set up, waiting for the start */
	OCI_STAGE_STDIO,     /* session, terminal, descriptors */
	OCI_STAGE_JOIN,      /* an exec: joining a namespace, `step` of oci_join_* */
	OCI_STAGE_PRIVATE,   /* every mount private */
	OCI_STAGE_PLAN,      /* a step of the plan: `step` says which */
	OCI_STAGE_HOSTNAME,
	OCI_STAGE_USER,
	OCI_STAGE_CWD,
	OCI_STAGE_LOOKUP, /* args[0]: not found (ENOENT) or not executable (EACCES) */
	OCI_STAGE_EXEC,
	OCI_STAGE_RLIMIT,   /* `step`: the process's rlimits[step] */
	OCI_STAGE_OOM,      /* oom_score_adj */
	OCI_STAGE_SYSCTL,   /* `step`: the request's sysctl[step] */
	OCI_STAGE_READONLY, /* `step`: readonly_paths[step] */
	OCI_STAGE_MASK,     /* `step`: masked_paths[step] */
	OCI_STAGE_CAPS,     /* the bounding set (side 0) or the others (side 1) */
	OCI_STAGE_NNP,      /* no_new_privs */
	OCI_STAGE_SECCOMP,  /* the container's filter */
};

/* Where in a plan step it failed: its destination or its source. */
enum oci_side { OCI_SIDE_DST, OCI_SIDE_SRC };

struct oci_report {
	int stage;
	int err;
	size_t step;
	int side;
};

struct oci_child {
	const struct oci_plan *plan;           /* the init's; NULL for an exec */
	const struct agent_ctr_create *create; /* the init's: sysctl, masked and readonly paths */
	const struct agent_ctr_process *proc;
	const char *hostname; /* NULL: the guest's */
	const char *path_var; /* where args[0] is searched */
	int fd[3];            /* become the init's 0, 1, 2 */
	int tty;              /* the terminal's slave side, or -1 */
	int report;           /* write end */
	int start;            /* read end */
	int join;             /* an exec (no plan): the init's pidfd, whose namespaces it joins */
	const struct rlimit *nofile;
	const struct oci_seccomp *seccomp; /* the container's, or NULL */
};

void oci_child_run(const struct oci_child *c) __attribute__((noreturn));

#endif

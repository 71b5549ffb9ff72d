/*
 * agent_ctr: the agent's containers (docs/agent-protocol.md, 7.9): the
 * table by cid, ctr_create's clone into namespaces and a cgroup of the
 * container's own, the start pipe, the exit from the reaper, signals,
 * delete; agent_ctr_exec.c adds further processes (`ctr_exec`),
 * agent_ctr_io.c relays a process's stdio (`ctr_stdio`).
 *
 * Contract:
 *  - One table per agent, under its own lock. The reaper's exit hook takes
 *    that lock, so no reaper call is ever made while holding it.
 *  - A container's processes are its execs (struct ctr_proc): the init
 *    (exec 0, inside struct ctr) and up to AGENT_CTR_EXECS_MAX more. A
 *    container is freed only by ctr_delete, after every exec was reaped
 *    and every connection that uses it (relays, waiters) let go of it; an
 *    exec other than 0 goes earlier, once its exit was told (`waited`) and
 *    no connection uses it.
 *  - The init is cloned with clone3 straight into its guest cgroup
 *    /sys/fs/cgroup/ctr-<cid> (CLONE_INTO_CGROUP) and new mount, PID, UTS,
 *    IPC and cgroup namespaces, with a pidfd: signals never reach a reused
 *    pid. An exec is cloned into the same cgroup and into the init's PID
 *    namespace, then joins its other namespaces itself.
 */
#ifndef KILN_AGENT_CTR_H
#define KILN_AGENT_CTR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"
#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/oci_seccomp.h"
#include "guest-init/sys/reaper.h"

#define CTR_CGROUP_ROOT "/sys/fs/cgroup"

enum ctr_state { CTR_CREATED, CTR_RUNNING, CTR_STOPPED };

struct ctr_stream {
	int fd;         /* the agent's end until a ctr_stdio takes it; -1 then */
	bool connected; /* a ctr_stdio took it */
	bool done;      /* its relay ended (an output: everything sent) */
	/* An output's bytes a lost connection did not take: the next
	 * ctr_stdio of the stream (after a restore) sends them first. */
	uint8_t *held;
	size_t held_len;
};

struct agent_ctrs;
struct ctr;

/* One process of a container: the init (exec 0) or a ctr_exec. */
struct ctr_proc {
	struct ctr *ctr;
	uint32_t exec;
	char prog[256]; /* args[0], for ctr_start's errors */
	enum ctr_state state;
	bool ready;    /* ctr_created was sent: the others may use it */
	bool starting; /* a ctr_start is under way */
	bool waited;   /* an exec > 0 whose exit was told: it goes once unused */
	bool terminal;
	pid_t pid;
	int pidfd;
	int status; /* wait status, once stopped */
	struct reaper_child rc;
	int start_w;  /* a byte: execve */
	int report_r; /* the child's oci_report, EOF at its execve */
	int master;   /* the terminal's master, or -1 */
	int stop[2];  /* readable: its relays stop (ctr_delete, or told exit) */
	struct ctr_stream io[AGENT_CTR_STREAMS];
	unsigned refs; /* relays and waiters using this exec */
};

struct ctr {
	char cid[AGENT_CID_MAX + 1];
	struct agent_ctrs *tab;
	bool deleting;
	int cgroup;   /* its guest cgroup directory */
	int root;     /* the root share, for syncfs */
	bool beneath; /* its root is a directory beneath the share (a pod's container) */
	struct ctr_proc init;
	struct ctr_proc *exec[AGENT_CTR_EXECS_MAX]; /* the others, by slot */
	unsigned refs;                              /* connections using any of its execs */
	struct oci_seccomp seccomp; /* the filter of its processes, execs too (none: len 0) */
};

struct agent_ctrs {
	/* Where the shares are looked up and the containers' cgroups made:
	 * /proc/self/mountinfo and CTR_CGROUP_ROOT; tests point them at a
	 * fake table and a cgroup2 mount of their own. */
	const char *mountinfo;
	const char *cgroup_root;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a container stopped, a relay ended, a ref dropped */
	struct reaper *reaper;
	const struct rlimit *nofile;
	struct ctr *slot[AGENT_MAX_CONTAINERS];
};

void agent_ctrs_init(struct agent_ctrs *t, struct reaper *r, const struct rlimit *nofile);

/* The handlers (agent.c's dispatch table); they use a->ctrs. */
struct agent;
void agent_ctr_create(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_stdio(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_start(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_wait(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_signal(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_resize(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_update(struct agent *a, struct agent_conn *c, struct agent_msg *m);
/* The container's cgroup's pids.max: max, 0 "max" (none); the pids
 * controller handed down from the guest's root first. 0, or -1 with
 * errno. */
int ctr_pids_max(struct ctr *k, uint64_t max);
void agent_ctr_delete(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_ctr_exec(struct agent *a, struct agent_conn *c, struct agent_msg *m);

/* Exec `exec` of the container `cid`, with a reference taken on both
 * (under the lock), or NULL with the error sent (not_found); and its
 * release, which frees an exec that was waited for and is now unused. */
struct ctr_proc *ctr_get(struct agent_ctrs *t, struct agent_conn *c, const char *what,
			 const char *cid, uint32_t exec);
void ctr_put(struct ctr_proc *p);
/* Under the lock: k's exec `exec` (ready or not, not told of its end);
 * NULL when it has none. */
struct ctr_proc *ctr_find_proc(struct ctr *k, uint32_t exec);

/* A process's fields set to "none" (descriptors -1), its exit hook set. */
void ctr_proc_init(struct ctr_proc *p, struct ctr *k, uint32_t exec);
/* Close what p holds (not free it). */
void ctr_proc_close(struct ctr_proc *p);
/* Under the lock: p ended and its exit was told, so its relays stop. */
void ctr_proc_told(struct ctr_proc *p);
/* "container \"c1\"" or "exec 2 of container \"c1\"", for messages. */
void ctr_proc_name(const struct ctr_proc *p, char *buf, size_t n);

/* The process's stdio (pipes, or a terminal with p->terminal set): its
 * ends in child[] (and *slave), the agent's in p->io[]. 0 or -1 (errno). */
int ctr_make_stdio(struct ctr_proc *p, const struct agent_ctr_process *r, int child[3], int *slave);

/* Claim cid for ctr_delete (once): no new user gets it, and its relays
 * stop. NULL when there is no such ready container or it is already being
 * deleted. ctr_teardown then KILLs what is left, waits for the init's reap
 * and frees it once no connection uses it. */
struct ctr *ctr_mark_deleting(struct agent_ctrs *t, const char *cid);
void ctr_teardown(struct agent_ctrs *t, struct ctr *k);

/* The program's failures in runc's words (engines match them). */
void ctr_exec_error(struct agent_err *err, const char *prog, int e);

/* ---- what ctr_create and ctr_exec share (agent_ctr.c) ---- */

struct oci_child;
struct oci_plan;
struct oci_report;

/*
 * Clone p's process into its container's cgroup with ns_flags (new
 * namespaces: the init) or, with join_pid (the init's pidfd) >= 0, into
 * the init's PID namespace (an exec), registered with the reaper; the
 * child runs oci_child_run(ch). The pid, or -1 with errno.
 */
pid_t ctr_clone(struct agent_ctrs *t, struct ctr_proc *p, uint64_t ns_flags, int join_pid,
		const struct oci_child *ch);
/* Read the child's report (report[1], start[0] closed first). 0: set up,
 * the pipes kept in p; 1: *rep says what failed; -1: it ended unsaid.
 * Unless 0, the child was KILLed and reaped. */
int ctr_child_wait(struct agent_ctrs *t, struct ctr_proc *p, int report[2], int start[2],
		   struct oci_report *rep);
/* Close the ends ctr_make_stdio and the pipes left (-1 stays -1). */
void ctr_close_child_ends(int child[3], int *slave, int report[2], int start[2]);
/* The child's report in words: c (ctr_create) or NULL (ctr_exec). */
void ctr_child_error(const struct oci_report *r, const struct oci_plan *plan,
		     const struct agent_ctr_create *c, const struct agent_ctr_process *proc,
		     struct agent_err *err);
/* err from errno: "<what>: <step> failed: <strerror>"; -1. */
int ctr_setup_error(struct agent_err *err, const char *what, const char *step);

/* agent_ctr_io.c: relay one stream between the connection and p
 * until it ends or p's stop is readable (the reference is the caller's).
 * true: the host's connection was lost (reset by a restore, or closed)
 * while the process's side was still open; the stream's unsent output is
 * in p->io[s].held, and the caller keeps fd for a later ctr_stdio. */
bool ctr_io_relay(struct ctr_proc *p, struct agent_conn *c, enum agent_ctr_stream s, int fd);

#endif

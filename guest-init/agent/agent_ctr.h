/*
 * agent_ctr: the agent's containers (docs/agent-protocol.md, 7.9): the
 * table by cid, ctr_create's clone into namespaces and a cgroup of the
 * container's own, the start pipe, the exit from the reaper, signals,
 * delete; agent_ctr_io.c relays a container's stdio (`ctr_stdio`).
 *
 * Contract:
 *  - One table per agent, under its own lock. The reaper's exit hook takes
 *    that lock, so no reaper call is ever made while holding it.
 *  - A container is freed only by ctr_delete, after its init was reaped
 *    and every connection that uses it (relays, waiters) let go of it.
 *  - The init is cloned with clone3 straight into its guest cgroup
 *    /sys/fs/cgroup/ctr-<cid> (CLONE_INTO_CGROUP) and new mount, PID, UTS,
 *    IPC and cgroup namespaces, with a pidfd: signals never reach a reused
 *    pid.
 */
#ifndef KILN_AGENT_CTR_H
#define KILN_AGENT_CTR_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"
#include "guest-init/agent/agent_conn.h"
#include "guest-init/sys/reaper.h"

#define CTR_CGROUP_ROOT "/sys/fs/cgroup"

enum ctr_state { CTR_CREATED, CTR_RUNNING, CTR_STOPPED };

struct ctr_stream {
	int fd;         /* the agent's end until a ctr_stdio takes it; -1 then */
	bool connected; /* a ctr_stdio took it */
	bool done;      /* its relay ended (an output: everything sent) */
};

struct agent_ctrs;

struct ctr {
	char cid[AGENT_CID_MAX + 1];
	char prog[256]; /* args[0], for ctr_start's errors */
	struct agent_ctrs *tab;
	enum ctr_state state;
	bool ready;    /* ctr_created was sent: the others may use it */
	bool starting; /* a ctr_start is under way */
	bool deleting;
	bool terminal;
	pid_t pid;
	int pidfd;
	int status; /* wait status, once stopped */
	struct reaper_child rc;
	int start_w;  /* a byte: execve */
	int report_r; /* the child's oci_report, EOF at its execve */
	int cgroup;   /* its guest cgroup directory */
	int root;     /* the root share, for syncfs */
	int master;   /* the terminal's master, or -1 */
	int stop[2];  /* readable: relays stop (ctr_delete) */
	struct ctr_stream io[AGENT_CTR_STREAMS];
	unsigned refs; /* relays and waiters using it */
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
void agent_ctr_delete(struct agent *a, struct agent_conn *c, struct agent_msg *m);

/* For agent_ctr_io.c: the container `cid`, with a reference taken (under
 * the lock), or NULL with the error sent; and its release. */
struct ctr *ctr_get(struct agent_ctrs *t, struct agent_conn *c, const char *what, const char *cid,
		    uint32_t exec);
void ctr_put(struct ctr *k);

/* Claim cid for ctr_delete (once): no new user gets it, and its relays
 * stop. NULL when there is no such ready container or it is already being
 * deleted. ctr_teardown then KILLs what is left, waits for the init's reap
 * and frees it once no connection uses it. */
struct ctr *ctr_mark_deleting(struct agent_ctrs *t, const char *cid);
void ctr_teardown(struct agent_ctrs *t, struct ctr *k);

/* The program's failures in runc's words (engines match them). */
void ctr_exec_error(struct agent_err *err, const char *prog, int e);

/* agent_ctr_io.c: relay one stream between the connection and k's
 * process until it ends (the reference is the caller's). */
void ctr_io_relay(struct ctr *k, struct agent_conn *c, enum agent_ctr_stream s, int fd);

#endif

/*
 * rt_shim_int: what the shim's two files share (rt_shim.c: setup, the
 * container's life and end; rt_shim_boot.c: the container's own VM, booted
 * or resumed). Private to them; the shim's contract is rt_shim.h.
 */
#ifndef KILN_RT_SHIM_INT_H
#define KILN_RT_SHIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "api/agent-client/agent_client.h"
#include "api/runtime/rt_exit.h"
#include "api/runtime/rt_log.h"
#include "api/runtime/rt_net.h"
#include "api/runtime/rt_shim.h"
#include "lib/base/capped_log.h"
#include "lib/base/err.h"
#include "lib/base/fd_relay.h"

#define PUMP_BUF (64u * 1024)
#define KILL_AGENT_MS 2000 /* kill 9: the agent's answer, then the VM itself */
/* Each agent call once the container runs: well inside a command's
 * RT_SHIM_CALL_MS, so a guest that does not answer costs one command a
 * failure, never the shim its loop for long. */
#define LOOP_AGENT_MS 5000
/* A KILL the agent took: the exit must follow within this, or the VM goes. */
#define KILL_EXIT_MS 10000

/* The pumps, the container's output first (drained at the end alone):
 * stdout, stderr, stdin; with a terminal, its output and its input. */
#define NPUMPS 3
/* kiln-vmm's shares: the rootfs, the read-only and the writable binds,
 * a pod sandbox's pod/ */
#define NSHARES 4
/* restore: how long a stream may still be held by its reset connection */
#define RESTORE_STREAM_MS 10000

struct shim {
	const struct rt_shim_args *a;
	struct agent_client ac;
	const char *cid;
	uint32_t exec; /* 0: the container's shim; else an exec shim's process */
	bool member;   /* a pod's further container: the sandbox's VM, ctr_delete at the end */
	bool made;     /* member: ctr_create was answered */
	int vmm_pid;
	bool vmm_reaped;
	char vmm_end[64];
	int sfd, lfd;
	struct capped_log vlog; /* kiln-vmm's stderr */
	struct agent_client_ctr_wait *wait;
	struct fd_pump pump[NPUMPS];
	uint8_t buf[NPUMPS][PUMP_BUF];
	size_t npump, nout; /* pumps in use; the first nout are output */
	int tty;            /* the host pty's slave (with a terminal), -1: none */
	int shares[NSHARES];
	struct rt_net net; /* the container's network namespace and its TAP */
	int home_netns;    /* the runtime's, when the shim made the container's: -1 */
	int warm_lock;     /* the warm template resumed (held shared until the agent answers), -1 */
	bool warm_failed;  /* it could not be resumed: boot */
	char warm[RT_PATH_MAX]; /* that template's directory, "": a cold boot */
	bool started;
	bool killed;      /* kill 9 went to the VM itself */
	int64_t kill_due; /* mono ms: a taken KILL's exit is due, 0: none */
	bool ended;
	struct rt_exit x;
};

/* A line in --log (when the engine gave one). */
void rt_shim_log(const struct shim *s, enum rt_log_level l, const char *msg);

/* An agent's failure as e, under step. */
int rt_shim_agent_fail(const struct agent_client_err *ae, const char *step, struct err *e);

/* The jail directory (made, for the container's own VM) and its vsock and
 * control sockets' paths (each RT_PATH_MAX); the agent client on them. */
int rt_shim_vm_paths(struct shim *s, char *jail, char *vsock, char *control, struct err *e);

/*
 * The container's own VM: kiln-vmm started (resuming a warm template
 * when it can: rt_warm.h), in the container's cgroup, its agent
 * answering, the guest's clock set and its random pool reseeded.
 */
int rt_shim_vm_boot(struct shim *s, struct err *e);

#endif

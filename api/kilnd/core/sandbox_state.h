/*
 * sandbox_state: a sandbox's lifecycle states and the transitions between
 * them (docs/api.md, "Sandbox states").
 *
 * Contract: pure. Every change of a sandbox's state goes through
 * sandbox_transition(), so a request that does not fit the state (stop a
 * stopped sandbox, exec in a booting one) is refused with wrong_state
 * (409) and one message, instead of racing with whatever owns the
 * sandbox. Transient states (booting, stopping, deleting, hibernating)
 * belong to the one request or thread that entered them; only it or the
 * VMM's exit moves the sandbox on. An owner that must land in a state the
 * table does not reach in one step (a hibernation that failed on a paused
 * sandbox: hibernating → running → paused) takes the steps under one hold
 * of the registry lock, so nobody sees the state in between.
 */
#ifndef KILN_SANDBOX_STATE_H
#define KILN_SANDBOX_STATE_H

#include <stdbool.h>

#include "api/kilnd/core/api_error.h"

enum sandbox_state {
	SANDBOX_BOOTING,
	SANDBOX_RUNNING,
	SANDBOX_PAUSED, /* the VMM runs, its vCPUs and devices are stopped */
	SANDBOX_STOPPING,
	SANDBOX_STOPPED,
	SANDBOX_CRASHED,
	SANDBOX_DELETING,
	SANDBOX_HIBERNATING, /* snapshot into <dir>/hibernate, then the VMM is killed */
	SANDBOX_HIBERNATED,  /* no VMM; the snapshot waits for a wake */
	SANDBOX_STATE_COUNT
};

enum sandbox_event {
	SANDBOX_EV_START,          /* start request: boot again (from hibernated: wake) */
	SANDBOX_EV_BOOT_OK,        /* the agent answered */
	SANDBOX_EV_BOOT_FAIL,      /* the VMM exited or the agent never answered while booting */
	SANDBOX_EV_STOP,           /* stop request, or the sandbox's timeout */
	SANDBOX_EV_DELETE,         /* delete request */
	SANDBOX_EV_VMM_CLEAN,      /* the VMM exited with status 0 (guest reset/poweroff) */
	SANDBOX_EV_VMM_FAIL,       /* the VMM exited otherwise (status, signal) */
	SANDBOX_EV_STOPPED,        /* a stop finished: the VMM is gone */
	SANDBOX_EV_PAUSE,          /* pause request */
	SANDBOX_EV_RESUME,         /* resume request */
	SANDBOX_EV_CHECKPOINT,     /* checkpoint request: the state stays */
	SANDBOX_EV_HIBERNATE,      /* hibernate request, or the idle timeout */
	SANDBOX_EV_HIBERNATED,     /* the snapshot is written and the VMM gone */
	SANDBOX_EV_HIBERNATE_FAIL, /* the snapshot failed: the VM runs on */
	SANDBOX_EV_RESTORE,        /* restore a checkpoint in place: boot from it */
	SANDBOX_EV_COUNT
};

/* "booting", ...; NULL when out of range. */
const char *sandbox_state_name(enum sandbox_state s);
/* The state of a name; -1 when it is none. */
int sandbox_state_parse(const char *name);
const char *sandbox_event_name(enum sandbox_event ev);

/*
 * The state `ev` leads to from `from`. 0 and *to set; -1 with e set to
 * wrong_state (saying what the state allows) when the event does not
 * apply. A VMM exit during booting/stopping/deleting/hibernating leaves
 * the state to the request that owns it (*to == from).
 */
int sandbox_transition(enum sandbox_state from, enum sandbox_event ev, enum sandbox_state *to,
		       const char *id, struct api_err *e);

/* exec and file transfers need a running agent. */
bool sandbox_state_serves_agent(enum sandbox_state s);

#endif

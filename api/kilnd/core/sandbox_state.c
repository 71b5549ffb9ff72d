/* Sandbox lifecycle transitions; see sandbox_state.h. */
#include "api/kilnd/core/sandbox_state.h"

#include <string.h>

static const char *const state_names[SANDBOX_STATE_COUNT] = {
	[SANDBOX_BOOTING] = "booting",       [SANDBOX_RUNNING] = "running",
	[SANDBOX_PAUSED] = "paused",         [SANDBOX_STOPPING] = "stopping",
	[SANDBOX_STOPPED] = "stopped",       [SANDBOX_CRASHED] = "crashed",
	[SANDBOX_DELETING] = "deleting",     [SANDBOX_HIBERNATING] = "hibernating",
	[SANDBOX_HIBERNATED] = "hibernated",
};

static const char *const event_names[SANDBOX_EV_COUNT] = {
	[SANDBOX_EV_START] = "start",           [SANDBOX_EV_BOOT_OK] = "boot_ok",
	[SANDBOX_EV_BOOT_FAIL] = "boot_fail",   [SANDBOX_EV_STOP] = "stop",
	[SANDBOX_EV_DELETE] = "delete",         [SANDBOX_EV_VMM_CLEAN] = "vmm_clean_exit",
	[SANDBOX_EV_VMM_FAIL] = "vmm_failed",   [SANDBOX_EV_STOPPED] = "stopped",
	[SANDBOX_EV_PAUSE] = "pause",           [SANDBOX_EV_RESUME] = "resume",
	[SANDBOX_EV_CHECKPOINT] = "checkpoint", [SANDBOX_EV_HIBERNATE] = "hibernate",
	[SANDBOX_EV_HIBERNATED] = "hibernated", [SANDBOX_EV_HIBERNATE_FAIL] = "hibernate_failed",
	[SANDBOX_EV_RESTORE] = "restore",
};

/* The allowed transitions; every other pair is refused. */
static const struct {
	unsigned char from, ev, to;
} allowed[] = {
	{ SANDBOX_BOOTING, SANDBOX_EV_BOOT_OK, SANDBOX_RUNNING },
	{ SANDBOX_BOOTING, SANDBOX_EV_BOOT_FAIL, SANDBOX_CRASHED },
	{ SANDBOX_BOOTING, SANDBOX_EV_VMM_CLEAN, SANDBOX_BOOTING },
	{ SANDBOX_BOOTING, SANDBOX_EV_VMM_FAIL, SANDBOX_BOOTING },

	{ SANDBOX_RUNNING, SANDBOX_EV_STOP, SANDBOX_STOPPING },
	{ SANDBOX_RUNNING, SANDBOX_EV_DELETE, SANDBOX_DELETING },
	{ SANDBOX_RUNNING, SANDBOX_EV_VMM_CLEAN, SANDBOX_STOPPED },
	{ SANDBOX_RUNNING, SANDBOX_EV_VMM_FAIL, SANDBOX_CRASHED },
	{ SANDBOX_RUNNING, SANDBOX_EV_PAUSE, SANDBOX_PAUSED },
	{ SANDBOX_RUNNING, SANDBOX_EV_CHECKPOINT, SANDBOX_RUNNING },
	{ SANDBOX_RUNNING, SANDBOX_EV_HIBERNATE, SANDBOX_HIBERNATING },
	{ SANDBOX_RUNNING, SANDBOX_EV_RESTORE, SANDBOX_BOOTING },

	{ SANDBOX_PAUSED, SANDBOX_EV_STOP, SANDBOX_STOPPING },
	{ SANDBOX_PAUSED, SANDBOX_EV_DELETE, SANDBOX_DELETING },
	{ SANDBOX_PAUSED, SANDBOX_EV_VMM_CLEAN, SANDBOX_STOPPED },
	{ SANDBOX_PAUSED, SANDBOX_EV_VMM_FAIL, SANDBOX_CRASHED },
	{ SANDBOX_PAUSED, SANDBOX_EV_RESUME, SANDBOX_RUNNING },
	{ SANDBOX_PAUSED, SANDBOX_EV_CHECKPOINT, SANDBOX_PAUSED },
	{ SANDBOX_PAUSED, SANDBOX_EV_HIBERNATE, SANDBOX_HIBERNATING },
	{ SANDBOX_PAUSED, SANDBOX_EV_RESTORE, SANDBOX_BOOTING },

	{ SANDBOX_STOPPING, SANDBOX_EV_VMM_CLEAN, SANDBOX_STOPPING },
	{ SANDBOX_STOPPING, SANDBOX_EV_VMM_FAIL, SANDBOX_STOPPING },
	{ SANDBOX_STOPPING, SANDBOX_EV_STOPPED, SANDBOX_STOPPED },

	{ SANDBOX_STOPPED, SANDBOX_EV_START, SANDBOX_BOOTING },
	{ SANDBOX_STOPPED, SANDBOX_EV_DELETE, SANDBOX_DELETING },
	{ SANDBOX_STOPPED, SANDBOX_EV_RESTORE, SANDBOX_BOOTING },

	{ SANDBOX_CRASHED, SANDBOX_EV_START, SANDBOX_BOOTING },
	{ SANDBOX_CRASHED, SANDBOX_EV_DELETE, SANDBOX_DELETING },
	{ SANDBOX_CRASHED, SANDBOX_EV_RESTORE, SANDBOX_BOOTING },

	{ SANDBOX_DELETING, SANDBOX_EV_VMM_CLEAN, SANDBOX_DELETING },
	{ SANDBOX_DELETING, SANDBOX_EV_VMM_FAIL, SANDBOX_DELETING },
	{ SANDBOX_DELETING, SANDBOX_EV_STOPPED, SANDBOX_DELETING },

	/* The owner decides after a VMM exit: the snapshot may be complete. */
	{ SANDBOX_HIBERNATING, SANDBOX_EV_VMM_CLEAN, SANDBOX_HIBERNATING },
	{ SANDBOX_HIBERNATING, SANDBOX_EV_VMM_FAIL, SANDBOX_HIBERNATING },
	{ SANDBOX_HIBERNATING, SANDBOX_EV_HIBERNATED, SANDBOX_HIBERNATED },
	{ SANDBOX_HIBERNATING, SANDBOX_EV_HIBERNATE_FAIL, SANDBOX_RUNNING },

	/* start and wake: restore the snapshot (or boot, when it is unusable). */
	{ SANDBOX_HIBERNATED, SANDBOX_EV_START, SANDBOX_BOOTING },
	{ SANDBOX_HIBERNATED, SANDBOX_EV_DELETE, SANDBOX_DELETING },
	{ SANDBOX_HIBERNATED, SANDBOX_EV_RESTORE, SANDBOX_BOOTING },
};

/* What each state lets a client do, for the 409 message. */
static const char *const hints[SANDBOX_STATE_COUNT] = {
	[SANDBOX_BOOTING] = "wait until it is running",
	[SANDBOX_RUNNING] = "it is running already",
	[SANDBOX_PAUSED] = "resume it first (POST .../resume)",
	[SANDBOX_STOPPING] = "wait until it is stopped",
	[SANDBOX_STOPPED] = "start it first",
	[SANDBOX_CRASHED] = "start it again or delete it",
	[SANDBOX_DELETING] = "it is being deleted",
	[SANDBOX_HIBERNATING] = "wait until it is hibernated",
	[SANDBOX_HIBERNATED] = "wake it first (POST .../wake), or delete it",
};

const char *sandbox_state_name(enum sandbox_state s)
{
	return (unsigned)s < SANDBOX_STATE_COUNT ? state_names[s] : NULL;
}

int sandbox_state_parse(const char *name)
{
	for (int i = 0; i < SANDBOX_STATE_COUNT; i++)
		if (strcmp(state_names[i], name) == 0)
			return i;
	return -1;
}

const char *sandbox_event_name(enum sandbox_event ev)
{
	return (unsigned)ev < SANDBOX_EV_COUNT ? event_names[ev] : NULL;
}

int sandbox_transition(enum sandbox_state from, enum sandbox_event ev, enum sandbox_state *to,
		       const char *id, struct api_err *e)
{
	const char *hint;

	if ((unsigned)from >= SANDBOX_STATE_COUNT || (unsigned)ev >= SANDBOX_EV_COUNT) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: bad state %d or event %d", id,
			    (int)from, (int)ev);
		return -1;
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		if (allowed[i].from == from && allowed[i].ev == ev) {
			*to = (enum sandbox_state)allowed[i].to;
			return 0;
		}
	}
	hint = hints[from];
	if (from == SANDBOX_PAUSED && ev == SANDBOX_EV_PAUSE)
		hint = "it is paused already";
	else if (from == SANDBOX_HIBERNATED && ev == SANDBOX_EV_HIBERNATE)
		hint = "it is hibernated already";
	api_err_set(e, API_E_WRONG_STATE, "sandbox %s is %s, which does not allow %s; %s", id,
		    state_names[from], event_names[ev], hint);
	return -1;
}

bool sandbox_state_serves_agent(enum sandbox_state s)
{
	return s == SANDBOX_RUNNING;
}

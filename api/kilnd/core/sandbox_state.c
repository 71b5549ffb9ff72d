/* Sandbox lifecycle transitions; see sandbox_state.h. */
#include "api/kilnd/core/sandbox_state.h"

#include <string.h>

static const char *const state_names[SB_STATE_COUNT] = {
	[SB_BOOTING] = "booting",   [SB_RUNNING] = "running",         [SB_PAUSED] = "paused",
	[SB_STOPPING] = "stopping", [SB_STOPPED] = "stopped",         [SB_CRASHED] = "crashed",
	[SB_DELETING] = "deleting", [SB_HIBERNATING] = "hibernating", [SB_HIBERNATED] = "hibernated",
};

static const char *const event_names[SB_EV_COUNT] = {
	[SB_EV_START] = "start",
	[SB_EV_BOOT_OK] = "boot_ok",
	[SB_EV_BOOT_FAIL] = "boot_fail",
	[SB_EV_STOP] = "stop",
	[SB_EV_DELETE] = "delete",
	[SB_EV_VMM_CLEAN] = "vmm_clean_exit",
	[SB_EV_VMM_FAIL] = "vmm_failed",
	[SB_EV_STOPPED] = "stopped",
	[SB_EV_PAUSE] = "pause",
	[SB_EV_RESUME] = "resume",
	[SB_EV_CHECKPOINT] = "checkpoint",
	[SB_EV_HIBERNATE] = "hibernate",
	[SB_EV_HIBERNATED] = "hibernated",
	[SB_EV_HIBERNATE_FAIL] = "hibernate_failed",
	[SB_EV_RESTORE] = "restore",
};

/* The allowed transitions; every other pair is refused. */
static const struct {
	unsigned char from, ev, to;
} allowed[] = {
	{ SB_BOOTING, SB_EV_BOOT_OK, SB_RUNNING },
	{ SB_BOOTING, SB_EV_BOOT_FAIL, SB_CRASHED },
	{ SB_BOOTING, SB_EV_VMM_CLEAN, SB_BOOTING },
	{ SB_BOOTING, SB_EV_VMM_FAIL, SB_BOOTING },

	{ SB_RUNNING, SB_EV_STOP, SB_STOPPING },
	{ SB_RUNNING, SB_EV_DELETE, SB_DELETING },
	{ SB_RUNNING, SB_EV_VMM_CLEAN, SB_STOPPED },
	{ SB_RUNNING, SB_EV_VMM_FAIL, SB_CRASHED },
	{ SB_RUNNING, SB_EV_PAUSE, SB_PAUSED },
	{ SB_RUNNING, SB_EV_CHECKPOINT, SB_RUNNING },
	{ SB_RUNNING, SB_EV_HIBERNATE, SB_HIBERNATING },
	{ SB_RUNNING, SB_EV_RESTORE, SB_BOOTING },

	{ SB_PAUSED, SB_EV_STOP, SB_STOPPING },
	{ SB_PAUSED, SB_EV_DELETE, SB_DELETING },
	{ SB_PAUSED, SB_EV_VMM_CLEAN, SB_STOPPED },
	{ SB_PAUSED, SB_EV_VMM_FAIL, SB_CRASHED },
	{ SB_PAUSED, SB_EV_RESUME, SB_RUNNING },
	{ SB_PAUSED, SB_EV_CHECKPOINT, SB_PAUSED },
	{ SB_PAUSED, SB_EV_HIBERNATE, SB_HIBERNATING },
	{ SB_PAUSED, SB_EV_RESTORE, SB_BOOTING },

	{ SB_STOPPING, SB_EV_VMM_CLEAN, SB_STOPPING },
	{ SB_STOPPING, SB_EV_VMM_FAIL, SB_STOPPING },
	{ SB_STOPPING, SB_EV_STOPPED, SB_STOPPED },

	{ SB_STOPPED, SB_EV_START, SB_BOOTING },
	{ SB_STOPPED, SB_EV_DELETE, SB_DELETING },
	{ SB_STOPPED, SB_EV_RESTORE, SB_BOOTING },

	{ SB_CRASHED, SB_EV_START, SB_BOOTING },
	{ SB_CRASHED, SB_EV_DELETE, SB_DELETING },
	{ SB_CRASHED, SB_EV_RESTORE, SB_BOOTING },

	{ SB_DELETING, SB_EV_VMM_CLEAN, SB_DELETING },
	{ SB_DELETING, SB_EV_VMM_FAIL, SB_DELETING },
	{ SB_DELETING, SB_EV_STOPPED, SB_DELETING },

	/* The owner decides after a VMM exit: the snapshot may be complete. */
	{ SB_HIBERNATING, SB_EV_VMM_CLEAN, SB_HIBERNATING },
	{ SB_HIBERNATING, SB_EV_VMM_FAIL, SB_HIBERNATING },
	{ SB_HIBERNATING, SB_EV_HIBERNATED, SB_HIBERNATED },
	{ SB_HIBERNATING, SB_EV_HIBERNATE_FAIL, SB_RUNNING },

	/* start and wake: restore the snapshot (or boot, when it is unusable). */
	{ SB_HIBERNATED, SB_EV_START, SB_BOOTING },
	{ SB_HIBERNATED, SB_EV_DELETE, SB_DELETING },
	{ SB_HIBERNATED, SB_EV_RESTORE, SB_BOOTING },
};

/* What each state lets a client do, for the 409 message. */
static const char *const hints[SB_STATE_COUNT] = {
	[SB_BOOTING] = "wait until it is running",
	[SB_RUNNING] = "it is running already",
	[SB_PAUSED] = "resume it first (POST .../resume)",
	[SB_STOPPING] = "wait until it is stopped",
	[SB_STOPPED] = "start it first",
	[SB_CRASHED] = "start it again or delete it",
	[SB_DELETING] = "it is being deleted",
	[SB_HIBERNATING] = "wait until it is hibernated",
	[SB_HIBERNATED] = "wake it first (POST .../wake), or delete it",
};

const char *sandbox_state_name(enum sandbox_state s)
{
	return (unsigned)s < SB_STATE_COUNT ? state_names[s] : NULL;
}

int sandbox_state_parse(const char *name)
{
	for (int i = 0; i < SB_STATE_COUNT; i++)
		if (strcmp(state_names[i], name) == 0)
			return i;
	return -1;
}

const char *sandbox_event_name(enum sandbox_event ev)
{
	return (unsigned)ev < SB_EV_COUNT ? event_names[ev] : NULL;
}

int sandbox_transition(enum sandbox_state from, enum sandbox_event ev, enum sandbox_state *to,
		       const char *id, struct api_err *e)
{
	const char *hint;

	if ((unsigned)from >= SB_STATE_COUNT || (unsigned)ev >= SB_EV_COUNT) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: bad state %d or event %d", id, (int)from, (int)ev);
		return -1;
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		if (allowed[i].from == from && allowed[i].ev == ev) {
			*to = (enum sandbox_state)allowed[i].to;
			return 0;
		}
	}
	hint = hints[from];
	if (from == SB_PAUSED && ev == SB_EV_PAUSE)
		hint = "it is paused already";
	else if (from == SB_HIBERNATED && ev == SB_EV_HIBERNATE)
		hint = "it is hibernated already";
	api_err_set(e, API_E_WRONG_STATE, "sandbox %s is %s, which does not allow %s; %s", id, state_names[from],
		    event_names[ev], hint);
	return -1;
}

bool sandbox_state_serves_agent(enum sandbox_state s)
{
	return s == SB_RUNNING;
}

/* Sandbox lifecycle transitions; see sandbox_state.h. */
#include "sandbox_state.h"

#include <string.h>

static const char *const state_names[SB_STATE_COUNT] = {
	[SB_BOOTING] = "booting", [SB_RUNNING] = "running", [SB_STOPPING] = "stopping",
	[SB_STOPPED] = "stopped", [SB_CRASHED] = "crashed", [SB_DELETING] = "deleting",
};

static const char *const event_names[SB_EV_COUNT] = {
	[SB_EV_START] = "start",         [SB_EV_BOOT_OK] = "boot_ok", [SB_EV_BOOT_FAIL] = "boot_fail",
	[SB_EV_STOP] = "stop",           [SB_EV_DELETE] = "delete",   [SB_EV_VMM_CLEAN] = "vmm_clean_exit",
	[SB_EV_VMM_FAIL] = "vmm_failed", [SB_EV_STOPPED] = "stopped",
};

/* -1: not allowed. Rows: from; columns: event. */
#define NO (-1)
static const signed char table[SB_STATE_COUNT][SB_EV_COUNT] = {
	[SB_BOOTING] = { [SB_EV_START] = NO, [SB_EV_BOOT_OK] = SB_RUNNING, [SB_EV_BOOT_FAIL] = SB_CRASHED,
			 [SB_EV_STOP] = NO, [SB_EV_DELETE] = NO, [SB_EV_VMM_CLEAN] = SB_BOOTING,
			 [SB_EV_VMM_FAIL] = SB_BOOTING, [SB_EV_STOPPED] = NO },
	[SB_RUNNING] = { [SB_EV_START] = NO, [SB_EV_BOOT_OK] = NO, [SB_EV_BOOT_FAIL] = NO,
			 [SB_EV_STOP] = SB_STOPPING, [SB_EV_DELETE] = SB_DELETING,
			 [SB_EV_VMM_CLEAN] = SB_STOPPED, [SB_EV_VMM_FAIL] = SB_CRASHED, [SB_EV_STOPPED] = NO },
	[SB_STOPPING] = { [SB_EV_START] = NO, [SB_EV_BOOT_OK] = NO, [SB_EV_BOOT_FAIL] = NO,
			  [SB_EV_STOP] = NO, [SB_EV_DELETE] = NO, [SB_EV_VMM_CLEAN] = SB_STOPPING,
			  [SB_EV_VMM_FAIL] = SB_STOPPING, [SB_EV_STOPPED] = SB_STOPPED },
	[SB_STOPPED] = { [SB_EV_START] = SB_BOOTING, [SB_EV_BOOT_OK] = NO, [SB_EV_BOOT_FAIL] = NO,
			 [SB_EV_STOP] = NO, [SB_EV_DELETE] = SB_DELETING, [SB_EV_VMM_CLEAN] = NO,
			 [SB_EV_VMM_FAIL] = NO, [SB_EV_STOPPED] = NO },
	[SB_CRASHED] = { [SB_EV_START] = SB_BOOTING, [SB_EV_BOOT_OK] = NO, [SB_EV_BOOT_FAIL] = NO,
			 [SB_EV_STOP] = NO, [SB_EV_DELETE] = SB_DELETING, [SB_EV_VMM_CLEAN] = NO,
			 [SB_EV_VMM_FAIL] = NO, [SB_EV_STOPPED] = NO },
	[SB_DELETING] = { [SB_EV_START] = NO, [SB_EV_BOOT_OK] = NO, [SB_EV_BOOT_FAIL] = NO,
			  [SB_EV_STOP] = NO, [SB_EV_DELETE] = NO, [SB_EV_VMM_CLEAN] = SB_DELETING,
			  [SB_EV_VMM_FAIL] = SB_DELETING, [SB_EV_STOPPED] = SB_DELETING },
};

/* What each state lets a client do, for the 409 message. */
static const char *const hints[SB_STATE_COUNT] = {
	[SB_BOOTING] = "wait until it is running",
	[SB_RUNNING] = "stop it first",
	[SB_STOPPING] = "wait until it is stopped",
	[SB_STOPPED] = "start it first",
	[SB_CRASHED] = "start it again or delete it",
	[SB_DELETING] = "it is being deleted",
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
	if ((unsigned)from >= SB_STATE_COUNT || (unsigned)ev >= SB_EV_COUNT) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: bad state %d or event %d", id, (int)from, (int)ev);
		return -1;
	}
	if (table[from][ev] == NO) {
		api_err_set(e, API_E_WRONG_STATE, "sandbox %s is %s, which does not allow %s; %s", id,
			    state_names[from], event_names[ev], hints[from]);
		return -1;
	}
	*to = (enum sandbox_state)table[from][ev];
	return 0;
}

bool sandbox_state_serves_agent(enum sandbox_state s)
{
	return s == SB_RUNNING;
}

/* What a restarted kilnd does with each sandbox's VMM; see reattach.h. */
#include "api/kilnd/supervision/reattach.h"

#include <errno.h>

/* The states a VMM runs in (deleting records are removed before this). */
static bool has_vmm(enum sandbox_state s)
{
	return s == SANDBOX_RUNNING || s == SANDBOX_PAUSED || s == SANDBOX_BOOTING ||
		s == SANDBOX_STOPPING || s == SANDBOX_HIBERNATING;
}

bool reattach_should_try(enum sandbox_state state, int pid, uint64_t vmm_start)
{
	/* Start time 0 is a record from before vmm_start: nothing to check a pid against. */
	return has_vmm(state) && pid > 0 && vmm_start > 0;
}

enum reattach_fate reattach_decide(const struct reattach_seen *s)
{
	if (!has_vmm(s->state))
		return REATTACH_NONE;
	if (!reattach_should_try(s->state, s->pid, s->vmm_start))
		return REATTACH_LOST;
	if (s->attach == 0)
		return s->state == SANDBOX_RUNNING || s->state == SANDBOX_PAUSED ? REATTACH_KEEP
										 : REATTACH_KILL;
	/* Only "nobody answers" means the VMM ended: a keeper answering for
	 * another VMM, or in another protocol, says nothing about ours. */
	if (s->attach == -ESRCH && s->exit_recorded)
		return REATTACH_RECORDED;
	return REATTACH_LOST;
}

const char *reattach_fate_name(enum reattach_fate f)
{
	switch (f) {
	case REATTACH_KEEP:
		return "keep";
	case REATTACH_KILL:
		return "kill";
	case REATTACH_RECORDED:
		return "recorded";
	case REATTACH_LOST:
		return "lost";
	default:
		return "none";
	}
}

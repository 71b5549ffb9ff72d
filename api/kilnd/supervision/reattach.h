/*
 * reattach: what kilnd's start does with a sandbox whose record says a
 * VMM ran (docs/architecture.md, "Sandboxes across kilnd restarts").
 *
 * Contract: pure. The caller tries vmm_reattach() only where
 * reattach_should_try() says so, then asks reattach_decide() with what it
 * found; nothing else decides. Every input but the state comes from files
 * and processes kilnd does not control (meta.json's pid and vmm_start, a
 * keeper's answer, vmm.exit), so each combination has one safe answer:
 * a VMM is reattached only when a keeper vouched for exactly the
 * recorded pid and start time and the live process has that start time
 * (vmm_reattach checked both: attach 0), and it is signalled only then.
 */
#ifndef KILN_REATTACH_H
#define KILN_REATTACH_H

#include <stdbool.h>
#include <stdint.h>

#include "api/kilnd/core/sandbox_state.h"

enum reattach_fate {
	REATTACH_NONE, /* the record has no VMM (stopped, crashed, hibernated): as it is */
	REATTACH_KEEP, /* running or paused, verified: supervise it again */
	REATTACH_KILL, /* verified, but its state's owner (a boot, stop, hibernation) is gone: kill it,
			      then crashed (kilnd_restart) */
	REATTACH_RECORDED, /* it ended while no kilnd ran: vmm.exit says how (stopped or crashed) */
	REATTACH_LOST,     /* nothing to trust: crashed (kilnd_restart), no process touched */
};

struct reattach_seen {
	enum sandbox_state state; /* from meta.json */
	int pid;                  /* meta.json's pid (0: none) */
	uint64_t vmm_start;       /* meta.json's vmm_start (0: none) */
	int attach;               /* vmm_reattach's result: 0, -ESRCH, -ESTALE, -EPROTO, ... */
	bool exit_recorded;       /* vmm.exit names this pid and start time (vmm_exit_load 0) */
};

/* Did a VMM run in this state, and does the record name it well enough to look for it? */
bool reattach_should_try(enum sandbox_state state, int pid, uint64_t vmm_start);

enum reattach_fate reattach_decide(const struct reattach_seen *s);

/* Its name, for the log: "keep", "kill", "recorded", "lost", "none". */
const char *reattach_fate_name(enum reattach_fate f);

#endif

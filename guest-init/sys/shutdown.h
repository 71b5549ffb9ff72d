/*
 * shutdown: how kiln-init ends the guest, after kiln.exec's command, for
 * kiln.poweroff, or for the agent's `shutdown` request.
 *
 * Contract: shutdown_run() marks `shutdown_requested`, sends SIGTERM to
 * every process, lets the reaper collect them for up to grace_ms (less
 * when all are gone), sends SIGKILL to what is left, syncs and resets
 * (reboot(RB_AUTOBOOT), which kiln-vmm turns into a clean exit 0). It never
 * returns. Reaping stays with the reaper thread: this only waits for it.
 * A second caller blocks on the lock until the reset.
 */
#ifndef KILN_INIT_SHUTDOWN_H
#define KILN_INIT_SHUTDOWN_H

#include <pthread.h>
#include <stdint.h>

#include "guest-init/sys/milestone.h"
#include "guest-init/sys/reaper.h"

struct shutdown {
	pthread_mutex_t lock;
	const struct milestone *ms;
	struct reaper *reaper;
};

void shutdown_init(struct shutdown *s, const struct milestone *ms, struct reaper *r);
void shutdown_run(struct shutdown *s, uint32_t grace_ms) __attribute__((noreturn));

#endif

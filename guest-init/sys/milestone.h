/*
 * milestone: the guest side of kiln-vmm's boot-timer port (the ABI is in
 * devices/pseudo/boot_timer.h and docs/architecture.md). The header is not named
 * boot_timer.h because the host's devices/pseudo/boot_timer.h is on the include path
 * of every build.
 *
 * Contract: milestone_init() asks for the port once, in the main thread
 * before any other thread exists, because ioperm() permission is per
 * thread and only threads created afterwards inherit it. Without the port
 * (not root, not under kiln-vmm) marks are silently dropped.
 */
#ifndef KILN_INIT_MILESTONE_H
#define KILN_INIT_MILESTONE_H

#include <stdbool.h>
#include <stdint.h>

#define MILESTONE_PORT 0x440
#define MILESTONE_PORT_LEN 8

enum {
	MS_INIT_STARTED = 1,
	MS_AGENT_READY = 2,
	MS_SHUTDOWN = 3,
};

struct milestone {
	bool have_port;
};

void milestone_init(struct milestone *m);
/* Mark `code` now, with the guest's CLOCK_BOOTTIME in µs. */
void milestone_mark(const struct milestone *m, uint8_t code);

#endif

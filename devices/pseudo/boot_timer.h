/*
 * boot_timer: the I/O port through which the guest marks boot milestones.
 *
 * Guest ABI (documented in docs/architecture.md):
 *   outl(value, BOOT_TIMER_PORT + 4)  guest clock in µs since its boot
 *                                     (CLOCK_BOOTTIME), attached to the
 *                                     next milestone
 *   outb(code, BOOT_TIMER_PORT)       milestone `code` happened now
 * Codes: 1 init_started, 2 agent_ready, 3 shutdown_requested; any other
 * code is recorded as "guest_<code>". When init_started carries the guest
 * clock, a derived "kernel_start" milestone (init time - guest uptime) is
 * added. The port is write-only; reads return zero.
 */
#ifndef KILN_BOOT_TIMER_H
#define KILN_BOOT_TIMER_H

#include <stdint.h>

#include "devices/pseudo/timeline.h"

#define BOOT_TIMER_PORT 0x440
#define BOOT_TIMER_LEN 8
/* Leave room in the timeline for the host's own milestones (vm_exit). */
#define BOOT_TIMER_MAX_MARKS (TIMELINE_MAX - 8)

enum {
	BOOT_MS_INIT_STARTED = 1,
	BOOT_MS_AGENT_READY = 2,
	BOOT_MS_SHUTDOWN = 3,
};

struct boot_timer {
	struct timeline *tl;
	uint32_t guest_us;
	int have_guest_us;
	int marks; /* guest milestones recorded, at most BOOT_TIMER_MAX_MARKS */
};

void boot_timer_init(struct boot_timer *bt, struct timeline *tl);
void boot_timer_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);

/* Name for a guest milestone code (into buf for unknown codes). */
const char *boot_timer_name(uint8_t code, char *buf, int len);

#endif

#include "devices/pseudo/boot_timer.h"

#include "lib/base/mono.h"

#include <stdio.h>
#include <string.h>

void boot_timer_init(struct boot_timer *bt, struct timeline *tl)
{
	memset(bt, 0, sizeof(*bt));
	bt->tl = tl;
}

const char *boot_timer_name(uint8_t code, char *buf, int len)
{
	switch (code) {
	case BOOT_MS_INIT_STARTED:
		return "init_started";
	case BOOT_MS_AGENT_READY:
		return "agent_ready";
	case BOOT_MS_SHUTDOWN:
		return "shutdown_requested";
	default:
		snprintf(buf, (size_t)len, "guest_%u", code);
		return buf;
	}
}

void boot_timer_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	struct boot_timer *bt = opaque;
	uint64_t now = mono_ns();
	char buf[16];

	if (!is_write) {
		memset(data, 0, size);
		return;
	}
	if (off == 4 && size == 4) {
		memcpy(&bt->guest_us, data, 4);
		bt->have_guest_us = 1;
		return;
	}
	if (off != 0 || size != 1 || data[0] == 0 || bt->marks >= BOOT_TIMER_MAX_MARKS)
		return;
	if (data[0] == BOOT_MS_INIT_STARTED && bt->have_guest_us) {
		uint64_t up = (uint64_t)bt->guest_us * 1000;

		/* A guest claiming to have run longer than the VMM is lying. */
		if (now > bt->tl->t0_ns && up < now - bt->tl->t0_ns &&
		    bt->marks + 1 < BOOT_TIMER_MAX_MARKS) {
			timeline_mark_at(bt->tl, "kernel_start", now - up, 1);
			bt->marks++;
		}
	}
	bt->have_guest_us = 0;
	timeline_mark_at(bt->tl, boot_timer_name(data[0], buf, sizeof(buf)), now, 0);
	bt->marks++;
}

#include "vmm/boot/cmdline.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cmdline_init(struct cmdline *c)
{
	memset(c, 0, sizeof(*c));
}

void cmdline_add(struct cmdline *c, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	if (c->overflow)
		return;
	if (c->len) {
		if (c->len + 1 >= sizeof(c->buf)) {
			c->overflow = 1;
			return;
		}
		c->buf[c->len++] = ' ';
	}
	room = sizeof(c->buf) - c->len;
	va_start(ap, fmt);
	n = vsnprintf(c->buf + c->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		c->overflow = 1;
		c->buf[c->len] = '\0';
		return;
	}
	c->len += (size_t)n;
}

int cmdline_has(const struct cmdline *c, const char *key)
{
	size_t k = strlen(key);
	const char *p = c->buf;

	while (*p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, k) == 0 && (p[k] == '=' || p[k] == ' ' || p[k] == '\0'))
			return 1;
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

void cmdline_defaults(struct cmdline *c, int console)
{
	/* reboot=k,f: the `f` (force) skips machine_shutdown() on the way to
	 * the reset, which would mask and clear every IOAPIC pin and stop the
	 * LAPICs of a VM about to end: ~330 of the ~860 MMIO exits of a
	 * minimal boot (bench/boot). Devices are still shut down (sync, disk
	 * flush) by kernel_restart(); only the CPU/APIC teardown is skipped. */
	cmdline_add(c, "reboot=k,f panic=-1 tsc=reliable no_timer_check");
	if (console)
		cmdline_add(c, "console=ttyS0");
	else
		cmdline_add(c, "8250.nr_uarts=0 quiet");
}

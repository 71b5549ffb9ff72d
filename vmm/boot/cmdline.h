/*
 * cmdline: assembling the guest kernel command line.
 *
 * Pure. Parameters are appended one at a time; a builder that ran out of
 * room stays failed, so one check at the end catches every overflow.
 */
#ifndef KILN_CMDLINE_H
#define KILN_CMDLINE_H

#include <stddef.h>

#define CMDLINE_CAP 4096

struct cmdline {
	char buf[CMDLINE_CAP];
	size_t len;
	int overflow;
};

void cmdline_init(struct cmdline *c);
/* Append one space-separated parameter (printf format). */
void cmdline_add(struct cmdline *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when a parameter with this key (`key` or `key=...`) is present. */
int cmdline_has(const struct cmdline *c, const char *key);

/*
 * kiln-vmm's defaults: reset through the keyboard controller (which the VMM
 * turns into a clean exit) without the guest's APIC teardown first (the VM
 * ends there), reboot at once on panic, trust the TSC, and
 * the console on ttyS0 only when it is wanted (no probing otherwise).
 * User parameters come last so they can override.
 */
void cmdline_defaults(struct cmdline *c, int console);

#endif

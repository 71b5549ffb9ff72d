/*
 * sh: run a shell command line for a test's setup (ip, sysctl, rm), the
 * one helper for it (egress_env.h, test_tcp_term_linux).
 */
#ifndef KILN_TEST_SH_H
#define KILN_TEST_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Run a shell command; 0 when it exited 0. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

#endif

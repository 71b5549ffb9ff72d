/*
 * error: a message for the user next to the -errno a function returns.
 *
 * Library functions that can fail for a reason the user must act on take a
 * `struct kiln_error *` and fill it with one line saying what failed and
 * what to do; the caller decides whether and how to print it.
 */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

#include <stddef.h>

struct kiln_error {
	char msg[256];
};

/* Format `e->msg` (when e is not NULL) and return -code (code is an errno). */
int kiln_errf(struct kiln_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

/*
 * err: a message for the user next to the -errno a function returns.
 *
 * Library functions that can fail for a reason the user must act on take a
 * `struct err *` and fill it with one line saying what failed and what to
 * do; the caller decides whether and how to print it (libkiln copies it
 * into the handle whose call failed).
 */
#ifndef KILN_ERR_H
#define KILN_ERR_H

#include <stddef.h>

struct err {
	char msg[256];
};

/* Format `e->msg` (when e is not NULL) and return -code (code is an errno). */
int err_set(struct err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

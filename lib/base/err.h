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

/*
 * The one convention for error structs: a struct named
 * <module>_err, its message in `msg`, ERR_MSG_MAX bytes on the host side
 * (enough for a path and what to do, and for one layer to prefix
 * another's message without cutting it), its setter <module>_err_set.
 * Each keeps its own typed code (an API or wire vocabulary): err (an
 * errno), net_rules_err, agent_client_err, api_err, and the CLI's
 * cli_fail (an exit status and kilnd's code). The one exception to the
 * size is the guest's agent_err, whose buffer is the protocol's
 * AGENT_ERR_MESSAGE_MAX (docs/agent-protocol.md).
 */
#define ERR_MSG_MAX 1024

struct err {
	char msg[ERR_MSG_MAX];
};

/* Format `e->msg` (when e is not NULL) and return -code (code is an errno). */
int err_set(struct err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

/*
 * cli_error: what the kiln CLI says when something fails, and the exit
 * status it says it with.
 *
 * Contract:
 *  - Pure: no I/O except cli_fail_print's one line to the given stream, no
 *    global state.
 *  - kilnd's {"error":{"code","message"}} becomes one line
 *    `kiln: <what>: <message> (<code>)`; the code decides the status, so a
 *    script can tell "no such sandbox" (4) from "kilnd said no" (1) from
 *    "kilnd is not there" (3).
 *  - Messages come from kilnd and, through it, from the guest: control
 *    characters are replaced before they reach a terminal, so a hostile
 *    guest cannot rewrite the user's screen through an error message.
 */
#ifndef KILN_CLI_ERROR_H
#define KILN_CLI_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "lib/base/err.h"

/* Exit statuses (kiln --help lists them). exec exits with the process's. */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_API = 1,         /* kilnd answered with an error, or a transfer broke */
	CLI_EXIT_USAGE = 2,       /* bad command line */
	CLI_EXIT_UNREACHABLE = 3, /* no kilnd on the socket, or no connection in time */
	CLI_EXIT_NOT_FOUND = 4,   /* no such sandbox, image, process or guest file */
	CLI_EXIT_LOCAL = 5,       /* a local file could not be read or written */
	CLI_EXIT_TIMEOUT = 6,     /* kilnd took the request but did not answer in time */
};

#define CLI_CODE_MAX 64

struct cli_fail {
	int exit;                /* enum cli_exit */
	char code[CLI_CODE_MAX]; /* kilnd's code, "" for local failures */
	char msg[ERR_MSG_MAX];
};

/* Fill f; code may be NULL. Always returns -1 so callers can `return cli_fail_set(...)`. */
int cli_fail_set(struct cli_fail *f, int exit, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The exit status for one of kilnd's error codes. */
int cli_exit_for_code(const char *code);

/*
 * f from an error response: HTTP status and its body. A body that is not
 * kilnd's error object (a proxy, another server on the socket, a kilnd
 * killed mid-answer) still gives a message naming the status.
 */
void cli_fail_from_response(long status, const char *body, size_t len, struct cli_fail *f);

/*
 * f for a connection that failed at the socket: os_errno is the connect()
 * errno (curl's CURLINFO_OS_ERRNO). ENOENT and ECONNREFUSED say exactly
 * that, with the socket path and how to get a kilnd there.
 */
void cli_fail_unreachable(const char *socket, int os_errno, const char *detail, struct cli_fail *f);

/*
 * f for a socket path a Unix socket address cannot hold (sun_path: 108
 * bytes with its NUL); -1, or 0 when the path fits. Checked before any
 * connect: libcurl and connect() would fail it with a misleading reason.
 */
int cli_fail_socket_path(const char *socket, struct cli_fail *f);

/*
 * f for kilnd not answering in time. connected: the connection was made
 * (exit 6: the request may have been carried out) or not (exit 3).
 * seconds is the limit that passed.
 */
void cli_fail_timeout(const char *socket, bool connected, unsigned long long seconds,
		      struct cli_fail *f);

/* f (exit 6) for a request with no limit of its own whose kilnd stopped
 * answering: a health check got no answer within seconds either. */
void cli_fail_unresponsive(const char *socket, unsigned long long seconds, struct cli_fail *f);

/*
 * Does kilnd's answer v hold field with the JSON type the command relies
 * on? 0, or -1 with f: "kilnd answered without <a string> 'id'" (exit 1).
 * A server that answers 2xx with another shape (another program on the
 * socket, a kilnd of another version) must not pass for success.
 */
int cli_answer_need(const json_t *v, const char *field, json_type type, struct cli_fail *f);

/* `kiln: <what>: <message> (<code>)\n` to out, controls replaced by '?'. */
void cli_fail_print(FILE *out, const char *what, const struct cli_fail *f);

#endif

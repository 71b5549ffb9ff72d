/*
 * cli_http: one HTTP request to kilnd over its Unix socket (libcurl,
 * CURLOPT_UNIX_SOCKET_PATH), for the kiln CLI.
 *
 * Contract:
 *  - A struct cli_http is the connection context, passed explicitly; no
 *    globals (curl_global_init is main()'s, before any request).
 *  - The response body of a 2xx answer goes to the request's sink as it
 *    arrives when it has one (exec --stream, cp downloads: never whole in
 *    memory), else it is collected, at most CLI_BODY_MAX bytes. A non-2xx
 *    body is always collected, and becomes a struct cli_fail.
 *  - An upload body comes from the request's source as curl asks for it,
 *    with the request's method (PUT, or POST for a process's stdin).
 *  - Returns 0 with resp filled for a 2xx, or -1 with fail (kilnd's error,
 *    no kilnd on the socket, or a transfer that broke). The caller frees
 *    resp->body.
 *  - Nothing waits forever on a socket that accepts and never answers:
 *    the connection must be made within the base timeout
 *    (struct cli_globals.timeout_s), and the answer must begin within
 *    cli_answer_ms() (cli_body.h): the base plus the request's own wait_s, counted
 *    from the connection or from the last upload bytes kilnd took (an
 *    upload fed from a slow pipe is never cut). A streamed answer (a
 *    sink) may then be quiet as long as it likes (an exec's NDJSON, logs
 *    -f, a download); a collected one must end within the same limit.
 *    A request with no limit of its own (wait_s CLI_WAIT_UNBOUNDED: a
 *    buffered exec without a timeout) is waited for while kilnd answers
 *    GET /v1/health, on a connection of its own, within the base timeout,
 *    asked each base timeout without an answer; when it does not, exit 6.
 *    Failures: exit 3 when no connection was made, 6 when kilnd took the
 *    request and did not answer.
 *  - An answer head over CLI_HEAD_MAX bytes ends the transfer (exit 1).
 */
#ifndef KILN_CLI_HTTP_H
#define KILN_CLI_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include <curl/curl.h>

#include "api/kiln/cli_error.h"

/* Collected bodies: JSON answers and error objects. A sandbox list of the
 * daemon's maximum size is far below this. */
#define CLI_BODY_MAX (64u << 20)

/* An answer's head (status line and header lines, 1xx heads included):
 * kilnd's are a few hundred bytes; a server that sends megabytes of
 * header lines is refused at this, not left to curl's own limits. */
#define CLI_HEAD_MAX (64u << 10)

struct cli_http {
	const char *socket;
	unsigned long timeout_s; /* the base timeout, 0: none */
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
};

/* Returns 0 or -errno (nonzero from a sink aborts the transfer). */
typedef int (*cli_sink_fn)(void *arg, const char *p, size_t n);
/* Bytes read into p (0 at EOF), or -errno. */
typedef ssize_t (*cli_source_fn)(void *arg, char *p, size_t n);

struct cli_req {
	const char *method;
	const char *path;     /* "/v1/..." with its query, already encoded */
	const char *body;     /* JSON body, or NULL */
	cli_source_fn source; /* upload body (PUT), or NULL */
	void *source_arg;
	long long source_size; /* -1: unknown (sent chunked) */
	cli_sink_fn sink;      /* 2xx body, or NULL to collect it */
	void *sink_arg;
	/*
	 * The time kilnd may legitimately take on this request before it
	 * answers, beyond the base timeout, in seconds: a boot
	 * (CLI_WAIT_BOOT), a snapshot (CLI_WAIT_SNAPSHOT), a process's
	 * timeout; CLI_WAIT_UNBOUNDED for a wait with no end of its own (an
	 * exec without --timeout-ms answers when the process exits).
	 */
	long long wait_s;
	/* When set, the transfer is abandoned soon after *cancel turns
	 * nonzero (a signal handler's flag: kiln run's Ctrl-C); it then
	 * fails with code "interrupted". */
	volatile sig_atomic_t *cancel;
};

struct cli_resp {
	long status;
	char *body;
	size_t len;
	/* Set when a sink or source failed: its -errno, so the caller can
	 * tell "our disk is full" from "kilnd went away". */
	int local_err;
};

int cli_http_open(struct cli_http *h, const char *socket, unsigned long timeout_s);
void cli_http_close(struct cli_http *h);

int cli_http_do(struct cli_http *h, const struct cli_req *req, struct cli_resp *resp,
		struct cli_fail *fail);

#endif

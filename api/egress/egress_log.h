/*
 * egress_log: kiln-egress's decisions, one JSON object a line on stdout
 * (kilnd keeps the proxy's stdout as the sandbox's egress log): one line
 * per flow, and on a decrypted flow one more per request.
 *
 *   {"time":"2026-11-30T17:00:00Z","src":"10.0.2.15:40000",
 *    "dst":"140.82.112.6:443","name":"api.github.com",
 *    "sni":"api.github.com","host":"api.github.com","method":"GET",
 *    "path":"/repos/x","decision":"allow","rule":0,"reason":"","policy":null,
 *    "bytes_up":312,"bytes_down":0,"injected":["authorization"]}
 *
 * A field not known is null (sni on plain HTTP, method and path on a
 * flow's line). policy: "callback" when a client holding the decision
 * stream decided (egress_question.h), "timeout" when it did not answer
 * in time, null when it was not asked. reason says why a flow or request was refused; on the
 * line of an allowed decrypted flow, how it ended ("the upstream
 * closed", "idle", "a request was refused"). A request's bytes_up are its head (as forwarded) and
 * body; its bytes_down are 0 (responses are relayed, not read: the flow's
 * line has the total). injected names headers, never a value: no secret
 * reaches this module. Every string is the proxy's own or checked by the
 * parsers (names, a method and path of visible ASCII), and jansson
 * escapes them all the same.
 *
 * Contract: thread-safe: lines are written whole under the logger's lock
 * (a line with a long path is over PIPE_BUF, so one write(2) alone would
 * not keep it whole).
 */
#ifndef KILN_EGRESS_LOG_H
#define KILN_EGRESS_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/netrules/http_rules.h"
#include "lib/netrules/proxy_v2.h"

struct egress_log {
	const struct proxy_v2 *hdr;                    /* NULL when none was read */
	const char *name, *sni, *host, *method, *path; /* NULL: null */
	const char *decision;                          /* "allow" or "deny" */
	const char *reason;
	const char *policy; /* "callback", "timeout", or NULL */
	size_t rule;        /* SIZE_MAX: null */
	uint64_t up, down;
	const char *injected[HTTP_LIST_MAX];
	size_t n_injected;
};

struct egress_logger {
	int fd; /* stdout */
	pthread_mutex_t lock;
};

/* "addr:port" ([addr]:port for IPv6) of h's source (src) or destination, or null when h is NULL. */
json_t *egress_log_endpoint(const struct proxy_v2 *h, bool src);

/* Write l as one line. */
void egress_log_write(struct egress_logger *g, const struct egress_log *l);

#endif

/*
 * egress_decision: the lines of the egress decision stream (issue 37's
 * policy callbacks; docs/api.md, "The egress decision stream"). A client
 * holds GET /v1/sandboxes/{id}/egress/decisions; kilnd relays between it
 * and the sandbox's kiln-egress over a socket pair (--policy-fd):
 *
 *   kiln-egress -> kilnd -> client: questions, one JSON object a line
 *     {"kind":"connect","id":7,"src":"10.0.2.15:40312","dst":"10.0.2.2:443",
 *      "name":"api.test","proto":"tls","static":"allow","rule":0,
 *      "intercept":true}
 *     {"kind":"request","id":8,"flow":7,"src":...,"dst":...,"name":...,
 *      "method":"GET","path":"/v1/x","headers":[["accept","text/html"]],
 *      "inject":["authorization"],"static":"allow","rule":0}
 *   client -> kilnd -> kiln-egress: answers
 *     {"id":8,"decision":"allow"|"deny"|"rules","status":403,"reason":"...",
 *      "set_headers":{"x-agent":"a1"},"remove_headers":["user-agent"]}
 *   kilnd -> kiln-egress, besides answers:
 *     {"attach":{"deadline_ms":2000,"on_timeout":"deny"}}  a client holds it
 *     {"detach":true}                                     it let go
 *
 * Contract:
 *  - Pure: no I/O, no state. Every line is read strictly (a field of the
 *    wrong type, unknown, or out of its bounds is refused with one line
 *    naming it), by kilnd from both its peers and by kiln-egress from
 *    kilnd: a compromised proxy or a client can send anything.
 *  - Answers: status and reason with deny only (status 400..599, default
 *    403; reason <= EGRESS_DECISION_REASON_MAX bytes of printable ASCII);
 *    set_headers and remove_headers with allow only, at most
 *    EGRESS_DECISION_FIELDS each; names lower-case tokens of at most
 *    EGRESS_DECISION_NAME_MAX bytes, not one kiln-egress owns (host,
 *    content-length, transfer-encoding, connection: changing them would
 *    change where a request ends); values at most EGRESS_DECISION_VALUE_MAX
 *    bytes of visible ASCII, space and tab.
 *  - Questions (egress_decision_question_clean): the known fields only,
 *    each of its type and bounds, copied into a new object; a line that
 *    is not a question is refused.
 */
#ifndef KILN_EGRESS_DECISION_H
#define KILN_EGRESS_DECISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/base/err.h"

#define EGRESS_DECISION_FIELDS 16
#define EGRESS_DECISION_NAME_MAX 64
#define EGRESS_DECISION_VALUE_MAX 4096
#define EGRESS_DECISION_REASON_MAX 200
#define EGRESS_DECISION_DEADLINE_MIN 10
#define EGRESS_DECISION_DEADLINE_MAX 60000
#define EGRESS_DECISION_DEADLINE_DEFAULT 2000
/* The longest line either way, its '\n' included. */
#define EGRESS_DECISION_LINE_MAX 131072
/* A question's headers: at most this many, each value cut to VALUE_MAX. */
#define EGRESS_DECISION_HEADERS_MAX 100

enum egress_verdict {
	EGRESS_VERDICT_RULES, /* what the static rules decided */
	EGRESS_VERDICT_ALLOW,
	EGRESS_VERDICT_DENY,
};

struct egress_field_change {
	char name[EGRESS_DECISION_NAME_MAX + 1];
	char value[EGRESS_DECISION_VALUE_MAX + 1];
};

struct egress_answer {
	uint64_t id;
	enum egress_verdict verdict;
	uint16_t status; /* deny: the guest's status */
	char reason[EGRESS_DECISION_REASON_MAX + 1];
	size_t n_set, n_remove;
	struct egress_field_change set[EGRESS_DECISION_FIELDS];
	char remove[EGRESS_DECISION_FIELDS][EGRESS_DECISION_NAME_MAX + 1];
};

/* An answer from j into *a: 0, or -EINVAL with e naming the fault. */
int egress_answer_parse(const json_t *j, struct egress_answer *a, struct err *e);
/* a as a line's object (what parse takes back), or NULL out of memory. */
json_t *egress_answer_json(const struct egress_answer *a);

struct egress_attach {
	unsigned deadline_ms;
	bool on_timeout_rules; /* false: deny */
};

/* The stream's parameters as the query gives them (NULL: absent): 0, or
 * -EINVAL with e. */
int egress_attach_parse_query(const char *deadline_ms, const char *on_timeout,
			      struct egress_attach *out, struct err *e);

enum egress_control {
	EGRESS_CONTROL_ANSWER,
	EGRESS_CONTROL_ATTACH,
	EGRESS_CONTROL_DETACH,
};

/* A line kilnd sends kiln-egress: which kind, with *a or *at filled. 0 or -EINVAL with e. */
int egress_control_parse(const json_t *j, enum egress_control *kind, struct egress_answer *a,
			 struct egress_attach *at, struct err *e);
/* {"attach":{...}}, or NULL out of memory. */
json_t *egress_attach_json(const struct egress_attach *at);

/* A question from kiln-egress checked and copied (*out): 0, or -EINVAL
 * with e (or -ENOMEM). */
int egress_decision_question_clean(const json_t *in, json_t **out, struct err *e);

#endif

/*
 * egress_question: kiln-egress's side of the decision stream's lines
 * (lib/netrules/egress_decision.h has the protocol): the question a flow
 * or a request becomes, and what its answer does to the decision.
 *
 *  - A TLS flow whose name passed its checks (egress_flow: ruled) asks
 *    "connect" before it is spliced or decrypted; a plain HTTP request
 *    and each request on a decrypted flow ask "request", with the head's
 *    fields in order (the ones the deciding rule injects left out: their
 *    names are in "inject", their values never anywhere; none when the
 *    rules denied the request, which then gets no rule's secrets), at most
 *    EGRESS_DECISION_HEADERS_MAX, each name cut to 256 bytes and each
 *    value to EGRESS_DECISION_VALUE_MAX (the path is never cut: a
 *    callback decides on the path that goes upstream) and any byte
 *    outside visible ASCII, space and tab shown as '?'.
 *  - What a flow or request that failed its checks (not TLS or HTTP, a
 *    name that differs from the destination's) never asks: the callback
 *    decides among well-formed flows only, never past those checks.
 *  - An answer: "rules" keeps the static decision; "allow" allows (a TLS
 *    flow no rule decrypts is spliced; a flow the rules denied is then
 *    decided by no rule: nothing decrypts it, no rule's secrets go with
 *    it, and the log names no rule); "deny" refuses with its status
 *    and reason (the 403 body's rule is "callback"). No answer within the
 *    deadline (or the client gone while waiting): deny, reason "the
 *    policy callback did not answer within N ms", or the static decision
 *    (on_timeout "rules").
 *
 * Contract: pure; no I/O.
 */
#ifndef KILN_EGRESS_QUESTION_H
#define KILN_EGRESS_QUESTION_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/egress/egress_flow.h"
#include "api/egress/egress_http.h"
#include "lib/netrules/egress_decision.h"
#include "lib/netrules/http_rules.h"
#include "lib/netrules/proxy_v2.h"

/* The question about TLS flow f, or NULL out of memory. */
json_t *egress_question_connect(uint64_t id, const struct proxy_v2 *h, const struct egress_flow *f);

/* The question about request f (its head: head[0..f->head_len)) to name;
 * flow: the connect's id on a decrypted flow, 0 for plain HTTP; u: the
 * deciding rule or NULL. NULL out of memory. */
json_t *egress_question_request(uint64_t id, uint64_t flow, const struct proxy_v2 *h,
				const char *name, const struct egress_flow *f, const char *head,
				const struct http_rule *u);

enum egress_asked_how {
	EGRESS_ASKED_NONE,    /* no client holds the stream: not asked */
	EGRESS_ASKED_ANSWER,  /* a */
	EGRESS_ASKED_TIMEOUT, /* no answer in time, or the client went away */
};

struct egress_asked {
	enum egress_asked_how how;
	struct egress_answer *a; /* ANSWER */
	unsigned deadline_ms;
	bool timeout_rules; /* on_timeout "rules" */
};

/* What o does to f (which the rules decided): f's status, reason and
 * status code changed as above (why: cap bytes for a reason made here).
 * The log's "policy" word: "callback", "timeout", or NULL (not asked). */
const char *egress_question_apply(struct egress_flow *f, const struct egress_asked *o, char *why,
				  size_t cap);

/* An allowed answer's header changes as injection fields (a removal has
 * no format), less any name u injects (the rule's secret wins), into
 * out[0..2 * EGRESS_DECISION_FIELDS): their count. */
size_t egress_question_changes(const struct egress_answer *a, const struct http_rule *u,
			       struct egress_inject_field *out);

#endif

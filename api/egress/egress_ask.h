/*
 * egress_ask: kiln-egress's end of the decision stream (--policy-fd N, a
 * connected Unix stream socket from kilnd; the lines are
 * lib/netrules/egress_decision.h's). While kilnd says a client holds
 * the stream ({"attach":...}), each flow's thread sends its question and
 * waits for the answer with its id, at most the client's deadline_ms;
 * when none holds it, nothing is asked and the rules decide alone.
 *
 * Contract:
 *  - One reader thread takes kilnd's lines: attach, detach, answers. An
 *    answer to no question waiting (late, or made up) is dropped; a line
 *    that does not parse, or longer than EGRESS_DECISION_LINE_MAX, is
 *    dropped with one line on stderr. kilnd gone (end of file): as
 *    detached, for good.
 *  - A detach, or kilnd gone, ends every wait: those questions take the
 *    on_timeout they were asked under (egress_question.h).
 *  - Questions are written whole under a lock, each within its own
 *    deadline (one cut short by it is ended by the next question's
 *    leading '\n': kilnd drops the cut line alone); at most
 *    EGRESS_ASK_WAITING wait at once (more: not asked, as on a timeout).
 */
#ifndef KILN_EGRESS_ASK_H
#define KILN_EGRESS_ASK_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/egress/egress_question.h"
#include "lib/base/err.h"

#define EGRESS_ASK_WAITING 512

struct egress_ask;

/* Take fd (made non-blocking and close-on-exec) and start the reader:
 * the channel, or NULL with e. */
struct egress_ask *egress_ask_start(int fd, struct err *e);

/* A fresh question id (1, 2, ...). */
uint64_t egress_ask_id(struct egress_ask *k);

/* Ask q (whose "id" is id; taken): *out says how it went; an answer is
 * the caller's to free (egress_asked_free). k may be NULL: not asked. */
void egress_ask(struct egress_ask *k, json_t *q, uint64_t id, struct egress_asked *out);
void egress_asked_free(struct egress_asked *out);

/* Whether a client holds the stream now (k NULL: no). */
bool egress_ask_attached(struct egress_ask *k);

#endif

/*
 * agent_error: what libkiln's agent API reported of a failure, as kilnd's
 * API error (api_error.h). Apart from api_error so that the HTTP library,
 * which uses api_error for its own answers, does not depend on libkiln.
 */
#ifndef KILN_AGENT_ERROR_H
#define KILN_AGENT_ERROR_H

#include <kiln/agent.h>

#include "api/kilnd/core/api_error.h"

/*
 * Translate a failure libkiln's agent API reported (kiln_agent_errkind,
 * _errcode, _errmsg, or a kiln_proc's or kiln_watch's) into an API error.
 * The message is the agent's or libkiln's (they name the operation);
 * `what` ("exec", "read '/etc/x'") is used only when there is none
 * ("<what> failed"). Agent codes keep their names; an unreachable agent
 * and a host-side deadline become agent_unavailable (503), broken replies
 * agent_protocol_error (502), this side's failures internal (500).
 */
enum api_code api_err_from_agent_fail(struct api_err *e, enum kiln_agent_fail kind,
				      const char *code, const char *msg, const char *what);

/* api_err_from_agent_fail with a's last failure: a must be the request's
 * own kiln_agent (its failure is the last of any thread using it). */
enum api_code api_err_from_agent(struct api_err *e, const kiln_agent *a, const char *what);

#endif

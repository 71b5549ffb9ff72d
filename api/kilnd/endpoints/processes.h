/*
 * processes.h: what the background-process handlers share
 * (processes.c, processes_output.c, processes_tty.c). Not for use
 * outside them.
 */
#ifndef KILN_ENDPOINT_PROCESSES_H
#define KILN_ENDPOINT_PROCESSES_H

#include <stdint.h>

#include <kiln/agent.h>

#include "api/kilnd/http/http.h"

/*
 * The sandbox and process a request names: 404 sandbox_not_found, 404
 * process_not_found (a {proc} that is no process id), 409 wrong_state
 * (not running); 0 with a new client of its agent in *a (the request's
 * own: its failures are this request's; kiln_agent_free it) and *id. The
 * sandbox's reference is dropped again: the client needs only its socket
 * path.
 */
int proc_target(struct http_req *r, kiln_agent **a, uint32_t *id, struct api_err *e);

#endif

/*
 * agent_serve: the request handlers behind agent.c's dispatcher, one file
 * per group: agent_exec.c (exec), agent_stream.c (spawn, attach, stdin,
 * signal, resize, wait, list_processes), agent_lifecycle.c (ping, info,
 * configure, sync_clock, shutdown), agent_watch.c (watch).
 *
 * Contract: a handler gets the connection right after its request (and
 * before the request's payload), replies everything the protocol says,
 * and returns; it neither closes the connection nor frees the request.
 * A failed send means the host is gone: the handler just stops.
 */
#ifndef KILN_AGENT_SERVE_H
#define KILN_AGENT_SERVE_H

#include "guest-init/agent/agent.h"
#include "guest-init/agent/agent_conn.h"
#include "api/proto/agent_proto.h"

void agent_serve_exec(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_spawn(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_attach(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_stdin(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_signal(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_resize(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_wait(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_list_processes(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_ping(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_info(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_configure(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_sync_clock(struct agent *a, struct agent_conn *c, struct agent_msg *m);
void agent_serve_shutdown(struct agent *a, struct agent_conn *c, struct agent_msg *m);
/* agent_watch.c: a directory's changes as fs_event lines until the host closes. */
void agent_serve_watch(struct agent *a, struct agent_conn *c, struct agent_msg *m);

/* Send an error line built from code and message. 0 or -errno. */
int agent_reply_error(struct agent_conn *c, enum agent_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Send {"type":"ok"}. */
int agent_reply_ok(struct agent_conn *c);

#endif

/*
 * agent_serve: the request handlers behind agent.c's dispatcher, one file
 * per group: agent_exec.c (exec), agent_run.c (run), agent_stream.c (spawn, attach, stdin,
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
void agent_serve_run(struct agent *a, struct agent_conn *c, struct agent_msg *m);

/* Read m's whole payload into *out (malloc'd; NULL when len is 0). 0, or
 * -errno with the error line sent. */
int agent_exec_payload(struct agent_conn *c, const struct agent_msg *m, uint8_t **out);

/* Called after the process ended, before the `exit` line; nonzero: the
 * host is gone, send nothing more. */
typedef int (*agent_exec_hook)(void *arg, struct agent_conn *c);

/*
 * The body of exec, shared with run (agent_run.c): start req, feed it
 * `in` (in_len bytes, malloc'd, taken over, may be NULL), stream its
 * output, kill its group on timeout or when the host leaves, then call
 * before_exit (may be NULL) and send `exit`. Start errors are sent as
 * error lines.
 */
void agent_exec_run(struct agent *a, struct agent_conn *c, const struct agent_proc_req *req,
		    uint8_t *in, size_t in_len, agent_exec_hook before_exit, void *hook_arg);
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

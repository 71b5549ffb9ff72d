/*
 * http_conn: the connections of the HTTP server (http.h), inside the
 * http folder only: admission (pure), the accept thread, and each
 * connection's socket I/O under deadlines.
 *
 * Contract:
 *  - http_admit() is pure: given the counts and the peer, whether a new
 *    connection is served, refused with an answer, or dropped unanswered
 *    (when even the few refusal threads are busy).
 *  - Sockets are non-blocking; every read and write waits in poll() with
 *    a deadline, so no client can hold a thread longer than
 *    --client-timeout without progress. http_stop() shuts every socket
 *    down, which ends any wait at once.
 *  - Once the server stops accepting (http_quiesce: a handover to a new
 *    kilnd, or a stop), a wait for a request's head ends at once: a
 *    client that has sent part of one (or nothing, on a connection that
 *    has not had a request yet) is answered 503 shutting_down with Retry-After
 *    and closed, an idle keep-alive connection is closed; none holds the
 *    handover up to --client-timeout.
 *  - A connection's thread calls http_conn_serve() (http.c), which reads
 *    requests through conn_fill() and answers through conn_send().
 */
#ifndef KILN_HTTP_CONN_H
#define KILN_HTTP_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/http/http.h"

/* Refusals of each kind (403 forbidden, 503 too_many_connections)
 * answered at once, each by a short-lived thread that drops the request
 * for a moment (conn_linger) so the client reads the answer and not a
 * reset; beyond this many of a kind, a
 * connection is closed unanswered. Two budgets: a flood of peers kilnd
 * refuses cannot take the answers an allowed client over the limit gets. */
#define HTTP_REFUSING_MAX 8
/* The input buffer: a head (HTTP_HEAD_MAX) and what follows it. */
#define HTTP_CONN_BUF 65536

enum http_admit {
	HTTP_ADMIT_SERVE,
	HTTP_ADMIT_REFUSE, /* answer e, close */
	HTTP_ADMIT_DROP,   /* close at once */
};

/* A new connection's peer, as http_admit weighs it. */
struct http_admit_peer {
	uid_t uid;
	gid_t gid;
	bool allowed;         /* may use kilnd at all */
	bool privileged;      /* root or kilnd's uid: may take the reserve, no per-uid cap */
	unsigned uid_serving; /* connections of this uid served now */
};

/*
 * Whether to serve a new connection from peer p, with `serving`
 * connections served, refusing[0] (forbidden) and refusing[1] (too many)
 * being refused now, and at most uid_max per unprivileged uid (0: no
 * cap). REFUSE fills e (forbidden, too_many_connections).
 */
enum http_admit http_admit(unsigned serving, const unsigned refusing[2],
			   const struct http_admit_peer *p, unsigned uid_max, struct api_err *e);

struct http_server {
	const struct http_service *svc;
	int listen_fd;
	int wake[2]; /* http_quiesce wakes the accept thread */
	pthread_t accept_thread;
	bool accepting;
	int timeout_ms; /* --client-timeout */
	pthread_mutex_t mu;
	pthread_cond_t idle;           /* signalled when a connection ends */
	unsigned serving, refusing[2]; /* refusing: forbidden, too many */
	bool stopping;
	struct http_conn *conns; /* every open connection, for http_stop */
};

struct http_conn {
	struct http_server *srv;
	int fd;
	struct peer peer;
	bool refuse;     /* answer err and close */
	int refuse_kind; /* its budget: 0 forbidden, 1 too many */
	struct api_err err;
	struct http_conn *prev, *next;
	/* unread input: buf[start..end); buf[0..pin) holds the current
	 * request's head, which reading its body never moves */
	size_t pin, start, end;
	bool served; /* a request was answered on it (an idle keep-alive one now) */
	char buf[HTTP_CONN_BUF];
};

/* Read more input into buf[end..) until deadline_ms (mono_ms): bytes read, 0 at
 * EOF, -ETIMEDOUT, -ENOBUFS when buf is full, or -errno. */
ssize_t conn_fill(struct http_conn *c, int64_t deadline_ms);
/* conn_fill that also ends with -ESHUTDOWN once the server has stopped
 * accepting (http_quiesce): for the wait for a request's head. */
ssize_t conn_fill_head(struct http_conn *c, int64_t deadline_ms);
/* All of p[0..n), each write within the client timeout. 0 or -errno. */
int conn_send(struct http_conn *c, const void *p, size_t n);
/* The n pieces of iov in one gathered write where they fit (http_io_sendv). */
int conn_sendv(struct http_conn *c, struct iovec *iov, size_t n);
/* Closing with input unread: stop writing, then drop what the client
 * still sends for a moment, so it reads the answer and not a reset. */
void conn_linger(struct http_conn *c);

/* Serve requests on c until it closes (http.c). */
void http_conn_serve(struct http_conn *c);
/* Answer a refused connection's request with e and close (http.c). */
void http_conn_refuse(struct http_conn *c);

#endif

/*
 * http: kiln's HTTP/1.1 server as a library (on a listening Unix socket
 * the caller bound): admission of connections, request framing, routing
 * over the caller's route table (http_route.h), body limits, JSON and
 * streamed responses. It knows no route and no handler: kilnd's API
 * server hands it api/kilnd/endpoints/routes.c's table in a struct
 * http_service, with the hooks that admit a peer and log a request.
 *
 * Contract:
 *  - One thread per connection, so a handler may block (a boot, an exec)
 *    and a streamed response's reader may wait for data.
 *  - Connections are admitted at accept by their peer's credentials
 *    (SO_PEERCRED, svc->peer_allowed): a peer that may not use kilnd is
 *    answered 403 and closed without taking a slot; at most HTTP_CONNECTION_LIMIT are
 *    served at once, the last HTTP_CONNECTION_RESERVE of them only for
 *    root and kilnd's own uid, so a flood of one allowed client never
 *    locks out the operator (503 too_many_connections beyond that); and
 *    at most svc->uid_max by one uid other than those two, so one allowed
 *    user cannot hold every slot the others need.
 *  - A client has --client-timeout seconds to send each request's head
 *    (from the connection's start or the previous answer), may be silent
 *    at most that long inside a body, and must read what kilnd writes
 *    within it; otherwise 408 (when a request was begun) and the
 *    connection closes.
 *  - Framing is strict (http_head.h, http_chunked.h): every request that
 *    is not unambiguous HTTP/1.1 (or 1.0) gets one JSON 4xx/5xx error and
 *    the connection closes. Routing sees the raw path.
 *  - HEAD runs the GET handler and sends its answer's head only;
 *    OPTIONS on a path the table has is answered 204 with Allow
 *    (http_route.h), its handlers untouched.
 *  - Every request is checked in this order, and the first failure is
 *    answered at once, before any body is read: the route (404/405, with
 *    Allow from the table), a declared Content-Length above the matched
 *    entry's limit (413; for a client that did not ask for "100
 *    Continue", after reading and dropping up to 64 MiB of it, so that it
 *    reads the answer instead of a reset). Bodies are collected up to the
 *    limit (BODY_JSON, BODY_RAW) or streamed to the handler
 *    (BODY_UPLOAD); a route with BODY_NONE takes no body byte; a body
 *    that turns out larger is answered 413 once it ended (a chunked one once 64 MiB were
 *    dropped, then the connection closes).
 *  - Handlers answer through the http_* functions below, exactly once.
 *    Errors are always the JSON error body of api_error.h.
 *  - svc->request_done sees every request once it ended (kilnd's log
 *    line and metrics).
 */
#ifndef KILN_HTTP_H
#define KILN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/http/http_head.h"
#include "api/kilnd/http/http_route.h"
#include "lib/base/peer_cred.h"
#include "lib/base/url_query.h"
#include "lib/base/err.h"

#define HTTP_QUERY_MAX 32
/* Connections served at once, and how many of them only root and
 * kilnd's own uid may take. */
#define HTTP_CONNECTION_LIMIT 256
#define HTTP_CONNECTION_RESERVE 16
/* --max-connections-per-uid's default: a quarter of the slots. */
#define HTTP_UID_CONNECTIONS_DEFAULT 64

struct http_req;
struct http_conn;
struct http_server;

/* A streamed response body: up to max bytes into buf (> 0), or one of the
 * two ends below. It may block until it has bytes. */
typedef ssize_t (*http_reader_fn)(void *cls, char *buf, size_t max);
typedef void (*http_reader_free_fn)(void *cls);
/* The body is complete. */
#define HTTP_READER_END ((ssize_t)-1)
/* The body broke: the connection closes without the last chunk, so the
 * client sees a broken transfer, never a short body. */
#define HTTP_READER_ERROR ((ssize_t)-2)

/* A body limit a route names by its index (http_route.limit): the most
 * bytes (UINT64_MAX: none) and the words of its 413 ("the %s is larger
 * than N bytes (%s)"). */
struct http_limit {
	uint64_t bytes;
	const char *what;   /* "body", "upload", "image archive" */
	const char *option; /* the setting that raises it: "--max-body" */
};

/* The service's context, handed to every handler as r->d; the library
 * never looks inside it (kilnd's is the daemon, core/kilnd.h). */
struct kilnd;

/*
 * What the server serves: a route table (http_route.h) and what it
 * needs from its owner. An upload's handler (BODY_UPLOAD) runs before its
 * body and starts it (http_upload); every other one once the body is in.
 * The caller keeps it alive until http_stop.
 */
struct http_service {
	const struct http_route *routes;
	size_t nroutes;
	const struct http_limit *limits; /* indexed by http_route.limit */
	size_t nlimits;
	int timeout_ms; /* a silent client's time (--client-timeout) */
	/* Connections one uid may hold (root and kilnd's uid: no cap of
	 * their own); --max-connections-per-uid, 0: none. */
	unsigned uid_max;
	/* Whether the peer may be served at all (else 403 forbidden). */
	bool (*peer_allowed)(const struct http_service *svc, const struct peer *p);
	/* Every request, once it ended (complete: its answer went out whole). */
	void (*request_done)(const struct http_service *svc, const struct http_req *r,
			     bool complete);
	const atomic_bool *closing; /* set: connections close after their answer */
	struct kilnd *d;
};

/* Streamed request bodies (BODY_UPLOAD): the handler's side. */
struct http_upload_ops {
	/* More body bytes. A negative return makes the rest of the body be
	 * read and dropped; end() still runs and answers. */
	int (*data)(struct http_req *r, const void *p, size_t n);
	/* The body ended (too_large: it went past the limit). Must answer. */
	void (*end)(struct http_req *r, bool too_large);
	/* The request ended without end() (client gone): release everything. */
	void (*cancel)(struct http_req *r);
};

struct http_req {
	const struct http_service *svc;
	struct kilnd *d;
	struct http_conn *conn;
	const struct http_head *head; /* valid during the request */
	char method[16];              /* both made printable, for messages and the log */
	char path[512];
	struct http_route_match rm;
	struct peer peer;
	double t0;
	unsigned status;
	bool responded;
	/* A streamed body that ended early: why (NULL: it did not) and
	 * the body bytes sent before; request_done logs both. */
	const char *cut;
	char cut_msg[256]; /* the source's own reason, when cut points here */
	uint64_t sent;
	/* The error answered without a request read (a refused connection,
	 * broken framing, a head that never came); API_OK for a request. */
	enum api_code unread;
	/* JSON bodies */
	char *body;
	size_t body_len, body_cap;
	uint64_t received;
	bool too_large, body_failed;
	/* streamed bodies */
	const struct http_upload_ops *up_ops;
	void *up;
	bool up_done;
	/* the answer, sent once the handler returned */
	struct {
		char *body; /* malloc'd */
		size_t len;
		const char *content_type;
		char headers[256]; /* more header lines, each ending in CRLF */
		http_reader_fn reader;
		http_reader_free_fn reader_free;
		void *reader_cls;
	} resp;
	/* protocol upgrade (http_upgrade) */
	void (*upg_run)(void *cls, const char *extra, size_t extra_n, int sock);
	void (*upg_release)(void *cls);
	void *upg_cls; /* NULL once the upgrade handler took it */
	/* query */
	struct query_kv kv[HTTP_QUERY_MAX];
	size_t nkv;
	char *query_copy; /* the decoded parameters point into it */
};

/* Start serving svc on listen_fd. NULL with e (also for a route
 * without a handler, or whose limit is not in svc->limits). */
struct http_server *http_start(const struct http_service *svc, int listen_fd, struct err *e);
/* Stop accepting connections (in-flight requests go on). */
void http_quiesce(struct http_server *s);
/* After http_quiesce: wait up to ms for every served connection to end
 * (a handover lets requests in flight finish). True when none is left. */
bool http_drain(struct http_server *s, int ms);
/* Stop: closes every connection, waits for their threads, frees s. */
void http_stop(struct http_server *s);

/* ---- for handlers ---- */

/* The JSON body: 0 and *out (a new reference; NULL when there was no body
 * and optional), or -1 with e (missing body, bad_json). */
int http_body_json(struct http_req *r, bool optional, json_t **out, struct api_err *e);

/* A request header, or NULL. */
const char *http_header(struct http_req *r, const char *name);

/* The client's socket, for http_client_gone(). */
int http_conn_fd(struct http_req *r);
/* True when the peer closed the connection (poll, no wait). */
bool http_client_gone(int fd);

/* Answers. json and buf are taken over in every case. */
void http_json(struct http_req *r, unsigned status, json_t *json);
void http_error(struct http_req *r, const struct api_err *e);
void http_no_content(struct http_req *r);
void http_text(struct http_req *r, unsigned status, const char *content_type, char *buf,
	       size_t len);
/* A chunked response of unknown length produced by reader; free_cb(cls)
 * runs in every case once the response is over. */
void http_stream(struct http_req *r, const char *content_type, http_reader_fn reader, void *cls,
		 http_reader_free_fn free_cb);
/* Header on the next answer's response, for Location. */
void http_json_located(struct http_req *r, unsigned status, json_t *json, const char *location);

/*
 * Answer 101 Switching Protocols (Upgrade: protocol). Once the response
 * is out, run(cls, extra, extra_n, sock) gets the raw socket in the
 * connection's thread and may block; extra holds bytes the client sent
 * right after its request. The connection closes when run returns, and
 * release(cls) is called in every case (also when the 101 never went out).
 */
void http_upgrade(struct http_req *r, const char *protocol,
		  void (*run)(void *cls, const char *extra, size_t extra_n, int sock), void *cls,
		  void (*release)(void *cls));

/* Record a streamed request body's handler (BODY_UPLOAD), from its begin. */
void http_upload(struct http_req *r, const struct http_upload_ops *ops, void *up);

#endif

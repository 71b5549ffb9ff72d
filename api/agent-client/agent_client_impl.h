/*
 * agent_client_impl: what the agent_client*.c files share and nothing
 * else includes. agent_client.c holds the connection (CONNECT handshake,
 * framed reads with deadlines, whole sends), request building and
 * validation, reply field checks and the simple requests;
 * agent_client_proc.c the process requests and streams;
 * agent_client_files.c the file requests.
 *
 * Names carry the agent_client_ prefix because the unit tests link every module of
 * the tree into one binary.
 */
#ifndef KILN_AGENT_CLIENT_IMPL_H
#define KILN_AGENT_CLIENT_IMPL_H

#include <errno.h>

#include "api/agent-client/agent_client.h"
#include "lib/base/mono.h"

/* One read buffer per connection: the framer hands out payload as slices
 * of it, so a 1 MiB chunk never needs 1 MiB of memory. */
#define AGENT_CLIENT_CONN_RBUF 65536

/* A reply that breaks the protocol without a more precise framer code. */
#define AGENT_CLIENT_PROTO_FAIL(err, ...) \
	agent_client_efail((err), AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO, __VA_ARGS__)

/* Public entry points accept err == NULL: point it at a local then. */
#define ERR_INIT(err)                        \
	struct agent_client_err err##_local; \
	if (!(err))                          \
		(err) = &err##_local;        \
	agent_client_err_clear(err)

/* ---- time and errors ---- */

/* Reset err to "no failure". */
void agent_client_err_clear(struct agent_client_err *err);
/* Fill err (message from fmt) and return -errnum. */
int agent_client_efail(struct agent_client_err *err, enum agent_fail fail, enum agent_code code,
		       int errnum, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Wait for `events` on fd until the absolute deadline dl (0: none); 0 or -ETIMEDOUT/-errno. */
int agent_client_wait_fd(int fd, short events, int64_t dl);

/* ---- one connection ---- */

struct agent_client_conn {
	int fd;
	struct agent_frame fr;
	uint8_t *buf; /* AGENT_CLIENT_CONN_RBUF bytes; buf[off .. off + len) not yet framed */
	size_t off, len;
	bool eof;
	bool in_payload;   /* the last header's payload is not consumed yet */
	int64_t deadline;  /* reads: absolute ms, 0: none */
	int64_t window_ms; /* what the deadline allowed, for messages */
	const char *what;  /* request type, for messages */
};

/* Connect and do the CONNECT handshake by dl; `what` names the request in messages. */
int agent_client_conn_open(const struct agent_client *c, int64_t dl, const char *what,
			   struct agent_client_conn *k, struct agent_client_err *err);
/* Close the socket and free the buffers (safe after a failed open). */
void agent_client_conn_close(struct agent_client_conn *k);
/* Reads from now on must complete within ms (<= 0: no limit) / by dl. */
void agent_client_conn_wait(struct agent_client_conn *k, int64_t ms);
void agent_client_conn_wait_until(struct agent_client_conn *k, int64_t dl);
/*
 * Next header. 0: *hdr (caller owns it) and *len; 1: the agent closed the
 * connection at a message boundary; < 0: error. Skips the unread payload
 * of the previous message.
 */
int agent_client_conn_next(struct agent_client_conn *k, json_t **hdr, uint64_t *len,
			   struct agent_client_err *err);
/*
 * Next slice of the current payload: 0 with *p and *n (valid until the next
 * read on k), 1 when the payload is complete, < 0 on error.
 */
int agent_client_conn_payload(struct agent_client_conn *k, const uint8_t **p, size_t *n,
			      struct agent_client_err *err);
/* Send a[0..an) then b[0..bn) whole by dl; *sent (may be NULL) gets what went out. */
int agent_client_conn_send(struct agent_client_conn *k, const void *a, size_t an, const void *b,
			   size_t bn, int64_t dl, size_t *sent, struct agent_client_err *err);

/* ---- requests ---- */

/* A request header under construction; one failed step fails it. */
struct agent_client_req {
	json_t *o;
	const char *type;
	bool nomem;
	const char *bad_key; /* a string field that is not UTF-8 */
};

void agent_client_req_init(struct agent_client_req *r, const char *type);
/* Set field k to v (reference stolen). */
void agent_client_req_set(struct agent_client_req *r, const char *k, json_t *v);
/* A JSON string of s, or NULL with r->bad_key = key when s is not UTF-8. */
json_t *agent_client_req_string(struct agent_client_req *r, const char *key, const char *s);
void agent_client_req_str(struct agent_client_req *r, const char *k, const char *s);
void agent_client_req_int(struct agent_client_req *r, const char *k, int64_t v);
void agent_client_req_true(struct agent_client_req *r, const char *k);
/* "user": "root" when root; nothing for the default user. */
void agent_client_req_user(struct agent_client_req *r, enum agent_user u);
/*
 * Check the request with the agent's own parser, as it will arrive in
 * `ctx` with `len` payload bytes, and serialise it. Frees r->o.
 */
int agent_client_req_finish(struct agent_client_req *r, enum agent_ctx ctx, uint64_t len,
			    struct agent_line *line, struct agent_client_err *err);

/*
 * Send rq (finished here) on a new connection and read the agent's `ok`
 * without consuming a byte past it: *fd is then the raw stream that
 * follows (tcp_connect, ctr_stdio), non-blocking and close-on-exec. The
 * connect, the send and the answer are bounded by the context's timeout.
 */
int agent_client_raw_open(const struct agent_client *c, struct agent_client_req *rq, int *fd,
			  struct agent_client_err *err);

/* ---- replies ---- */

/*
 * The type of a reply. Error lines become err here (-EREMOTEIO), as do a
 * missing type and a payload on a type that carries none.
 */
int agent_client_reply_type(struct agent_client_conn *k, json_t *h, uint64_t len, const char **type,
			    struct agent_client_err *err);
/* Protocol error: `type` arrived where `want` belongs. */
int agent_client_unexpected(struct agent_client_conn *k, const char *type, const char *want,
			    struct agent_client_err *err);
/* Connection error: the agent closed before `before`. */
int agent_client_closed_early(struct agent_client_conn *k, const char *before,
			      struct agent_client_err *err);

/* Reply fields: present, the right JSON type, in range; a protocol error otherwise. */
int agent_client_r_uint(struct agent_client_conn *k, json_t *h, const char *key, uint64_t max,
			uint64_t *out, struct agent_client_err *err);
int agent_client_r_u32(struct agent_client_conn *k, json_t *h, const char *key, uint32_t max,
		       uint32_t *out, struct agent_client_err *err);
int agent_client_r_u64(struct agent_client_conn *k, json_t *h, const char *key, uint64_t *out,
		       struct agent_client_err *err);
int agent_client_r_sint(struct agent_client_conn *k, json_t *h, const char *key, int64_t *out,
			struct agent_client_err *err);
int agent_client_r_bool(struct agent_client_conn *k, json_t *h, const char *key, bool *out,
			struct agent_client_err *err);
int agent_client_r_str(struct agent_client_conn *k, json_t *h, const char *key, const char **out,
		       struct agent_client_err *err);
/* exit_code (0..255 or null) and signal (1..64 or null); -1 and 0 for null. */
int agent_client_r_status(struct agent_client_conn *k, json_t *h, int *code, int *signo,
			  struct agent_client_err *err);
int agent_client_r_pid(struct agent_client_conn *k, json_t *h, int *pid,
		       struct agent_client_err *err);
/* An exit line (exec: with the truncation flags). */
int agent_client_parse_exit(struct agent_client_conn *k, json_t *h, bool exec,
			    struct agent_client_exit *ex, struct agent_client_err *err);

/* ---- whole requests ---- */

/*
 * Connect, send one request line (+ payload), read one reply of type
 * `want` and hand it to the caller (*reply, to json_decref). `dl` bounds
 * the connect and the send, `reply_dl` the reply (0: none).
 */
int agent_client_call(const struct agent_client *c, struct agent_client_req *rq,
		      const void *payload, size_t n, const char *want, int64_t dl, int64_t reply_dl,
		      json_t **reply, struct agent_client_err *err);
/* agent_client_call on k, which stays open for the rest of the reply
 * (spawn's and watch's streams). k is always safe to close after it,
 * whatever it returns; the caller must. */
int agent_client_conn_call(const struct agent_client *c, struct agent_client_req *rq,
			   const void *payload, size_t n, const char *want, int64_t dl,
			   int64_t reply_dl, struct agent_client_conn *k, json_t **reply,
			   struct agent_client_err *err);
/* agent_client_call for an immediate request: everything within the context's timeout. */
int agent_client_call_now(const struct agent_client *c, struct agent_client_req *rq,
			  const char *want, json_t **reply, struct agent_client_err *err);
/* A request answered by {"type":"ok"} whose fields do not matter. */
int agent_client_call_ok(const struct agent_client *c, struct agent_client_req *rq,
			 struct agent_client_err *err);
/* A stand-in connection that only names the request, so that the reply
 * parsers can word their messages after the real one is closed. */
struct agent_client_conn agent_client_msg_ctx(const char *what);
/*
 * Connect and send a request whose reply is a sequence of messages; the
 * caller reads them with agent_client_next_reply and closes k.
 */
int agent_client_open_listing(const struct agent_client *c, struct agent_client_req *rq,
			      struct agent_client_conn *k, struct agent_client_err *err);
/* Next message of a listing, within the context's timeout; error lines become err. */
int agent_client_next_reply(const struct agent_client *c, struct agent_client_conn *k, json_t **h,
			    uint64_t *len, const char **type, const char *before,
			    struct agent_client_err *err);

#endif

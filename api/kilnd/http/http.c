/* libmicrohttpd glue; see http.h. */
#include "api/kilnd/http/http.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/base/text_clean.h"
#include "lib/base/num_parse.h"
/* Connections at once: each is a thread. */
#define HTTP_CONNECTION_LIMIT 256
/* The most kilnd reads and drops to answer 413 after a whole body. */
#define HTTP_DISCARD_MAX (64u << 20)


/* ---- answers ---- */

static void queue(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp) {
		/* Out of memory: MHD closes the connection, the log says 500. */
		r->status = 500;
		r->responded = true;
		return;
	}
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (MHD_queue_response(r->conn, status, resp) == MHD_YES)
		r->status = status;
	else
		r->status = 500;
	MHD_destroy_response(resp);
	r->responded = true;
}

static struct MHD_Response *json_response(json_t *json)
{
	char *s = json ? json_dumps(json, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	struct MHD_Response *resp;
	size_t n;

	json_decref(json);
	if (!s)
		return NULL;
	n = strlen(s);
	/* A trailing newline keeps curl output readable in a terminal. */
	char *t = realloc(s, n + 2);

	if (!t) {
		free(s);
		return NULL;
	}
	t[n++] = '\n';
	t[n] = '\0';
	resp = MHD_create_response_from_buffer(n, t, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(t);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return resp;
}

void http_json(struct http_req *r, unsigned status, json_t *json)
{
	queue(r, status, json_response(json));
}

void http_json_located(struct http_req *r, unsigned status, json_t *json, const char *location)
{
	struct MHD_Response *resp = json_response(json);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
	queue(r, status, resp);
}

void http_error(struct http_req *r, const struct api_err *e)
{
	char *body = api_error_body(e);
	struct MHD_Response *resp = NULL;
	size_t n;

	if (body) {
		n = strlen(body);
		char *t = realloc(body, n + 2);

		if (t) {
			t[n++] = '\n';
			t[n] = '\0';
			body = t;
			resp = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
		}
		if (!resp)
			free(body);
	}
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		if (e->code == API_E_METHOD_NOT_ALLOWED && r->rm.allow)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->rm.allow);
	}
	queue(r, api_code_status(e->code), resp);
}

void http_no_content(struct http_req *r)
{
	queue(r, 204, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

void http_text(struct http_req *r, unsigned status, const char *content_type, char *buf, size_t len)
{
	struct MHD_Response *resp = buf ? MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE) : NULL;

	if (!resp)
		free(buf);
	else
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	queue(r, status, resp);
}

void http_stream(struct http_req *r, const char *content_type, MHD_ContentReaderCallback reader, void *cls,
		 MHD_ContentReaderFreeCallback free_cb)
{
	/* 64 KiB blocks: the agent's chunk size. */
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, reader, cls, free_cb);

	if (!resp) {
		free_cb(cls);
	} else {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
		/* Intermediaries that buffer (nginx) must pass events on at once. */
		MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	}
	queue(r, 200, resp);
}

static void upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra, size_t extra_n,
		     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = cls;
	void *ucls = r->upg_cls;

	(void)conn;
	(void)con_cls;
	/* Taken: on_completed must not release it too, whenever it runs. */
	r->upg_cls = NULL;
	r->upg_run(ucls, extra, extra_n, sock);
	r->upg_release(ucls);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

void http_upgrade(struct http_req *r, const char *protocol,
		  void (*run)(void *cls, const char *extra, size_t extra_n, int sock), void *cls,
		  void (*release)(void *cls))
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(upgraded, r);

	r->upg_run = run;
	r->upg_release = release;
	r->upg_cls = cls;
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, protocol);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	}
	queue(r, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

/* ---- for handlers ---- */

int http_body_json(struct http_req *r, bool optional, json_t **out, struct api_err *e)
{
	json_error_t je;

	*out = NULL;
	if (r->body_len == 0) {
		if (optional)
			return 0;
		api_err_set(e, API_E_BAD_JSON, "%s %s: the request needs a JSON body", r->method, r->path);
		return -1;
	}
	/* No \u0000 (the default), no duplicate keys: one body, one meaning. */
	*out = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!*out) {
		api_err_set(e, API_E_BAD_JSON, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
			    je.column);
		return -1;
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		api_err_set(e, API_E_BAD_JSON, "the body must be a JSON object");
		return -1;
	}
	return 0;
}

const char *http_header(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int http_conn_fd(struct http_req *r)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci ? ci->connect_fd : -1;
}

bool http_client_gone(int fd)
{
	/* POLLHUP, not POLLRDHUP: a client that half-closed its sending side
	 * after the request is still reading the answer. */
	struct pollfd p = { .fd = fd };

	if (fd < 0)
		return false;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

void http_upload(struct http_req *r, const struct http_upload_ops *ops, void *up)
{
	r->up_ops = ops;
	r->up = up;
}

/* ---- requests ---- */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct http_req *r = cls;

	(void)kind;
	if (r->nkv == HTTP_QUERY_MAX) {
		r->kv_overflow = true;
		return MHD_NO;
	}
	r->kv[r->nkv++] = (struct query_kv){ .key = key, .value = value };
	return MHD_YES;
}

static bool content_length(struct http_req *r, uint64_t *n)
{
	/* Digits only (RFC 9110, 8.6); anything else is left to the body
	 * limit that applies while the body streams in. */
	return num_parse_u64(http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH), 10, 0, UINT64_MAX, n) == 0;
}

/* Raw uploads streamed to the guest (--max-upload), not JSON. */
static bool is_upload(enum route_op op)
{
	return op == OP_FILE_PUT || op == OP_ARCHIVE_PUT;
}

static uint64_t body_limit(struct http_req *r)
{
	if (is_upload(r->rm.op))
		return r->d->cfg.max_upload ? r->d->cfg.max_upload : UINT64_MAX;
	return route_has_body(r->rm.op) ? r->d->cfg.max_body : 0;
}

static void too_large(struct http_req *r)
{
	struct api_err e;

	if (is_upload(r->rm.op))
		api_err_set(&e, API_E_BODY_TOO_LARGE, "the upload is larger than %" PRIu64 " bytes (--max-upload)",
			    r->d->cfg.max_upload);
	else if (!route_has_body(r->rm.op))
		api_err_set(&e, API_E_BODY_TOO_LARGE, "%s %s takes no request body", r->method, r->path);
	else
		api_err_set(&e, API_E_BODY_TOO_LARGE, "the body is larger than %" PRIu64 " bytes (--max-body)",
			    r->d->cfg.max_body);
	http_error(r, &e);
}

/* First call: everything that can be answered before the body is read. */
static void begin(struct http_req *r)
{
	struct api_err e;
	uint64_t cl;
	int fd = http_conn_fd(r);

	if (fd < 0 || peer_of(fd, &r->peer) < 0) {
		api_err_set(&e, API_E_FORBIDDEN, "kilnd cannot tell who is connecting (SO_PEERCRED failed)");
		http_error(r, &e);
		return;
	}
	if (!peer_allowed(&r->d->cfg, &r->peer)) {
		api_err_set(&e, API_E_FORBIDDEN,
			    "uid %u (gid %u) may not use this kilnd; it allows root, its own uid, --allow-uid and --allow-gid",
			    (unsigned)r->peer.uid, (unsigned)r->peer.gid);
		http_error(r, &e);
		return;
	}
	if (route_match(r->method_raw, r->url, &r->rm, &e)) {
		http_error(r, &e);
		return;
	}
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, r);
	if (r->kv_overflow) {
		api_err_set(&e, API_E_BAD_FIELD, "more than %d query parameters", HTTP_QUERY_MAX);
		http_error(r, &e);
		return;
	}
	if (content_length(r, &cl) && cl > body_limit(r)) {
		const char *expect = http_header(r, MHD_HTTP_HEADER_EXPECT);

		/* A client that waits for "100 Continue" has sent nothing yet:
		 * answer now. One that sends at once would see its connection
		 * close under its writes before it reads an early answer, so up
		 * to HTTP_DISCARD_MAX the body is read, dropped, then answered. */
		if ((expect && strcasecmp(expect, "100-continue") == 0) || cl > HTTP_DISCARD_MAX) {
			too_large(r);
			return;
		}
		r->too_large = true;
		return; /* and no upload starts: the target file stays as it is */
	}
	/* An upload's handler starts it before its body (http_upload). */
	if (is_upload(r->rm.op))
		r->svc->handlers[r->rm.op](r);
}

static void body_data(struct http_req *r, const char *data, size_t n)
{
	if (r->received + n > body_limit(r) || r->received + n < r->received)
		r->too_large = true;
	r->received += n;
	if (r->too_large)
		return; /* read and dropped: the answer is 413 */
	if (r->up_ops) {
		if (!r->body_failed && r->up_ops->data(r, data, n) < 0)
			r->body_failed = true;
		return;
	}
	if (r->body_len + n > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		char *b;

		while (cap < r->body_len + n)
			cap *= 2;
		b = realloc(r->body, cap);
		if (!b) {
			r->body_failed = true;
			return;
		}
		r->body = b;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
}

static void finish(struct http_req *r)
{
	struct api_err e;

	if (r->up_ops) {
		r->up_done = true;
		r->up_ops->end(r, r->too_large);
		return;
	}
	if (r->too_large) {
		too_large(r);
		return;
	}
	if (r->body_failed) {
		api_err_set(&e, API_E_INTERNAL, "out of memory reading the request body");
		http_error(r, &e);
		return;
	}
	r->svc->handlers[r->rm.op](r);
	if (!r->responded) {
		api_err_set(&e, API_E_INTERNAL, "%s %s: the handler gave no answer", r->method, r->path);
		http_error(r, &e);
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_req *r = *con_cls;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		r->svc = cls;
		r->d = r->svc->d;
		r->conn = conn;
		r->url = url;
		r->t0 = mono_ms_f();
		r->method_raw = method;
		/* Control characters and non-ASCII bytes in the log line would
		 * let a client forge log lines: shown as '?'. */
		text_clean_ascii(r->method, sizeof(r->method), method, strlen(method));
		text_clean_ascii(r->path, sizeof(r->path), url, strlen(url));
		begin(r);
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!r->responded)
			body_data(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!r->responded)
		finish(r);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	const struct http_service *svc = cls;
	struct kilnd *d = svc->d;
	struct http_req *r = *con_cls;

	(void)conn;
	if (!r)
		return;
	if (r->up_ops && !r->up_done)
		r->up_ops->cancel(r);
	if (r->upg_cls)
		r->upg_release(r->upg_cls); /* the 101 never went out */
	if (!d->cfg.quiet)
		kilnd_log("uid=%u %s %s %u %.1fms%s", (unsigned)r->peer.uid, r->method, r->path, r->status,
			  mono_ms_f() - r->t0, why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
	pthread_mutex_lock(&d->metrics_mu);
	metrics_http(&d->metrics, r->status);
	pthread_mutex_unlock(&d->metrics_mu);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return query_unescape(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	kilnd_log("libmicrohttpd: %s", buf);
}

struct MHD_Daemon *http_start(const struct http_service *svc, int listen_fd, char *err, size_t errlen)
{
	struct MHD_Daemon *mhd;

	/* Every route answers: a missing handler is a build mistake, found at start. */
	for (int op = OP_NONE + 1; op < OP_COUNT; op++) {
		if (!svc->handlers[op]) {
			snprintf(err, errlen, "no handler for route operation %d", op);
			return NULL;
		}
	}
	/* Thread per connection: handlers and stream readers may block.
	 * poll, not select: descriptors may exceed FD_SETSIZE. ITC: for
	 * MHD_quiesce_daemon at shutdown. Upgrade: the tty stream. */
	mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
			MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE,
		0, NULL, NULL, on_request, (void *)svc, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)svc, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)HTTP_CONNECTION_LIMIT, MHD_OPTION_END);

	if (!mhd)
		snprintf(err, errlen, "libmicrohttpd did not start on the socket");
	return mhd;
}

void http_quiesce(struct MHD_Daemon *mhd)
{
	MHD_quiesce_daemon(mhd);
}

void http_stop(struct MHD_Daemon *mhd)
{
	MHD_stop_daemon(mhd);
}

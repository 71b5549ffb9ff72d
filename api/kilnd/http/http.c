/* http: requests and answers of the HTTP server; see http.h. */
#include "api/kilnd/http/http.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/kilnd/http/http_chunked.h"
#include "api/kilnd/http/http_conn.h"
#include "api/kilnd/http/http_io.h"
#include "api/kilnd/http/http_resp.h"
#include "lib/base/json_text.h"
#include "lib/base/mem_grow.h"
#include "lib/base/json.h"
#include "lib/base/mono.h"
#include "lib/base/text_clean.h"

/* The most kilnd reads and drops to answer 413 after a whole body. */
#define HTTP_DISCARD_MAX (64u << 20)
/* A streamed response's block: the agent's chunk size. */
#define HTTP_STREAM_BLOCK 65536

/* ---- answers (recorded; sent once the handler returned) ---- */

static void answer(struct http_req *r, unsigned status, char *body, size_t len,
		   const char *content_type)
{
	if (r->responded) {
		/* A handler answers once; a second answer is a kilnd bug. */
		free(body);
		return;
	}
	r->responded = true;
	r->status = status;
	r->resp.body = body;
	r->resp.len = len;
	r->resp.content_type = content_type;
}

static void add_header(struct http_req *r, const char *name, const char *value)
{
	size_t n = strlen(r->resp.headers);

	snprintf(r->resp.headers + n, sizeof(r->resp.headers) - n, "%s: %s\r\n", name, value);
}

/* s (malloc'd, NUL-terminated) with a newline: a trailing newline keeps
 * curl output readable in a terminal. NULL when out of memory. */
static char *with_newline(char *s, size_t *len)
{
	size_t n;
	char *t;

	if (!s)
		return NULL;
	n = strlen(s);
	t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[n++] = '\n';
	t[n] = '\0';
	*len = n;
	return t;
}

static void out_of_memory(struct http_req *r)
{
	static const char body[] =
		"{\"error\":{\"code\":\"internal\",\"message\":\"kilnd is out of memory\"}}\n";

	answer(r, 500, strdup(body), sizeof(body) - 1, "application/json");
}

void http_json(struct http_req *r, unsigned status, json_t *json)
{
	char *s = json ? json_text(json, JSON_COMPACT) : NULL;
	size_t n = 0;

	json_decref(json);
	s = with_newline(s, &n);
	if (!s)
		out_of_memory(r);
	else
		answer(r, status, s, n, "application/json");
}

void http_json_located(struct http_req *r, unsigned status, json_t *json, const char *location)
{
	http_json(r, status, json);
	if (r->status == status)
		add_header(r, "Location", location);
}

void http_error(struct http_req *r, const struct api_err *e)
{
	size_t n = 0;
	char *body = with_newline(api_error_body(e), &n);

	if (!body) {
		out_of_memory(r);
		return;
	}
	answer(r, api_code_status(e->code), body, n, "application/json");
	if (e->code == API_E_METHOD_NOT_ALLOWED && r->rm.allow[0])
		add_header(r, "Allow", r->rm.allow);
}

void http_no_content(struct http_req *r)
{
	answer(r, 204, NULL, 0, NULL);
}

void http_text(struct http_req *r, unsigned status, const char *content_type, char *buf, size_t len)
{
	if (!buf)
		out_of_memory(r);
	else
		answer(r, status, buf, len, content_type);
}

void http_stream(struct http_req *r, const char *content_type, http_reader_fn reader, void *cls,
		 http_reader_free_fn free_cb)
{
	if (r->responded) {
		free_cb(cls);
		return;
	}
	answer(r, 200, NULL, 0, content_type);
	r->resp.reader = reader;
	r->resp.reader_cls = cls;
	r->resp.reader_free = free_cb;
	/* Intermediaries that buffer (nginx) must pass events on at once. */
	add_header(r, "X-Accel-Buffering", "no");
}

void http_upgrade(struct http_req *r, const char *protocol,
		  void (*run)(void *cls, const char *extra, size_t extra_n, int sock), void *cls,
		  void (*release)(void *cls))
{
	struct api_err e;

	if (!r->responded && !strcmp(r->head->method, "HEAD")) {
		/* A HEAD answer has no body to switch in (RFC 9110 section 7.8:
		 * the new protocol must honour the request's semantics). */
		api_err_set(&e, API_E_BAD_REQUEST,
			    "HEAD %s: this endpoint switches protocols; send GET with 'Upgrade: %s'",
			    r->path, protocol);
		http_error(r, &e);
	}
	if (r->responded) {
		release(cls);
		return;
	}
	answer(r, 101, NULL, 0, NULL);
	r->upg_run = run;
	r->upg_release = release;
	r->upg_cls = cls;
	add_header(r, "Upgrade", protocol);
	add_header(r, "Connection", "Upgrade");
}

/* ---- for handlers ---- */

int http_body_json(struct http_req *r, bool optional, json_t **out, struct api_err *e)
{
	json_error_t je;

	*out = NULL;
	if (r->body_len == 0) {
		if (optional)
			return 0;
		api_err_set(e, API_E_BAD_JSON, "%s %s: the request needs a JSON body", r->method,
			    r->path);
		return -1;
	}
	/* No \u0000 (the default), no duplicate keys: one body, one meaning. */
	*out = json_strict_loadb(r->body, r->body_len, &je);
	if (!*out) {
		api_err_set(e, API_E_BAD_JSON,
			    "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
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
	return http_head_field(r->head, name);
}

int http_conn_fd(struct http_req *r)
{
	return r->conn->fd;
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

/* ---- sending ---- */

/* The head of r's answer, framed f, into buf: its length or -ENOBUFS. */
static int format_head(const struct http_req *r, enum http_framing f, bool keep, char *buf,
		       size_t cap)
{
	struct http_resp_head h = {
		.status = r->status,
		.content_type = r->resp.content_type,
		.framing = f,
		.length = r->resp.len,
		.connection = http_resp_connection(r->head->minor, keep, r->status),
		.headers = r->resp.headers,
		.date = time(NULL),
	};

	return http_resp_head(buf, cap, &h);
}

/* A streamed body: chunks as the reader gives them. false when it broke. */
static bool send_stream(struct http_conn *c, struct http_req *r, bool chunked)
{
	char *buf = malloc(HTTP_STREAM_BLOCK + 32);
	bool ok = false;
	int k = 0;

	if (!buf)
		return false;
	for (;;) {
		ssize_t n = r->resp.reader(r->resp.reader_cls, buf + 16, HTTP_STREAM_BLOCK);

		if (n == HTTP_READER_END) {
			ok = !chunked || (k = conn_send(c, "0\r\n\r\n", 5)) == 0;
			break;
		}
		if (n <= 0 || (size_t)n > HTTP_STREAM_BLOCK) {
			if (!r->cut) /* a reader may have said why (stream_job) */
				r->cut = "its source failed";
			break;
		}
		if (!chunked) {
			if ((k = conn_send(c, buf + 16, (size_t)n)) < 0)
				break;
			r->sent += (uint64_t)n;
			continue;
		}
		/* The chunk's size line right before its data, one write. */
		char line[18];

		k = snprintf(line, sizeof(line), "%zx\r\n", (size_t)n);
		memcpy(buf + 16 - k, line, (size_t)k);
		memcpy(buf + 16 + n, "\r\n", 2);
		if ((k = conn_send(c, buf + 16 - k, (size_t)k + (size_t)n + 2)) < 0)
			break;
		r->sent += (uint64_t)n;
	}
	free(buf);
	if (!ok && !r->cut)
		r->cut = k == -ETIMEDOUT ? "the client took nothing for --client-timeout"
					 : "the client went away";
	return ok;
}

/* Run r's protocol switch on c's socket, once its 101 went out. */
static void run_upgrade(struct http_conn *c, struct http_req *r)
{
	void *ucls = r->upg_cls;

	/* Taken: the request's end must not release it too. */
	r->upg_cls = NULL;
	r->upg_run(ucls, c->buf + c->start, c->end - c->start, c->fd);
	r->upg_release(ucls);
	c->start = c->end = 0;
}

/* Send r's answer; false when the connection must close after it. */
static bool send_answer(struct http_conn *c, struct http_req *r, bool keep)
{
	bool head_only = strcmp(r->head->method, "HEAD") == 0;
	enum http_framing f = http_resp_framing(r->status, r->resp.reader != NULL, r->head->minor);
	char head[1024];
	int n;

	keep = http_resp_keep(keep, r->status, f);
	n = format_head(r, f, keep, head, sizeof(head));
	if (n < 0)
		return false;
	/* Head and a known body in one write: two would leave the body behind
	 * a Nagle wait for the head's (delayed) ACK on a TCP hop. */
	struct iovec iov[2] = {
		{ .iov_base = head, .iov_len = (size_t)n },
		{ .iov_base = r->resp.body,
		  .iov_len = head_only || f != HTTP_FRAME_LENGTH ? 0 : r->resp.len },
	};

	if (conn_sendv(c, iov, 2) < 0)
		return false;
	if (r->status == 101) {
		run_upgrade(c, r);
		return false;
	}
	if (head_only || !r->resp.reader)
		return keep;
	return send_stream(c, r, f == HTTP_FRAME_CHUNKED) && keep;
}

/* ---- requests ---- */

/* The matched route's body limit (none: 0). */
static const struct http_limit *route_limit(const struct http_req *r)
{
	const struct http_route *rt = r->rm.route;

	/* no route matched: whatever body follows is read and dropped */
	return !rt || rt->body == BODY_NONE ? NULL : &r->svc->limits[rt->limit];
}

static uint64_t body_limit(const struct http_req *r)
{
	const struct http_limit *l = route_limit(r);

	return l ? l->bytes : 0;
}

static void too_large(struct http_req *r)
{
	const struct http_limit *l = route_limit(r);
	struct api_err e;

	if (!l)
		api_err_set(&e, API_E_BODY_TOO_LARGE, "%s %s takes no request body", r->method,
			    r->path);
	else
		api_err_set(&e, API_E_BODY_TOO_LARGE,
			    "the %s is larger than %" PRIu64 " bytes (%s)", l->what, l->bytes,
			    l->option);
	http_error(r, &e);
}

/* Everything that can be answered before the body is read. */
static void begin(struct http_req *r)
{
	const struct http_head *h = r->head;
	struct api_err e;

	int k = http_route_match(r->svc->routes, r->svc->nroutes, h->method, h->path, &r->rm, &e);

	if (k == HTTP_ROUTE_OPTIONS) {
		/* RFC 9110 section 9.3.7: what the resource allows, no body. */
		http_no_content(r);
		add_header(r, "Allow", r->rm.allow);
		return;
	}
	if (k) {
		http_error(r, &e);
		return;
	}
	if (h->query) {
		r->query_copy = strdup(h->query);
		if (!r->query_copy) {
			out_of_memory(r);
			return;
		}
		if (query_split(r->query_copy, r->kv, HTTP_QUERY_MAX, &r->nkv) < 0) {
			api_err_set(&e, API_E_BAD_FIELD, "more than %d query parameters",
				    HTTP_QUERY_MAX);
			http_error(r, &e);
			return;
		}
	}
	if (h->body == HTTP_BODY_LENGTH && h->content_length > body_limit(r)) {
		/* A client that waits for "100 Continue" has sent nothing yet:
		 * answer now. One that sends at once would see its connection
		 * close under its writes before it reads an early answer, so up
		 * to HTTP_DISCARD_MAX the body is read, dropped, then answered. */
		if (h->expect_continue || h->content_length > HTTP_DISCARD_MAX) {
			too_large(r);
			return;
		}
		r->too_large = true;
		return; /* and no upload starts: the target file stays as it is */
	}
	/* An upload's handler starts it before its body (http_upload). */
	if (r->rm.route->body == BODY_UPLOAD)
		r->rm.route->handler(r);
}

static void body_data(struct http_req *r, const char *data, size_t n)
{
	if (r->received + n > body_limit(r) || r->received + n < r->received)
		r->too_large = true;
	r->received += n;
	if (r->too_large || r->responded)
		return; /* read and dropped */
	if (r->up_ops) {
		if (!r->body_failed && r->up_ops->data(r, data, n) < 0)
			r->body_failed = true;
		return;
	}
	if (r->body_len + n > r->body_cap) {
		/* body_limit(r) has bounded body_len + n above */
		char *b = mem_grow(r->body, &r->body_cap, r->body_len + n, 4096, body_limit(r));

		if (!b) {
			r->body_failed = true;
			return;
		}
		r->body = b;
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
	r->rm.route->handler(r);
	if (!r->responded) {
		api_err_set(&e, API_E_INTERNAL, "%s %s: the handler gave no answer", r->method,
			    r->path);
		http_error(r, &e);
	}
}

enum body_end {
	BODY_DONE,    /* all of it read */
	BODY_STOPPED, /* reading stopped on purpose (too much to drop) */
	BODY_BROKEN,  /* the client went away or broke the framing */
};

/* Read r's body, handing it to body_data. At most `drop` bytes are read
 * once the answer is decided (too large, or answered early). */
static enum body_end read_body(struct http_conn *c, struct http_req *r, struct api_err *e)
{
	const struct http_head *h = r->head;
	uint64_t left = h->content_length;
	struct http_chunked ch;

	http_chunked_init(&ch);
	for (;;) {
		size_t avail = c->end - c->start;

		if ((r->too_large || r->responded) && r->received > HTTP_DISCARD_MAX)
			return BODY_STOPPED;
		if (h->body == HTTP_BODY_LENGTH && !left)
			return BODY_DONE;
		if (avail) {
			const char *data = c->buf + c->start;
			size_t used = avail;

			if (h->body == HTTP_BODY_LENGTH) {
				if (used > left)
					used = (size_t)left;
				left -= used;
				body_data(r, data, used);
				c->start += used;
				continue;
			}
			size_t dn;
			int k = http_chunked_feed(&ch, c->buf + c->start, avail, &used, &data, &dn,
						  e);

			c->start += used;
			if (k < 0)
				return BODY_BROKEN;
			if (dn)
				body_data(r, data, dn);
			if (k > 0)
				return BODY_DONE;
			continue;
		}
		ssize_t n = conn_fill(c, mono_ms() + c->srv->timeout_ms);

		if (n == -ETIMEDOUT)
			api_err_set(e, API_E_REQUEST_TIMEOUT,
				    "the request body stopped for %d s (--client-timeout); the request is dropped",
				    c->srv->timeout_ms / 1000);
		else if (n <= 0)
			e->code = API_OK; /* gone: nobody to answer */
		if (n <= 0)
			return BODY_BROKEN;
	}
}

/* The request's log line and metrics, and what it still holds. */
static void request_end(struct http_req *r, bool complete)
{
	if (r->up_ops && !r->up_done)
		r->up_ops->cancel(r);
	if (r->upg_cls)
		r->upg_release(r->upg_cls); /* the 101 never went out */
	if (r->resp.reader_free)
		r->resp.reader_free(r->resp.reader_cls);
	r->svc->request_done(r->svc, r, complete);
	free(r->resp.body);
	free(r->body);
	free(r->query_copy);
	free(r);
}

/* An answer to a request that could not be served (e), then the
 * connection closes; logged like any request. */
static void answer_error_and_close(struct http_conn *c, const struct http_head *h,
				   const char *method, const char *path, const struct api_err *e)
{
	struct http_req *r = calloc(1, sizeof(*r));
	static const struct http_head no_head = { .method = "", .minor = 1 };

	if (!r)
		return;
	r->svc = c->srv->svc;
	r->d = r->svc->d;
	r->conn = c;
	r->head = h ? h : &no_head;
	r->peer = c->peer;
	r->t0 = mono_ms_f();
	text_clean_ascii(r->method, sizeof(r->method), method, strlen(method));
	text_clean_ascii(r->path, sizeof(r->path), path, strlen(path));
	r->unread = e->code;
	http_error(r, e);
	if (e->code == API_E_SHUTTING_DOWN)
		add_header(r, "Retry-After", "1");
	send_answer(c, r, false);
	conn_linger(c);
	request_end(r, true);
}

/* Once the server stops accepting, the wait for a head lasts at most this
 * much longer: a request already on its way (sent as its connection was
 * accepted) is still read and served, and nobody holds a handover up. */
#define HEAD_GRACE_MS 500

/* Wait for a complete head in c's buffer: its length, 0 when the client
 * closed or stayed silent (nothing to answer), -1 with e. */
static long read_head(struct http_conn *c, int64_t deadline, struct api_err *e)
{
	struct http_head_scan sc = { 0 };
	bool stopping = false;

	for (;;) {
		long n = http_head_scan_end(c->buf + c->start, c->end - c->start, &sc, e);
		ssize_t k;

		if (n)
			return n;
		k = stopping ? conn_fill(c, deadline) : conn_fill_head(c, deadline);
		if (k > 0)
			continue;
		if (k == -ESHUTDOWN) {
			stopping = true;
			if (deadline > mono_ms() + HEAD_GRACE_MS)
				deadline = mono_ms() + HEAD_GRACE_MS;
			continue;
		}
		/* Handing over (or stopping): a client part-way through a head,
		 * or on a connection not yet used, is told to retry at once
		 * rather than holding the handover up to --client-timeout; the
		 * new kilnd answers the retry. An idle keep-alive connection
		 * just closes. */
		if (k == -ETIMEDOUT && stopping && (c->end > c->start || !c->served)) {
			api_err_set(e, API_E_SHUTTING_DOWN,
				    "kilnd is handing over to a new kilnd (--upgrade) or stopping; "
				    "this request was not read: send it again");
			return -1;
		}
		if (k == -ETIMEDOUT && c->end > c->start) {
			api_err_set(e, API_E_REQUEST_TIMEOUT,
				    "the request's head did not arrive within %d s (--client-timeout)",
				    c->srv->timeout_ms / 1000);
			return -1;
		}
		return 0;
	}
}

/* One request on c whose head is c->buf[start..start+hlen). false when
 * the connection closes after it. */
static bool serve_one(struct http_conn *c, size_t hlen)
{
	struct http_head h;
	struct http_req *r;
	struct api_err e = { 0 };
	char *head = c->buf + c->start;
	bool keep;

	c->start += hlen;
	c->pin = c->start;
	if (http_head_parse(head, hlen, &h, &e) < 0) {
		answer_error_and_close(c, NULL, "-", "-", &e);
		return false;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	r->svc = c->srv->svc;
	r->d = r->svc->d;
	r->conn = c;
	r->head = &h;
	r->peer = c->peer;
	r->t0 = mono_ms_f();
	/* Control characters and non-ASCII bytes in the log line would let a
	 * client forge log lines: shown as '?'. */
	text_clean_ascii(r->method, sizeof(r->method), h.method, strlen(h.method));
	text_clean_ascii(r->path, sizeof(r->path), h.path, strlen(h.path));
	keep = h.keep_alive;
	begin(r);
	if (h.body != HTTP_BODY_NONE) {
		enum body_end end = BODY_STOPPED;

		if (r->responded &&
		    (h.expect_continue ||
		     (h.body == HTTP_BODY_LENGTH && h.content_length > HTTP_DISCARD_MAX))) {
			/* Answered before a body the client has not sent or that is
			 * too big to drop: answer, then close. */
		} else {
			if (h.expect_continue && !r->too_large &&
			    conn_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) {
				request_end(r, false);
				return false;
			}
			end = read_body(c, r, &e);
		}
		if (end == BODY_BROKEN && !e.code) {
			request_end(r, false); /* the client is gone */
			return false;
		}
		if (end == BODY_BROKEN && !r->responded)
			http_error(r, &e);
		if (end != BODY_DONE)
			keep = false;
	}
	if (!r->responded)
		finish(r);
	if (atomic_load(r->svc->closing))
		keep = false;
	keep = send_answer(c, r, keep);
	if (!keep && c->end > c->start)
		conn_linger(c);
	request_end(r, !r->cut);
	return keep;
}

void http_conn_serve(struct http_conn *c)
{
	for (;;) {
		struct api_err e;
		long n = read_head(c, mono_ms() + c->srv->timeout_ms, &e);

		if (n < 0) {
			answer_error_and_close(c, NULL, "-", "-", &e);
			return;
		}
		if (n == 0 || !serve_one(c, (size_t)n))
			return;
		c->served = true;
		/* The next request's bytes already read move to the front, where
		 * a head is read. */
		c->pin = 0;
		if (c->start) {
			memmove(c->buf, c->buf + c->start, c->end - c->start);
			c->end -= c->start;
			c->start = 0;
		}
	}
}

void http_conn_refuse(struct http_conn *c)
{
	/* Answered before the request arrives: the client still sends it
	 * (the socket reads on while conn_linger drops it) and then reads
	 * the answer, and the refusal holds its thread for a second at most. */
	answer_error_and_close(c, NULL, "-", "-", &c->err);
}

/* One request to kilnd over its Unix socket (cli_http.h). */
#include "api/kiln/cli_http.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/kiln/cli_body.h" /* cli_answer_ms, CLI_WAIT_BOOT */
#include "lib/base/mono.h"

struct xfer {
	const struct cli_http *h;
	const struct cli_req *req;
	struct cli_resp *resp;
	CURL *curl;
	bool sinking; /* decided at the first body byte from the status */
	bool decided;
	bool too_big;
	bool head_too_big;
	size_t head_bytes; /* of every head so far (1xx ones too) */
	bool connected;    /* curl's pre-request callback ran */
	bool head_done;    /* the final (non-1xx) status line and headers arrived */
	bool timed_out;
	bool probe_failed;   /* an unbounded wait's health check went unanswered */
	bool boot_asked;     /* kilnd's boot_timeout_s was asked for at the deadline */
	bool queue_full;     /* connect() kept failing with EAGAIN until the deadline */
	long long answer_ms; /* 0: no limit */
	int64_t since_ms;    /* the connection, or the last upload bytes; 0: not yet */
};

static int collect(struct xfer *x, const char *p, size_t n)
{
	struct cli_resp *r = x->resp;
	char *nb;

	if (r->len + n > CLI_BODY_MAX) {
		x->too_big = true;
		return -1;
	}
	nb = realloc(r->body, r->len + n + 1);
	if (!nb)
		return -1;
	memcpy(nb + r->len, p, n);
	r->body = nb;
	r->len += n;
	r->body[r->len] = 0;
	return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	int rc;

	if (!x->decided) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->resp->status);
		x->sinking = x->req->sink && x->resp->status >= 200 && x->resp->status < 300;
		x->decided = true;
	}
	if (!x->sinking)
		return collect(x, p, n) ? 0 : n;
	rc = x->req->sink(x->req->sink_arg, p, n);
	if (rc) {
		x->resp->local_err = rc;
		return 0; /* curl aborts with CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_upload(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	ssize_t got = x->req->source(x->req->source_arg, p, size * nmemb);

	/* kilnd took what we sent: its time to answer counts from here. */
	x->since_ms = mono_ms();
	if (got < 0) {
		x->resp->local_err = (int)got;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)got;
}

/* A header line: the final status line's blank line ends the head. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	long status = 0;

	x->head_bytes += n;
	if (x->head_bytes > CLI_HEAD_MAX) {
		x->head_too_big = true;
		return 0; /* curl aborts with CURLE_WRITE_ERROR */
	}
	if ((n == 2 && p[0] == '\r' && p[1] == '\n') || (n == 1 && p[0] == '\n')) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
		/* 100 Continue is followed by the real answer. */
		if (status >= 200 || status == 101)
			x->head_done = true;
	}
	return n;
}

/* Connected, the request not sent yet: the answer's time starts. */
static int on_prereq(void *arg, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port)
{
	struct xfer *x = arg;

	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	x->connected = true;
	/* An upload's clock starts at its first bytes instead: curl may first
	 * wait for a "100 Continue" that a kilnd need not send. */
	if (!x->req->source)
		x->since_ms = mono_ms();
	return CURL_PREREQFUNC_OK;
}

struct probe_body {
	char buf[4096];
	size_t len;
};

static size_t probe_collect(char *p, size_t size, size_t nmemb, void *arg)
{
	struct probe_body *b = arg;
	size_t n = size * nmemb, room = sizeof(b->buf) - 1 - b->len;

	memcpy(b->buf + b->len, p, n < room ? n : room);
	b->len += n < room ? n : room;
	return n; /* the rest of a longer answer is dropped, not an error */
}

/* GET /v1/health on a connection of its own, within the base timeout:
 * curl's result, and (CURLE_OK) the answer's boot_timeout_s, 0 when it
 * has none (a kilnd older than the field, or not kilnd's answer). */
static CURLcode health_probe(const struct cli_http *h, long long *boot_timeout_s)
{
	struct probe_body b = { .len = 0 };
	CURL *p = curl_easy_init();
	CURLcode cc;
	json_t *j, *v;

	*boot_timeout_s = 0;
	if (!p)
		return CURLE_OUT_OF_MEMORY;
	curl_easy_setopt(p, CURLOPT_UNIX_SOCKET_PATH, h->socket);
	curl_easy_setopt(p, CURLOPT_URL, "http://kiln/v1/health");
	curl_easy_setopt(p, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p, CURLOPT_PROXY, "");
	curl_easy_setopt(p, CURLOPT_TIMEOUT_MS, (long)h->timeout_s * 1000);
	curl_easy_setopt(p, CURLOPT_WRITEFUNCTION, probe_collect);
	curl_easy_setopt(p, CURLOPT_WRITEDATA, &b);
	cc = curl_easy_perform(p);
	curl_easy_cleanup(p);
	j = cc == CURLE_OK ? json_loadb(b.buf, b.len, 0, NULL) : NULL;
	v = json_object_get(j, "boot_timeout_s");
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 86400)
		*boot_timeout_s = json_integer_value(v);
	json_decref(j);
	return cc;
}

/* Does kilnd answer a health check within the base timeout? Any HTTP
 * answer counts: it is at work. */
static bool kilnd_alive(const struct cli_http *h)
{
	long long boot_s;
	CURLcode cc = health_probe(h, &boot_s);

	/* Only silence is an answer: a full listen queue (EAGAIN at once) is
	 * kilnd busy, and a kilnd gone breaks the waiting request itself;
	 * no memory for the probe cannot tell, so the wait goes on. */
	return cc != CURLE_OPERATION_TIMEDOUT && cc != CURLE_GOT_NOTHING;
}

/* A bounded answer is late. A request that may boot a sandbox was given
 * CLI_WAIT_BOOT, kilnd's default --boot-timeout: a kilnd started with a
 * longer one says so in its health answer, and the wait grows by the
 * difference, once. Whether it grew. */
static bool boot_allowance_grows(struct xfer *x)
{
	long long boot_s;

	if (x->boot_asked || x->req->wait_s < CLI_WAIT_BOOT || !x->h->timeout_s)
		return false;
	x->boot_asked = true;
	if (health_probe(x->h, &boot_s) != CURLE_OK || boot_s <= CLI_WAIT_BOOT)
		return false;
	x->answer_ms += (boot_s - CLI_WAIT_BOOT) * 1000;
	return true;
}

/* curl calls this about once a second, and at every transfer step. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (x->req->cancel && *x->req->cancel)
		return 1;
	/* A wait with no end of its own (an exec that answers at its exit):
	 * waited for as long as kilnd answers a health check each base
	 * timeout, so a socket that never answers is still found. */
	if (x->since_ms && !x->answer_ms && x->h->timeout_s && !x->head_done &&
	    mono_ms() - x->since_ms > (int64_t)x->h->timeout_s * 1000) {
		if (!kilnd_alive(x->h)) {
			x->timed_out = x->probe_failed = true;
			return 1;
		}
		x->since_ms = mono_ms();
		return 0;
	}
	/* A stream may stay quiet once it has begun; a collected answer
	 * is held to the limit to its end. */
	if (!x->since_ms || !x->answer_ms || (x->head_done && x->req->sink))
		return 0;
	if (mono_ms() - x->since_ms > x->answer_ms && !boot_allowance_grows(x)) {
		x->timed_out = true;
		return 1;
	}
	return 0;
}

int cli_http_open(struct cli_http *h, const char *socket, unsigned long timeout_s)
{
	memset(h, 0, sizeof(*h));
	h->socket = socket;
	h->timeout_s = timeout_s;
	h->curl = curl_easy_init();
	return h->curl ? 0 : -ENOMEM;
}

void cli_http_close(struct cli_http *h)
{
	if (h->curl)
		curl_easy_cleanup(h->curl);
	h->curl = NULL;
}

static int transfer_failed(struct cli_http *h, CURLcode cc, struct xfer *x, struct cli_fail *f)
{
	long os_errno = 0;
	struct stat st;

	if (cc == CURLE_COULDNT_CONNECT && !x->queue_full) {
		curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno);
		/* connect() to a regular file is ECONNREFUSED too; a user who
		 * passed the wrong path deserves to hear it is not a socket. */
		if (os_errno == ECONNREFUSED && stat(h->socket, &st) == 0 && !S_ISSOCK(st.st_mode))
			os_errno = ENOTSOCK;
		cli_fail_unreachable(h->socket, (int)os_errno, h->errbuf, f);
		return -1;
	}
	if (x->probe_failed) {
		cli_fail_unresponsive(h->socket, h->timeout_s, f);
		return -1;
	}
	if (x->timed_out || (cc == CURLE_OPERATION_TIMEDOUT && !x->connected) || x->queue_full) {
		cli_fail_timeout(h->socket, x->connected,
				 x->timed_out ? (unsigned long long)x->answer_ms / 1000
					      : h->timeout_s,
				 f);
		return -1;
	}
	if (x->resp->local_err)
		return cli_fail_set(f, CLI_EXIT_LOCAL, NULL, "%s", strerror(-x->resp->local_err));
	if (cc == CURLE_ABORTED_BY_CALLBACK && x->req->cancel && *x->req->cancel)
		return cli_fail_set(f, CLI_EXIT_API, "interrupted", "interrupted");
	if (x->head_too_big)
		return cli_fail_set(f, CLI_EXIT_API, NULL,
				    "kilnd's answer head is larger than %u KiB (another program on "
				    "the socket %s?)",
				    CLI_HEAD_MAX >> 10, h->socket);
	if (x->too_big)
		return cli_fail_set(f, CLI_EXIT_API, NULL, "kilnd's answer is larger than %u MiB",
				    CLI_BODY_MAX >> 20);
	if (cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING)
		return cli_fail_set(
			f, CLI_EXIT_API, NULL,
			"the transfer broke off before its end (%s): kilnd or the sandbox went away, "
			"or the guest failed mid-way; what arrived is incomplete",
			h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
	return cli_fail_set(f, CLI_EXIT_API, NULL, "talking to kilnd at %s: %s", h->socket,
			    h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
}

/*
 * Try the connection again? A Unix socket whose listen queue is full
 * fails a non-blocking connect() with EAGAIN at once (curl then reports
 * no errno): kilnd is busy accepting, not gone, so kiln tries again until
 * the connect deadline, and then reports a timeout (exit 3).
 */
static bool queue_full(struct cli_http *h)
{
	long os_errno = 0;
	struct stat st;

	curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno);
	return (!os_errno || os_errno == EAGAIN) && stat(h->socket, &st) == 0 &&
		S_ISSOCK(st.st_mode);
}

int cli_http_do(struct cli_http *h, const struct cli_req *req, struct cli_resp *resp,
		struct cli_fail *f)
{
	struct xfer x = { .h = h, .req = req, .resp = resp, .curl = h->curl };
	/* 0 would be curl's default of 300 s, not "none": a day is. */
	long connect_ms = h->timeout_s ? (long)h->timeout_s * 1000 : 86400000L;
	int64_t connect_deadline = mono_ms() + connect_ms;
	struct curl_slist *hdr = NULL;
	char url[8192];
	CURLcode cc;
	int rc = 0;

	memset(resp, 0, sizeof(*resp));
	if (cli_fail_socket_path(h->socket, f))
		return -1;
	x.answer_ms = cli_answer_ms(h->timeout_s, req->wait_s);
	if (snprintf(url, sizeof(url), "http://kiln%s", req->path) >= (int)sizeof(url))
		return cli_fail_set(f, CLI_EXIT_USAGE, NULL, "the request path is too long");
	curl_easy_reset(h->curl);
	h->errbuf[0] = 0;
	curl_easy_setopt(h->curl, CURLOPT_UNIX_SOCKET_PATH, h->socket);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	/* Only kilnd's own answers: no redirects, no proxy from the
	 * environment (http_proxy would otherwise apply to http://kiln). */
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h->curl, CURLOPT_PROXY, "");
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &x);
	if (req->body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)strlen(req->body));
	} else if (req->source) {
		curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(h->curl, CURLOPT_READDATA, &x);
		if (req->source_size >= 0)
			curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE,
					 (curl_off_t)req->source_size);
		hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
	}
	if (strcmp(req->method, "GET") && !(req->source && !strcmp(req->method, "PUT")))
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(h->curl, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(h->curl, CURLOPT_PREREQDATA, &x);
	/* The answer's limit and Ctrl-C (req->cancel) are checked here. */
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, &x);
	if (!strcmp(req->method, "POST") && !req->body && !req->source) {
		/* A POST without a body (stop, start) still sends
		 * Content-Length: 0, as kilnd's body checks expect. */
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, "");
	}
	if (hdr)
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
	for (;;) {
		cc = curl_easy_perform(h->curl);
		if (cc != CURLE_COULDNT_CONNECT || !queue_full(h) || (req->cancel && *req->cancel))
			break;
		if (mono_ms() >= connect_deadline) {
			x.queue_full = true;
			break;
		}
		usleep(100 * 1000);
	}
	curl_slist_free_all(hdr);
	if (resp->status == 0)
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (cc != CURLE_OK && resp->status >= 400 && resp->len && !x.too_big && !x.head_too_big) {
		/* kilnd answered and closed while we were still sending (a 413
		 * before the upload's end): its error says more than curl's. */
		cli_fail_from_response(resp->status, resp->body, resp->len, f);
		rc = -1;
	} else if (cc != CURLE_OK)
		rc = transfer_failed(h, cc, &x, f);
	else if (resp->status < 200 || resp->status >= 300) {
		cli_fail_from_response(resp->status, resp->body, resp->len, f);
		rc = -1;
	}
	/* curl_easy_reset drops these; the slist and &x are gone after return. */
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, NULL);
	curl_easy_setopt(h->curl, CURLOPT_PREREQFUNCTION, NULL);
	if (rc) {
		free(resp->body);
		resp->body = NULL;
		resp->len = 0;
	}
	return rc;
}

/*
 * kilnd's HTTP server as a client sees it: http_conn_serve on one end of
 * a socket pair, with a route table of its own: HTTP/1.0 keep-alive (said
 * back, or the connection closes), streams to HTTP/1.0, HEAD (GET's head,
 * no body, no protocol switch), OPTIONS (204 with Allow), later 1.x
 * served as 1.1, and each answer's head and body in one write.
 *
 * The socket pair is SOCK_SEQPACKET, so each write kilnd makes is one
 * record the client reads whole: "head and body in one write" is a
 * record holding both. test_http_head.c has the request side,
 * test_http_resp.c the pure decisions, and tests/unit/kilnd_http_test a
 * real kilnd driven by curl and ab.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/kilnd/http/http.h"
#include "api/kilnd/http/http_conn.h"

/* ---- the server's answers, over a socket pair ------------------------- */

static int upgrade_runs, upgrade_releases;

static void h_json(struct http_req *r)
{
	http_json(r, 200, json_pack("{s:i}", "a", 1));
}

struct words {
	int left;
};

static ssize_t words_read(void *cls, char *buf, size_t max)
{
	struct words *w = cls;

	(void)max;
	if (!w->left)
		return HTTP_READER_END;
	w->left--;
	memcpy(buf, "abc", 3);
	return 3;
}

/* Two words, then the source fails (an agent read cut short). */
static ssize_t broken_read(void *cls, char *buf, size_t max)
{
	struct words *w = cls;

	(void)max;
	if (!w->left)
		return HTTP_READER_ERROR;
	w->left--;
	memcpy(buf, "abc", 3);
	return 3;
}

static void h_broken(struct http_req *r)
{
	struct words *w = calloc(1, sizeof(*w));

	w->left = 2;
	http_stream(r, "text/plain", broken_read, w, free);
}

static void h_stream(struct http_req *r)
{
	struct words *w = calloc(1, sizeof(*w));

	w->left = 2;
	http_stream(r, "text/plain", words_read, w, free);
}

static void upg_run(void *cls, const char *extra, size_t extra_n, int sock)
{
	(void)cls;
	(void)extra;
	(void)extra_n;
	(void)sock;
	upgrade_runs++;
}

static void upg_release(void *cls)
{
	(void)cls;
	upgrade_releases++;
}

static void h_upgrade(struct http_req *r)
{
	http_upgrade(r, "kiln-test", upg_run, NULL, upg_release);
}

static void h_post(struct http_req *r)
{
	http_no_content(r);
}

static const struct http_route test_routes[] = {
	{ "GET", "/j", h_json, BODY_NONE, 0 },   { "GET", "/s", h_stream, BODY_NONE, 0 },
	{ "GET", "/b", h_broken, BODY_NONE, 0 }, { "GET", "/u", h_upgrade, BODY_NONE, 0 },
	{ "POST", "/p", h_post, BODY_JSON, 0 },
};
static const struct http_limit test_limits[] = { { 1024, "body", "--max-body" } };
static atomic_bool not_closing;

/* What request_done saw of the last request (kilnd's log line). */
static struct {
	bool complete;
	const char *cut;
	uint64_t sent;
} last;

static void done(const struct http_service *svc, const struct http_req *r, bool complete)
{
	(void)svc;
	last.complete = complete;
	last.cut = r->cut;
	last.sent = r->sent;
}

static const struct http_service test_svc = {
	.routes = test_routes,
	.nroutes = sizeof(test_routes) / sizeof(test_routes[0]),
	.limits = test_limits,
	.nlimits = 1,
	.timeout_ms = 5000,
	.request_done = done,
	.closing = &not_closing,
};

struct pair {
	struct http_server srv;
	struct http_conn *c;
	int client;
	pthread_t th;
	char rec[70000];
};

static void *serve_thread(void *arg)
{
	struct http_conn *c = arg;

	http_conn_serve(c);
	shutdown(c->fd, SHUT_RDWR); /* the client sees the close */
	return NULL;
}

static struct pair *pair_start(void)
{
	struct pair *p = calloc(1, sizeof(*p));
	struct timeval tv = { .tv_sec = 5 };
	int sv[2];

	assert_non_null(p);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	p->srv.svc = &test_svc;
	p->srv.timeout_ms = test_svc.timeout_ms;
	p->c = calloc(1, sizeof(*p->c));
	assert_non_null(p->c);
	p->c->srv = &p->srv;
	p->c->fd = sv[0];
	p->client = sv[1];
	assert_int_equal(pthread_create(&p->th, NULL, serve_thread, p->c), 0);
	return p;
}

static void pair_end(struct pair *p)
{
	close(p->client);
	pthread_join(p->th, NULL);
	close(p->c->fd);
	free(p->c);
	free(p);
}

static void say(struct pair *p, const char *req)
{
	assert_int_equal(send(p->client, req, strlen(req), 0), (ssize_t)strlen(req));
}

/* The next write kilnd made, NUL-terminated in p->rec ("" at its close). */
static const char *heard(struct pair *p)
{
	ssize_t n = recv(p->client, p->rec, sizeof(p->rec) - 1, 0);

	assert_true(n >= 0);
	p->rec[n] = '\0';
	return p->rec;
}

/* What follows the head in the record. */
static const char *body_of(const char *rec)
{
	const char *e = strstr(rec, "\r\n\r\n");

	assert_non_null(e);
	return e + 4;
}

static void test_head_and_body_one_write(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	say(p, "GET /j HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
	assert_non_null(strstr(r, "\r\nContent-Length: 8\r\n"));
	assert_null(strstr(r, "Connection:"));
	assert_string_equal(body_of(r), "{\"a\":1}\n");
	/* An error answer too. */
	say(p, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
	assert_non_null(strstr(body_of(r), "route_not_found"));
	pair_end(p);
}

static void test_http10_keep_alive(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	/* What `ab -k` sends: kept open, and said so. */
	for (int i = 0; i < 2; i++) {
		say(p, "GET /j HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
		r = heard(p);
		assert_true(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
		assert_non_null(strstr(r, "\r\nConnection: keep-alive\r\n"));
		assert_string_equal(body_of(r), "{\"a\":1}\n");
	}
	/* Without the token: answered, said so, closed. */
	say(p, "GET /j HTTP/1.0\r\n\r\n");
	r = heard(p);
	assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
	assert_string_equal(body_of(r), "{\"a\":1}\n");
	assert_string_equal(heard(p), "");
	pair_end(p);
}

/* A stream to HTTP/1.0 is delimited by the close: no Content-Length. */
static void test_http10_stream(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	say(p, "GET /s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	r = heard(p);
	assert_null(strstr(r, "Content-Length"));
	assert_null(strstr(r, "Transfer-Encoding"));
	assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
	assert_string_equal(body_of(r), "");
	assert_string_equal(heard(p), "abc");
	assert_string_equal(heard(p), "abc");
	assert_string_equal(heard(p), "");
	pair_end(p);
}

/* A stream whose source fails after its 200 went out: the chunked body
 * ends without its last chunk (the client sees the cut), the connection
 * closes, and the request's end says so, with the bytes sent (issue 35
 * item 16: a cut download left no log line). */
static void test_stream_cut(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	say(p, "GET /b HTTP/1.1\r\nHost: k\r\n\r\n");
	r = heard(p);
	assert_non_null(strstr(r, "200 OK"));
	assert_non_null(strstr(r, "Transfer-Encoding: chunked"));
	assert_string_equal(heard(p), "3\r\nabc\r\n");
	assert_string_equal(heard(p), "3\r\nabc\r\n");
	assert_string_equal(heard(p), ""); /* closed: no "0\r\n\r\n" */
	pair_end(p);
	assert_false(last.complete);
	assert_string_equal(last.cut, "its source failed");
	assert_int_equal(last.sent, 6);

	p = pair_start();
	say(p, "GET /s HTTP/1.1\r\nHost: k\r\n\r\n");
	heard(p);
	heard(p);
	heard(p);
	assert_string_equal(heard(p), "0\r\n\r\n");
	say(p, "GET /j HTTP/1.1\r\nHost: k\r\nConnection: close\r\n\r\n");
	heard(p);
	pair_end(p);
	assert_true(last.complete);
	assert_null(last.cut);
}

static void test_head(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	say(p, "HEAD /j HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
	assert_non_null(strstr(r, "\r\nContent-Length: 8\r\n"));
	assert_non_null(strstr(r, "\r\nContent-Type: application/json\r\n"));
	assert_string_equal(body_of(r), "");
	/* The stream's head, none of its chunks; the connection goes on. */
	say(p, "HEAD /s HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_non_null(strstr(r, "\r\nTransfer-Encoding: chunked\r\n"));
	assert_string_equal(body_of(r), "");
	say(p, "HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
	assert_non_null(strstr(r, "\r\nContent-Length: "));
	assert_string_equal(body_of(r), "");
	say(p, "HEAD /p HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 405 ", 13) == 0);
	assert_non_null(strstr(r, "\r\nAllow: POST, OPTIONS\r\n"));
	assert_string_equal(body_of(r), "");
	/* No protocol switch on HEAD; what the handler held is released. */
	say(p, "HEAD /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: kiln-test\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 400 ", 13) == 0);
	assert_int_equal(upgrade_runs, 0);
	assert_int_equal(upgrade_releases, 1);
	say(p, "GET /j HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_string_equal(body_of(heard(p)), "{\"a\":1}\n");
	pair_end(p);
}

static void test_options(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	say(p, "OPTIONS /j HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 204 No Content\r\n", 25) == 0);
	assert_non_null(strstr(r, "\r\nAllow: GET, HEAD, OPTIONS\r\n"));
	assert_null(strstr(r, "Content-Length"));
	assert_string_equal(body_of(r), "");
	say(p, "OPTIONS /p HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_non_null(strstr(heard(p), "\r\nAllow: POST, OPTIONS\r\n"));
	say(p, "OPTIONS /nope HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_true(strncmp(heard(p), "HTTP/1.1 404 ", 13) == 0);
	/* The 405 names them too. */
	say(p, "DELETE /j HTTP/1.1\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 405 ", 13) == 0);
	assert_non_null(strstr(r, "\r\nAllow: GET, HEAD, OPTIONS\r\n"));
	pair_end(p);
}

static void test_versions(void **state)
{
	struct pair *p = pair_start();
	const char *r;

	(void)state;
	/* RFC 9110 section 2.5: served as 1.1 (and kept open, as 1.1). */
	say(p, "GET /j HTTP/1.2\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
	assert_null(strstr(r, "Connection:"));
	say(p, "GET /j HTTP/1.9\r\nHost: x\r\n\r\n");
	assert_true(strncmp(heard(p), "HTTP/1.1 200 OK\r\n", 17) == 0);
	say(p, "GET /j HTTP/2.0\r\nHost: x\r\n\r\n");
	r = heard(p);
	assert_true(strncmp(r, "HTTP/1.1 505 ", 13) == 0);
	assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
	assert_string_equal(heard(p), "");
	pair_end(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_and_body_one_write),
		cmocka_unit_test(test_http10_keep_alive),
		cmocka_unit_test(test_http10_stream),
		cmocka_unit_test(test_stream_cut),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

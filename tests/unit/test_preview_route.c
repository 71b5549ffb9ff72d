/*
 * Unit tests of api/kilnd/preview/preview_route.c: what kilnd's preview
 * proxy (preview_server.h) decides from one request head, as pure
 * functions: which sandbox and port it is for, which credentials it
 * carries, and the head the guest gets instead.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/preview/preview_route.h"
#include "tests/unit/preview_ids.h"

struct parsed {
	char buf[HTTP_HEAD_MAX];
	struct http_head h;
};

/* Parse a head given with "\n" line ends (CRLF added) and the final empty line into p. */
static void parse_into(struct parsed *p, const char *lines)
{
	struct api_err e;
	size_t n = 0;
	long end;

	for (const char *s = lines; *s; s++) {
		if (*s == '\n')
			p->buf[n++] = '\r';
		p->buf[n++] = *s;
	}
	memcpy(p->buf + n, "\r\n", 2);
	n += 2;
	end = http_head_end(p->buf, n, &e);
	assert_true(end > 0);
	assert_int_equal(http_head_parse(p->buf, (size_t)end, &p->h, &e), 0);
}

static struct parsed *parse(const char *lines)
{
	struct parsed *p = calloc(1, sizeof(*p));

	parse_into(p, lines);
	return p;
}

/* The last head route_ok parsed: r's pointers point into it until the next call. */
static struct parsed routed;

static void route_ok(const char *head, const char *domain, struct preview_req *r)
{
	struct preview_err e;

	memset(&routed, 0, sizeof(routed));
	parse_into(&routed, head);
	assert_int_equal(preview_route(&routed.h, domain, r, &e), 0);
}

static void route_404(const char *head, const char *domain)
{
	struct parsed *p = parse(head);
	struct preview_req r;
	struct preview_err e;

	assert_int_equal(preview_route(&p->h, domain, &r, &e), -1);
	assert_int_equal(e.status, 404);
	assert_string_equal(e.code, "preview_not_found");
	assert_non_null(strstr(e.msg, "/preview/ID/PORT/"));
	free(p);
}

static void test_route_by_host(void **state)
{
	struct preview_req r;

	(void)state;
	route_ok("GET /a/b?x=1 HTTP/1.1\nHost: 8080-" ID ".localhost:8443\n", "localhost", &r);
	assert_string_equal(r.id, ID);
	assert_int_equal(r.port, 8080);
	assert_int_equal(r.form, PREVIEW_BY_HOST);
	assert_int_equal(r.rest_len, 4);
	assert_memory_equal(r.rest, "/a/b", 4);
	assert_string_equal(r.cookie, "kiln_preview_" ID "_8080");
	/* Host names are case-insensitive; the id is lowercased. */
	route_ok("GET / HTTP/1.1\nHost: 1-0123456789AB.Preview.Example.COM\n",
		 "preview.example.com", &r);
	assert_string_equal(r.id, ID);
	assert_int_equal(r.port, 1);
	route_ok("GET / HTTP/1.1\nHost: 65535-" ID ".localhost\n", "localhost", &r);
	assert_int_equal(r.port, 65535);
}

static void test_route_by_path(void **state)
{
	struct preview_req r;

	(void)state;
	route_ok("GET /preview/" ID "/3000/static/app.js?v=2 HTTP/1.1\nHost: 127.0.0.1:8443\n",
		 "localhost", &r);
	assert_int_equal(r.form, PREVIEW_BY_PATH);
	assert_int_equal(r.port, 3000);
	assert_int_equal(r.rest_len, strlen("/static/app.js"));
	assert_memory_equal(r.rest, "/static/app.js", r.rest_len);
	route_ok("GET /preview/" ID "/3000 HTTP/1.1\nHost: 127.0.0.1\n", "localhost", &r);
	assert_int_equal(r.rest_len, 1);
	assert_memory_equal(r.rest, "/", 1);
	/* HTTP/1.0 without a Host: the path form still works. */
	route_ok("GET /preview/" ID "/80/ HTTP/1.0\n", "localhost", &r);
	assert_int_equal(r.port, 80);
	/* A Host that is not ours falls back to the path. */
	route_ok("GET /preview/" ID "/80/ HTTP/1.1\nHost: 80-" ID ".other.test\n", "localhost", &r);
	assert_int_equal(r.form, PREVIEW_BY_PATH);
}

static void test_route_hostile(void **state)
{
	(void)state;
	route_404("GET / HTTP/1.1\nHost: localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: .localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 0-" ID ".localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 65536-" ID ".localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 08080-" ID ".localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID "0.localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-0123456789ag.localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID ".evil.localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID ".localhost:\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID ".localhost:80x\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID "localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: -" ID ".localhost\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: [::1]:8080\n", "localhost");
	route_404("GET / HTTP/1.1\nHost: 8080-" ID ".xlocalhost\n", "localhost");
	route_404("GET /preview/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/" ID " HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/" ID "/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/" ID "/0/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/" ID "/99999/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/" ID "/80x/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/0123456789AB/80/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /preview/../" ID "/80/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET /Preview/" ID "/80/ HTTP/1.1\nHost: x\n", "localhost");
	route_404("GET //preview/" ID "/80/ HTTP/1.1\nHost: x\n", "localhost");
}

static void test_credentials(void **state)
{
	struct preview_req r;
	const struct preview_cred *c;

	(void)state;
	route_ok("GET /?a=1&token=" TOK "&token=zz HTTP/1.1\nHost: 80-" ID ".localhost\n"
		 "X-Kiln-Preview-Token: nope\nAuthorization: Bearer   wrong  \n"
		 "Cookie: a=b; kiln_preview_" ID "_80=" TOK "; kiln_preview_" ID "_81=x\n",
		 "localhost", &r);
	assert_int_equal(r.ncreds, 5);
	assert_int_equal(r.creds[0].kind, PREVIEW_CRED_HEADER);
	assert_int_equal(r.creds[1].kind, PREVIEW_CRED_BEARER);
	assert_int_equal(r.creds[1].n, 5);
	assert_memory_equal(r.creds[1].p, "wrong", 5);
	assert_int_equal(r.creds[2].kind, PREVIEW_CRED_COOKIE);
	assert_int_equal(r.creds[3].kind, PREVIEW_CRED_QUERY);
	c = preview_auth(&r, TOK);
	assert_non_null(c);
	assert_int_equal(c->kind, PREVIEW_CRED_COOKIE);
	assert_null(preview_auth(&r, NULL));
	assert_null(preview_auth(&r, "ffffffffffffffffffffffffffffffffffffffffffffffff"));

	/* Nothing offered, or only lookalikes: no access. */
	route_ok("GET / HTTP/1.1\nHost: 80-" ID ".localhost\nAuthorization: Basic " TOK "\n"
		 "Cookie: kiln_preview_" ID "_8=" TOK "\nX-Token: " TOK "\n",
		 "localhost", &r);
	assert_int_equal(r.ncreds, 0);
	assert_null(preview_auth(&r, TOK));
	/* A prefix or an extension of the token is not it. */
	route_ok("GET /?token=" TOK "0&token=0011 HTTP/1.1\nHost: 80-" ID ".localhost\n",
		 "localhost", &r);
	assert_int_equal(r.ncreds, 2);
	assert_null(preview_auth(&r, TOK));
	/* Many credentials: the first PREVIEW_CREDS_MAX are looked at. */
	route_ok("GET /?token=1&token=2&token=3&token=4&token=5&token=6&token=7&token=8&token=" TOK
		 " HTTP/1.1\nHost: 80-" ID ".localhost\n",
		 "localhost", &r);
	assert_int_equal(r.ncreds, PREVIEW_CREDS_MAX);
	assert_null(preview_auth(&r, TOK));
}

static long rewrite(const char *head, const char *token, char *out, size_t cap)
{
	struct parsed *p = parse(head);
	struct preview_req r;
	struct preview_err e;
	long n;

	assert_int_equal(preview_route(&p->h, "localhost", &r, &e), 0);
	n = preview_head_rewrite(&p->h, &r, token, "192.0.2.7", out, cap);
	if (n >= 0)
		out[n] = '\0';
	free(p);
	return n;
}

static void test_rewrite_strips_credentials(void **state)
{
	char out[4096];

	(void)state;
	assert_true(rewrite("POST /preview/" ID "/8080/api?token=" TOK
			    "&q=1 HTTP/1.1\nHost: 127.0.0.1:8443\n"
			    "X-Kiln-Preview-Token: " TOK "\nAuthorization: Bearer " TOK "\n"
			    "Cookie: a=b; kiln_preview_" ID "_8080=" TOK
			    "; c=d\nConnection: keep-alive\n"
			    "Keep-Alive: timeout=5\nX-Forwarded-For: 6.6.6.6\nContent-Length: 3\n",
			    TOK, out, sizeof(out)) > 0);
	assert_string_equal(out,
			    "POST /api?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nCookie: a=b; c=d\r\n"
			    "Content-Length: 3\r\nConnection: close\r\nX-Forwarded-For: 192.0.2.7\r\n"
			    "X-Forwarded-Proto: http\r\nX-Forwarded-Host: 127.0.0.1:8443\r\n"
			    "X-Forwarded-Prefix: /preview/" ID "/8080\r\n\r\n");
	assert_null(strstr(out, TOK));
}

static void test_rewrite_keeps_the_apps_own(void **state)
{
	char out[4096];

	(void)state;
	/* An Authorization that is not the token is the app's; a lone
	 * preview cookie leaves no Cookie field; an upgrade stays one. */
	assert_true(rewrite("GET /ws?token=other HTTP/1.1\nHost: 8080-" ID ".localhost\n"
			    "Authorization: Bearer app-secret\nCookie: kiln_preview_" ID
			    "_8080=" TOK "\n"
			    "Upgrade: websocket\nConnection: Upgrade\nSec-WebSocket-Key: abc\n",
			    TOK, out, sizeof(out)) > 0);
	assert_string_equal(
		out,
		"GET /ws?token=other HTTP/1.1\r\nHost: 8080-" ID ".localhost\r\n"
		"Authorization: Bearer app-secret\r\nUpgrade: websocket\r\nSec-WebSocket-Key: abc\r\n"
		"Connection: Upgrade\r\nX-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
		"X-Forwarded-Host: 8080-" ID ".localhost\r\n\r\n");
	/* Public: nothing is a token, only the proxy's own fields go. */
	assert_true(rewrite("GET /?token=" TOK " HTTP/1.0\nHost: 1-" ID
			    ".localhost\nX-Kiln-Preview-Token: x\n",
			    NULL, out, sizeof(out)) > 0);
	assert_string_equal(
		out,
		"GET /?token=" TOK " HTTP/1.0\r\nHost: 1-" ID ".localhost\r\nConnection: close\r\n"
		"X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: 1-" ID
		".localhost\r\n\r\n");
	/* 61 fields of a client's and the proxy's own 4: more than kilnd's
	 * parser takes (64), so not forwarded either; 60 and 4 are. */
	{
		char many[4096] = "GET / HTTP/1.1\nHost: 1-" ID ".localhost\n";

		for (int i = 0; i < 60; i++)
			snprintf(many + strlen(many), sizeof(many) - strlen(many), "X-%d: v\n", i);
		assert_int_equal(rewrite(many, NULL, out, sizeof(out)), -1);
		many[strlen(many) - 8] = '\0'; /* without "X-59: v\n" */
		assert_true(rewrite(many, NULL, out, sizeof(out)) > 0);
	}
	/* Too small a buffer: refused, never overrun. */
	for (size_t cap = 0; cap < 64; cap++)
		assert_int_equal(rewrite("GET / HTTP/1.1\nHost: 1-" ID ".localhost\n", NULL, out,
					 cap),
				 -1);
}

static void test_redirect(void **state)
{
	struct parsed *p = parse("GET /preview/" ID "/80/x?token=" TOK
				 "&y=2 HTTP/1.1\nHost: 127.0.0.1\n");
	struct preview_req r;
	struct preview_err e;
	char out[2048];
	long n;

	(void)state;
	assert_int_equal(preview_route(&p->h, "localhost", &r, &e), 0);
	n = preview_redirect(&p->h, &r, TOK, out, sizeof(out));
	assert_true(n > 0);
	out[n] = '\0';
	assert_non_null(
		strstr(out, "HTTP/1.1 302 Found\r\nLocation: /preview/" ID "/80/x?y=2\r\n"));
	assert_non_null(strstr(out,
			       "Set-Cookie: kiln_preview_" ID "_80=" TOK "; Path=/preview/" ID
			       "/80; HttpOnly; SameSite=Lax\r\n"));
	assert_int_equal(preview_redirect(&p->h, &r, TOK, out, 40), -1);
	free(p);
	p = parse("GET /?token=" TOK " HTTP/1.1\nHost: 80-" ID ".localhost\n");
	assert_int_equal(preview_route(&p->h, "localhost", &r, &e), 0);
	n = preview_redirect(&p->h, &r, TOK, out, sizeof(out));
	out[n] = '\0';
	assert_non_null(
		strstr(out, "Location: /\r\nSet-Cookie: kiln_preview_" ID "_80=" TOK "; Path=/;"));
	free(p);
	/* "//evil.example/x" would send the browser to another site: it stays here. */
	p = parse("GET ///evil.example/x?token=" TOK " HTTP/1.1\nHost: 80-" ID ".localhost\n");
	assert_int_equal(preview_route(&p->h, "localhost", &r, &e), 0);
	n = preview_redirect(&p->h, &r, TOK, out, sizeof(out));
	assert_true(n > 0);
	out[n] = '\0';
	assert_non_null(strstr(out, "Location: /evil.example/x\r\n"));
	free(p);
}

/* The first visit's answer for path and query (hand-made: the parser
 * refuses the controls some cases hold), routed as a host-form preview. */
static const char *first_visit(const char *path, const char *query)
{
	static char out[2048];
	struct preview_req r;
	struct http_head h;
	long n;

	route_ok("GET / HTTP/1.1\nHost: 80-" ID ".localhost\n", "localhost", &r);
	h = routed.h;
	h.path = path;
	h.query = query;
	n = preview_redirect(&h, &r, TOK, out, sizeof(out));
	assert_true(n > 0 && (size_t)n < sizeof(out));
	out[n] = '\0';
	return out;
}

/* A 400 bad_request of the proxy's own, and no redirect anywhere. */
static void assert_refused(const char *path, const char *query)
{
	const char *a = first_visit(path, query);

	if (strncmp(a, "HTTP/1.1 400 Bad Request\r\n", 26) != 0 ||
	    !strstr(a, "\"code\":\"bad_request\"") || strstr(a, "Location") ||
	    strstr(a, "Set-Cookie") || strstr(a, TOK))
		fail_msg("path '%s': not refused: %s", path, a);
}

static void assert_located(const char *path, const char *query, const char *location)
{
	const char *a = first_visit(path, query);
	char want[512];

	snprintf(want, sizeof(want), "HTTP/1.1 302 Found\r\nLocation: %s\r\n", location);
	if (strncmp(a, want, strlen(want)) != 0)
		fail_msg("path '%s': want Location %s, got: %s", path, location, a);
}

static void test_redirect_stays_on_site(void **state)
{
	struct parsed *p;
	struct preview_req r;
	struct preview_err e;
	char out[2048];
	long n;

	(void)state;
	/* A browser reads '\' as '/': "/\evil.example/x" is another host. */
	assert_refused("/\\evil.example/x", "token=" TOK);
	assert_refused("/\\\\evil.example/x", "token=" TOK);
	assert_refused("//\\evil.example", "token=" TOK);
	assert_refused("/\\/evil.example", "token=" TOK);
	assert_refused("///\\evil.example", "token=" TOK);
	assert_refused("/a/\\b", "token=" TOK); /* anywhere: one rule, nothing to get wrong */
	/* Tabs and line ends are dropped by a browser: "/\t/evil" is "//evil". */
	assert_refused("/\t/evil.example/x", "token=" TOK);
	assert_refused("/\t\\evil.example", "token=" TOK);
	assert_refused("/\n/evil.example", "token=" TOK);
	assert_refused("/\r\n/evil.example", "token=" TOK);
	assert_refused("/ /evil.example", "token=" TOK);
	assert_refused("/\x7f/evil.example", "token=" TOK);
	assert_refused("/\x80/evil.example", "token=" TOK);
	assert_refused("evil.example", "token=" TOK);
	/* No line end through the query either (a field of the answer's own). */
	assert_refused("/x", "token=" TOK "&a=\r\nSet-Cookie: a=b");
	/* %-escapes are not decoded, by kilnd or by a browser: paths of this site. */
	assert_located("/%5Cevil.example/x", "token=" TOK, "/%5Cevil.example/x");
	assert_located("/%2F%2Fevil.example/x", "token=" TOK, "/%2F%2Fevil.example/x");
	assert_located("/%09/evil.example", "token=" TOK, "/%09/evil.example");
	assert_located("/%5C%5Cevil", "token=" TOK "&q=a\\b", "/%5C%5Cevil?q=a\\b");
	assert_located("////evil.example", "token=" TOK, "/evil.example");
	/* Through the parser: the path form, and the server's answer as sent. */
	p = parse("GET /preview/" ID "/80/\\evil.example?token=" TOK
		  " HTTP/1.1\nHost: 127.0.0.1\n");
	assert_int_equal(preview_route(&p->h, "localhost", &r, &e), 0);
	n = preview_redirect(&p->h, &r, TOK, out, sizeof(out));
	assert_true(n > 0);
	out[n] = '\0';
	assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
	assert_null(strstr(out, "Location"));
	assert_int_equal(preview_redirect(&p->h, &r, TOK, out, 10), -1);
	free(p);
}

/* The Referer the guest gets for value (token: the preview's), or "" when it gets none. */
static const char *referer_of(const char *value, const char *token)
{
	static char out[4096];
	char head[1024];
	const char *f, *end;

	snprintf(head, sizeof(head),
		 "GET / HTTP/1.1\nHost: 80-" ID ".localhost\nReferer: %s\nX-After: 1\n", value);
	assert_true(rewrite(head, token, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "X-After: 1\r\n"));
	f = strstr(out, "Referer: ");
	if (!f)
		return "";
	f += strlen("Referer: ");
	end = strstr(f, "\r\n");
	assert_non_null(end);
	memmove(out, f, (size_t)(end - f));
	out[end - f] = '\0';
	return out;
}

#define PAGE "http://80-" ID ".localhost:8443/page"

static void test_rewrite_referer(void **state)
{
	(void)state;
	/* The token parameter at the start, in the middle, at the end, alone. */
	assert_string_equal(referer_of(PAGE "?token=" TOK "&a=1", TOK), PAGE "?a=1");
	assert_string_equal(referer_of(PAGE "?a=1&token=" TOK "&b=2", TOK), PAGE "?a=1&b=2");
	assert_string_equal(referer_of(PAGE "?a=1&token=" TOK, TOK), PAGE "?a=1");
	assert_string_equal(referer_of(PAGE "?token=" TOK, TOK), PAGE);
	assert_string_equal(referer_of(PAGE "?token=" TOK "&token=" TOK, TOK), PAGE);
	/* Encoded: the name, the value. */
	assert_string_equal(referer_of(PAGE "?%74oken=" TOK "&a=1", TOK), PAGE "?a=1");
	assert_string_equal(referer_of(PAGE "?a=1&TOKEN=x&tok%65n=" TOK, TOK), PAGE "?a=1");
	assert_string_equal(referer_of(PAGE
				       "?token=%30%30112233445566778899aabbccddeeff0011223344556677",
				       TOK),
			    PAGE);
	/* Any token parameter: another preview's page on the same origin. */
	assert_string_equal(referer_of(PAGE
				       "?token=ffffffffffffffffffffffffffffffffffffffffffffffff&a=1",
				       TOK),
			    PAGE "?a=1");
	assert_string_equal(referer_of(PAGE "?token=other&a=1", NULL), PAGE "?a=1");
	/* The fragment never was a referrer's: it goes, with a token in it. */
	assert_string_equal(referer_of(PAGE "?a=1#token=" TOK, TOK), PAGE "?a=1");
	assert_string_equal(referer_of(PAGE "#x?token=" TOK, TOK), PAGE);
	/* The token anywhere else, plain, %-encoded or in capitals: no Referer at all. */
	assert_string_equal(referer_of("http://h/" TOK "/x", TOK), "");
	assert_string_equal(referer_of("http://h/x?a=" TOK, TOK), "");
	assert_string_equal(referer_of("http://h/%30%30112233445566778899AABBCCDDEEFF0011223344556677",
				       TOK),
			    "");
	/* Not plain URL bytes (a space, obs-text), or nothing left: none either. */
	assert_string_equal(referer_of("http://h/a b?token=" TOK, TOK), "");
	assert_string_equal(referer_of("http://h/\xc3\xa9", TOK), "");
	assert_string_equal(referer_of("?token=" TOK, TOK), "");
	/* What is not a token passes unchanged. */
	assert_string_equal(referer_of(PAGE "?tokens=1&xtoken=2&token&a=token", TOK),
			    PAGE "?tokens=1&xtoken=2&a=token");
	assert_string_equal(referer_of("http://example.com/", TOK), "http://example.com/");
	assert_string_equal(referer_of(PAGE "?a=%zz", NULL), PAGE "?a=%zz");
}

static void test_rewrite_drops_every_kiln_cookie(void **state)
{
	char out[4096];

	(void)state;
	/* Another preview's cookie is kilnd's too, never the app's. */
	assert_true(rewrite("GET / HTTP/1.1\nHost: 80-" ID
			    ".localhost\nCookie: a=1; kiln_preview_ba9876543210_80=" TOK
			    "; kiln_preview_" ID "_81=x; b=2\n",
			    TOK, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "\r\nCookie: a=1; b=2\r\n"));
	assert_null(strstr(out, "kiln_preview_"));
}

static void test_err_answer(void **state)
{
	struct preview_err e;
	char out[1024];
	size_t n;

	(void)state;
	preview_err_set(&e, 401, "unauthorized", "needs \"its\" token\n\\");
	n = preview_err_answer(&e, out, sizeof(out));
	out[n] = '\0';
	assert_non_null(strstr(out, "HTTP/1.1 401 Unauthorized\r\n"));
	assert_non_null(strstr(out, "WWW-Authenticate: Bearer"));
	assert_non_null(strstr(
		out,
		"{\"error\":{\"code\":\"unauthorized\",\"message\":\"needs \\\"its\\\" token?\\\\\"}}\n"));
	/* Content-Length matches the body. */
	{
		const char *body = strstr(out, "\r\n\r\n") + 4;
		char cl[64];

		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
		assert_non_null(strstr(out, cl));
	}
	assert_true(preview_err_answer(&e, out, 20) <= 20);
	assert_null(strstr(out, "Retry-After"));
}

/* A refusal for load (a cap) says when to come back; a 429 has its reason. */
static void test_err_answer_retry_after(void **state)
{
	struct preview_err e;
	char out[1024];
	size_t n;

	(void)state;
	preview_err_set(&e, 429, "too_many_connections", "too many from this address");
	e.retry_after_s = 1;
	n = preview_err_answer(&e, out, sizeof(out));
	out[n] = '\0';
	assert_non_null(strstr(out, "HTTP/1.1 429 Too Many Requests\r\n"));
	assert_non_null(strstr(out, "\r\nRetry-After: 1\r\n"));
	/* preview_err_set starts every answer without one. */
	preview_err_set(&e, 503, "sandbox_not_running", "start it");
	n = preview_err_answer(&e, out, sizeof(out));
	out[n] = '\0';
	assert_null(strstr(out, "Retry-After"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_by_host),
		cmocka_unit_test(test_route_by_path),
		cmocka_unit_test(test_route_hostile),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_rewrite_strips_credentials),
		cmocka_unit_test(test_rewrite_keeps_the_apps_own),
		cmocka_unit_test(test_redirect),
		cmocka_unit_test(test_redirect_stays_on_site),
		cmocka_unit_test(test_rewrite_referer),
		cmocka_unit_test(test_rewrite_drops_every_kiln_cookie),
		cmocka_unit_test(test_err_answer),
		cmocka_unit_test(test_err_answer_retry_after),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * kilnd's own HTTP/1.1 server, its pure parts: the request head
 * (http_head: strict RFC 9112, every smuggling ambiguity refused with the
 * exact code), the chunked body decoder (http_chunked: any split of the
 * input gives the same body), the query splitter (query_split) and the
 * admission decision (http_admit: the limit, root's reserve and the two
 * refusal budgets). The socket side is tests/unit/kilnd_http_test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/url_query.h"
#include "api/kilnd/http/http_chunked.h"
#include "api/kilnd/http/http_conn.h"
#include "api/kilnd/http/http_head.h"

/* ---- http_head -------------------------------------------------------- */

/* A message quotes at most a short printable piece of the input. */
static void check_msg(const struct api_err *e)
{
	size_t n = strlen(e->msg);

	assert_true(n > 0 && n < 300);
	for (size_t i = 0; i < n; i++)
		assert_true(e->msg[i] >= 0x20 && e->msg[i] < 0x7f);
}

static bool inside(const char *buf, size_t n, const char *p)
{
	return p >= buf && p < buf + n;
}

/* A complete, valid head: http_head_end finds its end at n exactly and
 * http_head_parse accepts it. Returns the buffer (exactly n bytes, so
 * ASan sees any read past it); the caller frees it. */
static char *head_ok(const char *req, struct http_head *h)
{
	size_t n = strlen(req);
	char *buf = malloc(n);
	struct api_err e = { 0 };
	long end;

	assert_non_null(buf);
	memcpy(buf, req, n);
	end = http_head_end(buf, n, &e);
	if (end != (long)n)
		fail_msg("http_head_end: %ld of %zu (%s)", end, n, e.msg);
	if (http_head_parse(buf, n, h, &e) != 0)
		fail_msg("http_head_parse refused: %s", e.msg);
	assert_true(inside(buf, n, h->method) && inside(buf, n, h->path));
	assert_int_equal(h->path[0], '/');
	assert_true(!h->query || inside(buf, n, h->query));
	assert_true(h->nfields <= HTTP_FIELDS_MAX);
	for (size_t i = 0; i < h->nfields; i++)
		assert_true(inside(buf, n, h->fields[i].name) &&
			    inside(buf, n, h->fields[i].value));
	return buf;
}

/* buf[0..n) refused with code: by http_head_end, or (when it finds the
 * end at n) by http_head_parse. */
static void head_err(const char *req, size_t n, enum api_code code)
{
	char *buf = malloc(n ? n : 1);
	struct http_head h;
	struct api_err e = { 0 };
	long end;

	assert_non_null(buf);
	memcpy(buf, req, n);
	end = http_head_end(buf, n, &e);
	if (end >= 0) {
		if (end != (long)n)
			fail_msg("http_head_end: %ld of %zu for '%.60s'", end, n, req);
		if (http_head_parse(buf, n, &h, &e) != -1)
			fail_msg("accepted: '%.60s'", req);
	}
	if (e.code != code)
		fail_msg("'%.60s': %s (%s), expected %s", req, api_code_name(e.code), e.msg,
			 api_code_name(code));
	check_msg(&e);
	free(buf);
}

/* http_head_parse alone (the head's end is not looked for). */
static void parse_err(const char *req, size_t n, enum api_code code)
{
	char *buf = malloc(n ? n : 1);
	struct http_head h;
	struct api_err e = { 0 };

	assert_non_null(buf);
	memcpy(buf, req, n);
	assert_int_equal(http_head_parse(buf, n, &h, &e), -1);
	if (e.code != code)
		fail_msg("'%.60s': %s (%s), expected %s", req, api_code_name(e.code), e.msg,
			 api_code_name(code));
	check_msg(&e);
	free(buf);
}

#define HEAD_ERR(s, code) head_err(s, sizeof(s) - 1, code)
#define PARSE_ERR(s, code) parse_err(s, sizeof(s) - 1, code)

static void test_head_get(void **state)
{
	struct http_head h;
	char *b;

	(void)state;
	b = head_ok("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n", &h);
	assert_string_equal(h.method, "GET");
	assert_string_equal(h.path, "/v1/health");
	assert_null(h.query);
	assert_int_equal(h.minor, 1);
	assert_int_equal(h.nfields, 1);
	assert_string_equal(h.fields[0].name, "Host");
	assert_string_equal(h.fields[0].value, "localhost");
	assert_int_equal(h.body, HTTP_BODY_NONE);
	assert_true(h.keep_alive);
	assert_false(h.expect_continue);
	free(b);

	/* The raw path (no %-decoding, "%2F" is not a separator) and query. */
	b = head_ok("GET /v1/a%2Fb?state=running&label=a%3Db+c HTTP/1.1\r\nHost: x\r\n\r\n", &h);
	assert_string_equal(h.path, "/v1/a%2Fb");
	assert_string_equal(h.query, "state=running&label=a%3Db+c");
	free(b);
	b = head_ok("GET /? HTTP/1.1\r\nHost: x\r\n\r\n", &h);
	assert_string_equal(h.path, "/");
	assert_string_equal(h.query, "");
	free(b);

	/* Field values lose surrounding whitespace, keep inner tabs and
	 * obs-text; names are found case-insensitively. */
	b = head_ok("PUT /f HTTP/1.1\r\nhost:x\r\nX-A: \t a\tb \t\r\nX-B:\r\nX-C: caf\xc3\xa9\r\n\r\n",
		    &h);
	assert_string_equal(h.method, "PUT");
	assert_int_equal(h.nfields, 4);
	assert_string_equal(http_head_field(&h, "HOST"), "x");
	assert_string_equal(http_head_field(&h, "x-a"), "a\tb");
	assert_string_equal(http_head_field(&h, "X-B"), "");
	assert_string_equal(http_head_field(&h, "X-C"), "caf\xc3\xa9");
	assert_null(http_head_field(&h, "X-D"));
	free(b);

	/* A method is any token; routing decides what it means. */
	b = head_ok("M-SEARCH! /x HTTP/1.1\r\nHost: x\r\n\r\n", &h);
	assert_string_equal(h.method, "M-SEARCH!");
	free(b);
}

static void test_head_http10_and_keep_alive(void **state)
{
	struct http_head h;
	char *b;

	(void)state;
	/* HTTP/1.0 needs no Host and closes unless it asks for keep-alive. */
	b = head_ok("GET / HTTP/1.0\r\n\r\n", &h);
	assert_int_equal(h.minor, 0);
	assert_int_equal(h.nfields, 0);
	assert_false(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h);
	assert_true(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.0\r\nConnection: foo, keep-alive\r\n\r\n", &h);
	assert_true(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n", &h);
	assert_false(h.keep_alive); /* close wins */
	free(b);

	/* HTTP/1.1 keeps the connection unless it says close. */
	b = head_ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &h);
	assert_false(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade ,\tCLOSE\r\n\r\n", &h);
	assert_false(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: closed\r\n\r\n", &h);
	assert_true(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", &h);
	assert_true(h.keep_alive);
	free(b);
	/* Connection is a list: a second field line is part of it. */
	b = head_ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
		    &h);
	assert_false(h.keep_alive);
	free(b);
}

static void test_head_body_framing(void **state)
{
	struct http_head h;
	char *b;

	(void)state;
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &h);
	assert_int_equal(h.body, HTTP_BODY_NONE);
	assert_int_equal(h.content_length, 0);
	free(b);
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\ncontent-length:  42 \r\n\r\n", &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.content_length, 42);
	free(b);
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0007\r\n\r\n", &h);
	assert_int_equal(h.content_length, 7);
	free(b);
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n",
		    &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_true(h.content_length == INT64_MAX);
	free(b);
	b = head_ok("POST /x HTTP/1.0\r\nContent-Length: 3\r\n\r\n", &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	free(b);
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", &h);
	assert_int_equal(h.body, HTTP_BODY_CHUNKED);
	assert_int_equal(h.content_length, 0);
	free(b);
	b = head_ok("POST /x HTTP/1.1\r\nHost: x\r\ntransfer-encoding:   Chunked\r\n\r\n", &h);
	assert_int_equal(h.body, HTTP_BODY_CHUNKED);
	free(b);

	/* Expect: 100-continue on HTTP/1.1; HTTP/1.0 clients never wait for it. */
	b = head_ok("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
		    &h);
	assert_true(h.expect_continue);
	free(b);
	b = head_ok("PUT /x HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n\r\n", &h);
	assert_true(h.expect_continue);
	free(b);
	b = head_ok("PUT /x HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", &h);
	assert_false(h.expect_continue);
	free(b);
}

/* http_head_scan_end fed one more byte at a time gives what
 * http_head_end gives on each prefix, and stops where it stops. */
static void scan_matches_whole(const char *in, size_t n)
{
	struct http_head_scan sc = { 0 };

	for (size_t k = 0; k <= n; k++) {
		struct api_err e1 = { 0 }, e2 = { 0 };
		long whole = http_head_end(in, k, &e1);
		long inc = http_head_scan_end(in, k, &sc, &e2);

		if (whole != inc || e1.code != e2.code)
			fail_msg("prefix %zu of '%.40s': whole %ld (%d), incremental %ld (%d)", k,
				 in, whole, e1.code, inc, e2.code);
		if (whole)
			return;
	}
}

static void test_head_scan_incremental(void **state)
{
	static const char *const heads[] = {
		"GET / HTTP/1.1\r\nHost: k\r\n\r\nBODY",
		"\r\n\r\n\r\nGET / HTTP/1.0\r\n\r\n",
		"\r\n\rGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\nC: d\r\n\r\n",
		"\nGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nX: \r\r\n\r\n",
	};
	char *big = malloc(HTTP_HEAD_MAX + 64);

	(void)state;
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
		scan_matches_whole(heads[i], strlen(heads[i]));
	/* No end within the limit, and empty lines without end. */
	assert_non_null(big);
	memset(big, 'a', HTTP_HEAD_MAX + 64);
	memcpy(big, "GET / HTTP/1.1\r\n", 16);
	scan_matches_whole(big, HTTP_HEAD_MAX + 64);
	for (size_t i = 0; i + 1 < HTTP_HEAD_MAX + 64; i += 2)
		memcpy(big + i, "\r\n", 2);
	scan_matches_whole(big, HTTP_HEAD_MAX + 64);
	free(big);
}

static void test_head_end(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t n = sizeof(req) - 1;
	struct api_err e = { 0 };
	struct http_head h;
	char *buf, *b;

	(void)state;
	/* Not complete at any shorter length; a body after it is not the head. */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(http_head_end(req, k, &e), 0);
	assert_int_equal(http_head_end(req, n, &e), (long)n);
	{
		static const char more[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\nhello\n\r\n\r\n";

		assert_int_equal(http_head_end(more, sizeof(more) - 1, &e), (long)n);
	}
	/* Empty lines before a request are skipped (RFC 9112 section 2.2),
	 * and alone they are not a head. */
	assert_int_equal(http_head_end("\r\n\r\n", 4, &e), 0);
	assert_int_equal(http_head_end("\r\n\r\n\r\n", 6, &e), 0);
	b = head_ok("\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\n\r\n", &h);
	assert_string_equal(h.method, "GET");
	assert_string_equal(h.path, "/x");
	free(b);

	/* HTTP_HEAD_MAX bytes without an end never become a head (431); a
	 * head of exactly HTTP_HEAD_MAX bytes is one. */
	buf = malloc(HTTP_HEAD_MAX + 8);
	assert_non_null(buf);
	memset(buf, 'a', HTTP_HEAD_MAX + 8);
	assert_int_equal(http_head_end(buf, HTTP_HEAD_MAX - 1, &e), 0);
	e.code = API_OK;
	assert_int_equal(http_head_end(buf, HTTP_HEAD_MAX, &e), -1);
	assert_int_equal(e.code, API_E_HEADERS_TOO_LARGE);
	assert_int_equal(api_code_status(e.code), 431);
	check_msg(&e);
	memcpy(buf + HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(http_head_end(buf, HTTP_HEAD_MAX + 8, &e), HTTP_HEAD_MAX);
	memset(buf, 'a', HTTP_HEAD_MAX + 8);
	memcpy(buf + HTTP_HEAD_MAX - 3, "\r\n\r\n", 4);
	e.code = API_OK;
	assert_int_equal(http_head_end(buf, HTTP_HEAD_MAX + 8, &e), -1);
	assert_int_equal(e.code, API_E_HEADERS_TOO_LARGE);
	/* Endless empty lines are no way around the limit. */
	for (size_t i = 0; i + 1 < HTTP_HEAD_MAX + 8; i += 2)
		memcpy(buf + i, "\r\n", 2);
	e.code = API_OK;
	assert_int_equal(http_head_end(buf, HTTP_HEAD_MAX + 8, &e), -1);
	assert_int_equal(e.code, API_E_HEADERS_TOO_LARGE);
	free(buf);

	/* A bare LF is refused as soon as it arrives. */
	e.code = API_OK;
	assert_int_equal(http_head_end("GET / HTTP/1.1\n", 15, &e), -1);
	assert_int_equal(e.code, API_E_BAD_REQUEST);
	e.code = API_OK;
	assert_int_equal(http_head_end("\n", 1, &e), -1);
	assert_int_equal(e.code, API_E_BAD_REQUEST);
}

static void test_head_line_ends(void **state)
{
	(void)state;
	/* Bare CR anywhere. */
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /\r HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\n\r\r\n\r\n", API_E_BAD_REQUEST);
	/* Bare LF anywhere: http_head_end refuses, and http_head_parse too. */
	HEAD_ERR("GET / HTTP/1.1\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\n\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\nb\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	PARSE_ERR("GET / HTTP/1.1\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	PARSE_ERR("GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", API_E_BAD_REQUEST);
	PARSE_ERR("GET / HTTP/1.1\r\nHost: x\r\n\n", API_E_BAD_REQUEST);
	/* A head cut before its empty line, or nothing but empty lines. */
	PARSE_ERR("GET / HTTP/1.1\r\nHost: x\r\n", API_E_BAD_REQUEST);
	PARSE_ERR("GET / HTTP/1.1\r\nHost: x\r", API_E_BAD_REQUEST);
	PARSE_ERR("\r\n\r\n", API_E_BAD_REQUEST);
	PARSE_ERR("", API_E_BAD_REQUEST);
}

static void test_head_bytes(void **state)
{
	(void)state;
	/* NUL: in the request line, a name, a value. */
	HEAD_ERR("GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHo\0st: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: \0\r\n\r\n", API_E_BAD_REQUEST);
	/* Control bytes in values (tab is allowed), names and the target. */
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\x01"
		 "b\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\x1b[2J\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: \x1f\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX\x01: a\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /a\x7f HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
}

static void test_head_fields(void **state)
{
	(void)state;
	/* obs-fold (RFC 9112 section 5.2), also as the first field line. */
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n  b\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\n Host: x\r\n\r\n", API_E_BAD_REQUEST);
	/* Whitespace before the colon (RFC 9112 section 5.1), no colon, no name. */
	HEAD_ERR("GET / HTTP/1.1\r\nHost : x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX(y): v\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nX@Y: v\r\n\r\n", API_E_BAD_REQUEST);
}

static void test_head_field_count(void **state)
{
	char req[4096];
	size_t n;
	struct http_head h;
	char *b;

	(void)state;
	/* HTTP_FIELDS_MAX fields are fine, one more is 431. */
	n = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 1; i < HTTP_FIELDS_MAX; i++)
		n += (size_t)snprintf(req + n, sizeof(req) - n, "X-%d: %d\r\n", i, i);
	snprintf(req + n, sizeof(req) - n, "\r\n");
	b = head_ok(req, &h);
	assert_int_equal(h.nfields, HTTP_FIELDS_MAX);
	assert_string_equal(http_head_field(&h, "X-63"), "63");
	free(b);
	n += (size_t)snprintf(req + n, sizeof(req) - n, "X-64: 64\r\n\r\n");
	head_err(req, n, API_E_HEADERS_TOO_LARGE);
	assert_int_equal(api_code_status(API_E_HEADERS_TOO_LARGE), 431);
}

static void test_head_request_line(void **state)
{
	char *req;
	size_t n;
	struct http_head h;
	char *b;

	(void)state;
	/* Non-token methods, extra or missing spaces. */
	HEAD_ERR("G(ET / HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET@ / HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR(" GET / HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /  HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET /\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	/* Targets that are not a path. */
	HEAD_ERR("GET * HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET http://x/v1/health HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET v1/health HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET ?a=b HTTP/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	/* Versions: major 1 only; other well-formed ones are 505,
	 * malformed ones 400. */
	HEAD_ERR("GET / HTTP/2.0\r\nHost: x\r\n\r\n", API_E_HTTP_VERSION);
	HEAD_ERR("GET / HTTP/0.9\r\nHost: x\r\n\r\n", API_E_HTTP_VERSION);
	HEAD_ERR("GET / HTTP/3.1\r\nHost: x\r\n\r\n", API_E_HTTP_VERSION);
	/* RFC 9110 section 2.5: a later 1.x is served as 1.1, Host and all. */
	b = head_ok("GET / HTTP/1.2\r\nHost: x\r\n\r\n", &h);
	assert_int_equal(h.minor, 1);
	assert_true(h.keep_alive);
	free(b);
	b = head_ok("GET / HTTP/1.9\r\nHost: x\r\nConnection: close\r\n\r\n", &h);
	assert_int_equal(h.minor, 1);
	assert_false(h.keep_alive);
	free(b);
	HEAD_ERR("GET / HTTP/1.9\r\n\r\n", API_E_BAD_REQUEST); /* no Host, as on 1.1 */
	assert_int_equal(api_code_status(API_E_HTTP_VERSION), 505);
	HEAD_ERR("GET / HTTP/1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/11\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.10\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/2\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / http/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/a.b\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / FOO/1.1\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);

	/* A target of HTTP_TARGET_MAX bytes is fine, one more is 414. */
	req = malloc(HTTP_TARGET_MAX + 64);
	assert_non_null(req);
	memcpy(req, "GET /", 5);
	memset(req + 5, 'a', HTTP_TARGET_MAX - 1);
	n = 4 + HTTP_TARGET_MAX;
	n += (size_t)sprintf(req + n, " HTTP/1.1\r\nHost: x\r\n\r\n");
	b = head_ok(req, &h);
	assert_int_equal(strlen(h.path), HTTP_TARGET_MAX);
	free(b);
	memcpy(req, "GET /", 5);
	memset(req + 5, 'a', HTTP_TARGET_MAX);
	n = 5 + HTTP_TARGET_MAX;
	n += (size_t)sprintf(req + n, " HTTP/1.1\r\nHost: x\r\n\r\n");
	head_err(req, n, API_E_URI_TOO_LONG);
	assert_int_equal(api_code_status(API_E_URI_TOO_LONG), 414);
	free(req);
}

static void test_head_host(void **state)
{
	(void)state;
	HEAD_ERR("GET / HTTP/1.1\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nX-Host: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("GET / HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n", API_E_BAD_REQUEST);
	/* RFC 9112 section 3.2: more than one Host is 400 on any request. */
	HEAD_ERR("GET / HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n", API_E_BAD_REQUEST);
}

static void test_head_content_length(void **state)
{
	(void)state;
	/* Both framings, or two lengths (even equal ones). */
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n",
		 API_E_BAD_REQUEST);
	/* Anything but plain digits below 2^63. */
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5,5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\t5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: a\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5e2\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551621\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		 API_E_BAD_REQUEST);
}

static void test_head_transfer_encoding_and_expect(void **state)
{
	(void)state;
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;q=1\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		 API_E_BAD_REQUEST);
	/* RFC 9112 section 6.1: a 1.0 client cannot have meant it. */
	HEAD_ERR("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", API_E_BAD_REQUEST);

	HEAD_ERR("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, x\r\n\r\n", API_E_BAD_REQUEST);
	HEAD_ERR("PUT / HTTP/1.1\r\nHost: x\r\nExpect:\r\n\r\n", API_E_BAD_REQUEST);
	/* A second field line is part of the same list. */
	HEAD_ERR("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nExpect: x\r\n\r\n",
		 API_E_BAD_REQUEST);
	HEAD_ERR("PUT / HTTP/1.0\r\nExpect: x\r\n\r\n", API_E_BAD_REQUEST);
}

/* A 10 KB bad value is not echoed, nor are the controls or 8-bit bytes
 * of what is quoted. */
static void test_head_messages_quote_little(void **state)
{
	static const char *const fmt[] = {
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: %s\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: x\r\nExpect: %s\r\n\r\n",
		"GET / HTTP/%s\r\nHost: x\r\n\r\n",
		"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
		"G[%s / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX%s\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: \x01%s\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX %s: v\r\n\r\n",
	};
	/* 8-bit bytes pass a value's check and reach the quote; controls
	 * are refused by another check, whose message must not echo them. */
	static const char *const pattern[] = { "x\xff\x9b[ \xc3", "x\x1b\x01[ \x7f" };
	char *big = malloc(10241), *req = malloc(12000);

	(void)state;
	assert_non_null(big);
	assert_non_null(req);
	for (size_t p = 0; p < 2; p++) {
		for (size_t i = 0; i < 10240; i++)
			big[i] = pattern[p][i % 6];
		big[10240] = '\0';
		for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
			int n = snprintf(req, 12000, fmt[i], big);
			struct http_head h;
			struct api_err e = { 0 };

			assert_true(n > 0 && n < 12000);
			assert_int_equal(http_head_end(req, (size_t)n, &e), n);
			assert_int_equal(http_head_parse(req, (size_t)n, &h, &e), -1);
			assert_int_equal(e.code, API_E_BAD_REQUEST);
			check_msg(&e);
		}
	}
	free(big);
	free(req);
}

static void test_has_token(void **state)
{
	(void)state;
	assert_true(http_has_token("close", "close"));
	assert_true(http_has_token("a, b ,c", "b"));
	assert_true(http_has_token(" ,, C \t", "c"));
	assert_false(http_has_token("bb", "b"));
	assert_false(http_has_token("b b", "b"));
	assert_false(http_has_token("", "b"));
	assert_false(http_has_token(NULL, "b"));
}

/* ---- http_chunked ---------------------------------------------------- */

static const char chunked_body[] = "5\r\nhello\r\n"
				   "6;name=\"va;l\";x\r\n world\r\n"
				   "A \t;ext\r\n, chunked!\r\n"
				   "000000000000001\r\n.\r\n"
				   "0;last\r\n"
				   "X-Trailer: a\r\n"
				   "Another: b c\r\n"
				   "\r\n";
static const char chunked_data[] = "hello world, chunked!.";

/* Decode `in` fed in pieces ending at cuts[0..ncuts) and at n; the data
 * is appended to out. 1 when the body ended, -1 with e; *end is where it
 * ended (what was consumed). */
static int chunked_run(const char *in, size_t n, const size_t *cuts, size_t ncuts, char *out,
		       size_t *outn, size_t *end, struct api_err *e)
{
	struct http_chunked c;
	size_t off = 0;

	http_chunked_init(&c);
	*outn = 0;
	for (size_t k = 0; k <= ncuts; k++) {
		size_t stop = k < ncuts ? cuts[k] : n;

		while (off < stop) {
			const char *data;
			size_t used, dn;
			int r = http_chunked_feed(&c, in + off, stop - off, &used, &data, &dn, e);

			assert_true(used <= stop - off);
			if (dn) {
				assert_true(data >= in + off && data + dn <= in + off + used);
				memcpy(out + *outn, data, dn);
				*outn += dn;
			}
			off += used;
			if (r) {
				*end = off;
				return r;
			}
			assert_true(used > 0);
		}
	}
	*end = off;
	return 0;
}

static void chunked_expect(const char *in, size_t n, const size_t *cuts, size_t ncuts,
			   const char *want, size_t body_n)
{
	char out[256];
	size_t outn, end;
	struct api_err e = { 0 };

	assert_int_equal(chunked_run(in, n, cuts, ncuts, out, &outn, &end, &e), 1);
	assert_int_equal(end, body_n);
	assert_int_equal(outn, strlen(want));
	assert_memory_equal(out, want, outn);
}

#define CHUNKED_OK(s, want) chunked_expect(s, sizeof(s) - 1, NULL, 0, want, sizeof(s) - 1)

static void test_chunked_any_split(void **state)
{
	/* The body, then the next request: never consumed. */
	char in[sizeof(chunked_body) + 32];
	size_t body_n = sizeof(chunked_body) - 1, n, cuts[sizeof(in)];

	(void)state;
	n = (size_t)snprintf(in, sizeof(in), "%sGET / HTTP/1.1\r\n", chunked_body);
	chunked_expect(in, n, NULL, 0, chunked_data, body_n);
	/* Split once at every byte. */
	for (size_t k = 1; k < n; k++) {
		cuts[0] = k;
		chunked_expect(in, n, cuts, 1, chunked_data, body_n);
	}
	/* Byte by byte. */
	for (size_t k = 0; k + 1 < n; k++)
		cuts[k] = k + 1;
	chunked_expect(in, n, cuts, n - 1, chunked_data, body_n);
	/* Random splits (a fixed seed: the same every run). */
	srand(18);
	for (int round = 0; round < 2000; round++) {
		size_t nc = 0;

		for (size_t k = 1; k < n; k++)
			if (rand() % 4 == 0)
				cuts[nc++] = k;
		chunked_expect(in, n, cuts, nc, chunked_data, body_n);
	}
}

static void test_chunked_small_bodies(void **state)
{
	struct http_chunked c;
	struct api_err e = { 0 };
	const char *data;
	size_t used, dn;

	(void)state;
	CHUNKED_OK("0\r\n\r\n", "");
	chunked_expect("0\r\n\r\nX", 6, NULL, 0, "", 5);
	CHUNKED_OK("1\r\na\r\n0\r\n\r\n", "a");
	CHUNKED_OK("3 \t;e\r\nabc\r\n0 ;x=\"\\\"\"\r\nT: 1\r\n\r\n", "abc");
	/* Tabs are fine in an extension or a trailer. */
	CHUNKED_OK("3;e=\ta\r\nabc\r\n0\r\nT:\t1\r\n\r\n", "abc");
	CHUNKED_OK("a\r\n0123456789\r\nA\r\n0123456789\r\n0\r\n\r\n", "01234567890123456789");

	/* After the end, nothing more is consumed. */
	http_chunked_init(&c);
	assert_int_equal(http_chunked_feed(&c, "0\r\n\r\n0\r\n\r\n", 10, &used, &data, &dn, &e), 1);
	assert_int_equal(used, 5);
	assert_int_equal(dn, 0);
	assert_int_equal(http_chunked_feed(&c, "0\r\n\r\n", 5, &used, &data, &dn, &e), 1);
	assert_int_equal(used, 0);
	assert_int_equal(dn, 0);

	/* The largest size: data spans are handed out without copying. */
	http_chunked_init(&c);
	{
		static const char in[] = "fffffffffffffff\r\nabc";

		assert_int_equal(http_chunked_feed(&c, in, 20, &used, &data, &dn, &e), 0);
		assert_int_equal(used, 20);
		assert_int_equal(dn, 3);
		assert_ptr_equal(data, in + 17);
	}
	assert_int_equal(http_chunked_feed(&c, "abc", 3, &used, &data, &dn, &e), 0);
	assert_int_equal(used, 3);
	assert_int_equal(dn, 3);
	assert_memory_equal(data, "abc", 3);
	assert_int_equal(http_chunked_feed(&c, "", 0, &used, &data, &dn, &e), 0);
	assert_int_equal(used, 0);
}

static void chunked_err(const char *in, size_t n)
{
	char out[16384];
	size_t outn, end;
	struct api_err e = { 0 };

	if (chunked_run(in, n, NULL, 0, out, &outn, &end, &e) != -1)
		fail_msg("accepted: '%.60s'", in);
	assert_int_equal(e.code, API_E_BAD_REQUEST);
	assert_int_equal(api_code_status(e.code), 400);
	check_msg(&e);
}

#define CHUNKED_ERR(s) chunked_err(s, sizeof(s) - 1)

static void test_chunked_errors(void **state)
{
	char *big;
	size_t n;

	(void)state;
	/* Whitespace after a size only before an extension (RFC 9112 7.1.1). */
	CHUNKED_ERR("3 \r\nabc\r\n0\r\n\r\n");
	/* No control bytes in an extension or a trailer. */
	CHUNKED_ERR("3;e\x01\r\nabc\r\n0\r\n\r\n");
	CHUNKED_ERR("3\r\nabc\r\n0\r\nT: \x7f\r\n\r\n");
	/* Sizes: not hex, empty, signed, 0x, too many digits. */
	CHUNKED_ERR("zz\r\n");
	CHUNKED_ERR("\r\n");
	CHUNKED_ERR(";ext\r\n");
	CHUNKED_ERR("-1\r\n");
	CHUNKED_ERR("+1\r\n");
	CHUNKED_ERR("0x5\r\nhello\r\n");
	CHUNKED_ERR("5 5\r\n");
	CHUNKED_ERR("0000000000000001\r\nx\r\n0\r\n\r\n");
	CHUNKED_ERR("10000000000000000\r\n");
	/* The CRLF after the data: missing, or more data than the size. */
	CHUNKED_ERR("3\r\nabcd\r\n0\r\n\r\n");
	CHUNKED_ERR("3\r\nabc0\r\n\r\n");
	CHUNKED_ERR("3\r\nabc\rX0\r\n\r\n");
	CHUNKED_ERR("3\r\nabc\n0\r\n\r\n");
	/* Bare LF or CR in a size line, an extension, a trailer, the end. */
	CHUNKED_ERR("5\nhello\r\n0\r\n\r\n");
	CHUNKED_ERR("5\rhello\r\n0\r\n\r\n");
	CHUNKED_ERR("5;a\nhello\r\n0\r\n\r\n");
	CHUNKED_ERR("5;a\0\r\nhello\r\n0\r\n\r\n");
	CHUNKED_ERR("0\r\nX: a\n\r\n");
	CHUNKED_ERR("0\r\nX: a\rb\r\n\r\n");
	CHUNKED_ERR("0\r\nX: \0\r\n\r\n");
	CHUNKED_ERR("0\r\n\n");
	CHUNKED_ERR("0\r\n\rX");
	CHUNKED_ERR("0\n\r\n");

	/* A size line of HTTP_CHUNK_LINE_MAX bytes (CRLF included) is fine;
	 * one more is refused, whether in extensions or whitespace. */
	big = malloc(3 * HTTP_TRAILERS_MAX);
	assert_non_null(big);
	memcpy(big, "1;", 2);
	memset(big + 2, 'e', HTTP_CHUNK_LINE_MAX - 4);
	n = HTTP_CHUNK_LINE_MAX - 2;
	n += (size_t)sprintf(big + n, "\r\nx\r\n0\r\n\r\n");
	chunked_expect(big, n, NULL, 0, "x", n);
	memcpy(big, "1;", 2);
	memset(big + 2, 'e', HTTP_CHUNK_LINE_MAX - 3);
	n = HTTP_CHUNK_LINE_MAX - 1;
	n += (size_t)sprintf(big + n, "\r\nx\r\n0\r\n\r\n");
	chunked_err(big, n);
	big[0] = '1';
	memset(big + 1, ' ', HTTP_CHUNK_LINE_MAX);
	n = HTTP_CHUNK_LINE_MAX + 1;
	n += (size_t)sprintf(big + n, "\r\nx\r\n0\r\n\r\n");
	chunked_err(big, n);
	/* The bound is per line: each size line may use all of it. */
	n = 0;
	for (int i = 0; i < 3; i++) {
		memcpy(big + n, "1;", 2);
		memset(big + n + 2, 'e', HTTP_CHUNK_LINE_MAX - 4);
		n += HTTP_CHUNK_LINE_MAX - 2;
		n += (size_t)sprintf(big + n, "\r\nx\r\n");
	}
	n += (size_t)sprintf(big + n, "0\r\n\r\n");
	chunked_expect(big, n, NULL, 0, "xxx", n);

	/* Trailers: HTTP_TRAILERS_MAX bytes together (their CRs counted,
	 * their LFs not) are fine, one more is refused. */
	n = (size_t)sprintf(big, "0\r\n");
	memcpy(big + n, "X:", 2);
	memset(big + n + 2, 'v', HTTP_TRAILERS_MAX - 3);
	n += HTTP_TRAILERS_MAX - 1;
	n += (size_t)sprintf(big + n, "\r\n\r\n");
	chunked_expect(big, n, NULL, 0, "", n);
	n = (size_t)sprintf(big, "0\r\n");
	memcpy(big + n, "X:", 2);
	memset(big + n + 2, 'v', HTTP_TRAILERS_MAX - 2);
	n += HTTP_TRAILERS_MAX;
	n += (size_t)sprintf(big + n, "\r\n\r\n");
	chunked_err(big, n);
	/* Many short trailer lines count together. */
	n = (size_t)sprintf(big, "0\r\n");
	while (n < 2 * HTTP_TRAILERS_MAX)
		n += (size_t)sprintf(big + n, "A:\r\n");
	n += (size_t)sprintf(big + n, "\r\n");
	chunked_err(big, n);
	free(big);
}

/* ---- query_split ----------------------------------------------------- */

static void test_query_split(void **state)
{
	char q[] = "a=1&b=x+y&c=%41%42&d=%00&&e&=v&f=&%2B=%2b+&g=%zz%4&&";
	struct query_kv kv[16];
	size_t n = 99;

	(void)state;
	assert_int_equal(query_split(q, kv, 16, &n), 0);
	assert_int_equal(n, 9);
	assert_string_equal(kv[0].key, "a");
	assert_string_equal(kv[0].value, "1");
	assert_string_equal(kv[1].value, "x y");
	assert_string_equal(kv[2].value, "AB");
	assert_string_equal(kv[3].key, "d");
	assert_string_equal(kv[3].value, "%00"); /* never a NUL that cuts the value */
	assert_string_equal(kv[4].key, "e");
	assert_null(kv[4].value);
	assert_string_equal(kv[5].key, "");
	assert_string_equal(kv[5].value, "v");
	assert_string_equal(kv[6].key, "f");
	assert_string_equal(kv[6].value, "");
	assert_string_equal(kv[7].key, "+"); /* decoded after '+' became a space */
	assert_string_equal(kv[7].value, "+ ");
	assert_string_equal(kv[8].key, "g");
	assert_string_equal(kv[8].value, "%zz%4");
	for (size_t i = 0; i < n; i++) {
		assert_true(kv[i].key >= q && kv[i].key < q + sizeof(q));
		assert_true(!kv[i].value || (kv[i].value >= q && kv[i].value < q + sizeof(q)));
	}

	/* key=value=more: the first '=' separates. */
	{
		char q2[] = "label=team%3Dinfra=x&k+x=a%26b";

		assert_int_equal(query_split(q2, kv, 16, &n), 0);
		assert_int_equal(n, 2);
		assert_string_equal(kv[0].value, "team=infra=x");
		assert_string_equal(kv[1].key, "k x");
		assert_string_equal(kv[1].value, "a&b");
	}
	n = 99;
	assert_int_equal(query_split(NULL, kv, 16, &n), 0);
	assert_int_equal(n, 0);
	{
		char q3[] = "&&&";

		n = 99;
		assert_int_equal(query_split(q3, kv, 16, &n), 0);
		assert_int_equal(n, 0);
	}
}

static void test_query_split_max(void **state)
{
	struct query_kv kv[4];
	size_t n;
	char ok[] = "a&b=1&&c&&&", over[] = "a&b&c&d", zero[] = "a";

	(void)state;
	assert_int_equal(query_split(ok, kv, 3, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(query_split(over, kv, 3, &n), -E2BIG);
	assert_int_equal(query_split(zero, kv, 0, &n), -E2BIG);
}

/* ---- http_admit ------------------------------------------------------ */

#define LIMIT HTTP_CONNECTION_LIMIT
#define RESERVED (HTTP_CONNECTION_LIMIT - HTTP_CONNECTION_RESERVE)

static enum http_admit admit_uid(unsigned serving, unsigned forbidden, unsigned busy, bool allowed,
				 bool privileged, unsigned uid_serving, unsigned uid_max,
				 struct api_err *e)
{
	const unsigned refusing[2] = { forbidden, busy };
	const struct http_admit_peer p = { .uid = 1234,
					   .gid = 5678,
					   .allowed = allowed,
					   .privileged = privileged,
					   .uid_serving = uid_serving };

	e->code = API_OK;
	e->msg[0] = '\0';
	return http_admit(serving, refusing, &p, uid_max, e);
}

/* No per-uid cap: the global limit and the reserve only. */
static enum http_admit admit(unsigned serving, unsigned forbidden, unsigned busy, bool allowed,
			     bool privileged, struct api_err *e)
{
	return admit_uid(serving, forbidden, busy, allowed, privileged, 0, 0, e);
}

static void test_admit_limit_and_reserve(void **state)
{
	struct api_err e;

	(void)state;
	assert_true(HTTP_CONNECTION_RESERVE > 0 && RESERVED > 0);
	assert_int_equal(admit(0, 0, 0, true, false, &e), HTTP_ADMIT_SERVE);
	assert_int_equal(admit(RESERVED - 1, 0, 0, true, false, &e), HTTP_ADMIT_SERVE);
	/* The reserve is root's and kilnd's own uid's. */
	assert_int_equal(admit(RESERVED, 0, 0, true, false, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_TOO_MANY_CONNECTIONS);
	assert_int_equal(api_code_status(e.code), 503);
	check_msg(&e);
	assert_int_equal(admit(LIMIT - 1, 0, 0, true, false, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(admit(RESERVED, 0, 0, true, true, &e), HTTP_ADMIT_SERVE);
	assert_int_equal(admit(LIMIT - 1, 0, 0, true, true, &e), HTTP_ADMIT_SERVE);
	assert_int_equal(admit(LIMIT, 0, 0, true, true, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_TOO_MANY_CONNECTIONS);
	assert_int_equal(admit(LIMIT + 5, 0, 0, true, true, &e), HTTP_ADMIT_REFUSE);
	/* Full refusal budgets do not matter while there is room. */
	assert_int_equal(admit(0, HTTP_REFUSING_MAX, HTTP_REFUSING_MAX, true, false, &e),
			 HTTP_ADMIT_SERVE);
}

static void test_admit_forbidden(void **state)
{
	struct api_err e;

	(void)state;
	/* Never served, at any count, privileged or not. */
	for (unsigned s = 0; s <= LIMIT + 1; s++) {
		for (int p = 0; p < 2; p++) {
			assert_int_equal(admit(s, 0, 0, false, p, &e), HTTP_ADMIT_REFUSE);
			assert_int_equal(e.code, API_E_FORBIDDEN);
		}
	}
	assert_int_equal(api_code_status(API_E_FORBIDDEN), 403);
	check_msg(&e);
	assert_non_null(strstr(e.msg, "uid 1234"));
}

static void test_admit_refusal_budgets(void **state)
{
	struct api_err e;

	(void)state;
	/* forbidden: its own budget only. */
	assert_int_equal(admit(0, HTTP_REFUSING_MAX - 1, 0, false, false, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(admit(0, HTTP_REFUSING_MAX, 0, false, false, &e), HTTP_ADMIT_DROP);
	assert_int_equal(admit(0, HTTP_REFUSING_MAX + 3, 0, false, true, &e), HTTP_ADMIT_DROP);
	assert_int_equal(admit(0, 0, HTTP_REFUSING_MAX, false, false, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_FORBIDDEN);
	/* too many: its own budget only, so a flood of refused peers cannot
	 * take the answer an allowed client over the limit gets. */
	assert_int_equal(admit(RESERVED, 0, HTTP_REFUSING_MAX - 1, true, false, &e),
			 HTTP_ADMIT_REFUSE);
	assert_int_equal(admit(RESERVED, 0, HTTP_REFUSING_MAX, true, false, &e), HTTP_ADMIT_DROP);
	assert_int_equal(admit(LIMIT, 0, HTTP_REFUSING_MAX, true, true, &e), HTTP_ADMIT_DROP);
	assert_int_equal(admit(RESERVED, 0, HTTP_REFUSING_MAX, true, true, &e), HTTP_ADMIT_SERVE);
	assert_int_equal(admit(RESERVED, HTTP_REFUSING_MAX, 0, true, false, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_TOO_MANY_CONNECTIONS);
}

/* One allowed uid cannot hold every slot the others need
 * (--max-connections-per-uid); root and kilnd's uid are not capped. */
static void test_admit_per_uid(void **state)
{
	struct api_err e;

	(void)state;
	assert_int_equal(admit_uid(10, 0, 0, true, false, 63, 64, &e), HTTP_ADMIT_SERVE);
	assert_int_equal(admit_uid(10, 0, 0, true, false, 64, 64, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_TOO_MANY_CONNECTIONS);
	check_msg(&e);
	assert_non_null(strstr(e.msg, "uid 1234 holds 64 connections"));
	assert_non_null(strstr(e.msg, "--max-connections-per-uid 64"));
	/* Its refusals share the too-many budget. */
	assert_int_equal(admit_uid(10, 0, HTTP_REFUSING_MAX, true, false, 64, 64, &e),
			 HTTP_ADMIT_DROP);
	/* Privileged: no cap of its own. */
	assert_int_equal(admit_uid(10, 0, 0, true, true, 200, 64, &e), HTTP_ADMIT_SERVE);
	/* 0: no per-uid cap. */
	assert_int_equal(admit_uid(10, 0, 0, true, false, 200, 0, &e), HTTP_ADMIT_SERVE);
	/* The global limit still holds under the cap. */
	assert_int_equal(admit_uid(RESERVED, 0, 0, true, false, 1, 64, &e), HTTP_ADMIT_REFUSE);
	assert_null(strstr(e.msg, "--max-connections-per-uid"));
	/* A forbidden peer stays forbidden. */
	assert_int_equal(admit_uid(0, 0, 0, false, false, 0, 64, &e), HTTP_ADMIT_REFUSE);
	assert_int_equal(e.code, API_E_FORBIDDEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_get),
		cmocka_unit_test(test_head_http10_and_keep_alive),
		cmocka_unit_test(test_head_body_framing),
		cmocka_unit_test(test_head_end),
		cmocka_unit_test(test_head_scan_incremental),
		cmocka_unit_test(test_head_line_ends),
		cmocka_unit_test(test_head_bytes),
		cmocka_unit_test(test_head_fields),
		cmocka_unit_test(test_head_field_count),
		cmocka_unit_test(test_head_request_line),
		cmocka_unit_test(test_head_host),
		cmocka_unit_test(test_head_content_length),
		cmocka_unit_test(test_head_transfer_encoding_and_expect),
		cmocka_unit_test(test_head_messages_quote_little),
		cmocka_unit_test(test_has_token),
		cmocka_unit_test(test_chunked_any_split),
		cmocka_unit_test(test_chunked_small_bodies),
		cmocka_unit_test(test_chunked_errors),
		cmocka_unit_test(test_query_split),
		cmocka_unit_test(test_query_split_max),
		cmocka_unit_test(test_admit_limit_and_reserve),
		cmocka_unit_test(test_admit_forbidden),
		cmocka_unit_test(test_admit_refusal_budgets),
		cmocka_unit_test(test_admit_per_uid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

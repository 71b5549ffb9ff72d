/*
 * egress_flow: kiln-egress's decision for one steered flow
 * (api/egress/egress_flow.c) from its PROXY v2 header and first bytes:
 * every decision and refusal with its exact reason, hostile first bytes,
 * a request cut at every byte, and real ClientHellos (tls_hello_capture.h).
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
#include <sys/socket.h>

#include "api/egress/egress_flow.h"
#include "tls_hello_capture.h"

static const char RULES[] =
	"[{\"host\":\"allowed.test\"},"
	"{\"host\":\"x.test\",\"ports\":[443,4433]},"
	"{\"host\":\"api.test\",\"methods\":[\"GET\"],\"paths\":[\"/repos/\"]},"
	"{\"host\":\"denied.test\",\"action\":\"deny\",\"status\":451},"
	"{\"host\":\"icpt.test\",\"intercept\":true},"
	"{\"host\":\"inj.test\",\"intercept\":true,"
	"\"inject\":[{\"header\":\"authorization\",\"secret\":\"s\",\"format\":\"Bearer {}\"}]},"
	"{\"host\":\"del.test\",\"methods\":[\"DELETE\"],\"action\":\"deny\"},"
	"{\"host\":\"del.test\"}]";

static struct http_rules *rules(void)
{
	struct http_rules *r = NULL;
	struct net_rules_err e;

	if (http_rules_parse_text(RULES, strlen(RULES), &r, &e) < 0)
		fail_msg("rules: %s", e.msg);
	return r;
}

static struct proxy_v2 hdr(uint16_t dport, const char *authority)
{
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000, .dport = dport };

	memcpy(h.src, (uint8_t[]){ 10, 0, 2, 15 }, 4);
	memcpy(h.dst, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	snprintf(h.authority, sizeof(h.authority), "%s", authority);
	return h;
}

/* The decision on the whole text s. */
static struct egress_flow on(const char *s, uint16_t dport, const char *authority)
{
	struct http_rules *r = rules();
	struct proxy_v2 h = hdr(dport, authority);
	struct egress_flow f;

	egress_flow_decide(&h, (const uint8_t *)s, strlen(s), r, &f);
	http_rules_free(r);
	return f;
}

static void deny_is(const char *s, uint16_t dport, const char *authority, const char *reason)
{
	struct egress_flow f = on(s, dport, authority);

	if (f.status != EGRESS_DENY || strcmp(f.reason, reason) != 0)
		fail_msg("%s: status %d, reason \"%s\", want \"%s\"", s, f.status, f.reason,
			 reason);
}

static void test_http_allowed(void **state)
{
	const char *req = "GET /x?y HTTP/1.1\r\nHost: Allowed.Test\r\nAccept: */*\r\n\r\n";
	struct egress_flow f = on(req, 80, "allowed.test");

	(void)state;
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.proto, EGRESS_PROTO_HTTP);
	assert_string_equal(f.name, "allowed.test");
	assert_string_equal(f.method, "GET");
	assert_int_equal(f.port, 80);
	assert_int_equal(f.rule, 0);
	assert_int_equal(f.request_len, strlen(req));
	assert_string_equal(f.reason, "");
	/* A port in Host, no AUTHORITY, a body, HTTP/1.0. */
	f = on("POST / HTTP/1.0\r\nhost: allowed.test:80\r\nContent-Length: 5\r\n\r\nhello", 80,
	       "");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.request_len,
			 strlen("POST / HTTP/1.0\r\nhost: allowed.test:80\r\n"
				"Content-Length: 5\r\n\r\n") +
				 5);
	/* A method and path rule, checked. */
	f = on("GET /repos/a HTTP/1.1\r\nHost: api.test\r\n\r\n", 80, "");
	assert_string_equal(f.reason, "");
	assert_int_equal(f.status, EGRESS_ALLOW);
}

static void test_http_denied_by_rules(void **state)
{
	struct egress_flow f;

	(void)state;
	f = on("GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n", 80, "denied.test");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "denied by rule");
	assert_int_equal(f.status_code, 451);
	assert_int_equal(f.rule, 3);
	f = on("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", 80, "");
	assert_string_equal(f.reason, "no rule allows this host and port");
	assert_int_equal(f.status_code, 403);
	assert_int_equal(f.rule, SIZE_MAX);
	deny_is("GET / HTTP/1.1\r\nHost: x.test\r\n\r\n", 80, "",
		"no rule allows this host and port");
	deny_is("POST /repos/a HTTP/1.1\r\nHost: api.test\r\n\r\n", 80, "",
		"no rule allows this host and port");
	deny_is("GET /repos/../a HTTP/1.1\r\nHost: api.test\r\n\r\n", 80, "",
		"request path not in normal form");
	/* A secret never goes out in clear text. */
	deny_is("GET / HTTP/1.1\r\nHost: inj.test\r\n\r\n", 80, "",
		"secrets are sent only over TLS");
	/* A method no rule could name is refused, not passed to a later rule:
	 * Django and Werkzeug read "delete" as the DELETE rule 6 denies. */
	assert_int_equal(on("GET / HTTP/1.1\r\nHost: del.test\r\n\r\n", 80, "").status,
			 EGRESS_ALLOW);
	f = on("DELETE / HTTP/1.1\r\nHost: del.test\r\n\r\n", 80, "");
	assert_string_equal(f.reason, "denied by rule");
	assert_int_equal(f.rule, 6);
	deny_is("delete / HTTP/1.1\r\nHost: del.test\r\n\r\n", 80, "",
		"request method is not upper-case letters, digits, '-' or '_'");
	deny_is("Delete / HTTP/1.1\r\nHost: del.test\r\n\r\n", 80, "",
		"request method is not upper-case letters, digits, '-' or '_'");
	deny_is("M.X / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 80, "",
		"request method is not upper-case letters, digits, '-' or '_'");
	/* Plain HTTP is always read: an intercepting rule without inject allows it. */
	assert_int_equal(on("GET / HTTP/1.1\r\nHost: icpt.test\r\n\r\n", 80, "").status,
			 EGRESS_ALLOW);
	/* No rules at all. */
	{
		struct proxy_v2 h = hdr(80, "");
		const char *s = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";

		egress_flow_decide(&h, (const uint8_t *)s, strlen(s), NULL, &f);
		assert_string_equal(f.reason, "no rule allows this host and port");
	}
}

/* A destination the filter bound several names to (one CDN's names share
 * addresses): the flow's name may be any of them, and only them. */
static void test_any_name_bound_to_the_destination(void **state)
{
	struct http_rules *r = rules();
	struct proxy_v2 h = hdr(80, "denied.test");
	const char *ok = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
	const char *other = "GET / HTTP/1.1\r\nHost: del.test\r\n\r\n";
	struct egress_flow f;

	(void)state;
	strcpy(h.also[0], "x.test");
	strcpy(h.also[1], "allowed.test");
	h.n_also = 2;
	egress_flow_decide(&h, (const uint8_t *)ok, strlen(ok), r, &f);
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_string_equal(f.name, "allowed.test");
	egress_flow_decide(&h, (const uint8_t *)other, strlen(other), r, &f);
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "name differs from the destination's recorded name");
	http_rules_free(r);
}

static void test_http_name_and_port_checked(void **state)
{
	(void)state;
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 80, "denied.test",
		"name differs from the destination's recorded name");
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test:81\r\n\r\n", 80, "allowed.test",
		"Host's port differs from the destination port");
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 8080, "allowed.test",
		"Host's port differs from the destination port");
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test:0\r\n\r\n", 80, "",
		"Host's port is not a port number");
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test:\r\n\r\n", 80, "",
		"Host's port is not a port number");
	deny_is("GET / HTTP/1.1\r\nHost: allowed.test:80:80\r\n\r\n", 80, "",
		"Host's port is not a port number");
	deny_is("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 80, "",
		"Host is an IP address, not a name");
	deny_is("GET / HTTP/1.1\r\nHost: 127.1\r\n\r\n", 80, "",
		"Host is an IP address, not a name");
	deny_is("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 80, "",
		"Host is an IP address, not a name");
	deny_is("GET / HTTP/1.1\r\nHost: *.allowed.test\r\n\r\n", 80, "", "Host is not a DNS name");
	deny_is("GET / HTTP/1.1\r\nHost: a..test\r\n\r\n", 80, "", "Host is not a DNS name");
	deny_is("GET / HTTP/1.1\r\nHost: \r\n\r\n", 80, "", "Host is not a DNS name");
	deny_is("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 80, "", "Host is not a DNS name");
	/* A trailing dot and case are the same name. */
	assert_int_equal(on("GET / HTTP/1.1\r\nHost: ALLOWED.test.\r\n\r\n", 80, "allowed.TEST")
				 .status,
			 EGRESS_ALLOW);
}

static void test_http_hostile_heads(void **state)
{
	static const struct {
		const char *s, *why;
	} cases[] = {
		{ "\x01\x02\x03", "neither TLS nor an HTTP request" },
		{ "SSH-2.0-x\r\n", "neither TLS nor an HTTP request" },
		{ " GET / HTTP/1.1\r\n", "neither TLS nor an HTTP request" },
		{ "GET\t/ HTTP/1.1\r\n", "neither TLS nor an HTTP request" },
		{ "GET http://a.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "OPTIONS * HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "GET /\x7f HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "GET  / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "GET / HTTP/2.0\r\nHost: allowed.test\r\n\r\n", "not HTTP/1.0 or HTTP/1.1" },
		{ "GET / HTTP/1.1 \r\nHost: allowed.test\r\n\r\n", "not HTTP/1.0 or HTTP/1.1" },
		{ "GET /\r\nHost: allowed.test\r\n\r\n", "not HTTP/1.0 or HTTP/1.1" },
		{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		  "request target is not a path (origin form)" },
		{ "GET / HTTP/1.1\nHost: allowed.test\r\n\r\n", "line not ended by CRLF" },
		{ "GET / HTTP/1.1\r\nX: a\rb\r\nHost: allowed.test\r\n\r\n",
		  "line not ended by CRLF" },
		{ "GET / HTTP/1.1\r\nX: a\nHost: allowed.test\r\n\r\n", "line not ended by CRLF" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\n x\r\n\r\n", "folded header line" },
		{ "GET / HTTP/1.1\r\nHost : allowed.test\r\n\r\n", "malformed header field" },
		{ "GET / HTTP/1.1\r\n: x\r\nHost: allowed.test\r\n\r\n", "malformed header field" },
		{ "GET / HTTP/1.1\r\nNoColon\r\nHost: allowed.test\r\n\r\n",
		  "malformed header field" },
		{ "GET / HTTP/1.1\r\nX: a\x01\r\nHost: allowed.test\r\n\r\n",
		  "control byte in a header field" },
		{ "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "no Host field" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nhost: allowed.test\r\n\r\n",
		  "more than one Host field" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		  "more than one Content-Length field" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: +1\r\n\r\n",
		  "Content-Length is not a number" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 1,1\r\n\r\n",
		  "Content-Length is not a number" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 99999999999999999999\r\n\r\n",
		  "Content-Length is not a number" },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n",
		  "Transfer-Encoding in a plain HTTP request (read on decrypted flows only)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		deny_is(cases[i].s, 80, "", cases[i].why);
	/* A method longer than any rule's, before the head is complete. */
	deny_is("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 80, "",
		"request method too long");
}

static void test_http_needs_more_then_bounds(void **state)
{
	const char *req = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
	struct http_rules *r = rules();
	struct proxy_v2 h = hdr(80, "");
	struct egress_flow f;
	char *big;

	(void)state;
	/* Cut at every byte: more is asked for, one byte past what is there. */
	for (size_t n = 0; n < strlen(req); n++) {
		egress_flow_decide(&h, (const uint8_t *)req, n, r, &f);
		assert_int_equal(f.status, EGRESS_NEED_MORE);
		assert_int_equal(f.need, n + 1);
	}
	egress_flow_decide(&h, (const uint8_t *)req, strlen(req), r, &f);
	assert_int_equal(f.status, EGRESS_ALLOW);
	/* No end within 16 KiB. */
	big = malloc(EGRESS_FIRST_MAX + 10);
	assert_non_null(big);
	memset(big, 'a', EGRESS_FIRST_MAX + 10);
	memcpy(big, "GET /", 5);
	egress_flow_decide(&h, (const uint8_t *)big, EGRESS_FIRST_MAX - 1, r, &f);
	assert_int_equal(f.status, EGRESS_NEED_MORE);
	assert_int_equal(f.need, EGRESS_FIRST_MAX);
	egress_flow_decide(&h, (const uint8_t *)big, EGRESS_FIRST_MAX + 10, r, &f);
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "request head over 16 KiB");
	/* A target past HTTP_REQ_PATH_MAX. */
	memcpy(big + HTTP_REQ_PATH_MAX + 4, " HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 34);
	egress_flow_decide(&h, (const uint8_t *)big, HTTP_REQ_PATH_MAX + 4 + 34, r, &f);
	assert_string_equal(f.reason, "request target too long");
	free(big);
	http_rules_free(r);
}

static struct egress_flow on_tls(const uint8_t *b, size_t n, uint16_t dport, const char *authority)
{
	struct http_rules *r = rules();
	struct proxy_v2 h = hdr(dport, authority);
	struct egress_flow f;

	egress_flow_decide(&h, b, n, r, &f);
	http_rules_free(r);
	return f;
}

/* A ClientHello laid out by hand with SNI name (and ECH when ech). */
static size_t hello(uint8_t *b, const char *name, int ech)
{
	uint8_t body[512];
	size_t n = 0, nl = name ? strlen(name) : 0, ext = 0, m;

	body[n++] = 3, body[n++] = 3;
	memset(body + n, 0, 33); /* random, empty session_id */
	n += 33;
	memcpy(body + n, (uint8_t[]){ 0, 2, 0x13, 0x01, 1, 0 }, 6);
	n += 6;
	m = n;
	n += 2;
	if (name) {
		memcpy(body + n,
		       (uint8_t[]){ 0, 0, 0, (uint8_t)(nl + 5), 0, (uint8_t)(nl + 3), 0, 0,
				    (uint8_t)nl },
		       9);
		memcpy(body + n + 9, name, nl);
		n += 9 + nl;
	}
	if (ech) {
		memcpy(body + n, (uint8_t[]){ 0xfe, 0x0d, 0, 1, 0 }, 5);
		n += 5;
	}
	ext = n - m - 2;
	body[m] = (uint8_t)(ext >> 8), body[m + 1] = (uint8_t)ext;
	memcpy(b,
	       (uint8_t[]){ 0x16, 3, 1, (uint8_t)((n + 4) >> 8), (uint8_t)(n + 4), 1, 0,
			    (uint8_t)(n >> 8), (uint8_t)n },
	       9);
	memcpy(b + 9, body, n);
	return n + 9;
}

static void test_tls(void **state)
{
	uint8_t b[600];
	struct egress_flow f;
	size_t n;

	(void)state;
	f = on_tls(capture_alpn, sizeof(capture_alpn), 443, "x.test");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.proto, EGRESS_PROTO_TLS);
	assert_string_equal(f.name, "x.test");
	assert_int_equal(f.rule, 1);
	assert_int_equal(on_tls(capture_curl, sizeof(capture_curl), 4433, "").status, EGRESS_ALLOW);
	f = on_tls(capture_alpn, sizeof(capture_alpn), 443, "allowed.test");
	assert_string_equal(f.reason, "name differs from the destination's recorded name");
	f = on_tls(capture_alpn, sizeof(capture_alpn), 8443, "x.test");
	assert_string_equal(f.reason, "no rule allows this host and port");
	for (size_t i = 1; i < sizeof(capture_alpn); i++) {
		f = on_tls(capture_alpn, i, 443, "x.test");
		assert_int_equal(f.status, EGRESS_NEED_MORE);
		assert_true(f.need > i && f.need <= EGRESS_FIRST_MAX);
	}
	n = hello(b, "api.test", 0);
	f = on_tls(b, n, 443, "");
	assert_string_equal(f.reason,
			    "the rule limits methods or paths, which a TLS splice cannot check");
	/* Rules that decrypt: allowed, to be read request by request. */
	n = hello(b, "icpt.test", 0);
	f = on_tls(b, n, 443, "");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.intercept);
	n = hello(b, "inj.test", 0);
	f = on_tls(b, n, 443, "");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.intercept);
	n = hello(b, "allowed.test", 0);
	assert_false(on_tls(b, n, 443, "").intercept);
	n = hello(b, "denied.test", 0);
	f = on_tls(b, n, 443, "");
	assert_string_equal(f.reason, "denied by rule");
	n = hello(b, "allowed.test", 0);
	assert_int_equal(on_tls(b, n, 443, "allowed.test").status, EGRESS_ALLOW);
	n = hello(b, NULL, 0);
	assert_string_equal(on_tls(b, n, 443, "").reason, "TLS ClientHello without SNI");
	n = hello(b, "allowed.test", 1);
	assert_string_equal(on_tls(b, n, 443, "").reason,
			    "TLS ClientHello with ECH (its SNI is only the outer name)");
	n = hello(b, "10.0.0.1", 0);
	assert_string_equal(on_tls(b, n, 443, "").reason, "malformed TLS ClientHello");
	assert_string_equal(on_tls((const uint8_t *)"\x16\x03\x01\x00\x00", 5, 443, "").reason,
			    "malformed TLS ClientHello");
}

static void test_deny_response(void **state)
{
	struct egress_flow f = on("GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n", 80, "");
	const char *want_body =
		"{\"error\":\"egress denied\",\"reason\":\"denied by rule\",\"rule\":3}\n";
	char buf[512], want[512];

	(void)state;
	snprintf(want, sizeof(want),
		 "HTTP/1.1 451 Denied\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s",
		 strlen(want_body), want_body);
	assert_int_equal(egress_flow_deny_response(&f, buf, sizeof(buf)), (int)strlen(want));
	assert_string_equal(buf, want);
	assert_int_equal(egress_flow_deny_response(&f, buf, 20), -ENOSPC);
	f = on("GET / HTTP/1.1\r\nHost: none.test\r\n\r\n", 80, "");
	assert_true(egress_flow_deny_response(&f, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(
		strstr(buf, "\"reason\":\"no rule allows this host and port\",\"rule\":null}"));
	/* What kiln-egress answers when the upstream cannot be reached. */
	f.status_code = 502;
	f.reason = "upstream connect failed";
	assert_true(egress_flow_deny_response(&f, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 502 Bad Gateway\r\n"));
	/* A reason not of this module's own (OpenSSL's, a secret's name) is
	 * escaped: it cannot end the JSON string. */
	f.reason = "a \"quoted\\ \n reason";
	assert_true(egress_flow_deny_response(&f, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\"reason\":\"a \\\"quoted\\\\ \\u000a reason\""));
}

/* A request head on a decrypted flow to name, port 443. */
static struct egress_flow req(const char *s, const char *name)
{
	struct http_rules *r = rules();
	struct egress_flow f;

	egress_flow_request(name, 443, (const uint8_t *)s, strlen(s), r, &f);
	http_rules_free(r);
	return f;
}

static void test_request_on_decrypted_flow(void **state)
{
	struct egress_flow f;

	(void)state;
	/* Method and path decide again: api.test's rule limits both. */
	f = req("GET /repos/a HTTP/1.1\r\nHost: api.test\r\n\r\n", "api.test");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_string_equal(f.path, "/repos/a");
	assert_string_equal(f.method, "GET");
	assert_int_equal(f.head_len, strlen("GET /repos/a HTTP/1.1\r\nHost: api.test\r\n\r\n"));
	assert_false(f.chunked);
	f = req("POST /repos/a HTTP/1.1\r\nHost: api.test\r\n\r\n", "api.test");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "no rule allows this host and port");
	assert_int_equal(f.proto, EGRESS_PROTO_HTTP);
	/* A rule that injects: allowed over TLS. */
	f = req("GET / HTTP/1.1\r\nHost: inj.test\r\n\r\n", "inj.test");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.rule, 5);
	/* Host must be the SNI's name, its port 443 when absent. */
	f = req("GET / HTTP/1.1\r\nHost: icpt.test\r\n\r\n", "inj.test");
	assert_string_equal(f.reason, "Host differs from the TLS server name");
	f = req("GET / HTTP/1.1\r\nHost: inj.test:80\r\n\r\n", "inj.test");
	assert_string_equal(f.reason, "Host's port differs from the destination port");
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: inj.test:443\r\n\r\n", "inj.test").status,
			 EGRESS_ALLOW);
	/* Framing: Content-Length, or chunked alone, never both. */
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nContent-Length: 7\r\n\r\nabc", "inj.test");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.request_len - f.head_len, 7);
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nTransfer-Encoding: Chunked\r\n\r\n",
		"inj.test");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.chunked);
	assert_int_equal(f.request_len, f.head_len);
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"inj.test");
	assert_string_equal(f.reason, "Transfer-Encoding other than chunked alone");
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nTransfer-Encoding: chunked\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"inj.test");
	assert_string_equal(f.reason, "more than one Transfer-Encoding field");
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nTransfer-Encoding: chunked\r\n"
		"Content-Length: 3\r\n\r\n",
		"inj.test");
	assert_string_equal(f.reason, "both Content-Length and Transfer-Encoding");
	f = req("POST / HTTP/1.1\r\nHost: inj.test\r\nContent-Length: 3\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"inj.test");
	assert_string_equal(f.reason, "both Content-Length and Transfer-Encoding");
	/* HTTP/1.0 has no Transfer-Encoding (RFC 9112 6.1): a server that
	 * ignores it reads no body, and the chunk data as the next request,
	 * one whose method and path no rule decided. */
	f = req("POST / HTTP/1.0\r\nHost: inj.test\r\nTransfer-Encoding: chunked\r\n\r\n",
		"inj.test");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "Transfer-Encoding in an HTTP/1.0 request");
	/* Not a request: still answered (over TLS). */
	f = req("\x01 junk\r\n\r\n", "inj.test");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_int_equal(f.proto, EGRESS_PROTO_HTTP);
	f = req("GET / HTTP/1.1\r\nHost: inj.test\r\n", "inj.test");
	assert_int_equal(f.status, EGRESS_NEED_MORE);
	/* Plain HTTP still refuses Transfer-Encoding: the proxy frames
	 * bodies only on decrypted flows. */
	f = on("POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n", 80,
	       "");
	assert_string_equal(f.reason,
			    "Transfer-Encoding in a plain HTTP request (read on decrypted flows only)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_allowed),
		cmocka_unit_test(test_http_denied_by_rules),
		cmocka_unit_test(test_http_name_and_port_checked),
		cmocka_unit_test(test_any_name_bound_to_the_destination),
		cmocka_unit_test(test_http_hostile_heads),
		cmocka_unit_test(test_http_needs_more_then_bounds),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_deny_response),
		cmocka_unit_test(test_request_on_decrypted_flow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

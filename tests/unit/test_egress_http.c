/*
 * egress_http: where a chunked request body ends on a decrypted flow
 * (every refusal with its reason, a body fed in every split, the bytes
 * after it left alone) and the head with a rule's headers injected (the
 * guest's own fields of that name gone, whatever their case), or only
 * removed (a field with no format: a policy answer's remove_headers).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "api/egress/egress_http.h"

/* Frame s whole: the result, *used, *why. */
static int frame(const char *s, size_t *used, const char **why)
{
	struct egress_chunked c;

	egress_chunked_init(&c);
	return egress_chunked_feed(&c, (const uint8_t *)s, strlen(s), used, why);
}

static void test_chunked_ends(void **state)
{
	static const char body[] = "3;ext=\"a b\"\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
	const char *why;
	size_t used;

	(void)state;
	assert_int_equal(frame("0\r\n\r\n", &used, &why), 1);
	assert_int_equal(used, 5);
	/* Bytes after the body are the next request's. */
	assert_int_equal(frame("0\r\n\r\nGET / HTTP/1.1\r\n", &used, &why), 1);
	assert_int_equal(used, 5);
	assert_int_equal(frame(body, &used, &why), 1);
	assert_int_equal(used, strlen(body));
	/* Split at every point, fed byte by byte: the same end. */
	for (size_t cut = 0; cut <= strlen(body); cut++) {
		struct egress_chunked c;
		size_t u1 = 0, u2 = 0;

		egress_chunked_init(&c);
		assert_int_equal(egress_chunked_feed(&c, (const uint8_t *)body, cut, &u1, &why),
				 cut == strlen(body));
		assert_int_equal(u1, cut);
		if (cut == strlen(body))
			continue;
		assert_int_equal(egress_chunked_feed(&c, (const uint8_t *)body + cut,
						     strlen(body) - cut, &u2, &why),
				 1);
		assert_int_equal(u1 + u2, strlen(body));
	}
	for (size_t i = 0; i < strlen(body); i++) {
		struct egress_chunked c;
		size_t u;
		int r = 0;

		egress_chunked_init(&c);
		for (size_t j = 0; j <= i; j++)
			r = egress_chunked_feed(&c, (const uint8_t *)body + j, 1, &u, &why);
		assert_int_equal(r, i == strlen(body) - 1);
	}
}

static void test_chunked_refused(void **state)
{
	static const struct {
		const char *in, *why;
		size_t used;
	} bad[] = {
		{ "zz\r\n", "chunk size is not hex digits", 0 },
		{ "\r\n", "chunk size is not hex digits", 0 },
		{ "-1\r\n", "chunk size is not hex digits", 0 },
		{ "0x5\r\n", "chunk size is not hex digits", 1 },
		{ "5 \r\n", "chunk size is not hex digits", 1 },
		{ "5\n", "chunk size is not hex digits", 1 },
		{ "5\r\r", "chunk line not ended by CRLF", 2 },
		{ "1000000000000000\r\n", "chunk size too large", 15 },
		{ "1;a\x01\r\n", "control byte in a chunk extension", 3 },
		{ "1\r\nab", "chunk data not followed by CRLF", 4 },
		{ "1\r\na\n", "chunk data not followed by CRLF", 4 },
		{ "0\r\nX-Trailer: 1\r\n\r\n", "trailer fields in a chunked request (not read)",
		  3 },
		{ "0\r\n\rX", "chunked body not ended by CRLF", 4 },
	};
	char longline[EGRESS_CHUNK_LINE_MAX + 8] = "1;";
	const char *why;
	size_t used;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = frame(bad[i].in, &used, &why);

		if (r != -1 || strcmp(why, bad[i].why) != 0 || used != bad[i].used)
			fail_msg("%zu: %d used %zu \"%s\"", i, r, used, why ? why : "");
	}
	memset(longline + 2, 'a', EGRESS_CHUNK_LINE_MAX);
	assert_int_equal(frame(longline, &used, &why), -1);
	assert_string_equal(why, "chunk size line too long");
	/* The largest size taken: 15 hex digits, no overflow. */
	assert_int_equal(frame("fffffffffffffff\r\nab", &used, &why), 0);
	assert_int_equal(used, 19);
}

static const struct egress_inject_field AUTH = { "authorization", "Bearer {}", "tok-1" };

static long inject(const char *head, const struct egress_inject_field *f, size_t nf, char *out,
		   size_t cap)
{
	return egress_http_inject(head, strlen(head), f, nf, out, cap);
}

static void test_inject(void **state)
{
	static const char head[] =
		"GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Bearer fake\r\n"
		"X-A: 1\r\nAUTHORIZATION: again\r\nauthorization-x: kept\r\n\r\n";
	static const char want[] = "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n"
				   "authorization-x: kept\r\nauthorization: Bearer tok-1\r\n\r\n";
	const struct egress_inject_field two[] = { AUTH, { "x-key", "k={};v=1", "s" } };
	char out[512];
	long n;

	(void)state;
	n = inject(head, &AUTH, 1, out, sizeof(out));
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, strlen(want));
	assert_true(egress_http_inject_size(strlen(head), &AUTH, 1) >= (size_t)n);
	n = inject("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", two, 2, out, sizeof(out));
	out[n] = '\0';
	assert_string_equal(out,
			    "GET / HTTP/1.1\r\nHost: a.test\r\nauthorization: Bearer tok-1\r\n"
			    "x-key: k=s;v=1\r\n\r\n");
	/* A field of the injected name with '_' for '-': servers that map
	 * fields to CGI-style variables (HTTP_X_KEY) read both as one, and
	 * may join or echo the two values. Removed too. */
	n = inject("GET / HTTP/1.1\r\nHost: a.test\r\nX_Key: guest\r\nx_key_2: kept\r\n\r\n", two,
		   2, out, sizeof(out));
	out[n] = '\0';
	assert_string_equal(out,
			    "GET / HTTP/1.1\r\nHost: a.test\r\nx_key_2: kept\r\n"
			    "authorization: Bearer tok-1\r\nx-key: k=s;v=1\r\n\r\n");
	/* Nothing to inject: the head as it was. */
	n = inject(head, NULL, 0, out, sizeof(out));
	assert_int_equal(n, strlen(head));
	assert_memory_equal(out, head, strlen(head));
	/* Too small, never cut. */
	assert_int_equal(inject(head, &AUTH, 1, out, 40), -ENOSPC);
}

/* A field with no format (a policy answer's remove_headers) is only
 * removed: every field of its name, whatever its case or '_' for '-',
 * and nothing is added for it. */
static void test_inject_remove_only(void **state)
{
	static const char head[] =
		"GET / HTTP/1.1\r\nHost: a.test\r\nUser-Agent: a\r\n"
		"USER-AGENT: b\r\nuser_agent: c\r\nUser_Agent: d\r\n"
		"user-agent-x: kept\r\nX-Agent: guest\r\nAuthorization: fake\r\n\r\n";
	const struct egress_inject_field ua = { "user-agent", NULL, NULL };
	const struct egress_inject_field mixed[] = {
		{ "user-agent", NULL, NULL },
		AUTH,
		{ "x-agent", NULL, NULL },
		{ "x-agent", "{}", "a1" },
	};
	char out[512];
	long n;

	(void)state;
	assert_int_equal(egress_http_inject_size(strlen(head), &ua, 1), strlen(head));
	n = inject(head, &ua, 1, out, sizeof(out));
	assert_true(n > 0);
	out[n] = '\0';
	assert_string_equal(out,
			    "GET / HTTP/1.1\r\nHost: a.test\r\nuser-agent-x: kept\r\n"
			    "X-Agent: guest\r\nAuthorization: fake\r\n\r\n");
	/* A name no field has: the head as it was. */
	n = inject("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", &ua, 1, out, sizeof(out));
	out[n] = '\0';
	assert_string_equal(out, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
	/* Mixed with injected fields; a name both removed and set is set once. */
	n = inject(head, mixed, 4, out, sizeof(out));
	assert_true(n > 0);
	assert_true(egress_http_inject_size(strlen(head), mixed, 4) >= (size_t)n);
	out[n] = '\0';
	assert_string_equal(out,
			    "GET / HTTP/1.1\r\nHost: a.test\r\nuser-agent-x: kept\r\n"
			    "authorization: Bearer tok-1\r\nx-agent: a1\r\n\r\n");
	/* Removal only never grows the head, so its exact size is enough. */
	assert_int_equal(inject(head, &ua, 1, out, strlen(head)), strlen(head) - 4 * 15);
}

static void test_inject_refused(void **state)
{
	const struct egress_inject_field crlf = { "authorization", "Bearer {}", "a\r\nX-Evil: 1" };
	const struct egress_inject_field nohole = { "authorization", "Bearer", "a" };
	const struct egress_inject_field twoholes = { "authorization", "{}{}", "a" };
	char out[512];

	(void)state;
	/* A value with CR or LF would add a header line of its own. */
	assert_int_equal(inject("GET / HTTP/1.1\r\n\r\n", &crlf, 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(inject("GET / HTTP/1.1\r\n\r\n", &nohole, 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(inject("GET / HTTP/1.1\r\n\r\n", &twoholes, 1, out, sizeof(out)), -EINVAL);
	/* Not a head egress_flow read: refused, never copied past cap. */
	assert_int_equal(inject("GET / HTTP/1.1\r\n", &AUTH, 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(inject("GET / HTTP/1.1\rX\r\n\r\n", &AUTH, 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(inject("\r\n\r\n", &AUTH, 1, out, sizeof(out)) > 0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunked_ends),   cmocka_unit_test(test_chunked_refused),
		cmocka_unit_test(test_inject),         cmocka_unit_test(test_inject_remove_only),
		cmocka_unit_test(test_inject_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

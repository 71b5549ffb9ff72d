/*
 * kilnd's HTTP server, how an answer is framed and headed (http_resp):
 * the body's delimitation by status, stream and version, whether the
 * connection stays open, the Connection value (HTTP/1.0 keep-alive is
 * said back), and the head's exact bytes. test_http.c sees the same
 * decisions on the wire.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "api/kilnd/http/http_resp.h"

/* ---- http_resp: pure ------------------------------------------------- */

static void test_framing(void **state)
{
	(void)state;
	assert_int_equal(http_resp_framing(200, false, 1), HTTP_FRAME_LENGTH);
	assert_int_equal(http_resp_framing(404, false, 0), HTTP_FRAME_LENGTH);
	assert_int_equal(http_resp_framing(200, true, 1), HTTP_FRAME_CHUNKED);
	/* HTTP/1.0 has no chunks: a stream ends with the connection. */
	assert_int_equal(http_resp_framing(200, true, 0), HTTP_FRAME_CLOSE);
	assert_int_equal(http_resp_framing(204, false, 1), HTTP_FRAME_NONE);
	assert_int_equal(http_resp_framing(101, false, 1), HTTP_FRAME_NONE);
	assert_int_equal(http_resp_framing(304, false, 1), HTTP_FRAME_NONE);

	assert_true(http_resp_keep(true, 200, HTTP_FRAME_LENGTH));
	assert_true(http_resp_keep(true, 200, HTTP_FRAME_CHUNKED));
	assert_true(http_resp_keep(true, 204, HTTP_FRAME_NONE));
	assert_false(http_resp_keep(false, 200, HTTP_FRAME_LENGTH));
	assert_false(http_resp_keep(true, 200, HTTP_FRAME_CLOSE));
	assert_false(http_resp_keep(true, 101, HTTP_FRAME_NONE));
}

static void test_connection_value(void **state)
{
	(void)state;
	/* HTTP/1.0 persists only when the answer says so too (ab -k waits
	 * for the close otherwise). */
	assert_string_equal(http_resp_connection(0, true, 200), "keep-alive");
	assert_string_equal(http_resp_connection(0, false, 200), "close");
	assert_null(http_resp_connection(1, true, 200));
	assert_string_equal(http_resp_connection(1, false, 404), "close");
	assert_null(http_resp_connection(1, false, 101));
}

static void test_head_bytes(void **state)
{
	char buf[512];
	struct http_resp_head h = {
		.status = 200,
		.content_type = "application/json",
		.framing = HTTP_FRAME_LENGTH,
		.length = 8,
		.connection = "keep-alive",
		.headers = "Location: /v1/x\r\n",
		.date = 0,
	};
	static const char want[] = "HTTP/1.1 200 OK\r\n"
				   "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
				   "Cache-Control: no-store\r\n"
				   "Content-Type: application/json\r\n"
				   "Content-Length: 8\r\n"
				   "Connection: keep-alive\r\n"
				   "Location: /v1/x\r\n"
				   "\r\n";
	int n;

	(void)state;
	n = http_resp_head(buf, sizeof(buf), &h);
	assert_int_equal(n, sizeof(want) - 1);
	assert_string_equal(buf, want);

	/* No length on a stream (chunked) or one that ends with the
	 * connection, nor on a 204. */
	h.framing = HTTP_FRAME_CHUNKED;
	h.connection = NULL;
	h.headers = NULL;
	assert_true(http_resp_head(buf, sizeof(buf), &h) > 0);
	assert_non_null(strstr(buf, "\r\nTransfer-Encoding: chunked\r\n\r\n"));
	assert_null(strstr(buf, "Content-Length"));
	assert_null(strstr(buf, "Connection"));
	h.framing = HTTP_FRAME_CLOSE;
	h.connection = "close";
	assert_true(http_resp_head(buf, sizeof(buf), &h) > 0);
	assert_null(strstr(buf, "Content-Length"));
	assert_null(strstr(buf, "Transfer-Encoding"));
	assert_non_null(strstr(buf, "\r\nConnection: close\r\n\r\n"));
	h = (struct http_resp_head){ .status = 204, .framing = HTTP_FRAME_NONE };
	assert_true(http_resp_head(buf, sizeof(buf), &h) > 0);
	assert_true(strncmp(buf, "HTTP/1.1 204 No Content\r\n", 25) == 0);
	assert_null(strstr(buf, "Content-"));

	/* Too small: refused, never cut. */
	h.headers = "X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
	n = http_resp_head(buf, 80, &h);
	assert_int_equal(n, -ENOBUFS);
	n = http_resp_head(buf, 0, &h);
	assert_int_equal(n, -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_connection_value),
		cmocka_unit_test(test_head_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

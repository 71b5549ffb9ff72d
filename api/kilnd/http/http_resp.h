/*
 * http_resp: an answer's framing, whether its connection stays open, and
 * its head (status line and header fields), decided and written without
 * I/O, so every choice RFC 9112 makes about them is a unit test.
 *
 * Contract: pure; no allocation. The status line always says HTTP/1.1
 * (RFC 9110 section 6.2: the server's own version, whatever 1.x the
 * request had). A HEAD answer is the GET answer's head (the caller sends
 * no body), Content-Length included.
 */
#ifndef KILN_HTTP_RESP_H
#define KILN_HTTP_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* How an answer's body is delimited (RFC 9112 section 6.3). */
enum http_framing {
	HTTP_FRAME_LENGTH,  /* Content-Length */
	HTTP_FRAME_CHUNKED, /* Transfer-Encoding: chunked: a stream to HTTP/1.1 */
	HTTP_FRAME_CLOSE,   /* the connection's end: a stream to HTTP/1.0, which has no chunks */
	HTTP_FRAME_NONE,    /* no body, by its status: 1xx, 204, 304 */
};

/* The framing of an answer with status, streamed (length unknown) or
 * not, to a request of HTTP/1.minor. */
enum http_framing http_resp_framing(unsigned status, bool stream, int minor);

/* Whether the connection serves another request after the answer: the
 * request's wish (http_head.keep_alive, and the server's own reasons),
 * unless the body ends with the connection or the protocol switches. */
bool http_resp_keep(bool keep_alive, unsigned status, enum http_framing f);

/*
 * The answer's Connection value, NULL for none. "close" when the
 * connection closes after it; "keep-alive" when it stays open for an
 * HTTP/1.0 client, whose connections persist only when both sides say so
 * (RFC 9112 appendix C.2.2: a 1.0 client such as `ab -k` otherwise waits
 * for the close); none when an HTTP/1.1 one stays open (the default), nor
 * on a 101, whose Connection is the upgrade's.
 */
const char *http_resp_connection(int minor, bool keep, unsigned status);

struct http_resp_head {
	unsigned status;
	const char *content_type; /* NULL: none */
	enum http_framing framing;
	uint64_t length;        /* the body's, with HTTP_FRAME_LENGTH */
	const char *connection; /* NULL: no Connection field */
	const char *headers;    /* more lines, each ending in CRLF; NULL or "" for none */
	time_t date;
};

/* The head, through its empty line, into buf[0..cap): its length, or
 * -ENOBUFS when it does not fit. */
int http_resp_head(char *buf, size_t cap, const struct http_resp_head *h);

#endif

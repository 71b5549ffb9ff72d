/*
 * http_head: one HTTP/1.1 request head (request line and header fields)
 * checked strictly against RFC 9112, and the framing of its body.
 *
 * Contract:
 *  - Pure: no I/O, no allocation. http_head_parse() works in place on the
 *    caller's buffer (it writes NULs) and every pointer in the result
 *    points into it.
 *  - Anything a proxy, a library or kilnd itself could read two ways is
 *    refused, never guessed at: bare CR or LF line ends, a NUL or other
 *    control byte, whitespace before a field's colon, folded lines, a
 *    method that is not a token, a target that is not a path, a major
 *    version other than 1 (505; HTTP/1.2 and later are read as 1.1, RFC
 *    9110 section 2.5), a missing Host on HTTP/1.1 or a
 *    repeated one on any version, more than one Content-Length, a Content-Length that is not
 *    plain digits, a Transfer-Encoding other than exactly "chunked", and
 *    both Content-Length and Transfer-Encoding. These request-smuggling
 *    ambiguities are what RFC 9112 sections 6.1 and 6.3 name. Connection
 *    and Expect are read over all their field lines (a proxy joins
 *    them): "close" anywhere closes, any Expect other than 100-continue
 *    is refused.
 *  - Errors are api_err values: bad_request (400), uri_too_long (414),
 *    headers_too_large (431), http_version_not_supported (505). Their
 *    messages quote at most a short, printable piece of the input.
 *  - The target is the raw path as sent (no %-decoding: routing sees what
 *    the client wrote, so "%2F" never becomes a segment separator) and
 *    the raw query after '?', decoded later parameter by parameter.
 */
#ifndef KILN_HTTP_HEAD_H
#define KILN_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/api_error.h"

/* The whole head, request line through the empty line. */
#define HTTP_HEAD_MAX 16384
/* The request target. */
#define HTTP_TARGET_MAX 8192
#define HTTP_FIELDS_MAX 64

struct http_field {
	const char *name;  /* as sent; compare case-insensitively */
	const char *value; /* without leading and trailing whitespace */
};

enum http_body_kind {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH, /* content_length bytes */
	HTTP_BODY_CHUNKED,
};

struct http_head {
	const char *method;
	const char *path;  /* the raw path, from '/' */
	const char *query; /* after '?', or NULL */
	int minor;         /* HTTP/1.minor: 0 or 1 (1.2 and later: 1) */
	struct http_field fields[HTTP_FIELDS_MAX];
	size_t nfields;
	enum http_body_kind body;
	uint64_t content_length;
	bool keep_alive;      /* the connection may serve another request */
	bool expect_continue; /* "Expect: 100-continue" */
};

/*
 * Where the head in buf[0..n) ends: its length through the empty line
 * (CRLF CRLF), 0 when it is not complete yet, or -1 with e when it never
 * can be: more than HTTP_HEAD_MAX bytes without an end (431).
 */
long http_head_end(const char *buf, size_t n, struct api_err *e);

/* http_head_end over a buffer that grows: each call checks only the bytes
 * added since the last (which returned 0), so a head trickled in byte by
 * byte costs its length once, not its length squared. Start from
 * { 0 } for each head; the same result as http_head_end(buf, n). */
struct http_head_scan {
	size_t skip;    /* leading empty lines' bytes */
	size_t scanned; /* bytes checked, no end among them */
};
long http_head_scan_end(const char *buf, size_t n, struct http_head_scan *sc, struct api_err *e);

/* Parse the complete head buf[0..len) (len from http_head_end) in place.
 * 0, or -1 with e. */
int http_head_parse(char *buf, size_t len, struct http_head *h, struct api_err *e);

/* The first field called name (case-insensitive), or NULL. */
const char *http_head_field(const struct http_head *h, const char *name);

/* True when the comma-separated list value has token tok (case-insensitive). */
bool http_has_token(const char *value, const char *tok);

#endif

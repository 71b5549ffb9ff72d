/*
 * http_chunked: the decoder of a chunked request body (RFC 9112 section
 * 7.1), fed whatever bytes arrived.
 *
 * Contract:
 *  - Pure: no I/O, no allocation; the state is a plain value.
 *  - Each call consumes a prefix of its input and gives back at most one
 *    span of body data inside it, so the caller never copies: call again
 *    with the rest until everything is used or the body is done.
 *  - Chunk sizes are hex digits that fit 63 bits; chunk extensions are
 *    skipped (whitespace after the size only before one); control
 *    bytes in them or in trailers are refused; trailer fields are read
 *    and dropped. A size line with an
 *    extension, and all trailers together, are bounded: a client cannot
 *    make kilnd read without end without sending body bytes the limits
 *    count. Line ends are CRLF only. A violation is bad_request (400).
 */
#ifndef KILN_HTTP_CHUNKED_H
#define KILN_HTTP_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/api_error.h"

/* A chunk-size line with its extensions; all trailer lines together. */
#define HTTP_CHUNK_LINE_MAX 1024
#define HTTP_TRAILERS_MAX 8192

enum http_chunked_state {
	CHUNK_SIZE,    /* hex digits of the next chunk's size */
	CHUNK_SIZE_WS, /* whitespace after the digits: an extension's ';' must follow */
	CHUNK_EXT,     /* a chunk extension, up to CR */
	CHUNK_SIZE_LF, /* the LF after the size line's CR */
	CHUNK_DATA,    /* left bytes of data */
	CHUNK_DATA_CR, /* the CRLF after the data */
	CHUNK_DATA_LF,
	CHUNK_TRAILER, /* at the start of a trailer line, or the final CRLF */
	CHUNK_TRAILER_LINE,
	CHUNK_TRAILER_LF,
	CHUNK_FINAL_LF,
	CHUNK_DONE,
};

struct http_chunked {
	enum http_chunked_state st;
	uint64_t left;   /* CHUNK_SIZE: the size so far; CHUNK_DATA: bytes left */
	unsigned digits; /* digits of the current size */
	size_t line;     /* bytes of the current size line */
	size_t trailers; /* bytes of trailers so far */
};

/* A new body. */
void http_chunked_init(struct http_chunked *c);

/*
 * Decode from in[0..n): *used is how much was consumed; *data and *data_n a
 * span of body data within it (data_n 0 when none). Returns 1 when the
 * body ended (the last chunk and trailers are consumed; bytes after
 * *used belong to the next request), 0 to go on, -1 with e.
 */
int http_chunked_feed(struct http_chunked *c, const char *in, size_t n, size_t *used,
		      const char **data, size_t *data_n, struct api_err *e);

#endif

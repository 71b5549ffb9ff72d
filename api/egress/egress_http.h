/*
 * egress_http: what kiln-egress does to the bytes of a request on a
 * decrypted flow once egress_flow_request has read and allowed its head:
 * where a chunked body ends (egress_chunked), and the head with the
 * rule's injected fields (egress_http_inject).
 *
 * Chunked framing (RFC 9112 7.1), read strictly because the proxy and
 * the upstream must agree on where each request ends, or a second
 * request hides in the first one's body (request smuggling): a chunk
 * size of 1..15 hex digits (no sign, no space, no "0x"), an optional
 * extension of ";" then visible ASCII, space and tab (forwarded as is),
 * CRLF; the data; CRLF. The last chunk (size 0) must be followed by
 * CRLF at once: trailer fields are refused (not read). A bare CR or LF,
 * a size line over EGRESS_CHUNK_LINE_MAX, anything else: refused. The
 * bytes are not changed: the caller forwards what the framer consumed.
 *
 * Injection: every field of the injected name the guest sent is removed
 * (case-insensitive, and '_' taken for '-': servers that map fields to
 * CGI-style variables read "X_Key" as "X-Key"), and "name: value" added last, value being the
 * rule's format with its "{}" replaced by the secret (a field without a
 * format is only removed: a policy callback's remove_headers). The head is one
 * egress_flow read (CRLF lines, no folding, ending in an empty line).
 *
 * Contract: pure; no I/O, no allocation; a value is never copied
 * anywhere but into the caller's output.
 */
#ifndef KILN_EGRESS_HTTP_H
#define KILN_EGRESS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_CHUNK_LINE_MAX 1024

enum egress_chunked_state {
	EGRESS_CHUNK_SIZE, /* hex digits of the next chunk's size */
	EGRESS_CHUNK_EXT,  /* after ';', up to CR */
	EGRESS_CHUNK_SIZE_LF,
	EGRESS_CHUNK_DATA,
	EGRESS_CHUNK_DATA_CR,
	EGRESS_CHUNK_DATA_LF,
	EGRESS_CHUNK_LAST_CR, /* after the last chunk's size line: CRLF, no trailer */
	EGRESS_CHUNK_LAST_LF,
	EGRESS_CHUNK_DONE,
};

struct egress_chunked {
	enum egress_chunked_state st;
	uint64_t left;   /* SIZE: the size so far; DATA: bytes left */
	unsigned digits; /* of the current size */
	size_t line;     /* bytes of the current size line */
};

void egress_chunked_init(struct egress_chunked *c);

/*
 * Frame buf[0..n): *used bytes of it belong to the body. 1 when the body
 * ended within them (bytes after *used are the next request's), 0 when
 * all n were used and more is to come, -1 with *why (a fixed string)
 * when the body is malformed (*used: what was good before it).
 */
int egress_chunked_feed(struct egress_chunked *c, const uint8_t *buf, size_t n, size_t *used,
			const char **why);

struct egress_inject_field {
	const char *name;   /* lower case, a token */
	const char *format; /* with one "{}"; NULL: the field is only removed */
	const char *value;  /* the secret: no control byte */
};

/* a[0..n) and the name b are one field name to a server (as above). */
bool egress_http_same_field(const char *a, size_t n, const char *b);

/*
 * head[0..n) with the fields rewritten as above into out (cap bytes):
 * its length, -EINVAL when the head does not end in CRLF CRLF or a value
 * or format holds a control byte, -ENOSPC when cap is too small
 * (egress_http_inject_size says how much is enough).
 */
long egress_http_inject(const char *head, size_t n, const struct egress_inject_field *f, size_t nf,
			char *out, size_t cap);
size_t egress_http_inject_size(size_t n, const struct egress_inject_field *f, size_t nf);

#endif

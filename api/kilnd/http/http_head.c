/* http_head: see http_head.h. */
#include "api/kilnd/http/http_head.h"

#include <string.h>
#include <strings.h>

#include "lib/base/http_token.h"
#include "lib/base/num_parse.h"
#include "lib/base/text_clean.h"

/* How much of a bad piece of input a message quotes. */
#define QUOTE_MAX 40

/* A field value's bytes (RFC 9110 section 5.5): visible ASCII, space, tab
 * and obs-text; no NUL, CR, LF or other controls. */
static bool is_field_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* A request target's bytes: visible ASCII only (RFC 9112 section 3.2). */
static bool is_target_byte(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* s[0..n) made printable and cut, for a message. */
static const char *quote(char *out, size_t cap, const char *s, size_t n)
{
	if (n > QUOTE_MAX)
		n = QUOTE_MAX;
	text_clean_ascii(out, cap, s, n);
	return out;
}

long http_head_scan_end(const char *buf, size_t n, struct http_head_scan *sc, struct api_err *e)
{
	size_t skip = sc->skip, from;
	const char *p;

	/* Empty lines before a request are not its end (http_head_parse).
	 * Their run only grows while everything scanned belongs to it. */
	if (skip + 1 >= sc->scanned)
		while (skip + 2 <= n && buf[skip] == '\r' && buf[skip + 1] == '\n')
			skip += 2;
	sc->skip = skip;
	/* Bytes already scanned hold no end, but one may straddle them. */
	from = sc->scanned > skip + 3 ? sc->scanned - 3 : skip;
	p = n - from >= 4 ? memmem(buf + from, n - from, "\r\n\r\n", 4) : NULL;
	/* A bare LF is refused as soon as it arrives, not after the client
	 * waited for an end that its line ends never make. */
	for (size_t i = sc->scanned, end = p ? (size_t)(p - buf) + 4 : n; i < end; i++) {
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) {
			api_err_set(e, API_E_BAD_REQUEST,
				    "a line of the request's head ends in a bare LF (use CRLF)");
			return -1;
		}
	}
	if (p && (size_t)(p - buf) + 4 <= HTTP_HEAD_MAX)
		return (long)(p - buf) + 4;
	if (p || n >= HTTP_HEAD_MAX) {
		api_err_set(e, API_E_HEADERS_TOO_LARGE,
			    "the request's head (request line and headers) is longer than %d bytes",
			    HTTP_HEAD_MAX);
		return -1;
	}
	sc->scanned = n;
	return 0;
}

long http_head_end(const char *buf, size_t n, struct api_err *e)
{
	struct http_head_scan sc = { 0 };

	return http_head_scan_end(buf, n, &sc, e);
}

/* The next line of s up to end: NUL-terminates it at its CR, returns the
 * line and moves *s past its CRLF; NULL with e for a bare CR or LF. */
static char *next_line(char **s, char *end, struct api_err *e)
{
	char *line = *s, *p = line;

	while (p < end && *p != '\r' && *p != '\n')
		p++;
	if (p + 1 >= end || p[0] != '\r' || p[1] != '\n') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "a line of the request's head does not end in CRLF (bare CR or LF)");
		return NULL;
	}
	*p = '\0';
	*s = p + 2;
	return line;
}

/* "METHOD SP target SP HTTP/1.x", in place. */
static int parse_request_line(char *line, struct http_head *h, struct api_err *e)
{
	char q[QUOTE_MAX + 1];
	char *sp1, *sp2, *ver;
	size_t n;

	for (n = 0; http_tchar((unsigned char)line[n]); n++)
		;
	if (n == 0 || line[n] != ' ') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "the request line does not start with a method and one space: '%s'",
			    quote(q, sizeof(q), line, strlen(line)));
		return -1;
	}
	sp1 = line + n;
	*sp1 = '\0';
	h->method = line;
	for (n = 0; is_target_byte((unsigned char)sp1[1 + n]); n++)
		;
	sp2 = sp1 + 1 + n;
	if (*sp2 != ' ') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "the request target must be followed by one space and the version (no spaces, controls "
			    "or non-ASCII bytes in it)");
		return -1;
	}
	if (n > HTTP_TARGET_MAX) {
		api_err_set(e, API_E_URI_TOO_LONG, "the request target is longer than %d bytes",
			    HTTP_TARGET_MAX);
		return -1;
	}
	if (n == 0 || sp1[1] != '/') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "the request target must be a path starting with '/', not '%s'",
			    quote(q, sizeof(q), sp1 + 1, n));
		return -1;
	}
	*sp2 = '\0';
	h->path = sp1 + 1;
	ver = sp2 + 1;
	if (strncmp(ver, "HTTP/", 5) != 0 || !(ver[5] >= '0' && ver[5] <= '9') || ver[6] != '.' ||
	    !(ver[7] >= '0' && ver[7] <= '9') || ver[8] != '\0') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "the request line does not end in a version such as HTTP/1.1: '%s'",
			    quote(q, sizeof(q), ver, strlen(ver)));
		return -1;
	}
	if (ver[5] != '1') {
		api_err_set(e, API_E_HTTP_VERSION,
			    "HTTP/%c.%c is not supported: kilnd speaks HTTP/1.1 (and 1.0)", ver[5],
			    ver[7]);
		return -1;
	}
	/* RFC 9110 section 2.5: a higher minor version of a major one the
	 * server implements is served as its highest, 1.1. */
	h->minor = ver[7] > '1' ? 1 : ver[7] - '0';
	char *qm = strchr(sp1 + 1, '?');

	if (qm) {
		*qm = '\0';
		h->query = qm + 1;
	}
	return 0;
}

/* "name: value", in place. */
static int parse_field(char *line, struct http_head *h, struct api_err *e)
{
	char q[QUOTE_MAX + 1];
	char *v, *end;
	size_t n;

	if (line[0] == ' ' || line[0] == '\t') {
		api_err_set(e, API_E_BAD_REQUEST,
			    "a header line starts with whitespace (obsolete line folding)");
		return -1;
	}
	for (n = 0; http_tchar((unsigned char)line[n]); n++)
		;
	if (n == 0 || line[n] != ':') {
		/* Whitespace before the colon included (RFC 9112 section 5.1). */
		api_err_set(e, API_E_BAD_REQUEST, "a header line is not 'Name: value': '%s'",
			    quote(q, sizeof(q), line, strlen(line)));
		return -1;
	}
	if (h->nfields == HTTP_FIELDS_MAX) {
		api_err_set(e, API_E_HEADERS_TOO_LARGE, "the request has more than %d headers",
			    HTTP_FIELDS_MAX);
		return -1;
	}
	line[n] = '\0';
	v = line + n + 1;
	for (end = v; *end; end++) {
		if (!is_field_byte((unsigned char)*end)) {
			api_err_set(e, API_E_BAD_REQUEST,
				    "header '%s' has a control byte in its value",
				    quote(q, sizeof(q), line, n));
			return -1;
		}
	}
	while (*v == ' ' || *v == '\t')
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	h->fields[h->nfields++] = (struct http_field){ .name = line, .value = v };
	return 0;
}

/* How many fields are called name, and the first one's value. */
static size_t count_fields(const struct http_head *h, const char *name, const char **first)
{
	size_t k = 0;

	*first = NULL;
	for (size_t i = 0; i < h->nfields; i++) {
		if (strcasecmp(h->fields[i].name, name) == 0 && k++ == 0)
			*first = h->fields[i].value;
	}
	return k;
}

/* Whether any field called name has tok in its comma-separated list. */
static bool fields_have_token(const struct http_head *h, const char *name, const char *tok)
{
	for (size_t i = 0; i < h->nfields; i++) {
		if (strcasecmp(h->fields[i].name, name) == 0 &&
		    http_has_token(h->fields[i].value, tok))
			return true;
	}
	return false;
}

/* Host, body framing, Connection and Expect: what the fields mean together. */
static int check_fields(struct http_head *h, struct api_err *e)
{
	char q[QUOTE_MAX + 1];
	const char *host, *cl, *te;
	size_t nhost = count_fields(h, "Host", &host);
	size_t ncl = count_fields(h, "Content-Length", &cl);
	size_t nte = count_fields(h, "Transfer-Encoding", &te);

	if (nhost > 1 || (h->minor == 1 && nhost != 1)) {
		/* RFC 9112 section 3.2: exactly one Host on HTTP/1.1, and
		 * never more than one on any request. */
		api_err_set(e, API_E_BAD_REQUEST,
			    "a request needs exactly one Host header (it has %zu; HTTP/1.0 may have none)",
			    nhost);
		return -1;
	}
	if (ncl && nte) {
		api_err_set(
			e, API_E_BAD_REQUEST,
			"the request has both Content-Length and Transfer-Encoding: send one of them");
		return -1;
	}
	if (ncl > 1) {
		api_err_set(e, API_E_BAD_REQUEST,
			    "the request has %zu Content-Length headers: send one", ncl);
		return -1;
	}
	if (nte > 1 || (te && strcasecmp(te, "chunked") != 0)) {
		api_err_set(e, API_E_BAD_REQUEST,
			    "Transfer-Encoding '%s' is not supported: send 'Transfer-Encoding: chunked' once, or "
			    "Content-Length",
			    nte > 1 ? "(given twice)" : quote(q, sizeof(q), te, strlen(te)));
		return -1;
	}
	if (te && h->minor == 0) {
		api_err_set(e, API_E_BAD_REQUEST,
			    "Transfer-Encoding is not allowed on HTTP/1.0: use Content-Length");
		return -1;
	}
	if (cl && num_parse_u64(cl, 10, 0, INT64_MAX, &h->content_length) < 0) {
		api_err_set(e, API_E_BAD_REQUEST,
			    "Content-Length '%s' is not a number of bytes (digits only)",
			    quote(q, sizeof(q), cl, strlen(cl)));
		return -1;
	}
	h->body = te                      ? HTTP_BODY_CHUNKED
		: cl && h->content_length ? HTTP_BODY_LENGTH
					  : HTTP_BODY_NONE;
	/* Connection and Expect are lists: every field line of one is part
	 * of it, as a proxy that joins them reads it (RFC 9110 section 5.3). */
	h->keep_alive = !fields_have_token(h, "Connection", "close") &&
		(h->minor == 1 || fields_have_token(h, "Connection", "keep-alive"));
	for (size_t i = 0; i < h->nfields; i++) {
		const char *v = h->fields[i].value;

		if (strcasecmp(h->fields[i].name, "Expect") != 0)
			continue;
		if (strcasecmp(v, "100-continue") != 0) {
			api_err_set(e, API_E_BAD_REQUEST,
				    "Expect '%s' is not supported (only 100-continue)",
				    quote(q, sizeof(q), v, strlen(v)));
			return -1;
		}
		h->expect_continue = h->minor == 1;
	}
	return 0;
}

int http_head_parse(char *buf, size_t len, struct http_head *h, struct api_err *e)
{
	char *s = buf, *end = buf + len, *line;

	memset(h, 0, sizeof(*h));
	/* RFC 9112 section 2.2: empty lines before a request are ignored. */
	while (end - s >= 2 && s[0] == '\r' && s[1] == '\n')
		s += 2;
	if (memchr(s, '\0', (size_t)(end - s))) {
		api_err_set(e, API_E_BAD_REQUEST, "the request's head has a NUL byte");
		return -1;
	}
	line = next_line(&s, end, e);
	if (!line || parse_request_line(line, h, e) < 0)
		return -1;
	for (;;) {
		line = next_line(&s, end, e);
		if (!line)
			return -1;
		if (!*line)
			break;
		if (parse_field(line, h, e) < 0)
			return -1;
	}
	return check_fields(h, e);
}

const char *http_head_field(const struct http_head *h, const char *name)
{
	const char *v;

	count_fields(h, name, &v);
	return v;
}

bool http_has_token(const char *value, const char *tok)
{
	size_t n = strlen(tok);

	while (value && *value) {
		size_t k;

		value += strspn(value, " \t,");
		k = strcspn(value, ",");
		while (k && (value[k - 1] == ' ' || value[k - 1] == '\t'))
			k--;
		if (k == n && strncasecmp(value, tok, n) == 0)
			return true;
		value += strcspn(value, ",");
	}
	return false;
}

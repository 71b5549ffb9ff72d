/* egress_http: see egress_http.h. */
#include "api/egress/egress_http.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "lib/base/num_parse.h"

/* Hex digits of a size: 15 fit 60 bits, so no size overflows. */
#define CHUNK_DIGITS_MAX 15

void egress_chunked_init(struct egress_chunked *c)
{
	*c = (struct egress_chunked){ .st = EGRESS_CHUNK_SIZE };
}

/* One byte of the framing (not data): NULL, or why it is refused. */
static const char *step(struct egress_chunked *c, uint8_t b)
{
	int h;

	switch (c->st) {
	case EGRESS_CHUNK_SIZE:
		if (++c->line > EGRESS_CHUNK_LINE_MAX)
			return "chunk size line too long";
		if ((h = num_hex_digit((char)b)) >= 0) {
			if (++c->digits > CHUNK_DIGITS_MAX)
				return "chunk size too large";
			c->left = c->left * 16 + (uint64_t)h;
			return NULL;
		}
		if (!c->digits)
			return "chunk size is not hex digits";
		if (b == ';') {
			c->st = EGRESS_CHUNK_EXT;
			return NULL;
		}
		if (b == '\r') {
			c->st = EGRESS_CHUNK_SIZE_LF;
			return NULL;
		}
		return "chunk size is not hex digits";
	case EGRESS_CHUNK_EXT:
		if (++c->line > EGRESS_CHUNK_LINE_MAX)
			return "chunk size line too long";
		if (b == '\r') {
			c->st = EGRESS_CHUNK_SIZE_LF;
			return NULL;
		}
		if ((b < 0x20 && b != '\t') || b == 0x7f)
			return "control byte in a chunk extension";
		return NULL;
	case EGRESS_CHUNK_SIZE_LF:
		if (b != '\n')
			return "chunk line not ended by CRLF";
		c->st = c->left ? EGRESS_CHUNK_DATA : EGRESS_CHUNK_LAST_CR;
		return NULL;
	case EGRESS_CHUNK_DATA_CR:
		if (b != '\r')
			return "chunk data not followed by CRLF";
		c->st = EGRESS_CHUNK_DATA_LF;
		return NULL;
	case EGRESS_CHUNK_DATA_LF:
		if (b != '\n')
			return "chunk data not followed by CRLF";
		*c = (struct egress_chunked){ .st = EGRESS_CHUNK_SIZE };
		return NULL;
	case EGRESS_CHUNK_LAST_CR:
		if (b != '\r')
			return "trailer fields in a chunked request (not read)";
		c->st = EGRESS_CHUNK_LAST_LF;
		return NULL;
	case EGRESS_CHUNK_LAST_LF:
		if (b != '\n')
			return "chunked body not ended by CRLF";
		c->st = EGRESS_CHUNK_DONE;
		return NULL;
	case EGRESS_CHUNK_DATA:
	case EGRESS_CHUNK_DONE:
		break;
	}
	return "chunked body state";
}

int egress_chunked_feed(struct egress_chunked *c, const uint8_t *buf, size_t n, size_t *used,
			const char **why)
{
	size_t i = 0;

	*why = NULL;
	while (i < n && c->st != EGRESS_CHUNK_DONE) {
		if (c->st == EGRESS_CHUNK_DATA) {
			size_t take = n - i < c->left ? n - i : (size_t)c->left;

			i += take;
			c->left -= take;
			if (!c->left)
				c->st = EGRESS_CHUNK_DATA_CR;
			continue;
		}
		if ((*why = step(c, buf[i])) != NULL) {
			*used = i;
			return -1;
		}
		i++;
	}
	*used = i;
	return c->st == EGRESS_CHUNK_DONE;
}

/* s[0..n) has no control byte (tab allowed). */
static bool clean(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* a[0..n) and the name b are one field name to a server: case, and '_'
 * for '-' (CGI-style variables, HTTP_X_KEY, read "X_Key" and "X-Key"
 * as one, and may join or echo both values), do not matter. */
bool egress_http_same_field(const char *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char x = a[i] == '_' ? '-' : (char)tolower((unsigned char)a[i]);
		char y = b[i] == '_' ? '-' : (char)tolower((unsigned char)b[i]);

		if (x != y)
			return false;
	}
	return true;
}

/* The line s[0..n) (without CRLF) is a field named one of f's. */
static bool injected(const char *s, size_t n, const struct egress_inject_field *f, size_t nf)
{
	const char *colon = memchr(s, ':', n);
	size_t len = colon ? (size_t)(colon - s) : 0;

	for (size_t i = 0; colon && i < nf; i++)
		if (egress_http_same_field(s, len, f[i].name))
			return true;
	return false;
}

size_t egress_http_inject_size(size_t n, const struct egress_inject_field *f, size_t nf)
{
	size_t add = 0;

	/* "name: " + format (its "{}" gone) + value + CRLF */
	for (size_t i = 0; i < nf; i++)
		if (f[i].format)
			add += strlen(f[i].name) + 2 + strlen(f[i].format) + strlen(f[i].value) + 2;
	return n + add;
}

long egress_http_inject(const char *head, size_t n, const struct egress_inject_field *f, size_t nf,
			char *out, size_t cap)
{
	size_t o = 0, at = 0;

	if (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0)
		return -EINVAL;
	for (size_t i = 0; i < nf; i++) {
		const char *hole = f[i].format ? strstr(f[i].format, "{}") : NULL;

		if (!f[i].format)
			continue;
		if (!hole || strstr(hole + 2, "{}") || !clean(f[i].format, strlen(f[i].format)) ||
		    !clean(f[i].value, strlen(f[i].value)))
			return -EINVAL;
	}
	if (egress_http_inject_size(n, f, nf) > cap)
		return -ENOSPC;
	/* Every line but the final empty one, each ended by CRLF (anything
	 * else is refused, so the copy never outgrows the size above): kept
	 * unless it is a field of an injected name (never the request line). */
	while (at < n - 2) {
		const char *cr = memchr(head + at, '\r', n - at);
		size_t len = (size_t)(cr - (head + at));

		if (cr[1] != '\n')
			return -EINVAL;
		if (at == 0 || !injected(head + at, len, f, nf)) {
			memcpy(out + o, head + at, len + 2);
			o += len + 2;
		}
		at += len + 2;
	}
	for (size_t i = 0; i < nf; i++) {
		const char *hole = f[i].format ? strstr(f[i].format, "{}") : NULL;
		size_t nl, pre, post, vl;

		if (!hole)
			continue; /* removed only */
		nl = strlen(f[i].name), pre = (size_t)(hole - f[i].format);
		post = strlen(hole + 2), vl = strlen(f[i].value);
		memcpy(out + o, f[i].name, nl);
		o += nl;
		memcpy(out + o, ": ", 2);
		o += 2;
		memcpy(out + o, f[i].format, pre);
		o += pre;
		memcpy(out + o, f[i].value, vl);
		o += vl;
		memcpy(out + o, hole + 2, post);
		o += post;
		memcpy(out + o, "\r\n", 2);
		o += 2;
	}
	memcpy(out + o, "\r\n", 2);
	return (long)(o + 2);
}

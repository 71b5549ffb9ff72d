/* http_chunked: see http_chunked.h. */
#include "api/kilnd/http/http_chunked.h"

#include <string.h>

#include "lib/base/num_parse.h"

/* 15 hex digits: every size below 2^60, far above any body limit, and no
 * overflow to check. More digits (also leading zeros) are refused. */
#define CHUNK_DIGITS_MAX 15

void http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->st = CHUNK_SIZE;
}

/* Not allowed in an extension or a trailer line: C0 controls but tab, DEL. */
static bool is_control(char ch)
{
	unsigned char u = (unsigned char)ch;

	return (u < 0x20 && u != '\t') || u == 0x7f;
}

static int bad(struct api_err *e, const char *what)
{
	api_err_set(e, API_E_BAD_REQUEST, "the chunked request body is malformed: %s", what);
	return -1;
}

/* The end of a size line: a chunk of data, or the last chunk. */
static void size_done(struct http_chunked *c)
{
	c->st = c->left ? CHUNK_DATA : CHUNK_TRAILER;
}

/* One byte outside data; 0, 1 (the body ended) or -1. */
static int step(struct http_chunked *c, char ch, struct api_err *e)
{
	int v;

	if (c->st <= CHUNK_SIZE_LF && ++c->line > HTTP_CHUNK_LINE_MAX)
		return bad(e, "a chunk-size line is too long");
	switch (c->st) {
	case CHUNK_SIZE:
		v = num_hex_digit(ch);
		if (v >= 0) {
			if (++c->digits > CHUNK_DIGITS_MAX)
				return bad(e, "a chunk size has too many digits");
			c->left = c->left * 16 + (uint64_t)v;
			return 0;
		}
		if (!c->digits)
			return bad(e, "a chunk size is not a hex number");
		if (ch == ' ' || ch == '\t')
			c->st = CHUNK_SIZE_WS;
		else if (ch == ';')
			c->st = CHUNK_EXT;
		else if (ch == '\r')
			c->st = CHUNK_SIZE_LF;
		else
			return bad(e,
				   "a chunk size is followed by something else than ';' or CRLF");
		return 0;
	case CHUNK_SIZE_WS:
		/* Whitespace only before an extension (RFC 9112 section 7.1.1). */
		if (ch == ';')
			c->st = CHUNK_EXT;
		else if (ch != ' ' && ch != '\t')
			return bad(e, "whitespace after a chunk size is not followed by ';'");
		return 0;
	case CHUNK_EXT:
		if (ch == '\r')
			c->st = CHUNK_SIZE_LF;
		else if (is_control(ch))
			return bad(e, "a chunk extension has a control byte (a bare LF?)");
		return 0;
	case CHUNK_SIZE_LF:
		if (ch != '\n')
			return bad(e, "a chunk-size line does not end in CRLF");
		size_done(c);
		return 0;
	case CHUNK_DATA_CR:
		if (ch != '\r')
			return bad(e, "a chunk's data is longer than its size");
		c->st = CHUNK_DATA_LF;
		return 0;
	case CHUNK_DATA_LF:
		if (ch != '\n')
			return bad(e, "a chunk's data is not followed by CRLF");
		c->st = CHUNK_SIZE;
		c->left = 0;
		c->digits = 0;
		c->line = 0;
		return 0;
	case CHUNK_TRAILER:
		if (ch == '\r') {
			c->st = CHUNK_FINAL_LF;
			return 0;
		}
		c->st = CHUNK_TRAILER_LINE;
		__attribute__((fallthrough)); /* the line's first byte */
	case CHUNK_TRAILER_LINE:
		if (++c->trailers > HTTP_TRAILERS_MAX)
			return bad(e, "the trailers are too long");
		if (ch == '\r')
			c->st = CHUNK_TRAILER_LF;
		else if (is_control(ch))
			return bad(e, "a trailer line has a control byte (a bare LF?)");
		return 0;
	case CHUNK_TRAILER_LF:
		if (ch != '\n')
			return bad(e, "a trailer line does not end in CRLF");
		c->st = CHUNK_TRAILER;
		return 0;
	case CHUNK_FINAL_LF:
		if (ch != '\n')
			return bad(e, "the body does not end in CRLF after the last chunk");
		c->st = CHUNK_DONE;
		return 1;
	case CHUNK_DATA:
	case CHUNK_DONE:
		break;
	}
	return bad(e, "decoder state");
}

int http_chunked_feed(struct http_chunked *c, const char *in, size_t n, size_t *used,
		      const char **data, size_t *data_n, struct api_err *e)
{
	size_t i = 0;

	*data = NULL;
	*data_n = 0;
	*used = 0;
	if (c->st == CHUNK_DONE)
		return 1;
	while (i < n) {
		if (c->st == CHUNK_DATA) {
			size_t k = n - i < c->left ? n - i : (size_t)c->left;

			*data = in + i;
			*data_n = k;
			c->left -= k;
			if (!c->left)
				c->st = CHUNK_DATA_CR;
			*used = i + k;
			return 0;
		}
		int r = step(c, in[i++], e);

		if (r) {
			*used = i;
			return r;
		}
	}
	*used = i;
	return 0;
}

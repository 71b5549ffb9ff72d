/*
 * fuzz_http_head: what a kilnd client sends before any body: the request
 * head (api/kilnd/http/http_head.c) and the raw query split into
 * parameters (query_split in lib/base/url_query.c).
 *
 * Input: selector (1 byte), then
 *   even selector: the bytes a client sent. http_head_end looks for the
 *     head's end; http_head_parse reads buf[0..end) when there is one,
 *     and the whole input otherwise (it must stay safe and strict on
 *     any length, not only the ones http_head_end gives).
 *   odd selector: a max byte (0..40 pairs), then the raw query.
 * Invariants, head: http_head_end returns -1, 0, or a length <= n and
 *   <= HTTP_HEAD_MAX that ends in CRLF CRLF, and 0 only below
 *   HTTP_HEAD_MAX bytes. On success every pointer of struct http_head
 *   lies inside the buffer, the method is a token, the path starts with
 *   '/', has no '?', only visible ASCII and fits HTTP_TARGET_MAX, the
 *   minor version is 0 or 1, nfields <= HTTP_FIELDS_MAX, names are tokens
 *   and values have no controls and no surrounding whitespace; HTTP/1.1
 *   has exactly one Host and no version more than one; the body kind
 *   agrees with content_length and the framing fields (chunked: exactly
 *   one Transfer-Encoding "chunked", no Content-Length, HTTP/1.1; a length:
 *   one Content-Length, 1..INT64_MAX); keep-alive and 100-continue only
 *   when the fields allow them. A refusal is one of the four head codes
 *   with a short printable message.
 * Invariants, query: the pairs are the non-empty '&'-separated pieces of
 *   the query, in order, each key and value inside the split copy, no
 *   longer than its piece, and equal to it when nothing needed decoding;
 *   more than max pieces is bad_field.
 */
#include <stdbool.h>
#include <strings.h>

#include "api/kilnd/http/http_head.h"
#include "lib/base/url_query.h"
#include "fuzz.h"

#define QUERY_PAIRS_MAX 40

static const char TCHARS[] =
	"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static bool within(const char *buf, size_t n, const char *s)
{
	return s >= buf && s < buf + n && memchr(s, '\0', (size_t)(buf + n - s));
}

static bool is_token(const char *s)
{
	return s[0] && strspn(s, TCHARS) == strlen(s);
}

static bool visible(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static void check_msg(const struct api_err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));

	FUZZ_ASSERT(n > 0 && n < 300);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(e->msg[i] >= 0x20 && e->msg[i] < 0x7f);
}

static size_t count(const struct http_head *h, const char *name, const char **first)
{
	size_t k = 0;

	*first = NULL;
	for (size_t i = 0; i < h->nfields; i++) {
		if (strcasecmp(h->fields[i].name, name) == 0 && k++ == 0)
			*first = h->fields[i].value;
	}
	return k;
}

static bool any_token(const struct http_head *h, const char *name, const char *tok)
{
	for (size_t i = 0; i < h->nfields; i++)
		if (strcasecmp(h->fields[i].name, name) == 0 &&
		    http_has_token(h->fields[i].value, tok))
			return true;
	return false;
}

static void check_head(const char *buf, size_t n, const struct http_head *h)
{
	const char *host, *cl, *te, *v;
	size_t nhost, ncl, nte;

	FUZZ_ASSERT(within(buf, n, h->method) && is_token(h->method));
	FUZZ_ASSERT(within(buf, n, h->path) && h->path[0] == '/' && visible(h->path));
	FUZZ_ASSERT(!strchr(h->path, '?') && strlen(h->path) <= HTTP_TARGET_MAX);
	FUZZ_ASSERT(!h->query || (within(buf, n, h->query) && (!*h->query || visible(h->query))));
	FUZZ_ASSERT(h->minor == 0 || h->minor == 1);
	FUZZ_ASSERT(h->nfields <= HTTP_FIELDS_MAX);
	for (size_t i = 0; i < h->nfields; i++) {
		const char *val = h->fields[i].value;
		size_t len;

		FUZZ_ASSERT(within(buf, n, h->fields[i].name) && is_token(h->fields[i].name));
		FUZZ_ASSERT(within(buf, n, val));
		len = strlen(val);
		for (size_t k = 0; k < len; k++)
			FUZZ_ASSERT(val[k] == '\t' ||
				    ((unsigned char)val[k] >= 0x20 && val[k] != 0x7f));
		FUZZ_ASSERT(!len ||
			    (val[0] != ' ' && val[0] != '\t' && val[len - 1] != ' ' &&
			     val[len - 1] != '\t'));
	}
	nhost = count(h, "Host", &host);
	FUZZ_ASSERT(nhost <= 1 && (h->minor == 0 || nhost == 1));
	FUZZ_ASSERT(http_head_field(h, "Host") == host);
	ncl = count(h, "Content-Length", &cl);
	nte = count(h, "Transfer-Encoding", &te);
	FUZZ_ASSERT(ncl <= 1 && nte <= 1 && !(ncl && nte));
	switch (h->body) {
	case HTTP_BODY_NONE:
		FUZZ_ASSERT(h->content_length == 0 && !te);
		break;
	case HTTP_BODY_LENGTH:
		FUZZ_ASSERT(cl && h->content_length >= 1 && h->content_length <= INT64_MAX);
		FUZZ_ASSERT(strspn(cl, "0123456789") == strlen(cl));
		break;
	case HTTP_BODY_CHUNKED:
		FUZZ_ASSERT(te && strcasecmp(te, "chunked") == 0 && h->content_length == 0 &&
			    h->minor == 1);
		break;
	default:
		FUZZ_ASSERT(!"body kind");
	}
	FUZZ_ASSERT(h->keep_alive ==
		    (!any_token(h, "Connection", "close") &&
		     (h->minor == 1 || any_token(h, "Connection", "keep-alive"))));
	if (h->expect_continue)
		FUZZ_ASSERT(h->minor == 1 && count(h, "Expect", &v) >= 1);
	for (size_t i = 0; i < h->nfields; i++)
		if (strcasecmp(h->fields[i].name, "Expect") == 0)
			FUZZ_ASSERT(strcasecmp(h->fields[i].value, "100-continue") == 0);
}

static void fuzz_head(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	struct http_head h;
	struct api_err e = { 0 };
	long end;
	size_t len;

	if (!buf)
		return;
	memcpy(buf, data, size);
	end = http_head_end(buf, size, &e);
	FUZZ_ASSERT(end >= -1 && end <= (long)size && end <= HTTP_HEAD_MAX);
	if (end > 0)
		FUZZ_ASSERT(end >= 4 && memcmp(buf + end - 4, "\r\n\r\n", 4) == 0);
	if (end == 0)
		FUZZ_ASSERT(size < HTTP_HEAD_MAX);
	if (end < 0) {
		FUZZ_ASSERT(e.code == API_E_BAD_REQUEST || e.code == API_E_HEADERS_TOO_LARGE);
		check_msg(&e);
	}
	/* Exactly len bytes of their own, so ASan sees a read past them. */
	len = end > 0 ? (size_t)end : size;
	if (len < size) {
		char *cut = malloc(len);

		if (!cut)
			goto out;
		memcpy(cut, buf, len);
		free(buf);
		buf = cut;
	}
	memset(&e, 0, sizeof(e));
	if (http_head_parse(buf, len, &h, &e) == 0) {
		check_head(buf, len, &h);
	} else {
		FUZZ_ASSERT(e.code == API_E_BAD_REQUEST || e.code == API_E_URI_TOO_LONG ||
			    e.code == API_E_HEADERS_TOO_LARGE || e.code == API_E_HTTP_VERSION);
		check_msg(&e);
	}
out:
	free(buf);
}

static void fuzz_query(const uint8_t *data, size_t size)
{
	struct query_kv kv[QUERY_PAIRS_MAX];
	size_t max, n = 0, pieces = 0;
	char *q, *orig;
	size_t qlen;

	if (size < 1)
		return;
	max = data[0] % (QUERY_PAIRS_MAX + 1);
	q = strndup((const char *)data + 1, size - 1);
	orig = q ? strdup(q) : NULL;
	if (!q || !orig)
		goto out;
	qlen = strlen(q);
	for (const char *p = orig; *p;) {
		size_t k = strcspn(p, "&");

		pieces += k > 0;
		p += k + (p[k] == '&');
	}
	if (query_split(q, kv, max, &n) < 0) {
		FUZZ_ASSERT(pieces > max);
		goto out;
	}
	FUZZ_ASSERT(n == pieces && n <= max);
	{
		const char *p = orig;

		for (size_t i = 0; i < n; i++) {
			size_t k, klen;

			while (*p == '&')
				p++;
			k = strcspn(p, "&");
			FUZZ_ASSERT(within(q, qlen + 1, kv[i].key));
			FUZZ_ASSERT(i == 0 || kv[i].key > kv[i - 1].key);
			/* The piece's own bytes, in place: key from its start. */
			FUZZ_ASSERT(kv[i].key == q + (p - orig));
			klen = strlen(kv[i].key);
			FUZZ_ASSERT(klen <= k);
			if (kv[i].value) {
				FUZZ_ASSERT(within(q, qlen + 1, kv[i].value) &&
					    kv[i].value > kv[i].key);
				FUZZ_ASSERT(strlen(kv[i].value) <= k - klen - 1);
				FUZZ_ASSERT(memchr(p, '=', k));
			} else {
				FUZZ_ASSERT(!memchr(p, '=', k));
			}
			if (!memchr(p, '%', k) && !memchr(p, '+', k)) {
				const char *eq = memchr(p, '=', k);
				size_t kl = eq ? (size_t)(eq - p) : k;

				FUZZ_ASSERT(klen == kl && !memcmp(kv[i].key, p, kl));
				if (eq)
					FUZZ_ASSERT(strlen(kv[i].value) == k - kl - 1 &&
						    !memcmp(kv[i].value, eq + 1, k - kl - 1));
			}
			p += k;
		}
	}
out:
	free(q);
	free(orig);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_query(data + 1, size - 1);
	else
		fuzz_head(data + 1, size - 1);
	return 0;
}

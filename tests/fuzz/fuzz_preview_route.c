/*
 * fuzz_preview_route: the preview proxy's decisions on a client's request
 * head (api/kilnd/preview/preview_route.c) after kilnd's head
 * parser (http_head.c): routing by Host or path, credentials, the head
 * rewritten for the guest, the redirect of a first visit, error answers.
 *
 * Input: 1 byte (bit 0: the preview domain, "localhost" or
 * "preview.example.com"; bit 1: the preview is public; the rest: the
 * output capacity's low bits), 1 byte (more of the capacity), then the
 * head's bytes.
 * Invariants: a route names a valid sandbox id and a port 1..65535, and
 * what it forwards is a path; credentials point into the head; the
 * rewritten head fits its capacity or is refused (refused with room to
 * spare only near kilnd's head limits), and when it is made it parses
 * again as one head, carries exactly one Connection field and no
 * X-Kiln-Preview-Token, no "token" parameter holding the token, no kilnd
 * cookie (kiln_preview_*) and no Referer with the token in it; a redirect
 * and an error answer stay within their buffers, and a redirect's
 * Location is a path of this site (no "//", no '\', no control byte).
 */
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/preview/preview_route.h"
#include "fuzz.h"

#define TOKEN "00112233445566778899aabbccddeeff0011223344556677"

static char head[HTTP_HEAD_MAX];
static char out[HTTP_HEAD_MAX * 2];
static char again[HTTP_HEAD_MAX * 2];

/* No ';'-separated pair of the Cookie value v is exactly pair (spaces around it trimmed). */
static int cookie_has(const char *v, const char *pair)
{
	size_t pl = strlen(pair);

	while (*v) {
		size_t n = strcspn(v, ";");
		const char *c = v;

		while (n && (*c == ' ' || *c == '\t')) {
			c++;
			n--;
		}
		while (n && (c[n - 1] == ' ' || c[n - 1] == '\t'))
			n--;
		if (n == pl && !memcmp(c, pair, pl))
			return 1;
		v += strcspn(v, ";");
		if (*v)
			v++;
	}
	return 0;
}

/* A ';'-separated pair of the Cookie value v has a name starting with prefix. */
static int cookie_named(const char *v, const char *prefix)
{
	size_t pl = strlen(prefix);

	while (*v) {
		const char *c = v + strspn(v, " \t");

		if (!strncmp(c, prefix, pl))
			return 1;
		v += strcspn(v, ";");
		if (*v)
			v++;
	}
	return 0;
}

/* A 302's Location stays on this site: a path, not "//" nor "/\" (a
 * browser's other host), no '\' nor control byte anywhere in it. */
static void check_redirect(const char *a, size_t n)
{
	static const char l[] = "\r\nLocation: ";
	const char *loc, *end;

	if (n < 12 || memcmp(a, "HTTP/1.1 302", 12) != 0)
		return;
	loc = memmem(a, n, l, sizeof(l) - 1);
	FUZZ_ASSERT(loc);
	loc += sizeof(l) - 1;
	end = memmem(loc, n - (size_t)(loc - a), "\r\n", 2);
	FUZZ_ASSERT(end && end - loc >= 1 && loc[0] == '/');
	FUZZ_ASSERT(end - loc == 1 || (loc[1] != '/' && loc[1] != '\\'));
	for (const char *c = loc; c < end && *c != '?'; c++)
		FUZZ_ASSERT(*c != '\\' && (unsigned char)*c > 0x20 && (unsigned char)*c < 0x7f);
}

static void check_rewritten(long n, const struct preview_req *r, const char *token)
{
	struct http_head h2;
	struct api_err e;
	char cookie[PREVIEW_COOKIE_MAX + 64];
	size_t conns = 0;
	long end;

	memcpy(again, out, (size_t)n);
	end = http_head_end(again, (size_t)n, &e);
	FUZZ_ASSERT(end == n);
	FUZZ_ASSERT(http_head_parse(again, (size_t)n, &h2, &e) == 0);
	for (size_t i = 0; i < h2.nfields; i++) {
		FUZZ_ASSERT(strcasecmp(h2.fields[i].name, "X-Kiln-Preview-Token") != 0);
		conns += !strcasecmp(h2.fields[i].name, "Connection");
		if (token && !strcasecmp(h2.fields[i].name, "Cookie")) {
			snprintf(cookie, sizeof(cookie), "%s=%s", r->cookie, token);
			FUZZ_ASSERT(!cookie_has(h2.fields[i].value, cookie));
		}
		if (!strcasecmp(h2.fields[i].name, "Cookie"))
			FUZZ_ASSERT(!cookie_named(h2.fields[i].value, "kiln_preview_"));
		if (token && !strcasecmp(h2.fields[i].name, "Referer"))
			FUZZ_ASSERT(!strcasestr(h2.fields[i].value, token));
	}
	FUZZ_ASSERT(conns == 1);
	if (token && h2.query) {
		const char *q = h2.query;

		while (*q) {
			size_t k = strcspn(q, "&");

			FUZZ_ASSERT(!(k == 6 + PREVIEW_TOKEN_LEN && !memcmp(q, "token=" TOKEN, k)));
			q += k;
			if (*q)
				q++;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_head h;
	struct preview_req r;
	struct preview_err pe;
	struct api_err e;
	const char *domain, *token;
	size_t cap, n;
	long end, w;

	if (size < 2)
		return 0;
	domain = data[0] & 1 ? "preview.example.com" : "localhost";
	token = data[0] & 2 ? NULL : TOKEN;
	cap = ((size_t)(data[0] >> 2) | (size_t)data[1] << 6) % sizeof(out);
	n = size - 2 < sizeof(head) ? size - 2 : sizeof(head);
	memcpy(head, data + 2, n);
	end = http_head_end(head, n, &e);
	if (end <= 0 || http_head_parse(head, (size_t)end, &h, &e))
		return 0;
	if (preview_route(&h, domain, &r, &pe)) {
		FUZZ_ASSERT(pe.status == 404 && pe.msg[0]);
		FUZZ_ASSERT(preview_err_answer(&pe, out, sizeof(out)) < sizeof(out));
		FUZZ_ASSERT(preview_err_answer(&pe, out, cap) <= cap);
		return 0;
	}
	FUZZ_ASSERT(sandbox_id_valid(r.id) && r.port >= 1);
	FUZZ_ASSERT(r.rest && r.rest_len >= 1 && r.rest[0] == '/');
	FUZZ_ASSERT(r.ncreds <= PREVIEW_CREDS_MAX);
	for (size_t i = 0; i < r.ncreds; i++)
		FUZZ_ASSERT(r.creds[i].p >= head && r.creds[i].p + r.creds[i].n <= head + end);
	(void)preview_auth(&r, token);
	w = preview_head_rewrite(&h, &r, token, "192.0.2.1", out, cap);
	FUZZ_ASSERT(w == -1 || (w > 0 && (size_t)w <= cap));
	w = preview_head_rewrite(&h, &r, token, "192.0.2.1", out, sizeof(out));
	/* Refused only near kilnd's own limits: the proxy's fields (at most 5
	 * and a few hundred bytes) come on top of the client's. */
	FUZZ_ASSERT(w > 0 || h.nfields + 5 > HTTP_FIELDS_MAX || end + 600 > HTTP_HEAD_MAX);
	if (w > 0)
		check_rewritten(w, &r, token);
	w = preview_redirect(&h, &r, TOKEN, out, cap);
	FUZZ_ASSERT(w == -1 || (size_t)w <= cap);
	w = preview_redirect(&h, &r, TOKEN, out, sizeof(out));
	FUZZ_ASSERT(w > 0);
	check_redirect(out, (size_t)w);
	return 0;
}

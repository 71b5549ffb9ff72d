/*
 * fuzz_egress_http: kiln-egress's framing of a chunked request body and
 * its head rewrite (api/egress/egress_http.c), on bytes a hostile guest
 * sends over a decrypted flow.
 *
 * Input: a selector byte; bit 0 clear: a split point (2 bytes) then a
 * chunked body and whatever follows it; set: a head, injected with two
 * fixed fields (one value from the input, up to its first NUL).
 * Invariants (chunked): a call uses at most what it was given and, unless
 * the body ended or was refused, all of it; fed whole, or split once at
 * the fuzzer's point, the same result and the same bytes used; a refusal
 * has a reason; an ended body ends in CRLF. (Rewrite): the result fits
 * the size egress_http_inject_size gave; a success ends in CRLF CRLF,
 * keeps the request line, holds exactly one line of each injected name
 * and no line of it that the input had, and never a value with CR or LF.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/egress/egress_http.h"
#include "fuzz.h"

static int whole(const uint8_t *b, size_t n, size_t cut, size_t *used)
{
	struct egress_chunked c;
	const char *why;
	size_t u1 = 0, u2 = 0;
	int r;

	egress_chunked_init(&c);
	r = egress_chunked_feed(&c, b, cut, &u1, &why);
	FUZZ_ASSERT(u1 <= cut);
	FUZZ_ASSERT(r != -1 || why);
	FUZZ_ASSERT(r != 0 || u1 == cut);
	if (r != 0 || cut == n) {
		*used = u1;
		return r;
	}
	r = egress_chunked_feed(&c, b + cut, n - cut, &u2, &why);
	FUZZ_ASSERT(u2 <= n - cut);
	FUZZ_ASSERT(r != -1 || why);
	FUZZ_ASSERT(r != 0 || u2 == n - cut);
	*used = u1 + u2;
	return r;
}

static void chunked(struct fuzz_in *in)
{
	size_t cut = take16(in), n, u0, u1;
	const uint8_t *b = take_bytes(in, in->n, &n);
	int r0, r1;

	cut = n ? cut % (n + 1) : 0;
	r0 = whole(b, n, n, &u0);
	r1 = whole(b, n, cut, &u1);
	FUZZ_ASSERT(r0 == r1 && u0 == u1);
	if (r0 == 1)
		FUZZ_ASSERT(u0 >= 5 && b[u0 - 2] == '\r' && b[u0 - 1] == '\n');
}

/* Lines of out[0..n) named name (case-insensitive) before the colon. */
static size_t count(const char *out, size_t n, const char *name)
{
	size_t c = 0, nl = strlen(name);

	for (size_t at = 0; at < n;) {
		const char *lf = memchr(out + at, '\n', n - at);
		size_t len = lf ? (size_t)(lf - (out + at)) + 1 : n - at;

		if (len > nl && out[at + nl] == ':' && strncasecmp(out + at, name, nl) == 0)
			c++;
		at += len;
	}
	return c;
}

static void rewrite(struct fuzz_in *in)
{
	size_t n, vn;
	const uint8_t *b = take_bytes(in, in->n, &n);
	const uint8_t *nul = memchr(b, 0, n);
	char value[64];
	struct egress_inject_field f[2] = { { "authorization", "Bearer {}", value },
					    { "x-api-key", "{}", "fixed" } };
	size_t cap;
	char *out;
	long r;

	vn = nul ? (size_t)(nul - b) : 0;
	vn = vn < sizeof(value) ? vn : sizeof(value) - 1;
	memcpy(value, b, vn);
	value[vn] = '\0';
	if (nul) {
		n -= (size_t)(nul - b) + 1;
		b = nul + 1;
	}
	cap = egress_http_inject_size(n, f, 2);
	out = malloc(cap ? cap : 1);
	if (!out)
		return;
	r = egress_http_inject((const char *)b, n, f, 2, out, cap);
	FUZZ_ASSERT(r == -EINVAL || r == -ENOSPC || (r > 0 && (size_t)r <= cap));
	if (r > 0) {
		FUZZ_ASSERT(r >= 4 && memcmp(out + r - 4, "\r\n\r\n", 4) == 0);
		FUZZ_ASSERT(!strchr(value, '\r') && !strchr(value, '\n'));
		if (count((const char *)b, n, "authorization") == 0 &&
		    count((const char *)b, n, "x-api-key") == 0) {
			FUZZ_ASSERT(count(out, (size_t)r, "authorization") == 1);
			FUZZ_ASSERT(count(out, (size_t)r, "x-api-key") == 1);
		}
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t sel = take8(&in);

	if (sel & 1)
		rewrite(&in);
	else
		chunked(&in);
	return 0;
}

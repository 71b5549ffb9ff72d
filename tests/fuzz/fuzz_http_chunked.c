/*
 * fuzz_http_chunked: a client's chunked request body
 * (api/kilnd/http/http_chunked.c), fed the way kilnd's connection loop
 * feeds it: whatever arrived, again with the rest until all is used.
 *
 * Input: a split point (2 bytes), a piece size (1 byte), then the body
 * bytes (and whatever follows the body on the connection).
 * Invariants: each call uses at most what it was given, something of a
 * non-empty input unless the body ended, and hands out at most one data
 * span, inside what it used; once ended, a call uses nothing and says
 * ended again. The body decodes the same whole, split once at the
 * fuzzer's point, and fed in pieces of the fuzzer's size: the same
 * result, the same end (bytes after it are never used), the same data
 * and, for a refusal, the same bad_request message (printable). A body
 * that ended used at least 5 bytes more than its data and ends in CRLF.
 */
#include "api/kilnd/http/http_chunked.h"
#include "fuzz.h"

struct run {
	int r;      /* 1 ended, -1 refused, 0 ran out of input */
	size_t end; /* bytes used */
	char *out;
	size_t outn;
	struct api_err e;
};

/* Feed in[0..n) in pieces: up to cut first, then `piece` bytes at a time. */
static void run(const char *in, size_t n, size_t cut, size_t piece, struct run *o)
{
	struct http_chunked c;
	size_t off = 0;

	http_chunked_init(&c);
	o->r = 0;
	o->outn = 0;
	memset(&o->e, 0, sizeof(o->e));
	while (off < n) {
		size_t stop = off < cut ? cut : off + piece;

		if (stop > n)
			stop = n;
		while (off < stop) {
			const char *data = NULL;
			size_t used = 0, dn = 0;
			int r = http_chunked_feed(&c, in + off, stop - off, &used, &data, &dn,
						  &o->e);

			FUZZ_ASSERT(r >= -1 && r <= 1);
			FUZZ_ASSERT(used <= stop - off);
			FUZZ_ASSERT(c.st >= CHUNK_SIZE && c.st <= CHUNK_DONE);
			if (dn) {
				FUZZ_ASSERT(r == 0 && data >= in + off && dn <= used &&
					    (size_t)(data - (in + off)) <= used - dn);
				memcpy(o->out + o->outn, data, dn);
				o->outn += dn;
			}
			off += used;
			if (r) {
				o->r = r;
				o->end = off;
				if (r == 1) {
					/* Ended: nothing more is used. */
					FUZZ_ASSERT(http_chunked_feed(&c, in + off, n - off, &used,
								      &data, &dn, &o->e) == 1);
					FUZZ_ASSERT(used == 0 && dn == 0);
				}
				return;
			}
			FUZZ_ASSERT(used > 0);
		}
	}
	o->end = off;
}

static void same(const struct run *a, const struct run *b)
{
	FUZZ_ASSERT(a->r == b->r && a->end == b->end);
	FUZZ_ASSERT(a->outn == b->outn && !memcmp(a->out, b->out, a->outn));
	if (a->r < 0)
		FUZZ_ASSERT(a->e.code == b->e.code && !strcmp(a->e.msg, b->e.msg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t cut = take16(&in), piece = take8(&in) % 16 + 1, n = in.n;
	char *body = malloc(n ? n : 1);
	struct run w = { 0 }, s = { 0 }, p = { 0 };

	w.out = malloc(n + 1);
	s.out = malloc(n + 1);
	p.out = malloc(n + 1);
	if (!body || !w.out || !s.out || !p.out)
		goto out;
	/* A block of exactly n bytes: ASan sees a read past the input. */
	memcpy(body, in.p, n);
	cut %= n + 1;
	run(body, n, n, n ? n : 1, &w);
	run(body, n, cut, n ? n : 1, &s);
	run(body, n, 0, piece, &p);
	same(&w, &s);
	same(&w, &p);
	FUZZ_ASSERT(w.end <= n && w.outn <= w.end);
	if (w.r == 1)
		FUZZ_ASSERT(w.end >= w.outn + 5 && body[w.end - 2] == '\r' &&
			    body[w.end - 1] == '\n');
	if (w.r == 0)
		FUZZ_ASSERT(w.end == n);
	if (w.r < 0) {
		size_t len = strlen(w.e.msg);

		FUZZ_ASSERT(w.e.code == API_E_BAD_REQUEST && len > 0 && len < 300);
		for (size_t i = 0; i < len; i++)
			FUZZ_ASSERT(w.e.msg[i] >= 0x20 && w.e.msg[i] < 0x7f);
	}
out:
	free(body);
	free(w.out);
	free(s.out);
	free(p.out);
	return 0;
}

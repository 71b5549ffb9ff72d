/*
 * fuzz_gz: the gzip stream (api/proto/gz_stream.c) kilnd and kiln put
 * around archives: any bytes a client uploads as .tar.gz, in any split,
 * and the encoder's output read back.
 *
 * Input: mode/split byte (bit 0: round trip through the encoder at level
 * byte >> 4; else decode), then the bytes.
 * Invariants: output comes in blocks of at most GZ_BLOCK; a failure says
 * why; decoding is the same in any split (same output, same verdict); a
 * "bomb" is only a long stream (the callback stops it at 1 MiB, nothing
 * accumulates); encode then decode gives back the input exactly.
 */
#include <errno.h>

#include "api/proto/gz_stream.h"
#include "fuzz.h"

#define OUT_LIMIT (1u << 20)

struct sink {
	uint8_t *buf;
	size_t n, cap;
	uint64_t total;
};

static int sink(void *arg, const void *data, size_t n)
{
	struct sink *s = arg;

	FUZZ_ASSERT(n > 0 && n <= GZ_BLOCK);
	s->total += n;
	if (s->total > OUT_LIMIT)
		return -EFBIG; /* what a consumer that stops reading does */
	if (s->buf) {
		size_t take = n < s->cap - s->n ? n : s->cap - s->n;

		memcpy(s->buf + s->n, data, take);
		s->n += take;
	}
	return 0;
}

/* Decode in pieces (0: whole); returns the verdict. */
static int decode(const uint8_t *in, size_t n, uint8_t seed, struct sink *out)
{
	struct gz_stream g;
	uint32_t rnd = seed;
	int r = 0;

	memset(&g, 0, sizeof(g));
	FUZZ_ASSERT(gz_dec_init(&g) == 0);
	for (size_t off = 0; off < n && r == 0;) {
		size_t piece = n - off;

		if (seed) {
			rnd = rnd * 1103515245u + 12345u;
			piece = 1 + (rnd >> 16) % 300;
			if (piece > n - off)
				piece = n - off;
		}
		r = gz_dec_write(&g, in + off, piece, sink, out);
		off += piece;
	}
	if (r == 0)
		r = gz_dec_finish(&g);
	FUZZ_ASSERT(r == 0 || r == -EBADMSG || r == -EFBIG);
	if (r == -EBADMSG)
		FUZZ_ASSERT(gz_why(&g)[0]);
	gz_end(&g);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t a[1 << 20], b[1 << 20];
	struct sink sa = { a, 0, sizeof(a), 0 }, sb = { b, 0, sizeof(b), 0 };
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	if (mode & 1) {
		struct gz_stream g;
		int level = 1 + (mode >> 4) % 9;

		memset(&g, 0, sizeof(g));
		FUZZ_ASSERT(gz_enc_init(&g, level) == 0);
		FUZZ_ASSERT(gz_enc_write(&g, data, size / 2, sink, &sa) == 0);
		FUZZ_ASSERT(gz_enc_write(&g, data + size / 2, size - size / 2, sink, &sa) == 0);
		FUZZ_ASSERT(gz_enc_finish(&g, sink, &sa) == 0);
		gz_end(&g);
		FUZZ_ASSERT(sa.n == sa.total || sa.n == sizeof(a));
		FUZZ_ASSERT(decode(a, sa.n, mode, &sb) == 0);
		FUZZ_ASSERT(sb.total == size && memcmp(b, data, sb.n) == 0);
		return 0;
	}
	{
		int r1 = decode(data, size, 0, &sa), r2 = decode(data, size, mode | 1, &sb);

		/* What came out before an error may depend on the split; a
		 * whole stream's output may not. */
		if (r1 != -EFBIG && r2 != -EFBIG)
			FUZZ_ASSERT(r1 == r2);
		if (r1 == 0 && r2 == 0)
			FUZZ_ASSERT(sa.total == sb.total && sa.n == sb.n &&
				    memcmp(a, b, sa.n) == 0);
	}
	return 0;
}

/*
 * Unit tests of api/proto/gz_stream.c: gzip (RFC 1952) around a byte
 * stream, both ways, in bounded memory, for kilnd's tar.gz archives
 * (docs/api.md, .../archive).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/proto/gz_stream.h"

struct sink {
	unsigned char *p;
	size_t n, cap;
	size_t max_block;
	int fail_after; /* > 0: fail on that call */
	int calls;
};

static int sink_out(void *arg, const void *data, size_t n)
{
	struct sink *s = arg;

	s->calls++;
	if (s->fail_after && s->calls >= s->fail_after)
		return -ECANCELED;
	if (n > s->max_block)
		s->max_block = n;
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		s->p = realloc(s->p, s->cap);
		assert_non_null(s->p);
	}
	memcpy(s->p + s->n, data, n);
	s->n += n;
	return 0;
}

static void gzip(const void *in, size_t n, struct sink *out)
{
	struct gz_stream g;

	memset(out, 0, sizeof(*out));
	assert_int_equal(gz_enc_init(&g, 6), 0);
	assert_int_equal(gz_enc_write(&g, in, n, sink_out, out), 0);
	assert_int_equal(gz_enc_finish(&g, sink_out, out), 0);
	gz_end(&g);
}

/* Decompress in pieces of `step` bytes; returns the first error or finish's result. */
static int gunzip(const void *in, size_t n, size_t step, struct sink *out, struct gz_stream *g)
{
	const unsigned char *p = in;
	int r = 0;

	memset(out, 0, sizeof(*out));
	assert_int_equal(gz_dec_init(g), 0);
	for (size_t off = 0; off < n && r == 0; off += step)
		r = gz_dec_write(g, p + off, n - off < step ? n - off : step, sink_out, out);
	if (r == 0)
		r = gz_dec_finish(g);
	return r;
}

static unsigned char *pattern(size_t n)
{
	unsigned char *b = malloc(n);
	uint32_t x = 12345;

	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		/* Half compressible, half noise. */
		b[i] = (i / 4096) % 2 ? (unsigned char)(x >> 16) : (unsigned char)(i % 7);
	}
	return b;
}

static void test_gz_round_trip(void **state)
{
	static const size_t steps[] = { 7, 4096, 1 << 20 };
	size_t n = 3u << 20;
	unsigned char *data = pattern(n);
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip(data, n, &z);
	assert_true(z.n > 18);
	assert_int_equal(z.p[0], 0x1f);
	assert_int_equal(z.p[1], 0x8b);
	assert_true(z.max_block <= GZ_BLOCK);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(gunzip(z.p, z.n, steps[i], &out, &g), 0);
		assert_int_equal(out.n, n);
		assert_memory_equal(out.p, data, n);
		assert_true(out.max_block <= GZ_BLOCK);
		gz_end(&g);
		free(out.p);
	}
	free(z.p);
	/* Byte by byte on a small input. */
	gzip(data, 5000, &z);
	assert_int_equal(gunzip(z.p, z.n, 1, &out, &g), 0);
	assert_int_equal(out.n, 5000);
	assert_memory_equal(out.p, data, 5000);
	gz_end(&g);
	free(out.p);
	free(z.p);
	free(data);
}

static void test_gz_empty_payload(void **state)
{
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip("", 0, &z);
	assert_int_equal(gunzip(z.p, z.n, 4096, &out, &g), 0);
	assert_int_equal(out.n, 0);
	gz_end(&g);
	free(out.p);
	free(z.p);
}

struct counter {
	size_t blocks, total;
};

static int count(void *arg, const void *data, size_t k)
{
	struct counter *c = arg;

	(void)data;
	if (k > GZ_BLOCK)
		return -E2BIG;
	c->blocks++;
	c->total += k;
	return 0;
}

/* A bomb: 64 MiB of zeros compress to ~64 KiB; the output still comes
 * out in bounded blocks, for the consumer to pace or refuse. */
static void test_gz_bomb_is_streamed(void **state)
{
	size_t n = 64u << 20;
	unsigned char *zeros = calloc(1, n);
	struct counter c = { 0 };
	struct gz_stream g;
	struct sink z;

	(void)state;
	assert_non_null(zeros);
	gzip(zeros, n, &z);
	free(zeros);
	assert_true(z.n < n / 500);
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, count, &c), 0);
	assert_int_equal(gz_dec_finish(&g), 0);
	assert_int_equal(c.total, n);
	assert_true(c.blocks >= n / GZ_BLOCK);
	gz_end(&g);
	free(z.p);
}

static void test_gz_bad_input(void **state)
{
	unsigned char *data = pattern(100000);
	struct sink z, out;
	struct gz_stream g;
	unsigned char *bad;

	(void)state;
	gzip(data, 100000, &z);
	bad = malloc(z.n + 16);
	assert_non_null(bad);

	/* Truncated anywhere: never a clean end. */
	for (size_t cut = 1; cut < z.n; cut += cut < 16 ? 1 : 997) {
		assert_int_equal(gunzip(z.p, z.n - cut, 4096, &out, &g), -EBADMSG);
		assert_non_null(strstr(gz_why(&g), "ends in the middle"));
		gz_end(&g);
		free(out.p);
	}
	/* A flipped byte in the trailer's CRC. */
	memcpy(bad, z.p, z.n);
	bad[z.n - 6] ^= 0x40;
	assert_int_equal(gunzip(bad, z.n, 4096, &out, &g), -EBADMSG);
	gz_end(&g);
	free(out.p);
	/* Not gzip: a plain tar starts with a file name. */
	assert_int_equal(gunzip("hello.txt\0\0\0\0\0\0\0\0\0\0\0\0\0", 22, 4096, &out, &g),
			 -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "not gzip"));
	gz_end(&g);
	free(out.p);
	/* Empty body. */
	assert_int_equal(gunzip("", 0, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "empty"));
	gz_end(&g);
	free(out.p);
	/* Trailing garbage after a whole member. */
	memcpy(bad, z.p, z.n);
	memcpy(bad + z.n, "junk", 4);
	assert_int_equal(gunzip(bad, z.n + 4, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "trailing"));
	gz_end(&g);
	free(out.p);
	/* NUL padding is fine (gzip(1) accepts it), but nothing after it. */
	memset(bad + z.n, 0, 16);
	assert_int_equal(gunzip(bad, z.n + 16, 4096, &out, &g), 0);
	assert_int_equal(out.n, 100000);
	gz_end(&g);
	free(out.p);
	bad[z.n + 15] = 0x1f;
	assert_int_equal(gunzip(bad, z.n + 16, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "padding"));
	gz_end(&g);
	free(out.p);
	/* Writes after a failure keep failing. */
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, "xx", 2, sink_out, &out), -EBADMSG);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, sink_out, &out), -EBADMSG);
	gz_end(&g);
	free(bad);
	free(z.p);
	free(data);
}

static void test_gz_concatenated_members(void **state)
{
	struct sink a, b, out;
	struct gz_stream g;
	unsigned char *both;

	(void)state;
	gzip("first ", 6, &a);
	gzip("second", 6, &b);
	both = malloc(a.n + b.n);
	assert_non_null(both);
	memcpy(both, a.p, a.n);
	memcpy(both + a.n, b.p, b.n);
	for (size_t step = 1; step <= a.n + b.n; step += 5) {
		assert_int_equal(gunzip(both, a.n + b.n, step, &out, &g), 0);
		assert_int_equal(out.n, 12);
		assert_memory_equal(out.p, "first second", 12);
		gz_end(&g);
		free(out.p);
	}
	free(both);
	free(a.p);
	free(b.p);
}

static void test_gz_callback_error_stops(void **state)
{
	unsigned char *data = pattern(1u << 20);
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip(data, 1u << 20, &z);
	memset(&out, 0, sizeof(out));
	out.fail_after = 2;
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, sink_out, &out), -ECANCELED);
	assert_int_equal(out.calls, 2);
	gz_end(&g);
	free(out.p);
	/* The encoder passes its callback's error on too. */
	memset(&out, 0, sizeof(out));
	out.fail_after = 1;
	assert_int_equal(gz_enc_init(&g, 6), 0);
	assert_int_equal(gz_enc_write(&g, data, 1u << 20, sink_out, &out), -ECANCELED);
	gz_end(&g);
	gz_end(&g); /* twice is fine */
	free(out.p);
	free(z.p);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gz_round_trip),
		cmocka_unit_test(test_gz_empty_payload),
		cmocka_unit_test(test_gz_bomb_is_streamed),
		cmocka_unit_test(test_gz_bad_input),
		cmocka_unit_test(test_gz_concatenated_members),
		cmocka_unit_test(test_gz_callback_error_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * agent_ring: a spawned process's output ring. Sequence numbers must be
 * exact across wrap-around, a reader that fell behind must see exactly the
 * bytes it lost as one gap, stream tags must survive interleaving, and the
 * ring must stay within its capacity however the writer behaves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guest-init/agent/agent_ring.h"

static void put(struct agent_ring *r, enum agent_stream s, const char *text)
{
	agent_ring_write(r, s, text, strlen(text));
}

/* Read one chunk and check it is DATA of `s` at `seq` holding `text`. */
static void expect_data(struct agent_ring *r, uint64_t *cur, size_t max, enum agent_stream s,
			uint64_t seq, const char *text)
{
	char buf[256];
	struct agent_ring_chunk ch;

	assert_true(max <= sizeof(buf));
	assert_int_equal(agent_ring_read(r, cur, buf, max, &ch), AGENT_RING_DATA);
	assert_int_equal(ch.kind, AGENT_RING_DATA);
	assert_int_equal(ch.stream, s);
	assert_int_equal(ch.seq, seq);
	assert_int_equal(ch.len, strlen(text));
	assert_memory_equal(buf, text, ch.len);
	assert_int_equal(*cur, seq + ch.len);
}

static void expect_none(struct agent_ring *r, uint64_t *cur)
{
	char buf[8];
	struct agent_ring_chunk ch;

	assert_int_equal(agent_ring_read(r, cur, buf, sizeof(buf), &ch), AGENT_RING_NONE);
	assert_int_equal(*cur, r->head);
}

static void test_init_limits(void **state)
{
	struct agent_ring r;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 0), -EINVAL);
	assert_null(r.data);
	assert_int_equal(agent_ring_init(&r, AGENT_RING_MAX + 1), -EINVAL);
	assert_int_equal(agent_ring_init(&r, AGENT_RING_MAX), 0);
	assert_int_equal(r.mcap, AGENT_RING_MAX / AGENT_RING_MARK_DIV);
	agent_ring_free(&r);
	assert_int_equal(agent_ring_init(&r, 1), 0);
	assert_int_equal(r.mcap, AGENT_RING_MARKS_MIN);
	agent_ring_free(&r);
	agent_ring_free(&r); /* idempotent */
}

/* An empty ring reads as nothing, from any cursor. */
static void test_empty(void **state)
{
	struct agent_ring r;
	uint64_t cur = 0, far = 1000;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 64), 0);
	expect_none(&r, &cur);
	expect_none(&r, &far); /* past the head: clamped to it */
	assert_int_equal(far, 0);
	agent_ring_free(&r);
}

/* Writes to one stream coalesce; switches split chunks at the right seq. */
static void test_interleaved_streams(void **state)
{
	struct agent_ring r;
	uint64_t cur = 0;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 64), 0);
	put(&r, AGENT_STDOUT, "abc");
	put(&r, AGENT_STDOUT, "de");
	put(&r, AGENT_STDERR, "ERR");
	put(&r, AGENT_STDOUT, "f");
	assert_int_equal(r.head, 9);
	assert_int_equal(r.mcount, 3);
	expect_data(&r, &cur, 64, AGENT_STDOUT, 0, "abcde");
	expect_data(&r, &cur, 64, AGENT_STDERR, 5, "ERR");
	expect_data(&r, &cur, 64, AGENT_STDOUT, 8, "f");
	expect_none(&r, &cur);
	assert_int_equal(r.total[AGENT_STDOUT], 6);
	assert_int_equal(r.total[AGENT_STDERR], 3);

	/* A second reader from the middle of a run starts mid-run. */
	cur = 6;
	expect_data(&r, &cur, 64, AGENT_STDERR, 6, "RR");
	agent_ring_free(&r);
}

/* `max` cuts a run into several chunks without losing a byte. */
static void test_max_splits_run(void **state)
{
	struct agent_ring r;
	uint64_t cur = 0;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 64), 0);
	put(&r, AGENT_STDERR, "0123456789");
	expect_data(&r, &cur, 4, AGENT_STDERR, 0, "0123");
	expect_data(&r, &cur, 4, AGENT_STDERR, 4, "4567");
	expect_data(&r, &cur, 4, AGENT_STDERR, 8, "89");
	expect_none(&r, &cur);
	agent_ring_free(&r);
}

/* Data that wraps around the end of the buffer reads back in order. */
static void test_wrap_around(void **state)
{
	struct agent_ring r;
	uint64_t cur = 0;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 16), 0);
	put(&r, AGENT_STDOUT, "0123456789");
	expect_data(&r, &cur, 64, AGENT_STDOUT, 0, "0123456789");
	put(&r, AGENT_STDOUT, "abcdefghij"); /* seq 10..19: positions 10..15, 0..3 */
	assert_int_equal(r.tail, 4);
	expect_data(&r, &cur, 64, AGENT_STDOUT, 10, "abcdefghij");
	agent_ring_free(&r);
}

/* A reader that fell behind gets exactly the lost bytes as a gap first. */
static void test_gap(void **state)
{
	struct agent_ring r;
	struct agent_ring_chunk ch;
	uint64_t cur = 3;
	char buf[64];

	(void)state;
	assert_int_equal(agent_ring_init(&r, 16), 0);
	put(&r, AGENT_STDOUT, "0123456789abcdefghijklmnopqrstuvwxyzABCD"); /* 40 bytes */
	assert_int_equal(r.head, 40);
	assert_int_equal(r.tail, 24);
	assert_int_equal(agent_ring_read(&r, &cur, buf, sizeof(buf), &ch), AGENT_RING_GAP);
	assert_int_equal(ch.seq, 3);
	assert_int_equal(ch.len, 21);
	assert_int_equal(cur, 24);
	expect_data(&r, &cur, 64, AGENT_STDOUT, 24, "opqrstuvwxyzABCD");
	expect_none(&r, &cur);
	agent_ring_free(&r);
}

/* One write larger than the ring keeps its last `cap` bytes; seq counts all. */
static void test_huge_write(void **state)
{
	struct agent_ring r;
	struct agent_ring_chunk ch;
	uint64_t cur = 0;
	char big[100], buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('A' + i % 26);
	assert_int_equal(agent_ring_init(&r, 16), 0);
	put(&r, AGENT_STDERR, "xy");
	agent_ring_write(&r, AGENT_STDOUT, big, sizeof(big));
	assert_int_equal(r.head, 102);
	assert_int_equal(r.tail, 86);
	assert_int_equal(r.total[AGENT_STDOUT], 100);
	assert_int_equal(r.total[AGENT_STDERR], 2);
	assert_int_equal(r.mcount, 1); /* stderr's run is entirely gone */
	assert_int_equal(agent_ring_read(&r, &cur, buf, sizeof(buf), &ch), AGENT_RING_GAP);
	assert_int_equal(ch.len, 86);
	assert_int_equal(agent_ring_read(&r, &cur, buf, sizeof(buf), &ch), AGENT_RING_DATA);
	assert_int_equal(ch.stream, AGENT_STDOUT);
	assert_int_equal(ch.seq, 86);
	assert_int_equal(ch.len, 16);
	assert_memory_equal(buf, big + 84, 16);
	agent_ring_free(&r);
}

/*
 * A writer that switches streams every byte runs out of marks before it
 * runs out of data space: the oldest runs are dropped as a gap, memory
 * stays bounded, and every byte still held has the right stream.
 */
static void test_marks_exhausted(void **state)
{
	struct agent_ring r;
	struct agent_ring_chunk ch;
	uint64_t cur = 0, expect;
	char buf[8];

	(void)state;
	assert_int_equal(agent_ring_init(&r, 64), 0); /* 16 marks */
	assert_int_equal(r.mcap, 16);
	for (int i = 0; i < 40; i++)
		agent_ring_write(&r, i % 2 ? AGENT_STDERR : AGENT_STDOUT, (char[]){ (char)i }, 1);
	assert_int_equal(r.head, 40);
	assert_int_equal(r.mcount, 16);
	assert_int_equal(r.tail, 24); /* only the newest 16 runs remain */
	assert_int_equal(agent_ring_read(&r, &cur, buf, sizeof(buf), &ch), AGENT_RING_GAP);
	assert_int_equal(ch.seq, 0);
	assert_int_equal(ch.len, 24);
	for (expect = 24; expect < 40; expect++) {
		assert_int_equal(agent_ring_read(&r, &cur, buf, sizeof(buf), &ch), AGENT_RING_DATA);
		assert_int_equal(ch.seq, expect);
		assert_int_equal(ch.len, 1);
		assert_int_equal(buf[0], (char)expect);
		assert_int_equal(ch.stream, expect % 2 ? AGENT_STDERR : AGENT_STDOUT);
	}
	agent_ring_free(&r);
}

/* Only stdout and stderr are ring streams; empty writes change nothing. */
static void test_bad_stream_and_empty_write(void **state)
{
	struct agent_ring r;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 16), 0);
	agent_ring_write(&r, AGENT_DATA, "x", 1);
	agent_ring_write(&r, (enum agent_stream)7, "x", 1);
	agent_ring_write(&r, AGENT_STDOUT, "x", 0);
	assert_int_equal(r.head, 0);
	assert_int_equal(r.mcount, 0);
	agent_ring_free(&r);
}

/* attach.from: default oldest, "now" and past-the-end are the head. */
static void test_attach_seq(void **state)
{
	struct agent_ring r;

	(void)state;
	assert_int_equal(agent_ring_init(&r, 16), 0);
	put(&r, AGENT_STDOUT, "0123456789abcdefghij"); /* tail 4, head 20 */
	assert_int_equal(agent_ring_attach_seq(&r, false, false, 0), 4);
	assert_int_equal(agent_ring_attach_seq(&r, true, false, 0), 20);
	assert_int_equal(agent_ring_attach_seq(&r, false, true, 0), 0); /* gap follows */
	assert_int_equal(agent_ring_attach_seq(&r, false, true, 7), 7);
	assert_int_equal(agent_ring_attach_seq(&r, false, true, 20), 20);
	assert_int_equal(agent_ring_attach_seq(&r, false, true, UINT64_MAX), 20);
	agent_ring_free(&r);
}

/* ---- randomised comparison against a model that keeps everything ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64: deterministic, so a failure reproduces. */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define MODEL_MAX 200000

struct model {
	uint8_t byte[MODEL_MAX];
	uint8_t stream[MODEL_MAX];
	size_t n;
};

/* Drain one reader to the head, checking every chunk against the model. */
static void drain_and_check(const struct agent_ring *r, const struct model *m, uint64_t *cur,
			    size_t max)
{
	uint8_t buf[512];
	struct agent_ring_chunk ch;

	for (;;) {
		uint64_t before = *cur;
		enum agent_ring_kind k = agent_ring_read(r, cur, buf, max, &ch);

		if (k == AGENT_RING_NONE)
			break;
		assert_int_equal(ch.seq, before);
		if (k == AGENT_RING_GAP) {
			assert_int_equal(ch.seq + ch.len, r->tail);
			continue;
		}
		assert_true(ch.len >= 1 && ch.len <= max);
		assert_true(ch.seq >= r->tail && ch.seq + ch.len <= r->head);
		for (size_t i = 0; i < ch.len; i++) {
			assert_int_equal(buf[i], m->byte[ch.seq + i]);
			assert_int_equal(ch.stream, m->stream[ch.seq + i]);
		}
		/* A chunk ends at a stream switch, the head, or max. */
		if (ch.len < max && ch.seq + ch.len < r->head)
			assert_int_not_equal(m->stream[ch.seq + ch.len], ch.stream);
	}
	assert_int_equal(*cur, r->head);
}

static void test_random_against_model(void **state)
{
	static struct model m;
	struct agent_ring r;
	uint64_t fast = 0, slow = 0;
	size_t caps[] = { 1, 7, 64, 1000, 4096 };

	(void)state;
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		m.n = 0;
		fast = slow = 0;
		assert_int_equal(agent_ring_init(&r, caps[c]), 0);
		while (m.n < MODEL_MAX - 300) {
			uint8_t chunk[300];
			size_t n = (size_t)(rnd() % (rnd() % 4 ? 8 : 300));
			enum agent_stream s = rnd() % 3 ? AGENT_STDOUT : AGENT_STDERR;

			for (size_t i = 0; i < n; i++) {
				chunk[i] = (uint8_t)rnd();
				m.byte[m.n + i] = chunk[i];
				m.stream[m.n + i] = (uint8_t)s;
			}
			m.n += n;
			agent_ring_write(&r, s, chunk, n);
			assert_int_equal(r.head, m.n);
			assert_true(r.head - r.tail <= r.cap);
			assert_true(r.mcount <= r.mcap);
			drain_and_check(&r, &m, &fast, 1 + (size_t)(rnd() % 512));
			if (rnd() % 50 == 0)
				drain_and_check(&r, &m, &slow, 1 + (size_t)(rnd() % 64));
		}
		agent_ring_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_limits),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_interleaved_streams),
		cmocka_unit_test(test_max_splits_run),
		cmocka_unit_test(test_wrap_around),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_huge_write),
		cmocka_unit_test(test_marks_exhausted),
		cmocka_unit_test(test_bad_stream_and_empty_write),
		cmocka_unit_test(test_attach_seq),
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

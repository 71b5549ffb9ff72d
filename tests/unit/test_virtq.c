/*
 * virtq: the split virtqueue against rings built by hand in a fake guest
 * RAM. Everything in a ring is written by a hostile guest, so most cases
 * are malformed rings and chains (loops, out-of-range indices, buffers past
 * RAM or wrapping 2^64, bad indirect tables) that virtq must refuse with
 * -EINVAL; the rest pin down the used ring and interrupt suppression.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/guest/guest_mem.h"
#include "devices/virtio/virtq.h"
#include "bytes.h"

#define MIB (1ULL << 20)
#define RAM (16 * MIB)

#define QSIZE 16
#define DESC 0x1000ULL
#define AVAIL 0x20000ULL
#define USED 0x30000ULL
#define TABLE 0x40000ULL /* indirect tables */
#define BUF 0x100000ULL  /* data buffers */

struct fx {
	struct guest_mem gm;
	struct virtq q;
	struct virtq_chain c;
	uint16_t avail_idx; /* the "driver's" next avail index */
};

static uint8_t *at(struct fx *f, uint64_t gpa)
{
	return f->gm.host + gpa;
}

/* Descriptor `i` of the table at `table` (the queue's own or an indirect one). */
static void desc_at(struct fx *f, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
		    uint16_t flags, uint16_t next)
{
	uint8_t *d = at(f, table + 16ULL * i);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void desc(struct fx *f, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	desc_at(f, f->q.desc_gpa, i, addr, len, flags, next);
}

/* Make chain `head` available, as the driver does: ring entry, then idx. */
static void avail_add(struct fx *f, uint16_t head)
{
	put16(at(f, f->q.avail_gpa + 4 + 2ULL * (f->avail_idx % f->q.size)), head);
	f->avail_idx++;
	put16(at(f, f->q.avail_gpa + 2), f->avail_idx);
}

static void set_avail_flags(struct fx *f, uint16_t flags)
{
	put16(at(f, f->q.avail_gpa), flags);
}

static void set_used_event(struct fx *f, uint16_t v)
{
	put16(at(f, f->q.avail_gpa + 4 + 2ULL * f->q.size), v);
}

static uint16_t used_idx(struct fx *f)
{
	return get16(at(f, f->q.used_gpa + 2));
}

static uint32_t used_id(struct fx *f, unsigned slot)
{
	return get32(at(f, f->q.used_gpa + 4 + 8ULL * slot));
}

static uint32_t used_len(struct fx *f, unsigned slot)
{
	return get32(at(f, f->q.used_gpa + 4 + 8ULL * slot + 4));
}

static void fill(struct fx *f, uint64_t gpa, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		at(f, gpa)[i] = (uint8_t)(seed + i * 3);
}

/* Configure a queue of `size` with rings at the default addresses (not enabled). */
static void q_config(struct fx *f, uint16_t size)
{
	memset(&f->q, 0, sizeof(f->q));
	f->q.size = size;
	f->q.desc_gpa = DESC;
	f->q.avail_gpa = AVAIL;
	f->q.used_gpa = USED;
	f->avail_idx = 0;
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->gm.host = calloc(1, RAM);
	assert_non_null(f->gm.host);
	guest_mem_layout(&f->gm, RAM);
	q_config(f, QSIZE);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	free(f->gm.host);
	free(f);
	return 0;
}

/* An enabled default queue. */
static struct fx *ready(void **state)
{
	struct fx *f = *state;

	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
	return f;
}

static int pop(struct fx *f)
{
	return virtq_pop(&f->q, &f->c);
}

/* ---- virtq_enable ---- */

/* Valid rings enable the queue; the ring sizes are the spec's (2.7). */
static void test_enable_valid(void **state)
{
	struct fx *f = *state;

	assert_int_equal(virtq_desc_bytes(QSIZE), 16 * QSIZE);
	assert_int_equal(virtq_avail_bytes(QSIZE), 6 + 2 * QSIZE);
	assert_int_equal(virtq_used_bytes(QSIZE), 6 + 8 * QSIZE);
	f->q.last_avail = 7;
	f->q.used_idx = 9;
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
	assert_int_equal(f->q.ready, 1);
	assert_ptr_equal(f->q.mem, &f->gm);
	assert_int_equal(f->q.last_avail, 0);
	assert_int_equal(f->q.used_idx, 0);
}

/* Sizes that are 0, not a power of two or above VIRTQ_MAX_SIZE are refused. */
static void test_enable_bad_size(void **state)
{
	struct fx *f = *state;
	const uint16_t bad[] = { 0, 3, 6, 17, 1023, VIRTQ_MAX_SIZE * 2, 0x8000, 0xffff };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q_config(f, bad[i]);
		assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
		assert_int_equal(f->q.ready, 0);
	}
	q_config(f, 1);
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
	q_config(f, VIRTQ_MAX_SIZE);
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
}

/* Rings off their spec alignment (desc 16, avail 2, used 4) are refused. */
static void test_enable_misaligned(void **state)
{
	struct fx *f = *state;

	f->q.desc_gpa = DESC + 8;
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	q_config(f, QSIZE);
	f->q.avail_gpa = AVAIL + 1;
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	q_config(f, QSIZE);
	f->q.used_gpa = USED + 2;
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	assert_int_equal(f->q.ready, 0);
	/* the minimum alignments themselves are fine */
	q_config(f, QSIZE);
	f->q.avail_gpa = AVAIL + 2;
	f->q.used_gpa = USED + 4;
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
}

/* A ring whose last byte is past RAM, or whose address wraps, is refused;
 * one ending exactly at the end of RAM is accepted. */
static void test_enable_outside_ram(void **state)
{
	struct fx *f = *state;

	f->q.desc_gpa = RAM - virtq_desc_bytes(QSIZE) + 16;
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	f->q.desc_gpa = RAM - virtq_desc_bytes(QSIZE);
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);

	q_config(f, QSIZE);
	f->q.avail_gpa = RAM - virtq_avail_bytes(QSIZE) + 2;
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	f->q.avail_gpa = RAM - virtq_avail_bytes(QSIZE);
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);

	q_config(f, QSIZE);
	f->q.used_gpa = RAM - 4; /* 4-aligned, but the ring is 134 bytes */
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	f->q.used_gpa = 0xfffffffffffffff0ULL; /* wraps 2^64 */
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	f->q.used_gpa = GUEST_MEM_HIGH_START; /* no high RAM in a 16 MiB guest */
	assert_int_equal(virtq_enable(&f->q, &f->gm), -EINVAL);
	assert_int_equal(f->q.ready, 0);
}

/* ---- virtq_pop: well-formed chains ---- */

/* Nothing made available: 0, and the chain is not consumed. */
static void test_pop_empty(void **state)
{
	struct fx *f = ready(state);

	assert_int_equal(pop(f), 0);
	assert_int_equal(f->q.last_avail, 0);
}

/* readable, readable, writable — linked out of order — comes out in chain
 * order with the right lengths and host pointers. */
static void test_pop_three_desc_chain(void **state)
{
	struct fx *f = ready(state);

	fill(f, BUF, 10, 1);
	fill(f, BUF + 0x100, 6, 50);
	desc(f, 5, BUF, 10, VIRTQ_DESC_F_NEXT, 9);
	desc(f, 9, BUF + 0x100, 6, VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, BUF + 0x200, 32, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 5);

	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 5);
	assert_int_equal(f->c.nout, 2);
	assert_int_equal(f->c.nin, 1);
	assert_ptr_equal(f->c.out[0].host, at(f, BUF));
	assert_int_equal(f->c.out[0].len, 10);
	assert_ptr_equal(f->c.out[1].host, at(f, BUF + 0x100));
	assert_int_equal(f->c.out[1].len, 6);
	assert_ptr_equal(f->c.in[0].host, at(f, BUF + 0x200));
	assert_int_equal(f->c.in[0].len, 32);
	assert_int_equal(f->c.out_len, 16);
	assert_int_equal(f->c.in_len, 32);
	assert_memory_equal(f->c.out[1].host, at(f, BUF + 0x100), 6);
	assert_int_equal(f->q.last_avail, 1);
	assert_int_equal(pop(f), 0);
}

/* Several chains queued at once come out in avail-ring order, and the ring
 * index wraps modulo the size as the 16-bit avail idx runs on. */
static void test_pop_in_order_and_ring_wrap(void **state)
{
	struct fx *f = ready(state);

	for (unsigned i = 0; i < QSIZE; i++)
		desc(f, i, BUF + 0x10 * i, 4, VIRTQ_DESC_F_WRITE, 0);
	/* start near the 16-bit wrap: the driver's idx and ours agree */
	f->q.last_avail = 0xfffe;
	f->avail_idx = 0xfffe;
	avail_add(f, 3);
	avail_add(f, 7);
	avail_add(f, 11);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 3);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 7);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 11);
	assert_ptr_equal(f->c.in[0].host, at(f, BUF + 0x10 * 11));
	assert_int_equal(f->q.last_avail, 1);
	assert_int_equal(pop(f), 0);
}

/* Zero-length descriptors are legal and skipped — even one whose address
 * is nonsense, since no byte of it is ever touched. */
static void test_pop_zero_length_skipped(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 0, VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, BUF + 0x10, 4, VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, 0xffffffffffffffffULL, 0, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 3);
	desc(f, 3, BUF + 0x20, 8, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.nout, 1);
	assert_int_equal(f->c.nin, 1);
	assert_ptr_equal(f->c.out[0].host, at(f, BUF + 0x10));
	assert_int_equal(f->c.out[0].len, 4);
	assert_ptr_equal(f->c.in[0].host, at(f, BUF + 0x20));
	assert_int_equal(f->c.in[0].len, 8);
}

/* A buffer that ends exactly at the end of RAM is accepted. */
static void test_pop_buffer_at_end_of_ram(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, RAM - 8, 8, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	assert_ptr_equal(f->c.in[0].host, at(f, RAM - 8));
}

/* A queue of exactly `size` outstanding chains is legal (idx - last == size). */
static void test_pop_full_ring(void **state)
{
	struct fx *f = ready(state);

	for (unsigned i = 0; i < QSIZE; i++) {
		desc(f, i, BUF, 1, 0, 0);
		avail_add(f, (uint16_t)i);
	}
	for (unsigned i = 0; i < QSIZE; i++) {
		assert_int_equal(pop(f), 1);
		assert_int_equal(f->c.head, i);
	}
	assert_int_equal(pop(f), 0);
}

/* ---- virtq_pop: hostile chains and rings ---- */

/* A chain whose next points back (and one pointing at itself) never ends:
 * the walk stops after `size` descriptors with -EINVAL. */
static void test_pop_loop(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, BUF, 4, VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, BUF, 4, VIRTQ_DESC_F_NEXT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);

	desc(f, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 0);
	assert_int_equal(pop(f), -EINVAL);
	/* a loop of zero-length descriptors adds no buffers but is still a loop */
	desc(f, 0, BUF, 0, VIRTQ_DESC_F_NEXT, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* A chain that visits every descriptor once is the longest legal one. */
static void test_pop_chain_uses_whole_table(void **state)
{
	struct fx *f = ready(state);

	for (unsigned i = 0; i < QSIZE - 1; i++)
		desc(f, i, BUF + i, 1, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(f, QSIZE - 1, BUF, 1, 0, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.nout, QSIZE);
}

/* next >= size would read past the descriptor table. */
static void test_pop_next_out_of_range(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 4, VIRTQ_DESC_F_NEXT, QSIZE);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 0xffff);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
}

/* A buffer that runs past the end of RAM or wraps 2^64 is refused. */
static void test_pop_buffer_outside_ram(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, RAM - 4, 8, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, RAM, 1, 0, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, 0xfffffffffffffff8ULL, 16, VIRTQ_DESC_F_WRITE, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, 0xffffffffffffffffULL, 0xffffffff, 0, 0);
	assert_int_equal(pop(f), -EINVAL);
	/* the bad buffer is the second in a chain */
	desc(f, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, GUEST_MEM_MMIO_HOLE_START, 8, VIRTQ_DESC_F_WRITE, 0);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
}

/* 2.7.4.2: a device-readable buffer after a device-writable one is refused. */
static void test_pop_read_after_write(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, BUF + 0x10, 4, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, BUF + 0x20, 4, 0, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* The avail idx moving more than `size` ahead of what we consumed is garbage. */
static void test_pop_avail_idx_jump(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 4, 0, 0);
	put16(at(f, AVAIL + 2), QSIZE + 1);
	assert_int_equal(pop(f), -EINVAL);
	put16(at(f, AVAIL + 2), 0xffff); /* "one behind", i.e. 65535 ahead */
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
	put16(at(f, AVAIL + 2), QSIZE); /* exactly a full ring is fine */
	assert_int_equal(pop(f), 1);
}

/* A head index >= size would read past the descriptor table. */
static void test_pop_bad_head(void **state)
{
	struct fx *f = ready(state);

	avail_add(f, QSIZE);
	assert_int_equal(pop(f), -EINVAL);
	put16(at(f, AVAIL + 4), 0xffff);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
}

/* More than VIRTQ_MAX_CHAIN readable (or writable) buffers are refused even
 * in a queue big enough to hold them; VIRTQ_MAX_CHAIN itself is accepted. */
static void test_pop_chain_too_long(void **state)
{
	struct fx *f = *state;
	const unsigned n = VIRTQ_MAX_CHAIN + 1;

	q_config(f, 512);
	assert_int_equal(virtq_enable(&f->q, &f->gm), 0);
	for (unsigned i = 0; i < n; i++)
		desc(f, i, BUF + i, 1, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(f, n - 1, BUF, 1, 0, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);

	for (unsigned i = 0; i < n; i++)
		desc(f, i, BUF + i, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(f, n - 1, BUF, 1, VIRTQ_DESC_F_WRITE, 0);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);

	/* drop the first: exactly VIRTQ_MAX_CHAIN writable buffers */
	put16(at(f, AVAIL + 4), 1);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.nin, VIRTQ_MAX_CHAIN);
	assert_int_equal(f->c.in_len, VIRTQ_MAX_CHAIN);
}

/* ---- indirect tables (2.7.5.3) ---- */

/* A head that points at an indirect table yields the table's chain. */
static void test_pop_indirect_valid(void **state)
{
	struct fx *f = ready(state);

	desc_at(f, TABLE, 0, BUF, 12, VIRTQ_DESC_F_NEXT, 2);
	desc_at(f, TABLE, 2, BUF + 0x100, 20, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	desc_at(f, TABLE, 1, BUF + 0x200, 30, VIRTQ_DESC_F_WRITE, 0);
	desc(f, 4, TABLE, 3 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 4);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 4);
	assert_int_equal(f->c.nout, 1);
	assert_int_equal(f->c.nin, 2);
	assert_ptr_equal(f->c.out[0].host, at(f, BUF));
	assert_ptr_equal(f->c.in[0].host, at(f, BUF + 0x100));
	assert_ptr_equal(f->c.in[1].host, at(f, BUF + 0x200));
	assert_int_equal(f->c.out_len, 12);
	assert_int_equal(f->c.in_len, 50);
}

/* An indirect table with VIRTQ_MAX_CHAIN entries is the largest accepted. */
static void test_pop_indirect_max_table(void **state)
{
	struct fx *f = ready(state);

	for (unsigned i = 0; i < VIRTQ_MAX_CHAIN - 1; i++)
		desc_at(f, TABLE, i, BUF + i, 1, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc_at(f, TABLE, VIRTQ_MAX_CHAIN - 1, BUF, 1, 0, 0);
	desc(f, 0, TABLE, VIRTQ_MAX_CHAIN * 16, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.nout, VIRTQ_MAX_CHAIN);
	/* one more entry is refused before the table is read */
	desc(f, 0, TABLE, (VIRTQ_MAX_CHAIN + 1) * 16, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* An indirect descriptor inside an indirect table is refused. */
static void test_pop_indirect_nested(void **state)
{
	struct fx *f = ready(state);

	desc_at(f, TABLE, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 1);
	desc_at(f, TABLE, 1, TABLE + 0x100, 16, VIRTQ_DESC_F_INDIRECT, 0);
	desc_at(f, TABLE + 0x100, 0, BUF, 4, 0, 0);
	desc(f, 0, TABLE, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
	/* a table that points at itself */
	desc_at(f, TABLE, 1, TABLE, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* INDIRECT together with NEXT is forbidden (2.7.5.3.1). */
static void test_pop_indirect_with_next(void **state)
{
	struct fx *f = ready(state);

	desc_at(f, TABLE, 0, BUF, 4, 0, 0);
	desc(f, 0, TABLE, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, BUF, 4, 0, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* An indirect table of 0 bytes or not a whole number of descriptors. */
static void test_pop_indirect_bad_len(void **state)
{
	struct fx *f = ready(state);
	const uint32_t bad[] = { 0, 1, 8, 15, 17, 20, 40, 0xfffffff0 };

	desc_at(f, TABLE, 0, BUF, 4, 0, 0);
	avail_add(f, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		desc(f, 0, TABLE, bad[i], VIRTQ_DESC_F_INDIRECT, 0);
		assert_int_equal(pop(f), -EINVAL);
	}
	desc(f, 0, TABLE, 16, VIRTQ_DESC_F_INDIRECT, 0);
	assert_int_equal(pop(f), 1);
}

/* An indirect table past the end of RAM or wrapping 2^64 is refused. */
static void test_pop_indirect_outside_ram(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, RAM - 16, 32, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, 0xfffffffffffffff0ULL, 32, VIRTQ_DESC_F_INDIRECT, 0);
	assert_int_equal(pop(f), -EINVAL);
	desc(f, 0, GUEST_MEM_HIGH_START, 16, VIRTQ_DESC_F_INDIRECT, 0);
	assert_int_equal(pop(f), -EINVAL);
}

/* Inside an indirect table: next beyond the table, a loop, a bad buffer. */
static void test_pop_indirect_bad_entries(void **state)
{
	struct fx *f = ready(state);

	desc_at(f, TABLE, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 2); /* table has 2 entries */
	desc_at(f, TABLE, 1, BUF, 4, 0, 0);
	desc(f, 0, TABLE, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), -EINVAL);

	desc_at(f, TABLE, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 1);
	desc_at(f, TABLE, 1, BUF, 4, VIRTQ_DESC_F_NEXT, 0);
	assert_int_equal(pop(f), -EINVAL);

	desc_at(f, TABLE, 1, RAM - 2, 4, VIRTQ_DESC_F_WRITE, 0);
	assert_int_equal(pop(f), -EINVAL);

	desc_at(f, TABLE, 0, BUF, 4, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	desc_at(f, TABLE, 1, BUF, 4, 0, 0);
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(f->q.last_avail, 0);
}

/* A queue that was never enabled (or was reset: all zero) is refused, not
 * dereferenced. */
static void test_pop_disabled_queue(void **state)
{
	struct fx *f = *state;

	memset(&f->q, 0, sizeof(f->q));
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(virtq_push(&f->q, 0, 0), -EINVAL);
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
	virtq_set_avail_event(&f->q);
}

/* A queue the driver turned off again is refused too. */
static void test_pop_after_disable(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 4, 0, 0);
	avail_add(f, 0);
	f->q.ready = 0;
	assert_int_equal(pop(f), -EINVAL);
	assert_int_equal(virtq_push(&f->q, 0, 4), -EINVAL);
	assert_int_equal(used_idx(f), 0);
}

/* ---- used ring ---- */

/* push writes {id, len} in the next slot and bumps used idx, wrapping the
 * slot modulo size and the idx at 2^16. */
static void test_push(void **state)
{
	struct fx *f = ready(state);

	assert_int_equal(virtq_push(&f->q, 5, 42), 0);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(used_id(f, 0), 5);
	assert_int_equal(used_len(f, 0), 42);
	assert_int_equal(virtq_push(&f->q, 15, 0xffffffff), 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(used_id(f, 1), 15);
	assert_int_equal(used_len(f, 1), 0xffffffff);

	f->q.used_idx = 0xffff;
	assert_int_equal(virtq_push(&f->q, 7, 3), 0);
	assert_int_equal(used_idx(f), 0);
	assert_int_equal(used_id(f, QSIZE - 1), 7);
	assert_int_equal(used_len(f, QSIZE - 1), 3);
}

/* A head that is not a descriptor of this queue is not pushed. */
static void test_push_bad_head(void **state)
{
	struct fx *f = ready(state);

	assert_int_equal(virtq_push(&f->q, QSIZE, 1), -EINVAL);
	assert_int_equal(virtq_push(&f->q, 0xffff, 1), -EINVAL);
	assert_int_equal(used_idx(f), 0);
	assert_int_equal(f->q.used_idx, 0);
}

/* Without EVENT_IDX: one interrupt per batch of pushes, none while the
 * driver sets VIRTQ_AVAIL_F_NO_INTERRUPT. */
static void test_need_interrupt_flags(void **state)
{
	struct fx *f = ready(state);

	assert_int_equal(virtq_push(&f->q, 0, 1), 0);
	assert_int_equal(virtq_need_interrupt(&f->q), 1);
	assert_int_equal(virtq_need_interrupt(&f->q), 0); /* nothing new */

	set_avail_flags(f, VIRTQ_AVAIL_F_NO_INTERRUPT);
	assert_int_equal(virtq_push(&f->q, 1, 1), 0);
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
	set_avail_flags(f, 0);
	assert_int_equal(virtq_need_interrupt(&f->q), 1); /* still owed */
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
}

/* With EVENT_IDX: an interrupt only when used idx steps over used_event
 * (vring_need_event), and the NO_INTERRUPT flag is ignored (2.7.7.2). */
static void test_need_interrupt_event_idx(void **state)
{
	struct fx *f = ready(state);

	f->q.event_idx = 1;
	set_avail_flags(f, VIRTQ_AVAIL_F_NO_INTERRUPT);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0);     /* used idx 1 */
	assert_int_equal(virtq_need_interrupt(&f->q), 1); /* first one always */

	set_used_event(f, 3);                         /* "interrupt me when you pass entry 3" */
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 2 */
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 3 */
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 4: crossed */
	assert_int_equal(virtq_need_interrupt(&f->q), 1);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 5: event stale */
	assert_int_equal(virtq_need_interrupt(&f->q), 0);

	/* a batch that jumps over used_event in one go */
	set_used_event(f, 6);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 6 */
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 7 */
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 8 */
	assert_int_equal(virtq_need_interrupt(&f->q), 1);

	/* crossing used_event across the 16-bit wrap */
	f->q.used_idx = 0xfffe;
	f->q.signalled_used = 0xfffe;
	set_used_event(f, 0xffff);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 0xffff */
	assert_int_equal(virtq_need_interrupt(&f->q), 0);
	assert_int_equal(virtq_push(&f->q, 0, 1), 0); /* 0 */
	assert_int_equal(virtq_need_interrupt(&f->q), 1);
}

/* With EVENT_IDX the device publishes avail_event = last_avail; without it
 * that word belongs to nobody and stays untouched. */
static void test_set_avail_event(void **state)
{
	struct fx *f = ready(state);
	uint8_t *avail_event = at(f, USED + 4 + 8 * QSIZE);

	desc(f, 0, BUF, 4, 0, 0);
	avail_add(f, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	put16(avail_event, 0xabcd);
	virtq_set_avail_event(&f->q);
	assert_int_equal(get16(avail_event), 0xabcd);

	f->q.event_idx = 1;
	virtq_set_avail_event(&f->q);
	assert_int_equal(get16(avail_event), 1);
	assert_int_equal(pop(f), 1);
	virtq_set_avail_event(&f->q);
	assert_int_equal(get16(avail_event), 2);
}

/* pop_or_arm: an entry is popped as by pop; an empty ring gets avail_event
 * (EVENT_IDX) and one more look, which finds what is there by then. */
static void test_pop_or_arm(void **state)
{
	struct fx *f = ready(state);
	uint8_t *avail_event = at(f, USED + 4 + 8 * QSIZE);
	struct virtq_chain c;

	desc(f, 0, BUF, 4, 0, 0);
	f->q.event_idx = 1;
	put16(avail_event, 0xabcd);
	assert_int_equal(virtq_pop_or_arm(&f->q, &c), 0);
	assert_int_equal(get16(avail_event), 0);
	avail_add(f, 0);
	assert_int_equal(virtq_pop_or_arm(&f->q, &c), 1);
	assert_int_equal(c.head, 0);
	assert_int_equal(get16(avail_event), 0); /* not empty: nothing armed */
	assert_int_equal(virtq_pop_or_arm(&f->q, &c), 0);
	assert_int_equal(get16(avail_event), 1);
	/* Without EVENT_IDX the word is nobody's. */
	f->q.event_idx = 0;
	put16(avail_event, 0xabcd);
	assert_int_equal(virtq_pop_or_arm(&f->q, &c), 0);
	assert_int_equal(get16(avail_event), 0xabcd);
}

/* ---- chain copies ---- */

/* chain_read gathers across readable buffers from any offset and stops
 * where the chain ends. */
static void test_chain_read(void **state)
{
	struct fx *f = ready(state);
	uint8_t want[15], got[32];

	fill(f, BUF, 3, 10);
	fill(f, BUF + 0x100, 5, 20);
	fill(f, BUF + 0x200, 7, 30);
	memcpy(want, at(f, BUF), 3);
	memcpy(want + 3, at(f, BUF + 0x100), 5);
	memcpy(want + 8, at(f, BUF + 0x200), 7);
	desc(f, 0, BUF, 3, VIRTQ_DESC_F_NEXT, 1);
	desc(f, 1, BUF + 0x100, 5, VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, BUF + 0x200, 7, VIRTQ_DESC_F_NEXT, 3);
	desc(f, 3, BUF + 0x300, 64, VIRTQ_DESC_F_WRITE, 0); /* never read */
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);

	memset(got, 0xee, sizeof(got));
	assert_int_equal(virtq_chain_read(&f->c, 0, got, 15), 15);
	assert_memory_equal(got, want, 15);

	memset(got, 0xee, sizeof(got));
	assert_int_equal(virtq_chain_read(&f->c, 2, got, 8), 8); /* spans all three */
	assert_memory_equal(got, want + 2, 8);
	assert_int_equal(got[8], 0xee);

	memset(got, 0xee, sizeof(got));
	assert_int_equal(virtq_chain_read(&f->c, 12, got, sizeof(got)), 3); /* short */
	assert_memory_equal(got, want + 12, 3);
	assert_int_equal(got[3], 0xee);

	assert_int_equal(virtq_chain_read(&f->c, 15, got, 4), 0);
	assert_int_equal(virtq_chain_read(&f->c, 1000, got, 4), 0);
	assert_int_equal(virtq_chain_read(&f->c, 0, got, 0), 0);
}

/* chain_write scatters into writable buffers from any offset, never past
 * the last one, and never into the readable ones. */
static void test_chain_write(void **state)
{
	struct fx *f = ready(state);
	uint8_t src[32], zero[16] = { 0 };

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(0x80 + i);
	desc(f, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1); /* readable */
	desc(f, 1, BUF + 0x100, 4, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
	desc(f, 2, BUF + 0x200, 6, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);

	assert_int_equal(virtq_chain_write(&f->c, 2, src, 5), 5);
	assert_int_equal(at(f, BUF + 0x100)[1], 0);
	assert_memory_equal(at(f, BUF + 0x100) + 2, src, 2);
	assert_memory_equal(at(f, BUF + 0x200), src + 2, 3);
	assert_int_equal(at(f, BUF + 0x200)[3], 0);

	assert_int_equal(virtq_chain_write(&f->c, 6, src, sizeof(src)), 4); /* short */
	assert_memory_equal(at(f, BUF + 0x200) + 2, src, 4);
	assert_int_equal(at(f, BUF + 0x200)[6], 0); /* nothing past the buffer */
	assert_int_equal(virtq_chain_write(&f->c, 10, src, 4), 0);
	assert_memory_equal(at(f, BUF), zero, 8); /* readable buffer untouched */
}

/* Chains given back with virtq_unpop come out of the next pops again, in order. */
static void test_unpop(void **state)
{
	struct fx *f = ready(state);

	desc(f, 0, BUF, 64, VIRTQ_DESC_F_WRITE, 0);
	desc(f, 1, BUF + 64, 64, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 0);
	avail_add(f, 1);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 1);
	assert_int_equal(pop(f), 0);
	virtq_unpop(&f->q, 2);
	assert_int_equal(f->q.last_avail, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 0);
	assert_int_equal(pop(f), 1);
	assert_int_equal(f->c.head, 1);
	assert_int_equal(pop(f), 0);
	/* Across the 16-bit wrap of the index too. */
	f->q.last_avail = 0;
	virtq_unpop(&f->q, 1);
	assert_int_equal(f->q.last_avail, 0xffff);
}

/* The marks guest_mem holds, taken (which clears them). */
static uint64_t *take_marks(struct fx *f)
{
	uint64_t *bits = calloc(RAM / 4096 / 64, sizeof(*bits));

	assert_non_null(bits);
	guest_mem_take_marks(&f->gm, bits);
	return bits;
}

static int is_marked(const uint64_t *bits, uint64_t gpa)
{
	return (int)((bits[gpa / 4096 / 64] >> (gpa / 4096 % 64)) & 1);
}

/*
 * Dirty tracking: a popped chain's writable buffers and the used ring a
 * push writes are marked (an incremental snapshot stores them); readable
 * buffers, the descriptor table and the avail ring are not. A held chain
 * is marked again by virtq_chain_mark.
 */
static void test_marks_writable_buffers_and_used_ring(void **state)
{
	struct fx *f = ready(state);
	uint64_t *bits;

	assert_int_equal(guest_mem_track(&f->gm), 0);
	desc(f, 0, BUF, 100, VIRTQ_DESC_F_NEXT, 1);               /* readable */
	desc(f, 1, BUF + 0x10000 - 8, 16, VIRTQ_DESC_F_WRITE, 0); /* writable, two pages */
	avail_add(f, 0);
	assert_int_equal(pop(f), 1);
	bits = take_marks(f);
	assert_false(is_marked(bits, BUF));
	assert_true(is_marked(bits, BUF + 0x10000 - 8));
	assert_true(is_marked(bits, BUF + 0x10000));
	assert_false(is_marked(bits, DESC));
	assert_false(is_marked(bits, AVAIL));
	assert_false(is_marked(bits, USED));
	free(bits);

	virtq_chain_mark(&f->q, &f->c);
	bits = take_marks(f);
	assert_true(is_marked(bits, BUF + 0x10000));
	assert_false(is_marked(bits, BUF));
	free(bits);

	assert_int_equal(virtq_push(&f->q, 0, 16), 0);
	bits = take_marks(f);
	assert_true(is_marked(bits, USED));
	assert_false(is_marked(bits, BUF + 0x10000));
	free(bits);
	guest_mem_untrack(&f->gm);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_enable_valid),
		T(test_marks_writable_buffers_and_used_ring),
		T(test_unpop),
		T(test_enable_bad_size),
		T(test_enable_misaligned),
		T(test_enable_outside_ram),
		T(test_pop_empty),
		T(test_pop_three_desc_chain),
		T(test_pop_in_order_and_ring_wrap),
		T(test_pop_zero_length_skipped),
		T(test_pop_buffer_at_end_of_ram),
		T(test_pop_full_ring),
		T(test_pop_loop),
		T(test_pop_chain_uses_whole_table),
		T(test_pop_next_out_of_range),
		T(test_pop_buffer_outside_ram),
		T(test_pop_read_after_write),
		T(test_pop_avail_idx_jump),
		T(test_pop_bad_head),
		T(test_pop_chain_too_long),
		T(test_pop_indirect_valid),
		T(test_pop_indirect_max_table),
		T(test_pop_indirect_nested),
		T(test_pop_indirect_with_next),
		T(test_pop_indirect_bad_len),
		T(test_pop_indirect_outside_ram),
		T(test_pop_indirect_bad_entries),
		T(test_pop_disabled_queue),
		T(test_pop_after_disable),
		T(test_push),
		T(test_push_bad_head),
		T(test_need_interrupt_flags),
		T(test_need_interrupt_event_idx),
		T(test_set_avail_event),
		T(test_pop_or_arm),
		T(test_chain_read),
		T(test_chain_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

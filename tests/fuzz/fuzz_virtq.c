/*
 * fuzz_virtq: the split virtqueue (devices/virtio/virtq.c) over a fake
 * guest RAM (lib/guest/guest_mem.c) whose every byte the input chooses:
 * descriptor tables, indirect tables, avail and used rings, and a script
 * of device operations (pop, push, interrupt checks, chain copies) with
 * the "guest" rewriting ring words between them.
 *
 * Input: 12-byte header (queue size, ring addresses, EVENT_IDX), a count
 * and that many 4-byte operations, then guest RAM's contents.
 * Invariants: every buffer virtq_pop hands out lies inside guest RAM and
 * is non-empty, the chain's counts and totals add up, a refused or empty
 * pop consumes nothing, a chain copy moves exactly the chain's bytes, and
 * the used index the guest sees is the device's.
 */
#include <errno.h>

#include "devices/virtio/virtq.h"
#include "fuzz.h"

#define RAM_LOW (32u << 10)
#define RAM_HIGH (8u << 10)

static uint64_t ring_gpa(uint16_t v)
{
	/* Bit 15 puts the ring in the high region (at 4 GiB), the rest is an
	 * offset: rings anywhere, including straddling the end of a region. */
	return (v & 0x8000) ? GUEST_MEM_HIGH_START + (v & 0x7fff) : (uint64_t)(v & 0x7fff);
}

static void check_chain(const struct guest_mem *gm, const struct virtq *q,
			const struct virtq_chain *c)
{
	uint64_t out = 0, in = 0;
	static uint8_t scratch[2 * VIRTQ_MAX_CHAIN * 64];

	FUZZ_ASSERT(c->head < q->size);
	FUZZ_ASSERT(c->nout >= 0 && c->nout <= VIRTQ_MAX_CHAIN);
	FUZZ_ASSERT(c->nin >= 0 && c->nin <= VIRTQ_MAX_CHAIN);
	for (int i = 0; i < c->nout; i++) {
		FUZZ_ASSERT(c->out[i].len > 0 && fuzz_in_ram(gm, c->out[i].host, c->out[i].len));
		out += c->out[i].len;
	}
	for (int i = 0; i < c->nin; i++) {
		FUZZ_ASSERT(c->in[i].len > 0 && fuzz_in_ram(gm, c->in[i].host, c->in[i].len));
		in += c->in[i].len;
	}
	FUZZ_ASSERT(out == c->out_len && in == c->in_len);
	/* A copy past the end stops at the chain's end, never beyond. */
	if (out < sizeof(scratch))
		FUZZ_ASSERT(virtq_chain_read(c, 0, scratch, sizeof(scratch)) == out);
	if (in < sizeof(scratch))
		FUZZ_ASSERT(virtq_chain_write(c, 0, scratch, sizeof(scratch)) == in);
	FUZZ_ASSERT(virtq_chain_read(c, (size_t)out, scratch, 16) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct guest_mem gm;
	struct virtq q = { 0 };
	static struct virtq_chain c;
	uint8_t qs = take8(&in);
	size_t nops, got;
	const uint8_t *ops, *ram;
	int have_chain = 0;

	/* Mostly legal sizes (powers of two up to 1024); bit 7: any size. */
	q.size = (qs & 0x80) ? (uint16_t)(take16(&in)) : (uint16_t)(1u << (qs % 11));
	if (!(qs & 0x80))
		take16(&in);
	q.desc_gpa = ring_gpa(take16(&in));
	q.avail_gpa = ring_gpa(take16(&in));
	q.used_gpa = ring_gpa(take16(&in));
	q.event_idx = take8(&in) & 1;
	nops = take8(&in) % 64;
	ops = take_bytes(&in, nops * 4, &got);
	nops = got / 4;
	ram = take_bytes(&in, RAM_LOW + RAM_HIGH, &got);

	if (fuzz_ram_init(&gm, RAM_LOW, RAM_HIGH))
		return 0;
	memcpy(gm.host, ram, got);
	if (virtq_enable(&q, &gm) != 0) {
		FUZZ_ASSERT(!q.ready);
		goto out;
	}
	FUZZ_ASSERT(q.size && q.size <= VIRTQ_MAX_SIZE && !(q.size & (q.size - 1)));
	FUZZ_ASSERT(guest_mem_ptr(&gm, q.avail_gpa, virtq_avail_bytes(q.size)));

	for (size_t i = 0; i < nops; i++) {
		const uint8_t *op = ops + 4 * i;
		uint16_t arg = (uint16_t)(op[1] | op[2] << 8), before = q.last_avail,
			 used_before = q.used_idx;
		int r;

		switch (op[0] % 6) {
		case 0: /* the device drains the queue */
		case 1:
			r = (op[0] % 6) ? virtq_pop_or_arm(&q, &c) : virtq_pop(&q, &c);
			FUZZ_ASSERT(r == 1 || r == 0 || r == -EINVAL);
			if (r == 1) {
				FUZZ_ASSERT(q.last_avail == (uint16_t)(before + 1));
				check_chain(&gm, &q, &c);
				have_chain = 1;
			} else {
				FUZZ_ASSERT(q.last_avail == before);
			}
			break;
		case 2: /* ... and completes a chain, ours or a made-up head */
			r = virtq_push(&q, have_chain && !(op[3] & 1) ? c.head : arg, op[3]);
			if (r == 0) {
				uint16_t seen;

				FUZZ_ASSERT(q.used_idx == (uint16_t)(used_before + 1));
				FUZZ_ASSERT(guest_mem_read(&gm, q.used_gpa + 2, &seen, 2) == 0 &&
					    seen == q.used_idx);
			} else {
				FUZZ_ASSERT(r == -EINVAL && q.used_idx == used_before);
			}
			break;
		case 3:
			r = virtq_need_interrupt(&q);
			FUZZ_ASSERT(r == 0 || r == 1);
			if (r)
				FUZZ_ASSERT(q.signalled_valid && q.signalled_used == q.used_idx);
			break;
		case 4:
			virtq_set_avail_event(&q);
			break;
		case 5: { /* the guest writes a ring word (avail idx, a ring entry, ...) */
			uint64_t gpa = (op[3] & 1) ? q.avail_gpa : q.desc_gpa;
			uint16_t v = (uint16_t)(op[3] << 8 | op[1]);

			guest_mem_write(&gm, gpa + (arg >> 8) * 2ULL, &v, 2);
			break;
		}
		}
		FUZZ_ASSERT(q.ready);
	}
out:
	fuzz_ram_free(&gm);
	return 0;
}

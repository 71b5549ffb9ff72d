/*
 * virtq: the split virtqueue (virtio 1.2, section 2.7), device side.
 *
 * Contract: every descriptor, ring index and buffer address comes from the
 * guest and is checked here before anyone uses it. virtq_pop() walks one
 * descriptor chain (direct or through one indirect table) and returns
 * host pointers to its buffers, each range validated with guest_mem_ptr(); a chain
 * that is longer than the queue, loops, nests indirect tables, points
 * outside guest RAM, or puts a device-readable buffer after a
 * device-writable one is refused with -EINVAL, and the caller marks the
 * device DEVICE_NEEDS_RESET. Pure: no KVM, no threads, no syscalls.
 */
#ifndef KILN_VIRTQ_H
#define KILN_VIRTQ_H

#include <stddef.h>
#include <stdint.h>

#include "lib/guest/guest_mem.h"

#define VIRTQ_MAX_SIZE 1024 /* largest queue a device offers */
#define VIRTQ_MAX_CHAIN 256 /* readable (and, separately, writable) buffers per chain */

/* Descriptor flags and ring flags (virtio 1.2, 2.7.5, 2.7.6, 2.7.8). */
#define VIRTQ_DESC_F_NEXT 1
#define VIRTQ_DESC_F_WRITE 2
#define VIRTQ_DESC_F_INDIRECT 4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1

struct virtq {
	const struct guest_mem *mem;
	uint16_t size; /* negotiated queue size (power of two) */
	int ready;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t last_avail;     /* next available ring entry to consume */
	uint16_t used_idx;       /* our copy of used->idx */
	int event_idx;           /* VIRTIO_F_EVENT_IDX negotiated */
	uint16_t signalled_used; /* used_idx when we last interrupted */
	int signalled_valid;
};

struct virtq_buf {
	uint8_t *host; /* validated host pointer to the whole buffer */
	uint32_t len;
};

struct virtq_chain {
	uint16_t head; /* id to hand back to virtq_push() */
	int nout, nin; /* device-readable buffers, then device-writable */
	/* Before the lists: a pop writes them, and a chain of few buffers
	 * then touches two pages of its 8 KiB, not three. */
	uint64_t out_len, in_len; /* total bytes of each kind */
	struct virtq_buf out[VIRTQ_MAX_CHAIN];
	struct virtq_buf in[VIRTQ_MAX_CHAIN];
};

/*
 * Dirty tracking (guest_mem_mark): virtq_pop marks a chain's writable
 * buffers and virtq_push / virtq_set_avail_event the used ring, so a
 * device that writes a chain within one handler call needs nothing more.
 * A device that holds a popped chain across calls and fills it later
 * calls virtq_chain_mark before it pushes it.
 */
void virtq_chain_mark(const struct virtq *q, const struct virtq_chain *c);
/* The same over `n` writable buffers kept apart from their chain. */
void virtq_bufs_mark(const struct virtq *q, const struct virtq_buf *in, int n);

/*
 * Give back the `n` chains popped last and not pushed: the next pops
 * return them again (their avail ring entries are still the guest's, and
 * the guest changes none until they are used). For a device that holds
 * chains across a snapshot.
 */
void virtq_unpop(struct virtq *q, uint16_t n);

/* Bytes the rings of a queue of `size` occupy (for validation). */
uint64_t virtq_desc_bytes(uint16_t size);
uint64_t virtq_avail_bytes(uint16_t size);
uint64_t virtq_used_bytes(uint16_t size);

/*
 * Make the queue usable: checks that size is a power of two <= max and that
 * all three rings lie in guest RAM. 0 or -EINVAL.
 */
int virtq_enable(struct virtq *q, const struct guest_mem *mem);

/*
 * Take the next available chain. Returns 1 with `c` filled, 0 when the
 * guest made nothing new available, -EINVAL on a malformed chain or ring
 * (the avail index moved more than `size` ahead, a bad head, ...).
 */
int virtq_pop(struct virtq *q, struct virtq_chain *c);

/* Put chain `head` on the used ring with `written` bytes. 0 or -EINVAL. */
int virtq_push(struct virtq *q, uint16_t head, uint32_t written);

/*
 * Whether the guest wants an interrupt for what was pushed since the last
 * one (VIRTQ_AVAIL_F_NO_INTERRUPT, or used_event with EVENT_IDX). Updates
 * the "last signalled" mark when it returns 1.
 */
int virtq_need_interrupt(struct virtq *q);

/* With EVENT_IDX, tell the guest to kick again once it adds anything. */
void virtq_set_avail_event(struct virtq *q);

/*
 * virtq_pop, and when the ring is empty: ask for a kick at the next entry
 * (virtq_set_avail_event) and look once more. Without the second look an
 * entry the guest added after ours, before it could see the new
 * avail_event, would get no kick and wait for ever. What every device
 * calls when it drains a queue.
 */
int virtq_pop_or_arm(struct virtq *q, struct virtq_chain *c);

/* Copy from the chain's readable buffers starting at byte `off`; returns
 * the bytes copied (fewer when the chain is shorter). */
size_t virtq_chain_read(const struct virtq_chain *c, size_t off, void *dst, size_t len);
/* Copy into the chain's writable buffers at byte `off`; returns bytes copied. */
size_t virtq_chain_write(const struct virtq_chain *c, size_t off, const void *src, size_t len);
/* The same into `n` writable buffers kept apart from their chain. */
size_t virtq_bufs_write(const struct virtq_buf *in, int n, size_t off, const void *src, size_t len);

#endif

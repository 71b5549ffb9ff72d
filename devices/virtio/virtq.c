#include "devices/virtio/virtq.h"

#include <errno.h>
#include <string.h>

/* Ring layouts (virtio 1.2, 2.7): descriptor = 16 bytes; avail = flags, idx,
 * ring[size], used_event; used = flags, idx, {id, len}[size], avail_event. */
#define DESC_SIZE 16
#define AVAIL_RING 4
#define USED_RING 4
#define USED_ELEM 8

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

uint64_t virtq_desc_bytes(uint16_t size)
{
	return (uint64_t)size * DESC_SIZE;
}

uint64_t virtq_avail_bytes(uint16_t size)
{
	return AVAIL_RING + 2ULL * size + 2;
}

uint64_t virtq_used_bytes(uint16_t size)
{
	return USED_RING + (uint64_t)USED_ELEM * size + 2;
}

/* The guest writes the rings concurrently: every load of a shared index is
 * atomic, and ordering follows the spec's barriers (2.7.13, 2.7.14). */
static uint16_t ld16(const uint8_t *p)
{
	return __atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE);
}

static void st16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, v, __ATOMIC_RELEASE);
}

int virtq_enable(struct virtq *q, const struct guest_mem *mem)
{
	if (q->size == 0 || q->size > VIRTQ_MAX_SIZE || (q->size & (q->size - 1)))
		return -EINVAL;
	/* Alignment requirements of 2.7: desc 16, avail 2, used 4. */
	if (q->desc_gpa % 16 || q->avail_gpa % 2 || q->used_gpa % 4)
		return -EINVAL;
	if (!guest_mem_ptr(mem, q->desc_gpa, virtq_desc_bytes(q->size)) ||
	    !guest_mem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size)) ||
	    !guest_mem_ptr(mem, q->used_gpa, virtq_used_bytes(q->size)))
		return -EINVAL;
	q->mem = mem;
	q->last_avail = 0;
	q->used_idx = 0;
	q->signalled_valid = 0;
	q->ready = 1;
	return 0;
}

static int add_buf(struct virtq_chain *c, const struct guest_mem *mem, const struct desc *d,
		   int *seen_write)
{
	struct virtq_buf b;

	if (d->len == 0)
		return 0; /* nothing to read or write; legal, skip it */
	b.host = guest_mem_ptr(mem, d->addr, d->len);
	if (!b.host)
		return -EINVAL; /* buffer outside guest RAM */
	b.len = d->len;
	if (d->flags & VIRTQ_DESC_F_WRITE) {
		if (c->nin == VIRTQ_MAX_CHAIN)
			return -EINVAL;
		guest_mem_mark(mem, b.host, b.len);
		c->in[c->nin++] = b;
		c->in_len += b.len;
		*seen_write = 1;
	} else {
		/* 2.7.4.2: readable buffers come before writable ones. */
		if (*seen_write || c->nout == VIRTQ_MAX_CHAIN)
			return -EINVAL;
		c->out[c->nout++] = b;
		c->out_len += b.len;
	}
	return 0;
}

int virtq_pop(struct virtq *q, struct virtq_chain *c)
{
	const uint8_t *avail, *table;
	uint16_t avail_idx, idx;
	uint32_t tsize = q->size, count = 0;
	int indirect = 0, seen_write = 0;

	if (!q->ready || !q->mem)
		return -EINVAL;
	avail = guest_mem_ptr(q->mem, q->avail_gpa, virtq_avail_bytes(q->size));
	table = guest_mem_ptr(q->mem, q->desc_gpa, virtq_desc_bytes(q->size));
	if (!avail || !table)
		return -EINVAL;
	avail_idx = ld16(avail + 2);
	if (avail_idx == q->last_avail)
		return 0;
	/* More than a queue's worth of new entries: the index is garbage. */
	if ((uint16_t)(avail_idx - q->last_avail) > q->size)
		return -EINVAL;
	idx = ld16(avail + AVAIL_RING + 2 * (q->last_avail % q->size));
	if (idx >= q->size)
		return -EINVAL;
	c->head = idx;
	c->nout = c->nin = 0;
	c->out_len = c->in_len = 0;

	for (;;) {
		struct desc d;

		/* A chain longer than its table must revisit a descriptor: a loop. */
		if (++count > tsize)
			return -EINVAL;
		memcpy(&d, table + (size_t)idx * DESC_SIZE, sizeof(d));
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			/* 2.7.5.3.1: no nested tables, no INDIRECT together with NEXT. */
			if (indirect || (d.flags & VIRTQ_DESC_F_NEXT) || d.len == 0 ||
			    d.len % DESC_SIZE || d.len / DESC_SIZE > VIRTQ_MAX_CHAIN)
				return -EINVAL;
			table = guest_mem_ptr(q->mem, d.addr, d.len);
			if (!table)
				return -EINVAL;
			tsize = d.len / DESC_SIZE;
			indirect = 1;
			idx = 0;
			count = 0;
			continue;
		}
		if (add_buf(c, q->mem, &d, &seen_write))
			return -EINVAL;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			break;
		idx = d.next;
		if (idx >= tsize)
			return -EINVAL;
	}
	q->last_avail++;
	return 1;
}

int virtq_push(struct virtq *q, uint16_t head, uint32_t written)
{
	uint8_t *used, *elem;
	uint32_t id = head;

	if (!q->ready || !q->mem || head >= q->size)
		return -EINVAL;
	used = guest_mem_ptr(q->mem, q->used_gpa, virtq_used_bytes(q->size));
	if (!used)
		return -EINVAL;
	elem = used + USED_RING + (size_t)USED_ELEM * (q->used_idx % q->size);
	memcpy(elem, &id, 4);
	memcpy(elem + 4, &written, 4);
	guest_mem_mark(q->mem, used, virtq_used_bytes(q->size));
	q->used_idx++;
	st16(used + 2, q->used_idx); /* release: the element is visible first */
	return 0;
}

int virtq_need_interrupt(struct virtq *q)
{
	const uint8_t *avail;
	uint16_t old = q->signalled_used, now = q->used_idx;
	int need;

	if (!q->ready || !q->mem)
		return 0;
	avail = guest_mem_ptr(q->mem, q->avail_gpa, virtq_avail_bytes(q->size));
	if (!avail)
		return 0;
	/* Our used->idx store must be visible before we read the guest's wish. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (q->event_idx) {
		uint16_t event = ld16(avail + AVAIL_RING + 2 * q->size);

		/* vring_need_event(): did `now` step over used_event since `old`? */
		need = !q->signalled_valid || (uint16_t)(now - event - 1) < (uint16_t)(now - old);
	} else {
		need = !(ld16(avail) & VIRTQ_AVAIL_F_NO_INTERRUPT) &&
			(!q->signalled_valid || now != old);
	}
	if (need) {
		q->signalled_used = now;
		q->signalled_valid = 1;
	}
	return need;
}

void virtq_set_avail_event(struct virtq *q)
{
	uint8_t *used;

	if (!q->ready || !q->mem || !q->event_idx)
		return;
	used = guest_mem_ptr(q->mem, q->used_gpa, virtq_used_bytes(q->size));
	if (used) {
		st16(used + USED_RING + (size_t)USED_ELEM * q->size, q->last_avail);
		guest_mem_mark(q->mem, used, virtq_used_bytes(q->size));
	}
}

void virtq_unpop(struct virtq *q, uint16_t n)
{
	q->last_avail = (uint16_t)(q->last_avail - n);
}

void virtq_bufs_mark(const struct virtq *q, const struct virtq_buf *in, int n)
{
	if (!q->mem)
		return;
	for (int i = 0; i < n; i++)
		guest_mem_mark(q->mem, in[i].host, in[i].len);
}

void virtq_chain_mark(const struct virtq *q, const struct virtq_chain *c)
{
	virtq_bufs_mark(q, c->in, c->nin);
}

int virtq_pop_or_arm(struct virtq *q, struct virtq_chain *c)
{
	int r = virtq_pop(q, c);

	if (r != 0 || !q->event_idx)
		return r;
	virtq_set_avail_event(q);
	/* Our avail_event store must be visible before we read avail->idx again. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return virtq_pop(q, c);
}

static size_t copy_bufs(const struct virtq_buf *b, int n, size_t off, uint8_t *mem, size_t len,
			int to_chain)
{
	size_t done = 0;

	for (int i = 0; i < n && done < len; i++) {
		size_t take;

		if (off >= b[i].len) {
			off -= b[i].len;
			continue;
		}
		take = b[i].len - off;
		if (take > len - done)
			take = len - done;
		if (to_chain)
			memcpy(b[i].host + off, mem + done, take);
		else
			memcpy(mem + done, b[i].host + off, take);
		done += take;
		off = 0;
	}
	return done;
}

size_t virtq_chain_read(const struct virtq_chain *c, size_t off, void *dst, size_t len)
{
	return copy_bufs(c->out, c->nout, off, dst, len, 0);
}

size_t virtq_bufs_write(const struct virtq_buf *in, int n, size_t off, const void *src, size_t len)
{
	return copy_bufs(in, n, off, (uint8_t *)src, len, 1);
}

size_t virtq_chain_write(const struct virtq_chain *c, size_t off, const void *src, size_t len)
{
	return virtq_bufs_write(c->in, c->nin, off, src, len);
}

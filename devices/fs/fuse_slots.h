/*
 * fuse_slots: a table of numbered slots, the one logic behind the FUSE
 * server's node table and its handle table. A slot holds a descriptor;
 * the guest names it by an id, (generation << 32) | (index + first_id),
 * and a slot's generation grows each time it is freed, so an id a guest
 * kept after FORGET or RELEASE never names the slot's next occupant.
 *
 * Contract:
 *  - Every entry starts with a struct fuse_slot; the table knows the
 *    entry's size and nothing else of it.
 *  - The capacity is a power of two from FUSE_SLOTS_MIN, doubled when no
 *    slot is free, never beyond max (-ENFILE: a guest cannot make the
 *    VMM allocate without bound). Free slots are taken lowest first.
 *  - Pure but for the close(2) of the descriptors it frees.
 */
#ifndef KILN_FUSE_SLOTS_H
#define KILN_FUSE_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/* What a slot's fd holds besides a descriptor: nothing (free), or a
 * descriptor a restore could not find again (stale: the guest's id stays
 * valid until it forgets or releases it, every other use gets -ESTALE). */
#define FUSE_SLOT_FREE (-1)
#define FUSE_SLOT_STALE (-2)
#define FUSE_SLOTS_MIN 64u

struct fuse_slot {
	int fd;       /* a descriptor, FUSE_SLOT_FREE or FUSE_SLOT_STALE */
	uint32_t gen; /* ids of an older generation are stale */
	int32_t next; /* the free list while free; the owner's to use while not */
};

struct fuse_slots {
	void *base;        /* cap entries of size bytes */
	size_t size;       /* of one entry, a struct fuse_slot first */
	uint32_t cap;      /* 0 until the first grow */
	uint32_t max;      /* a power of two */
	uint32_t first_id; /* the index 0's id (low half) */
	int32_t free;      /* the free list's first slot, -1: none */
};

/* An empty table of entries of size bytes, ids from first_id. */
void fuse_slots_init(struct fuse_slots *t, size_t size, uint32_t max, uint32_t first_id);
/* Free the entries (their descriptors are the owner's to close first). */
void fuse_slots_fini(struct fuse_slots *t);

/* Entry i (< t->cap). */
static inline void *fuse_slots_at(const struct fuse_slots *t, uint32_t i)
{
	return (char *)t->base + (size_t)i * t->size;
}

/* Double the capacity; the new slots are free. 0, -ENFILE or -ENOMEM. */
int fuse_slots_grow(struct fuse_slots *t);
/* A free slot for fd (growing the table when none is): its index, or
 * -errno with fd closed. */
int32_t fuse_slots_take(struct fuse_slots *t, int fd);
/* Slot i's id. */
uint64_t fuse_slots_id(const struct fuse_slots *t, uint32_t i);
/* The entry id names, open or stale, or NULL (made up, out of range, or
 * an older generation's). */
void *fuse_slots_get(const struct fuse_slots *t, uint64_t id);
/* Free slot i: its descriptor closed, its generation past every id given. */
void fuse_slots_release(struct fuse_slots *t, uint32_t i);
/* Thread every free slot onto the free list again, lowest first (after a
 * restore wrote the slots). */
void fuse_slots_relink(struct fuse_slots *t);
/* How many slots are stale. */
unsigned fuse_slots_stale(const struct fuse_slots *t);

#endif

/* A table of numbered slots (fuse_slots.h). */
#include "devices/fs/fuse_slots.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static struct fuse_slot *slot(const struct fuse_slots *t, uint32_t i)
{
	return fuse_slots_at(t, i);
}

void fuse_slots_init(struct fuse_slots *t, size_t size, uint32_t max, uint32_t first_id)
{
	*t = (struct fuse_slots){ .size = size, .max = max, .first_id = first_id, .free = -1 };
}

void fuse_slots_fini(struct fuse_slots *t)
{
	free(t->base);
	t->base = NULL;
	t->cap = 0;
	t->free = -1;
}

int fuse_slots_grow(struct fuse_slots *t)
{
	uint32_t old = t->cap, n = old ? old * 2 : FUSE_SLOTS_MIN;
	void *b;

	if (n > t->max)
		return -ENFILE;
	b = realloc(t->base, (size_t)n * t->size);
	if (!b)
		return -ENOMEM;
	t->base = b;
	t->cap = n;
	/* Threaded from the top, so the lowest new slot is taken first. */
	for (uint32_t i = n; i-- > old;) {
		slot(t, i)->fd = FUSE_SLOT_FREE;
		slot(t, i)->gen = 0;
		slot(t, i)->next = t->free;
		t->free = (int32_t)i;
	}
	return 0;
}

int32_t fuse_slots_take(struct fuse_slots *t, int fd)
{
	struct fuse_slot *s;
	int32_t i;
	int err;

	if (t->free < 0 && (err = fuse_slots_grow(t)) < 0) {
		close(fd);
		return err;
	}
	i = t->free;
	s = slot(t, (uint32_t)i);
	t->free = s->next;
	s->fd = fd;
	return i;
}

uint64_t fuse_slots_id(const struct fuse_slots *t, uint32_t i)
{
	return ((uint64_t)slot(t, i)->gen << 32) | (uint64_t)(i + t->first_id);
}

void *fuse_slots_get(const struct fuse_slots *t, uint64_t id)
{
	uint32_t low = (uint32_t)id;
	struct fuse_slot *s;

	if (low < t->first_id || low - t->first_id >= t->cap)
		return NULL;
	s = slot(t, low - t->first_id);
	if (s->fd == FUSE_SLOT_FREE || s->gen != (uint32_t)(id >> 32))
		return NULL;
	return s;
}

void fuse_slots_release(struct fuse_slots *t, uint32_t i)
{
	struct fuse_slot *s = slot(t, i);

	if (s->fd >= 0)
		close(s->fd);
	s->fd = FUSE_SLOT_FREE;
	s->gen++; /* ids naming the old occupant are now stale */
	s->next = t->free;
	t->free = (int32_t)i;
}

void fuse_slots_relink(struct fuse_slots *t)
{
	t->free = -1;
	for (uint32_t i = t->cap; i-- > 0;) {
		if (slot(t, i)->fd == FUSE_SLOT_FREE) {
			slot(t, i)->next = t->free;
			t->free = (int32_t)i;
		}
	}
}

unsigned fuse_slots_stale(const struct fuse_slots *t)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < t->cap; i++)
		n += slot(t, i)->fd == FUSE_SLOT_STALE;
	return n;
}

/* Attributes by inode number; see import_attrs.h. */
#include "api/image-import/import_attrs.h"

#include <errno.h>
#include <stdlib.h>

static size_t home(uint64_t ino, size_t cap)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct import_attrs_slot *find(const struct import_attrs *m, uint64_t ino)
{
	size_t i = home(ino, m->cap);

	/* linear probing; never full (grown at half) */
	while (m->slot[i].ino && m->slot[i].ino != ino)
		i = (i + 1) & (m->cap - 1);
	return &m->slot[i];
}

static int grow(struct import_attrs *m)
{
	struct import_attrs old = *m;
	size_t cap = old.cap ? old.cap * 2 : 1024;

	m->slot = calloc(cap, sizeof(*m->slot));
	if (!m->slot) {
		*m = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i].ino)
			*find(m, old.slot[i].ino) = old.slot[i];
	free(old.slot);
	return 0;
}

int import_attrs_put(struct import_attrs *m, const struct import_attrs_slot *s)
{
	struct import_attrs_slot *at;

	if (!s->ino)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	at = find(m, s->ino);
	if (!at->ino)
		m->n++;
	*at = *s;
	return 0;
}

const struct import_attrs_slot *import_attrs_get(const struct import_attrs *m, uint64_t ino)
{
	const struct import_attrs_slot *s;

	if (!m->cap || !ino)
		return NULL;
	s = find(m, ino);
	return s->ino ? s : NULL;
}

void import_attrs_free(struct import_attrs *m)
{
	free(m->slot);
	m->slot = NULL;
	m->cap = m->n = 0;
}

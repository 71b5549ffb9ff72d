/*
 * import_attrs: what an image entry should be that its staging file
 * cannot be (the importer is not root): owner, mode with the set-uid,
 * set-gid and sticky bits, a directory's mtime, a device's numbers; kept
 * by the staging file's inode number, so every hard link of a file has
 * its attributes whatever happens to the path it was first made at
 * (import_own.h writes them out for debugfs at the end).
 *
 * Contract: pure (malloc only). An inode number taken again (the old
 * entry was replaced) gets the new attributes. At most 2 slots per entry
 * (32 bytes each): bounded by the tree's entry cap.
 */
#ifndef KILN_IMPORT_ATTRS_H
#define KILN_IMPORT_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMPORT_NO_MTIME INT64_MIN /* an attribute's mtime when the archive gave none */

struct import_attrs_slot {
	uint64_t ino; /* 0: empty */
	int64_t mtime;
	uint32_t uid, gid, mode; /* mode with the type bits */
	uint32_t rdev;           /* a device's major << 20 | minor */
};

struct import_attrs {
	struct import_attrs_slot *slot;
	size_t cap, n; /* cap: a power of two, or 0 */
};

/* Keep s under s->ino (not 0); -ENOMEM when the table cannot grow. */
int import_attrs_put(struct import_attrs *m, const struct import_attrs_slot *s);
/* The attributes kept for ino, or NULL. */
const struct import_attrs_slot *import_attrs_get(const struct import_attrs *m, uint64_t ino);
void import_attrs_free(struct import_attrs *m);

#endif

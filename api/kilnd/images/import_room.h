/*
 * import_room: whether an image import of a declared size can fit where
 * it is written, decided before a byte of the body is read (docs/api.md,
 * "POST /v1/images"). An import holds, at its peak, the archive, the tree
 * its layers unpack to and the ext4 image made from that tree: each about
 * the archive's size for uncompressed layers, more for compressed ones.
 * So this refuses only what surely cannot fit: less free space than
 * IMPORT_ROOM_FACTOR times the archive plus IMPORT_ROOM_SLACK. A template
 * build's context is checked the same way (the archive, and the re-pack
 * of a COPY). Pure.
 */
#ifndef KILN_IMPORT_ROOM_H
#define KILN_IMPORT_ROOM_H

#include <stdint.h>

#include "api/kilnd/core/api_error.h"

#define IMPORT_ROOM_FACTOR 3u
#define IMPORT_ROOM_SLACK (64ull << 20)

/* 0, or -1 with e (no_space, 507) naming what ("image import"), dir,
 * both sizes and what the room holds. */
int import_room_check(const char *what, const char *holds, uint64_t archive_bytes,
		      uint64_t free_bytes, const char *dir, struct api_err *e);

#endif

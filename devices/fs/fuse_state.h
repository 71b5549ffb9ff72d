/*
 * fuse_state: the saved form of a FUSE server's node and handle tables
 * (fuse_server_save/fuse_server_restore), so that a snapshot of a guest
 * with a mounted share can be resumed by another process.
 *
 * Contract:
 *  - Pure: bytes in, bytes out, no syscalls. The server derives paths and
 *    reopens files; this module only writes and checks the format.
 *  - Format (little-endian, version in the magic "kfs2"):
 *      header  magic u32, flags u32 (bit 0: a FUSE session exists),
 *              root dev u64, root ino u64, inode_cap u32, handle_cap u32,
 *              nnodes u32, nhandles u32                          (40 bytes)
 *      nnodes  slot u32, gen u32, nlookup u64, mode u32 (S_IFMT bits),
 *              path_len u16, 0 u16, dev u64, ino u64, path bytes (40 + len)
 *      nhandles slot u32, gen u32, nodeid u64, flags u32, dir u32 (bit 0
 *              a directory, bit 1 stale when saved)              (24)
 *    A node with nlookup 0 is a free slot kept for its generation (mode,
 *    dev, ino and path 0); a live node with path_len 0 was already stale
 *    (deleted or out of reach) when saved. A handle with nodeid 0 is a
 *    free slot kept for its generation.
 *  - The bytes are hostile (a snapshot file may be damaged or planted):
 *    fuse_state_parse() refuses, with a message, a wrong magic, a table
 *    capacity that is not a power of two within the server's limits,
 *    counts the bytes cannot hold, slots out of range, slot 0 (the root,
 *    never saved), slots not in strictly increasing order (so no slot
 *    twice), a path that is not a plain relative path (empty component,
 *    leading or trailing '/', "." or "..", NUL, a component over NAME_MAX,
 *    PATH_MAX or more in all), an unknown file type, and trailing bytes.
 *    What it accepts may still name files that are gone: the server
 *    decides that when it reopens them.
 */
#ifndef KILN_FUSE_STATE_H
#define KILN_FUSE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define FUSE_STATE_MAGIC 0x6b667332u /* "kfs2" */
#define FUSE_STATE_HEADER 40u
#define FUSE_STATE_NODE 40u /* without its path */
#define FUSE_STATE_HANDLE 24u
#define FUSE_STATE_ACTIVE 1u
#define FUSE_STATE_HANDLE_STALE 2u /* in a handle's dir word: already stale when saved */

struct fuse_state_node {
	uint32_t slot, gen;
	uint64_t nlookup; /* 0: a free slot */
	uint32_t mode;    /* S_IFMT bits */
	uint64_t dev, ino;
	const char *path;  /* relative to the share root, not NUL-terminated */
	uint16_t path_len; /* 0: stale */
};

struct fuse_state_handle {
	uint32_t slot, gen;
	uint64_t nodeid; /* 0: a free slot */
	uint32_t flags;  /* the open flags the host used */
	uint32_t dir;    /* bit 0: a directory; FUSE_STATE_HANDLE_STALE */
};

struct fuse_state {
	uint32_t flags;
	uint64_t root_dev, root_ino;
	uint32_t inode_cap, handle_cap;
	uint32_t nnodes, nhandles;
	struct fuse_state_node *nodes; /* parse: allocated, paths point into the buffer */
	struct fuse_state_handle *handles;
};

struct fuse_state_writer {
	uint8_t *buf;
	size_t cap, len;
	uint32_t nnodes, nhandles;
	int err; /* -E2BIG once something did not fit */
};

/* Start writing st's header fields (its counts and arrays are ignored). */
void fuse_state_begin(struct fuse_state_writer *w, void *buf, size_t cap,
		      const struct fuse_state *st);
/* Append one node (all nodes before the first handle). */
void fuse_state_put_node(struct fuse_state_writer *w, const struct fuse_state_node *n);
void fuse_state_put_handle(struct fuse_state_writer *w, const struct fuse_state_handle *h);
/* The bytes written, or -E2BIG when the buffer was too small. */
long fuse_state_finish(struct fuse_state_writer *w);

/*
 * Check and decode `len` bytes. 0 with *st filled (free it with
 * fuse_state_free; paths point into buf), or -EINVAL with e saying what is
 * wrong, -ENOMEM.
 */
int fuse_state_parse(const void *buf, size_t len, struct fuse_state *st, struct err *e);
void fuse_state_free(struct fuse_state *st);

/* 1 when path[0, len) is a plain relative path the server may resolve. */
int fuse_state_path_ok(const char *path, size_t len);

#endif

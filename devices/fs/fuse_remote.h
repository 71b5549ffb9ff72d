/*
 * fuse_remote: a virtio-fs share whose files a client serves (issue 37
 * item 6, "host-implemented mounts"): FUSE requests from the guest become
 * request lines of the share protocol (docs/architecture.md, "Client-served
 * shares"), the client's reply lines become FUSE replies.
 *
 * Contract:
 *  - Pure translation: no sockets, no threads, no clock. fuse_remote_begin()
 *    takes one FUSE request and either answers it at once (framing errors,
 *    INIT, FORGET, OPEN, RELEASE, FLUSH, FSYNC, STATFS, ACCESS, SETATTR of
 *    anything but the size, EROFS on a read-only share, ENOSYS for what the
 *    protocol has no op for) or writes the ONE request line the client must
 *    answer; fuse_remote_finish() turns that line's reply (or its absence:
 *    a timeout, a dead client) into the FUSE reply. One request at a time.
 *  - The guest is hostile: framing through fuse_req.h; node ids and file
 *    handles carry generations (fuse_slots.h), made-up ones get -ENOENT and
 *    -EBADF; paths built from names are checked against the protocol's
 *    bounds (a component <= 255 bytes, the whole <= 4096: -ENAMETOOLONG;
 *    names that are not UTF-8, which a JSON line cannot carry: -EINVAL).
 *  - The reply line is hostile too (kilnd relays what a client sent):
 *    fuse_remote_finish() accepts exactly the protocol's reply for the op
 *    asked (the request's id, the fields and bounds of the table, an error
 *    name from the list) and answers anything else -EIO with `e` saying
 *    what was wrong, so the caller can log it and drop the connection.
 *  - State kept here, never asked of the client: node ids <-> paths (a
 *    bounded table, FUSE_REMOTE_MAX_NODES; a rename moves the paths of the
 *    nodes beneath a renamed directory), each node's last attributes,
 *    file handles (the node and the open flags). Entries and attributes
 *    are valid for one second in the guest.
 *  - Read-only: every modifying request is answered -EROFS without a line.
 *  - Snapshots are not supported (the client's tree is not in the
 *    snapshot): virtio_fs refuses to save a remote share.
 */
#ifndef KILN_FUSE_REMOTE_H
#define KILN_FUSE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

/* The protocol's bounds (docs/architecture.md). */
#define FS_REMOTE_LINE_MAX 262144u /* one line, its '\n' included */
#define FS_REMOTE_IO_MAX 131072u   /* data in one read or write */
#define FS_REMOTE_PATH_MAX 4096u
#define FS_REMOTE_NAME_MAX 255u
#define FS_REMOTE_ENTRIES_MAX 10000u

/* kiln-vmm's own bounds: the node and handle tables (-ENFILE beyond). */
#define FUSE_REMOTE_MAX_NODES (1u << 16)
#define FUSE_REMOTE_MAX_HANDLES 4096u

struct fuse_remote;

/* A new session-less share. 0 or -ENOMEM. */
int fuse_remote_new(struct fuse_remote **out, int read_only);
void fuse_remote_free(struct fuse_remote *fr);

/* Forget every node but the root and every handle (a device reset). */
void fuse_remote_reset(struct fuse_remote *fr);

/*
 * Take one FUSE request (in_len bytes at in). Either its reply is written
 * to out (at most out_cap bytes) and its length returned (0: no reply,
 * FORGET or no room for a header), *line_len set to 0; or a request line
 * ('\n'-terminated, at most FS_REMOTE_LINE_MAX bytes) is written to
 * line (FS_REMOTE_LINE_MAX bytes), its length in *line_len, 0 returned,
 * and the caller must call fuse_remote_finish() next.
 */
long fuse_remote_begin(struct fuse_remote *fr, const void *in, size_t in_len, void *out,
		       size_t out_cap, char *line, size_t *line_len);

/*
 * The reply to the line begin() wrote: `len` bytes at `reply` (its '\n'
 * stripped or not), or reply NULL when none came (timeout, no connection:
 * the guest gets -EIO). Writes the FUSE reply to out (out_cap bytes, as
 * given to begin) and returns its length. A reply that breaks the protocol
 * is answered -EIO and e says why (e->msg[0] is 0 otherwise).
 */
long fuse_remote_finish(struct fuse_remote *fr, const char *reply, size_t len, void *out,
			size_t out_cap, struct err *e);

/* The id of the line begin() last wrote (1..2^32-1). */
uint32_t fuse_remote_pending_id(const struct fuse_remote *fr);

/* Live nodes (the root included) and open handles: for tests. */
unsigned fuse_remote_nodes(const struct fuse_remote *fr);
unsigned fuse_remote_handles(const struct fuse_remote *fr);

#endif

/*
 * fuse_req: the framing of one FUSE request as a virtio-fs guest sends it
 * (<linux/fuse.h>), shared by the passthrough server (fuse_server.h) and
 * the client-served share (fuse_remote.h), so both check the guest's
 * bytes the same way.
 *
 * Contract:
 *  - Pure: no syscalls, no allocation.
 *  - The guest is hostile: fuse_req_parse() refuses (-EINVAL) a request
 *    shorter than its header, whose header.len differs from what arrived,
 *    or whose extensions (total_extlen) run past its end; the takers
 *    refuse arguments too short for what they take and names that are not
 *    NUL-terminated inside the request, empty, ".", "..", holding '/'
 *    (-EINVAL) or longer than NAME_MAX (-ENAMETOOLONG).
 */
#ifndef KILN_FUSE_REQ_H
#define KILN_FUSE_REQ_H

#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>

/* Oldest protocol accepted: below 7.12 the argument structs have other
 * sizes (FUSE_COMPAT_*), which no virtio-fs driver (7.31+) ever sends. */
#define FUSE_REQ_MIN_MINOR 12

/* One request being handled: the parsed header, the argument bytes, and
 * where the reply body goes (after the fuse_out_header). */
struct fuse_req {
	struct fuse_in_header h;
	const uint8_t *arg;
	size_t alen;
	uint8_t *body;
	size_t cap;
	int variant; /* the handler's op table's: the directory (or PLUS) form of an op */
};

/*
 * Frame `in_len` bytes at `in` into r, the reply to go to out (out_cap
 * bytes). 0; -ENOBUFS when not even a fuse_out_header fits in out (no
 * reply can be given); -EINVAL for a malformed request (r->h.unique is
 * the request's, or 0 when even the header was short).
 */
int fuse_req_parse(struct fuse_req *r, const void *in, size_t in_len, void *out, size_t out_cap);

/* Write the reply header for `body` bytes already at out's body and
 * error err (0 or -errno): the reply's length. */
long fuse_req_reply(void *out, uint64_t unique, int err, size_t body);

/* Copy the opcode's fixed argument struct; -EINVAL when short. */
int fuse_req_take(struct fuse_req *r, void *dst, size_t size);

/* The next NUL-terminated string of the arguments, or NULL when the guest
 * did not terminate it inside the request. */
const char *fuse_req_str(struct fuse_req *r);

/* The next string as one path component (fuse_name_check). */
int fuse_req_name(struct fuse_req *r, const char **name);

/* 0 when name is one path component; -EINVAL, -ENAMETOOLONG. */
int fuse_name_check(const char *name);

/*
 * FORGET or BATCH_FORGET (r's opcode): forget(ctx, nodeid, nlookup) for
 * each node it names. A BATCH_FORGET whose count runs past the request
 * is ignored whole; these requests get no reply.
 */
void fuse_req_forget(struct fuse_req *r, void (*forget)(void *ctx, uint64_t nodeid, uint64_t n),
		     void *ctx);

/*
 * Answer INIT: check the guest's version, offer flags (intersected with
 * the guest's) and max_write (max_pages follows), and write the
 * fuse_init_out into r->body: its length, or -EINVAL (short), -EPROTO
 * (version), -ERANGE (no room).
 */
int fuse_req_init(struct fuse_req *r, uint32_t flags, uint32_t max_write);

#endif

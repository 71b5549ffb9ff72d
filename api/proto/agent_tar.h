/*
 * agent_tar: ustar archives without syscalls (docs/agent-protocol.md,
 * section 7.5, tar_upload and tar_download).
 *
 * Contract:
 *  - The reader is a streaming state machine like the framer: it is fed
 *    whatever arrived, in any split, and reports one event per call.
 *    Memory is bounded: one header block, one pax/GNU record of at most
 *    TAR_EXT_MAX bytes, and the current member's names. File data is never
 *    copied: DATA events are slices of the fed buffer.
 *  - Every header is checked before its member is reported: checksum,
 *    magic, numeric fields, sizes, then the member's name and link (below).
 *    A bad header is `bad_archive`, a name or link that could leave the
 *    target is `unsafe_path`; both are sticky, and nothing after them is
 *    reported, so a caller never creates a member the reader rejected.
 *  - Names are normalised (empty and `.` components dropped). Absolute
 *    names and `..` components are refused. Symlink targets must be
 *    relative and may only climb with leading `..` components, no higher
 *    than the member's own directory is deep; the climb is then the same
 *    whatever the target's later components are (a `..` after a component
 *    that is itself a symlink could climb further than it reads). The
 *    extractor keeps its side of that bargain: it resolves a symlink
 *    member's parent without following symlinks (agent_tar_io.c).
 *  - The producer builds header blocks (ustar, plus a pax `x` header for
 *    what ustar cannot hold) into a caller buffer; it never fails on a
 *    valid member within the documented path limits.
 */
#ifndef KILN_AGENT_TAR_H
#define KILN_AGENT_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"

#define TAR_BLOCK 512
#define TAR_EXT_MAX 65536 /* pax `x` and GNU `L`/`K` data: the protocol's limit */

enum tar_kind { TAR_FILE, TAR_DIR, TAR_SYMLINK, TAR_HARDLINK };

/* A member the reader accepted. Strings point into the reader and stay
 * valid until the next member; they are NUL-terminated. */
struct tar_member {
	enum tar_kind kind;
	const char *name; /* normalised, relative, never empty */
	size_t name_len;
	const char *link; /* SYMLINK: the target as stored; HARDLINK: normalised name */
	size_t link_len;
	uint64_t size; /* FILE: data bytes that follow as DATA events */
	uint32_t mode; /* permission bits, & 07777 */
	int64_t mtime; /* seconds since the epoch */
	uint32_t mtime_nsec;
};

enum tar_ev {
	TAR_EV_NEED_MORE, /* everything fed was consumed; feed more */
	TAR_EV_MEMBER,    /* ev.member: create it */
	TAR_EV_DATA,      /* ev.data/data_len: the next bytes of the current FILE */
	TAR_EV_FILE_END,  /* the current FILE is complete */
	TAR_EV_SKIPPED,   /* a member of a type that is not extracted (device, FIFO, sparse ...) */
	TAR_EV_END,       /* end-of-archive blocks; whatever follows is ignored */
	TAR_EV_ERROR,     /* ev.err: bad_archive or unsafe_path; the reader stays in error */
};

struct tar_event {
	enum tar_ev kind;
	const struct tar_member *member;
	const uint8_t *data;
	size_t data_len;
	const struct agent_err *err;
};

struct tar_reader {
	int state;
	const char *target; /* named in messages only */
	uint8_t blk[TAR_BLOCK];
	size_t blk_len;
	uint64_t offset;     /* archive bytes consumed */
	uint64_t hdr_offset; /* where the current header began */
	uint64_t left;       /* bytes left of the current data area */
	size_t pad;          /* padding after it */
	char ext_type;       /* 'x', 'L' or 'K' being collected */
	uint8_t *ext;
	size_t ext_len;
	/* Overrides from pax `x` and GNU `L`/`K`, for the next member. A pax
	 * value wins over a GNU one, whichever came first. */
	char *o_pax_path, *o_pax_link, *o_gnu_path, *o_gnu_link;
	size_t o_pax_path_len, o_pax_link_len, o_gnu_path_len, o_gnu_link_len;
	bool o_pending; /* an extended header is waiting for its member */
	bool o_has_size, o_has_mtime, o_sparse;
	uint64_t o_size;
	int64_t o_mtime;
	uint32_t o_mtime_nsec;
	struct tar_member m;
	char *name_buf, *link_buf;
	size_t name_cap, link_cap;
	struct agent_err err;
};

/* `target` (may be NULL) is only used in error messages. */
void tar_reader_init(struct tar_reader *r, const char *target);
void tar_reader_free(struct tar_reader *r);

/*
 * Consume bytes from buf[0..n) and report one event; returns the bytes
 * consumed. Call again with the rest, and then with n == 0, until
 * NEED_MORE: some events (FILE_END, an empty file's end) consume nothing.
 */
size_t tar_reader_feed(struct tar_reader *r, const void *buf, size_t n, struct tar_event *ev);

/*
 * The upload ended. END when that is at a member boundary (with or without
 * the end-of-archive blocks), ERROR bad_archive when it cut a member or a
 * header, or left an extended header without its member.
 */
void tar_reader_finish(struct tar_reader *r, struct tar_event *ev);

/*
 * Member name rule (exposed for tests): raw[0..n) normalised into out (at
 * least n + 1 bytes). AGENT_OK with *out_len (0: the name is the target
 * itself) and *dir set when it ended in '/'; AGENT_E_UNSAFE_PATH for an
 * absolute name or a `..` component; AGENT_E_BAD_ARCHIVE for a component
 * longer than NAME_MAX or a normalised name longer than AGENT_PATH_MAX
 * (what extractors' per-component and whole-name buffers hold).
 */
enum agent_code tar_name_normalize(const char *raw, size_t n, char *out, size_t *out_len, bool *dir,
				   const char *target, struct agent_err *err);

/* Symlink rule: may member `name` (normalised) point at `link`? */
enum agent_code tar_symlink_check(const char *name, size_t name_len, const char *link,
				  size_t link_len, const char *target, struct agent_err *err);

/*
 * A numeric header field: octal digits (leading spaces, ending in NUL or
 * space; all blank is 0) or base-256 (first byte 0x80 / 0xff). 0, or
 * -EINVAL for garbage, a negative value when !allow_neg, or overflow.
 */
int tar_num_parse(const uint8_t *field, size_t n, bool allow_neg, int64_t *out);

/* ---- producer ---- */

/* Largest output of tar_header_build for names/links within the limits. */
#define TAR_HEADER_BUILD_MAX 10240

struct tar_out {
	const char *name; /* relative; directories end in '/'; at most AGENT_PATH_MAX + 1 */
	size_t name_len;
	char type;        /* '0' file, '5' directory, '2' symlink */
	const char *link; /* symlink target, at most AGENT_PATH_MAX */
	size_t link_len;
	uint64_t size; /* file data bytes (0 for others) */
	uint32_t mode; /* & 07777 is stored */
	uint32_t uid, gid;
	int64_t mtime;
};

/*
 * Header block(s) for one member into out: a pax `x` header with its
 * records when the name does not fit ustar's name/prefix split, the link
 * does not fit 100 bytes or the size is 8 GiB or more; then the ustar
 * header. Returns the bytes written (a multiple of 512), -EINVAL for an
 * empty name, -ENAMETOOLONG beyond the limits above, -ENOSPC when cap is
 * too small.
 */
ssize_t tar_header_build(const struct tar_out *m, uint8_t *out, size_t cap);

/* Zero bytes after `size` data bytes up to the next block. */
static inline size_t tar_pad(uint64_t size)
{
	return (size_t)((TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
}

#endif

/*
 * fuzz_fuse_remote: reply lines of a client-served share
 * (devices/fs/fuse_remote.c), as a hostile client (or kilnd relaying one)
 * could write them, to every kind of request the share asks.
 *
 * Input: flags (bit 0 read-only share, bit 1 a small reply buffer), then
 * steps [op][flags][len: 2][reply bytes]: op picks the FUSE request
 * (LOOKUP, GETATTR, READ, WRITE, READDIR, MKDIR, CREATE, UNLINK, RENAME,
 * SETATTR(size), then FORGET of the last node), on the last node or handle
 * the replies gave; step flag bit 0 prefixes the reply with
 * {"id":<the request's id>, so the fuzzer reaches past the id check.
 * Invariants: every reply fits its buffer and says its own length and the
 * request's unique; an error is a bare header with -errno; a line refused
 * as broken says why; a read returns at most what was asked; the tables
 * stay within their bounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>

#include "devices/fs/fuse_remote.h"
#include "fuzz.h"

static uint8_t out[FS_REMOTE_IO_MAX + 4096];
static uint8_t req[8192];
static char line[FS_REMOTE_LINE_MAX];
static char reply[70000];

struct state {
	struct fuse_remote *fr;
	size_t cap;
	uint64_t unique, node, fh, dirfh;
};

static size_t build(struct state *s, uint32_t op, uint64_t nodeid, const void *arg, size_t alen,
		    const char *n1, const char *n2)
{
	struct fuse_in_header h = { .opcode = op, .nodeid = nodeid, .unique = ++s->unique };
	size_t len = sizeof(h);

	if (alen)
		memcpy(req + len, arg, alen);
	len += alen;
	if (n1) {
		memcpy(req + len, n1, strlen(n1) + 1);
		len += strlen(n1) + 1;
	}
	if (n2) {
		memcpy(req + len, n2, strlen(n2) + 1);
		len += strlen(n2) + 1;
	}
	h.len = (uint32_t)len;
	memcpy(req, &h, sizeof(h));
	return len;
}

/* A reply's checks; its error. */
static int check(const struct state *s, long n, size_t cap)
{
	struct fuse_out_header oh;

	if (n == 0)
		return 0;
	FUZZ_ASSERT(n >= (long)sizeof(oh) && (size_t)n <= cap);
	memcpy(&oh, out, sizeof(oh));
	FUZZ_ASSERT(oh.len == (uint32_t)n && oh.unique == s->unique);
	FUZZ_ASSERT(oh.error <= 0 && oh.error > -4096);
	FUZZ_ASSERT(!oh.error || oh.len == sizeof(oh));
	return oh.error;
}

/* Send a request; when it asks, answer it with the reply bytes. */
static void step(struct state *s, size_t len, struct fuzz_in *in, uint32_t asked_size)
{
	size_t ll, rl = 0, got;
	uint8_t flags = take8(in);
	uint16_t want = take16(in);
	const uint8_t *p = take_bytes(in, want, &got);
	struct err e;
	long n = fuse_remote_begin(s->fr, req, len, out, s->cap, line, &ll);
	int err;

	if (!ll) {
		check(s, n, s->cap);
		return;
	}
	FUZZ_ASSERT(n == 0 && ll <= FS_REMOTE_LINE_MAX && line[ll - 1] == '\n');
	FUZZ_ASSERT(!memchr(line, '\n', ll - 1));
	if (flags & 1)
		rl = (size_t)snprintf(reply, sizeof(reply), "{\"id\":%u,",
				      fuse_remote_pending_id(s->fr));
	if (got)
		memcpy(reply + rl, p, got);
	rl += got;
	n = fuse_remote_finish(s->fr, reply, rl, out, s->cap, &e);
	err = check(s, n, s->cap);
	FUZZ_ASSERT(memchr(e.msg, 0, sizeof(e.msg)));
	if (e.msg[0])
		FUZZ_ASSERT(err == -EIO);
	if (!err && ((struct fuse_in_header *)req)->opcode == FUSE_READ)
		FUZZ_ASSERT((size_t)n - sizeof(struct fuse_out_header) <= asked_size);
	if (err)
		return;
	switch (((struct fuse_in_header *)req)->opcode) {
	case FUSE_LOOKUP:
	case FUSE_MKDIR:
		memcpy(&s->node, out + sizeof(struct fuse_out_header), sizeof(s->node));
		break;
	case FUSE_CREATE: {
		struct fuse_entry_out eo;
		struct fuse_open_out oo;

		memcpy(&eo, out + sizeof(struct fuse_out_header), sizeof(eo));
		memcpy(&oo, out + sizeof(struct fuse_out_header) + sizeof(eo), sizeof(oo));
		s->node = eo.nodeid;
		s->fh = oo.fh;
		break;
	}
	}
}

static void open_last(struct state *s)
{
	struct fuse_open_in oi = { .flags = O_RDWR };
	size_t len = build(s, FUSE_OPEN, s->node, &oi, sizeof(oi), NULL, NULL), ll;
	long n = fuse_remote_begin(s->fr, req, len, out, s->cap, line, &ll);

	FUZZ_ASSERT(ll == 0);
	if (check(s, n, s->cap) == 0)
		memcpy(&s->fh, out + sizeof(struct fuse_out_header), sizeof(s->fh));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = take8(&in);
	struct state s = { .cap = (flags & 2) ? 200 : sizeof(out), .node = FUSE_ROOT_ID };
	struct fuse_init_in ii = { .major = FUSE_KERNEL_VERSION, .minor = 31 };
	struct fuse_open_in oi = { 0 };
	size_t len, ll;
	long n;

	FUZZ_ASSERT(fuse_remote_new(&s.fr, flags & 1) == 0);
	len = build(&s, FUSE_INIT, 0, &ii, sizeof(ii), NULL, NULL);
	n = fuse_remote_begin(s.fr, req, len, out, s.cap, line, &ll);
	FUZZ_ASSERT(ll == 0 && check(&s, n, s.cap) == 0);
	len = build(&s, FUSE_OPENDIR, FUSE_ROOT_ID, &oi, sizeof(oi), NULL, NULL);
	n = fuse_remote_begin(s.fr, req, len, out, s.cap, line, &ll);
	FUZZ_ASSERT(check(&s, n, s.cap) == 0);
	memcpy(&s.dirfh, out + sizeof(struct fuse_out_header), sizeof(s.dirfh));

	while (in.n) {
		uint8_t op = take8(&in);
		struct fuse_read_in ri = { .offset = op >> 4, .size = 1u << (op >> 4) };
		struct fuse_write_in wi = { .size = 3 };
		struct fuse_mkdir_in mi = { .mode = 0755 };
		struct fuse_create_in ci = { .mode = 0644, .flags = O_RDWR };
		struct fuse_rename_in rn = { .newdir = FUSE_ROOT_ID };
		struct fuse_setattr_in si = { .valid = FATTR_SIZE, .size = op };
		struct fuse_getattr_in gi = { 0 };
		struct fuse_forget_in fi = { .nlookup = 1 };

		switch (op % 12) {
		case 0:
			len = build(&s, FUSE_LOOKUP, s.node, NULL, 0, "a", NULL);
			break;
		case 1:
			len = build(&s, FUSE_GETATTR, s.node, &gi, sizeof(gi), NULL, NULL);
			break;
		case 2:
			open_last(&s);
			ri.fh = s.fh;
			len = build(&s, FUSE_READ, s.node, &ri, sizeof(ri), NULL, NULL);
			break;
		case 3:
			wi.fh = s.fh;
			len = build(&s, FUSE_WRITE, s.node, &wi, sizeof(wi), "ab", NULL);
			break;
		case 4:
			ri.fh = s.dirfh;
			ri.size = 4096;
			len = build(&s, FUSE_READDIR, FUSE_ROOT_ID, &ri, sizeof(ri), NULL, NULL);
			break;
		case 5:
			len = build(&s, FUSE_MKDIR, s.node, &mi, sizeof(mi), "d", NULL);
			break;
		case 6:
			len = build(&s, FUSE_CREATE, s.node, &ci, sizeof(ci), "f", NULL);
			break;
		case 7:
			len = build(&s, FUSE_UNLINK, s.node, NULL, 0, "f", NULL);
			break;
		case 8:
			len = build(&s, FUSE_RENAME, s.node, &rn, sizeof(rn), "d", "e");
			break;
		case 9:
			len = build(&s, FUSE_SETATTR, s.node, &si, sizeof(si), NULL, NULL);
			break;
		case 10:
			len = build(&s, FUSE_RMDIR, s.node, NULL, 0, "d", NULL);
			break;
		default:
			len = build(&s, FUSE_FORGET, s.node, &fi, sizeof(fi), NULL, NULL);
			n = fuse_remote_begin(s.fr, req, len, out, s.cap, line, &ll);
			FUZZ_ASSERT(n == 0 && ll == 0);
			s.node = FUSE_ROOT_ID;
			continue;
		}
		step(&s, len, &in, ri.size);
	}
	FUZZ_ASSERT(fuse_remote_nodes(s.fr) <= FUSE_REMOTE_MAX_NODES);
	FUZZ_ASSERT(fuse_remote_handles(s.fr) <= FUSE_REMOTE_MAX_HANDLES);
	fuse_remote_free(s.fr);
	return 0;
}

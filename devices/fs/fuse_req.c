#include "devices/fs/fuse_req.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

int fuse_req_parse(struct fuse_req *r, const void *in, size_t in_len, void *out, size_t out_cap)
{
	size_t ext;

	memset(r, 0, sizeof(*r));
	if (out_cap < sizeof(struct fuse_out_header))
		return -ENOBUFS; /* nowhere to say anything */
	r->body = (uint8_t *)out + sizeof(struct fuse_out_header);
	r->cap = out_cap - sizeof(struct fuse_out_header);
	if (in_len < sizeof(r->h))
		return -EINVAL;
	memcpy(&r->h, in, sizeof(r->h));
	if (r->h.len != in_len)
		return -EINVAL;
	r->arg = (const uint8_t *)in + sizeof(r->h);
	r->alen = in_len - sizeof(r->h);
	/* Extensions (8-byte units) trail the arguments; none are negotiated,
	 * so they are skipped, but they must be inside the request. */
	ext = (size_t)r->h.total_extlen * 8;
	if (ext > r->alen)
		return -EINVAL;
	r->alen -= ext;
	return 0;
}

long fuse_req_reply(void *out, uint64_t unique, int err, size_t body)
{
	struct fuse_out_header oh = {
		.len = (uint32_t)(sizeof(oh) + body),
		.error = err,
		.unique = unique,
	};

	memcpy(out, &oh, sizeof(oh));
	return (long)oh.len;
}

int fuse_req_take(struct fuse_req *r, void *dst, size_t size)
{
	if (r->alen < size)
		return -EINVAL;
	memcpy(dst, r->arg, size);
	r->arg += size;
	r->alen -= size;
	return 0;
}

const char *fuse_req_str(struct fuse_req *r)
{
	const uint8_t *nul = r->alen ? memchr(r->arg, 0, r->alen) : NULL;
	const char *s = (const char *)r->arg;

	if (!nul)
		return NULL;
	r->alen -= (size_t)(nul + 1 - r->arg);
	r->arg = nul + 1;
	return s;
}

int fuse_name_check(const char *name)
{
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int fuse_req_name(struct fuse_req *r, const char **name)
{
	*name = fuse_req_str(r);
	return *name ? fuse_name_check(*name) : -EINVAL;
}

void fuse_req_forget(struct fuse_req *r, void (*forget)(void *ctx, uint64_t nodeid, uint64_t n),
		     void *ctx)
{
	struct fuse_batch_forget_in bin;
	struct fuse_forget_in in;

	if (r->h.opcode == FUSE_FORGET) {
		if (fuse_req_take(r, &in, sizeof(in)) == 0)
			forget(ctx, r->h.nodeid, in.nlookup);
		return;
	}
	if (fuse_req_take(r, &bin, sizeof(bin)) < 0 ||
	    bin.count > r->alen / sizeof(struct fuse_forget_one))
		return; /* a count beyond the request: ignore it all */
	for (uint32_t i = 0; i < bin.count; i++) {
		struct fuse_forget_one one;

		fuse_req_take(r, &one, sizeof(one));
		forget(ctx, one.nodeid, one.nlookup);
	}
}

int fuse_req_init(struct fuse_req *r, uint32_t flags, uint32_t max_write)
{
	struct fuse_init_in in = { 0 };
	struct fuse_init_out out = { 0 };
	size_t len;

	/* 7.x drivers send 16 bytes up to 7.35 and the whole struct after. */
	if (r->alen < 16)
		return -EINVAL;
	memcpy(&in, r->arg, r->alen < sizeof(in) ? r->alen : sizeof(in));
	if (in.major != FUSE_KERNEL_VERSION || in.minor < FUSE_REQ_MIN_MINOR)
		return -EPROTO;
	len = in.minor < 23 ? FUSE_COMPAT_22_INIT_OUT_SIZE : sizeof(out);
	if (r->cap < len)
		return -ERANGE;
	out.major = FUSE_KERNEL_VERSION;
	out.minor = FUSE_KERNEL_MINOR_VERSION;
	out.max_readahead = in.max_readahead;
	out.flags = in.flags & flags;
	out.max_background = 64;
	out.congestion_threshold = 48;
	out.max_write = max_write;
	out.time_gran = 1;
	out.max_pages = (uint16_t)(max_write / 4096);
	memcpy(r->body, &out, len);
	return (int)len;
}

/* gzip streams for tar.gz archives; see gz_stream.h. */
#include "api/proto/gz_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* windowBits 15 + 16: a gzip header and trailer instead of zlib's (zlib.h). */
#define GZ_WBITS (15 + 16)

static int fail(struct gz_stream *g, const char *why)
{
	snprintf(g->why, sizeof(g->why), "%s", why);
	g->failed = true;
	return -EBADMSG;
}

static int start(struct gz_stream *g, bool encoder)
{
	memset(g, 0, sizeof(*g));
	g->encoder = encoder;
	g->buf = malloc(GZ_BLOCK);
	if (!g->buf)
		return -ENOMEM;
	return 0;
}

int gz_enc_init(struct gz_stream *g, int level)
{
	if (start(g, true))
		return -ENOMEM;
	if (deflateInit2(&g->z, level, Z_DEFLATED, GZ_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g->buf);
		g->buf = NULL;
		return -ENOMEM;
	}
	g->ready = true;
	return 0;
}

/* Run deflate with flush over the pending input; hand out full blocks
 * (every block at Z_FINISH). 1 once the stream ended. */
static int enc_run(struct gz_stream *g, int flush, gz_out_fn out, void *arg)
{
	for (;;) {
		size_t have;
		int zr, r;

		g->z.next_out = g->buf;
		g->z.avail_out = GZ_BLOCK;
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR)
			return fail(g, "deflate failed");
		have = GZ_BLOCK - g->z.avail_out;
		if (have) {
			g->out_bytes += have;
			r = out(arg, g->buf, have);
			if (r < 0)
				return r;
		}
		if (zr == Z_STREAM_END)
			return 1;
		/* Room left: deflate took all input and has nothing more now. */
		if (g->z.avail_out != 0 && g->z.avail_in == 0)
			return 0;
	}
}

int gz_enc_write(struct gz_stream *g, const void *in, size_t n, gz_out_fn out, void *arg)
{
	const unsigned char *p = in;

	g->why[0] = '\0';
	if (!g->ready || !g->encoder || g->failed)
		return fail(g, "the stream is not open for compression");
	while (n) {
		/* avail_in is a uInt: feed at most 1 GiB at a time. */
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		int r;

		g->z.next_in = (unsigned char *)p;
		g->z.avail_in = k;
		r = enc_run(g, Z_NO_FLUSH, out, arg);
		if (r < 0)
			return r;
		g->in_bytes += k;
		p += k;
		n -= k;
	}
	return 0;
}

int gz_enc_finish(struct gz_stream *g, gz_out_fn out, void *arg)
{
	int r;

	g->why[0] = '\0';
	if (!g->ready || !g->encoder || g->failed)
		return fail(g, "the stream is not open for compression");
	g->z.next_in = NULL;
	g->z.avail_in = 0;
	r = enc_run(g, Z_FINISH, out, arg);
	if (r < 0)
		return r;
	return r == 1 ? 0 : fail(g, "deflate did not finish");
}

int gz_dec_init(struct gz_stream *g)
{
	if (start(g, false))
		return -ENOMEM;
	if (inflateInit2(&g->z, GZ_WBITS) != Z_OK) {
		free(g->buf);
		g->buf = NULL;
		return -ENOMEM;
	}
	g->ready = true;
	return 0;
}

/* Bytes after a member: another member (1f ...), or NUL padding to the end. */
static int between_members(struct gz_stream *g, const unsigned char **p, size_t *n)
{
	while (*n && **p == 0) {
		g->padding = true;
		(*p)++;
		(*n)--;
	}
	if (!*n)
		return 0;
	if (g->padding)
		return fail(g, "bytes after the NUL padding that follows the gzip data");
	if (**p != 0x1f)
		return fail(g,
			    "trailing bytes after the gzip data that are not another gzip member");
	if (inflateReset(&g->z) != Z_OK)
		return fail(g, "inflate failed");
	g->member_done = false;
	return 0;
}

int gz_dec_write(struct gz_stream *g, const void *in, size_t n, gz_out_fn out, void *arg)
{
	const unsigned char *p = in;
	bool full = false;

	g->why[0] = '\0';
	if (!g->ready || g->encoder || g->failed)
		return fail(g, "the stream is not open for decompression");
	g->in_bytes += n;
	/* A full block may leave output inside zlib: go on until it is out. */
	while (n || full) {
		size_t have, used;
		int zr, r;

		if (g->member_done) {
			full = false;
			r = between_members(g, &p, &n);
			if (r < 0 || !n)
				return r;
		}
		g->z.next_in = (unsigned char *)p;
		g->z.avail_in = n > (1u << 30) ? (1u << 30) : (uInt)n;
		g->z.next_out = g->buf;
		g->z.avail_out = GZ_BLOCK;
		used = g->z.avail_in;
		zr = inflate(&g->z, Z_NO_FLUSH);
		used -= g->z.avail_in;
		p += used;
		n -= used;
		have = GZ_BLOCK - g->z.avail_out;
		full = g->z.avail_out == 0;
		switch (zr) {
		case Z_OK:
		case Z_BUF_ERROR: /* no progress possible: needs more input */
			break;
		case Z_STREAM_END:
			g->member_done = true;
			break;
		case Z_DATA_ERROR:
			return fail(g,
				    g->z.msg && strcmp(g->z.msg, "incorrect header check") == 0
					    ? "not gzip data (it must start with the bytes 1f 8b)"
					    : g->z.msg ? g->z.msg
						       : "corrupt gzip data");
		case Z_MEM_ERROR:
			return fail(g, "inflate: out of memory");
		default:
			return fail(g, "inflate failed");
		}
		if (have) {
			g->out_bytes += have;
			r = out(arg, g->buf, have);
			if (r < 0)
				return r;
		}
		/* Input left, room left, nothing done: zlib is stuck. */
		if (!used && !have && !g->member_done && n)
			return fail(g, "inflate made no progress");
	}
	return 0;
}

int gz_dec_finish(struct gz_stream *g)
{
	g->why[0] = '\0';
	if (!g->ready || g->encoder || g->failed)
		return fail(g, "the stream is not open for decompression");
	if (!g->member_done)
		return fail(g,
			    g->in_bytes ? "the gzip data ends in the middle (truncated upload?)"
					: "the body is empty");
	return 0;
}

const char *gz_why(const struct gz_stream *g)
{
	return g->why;
}

void gz_end(struct gz_stream *g)
{
	if (g->ready) {
		if (g->encoder)
			deflateEnd(&g->z);
		else
			inflateEnd(&g->z);
	}
	free(g->buf);
	g->buf = NULL;
	g->ready = false;
}

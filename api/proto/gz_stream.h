/*
 * gz_stream: gzip (RFC 1952) around a byte stream, both ways, in bounded
 * memory, for kilnd's tar.gz archives (docs/api.md, .../archive).
 *
 * Contract:
 *  - Pure (zlib only): bytes go in through gz_*_write, compressed or
 *    decompressed bytes come out through a callback in blocks of at most
 *    GZ_BLOCK bytes, as they are produced. Nothing accumulates: memory is
 *    zlib's state plus one GZ_BLOCK buffer, whatever the input, so a
 *    "gzip bomb" only becomes a long stream that the consumer paces (the
 *    callback blocks, the producer waits).
 *  - The tar inside is not looked at here. A directory's archive passes
 *    through kilnd untouched (the agent parses and confines every member
 *    itself: docs/agent-protocol.md, tar_upload). Where the host does read
 *    the tar (a template build's context in kilnd, `kiln cp`'s download),
 *    it uses agent_tar's reader, the one the agent runs, so the host has
 *    no second tar parser for a hostile archive to aim at.
 *  - The decoder takes gzip only (magic 1f 8b; not raw zlib or plain tar),
 *    concatenated members as gzip(1) does, and trailing NUL padding as
 *    gzip(1) does (tape blocking); any other trailing byte, a CRC or
 *    length mismatch, or a stream that ends inside a member is -EBADMSG
 *    with gz_why() saying which.
 *  - A callback returning < 0 stops the call, which returns that value.
 */
#ifndef KILN_GZ_STREAM_H
#define KILN_GZ_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#define GZ_BLOCK (64u << 10)

typedef int (*gz_out_fn)(void *arg, const void *data, size_t n);

struct gz_stream {
	z_stream z;
	bool encoder, ready;
	bool member_done; /* decoder: at a member boundary */
	bool padding;     /* decoder: trailing NULs seen; only NULs may follow */
	bool failed;
	uint64_t in_bytes, out_bytes;
	unsigned char *buf; /* GZ_BLOCK */
	char why[128];
};

/* Start an encoder (level 1..9; 6 is gzip's default). 0 or -ENOMEM. */
int gz_enc_init(struct gz_stream *g, int level);
/* Compress n bytes; full blocks go to out. 0 or out's negative value. */
int gz_enc_write(struct gz_stream *g, const void *in, size_t n, gz_out_fn out, void *arg);
/* Flush everything and write the gzip trailer. */
int gz_enc_finish(struct gz_stream *g, gz_out_fn out, void *arg);

/* Start a decoder. 0 or -ENOMEM. */
int gz_dec_init(struct gz_stream *g);
/* Decompress n bytes; output goes to out. 0, -EBADMSG (see gz_why), or out's negative value. */
int gz_dec_write(struct gz_stream *g, const void *in, size_t n, gz_out_fn out, void *arg);
/* The input ended: 0 when it ended after a whole member, else -EBADMSG. */
int gz_dec_finish(struct gz_stream *g);

/* Why the last call failed ("" when it did not). */
const char *gz_why(const struct gz_stream *g);
/* Release zlib's state and the buffer (safe on a zeroed or ended stream). */
void gz_end(struct gz_stream *g);

#endif

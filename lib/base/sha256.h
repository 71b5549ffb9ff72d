/*
 * sha256: the SHA-256 digest (FIPS 180-4), for image digests (OCI blob
 * digests, the ext4 file's digest in GET /v1/images). Plain C, no state
 * outside the context; streaming, so a multi-GiB file is never held.
 */
#ifndef KILN_SHA256_H
#define KILN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
/* "sha256:" + 64 hex digits + NUL */
#define SHA256_DIGEST_STR 72

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_BYTES]);
/* out = "sha256:<64 lowercase hex digits>" */
void sha256_digest_str(const uint8_t d[SHA256_BYTES], char out[SHA256_DIGEST_STR]);
/* The digest of everything readable from fd (from its current offset):
 * 0 and out filled, or -errno of the read that failed. */
int sha256_fd(int fd, char out[SHA256_DIGEST_STR]);

#endif

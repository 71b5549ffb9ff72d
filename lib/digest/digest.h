/*
 * digest: image digests as OCI names them ("sha256:" and 64 lowercase hex
 * digits), over nettle's SHA-256 (Debian nettle-dev). Code that hashes in
 * pieces calls nettle itself (<nettle/sha2.h>: struct sha256_ctx,
 * sha256_init, sha256_update(ctx, len, data), sha256_digest); this module
 * holds what nettle does not: the digest as text, and the digest of a file.
 *
 * A folder of its own, not lib/base: only kilnd and kiln-image-import hash,
 * so only they link nettle.
 */
#ifndef KILN_DIGEST_H
#define KILN_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <nettle/sha2.h>

/* 64 lowercase hex digits + NUL */
#define DIGEST_HEX_LEN (2 * SHA256_DIGEST_SIZE + 1)
/* "sha256:" + 64 lowercase hex digits + NUL */
#define DIGEST_STR_LEN (7 + DIGEST_HEX_LEN)

/* out = the 64 lowercase hex digits of d */
void digest_hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[DIGEST_HEX_LEN]);
/* out = "sha256:<64 lowercase hex digits of d>" */
void digest_str(const uint8_t d[SHA256_DIGEST_SIZE], char out[DIGEST_STR_LEN]);
/* The digest of everything readable from fd (from its current offset),
 * read in 64 KiB pieces so a multi-GiB file is never held: 0 and out
 * filled, or -errno of the read that failed (EINTR is retried). */
int digest_fd(int fd, char out[DIGEST_STR_LEN]);

#endif

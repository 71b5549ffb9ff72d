/*
 * build_context: a template build's context, the tar.gz body of POST
 * /v1/templates (docs/api.md, "Templates"), read on the host.
 *
 * Contract:
 *  - The archive is read with the project's own bounded readers, the
 *    ones the agent confines uploads with (gz_stream.h, agent_tar.h): a
 *    member with an absolute name, a `..` component or a symlink that
 *    leaves the tree is bad_archive/unsafe_path and stops the build
 *    before anything boots; devices and FIFOs are skipped. Nothing is
 *    extracted on the host: COPY re-packs the members it names into a
 *    plain ustar stream that the guest agent extracts and confines again.
 *  - Bounded: CONTEXT_MEMBERS_MAX members; the build file at most
 *    BUILDFILE_MAX bytes; the decompressed tar, and each COPY's re-pack,
 *    at most max_bytes (--max-image): a gzip bomb is refused naming the
 *    member it reached, not inflated.
 *  - Every function works on a file descriptor and memory only, so it is
 *    unit-tested and fuzzed without a daemon.
 */
#ifndef KILN_BUILD_CONTEXT_H
#define KILN_BUILD_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/images/buildfile.h"
#include "api/proto/agent_tar.h"
#include "lib/digest/digest.h"

#define CONTEXT_MEMBERS_MAX 16384

struct ctx_member {
	char *name;
	enum tar_kind kind;
	uint8_t digest[SHA256_DIGEST_SIZE]; /* of kind, mode, link and data */
};

struct build_context {
	struct ctx_member *m;
	size_t n;
	char *buildfile; /* NUL-terminated; NULL: not found */
	size_t buildfile_len;
	uint64_t max_bytes; /* the cap on inflated and re-packed bytes */
};

/*
 * Read the context archive from fd (from its start): every member's name
 * and digest, and the build file: `file` when given, else `Kilnfile`,
 * else `Dockerfile`. At most max_bytes of tar are inflated (then
 * bad_archive). 0, or -1 with e (bad_archive naming the member,
 * bad_field: no build file or too big).
 */
int build_context_scan(int fd, const char *file, uint64_t max_bytes, struct build_context *c,
		       struct api_err *e);
void build_context_free(struct build_context *c);

/* The digest of what COPY step s copies ("sha256:..."), or -1 with e
 * (bad_field: a source not in the context, naming the line). */
int build_context_copy_digest(const struct build_context *c, const struct bf_step *s,
			      char out[DIGEST_STR_LEN], struct api_err *e);

/*
 * COPY: write the members step s copies, renamed for the guest directory
 * *target (set here: the destination, or its parent when one file is
 * copied to a file name), as a plain ustar archive to out_fd. fd is the
 * context archive. 0, or -1 with e.
 */
int build_context_copy_tar(int fd, const struct build_context *c, const struct bf_step *s,
			   int out_fd, char *target, size_t target_cap, struct api_err *e);

#endif

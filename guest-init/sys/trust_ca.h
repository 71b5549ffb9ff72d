/*
 * trust_ca: the sandbox's egress CA (configure.trust_ca) in the guest's
 * trust, so the host's egress proxy can intercept TLS and programs still
 * verify what they are shown (docs/agent-protocol.md, configure;
 * docs/architecture.md, "The guest's trust in the egress CA").
 *
 * What is written (beneath `root`, "" in the guest):
 *  - /run/kiln/egress-ca.pem: the CA alone, 0644;
 *  - /run/kiln/ca-bundle.pem: the image's system bundle (the first of
 *    trust_paths it has) followed by the CA, 0644. On every root, a
 *    read-only one too: /run is kiln-init's tmpfs;
 *  - on a writable root also the system bundle itself, the CA in a block
 *    between TRUST_MARK_BEGIN and TRUST_MARK_END lines that every
 *    configure replaces (never appended twice), and the CA as an anchor
 *    in the anchor directories the image has (Debian's
 *    /usr/local/share/ca-certificates/kiln-egress.crt, RHEL's
 *    /etc/pki/ca-trust/source/anchors/kiln-egress.pem), so the image's
 *    own update-ca-certificates / update-ca-trust keeps it.
 * An empty CA removes all of it (the block stripped, the files unlinked).
 * A CA already installed byte for byte changes nothing (a wake or fork
 * sends it again and must stay fast).
 *
 * Processes the agent starts see the files through the environment
 * (agent_env.h): trust_ca_installed() says whether to point them there.
 *
 * Pure: trust_plan_make() (which files, given which exist) and
 * trust_bundle_merge() (a bundle's text with the block replaced) are
 * unit-tested without a guest; trust_ca_apply() does the reading and
 * writing, through file_replace.
 */
#ifndef KILN_TRUST_CA_H
#define KILN_TRUST_CA_H

#include <stdbool.h>
#include <stddef.h>

#include "api/proto/agent_proto.h"

#define TRUST_RUN_DIR "/run/kiln"
#define TRUST_CA_FILE TRUST_RUN_DIR "/egress-ca.pem"
#define TRUST_BUNDLE_FILE TRUST_RUN_DIR "/ca-bundle.pem"
/* A system bundle larger than this is refused (Debian's is ~220 KiB). */
#define TRUST_BUNDLE_MAX (4u << 20)

#define TRUST_MARK_BEGIN "# kiln egress CA (kiln-init, configure trust_ca; replaced on each): begin"
#define TRUST_MARK_END "# kiln egress CA: end"

/* What trust_probe() found: a bit per entry of trust_paths, and the root's writability. */
enum {
	TRUST_HAS_DEBIAN_BUNDLE = 1u << 0,  /* /etc/ssl/certs/ca-certificates.crt */
	TRUST_HAS_RHEL_BUNDLE = 1u << 1,    /* /etc/pki/tls/certs/ca-bundle.crt */
	TRUST_HAS_ALPINE_BUNDLE = 1u << 2,  /* /etc/ssl/cert.pem */
	TRUST_HAS_DEBIAN_ANCHORS = 1u << 3, /* /usr/local/share/ca-certificates/ */
	TRUST_HAS_RHEL_ANCHORS = 1u << 4,   /* /etc/pki/ca-trust/source/anchors/ */
	TRUST_ROOT_WRITABLE = 1u << 5,
};

#define TRUST_ANCHORS_MAX 2

struct trust_plan {
	const char *system_bundle; /* the image's bundle; NULL: it has none (the CA alone) */
	bool patch_system;         /* the CA's block goes into system_bundle too */
	const char *anchors[TRUST_ANCHORS_MAX]; /* anchor files to write (or remove) */
	size_t anchors_n;
};

/* The paths trust_probe() looks at: the path, its bit, whether it is a directory. */
struct trust_path {
	const char *path;
	unsigned bit;
	bool dir;
};
extern const struct trust_path trust_paths[];
extern const size_t trust_paths_n;

/* Which files to write given what the image has (TRUST_HAS_*, TRUST_ROOT_WRITABLE). */
void trust_plan_make(unsigned has, struct trust_plan *p);

/* Bytes trust_bundle_merge() may write for an n-byte bundle and pem. */
size_t trust_bundle_merge_max(size_t n, const char *pem);

/*
 * out = bundle[0..n) without any block of ours (TRUST_MARK_BEGIN line ..
 * TRUST_MARK_END line; one without its end runs to the end of the text)
 * and without any other copy of pem or of drop (the CA installed before,
 * NULL: none) on lines of their own (update-ca-certificates copies the
 * anchor into the bundle), ending in '\n' when not empty, then, unless
 * pem is "", the block with pem: the CA is there exactly once. Merging
 * the result again gives the same bytes. Returns the length.
 */
size_t trust_bundle_merge(const char *bundle, size_t n, const char *drop, const char *pem,
			  char *out);

/* ---- trust_ca_apply.c: the files ---- */

/* TRUST_HAS_* and TRUST_ROOT_WRITABLE for the image beneath root. */
unsigned trust_probe(const char *root);

/* Install pem (agent_pem_cert_check()ed; "" removes) beneath root. 0, or
 * -1 with err ("configure: trust_ca: <what>: <why>"). */
int trust_ca_apply(const char *root, const char *pem, struct agent_err *err);

/* Whether the combined bundle is in place (the agent's launches ask). */
bool trust_ca_installed(void);

#endif

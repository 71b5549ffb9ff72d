/*
 * sandbox_spec: the body of POST /v1/sandboxes, validated into a struct
 * (docs/api.md, "POST /v1/sandboxes"), and back to canonical JSON for the
 * sandbox object and its metadata file.
 *
 * Contract:
 *  - Pure (jansson only). Unknown fields are refused; the first failing
 *    check wins, in the order of the table in docs/api.md.
 *  - Only syntax and ranges are checked here. Whether the image exists,
 *    whether a share's directory exists and may be shared (realpath,
 *    --share-root) are the daemon's questions.
 *  - A parsed spec owns its env and labels objects (deep copies); free it
 *    with sandbox_spec_free(). It is immutable afterwards, so threads may
 *    read it without a lock.
 */
#ifndef KILN_SANDBOX_SPEC_H
#define KILN_SANDBOX_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/cgroup_limits.h"
#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/core/names.h"

#define SPEC_MAX_SHARES 8 /* kiln-vmm's KILN_MAX_SHARES */
#define SPEC_HOST_PATH_MAX 1024
/* Guest mount points go onto the kernel command line (2048 bytes on x86
 * with everything else): 8 of them must fit. */
#define SPEC_GUEST_PATH_MAX 128
#define SPEC_ENV_MAX 256
#define SPEC_ENV_KEY_MAX 255
#define SPEC_ENV_VALUE_MAX 32768
#define SPEC_LABELS_MAX 64
#define SPEC_LABEL_VALUE_MAX 255
#define SPEC_TIMEOUT_MAX_S 604800u /* 7 days, as the agent's longest timeout */
#define SPEC_MEM_MIN_MIB 32u       /* kiln-vmm's minimum */
#define SPEC_CPUS_DEFAULT 1u
#define SPEC_MEM_DEFAULT_MIB 128u
#define SPEC_HOSTNAME_DEFAULT "kiln"
/* disk_mib: the root disk's size (the overlay's virtual size); at most
 * --max-disk (default SPEC_DISK_DEFAULT_MAX_MIB), which is at most 1 TiB.
 * The overlay is sparse: the host stores only what the guest writes. */
#define SPEC_DISK_MAX_MIB (1u << 20)
#define SPEC_DISK_DEFAULT_MAX_MIB (64u << 10)

/* A client share (`"client": true`, issue 37 item 6): its files come
 * from an API client through kilnd (share_relay.h), not a host directory
 * (host_path ""); kiln-vmm waits timeout_ms for each answer. kiln-vmm has
 * one timeout for all of a sandbox's client shares, so they must agree. */
#define SPEC_SHARE_TIMEOUT_MIN_MS 100u
#define SPEC_SHARE_TIMEOUT_MAX_MS 60000u
#define SPEC_SHARE_TIMEOUT_DEFAULT_MS 5000u

struct share_spec {
	char host_path[SPEC_HOST_PATH_MAX + 1]; /* "" for a client share */
	char guest_path[SPEC_GUEST_PATH_MAX + 1];
	bool read_only;
	bool client;
	uint32_t timeout_ms; /* client shares only */
};

/* The daemon's limits (--max-cpus, --max-memory) and the default of
 * idle_timeout_s (--idle-timeout; 0: never). */
struct sandbox_limits {
	unsigned max_cpus;
	unsigned max_memory_mib;
	unsigned max_disk_mib; /* --max-disk: largest disk_mib, at most SPEC_DISK_MAX_MIB */
	uint32_t idle_timeout_default_s;
};

struct sandbox_spec {
	char image[IMAGE_NAME_MAX + 1];
	unsigned cpus;
	unsigned memory_mib;
	/* The root disk's size in MiB, at least the image's (checked at create,
	 * where the image is known); 0 (or absent): the image's own size. */
	unsigned disk_mib;
	char hostname[HOSTNAME_MAX + 1];
	json_t *env;    /* object: string -> string */
	json_t *labels; /* object: string -> string */
	struct share_spec shares[SPEC_MAX_SHARES];
	size_t nshares;
	uint32_t timeout_s;      /* 0: none */
	uint32_t idle_timeout_s; /* hibernate after this long without a request; 0: never */
	bool console;
	enum sandbox_network network;
	/* The create body's rule set, canonical (firewall_spec.h), or NULL:
	 * given only with network passt. It seeds <sandbox dir>/firewall.json,
	 * which holds the current rules from then on; so it is not part of
	 * sandbox_spec_to_json() (and NULL in a spec read back from meta.json). */
	json_t *firewall;
	/* The cgroup's limits (cgroup_limits.h): the `limits` object, every
	 * field filled in (defaults from cpus and memory_mib). */
	struct cg_limits limits;
};

/*
 * Validate a create body (a JSON object) into *out. 0, or -1 with e set
 * (bad_field, missing_field, unknown_field). *out needs no freeing after
 * a failure.
 */
int sandbox_spec_parse(const json_t *body, const struct sandbox_limits *lim,
		       struct sandbox_spec *out, struct api_err *e);

/* Does any share of s come from an API client ("client": true)? */
bool sandbox_spec_has_client_share(const struct sandbox_spec *s);

/* Release what a parsed spec owns; safe on a zeroed or freed spec. */
void sandbox_spec_free(struct sandbox_spec *s);

/* The spec as canonical JSON, every field present (new reference; NULL on OOM).
 * sandbox_spec_parse() of it gives the same spec back. */
json_t *sandbox_spec_to_json(const struct sandbox_spec *s);

/* POST .../stop body: NULL (no body) or {"grace_ms": 0..60000}; *grace_ms
 * defaults to the agent's default grace. */
int sandbox_stop_body_parse(const json_t *body, int *grace_ms, struct api_err *e);

/* POST .../start body: NULL (no body) or {}. */
int sandbox_start_body_parse(const json_t *body, struct api_err *e);

#endif

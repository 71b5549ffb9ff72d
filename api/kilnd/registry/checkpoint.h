/*
 * checkpoint: the pure half of snapshots in kilnd (docs/api.md,
 * "Checkpoints", "Hibernation", "Forks"): checkpoint names and request
 * bodies, the checkpoint and hibernation objects built from kiln-vmm's
 * snapshot reply, their check when meta.json is read back, and the body
 * of a fork (POST /v1/sandboxes with from_checkpoint).
 *
 * Contract:
 *  - Pure (jansson only). A checkpoint name becomes a directory name
 *    (<sandbox dir>/checkpoints/<name>), so it is narrow: the image-name
 *    rule, and never ending in ".tmp" (kiln-vmm writes DIR.tmp first and
 *    swaps it in; a checkpoint of that name would be its scratch space).
 *  - A fork inherits what its memory image fixes (image, cpus,
 *    memory_mib, shares): giving one is bad_field, not silently ignored.
 *    Everything else defaults to the source sandbox's value and is
 *    validated like a create, with the daemon's current limits.
 */
#ifndef KILN_CHECKPOINT_H
#define KILN_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "api/kilnd/supervision/vmm_control.h"

#define CHECKPOINT_NAME_MAX 64
/* "<sandbox id>/<checkpoint name>" */
#define CHECKPOINT_REF_MAX (SANDBOX_ID_LEN + 1 + CHECKPOINT_NAME_MAX)
/* Port mappings a checkpoint keeps for its forks (sandbox.h's SANDBOX_PORTS_MAX). */
#define CHECKPOINT_PORTS_MAX 16
/* The largest --max-checkpoints. */
#define CHECKPOINTS_LIMIT_MAX 1024
#define CHECKPOINTS_DEFAULT 8

/* 1..64 bytes of [A-Za-z0-9._-], first a letter or digit, not ending in ".tmp". */
bool checkpoint_name_valid(const char *s);

/* POST .../checkpoints: {"name": required, "compress": false, "incremental": true}. */
struct checkpoint_req {
	char name[CHECKPOINT_NAME_MAX + 1];
	bool compress;
	bool incremental; /* layer it on the sandbox's last checkpoint when kiln-vmm can */
};
int checkpoint_req_parse(const json_t *body, struct checkpoint_req *out, struct api_err *e);

/*
 * The checkpoint object (new reference; NULL when out of memory):
 * name, sandbox_id, created_at, paused (the sandbox's state when it was
 * taken), compressed, memory_bytes, memory_stored_bytes, state_bytes,
 * disk_bytes, size_bytes (what it takes on disk: stored memory + state +
 * disk copies), snapshot_ms (how long the guest was paused for it), base
 * (the checkpoint its memory is layered on, from r->base, or null). The
 * caller adds ports: the guest sides of the sandbox's port mappings then
 * (POST .../ports bodies without host_port), which its forks listen on.
 */
json_t *checkpoint_object(const char *sandbox_id, const char *name, int64_t created_ms,
			  bool compressed, bool paused, const struct control_reply *r);

/* The hibernation object of a sandbox: at, the same sizes, snapshot_ms. */
json_t *hibernation_object(int64_t at_ms, const struct control_reply *r);

/* A checkpoint object read back from meta.json, checked whole. 0 or -1 with e. */
int checkpoint_validate(const json_t *o, const char *sandbox_id, struct api_err *e);

/* The checkpoint called name in an array of them (borrowed), or NULL; *index its place. */
json_t *checkpoint_find(const json_t *list, const char *name, size_t *index);

/* "<sandbox id>/<name>" into id and name. 0, or -1 with e (bad_field). */
int checkpoint_ref_parse(const char *ref, char id[SANDBOX_ID_LEN + 1],
			 char name[CHECKPOINT_NAME_MAX + 1], struct api_err *e);

/* True when a create body asks for a fork (has "from_checkpoint"). */
bool fork_requested(const json_t *body);

/*
 * The fork's checkpoint reference: checks the body's fields first (an
 * inherited field is bad_field, anything unknown unknown_field). 0 or -1.
 */
int fork_ref_parse(const json_t *body, char id[SANDBOX_ID_LEN + 1],
		   char name[CHECKPOINT_NAME_MAX + 1], struct api_err *e);

/*
 * The fork's spec: the source's, with the body's hostname, env, labels,
 * timeout_s, idle_timeout_s and console over it, validated as a create.
 * *hostname_given: the body named one (otherwise the caller gives the
 * fork a hostname of its own). 0 with *out (free it), or -1 with e.
 */
int fork_spec_parse(const json_t *body, const struct sandbox_spec *source,
		    const struct sandbox_limits *lim, struct sandbox_spec *out,
		    bool *hostname_given, struct api_err *e);

#endif

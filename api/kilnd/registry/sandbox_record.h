/*
 * sandbox_record: a sandbox's data as the API shows it (the sandbox object
 * of docs/api.md) and as kilnd keeps it in <state>/sandboxes/<id>/meta.json,
 * so a restarted kilnd can list the sandboxes it had.
 *
 * Contract:
 *  - Pure (jansson and time formatting only). The record is plain data;
 *    the daemon's struct sandbox embeds one and guards it with its lock.
 *  - Restoring re-validates everything (the spec through
 *    sandbox_spec_parse with no daemon limits): a damaged or edited
 *    meta.json is refused with a message, never half-loaded.
 *  - boot and last_exit are JSON objects built by the functions below
 *    (or NULL), owned by the record; so are checkpoints (an array of
 *    checkpoint.h's objects, never NULL once created or restored; only
 *    meta.json holds it, the view counts it) and hibernation (the
 *    snapshot a hibernated sandbox waits in, or NULL).
 *  - owner_uid is the uid of the client that created the sandbox (its
 *    peer credentials); a meta.json written before owners existed has
 *    none and belongs to root. sandbox_record_visible() is the one rule
 *    for who may see and touch it.
 *  - creating is true from the first meta.json a create writes until the
 *    create's answer is decided (only meta.json holds it, the view does
 *    not show it): a kilnd that stops in between leaves a record that the
 *    next start removes (sandbox_dir_judge). A meta.json from before the
 *    field is still being created when it never booted (boot null): a
 *    create answers only after the first boot.
 *  - pooled is true while the sandbox belongs to a warm pool
 *    (sandbox_pool.c): no client sees it, root included, and a restarted
 *    kilnd removes it (the pool is filled again).
 *  - tmpl_build names the template a hidden sandbox builds or holds
 *    (templates.h): no client sees it either; it stays across restarts.
 */
#ifndef KILN_SANDBOX_RECORD_H
#define KILN_SANDBOX_RECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "api/kilnd/core/sandbox_state.h"
#include "api/kilnd/core/time_text.h"
#include "lib/base/err.h"

#define SANDBOX_META_VERSION 1

struct sandbox_record {
	char id[SANDBOX_ID_LEN + 1];
	uid_t owner_uid; /* the creating client's uid; 0: root */
	struct sandbox_spec spec;
	char image_path[PATH_MAX];
	enum sandbox_state state;
	int64_t created_ms, started_ms, stopped_ms; /* Unix ms; 0: never */
	int64_t expires_ms;                         /* 0: no deadline */
	int pid;                                    /* 0: no VMM */
	uint64_t vmm_start; /* the VMM's start time (/proc/PID/stat field 22; meta.json only); 0: unknown */
	unsigned boots;
	json_t *boot;        /* object or NULL */
	json_t *last_exit;   /* object or NULL */
	json_t *checkpoints; /* array of checkpoint objects */
	json_t *hibernation; /* object or NULL */
	json_t *ports;       /* the running boot's port mappings as POST .../ports bodies with
				their host_port (meta.json only: a restarted kilnd listens again); array or NULL */
	json_t *previews; /* its preview URLs (preview_spec.h's entries, tokens included; meta.json
				only: GET .../previews shows them); array, never NULL once created or restored */
	uint32_t jail_id; /* its kiln-vmm's uid and gid (docs/security.md); 0: not jailed */
	uint32_t egress_id; /* its egress proxy's uid and gid (egress_proxy_plan.h); 0: none yet */
	char cgroup[PATH_MAX]; /* the running VMM's cgroup directory; "": none */
	bool creating;         /* its create has not answered yet (meta.json only) */
	bool pooled; /* a warm pool's, waiting for a create (meta.json only): no client sees it */
	/* The template it was created from ("": none): its exec defaults
	 * apply, and the template is in use while the sandbox exists. */
	char tmpl[IMAGE_NAME_MAX + 1];
	/* The template this sandbox builds or holds ("": none; meta.json
	 * only, as "template_build"): hidden from every client like a pool's,
	 * but kept across restarts (its checkpoints are the template). */
	char tmpl_build[IMAGE_NAME_MAX + 1];
};

/* The API's sandbox object (new reference; NULL when out of memory). */
json_t *sandbox_record_view(const struct sandbox_record *r);

/* The meta.json object: the view plus image_path and a format version. */
json_t *sandbox_record_persist(const struct sandbox_record *r);

/* Load a meta.json object into *r (zeroed first). 0, or -1 with e. */
int sandbox_record_restore(const json_t *meta, struct sandbox_record *r, struct api_err *e);

/* What kilnd's start does with one directory of <state>/sandboxes. */
enum sandbox_dir_fate {
	SANDBOX_DIR_LOAD,   /* a sandbox: *r holds its record */
	SANDBOX_DIR_REMOVE, /* what a create or a delete cut short left: remove it, its cgroup too */
	SANDBOX_DIR_SKIP,   /* a damaged record: left as it is, for the operator to look at */
};

/*
 * The fate of the directory named id (a valid sandbox id: the caller
 * lists only those) from its meta.json: meta parsed, or NULL with
 * meta_err saying why it could not be read (a file kilnd did not finish
 * is never unreadable: meta.json is replaced by rename), or NULL and
 * meta_err NULL when there is no meta.json at all (a create cut short
 * before its first write). why says why for every fate but LOAD.
 * *r is the record for LOAD, zeroed otherwise. Pure.
 */
enum sandbox_dir_fate sandbox_dir_judge(const char *id, const json_t *meta, const char *meta_err,
					struct sandbox_record *r, struct err *why);

/*
 * Whether a loaded record r is a template build's hidden sandbox
 * (r->tmpl_build) that no template record names: a build that a kilnd
 * crash or --upgrade cut short, its VM perhaps still running. tmpl is
 * the record of template r->tmpl_build, NULL when there is none (a
 * record that could not be read is not NULL's case: the caller keeps
 * the sandbox then). why says why when true. Pure.
 */
bool sandbox_build_orphan(const struct sandbox_record *r, const json_t *tmpl, struct err *why);

/*
 * May a client with this uid see and touch the sandbox? Root sees every
 * sandbox but a warm pool's and a template's; any other uid only those it created. Everything that reaches
 * a sandbox for a client (sandbox_get, the list) asks this, and a "no"
 * looks exactly like a sandbox that does not exist.
 */
bool sandbox_record_visible(const struct sandbox_record *r, uid_t client_uid);

/* Most port mappings a record keeps (sandbox.h's SANDBOX_PORTS_MAX). */
#define RECORD_PORTS_MAX 16

/* Release what a record owns (spec, boot, last_exit, checkpoints, hibernation, ports, previews). */
void sandbox_record_free(struct sandbox_record *r);

/* The boot object: agent_ready_ms, guest_uptime_ms (< 0: unknown),
 * clock_synced; from "kernel", checkpoint null, snapshot_error null. */
json_t *sandbox_boot_json(double agent_ready_ms, int64_t guest_uptime_ms, bool clock_synced);

/* Where a boot came from: from "kernel", "hibernate" or "checkpoint";
 * checkpoint "<sandbox id>/<name>" or NULL; snapshot_error: why a wake
 * could not use its snapshot and booted the kernel instead, or NULL.
 * 0, or -1 when out of memory. */
int sandbox_boot_source(json_t *boot, const char *from, const char *checkpoint,
			const char *snapshot_error);

/* How the VMM ended, for last_exit (docs/api.md). */
struct vmm_end {
	int64_t at_ms;
	const char *reason; /* stopped, timeout, guest_shutdown, crashed, boot_failed, restore_failed,
				  hibernated, restored, kilnd_restart */
	int exit_status;    /* < 0: none (a signal, or unknown) */
	int signal;         /* 0: none */
	json_t *msg;        /* string or NULL; stolen */
	json_t *console_tail; /* array or NULL (then []); stolen */
	json_t *timeline;     /* object or NULL; stolen */
};

/* The last_exit object; takes the JSON values of e in every case. */
json_t *sandbox_exit_json(struct vmm_end *e);

#endif

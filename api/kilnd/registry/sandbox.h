/*
 * sandbox: kilnd's sandbox registry and lifecycle (create, start, stop,
 * delete, timeouts, supervision, persistence).
 *
 * Contract:
 *  - One mutex (d->reg.mu) guards the registry and every sandbox's mutable
 *    fields; it is never held across anything that waits for a guest or a
 *    process (boot waits, agent calls, stop waits), only across short
 *    bookkeeping and the meta.json write.
 *  - Every state change goes through sandbox_transition(): lifecycle
 *    requests that do not fit the state are 409 wrong_state, and a
 *    transient state (booting, stopping, deleting) belongs to the one
 *    request that entered it. The VMM's own exit (supervise.c's on_exit)
 *    moves a running sandbox to stopped/crashed; in a transient state it
 *    only records how the VMM ended and leaves the rest to the owner.
 *  - Sandboxes are reference counted: the registry holds one reference,
 *    each request and each monitor thread its own. sandbox_get() returns
 *    a new reference; sandbox_put() drops it.
 *  - A sandbox's files live in <state-dir>/sandboxes/<id>/: overlay,
 *    console.log, vmm.log, meta.json (rewritten atomically at every
 *    change, so a restarted kilnd lists what it had), and vm/, the jail's
 *    directory (sandbox_jail.h): vsock.sock, control.sock,
 *    checkpoints/<name>/ and, while hibernated, hibernate/image (kiln-vmm
 *    snapshot directories).
 *  - Pause, resume and checkpoints keep the state (or go running ↔
 *    paused) and mark the sandbox busy meanwhile: other lifecycle
 *    requests and agent requests wait for them. An agent request (exec,
 *    files, processes, ports) on a hibernated sandbox wakes it first.
 */
#ifndef KILN_SANDBOX_H
#define KILN_SANDBOX_H

#include <stdbool.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/core/listen.h"
#include "api/kilnd/core/query.h"
#include "lib/base/err.h"

/* Create the registry and load <state-dir>/sandboxes. -1 with e. */
int sandboxes_init(struct kilnd *d, struct err *e);

/* The sandbox with this id (a new reference) if the client `who` may
 * see it (sandbox_record_visible: root, or the uid that created it), or
 * NULL with e (sandbox_not_found, the same for a sandbox of another uid:
 * its existence is not revealed). The only way a request reaches a
 * sandbox by id. Getting and putting one is activity for its idle
 * timeout. */
struct sandbox *sandbox_get(struct kilnd *d, const struct peer *who, const char *id,
			    struct api_err *e);
void sandbox_put(struct sandbox *sb);
/* sandbox_put without the activity: for a request that was refused (a
 * preview request without its token). */
void sandbox_put_quiet(struct sandbox *sb);
/* Activity on the sandbox with this id (if any, and if who may see it)
 * for a request that holds no reference while it waits on the guest (a
 * long process wait). */
void sandbox_touch(struct kilnd *d, const struct peer *who, const char *id);

/* The API's sandbox object (new reference; NULL when out of memory). */
json_t *sandbox_view(struct sandbox *sb);

/* {"sandboxes":[...]} filtered by f, oldest first: those who may see. */
json_t *sandbox_list(struct kilnd *d, const struct peer *who, const struct list_filter *f);

/*
 * POST /v1/sandboxes: validate, create the directory, boot, wait for the
 * agent. 0 with *view; -1 with e, and then nothing is left behind. A
 * body with from_checkpoint is a fork (sandbox_fork).
 */
int sandbox_create(struct kilnd *d, const json_t *body, const struct peer *peer, json_t **view,
		   struct api_err *e);

/* POST .../start: boot a stopped or crashed sandbox again; wake a hibernated one. */
int sandbox_start(struct sandbox *sb, json_t **view, struct api_err *e);

/* POST .../stop (and timeouts: reason "timeout"). view may be NULL. */
int sandbox_stop(struct sandbox *sb, int grace_ms, const char *reason, json_t **view,
		 struct api_err *e);

/* DELETE: stop if needed, then remove it and everything it owned. */
int sandbox_delete(struct sandbox *sb, struct api_err *e);

/*
 * For exec, file and process requests: a new client of libkiln's agent
 * API (include/kiln/agent.h) for a running sandbox in *a
 * (kiln_agent_free it) and the sandbox's base environment (*env: a new
 * reference). Waits for a checkpoint, hibernation or wake under way;
 * wakes a hibernated sandbox; 409 when it is not running then.
 *
 * A kiln_agent's errmsg, errcode and errkind are the last failure of any
 * thread using it, and kilnd serves requests on many threads: so every
 * request and job gets a kiln_agent of its own (kiln_agent_new is a
 * malloc, nothing connects until a call) and reads its failure from it
 * (api_err_from_agent). Only port_fwd shares one between its relays,
 * and it reads no failure.
 */
int sandbox_agent_new(struct sandbox *sb, kiln_agent **a, json_t **env, struct api_err *e);

/* The runtime defaults of the sandbox's image (images_defaults: an
 * imported image's WorkingDir, User, ...; new reference), or NULL. */
json_t *sandbox_image_defaults(struct sandbox *sb);

/* Port mappings per sandbox (docs/api.md, .../ports). */
#define SANDBOX_PORTS_MAX 16

struct port_spec; /* core/port_spec.h */

/*
 * POST .../ports: forward 127.0.0.1:host_port (0: any) to the spec's
 * guest TCP or vsock port for as long as this boot runs (the mapping ends
 * with the VMM). 0 with *view, or -1 with e (wrong_state, limit_reached,
 * exists, ...).
 */
int sandbox_port_add(struct sandbox *sb, const struct port_spec *spec, json_t **view,
		     struct api_err *e);
/* GET .../ports: {"ports":[...]} (new reference; NULL when out of memory). */
json_t *sandbox_port_list(struct sandbox *sb);
/* DELETE .../ports/{host_port}: 0, or -1 with e (not_found). */
int sandbox_port_remove(struct sandbox *sb, uint16_t host_port, struct api_err *e);

/* ---- preview URLs (docs/api.md, "Preview URLs"; sandbox_previews.c) ---- */

/*
 * Previews belong to the sandbox record (meta.json): they outlive stops,
 * hibernations and kilnd restarts, and go with the sandbox. A fork starts
 * without any (its own tokens). POST .../previews: 0 with *view (the
 * preview object, its token included), or -1 with e (exists, limit_reached).
 */
int sandbox_preview_add(struct sandbox *sb, uint16_t port, bool public_, json_t **view,
			struct api_err *e);
/* GET .../previews: {"previews":[...]} (new reference; NULL when out of memory). */
json_t *sandbox_preview_list(struct sandbox *sb);
/* DELETE .../previews/{port}: 0, or -1 with e (not_found). */
int sandbox_preview_remove(struct sandbox *sb, uint16_t port, struct api_err *e);

/* What the preview proxy learns of a preview it is asked for. */
struct preview_grant {
	bool public_;
	char token[PREVIEW_TOKEN_LEN + 1]; /* "" when public */
	enum sandbox_state state;
};
/*
 * The proxy's lookup, for a client that has no uid (the token is its
 * credential): the sandbox with this id (a new reference: the request's;
 * activity for the idle timeout) when it has a preview of port, with *g;
 * NULL when there is no such sandbox (a warm pool's counts as none) or
 * no such preview.
 */
struct sandbox *sandbox_preview_find(struct kilnd *d, const char *id, uint16_t port,
				     struct preview_grant *g);
/* The sandbox's agent socket, for the proxy's connection to the guest port. */
const char *sandbox_vsock_path(const struct sandbox *sb);

/* ---- networking (docs/api.md, "Networking and firewall") ---- */

struct fw_totals; /* firewall_spec.h */

/* GET .../firewall: {"network","running","rules","counters"}; 409 wrong_state
 * without a network. */
int sandbox_firewall_get(struct sandbox *sb, json_t **out, struct api_err *e);
/* PUT .../firewall: validate the rule set, save it (firewall.json, atomic),
 * apply it to a running or paused VMM (firewall-set). *out
 * {"network","rules","applied","cut"}. */
int sandbox_firewall_set(struct sandbox *sb, const json_t *rules, json_t **out, struct api_err *e);
/* GET .../firewall/log: {"lines": [...]}, the last FIREWALL_LOG_LINES
 * denied-flow lines kiln-vmm logged (--firewall-log, rate-limited) in this
 * sandbox's vmm.log, oldest first; 409 wrong_state without a network. */
int sandbox_firewall_log(struct sandbox *sb, json_t **out, struct api_err *e);
/* /metrics: verdict totals over the running sandboxes with a network, and how many answered. */
void sandboxes_firewall_totals(struct kilnd *d, struct fw_totals *t, unsigned *filtered);

/* ---- snapshots (docs/api.md, "Pause, checkpoints, forks, hibernation") ---- */

struct checkpoint_req; /* checkpoint.h */

/* POST .../pause and .../resume: the sandbox object. */
int sandbox_pause(struct sandbox *sb, json_t **view, struct api_err *e);
int sandbox_resume(struct sandbox *sb, json_t **view, struct api_err *e);
/* POST .../hibernate: snapshot into <dir>/hibernate, end the VMM. */
int sandbox_hibernate(struct sandbox *sb, json_t **view, struct api_err *e);
/* POST .../wake: the sandbox object plus woke_from ("snapshot" or
 * "cold_boot") and fallback_reason (why the snapshot was not used, or null). */
int sandbox_wake(struct sandbox *sb, json_t **view, struct api_err *e);
/* POST .../checkpoints: *cp the new checkpoint object. */
int sandbox_checkpoint_create(struct sandbox *sb, const struct checkpoint_req *req, json_t **cp,
			      struct api_err *e);
/* GET .../checkpoints: {"checkpoints":[...]} oldest first (NULL when out of memory). */
json_t *sandbox_checkpoint_list(struct sandbox *sb);
/* GET .../checkpoints/{cp}: a copy of the object, or -1 with e (checkpoint_not_found). */
int sandbox_checkpoint_get(struct sandbox *sb, const char *name, json_t **cp, struct api_err *e);
/* DELETE .../checkpoints/{cp}. */
int sandbox_checkpoint_delete(struct sandbox *sb, const char *name, struct api_err *e);
/* POST .../checkpoints/{cp}/restore: in place; everything since is gone. */
int sandbox_checkpoint_restore(struct sandbox *sb, const char *name, json_t **view,
			       struct api_err *e);
/* POST /v1/sandboxes {"from_checkpoint":"<id>/<name>",...}: a new sandbox
 * of peer's, from a checkpoint of a sandbox peer may see. */
int sandbox_fork(struct kilnd *d, const json_t *body, const struct peer *peer, json_t **view,
		 struct api_err *e);

/* Once a second: stop sandboxes whose timeout_s passed, hibernate those
 * idle for their idle_timeout_s. */
void sandboxes_tick(struct kilnd *d);

/* Daemon shutdown: stop every sandbox that runs and wait for its VMM. */
void sandboxes_shutdown(struct kilnd *d);

/* Release the registry (after sandboxes_shutdown, with no request left).
 * False when a thread still holds a sandbox: then d must stay allocated. */
bool sandboxes_free(struct kilnd *d);

/* ---- warm pools (docs/api.md "Warm pools"; sandbox_pool.c) ---- */

/* Check each --pool (its image exists, its spec is within the daemon's
 * limits) and set the pools up, empty. 0, or -1 with e. */
int sandbox_pools_init(struct kilnd *d, struct err *e);
/* Start filling them (once the API serves). */
void sandbox_pools_start(struct kilnd *d);
/* Stop filling the pools (shutdown, handover); with discard, remove their
 * ready sandboxes too. Does not wait for a fill under way. */
void sandbox_pools_stop(struct kilnd *d, bool discard);
/* After sandboxes_shutdown(): wait for the filler, remove what the pools
 * still hold (templates included), release them. */
void sandbox_pools_free(struct kilnd *d);
/*
 * A create of spec by peer, served by a pool when one fits and has a
 * sandbox ready: 0 with *view (the client's sandbox; spec's env and labels
 * taken over). 1: no pool served it (none fits, none ready, or the one
 * taken failed and was removed): create it cold. Never fails the request.
 */
int sandbox_pool_claim(struct kilnd *d, struct sandbox_spec *spec, const struct peer *peer,
		       json_t **view);
/* GET /v1/health's "pools" array (new reference; NULL when out of memory). */
json_t *sandbox_pools_view(struct kilnd *d);

/* Sandboxes per state (for /metrics and health) and in total: those clients
 * see; a pool's and a template's hidden ones are not counted. */
void sandboxes_count(struct kilnd *d, unsigned counts[SANDBOX_STATE_COUNT], size_t *total);

#endif

/*
 * templates: named templates built from a build file (docs/api.md,
 * "Templates"): their records, their hidden sandboxes, the step cache,
 * and sandboxes created from them.
 *
 * Contract:
 *  - A template is a record, <state-dir>/templates/NAME.json (written
 *    atomically), naming a hidden sandbox of kilnd's (rec.tmpl_build:
 *    no client sees it, it is kept across restarts, it is stopped) whose
 *    checkpoint "ready" is the template's memory and root disk (the
 *    base image plus the build's changes, as the checkpoint's overlay
 *    copy), and whose checkpoints "s<N>" are the step cache: step N's
 *    key -> the file system after it. The cache is the union of the live
 *    templates' steps: at most BUILDFILE_STEPS_MAX + 1 checkpoints per
 *    template, dropped with it.
 *  - A sandbox created from a template (sandbox_from_template) forks the
 *    ready checkpoint; when the snapshot cannot be used (other cpus or
 *    memory_mib, or the restore fails) it boots the kernel on a copy of
 *    the checkpoint's disk instead, and its boot object says which.
 *    It records the template's name (rec.tmpl): the template's
 *    working_dir and user stay its exec defaults, so the template is in
 *    use while such a sandbox exists (DELETE is 409 in_use). Nothing
 *    else depends on the template's files once the create answered: the
 *    fork's memory is a MAP_PRIVATE mapping of files kilnd never changes
 *    in place, and its disk a copy.
 *  - Every client that may use kilnd may build, list and delete
 *    templates (as images); a sandbox from one is its creator's.
 */
#ifndef KILN_TEMPLATES_H
#define KILN_TEMPLATES_H

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/images/buildfile.h"
#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/listen.h"

struct sandbox;

#define TEMPLATE_READY_CHECKPOINT "ready"

/* At start: the work directories (templates/.build-*) of builds that a
 * kilnd crash or --upgrade cut short are removed (their hidden sandboxes
 * go in sandboxes_init, sandbox_build_orphan). */
void templates_init(struct kilnd *d);

/* GET /v1/templates: {"templates": [...]} (new reference; NULL when out of memory). */
json_t *templates_list(struct kilnd *d);
/* GET /v1/templates/{name}: 0 and *out, or -1 with e (not_found). */
int templates_get(struct kilnd *d, const char *name, json_t **out, struct api_err *e);
/* DELETE /v1/templates/{name}: 0, or -1 with e (not_found; in_use naming
 * a sandbox created from it; busy while it is being rebuilt, or while a
 * create or build reads its hidden sandbox: decided under reg.mu before
 * the record goes, and every reader re-checks the record under reg.mu
 * before it holds the sandbox, so no delete leaves the sandbox behind). */
int templates_delete(struct kilnd *d, const char *name, struct api_err *e);
/* The template's record (new reference), or NULL with e (not_found). */
json_t *template_load(struct kilnd *d, const char *name, struct api_err *e);

/* A build of name starts (0) or is refused (-1 with e: busy, limit_reached, in_use). */
int template_build_begin(struct kilnd *d, const char *name, struct api_err *e);
void template_build_end(struct kilnd *d, const char *name);

/*
 * The longest cached prefix of keys[0..n): 0 with *hit the index of the
 * last cached step (its checkpoint cp of sandbox id), or -1: none.
 */
int templates_cache_find(struct kilnd *d, char (*keys)[BUILDFILE_KEY_LEN + 1], size_t n,
			 size_t *hit, char *id, char *cp);

/*
 * The build's hidden sandbox for template name, running: booted from the
 * image (from_id NULL; spec a create body) or forked from checkpoint
 * from_cp of sandbox from_id. A new reference, or NULL with e.
 */
struct sandbox *template_sandbox_start(struct kilnd *d, const char *name, const json_t *spec,
				       const char *from_id, const char *from_cp, struct api_err *e);
/* Its id (for the record). */
const char *template_sandbox_id(const struct sandbox *sb);
/* The total size of its checkpoints (what the template takes on disk). */
uint64_t template_sandbox_bytes(struct kilnd *d, const char *id);

/*
 * Publish the template: its record rec (name, sandbox, ...) written; the
 * sandbox of a template it replaces is removed. -1 with e (in_use: the
 * old template gained a sandbox meanwhile; busy: a create or build reads
 * the old sandbox right now).
 */
int template_commit(struct kilnd *d, json_t *rec, struct api_err *e);

/* POST /v1/sandboxes {"template": NAME, ...} (sandbox.c sends it here). */
bool template_requested(const json_t *body);
int sandbox_from_template(struct kilnd *d, const json_t *body, const struct peer *peer,
			  json_t **view, struct api_err *e);

/* The template's exec defaults {"working_dir", "user"} (new reference) or NULL. */
json_t *template_defaults(struct kilnd *d, const char *name);

#endif

/* One sandbox's requests: create, start, stop, delete, agent access; see sandbox.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/images/images.h"
#include "api/kilnd/images/templates.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/vmm_control.h"

struct sandbox *sandbox_new(struct kilnd *d)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	pthread_condattr_t ca;

	if (!sb)
		return NULL;
	sb->d = d;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sb->cv, &ca);
	pthread_condattr_destroy(&ca);
	return sb;
}

void sandbox_free(struct sandbox *sb)
{
	/* Normally closed when the VMM ended; nothing else holds them. */
	for (size_t i = 0; i < sb->nports; i++)
		port_fwd_close(sb->ports[i]);
	sandbox_record_free(&sb->rec);
	json_decref(sb->exec_defaults);
	pthread_cond_destroy(&sb->cv);
	free(sb);
}

void sandbox_put(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	bool last;

	kilnd_lock(d);
	/* A request ending counts as activity for the idle timeout. */
	sb->active_mono = mono_ms();
	last = --sb->refs == 0;
	kilnd_unlock(d);
	if (last)
		sandbox_free(sb);
}

void sandbox_put_quiet(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	bool last;

	kilnd_lock(d);
	last = --sb->refs == 0;
	kilnd_unlock(d);
	if (last)
		sandbox_free(sb);
}

struct sandbox *sandbox_get(struct kilnd *d, const struct peer *who, const char *id,
			    struct api_err *e)
{
	struct sandbox *sb = NULL;

	if (sandbox_id_valid(id)) {
		kilnd_lock(d);
		sb = sandbox_find_locked(d, id);
		/* Another uid's sandbox is answered like a missing one. */
		if (sb && !sandbox_record_visible(&sb->rec, who->uid))
			sb = NULL;
		if (sb) {
			sb->refs++;
			sb->active_mono = mono_ms();
		}
		kilnd_unlock(d);
	}
	if (!sb)
		api_err_set(e, API_E_SANDBOX_NOT_FOUND,
			    "no sandbox '%.64s' (GET /v1/sandboxes lists them)", id);
	return sb;
}

void sandbox_touch(struct kilnd *d, const struct peer *who, const char *id)
{
	struct sandbox *sb;

	kilnd_lock(d);
	sb = sandbox_find_locked(d, id);
	if (sb && sandbox_record_visible(&sb->rec, who->uid))
		sb->active_mono = mono_ms();
	kilnd_unlock(d);
}

uint64_t sandbox_disk_size(const char *image_path, unsigned disk_mib)
{
	struct stat st;

	if (disk_mib)
		return (uint64_t)disk_mib << 20;
	return stat(image_path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int64_t sandbox_overlay_stored(const char *dir)
{
	char ovl[PATH_MAX + 16];
	struct stat st;

	snprintf(ovl, sizeof(ovl), "%s/overlay", dir);
	return stat(ovl, &st) == 0 ? (int64_t)st.st_blocks * 512 : -1;
}

/*
 * The root disk, outside the lock (stats): its size (disk_mib, else the
 * image's) and what its overlay holds on the host, which is what the guest
 * wrote (the overlay is sparse). Null fields for what cannot be read.
 */
static json_t *disk_view(const char *dir, const char *image_path, unsigned disk_mib)
{
	uint64_t size = sandbox_disk_size(image_path, disk_mib);
	int64_t stored = sandbox_overlay_stored(dir);

	return json_pack("{s:o,s:o}", "size_bytes",
			 size ? json_integer((json_int_t)size) : json_null(), "stored_bytes",
			 stored >= 0 ? json_integer(stored) : json_null());
}

json_t *sandbox_view(struct sandbox *sb)
{
	char image_path[PATH_MAX];
	unsigned disk_mib;
	json_t *v;

	kilnd_lock(sb->d);
	v = sandbox_record_view(&sb->rec);
	snprintf(image_path, sizeof(image_path), "%s", sb->rec.image_path);
	disk_mib = sb->rec.spec.disk_mib;
	kilnd_unlock(sb->d);
	if (v && json_object_set_new(v, "disk", disk_view(sb->dir, image_path, disk_mib))) {
		json_decref(v);
		return NULL;
	}
	return v;
}

/*
 * Resolve each share's host directory (symlinks included) and check it
 * may be shared: it must be a directory, and a client other than root may
 * only share beneath a --share-root. The resolved path replaces the given
 * one, so the check and the boot see the same directory.
 */
static int authorize_shares(struct kilnd *d, struct sandbox_spec *s, const struct peer *peer,
			    struct api_err *e)
{
	for (size_t i = 0; i < s->nshares; i++) {
		char real[PATH_MAX];
		struct stat st;
		bool ok = peer->uid == 0;

		if (s->shares[i].client) /* no host directory: an API client serves it */
			continue;
		if (!realpath(s->shares[i].host_path, real) || stat(real, &st) < 0) {
			api_err_set(e, API_E_BAD_FIELD, "shares[%zu]: host_path '%s': %s", i,
				    s->shares[i].host_path, strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			api_err_set(e, API_E_BAD_FIELD,
				    "shares[%zu]: host_path '%s' is not a directory", i,
				    s->shares[i].host_path);
			return -1;
		}
		if (!host_path_valid(real) || strlen(real) > SPEC_HOST_PATH_MAX) {
			api_err_set(e, API_E_BAD_FIELD,
				    "shares[%zu]: host_path '%s' resolves to '%s', which has a control character or is too long",
				    i, s->shares[i].host_path, real);
			return -1;
		}
		for (size_t r = 0; r < d->cfg.nshare_roots && !ok; r++) {
			const char *root = d->cfg.share_roots[r];
			size_t n = strlen(root);

			ok = strcmp(root, "/") == 0 ||
				(strncmp(real, root, n) == 0 &&
				 (real[n] == '\0' || real[n] == '/'));
		}
		if (!ok) {
			api_err_set(e, API_E_FORBIDDEN,
				    "shares[%zu]: '%s' is not beneath a --share-root of this kilnd; only root may share other directories",
				    i, real);
			return -1;
		}
		memcpy(s->shares[i].host_path, real, strlen(real) + 1); /* fits: checked above */
	}
	return 0;
}

static int new_id_locked(struct kilnd *d, char *id)
{
	for (int tries = 0; tries < 16; tries++) {
		uint8_t rnd[SANDBOX_ID_RANDOM_BYTES];

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -errno;
		sandbox_id_format(rnd, id);
		if (!sandbox_find_locked(d, id))
			return 0;
	}
	return -EEXIST;
}

size_t sandbox_clients_count_locked(const struct kilnd *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->reg.n; i++)
		n += !d->reg.v[i]->rec.pooled && !d->reg.v[i]->rec.tmpl_build[0];
	return n;
}

struct sandbox *sandbox_create_entry(struct kilnd *d, uid_t owner, struct sandbox_spec *spec,
				     const char *image, bool hostname_from_id, bool pooled,
				     struct api_err *e)
{
	struct sandbox *sb = sandbox_new(d);
	int r;

	if (!sb) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: out of memory");
		sandbox_spec_free(spec);
		return NULL;
	}
	kilnd_lock(d);
	if (atomic_load(&d->shutting_down)) {
		kilnd_unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		goto fail_sb;
	}
	if (!pooled && sandbox_clients_count_locked(d) >= d->cfg.max_sandboxes) {
		kilnd_unlock(d);
		api_err_set(e, API_E_LIMIT_REACHED,
			    "%u sandboxes exist (--max-sandboxes); delete one first",
			    d->cfg.max_sandboxes);
		goto fail_sb;
	}
	/* images_delete() removes an image under this lock once no sandbox
	 * names it: checked here, a create either sees the file or never
	 * becomes a user of a deleted image. */
	if (access(image, F_OK) < 0) {
		kilnd_unlock(d);
		api_err_set(e, API_E_IMAGE_NOT_FOUND,
			    "image '%s' was deleted while this sandbox was being created: import it again",
			    spec->image);
		goto fail_sb;
	}
	if ((r = new_id_locked(d, sb->rec.id)) || (r = sandbox_registry_add_locked(d, sb))) {
		kilnd_unlock(d);
		api_err_set(e, API_E_INTERNAL, "sandbox create: no id: %s", strerror(-r));
		goto fail_sb;
	}
	sb->refs++; /* the caller's */
	sb->rec.owner_uid = owner;
	sb->rec.pooled = pooled;
	sb->rec.spec = *spec;
	memset(spec, 0, sizeof(*spec));
	/* "kiln-" and 12 hex digits: a valid hostname of its own. */
	if (hostname_from_id)
		snprintf(sb->rec.spec.hostname, sizeof(sb->rec.spec.hostname), "kiln-%s",
			 sb->rec.id);
	snprintf(sb->rec.image_path, sizeof(sb->rec.image_path), "%s", image);
	sb->rec.state = SANDBOX_BOOTING;
	/* Until the create's answer is decided (sandbox_create_finish). */
	sb->rec.creating = true;
	sb->rec.created_ms = wall_ms();
	sb->rec.checkpoints = json_array();
	/* check_config() made sure these fit. */
	r = sandbox_pathf(sb->dir, sizeof(sb->dir), "%s/sandboxes/%s", d->cfg.state_dir,
			  sb->rec.id);
	if (!r)
		r = sandbox_pathf(sb->vsock, sizeof(sb->vsock), "%s/vm/vsock.sock", sb->dir);
	if (!r)
		r = sandbox_pathf(sb->control, sizeof(sb->control), "%s/vm/control.sock", sb->dir);
	kilnd_unlock(d);
	if (r || !sb->rec.checkpoints) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: %s",
			    r ? "the state directory's path is too long" : "out of memory");
		goto fail_registered;
	}
	if (mkdir(sb->dir, 0700) < 0) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: cannot create %s: %s", sb->dir,
			    strerror(errno));
		goto fail_registered;
	}
	/* The record says "being created" before anything else lands in the
	 * directory: a kilnd killed from here on leaves what its next start
	 * removes (sandbox_dir_judge), never a sandbox that did not boot. */
	kilnd_lock(d);
	r = sandbox_persist_locked(sb);
	kilnd_unlock(d);
	if (r) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: cannot write %s/meta.json: %s",
			    sb->dir, strerror(-r));
		sandbox_remove_dir(sb->dir);
		goto fail_registered;
	}
	kilnd_log("sandbox %s: created (image %s, %u vCPUs, %u MiB)", sb->rec.id,
		  sb->rec.spec.image, sb->rec.spec.cpus, sb->rec.spec.memory_mib);
	return sb;
fail_registered:
	kilnd_lock(d);
	sandbox_registry_remove_locked(d, sb);
	kilnd_unlock(d);
	sandbox_put(sb);
	return NULL;
fail_sb:
	sandbox_free(sb);
	sandbox_spec_free(spec);
	return NULL;
}

int sandbox_create_finish(struct sandbox *sb, const struct boot_src *src, json_t **view,
			  struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;
	int r;

	if (sandbox_boot(sb, src, e) == 0) {
		/* Answered: from now on a restart keeps it. The client gets
		 * its 201 only once meta.json says so. */
		kilnd_lock(d);
		sb->rec.creating = false;
		/* A DELETE that got in first owns the directory now. */
		r = sb->rec.state == SANDBOX_DELETING ? 0 : sandbox_persist_locked(sb);
		if (r) {
			sb->rec.creating = true;
			api_err_set(e, API_E_INTERNAL,
				    "sandbox %s: cannot save meta.json: %s; the sandbox was removed",
				    sb->rec.id, strerror(-r));
			sandbox_kill_locked(sb);
		}
		kilnd_unlock(d);
		if (r == 0) {
			*view = sandbox_view(sb);
			sandbox_put(sb);
			return 0;
		}
	}
	/* A failed create leaves nothing behind. It is crashed now, so a
	 * concurrent DELETE may have taken it: then that one cleans up. */
	kilnd_lock(d);
	r = sandbox_transition(sb->rec.state, SANDBOX_EV_DELETE, &to, sb->rec.id, NULL);
	if (r == 0) {
		sb->rec.state = to;
		sandbox_registry_remove_locked(d, sb);
	}
	kilnd_unlock(d);
	if (r == 0)
		sandbox_remove_dir(sb->dir);
	sandbox_put(sb);
	return -1;
}

/* An imported image's Env under the create's own env (which wins):
 * image < sandbox env < request env (docs/api.md, "Images"). */
static int image_env_under(struct kilnd *d, struct sandbox_spec *spec, struct api_err *e)
{
	json_t *def = images_defaults(d, spec->image), *env;

	if (!json_is_object(json_object_get(def, "env"))) {
		json_decref(def);
		return 0;
	}
	env = json_deep_copy(json_object_get(def, "env"));
	json_decref(def);
	if (!env || (spec->env && json_object_update(env, spec->env) < 0)) {
		json_decref(env);
		api_err_set(e, API_E_INTERNAL, "create: out of memory");
		return -1;
	}
	json_decref(spec->env);
	spec->env = env;
	return 0;
}

int sandbox_create(struct kilnd *d, const json_t *body, const struct peer *peer, json_t **view,
		   struct api_err *e)
{
	struct sandbox_spec spec;
	char image[PATH_MAX];
	struct sandbox *sb;

	if (fork_requested(body))
		return sandbox_fork(d, body, peer, view, e);
	if (template_requested(body))
		return sandbox_from_template(d, body, peer, view, e);
	if (sandbox_spec_parse(body, &d->cfg.limits, &spec, e))
		return -1;
	if (authorize_shares(d, &spec, peer, e) || images_find(d, spec.image, image, e) ||
	    images_check_disk(spec.image, image, spec.disk_mib, e) ||
	    image_env_under(d, &spec, e)) {
		sandbox_spec_free(&spec);
		return -1;
	}
	/* A warm pool's sandbox when one fits (sandbox_pool.c); else a boot. */
	if (sandbox_pool_claim(d, &spec, peer, view) == 0) {
		sandbox_spec_free(&spec);
		return 0;
	}
	sb = sandbox_create_entry(d, peer->uid, &spec, image, false, false, e);
	if (!sb)
		return -1;
	return sandbox_create_finish(sb, NULL, view, e);
}

bool sandbox_cv_wait_locked(struct sandbox *sb, int64_t deadline_mono)
{
	int64_t left = deadline_mono - mono_ms();
	struct timespec dl;

	if (left <= 0)
		return false;
	mono_deadline_in(&dl, left);
	return pthread_cond_timedwait(&sb->cv, &sb->d->reg.mu, &dl) != ETIMEDOUT;
}

void sandbox_wait_unbusy_locked(struct sandbox *sb)
{
	/* Each ends within its control deadline or the boot timeout. An idle
	 * hibernation or a wake is not the client's doing: a lifecycle
	 * request waits for it rather than failing with 409. */
	while (sb->busy_op || sb->rec.state == SANDBOX_HIBERNATING ||
	       (sb->rec.state == SANDBOX_BOOTING && sb->waking))
		pthread_cond_wait(&sb->cv, &sb->d->reg.mu);
}

int sandbox_lock_unbusy(struct sandbox *sb, struct api_err *e)
{
	kilnd_lock(sb->d);
	sandbox_wait_unbusy_locked(sb);
	if (atomic_load(&sb->d->shutting_down)) {
		kilnd_unlock(sb->d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		return -1;
	}
	return 0;
}

int sandbox_start(struct sandbox *sb, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	kilnd_lock(d);
	if (atomic_load(&d->shutting_down)) {
		kilnd_unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		return -1;
	}
	sandbox_wait_unbusy_locked(sb);
	if (sb->rec.state == SANDBOX_HIBERNATED) {
		kilnd_unlock(d);
		if (sandbox_wake_locked(sb, e))
			return -1;
		*view = sandbox_view(sb);
		return 0;
	}
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_START, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	if (sandbox_boot(sb, NULL, e))
		return -1;
	*view = sandbox_view(sb);
	return 0;
}

int sandbox_stop(struct sandbox *sb, int grace_ms, const char *reason, json_t **view,
		 struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;
	struct control_reply rep;
	struct api_err ce;
	bool was_paused;

	kilnd_lock(d);
	sandbox_wait_unbusy_locked(sb);
	was_paused = sb->rec.state == SANDBOX_PAUSED;
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_STOP, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = reason;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	/* A paused guest cannot shut down: let it run for its clean stop, or
	 * kill it when kiln-vmm will not resume it. */
	if (was_paused &&
	    vmm_control_call(sb->control, CTL_RESUME, NULL, false, VMM_CONTROL_TIMEOUT_MS, &rep,
			     &ce)) {
		kilnd_log("sandbox %s: resuming it for its stop failed (%s); killing it",
			  sb->rec.id, ce.msg);
		kilnd_lock(d);
		sandbox_kill_locked(sb);
		kilnd_unlock(d);
	}
	sandbox_halt(sb, grace_ms);
	kilnd_lock(d);
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_STOPPED, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	sb->stop_reason = NULL;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	kilnd_log("sandbox %s: stopped (%s)", sb->rec.id, reason);
	if (view)
		*view = sandbox_view(sb);
	return 0;
}

int sandbox_delete(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;
	bool was_paused;

	kilnd_lock(d);
	sandbox_wait_unbusy_locked(sb);
	if (sb->cp_readers) {
		api_err_set(e, API_E_BUSY,
			    "sandbox %s: a fork or restore is reading one of its checkpoints; retry in a moment",
			    sb->rec.id);
		kilnd_unlock(d);
		return -1;
	}
	was_paused = sb->rec.state == SANDBOX_PAUSED;
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_DELETE, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = "stopped";
	sandbox_persist_locked(sb);
	/* A paused guest would not answer the shutdown; its disk goes anyway. */
	if (was_paused)
		sandbox_kill_locked(sb);
	kilnd_unlock(d);
	sandbox_halt(sb, AGENT_GRACE_DEFAULT_MS);
	kilnd_lock(d);
	sandbox_registry_remove_locked(d, sb);
	kilnd_unlock(d);
	if (d->cfg.cgroups)
		sandbox_cgroup_remove(sb); /* one its VMM's exit could not remove */
	sandbox_remove_dir(sb->dir);
	kilnd_log("sandbox %s: deleted", sb->rec.id);
	return 0;
}

json_t *sandbox_image_defaults(struct sandbox *sb)
{
	char tmpl[sizeof(sb->rec.tmpl)];
	json_t *def, *t;

	/* Read from the records once per sandbox, not per exec: spec.image
	 * and tmpl are set at create and never change, and neither record
	 * can be deleted while this sandbox names it. */
	kilnd_lock(sb->d);
	if (sb->exec_defaults_read) {
		def = json_incref(sb->exec_defaults);
		kilnd_unlock(sb->d);
		return def;
	}
	memcpy(tmpl, sb->rec.tmpl, sizeof(tmpl));
	kilnd_unlock(sb->d);
	def = images_defaults(sb->d, sb->rec.spec.image);
	/* A template's working_dir and user over its image's. */
	t = tmpl[0] ? template_defaults(sb->d, tmpl) : NULL;
	if (t && (def || (def = json_object()))) {
		if (json_is_string(json_object_get(t, "working_dir")))
			json_object_set(def, "working_dir", json_object_get(t, "working_dir"));
		if (json_is_string(json_object_get(t, "user")))
			json_object_set(def, "user", json_object_get(t, "user"));
	}
	json_decref(t);
	kilnd_lock(sb->d);
	if (!sb->exec_defaults_read) {
		sb->exec_defaults = json_incref(def);
		sb->exec_defaults_read = true;
	}
	kilnd_unlock(sb->d);
	return def;
}

/* sandbox_agent_new's wait: running (woken if need be), or 409. */
static int agent_ready(struct sandbox *sb, json_t **env, struct api_err *e)
{
	struct kilnd *d = sb->d;
	/* Bounds the wait for a checkpoint, hibernation or wake under way. */
	int64_t deadline = mono_ms() + SNAPSHOT_TIMEOUT_MS + 2 * (int64_t)d->cfg.boot_timeout_ms;

	kilnd_lock(d);
	for (;;) {
		if (sb->busy_op || sb->rec.state == SANDBOX_HIBERNATING ||
		    (sb->rec.state == SANDBOX_BOOTING && sb->waking)) {
			if (!sandbox_cv_wait_locked(sb, deadline))
				break;
			continue;
		}
		if (sb->rec.state == SANDBOX_HIBERNATED && !atomic_load(&d->shutting_down)) {
			kilnd_unlock(d);
			/* Another request may win the wake: then wait for it. */
			if (sandbox_wake_locked(sb, e) && e->code != API_E_WRONG_STATE)
				return -1;
			kilnd_lock(d);
			continue;
		}
		break;
	}
	if (!sandbox_state_serves_agent(sb->rec.state)) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s is %s; exec and files need it running%s", sb->rec.id,
			    sandbox_state_name(sb->rec.state),
			    sb->rec.state == SANDBOX_STOPPED || sb->rec.state == SANDBOX_CRASHED
				    ? " (POST .../start)"
				    : sb->rec.state == SANDBOX_PAUSED
				    ? ": resume it first (POST .../resume)"
				    : "");
		kilnd_unlock(d);
		return -1;
	}
	*env = json_incref(sb->rec.spec.env);
	kilnd_unlock(d);
	return 0;
}

int sandbox_agent_new(struct sandbox *sb, kiln_agent **a, json_t **env, struct api_err *e)
{
	int r;

	*a = NULL;
	if (agent_ready(sb, env, e))
		return -1;
	if ((r = kiln_agent_new(sb->vsock, a)) < 0) {
		json_decref(*env);
		*env = NULL;
		api_err_set(e, API_E_INTERNAL, "sandbox %s: agent client: %s", sb->rec.id,
			    strerror(-r));
		return -1;
	}
	return 0;
}

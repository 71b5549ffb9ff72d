/* One sandbox's requests: create, start, stop, delete, agent access; see sandbox.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "images.h"
#include "sandbox_impl.h"

struct sandbox *sb_new(struct kilnd *d)
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

void sb_free(struct sandbox *sb)
{
	/* Normally closed when the VMM ended; nothing else holds them. */
	for (size_t i = 0; i < sb->nports; i++)
		port_fwd_close(sb->ports[i]);
	sandbox_record_free(&sb->rec);
	pthread_cond_destroy(&sb->cv);
	free(sb);
}

void sandbox_put(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	bool last;

	sb_lock(d);
	last = --sb->refs == 0;
	sb_unlock(d);
	if (last)
		sb_free(sb);
}

struct sandbox *sandbox_get(struct kilnd *d, const char *id, struct api_err *e)
{
	struct sandbox *sb = NULL;

	if (sandbox_id_valid(id)) {
		sb_lock(d);
		sb = sb_find_locked(d, id);
		if (sb)
			sb->refs++;
		sb_unlock(d);
	}
	if (!sb)
		api_err_set(e, API_E_SANDBOX_NOT_FOUND, "no sandbox '%.64s' (GET /v1/sandboxes lists them)", id);
	return sb;
}

json_t *sandbox_view(struct sandbox *sb)
{
	json_t *v;

	sb_lock(sb->d);
	v = sandbox_record_view(&sb->rec);
	sb_unlock(sb->d);
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

		if (!realpath(s->shares[i].host_path, real) || stat(real, &st) < 0) {
			api_err_set(e, API_E_BAD_FIELD, "shares[%zu]: host_path '%s': %s", i, s->shares[i].host_path,
				    strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			api_err_set(e, API_E_BAD_FIELD, "shares[%zu]: host_path '%s' is not a directory", i,
				    s->shares[i].host_path);
			return -1;
		}
		if (!vmm_path_valid(real) || strlen(real) > SPEC_HOST_PATH_MAX) {
			api_err_set(e, API_E_BAD_FIELD, "shares[%zu]: host_path '%s' resolves to '%s', which has ',' or ':' or is too long",
				    i, s->shares[i].host_path, real);
			return -1;
		}
		for (size_t r = 0; r < d->cfg.nshare_roots && !ok; r++) {
			const char *root = d->cfg.share_roots[r];
			size_t n = strlen(root);

			ok = strcmp(root, "/") == 0 ||
			     (strncmp(real, root, n) == 0 && (real[n] == '\0' || real[n] == '/'));
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
		if (!sb_find_locked(d, id))
			return 0;
	}
	return -EEXIST;
}

int sandbox_create(struct kilnd *d, const json_t *body, const struct peer *peer, json_t **view,
		   struct api_err *e)
{
	struct sandbox_spec spec;
	char image[PATH_MAX];
	struct sandbox *sb;
	enum sandbox_state to;
	int r;

	if (sandbox_spec_parse(body, &d->cfg.limits, &spec, e))
		return -1;
	if (authorize_shares(d, &spec, peer, e) || images_find(d, spec.image, image, e))
		goto fail_spec;
	sb = sb_new(d);
	if (!sb) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: out of memory");
		goto fail_spec;
	}
	sb_lock(d);
	if (atomic_load(&d->shutting_down)) {
		sb_unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		goto fail_sb;
	}
	if (d->reg.n >= d->cfg.max_sandboxes) {
		sb_unlock(d);
		api_err_set(e, API_E_LIMIT_REACHED, "%u sandboxes exist (--max-sandboxes); delete one first",
			    d->cfg.max_sandboxes);
		goto fail_sb;
	}
	if ((r = new_id_locked(d, sb->rec.id)) || (r = sb_registry_add_locked(d, sb))) {
		sb_unlock(d);
		api_err_set(e, API_E_INTERNAL, "sandbox create: no id: %s", strerror(-r));
		goto fail_sb;
	}
	sb->refs++; /* ours */
	sb->rec.spec = spec;
	memset(&spec, 0, sizeof(spec));
	snprintf(sb->rec.image_path, sizeof(sb->rec.image_path), "%s", image);
	sb->rec.state = SB_BOOTING;
	sb->rec.created_ms = wall_ms();
	/* check_config() made sure these fit. */
	r = sb_pathf(sb->dir, sizeof(sb->dir), "%s/sandboxes/%s", d->cfg.state_dir, sb->rec.id);
	if (!r)
		r = sb_pathf(sb->vsock, sizeof(sb->vsock), "%s/vsock.sock", sb->dir);
	sb_unlock(d);
	if (r) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: the state directory's path is too long");
		sb_lock(d);
		sb_registry_remove_locked(d, sb);
		sb_unlock(d);
		sandbox_put(sb);
		return -1;
	}

	if (mkdir(sb->dir, 0700) < 0) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: cannot create %s: %s", sb->dir, strerror(errno));
		sb_lock(d);
		sb_registry_remove_locked(d, sb);
		sb_unlock(d);
		sandbox_put(sb);
		return -1;
	}
	kilnd_log("sandbox %s: created (image %s, %u vCPUs, %u MiB)", sb->rec.id, sb->rec.spec.image,
		  sb->rec.spec.cpus, sb->rec.spec.memory_mib);
	if (sb_boot(sb, e) == 0) {
		*view = sandbox_view(sb);
		sandbox_put(sb);
		return 0;
	}
	/* A failed create leaves nothing behind. It is crashed now, so a
	 * concurrent DELETE may have taken it: then that one cleans up. */
	sb_lock(d);
	r = sandbox_transition(sb->rec.state, SB_EV_DELETE, &to, sb->rec.id, NULL);
	if (r == 0) {
		sb->rec.state = to;
		sb_registry_remove_locked(d, sb);
	}
	sb_unlock(d);
	if (r == 0)
		sb_remove_dir(sb->dir);
	sandbox_put(sb);
	return -1;
fail_sb:
	sb_free(sb);
fail_spec:
	sandbox_spec_free(&spec);
	return -1;
}

int sandbox_start(struct sandbox *sb, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	sb_lock(d);
	if (atomic_load(&d->shutting_down)) {
		sb_unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		return -1;
	}
	if (sandbox_transition(sb->rec.state, SB_EV_START, &to, sb->rec.id, e)) {
		sb_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb_persist_locked(sb);
	sb_unlock(d);
	if (sb_boot(sb, e))
		return -1;
	*view = sandbox_view(sb);
	return 0;
}

int sandbox_stop(struct sandbox *sb, int grace_ms, const char *reason, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	sb_lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_STOP, &to, sb->rec.id, e)) {
		sb_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = reason;
	sb_persist_locked(sb);
	sb_unlock(d);
	sb_halt(sb, grace_ms);
	sb_lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_STOPPED, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	sb->stop_reason = NULL;
	sb_persist_locked(sb);
	sb_unlock(d);
	kilnd_log("sandbox %s: stopped (%s)", sb->rec.id, reason);
	if (view)
		*view = sandbox_view(sb);
	return 0;
}

int sandbox_delete(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	sb_lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_DELETE, &to, sb->rec.id, e)) {
		sb_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = "stopped";
	sb_persist_locked(sb);
	sb_unlock(d);
	sb_halt(sb, AGENT_GRACE_DEFAULT_MS);
	sb_lock(d);
	sb_registry_remove_locked(d, sb);
	sb_unlock(d);
	sb_remove_dir(sb->dir);
	kilnd_log("sandbox %s: deleted", sb->rec.id);
	return 0;
}

int sandbox_agent(struct sandbox *sb, struct agent_client *c, json_t **env, struct api_err *e)
{
	struct kilnd *d = sb->d;

	sb_lock(d);
	if (!sandbox_state_serves_agent(sb->rec.state)) {
		api_err_set(e, API_E_WRONG_STATE, "sandbox %s is %s; exec and files need it running%s", sb->rec.id,
			    sandbox_state_name(sb->rec.state),
			    sb->rec.state == SB_STOPPED || sb->rec.state == SB_CRASHED ? " (POST .../start)" : "");
		sb_unlock(d);
		return -1;
	}
	*env = json_incref(sb->rec.spec.env);
	sb_unlock(d);
	agent_client_init(c, sb->vsock);
	return 0;
}

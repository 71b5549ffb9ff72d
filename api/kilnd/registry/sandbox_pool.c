/*
 * Warm pools (kilnd --pool IMAGE=N; docs/api.md "Warm pools"): for each
 * pool, kilnd boots one template sandbox of the pool's spec, runs one
 * process in it (pool_warm), checkpoints it and stops it; then it keeps N
 * forks of that checkpoint restored, warmed the same way, and paused. A create that
 * fits a pool (pool_spec.h) takes one of them: kilnd resumes it, gives
 * the guest its hostname when the create has its own, hands it to the
 * client with the create's fields, and forks a replacement in the
 * background. Each fork got fresh host entropy and the host's clock when
 * it was made (sandbox_boot), so no two sandboxes of a pool share random
 * numbers, and its clock runs on while it waits paused. One
 * thread (pool_filler) does every fill, one at a time, and replaces ready
 * sandboxes whose VMM ended.
 *
 * Pool sandboxes are ordinary sandboxes of the registry with rec.pooled
 * set: no client sees one (sandbox_record_visible), they do not count
 * against --max-sandboxes, and a restarted kilnd removes them
 * (sandbox_dir_judge) and fills its pools again. Every pool field is
 * guarded by reg.mu.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/core/pool_spec.h"
#include "api/kilnd/images/images.h"
#include "api/kilnd/net/sandbox_trust.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/vmm_control.h"

/* The template's checkpoint, which every sandbox of the pool resumes. */
#define POOL_CHECKPOINT "pool"
/* A failed fill is retried after 1, 2, 4 ... s, at most this. */
#define POOL_RETRY_MAX_MS 60000

struct pool {
	struct pool_cfg cfg;
	json_t *body;             /* the create body its sandboxes are made from */
	struct sandbox_spec spec; /* that body parsed: what a create must fit */
	char image_path[PATH_MAX];
	struct stat image_st; /* the image file the template booted */
	struct sandbox *tmpl; /* stopped, with checkpoint POOL_CHECKPOINT; NULL: none yet */
	struct sandbox *ready[POOL_SIZE_MAX]; /* paused, oldest first; the pool holds a reference */
	size_t nready;
	uint64_t hits, misses; /* creates it served; fitting creates it had nothing ready for */
	unsigned failures;     /* fills failed in a row */
	int64_t retry_mono;    /* no fill before this */
	char last_error[ERR_MSG_MAX];
};

struct kilnd_pools {
	struct pool v[KILND_MAX_POOLS];
	size_t n;
	pthread_t filler;
	bool started;
	bool stop;
	pthread_cond_t cv; /* with reg.mu: a create took a sandbox, or stop */
};

/* ---- making the pool's sandboxes (the filler thread) ---- */

/* A new pool sandbox of p's spec, booting, with a reference for the
 * caller and one for the pool. NULL with e. */
static struct sandbox *pool_entry(struct kilnd *d, struct pool *p, struct api_err *e)
{
	struct sandbox_spec spec;
	struct sandbox *sb;

	if (sandbox_spec_parse(p->body, &d->cfg.limits, &spec, e))
		return NULL;
	sb = sandbox_create_entry(d, 0, &spec, p->image_path, false, true, e);
	if (sb) {
		kilnd_lock(d);
		sb->refs++;
		kilnd_unlock(d);
	}
	return sb;
}

/*
 * Run one process in the guest (/bin/true), so that what every first exec
 * pays (the agent's first fork, the binary and libc read into the guest's
 * page cache, pages of a fork's memory faulted in from its checkpoint) is
 * paid here, in the background, not by the client's first request. 0, or
 * -1 with e.
 */
static int pool_warm(struct sandbox *sb, struct api_err *e)
{
	static const char *const argv[] = { "true", NULL };
	struct kiln_exec_opts o = {
		.size = sizeof(o), .argv = argv, .flags = KILN_AGENT_DISCARD, .timeout_ms = 60000
	};
	struct kiln_exit_status st = { .size = sizeof(st) };
	kiln_agent *a;
	int r;

	if (kiln_agent_new(sb->vsock, &a) < 0) {
		api_err_set(e, API_E_INTERNAL, "warming it up: out of memory");
		return -1;
	}
	r = kiln_agent_exec(a, &o, &st, NULL, NULL, NULL, NULL);
	if (r) {
		api_err_from_agent(e, a, "warming it up (exec true)");
	} else if (st.exit_code != 0) {
		api_err_set(e, API_E_INTERNAL, "warming it up: true exited with %d (signal %d)",
			    st.exit_code, st.signal);
		r = -1;
	}
	kiln_agent_free(a);
	return r ? -1 : 0;
}

/* Remove a pool sandbox and drop the pool's reference. */
static void pool_discard(struct sandbox *sb)
{
	struct api_err e;

	if (sandbox_delete(sb, &e))
		kilnd_log("pool sandbox %s: cannot remove it: %s", sb->rec.id, e.msg);
	sandbox_put(sb);
}

/* Boot the template, checkpoint it, stop it. 0, or -1 with e. */
static int pool_make_template(struct kilnd *d, struct pool *p, struct api_err *e)
{
	struct checkpoint_req req = { .name = POOL_CHECKPOINT };
	struct sandbox *sb;
	json_t *view = NULL, *cp = NULL;
	struct stat st;

	if (stat(p->image_path, &st) < 0) {
		api_err_set(e, API_E_INTERNAL, "image %s: %s", p->image_path, strerror(errno));
		return -1;
	}
	sb = pool_entry(d, p, e);
	if (!sb)
		return -1;
	kilnd_log("pool %s: booting its template, sandbox %s", p->cfg.image, sb->rec.id);
	if (sandbox_create_finish(sb, NULL, &view, e)) {
		sandbox_put(sb);
		return -1;
	}
	json_decref(view);
	/* Warm before the checkpoint: its forks start with that page cache. */
	if (pool_warm(sb, e) || sandbox_checkpoint_create(sb, &req, &cp, e) ||
	    sandbox_stop(sb, 0, "stopped", NULL, e)) {
		pool_discard(sb);
		return -1;
	}
	json_decref(cp);
	kilnd_lock(d);
	p->tmpl = sb;
	p->image_st = st;
	kilnd_unlock(d);
	return 0;
}

/* Fork one sandbox from the template and pause it; 0, or -1 with e. */
static int pool_add_one(struct kilnd *d, struct pool *p, struct api_err *e)
{
	char dir[PATH_MAX], ref[CHECKPOINT_REF_MAX + 1];
	struct boot_src src = { .restore_dir = dir, .from = "checkpoint", .checkpoint = ref };
	struct sandbox *sb, *tmpl = p->tmpl; /* only this thread changes p->tmpl */
	json_t *view = NULL;
	int r;

	if (sandbox_checkpoint_dir(tmpl, POOL_CHECKPOINT, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "pool %s: checkpoint path too long", p->cfg.image);
		return -1;
	}
	snprintf(ref, sizeof(ref), "%s/%s", tmpl->rec.id, POOL_CHECKPOINT);
	sb = pool_entry(d, p, e);
	if (!sb)
		return -1;
	kilnd_lock(d);
	tmpl->cp_readers++;
	kilnd_unlock(d);
	r = sandbox_create_finish(sb, &src, &view, e);
	kilnd_lock(d);
	tmpl->cp_readers--;
	pthread_cond_broadcast(&tmpl->cv);
	kilnd_unlock(d);
	if (r) {
		sandbox_put(sb);
		return -1;
	}
	json_decref(view);
	if (pool_warm(sb, e) || sandbox_pause(sb, &view, e)) {
		pool_discard(sb);
		return -1;
	}
	json_decref(view);
	kilnd_lock(d);
	if (d->pools->stop || p->nready == POOL_SIZE_MAX) {
		kilnd_unlock(d);
		pool_discard(sb);
		return 0;
	}
	p->ready[p->nready++] = sb;
	kilnd_unlock(d);
	return 0;
}

/* Has the image file changed since the template booted it? Then the
 * template and every ready sandbox go (out[]: what the caller discards,
 * outside the lock), and the next fill boots a new template. reg.mu held. */
static size_t pool_retire_stale_locked(struct pool *p, struct sandbox **out)
{
	struct stat st;
	size_t n = 0;

	if (!p->tmpl ||
	    (stat(p->image_path, &st) == 0 && st.st_dev == p->image_st.st_dev &&
	     st.st_ino == p->image_st.st_ino && st.st_size == p->image_st.st_size &&
	     st.st_mtim.tv_sec == p->image_st.st_mtim.tv_sec &&
	     st.st_mtim.tv_nsec == p->image_st.st_mtim.tv_nsec))
		return 0;
	kilnd_log("pool %s: the image %s changed; making the pool again", p->cfg.image,
		  p->image_path);
	for (size_t i = 0; i < p->nready; i++)
		out[n++] = p->ready[i];
	p->nready = 0;
	out[n++] = p->tmpl;
	p->tmpl = NULL;
	return n;
}

/* Ready sandboxes whose VMM ended (killed, out of memory) leave the
 * pool into out[] (for the caller to discard); their number. reg.mu held. */
static size_t pool_prune_locked(struct pool *p, struct sandbox **out)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < p->nready; i++) {
		struct sandbox *sb = p->ready[i];

		if (sb->rec.state == SANDBOX_PAUSED && !sb->vmm_exited)
			p->ready[k++] = sb;
		else
			out[n++] = sb;
	}
	p->nready = k;
	return n;
}

/* The first pool with a fill due, or NULL. reg.mu held. */
static struct pool *pool_due_locked(struct kilnd_pools *P, int64_t now)
{
	for (size_t i = 0; i < P->n; i++) {
		struct pool *p = &P->v[i];

		if ((!p->tmpl || p->nready < p->cfg.size) && now >= p->retry_mono)
			return p;
	}
	return NULL;
}

static void *pool_filler(void *arg)
{
	struct kilnd *d = arg;
	struct kilnd_pools *P = d->pools;
	struct sandbox *stale[POOL_SIZE_MAX + 1];

	kilnd_lock(d);
	while (!P->stop && !atomic_load(&d->shutting_down)) {
		struct pool *p;
		struct api_err e = { 0 };
		struct timespec dl;
		size_t nstale = 0;
		int r;

		for (size_t i = 0; i < P->n && !nstale; i++)
			nstale = pool_prune_locked(&P->v[i], stale);
		if (nstale) {
			kilnd_unlock(d);
			for (size_t i = 0; i < nstale; i++) {
				kilnd_log("pool sandbox %s: its kiln-vmm ended while it waited; replacing it",
					  stale[i]->rec.id);
				pool_discard(stale[i]);
			}
			kilnd_lock(d);
			continue;
		}
		p = pool_due_locked(P, mono_ms());
		if (!p) {
			mono_deadline_in(&dl, 1000);
			pthread_cond_timedwait(&P->cv, &d->reg.mu, &dl);
			continue;
		}
		nstale = pool_retire_stale_locked(p, stale);
		kilnd_unlock(d);
		for (size_t i = 0; i < nstale; i++)
			pool_discard(stale[i]);
		r = p->tmpl ? pool_add_one(d, p, &e) : pool_make_template(d, p, &e);
		kilnd_lock(d);
		if (r == 0) {
			p->failures = 0;
			p->last_error[0] = '\0';
			continue;
		}
		if (P->stop || atomic_load(&d->shutting_down))
			break;
		p->failures++;
		p->retry_mono = mono_ms() +
			(p->failures > 6 ? POOL_RETRY_MAX_MS : (1000 << (p->failures - 1)));
		snprintf(p->last_error, sizeof(p->last_error), "%s", e.msg);
		kilnd_log("pool %s: filling it failed (%u in a row; next try in %d s): %s",
			  p->cfg.image, p->failures,
			  (int)((p->retry_mono - mono_ms() + 999) / 1000), e.msg);
	}
	kilnd_unlock(d);
	return NULL;
}

/* ---- the daemon's side ---- */

int sandbox_pools_init(struct kilnd *d, struct err *e)
{
	struct kilnd_pools *P;
	pthread_condattr_t ca;

	if (!d->cfg.npools)
		return 0;
	P = calloc(1, sizeof(*P));
	if (!P) {
		err_set(e, EINVAL, "--pool: out of memory");
		return -1;
	}
	for (size_t i = 0; i < d->cfg.npools; i++) {
		struct pool *p = &P->v[i];
		struct api_err ae;

		p->cfg = d->cfg.pools[i];
		p->body = pool_cfg_body(&p->cfg);
		P->n = i + 1;
		if (!p->body) {
			err_set(e, EINVAL, "--pool: out of memory");
			goto fail;
		}
		/* idle_timeout_s 0: the pool's own sandboxes never hibernate;
		 * the create that takes one brings its own. */
		if (json_object_set_new(p->body, "idle_timeout_s", json_integer(0)) ||
		    sandbox_spec_parse(p->body, &d->cfg.limits, &p->spec, &ae) ||
		    images_find(d, p->cfg.image, p->image_path, &ae)) {
			err_set(e, EINVAL, "--pool %s: %s", p->cfg.image, ae.msg);
			goto fail;
		}
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&P->cv, &ca);
	pthread_condattr_destroy(&ca);
	d->pools = P;
	return 0;
fail:
	for (size_t i = 0; i < P->n; i++) {
		json_decref(P->v[i].body);
		sandbox_spec_free(&P->v[i].spec);
	}
	free(P);
	return -1;
}

/* Take the pool's sandboxes out of every pool (with the templates when
 * tmpl: only once the filler has ended) into all[]; their number. reg.mu held. */
static size_t pools_take_locked(struct kilnd_pools *P, bool tmpl, struct sandbox **all)
{
	size_t n = 0;

	for (size_t i = 0; i < P->n; i++) {
		struct pool *p = &P->v[i];

		for (size_t k = 0; k < p->nready; k++)
			all[n++] = p->ready[k];
		p->nready = 0;
		if (tmpl && p->tmpl)
			all[n++] = p->tmpl;
		if (tmpl)
			p->tmpl = NULL;
	}
	return n;
}

/* Discard every ready sandbox (and the templates when tmpl). */
static void pools_discard(struct kilnd *d, bool tmpl)
{
	struct sandbox **all = calloc(KILND_MAX_POOLS * (POOL_SIZE_MAX + 1), sizeof(*all));
	size_t n = 0;

	if (!all)
		return; /* then sandboxes_shutdown() stops them; the next start removes them */
	kilnd_lock(d);
	n = pools_take_locked(d->pools, tmpl, all);
	kilnd_unlock(d);
	/* A paused one is killed at once, a stopped template just removed. */
	for (size_t i = 0; i < n; i++)
		pool_discard(all[i]);
	free(all);
}

void sandbox_pools_start(struct kilnd *d)
{
	struct kilnd_pools *P = d->pools;
	int r;

	if (!P)
		return;
	if ((r = pthread_create(&P->filler, NULL, pool_filler, d))) {
		/* Creates still work, all of them cold. */
		for (size_t i = 0; i < P->n; i++)
			snprintf(P->v[i].last_error, sizeof(P->v[i].last_error),
				 "kilnd cannot start the thread that fills the pools: %s",
				 strerror(r));
		kilnd_log("--pool: cannot start the thread that fills the pools (%s); every create boots",
			  strerror(r));
		return;
	}
	P->started = true;
	for (size_t i = 0; i < P->n; i++)
		kilnd_log("pool %s: keeping %u sandboxes ready (%u vCPUs, %u MiB, network %s)",
			  P->v[i].cfg.image, P->v[i].cfg.size, P->v[i].spec.cpus,
			  P->v[i].spec.memory_mib, firewall_network_name(P->v[i].spec.network));
}

void sandbox_pools_stop(struct kilnd *d, bool discard)
{
	struct kilnd_pools *P = d->pools;

	if (!P)
		return;
	kilnd_lock(d);
	P->stop = true;
	pthread_cond_broadcast(&P->cv);
	kilnd_unlock(d);
	if (discard)
		pools_discard(d, false);
}

void sandbox_pools_free(struct kilnd *d)
{
	struct kilnd_pools *P = d->pools;

	if (!P)
		return;
	sandbox_pools_stop(d, false);
	if (P->started)
		pthread_join(P->filler, NULL);
	pools_discard(d, true);
	for (size_t i = 0; i < P->n; i++) {
		json_decref(P->v[i].body);
		sandbox_spec_free(&P->v[i].spec);
	}
	pthread_cond_destroy(&P->cv);
	d->pools = NULL;
	free(P);
}

json_t *sandbox_pools_view(struct kilnd *d)
{
	struct kilnd_pools *P = d->pools;
	json_t *arr = json_array();

	if (!arr || !P)
		return arr;
	kilnd_lock(d);
	for (size_t i = 0; i < P->n; i++) {
		const struct pool *p = &P->v[i];

		if (json_array_append_new(arr,
					  json_pack("{s:s,s:I,s:I,s:I,s:I,s:s,s:I,s:I,s:o}",
						    "image", p->cfg.image, "size",
						    (json_int_t)p->cfg.size, "ready",
						    (json_int_t)p->nready, "cpus",
						    (json_int_t)p->spec.cpus, "memory_mib",
						    (json_int_t)p->spec.memory_mib, "network",
						    firewall_network_name(p->spec.network), "hits",
						    (json_int_t)p->hits, "misses",
						    (json_int_t)p->misses, "last_error",
						    p->last_error[0] ? json_string(p->last_error)
								     : json_null()))) {
			kilnd_unlock(d);
			json_decref(arr);
			return NULL;
		}
	}
	kilnd_unlock(d);
	return arr;
}

/* ---- a create taking a pool's sandbox ---- */

/*
 * Resume the pool sandbox sb for the client's create (spec, peer) and
 * give it to the client: the guest's hostname first when the create's
 * differs, then the create's fields, visible at the end of the list. Its
 * entropy is its own already (its fork pushed fresh host entropy and the
 * agent reseeded the CRNG), and its clock ran on while it was paused (a
 * pause stops the vCPUs, not the TSC that kvm-clock reads): no agent
 * request is needed for either. 0, or -1 with e (sb is still the pool's
 * then, for the caller to discard).
 */
static int pool_hand_over(struct sandbox *sb, struct sandbox_spec *spec, const struct peer *peer,
			  double *resume_ms, struct api_err *e)
{
	struct kilnd *d = sb->d;
	struct control_reply rep;
	enum sandbox_state to;
	double t0 = mono_ms_f();
	double ready_ms;
	bool rename;
	int r;

	kilnd_lock(d);
	if (sb->rec.state != SANDBOX_PAUSED || sb->vmm_exited || sb->busy_op) {
		api_err_set(e, API_E_WRONG_STATE, "it is %s", sandbox_state_name(sb->rec.state));
		kilnd_unlock(d);
		return -1;
	}
	sb->busy_op = "resume";
	rename = strcmp(spec->hostname, sb->rec.spec.hostname) != 0;
	kilnd_unlock(d);
	r = vmm_control_call(sb->control, CTL_RESUME, NULL, false, VMM_CONTROL_TIMEOUT_MS, &rep, e);
	*resume_ms = mono_ms_f() - t0;
	if (r == 0 && rename) {
		/* The egress CA rides along, as on every configure kilnd sends
		 * (sandbox_trust.h); unchanged, the guest writes nothing. */
		struct kiln_guest_config cfg = { .size = sizeof(cfg), .hostname = spec->hostname };
		char *ca = NULL;
		kiln_agent *a;

		if ((r = sandbox_trust_read(sb, &ca, e)) >= 0) {
			cfg.trust_ca = ca;
			if ((r = kiln_agent_new(sb->vsock, &a)) < 0) {
				api_err_set(e, API_E_INTERNAL,
					    "setting its hostname: out of memory");
			} else {
				if ((r = kiln_agent_configure(a, &cfg)) && ca)
					sandbox_trust_fail(sb, a,
							   "setting its hostname and egress CA", e);
				else if (r)
					api_err_from_agent(e, a, "setting its hostname");
				kiln_agent_free(a);
			}
		}
		free(ca);
	}
	ready_ms = mono_ms_f() - t0;
	kilnd_lock(d);
	sb->busy_op = NULL;
	pthread_cond_broadcast(&sb->cv);
	if (r == 0 &&
	    (sb->vmm_exited ||
	     sandbox_transition(sb->rec.state, SANDBOX_EV_RESUME, &to, sb->rec.id, e)))
		r = -1;
	if (r) {
		kilnd_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->rec.owner_uid = peer->uid;
	/* The create's own fields; the rest is the pool's, which it fits. */
	memcpy(sb->rec.spec.hostname, spec->hostname, sizeof(spec->hostname));
	/* Shared, not stolen: a failure below leaves spec whole for the cold create. */
	json_decref(sb->rec.spec.env);
	json_decref(sb->rec.spec.labels);
	sb->rec.spec.env = json_incref(spec->env);
	sb->rec.spec.labels = json_incref(spec->labels);
	sb->rec.spec.timeout_s = spec->timeout_s;
	sb->rec.spec.idle_timeout_s = spec->idle_timeout_s;
	sb->rec.pooled = false;
	sb->rec.created_ms = sb->rec.started_ms = wall_ms();
	sb->active_mono = mono_ms();
	if (sb->rec.spec.timeout_s) {
		sb->deadline_mono = mono_ms() + (int64_t)sb->rec.spec.timeout_s * 1000;
		sb->rec.expires_ms = sb->rec.started_ms + (int64_t)sb->rec.spec.timeout_s * 1000;
	}
	json_decref(sb->rec.boot);
	sb->rec.boot = sandbox_boot_json(ready_ms, -1, true);
	sandbox_boot_source(sb->rec.boot, "pool", NULL, NULL);
	/* Lists are oldest first: it is the newest sandbox now. */
	sandbox_registry_remove_locked(d, sb);
	sandbox_registry_add_locked(d, sb); /* has room: it was just there */
	r = sandbox_persist_locked(sb);
	if (r) {
		sb->rec.pooled = true;
		api_err_set(e, API_E_INTERNAL, "cannot save meta.json: %s", strerror(-r));
	}
	kilnd_unlock(d);
	return r ? -1 : 0;
}

int sandbox_pool_claim(struct kilnd *d, struct sandbox_spec *spec, const struct peer *peer,
		       json_t **view)
{
	struct kilnd_pools *P = d->pools;
	struct pool *p = NULL;
	struct sandbox *sb;
	struct api_err e;
	double resume_ms = 0;
	json_t *boot;

	if (!P)
		return 1;
	kilnd_lock(d);
	for (size_t i = 0; i < P->n && !p; i++)
		if (pool_spec_fits(&P->v[i].spec, spec, NULL))
			p = &P->v[i];
	/* The cold create answers these (shutting down, --max-sandboxes). */
	if (!p || P->stop || atomic_load(&d->shutting_down) ||
	    sandbox_clients_count_locked(d) >= d->cfg.max_sandboxes) {
		kilnd_unlock(d);
		return 1;
	}
	if (!p->nready) {
		p->misses++;
		kilnd_unlock(d);
		return 1;
	}
	sb = p->ready[0];
	memmove(&p->ready[0], &p->ready[1], (p->nready - 1) * sizeof(p->ready[0]));
	p->nready--;
	pthread_cond_broadcast(&P->cv); /* the filler forks its replacement */
	kilnd_unlock(d);

	if (pool_hand_over(sb, spec, peer, &resume_ms, &e)) {
		kilnd_log("pool %s: sandbox %s could not take the create (%s); booting one instead",
			  p->cfg.image, sb->rec.id, e.msg);
		pool_discard(sb);
		kilnd_lock(d);
		p->misses++;
		kilnd_unlock(d);
		return 1;
	}
	kilnd_lock(d);
	p->hits++;
	kilnd_unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.pool_creates++;
	pthread_mutex_unlock(&d->metrics_mu);
	*view = sandbox_view(sb);
	boot = json_object_get(*view, "boot");
	kilnd_log("sandbox %s: created from pool %s (resumed in %.1f ms, guest ready %.1f ms after)",
		  sb->rec.id, p->cfg.image, resume_ms,
		  json_number_value(json_object_get(boot, "agent_ready_ms")) - resume_ms);
	sandbox_put(sb);
	return 0;
}

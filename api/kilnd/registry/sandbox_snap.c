/*
 * Snapshots of a sandbox through its kiln-vmm's control socket (see
 * sandbox.h and docs/api.md, "Pause, checkpoints, forks, hibernation"):
 * pause and resume, checkpoints (taken, listed, deleted, restored in
 * place), hibernation and wake, and the idle timeout that hibernates.
 *
 * Pause, resume and checkpoint keep (or swap running ↔ paused) the state
 * and hold busy_op while kiln-vmm works; hibernation and restores go
 * through the transient states hibernating and booting, owned by the one
 * request that entered them. Nothing here holds reg.mu across a control
 * call, an agent call or a boot.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>

#include "api/kilnd/core/cgroup_limits.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/base/num_parse.h"
#include "lib/cgroup/cgroup_file.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "vmm/snapshot/snapshot_layer.h"

int sandbox_checkpoint_dir(const struct sandbox *sb, const char *name, char *out, size_t cap)
{
	/* In the jail's directory, writable by the sandbox's jailed kiln-vmm (sandbox_jail.h). */
	return name ? sandbox_pathf(out, cap, "%s/vm/checkpoints/%s", sb->dir, name)
		    : sandbox_pathf(out, cap, "%s/vm/checkpoints", sb->dir);
}

/* sandbox_jail_open's answer says what is there is not a checkpoint's
 * directory (gone, or a link, a file, a fifo in its place); anything
 * else (no descriptors left, no memory) says nothing about it. */
static bool not_a_checkpoint_dir(int r)
{
	return r == -ENOENT || r == -ELOOP || r == -ENOTDIR || r == -EXDEV || r == -EINVAL;
}

/* Checkpoint `name`'s directory beneath vm/, for sandbox_jail_open. 0 or -1. */
static int checkpoint_rel(const char *name, char *out, size_t cap)
{
	return sandbox_pathf(out, cap, "checkpoints/%s", name);
}

int sandbox_hibernate_dir(const struct sandbox *sb, char *out, size_t cap)
{
	return sandbox_pathf(out, cap, "%s/vm/" SANDBOX_HIBERNATE_REL, sb->dir);
}

/* Best effort after the guest stood still: its clock is behind. */
static void sync_clock(struct sandbox *sb)
{
	kiln_agent *a;

	if (kiln_agent_new(sb->vsock, &a) < 0) {
		kilnd_log("sandbox %s: setting the guest clock failed: out of memory", sb->rec.id);
		return;
	}
	if (sandbox_sync_guest(a))
		kilnd_log("sandbox %s: setting the guest clock failed: %s", sb->rec.id,
			  kiln_agent_errmsg(a));
	kiln_agent_free(a);
}

/* pause and resume: one control command, the state moves with it. */
static int pause_or_resume(struct sandbox *sb, bool pause, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_event ev = pause ? SANDBOX_EV_PAUSE : SANDBOX_EV_RESUME;
	struct control_reply rep;
	enum sandbox_state to;
	int r;

	kilnd_lock(d);
	sandbox_wait_unbusy_locked(sb);
	if (sandbox_transition(sb->rec.state, ev, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	sb->busy_op = pause ? "pause" : "resume";
	kilnd_unlock(d);
	r = vmm_control_call(sb->control, pause ? CTL_PAUSE : CTL_RESUME, NULL, false,
			     VMM_CONTROL_TIMEOUT_MS, &rep, e);
	kilnd_lock(d);
	sb->busy_op = NULL;
	/* The VMM may have ended meanwhile (crashed): then that is the answer. */
	if (r == 0 && sandbox_transition(sb->rec.state, ev, &to, sb->rec.id, e) == 0) {
		sb->rec.state = to;
		sb->active_mono = mono_ms();
		sandbox_persist_locked(sb);
	} else {
		r = -1;
	}
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r)
		return -1;
	if (!pause)
		sync_clock(sb);
	if (pause)
		SANDBOX_METRIC(d, pauses);
	else
		SANDBOX_METRIC(d, resumes);
	kilnd_log("sandbox %s: %s", sb->rec.id, pause ? "paused" : "resumed");
	*view = sandbox_view(sb);
	return 0;
}

int sandbox_pause(struct sandbox *sb, json_t **view, struct api_err *e)
{
	return pause_or_resume(sb, true, view, e);
}

int sandbox_resume(struct sandbox *sb, json_t **view, struct api_err *e)
{
	return pause_or_resume(sb, false, view, e);
}

/* ---- checkpoints ---- */

/*
 * With the state directory in RAM, a snapshot's files (at most the
 * guest's RAM and a copy of the overlay) are pages of the VMM's cgroup:
 * one that does not fit under memory.max would get the VMM OOM-killed
 * while writing it, and the sandbox lost. Refused first instead (507),
 * nothing changed. What cannot be read is let through. Locked.
 */
static int snapshot_room_locked(struct sandbox *sb, struct api_err *e)
{
	char cur[32], max[32], msg[ERR_MSG_MAX];
	uint64_t c, m, need;
	int64_t ovl;

	if (!sb->d->cfg.state_in_ram || !sb->rec.cgroup[0] ||
	    cgroup_file_read(sb->rec.cgroup, "memory.current", cur, sizeof(cur)) < 0 ||
	    cgroup_file_read(sb->rec.cgroup, "memory.max", max, sizeof(max)) < 0 ||
	    num_parse_u64(cur, 10, 0, UINT64_MAX, &c) < 0 ||
	    num_parse_u64(max, 10, 0, UINT64_MAX, &m) < 0) /* "max": no limit */
		return 0;
	ovl = sandbox_overlay_stored(sb->dir);
	need = ((uint64_t)sb->rec.spec.memory_mib << 20) + (ovl > 0 ? (uint64_t)ovl : 0);
	if (!cg_snapshot_room(c, m, need, msg, sizeof(msg)))
		return 0;
	api_err_set(e, API_E_NO_SPACE, "sandbox %s: %s", sb->rec.id, msg);
	return -1;
}

int sandbox_checkpoint_create(struct sandbox *sb, const struct checkpoint_req *req, json_t **cp,
			      struct api_err *e)
{
	struct kilnd *d = sb->d;
	char dir[PATH_MAX], parent[PATH_MAX], base[CHECKPOINT_NAME_MAX + 1] = "";
	struct control_cmd cmd = { .op = CTL_SNAPSHOT, .compress = req->compress };
	struct control_reply rep;
	enum sandbox_state to;
	json_t *obj = NULL;
	bool paused;
	int r;

	*cp = NULL;
	if (sandbox_checkpoint_dir(sb, req->name, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: checkpoint path too long", sb->rec.id);
		return -1;
	}
	kilnd_lock(d);
	sandbox_wait_unbusy_locked(sb);
	sandbox_wait_unmerging_locked(sb);
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_CHECKPOINT, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	if (checkpoint_find(sb->rec.checkpoints, req->name, NULL)) {
		api_err_set(e, API_E_EXISTS,
			    "sandbox %s already has a checkpoint '%s'; delete it first or pick another name",
			    sb->rec.id, req->name);
		kilnd_unlock(d);
		return -1;
	}
	/* A pool's template takes its one checkpoint whatever the limit. */
	if (!sb->rec.pooled && !sb->rec.tmpl_build[0] &&
	    json_array_size(sb->rec.checkpoints) >= d->cfg.max_checkpoints) {
		api_err_set(e, API_E_LIMIT_REACHED,
			    "sandbox %s has %zu checkpoints (--max-checkpoints %u); delete one first",
			    sb->rec.id, json_array_size(sb->rec.checkpoints),
			    d->cfg.max_checkpoints);
		kilnd_unlock(d);
		return -1;
	}
	if (snapshot_room_locked(sb, e)) {
		kilnd_unlock(d);
		return -1;
	}
	paused = sb->rec.state == SANDBOX_PAUSED;
	/* kiln-vmm layers it on that one only if RAM is still tracked against it. */
	if (req->incremental && sb->cp_base[0] &&
	    checkpoint_find(sb->rec.checkpoints, sb->cp_base, NULL))
		snprintf(base, sizeof(base), "%s", sb->cp_base);
	sb->busy_op = "checkpoint";
	kilnd_unlock(d);
	cmd.dir = dir;
	cmd.base = base[0] ? base : NULL;

	/* Busy, so no delete removes the sandbox directory meanwhile. */
	if (sandbox_checkpoint_dir(sb, NULL, parent, sizeof(parent)) ||
	    (mkdir(parent, 0700) < 0 && errno != EEXIST)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: cannot create %s: %s", sb->rec.id,
			    parent, strerror(errno));
		r = -1;
	} else {
		r = vmm_control_run(sb->control, &cmd, SNAPSHOT_TIMEOUT_MS, &rep, e);
	}
	if (r == 0 && rep.base[0] && strcmp(rep.base, base)) {
		api_err_set(e, API_E_INTERNAL,
			    "kiln-vmm layered checkpoint '%s' on '%s', not on '%s' as asked",
			    req->name, rep.base, base);
		r = -1;
	}
	if (r == 0) {
		obj = checkpoint_object(sb->rec.id, req->name, wall_ms(), req->compress, paused,
					&rep);
		/* Its port mappings' guest sides: a fork of it listens on them anew. */
		if (obj && json_object_set_new(obj, "ports", sandbox_ports_guest_side(sb))) {
			json_decref(obj);
			obj = NULL;
		}
		if (!obj) {
			api_err_set(e, API_E_INTERNAL, "checkpoint: out of memory");
			r = -1;
		}
	}
	kilnd_lock(d);
	sb->busy_op = NULL;
	if (r == 0 && (!sb->rec.checkpoints || json_array_append(sb->rec.checkpoints, obj))) {
		api_err_set(e, API_E_INTERNAL, "checkpoint: out of memory");
		r = -1;
	}
	if (r == 0) {
		sb->active_mono = mono_ms();
		snprintf(sb->cp_base, sizeof(sb->cp_base), "%s", req->name);
		sandbox_persist_locked(sb);
	}
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r) {
		/* kiln-vmm keeps an earlier directory of that name whole; one it
		 * made for this request and we could not record goes. */
		if (obj)
			sandbox_remove_dir(dir);
		json_decref(obj);
		SANDBOX_METRIC(d, checkpoint_failures);
		kilnd_log("sandbox %s: checkpoint '%s' failed: %s", sb->rec.id, req->name, e->msg);
		return -1;
	}
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.checkpoints++;
	histogram_observe(&d->metrics.snapshot_seconds, rep.ms / 1000.0);
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("sandbox %s: checkpoint '%s' (%llu bytes%s%s%s, guest paused %.1f ms)",
		  sb->rec.id, req->name,
		  (unsigned long long)(rep.memory_stored_bytes + rep.state_bytes + rep.disk_bytes),
		  rep.base[0] ? ", layered on '" : "", rep.base, rep.base[0] ? "'" : "", rep.ms);
	*cp = obj;
	return 0;
}

json_t *sandbox_checkpoint_list(struct sandbox *sb)
{
	json_t *a;

	kilnd_lock(sb->d);
	a = sb->rec.checkpoints ? json_deep_copy(sb->rec.checkpoints) : json_array();
	kilnd_unlock(sb->d);
	return a ? json_pack("{s:o}", "checkpoints", a) : NULL;
}

static void no_checkpoint(struct sandbox *sb, const char *name, struct api_err *e)
{
	api_err_set(e, API_E_CHECKPOINT_NOT_FOUND,
		    "sandbox %s has no checkpoint '%.64s' (GET .../checkpoints lists them)",
		    sb->rec.id, name);
}

int sandbox_checkpoint_get(struct sandbox *sb, const char *name, json_t **cp, struct api_err *e)
{
	json_t *c;

	kilnd_lock(sb->d);
	c = checkpoint_find(sb->rec.checkpoints, name, NULL);
	*cp = c ? json_deep_copy(c) : NULL;
	kilnd_unlock(sb->d);
	if (!c) {
		no_checkpoint(sb, name, e);
		return -1;
	}
	if (!*cp) {
		api_err_set(e, API_E_INTERNAL, "checkpoint: out of memory");
		return -1;
	}
	return 0;
}

void sandbox_wait_unmerging_locked(struct sandbox *sb)
{
	while (sb->cp_merging)
		pthread_cond_wait(&sb->cv, &sb->d->reg.mu);
}

/*
 * Fold checkpoint `name` into every checkpoint of `names`
 * layered on it, so that they stay whole once it is gone
 * (snap_layer_merge). The new bases go into `bases` (null: full). 0, or
 * -1 with e: nothing is deleted then, and those folded so far are whole
 * either way.
 */
static int fold_into_layers(struct sandbox *sb, const char *name, json_t *names, json_t *bases,
			    struct api_err *e)
{
	char sub[PATH_MAX];
	struct snap_merge_result res;
	struct err me = { { 0 } }, oe;
	size_t i;
	json_t *v;
	int pfd, cfd, r = 0;

	/* The jailed VMM writes these directories (sandbox_jail_open). */
	snprintf(oe.msg, sizeof(oe.msg), "its name is too long");
	pfd = checkpoint_rel(name, sub, sizeof(sub))
		? -ENOENT
		: sandbox_jail_open(sb, sub, OPEN_BENEATH_DIR, NULL, &oe);
	if (pfd < 0 && not_a_checkpoint_dir(pfd)) {
		/* nothing on disk to fold: the directory went already (or is
		 * no directory: its VMM spoiled its own checkpoints) */
		if (pfd != -ENOENT)
			kilnd_log("sandbox %s: checkpoint '%s' folds into nothing: %s", sb->rec.id,
				  name, oe.msg);
		return 0;
	}
	if (pfd < 0) {
		api_err_set(e, API_E_INTERNAL,
			    "sandbox %s: checkpoint '%s': %s; nothing was deleted, retry",
			    sb->rec.id, name, oe.msg);
		return -1;
	}
	json_array_foreach(names, i, v)
	{
		const char *child = json_string_value(v);

		cfd = checkpoint_rel(child, sub, sizeof(sub))
			? -ENOENT
			: sandbox_jail_open(sb, sub, OPEN_BENEATH_DIR, NULL, &oe);
		if (cfd < 0 && not_a_checkpoint_dir(cfd))
			continue;
		if (cfd < 0) {
			api_err_set(e, API_E_INTERNAL,
				    "sandbox %s: checkpoint '%s', maybe the base of '%s': %s; nothing was deleted, retry",
				    sb->rec.id, name, child, oe.msg);
			r = -1;
			break;
		}
		r = snap_layer_merge(pfd, cfd, &res, &me);
		close(cfd);
		if (r) {
			api_err_set(e, API_E_INTERNAL,
				    "sandbox %s: checkpoint '%s' is the base of '%s', which could not be made whole without it (%s); nothing was deleted",
				    sb->rec.id, name, child, me.msg);
			break;
		}
		if (res.merged) {
			json_object_set_new(bases, child,
					    res.full ? json_null() : json_string(res.parent));
			kilnd_log("sandbox %s: checkpoint '%s' folded into '%s' (now %s%s%s)",
				  sb->rec.id, name, child, res.full ? "full" : "layered on '",
				  res.full ? "" : res.parent, res.full ? "" : "'");
		}
	}
	close(pfd);
	return r ? -1 : 0;
}

int sandbox_checkpoint_delete(struct sandbox *sb, const char *name, struct api_err *e)
{
	struct kilnd *d = sb->d;
	char dir[PATH_MAX];
	json_t *names = json_array(), *bases = json_object(), *c, *v;
	const char *child;
	size_t i;
	int r;

	if (!names || !bases) {
		json_decref(names);
		json_decref(bases);
		api_err_set(e, API_E_INTERNAL, "checkpoint delete: out of memory");
		return -1;
	}
	if (sandbox_checkpoint_dir(sb, name, dir, sizeof(dir))) {
		no_checkpoint(sb, name, e);
		r = -1;
		goto out;
	}
	kilnd_lock(d);
	sandbox_wait_unmerging_locked(sb);
	if (!checkpoint_find(sb->rec.checkpoints, name, &i)) {
		kilnd_unlock(d);
		no_checkpoint(sb, name, e);
		r = -1;
		goto out;
	}
	if (sb->cp_readers) {
		kilnd_unlock(d);
		api_err_set(e, API_E_BUSY,
			    "sandbox %s: a fork or restore is reading its checkpoints; retry in a moment",
			    sb->rec.id);
		r = -1;
		goto out;
	}
	/* Every other checkpoint may be layered on it: the files say. */
	json_array_foreach(sb->rec.checkpoints, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));

		if (n && strcmp(n, name))
			json_array_append_new(names, json_string(n));
	}
	sb->cp_merging = true;
	kilnd_unlock(d);

	r = fold_into_layers(sb, name, names, bases, e);

	kilnd_lock(d);
	sb->cp_merging = false;
	/* Those folded say so, even when a later one failed and it stays. */
	json_object_foreach(bases, child, v)
	{
		json_t *cp = checkpoint_find(sb->rec.checkpoints, child, NULL);

		if (cp)
			json_object_set(cp, "base", v);
	}
	if (r == 0 && checkpoint_find(sb->rec.checkpoints, name, &i)) {
		json_array_remove(sb->rec.checkpoints, i);
		/* kiln-vmm tracks RAM against a snapshot that is going. */
		if (strcmp(sb->cp_base, name) == 0)
			sb->cp_base[0] = 0;
	}
	sandbox_persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r == 0) {
		/* Sandboxes restored from it keep running: their memory maps the
		 * files, which stay until the last mapping goes. */
		sandbox_remove_dir(dir);
		kilnd_log("sandbox %s: checkpoint '%s' deleted", sb->rec.id, name);
	}
out:
	json_decref(names);
	json_decref(bases);
	return r;
}

int sandbox_checkpoint_restore(struct sandbox *sb, const char *name, json_t **view,
			       struct api_err *e)
{
	struct kilnd *d = sb->d;
	char dir[PATH_MAX], hib[PATH_MAX], ref[CHECKPOINT_REF_MAX + 1];
	struct boot_src src = { .restore_dir = dir, .from = "checkpoint", .checkpoint = ref };
	enum sandbox_state to;
	int r;

	if (sandbox_checkpoint_dir(sb, name, dir, sizeof(dir)) ||
	    sandbox_hibernate_dir(sb, hib, sizeof(hib))) {
		no_checkpoint(sb, name, e);
		return -1;
	}
	snprintf(ref, sizeof(ref), "%s/%s", sb->rec.id, name);
	if (sandbox_lock_unbusy(sb, e))
		return -1;
	sandbox_wait_unmerging_locked(sb);
	if (!checkpoint_find(sb->rec.checkpoints, name, NULL)) {
		kilnd_unlock(d);
		no_checkpoint(sb, name, e);
		return -1;
	}
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_RESTORE, &to, sb->rec.id, e)) {
		kilnd_unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->cp_readers++;
	sandbox_persist_locked(sb);
	/* Everything since the checkpoint is discarded: no clean shutdown. */
	sb->stop_reason = "restored";
	sandbox_kill_locked(sb);
	sb->stop_reason = NULL;
	json_decref(sb->rec.hibernation);
	sb->rec.hibernation = NULL;
	kilnd_unlock(d);
	sandbox_remove_dir(hib);
	kilnd_log("sandbox %s: restoring checkpoint '%s'", sb->rec.id, name);
	r = sandbox_boot(sb, &src, e);
	kilnd_lock(d);
	sb->cp_readers--;
	/* Its kiln-vmm tracks RAM against that checkpoint now. */
	if (r == 0 && sb->proc)
		snprintf(sb->cp_base, sizeof(sb->cp_base), "%s", name);
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r)
		return -1;
	SANDBOX_METRIC(d, restores);
	*view = sandbox_view(sb);
	return 0;
}

void sandbox_checkpoints_reconcile(struct sandbox *sb)
{
	char dir[PATH_MAX], rel[PATH_MAX], sub[PATH_MAX];
	struct dirent *de;
	struct err oe;
	DIR *dh;
	int fd;

	if (!sb->rec.checkpoints || sandbox_checkpoint_dir(sb, NULL, dir, sizeof(dir)))
		return;
	for (size_t i = json_array_size(sb->rec.checkpoints); i-- > 0;) {
		const char *name = json_string_value(
			json_object_get(json_array_get(sb->rec.checkpoints, i), "name"));

		/* Its own directory, not a link the jailed VMM put in its place. */
		snprintf(oe.msg, sizeof(oe.msg), "its name is too long");
		fd = name && checkpoint_rel(name, rel, sizeof(rel)) == 0
			? sandbox_jail_open(sb, rel, OPEN_BENEATH_DIR, NULL, &oe)
			: -ENOENT;
		if (fd >= 0)
			close(fd);
		if (!not_a_checkpoint_dir(fd)) {
			if (fd < 0)
				kilnd_log("sandbox %s: checkpoint '%s' kept, unchecked: %s",
					  sb->rec.id, name, oe.msg);
			continue;
		}
		kilnd_log("sandbox %s: checkpoint '%s' has no directory any more (%s); dropped",
			  sb->rec.id, name ? name : "?", oe.msg);
		json_array_remove(sb->rec.checkpoints, i);
	}
	fd = sandbox_jail_open(sb, "checkpoints", OPEN_BENEATH_DIR, NULL, &oe);
	if (fd < 0) {
		if (fd != -ENOENT)
			kilnd_log("sandbox %s: cannot read its checkpoints: %s", sb->rec.id,
				  oe.msg);
		return;
	}
	dh = fdopendir(fd);
	if (!dh) {
		close(fd);
		return;
	}
	while ((de = readdir(dh))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    checkpoint_find(sb->rec.checkpoints, de->d_name, NULL))
			continue;
		/* A checkpoint kilnd never recorded (it stopped mid-way),
		 * kiln-vmm's scratch copy of one, or what the VMM planted (a
		 * link, a fifo: removed as themselves). */
		if (sandbox_pathf(sub, sizeof(sub), "%s/%s", dir, de->d_name) == 0) {
			kilnd_log("sandbox %s: removing %s, which no checkpoint names", sb->rec.id,
				  sub);
			sandbox_remove_dir(sub);
		}
	}
	closedir(dh);
}

/* ---- hibernation ---- */

/* Still idle enough to hibernate (reg.mu held); the caller holds one reference. */
static bool idle_locked(struct sandbox *sb, int64_t now)
{
	/* References: the registry's, the monitor's, the caller's. More is
	 * a request (an exec, a transfer) at work. Port mappings keep it
	 * awake: forwarded connections would end. Shares do not: the share's
	 * open files are saved by path and reopened at the wake. Client
	 * shares do: their client's connection would end with the VMM, and
	 * nothing could serve the guest until it attached again. */
	return sb->rec.state == SANDBOX_RUNNING && !sb->busy_op && sb->refs <= 3 &&
		!sandbox_spec_has_client_share(&sb->rec.spec) && sb->rec.spec.idle_timeout_s &&
		!sb->nports && !atomic_load(&sb->d->shutting_down) &&
		now - sb->active_mono >= (int64_t)sb->rec.spec.idle_timeout_s * 1000;
}

/*
 * Snapshot into <dir>/hibernate and end the VMM. idle: only if the
 * sandbox is still idle (1 when it is not: nothing done). 0 hibernated,
 * -1 with e (the sandbox goes on as it was, or crashed if its VMM died).
 */
static int hibernate(struct sandbox *sb, bool idle, struct api_err *e)
{
	struct kilnd *d = sb->d;
	char dir[PATH_MAX];
	struct control_reply rep;
	struct api_err ce;
	enum sandbox_state to;
	bool was_paused, paused_here = false;

	if (sandbox_hibernate_dir(sb, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: hibernation path too long", sb->rec.id);
		return -1;
	}
	kilnd_lock(d);
	sandbox_wait_unbusy_locked(sb);
	if (idle && !idle_locked(sb, mono_ms())) {
		kilnd_unlock(d);
		return 1;
	}
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_HIBERNATE, &to, sb->rec.id, e) ||
	    snapshot_room_locked(sb, e)) {
		kilnd_unlock(d);
		return -1;
	}
	was_paused = sb->rec.state == SANDBOX_PAUSED;
	sb->rec.state = to;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);

	/* Paused first, and it stays paused after the snapshot: nothing the
	 * guest does between the snapshot and the kill can be lost. */
	if (!was_paused) {
		if (vmm_control_call(sb->control, CTL_PAUSE, NULL, false, VMM_CONTROL_TIMEOUT_MS,
				     &rep, e))
			goto fail;
		paused_here = true;
	}
	if (vmm_control_call(sb->control, CTL_SNAPSHOT, dir, false, SNAPSHOT_TIMEOUT_MS, &rep, e))
		goto fail;

	kilnd_lock(d);
	sb->stop_reason = "hibernated";
	sandbox_kill_locked(sb);
	sb->stop_reason = NULL;
	sandbox_transition(sb->rec.state, SANDBOX_EV_HIBERNATED, &to, sb->rec.id, NULL);
	sb->rec.state = to;
	json_decref(sb->rec.hibernation);
	sb->rec.hibernation = hibernation_object(wall_ms(), &rep);
	sandbox_persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.hibernations++;
	if (idle)
		d->metrics.idle_hibernations++;
	histogram_observe(&d->metrics.snapshot_seconds, rep.ms / 1000.0);
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("sandbox %s: hibernated%s (%llu bytes, guest paused %.1f ms)", sb->rec.id,
		  idle ? " after its idle timeout" : "",
		  (unsigned long long)(rep.memory_stored_bytes + rep.state_bytes + rep.disk_bytes),
		  rep.ms);
	return 0;

fail:
	if (paused_here &&
	    vmm_control_call(sb->control, CTL_RESUME, NULL, false, VMM_CONTROL_TIMEOUT_MS, &rep,
			     &ce))
		kilnd_log("sandbox %s: resuming it after the failed hibernation failed too: %s",
			  sb->rec.id, ce.msg);
	kilnd_lock(d);
	/* Back to what it was, in one hold of the lock; if the VMM died on
	 * the way, on to crashed (its on_exit left that to us). */
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_HIBERNATE_FAIL, &to, sb->rec.id, NULL) ==
	    0)
		sb->rec.state = to;
	if (was_paused && sb->proc &&
	    sandbox_transition(sb->rec.state, SANDBOX_EV_PAUSE, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	if (!sb->proc &&
	    sandbox_transition(sb->rec.state, SANDBOX_EV_VMM_FAIL, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	sandbox_persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	kilnd_log("sandbox %s: hibernation failed: %s", sb->rec.id, e->msg);
	return -1;
}

int sandbox_hibernate(struct sandbox *sb, json_t **view, struct api_err *e)
{
	if (hibernate(sb, false, e))
		return -1;
	*view = sandbox_view(sb);
	return 0;
}

int sandbox_wake_locked(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	char dir[PATH_MAX];
	struct boot_src src = { .restore_dir = dir, .from = "hibernate", .cold_fallback = true };
	enum sandbox_state to;
	int r;

	if (sandbox_hibernate_dir(sb, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: hibernation path too long", sb->rec.id);
		return -1;
	}
	if (sandbox_lock_unbusy(sb, e))
		return -1;
	if (sb->rec.state != SANDBOX_HIBERNATED) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s is %s; only a hibernated sandbox wakes%s", sb->rec.id,
			    sandbox_state_name(sb->rec.state),
			    sb->rec.state == SANDBOX_STOPPED || sb->rec.state == SANDBOX_CRASHED
				    ? " (POST .../start boots it)"
				    : "");
		kilnd_unlock(d);
		return -1;
	}
	sandbox_transition(sb->rec.state, SANDBOX_EV_START, &to, sb->rec.id, NULL);
	sb->rec.state = to;
	sb->waking = true;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	kilnd_log("sandbox %s: waking", sb->rec.id);
	r = sandbox_boot(sb, &src, e);
	/* Used or unusable, the snapshot is spent: the disk is the overlay now. */
	sandbox_remove_dir(dir);
	kilnd_lock(d);
	sb->waking = false;
	json_decref(sb->rec.hibernation);
	sb->rec.hibernation = NULL;
	sandbox_persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r == 0)
		SANDBOX_METRIC(d, wakes);
	return r;
}

int sandbox_wake(struct sandbox *sb, json_t **view, struct api_err *e)
{
	json_t *v, *boot;

	if (sandbox_wake_locked(sb, e))
		return -1;
	v = sandbox_view(sb);
	boot = json_object_get(v, "boot");
	if (v &&
	    (json_object_set_new(v, "woke_from",
				 json_string(strcmp(json_string_value(json_object_get(boot, "from"))
							    ?: "",
						    "hibernate") == 0
						     ? "snapshot"
						     : "cold_boot")) ||
	     json_object_set(v, "fallback_reason",
			     json_object_get(boot, "snapshot_error") ?: json_null()))) {
		json_decref(v);
		v = NULL;
	}
	*view = v;
	return 0;
}

/* ---- the idle timeout ---- */

static int any_attached(void *arg, const struct kiln_proc_entry *p)
{
	if (p->attached)
		*(bool *)arg = true;
	return 0;
}

static void *idle_thread(void *arg)
{
	struct sandbox *sb = arg;
	struct api_err e;
	bool watched = false;
	kiln_agent *a;

	/* A client reading a process's output or in its terminal holds no
	 * request on the sandbox between keystrokes: ask the agent. */
	if (kiln_agent_new(sb->vsock, &a) == 0) {
		if (kiln_agent_list_procs(a, any_attached, &watched, NULL) < 0)
			watched = false;
		kiln_agent_free(a);
	}
	if (watched) {
		kilnd_lock(sb->d);
		sb->active_mono = mono_ms();
		kilnd_unlock(sb->d);
	} else {
		hibernate(sb, true, &e);
	}
	kilnd_lock(sb->d);
	sb->idle_pending = false;
	kilnd_unlock(sb->d);
	sandbox_put(sb);
	return NULL;
}

void sandbox_idle_check_locked(struct sandbox *sb, int64_t now_mono)
{
	pthread_attr_t attr;
	pthread_t th;

	/* Without the thread's own reference, so refs <= 2. */
	if (sb->idle_pending || sb->refs > 2 || !idle_locked(sb, now_mono))
		return;
	sb->idle_pending = true;
	sb->refs++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, idle_thread, sb)) {
		/* Tried again at the next tick. */
		sb->idle_pending = false;
		sb->refs--;
	}
	pthread_attr_destroy(&attr);
}

/* The sandbox registry: lookups, lists, timeouts, shutdown, start-up; see sandbox.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/supervision/cgroup.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/images/templates.h"
#include "lib/base/json.h"

struct sandbox *sandbox_find_locked(struct kilnd *d, const char *id)
{
	for (size_t i = 0; i < d->reg.n; i++)
		if (strcmp(d->reg.v[i]->rec.id, id) == 0)
			return d->reg.v[i];
	return NULL;
}

struct sandbox *sandbox_find_ref(struct kilnd *d, const char *id)
{
	struct sandbox *sb;

	kilnd_lock(d);
	sb = sandbox_find_locked(d, id);
	if (sb)
		sb->refs++;
	kilnd_unlock(d);
	return sb;
}

int sandbox_registry_add_locked(struct kilnd *d, struct sandbox *sb)
{
	if (d->reg.n == d->reg.cap) {
		size_t cap = d->reg.cap ? 2 * d->reg.cap : 16;
		struct sandbox **v = realloc(d->reg.v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->reg.v = v;
		d->reg.cap = cap;
	}
	d->reg.v[d->reg.n++] = sb;
	sb->refs++;
	return 0;
}

/* Drop the registry's reference (the caller still holds its own). */
void sandbox_registry_remove_locked(struct kilnd *d, struct sandbox *sb)
{
	for (size_t i = 0; i < d->reg.n; i++) {
		if (d->reg.v[i] == sb) {
			/* Keep creation order: lists are oldest first. */
			memmove(&d->reg.v[i], &d->reg.v[i + 1],
				(d->reg.n - i - 1) * sizeof(*d->reg.v));
			d->reg.n--;
			sb->refs--;
			return;
		}
	}
}

json_t *sandbox_list(struct kilnd *d, const struct peer *who, const struct list_filter *f)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	kilnd_lock(d);
	for (size_t i = 0; i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];

		if (sandbox_record_visible(&sb->rec, who->uid) &&
		    list_filter_match(f, sb->rec.state, sb->rec.spec.labels) &&
		    json_array_append_new(arr, sandbox_record_view(&sb->rec))) {
			kilnd_unlock(d);
			json_decref(arr);
			return NULL;
		}
	}
	kilnd_unlock(d);
	return json_pack("{s:o}", "sandboxes", arr);
}

json_t *sandbox_list_view(struct sandbox *sb, const char *key,
			  size_t (*count)(const struct sandbox *sb),
			  json_t *(*view)(struct sandbox *sb, size_t i))
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	kilnd_lock(sb->d);
	for (size_t i = 0, n = count(sb); i < n; i++) {
		if (json_array_append_new(a, view(sb, i))) {
			kilnd_unlock(sb->d);
			json_decref(a);
			return NULL;
		}
	}
	kilnd_unlock(sb->d);
	return json_pack("{s:o}", key, a);
}

void sandboxes_count(struct kilnd *d, unsigned counts[SANDBOX_STATE_COUNT], size_t *total)
{
	memset(counts, 0, SANDBOX_STATE_COUNT * sizeof(counts[0]));
	kilnd_lock(d);
	*total = 0;
	for (size_t i = 0; i < d->reg.n; i++) {
		/* what clients see: not a warm pool's, not a template's hidden one */
		if (d->reg.v[i]->rec.pooled || d->reg.v[i]->rec.tmpl_build[0])
			continue;
		counts[d->reg.v[i]->rec.state]++;
		(*total)++;
	}
	kilnd_unlock(d);
}

static void *timeout_thread(void *arg)
{
	struct sandbox *sb = arg;
	struct api_err e;

	/* A request that got there first (stop, delete) is fine: 409 here. */
	sandbox_stop(sb, AGENT_GRACE_DEFAULT_MS, "timeout", NULL, &e);
	kilnd_lock(sb->d);
	sb->timeout_pending = false;
	kilnd_unlock(sb->d);
	sandbox_put(sb);
	return NULL;
}

void sandboxes_tick(struct kilnd *d)
{
	int64_t now = mono_ms();

	kilnd_lock(d);
	for (size_t i = 0; i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];
		pthread_attr_t attr;
		pthread_t th;

		sandbox_idle_check_locked(sb, now);
		/* A paused sandbox's deadline runs on: its stop resumes it first. */
		if ((sb->rec.state != SANDBOX_RUNNING && sb->rec.state != SANDBOX_PAUSED) ||
		    !sb->deadline_mono || now < sb->deadline_mono || sb->timeout_pending)
			continue;
		sb->timeout_pending = true;
		sb->refs++;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, timeout_thread, sb)) {
			/* Tried again at the next tick. */
			sb->timeout_pending = false;
			sb->refs--;
		}
		pthread_attr_destroy(&attr);
	}
	kilnd_unlock(d);
}

static void *shutdown_thread(void *arg)
{
	struct sandbox *sb = arg;
	struct api_err e;

	sandbox_stop(sb, AGENT_GRACE_DEFAULT_MS, "stopped", NULL, &e);
	return NULL;
}

void sandboxes_shutdown(struct kilnd *d)
{
	struct sandbox **all;
	pthread_t *th;
	bool *started;
	size_t n;

	kilnd_lock(d);
	n = d->reg.n;
	all = calloc(n ? n : 1, sizeof(*all));
	th = calloc(n ? n : 1, sizeof(*th));
	started = calloc(n ? n : 1, sizeof(*started));
	if (!all || !th || !started) {
		/* No memory to stop them gracefully: their keepers stop them after --keeper-grace. */
		kilnd_unlock(d);
		free(all);
		free(th);
		free(started);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		all[i] = d->reg.v[i];
		all[i]->refs++;
	}
	kilnd_unlock(d);
	/* In parallel: each stop may wait for its guest. */
	for (size_t i = 0; i < n; i++)
		started[i] = pthread_create(&th[i], NULL, shutdown_thread, all[i]) == 0;
	for (size_t i = 0; i < n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	/* Booting, stopping or deleting ones belong to requests that see
	 * shutting_down or finish on their own; wait for their VMMs too. */
	kilnd_lock(d);
	for (size_t i = 0; i < n; i++) {
		if (all[i]->proc && !sandbox_wait_gone_locked(all[i], d->cfg.stop_timeout_ms))
			sandbox_kill_locked(all[i]);
	}
	kilnd_unlock(d);
	for (size_t i = 0; i < n; i++)
		sandbox_put(all[i]);
	free(all);
	free(th);
	free(started);
}

/* Remove what a cut-short create or delete left of sandbox id: its
 * directory and its cgroup (a VMM still in it is killed: nobody owns it). */
static void remove_leftover(struct kilnd *d, const char *id, const char *dir, const char *why)
{
	char cg[PATH_MAX];
	int r;

	kilnd_log("removing %s: %s", dir, why);
	/* Its VMM outlived the kilnd that started it: ended first, and its
	 * keeper gone, so nothing writes into the directory as it goes. */
	if (vmm_keeper_end(dir) == 0)
		kilnd_log("sandbox %s: its kiln-vmm, still running under its keeper, was killed",
			  id);
	if (d->cfg.cgroups &&
	    sandbox_pathf(cg, sizeof(cg), "%s/%s", d->cfg.cgroup_parent, id) == 0 &&
	    (r = cgroup_leaf_remove(cg)))
		kilnd_log("cannot remove the cgroup %s: %s", cg, strerror(-r));
	sandbox_remove_dir(dir);
}

/* Load one sandbox directory's meta.json (path: its hibernation snapshot then). */
static void load_one(struct kilnd *d, const char *id)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[ERR_MSG_MAX];
	enum sandbox_dir_fate fate;
	struct sandbox *sb;
	struct err why;
	json_error_t je;
	struct stat st;
	json_t *meta = NULL;

	if (sandbox_pathf(dir, sizeof(dir), "%s/sandboxes/%s", d->cfg.state_dir, id) ||
	    sandbox_pathf(path, sizeof(path), "%s/meta.json", dir))
		return;
	/* Only a directory of its own is a sandbox's: a link is never followed. */
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		kilnd_log("skipping %s: not a directory", dir);
		return;
	}
	err[0] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			snprintf(err, sizeof(err), "meta.json: %s", strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_size > META_MAX) {
		snprintf(err, sizeof(err), "meta.json is not a regular file of at most %u bytes",
			 META_MAX);
	} else if (!(meta = json_strict_load_file(path, &je))) {
		snprintf(err, sizeof(err), "meta.json: %s (line %d)", je.text, je.line);
	}
	sb = sandbox_new(d);
	if (!sb) {
		kilnd_log("skipping %s: out of memory", dir);
		json_decref(meta);
		return;
	}
	fate = sandbox_dir_judge(id, meta, err[0] ? err : NULL, &sb->rec, &why);
	json_decref(meta);
	if (fate != SANDBOX_DIR_LOAD) {
		if (fate == SANDBOX_DIR_REMOVE)
			remove_leftover(d, id, dir, why.msg);
		else
			kilnd_log("skipping %s: %s", dir, why.msg);
		sandbox_free(sb);
		return;
	}
	if (sb->rec.tmpl_build[0]) {
		/* A build cut short: its VM is stopped and its directory goes
		 * (a template record that cannot be read keeps its sandbox). */
		struct api_err te;
		json_t *t = template_load(d, sb->rec.tmpl_build, &te);
		bool orphan = (t || te.code == API_E_NOT_FOUND) &&
			sandbox_build_orphan(&sb->rec, t, &why);

		json_decref(t);
		if (orphan) {
			remove_leftover(d, id, dir, why.msg);
			sandbox_free(sb);
			return;
		}
	}
	snprintf(sb->dir, sizeof(sb->dir), "%s", dir);
	if (sandbox_pathf(sb->vsock, sizeof(sb->vsock), "%s/vm/vsock.sock", dir) ||
	    sandbox_pathf(sb->control, sizeof(sb->control), "%s/vm/control.sock", dir) ||
	    sandbox_hibernate_dir(sb, path, sizeof(path))) {
		sandbox_free(sb);
		return;
	}
	sandbox_checkpoints_reconcile(sb);
	kilnd_lock(d);
	if (sandbox_registry_add_locked(d, sb)) {
		kilnd_unlock(d);
		sandbox_free(sb);
		return;
	}
	kilnd_unlock(d);
	/* Registered first: a VMM reattached may end at once, and its
	 * on_vmm_exit finds the sandbox whole. */
	sandbox_reattach_load(sb, path);
}

static int cmp_created(const void *a, const void *b)
{
	const struct sandbox *x = *(struct sandbox *const *)a, *y = *(struct sandbox *const *)b;

	return (x->rec.created_ms > y->rec.created_ms) - (x->rec.created_ms < y->rec.created_ms);
}

int sandboxes_init(struct kilnd *d, struct err *e)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	DIR *dh;

	pthread_mutex_init(&d->reg.mu, NULL);
	snprintf(dir, sizeof(dir), "%s/sandboxes", d->cfg.state_dir);
	dh = opendir(dir);
	if (!dh) {
		err_set(e, errno, "cannot open %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(dh)))
		if (sandbox_id_valid(de->d_name))
			load_one(d, de->d_name);
	closedir(dh);
	templates_init(d);
	if (d->reg.n > 1)
		qsort(d->reg.v, d->reg.n, sizeof(*d->reg.v), cmp_created);
	if (d->reg.n)
		kilnd_log("%zu sandboxes from %s", d->reg.n, dir);
	return 0;
}

bool sandboxes_free(struct kilnd *d)
{
	bool clean = true;

	/* Monitor and producer threads drop their references as they end,
	 * which after sandboxes_shutdown() takes moments: wait a little. */
	for (int i = 0; i < 500; i++) {
		bool busy = false;

		kilnd_lock(d);
		for (size_t k = 0; k < d->reg.n && !busy; k++)
			busy = d->reg.v[k]->refs > 1;
		kilnd_unlock(d);
		if (!busy)
			break;
		usleep(10000);
	}
	kilnd_lock(d);
	while (d->reg.n) {
		struct sandbox *sb = d->reg.v[--d->reg.n];

		/* A straggler keeps its sandbox and the daemon context: it will
		 * still lock the registry when it lets go. */
		if (--sb->refs == 0)
			sandbox_free(sb);
		else
			clean = false;
	}
	free(d->reg.v);
	d->reg.v = NULL;
	d->reg.cap = 0;
	kilnd_unlock(d);
	return clean;
}

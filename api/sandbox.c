/* Sandbox registry and lifecycle; see sandbox.h. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "images.h"
#include "sandbox_record.h"
#include "supervise.h"
#include "vmm_argv.h"
#include "vmm_output.h"

/* A kill -9'd kiln-vmm is reaped at once; anything longer is a stuck
 * process (D state) worth a log line while we keep waiting. */
#define KILL_WAIT_MS 10000
#define TERM_WAIT_MS 2000
/* How often the boot loop looks at the VMM between agent connects. */
#define BOOT_SLICE_MS 100
/* meta.json is small; anything bigger is not ours. */
#define META_MAX (1u << 20)

struct sandbox {
	struct kilnd *d;
	struct sandbox_record rec;  /* reg.mu */
	char dir[PATH_MAX];         /* immutable */
	char vsock[KILND_SOCKET_MAX]; /* immutable */
	int refs;                   /* reg.mu */
	struct vmm_proc *proc;      /* reg.mu; NULL: no VMM */
	bool vmm_exited;            /* reg.mu: this boot's VMM has ended */
	int64_t deadline_mono;      /* reg.mu: timeout_s deadline; 0: none */
	bool timeout_pending;       /* reg.mu: a timeout stop is under way */
	const char *stop_reason;    /* reg.mu: last_exit.reason while stopping */
	pthread_cond_t cv;          /* with reg.mu: the VMM ended */
};

/* snprintf for paths: -ENAMETOOLONG instead of a silently cut path. */
static int pathf(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int pathf(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static void lock(struct kilnd *d)
{
	pthread_mutex_lock(&d->reg.mu);
}

static void unlock(struct kilnd *d)
{
	pthread_mutex_unlock(&d->reg.mu);
}

/* ---- files ---- */

/* Rewrite meta.json atomically (temporary file + rename). Under reg.mu. */
static void persist_locked(struct sandbox *sb)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
	json_t *m = sandbox_record_persist(&sb->rec);
	char *s = m ? json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	size_t n = s ? strlen(s) : 0, off = 0;
	int fd;

	json_decref(m);
	if (!s) {
		kilnd_log("sandbox %s: cannot save meta.json: out of memory", sb->rec.id);
		return;
	}
	snprintf(path, sizeof(path), "%s/meta.json", sb->dir);
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", sb->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (fd >= 0 && off < n) {
		ssize_t w = write(fd, s + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (fd < 0 || off < n || close(fd) < 0 || rename(tmp, path) < 0) {
		kilnd_log("sandbox %s: cannot save %s: %s", sb->rec.id, path, strerror(errno));
		if (fd >= 0 && off < n)
			close(fd);
		unlink(tmp);
	}
	free(s);
}

/* Remove a sandbox directory: its files (it holds no subdirectories), then
 * itself. Nothing outside it is touched: entries are removed relative to
 * the directory and never followed. */
static void remove_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;

	if (!dh) {
		if (errno != ENOENT)
			kilnd_log("cannot open %s to remove it: %s", dir, strerror(errno));
		return;
	}
	while ((de = readdir(dh))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(dh), de->d_name, 0) < 0)
			kilnd_log("cannot remove %s/%s: %s", dir, de->d_name, strerror(errno));
	}
	closedir(dh);
	if (rmdir(dir) < 0)
		kilnd_log("cannot remove %s: %s", dir, strerror(errno));
}

/* ---- references and lookup ---- */

static struct sandbox *sandbox_new(struct kilnd *d)
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

static void sandbox_free(struct sandbox *sb)
{
	sandbox_record_free(&sb->rec);
	pthread_cond_destroy(&sb->cv);
	free(sb);
}

void sandbox_put(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	bool last;

	lock(d);
	last = --sb->refs == 0;
	unlock(d);
	if (last)
		sandbox_free(sb);
}

static struct sandbox *find_locked(struct kilnd *d, const char *id)
{
	for (size_t i = 0; i < d->reg.n; i++)
		if (strcmp(d->reg.v[i]->rec.id, id) == 0)
			return d->reg.v[i];
	return NULL;
}

struct sandbox *sandbox_get(struct kilnd *d, const char *id, struct api_err *e)
{
	struct sandbox *sb = NULL;

	if (sandbox_id_valid(id)) {
		lock(d);
		sb = find_locked(d, id);
		if (sb)
			sb->refs++;
		unlock(d);
	}
	if (!sb)
		api_err_set(e, API_E_SANDBOX_NOT_FOUND, "no sandbox '%.64s' (GET /v1/sandboxes lists them)", id);
	return sb;
}

static int registry_add_locked(struct kilnd *d, struct sandbox *sb)
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
static void registry_remove_locked(struct kilnd *d, struct sandbox *sb)
{
	for (size_t i = 0; i < d->reg.n; i++) {
		if (d->reg.v[i] == sb) {
			/* Keep creation order: lists are oldest first. */
			memmove(&d->reg.v[i], &d->reg.v[i + 1], (d->reg.n - i - 1) * sizeof(*d->reg.v));
			d->reg.n--;
			sb->refs--;
			return;
		}
	}
}

json_t *sandbox_view(struct sandbox *sb)
{
	json_t *v;

	lock(sb->d);
	v = sandbox_record_view(&sb->rec);
	unlock(sb->d);
	return v;
}

json_t *sandbox_list(struct kilnd *d, const struct list_filter *f)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	lock(d);
	for (size_t i = 0; i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];

		if (list_filter_match(f, sb->rec.state, sb->rec.spec.labels) &&
		    json_array_append_new(arr, sandbox_record_view(&sb->rec))) {
			unlock(d);
			json_decref(arr);
			return NULL;
		}
	}
	unlock(d);
	return json_pack("{s:o}", "sandboxes", arr);
}

void sandboxes_count(struct kilnd *d, unsigned counts[SB_STATE_COUNT], size_t *total)
{
	memset(counts, 0, SB_STATE_COUNT * sizeof(counts[0]));
	lock(d);
	for (size_t i = 0; i < d->reg.n; i++)
		counts[d->reg.v[i]->rec.state]++;
	*total = d->reg.n;
	unlock(d);
}

/* ---- the VMM ---- */

/* Wait (reg.mu held) until the VMM is gone or ms passed (< 0: no limit). */
static bool wait_gone_locked(struct sandbox *sb, int ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (sb->proc) {
		if (ms < 0)
			pthread_cond_wait(&sb->cv, &sb->d->reg.mu);
		else if (pthread_cond_timedwait(&sb->cv, &sb->d->reg.mu, &dl) == ETIMEDOUT)
			break;
	}
	return !sb->proc;
}

/* Kill the VMM and wait until it is gone. Under reg.mu. */
static void kill_locked(struct sandbox *sb)
{
	if (!sb->proc)
		return;
	vmm_signal(sb->proc, SIGKILL);
	if (!wait_gone_locked(sb, KILL_WAIT_MS)) {
		kilnd_log("sandbox %s: kiln-vmm pid %d has not died %d s after SIGKILL; still waiting", sb->rec.id,
			  sb->rec.pid, KILL_WAIT_MS / 1000);
		wait_gone_locked(sb, -1);
	}
}

/*
 * Called by the monitor thread when kiln-vmm ended, before it is reaped.
 * A running sandbox becomes stopped (the guest shut itself down: status
 * 0) or crashed; in a transient state the owner of that state moves on.
 */
static void on_vmm_exit(void *arg, const struct vmm_exit_info *x)
{
	struct sandbox *sb = arg;
	struct kilnd *d = sb->d;
	struct vmm_end end = {
		.at_ms = wall_ms(),
		.exit_status = x->status,
		.signal = x->signal,
		.console_tail = vmm_output_tail(x->console, x->console_len, x->console_whole, CONSOLE_TAIL_LINES,
						CONSOLE_LINE_MAX),
		.message = vmm_output_message(x->err, x->err_len),
		.timeline = vmm_output_timeline(x->err, x->err_len),
	};
	enum sandbox_state was, to;
	bool crashed = false;

	lock(d);
	was = sb->rec.state;
	switch (was) {
	case SB_BOOTING:
		end.reason = "boot_failed";
		break;
	case SB_STOPPING:
	case SB_DELETING:
		end.reason = sb->stop_reason ? sb->stop_reason : "stopped";
		break;
	case SB_RUNNING:
		crashed = !(x->status == 0 && x->signal == 0);
		end.reason = crashed ? "crashed" : "guest_shutdown";
		if (sandbox_transition(was, crashed ? SB_EV_VMM_FAIL : SB_EV_VMM_CLEAN, &to, sb->rec.id, NULL) == 0)
			sb->rec.state = to;
		break;
	default:
		end.reason = "crashed";
		break;
	}
	json_decref(sb->rec.last_exit);
	sb->rec.last_exit = sandbox_exit_json(&end);
	sb->proc = NULL;
	sb->vmm_exited = true;
	sb->rec.pid = 0;
	sb->rec.stopped_ms = end.at_ms;
	sb->rec.expires_ms = 0;
	sb->deadline_mono = 0;
	/* kiln-vmm removes nothing on its way out: the next boot binds again. */
	unlink(sb->vsock);
	persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	if (x->signal)
		kilnd_log("sandbox %s: kiln-vmm was killed by signal %d (%s)", sb->rec.id, x->signal,
			  sandbox_state_name(sb->rec.state));
	else
		kilnd_log("sandbox %s: kiln-vmm exited with status %d (%s)", sb->rec.id, x->status,
			  sandbox_state_name(sb->rec.state));
	unlock(d);
	if (crashed) {
		pthread_mutex_lock(&d->metrics_mu);
		d->metrics.crashes++;
		pthread_mutex_unlock(&d->metrics_mu);
	}
	sandbox_put(sb);
}

/* The create/start error for a VMM that ended while booting. Under reg.mu. */
static void boot_exit_error_locked(struct sandbox *sb, struct api_err *e)
{
	json_t *le = sb->rec.last_exit;
	json_t *st = json_object_get(le, "exit_status"), *sig = json_object_get(le, "signal");
	const char *msg = json_string_value(json_object_get(le, "message"));
	json_t *tail = json_object_get(le, "console_tail");
	const char *last = json_string_value(json_array_get(tail, json_array_size(tail) - 1));
	char how[64];

	if (json_is_integer(sig))
		snprintf(how, sizeof(how), "was killed by signal %lld", (long long)json_integer_value(sig));
	else
		snprintf(how, sizeof(how), "exited with status %lld", (long long)json_integer_value(st));
	api_err_set(e, API_E_BOOT_FAILED, "sandbox %s: kiln-vmm %s before the guest agent answered: %s%s%s",
		    sb->rec.id, how, msg ? msg : "no error line from kiln-vmm",
		    !msg && last ? "; last console line: " : "", !msg && last ? last : "");
}

/*
 * Boot the sandbox (state booting, owned by the caller) and wait for its
 * agent. 0: running. -1 with e: crashed, no VMM left.
 */
static int boot(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	char overlay[PATH_MAX + 16], console[PATH_MAX + 16], vlog[PATH_MAX + 16];
	struct vmm_launch l = { .vmm = d->cfg.vmm, .kernel = d->cfg.kernel, .overlay = overlay,
				.vsock = sb->vsock };
	struct vmm_spawn_req req = { .console_log = console, .vmm_log = vlog, .on_exit = on_vmm_exit, .arg = sb };
	struct agent_client_info info;
	struct agent_client_err ae;
	struct agent_client c;
	struct vmm_argv argv;
	struct vmm_proc *proc;
	enum sandbox_state to;
	double t0, deadline, ready_ms;
	int64_t uptime = -1;
	bool synced = false, spawned = false, timed_out = false;
	struct timespec now;
	pid_t pid;

	/* The spec and image path do not change after creation. */
	l.image = sb->rec.image_path;
	l.spec = &sb->rec.spec;
	snprintf(overlay, sizeof(overlay), "%s/overlay", sb->dir);
	snprintf(console, sizeof(console), "%s/console.log", sb->dir);
	snprintf(vlog, sizeof(vlog), "%s/vmm.log", sb->dir);
	if (vmm_argv_build(&l, &argv, e))
		goto failed;
	req.argv = argv.argv;
	/* A socket left by a kiln-vmm that was killed would make bind fail. */
	unlink(sb->vsock);
	lock(d);
	sb->vmm_exited = false;
	sb->rec.boots++;
	sb->refs++; /* the monitor's, dropped in on_vmm_exit */
	unlock(d);
	t0 = mono_ms_f();
	if (vmm_spawn(&req, &proc, &pid, e)) {
		vmm_argv_free(&argv);
		lock(d);
		sb->refs--;
		unlock(d);
		goto failed;
	}
	vmm_argv_free(&argv);
	spawned = true;
	lock(d);
	/* The VMM may already be gone (on_vmm_exit ran): then keep proc NULL. */
	if (!sb->vmm_exited) {
		sb->proc = proc;
		sb->rec.pid = pid;
	}
	persist_locked(sb);
	unlock(d);

	agent_client_init(&c, sb->vsock);
	deadline = t0 + d->cfg.boot_timeout_ms;
	for (;;) {
		double left = deadline - mono_ms_f();
		bool exited;
		int r;

		lock(d);
		exited = sb->vmm_exited;
		if (exited)
			boot_exit_error_locked(sb, e);
		unlock(d);
		if (exited)
			goto failed;
		if (atomic_load(&d->shutting_down)) {
			api_err_set(e, API_E_AGENT_UNAVAILABLE, "sandbox %s: kilnd is shutting down", sb->rec.id);
			goto kill;
		}
		if (left <= 0) {
			timed_out = true;
			goto kill;
		}
		r = agent_client_wait_ready(&c, left < BOOT_SLICE_MS ? (int)left + 1 : BOOT_SLICE_MS, &ae);
		if (r == 0)
			break;
		if (r == -EPROTONOSUPPORT) {
			api_err_from_agent(e, &ae, "waiting for the guest agent");
			goto kill;
		}
	}
	ready_ms = mono_ms_f() - t0;
	/* Best effort, for the boot timeline and for guests without an RTC. */
	if (agent_client_info(&c, &info, &ae) == 0)
		uptime = (int64_t)info.uptime_ms;
	clock_gettime(CLOCK_REALTIME, &now);
	if (agent_client_sync_clock(&c, (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec, NULL, &ae) == 0)
		synced = true;
	else
		kilnd_log("sandbox %s: setting the guest clock failed: %s", sb->rec.id, ae.message);

	lock(d);
	if (sb->vmm_exited) {
		boot_exit_error_locked(sb, e);
		unlock(d);
		goto failed;
	}
	sandbox_transition(sb->rec.state, SB_EV_BOOT_OK, &to, sb->rec.id, NULL);
	sb->rec.state = to;
	sb->rec.started_ms = wall_ms();
	sb->rec.stopped_ms = 0;
	json_decref(sb->rec.boot);
	sb->rec.boot = sandbox_boot_json(ready_ms, uptime, synced);
	if (sb->rec.spec.timeout_s) {
		sb->deadline_mono = mono_ms() + (int64_t)sb->rec.spec.timeout_s * 1000;
		sb->rec.expires_ms = sb->rec.started_ms + (int64_t)sb->rec.spec.timeout_s * 1000;
	}
	persist_locked(sb);
	unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.boots++;
	histogram_observe(&d->metrics.boot_seconds, ready_ms / 1000.0);
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("sandbox %s: running, agent answered after %.1f ms", sb->rec.id, ready_ms);
	return 0;

kill:
	lock(d);
	kill_locked(sb);
	if (timed_out) {
		/* The directory of a failed create is gone by the time the client
		 * reads this: quote the console instead of pointing at it. */
		json_t *tail = json_object_get(sb->rec.last_exit, "console_tail");
		const char *last = json_string_value(json_array_get(tail, json_array_size(tail) - 1));

		api_err_set(e, API_E_AGENT_UNAVAILABLE,
			    "sandbox %s: the guest agent did not answer within %d s of kiln-vmm's start (--boot-timeout); the VM was killed. Last console line: %s",
			    sb->rec.id, d->cfg.boot_timeout_ms / 1000,
			    last ? last : sb->rec.spec.console ? "(none)" : "(console off)");
	}
	unlock(d);
failed:
	lock(d);
	if (!spawned) {
		/* No VMM ever ran, so no on_exit described the failure. */
		struct vmm_end end = { .at_ms = wall_ms(), .reason = "boot_failed", .exit_status = -1,
				       .message = json_string(e->message) };

		json_decref(sb->rec.last_exit);
		sb->rec.last_exit = sandbox_exit_json(&end);
	} else {
		json_object_set_new(sb->rec.last_exit, "reason", json_string("boot_failed"));
	}
	if (sandbox_transition(sb->rec.state, SB_EV_BOOT_FAIL, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	persist_locked(sb);
	unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.boot_failures++;
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("%s", e->message);
	return -1;
}

/*
 * Bring the VMM down (state stopping or deleting, owned by the caller):
 * ask the agent to shut the guest down, then SIGTERM, then SIGKILL.
 */
static void halt(struct sandbox *sb, int grace_ms)
{
	struct kilnd *d = sb->d;
	struct agent_client_err ae;
	struct agent_client c;
	bool has;

	lock(d);
	has = sb->proc != NULL;
	unlock(d);
	if (!has)
		return;
	agent_client_init(&c, sb->vsock);
	/* A hung guest must not hold the stop longer than the stop timeout. */
	if (c.timeout_ms > d->cfg.stop_timeout_ms)
		c.timeout_ms = d->cfg.stop_timeout_ms;
	if (agent_client_shutdown(&c, grace_ms, &ae) < 0)
		kilnd_log("sandbox %s: the agent did not take the shutdown request (%s); stopping the VMM", sb->rec.id,
			  ae.message);
	lock(d);
	if (!wait_gone_locked(sb, d->cfg.stop_timeout_ms + grace_ms)) {
		kilnd_log("sandbox %s: the guest did not shut down within %d ms; SIGTERM to kiln-vmm", sb->rec.id,
			  d->cfg.stop_timeout_ms + grace_ms);
		vmm_signal(sb->proc, SIGTERM);
		if (!wait_gone_locked(sb, TERM_WAIT_MS))
			kill_locked(sb);
	}
	unlock(d);
}

/* ---- requests ---- */

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
		if (!find_locked(d, id))
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
	sb = sandbox_new(d);
	if (!sb) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: out of memory");
		goto fail_spec;
	}
	lock(d);
	if (atomic_load(&d->shutting_down)) {
		unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		goto fail_sb;
	}
	if (d->reg.n >= d->cfg.max_sandboxes) {
		unlock(d);
		api_err_set(e, API_E_LIMIT_REACHED, "%u sandboxes exist (--max-sandboxes); delete one first",
			    d->cfg.max_sandboxes);
		goto fail_sb;
	}
	if ((r = new_id_locked(d, sb->rec.id)) || (r = registry_add_locked(d, sb))) {
		unlock(d);
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
	r = pathf(sb->dir, sizeof(sb->dir), "%s/sandboxes/%s", d->cfg.state_dir, sb->rec.id);
	if (!r)
		r = pathf(sb->vsock, sizeof(sb->vsock), "%s/vsock.sock", sb->dir);
	unlock(d);
	if (r) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: the state directory's path is too long");
		lock(d);
		registry_remove_locked(d, sb);
		unlock(d);
		sandbox_put(sb);
		return -1;
	}

	if (mkdir(sb->dir, 0700) < 0) {
		api_err_set(e, API_E_INTERNAL, "sandbox create: cannot create %s: %s", sb->dir, strerror(errno));
		lock(d);
		registry_remove_locked(d, sb);
		unlock(d);
		sandbox_put(sb);
		return -1;
	}
	kilnd_log("sandbox %s: created (image %s, %u vCPUs, %u MiB)", sb->rec.id, sb->rec.spec.image,
		  sb->rec.spec.cpus, sb->rec.spec.memory_mib);
	if (boot(sb, e) == 0) {
		*view = sandbox_view(sb);
		sandbox_put(sb);
		return 0;
	}
	/* A failed create leaves nothing behind. It is crashed now, so a
	 * concurrent DELETE may have taken it: then that one cleans up. */
	lock(d);
	r = sandbox_transition(sb->rec.state, SB_EV_DELETE, &to, sb->rec.id, NULL);
	if (r == 0) {
		sb->rec.state = to;
		registry_remove_locked(d, sb);
	}
	unlock(d);
	if (r == 0)
		remove_dir(sb->dir);
	sandbox_put(sb);
	return -1;
fail_sb:
	sandbox_free(sb);
fail_spec:
	sandbox_spec_free(&spec);
	return -1;
}

int sandbox_start(struct sandbox *sb, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	lock(d);
	if (atomic_load(&d->shutting_down)) {
		unlock(d);
		api_err_set(e, API_E_AGENT_UNAVAILABLE, "kilnd is shutting down");
		return -1;
	}
	if (sandbox_transition(sb->rec.state, SB_EV_START, &to, sb->rec.id, e)) {
		unlock(d);
		return -1;
	}
	sb->rec.state = to;
	persist_locked(sb);
	unlock(d);
	if (boot(sb, e))
		return -1;
	*view = sandbox_view(sb);
	return 0;
}

int sandbox_stop(struct sandbox *sb, int grace_ms, const char *reason, json_t **view, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_STOP, &to, sb->rec.id, e)) {
		unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = reason;
	persist_locked(sb);
	unlock(d);
	halt(sb, grace_ms);
	lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_STOPPED, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	sb->stop_reason = NULL;
	persist_locked(sb);
	unlock(d);
	kilnd_log("sandbox %s: stopped (%s)", sb->rec.id, reason);
	if (view)
		*view = sandbox_view(sb);
	return 0;
}

int sandbox_delete(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	enum sandbox_state to;

	lock(d);
	if (sandbox_transition(sb->rec.state, SB_EV_DELETE, &to, sb->rec.id, e)) {
		unlock(d);
		return -1;
	}
	sb->rec.state = to;
	sb->stop_reason = "stopped";
	persist_locked(sb);
	unlock(d);
	halt(sb, AGENT_GRACE_DEFAULT_MS);
	lock(d);
	registry_remove_locked(d, sb);
	unlock(d);
	remove_dir(sb->dir);
	kilnd_log("sandbox %s: deleted", sb->rec.id);
	return 0;
}

int sandbox_agent(struct sandbox *sb, struct agent_client *c, json_t **env, struct api_err *e)
{
	struct kilnd *d = sb->d;

	lock(d);
	if (!sandbox_state_serves_agent(sb->rec.state)) {
		api_err_set(e, API_E_WRONG_STATE, "sandbox %s is %s; exec and files need it running%s", sb->rec.id,
			    sandbox_state_name(sb->rec.state),
			    sb->rec.state == SB_STOPPED || sb->rec.state == SB_CRASHED ? " (POST .../start)" : "");
		unlock(d);
		return -1;
	}
	*env = json_incref(sb->rec.spec.env);
	unlock(d);
	agent_client_init(c, sb->vsock);
	return 0;
}

/* ---- timeouts and shutdown ---- */

static void *timeout_thread(void *arg)
{
	struct sandbox *sb = arg;
	struct api_err e;

	/* A request that got there first (stop, delete) is fine: 409 here. */
	sandbox_stop(sb, AGENT_GRACE_DEFAULT_MS, "timeout", NULL, &e);
	lock(sb->d);
	sb->timeout_pending = false;
	unlock(sb->d);
	sandbox_put(sb);
	return NULL;
}

void sandboxes_tick(struct kilnd *d)
{
	int64_t now = mono_ms();

	lock(d);
	for (size_t i = 0; i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];
		pthread_attr_t attr;
		pthread_t th;

		if (sb->rec.state != SB_RUNNING || !sb->deadline_mono || now < sb->deadline_mono ||
		    sb->timeout_pending)
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
	unlock(d);
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

	lock(d);
	n = d->reg.n;
	all = calloc(n ? n : 1, sizeof(*all));
	th = calloc(n ? n : 1, sizeof(*th));
	started = calloc(n ? n : 1, sizeof(*started));
	if (!all || !th || !started) {
		/* No memory to stop them gracefully: they die with us (PDEATHSIG). */
		unlock(d);
		free(all);
		free(th);
		free(started);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		all[i] = d->reg.v[i];
		all[i]->refs++;
	}
	unlock(d);
	/* In parallel: each stop may wait for its guest. */
	for (size_t i = 0; i < n; i++)
		started[i] = pthread_create(&th[i], NULL, shutdown_thread, all[i]) == 0;
	for (size_t i = 0; i < n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	/* Booting, stopping or deleting ones belong to requests that see
	 * shutting_down or finish on their own; wait for their VMMs too. */
	lock(d);
	for (size_t i = 0; i < n; i++) {
		if (all[i]->proc && !wait_gone_locked(all[i], d->cfg.stop_timeout_ms))
			kill_locked(all[i]);
	}
	unlock(d);
	for (size_t i = 0; i < n; i++)
		sandbox_put(all[i]);
	free(all);
	free(th);
	free(started);
}

/* ---- start-up ---- */

/* Load one sandbox directory's meta.json. */
static void load_one(struct kilnd *d, const char *id)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct sandbox *sb;
	json_error_t je;
	struct api_err e;
	struct stat st;
	json_t *meta;

	if (pathf(dir, sizeof(dir), "%s/sandboxes/%s", d->cfg.state_dir, id) ||
	    pathf(path, sizeof(path), "%s/meta.json", dir))
		return;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > META_MAX) {
		kilnd_log("skipping %s: no usable meta.json", dir);
		return;
	}
	meta = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!meta) {
		kilnd_log("skipping %s: meta.json: %s (line %d)", dir, je.text, je.line);
		return;
	}
	sb = sandbox_new(d);
	if (!sb || sandbox_record_restore(meta, &sb->rec, &e) || strcmp(sb->rec.id, id) != 0) {
		kilnd_log("skipping %s: %s", dir, sb ? (strcmp(sb->rec.id, id) ? "meta.json names another id" : e.message)
						     : "out of memory");
		json_decref(meta);
		if (sb)
			sandbox_free(sb);
		return;
	}
	json_decref(meta);
	snprintf(sb->dir, sizeof(sb->dir), "%s", dir);
	if (pathf(sb->vsock, sizeof(sb->vsock), "%s/vsock.sock", dir)) {
		sandbox_free(sb);
		return;
	}
	if (sb->rec.state == SB_DELETING) {
		/* The delete was cut short: finish it. */
		kilnd_log("sandbox %s: finishing an interrupted delete", id);
		remove_dir(dir);
		sandbox_free(sb);
		return;
	}
	if (sb->rec.state != SB_STOPPED && sb->rec.state != SB_CRASHED) {
		/* Its VMM died with the previous kilnd (PR_SET_PDEATHSIG). */
		struct vmm_end end = { .at_ms = wall_ms(), .reason = "kilnd_restart", .exit_status = -1,
				       .message = json_string("kilnd exited while this sandbox ran; its VM was killed with it") };

		json_decref(sb->rec.last_exit);
		sb->rec.last_exit = sandbox_exit_json(&end);
		sb->rec.state = SB_CRASHED;
		sb->rec.stopped_ms = end.at_ms;
		unlink(sb->vsock);
	}
	sb->rec.pid = 0;
	sb->rec.expires_ms = 0;
	lock(d);
	if (registry_add_locked(d, sb)) {
		unlock(d);
		sandbox_free(sb);
		return;
	}
	persist_locked(sb);
	unlock(d);
}

static int cmp_created(const void *a, const void *b)
{
	const struct sandbox *x = *(struct sandbox *const *)a, *y = *(struct sandbox *const *)b;

	return (x->rec.created_ms > y->rec.created_ms) - (x->rec.created_ms < y->rec.created_ms);
}

int sandboxes_init(struct kilnd *d, char *err, size_t errlen)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	DIR *dh;

	pthread_mutex_init(&d->reg.mu, NULL);
	snprintf(dir, sizeof(dir), "%s/sandboxes", d->cfg.state_dir);
	dh = opendir(dir);
	if (!dh) {
		snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(dh)))
		if (sandbox_id_valid(de->d_name))
			load_one(d, de->d_name);
	closedir(dh);
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

		lock(d);
		for (size_t k = 0; k < d->reg.n && !busy; k++)
			busy = d->reg.v[k]->refs > 1;
		unlock(d);
		if (!busy)
			break;
		usleep(10000);
	}
	lock(d);
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
	unlock(d);
	return clean;
}

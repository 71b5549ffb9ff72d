/* Booting, stopping and watching a sandbox's kiln-vmm; see sandbox_impl.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/supervision/cgroup.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/net/sandbox_trust.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "api/kilnd/supervision/share_relay.h"
#include "api/kilnd/supervision/vmm_argv.h"
#include "api/kilnd/supervision/vmm_output.h"
#include "api/kilnd/supervision/zygote.h"
#include "vmm/control/park_proto.h"
#include "vmm/control/exit_status.h"

/* Wait (reg.mu held) until the VMM is gone or ms passed (< 0: no limit). */
bool sandbox_wait_gone_locked(struct sandbox *sb, int ms)
{
	struct timespec dl;

	mono_deadline_in(&dl, ms);
	while (sb->proc) {
		if (ms < 0)
			pthread_cond_wait(&sb->cv, &sb->d->reg.mu);
		else if (pthread_cond_timedwait(&sb->cv, &sb->d->reg.mu, &dl) == ETIMEDOUT)
			break;
	}
	return !sb->proc;
}

/* Kill the VMM and wait until it is gone. Under reg.mu. */
void sandbox_kill_locked(struct sandbox *sb)
{
	if (!sb->proc)
		return;
	vmm_signal(sb->proc, SIGKILL);
	if (!sandbox_wait_gone_locked(sb, KILL_WAIT_MS)) {
		kilnd_log("sandbox %s: kiln-vmm pid %d has not died %d s after SIGKILL; still waiting",
			  sb->rec.id, sb->rec.pid, KILL_WAIT_MS / 1000);
		sandbox_wait_gone_locked(sb, -1);
	}
}

void sandbox_cgroup_remove(struct sandbox *sb)
{
	char cg[PATH_MAX];

	if ((size_t)snprintf(cg, sizeof(cg), "%s/%s", sb->d->cfg.cgroup_parent, sb->rec.id) <
	    sizeof(cg))
		cgroup_leaf_remove(cg);
}

/*
 * The ended VMM's cgroup: read what it counted, then remove it. The limit
 * that ended the VMM (a last_exit reason, with msg) or NULL.
 */
static const char *vmm_cgroup_end(struct sandbox *sb, const struct vmm_exit_info *x, char *msg,
				  size_t cap)
{
	const char *limit = NULL;
	struct cgroup_events ev;
	char cg[PATH_MAX];
	int r;

	kilnd_lock(sb->d);
	snprintf(cg, sizeof(cg), "%s", sb->rec.cgroup);
	kilnd_unlock(sb->d);
	if (!cg[0])
		return NULL;
	cgroup_leaf_events(cg, &ev);
	/* A VMM that ended cleanly was not ended by a limit it brushed. */
	if (x->status != 0 || x->signal)
		limit = cg_limit_hit(&ev, &sb->rec.spec.limits, msg, cap);
	/* Outside the lock: removing may wait for leftover processes to die. */
	if ((r = cgroup_leaf_remove(cg)))
		kilnd_log("sandbox %s: cannot remove its cgroup %s: %s (removed at its next boot or delete)",
			  sb->rec.id, cg, strerror(-r));
	return limit;
}

/*
 * Called by the monitor thread when kiln-vmm ended, before it is reaped.
 * A running sandbox becomes stopped (the guest shut itself down: status
 * 0) or crashed; in a transient state the owner of that state moves on.
 */
void sandbox_on_vmm_exit(void *arg, const struct vmm_exit_info *x)
{
	struct sandbox *sb = arg;
	struct kilnd *d = sb->d;
	struct vmm_end end = {
		.at_ms = wall_ms(),
		.exit_status = x->status,
		.signal = x->signal,
		.console_tail = vmm_output_tail(x->console, x->console_len, x->console_whole,
						CONSOLE_TAIL_LINES, CONSOLE_LINE_MAX),
		.msg = x->known
			? vmm_output_message(x->err, x->err_len)
			: json_string(
				  "kiln-keeper ended without recording how kiln-vmm ended (it was killed?); kiln-vmm was killed"),
		.timeline = vmm_output_timeline(x->err, x->err_len),
	};
	enum sandbox_state was, to;
	bool crashed = false;
	const char *limit;
	char limit_msg[512];

	/* The egress proxy ends with the VMM it served (a next boot starts its own),
	 * and so do the client shares' relays (their clients' connections close). */
	egress_proxy_end(sb);
	share_relays_end(sb);
	limit = vmm_cgroup_end(sb, x, limit_msg, sizeof(limit_msg));
	kilnd_lock(d);
	was = sb->rec.state;
	switch (was) {
	case SANDBOX_BOOTING:
		/* stop_reason: the VMM a restore in place replaces. */
		end.reason = sb->stop_reason ? sb->stop_reason
			: sb->restoring      ? "restore_failed"
					     : "boot_failed";
		break;
	case SANDBOX_STOPPING:
	case SANDBOX_DELETING:
		end.reason = sb->stop_reason ? sb->stop_reason : "stopped";
		break;
	case SANDBOX_HIBERNATING:
		/* stop_reason is set once the snapshot is complete. */
		end.reason = sb->stop_reason ? sb->stop_reason : "crashed";
		break;
	case SANDBOX_RUNNING:
	case SANDBOX_PAUSED:
		crashed = !(x->status == 0 && x->signal == 0);
		end.reason = crashed ? "crashed" : "guest_shutdown";
		if (sandbox_transition(was, crashed ? SANDBOX_EV_VMM_FAIL : SANDBOX_EV_VMM_CLEAN,
				       &to, sb->rec.id, NULL) == 0)
			sb->rec.state = to;
		break;
	default:
		end.reason = "crashed";
		break;
	}
	if (limit) {
		/* Not a mystery crash: the cgroup says which limit ended it. */
		if (strcmp(end.reason, "crashed") == 0)
			end.reason = limit;
		json_decref(end.msg);
		end.msg = json_string(limit_msg);
		kilnd_log("sandbox %s: %s", sb->rec.id, limit_msg);
	}
	json_decref(sb->rec.last_exit);
	sb->rec.last_exit = sandbox_exit_json(&end);
	sb->rec.cgroup[0] = '\0';
	/* Port mappings end with the boot they forward into (closed below),
	 * unless the guest goes on in another VMM (a wake, a restore in
	 * place): then they listen again once it runs (sandbox_boot). */
	if (strcmp(end.reason, "hibernated") != 0 && strcmp(end.reason, "restored") != 0)
		json_array_clear(sb->rec.ports);
	sb->proc = NULL;
	sb->vmm_exited = true;
	sb->rec.pid = 0;
	sb->rec.vmm_start = 0;
	sb->rec.stopped_ms = end.at_ms;
	sb->rec.expires_ms = 0;
	sb->deadline_mono = 0;
	/* kiln-vmm removes nothing on its way out: the next boot binds again. */
	unlink(sb->vsock);
	unlink(sb->control);
	sandbox_persist_locked(sb);
	pthread_cond_broadcast(&sb->cv);
	if (x->signal)
		kilnd_log("sandbox %s: kiln-vmm was killed by signal %d (%s)", sb->rec.id,
			  x->signal, sandbox_state_name(sb->rec.state));
	else
		kilnd_log("sandbox %s: kiln-vmm exited with status %d (%s)", sb->rec.id, x->status,
			  sandbox_state_name(sb->rec.state));
	kilnd_unlock(d);
	/* Port mappings end with the boot they forward into. */
	sandbox_ports_close(sb);
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
		snprintf(how, sizeof(how), "was killed by signal %lld",
			 (long long)json_integer_value(sig));
	else
		snprintf(how, sizeof(how), "exited with status %lld",
			 (long long)json_integer_value(st));
	api_err_set(e, API_E_BOOT_FAILED,
		    "sandbox %s: kiln-vmm %s before the guest agent answered: %s%s%s", sb->rec.id,
		    how, msg ? msg : "no error line from kiln-vmm",
		    !msg && last ? "; last console line: " : "", !msg && last ? last : "");
}

/* The last kiln-vmm's exit status, or -1 (a signal, unknown). Under reg.mu. */
static int last_exit_status_locked(struct sandbox *sb)
{
	json_t *st = json_object_get(sb->rec.last_exit, "exit_status");

	return json_is_integer(st) ? (int)json_integer_value(st) : -1;
}

/*
 * Whether a cold boot that ended with kiln-vmm's exit status (-1: killed,
 * timed out) is worth one more: a guest that triple-faulted before its
 * agent answered. Linux does not do that on its way to init on a sound
 * machine and configuration, so the second one is the error reported; a
 * first can be the host's (the nested test machine resets 1-6 % of guests
 * booting in parallel, under any VMM: tests/harness/README.md), and the
 * guest had run nothing but the kernel and kiln-init. Logged and counted
 * (kiln_boot_retries_total). Every caller's first attempt failed with e.
 */
static bool boot_retry_worth(struct sandbox *sb, int status, const struct api_err *e)
{
	struct kilnd *d = sb->d;

	if (status != VMM_EXIT_TRIPLE || atomic_load(&d->shutting_down))
		return false;
	kilnd_log("%s; booting it once more", e->msg);
	SANDBOX_METRIC(d, boot_retries);
	return true;
}

/* Where a boot's time went, as kilnd sees it (boot.phases_ms). */
struct boot_phases {
	double prepare_ms;   /* jail directory, shares, firewall file, argv, cgroup */
	double spawn_ms;     /* vmm_spawn: the keeper forks and execs kiln-vmm */
	double agent_ms;     /* from then to the agent's first answer */
	double configure_ms; /* hostname, info, clock and entropy after it */
	bool zygote;         /* spawn_ms was a parked kiln-vmm's claim (zygote.h) */
};

/*
 * One kiln-vmm run (state booting, owned by the caller) up to the agent's
 * first answer. 0: it answered, *ready_ms since the spawn, ph filled in
 * but for configure_ms. -1 with e: no
 * VMM is left; *spawned says whether one ran (its on_exit described how
 * it ended), *status its exit status when it exited on its own before the
 * agent answered (-1 otherwise: killed, timed out, never spawned).
 */
static int spawn_and_wait(struct sandbox *sb, const char *restore_dir, double *ready_ms,
			  struct boot_phases *ph, bool *spawned, int *status, struct api_err *e)
{
	double t_prep = mono_ms_f(), t_spawned;
	struct kilnd *d = sb->d;
	char overlay[PATH_MAX + 16], firewall[PATH_MAX], jail[PATH_MAX],
		egress_sock[KILND_SOCKET_MAX];
	struct vmm_launch l = { .vmm = d->cfg.vmm,
				.kernel = d->cfg.kernel,
				.overlay = overlay,
				.vsock = sb->vsock,
				.control = sb->control,
				.restore_dir = restore_dir,
				.firewall = firewall,
				.resolver = d->cfg.dns_resolver,
				.egress_proxy = egress_sock };
	struct vmm_spawn_req req = { .keeper = KILND_SELF_EXE,
				     .dir = sb->dir,
				     .grace_s = d->cfg.keeper_grace_s,
				     .on_exit = sandbox_on_vmm_exit,
				     .arg = sb,
				     .cgroup_fd = -1 };
	char cg[PATH_MAX];
	kiln_agent *a = NULL;
	struct vmm_argv argv, zargv = { 0 };
	struct vmm_zygote z;
	struct api_err ze;
	struct vmm_proc *proc;
	int shares[SPEC_MAX_SHARES], znums[SPEC_MAX_SHARES], keep[SPEC_MAX_SHARES];
	char socks[SPEC_MAX_SHARES][KILND_SOCKET_MAX];
	const char *sockp[SPEC_MAX_SHARES] = { 0 };
	size_t nshares = sb->rec.spec.nshares, nkeep = 0;
	double t0, deadline;
	bool timed_out = false;
	struct keeper_vmm_id id;
	int r;

	*spawned = false;
	*status = -1;
	/* The spec and image path do not change after creation. */
	l.image = sb->rec.image_path;
	l.spec = &sb->rec.spec;
	snprintf(overlay, sizeof(overlay), "%s/overlay", sb->dir);
	firewall[0] = '\0';
	if (sandbox_jail_prepare(sb, jail, sizeof(jail), &l.jail_id, e))
		return -1;
	/* --no-jail (id 0): the sockets and snapshots stay where they are, unconfined. */
	l.jail_dir = l.jail_id ? jail : NULL;
	req.new_pid_ns = l.jail_dir != NULL;
	/* Opened afresh at every start and handed over as descriptors. */
	if (sandbox_shares_open(sb, shares, e))
		return -1;
	l.share_fds = shares;
	/* kiln-vmm inherits the host shares' directories (client shares have
	 * none); a zygote receives them numbered in this order. */
	for (size_t i = 0; i < nshares; i++) {
		znums[i] = -1;
		if (shares[i] >= 0) {
			znums[i] = PARK_FD_BASE + (int)nkeep;
			keep[nkeep++] = shares[i];
		} else if (share_relay_path(sb, i, socks[i], sizeof(socks[i])) == 0) {
			sockp[i] = socks[i];
		}
	}
	l.share_socks = sockp;
	/* The egress proxy (rules with http entries) and the client shares'
	 * relays listen before kiln-vmm starts. */
	if (sandbox_firewall_prepare(sb, firewall, sizeof(firewall), e) ||
	    egress_proxy_boot(sb, egress_sock, sizeof(egress_sock), e) ||
	    share_relays_start(sb, e) || vmm_argv_build(&l, &argv, e)) {
		egress_proxy_end(sb);
		share_relays_end(sb);
		sandbox_shares_close(shares, nshares);
		return -1;
	}
	req.argv = argv.argv;
	req.keep_fds = keep;
	req.nkeep = nkeep;
	cg[0] = '\0';
	if (d->cfg.cgroups &&
	    cgroup_create(d->cfg.cgroup_parent, sb->rec.id, &sb->rec.spec.limits,
			  d->cfg.state_in_ram
				  ? cg_ram_state_mib(sb->rec.spec.memory_mib,
						     sandbox_disk_size(sb->rec.image_path,
								       sb->rec.spec.disk_mib) >>
							     20)
				  : 0,
			  cg, sizeof(cg), &req.cgroup_fd, e)) {
		egress_proxy_end(sb);
		share_relays_end(sb);
		sandbox_shares_close(shares, nshares);
		vmm_argv_free(&argv);
		return -1;
	}
	/* Before kiln-vmm exists: passt, which it forks, is held from its first connect. */
	if (cg[0] && sandbox_egress_apply(sb, cg, NULL, e)) {
		egress_proxy_end(sb);
		close(req.cgroup_fd);
		cgroup_leaf_remove(cg);
		share_relays_end(sb);
		sandbox_shares_close(shares, nshares);
		vmm_argv_free(&argv);
		return -1;
	}
	/* Sockets left by a kiln-vmm that was killed would make bind fail. */
	unlink(sb->vsock);
	unlink(sb->control);
	kilnd_lock(d);
	/* on_vmm_exit reads and removes it. */
	snprintf(sb->rec.cgroup, sizeof(sb->rec.cgroup), "%s", cg);
	sb->vmm_exited = false;
	sb->restoring = restore_dir != NULL;
	sb->cp_base[0] =
		0; /* a new kiln-vmm; a restore in place names its checkpoint once it runs */
	sb->rec.boots++;
	sb->refs++; /* the monitor's, dropped in on_vmm_exit */
	kilnd_unlock(d);
	/* A zygote's command line names the shares as it receives them. */
	_Static_assert(SPEC_MAX_SHARES <= PARK_FDS_MAX, "a zygote receives every share");
	ph->zygote = zygote_take(d->zygotes, &z);
	if (ph->zygote)
		l.share_fds = znums;
	if (ph->zygote && vmm_argv_build(&l, &zargv, &ze)) {
		vmm_zygote_end(&z);
		ph->zygote = false;
	}
	t0 = mono_ms_f();
	if (ph->zygote) {
		req.argv = zargv.argv;
		r = vmm_claim(&z, &req, &proc, &id, e);
		if (r) {
			/* Nothing of it is left: start kiln-vmm as without one. */
			kilnd_log("sandbox %s: %s; starting kiln-vmm without a zygote", sb->rec.id,
				  e->msg);
			ph->zygote = false;
			req.argv = argv.argv;
			r = vmm_spawn(&req, &proc, &id, e);
		}
	} else {
		r = vmm_spawn(&req, &proc, &id, e);
	}
	t_spawned = mono_ms_f();
	if (d->cfg.zygotes) {
		pthread_mutex_lock(&d->metrics_mu);
		if (ph->zygote)
			d->metrics.zygote_claims++;
		else
			d->metrics.zygote_misses++;
		pthread_mutex_unlock(&d->metrics_mu);
	}
	sandbox_shares_close(shares, nshares); /* kiln-vmm has its own now */
	if (req.cgroup_fd >= 0)
		close(req.cgroup_fd);
	vmm_argv_free(&argv);
	vmm_argv_free(&zargv);
	if (r) {
		kilnd_lock(d);
		sb->rec.cgroup[0] = '\0';
		sb->refs--;
		kilnd_unlock(d);
		if (cg[0])
			cgroup_leaf_remove(cg);
		egress_proxy_end(sb);
		share_relays_end(sb);
		return -1;
	}
	*spawned = true;
	kilnd_lock(d);
	/* The VMM may already be gone (on_vmm_exit ran): then keep proc NULL. */
	if (!sb->vmm_exited) {
		sb->proc = proc;
		/* What a restarted kilnd checks before it reattaches. */
		sb->rec.pid = id.pid;
		sb->rec.vmm_start = id.start;
	}
	sandbox_persist_locked(sb);
	kilnd_unlock(d);

	if (kiln_agent_new(sb->vsock, &a) < 0) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: agent client: out of memory",
			    sb->rec.id);
		goto kill;
	}
	deadline = t0 + d->cfg.boot_timeout_ms;
	for (;;) {
		double left = deadline - mono_ms_f();
		bool exited;

		kilnd_lock(d);
		exited = sb->vmm_exited;
		if (exited) {
			boot_exit_error_locked(sb, e);
			*status = last_exit_status_locked(sb);
		}
		kilnd_unlock(d);
		if (exited) {
			kiln_agent_free(a);
			return -1;
		}
		if (atomic_load(&d->shutting_down)) {
			api_err_set(e, API_E_AGENT_UNAVAILABLE,
				    "sandbox %s: kilnd is shutting down", sb->rec.id);
			goto kill;
		}
		if (left <= 0) {
			timed_out = true;
			goto kill;
		}
		/* Slices to look at the VMM and shutdown between attempts; an
		 * attempt kiln-vmm holds runs on past its slice (BOOT_HOLD_MS). */
		r = kiln_agent_wait_ready_hold(a,
					       left < BOOT_SLICE_MS ? (int)left + 1 : BOOT_SLICE_MS,
					       left < BOOT_HOLD_MS ? (int)left + 1 : BOOT_HOLD_MS);
		if (r == 0)
			break;
		if (r == -EPROTONOSUPPORT) {
			api_err_from_agent(e, a, "waiting for the guest agent");
			goto kill;
		}
	}
	kiln_agent_free(a);
	*ready_ms = mono_ms_f() - t0;
	ph->prepare_ms = t0 - t_prep;
	ph->spawn_ms = t_spawned - t0;
	ph->agent_ms = t0 + *ready_ms - t_spawned;
	return 0;

kill:
	kiln_agent_free(a);
	kilnd_lock(d);
	sandbox_kill_locked(sb);
	if (timed_out) {
		/* The directory of a failed create is gone by the time the client
		 * reads this: quote the console instead of pointing at it. */
		json_t *tail = json_object_get(sb->rec.last_exit, "console_tail");
		const char *last = json_string_value(
			json_array_get(tail, json_array_size(tail) - 1));

		api_err_set(e, API_E_AGENT_UNAVAILABLE,
			    "sandbox %s: the guest agent did not answer within %d s of kiln-vmm's start (--boot-timeout); the VM was killed. Last console line: %s",
			    sb->rec.id, d->cfg.boot_timeout_ms / 1000,
			    last                           ? last
				    : sb->rec.spec.console ? "(none)"
							   : "(console off)");
	}
	kilnd_unlock(d);
	return -1;
}

/*
 * A request to the agent after its first answer, run on a thread of its
 * own beside the others: each is a vsock connection and a round trip into
 * the guest, so one runs while another waits (a restored guest is slow to
 * answer: every page it touches first is faulted in). Each job has its
 * own kiln_agent, so the failure its message says is its own.
 */
struct agent_job {
	kiln_agent *a;
	int (*fn)(struct agent_job *j);
	struct kiln_guest_info info; /* job_info's answer */
	int r;
	bool started;
	pthread_t th;
};

static int job_info(struct agent_job *j)
{
	return kiln_agent_info(j->a, &j->info);
}

static int job_sync(struct agent_job *j)
{
	return sandbox_sync_guest(j->a);
}

static void *job_main(void *arg)
{
	struct agent_job *j = arg;

	j->r = j->fn(j);
	return NULL;
}

static void job_start(struct agent_job *j, const char *vsock, int (*fn)(struct agent_job *j))
{
	j->r = -1;
	j->fn = fn;
	j->info = (struct kiln_guest_info){ .size = sizeof(j->info) };
	j->started = false;
	if (kiln_agent_new(vsock, &j->a) < 0)
		j->a = NULL; /* out of memory: job_end says so */
	else
		j->started = pthread_create(&j->th, NULL, job_main, j) == 0;
}

/* Its result: 0, or -1 with the message in *why (valid until
 * job_free). */
static int job_end(struct agent_job *j, const char **why)
{
	*why = "out of memory";
	if (!j->a)
		return -1;
	if (j->started)
		pthread_join(j->th, NULL);
	else
		job_main(j); /* no thread to spare: ask now */
	*why = kiln_agent_errmsg(j->a);
	return j->r < 0 ? -1 : 0;
}

static void job_free(struct agent_job *j)
{
	kiln_agent_free(j->a);
	j->a = NULL;
}

/*
 * Boot the sandbox (state booting, owned by the caller) from src (NULL:
 * the kernel) and wait for its agent; then give it its hostname (forks),
 * its egress CA (when it has one: sandbox_trust.h) and the host's clock
 * (every restore: the guest's clock stood still in the snapshot). 0:
 * running. -1 with e: crashed, no VMM left.
 */
int sandbox_boot(struct sandbox *sb, const struct boot_src *src, struct api_err *e)
{
	struct kilnd *d = sb->d;
	const char *restore_dir = src ? src->restore_dir : NULL;
	char snapshot_error[ERR_MSG_MAX] = "";
	struct agent_job info, sync;
	const char *why;
	kiln_agent *a = NULL;
	char *ca = NULL;
	enum sandbox_state to;
	struct boot_phases ph = { 0 };
	double ready_ms = 0, t_ready;
	int64_t uptime = -1;
	bool synced = false, spawned = false, is_fork;
	int status, r;

	r = spawn_and_wait(sb, restore_dir, &ready_ms, &ph, &spawned, &status, e);
	if (r && restore_dir && status == VMM_EXIT_SETUP && src->cold_fallback) {
		/* The snapshot is unusable: the overlay still holds the disk as
		 * it was at the snapshot, so boot the kernel on it instead. */
		kilnd_lock(d);
		const char *msg = json_string_value(json_object_get(sb->rec.last_exit, "message"));

		snprintf(snapshot_error, sizeof(snapshot_error), "%s", msg ? msg : e->msg);
		kilnd_unlock(d);
		kilnd_log("sandbox %s: the snapshot in %s is unusable (%s); booting the kernel instead",
			  sb->rec.id, restore_dir, snapshot_error);
		SANDBOX_METRIC(d, wake_cold_boots);
		restore_dir = NULL;
		r = spawn_and_wait(sb, NULL, &ready_ms, &ph, &spawned, &status, e);
	}
	if (r && !restore_dir && boot_retry_worth(sb, status, e)) {
		r = spawn_and_wait(sb, NULL, &ready_ms, &ph, &spawned, &status, e);
		if (r && status == VMM_EXIT_TRIPLE) {
			size_t n = strlen(e->msg);

			snprintf(e->msg + n, sizeof(e->msg) - n,
				 " (the second boot in a row to triple-fault: boot the kernel and image with kiln-vmm --console to see where, or check the host's KVM)");
		}
	}
	if (r)
		goto failed;

	t_ready = mono_ms_f();
	/* Best effort, for the boot timeline and for guests without an RTC. */
	job_start(&info, sb->vsock, job_info);
	job_start(&sync, sb->vsock, job_sync);
	/* The egress CA (sandbox_trust.h): after every boot, restore, fork
	 * and wake, so the guest trusts the CA its proxy has now. */
	r = sandbox_trust_read(sb, &ca, e);
	is_fork = src && src->hostname && restore_dir;
	if (r >= 0 && (is_fork || ca)) {
		/* A fork runs the memory of another guest: its own name (the clock
		 * and entropy go in beside it), and its own CA or none (not the
		 * one the snapshot's guest had installed). */
		struct kiln_guest_config cfg = { .size = sizeof(cfg),
						 .hostname = is_fork ? src->hostname : NULL,
						 .trust_ca = ca    ? ca
							 : is_fork ? ""
								   : NULL };
		const char *what = !ca ? "setting the fork's hostname"
			: cfg.hostname ? "setting the fork's hostname and egress CA"
				       : "installing the egress CA";

		/* Part of the boot: --boot-timeout (again, not what is left of
		 * it), not the client's 10 s default (64 forks at once in a
		 * nested run took longer, and a restore that had worked was
		 * thrown away for a cold boot). */
		if ((r = kiln_agent_new(sb->vsock, &a)) < 0)
			api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
		else if (kiln_agent_set_timeout(a, d->cfg.boot_timeout_ms) ||
			 kiln_agent_configure(a, &cfg)) {
			if (ca)
				sandbox_trust_fail(sb, a, what, e);
			else
				api_err_from_agent(e, a, what);
			r = -1;
		}
		kiln_agent_free(a);
	}
	free(ca);
	if (r < 0) {
		job_end(&info, &why);
		job_end(&sync, &why);
		job_free(&info);
		job_free(&sync);
		kilnd_lock(d);
		sandbox_kill_locked(sb);
		kilnd_unlock(d);
		goto failed;
	}
	if (job_end(&sync, &why) == 0)
		synced = true;
	else
		kilnd_log("sandbox %s: setting the guest clock failed: %s", sb->rec.id, why);
	if (job_end(&info, &why) == 0)
		uptime = (int64_t)info.info.uptime_ms;
	job_free(&info);
	job_free(&sync);
	ph.configure_ms = mono_ms_f() - t_ready;

	kilnd_lock(d);
	if (sb->vmm_exited) {
		boot_exit_error_locked(sb, e);
		kilnd_unlock(d);
		goto failed;
	}
	sandbox_transition(sb->rec.state, SANDBOX_EV_BOOT_OK, &to, sb->rec.id, NULL);
	sb->rec.state = to;
	sb->restoring = false;
	sb->rec.started_ms = wall_ms();
	sb->rec.stopped_ms = 0;
	sb->active_mono = mono_ms();
	json_decref(sb->rec.boot);
	sb->rec.boot = sandbox_boot_json(ready_ms, uptime, synced);
	json_object_set_new(sb->rec.boot, "phases_ms",
			    json_pack("{s:f,s:f,s:f,s:f}", "prepare", ph.prepare_ms, "spawn",
				      ph.spawn_ms, "agent", ph.agent_ms, "configure",
				      ph.configure_ms));
	json_object_set_new(sb->rec.boot, "zygote", json_boolean(ph.zygote));
	if (restore_dir)
		sandbox_boot_source(sb->rec.boot, src->from, src->checkpoint, NULL);
	else if (snapshot_error[0])
		sandbox_boot_source(sb->rec.boot, "kernel", NULL, snapshot_error);
	if (sb->rec.spec.timeout_s) {
		sb->deadline_mono = mono_ms() + (int64_t)sb->rec.spec.timeout_s * 1000;
		sb->rec.expires_ms = sb->rec.started_ms + (int64_t)sb->rec.spec.timeout_s * 1000;
	}
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	if (restore_dir) {
		histogram_observe(&d->metrics.restore_seconds, ready_ms / 1000.0);
	} else {
		d->metrics.boots++;
		histogram_observe(&d->metrics.boot_seconds, ready_ms / 1000.0);
	}
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("sandbox %s: running, agent answered after %.1f ms (%s)", sb->rec.id, ready_ms,
		  restore_dir ? src->from : "kernel");
	/* The mappings of a hibernated or restored sandbox (none otherwise). */
	sandbox_ports_reopen(sb);
	return 0;

failed:
	kilnd_lock(d);
	if (!spawned) {
		/* No VMM ever ran, so no on_exit described the failure. */
		struct vmm_end end = { .at_ms = wall_ms(),
				       .reason = "boot_failed",
				       .exit_status = -1,
				       .msg = json_string(e->msg) };

		json_decref(sb->rec.last_exit);
		sb->rec.last_exit = sandbox_exit_json(&end);
	} else {
		json_object_set_new(sb->rec.last_exit, "reason",
				    json_string(sb->restoring ? "restore_failed" : "boot_failed"));
	}
	sb->restoring = false;
	/* Kept for a wake or a restore: that boot did not happen. */
	json_array_clear(sb->rec.ports);
	if (sandbox_transition(sb->rec.state, SANDBOX_EV_BOOT_FAIL, &to, sb->rec.id, NULL) == 0)
		sb->rec.state = to;
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	pthread_mutex_lock(&d->metrics_mu);
	d->metrics.boot_failures++;
	pthread_mutex_unlock(&d->metrics_mu);
	kilnd_log("%s", e->msg);
	return -1;
}

/*
 * Bring the VMM down (state stopping or deleting, owned by the caller):
 * ask the agent to shut the guest down, then SIGTERM, then SIGKILL.
 */
void sandbox_halt(struct sandbox *sb, int grace_ms)
{
	struct kilnd *d = sb->d;
	kiln_agent *a;
	bool has;

	kilnd_lock(d);
	has = sb->proc != NULL;
	kilnd_unlock(d);
	if (!has)
		return;
	if (kiln_agent_new(sb->vsock, &a) < 0) {
		kilnd_log("sandbox %s: out of memory for the shutdown request; stopping the VMM",
			  sb->rec.id);
	} else {
		/* A hung guest must not hold the stop longer than the stop timeout. */
		if (KILN_AGENT_TIMEOUT_DEFAULT_MS > d->cfg.stop_timeout_ms)
			kiln_agent_set_timeout(a, d->cfg.stop_timeout_ms);
		if (kiln_agent_shutdown(a, grace_ms) < 0)
			kilnd_log("sandbox %s: the agent did not take the shutdown request (%s); stopping the VMM",
				  sb->rec.id, kiln_agent_errmsg(a));
		kiln_agent_free(a);
	}
	kilnd_lock(d);
	if (!sandbox_wait_gone_locked(sb, d->cfg.stop_timeout_ms + grace_ms)) {
		kilnd_log("sandbox %s: the guest did not shut down within %d ms; SIGTERM to kiln-vmm",
			  sb->rec.id, d->cfg.stop_timeout_ms + grace_ms);
		vmm_signal(sb->proc, SIGTERM);
		if (!sandbox_wait_gone_locked(sb, TERM_WAIT_MS))
			sandbox_kill_locked(sb);
	}
	kilnd_unlock(d);
}

int sandbox_sync_guest(kiln_agent *a)
{
	/* libkiln's sync: the host's CLOCK_REALTIME and 64 fresh random bytes. */
	return kiln_agent_sync_clock(a, KILN_AGENT_RESEED, NULL) < 0 ? -1 : 0;
}

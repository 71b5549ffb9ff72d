/*
 * At kilnd's start, each loaded sandbox whose record says a VMM ran:
 * supervise it again, or say how it ended (reattach.h decides; see
 * docs/architecture.md, "Sandboxes across kilnd restarts").
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/supervision/share_relay.h"
#include "api/kilnd/supervision/reattach.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "api/kilnd/supervision/vmm_control.h"
#include "api/kilnd/supervision/vmm_output.h"

/* A VMM killed at load (REATTACH_KILL): its end, waited for here. */
struct killed {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int status, signal;
};

static void on_killed(void *arg, const struct vmm_exit_info *x)
{
	struct killed *k = arg;

	pthread_mutex_lock(&k->mu);
	k->done = true;
	k->status = x->status;
	k->signal = x->signal;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
}

/* SIGKILL through the verified pidfd and wait for the monitor's word (bounded). */
static void kill_and_wait(struct sandbox *sb, struct vmm_proc *proc, struct killed *k)
{
	struct timespec dl;
	int r = vmm_signal(proc, SIGKILL);
	bool done;

	/* k->cv runs on CLOCK_REALTIME (PTHREAD_COND_INITIALIZER). */
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += KILL_WAIT_MS / 1000;
	pthread_mutex_lock(&k->mu);
	while (!k->done && pthread_cond_timedwait(&k->cv, &k->mu, &dl) != ETIMEDOUT)
		;
	done = k->done;
	pthread_mutex_unlock(&k->mu);
	kilnd_log("sandbox %s: was %s when the previous kilnd stopped; its kiln-vmm pid %d %s",
		  sb->rec.id, sandbox_state_name(sb->rec.state), sb->rec.pid,
		  r              ? "had ended"
			  : done ? "was killed"
				 : "was sent SIGKILL and has not ended yet");
}

/* Supervise it again: the same VMM, pid, start time and uptime. Under reg.mu. */
static void keep_locked(struct sandbox *sb, struct vmm_proc *proc)
{
	int64_t now = wall_ms();

	sb->proc = proc;
	/* timeout_s runs on from the recorded deadline; idleness from now. */
	sb->deadline_mono = sb->rec.expires_ms
		? mono_ms() + (sb->rec.expires_ms > now ? sb->rec.expires_ms - now : 0)
		: 0;
	sb->active_mono = mono_ms();
}

/* The VMM's state as kiln-vmm says it (running or paused), or the recorded one. */
static void reread_state(struct sandbox *sb)
{
	struct control_reply rep;
	struct api_err e;
	enum sandbox_state st;

	if (vmm_control_call(sb->control, CTL_STATUS, NULL, false, VMM_CONTROL_TIMEOUT_MS, &rep,
			     &e)) {
		kilnd_log("sandbox %s: reattached, but kiln-vmm's control socket did not say its state (%s); kept as %s",
			  sb->rec.id, e.msg, sandbox_state_name(sb->rec.state));
		return;
	}
	st = rep.paused ? SANDBOX_PAUSED : SANDBOX_RUNNING;
	kilnd_lock(sb->d);
	/* The VMM may have ended meanwhile: then on_vmm_exit has moved it on. */
	if (sb->proc && (sb->rec.state == SANDBOX_RUNNING || sb->rec.state == SANDBOX_PAUSED))
		sb->rec.state = st;
	kilnd_unlock(sb->d);
}

/* Its VMM is gone: the record says how it ended (end), or as before
 * reattaching existed, crashed with reason kilnd_restart. Under reg.mu. */
static void ended_locked(struct sandbox *sb, struct vmm_end *end, const char *hib_dir)
{
	enum sandbox_state was = sb->rec.state;

	json_decref(sb->rec.last_exit);
	sb->rec.last_exit = sandbox_exit_json(end);
	if (was == SANDBOX_RUNNING || was == SANDBOX_PAUSED)
		sb->rec.state = strcmp(end->reason, "guest_shutdown") == 0 ? SANDBOX_STOPPED
									   : SANDBOX_CRASHED;
	else
		sb->rec.state = SANDBOX_CRASHED;
	sb->rec.stopped_ms = end->at_ms;
	unlink(sb->vsock);
	unlink(sb->control);
	/* Only a hibernated sandbox keeps a hibernation snapshot. */
	json_decref(sb->rec.hibernation);
	sb->rec.hibernation = NULL;
	sandbox_remove_dir(hib_dir);
}

/* A hibernation whose snapshot was complete (kiln-vmm publishes the
 * directory only then), or a wake cut short: still hibernated. The
 * snapshot's directory is its own, not a link the jailed VMM planted. */
static bool hibernated_after_all(struct sandbox *sb)
{
	struct err oe;
	int fd;

	if (sb->rec.state != SANDBOX_HIBERNATING && sb->rec.state != SANDBOX_BOOTING)
		return false;
	fd = sandbox_jail_open(sb, SANDBOX_HIBERNATE_REL, OPEN_BENEATH_DIR, NULL, &oe);
	if (fd < 0) {
		if (fd != -ENOENT)
			kilnd_log("sandbox %s: its hibernation snapshot is unusable: %s",
				  sb->rec.id, oe.msg);
		return false;
	}
	close(fd);
	kilnd_log("sandbox %s: %s was cut short; it stays hibernated", sb->rec.id,
		  sb->rec.state == SANDBOX_BOOTING ? "a wake" : "a hibernation");
	sb->rec.state = SANDBOX_HIBERNATED;
	return true;
}

void sandbox_reattach_load(struct sandbox *sb, const char *hib_dir)
{
	struct kilnd *d = sb->d;
	struct reattach_seen s = { .state = sb->rec.state,
				   .pid = sb->rec.pid,
				   .vmm_start = sb->rec.vmm_start,
				   .attach = -ESRCH };
	struct keeper_vmm_id id = { .pid = sb->rec.pid, .start = sb->rec.vmm_start };
	/* On the heap: a monitor that reports after kill_and_wait gave up still finds it. */
	struct killed *kp = malloc(sizeof(*kp));
	bool keep = s.state == SANDBOX_RUNNING || s.state == SANDBOX_PAUSED;
	struct vmm_tails *t = NULL;
	struct vmm_exit_info info = { .status = -1 };
	struct vmm_proc *proc = NULL;
	enum reattach_fate fate;

	if (!kp) {
		kilnd_log("sandbox %s: out of memory at load; left as it is", sb->rec.id);
		return;
	}
	*kp = (struct killed){ PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, -1, 0 };
	if (reattach_should_try(s.state, s.pid, s.vmm_start)) {
		kilnd_lock(d);
		if (keep) {
			sb->refs++; /* the monitor's, dropped in on_vmm_exit */
			sb->vmm_exited = false;
			/* on_vmm_exit reads and removes it. */
			if (d->cfg.cgroups)
				sandbox_pathf(sb->rec.cgroup, sizeof(sb->rec.cgroup), "%s/%s",
					      d->cfg.cgroup_parent, sb->rec.id);
		}
		kilnd_unlock(d);
		/* Not under reg.mu: it waits for the keeper's hello. */
		s.attach = vmm_reattach(sb->dir, &id, keep ? sandbox_on_vmm_exit : on_killed,
					keep ? (void *)sb : (void *)kp, &proc);
		kilnd_lock(d);
		/* A kept VMM's monitor may have reported its end already: then proc is gone. */
		if (s.attach == 0 && keep && !sb->vmm_exited)
			keep_locked(sb, proc);
		if (s.attach && keep) {
			sb->refs--;
			sb->rec.cgroup[0] = '\0';
		}
		kilnd_unlock(d);
		if (s.attach == -ESRCH && (t = malloc(sizeof(*t))))
			s.exit_recorded = vmm_exit_load(sb->dir, &id, &info, t) == 0;
	}
	fate = reattach_decide(&s);
	if (fate == REATTACH_KEEP) {
		struct api_err ee;

		reread_state(sb);
		sandbox_ports_reopen(sb);
		/* The cgroup kept its programs; this covers a VMM an older kilnd
		 * started and takes the host's addresses afresh. */
		if (sandbox_egress_apply(sb, sb->rec.cgroup, NULL, &ee))
			kilnd_log("%s; its passt is held by the table attached before the restart, if any",
				  ee.msg);
		/* Its egress proxy died with the kilnd before: a new one, on a socket bound afresh. */
		if (egress_proxy_sync(sb, NULL, &ee))
			kilnd_log("%s; its steered flows are refused until the next boot", ee.msg);
		/* Its client shares' relays too (kiln-vmm connects by path at its next request). */
		if (share_relays_start(sb, &ee))
			kilnd_log("%s; its client shares answer EIO until the next boot", ee.msg);
		kilnd_lock(d);
		kilnd_log("sandbox %s: reattached to kiln-vmm pid %d (%s), running since its start before the restart",
			  sb->rec.id, sb->rec.pid, sandbox_state_name(sb->rec.state));
		sandbox_persist_locked(sb);
		kilnd_unlock(d);
		free(t);
		free(kp);
		return;
	}
	if (fate == REATTACH_KILL) {
		kill_and_wait(sb, proc, kp);
		/* Populated when kilnd's start looked at the cgroups: empty now. */
		if (d->cfg.cgroups)
			sandbox_cgroup_remove(sb);
	}
	kilnd_lock(d);
	if (fate != REATTACH_NONE && !hibernated_after_all(sb)) {
		struct vmm_end end = { .at_ms = wall_ms(),
				       .reason = "kilnd_restart",
				       .exit_status = -1 };

		if (fate == REATTACH_RECORDED) {
			bool clean = info.status == 0 && info.signal == 0;

			end.exit_status = info.status;
			end.signal = info.signal;
			end.reason = !keep ? "kilnd_restart" : clean ? "guest_shutdown" : "crashed";
			end.console_tail = vmm_output_tail(info.console, info.console_len,
							   info.console_whole, CONSOLE_TAIL_LINES,
							   CONSOLE_LINE_MAX);
			end.msg = vmm_output_message(info.err, info.err_len);
			if (!end.msg)
				end.msg = json_string("kiln-vmm ended while no kilnd ran");
			end.timeline = vmm_output_timeline(info.err, info.err_len);
		} else if (fate == REATTACH_KILL) {
			pthread_mutex_lock(&kp->mu);
			end.exit_status = kp->done ? kp->status : -1;
			end.signal = kp->done ? kp->signal : SIGKILL;
			pthread_mutex_unlock(&kp->mu);
			end.msg = json_string(
				"kilnd stopped while this sandbox's boot, stop or hibernation ran; its VM was killed at the next start");
		} else {
			end.msg = json_string(
				s.attach == -ESTALE || s.attach == -EPROTO
					? "kilnd restarted and found another process under this sandbox's VM pid; nothing was signalled"
					: "kilnd restarted and found neither this sandbox's VM nor a record of how it ended");
		}
		kilnd_log("sandbox %s: kiln-vmm pid %d %s while no kilnd ran (%s)", sb->rec.id,
			  sb->rec.pid,
			  fate == REATTACH_RECORDED       ? "ended"
				  : fate == REATTACH_KILL ? "was killed"
							  : "is gone",
			  reattach_fate_name(fate));
		ended_locked(sb, &end, hib_dir);
	}
	sb->rec.pid = 0;
	sb->rec.vmm_start = 0;
	sb->rec.expires_ms = 0;
	/* A hibernated sandbox keeps them for its wake. */
	if (sb->rec.state != SANDBOX_HIBERNATED)
		json_array_clear(sb->rec.ports);
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	free(t);
	/* A kill's monitor that has not reported yet keeps it (a few bytes, once). */
	pthread_mutex_lock(&kp->mu);
	bool done = kp->done || fate != REATTACH_KILL;
	pthread_mutex_unlock(&kp->mu);
	if (done)
		free(kp);
}

/*
 * sandbox_impl: what the sandbox files share (sandbox.c: one sandbox's
 * requests; sandboxes.c: the registry; sandbox_vmm.c: booting, stopping
 * and watching its kiln-vmm; sandbox_store.c: its directory and
 * meta.json; sandbox_snap.c: pause, checkpoints, hibernation, the idle
 * timeout; sandbox_fork.c: forks). Not for use outside them: the
 * contract is sandbox.h.
 *
 * Every field marked reg.mu is read and written only under d->reg.mu;
 * the others are set before the sandbox is shared and never change.
 */
#ifndef KILN_SANDBOX_IMPL_H
#define KILN_SANDBOX_IMPL_H

#include <limits.h>
#include <pthread.h>

#include "api/kilnd/registry/checkpoint.h"
#include "lib/base/mono.h"
#include "api/kilnd/net/port_fwd.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/registry/sandbox_record.h"
#include "api/kilnd/supervision/supervise.h"
#include "lib/base/mono.h"

/* A kill -9'd kiln-vmm is reaped at once; anything longer is a stuck
 * process (D state) worth a log line while we keep waiting. */
#define KILL_WAIT_MS 10000
#define TERM_WAIT_MS 2000
/* How often the boot loop looks at the VMM between agent connects. */
#define BOOT_SLICE_MS 100
/* How long one ping attempt that kiln-vmm holds may run past its slice:
 * a restored guest answers its first CONNECT after hundreds of ms in the
 * nested harness, and every abandoned attempt costs it another. A dead
 * VMM ends an attempt at once (EOF); only a guest that is slow to answer
 * keeps kilnd from its shutdown check this long. */
#define BOOT_HOLD_MS 5000
/* meta.json is small; anything bigger is not ours. */
#define META_MAX (1u << 20)
/* Writing a snapshot: RAM, state and a copy of the overlay, synced. Seconds
 * on real disks; generous for the nested harness. */
#define SNAPSHOT_TIMEOUT_MS 600000

struct sandbox {
	struct kilnd *d;
	struct sandbox_record rec; /* reg.mu */
	char dir[PATH_MAX];
	char vsock[KILND_SOCKET_MAX];
	int refs;                                  /* reg.mu */
	struct vmm_proc *proc;                     /* reg.mu; NULL: no VMM */
	bool vmm_exited;                           /* reg.mu: this boot's VMM has ended */
	int64_t deadline_mono;                     /* reg.mu: timeout_s deadline; 0: none */
	bool timeout_pending;                      /* reg.mu: a timeout stop is under way */
	const char *stop_reason;                   /* reg.mu: last_exit.reason while stopping */
	pthread_cond_t cv;                         /* with reg.mu: the VMM ended */
	struct port_fwd *ports[SANDBOX_PORTS_MAX]; /* reg.mu: port mappings of this boot */
	/* reg.mu: sandbox_image_defaults() once read (its image and template
	 * cannot change while it exists); NULL with them set: none */
	json_t *exec_defaults;
	bool exec_defaults_read;
	size_t nports;                  /* reg.mu */
	char control[KILND_SOCKET_MAX]; /* kiln-vmm's control socket */
	/* reg.mu: a pause, resume or checkpoint under way (its name): other
	 * lifecycle requests and agent requests wait for it (on cv). */
	const char *busy_op;
	bool waking;         /* reg.mu: booting out of hibernation; agent requests wait */
	bool restoring;      /* reg.mu: this boot resumes a snapshot */
	bool idle_pending;   /* reg.mu: an idle hibernation is under way */
	int64_t active_mono; /* reg.mu: the last request on it (mono ms) */
	unsigned cp_readers; /* reg.mu: restores reading one of its checkpoints */
	/* reg.mu: a checkpoint delete is folding the checkpoint into those
	 * layered on it; checkpoints are not taken, restored or forked
	 * meanwhile (they wait on cv). */
	bool cp_merging;
	/* reg.mu: the checkpoint this boot's kiln-vmm tracks RAM against
	 * (the last one it took, or the one it was restored from): the next
	 * checkpoint is layered on it. "": none. */
	char cp_base[CHECKPOINT_NAME_MAX + 1];
	/* reg.mu: the client shares' relays while a VMM runs (share_relay.h);
	 * NULL for host shares and without a VMM. */
	struct share_relay *relays[SPEC_MAX_SHARES];
};

/* Where a boot starts (sandbox_boot): NULL, or a snapshot to resume. */
struct boot_src {
	const char *restore_dir; /* the snapshot directory */
	const char *from;        /* boot.from: "hibernate" or "checkpoint" */
	const char *checkpoint;  /* boot.checkpoint: "<sandbox id>/<name>", or NULL */
	const char *hostname;    /* set through the agent once it answers (forks), or NULL */
	bool cold_fallback; /* kiln-vmm refused the snapshot (exit 1): boot the kernel instead */
};

static inline void kilnd_lock(struct kilnd *d)
{
	pthread_mutex_lock(&d->reg.mu);
}

static inline void kilnd_unlock(struct kilnd *d)
{
	pthread_mutex_unlock(&d->reg.mu);
}

/* sandbox.c / sandboxes.c: allocation and the registry (reg.mu held where _locked). */
struct sandbox *sandbox_new(struct kilnd *d);
void sandbox_free(struct sandbox *sb);

/* The root disk's size in bytes: disk_mib, else the image's (0: unknown). */
uint64_t sandbox_disk_size(const char *image_path, unsigned disk_mib);
/* What the overlay in dir stores on the host, in bytes; -1: unknown. */
int64_t sandbox_overlay_stored(const char *dir);
struct sandbox *sandbox_find_locked(struct kilnd *d, const char *id);
/* The sandbox with this id with a new reference (sandbox_put), whoever
 * owns it (kilnd's own work, not a client's request), or NULL. */
struct sandbox *sandbox_find_ref(struct kilnd *d, const char *id);
int sandbox_registry_add_locked(struct kilnd *d, struct sandbox *sb);
void sandbox_registry_remove_locked(struct kilnd *d, struct sandbox *sb);
/* {"<key>": [view(sb, 0), ..., view(sb, n - 1)]}, n = count(sb), both
 * called under reg.mu: one of a sandbox's lists (ports, previews) as GET
 * answers it. NULL when out of memory. */
json_t *sandbox_list_view(struct sandbox *sb, const char *key,
			  size_t (*count)(const struct sandbox *sb),
			  json_t *(*view)(struct sandbox *sb, size_t i));

/* sandbox_snap.c */
/* Checkpoint `name`'s directory (NULL: the checkpoints' parent) into out:
 * in the jail's directory, where the jailed kiln-vmm writes it. 0 or -1. */
int sandbox_checkpoint_dir(const struct sandbox *sb, const char *name, char *out, size_t cap);
/* The hibernation snapshot's directory, beneath vm/ (sandbox_jail_open) and whole (out). 0 or -1. */
#define SANDBOX_HIBERNATE_REL "hibernate/image"
int sandbox_hibernate_dir(const struct sandbox *sb, char *out, size_t cap);

/* sandbox_store.c */
/* snprintf for paths: -ENAMETOOLONG instead of a silently cut path. */
int sandbox_pathf(char *out, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Rewrite meta.json atomically (temporary file + rename). Under reg.mu.
 * 0, or -errno (logged; most callers go on: the next write catches up). */
int sandbox_persist_locked(struct sandbox *sb);
/* Remove a directory and everything beneath it (a sandbox's, a
 * checkpoint's), nothing outside it: nothing is followed. Missing: fine.
 * A symbolic link or other file at dir is removed itself. */
void sandbox_remove_dir(const char *dir);

/* Wait (reg.mu held) until no checkpoint delete is folding checkpoints of sb. */
void sandbox_wait_unmerging_locked(struct sandbox *sb);

/* sandbox_reattach.c: at load, the sandbox registered (one reference):
 * supervise its VMM again if the record names one that still runs under
 * its keeper; else say how it ended (hib_dir: its hibernation snapshot,
 * sandbox_hibernate_dir, kept when a hibernation or wake was cut short
 * with it complete).
 * Persists the record. */
void sandbox_reattach_load(struct sandbox *sb, const char *hib_dir);

/* sandbox_ports.c: close every port mapping (the VMM ended). Not under reg.mu. */
void sandbox_ports_close(struct sandbox *sb);
/* After a reattach, a wake or a restore in place: listen again on each
 * mapping rec.ports names (one whose port is taken now is logged and
 * dropped), then persist. Nothing when mappings listen already. Not under reg.mu. */
void sandbox_ports_reopen(struct sandbox *sb);
/* The live mappings' guest sides (POST .../ports bodies without
 * host_port), for a checkpoint object; NULL when out of memory. */
json_t *sandbox_ports_guest_side(struct sandbox *sb);
/* A fork: the checkpoint's mappings, each on a new host port. */
void sandbox_ports_open_new(struct sandbox *sb, const json_t *guest_side);

/* sandbox.c: creation, shared by create and fork. A new sandbox (booting,
 * registered, its directory made) of owner's for spec (taken over in every
 * case) on the image file; with hostname_from_id its hostname becomes
 * kiln-<id>; pooled: a warm pool's (hidden, not counted against
 * --max-sandboxes). The caller holds a reference. NULL with e. */
struct sandbox *sandbox_create_entry(struct kilnd *d, uid_t owner, struct sandbox_spec *spec,
				     const char *image, bool hostname_from_id, bool pooled,
				     struct api_err *e);
/* Sandboxes of clients, what --max-sandboxes counts (a warm pool's are not). reg.mu held. */
size_t sandbox_clients_count_locked(const struct kilnd *d);
/* Boot it from src; on failure remove it whole. Drops the caller's reference. */
int sandbox_create_finish(struct sandbox *sb, const struct boot_src *src, json_t **view,
			  struct api_err *e);
/* Wait (reg.mu held) until no pause, resume or checkpoint runs and no
 * hibernation or wake is under way (their owners broadcast cv). */
void sandbox_wait_unbusy_locked(struct sandbox *sb);
/* kilnd_lock + sandbox_wait_unbusy_locked, then refuse (unlocked, -1) while kilnd shuts down. */
int sandbox_lock_unbusy(struct sandbox *sb, struct api_err *e);
/* Wait on cv (reg.mu held) until woken or deadline (mono ms) passed; false then. */
bool sandbox_cv_wait_locked(struct sandbox *sb, int64_t deadline_mono);

/* sandbox_vmm.c */
/* Boot (state booting, owned by the caller) from src (NULL: the kernel)
 * and wait for the agent; then set the hostname (src->hostname) and the
 * guest clock. 0: running. -1 with e: crashed, no VMM left. */
int sandbox_boot(struct sandbox *sb, const struct boot_src *src, struct api_err *e);
/* Bring the VMM down (state stopping or deleting, owned by the caller):
 * the agent's shutdown, then SIGTERM, then SIGKILL. */
void sandbox_halt(struct sandbox *sb, int grace_ms);
/* Wait (reg.mu held) until the VMM is gone or ms passed (< 0: no limit). */
bool sandbox_wait_gone_locked(struct sandbox *sb, int ms);
/* Kill the VMM and wait until it is gone. Under reg.mu. */
void sandbox_kill_locked(struct sandbox *sb);
/* The monitor's on_exit for a sandbox's VMM (arg: the sandbox, holding a
 * reference for the monitor that this drops). */
void sandbox_on_vmm_exit(void *arg, const struct vmm_exit_info *x);
/* Remove the sandbox's cgroup (<--cgroup-parent>/<id>) if one is left; no VMM runs. */
void sandbox_cgroup_remove(struct sandbox *sb);
/*
 * Set the guest's clock from the host's and push fresh entropy into its
 * random pool (the agent reseeds the CRNG), as after every boot and restore:
 * forks of one snapshot must not share a clock or random numbers. 0 or -1
 * with the message on a (the caller's own kiln_agent).
 */
int sandbox_sync_guest(kiln_agent *a);

/* sandbox_shares.c: open each share's directory for one kiln-vmm start
 * (share_open.h: no symbolic link followed; beneath a --share-root unless
 * root owns the sandbox). 0 with fds[0..nshares) (-1 for a client share:
 * no directory), or -1 with e naming the
 * share and the component, and nothing left open. */
int sandbox_shares_open(struct sandbox *sb, int fds[SPEC_MAX_SHARES], struct api_err *e);
void sandbox_shares_close(int *fds, size_t n);

/* sandbox_firewall.c: with network passt, the rules file for kiln-vmm's
 * --firewall into path[cap] (<dir>/firewall.json, written from the create
 * body's rules or the default when it does not exist yet). 0 (path
 * untouched without a network), or -1 with e. */
int sandbox_firewall_prepare(struct sandbox *sb, char *path, size_t cap, struct api_err *e);
/* Its current rules (firewall.json, else what its first boot will write). 0 with *canon, or -1 with e. */
int sandbox_firewall_current(struct sandbox *sb, json_t **canon, struct api_err *e);
/* The last max bytes of the sandbox directory's log `name` (a regular
 * file, not followed if a link) into *buf (malloc'd, *got bytes; NULL
 * and 0 without one); *whole: they start at the file's start. 0, or -1
 * when out of memory. */
int sandbox_log_tail(const struct sandbox *sb, const char *name, size_t max, uint8_t **buf,
		     size_t *got, bool *whole);

/* sandbox_snap.c */
/* Wake a hibernated sandbox (the caller saw it hibernated, reg.mu not
 * held): restore <dir>/hibernate, or boot the kernel when the snapshot is
 * unusable. 0: running; -1 with e (wrong_state when another request
 * changed its state first). */
int sandbox_wake_locked(struct sandbox *sb, struct api_err *e);
/* At load: drop checkpoints whose directory is gone, remove directories
 * no checkpoint names (a checkpoint cut short). reg.mu not needed. */
void sandbox_checkpoints_reconcile(struct sandbox *sb);
/* The tick's part: start an idle hibernation where one is due. reg.mu held. */
void sandbox_idle_check_locked(struct sandbox *sb, int64_t now_mono);
/* Count a metric (metrics_mu). */
#define SANDBOX_METRIC(d, field)                        \
	do {                                            \
		pthread_mutex_lock(&(d)->metrics_mu);   \
		(d)->metrics.field++;                   \
		pthread_mutex_unlock(&(d)->metrics_mu); \
	} while (0)

#endif

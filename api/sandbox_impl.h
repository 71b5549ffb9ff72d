/*
 * sandbox_impl: what the sandbox files share (sandbox.c: one sandbox's
 * requests; sandboxes.c: the registry; sandbox_vmm.c: booting, stopping
 * and watching its kiln-vmm; sandbox_store.c: its directory and
 * meta.json). Not for use outside them: the contract is sandbox.h.
 *
 * Every field marked reg.mu is read and written only under d->reg.mu;
 * the others are set before the sandbox is shared and never change.
 */
#ifndef KILN_SANDBOX_IMPL_H
#define KILN_SANDBOX_IMPL_H

#include <limits.h>
#include <pthread.h>

#include "port_fwd.h"
#include "sandbox.h"
#include "sandbox_record.h"
#include "supervise.h"

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
	struct sandbox_record rec;    /* reg.mu */
	char dir[PATH_MAX];
	char vsock[KILND_SOCKET_MAX];
	int refs;                     /* reg.mu */
	struct vmm_proc *proc;        /* reg.mu; NULL: no VMM */
	bool vmm_exited;              /* reg.mu: this boot's VMM has ended */
	int64_t deadline_mono;        /* reg.mu: timeout_s deadline; 0: none */
	bool timeout_pending;         /* reg.mu: a timeout stop is under way */
	const char *stop_reason;      /* reg.mu: last_exit.reason while stopping */
	pthread_cond_t cv;            /* with reg.mu: the VMM ended */
	struct port_fwd *ports[SANDBOX_PORTS_MAX]; /* reg.mu: port mappings of this boot */
	size_t nports;                /* reg.mu */
};

static inline void sb_lock(struct kilnd *d)
{
	pthread_mutex_lock(&d->reg.mu);
}

static inline void sb_unlock(struct kilnd *d)
{
	pthread_mutex_unlock(&d->reg.mu);
}

/* sandbox.c / sandboxes.c: allocation and the registry (reg.mu held where _locked). */
struct sandbox *sb_new(struct kilnd *d);
void sb_free(struct sandbox *sb);
struct sandbox *sb_find_locked(struct kilnd *d, const char *id);
int sb_registry_add_locked(struct kilnd *d, struct sandbox *sb);
void sb_registry_remove_locked(struct kilnd *d, struct sandbox *sb);

/* sandbox_store.c */
/* snprintf for paths: -ENAMETOOLONG instead of a silently cut path. */
int sb_pathf(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Rewrite meta.json atomically (temporary file + rename). Under reg.mu. */
void sb_persist_locked(struct sandbox *sb);
/* Remove a sandbox directory and the files in it, nothing outside it. */
void sb_remove_dir(const char *dir);

/* sandbox_ports.c: close every port mapping (the VMM ended). Not under reg.mu. */
void sb_ports_close(struct sandbox *sb);

/* sandbox_vmm.c */
/* Boot (state booting, owned by the caller) and wait for the agent.
 * 0: running. -1 with e: crashed, no VMM left. */
int sb_boot(struct sandbox *sb, struct api_err *e);
/* Bring the VMM down (state stopping or deleting, owned by the caller):
 * the agent's shutdown, then SIGTERM, then SIGKILL. */
void sb_halt(struct sandbox *sb, int grace_ms);
/* Wait (reg.mu held) until the VMM is gone or ms passed (< 0: no limit). */
bool sb_wait_gone_locked(struct sandbox *sb, int ms);
/* Kill the VMM and wait until it is gone. Under reg.mu. */
void sb_kill_locked(struct sandbox *sb);

#endif

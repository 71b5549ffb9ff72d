/*
 * rt_command: kiln-runtime's commands (runc's), one function each, and
 * what they share: the context main builds (the parsed command line and
 * the --log descriptor), the log and error lines, the bundle's
 * config.json, a container held under its lock. kiln-runtime.c is main
 * and the command table; rt_command_create.c is create,
 * rt_command_state.c what only reads (state, list, ps, features, spec),
 * rt_command_life.c what changes a container (delete, kill, start, update,
 * pause, resume), rt_command_exec.c exec.
 *
 * Contract: each command returns 0, or -errno with e one line (main
 * prints it on stderr and logs it, and exits 1, as runc). Work in
 * progress (issue 34, slice 1): create checks the bundle and plans the
 * VM, then says the VM boot is not wired yet and leaves nothing behind;
 * commands that need the VM say "not supported yet".
 */
#ifndef KILN_RT_COMMAND_H
#define KILN_RT_COMMAND_H

#include "api/runtime/rt_cli.h"
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_log.h"
#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

struct rt_ctx {
	const struct rt_cmd *cmd;
	int log_fd;       /* --log, -1: none */
	int *exit_status; /* a command that exits as something else did (exec without -d) sets it */
};

/* Open --log (append, 0600); a failure is said on stderr, not fatal. */
void rt_command_log_open(struct rt_ctx *x);

/* One --log line (and, for an error, the same text on stderr). */
void rt_command_report(const struct rt_ctx *x, enum rt_log_level l, const char *msg);

/* "VERB: not supported yet" (-ENOSYS). */
int rt_command_not_yet(const struct rt_cmd *c, struct err *e);

/* The bundle's config.json, read whole and parsed. */
int rt_command_read_config(const char *bundle, struct rt_config *cfg, struct err *e);

/* The container's directory and record (locked unless lockfd is NULL);
 * rt_command_close releases what was opened (rec may be NULL). */
int rt_command_open(const struct rt_cmd *c, int *rootfd, int *dirfd, int *lockfd,
		    struct rt_state_rec *rec, struct err *e);
void rt_command_close(int rootfd, int dirfd, int lockfd, struct rt_state_rec *rec);

/* A container held under its lock with its record and status. */
struct rt_held {
	int rootfd, dirfd, lockfd;
	struct rt_state_rec rec;
	enum rt_status st;
};

int rt_command_hold(const struct rt_cmd *c, struct rt_held *h, struct err *e);
void rt_command_release(struct rt_held *h);

/* What needs the container's own VM (pause, resume, checkpoint,
 * update): -ENOSYS with e for a pod's further container, which runs in
 * its sandbox's; 0 otherwise. */
int rt_command_own_vm(const struct rt_cmd *c, const struct rt_held *h, struct err *e);

/* --pid-file made absolute into out[RT_PATH_MAX] ("" when not given):
 * a shim leaves the working directory, runc's relative path is the
 * caller's. */
int rt_command_pid_file(const char *given, char *out, struct err *e);

/* The container's jail directory (rt_jail_path of <root>/<id>) into
 * out[RT_JAIL_PATH_MAX]. */
int rt_command_jail(const struct rt_cmd *c, char *out, struct err *e);

/* The same for another container of the root, id. */
int rt_command_jail_of(const struct rt_cmd *c, const char *id, char *out, struct err *e);

/*
 * A pod's further container id and its sandbox's VM (rt_plan.h "Pods"):
 * with graft, its slot in the sandbox's directory sbfd, cloned with its
 * mounts, grafted as id into the VM's share "pod" (kiln-vmm's control
 * socket); without, that graft dropped (a VM already gone, or a graft it
 * no longer has, is 0; another failure is one, and the slot should stay).
 */
int rt_command_pod_graft(const struct rt_cmd *c, const char *sandbox, int sbfd, const char *id,
			 bool graft, struct err *e);

/* Best effort: the sandbox's guest forgets container cid (ctr_delete:
 * whatever is left of it is killed), for a member whose shim did not
 * (killed: delete --force, the OOM killer). 0, or the agent client's
 * -errno (not_found: it was forgotten already). */
int rt_command_pod_forget(const struct rt_cmd *c, const char *sandbox, const char *cid);

/*
 * A shim for a (create's container shim, or an exec shim): a->dir
 * (<root>/<id>, into dir[RT_PATH_MAX]), its jail path, the absolute pid
 * file and the ready pipe filled, then forked; the child closes lockfd
 * and rootfd and never returns. *ready_r is the pipe's read end for
 * rt_command_shim_ready, which reads the shim's one line: 0, the shim's
 * error, or `died` when it ended without a word (then it is reaped).
 */
int rt_command_shim_fork(struct rt_shim_args *a, int lockfd, int rootfd, char *dir, pid_t *pid,
			 int *ready_r, struct err *e);
int rt_command_shim_ready(int ready_r, pid_t pid, const char *died, struct err *e);

/* s (malloc'ed) on stdout, freed. */
int rt_command_print(char *s);

int rt_command_create(const struct rt_ctx *x, struct err *e);
/* create's work, or restore's with the checkpoint's snapshot (restore,
 * absolute) and the record it was taken with (saved: its guest
 * container's ID and network). */
int rt_command_make(const struct rt_ctx *x, const char *restore, const struct rt_state_rec *saved,
		    struct err *e);
int rt_command_checkpoint(const struct rt_ctx *x, struct err *e);
int rt_command_restore(const struct rt_ctx *x, struct err *e);
int rt_command_state(const struct rt_ctx *x, struct err *e);
int rt_command_list(const struct rt_ctx *x, struct err *e);
int rt_command_ps(const struct rt_ctx *x, struct err *e);
int rt_command_features(const struct rt_ctx *x, struct err *e);
int rt_command_spec(const struct rt_ctx *x, struct err *e);
int rt_command_delete(const struct rt_ctx *x, struct err *e);
int rt_command_kill(const struct rt_ctx *x, struct err *e);
int rt_command_start(const struct rt_ctx *x, struct err *e);
int rt_command_update(const struct rt_ctx *x, struct err *e);
int rt_command_exec(const struct rt_ctx *x, struct err *e);
int rt_command_pause(const struct rt_ctx *x, struct err *e);
int rt_command_resume(const struct rt_ctx *x, struct err *e);

#endif

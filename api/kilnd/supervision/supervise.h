/*
 * supervise: run one kiln-vmm under its keeper and watch it until it ends;
 * or watch again, after a kilnd restart, one a keeper still runs.
 *
 * Contract:
 *  - vmm_spawn() forks and execs the keeper (api/kilnd/keeper/keeper.h,
 *    req->keeper: kilnd's own binary, /proc/self/exe) from the calling
 *    thread: the child only resets signals, marks descriptors and execs
 *    (kilnd has threads). The keeper forks kiln-vmm and reports whether
 *    its exec worked; vmm_spawn returns once it knows (an exec failure is
 *    a spawn_failed error with the errno, not a child that exits 127).
 *    Nothing ties the keeper or the VMM to kilnd's life: no parent-death
 *    signal. The keeper's --grace bounds how long they run unsupervised.
 *  - The keeper gets /dev/null as stdin, stdout and stderr, its own
 *    session, default signal dispositions and an empty signal mask, and
 *    no descriptor of kilnd's but the request's keep_fds (passed on to
 *    kiln-vmm), the cgroup's and its ready pipe. kiln-vmm's stdout (the
 *    guest's serial console) and stderr go into <dir>/console.log and
 *    <dir>/vmm.log, capped by the keeper (KEEPER_LOG_CAP plus ".1").
 *  - A monitor thread holds a connection to <dir>/keeper.sock; when it
 *    closes, the VMM has ended (or its keeper died): the thread reads the
 *    status from <dir>/vmm.exit (hostile input: keeper_proto.h), the last
 *    VMM_TAIL_BYTES of each log from the files, and calls on_exit(arg,
 *    info) once; then it frees the struct vmm_proc and ends.
 *  - The VMM is signalled only through a pidfd opened for the pid the
 *    keeper named and then checked against /proc/PID/stat's start time:
 *    vmm_signal() never reaches a recycled pid (an ended VMM is -ESRCH).
 *  - No global state. The caller does not use the vmm_proc after its on_exit.
 */
#ifndef KILN_SUPERVISE_H
#define KILN_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/keeper/keeper_proto.h"

#define VMM_TAIL_BYTES 16384
/* Connecting to a keeper and reading its hello: at once on a healthy
 * host, generous for the nested test harness (software-emulated CPUs). */
#define VMM_KEEPER_HELLO_MS 30000

struct vmm_exit_info {
	int status; /* exit status, or -1 when a signal ended it (or unknown: signal 0 then) */
	int signal; /* 0: none */
	bool known; /* false: the keeper ended without recording the VMM's exit */
	const uint8_t *console; /* the last bytes of the console */
	size_t console_len;
	bool console_whole; /* console holds everything since the start */
	const uint8_t *err; /* the last bytes of kiln-vmm's stderr */
	size_t err_len;
	bool err_whole;
};

struct vmm_spawn_req {
	char *const *argv;  /* argv[0] is the kiln-vmm path */
	const char *keeper; /* the program run as `<keeper> --keeper ...` */
	const char *dir;    /* the sandbox's directory (absolute): logs, keeper.sock, vmm.exit */
	unsigned grace_s;   /* the keeper's --grace; 0: never */
	void (*on_exit)(void *arg, const struct vmm_exit_info *info);
	void *arg;
	bool new_pid_ns; /* start kiln-vmm as pid 1 of a new pid namespace (its jail) */
	/* Descriptors (>= 3) kiln-vmm inherits, e.g. its shares' directories
	 * (--share fd=N): the only ones of kilnd's that survive the exec.
	 * The caller keeps them open until vmm_spawn returned. */
	const int *keep_fds;
	size_t nkeep;
	/* The cgroup.procs of the VMM's cgroup (supervision/cgroup.h), written
	 * by the VMM's child before exec; -1: none. The caller keeps and closes it. */
	int cgroup_fd;
	bool park;      /* set by vmm_park only: a zygote's keeper (keeper.h, --park) */
	bool park_nice; /* and parked at nice 19 (--park-nice) */
};

struct vmm_proc;

/*
 * Start kiln-vmm under a keeper. 0 with *proc and *id (pid 0 when the VMM
 * ended before kilnd could connect: its on_exit follows) once it runs; -1
 * with e (spawn_failed: pipes, fork or exec of the keeper or of kiln-vmm
 * failed) otherwise, and then on_exit is never called.
 */
int vmm_spawn(const struct vmm_spawn_req *req, struct vmm_proc **proc, struct keeper_vmm_id *id,
	      struct api_err *e);

/*
 * Watch again the VMM a keeper in dir runs (after a kilnd restart): it
 * must be `want` (pid and start time from meta.json) and alive. 0 with
 * *proc (on_exit as after vmm_spawn); -ESRCH: no keeper answers (the VMM
 * ended: vmm_exit_load may say how); -ESTALE: a keeper answers for
 * another VMM, or the pid is no longer that VMM; -EPROTO: it speaks
 * another protocol; other -errno.
 */
int vmm_reattach(const char *dir, const struct keeper_vmm_id *want,
		 void (*on_exit)(void *, const struct vmm_exit_info *), void *arg,
		 struct vmm_proc **proc);

/* The tails an on_exit reads, kept by the caller. */
struct vmm_tails {
	uint8_t console[VMM_TAIL_BYTES], err[VMM_TAIL_BYTES];
};

/*
 * What dir's keeper recorded about the end of VMM want (vmm.exit), with
 * the logs' tails in t: 0 with *info (known), or -1 when vmm.exit is
 * missing, malformed or about another VMM (then *info holds the tails,
 * known false). want->pid 0: whichever VMM the file names.
 */
int vmm_exit_load(const char *dir, const struct keeper_vmm_id *want, struct vmm_exit_info *info,
		  struct vmm_tails *t);

/*
 * End whatever VMM a keeper in dir still runs (a create or delete cut
 * short: nobody else will), and wait (up to KEEPER_KILL_WAIT_S) until the
 * keeper has written its last file and exited, so the directory can be
 * removed. 0, or -ESRCH when no keeper answers, or -errno.
 */
#define KEEPER_KILL_WAIT_S 10
int vmm_keeper_end(const char *dir);

/*
 * Zygotes (supervision/zygote.h): a keeper whose kiln-vmm runs with
 * `--park` and waits for its command line; no sandbox's file, cgroup or
 * jail is touched until it is claimed.
 */
struct vmm_zygote {
	pid_t keeper;            /* kilnd's child */
	struct keeper_vmm_id id; /* the parked kiln-vmm */
	int ready;               /* the keeper's socket: the claim goes there */
	int park;                /* kiln-vmm's --park socket: its command line goes there */
};

/* Start one: 0 with *z once the keeper said its kiln-vmm waits, or -1 with e. */
int vmm_park(const char *keeper, const char *vmm, unsigned grace_s, bool new_pid_ns, bool nice,
	     struct vmm_zygote *z, struct api_err *e);

/*
 * Make z the VMM req describes: its keeper claimed for req->dir (which
 * also moves the VMM into req->cgroup_fd's cgroup and gives it back its
 * priority), then kiln-vmm sent req->argv (argv[0] as kiln-vmm sees it,
 * its --share fd=N numbered from PARK_FD_BASE in the order of
 * req->keep_fds, which it is sent with). As vmm_spawn after that. z is consumed:
 * on -1 (with e) its keeper and VMM have ended and been reaped, and the
 * caller may vmm_spawn the same request instead.
 */
int vmm_claim(struct vmm_zygote *z, const struct vmm_spawn_req *req, struct vmm_proc **proc,
	      struct keeper_vmm_id *id, struct api_err *e);

/* Still parked: its keeper has said nothing more and not closed the socket. */
bool vmm_zygote_alive(const struct vmm_zygote *z);

/* End it (the sockets' close ends both) and reap its keeper. */
void vmm_zygote_end(struct vmm_zygote *z);

/* Send sig to the VMM through its pidfd. 0 or -errno (-ESRCH: it ended). */
int vmm_signal(struct vmm_proc *p, int sig);

#endif

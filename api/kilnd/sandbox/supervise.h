/*
 * supervise: run one kiln-vmm child and watch it until it ends.
 *
 * Contract:
 *  - vmm_spawn() starts a monitor thread that forks and execs kiln-vmm
 *    and returns once the exec succeeded or failed (an exec failure is a
 *    spawn_failed error with the errno, not a child that exits 127).
 *  - The child gets /dev/null as stdin, its own session, default signal
 *    dispositions and an empty signal mask, no descriptor of kilnd's but
 *    the request's keep_fds, and
 *    SIGKILL when the monitor thread ends (PR_SET_PDEATHSIG is tied to the
 *    thread that forked, which is why the monitor forks): a VMM never
 *    outlives the kilnd that supervises it.
 *  - The child's stdout (the guest's serial console) and stderr go through
 *    pipes into console.log and vmm.log, each capped at VMM_LOG_CAP bytes
 *    plus one rotated ".1" file: a guest that prints without end cannot
 *    fill the host's disk. The monitor also keeps the last VMM_TAIL_BYTES
 *    of each in memory for on_exit.
 *  - When the child has ended, on_exit(arg, info) is called from the
 *    monitor thread before the child is reaped, so its pid stays reserved
 *    (a zombie) until on_exit returned: vmm_signal() is safe as long as the
 *    caller learns about the exit only through on_exit. After on_exit the
 *    monitor reaps the child, frees the struct vmm_proc and ends.
 *  - No global state. The caller serialises vmm_signal() with its on_exit.
 */
#ifndef KILN_SUPERVISE_H
#define KILN_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/kilnd/core/api_error.h"

#define VMM_LOG_CAP (1u << 20)
#define VMM_TAIL_BYTES 16384

struct vmm_exit_info {
	int status; /* exit status, or -1 when a signal ended it */
	int signal; /* 0: none */
	const uint8_t *console; /* the last bytes of the console */
	size_t console_len;
	bool console_whole;     /* console holds everything since the start */
	const uint8_t *err;     /* the last bytes of kiln-vmm's stderr */
	size_t err_len;
	bool err_whole;
};

struct vmm_spawn_req {
	char *const *argv;       /* argv[0] is the kiln-vmm path */
	const char *console_log; /* truncated at each spawn */
	const char *vmm_log;
	void (*on_exit)(void *arg, const struct vmm_exit_info *info);
	void *arg;
	bool new_pid_ns; /* start kiln-vmm as pid 1 of a new pid namespace (its jail) */
	/* Descriptors (>= 3) kiln-vmm inherits, e.g. its shares' directories
	 * (--share fd=N): the only ones of kilnd's that survive the exec.
	 * The caller keeps them open until vmm_spawn returned. */
	const int *keep_fds;
	size_t nkeep;
	/* The cgroup.procs of the VMM's cgroup (sandbox/cgroup.h), written
	 * by the child before exec; -1: none. The caller keeps and closes it. */
	int cgroup_fd;
};

struct vmm_proc;

/*
 * Start kiln-vmm. 0 with *proc and *pid once it runs; -1 with e
 * (spawn_failed: logs, pipes, fork or exec failed) otherwise, and then
 * on_exit is never called.
 */
int vmm_spawn(const struct vmm_spawn_req *req, struct vmm_proc **proc, pid_t *pid, struct api_err *e);

/* Send sig to the child (see the contract for when this is safe). 0 or -errno. */
int vmm_signal(struct vmm_proc *p, int sig);

#endif

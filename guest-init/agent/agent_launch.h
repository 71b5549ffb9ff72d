/*
 * agent_launch: start one process for `exec` or `spawn`
 * (docs/agent-protocol.md, section 8: fork, setsid, user, cwd, environment,
 * exec; failures before exec come back as errors, not exit codes).
 *
 * Contract:
 *  - Everything that allocates or looks at the filesystem (the environment,
 *    the PATH search, the default cwd) happens before fork(). The child of
 *    this multithreaded process makes only async-signal-safe system calls
 *    until execve().
 *  - Every descriptor is created close-on-exec, so a child never inherits
 *    another connection's socket or another process's pipes; the child's
 *    own stdio is dup2()'d into 0..2 (which clears the flag there).
 *  - The fork happens under the reaper's fork lock and the pid is
 *    registered with `rc` before the lock is released, so the reaper hands
 *    the exit status to `rc` however early the child dies. The caller sets
 *    rc->on_exit beforehand.
 *  - On failure after the fork (the child reported an error through a
 *    close-on-exec pipe and exited 127), agent_launch() waits until the
 *    reaper has reaped it, so `rc` may be reused or freed on return.
 */
#ifndef KILN_AGENT_LAUNCH_H
#define KILN_AGENT_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"
#include "guest-init/sys/reaper.h"
#include "lib/base/mono.h"

struct agent_launch_io {
	pid_t pid;
	int in_fd;  /* stdin pipe, write end; with a pty: the master (writes and TIOCSWINSZ) */
	int out_fd; /* stdout pipe, read end; with a pty: a second descriptor of the master */
	int err_fd; /* stderr pipe, read end; -1 with a pty */
	int64_t start_us; /* CLOCK_MONOTONIC just before fork() */
};

/*
 * Start req (as `what`: "exec" or "spawn"); with pty, on a new terminal
 * req->rows x req->cols. The parent's descriptors in io are non-blocking.
 * `nofile` is the open-file limit the child gets. 0, or -1 with err set
 * (not_found, permission_denied, busy, io_error).
 */
int agent_launch(struct reaper *r, const struct rlimit *nofile, const char *what,
		 const struct agent_proc_req *req, bool pty, struct reaper_child *rc,
		 struct agent_launch_io *io, struct agent_err *err);

/* agent_path_search()'s test for a program: a regular file with an x
 * bit (the agent is root: access(X_OK) would not tell). ctx unused. */
bool agent_launch_is_exec_file(const char *path, void *ctx);

#endif

/*
 * agent_proc: the processes the agent started (docs/agent-protocol.md,
 * sections 7.3, 7.4 and 8).
 *
 * Contract:
 *  - One struct agent_proc per process, for `exec` (id 0, owned by its
 *    connection, never listed) and `spawn` (id 1, 2, ... in the table of
 *    AGENT_MAX_PROCS slots, ids never reused). At most AGENT_MAX_PROCS
 *    processes run at once, exec and spawn together.
 *  - One mutex (agent_procs.lock) guards the table and every field marked
 *    "locked" below. It is held only for short, non-blocking work: ring
 *    copies of at most one chunk, non-blocking writes to a stdin pipe,
 *    kill(), ioctl(). It is never held while sending to a connection.
 *  - Lock order: the reaper's lock, then this one (the reaper's exit hook
 *    takes it). Nothing here calls into the reaper while holding it.
 *  - Entries are reference-counted: the table holds one while the entry is
 *    listed, and so does each thread using it (the output pump, attached
 *    streams, waits). Descriptors that several threads use (stdin / the
 *    pty master) are never closed while referenced: "closing" them
 *    dup2()s /dev/null over the number, so a concurrent poll() or write()
 *    meets /dev/null instead of a reused descriptor. They are really
 *    closed with the entry.
 *  - A spawned process's output is read all the time by its own pump
 *    thread into its ring, so a slow reader never blocks it. Watchers
 *    (eventfds of attached streams and waits) are poked after every
 *    change: output, reap, end of output.
 *  - A process is `exited` when the reaper reaped it, and `done` once its
 *    output also reached EOF or the drain time after the reap passed
 *    (section 8). `exit` lines are sent only when done.
 */
#ifndef KILN_AGENT_PROC_H
#define KILN_AGENT_PROC_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "guest-init/agent/agent_launch.h"
#include "api/proto/agent_proto.h"
#include "guest-init/agent/agent_ring.h"
#include "guest-init/sys/reaper.h"

/*
 * How long output is still collected after the reap at most, however
 * busy a leftover background writer keeps the pipes (section 8's rule is
 * "until the pipes have been empty for AGENT_DRAIN_MS"; this bound keeps
 * a writer that never pauses from holding the exit line back forever).
 */
#define AGENT_DRAIN_CAP_MS (10 * AGENT_DRAIN_MS)

struct agent_procs;

/* An eventfd that wants to hear about every change of one process. */
struct agent_watch {
	int efd;
	bool stream; /* an attached stream: counted in list_processes' "attached" */
	struct agent_watch *next;
};

struct agent_proc {
	struct agent_procs *tab;
	struct reaper_child rc; /* the reaper's handle; its hook records the exit */

	/* Fixed once started. */
	uint32_t id; /* 0: exec */
	pid_t pid;
	bool pty;
	bool confined; /* in a PID namespace of its own: signals go to its group */
	char **argv;   /* a copy for list_processes, NULL-terminated */
	size_t argc;
	int64_t start_us;
	uint32_t timeout_ms;
	int wake_fd;        /* eventfd: the exit hook wakes the pump / exec thread */
	int out_fd, err_fd; /* owned by the pump (spawn) or the exec thread */

	/* Locked. */
	unsigned refs;
	bool listed; /* visible in the table (a spawn that started) */
	bool exited; /* reaped: status, ru and reap_us are set */
	bool done;   /* exited and output finished */
	bool timed_out;
	int status;
	struct rusage ru;
	int64_t reap_us;
	int in_fd;              /* stdin pipe / pty master; /dev/null once closed */
	bool in_closed;         /* stdin closed by the host (or the process is done) */
	struct agent_ring ring; /* spawn */
	struct agent_watch *watchers;
	struct agent_proc *all_next, **all_prev; /* every live entry, for counting */
};

struct agent_procs {
	pthread_mutex_t lock;
	struct reaper *reaper;
	const struct rlimit *nofile;              /* the open-file limit children get */
	int null_fd;                              /* /dev/null, to retire descriptors */
	pthread_attr_t *thread_attr;              /* for pump threads */
	struct agent_proc *slot[AGENT_MAX_PROCS]; /* spawned processes; NULL: free */
	uint32_t next_id;
	struct agent_proc *all; /* exec and spawn entries that exist */
};

int agent_procs_init(struct agent_procs *t, struct reaper *r, const struct rlimit *nofile,
		     int null_fd, pthread_attr_t *thread_attr);

/*
 * Start a process. exec: the caller owns the result (id 0) and reads its
 * output from out_fd/err_fd. spawn: it is listed with the next id, its ring
 * has req->ring_bytes, and its pump thread runs. The caller gets one
 * reference (agent_proc_put). NULL with err set: busy (AGENT_MAX_PROCS
 * running, or the table full of running processes, or no memory), or
 * whatever agent_launch() reported.
 */
struct agent_proc *agent_proc_start(struct agent_procs *t, const struct agent_proc_req *req,
				    bool spawn, struct agent_err *err);

/* A listed process by id, with a reference; NULL when there is none. */
struct agent_proc *agent_proc_get(struct agent_procs *t, uint32_t id);
void agent_proc_put(struct agent_proc *p);

/* Processes not yet reaped, exec and spawn (info.processes). */
unsigned agent_procs_running(struct agent_procs *t);

/*
 * References to every listed process in id order, for list_processes:
 * *out is malloc'd (free it after agent_proc_put on each). -ENOMEM or the count.
 */
int agent_procs_list(struct agent_procs *t, struct agent_proc ***out);

/* Locked helpers: call with tab->lock held. */
void agent_proc_watch_add(struct agent_proc *p, struct agent_watch *w);
void agent_proc_watch_del(struct agent_proc *p, struct agent_watch *w);
void agent_proc_notify(struct agent_proc *p);
/* The exit line's fields (requires p->exited). */
void agent_proc_exit_info(const struct agent_proc *p, struct agent_exit *e);
/* The list_processes line's fields; argv points into p. */
void agent_proc_info(const struct agent_proc *p, struct agent_process_info *i);
/* Stop taking stdin: the pipe closes for good (with a pty, nothing is closed). */
void agent_proc_close_stdin(struct agent_proc *p);
/*
 * SIGKILL to the process group unless already reaped (the pid cannot have
 * been reused before the reap). Sets timed_out when `timeout`.
 */
void agent_proc_kill_group(struct agent_proc *p, bool timeout);

/*
 * Send a signal to the process (group: to its process group). 0, -ESRCH
 * when it was already reaped (nothing is sent), or -errno from kill().
 * Takes the lock itself.
 */
int agent_proc_signal(struct agent_proc *p, int signo, bool group);
/*
 * TIOCSWINSZ on the pty (the kernel sends SIGWINCH). 0, -ESRCH (reaped),
 * -ENOTTY (no pty), or -errno from the ioctl. Takes the lock itself.
 */
int agent_proc_resize(struct agent_proc *p, uint16_t rows, uint16_t cols);

/* Non-blocking write to stdin. */
enum agent_stdin_res {
	AGENT_STDIN_WROTE,  /* *n bytes written (maybe fewer than asked) */
	AGENT_STDIN_FULL,   /* the pipe is full: poll in_fd for POLLOUT */
	AGENT_STDIN_EXITED, /* the process has exited */
	AGENT_STDIN_CLOSED, /* stdin was closed, or the process closed its end */
};
/* Takes the lock itself. */
enum agent_stdin_res agent_proc_write_stdin(struct agent_proc *p, const void *buf, size_t len,
					    size_t *n);
/*
 * Finish stdin after all bytes: close the pipe, or with a pty write the
 * terminal's VEOF character (^D), because a pty cannot be half-closed.
 * Takes the lock itself.
 */
enum agent_stdin_res agent_proc_eof_stdin(struct agent_proc *p);

/* Drain bookkeeping shared by the pump and exec: see section 8. */
struct agent_drain {
	int64_t reap_ms; /* 0 until the process was reaped */
	int64_t last_ms; /* last time output arrived */
};
/* ms until the drain ends (0: now), -1 when not draining yet. */
int agent_drain_left(const struct agent_drain *d, int64_t now_ms);

/* The output pipes (or pty) the pump and exec read, fds[0] stdout and
 * fds[1] stderr (-1: closed): the open ones go into pf from *n, idx[i] is
 * each one's slot (-1 when closed). */
void agent_output_poll(int *const fds[2], struct pollfd *pf, int *n, int idx[2]);
/* One read of a ready output descriptor into buf (AGENT_CHUNK_MAX bytes):
 * the bytes, or 0 when there were none; EOF or an error (EIO from a pty
 * master whose slave side is gone) closes *fd. */
ssize_t agent_output_read(int *fd, uint8_t *buf);
/* Take a wake-up off the process's eventfd (none pending is fine). */
void agent_wake_drain(int fd);

#endif

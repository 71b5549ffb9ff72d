/*
 * reaper: the one place in kiln-init that waits for children.
 *
 * kiln-init is PID 1, so every orphan in the guest becomes its child and
 * must be reaped, and it is multithreaded, so two waiters would steal each
 * other's children. Hence exactly one loop calls wait4(-1, ...) and hands
 * each pid to whoever registered it; unregistered pids (orphans) are
 * reaped and forgotten.
 *
 * Contract:
 *  - reaper_init() runs in the main thread before any other thread starts.
 *    It blocks SIGCHLD in that thread, so every thread created afterwards
 *    (and every forked child, until child_reset()) has it blocked: the
 *    reaper sleeps in sigwaitinfo() while there are no children, and a
 *    SIGCHLD that arrives between wait4() saying ECHILD and the sleep stays
 *    pending instead of being lost.
 *  - reaper_run() is the loop; it never returns. Run it in a thread of its
 *    own (reaper_thread) or as the last thing main does.
 *  - A child is registered between reaper_fork_lock() and
 *    reaper_fork_unlock(), with fork() in between: the loop cannot hand out
 *    a pid while that lock is held, so even a child that exits at once is
 *    never mistaken for an orphan.
 *  - When a registered child is reaped, the loop stores status and rusage
 *    in it, calls its on_exit hook (if any) with the reaper lock held, sets
 *    `reaped` and wakes reaper_wait(). The hook must be quick and must not
 *    call back into the reaper. After reaper_wait() returned, the reaper no
 *    longer touches the struct, so its owner may free it.
 */
#ifndef KILN_INIT_REAPER_H
#define KILN_INIT_REAPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

struct reaper_child {
	pid_t pid;
	bool reaped;
	int status; /* as from wait4() */
	struct rusage ru;
	void (*on_exit)(struct reaper_child *ch);
	struct reaper_child *next; /* reaper's list of registered children */
};

struct reaper {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a registered child was reaped, or idle changed */
	struct reaper_child *children;
	bool idle; /* wait4() said ECHILD and nothing was forked since */
};

/* Block SIGCHLD in the calling (main) thread and set up the state. */
int reaper_init(struct reaper *r);
/* The wait loop; never returns. */
void reaper_run(struct reaper *r);
/* pthread entry point for reaper_run; arg is the struct reaper. */
void *reaper_thread(void *arg);

void reaper_fork_lock(struct reaper *r);
/* Register `ch` for `pid`; only between reaper_fork_lock/unlock. */
void reaper_add(struct reaper *r, struct reaper_child *ch, pid_t pid);
void reaper_fork_unlock(struct reaper *r);

/* Block until `ch` has been reaped; returns its wait status. */
int reaper_wait(struct reaper *r, struct reaper_child *ch);

/*
 * Block until kiln-init has no children left or the CLOCK_MONOTONIC time
 * `deadline_ms` passes. True when none are left. For shutdown's grace
 * period.
 */
bool reaper_wait_idle(struct reaper *r, int64_t deadline_ms);

#endif

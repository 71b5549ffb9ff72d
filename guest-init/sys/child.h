/*
 * child: undo, in a freshly forked child, what kiln-init changed about
 * itself, so every program it starts begins like one started by a shell.
 *
 * Contract: child_reset() is called between fork() and exec() and uses
 * only async-signal-safe system calls: kiln-init is multithreaded, so the
 * child may not take locks or allocate (another thread may have held the
 * malloc lock at the fork).
 */
#ifndef KILN_INIT_CHILD_H
#define KILN_INIT_CHILD_H

#include <sys/resource.h>

/*
 * Restore default signal dispositions (the agent ignores SIGPIPE) and an
 * empty signal mask (every kiln-init thread blocks SIGCHLD for the reaper),
 * give up the boot-timer port (ioperm() permission survives fork and exec;
 * a sandboxed program must not forge boot milestones), and set the open
 * file limit back to `nofile` when it is non-NULL (the agent raises its
 * own for its connections), and mark every descriptor from 3 up
 * close-on-exec.
 */
void child_reset(const struct rlimit *nofile);

#endif

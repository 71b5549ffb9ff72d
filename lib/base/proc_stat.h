/*
 * proc_stat: a process's start time from /proc/<pid>/stat, which with its
 * pid names one process across pid reuse (kilnd's keeper and reattach
 * tell the VMM they started from a process that took its pid since;
 * kiln-runtime its container's shim), and its state letter.
 */
#ifndef KILN_PROC_STAT_H
#define KILN_PROC_STAT_H

#include <stddef.h>
#include <stdint.h>

/* The kernel's PID_MAX_LIMIT on 64-bit: no pid is above it. */
#define PROC_PID_MAX 4194304

/*
 * The start time (field 22) from the text of /proc/PID/stat, buf[0..n)
 * (not NUL-terminated). The process's name (field 2, in parentheses)
 * may hold spaces and ')' of its own: fields are counted from the last
 * ')'. 0 with *start, or -EINVAL.
 */
int proc_stat_start_time(const char *buf, size_t n, uint64_t *start);

/* The state letter (field 3: R, S, D, Z for a zombie, X dead...) from
 * the same text. 0 with *state, or -EINVAL. */
int proc_stat_state(const char *buf, size_t n, char *state);

/* Read /proc/<pid>/stat's start time. 0, or -errno (-ESRCH: no such process). */
int proc_start_time(int pid, uint64_t *start);

/* Both from one read of /proc/<pid>/stat (state may be NULL): whether a
 * process that is known by its start time is still running and not a
 * zombie, which has ended but is not reaped yet. 0, or -errno. */
int proc_stat_read(int pid, uint64_t *start, char *state);

#endif

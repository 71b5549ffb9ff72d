/*
 * mono: CLOCK_MONOTONIC, the clock of every timeout, deadline and latency
 * in kiln (kiln-vmm's timeline and rate limits, kiln-init's agent, kilnd,
 * the agent client). One reading in nanoseconds; the other units are its
 * truncations, so two callers never disagree by a rounding.
 *
 * Contract:
 *  - The monotonic clock never steps: sync_clock and NTP move the wall
 *    clock (CLOCK_REALTIME), never a deadline. Wall time is not here.
 *  - Deadlines in ms are absolute mono_ms() values; 0 means "none".
 *  - No state, no allocation; async-signal-safe (clock_gettime is).
 */
#ifndef KILN_MONO_H
#define KILN_MONO_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary start (boot, in practice). */
uint64_t mono_ns(void);
/* The same in microseconds and milliseconds. */
int64_t mono_us(void);
int64_t mono_ms(void);
/* Milliseconds with sub-millisecond precision, for latencies. */
double mono_ms_f(void);

/* The absolute mono_ms() time ms from now; 0 (no deadline) for ms <= 0. */
int64_t mono_deadline_ms(int64_t ms);

/*
 * The absolute CLOCK_MONOTONIC time ms from now as a timespec, for
 * pthread_cond_timedwait on a condition variable set to that clock
 * (pthread_condattr_setclock). ms < 0 is taken as 0.
 */
void mono_deadline_in(struct timespec *dl, int64_t ms);

#endif

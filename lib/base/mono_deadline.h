/*
 * mono_deadline_in: an absolute CLOCK_MONOTONIC time `ms` from now, for
 * pthread_cond_timedwait on a condition variable set to that clock (kilnd's
 * sandbox and byte-queue waits). Pure arithmetic on clock_gettime.
 */
#ifndef KILN_MONO_DEADLINE_H
#define KILN_MONO_DEADLINE_H

#include <stdint.h>
#include <time.h>

static inline void mono_deadline_in(struct timespec *dl, int64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += ms / 1000;
	dl->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

#endif

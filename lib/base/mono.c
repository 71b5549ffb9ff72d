/* mono: the monotonic clock and deadlines (mono.h). */
#include "lib/base/mono.h"

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t mono_us(void)
{
	return (int64_t)(mono_ns() / 1000u);
}

int64_t mono_ms(void)
{
	return (int64_t)(mono_ns() / 1000000u);
}

double mono_ms_f(void)
{
	return (double)mono_ns() / 1e6;
}

int64_t mono_deadline_ms(int64_t ms)
{
	return ms > 0 ? mono_ms() + ms : 0;
}

void mono_deadline_in(struct timespec *dl, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += ms / 1000;
	dl->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

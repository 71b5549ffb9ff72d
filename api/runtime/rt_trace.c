/* KILN_RUNTIME_TRACE lines; see rt_trace.h. */
#include "api/runtime/rt_trace.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void rt_trace(const char *fmt, ...)
{
	const char *path = getenv(RT_TRACE_ENV);
	char line[256];
	struct timespec now;
	va_list ap;
	int n, m, fd;

	if (!path || !path[0])
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	n = snprintf(line, sizeof(line), "%lld %d ",
		     (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000, (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = m < 0 ? n : n + m >= (int)sizeof(line) - 1 ? (int)sizeof(line) - 2 : n + m;
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	(void)!write(fd, line, (size_t)n);
	close(fd);
}

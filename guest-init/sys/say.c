#include "guest-init/sys/say.h"

#include <stdarg.h>
#include <stdio.h>

void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	/* One write per message, so lines from several threads do not mix. */
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n] = '\n';
	fprintf(stderr, "kiln-init: %.*s", n + 1, buf);
	fflush(stderr);
}

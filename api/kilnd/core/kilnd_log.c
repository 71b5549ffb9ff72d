/* kilnd's log lines (kilnd_log.h). */
#include "api/kilnd/core/kilnd_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/text_clean.h"

void kilnd_log(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "kilnd: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	/* Messages quote clients and guests: a newline in one must not
	 * forge a log line. */
	text_clean_term_inplace(line);
	/* One write per line: lines from different threads do not interleave. */
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
}

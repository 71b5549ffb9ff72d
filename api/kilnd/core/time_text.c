/* Wall-clock times as the API writes them; see time_text.h. */
#include "api/kilnd/core/time_text.h"

#include <stdio.h>
#include <time.h>

void format_time_ms(int64_t ms, char *out, size_t cap)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&s, &tm)) {
		snprintf(out, cap, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

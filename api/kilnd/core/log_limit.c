/* At most one log line per period and reason; see log_limit.h. */
#include "api/kilnd/core/log_limit.h"

bool log_limit_pass(struct log_limit *l, int64_t now_ms, int64_t period_ms,
		    unsigned long *suppressed)
{
	*suppressed = 0;
	if (l->seen && now_ms - l->last_ms < period_ms) {
		l->suppressed++;
		return false;
	}
	*suppressed = l->suppressed;
	l->seen = true;
	l->last_ms = now_ms;
	l->suppressed = 0;
	return true;
}

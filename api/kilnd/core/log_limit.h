/*
 * log_limit: at most one log line per period for one reason, with a count
 * of the lines held back. A flood of refused connections (403 forbidden,
 * 503 too_many_connections, 408 for heads that never come) is one line
 * per connection otherwise, and grows kilnd's log without bound at the
 * rate a client can connect.
 *
 * Contract: pure (the caller passes the clock and holds any lock); a
 * zeroed struct log_limit is a reason never seen. The first line of a
 * reason is always written; within period_ms of the last written one,
 * lines are counted instead; the next line written after that carries the
 * count. A count still held when the flood stops is not reported (nothing
 * writes it), only the next line of that reason would.
 */
#ifndef KILN_LOG_LIMIT_H
#define KILN_LOG_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct log_limit {
	bool seen;
	int64_t last_ms;          /* when the last line was written */
	unsigned long suppressed; /* held back since then */
};

/* Write a line of this reason at now_ms? true: write it; *suppressed is
 * how many were held back before it (0: none), and the count restarts.
 * false: counted, not written. */
bool log_limit_pass(struct log_limit *l, int64_t now_ms, int64_t period_ms,
		    unsigned long *suppressed);

#endif

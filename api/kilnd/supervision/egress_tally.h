/*
 * egress_tally: the egress proxies' decisions counted for /metrics
 * (kiln_egress_decisions_total), from the lines kiln-egress writes on
 * its stdout (api/egress/egress_log.h), as kilnd copies them into each
 * sandbox's egress.log.
 *
 * Contract: pure; fed the bytes as they come, in chunks of any size. A
 * line counts when it holds `"decision":"allow"` or `"decision":"deny"`
 * as kiln-egress's compact writer puts them (inside a JSON string a
 * quote is escaped, so no path or name can spell them), and which
 * decided: `"policy":"callback"`, `"policy":"timeout"`, else the rules.
 * Lines over EGRESS_TALLY_LINE_MAX are not counted. The proxy may be
 * compromised: its counts are its own claims, bounded by what it writes.
 */
#ifndef KILN_EGRESS_TALLY_H
#define KILN_EGRESS_TALLY_H

#include <stddef.h>
#include <stdint.h>

#define EGRESS_TALLY_LINE_MAX 16384

enum egress_tally_by { EGRESS_BY_RULES, EGRESS_BY_CALLBACK, EGRESS_BY_TIMEOUT, EGRESS_BY_COUNT };

struct egress_counts {
	uint64_t allow[EGRESS_BY_COUNT], deny[EGRESS_BY_COUNT];
};

/* One proxy's line being read. */
struct egress_tally {
	char line[EGRESS_TALLY_LINE_MAX];
	size_t n;
	int skipping; /* the rest of a line too long */
};

/* Feed p[0..n) of a proxy's output; each whole decision line counted into c. */
void egress_tally_feed(struct egress_tally *t, const char *p, size_t n, struct egress_counts *c);

#endif

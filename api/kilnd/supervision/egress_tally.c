/* egress_tally: see egress_tally.h. */
#include "api/kilnd/supervision/egress_tally.h"

#include <string.h>

static const char *find(const char *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle));
}

static void count(const char *l, size_t n, struct egress_counts *c)
{
	enum egress_tally_by by = find(l, n, "\"policy\":\"callback\"") ? EGRESS_BY_CALLBACK
		: find(l, n, "\"policy\":\"timeout\"")                  ? EGRESS_BY_TIMEOUT
									: EGRESS_BY_RULES;

	if (find(l, n, "\"decision\":\"allow\""))
		c->allow[by]++;
	else if (find(l, n, "\"decision\":\"deny\""))
		c->deny[by]++;
}

void egress_tally_feed(struct egress_tally *t, const char *p, size_t n, struct egress_counts *c)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (!t->skipping && t->n + take <= sizeof(t->line)) {
			memcpy(t->line + t->n, p, take);
			t->n += take;
		} else {
			t->skipping = 1;
		}
		if (nl) {
			if (!t->skipping)
				count(t->line, t->n, c);
			t->n = 0;
			t->skipping = 0;
			take++;
		}
		p += take;
		n -= take;
	}
}

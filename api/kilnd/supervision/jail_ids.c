/* Jail id allocation; see jail_ids.h. */
#include "api/kilnd/supervision/jail_ids.h"

#include <stdlib.h>

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The lowest id of lo .. hi - 1 not in the sorted used[0..n), or hi. */
static uint64_t lowest_free(uint64_t lo, uint64_t hi, const uint32_t *used, size_t n)
{
	uint64_t want = lo;

	/* Walk the sorted ids: the first gap at or after `lo` is free. */
	for (size_t i = 0; i < n && want < hi; i++) {
		if (used[i] < want)
			continue;
		if (used[i] > want)
			break;
		want++;
	}
	return want;
}

uint32_t jail_id_pick(uint32_t first, uint32_t count, uint32_t *used, size_t n, uint32_t last)
{
	uint64_t end = (uint64_t)first + count, start, id;

	if (first == 0 || count == 0 || end > UINT32_MAX)
		return 0;
	if (n)
		qsort(used, n, sizeof(*used), cmp_u32);
	/* Round the ring from the one after the last id given, so an id
	 * comes back only after every other one of the range has been
	 * given: whatever a deleted sandbox's VMM left owned by its uid (in
	 * a writable share) meets a new sandbox as late as the range allows. */
	start = last >= first && last < end - 1 ? (uint64_t)last + 1 : first;
	id = lowest_free(start, end, used, n);
	if (id == end && start > first && (id = lowest_free(first, start, used, n)) == start)
		return 0;
	return id < end ? (uint32_t)id : 0;
}

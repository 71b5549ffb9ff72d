/* Jail id allocation; see jail_ids.h. */
#include "api/kilnd/sandbox/jail_ids.h"

#include <stdlib.h>

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

uint32_t jail_id_pick(uint32_t first, uint32_t count, uint32_t *used, size_t n)
{
	uint64_t want = first, end = (uint64_t)first + count;

	if (first == 0 || count == 0 || end > UINT32_MAX)
		return 0;
	if (n)
		qsort(used, n, sizeof(*used), cmp_u32);
	/* Walk the sorted ids: the first gap at or after `first` is free. */
	for (size_t i = 0; i < n && want < end; i++) {
		if (used[i] < want)
			continue;
		if (used[i] > want)
			break;
		want++;
	}
	return want < end ? (uint32_t)want : 0;
}

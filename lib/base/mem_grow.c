/* One step of a growable buffer; see mem_grow.h. */
#include "lib/base/mem_grow.h"

#include <stdint.h>
#include <stdlib.h>

void *mem_grow(void *buf, size_t *cap, size_t need, size_t first, size_t max)
{
	size_t c = *cap ? *cap : first;
	void *nb;

	if (need > max || need == 0)
		return NULL;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : c * 2;
	if (c > max)
		c = max;
	nb = realloc(buf, c);
	if (nb)
		*cap = c;
	return nb;
}

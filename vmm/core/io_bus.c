#include "vmm/core/io_bus.h"

#include <errno.h>
#include <string.h>

int io_bus_add(struct io_bus *bus, uint64_t base, uint64_t len, io_fn *fn, void *opaque)
{
	uint64_t end;

	if (len == 0 || !fn || __builtin_add_overflow(base, len, &end))
		return -EINVAL;
	for (int i = 0; i < bus->n; i++)
		if (base < bus->r[i].base + bus->r[i].len && bus->r[i].base < end)
			return -EEXIST;
	if (bus->n == IO_BUS_MAX)
		return -ENOSPC;
	bus->r[bus->n++] = (struct io_range){ .base = base, .len = len, .fn = fn, .opaque = opaque };
	return 0;
}

int io_bus_access(const struct io_bus *bus, uint64_t addr, uint8_t *data, uint32_t size,
		  int is_write)
{
	for (int i = 0; i < bus->n; i++) {
		const struct io_range *r = &bus->r[i];

		/* The whole access must lie inside the range. */
		if (addr >= r->base && addr - r->base < r->len &&
		    size <= r->len - (addr - r->base)) {
			r->fn(r->opaque, addr - r->base, data, size, is_write);
			return 0;
		}
	}
	if (!is_write)
		memset(data, 0xff, size);
	return -ENOENT;
}

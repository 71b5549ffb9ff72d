/*
 * io_bus: dispatch of guest port I/O and MMIO exits to device handlers.
 *
 * Contract: a bus is a small fixed table of non-overlapping address ranges,
 * each with a handler and its opaque device pointer. Lookups are linear: a
 * microVM has a handful of devices and exits are dominated by KVM, not by
 * this loop. Pure (no KVM), so devices can be driven from unit tests.
 */
#ifndef KILN_IO_BUS_H
#define KILN_IO_BUS_H

#include <stdint.h>

#define IO_BUS_MAX 32

/* `off` is relative to the range's base; `size` is 1, 2, 4 or 8. */
typedef void io_fn(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);

struct io_range {
	uint64_t base, len;
	io_fn *fn;
	void *opaque;
};

struct io_bus {
	int n;
	struct io_range r[IO_BUS_MAX];
};

/* Register [base, base + len). 0, -EEXIST (overlap), -ENOSPC or -EINVAL. */
int io_bus_add(struct io_bus *bus, uint64_t base, uint64_t len, io_fn *fn, void *opaque);

/*
 * Dispatch one access. Returns 0 when a device handled it, -ENOENT when no
 * device sits there (reads then return all ones, like an open bus).
 */
int io_bus_access(const struct io_bus *bus, uint64_t addr, uint8_t *data, uint32_t size,
		  int is_write);

#endif

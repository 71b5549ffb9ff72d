/*
 * e820: the guest's physical memory map, as the Linux boot protocol and
 * the PVH start_info memmap both describe it.
 *
 * Pure: builds a table from a guest_mem layout, no KVM.
 */
#ifndef KILN_E820_H
#define KILN_E820_H

#include <stdint.h>

#include "lib/guest/guest_mem.h"

#define E820_RAM 1
#define E820_RESERVED 2
#define E820_MAX 8

struct e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/*
 * Fill `out` (room for `max` entries) with the map for `gm`.
 * Returns the number of entries, or -EINVAL when the RAM is too small to
 * hold the boot structures below 1 MiB plus at least 1 MiB above it, or
 * -ENOSPC when `max` is too small.
 */
int e820_build(const struct guest_mem *gm, struct e820_entry *out, int max);

#endif

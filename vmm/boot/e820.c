#include "vmm/boot/e820.h"

#include <errno.h>

#include "vmm/boot/layout.h"

static int add(struct e820_entry *out, int max, int *n, uint64_t addr, uint64_t size, uint32_t type)
{
	if (*n >= max)
		return -ENOSPC;
	out[*n] = (struct e820_entry){ .addr = addr, .size = size, .type = type };
	(*n)++;
	return 0;
}

int e820_build(const struct guest_mem *gm, struct e820_entry *out, int max)
{
	int n = 0, err;

	if (gm->low_size < 2 * LAYOUT_HIMEM)
		return -EINVAL;
	/* Base memory up to the MP table, which lives in the reserved EBDA. */
	if ((err = add(out, max, &n, 0, LAYOUT_EBDA_START, E820_RAM)))
		return err;
	if ((err = add(out, max, &n, LAYOUT_EBDA_START, LAYOUT_HIMEM - LAYOUT_EBDA_START,
		       E820_RESERVED)))
		return err;
	if ((err = add(out, max, &n, LAYOUT_HIMEM, gm->low_size - LAYOUT_HIMEM, E820_RAM)))
		return err;
	if (gm->high_size &&
	    (err = add(out, max, &n, GUEST_MEM_HIGH_START, gm->high_size, E820_RAM)))
		return err;
	return n;
}

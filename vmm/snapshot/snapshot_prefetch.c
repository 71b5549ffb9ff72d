#include "vmm/snapshot/snapshot_prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_mem.h"

/* Pagemap entries read at once (32 KiB). */
#define PAGEMAP_BATCH 4096

int snap_pagemap_open(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2], without[2];
	int fd, dropped = 0, r;

	/* CAP_SYS_ADMIN is bit 21: the first word. */
	if (syscall(SYS_capget, &h, caps) == 0 && (caps[0].effective & (1u << CAP_SYS_ADMIN))) {
		memcpy(without, caps, sizeof(caps));
		without[0].effective &= ~(1u << CAP_SYS_ADMIN);
		/* Better no working set than a pagemap that shows frame numbers. */
		if (syscall(SYS_capset, &h, without) < 0)
			return -errno;
		dropped = 1;
	}
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	r = fd < 0 ? -errno : fd;
	/* Effective back to what it was: a subset of the permitted set, always allowed. */
	if (dropped && syscall(SYS_capset, &h, caps) < 0 && fd >= 0) {
		r = -errno;
		close(fd);
	}
	return r;
}

void snap_pagemap_mark(const uint64_t *ent, size_t n, uint64_t first, uint64_t *bits)
{
	for (size_t i = 0; i < n; i++)
		if (ent[i] & (SNAP_PAGEMAP_PRESENT | SNAP_PAGEMAP_SWAPPED))
			page_bits_set(bits, first + i);
}

int snap_pagemap_touched(int fd, const void *mem, uint64_t size, uint64_t *bits, struct err *e)
{
	uint64_t npages = size / SNAP_PAGE, base = (uintptr_t)mem / SNAP_PAGE;
	uint64_t *ent = malloc(PAGEMAP_BATCH * sizeof(*ent));
	int r = 0;

	if (!ent)
		return err_set(e, ENOMEM, "working set: out of memory");
	for (uint64_t p = 0; p < npages && !r; p += PAGEMAP_BATCH) {
		size_t n = npages - p < PAGEMAP_BATCH ? (size_t)(npages - p) : PAGEMAP_BATCH;

		/* Entry i of the file is virtual page i: 8 bytes each. */
		r = fd_io_pread_all(fd, ent, n * sizeof(*ent), (base + p) * sizeof(*ent));
		if (r)
			r = err_set(e, -r, "working set: reading /proc/self/pagemap: %s",
				    strerror(-r));
		else
			snap_pagemap_mark(ent, n, p, bits);
	}
	free(ent);
	return r;
}

int snap_prefetch(void *mem, const struct snap_workingset *ws, struct err *e)
{
	for (uint64_t i = 0; i < ws->n; i++) {
		for (uint64_t done = 0; done < ws->r[i].count; done += SNAP_PREFETCH_CHUNK) {
			uint64_t n = ws->r[i].count - done,
				 off = (ws->r[i].first + done) * SNAP_PAGE;

			if (n > SNAP_PREFETCH_CHUNK)
				n = SNAP_PREFETCH_CHUNK;
			if (madvise((uint8_t *)mem + off, n * SNAP_PAGE, MADV_WILLNEED) < 0)
				return err_set(e, errno,
					       "working set: readahead of RAM at %#llx: %s",
					       (unsigned long long)off, strerror(errno));
		}
	}
	return 0;
}

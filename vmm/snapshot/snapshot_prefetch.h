/*
 * snapshot_prefetch: the host side of a working set (snapshot_workingset.h,
 * docs/architecture.md "Working set"): which pages of guest RAM's
 * mapping this process has touched, and prefetching a set into it.
 *
 * Contract:
 *  - Touched means present in this process's page tables
 *    (/proc/self/pagemap, bit 63) or swapped out from them (bit 62). On
 *    guest RAM mapped MAP_PRIVATE from a snapshot's memory file at
 *    restore, a page is present only once something faulted it in: the
 *    guest (KVM faults the host page in on its first nested page fault,
 *    reads and writes alike), the VMM's devices, or the kernel's
 *    fault-around, which maps up to 64 KiB of already cached neighbours
 *    with a read fault. Reading RAM for a full snapshot faults every page
 *    in: the caller samples before that (vmm/snapshot/vm_workingset.c).
 *    mincore() cannot replace this: on a file mapping it reports the page
 *    cache, which every restore of a snapshot shares; KVM's dirty log
 *    sees only writes.
 *  - The pagemap is opened without CAP_SYS_ADMIN in effect, so it never
 *    shows physical frame numbers (fs/proc/task_mmu.c checks the
 *    opener's credentials): a jailed VMM holding it learns nothing about
 *    host physical memory.
 *  - Prefetching is readahead (MADV_WILLNEED) of the set's pages of the
 *    mapping's file: the page cache fills in large requests issued at
 *    once, instead of one synchronous read per first touch, and the
 *    guest's own faults still map each page. No page-table entry is made
 *    (so the next sample still says what the guest touched), nothing is
 *    copied, and forks keep sharing one page cache. It does nothing for
 *    a file already cached, or on tmpfs (shmem readahead is swap-in).
 *    MADV_POPULATE_READ was measured and left out: it saves little next
 *    to the nested page fault a first touch costs anyway (fault-around
 *    already maps 16 cached pages per host fault) and, run beside the
 *    vCPU, slowed restores down (docs/architecture.md, "Working set").
 */
#ifndef KILN_SNAPSHOT_PREFETCH_H
#define KILN_SNAPSHOT_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"
#include "vmm/snapshot/snapshot_workingset.h"

#define SNAP_PAGEMAP_PRESENT (1ull << 63)
#define SNAP_PAGEMAP_SWAPPED (1ull << 62)

/* /proc/self/pagemap, read-only, CAP_SYS_ADMIN dropped from the effective set while it opens. fd or -errno. */
int snap_pagemap_open(void);

/*
 * Mark in `bits` (page_bits, page `first` + i for entry i) the pages of
 * `n` pagemap entries that are present or swapped. Pure.
 */
void snap_pagemap_mark(const uint64_t *ent, size_t n, uint64_t first, uint64_t *bits);

/*
 * The pages of the mapping [mem, mem + size) (page aligned) this process
 * has touched, or'ed into `bits` (size / 4096 bits), read from the
 * pagemap `fd` without touching the mapping. 0 or -errno with a message.
 */
int snap_pagemap_touched(int fd, const void *mem, uint64_t size, uint64_t *bits, struct err *e);

/*
 * Pages a readahead call covers: the kernel reads at most the larger of
 * the device's I/O size and the file's readahead window per call
 * (mm/readahead.c, force_page_cache_ra), which is 128 KiB by default.
 */
#define SNAP_PREFETCH_CHUNK 32

/*
 * Start readahead of the pages `ws` lists in the mapping `mem` of a
 * memory file (ws->mem_size bytes), SNAP_PREFETCH_CHUNK pages per call.
 * Returns without waiting for the reads. 0, or the first failure's
 * -errno with a message.
 */
int snap_prefetch(void *mem, const struct snap_workingset *ws, struct err *e);

#endif

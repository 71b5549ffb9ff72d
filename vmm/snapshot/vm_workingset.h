/*
 * vm_workingset: a VM's working set across snapshots and restores
 * (docs/architecture.md, "Working set"), for vm_snapshot.c and vm.c.
 *
 * Recorded: a VM restored from a raw memory file (RAM mapped
 * MAP_PRIVATE, so it faults in lazily) keeps its pagemap open (opened at
 * restore, before the jail hides /proc). Each snapshot it takes samples
 * the RAM pages touched so far (snapshot_prefetch.h), before its memory
 * is written, and writes them as the snapshot's `workingset`. Reading RAM
 * for a full snapshot faults every page in, so from then on the VM keeps
 * its last sample: its pagemap has nothing more to say until the next
 * restore. A VM that booted or came from memory.z has anonymous RAM,
 * all of it touched: nothing to learn, and its snapshots have no file.
 *
 * Prefetched: restore reads the workingset of the snapshot it resumes (a
 * hint: none means lazy; a damaged one is one line on the log, then
 * lazy; never a failed restore) and vm_run's own thread prefetches it
 * right after starting the vCPUs, so the guest runs at once and finds
 * its pages mapped as it goes.
 */
#ifndef KILN_SNAPSHOT_WS_H
#define KILN_SNAPSHOT_WS_H

#include <stdint.h>

#include "lib/base/err.h"
#include "vmm/snapshot/snapshot_workingset.h"

struct vm;

struct vm_workingset {
	int pagemap_fd; /* -1: not recording */
	uint64_t *seen; /* the last sample (page_bits of RAM), NULL before the first */
	int stale;      /* RAM was read whole since the restore: keep `seen` */
	struct snap_workingset fetch; /* the restored snapshot's set, to prefetch (n 0: none) */
};

/* Nothing recorded or to fetch. */
void vm_workingset_init(struct vm_workingset *w);
void vm_workingset_free(struct vm_workingset *w);

/* A restore is coming: open the pagemap now (vm_create, before the jail
 * hides /proc); vm_workingset_restored keeps it only for a lazy restore. */
void vm_workingset_open_pagemap(struct vm *vm);

/*
 * RAM of the snapshot is in place; `lazy`: mapped from a raw memory
 * file. `ws_fd`: its workingset file (snap_src_take's result: closed
 * here; -ENOENT none). Starts recording and reads the set to prefetch.
 * Never fails: what goes wrong is logged once and leaves the restore lazy.
 */
void vm_workingset_restored(struct vm *vm, int ws_fd, int lazy);

/* Prefetch the restored snapshot's set (vm_run's thread, vCPUs running). */
void vm_workingset_prefetch(struct vm *vm);

/*
 * Into the snapshot being written in `dfd`, before its memory: the pages
 * touched since the restore, when this VM records them (sampled now
 * unless vm_workingset_stale came first). 0 or -errno (the file could not be
 * written).
 */
int vm_workingset_save(struct vm *vm, int dfd, struct err *e);

/* RAM is about to be read whole (a full snapshot): keep the last sample from now on. */
void vm_workingset_stale(struct vm *vm);

#endif

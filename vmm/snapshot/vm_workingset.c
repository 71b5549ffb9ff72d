#include "vmm/snapshot/vm_workingset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/core/vm_internal.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_prefetch.h"

void vm_workingset_init(struct vm_workingset *w)
{
	memset(w, 0, sizeof(*w));
	w->pagemap_fd = -1;
}

void vm_workingset_free(struct vm_workingset *w)
{
	if (w->pagemap_fd >= 0)
		close(w->pagemap_fd);
	free(w->seen);
	snap_workingset_free(&w->fetch);
	vm_workingset_init(w);
}

/* The one line a working set problem costs: it never stops the VM. */
static void ws_log(struct vm *vm, const char *what, const struct err *e, const char *then)
{
	if (vm->cfg.log_fd >= 0)
		dprintf(vm->cfg.log_fd, "kiln-vmm: %s: %s%s\n", what, e->msg, then);
}

void vm_workingset_open_pagemap(struct vm *vm)
{
	/* Before the jail, which has no /proc. Without it, nothing is recorded. */
	int r = snap_pagemap_open();

	vm->workingset.pagemap_fd = r >= 0 ? r : -1;
}

void vm_workingset_restored(struct vm *vm, int ws_fd, int lazy)
{
	struct err e = { { 0 } };
	int r;

	if (!lazy) {
		if (ws_fd >= 0)
			close(ws_fd);
		if (vm->workingset.pagemap_fd >= 0)
			close(vm->workingset.pagemap_fd);
		vm->workingset.pagemap_fd = -1; /* anonymous RAM: nothing to learn */
		return;
	}
	r = ws_fd == -ENOENT
		? -ENOENT
		: snap_workingset_read_fd(ws_fd, vm->mem.size, &vm->workingset.fetch, &e);
	if (r && r != -ENOENT)
		ws_log(vm, "restore: ignoring the snapshot's workingset", &e,
		       "; RAM is read as the guest touches it, as without one");
}

void vm_workingset_prefetch(struct vm *vm)
{
	struct err e = { { 0 } };

	if (!vm->workingset.fetch.n)
		return;
	if (snap_prefetch(vm->mem.host, &vm->workingset.fetch, &e))
		ws_log(vm, "restore", &e, "; the rest of RAM is read as the guest touches it");
	timeline_mark(&vm->tl, "prefetched");
	snap_workingset_free(&vm->workingset.fetch);
}

void vm_workingset_stale(struct vm *vm)
{
	vm->workingset.stale = 1;
}

/* The pages touched since the restore into vm->workingset.seen (a fresh sample replaces the last). */
static int sample(struct vm *vm, struct err *e)
{
	size_t words = page_bits_words(vm->mem.size / SNAP_PAGE);
	uint64_t *bits = calloc(words, sizeof(*bits));
	int r;

	if (!bits)
		return err_set(e, ENOMEM, "working set: out of memory");
	r = snap_pagemap_touched(vm->workingset.pagemap_fd, vm->mem.host, vm->mem.size, bits, e);
	if (r) {
		free(bits);
		return r;
	}
	free(vm->workingset.seen);
	vm->workingset.seen = bits;
	return 0;
}

int vm_workingset_save(struct vm *vm, int dfd, struct err *e)
{
	struct snap_workingset ws;
	struct err e2;
	int r;

	if (vm->workingset.pagemap_fd < 0)
		return 0;
	/* A pagemap that cannot be read costs this snapshot its hint, nothing more. */
	if (!vm->workingset.stale && sample(vm, &e2))
		ws_log(vm, "snapshot: written without a workingset", &e2, "");
	if (!vm->workingset.seen)
		return 0;
	if ((r = snap_workingset_from_bits(vm->workingset.seen, vm->mem.size, &ws, e)))
		return r;
	r = snap_workingset_write(dfd, &ws, e);
	snap_workingset_free(&ws);
	return r;
}

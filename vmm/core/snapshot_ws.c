#include "vmm/core/snapshot_ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/core/vm_internal.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_prefetch.h"

void vm_ws_init(struct vm_ws *w)
{
	memset(w, 0, sizeof(*w));
	w->pagemap_fd = -1;
}

void vm_ws_free(struct vm_ws *w)
{
	if (w->pagemap_fd >= 0)
		close(w->pagemap_fd);
	free(w->seen);
	snap_ws_free(&w->fetch);
	vm_ws_init(w);
}

/* The one line a working set problem costs: it never stops the VM. */
static void ws_log(struct vm *vm, const char *what, const struct err *e, const char *then)
{
	if (vm->cfg.log_fd >= 0)
		dprintf(vm->cfg.log_fd, "kiln-vmm: %s: %s%s\n", what, e->msg, then);
}

void vm_ws_open_pagemap(struct vm *vm)
{
	/* Before the jail, which has no /proc. Without it, nothing is recorded. */
	int r = snap_pagemap_open();

	vm->ws.pagemap_fd = r >= 0 ? r : -1;
}

void vm_ws_restored(struct vm *vm, int ws_fd, int lazy)
{
	struct err e = { { 0 } };
	int r;

	if (!lazy) {
		if (ws_fd >= 0)
			close(ws_fd);
		if (vm->ws.pagemap_fd >= 0)
			close(vm->ws.pagemap_fd);
		vm->ws.pagemap_fd = -1; /* anonymous RAM: nothing to learn */
		return;
	}
	r = ws_fd == -ENOENT ? -ENOENT : snap_ws_read_fd(ws_fd, vm->mem.size, &vm->ws.fetch, &e);
	if (r && r != -ENOENT)
		ws_log(vm, "restore: ignoring the snapshot's workingset", &e,
		       "; RAM is read as the guest touches it, as without one");
}

void vm_ws_prefetch(struct vm *vm)
{
	struct err e = { { 0 } };

	if (!vm->ws.fetch.n)
		return;
	if (snap_prefetch(vm->mem.host, &vm->ws.fetch, &e))
		ws_log(vm, "restore", &e, "; the rest of RAM is read as the guest touches it");
	timeline_mark(&vm->tl, "prefetched");
	snap_ws_free(&vm->ws.fetch);
}

void vm_ws_stale(struct vm *vm)
{
	vm->ws.stale = 1;
}

/* The pages touched since the restore into vm->ws.seen (a fresh sample replaces the last). */
static int sample(struct vm *vm, struct err *e)
{
	size_t words = page_bits_words(vm->mem.size / SNAP_PAGE);
	uint64_t *bits = calloc(words, sizeof(*bits));
	int r;

	if (!bits)
		return err_set(e, ENOMEM, "working set: out of memory");
	r = snap_pagemap_touched(vm->ws.pagemap_fd, vm->mem.host, vm->mem.size, bits, e);
	if (r) {
		free(bits);
		return r;
	}
	free(vm->ws.seen);
	vm->ws.seen = bits;
	return 0;
}

int vm_ws_save(struct vm *vm, int dfd, struct err *e)
{
	struct snap_ws ws;
	struct err e2;
	int r;

	if (vm->ws.pagemap_fd < 0)
		return 0;
	/* A pagemap that cannot be read costs this snapshot its hint, nothing more. */
	if (!vm->ws.stale && sample(vm, &e2))
		ws_log(vm, "snapshot: written without a workingset", &e2, "");
	if (!vm->ws.seen)
		return 0;
	if ((r = snap_ws_from_bits(vm->ws.seen, vm->mem.size, &ws, e)))
		return r;
	r = snap_ws_write(dfd, &ws, e);
	snap_ws_free(&ws);
	return r;
}

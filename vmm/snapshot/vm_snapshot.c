/*
 * Snapshots of a whole VM: vm_snapshot() writes one, and
 * vm_restore_*() (called by vm_create when cfg.restore_dir is set)
 * bring one back. The pieces: snapshot_kvm (vCPUs, irqchip, PIT, clock),
 * the devices' own save/restore (virtio_dev.h), snapshot_mem (RAM),
 * snapshot_file and snapshot_io (format, durability).
 *
 * A snapshot directory holds:
 *   state       the state file (snapshot_file.h)
 *   memory      RAM, sparse (or memory.z, compressed); in a layered
 *               snapshot only the pages written since its parent
 *   memory.layer which pages those are, and the parent (snapshot_layer.h)
 *   workingset  the pages to prefetch at restore (vm_workingset.h), when
 *               the VM was itself restored lazily
 *   disk<N>     a copy of disk N's copy-on-write overlay (reflinked when
 *               the filesystem can), never the shared base image
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/file_copy.h"
#include "lib/base/mono.h"
#include "vmm/snapshot/vm_snapshot.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_kvm.h"
#include "vmm/snapshot/snapshot_layer.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_src.h"
#include "devices/blk/virtio_blk.h"

#define VM_INFO_VERSION 1
/* One device's own state. A share's node table (virtio-fs) is the large
 * one: about 100 bytes a file the guest has looked up, so 16 MiB holds
 * some 150k; malloc maps it lazily, so only what a save writes is touched. */
#define DEVICE_STATE_MAX (16u << 20)
#define SERIAL_STATE_VERSION 1
_Static_assert(SNAP_SRC_DISKS == VM_MAX_DISKS, "snapshot_src opens one disk<N> per disk");

/* ---- the VM's shape: memory, vCPUs, devices in slot order ---- */

static int save_info(struct vm *vm, struct snap_writer *w, struct err *e)
{
	snap_begin(w, SNAP_SEC_VM_INFO, 0, "vm", e);
	snap_put_u32(w, VM_INFO_VERSION, e);
	snap_put_u64(w, vm->mem.size, e);
	snap_put_u32(w, (uint32_t)vm->ncpus, e);
	snap_put_u32(w, (uint32_t)vm->nvirtio, e);
	for (int i = 0; i < vm->nvirtio; i++)
		snap_put_u32(w, vm->virtio[i].dev->ops->device_id, e);
	return snap_end(w, e);
}

/* The snapshot must describe this VM: the same RAM, vCPUs and devices.
 * With `devices` 0 only RAM and vCPUs (the devices do not exist yet). */
static int check_vm_info(struct vm *vm, const struct snap_view *s, int devices, struct err *e)
{
	const struct snap_section *sec = snap_find(s, SNAP_SEC_VM_INFO, 0);
	struct snap_cursor c;
	uint64_t mem;
	uint32_t cpus, ndev;
	int r;

	if (!sec)
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot: no VM description section");
	snap_cursor_init(&c, sec);
	if (snap_get_u32(&c) != VM_INFO_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot: VM description of an unknown version");
	mem = snap_get_u64(&c);
	cpus = snap_get_u32(&c);
	ndev = snap_get_u32(&c);
	if (c.bad)
		return snap_cursor_end(&c, e);
	if (mem != vm->cfg.mem_mib << 20)
		return err_set(
			e, EINVAL,
			"restore: the snapshot has %llu MiB of RAM; start kiln-vmm with --mem %llu",
			(unsigned long long)(mem >> 20), (unsigned long long)(mem >> 20));
	if ((int)cpus != vm->ncpus)
		return err_set(e, EINVAL,
			       "restore: the snapshot has %u vCPUs; start kiln-vmm with --cpus %u",
			       cpus, cpus);
	if (!devices)
		return 0;
	if ((int)ndev != vm->nvirtio)
		return err_set(
			e, EINVAL,
			"restore: the snapshot has %u virtio devices, this VM %d: give the same device options it was taken with",
			ndev, vm->nvirtio);
	for (int i = 0; i < vm->nvirtio; i++) {
		uint32_t id = snap_get_u32(&c);

		if (!c.bad && id != vm->virtio[i].dev->ops->device_id)
			return err_set(
				e, EINVAL,
				"restore: device %d was virtio id %u in the snapshot and is %s now: give the same device options in the same order",
				i, id, vm->virtio[i].dev->ops->name);
	}
	if ((r = snap_cursor_end(&c, e)))
		return r;
	return 0;
}

static int check_info(struct vm *vm, const struct snap_view *s, struct err *e)
{
	return check_vm_info(vm, s, 1, e);
}

/* ---- the UART ---- */

static int save_serial(struct vm *vm, struct snap_writer *w, struct err *e)
{
	struct serial *s = &vm->serial;

	pthread_mutex_lock(&s->lock);
	snap_begin(w, SNAP_SEC_SERIAL, 0, "serial", e);
	snap_put_u8(w, SERIAL_STATE_VERSION, e);
	snap_put_u8(w, s->ier, e);
	snap_put_u8(w, s->lcr, e);
	snap_put_u8(w, s->mcr, e);
	snap_put_u8(w, s->fcr, e);
	snap_put_u8(w, s->scr, e);
	snap_put_u8(w, s->dll, e);
	snap_put_u8(w, s->dlm, e);
	snap_put_u8(w, (uint8_t)s->thri_pending, e);
	pthread_mutex_unlock(&s->lock);
	/* Received bytes not yet read are console input: dropped, like a line. */
	return snap_end(w, e);
}

static int load_serial(struct vm *vm, const struct snap_view *v, struct err *e)
{
	const struct snap_section *sec = snap_find(v, SNAP_SEC_SERIAL, 0);
	struct serial *s = &vm->serial;
	struct snap_cursor c;

	if (!sec)
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot: no serial port section");
	snap_cursor_init(&c, sec);
	if (snap_get_u8(&c) != SERIAL_STATE_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot: serial port state of an unknown version");
	pthread_mutex_lock(&s->lock);
	s->ier = snap_get_u8(&c);
	s->lcr = snap_get_u8(&c);
	s->mcr = snap_get_u8(&c);
	s->fcr = snap_get_u8(&c);
	s->scr = snap_get_u8(&c);
	s->dll = snap_get_u8(&c);
	s->dlm = snap_get_u8(&c);
	s->thri_pending = snap_get_u8(&c) != 0;
	pthread_mutex_unlock(&s->lock);
	return snap_cursor_end(&c, e);
}

/* ---- virtio devices: transport state + the device's own bytes ---- */

static int save_devices(struct vm *vm, struct snap_writer *w, struct err *e)
{
	uint8_t *buf = malloc(DEVICE_STATE_MAX);
	int r = 0;

	if (!buf)
		return err_set(e, ENOMEM, "out of memory");
	for (int i = 0; i < vm->nvirtio && !r; i++) {
		struct virtio_dev *d = vm->virtio[i].dev;
		struct virtio_mmio_state ms;
		long n = 0;

		memset(&ms, 0, sizeof(ms));
		/* The device first: it may hand held chains back to its queues (vsock). */
		if (d->ops->save && (n = d->ops->save(d, buf, DEVICE_STATE_MAX)) < 0) {
			r = n == -E2BIG
				? err_set(e, E2BIG,
					  "snapshot: %s's state exceeds %u MiB (a share with too many files in use: have the guest drop its caches, echo 2 >/proc/sys/vm/drop_caches, and retry)",
					  d->ops->name, DEVICE_STATE_MAX >> 20)
				: n == -EOPNOTSUPP
				? err_set(e, EOPNOTSUPP,
					  "snapshot: %s (device %d) is a client-served share (--share-remote): its files are the client's, not the VM's, so a VM with one cannot be snapshotted",
					  d->ops->name, i)
				: err_set(e, (int)-n, "snapshot: saving %s (device %d): %s",
					  d->ops->name, i, strerror((int)-n));
			break;
		}
		virtio_mmio_save(&vm->virtio[i], &ms);
		snap_begin(w, SNAP_SEC_DEVICE, (uint32_t)i, d->ops->name, e);
		snap_put_u32(w, d->ops->device_id, e);
		snap_put_u32(w, (uint32_t)sizeof(ms), e);
		snap_put(w, &ms, sizeof(ms), e);
		snap_put_u32(w, (uint32_t)n, e);
		snap_put(w, buf, (size_t)n, e);
		r = snap_end(w, e);
	}
	free(buf);
	return r;
}

static int load_devices(struct vm *vm, const struct snap_view *s, struct err *e)
{
	for (int i = 0; i < vm->nvirtio; i++) {
		const struct snap_section *sec = snap_find(s, SNAP_SEC_DEVICE, (uint32_t)i);
		struct virtio_dev *d = vm->virtio[i].dev;
		struct virtio_mmio_state ms;
		struct snap_cursor c;
		uint32_t n;
		const uint8_t *p;
		int r = 0; /* a device without a restore op has no state to refuse */

		if (!sec)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot: no state for device %d (%s)", i, d->ops->name);
		snap_cursor_init(&c, sec);
		snap_get_u32(&c); /* device id: checked by check_info */
		if (snap_get_u32(&c) != sizeof(ms))
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot: device %d's transport state has the wrong size",
				       i);
		snap_get(&c, &ms, sizeof(ms));
		n = snap_get_u32(&c);
		if (c.bad || n != sec->len - c.off)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot: device %d's state is malformed", i);
		p = sec->data + c.off;
		if (virtio_mmio_restore(&vm->virtio[i], &ms) < 0)
			return err_set(
				e, EINVAL,
				"restore: %s (device %d): transport state refused (queues outside RAM?)",
				d->ops->name, i);
		if (d->ops->restore && (r = d->ops->restore(d, p, n)) == -ENOMEM)
			return err_set(e, ENOMEM, "restore: %s (device %d): out of memory",
				       d->ops->name, i);
		if (r < 0)
			return err_set(
				e, -r,
				"restore: %s (device %d) refused its saved state: not the device it was (other disk, CID or share?)",
				d->ops->name, i);
	}
	return 0;
}

/* ---- disk overlays ---- */

/* Copy the open file IN (named SRC in messages; closed here) into
 * DIRFD/NAME (through NAME.tmp), holes kept (file_copy_sparse). */
static int copy_file(int in, const char *src, int dirfd, const char *name, uint64_t *bytes,
		     struct err *e)
{
	int out, r;

	if ((out = snap_tmp_open(dirfd, name, e)) < 0) {
		close(in);
		return out;
	}
	r = file_copy_sparse(in, out, bytes);
	close(in);
	if (r) {
		snap_tmp_abort(dirfd, name, out);
		return err_set(e, -r, "snapshot: copying overlay %s: %s", src, strerror(-r));
	}
	return snap_tmp_commit(dirfd, name, out, e);
}

static int save_disks(struct vm *vm, int dirfd, uint64_t *bytes, struct err *e)
{
	*bytes = 0;
	for (int i = 0; i < vm->cfg.ndisk; i++) {
		const struct vm_disk_cfg *c = &vm->cfg.disk[i];
		char name[16];
		uint64_t n = 0;
		int in, r;

		if (!c->overlay) {
			if (c->read_only)
				continue; /* the same image serves the restore */
			return err_set(
				e, EINVAL,
				"snapshot: disk %d (%s) is writable without an overlay: give it ,ro or ,overlay=PATH to snapshot the VM",
				i, c->path);
		}
		snprintf(name, sizeof(name), "disk%d", i);
		/* The descriptor from create: a jailed VMM cannot reopen the path. */
		if ((in = fcntl(vm->overlay_fd[i], F_DUPFD_CLOEXEC, 0)) < 0)
			return err_set(e, errno, "snapshot: overlay %s: %s", c->overlay,
				       strerror(errno));
		if ((r = copy_file(in, c->overlay, dirfd, name, &n, e)))
			return r;
		*bytes += n;
	}
	return 0;
}

/*
 * Each overlay becomes the snapshot's copy of it. Everything is checked
 * first (every disk has its copy, and it opens), so a refused restore
 * leaves every overlay as it was (kilnd boots the kernel on them then).
 * The copies are written into the overlays the disks hold open (in
 * place: a jailed VMM cannot reach them by path), and each disk reads
 * its overlay's header only then.
 */
static int restore_disks(struct vm *vm, struct err *e)
{
	int in[VM_MAX_DISKS], r = 0;

	for (int i = 0; i < VM_MAX_DISKS; i++)
		in[i] = -1;
	for (int i = 0; i < vm->cfg.ndisk && !r; i++) {
		const struct vm_disk_cfg *c = &vm->cfg.disk[i];
		int fd = snap_src_take(&vm->src, 0, (enum snap_src_file)(SNAP_SRC_DISK0 + i), e);

		if (fd == -ENOENT && (c->overlay || !c->read_only))
			r = err_set(e, ENOENT,
				    "restore: the snapshot has no overlay for disk %d; it was taken with other disks",
				    i);
		else if (fd >= 0 && !c->overlay)
			r = err_set(e, EINVAL,
				    "restore: disk %d had an overlay when the snapshot was taken: give ,overlay=PATH",
				    i);
		else if (fd < 0 && fd != -ENOENT)
			r = fd;
		in[i] = fd;
	}
	for (int i = 0; i < vm->cfg.ndisk && !r; i++) {
		if (in[i] < 0)
			continue;
		if ((r = snap_copy_over(in[i], vm->overlay_fd[i])) < 0) {
			r = err_set(e, -r,
				    "restore: copying the snapshot's disk%d into overlay %s: %s", i,
				    vm->cfg.disk[i].overlay, strerror(-r));
			break;
		}
		r = virtio_blk_load(vm->disk_dev[i], e);
	}
	for (int i = 0; i < VM_MAX_DISKS; i++)
		if (in[i] >= 0)
			close(in[i]);
	return r;
}

/* ---- dirty tracking for layered snapshots ---- */

/* Start logging writes from now on, against snapshot `id`. A VM that
 * cannot (an embedder's seccomp filter, no memory) only loses layering. */
static void track_start(struct vm *vm, const uint8_t id[SNAP_ID_LEN])
{
	struct err e2;

	if (!vm->tracking) {
		if (guest_mem_track(&vm->mem))
			return;
		if (vm_set_slots(vm, KVM_MEM_LOG_DIRTY_PAGES, &e2)) {
			guest_mem_untrack(&vm->mem);
			return;
		}
		vm->tracking = 1;
	}
	memcpy(vm->base_id, id, SNAP_ID_LEN);
	vm->base_valid = 1;
}

/*
 * The pages written since tracking started or was last taken, into
 * `bits` (zeroed, RAM offsets): KVM's log of each slot (which it clears
 * as it hands it over) and the VMM's own marks. The low slot ends on a
 * whole word: RAM is whole MiB, 256 pages.
 */
static int track_take(struct vm *vm, uint64_t *bits, struct err *e)
{
	struct kvm_dirty_log lo = { .slot = 0, .dirty_bitmap = bits };
	struct kvm_dirty_log hi = { .slot = 1,
				    .dirty_bitmap = bits + vm->mem.low_size / SNAP_PAGE / 64 };

	if (ioctl(vm->vm_fd, KVM_GET_DIRTY_LOG, &lo) < 0 ||
	    (vm->mem.high_size && ioctl(vm->vm_fd, KVM_GET_DIRTY_LOG, &hi) < 0))
		return err_set(e, errno, "snapshot: KVM_GET_DIRTY_LOG: %s", strerror(errno));
	guest_mem_take_marks(&vm->mem, bits);
	return 0;
}

/*
 * Can this snapshot be a layer on the sibling `base`? It must be the
 * snapshot RAM is tracked against, with raw memory, and not too deep.
 * 1 with the layer's parent fields filled in, 0 for a full snapshot.
 */
static int layer_on(struct vm *vm, int parent, const char *name, const char *base,
		    struct snap_layer *l)
{
	uint8_t id[SNAP_ID_LEN];
	struct snap_layer bl;
	struct err e2;
	int bfd, r, ok = 0;

	if (!base || !vm->tracking || !vm->base_valid || !snap_layer_name_valid(base) ||
	    strcmp(base, name) == 0)
		return 0;
	bfd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return 0;
	if (snap_id_read(bfd, id, &e2) || memcmp(id, vm->base_id, SNAP_ID_LEN) ||
	    faccessat(bfd, SNAP_MEM_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		goto out;
	r = snap_layer_read(bfd, vm->mem.size, &bl, &e2);
	if (r == 0) {
		l->depth = bl.depth + 1;
		snap_layer_free(&bl);
	} else if (r == -ENOENT) {
		l->depth = 1;
	} else {
		goto out;
	}
	if (l->depth > SNAP_LAYER_DEPTH_MAX)
		goto out;
	memcpy(l->parent_id, id, SNAP_ID_LEN);
	snprintf(l->parent, sizeof(l->parent), "%s", base);
	ok = 1;
out:
	close(bfd);
	return ok;
}

/* RAM as a layer: the pages in l->bits, then the layer file. */
static int save_layer(struct vm *vm, int dfd, const struct snap_layer *l, struct snap_mem_stats *ms,
		      struct err *e)
{
	int fd = snap_tmp_open(dfd, SNAP_MEM_FILE, e), r;

	if (fd < 0)
		return fd;
	if ((r = snap_mem_write_pages(fd, vm->mem.host, vm->mem.size, l->bits, ms, e))) {
		snap_tmp_abort(dfd, SNAP_MEM_FILE, fd);
		return r;
	}
	if ((r = snap_tmp_commit(dfd, SNAP_MEM_FILE, fd, e)))
		return r;
	return snap_layer_write(dfd, l, e);
}

/* ---- snapshot ---- */

/* Split an absolute DIR into its parent (opened) and last component. */
static int open_parent(const char *dir, char *name, size_t n, struct err *e)
{
	char parent[4096];
	char *slash;
	int fd;
	size_t len = strlen(dir);

	if (dir[0] != '/' || len >= sizeof(parent))
		return err_set(e, EINVAL, "snapshot: '%s' must be an absolute path", dir);
	memcpy(parent, dir, len + 1);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = 0;
	slash = strrchr(parent, '/');
	if (!slash[1] || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0 ||
	    strlen(slash + 1) >= n)
		return err_set(e, EINVAL, "snapshot: '%s' does not end in a directory name", dir);
	snprintf(name, n, "%s", slash + 1);
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "snapshot: %s: %s", parent, strerror(errno));
	return fd;
}

static int write_snapshot(struct vm *vm, int dfd, int compress, const uint8_t id[SNAP_ID_LEN],
			  const struct snap_layer *layer, struct vm_snapshot_info *info,
			  struct err *e)
{
	struct snap_writer w = { 0 };
	struct snap_compat who;
	struct snap_mem_stats ms = { 0 };
	const uint8_t *bytes;
	size_t len;
	int r;

	if ((r = snap_kvm_compat(vm, &who, e)) || (r = snap_writer_init(&w, &who, e)))
		goto out;
	if ((r = save_info(vm, &w, e)) || (r = snap_id_put(&w, id, e)))
		goto out;
	for (int i = 0; i < vm->ncpus; i++)
		if ((r = snap_kvm_save_vcpu(vm, &vm->vcpu[i], &w, e)))
			goto out;
	/* Devices before the disks: a disk's save flushes its overlay. */
	if ((r = snap_kvm_save_vm(vm, &w, e)) || (r = save_serial(vm, &w, e)) ||
	    (r = save_devices(vm, &w, e)))
		goto out;
	if ((r = snap_finish(&w, &bytes, &len, e)) ||
	    (r = snap_write_atomic(dfd, SNAP_STATE_FILE, bytes, len, e)))
		goto out;
	info->state_bytes = len;
	/* Before the memory: reading RAM for it would make every page look touched. */
	if (!compress && (r = vm_workingset_save(vm, dfd, e)))
		goto out;
	if (layer) {
		r = save_layer(vm, dfd, layer, &ms, e);
	} else {
		vm_workingset_stale(vm);
		r = snap_mem_save(dfd, compress ? SNAP_MEMZ_FILE : SNAP_MEM_FILE, vm->mem.host,
				  vm->mem.size, compress ? 1 : 0, &ms, e);
	}
	if (r)
		goto out;
	info->memory_bytes = vm->mem.size;
	info->memory_stored_bytes = ms.stored;
	if (layer)
		info->dirty_pages = ms.pages; /* every marked page, zero ones included */
	r = save_disks(vm, dfd, &info->disk_bytes, e);
out:
	snap_writer_free(&w);
	return r;
}

/* Paused: take the written pages, write the snapshot (a layer on `base`
 * when it can be), commit it, and track against it from here on. */
static int snapshot_paused(struct vm *vm, int parent, const char *name, int compress,
			   const char *base, struct vm_snapshot_info *info, struct err *e)
{
	struct snap_layer l = { 0 };
	uint8_t id[SNAP_ID_LEN];
	int layered = 0, dfd, r;

	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return err_set(e, errno ? errno : EIO, "snapshot: no random id: %s",
			       strerror(errno ? errno : EIO));
	if (vm->tracking) {
		if ((r = snap_layer_init(&l, vm->mem.size)))
			return err_set(e, -r, "snapshot: %s", strerror(-r));
		/* Taken whatever comes next: the log restarts at this snapshot. */
		if ((r = track_take(vm, l.bits, e))) {
			vm->base_valid = 0;
			snap_layer_free(&l);
			return r;
		}
		l.mem_size = vm->mem.size;
		layered = !compress && layer_on(vm, parent, name, base, &l);
	}
	dfd = snap_dir_begin(parent, name, e);
	if (dfd < 0) {
		r = dfd;
	} else if ((r = write_snapshot(vm, dfd, compress, id, layered ? &l : NULL, info, e))) {
		snap_dir_abort(parent, name, dfd);
	} else {
		r = snap_dir_commit(parent, name, dfd, e);
	}
	if (r == 0 && layered)
		snprintf(info->base, sizeof(info->base), "%s", l.parent);
	snap_layer_free(&l);
	if (r)
		vm->base_valid = 0; /* the log was spent on a snapshot that does not exist */
	else
		track_start(vm, id);
	return r;
}

int vm_snapshot(struct vm *vm, const char *dir, int compress, const char *base,
		struct vm_snapshot_info *info, struct err *e)
{
	double t0 = mono_ms_f();
	char name[256];
	int was_paused, parent, r;

	memset(info, 0, sizeof(*info));
	if ((r = vm_loaded(vm, "snapshot", e)))
		return r;
	if (vm->cfg.hugepages)
		return err_set(e, ENOTSUP,
			       "snapshot: hugepage-backed guests cannot be snapshotted yet");
	if ((parent = open_parent(dir, name, sizeof(name), e)) < 0)
		return parent;
	was_paused = vm_is_paused(vm);
	if (!was_paused && (r = vm_pause(vm, e))) {
		close(parent);
		return r;
	}
	r = snapshot_paused(vm, parent, name, compress, base, info, e);
	close(parent);
	if (!was_paused) {
		struct err e2;

		if (vm_resume(vm, &e2) && !r)
			r = err_set(e, EIO, "snapshot written, but %s", e2.msg);
	}
	info->ms = mono_ms_f() - t0;
	return r;
}

/* ---- restore ---- */

int vm_restore_open(struct vm *vm, struct err *e)
{
	int r;

	if (vm->cfg.hugepages)
		return err_set(
			e, ENOTSUP,
			"--restore: hugepage-backed RAM cannot be restored yet; drop --hugepages");
	if ((r = snap_src_open(&vm->src, vm->cfg.restore_dir, e)) < 0)
		return r;
	vm_workingset_open_pagemap(vm);
	return 0;
}

/* The state file, read and checked against this host and this VM's shape. */
static int restore_state(struct vm *vm, struct snap_view *view, uint8_t **buf, struct err *e)
{
	struct snap_compat host;
	size_t len;
	int r;

	*buf = NULL;
	if ((r = snap_kvm_compat(vm, &host, e)))
		return r;
	if ((r = snap_read_fd(snap_src_take(&vm->src, 0, SNAP_SRC_STATE, e), SNAP_STATE_FILE,
			      SNAP_STATE_MAX, buf, &len, e)))
		return r;
	if ((r = snap_parse(*buf, len, &host, view, e)) || (r = check_info(vm, view, e))) {
		snap_view_free(view);
		free(*buf);
		*buf = NULL;
		return r;
	}
	return 0;
}

/* The base's RAM: mapped MAP_PRIVATE from `memory` (lazy; every restore
 * of it shares one page-cache copy; *lazy set) or inflated from `memory.z`.
 * `raw_only`: under layers, which are only ever written on raw memory. */
static int restore_base(struct vm *vm, int dir, int raw_only, int *lazy, struct err *e)
{
	void *at;
	int fd = snap_src_take(&vm->src, dir, SNAP_SRC_MEM, e), r;

	if (fd == -ENOENT && !raw_only) {
		fd = snap_src_take(&vm->src, dir, SNAP_SRC_MEMZ, e);
		if (fd == -ENOENT)
			return err_set(e, ENOENT,
				       "restore: the snapshot has no memory file (%s or %s)",
				       SNAP_MEM_FILE, SNAP_MEMZ_FILE);
		if (fd < 0)
			return fd;
		r = snap_mem_read_z(fd, vm->mem.host, vm->mem.size, e);
		close(fd);
		return r;
	}
	if ((fd = snap_mem_check_raw(fd, SNAP_MEM_FILE, vm->mem.size, e)) < 0)
		return fd;
	r = snap_mem_map_raw(fd, vm->mem.size, vm->mem.host, &at, e);
	close(fd);
	*lazy = r == 0;
	return r;
}

/* The snapshot a layer names, beside the one it is in: its id must be
 * the one the layer recorded. Its index in vm->src, or -errno. */
static int open_layer_parent(struct vm *vm, const struct snap_layer *l, struct err *e)
{
	uint8_t id[SNAP_ID_LEN];
	int dir = snap_src_sibling(&vm->src, l->parent, e), r;

	if (dir < 0)
		return dir;
	if ((r = snap_id_read_fd(snap_src_take(&vm->src, dir, SNAP_SRC_STATE, e), id, e)) == 0 &&
	    memcmp(id, l->parent_id, SNAP_ID_LEN))
		r = err_set(e, -SNAP_ERR_MALFORMED,
			    "restore: layered on snapshot '%s', but that is another snapshot now (taken again since)",
			    l->parent);
	return r ? r : dir;
}

/*
 * RAM of the snapshot: when it is a layer, follow its parents down to
 * the full snapshot, restore that, then map (or copy) each layer's pages
 * over it, oldest first. *lazy: the full snapshot's RAM was mapped, not inflated.
 */
static int restore_ram(struct vm *vm, int *lazy, struct err *e)
{
	struct snap_layer l[SNAP_LAYER_DEPTH_MAX + 1] = { 0 };
	int dir[SNAP_LAYER_DEPTH_MAX + 1], n = 0, r;
	/* Layers' runs are mapped over the base like it (one page-cache copy
	 * for every fork), copied past this many mappings. */
	unsigned budget = SNAP_LAYER_MAP_RUNS_MAX;

	dir[0] = 0;
	for (;;) {
		int fd = snap_src_take(&vm->src, dir[n], SNAP_SRC_LAYER, e);

		r = fd == -ENOENT ? -ENOENT : snap_layer_read_fd(fd, vm->mem.size, &l[n], e);
		if (r == -ENOENT)
			break;
		if (r)
			goto out;
		/* Depths fall strictly toward the full snapshot (a deleted
		 * parent folded into its child lowers the child's by more
		 * than one): no chain is longer than its top's depth. */
		if (n == SNAP_LAYER_DEPTH_MAX || (n && l[n].depth >= l[n - 1].depth)) {
			r = err_set(e, -SNAP_ERR_MALFORMED,
				    "restore: snapshot '%s' does not fit the layers above it",
				    n ? l[n - 1].parent : ".");
			goto out;
		}
		if ((r = open_layer_parent(vm, &l[n], e)) < 0)
			goto out;
		dir[++n] = r;
	}
	if ((r = restore_base(vm, dir[n], n > 0, lazy, e)))
		goto out;
	for (int i = n - 1; i >= 0 && r == 0; i--) {
		int fd = snap_src_take(&vm->src, dir[i], SNAP_SRC_MEM, e);

		if (fd < 0) {
			r = fd;
			break;
		}
		r = snap_layer_map(fd, &l[i], vm->mem.host, &budget, e);
		close(fd);
	}
out:
	for (int i = 0; i <= SNAP_LAYER_DEPTH_MAX; i++)
		snap_layer_free(&l[i]);
	return r;
}

static int restore_memory(struct vm *vm, const struct snap_view *view, struct err *e)
{
	uint8_t id[SNAP_ID_LEN];
	int lazy = 0, r;

	if ((r = snap_id_get(view, id, e)) || (r = restore_ram(vm, &lazy, e)))
		return r;
	vm_workingset_restored(vm, snap_src_take(&vm->src, 0, SNAP_SRC_WORKINGSET, e), lazy);
	/* The next snapshot can be a layer on this one. */
	track_start(vm, id);
	return 0;
}

static int restore_cpus_devices(struct vm *vm, const struct snap_view *view, struct err *e)
{
	int r;

	if ((r = snap_kvm_load_vm(vm, view, e)))
		return r;
	for (int i = 0; i < vm->ncpus; i++)
		if ((r = snap_kvm_load_vcpu(vm, &vm->vcpu[i], view, e)))
			return r;
	if ((r = load_serial(vm, view, e)))
		return r;
	return load_devices(vm, view, e);
}

int vm_restore_read(struct vm *vm, struct err *e)
{
	struct snap_view view = { 0 };
	uint8_t *state = NULL;
	int r;

	/* The whole VM is checked against the state (checksum, version, CPU,
	 * RAM, vCPUs, devices) before the overlays are touched. */
	if ((r = restore_state(vm, &view, &state, e)) || (r = restore_disks(vm, e)))
		goto out;
	timeline_mark(&vm->tl, "restore_state_disks");
	if ((r = restore_memory(vm, &view, e)))
		goto out;
	timeline_mark(&vm->tl, "restore_memory");
	if ((r = restore_cpus_devices(vm, &view, e)))
		goto out;
	timeline_mark(&vm->tl, "restored");
out:
	snap_view_free(&view);
	free(state);
	snap_src_close(&vm->src);
	return r;
}

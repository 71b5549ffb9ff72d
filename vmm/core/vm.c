/* VM creation, the run/stop protocol and teardown. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "vmm/boot/cpu_boot.h"
#include "vmm/core/kvm.h"
#include "vmm/boot/layout.h"
#include "vmm/boot/mptable.h"
#include "devices/blk/virtio_blk.h"
#include "devices/fs/virtio_fs.h"
#include "devices/net/virtio_net.h"
#include "devices/vsock/virtio_vsock.h"
#include "devices/rng/virtio_rng.h"
#include "vmm/snapshot/snapshot_kvm.h"
#include "vmm/snapshot/vm_snapshot.h"
#include "vmm/core/vm_internal.h"
#include "lib/base/mono.h"
#include "lib/base/thread_start.h"

/* Three pages below the IOAPIC that Intel VMX needs for its real-mode TSS
 * and identity map; harmless on AMD. */
#define TSS_ADDR 0xfffbd000ULL
#define IDENTITY_MAP_ADDR 0xfffbc000ULL
#define CPUID_MAX_ENTRIES 256
#define VERBOSE_BUDGET 64

struct file_map {
	const uint8_t *data;
	size_t len;
	int fd; /* kept open: load_guest reads the bytes that go into guest RAM */
};

/* Map a file read-only, for parsing; its descriptor stays open for reading. */
static int map_file(const char *path, const char *what, struct file_map *m, struct err *e)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return err_set(e, errno, "%s '%s': %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
			       "%s '%s': not a regular file", what, path);
	}
	if (st.st_size == 0) {
		close(fd);
		return err_set(e, ENOEXEC, "%s '%s': file is empty", what, path);
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		close(fd);
		return err_set(e, err, "%s '%s': %s", what, path, strerror(err));
	}
	m->data = p;
	m->len = (size_t)st.st_size;
	m->fd = fd;
	return 0;
}

/* Name the file in a format error, so the user knows which input was wrong. */
static void prefix_kernel(struct err *e, const char *path)
{
	char msg[2 * sizeof(e->msg)];

	if (!e)
		return;
	snprintf(msg, sizeof(msg), "kernel '%.200s': %s", path, e->msg);
	memcpy(e->msg, msg, sizeof(e->msg) - 1);
	e->msg[sizeof(e->msg) - 1] = '\0';
}

static void unmap_file(struct file_map *m)
{
	if (m->data)
		munmap((void *)m->data, m->len);
	if (m->fd >= 0)
		close(m->fd);
	m->data = NULL;
	m->fd = -1;
}

void vm_stop(struct vm *vm, enum vm_exit exit, const char *fmt, ...)
{
	va_list ap;
	uint64_t one = 1;

	pthread_mutex_lock(&vm->lock);
	if (vm->stopping) {
		pthread_mutex_unlock(&vm->lock);
		return;
	}
	vm->result.exit = exit;
	va_start(ap, fmt);
	vsnprintf(vm->result.msg, sizeof(vm->result.msg), fmt, ap);
	va_end(ap);
	__atomic_store_n(&vm->stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->pause_cond); /* parked vCPUs and a waiting pauser */
	timeline_mark(&vm->tl, "vm_exit");
	/* immediate_exit first, then the signal: a vCPU between its check of
	 * `stopping` and KVM_RUN returns at once instead of running on. */
	for (int i = 0; i < vm->ncpus; i++) {
		if (vm->vcpu[i].run)
			vm->vcpu[i].run->immediate_exit = 1;
	}
	for (int i = 0; i < vm->ncpus; i++) {
		if (vm->vcpu[i].started && !pthread_equal(vm->vcpu[i].thread, pthread_self()))
			pthread_kill(vm->vcpu[i].thread, vm->cfg.kick_signal);
	}
	pthread_mutex_unlock(&vm->lock);
	if (write(vm->stop_efd, &one, sizeof(one)) < 0) {
		/* eventfd counter cannot overflow from one write; nothing to do */
	}
}

static void irq_line(void *ctx, int gsi, int level)
{
	struct vm *vm = ctx;
	struct kvm_irq_level il = { .irq = (uint32_t)gsi, .level = (uint32_t)level };

	ioctl(vm->vm_fd, KVM_IRQ_LINE, &il);
}

static void serial_irq(void *ctx, int level)
{
	irq_line(ctx, SERIAL_COM1_IRQ, level);
}

static void kbd_reset(void *ctx)
{
	vm_stop(ctx, VM_EXIT_RESET, "guest reset through the i8042 controller");
}

static void ignore_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	(void)opaque;
	(void)off;
	if (!is_write)
		memset(data, 0xff, size);
}

/* Without a handler the kick would kill the process (SIG_DFL) or never
 * interrupt KVM_RUN (SIG_IGN): a pause or stop would hang. */
static int check_kick(int sig, struct err *e)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) < 0)
		return err_set(e, EINVAL, "kick signal %d: not a signal", sig);
	if (!(old.sa_flags & SA_SIGINFO) &&
	    (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN))
		return err_set(e, EINVAL,
			       "kick signal %d has no handler: install one (a no-op is enough) or call "
			       "kiln_kick_signal_install(%d)",
			       sig, sig);
	return 0;
}

/* Checks that need no KVM, so bad arguments fail fast and the same way
 * on every host. */
static int check_config(const struct vm_config *c, int max_vcpus, struct err *e)
{
	struct sysinfo si;
	uint64_t host_mib = 0;

	if (!c->kernel && !c->restore_dir)
		return err_set(e, EINVAL, "no kernel given: pass --kernel PATH");
	if (c->mem_mib < VM_MIN_MEM_MIB)
		return err_set(e, EINVAL, "--mem %llu: guests need at least %d MiB",
			       (unsigned long long)c->mem_mib, VM_MIN_MEM_MIB);
	if (sysinfo(&si) == 0)
		host_mib = (uint64_t)si.totalram * si.mem_unit >> 20;
	if (host_mib && c->mem_mib > host_mib)
		return err_set(e, EINVAL, "--mem %llu: more than this host's %llu MiB of RAM",
			       (unsigned long long)c->mem_mib, (unsigned long long)host_mib);
	if (c->hugepages && c->mem_mib % 2)
		return err_set(e, EINVAL,
			       "--mem %llu: hugepage-backed RAM must be a multiple of 2 MiB",
			       (unsigned long long)c->mem_mib);
	if (c->cpus < 1 || c->cpus > max_vcpus)
		return err_set(e, EINVAL, "--cpus %d: must be between 1 and %d", c->cpus,
			       max_vcpus);
	return check_kick(c->kick_signal, e);
}

int vm_set_slots(struct vm *vm, uint32_t flags, struct err *e)
{
	struct kvm_userspace_memory_region lo = { 0 }, hi = { 0 };

	lo.slot = 0;
	lo.flags = flags;
	lo.guest_phys_addr = 0;
	lo.memory_size = vm->mem.low_size;
	lo.userspace_addr = (uintptr_t)vm->mem.host;
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &lo) < 0)
		return err_set(e, errno, "KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
	if (vm->mem.high_size) {
		hi.slot = 1;
		hi.flags = flags;
		hi.guest_phys_addr = GUEST_MEM_HIGH_START;
		hi.memory_size = vm->mem.high_size;
		hi.userspace_addr = (uintptr_t)(vm->mem.host + vm->mem.low_size);
		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &hi) < 0)
			return err_set(e, errno, "KVM_SET_USER_MEMORY_REGION (above 4 GiB): %s",
				       strerror(errno));
	}
	return 0;
}

static int setup_memory(struct vm *vm, struct err *e)
{
	int err = guest_mem_map(&vm->mem, vm->cfg.mem_mib << 20, vm->cfg.hugepages);

	if (err == -ENOMEM && vm->cfg.hugepages)
		return err_set(
			e, ENOMEM,
			"cannot get %llu MiB of hugepages: reserve them (sysctl vm.nr_hugepages) or drop --hugepages",
			(unsigned long long)vm->cfg.mem_mib);
	if (err)
		return err_set(e, -err, "mapping %llu MiB of guest RAM: %s",
			       (unsigned long long)vm->cfg.mem_mib, strerror(-err));
	/* A restored VM logs its writes from its first run on (its next
	 * snapshot can be a layer on this one, vm_snapshot.c track_start): its
	 * slots are made with the log on rather than set again after. */
	if (vm->restored && guest_mem_track(&vm->mem) == 0) {
		if ((err = vm_set_slots(vm, KVM_MEM_LOG_DIRTY_PAGES, e)))
			return err;
		vm->tracking = 1;
		return 0;
	}
	return vm_set_slots(vm, 0, e);
}

/* The VM's fixed addresses and in-kernel chips: the same for every VM. */
static int setup_chips(int vm_fd, struct err *e)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };

	if (ioctl(vm_fd, KVM_SET_TSS_ADDR, TSS_ADDR) < 0 ||
	    ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &(uint64_t){ IDENTITY_MAP_ADDR }) < 0)
		return err_set(e, errno, "KVM_SET_TSS_ADDR: %s", strerror(errno));
	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return err_set(e, errno, "KVM_CREATE_IRQCHIP: %s", strerror(errno));
	if (ioctl(vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		return err_set(e, errno, "KVM_CREATE_PIT2: %s", strerror(errno));
	return 0;
}

static int setup_devices(struct vm *vm, struct err *e)
{
	int err = 0;

	serial_init(&vm->serial, vm->cfg.console_out_fd, serial_irq, vm);
	vm->kbd = (struct i8042){ .reset = kbd_reset, .ctx = vm };
	boot_timer_init(&vm->bt, &vm->tl);
	err |= io_bus_add(&vm->pio, SERIAL_COM1, 8, serial_io, &vm->serial);
	err |= io_bus_add(&vm->pio, I8042_DATA_PORT, 1, i8042_data_io, &vm->kbd);
	err |= io_bus_add(&vm->pio, I8042_CMD_PORT, 1, i8042_cmd_io, &vm->kbd);
	err |= io_bus_add(&vm->pio, BOOT_TIMER_PORT, BOOT_TIMER_LEN, boot_timer_io, &vm->bt);
	/* POST code / I/O delay port: Linux writes it; nothing listens. */
	err |= io_bus_add(&vm->pio, 0x80, 1, ignore_io, NULL);
	if (err)
		return err_set(e, EINVAL, "internal error: overlapping device ports");
	return 0;
}

/* The device thread's first step (vm_config.thread_enter). */
static int device_enter(void *ctx)
{
	struct vm *vm = ctx;
	int err = vm->cfg.thread_enter(vm->cfg.thread_ctx, VM_THREAD_DEVICE);

	if (err)
		vm_stop(vm, VM_EXIT_FAILURE,
			"the device thread cannot install its seccomp filter: %s", strerror(-err));
	return err;
}

static int ensure_loop(struct vm *vm, struct err *e)
{
	int err;

	if (!vm->loop && (err = event_loop_create(&vm->loop)))
		return err_set(e, -err, "creating the device thread: %s", strerror(-err));
	if (vm->cfg.thread_enter)
		event_loop_set_enter(vm->loop, device_enter, vm);
	return 0;
}

/*
 * Give `dev` the next virtio-mmio window and interrupt, announce it on the
 * command line, and route its notifications and interrupts through KVM.
 * Takes ownership of `dev` (destroyed with the VM).
 */
/* A device's log line (virtio_dev_log) to the VM's log fd. */
static void device_log(void *ctx, const char *line)
{
	struct vm *vm = ctx;

	dprintf(vm->cfg.log_fd, "kiln-vmm: %s\n", line);
}

static int add_virtio(struct vm *vm, struct virtio_dev *dev, struct err *e)
{
	struct virtio_mmio *m;
	int err;

	if (vm->nvirtio == VM_VIRTIO_MAX) {
		dev->ops->destroy(dev);
		return err_set(e, ENOSPC, "too many devices: kiln-vmm supports %d", VM_VIRTIO_MAX);
	}
	if ((err = ensure_loop(vm, e))) {
		dev->ops->destroy(dev);
		return err;
	}
	if (vm->cfg.device_log && vm->cfg.log_fd >= 0) {
		dev->log = device_log;
		dev->log_ctx = vm;
	}
	m = &vm->virtio[vm->nvirtio++];
	virtio_mmio_init(m, dev, &vm->mem,
			 VM_VIRTIO_BASE + (uint64_t)(vm->nvirtio - 1) * VIRTIO_MMIO_SIZE,
			 VM_VIRTIO_FIRST_GSI + (uint32_t)vm->nvirtio - 1);
	if (io_bus_add(&vm->mmio, m->base, VIRTIO_MMIO_SIZE, virtio_mmio_io, m))
		return err_set(e, EEXIST, "internal error: overlapping virtio-mmio windows");
	if ((err = virtio_mmio_attach_kvm(m, vm->vm_fd, vm->loop)))
		return err_set(e, -err, "wiring %s into KVM (ioeventfd/irqfd): %s", dev->ops->name,
			       strerror(-err));
	cmdline_add(vm->cmdline, "virtio_mmio.device=4K@%#llx:%u", (unsigned long long)m->base,
		    m->gsi);
	return 0;
}

/* The vsock device's milestones: when the host first asked for the agent, and when it first answered. */
static void vsock_mark(void *ctx, const char *name)
{
	timeline_mark(ctx, name);
}

static int setup_virtio(struct vm *vm, struct err *e)
{
	struct virtio_dev *d;
	int err;

	if (vm->cfg.rng) {
		if ((err = virtio_rng_create(&d, e)) || (err = add_virtio(vm, d, e)))
			return err;
	}
	for (int i = 0; i < vm->cfg.ndisk; i++) {
		const struct vm_disk_cfg *c = &vm->cfg.disk[i];
		/* An overlay's header is bytes an earlier (jailed) VMM wrote:
		 * vm_load reads it, in kiln-vmm's jail; a restore's once the
		 * snapshot's copy is in it. */
		struct virtio_blk_params p = {
			.path = c->path,
			.overlay = c->overlay,
			.read_only = c->read_only,
			.create_overlay = 1,
			.serial = c->serial,
			.overlay_size = c->size,
			.defer_overlay = 1,
		};

		if ((err = virtio_blk_create(&p, &d, e)) || (err = add_virtio(vm, d, e)))
			return err;
		vm->disk_dev[i] = d;
		vm->needs_load |= c->overlay != NULL;
		/* After the device made a missing overlay; read-write for a
		 * restore to copy the snapshot's into. */
		if (c->overlay &&
		    (vm->overlay_fd[i] = open(c->overlay,
					      (vm->restored ? O_RDWR : O_RDONLY) | O_CLOEXEC)) < 0)
			return err_set(e, errno, "disk %d: reopening overlay %s: %s", i, c->overlay,
				       strerror(errno));
	}
	/* Without an initramfs the first disk is the root filesystem. */
	if (vm->cfg.ndisk && !vm->cfg.initrd)
		cmdline_add(vm->cmdline, "root=/dev/vda %s",
			    vm->cfg.disk[0].read_only ? "ro" : "rw");
	for (int i = 0; i < vm->cfg.nshare; i++) {
		const struct vm_share_cfg *c = &vm->cfg.share[i];
		struct virtio_fs_config fc = { .dir = c->host_dir,
					       .dir_fd = c->host_fd,
					       .remote = c->remote,
					       .remote_timeout_ms = vm->cfg.share_remote_timeout_ms,
					       .tag = c->tag,
					       .read_only = c->read_only };

		if ((err = virtio_fs_create(&fc, &d, e)) || (err = add_virtio(vm, d, e)))
			return err;
	}
	if (vm->cfg.vsock.uds) {
		struct virtio_vsock_config vc = { .guest_cid = vm->cfg.vsock.cid,
						  .uds_path = vm->cfg.vsock.uds,
						  .mark = vsock_mark,
						  .mark_ctx = &vm->tl };

		if ((err = ensure_loop(vm, e)) ||
		    (err = virtio_vsock_create(&vc, vm->loop, &d, e)) ||
		    (err = add_virtio(vm, d, e)))
			return err;
	}
	for (int i = 0; i < vm->cfg.nnet; i++) {
		if ((err = ensure_loop(vm, e)) ||
		    (err = vm_net_create(vm, &vm->cfg.net[i], &d, e)) ||
		    (err = add_virtio(vm, d, e)))
			return err;
	}
	return 0;
}

static int load_guest(struct vm *vm, const struct file_map *k, const struct file_map *rd,
		      struct err *e)
{
	struct boot_spec spec = { 0 };
	uint8_t mp[4096];
	int n, err;

	spec.kernel = k->data;
	spec.kernel_len = k->len;
	spec.initrd = rd->data;
	spec.initrd_len = rd->len;
	spec.cmdline = vm->cmdline->buf;
	/*
	 * Read from the files into guest RAM (pread), not copied from their
	 * mappings, which are only parsed: no page fault per page of the
	 * files (guest_mem_read_file). Not mapped into guest RAM either: with
	 * PVH segments mapped MAP_PRIVATE from the image, guests in the nested
	 * harness hit soft lockups in the outer kernel's KVM (as they did with
	 * 2 MiB-aligned guest RAM; QEMU TCG's nested paging is the suspect).
	 */
	spec.kernel_fd = k->fd;
	spec.initrd_fd = rd->fd;
	if ((err = linux_load(&vm->mem, &spec, &vm->entry, e)))
		return err;

	n = mptable_build(mp, sizeof(mp), LAYOUT_EBDA_START, vm->ncpus, (uint32_t)LAYOUT_LAPIC,
			  (uint32_t)LAYOUT_IOAPIC);
	if (n < 0 || guest_mem_write(&vm->mem, LAYOUT_EBDA_START, mp, (uint64_t)n))
		return err_set(e, EINVAL, "cannot build the MP table for %d CPUs", vm->ncpus);
	if (cpu_boot_tables(&vm->mem, vm->entry.kind))
		return err_set(e, EFAULT, "cannot write boot page tables");
	return 0;
}

/* KVM's CPUID table: what every vCPU starts from (and a snapshot's host record). */
static int get_cpuid(int kvm_fd, struct kvm_cpuid2 **out, struct err *e)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + CPUID_MAX_ENTRIES * sizeof(c->entries[0]));

	*out = c;
	if (!c)
		return err_set(e, ENOMEM, "out of memory");
	c->nent = CPUID_MAX_ENTRIES;
	if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0)
		return err_set(e, errno, "KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
	return 0;
}

int vm_kvm_prepare(struct vm_kvm_prep **out, struct err *e)
{
	struct vm_kvm_prep *p = calloc(1, sizeof(*p));
	int err;

	*out = NULL;
	if (!p)
		return err_set(e, ENOMEM, "out of memory");
	p->vm_fd = -1;
	if ((err = kvm_open(e)) < 0) {
		free(p);
		return err;
	}
	p->kvm_fd = err;
	if ((err = get_cpuid(p->kvm_fd, &p->cpuid, e)))
		goto fail;
	p->vm_fd = ioctl(p->kvm_fd, KVM_CREATE_VM, 0);
	if (p->vm_fd < 0) {
		err = err_set(e, errno, "KVM_CREATE_VM: %s", strerror(errno));
		goto fail;
	}
	fcntl(p->vm_fd, F_SETFD, FD_CLOEXEC);
	if ((err = setup_chips(p->vm_fd, e)))
		goto fail;
	*out = p;
	return 0;
fail:
	vm_kvm_prep_free(p);
	return err;
}

/* The VM takes p's descriptors and CPUID; p itself is freed. */
static void take_prep(struct vm *vm, struct vm_kvm_prep *p)
{
	vm->kvm_fd = p->kvm_fd;
	vm->vm_fd = p->vm_fd;
	vm->cpuid = p->cpuid;
	free(p);
	vm->cfg.prep = NULL;
}

void vm_kvm_prep_free(struct vm_kvm_prep *p)
{
	if (!p)
		return;
	if (p->vm_fd >= 0)
		close(p->vm_fd);
	if (p->kvm_fd >= 0)
		close(p->kvm_fd);
	free(p->cpuid);
	free(p);
}

int vm_create(const struct vm_config *cfg, struct vm **out, struct err *e)
{
	struct file_map k = { .fd = -1 }, rd = { .fd = -1 };
	struct vm *vm;
	int err, max_vcpus;

	*out = NULL;
	vm = calloc(1, sizeof(*vm));
	if (!vm) {
		vm_kvm_prep_free(cfg->prep); /* taken whatever happens */
		return err_set(e, ENOMEM, "out of memory");
	}
	vm->cfg = *cfg;
	vm->kvm_fd = vm->vm_fd = vm->stop_efd = -1;
	/* Taken whatever happens next: vm_destroy closes what it holds. */
	if (cfg->prep) {
		take_prep(vm, cfg->prep);
		vm->prepared = 1;
	}
	if (!vm->cfg.kick_signal)
		vm->cfg.kick_signal = VM_KICK_SIGNAL_DEFAULT;
	vm->src.updir = -1;
	vm_workingset_init(&vm->workingset);
	for (int i = 0; i < VM_MAX_DISKS; i++)
		vm->overlay_fd[i] = -1;
	vm->verbose_budget = VERBOSE_BUDGET;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->pause_cond, NULL);
	timeline_init(&vm->tl, cfg->t0_ns ? cfg->t0_ns : mono_ns());

	if ((err = check_config(&vm->cfg, VM_MAX_CPUS, e)))
		goto fail;
	if (!(vm->cmdline = malloc(sizeof(*vm->cmdline)))) {
		err = err_set(e, ENOMEM, "kernel command line: out of memory");
		goto fail;
	}
	cmdline_init(vm->cmdline);
	cmdline_defaults(vm->cmdline, cfg->console_out_fd >= 0);
	if (cfg->restore_dir) {
		vm->restored = vm->needs_load = 1;
		timeline_mark(&vm->tl, "restore_start");
		/* Opened now, read by vm_load (in kiln-vmm's jail). */
		if ((err = vm_restore_open(vm, e)) < 0)
			goto fail;
	} else {
		timeline_mark(&vm->tl, "boot_start");
		if ((err = map_file(cfg->kernel, "kernel", &k, e)))
			goto fail;
		if ((err = linux_check(k.data, k.len, e))) {
			prefix_kernel(e, cfg->kernel);
			goto fail;
		}
		if (cfg->initrd && (err = map_file(cfg->initrd, "initrd", &rd, e)))
			goto fail;
	}

	if (!vm->prepared) {
		struct vm_kvm_prep *p;

		if ((err = vm_kvm_prepare(&p, e)))
			goto fail;
		take_prep(vm, p);
	}
	max_vcpus = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (max_vcpus > 0 && cfg->cpus > max_vcpus) {
		err = err_set(e, EINVAL, "--cpus %d: this host's KVM allows at most %d", cfg->cpus,
			      max_vcpus);
		goto fail;
	}
	vm->ncpus = cfg->cpus;
	timeline_mark(&vm->tl, vm->restored ? "restore_kvm_open" : "boot_kvm_open");
	vm->stop_efd = eventfd(0, EFD_CLOEXEC);
	if (vm->stop_efd < 0) {
		err = err_set(e, errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	if ((err = setup_devices(vm, e)) || (err = setup_memory(vm, e)) ||
	    (err = setup_virtio(vm, e)))
		goto fail;
	/* The user's parameters come last, so they can override kiln's. */
	if (cfg->cmdline && *cfg->cmdline)
		cmdline_add(vm->cmdline, "%s", cfg->cmdline);
	if (vm->cmdline->overflow) {
		err = err_set(e, E2BIG, "kernel command line longer than %d bytes",
			      CMDLINE_CAP - 1);
		goto fail;
	}
	timeline_mark(&vm->tl, vm->restored ? "restore_devices_made" : "boot_devices_made");
	/* A restore's RAM is the snapshot's: vm_load maps it. */
	if (!vm->restored) {
		if ((err = load_guest(vm, &k, &rd, e)))
			goto fail;
		timeline_mark(&vm->tl, "boot_guest_loaded");
	}
	unmap_file(&k);
	unmap_file(&rd);
	/* The kernel has its command line (a restored guest parsed it long
	 * ago): 4 KiB less for the VM's life. */
	free(vm->cmdline);
	vm->cmdline = NULL;

	vm->run_size = (size_t)ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	for (int i = 0; i < vm->ncpus; i++)
		if ((err = vcpu_create(vm, i, e)))
			goto fail;
	/* Every vCPU has its CPUID: of the table (10 KiB for the VM's whole
	 * life) snapshots need only the digest of its feature bits. */
	vm->cpu_features = snap_kvm_cpu_features(vm->cpuid);
	free(vm->cpuid);
	vm->cpuid = NULL;
	if (vm->restored)
		timeline_mark(&vm->tl, "restore_vcpus_made");
	timeline_mark(&vm->tl, "vm_ready");
	*out = vm;
	return 0;
fail:
	unmap_file(&k);
	unmap_file(&rd);
	vm_destroy(vm);
	return err;
}

struct load_job {
	struct vm *vm;
	struct err e;
	int r;
};

static void *load_thread(void *arg)
{
	struct load_job *j = arg;
	struct vm *vm = j->vm;

	/* The filter first: every byte of the snapshot and the overlays is read under it. */
	if (vm->cfg.thread_enter &&
	    (j->r = vm->cfg.thread_enter(vm->cfg.thread_ctx, VM_THREAD_RESTORE)))
		j->r = err_set(&j->e, -j->r,
			       "the restore thread cannot install its seccomp filter: %s",
			       strerror(-j->r));
	else if (vm->restored)
		j->r = vm_restore_read(vm, &j->e);
	else
		for (int i = 0; i < vm->cfg.ndisk && !j->r; i++)
			j->r = vm->cfg.disk[i].overlay ? virtio_blk_load(vm->disk_dev[i], &j->e)
						       : 0;
	return NULL;
}

int vm_load(struct vm *vm, struct err *e)
{
	struct load_job j = { .vm = vm };
	pthread_t t;
	int r;

	if (!vm->needs_load || (r = __atomic_load_n(&vm->loaded, __ATOMIC_ACQUIRE)) == 1)
		return 0;
	if (r < 0)
		return err_set(
			e, -r,
			"the VM could not be loaded (an earlier attempt failed): create it again");
	/* A thread of its own: the caller's thread must not carry the
	 * restore's filter into the VM threads it starts next. */
	if ((r = thread_start(&t, load_thread, &j)))
		return err_set(e, r, "cannot start the restore thread: %s", strerror(r));
	pthread_join(t, NULL);
	/* The restore's scratch (the state file, MSR lists, the working
	 * set's runs) is freed now, but its pages would stay the process's
	 * for the guest's whole life: give them back (brk and madvise are in
	 * every thread's filter). */
	malloc_trim(0);
	__atomic_store_n(&vm->loaded, j.r < 0 ? j.r : 1, __ATOMIC_RELEASE);
	if (j.r < 0)
		*e = j.e;
	return j.r < 0 ? j.r : 0;
}

int vm_loaded(struct vm *vm, const char *what, struct err *e)
{
	if (vm->needs_load && __atomic_load_n(&vm->loaded, __ATOMIC_ACQUIRE) != 1)
		return err_set(
			e, EAGAIN,
			"cannot %s: the VM has not started (its snapshot and disk overlays are read when it starts)",
			what);
	return 0;
}

int vm_restored(const struct vm *vm)
{
	return vm->restored;
}

/* Feed console input to the UART until the VM stops. */
static void pump_console(struct vm *vm)
{
	uint8_t buf[256];
	size_t have = 0, off = 0;
	int in = vm->cfg.console_in_fd;

	for (;;) {
		struct pollfd p[2] = { { .fd = vm->stop_efd, .events = POLLIN },
				       { .fd = have ? -1 : in, .events = POLLIN } };

		/* With bytes waiting for FIFO room, poll the guest every 5 ms. */
		if (poll(p, 2, have ? 5 : -1) < 0 && errno != EINTR)
			return;
		if (p[0].revents)
			return;
		if (!have && (p[1].revents & (POLLIN | POLLHUP))) {
			ssize_t n = read(in, buf, sizeof(buf));

			if (n <= 0) {
				in = -1; /* end of input: keep waiting for the stop */
				continue;
			}
			have = (size_t)n;
			off = 0;
		}
		if (have) {
			size_t n = serial_input(&vm->serial, buf + off, have);

			off += n;
			have -= n;
		}
	}
}

int vm_run(struct vm *vm, struct vm_result *res, struct err *e)
{
	uint64_t v;
	int err;

	if ((err = vm_loaded(vm, "run", e)))
		return err;
	for (int i = 0; i < vm->ncpus; i++) {
		if ((err = vcpu_start(&vm->vcpu[i]))) {
			vm_stop(vm, VM_EXIT_FAILURE, "cannot start vCPU thread %d: %s", i,
				strerror(-err));
			break;
		}
	}
	if (vm->loop && (err = event_loop_start(vm->loop)))
		vm_stop(vm, VM_EXIT_FAILURE, "cannot start the device thread: %s", strerror(-err));
	/* Only now: threads started after this one's filter would inherit it. */
	if (vm->cfg.thread_enter &&
	    (err = vm->cfg.thread_enter(vm->cfg.thread_ctx, VM_THREAD_RUNNER)))
		vm_stop(vm, VM_EXIT_FAILURE,
			"the VM's control thread cannot install its seccomp filter: %s",
			strerror(-err));
	/* This thread is free until the VM stops: the guest runs meanwhile. */
	vm_workingset_prefetch(vm);
	if (vm->cfg.console_in_fd >= 0)
		pump_console(vm);
	while (read(vm->stop_efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	for (int i = 0; i < vm->ncpus; i++) {
		if (vm->vcpu[i].started) {
			pthread_join(vm->vcpu[i].thread, NULL);
			vm->vcpu[i].started = 0;
		}
	}
	/* vCPUs are gone; now the device thread, which may still be
	 * completing requests into guest memory. */
	event_loop_stop(vm->loop);
	*res = vm->result;
	return 0;
}

void vm_request_stop(struct vm *vm)
{
	vm_stop(vm, VM_EXIT_STOPPED, "stopped by the host");
}

struct timeline *vm_timeline(struct vm *vm)
{
	return &vm->tl;
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	for (int i = 0; i < VM_MAX_CPUS; i++) {
		struct vcpu *v = &vm->vcpu[i];

		if (v->started) {
			/* Never destroyed while running: vm_run joins. */
			pthread_join(v->thread, NULL);
		}
		if (v->run)
			munmap(v->run, vm->run_size);
		if (v->fd > 0)
			close(v->fd);
	}
	event_loop_stop(vm->loop);
	for (int i = 0; i < vm->nvirtio; i++) {
		virtio_mmio_detach(&vm->virtio[i]);
		vm->virtio[i].dev->ops->destroy(vm->virtio[i].dev);
	}
	event_loop_destroy(vm->loop);
	snap_src_close(&vm->src);
	for (int i = 0; i < VM_MAX_DISKS; i++)
		if (vm->overlay_fd[i] >= 0)
			close(vm->overlay_fd[i]);
	free(vm->cpuid);
	free(vm->cmdline);
	free(vm->snap_msrs);
	vm_workingset_free(&vm->workingset);
	guest_mem_unmap(&vm->mem);
	if (vm->serial.irq)
		serial_destroy(&vm->serial);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->stop_efd >= 0)
		close(vm->stop_efd);
	timeline_destroy(&vm->tl);
	pthread_cond_destroy(&vm->pause_cond);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

int vm_share_graft(struct vm *vm, const char *tag, const char *name, int fd, struct err *e)
{
	for (int i = 0; i < vm->nvirtio; i++) {
		int r = virtio_fs_graft(vm->virtio[i].dev, tag, name, fd);

		if (r == -ENODEV)
			continue;
		if (r < 0)
			return err_set(e, -r, "share %s: %s %s: %s", tag,
				       fd >= 0 ? "grafting" : "dropping the graft", name,
				       strerror(-r));
		return 0;
	}
	return err_set(e, ENODEV, "no virtio-fs share tagged '%s' (give it with --share)", tag);
}

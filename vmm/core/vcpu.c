/* vCPU creation, boot state and the KVM_RUN loop. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/boot/cpu_boot.h"
#include "vmm/core/vm_internal.h"
#include "lib/base/thread_start.h"

#define MSR_IA32_MISC_ENABLE 0x1a0
#define MISC_ENABLE_FAST_STRING 1
#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7
#define CPUID_HYPERVISOR (1u << 31)
#define CPUID_TSC_DEADLINE (1u << 24)

void cpuid_fixup(struct kvm_cpuid2 *c, int id, int ncpus, int tsc_deadline)
{
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		switch (e->function) {
		case 1:
			/* EBX[31:24] initial APIC id; [23:16] logical CPUs per package. */
			e->ebx = (e->ebx & 0x0000ffff) | ((uint32_t)id << 24) |
				((uint32_t)ncpus << 16);
			e->ecx |= CPUID_HYPERVISOR;
			if (tsc_deadline)
				e->ecx |= CPUID_TSC_DEADLINE;
			break;
		case 0xa:
			/* No virtual PMU: perf counter MSRs would only cost exits. */
			e->eax = e->ebx = e->ecx = e->edx = 0;
			break;
		case 0xb:
		case 0x1f:
			e->edx = (uint32_t)id; /* x2APIC id */
			break;
		case 0x8000001e:
			e->eax = (uint32_t)id; /* AMD extended APIC id */
			break;
		default:
			break;
		}
	}
}

static int set_lapic_lints(int fd)
{
	struct kvm_lapic_state la;
	uint32_t v;

	if (ioctl(fd, KVM_GET_LAPIC, &la) < 0)
		return -errno;
	memcpy(&v, la.regs + APIC_LVT_LINT0, 4);
	v = (v & ~0x700u) | (APIC_MODE_EXTINT << 8);
	memcpy(la.regs + APIC_LVT_LINT0, &v, 4);
	memcpy(&v, la.regs + APIC_LVT_LINT1, 4);
	v = (v & ~0x700u) | (APIC_MODE_NMI << 8);
	memcpy(la.regs + APIC_LVT_LINT1, &v, 4);
	if (ioctl(fd, KVM_SET_LAPIC, &la) < 0)
		return -errno;
	return 0;
}

static int set_boot_state(struct vm *vm, int fd)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[1];
	} msrs = { .h.nmsrs = 1,
		   .e[0] = { .index = MSR_IA32_MISC_ENABLE, .data = MISC_ENABLE_FAST_STRING } };

	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	cpu_boot_sregs(vm->entry.kind, &sregs);
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	cpu_boot_regs(&vm->entry, &regs);
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	if (ioctl(fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	if (ioctl(fd, KVM_SET_MSRS, &msrs) != 1)
		return -EIO;
	return 0;
}

int vcpu_create(struct vm *vm, int id, struct err *e)
{
	struct vcpu *v = &vm->vcpu[id];
	size_t csize = sizeof(*vm->cpuid) + vm->cpuid->nent * sizeof(vm->cpuid->entries[0]);
	struct kvm_cpuid2 *c;
	int err;

	v->vm = vm;
	v->id = id;
	v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (v->fd < 0)
		return err_set(e, errno, "KVM_CREATE_VCPU %d: %s", id, strerror(errno));
	v->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		return err_set(e, errno, "mapping vCPU %d's run area: %s", id, strerror(errno));
	}
	c = malloc(csize);
	if (!c)
		return err_set(e, ENOMEM, "out of memory");
	memcpy(c, vm->cpuid, csize);
	/* Asked once per VM: the answer is the host's. */
	if (!vm->tsc_deadline_known) {
		vm->tsc_deadline = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION,
					 KVM_CAP_TSC_DEADLINE_TIMER) > 0;
		vm->tsc_deadline_known = 1;
	}
	cpuid_fixup(c, id, vm->ncpus, vm->tsc_deadline);
	err = ioctl(v->fd, KVM_SET_CPUID2, c) < 0 ? errno : 0;
	free(c);
	if (err)
		return err_set(e, err, "KVM_SET_CPUID2 on vCPU %d: %s", id, strerror(err));
	/* A restore sets the whole local APIC and every register from the
	 * snapshot right after (snap_kvm_load_vcpu): the boot state would
	 * only be overwritten, seven ioctls for nothing. */
	if (vm->restored)
		return 0;
	if ((err = set_lapic_lints(v->fd)))
		return err_set(e, -err, "setting vCPU %d's local APIC: %s", id, strerror(-err));
	/* Application processors wait for INIT/SIPI in the in-kernel LAPIC. */
	if (id == 0 && (err = set_boot_state(vm, v->fd)))
		return err_set(e, -err, "setting the boot CPU's registers: %s", strerror(-err));
	return 0;
}

static void log_unhandled(struct vm *vm, const char *what, uint64_t addr, uint32_t size, int w)
{
	if (!vm->cfg.verbose || vm->verbose_budget <= 0)
		return;
	vm->verbose_budget--;
	dprintf(vm->cfg.log_fd, "kiln-vmm: guest %s %s %#llx (%u bytes) hits no device\n",
		w ? "write" : "read", what, (unsigned long long)addr, size);
}

static int handle_io(struct vcpu *v)
{
	struct vm *vm = v->vm;
	struct kvm_run *r = v->run;
	uint8_t *data = (uint8_t *)r + r->io.data_offset;
	int w = r->io.direction == KVM_EXIT_IO_OUT;

	/* data_offset/size/count come from KVM, but keep them inside the page. */
	if (r->io.data_offset >= vm->run_size ||
	    (uint64_t)r->io.size * r->io.count > vm->run_size - r->io.data_offset)
		return -EFAULT;
	for (uint32_t i = 0; i < r->io.count; i++, data += r->io.size)
		if (io_bus_access(&vm->pio, r->io.port, data, r->io.size, w) == -ENOENT)
			log_unhandled(vm, "port", r->io.port, r->io.size, w);
	return 0;
}

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *r = v->run;
	uint32_t len = r->mmio.len > 8 ? 8 : r->mmio.len;

	if (io_bus_access(&v->vm->mmio, r->mmio.phys_addr, r->mmio.data, len, r->mmio.is_write) ==
	    -ENOENT)
		log_unhandled(v->vm, "MMIO", r->mmio.phys_addr, len, r->mmio.is_write);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	struct kvm_run *r = v->run;
	char name[16];

	sigset_t kick;

	/* The caller's threads may block the kick signal (this thread
	 * inherited their mask): vm_stop and vm_pause need it delivered. */
	sigemptyset(&kick);
	sigaddset(&kick, vm->cfg.kick_signal);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	snprintf(name, sizeof(name), "vcpu%d", v->id);
	pthread_setname_np(pthread_self(), name);
	if (vm->cfg.thread_enter) {
		int err = vm->cfg.thread_enter(vm->cfg.thread_ctx, VM_THREAD_VCPU);

		if (err) {
			vm_stop(vm, VM_EXIT_FAILURE,
				"vCPU %d cannot install its seccomp filter: %s", v->id,
				strerror(-err));
			return NULL;
		}
	}
	if (v->id == 0)
		timeline_mark(&vm->tl, "first_kvm_run");
	for (;;) {
		if (__atomic_load_n(&vm->pause_req, __ATOMIC_ACQUIRE))
			vcpu_park(v);
		if (__atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE))
			break;
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				if (__atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE))
					break;
				continue;
			}
			vm_stop(vm, VM_EXIT_FAILURE, "KVM_RUN on vCPU %d failed: %s", v->id,
				strerror(errno));
			break;
		}
		switch (r->exit_reason) {
		case KVM_EXIT_IO:
			if (handle_io(v) < 0)
				vm_stop(vm, VM_EXIT_FAILURE, "vCPU %d: malformed I/O exit", v->id);
			break;
		case KVM_EXIT_MMIO:
			handle_mmio(v);
			break;
		case KVM_EXIT_SHUTDOWN:
			vm_stop(vm, VM_EXIT_TRIPLE_FAULT,
				"guest triple fault on vCPU %d (rip unknown after reset)", v->id);
			break;
		case KVM_EXIT_SYSTEM_EVENT:
			vm_stop(vm, VM_EXIT_RESET, "guest system event %u (reset/poweroff)",
				r->system_event.type);
			break;
		case KVM_EXIT_HLT:
			/* With the in-kernel LAPIC a HLT exit means the guest halted for good. */
			vm_stop(vm, VM_EXIT_RESET, "guest halted");
			break;
		case KVM_EXIT_FAIL_ENTRY:
			vm_stop(vm, VM_EXIT_FAILURE,
				"vCPU %d: VM entry failed (hardware reason %#llx)", v->id,
				(unsigned long long)r->fail_entry.hardware_entry_failure_reason);
			break;
		case KVM_EXIT_INTERNAL_ERROR:
			vm_stop(vm, VM_EXIT_FAILURE, "vCPU %d: KVM internal error (suberror %u)",
				v->id, r->internal.suberror);
			break;
		default:
			vm_stop(vm, VM_EXIT_FAILURE, "vCPU %d: unhandled KVM exit reason %u", v->id,
				r->exit_reason);
			break;
		}
		if (__atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

int vcpu_start(struct vcpu *v)
{
	int err = thread_start(&v->thread, vcpu_thread, v);

	if (err)
		return -err;
	v->started = 1;
	return 0;
}

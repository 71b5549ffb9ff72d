/* KVM vCPU and VM state in snapshot sections; see snapshot_kvm.h. */
#include "vmm/snapshot/snapshot_kvm.h"

#include <cpuid.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lib/base/version.h"
#include "vmm/snapshot/snapshot_sregs.h"

#define MSR_LIST_MAX 1024
#define MSR_IA32_TSC_DEADLINE 0x6e0

/* Room for any one of a vCPU's KVM state structs. */
union vcpu_state {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xsave xsave;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events ev;
	struct kvm_mp_state mp;
	struct kvm_debugregs dr;
};

/* KVM_GET_MSRS or KVM_SET_MSRS of one MSR: 1 when KVM took it. */
static int one_msr(int vcpu_fd, unsigned long req, uint32_t index, uint64_t *data)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} one = { .h.nmsrs = 1, .e = { .index = index, .data = *data } };
	int r = ioctl(vcpu_fd, req, &one);

	*data = one.e.data;
	return r;
}

/*
 * Every MSR KVM lists that this host lets us read: probed one by one
 * (KVM_GET_MSRS stops at the first it refuses), once per VM — every vCPU
 * and every later snapshot reuses the list (vm->snap_msrs, freed with the
 * VM).
 */
static int readable_msrs(struct vm *vm, int vcpu_fd, const uint32_t **out, uint32_t *n,
			 struct err *e)
{
	struct kvm_msr_list *l = calloc(1, sizeof(*l) + MSR_LIST_MAX * sizeof(uint32_t));
	uint32_t *ok;
	uint32_t k = 0;

	if (!l)
		return err_set(e, ENOMEM, "out of memory");
	if (vm->snap_msrs) {
		free(l);
		*out = vm->snap_msrs;
		*n = vm->nsnap_msrs;
		return 0;
	}
	l->nmsrs = MSR_LIST_MAX;
	if (ioctl(vm->kvm_fd, KVM_GET_MSR_INDEX_LIST, l) < 0) {
		int err = errno;

		free(l);
		return err_set(e, err, "KVM_GET_MSR_INDEX_LIST: %s", strerror(err));
	}
	ok = calloc(l->nmsrs ? l->nmsrs : 1, sizeof(uint32_t));
	if (!ok) {
		free(l);
		return err_set(e, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < l->nmsrs; i++) {
		uint64_t v = 0;

		if (one_msr(vcpu_fd, KVM_GET_MSRS, l->indices[i], &v) == 1)
			ok[k++] = l->indices[i];
	}
	free(l);
	vm->snap_msrs = ok;
	vm->nsnap_msrs = k;
	*out = ok;
	*n = k;
	return 0;
}

/*
 * The feature bits KVM offers guests here, from the CPUID table every vCPU
 * starts from. Only feature registers: the rest of the table holds values
 * of the host CPU the process happens to run on (APIC ids in leaves 1, 0xb,
 * 0x1f, 0x8000001e), which differ between two runs on one machine.
 */
uint64_t snap_kvm_cpu_features(const struct kvm_cpuid2 *t)
{
	static const struct {
		uint32_t function, index;
		uint8_t regs; /* bit 0 eax, 1 ebx, 2 ecx, 3 edx */
	} leaves[] = {
		{ 0x1, 0, 0xc }, { 0x7, 0, 0xe },        { 0x7, 1, 0x1 },        { 0xd, 0, 0x9 },
		{ 0xd, 1, 0x1 }, { 0x80000001, 0, 0xc }, { 0x80000008, 0, 0x2 },
	};
	uint64_t h = SNAP_DIGEST_INIT;

	for (size_t k = 0; k < sizeof(leaves) / sizeof(leaves[0]); k++) {
		uint32_t r[4] = { 0 };

		for (uint32_t i = 0; i < t->nent; i++) {
			const struct kvm_cpuid_entry2 *en = &t->entries[i];

			if (en->function == leaves[k].function && en->index == leaves[k].index) {
				r[0] = leaves[k].regs & 1 ? en->eax : 0;
				r[1] = leaves[k].regs & 2 ? en->ebx : 0;
				r[2] = leaves[k].regs & 4 ? en->ecx : 0;
				r[3] = leaves[k].regs & 8 ? en->edx : 0;
				break;
			}
		}
		h = snap_digest(h, &leaves[k].function, sizeof(leaves[k].function));
		h = snap_digest(h, r, sizeof(r));
	}
	return h;
}

int snap_kvm_compat(struct vm *vm, struct snap_compat *out, struct err *e)
{
	unsigned a, b, c, d, a1, b1, c1, d1;

	memset(out, 0, sizeof(*out));
	snprintf(out->kiln_version, sizeof(out->kiln_version), "%s", KILN_VERSION);
	if (!__get_cpuid(0, &a, &b, &c, &d) || !__get_cpuid(1, &a1, &b1, &c1, &d1))
		return err_set(e, ENODEV, "this CPU has no CPUID leaf 1");
	snap_cpu_from_cpuid(&out->cpu, b, c, d, a1);
	out->cpu.features = vm->cpu_features;
	return 0;
}

/* One KVM_GET_* into a section named `name`. */
static int save_ioctl(struct snap_writer *w, int fd, unsigned long req, void *buf, size_t len,
		      uint32_t type, uint32_t index, const char *name, struct err *e)
{
	memset(buf, 0, len);
	if (ioctl(fd, req, buf) < 0)
		return err_set(e, errno, "snapshot: reading %s of vCPU/VM %u: %s", name, index,
			       strerror(errno));
	return snap_add(w, type, index, name, buf, len, e);
}

int snap_kvm_save_vcpu(struct vm *vm, struct vcpu *v, struct snap_writer *w, struct err *e)
{
	uint32_t id = (uint32_t)v->id, n = 0;
	const uint32_t *idx = NULL;
	struct kvm_msrs *msrs;
	union vcpu_state u;
	int r;

	if ((r = save_ioctl(w, v->fd, KVM_GET_REGS, &u.regs, sizeof(u.regs), SNAP_SEC_VCPU_REGS, id,
			    "regs", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_SREGS, &u.sregs, sizeof(u.sregs), SNAP_SEC_VCPU_SREGS,
			    id, "sregs", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_XSAVE, &u.xsave, sizeof(u.xsave), SNAP_SEC_VCPU_XSAVE,
			    id, "xsave", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_XCRS, &u.xcrs, sizeof(u.xcrs), SNAP_SEC_VCPU_XCRS, id,
			    "xcrs", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_LAPIC, &u.lapic, sizeof(u.lapic), SNAP_SEC_VCPU_LAPIC,
			    id, "lapic", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_VCPU_EVENTS, &u.ev, sizeof(u.ev),
			    SNAP_SEC_VCPU_EVENTS, id, "events", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_MP_STATE, &u.mp, sizeof(u.mp), SNAP_SEC_VCPU_MP_STATE,
			    id, "mp_state", e)) ||
	    (r = save_ioctl(w, v->fd, KVM_GET_DEBUGREGS, &u.dr, sizeof(u.dr),
			    SNAP_SEC_VCPU_DEBUGREGS, id, "debugregs", e)))
		return r;

	if ((r = readable_msrs(vm, v->fd, &idx, &n, e)))
		return r;
	msrs = calloc(1, sizeof(*msrs) + n * sizeof(struct kvm_msr_entry));
	if (!msrs)
		return err_set(e, ENOMEM, "out of memory");
	msrs->nmsrs = n;
	for (uint32_t i = 0; i < n; i++)
		msrs->entries[i].index = idx[i];
	if ((uint32_t)ioctl(v->fd, KVM_GET_MSRS, msrs) != n) {
		free(msrs);
		return err_set(e, EIO, "snapshot: reading vCPU %u's MSRs failed part way", id);
	}
	snap_begin(w, SNAP_SEC_VCPU_MSRS, id, "msrs", e);
	snap_put_u32(w, n, e);
	for (uint32_t i = 0; i < n; i++) {
		snap_put_u32(w, msrs->entries[i].index, e);
		snap_put_u64(w, msrs->entries[i].data, e);
	}
	free(msrs);
	return snap_end(w, e);
}

int snap_kvm_save_vm(struct vm *vm, struct snap_writer *w, struct err *e)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clk;
	int r;

	for (uint32_t i = 0; i < 3; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = i; /* KVM_IRQCHIP_PIC_MASTER, _SLAVE, _IOAPIC */
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip) < 0)
			return err_set(e, errno, "snapshot: KVM_GET_IRQCHIP %u: %s", i,
				       strerror(errno));
		if (i < 2)
			r = snap_add(w, SNAP_SEC_PIC, i, "pic", &chip, sizeof(chip), e);
		else
			r = snap_add(w, SNAP_SEC_IOAPIC, 0, "ioapic", &chip, sizeof(chip), e);
		if (r)
			return r;
	}
	if ((r = save_ioctl(w, vm->vm_fd, KVM_GET_PIT2, &pit, sizeof(pit), SNAP_SEC_PIT, 0, "pit",
			    e)))
		return r;
	if ((r = save_ioctl(w, vm->vm_fd, KVM_GET_CLOCK, &clk, sizeof(clk), SNAP_SEC_CLOCK, 0,
			    "kvmclock", e)))
		return r;
	return 0;
}

/* The section (type, index) as exactly `len` bytes, or an error naming it. */
static const void *need(const struct snap_view *s, uint32_t type, uint32_t index, size_t len,
			const char *what, int *r, struct err *e)
{
	const struct snap_section *sec = snap_find(s, type, index);

	if (!sec) {
		*r = err_set(e, -SNAP_ERR_MALFORMED, "snapshot: no %s for vCPU/VM %u", what, index);
		return NULL;
	}
	if (sec->len != len) {
		*r = err_set(e, -SNAP_ERR_MALFORMED,
			     "snapshot: %s of vCPU/VM %u is %llu bytes, not %zu", what, index,
			     (unsigned long long)sec->len, len);
		return NULL;
	}
	*r = 0;
	return sec->data;
}

/* Copy a section into `buf` and KVM_SET_* it. */
static int load_ioctl(const struct snap_view *s, int fd, unsigned long req, void *buf, size_t len,
		      uint32_t type, uint32_t index, const char *name, struct err *e)
{
	const void *p;
	int r;

	if (!(p = need(s, type, index, len, name, &r, e)))
		return r;
	memcpy(buf, p, len);
	if (ioctl(fd, req, buf) < 0)
		return err_set(e, errno, "restore: KVM refused %s of vCPU/VM %u: %s", name, index,
			       strerror(errno));
	return 0;
}

static int load_msrs(const struct snap_view *s, struct vcpu *v, struct err *e)
{
	const struct snap_section *sec = snap_find(s, SNAP_SEC_VCPU_MSRS, (uint32_t)v->id);
	struct snap_cursor c;
	struct kvm_msrs *msrs;
	uint32_t n;
	int r;

	if (!sec)
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot: no MSRs for vCPU %d", v->id);
	snap_cursor_init(&c, sec);
	n = snap_get_u32(&c);
	if (n > MSR_LIST_MAX || sec->len != 4 + (uint64_t)n * 12)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot: vCPU %d's MSR section is malformed", v->id);
	msrs = calloc(1, sizeof(*msrs) + n * sizeof(struct kvm_msr_entry));
	if (!msrs)
		return err_set(e, ENOMEM, "out of memory");
	msrs->nmsrs = n;
	for (uint32_t i = 0; i < n; i++) {
		msrs->entries[i].index = snap_get_u32(&c);
		msrs->entries[i].data = snap_get_u64(&c);
	}
	if ((r = snap_cursor_end(&c, e))) {
		free(msrs);
		return r;
	}
	r = ioctl(v->fd, KVM_SET_MSRS, msrs);
	if (r >= 0 && (uint32_t)r < n) {
		uint32_t bad = msrs->entries[r].index;

		free(msrs);
		return err_set(
			e, EINVAL,
			"restore: this host's KVM refused MSR %#x of vCPU %d: the snapshot is from an incompatible host",
			bad, v->id);
	}
	free(msrs);
	if (r < 0)
		return err_set(e, errno, "restore: KVM_SET_MSRS on vCPU %d: %s", v->id,
			       strerror(errno));
	return 0;
}

/*
 * Setting the local APIC stops its timer, so the TSC-deadline MSR (the
 * timer Linux uses here) is written again after it, or the vCPU would
 * wait forever for its next tick.
 */
static int load_tsc_deadline(const struct snap_view *s, struct vcpu *v, struct err *e)
{
	const struct snap_section *sec = snap_find(s, SNAP_SEC_VCPU_MSRS, (uint32_t)v->id);
	struct snap_cursor c;
	uint32_t n;

	snap_cursor_init(&c, sec); /* load_msrs checked it */
	n = snap_get_u32(&c);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t index = snap_get_u32(&c);
		uint64_t data = snap_get_u64(&c);

		if (index != MSR_IA32_TSC_DEADLINE)
			continue;
		if (one_msr(v->fd, KVM_SET_MSRS, index, &data) != 1)
			return err_set(e, EINVAL, "restore: KVM refused vCPU %d's TSC deadline",
				       v->id);
		break;
	}
	return 0;
}

/* Whether this host's KVM runs vCPUs under SVM (AMD): CPUID's vendor. */
static bool host_is_svm(void)
{
	unsigned a, b, c, d;
	struct snap_cpu cpu;

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return false;
	snap_cpu_from_cpuid(&cpu, b, c, d, 0);
	return snap_vendor_is_svm(cpu.vendor);
}

/* The special registers, fitted to this host (snapshot_sregs.h: TR). */
static int load_sregs(const struct snap_view *s, struct vcpu *v, struct kvm_sregs *sregs,
		      struct err *e)
{
	const void *p;
	int r;

	if (!(p = need(s, SNAP_SEC_VCPU_SREGS, (uint32_t)v->id, sizeof(*sregs), "sregs", &r, e)))
		return r;
	memcpy(sregs, p, sizeof(*sregs));
	snap_sregs_fit_host(sregs, host_is_svm());
	if (ioctl(v->fd, KVM_SET_SREGS, sregs) < 0)
		return err_set(e, errno, "restore: KVM refused sregs of vCPU/VM %d: %s", v->id,
			       strerror(errno));
	return 0;
}

int snap_kvm_load_vcpu(struct vm *vm, struct vcpu *v, const struct snap_view *s, struct err *e)
{
	uint32_t id = (uint32_t)v->id;
	union vcpu_state u;
	const void *p;
	int r;

	(void)vm;
	/* Order matters: sregs (EFER, APIC base) before the MSRs and the
	 * local APIC, the TSC deadline after the local APIC, events last. */
	if ((r = load_ioctl(s, v->fd, KVM_SET_REGS, &u.regs, sizeof(u.regs), SNAP_SEC_VCPU_REGS, id,
			    "regs", e)) ||
	    (r = load_ioctl(s, v->fd, KVM_SET_XSAVE, &u.xsave, sizeof(u.xsave), SNAP_SEC_VCPU_XSAVE,
			    id, "xsave", e)) ||
	    (r = load_ioctl(s, v->fd, KVM_SET_XCRS, &u.xcrs, sizeof(u.xcrs), SNAP_SEC_VCPU_XCRS, id,
			    "xcrs", e)) ||
	    (r = load_sregs(s, v, &u.sregs, e)) || (r = load_msrs(s, v, e)) ||
	    (r = load_ioctl(s, v->fd, KVM_SET_MP_STATE, &u.mp, sizeof(u.mp), SNAP_SEC_VCPU_MP_STATE,
			    id, "mp_state", e)) ||
	    (r = load_ioctl(s, v->fd, KVM_SET_LAPIC, &u.lapic, sizeof(u.lapic), SNAP_SEC_VCPU_LAPIC,
			    id, "lapic", e)) ||
	    (r = load_tsc_deadline(s, v, e)))
		return r;
	if (!(p = need(s, SNAP_SEC_VCPU_EVENTS, id, sizeof(u.ev), "events", &r, e)))
		return r;
	memcpy(&u.ev, p, sizeof(u.ev));
	/* Which optional fields to apply: all that a GET fills. */
	u.ev.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
	if (ioctl(v->fd, KVM_SET_VCPU_EVENTS, &u.ev) < 0)
		return err_set(e, errno, "restore: KVM refused events of vCPU %u: %s", id,
			       strerror(errno));
	return load_ioctl(s, v->fd, KVM_SET_DEBUGREGS, &u.dr, sizeof(u.dr), SNAP_SEC_VCPU_DEBUGREGS,
			  id, "debugregs", e);
}

int snap_kvm_load_vm(struct vm *vm, const struct snap_view *s, struct err *e)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clk;
	int r;

	for (uint32_t i = 0; i < 3; i++) {
		r = i < 2 ? load_ioctl(s, vm->vm_fd, KVM_SET_IRQCHIP, &chip, sizeof(chip),
				       SNAP_SEC_PIC, i, "pic", e)
			  : load_ioctl(s, vm->vm_fd, KVM_SET_IRQCHIP, &chip, sizeof(chip),
				       SNAP_SEC_IOAPIC, 0, "ioapic", e);
		if (r)
			return r;
	}
	if ((r = load_ioctl(s, vm->vm_fd, KVM_SET_PIT2, &pit, sizeof(pit), SNAP_SEC_PIT, 0, "pit",
			    e)))
		return r;
	if (!need(s, SNAP_SEC_CLOCK, 0, sizeof(clk), "kvmclock", &r, e))
		return r;
	memcpy(&clk, snap_find(s, SNAP_SEC_CLOCK, 0)->data, sizeof(clk));
	/* Only the clock value: the host and realtime fields describe the old host. */
	clk.flags = 0;
	if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &clk) < 0)
		return err_set(e, errno, "restore: KVM_SET_CLOCK: %s", strerror(errno));
	return 0;
}

/*
 * kvm-ballast: keeps KVM's per-vCPU static keys switched on in the nested
 * harness's outer VM, so starting and stopping guests never rewrites the
 * outer kernel's code (tests/harness/README.md, "Why the outer VM froze").
 *
 * KVM counts vCPUs whose local APIC is software-disabled (every new one,
 * until its guest enables it), hardware-disabled, or absent, each in a
 * static key. A count going 0 -> 1 or back patches every site of the key
 * with text_poke_bp(): int3 bytes and cross-CPU synchronisation. QEMU's
 * multi-threaded emulation sometimes leaves a CPU executing a stale int3
 * after such a patch, and the outer VM freezes for good. Three idle vCPUs
 * that never run hold each count at one or more, so every guest kiln's
 * tests boot moves it between 1 and 2 and nothing is patched.
 *
 * Run by the harness's init; it never returns while the outer VM lives.
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define MSR_IA32_APICBASE 0x1b
#define APIC_DEFAULT_BASE 0xfee00000ULL

static int fail(const char *what)
{
	fprintf(stderr, "kvm-ballast: %s failed: %m (guests will patch the outer kernel's code)\n",
		what);
	return 1;
}

int main(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("open /dev/kvm");

	/* With an in-kernel irqchip: vCPU 0's APIC stays software-disabled
	 * (apic_sw_disabled); vCPU 1's is also hardware-disabled
	 * (apic_hw_disabled). */
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	if (ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0)
		return fail("KVM_CREATE_IRQCHIP");
	if (ioctl(vm, KVM_CREATE_VCPU, 0) < 0)
		return fail("KVM_CREATE_VCPU 0");
	int cpu1 = ioctl(vm, KVM_CREATE_VCPU, 1);
	if (cpu1 < 0)
		return fail("KVM_CREATE_VCPU 1");
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entry;
	} msrs;
	memset(&msrs, 0, sizeof(msrs));
	msrs.hdr.nmsrs = 1;
	msrs.entry.index = MSR_IA32_APICBASE;
	msrs.entry.data = APIC_DEFAULT_BASE; /* enable bit (11) clear */
	if (ioctl(cpu1, KVM_SET_MSRS, &msrs) != 1)
		return fail("disabling vCPU 1's APIC");

	/* Without one: a vCPU with no in-kernel APIC (kvm_has_noapic_vcpu). */
	int bare = ioctl(kvm, KVM_CREATE_VM, 0);
	if (bare < 0)
		return fail("KVM_CREATE_VM (no irqchip)");
	if (ioctl(bare, KVM_CREATE_VCPU, 0) < 0)
		return fail("KVM_CREATE_VCPU (no irqchip)");

	for (;;)
		pause();
}

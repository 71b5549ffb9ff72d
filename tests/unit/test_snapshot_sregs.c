/*
 * snapshot_sregs: the task register of a restored vCPU. On AMD, KVM
 * reports TR as a busy TSS (type 11) where the VMCB holds an available one
 * (type 9); written back as reported, the restored guest's user-space port
 * I/O faulted under the nested harness and kiln-init's shutdown killed
 * PID 1. Only that bit of that register may change, and only on SVM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "vmm/snapshot/snapshot_sregs.h"
#include "vmm/snapshot/snapshot_file.h"

/* What KVM_GET_SREGS gives for a 64-bit Linux guest, TR as svm_get_segment reports it. */
static struct kvm_sregs saved(uint8_t tr_type)
{
	struct kvm_sregs s;

	memset(&s, 0xa5, sizeof(s)); /* every byte that must not move is non-zero */
	s.tr = (struct kvm_segment){ .base = 0xfffffe0000003000ull,
				     .limit = 0x4087,
				     .selector = 0x40,
				     .type = tr_type,
				     .present = 1,
				     .dpl = 0,
				     .db = 0,
				     .s = 0,
				     .l = 0,
				     .g = 0,
				     .avl = 0,
				     .unusable = 0 };
	return s;
}

static void test_svm_busy_tss_becomes_available(void **st)
{
	struct kvm_sregs s = saved(0xb), want = saved(0x9);

	(void)st;
	snap_sregs_fit_host(&s, true);
	assert_int_equal(s.tr.type, 0x9);
	/* Nothing else: base, limit, selector, the other segments, CRs, EFER, APIC base. */
	assert_memory_equal(&s, &want, sizeof(s));
}

static void test_vmx_keeps_busy_tss(void **st)
{
	struct kvm_sregs s = saved(0xb), want = saved(0xb);

	(void)st;
	/* VMX refuses to enter a 64-bit guest whose TR is not busy. */
	snap_sregs_fit_host(&s, false);
	assert_memory_equal(&s, &want, sizeof(s));
}

static void test_other_tr_types_untouched(void **st)
{
	static const uint8_t types[] = { 0x0, 0x1, 0x2, 0x3, 0x9, 0xa, 0xf };

	(void)st;
	for (size_t i = 0; i < sizeof(types); i++) {
		struct kvm_sregs s = saved(types[i]), want = saved(types[i]);

		snap_sregs_fit_host(&s, true);
		assert_memory_equal(&s, &want, sizeof(s));
	}
}

/* The vendor strings come from snap_cpu_from_cpuid, as the restore reads them. */
static int svm_of(const char *v12)
{
	struct snap_cpu c;
	uint32_t r[3];

	memcpy(r, v12, 12); /* EBX, EDX, ECX order */
	snap_cpu_from_cpuid(&c, r[0], r[2], r[1], 0);
	return snap_vendor_is_svm(c.vendor);
}

static void test_vendors(void **st)
{
	(void)st;
	assert_true(svm_of("AuthenticAMD"));
	assert_true(svm_of("HygonGenuine"));
	assert_false(svm_of("GenuineIntel"));
	assert_false(svm_of("CentaurHauls"));
	assert_false(svm_of("AuthenticAMX"));
	assert_false(snap_vendor_is_svm(""));
	assert_false(snap_vendor_is_svm("AuthenticAMD "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svm_busy_tss_becomes_available),
		cmocka_unit_test(test_vmx_keeps_busy_tss),
		cmocka_unit_test(test_other_tr_types_untouched),
		cmocka_unit_test(test_vendors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * mptable: the MP spec 1.4 tables are read by the guest kernel, which
 * rejects them silently (and boots uniprocessor) on a bad checksum, a wrong
 * signature or a length that does not match the entries. The table is
 * walked entry by entry here the way the kernel's mpparse.c does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/boot/mptable.h"
#include "bytes.h"

#define GPA 0x9fc00ULL
#define LAPIC 0xfee00000u
#define IOAPIC 0xfec00000u

/* MP spec 1.4 sizes, independent of the module's own constants. */
#define FPS_LEN 16
#define HDR_LEN 44
#define CPU_LEN 20
#define ENTRY_LEN 8

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

/* Build into a buffer of exactly mptable_size() bytes, so ASan sees overruns. */
static uint8_t *build(int ncpus, int *n)
{
	size_t len = mptable_size(ncpus);
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	memset(buf, 0xcc, len);
	*n = mptable_build(buf, len, GPA, ncpus, LAPIC, IOAPIC);
	return buf;
}

/* Size is the sum of the spec's entry sizes. */
static void test_size(void **state)
{
	const size_t fixed = FPS_LEN + HDR_LEN + ENTRY_LEN /* bus */ + ENTRY_LEN /* ioapic */ +
		24 * ENTRY_LEN /* io interrupts */ + 2 * ENTRY_LEN /* lints */;

	(void)state;
	assert_int_equal(mptable_size(1), fixed + CPU_LEN);
	assert_int_equal(mptable_size(64), fixed + 64 * CPU_LEN);
}

static void test_checksum_fn(void **state)
{
	const uint8_t a[] = { 1, 2, 3 };

	(void)state;
	assert_int_equal(mptable_checksum(a, 0), 0);
	assert_int_equal(mptable_checksum(a, 3), 0xfa);
	assert_int_equal((uint8_t)(sum(a, 3) + mptable_checksum(a, 3)), 0);
}

/* Signatures, pointers and both checksums for 1, 4 and 64 CPUs. */
static void test_structure_and_checksums(void **state)
{
	const int counts[] = { 1, 4, MPTABLE_MAX_CPUS };

	(void)state;
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int ncpus = counts[c], n;
		uint8_t *buf = build(ncpus, &n), *hdr = buf + FPS_LEN;

		assert_int_equal(n, mptable_size(ncpus));
		/* Floating pointer: "_MP_", points at the header, 1 paragraph, rev 1.4. */
		assert_memory_equal(buf, "_MP_", 4);
		assert_int_equal(get32(buf + 4), GPA + FPS_LEN);
		assert_int_equal(buf[8], 1);
		assert_int_equal(buf[9], 4);
		assert_int_equal(buf[11], 0); /* feature byte 1: a table is present */
		assert_int_equal(sum(buf, FPS_LEN), 0);
		/* Configuration table header. */
		assert_memory_equal(hdr, "PCMP", 4);
		assert_int_equal(get16(hdr + 4), n - FPS_LEN); /* base table length */
		assert_int_equal(hdr[6], 4);
		assert_int_equal(sum(hdr, get16(hdr + 4)), 0);
		assert_int_equal(get16(hdr + 34), ncpus + 1 + 1 + 24 + 2);
		assert_int_equal(get32(hdr + 36), LAPIC);
		assert_int_equal(get16(hdr + 40), 0); /* no extended table */
		free(buf);
	}
}

/* Walk the entries: each has the size its type implies, and they end exactly
 * at the base table length. CPU 0 alone is the BSP; the IOAPIC id follows. */
static void test_entries(void **state)
{
	const int ncpus = 5;
	int n, cpus = 0, buses = 0, ioapics = 0, ioints = 0, lints = 0;
	uint8_t *buf = build(ncpus, &n), *hdr = buf + FPS_LEN;
	const uint8_t *p = hdr + HDR_LEN, *end = hdr + get16(hdr + 4);

	(void)state;
	for (int i = 0; i < get16(hdr + 34); i++) {
		assert_true(p < end);
		switch (p[0]) {
		case 0:                                            /* processor */
			assert_int_equal(p[1], cpus);              /* APIC id */
			assert_int_equal(p[3], cpus == 0 ? 3 : 1); /* enabled | BSP */
			cpus++;
			p += CPU_LEN;
			break;
		case 1:
			assert_memory_equal(p + 2, "ISA   ", 6);
			buses++;
			p += ENTRY_LEN;
			break;
		case 2:
			assert_int_equal(p[1], ncpus); /* ids after the CPUs' */
			assert_int_equal(p[3] & 1, 1);
			assert_int_equal(get32(p + 4), IOAPIC);
			ioapics++;
			p += ENTRY_LEN;
			break;
		case 3: /* ISA IRQ n on pin n of that IOAPIC */
			assert_int_equal(p[5], ioints);
			assert_int_equal(p[6], ncpus);
			assert_int_equal(p[7], ioints);
			ioints++;
			p += ENTRY_LEN;
			break;
		case 4:
			assert_int_equal(p[6], 0xff); /* every local APIC */
			assert_int_equal(p[7], lints);
			lints++;
			p += ENTRY_LEN;
			break;
		default:
			fail_msg("unknown MP entry type %u at offset %td", p[0], p - buf);
		}
	}
	assert_ptr_equal(p, end);
	assert_int_equal(cpus, ncpus);
	assert_int_equal(buses, 1);
	assert_int_equal(ioapics, 1);
	assert_int_equal(ioints, MPTABLE_IOAPIC_PINS);
	assert_int_equal(lints, 2);
	free(buf);
}

/* CPU counts outside 1..64 are refused before anything is written. */
static void test_bad_ncpus(void **state)
{
	uint8_t buf[4096];

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(mptable_build(buf, sizeof(buf), GPA, 0, LAPIC, IOAPIC), -EINVAL);
	assert_int_equal(mptable_build(buf, sizeof(buf), GPA, MPTABLE_MAX_CPUS + 1, LAPIC, IOAPIC),
			 -EINVAL);
	assert_int_equal(mptable_build(buf, sizeof(buf), GPA, -1, LAPIC, IOAPIC), -EINVAL);
	assert_int_equal(buf[0], 0x5a);
}

/* One byte short of the needed size: -ENOSPC and the buffer untouched. */
static void test_buffer_too_small(void **state)
{
	size_t need = mptable_size(8);
	uint8_t *buf = malloc(need);

	(void)state;
	assert_non_null(buf);
	memset(buf, 0x5a, need);
	assert_int_equal(mptable_build(buf, need - 1, GPA, 8, LAPIC, IOAPIC), -ENOSPC);
	for (size_t i = 0; i < need; i++)
		assert_int_equal(buf[i], 0x5a);
	assert_int_equal(mptable_build(buf, need, GPA, 8, LAPIC, IOAPIC), (int)need);
	free(buf);
}

/* The physical pointer is 32 bits: a table reaching past 4 GiB is refused. */
static void test_gpa_above_4g(void **state)
{
	uint8_t buf[4096];

	(void)state;
	assert_int_equal(mptable_build(buf, sizeof(buf), 0xffffff00ULL, 1, LAPIC, IOAPIC), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_checksum_fn),
		cmocka_unit_test(test_structure_and_checksums),
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_bad_ncpus),
		cmocka_unit_test(test_buffer_too_small),
		cmocka_unit_test(test_gpa_above_4g),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

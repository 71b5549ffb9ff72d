/*
 * mptable: the Intel MultiProcessor Specification 1.4 tables through which
 * a guest without ACPI finds its CPUs, its IOAPIC and its interrupt routing.
 *
 * Pure: writes into a caller's buffer that will be copied to guest memory
 * at `gpa`; the kernel finds the floating pointer by scanning the last KiB
 * of base memory (where layout.h puts it).
 */
#ifndef KILN_MPTABLE_H
#define KILN_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

#define MPTABLE_MAX_CPUS 64
#define MPTABLE_IOAPIC_PINS 24

/* Bytes mptable_build() needs for `ncpus` CPUs. */
size_t mptable_size(int ncpus);

/*
 * Build floating pointer + configuration table for `ncpus` CPUs (APIC ids
 * 0..ncpus-1, CPU 0 the bootstrap processor), one ISA bus and one IOAPIC
 * (id ncpus) at `ioapic_addr` whose 24 pins carry ISA IRQs 0..23 one to one.
 * Returns the bytes written, -EINVAL for ncpus outside 1..MPTABLE_MAX_CPUS,
 * or -ENOSPC when `len` is too small.
 */
int mptable_build(uint8_t *buf, size_t len, uint64_t gpa, int ncpus, uint32_t lapic_addr,
		  uint32_t ioapic_addr);

/* The byte that makes the sum of buf[0..len) zero (MP spec checksum). */
uint8_t mptable_checksum(const uint8_t *buf, size_t len);

#endif

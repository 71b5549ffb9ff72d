#include "vmm/boot/mptable.h"

#include <errno.h>
#include <string.h>

/* Entry sizes and codes from MP spec 1.4, chapter 4. */
#define FPS_LEN 16
#define HDR_LEN 44
#define CPU_LEN 20
#define SMALL_LEN 8
#define T_CPU 0
#define T_BUS 1
#define T_IOAPIC 2
#define T_IOINT 3
#define T_LINT 4
#define INT_INT 0
#define INT_NMI 1
#define INT_EXTINT 3
#define APIC_VERSION 0x14
#define IOAPIC_VERSION 0x11
#define CPU_ENABLED 1
#define CPU_BSP 2

size_t mptable_size(int ncpus)
{
	return FPS_LEN + HDR_LEN + (size_t)ncpus * CPU_LEN + SMALL_LEN /* bus */ +
		SMALL_LEN /* ioapic */ + MPTABLE_IOAPIC_PINS * SMALL_LEN + 2 * SMALL_LEN /* lint */;
}

uint8_t mptable_checksum(const uint8_t *buf, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += buf[i];
	return (uint8_t)-sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint8_t *small(uint8_t *p, uint8_t type, uint8_t a, uint16_t flags, uint8_t bus, uint8_t irq,
		      uint8_t dst, uint8_t pin)
{
	p[0] = type;
	p[1] = a;
	put16(p + 2, flags);
	p[4] = bus;
	p[5] = irq;
	p[6] = dst;
	p[7] = pin;
	return p + SMALL_LEN;
}

int mptable_build(uint8_t *buf, size_t len, uint64_t gpa, int ncpus, uint32_t lapic_addr,
		  uint32_t ioapic_addr)
{
	size_t need;
	uint8_t *hdr, *p;
	uint8_t ioapic_id;
	uint16_t count = 0;

	if (ncpus < 1 || ncpus > MPTABLE_MAX_CPUS)
		return -EINVAL;
	need = mptable_size(ncpus);
	if (len < need)
		return -ENOSPC;
	if (gpa + need > 0xffffffffULL)
		return -EINVAL;
	memset(buf, 0, need);
	ioapic_id = (uint8_t)ncpus;

	/* Floating pointer structure. */
	memcpy(buf, "_MP_", 4);
	put32(buf + 4, (uint32_t)(gpa + FPS_LEN));
	buf[8] = 1; /* length in 16-byte units */
	buf[9] = 4; /* spec revision 1.4 */
	/* feature bytes 0: a configuration table is present, no IMCR. */

	hdr = buf + FPS_LEN;
	p = hdr + HDR_LEN;
	for (int i = 0; i < ncpus; i++) {
		p[0] = T_CPU;
		p[1] = (uint8_t)i;
		p[2] = APIC_VERSION;
		p[3] = CPU_ENABLED | (i == 0 ? CPU_BSP : 0);
		put32(p + 4, 0x600); /* family 6; the kernel reads CPUID anyway */
		put32(p + 8, 0x201); /* FPU + APIC */
		p += CPU_LEN;
		count++;
	}
	p[0] = T_BUS;
	p[1] = 0;
	memcpy(p + 2, "ISA   ", 6);
	p += SMALL_LEN;
	count++;

	p[0] = T_IOAPIC;
	p[1] = ioapic_id;
	p[2] = IOAPIC_VERSION;
	p[3] = 1; /* enabled */
	put32(p + 4, ioapic_addr);
	p += SMALL_LEN;
	count++;

	/* ISA IRQ n arrives on IOAPIC pin n, edge/high ("conforms to bus"). */
	for (int irq = 0; irq < MPTABLE_IOAPIC_PINS; irq++) {
		p = small(p, T_IOINT, INT_INT, 0, 0, (uint8_t)irq, ioapic_id, (uint8_t)irq);
		count++;
	}
	/* LINT0 is the legacy PIC (ExtINT), LINT1 NMI, on every local APIC. */
	p = small(p, T_LINT, INT_EXTINT, 0, 0, 0, 0xff, 0);
	p = small(p, T_LINT, INT_NMI, 0, 0, 0, 0xff, 1);
	count += 2;

	memcpy(hdr, "PCMP", 4);
	put16(hdr + 4, (uint16_t)(p - hdr));
	hdr[6] = 4;
	memcpy(hdr + 8, "KILN    ", 8);
	memcpy(hdr + 16, "KILN-VMM    ", 12);
	put16(hdr + 34, count);
	put32(hdr + 36, lapic_addr);
	hdr[7] = mptable_checksum(hdr, (size_t)(p - hdr));
	buf[10] = mptable_checksum(buf, FPS_LEN);
	return (int)(p - buf);
}

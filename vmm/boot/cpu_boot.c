#include "vmm/boot/cpu_boot.h"

#include <errno.h>
#include <string.h>

#include "vmm/boot/layout.h"

#define CR0_PE (1ULL << 0)
#define CR0_ET (1ULL << 4)
#define CR0_PG (1ULL << 31)
#define CR4_PAE (1ULL << 5)
#define EFER_LME (1ULL << 8)
#define EFER_LMA (1ULL << 10)
#define PTE_P (1ULL << 0)
#define PTE_RW (1ULL << 1)
#define PTE_PS (1ULL << 7)

/* Flat 4 GiB descriptors (Intel SDM vol. 3, 3.4.5). */
#define GDT_CODE64 0x00af9b000000ffffULL
#define GDT_CODE32 0x00cf9b000000ffffULL
#define GDT_DATA 0x00cf93000000ffffULL

static struct kvm_segment seg_from_desc(uint64_t d, uint16_t sel)
{
	return (struct kvm_segment){
		.base = ((d >> 16) & 0xffffff) | (((d >> 56) & 0xff) << 24),
		.limit = 0xffffffff, /* G=1: 4 GiB */
		.selector = sel,
		.type = (d >> 40) & 0xf,
		.present = (d >> 47) & 1,
		.dpl = (d >> 45) & 3,
		.db = (d >> 54) & 1,
		.s = (d >> 44) & 1,
		.l = (d >> 53) & 1,
		.g = (d >> 55) & 1,
	};
}

int cpu_boot_tables(const struct guest_mem *gm, enum boot_kind kind)
{
	uint64_t gdt[4] = { 0, 0, kind == BOOT_PVH ? GDT_CODE32 : GDT_CODE64, GDT_DATA };
	uint64_t *pml4, *pdpt, *pd;

	if (guest_mem_write(gm, LAYOUT_GDT, gdt, sizeof(gdt)))
		return -EFAULT;
	if (kind == BOOT_PVH)
		return 0;
	pml4 = guest_mem_ptr(gm, LAYOUT_PML4, 4096);
	pdpt = guest_mem_ptr(gm, LAYOUT_PDPT, 4096);
	pd = guest_mem_ptr(gm, LAYOUT_PD, 4 * 4096);
	if (!pml4 || !pdpt || !pd)
		return -EFAULT;
	memset(pml4, 0, 4096);
	memset(pdpt, 0, 4096);
	pml4[0] = LAYOUT_PDPT | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 4; i++)
		pdpt[i] = (LAYOUT_PD + i * 4096) | PTE_P | PTE_RW;
	/* 2048 2 MiB pages: an identity map of the first 4 GiB. */
	for (uint64_t i = 0; i < 2048; i++)
		pd[i] = (i << 21) | PTE_P | PTE_RW | PTE_PS;
	return 0;
}

void cpu_boot_sregs(enum boot_kind kind, struct kvm_sregs *s)
{
	uint64_t code = kind == BOOT_PVH ? GDT_CODE32 : GDT_CODE64;

	s->gdt.base = LAYOUT_GDT;
	s->gdt.limit = 4 * 8 - 1;
	s->idt.base = LAYOUT_IDT;
	s->idt.limit = 0;
	s->cs = seg_from_desc(code, BOOT_CS);
	s->ds = s->es = s->fs = s->gs = s->ss = seg_from_desc(GDT_DATA, BOOT_DS);
	s->cr0 = CR0_PE | CR0_ET;
	s->cr4 = 0;
	s->efer = 0;
	if (kind == BOOT_BZIMAGE) {
		s->cr3 = LAYOUT_PML4;
		s->cr4 |= CR4_PAE;
		s->cr0 |= CR0_PG;
		s->efer |= EFER_LME | EFER_LMA;
	}
}

void cpu_boot_regs(const struct boot_entry *be, struct kvm_regs *r)
{
	memset(r, 0, sizeof(*r));
	r->rflags = 2; /* bit 1 is reserved-as-one; interrupts off */
	r->rip = be->rip;
	if (be->kind == BOOT_PVH)
		r->rbx = be->boot_info;
	else
		r->rsi = be->boot_info;
}

/*
 * layout: where kiln-vmm puts things in guest-physical memory at boot.
 *
 * Everything below 1 MiB that the kernel must find sits in the first
 * 640 KiB ("base memory"), which the e820 map reports as RAM up to the MP
 * table; [EBDA_START, 1 MiB) is reserved like on a PC so the kernel's
 * MP-table scan of the last KiB of base memory finds ours.
 */
#ifndef KILN_LAYOUT_H
#define KILN_LAYOUT_H

#define LAYOUT_GDT 0x500ULL        /* 4 descriptors */
#define LAYOUT_IDT 0x520ULL        /* empty: interrupts stay off until the kernel sets its own */
#define LAYOUT_PVH_INFO 0x6000ULL  /* struct hvm_start_info + modlist + memmap */
#define LAYOUT_ZERO_PAGE 0x7000ULL /* struct boot_params for the 64-bit entry */
#define LAYOUT_PML4 0x9000ULL      /* identity page tables for the 64-bit entry */
#define LAYOUT_PDPT 0xa000ULL
#define LAYOUT_PD 0xb000ULL /* 4 pages: 4 GiB in 2 MiB pages */
#define LAYOUT_CMDLINE 0x20000ULL
#define LAYOUT_CMDLINE_MAX 0x10000ULL
#define LAYOUT_EBDA_START 0x9fc00ULL /* MP floating pointer + config table */
#define LAYOUT_HIMEM 0x100000ULL     /* 1 MiB: where the kernel may go */

/* Fixed devices. */
#define LAYOUT_IOAPIC 0xfec00000ULL
#define LAYOUT_LAPIC 0xfee00000ULL

#endif

/*
 * cpu_boot: the register state the boot CPU starts the kernel in.
 *
 * 64-bit boot protocol: long mode, identity-mapped page tables covering the
 * first 4 GiB, __BOOT_CS (0x10) / __BOOT_DS (0x18), RSI = zero page.
 * PVH: 32-bit protected mode, paging off, flat segments, EBX = start_info.
 * Pure: writes tables through guest_mem and fills KVM's register structs;
 * the caller does the ioctls.
 */
#ifndef KILN_CPU_BOOT_H
#define KILN_CPU_BOOT_H

#include <linux/kvm.h>

#include "vmm/boot/boot_linux.h"
#include "lib/guest/guest_mem.h"

#define BOOT_CS 0x10
#define BOOT_DS 0x18

/* Write the GDT (and, for BOOT_BZIMAGE, page tables). 0 or -EFAULT. */
int cpu_boot_tables(const struct guest_mem *gm, enum boot_kind kind);

/* Set the special registers for `kind`; `s` holds KVM's current values. */
void cpu_boot_sregs(enum boot_kind kind, struct kvm_sregs *s);

/* General registers for entering the kernel at `be`. */
void cpu_boot_regs(const struct boot_entry *be, struct kvm_regs *r);

#endif

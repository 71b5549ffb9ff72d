/*
 * boot_linux: parse a Linux kernel image and load it into guest memory
 * following the x86 64-bit boot protocol (bzImage) or the PVH direct boot
 * ABI (uncompressed ELF vmlinux with a XEN_ELFNOTE_PHYS32_ENTRY note).
 *
 * Pure: everything goes through guest_mem, so it runs in unit tests against
 * a plain buffer. Images are untrusted input: every size and offset in them
 * is checked against the image length before use.
 */
#ifndef KILN_BOOT_LINUX_H
#define KILN_BOOT_LINUX_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"
#include "lib/guest/guest_mem.h"

enum boot_kind { BOOT_BZIMAGE, BOOT_PVH };

/* What the setup header of a bzImage says (Documentation/x86/boot.rst). */
struct bzimage_info {
	uint16_t version;      /* boot protocol version, e.g. 0x020f */
	size_t setup_len;      /* bytes of real-mode setup incl. boot sector */
	size_t pm_len;         /* bytes of protected-mode kernel after it */
	size_t hdr_end;        /* end offset of the setup header in the image */
	uint64_t pref_address; /* where the kernel wants to run */
	uint32_t init_size;    /* bytes it needs from there while booting */
	uint32_t cmdline_size; /* longest command line, without the NUL */
	uint32_t initrd_addr_max;
};

#define PVH_MAX_SEGMENTS 16

struct pvh_segment {
	uint64_t offset, filesz, paddr, memsz;
};

struct pvh_info {
	uint32_t entry; /* 32-bit physical entry point */
	int nseg;
	struct pvh_segment seg[PVH_MAX_SEGMENTS];
};

struct boot_spec {
	const uint8_t *kernel;
	size_t kernel_len;
	const uint8_t *initrd; /* may be NULL */
	size_t initrd_len;
	const char *cmdline;
	/* Files behind kernel/initrd: when >= 0 (> 0: a zeroed spec has
	 * none), what goes into guest RAM is read from them with pread
	 * (guest_mem_read_file) rather than copied from the mapping above,
	 * which is then only parsed; -1 copies from the mapping. */
	int kernel_fd, initrd_fd;
};

struct boot_entry {
	enum boot_kind kind;
	uint64_t rip;       /* first instruction */
	uint64_t boot_info; /* RSI (zero page) for bzImage, RBX (start_info) for PVH */
	uint64_t kernel_end;
	uint64_t initrd_addr;
};

/* Longest command line the PVH path accepts (x86 COMMAND_LINE_SIZE - 1). */
#define PVH_CMDLINE_MAX 2047

int bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *out, struct err *e);
int pvh_parse(const uint8_t *img, size_t len, struct pvh_info *out, struct err *e);

/* Check that `img` is a kernel kiln can boot, without loading it. */
int linux_check(const uint8_t *img, size_t len, struct err *e);

/*
 * Detect the image kind, load kernel, command line, initrd, e820 and boot
 * parameters into `gm`. Returns 0 and fills `out`, or -ENOEXEC (not a
 * kernel kiln can boot), -E2BIG (command line too long), -ENOMEM (guest RAM
 * too small for kernel or initrd), with the reason in `e`.
 */
int linux_load(const struct guest_mem *gm, const struct boot_spec *spec, struct boot_entry *out,
	       struct err *e);

#endif

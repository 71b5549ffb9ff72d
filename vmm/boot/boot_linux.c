#include "vmm/boot/boot_linux.h"

#include <asm/bootparam.h>
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "vmm/boot/e820.h"
#include "lib/base/le.h"
#include "vmm/boot/layout.h"

/* Documentation/x86/boot.rst */
#define BOOT_FLAG_OFF 0x1fe
#define HDR_MAGIC_OFF 0x202
#define HDR_JUMP_END_OFF 0x201 /* byte: length of the header after 0x202 */
#define SETUP_HDR_OFF 0x1f1
#define MIN_PROTOCOL 0x020c /* 2.12: xloadflags and the 64-bit entry */
#define XLF_KERNEL_64_BIT (1 << 0)
#define LOADER_UNDEFINED 0xff
#define STARTUP_64_OFFSET 0x200
#define HEAP_END 0xfe00

/* PVH direct boot ABI (xen/include/public/arch-x86/hvm/start_info.h). */
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC 0x336ec578
#define PVH_MODLIST (LAYOUT_PVH_INFO + 0x40)
#define PVH_MEMMAP (LAYOUT_PVH_INFO + 0x80)

struct hvm_start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
	uint32_t memmap_entries, reserved;
};

struct hvm_modlist_entry {
	uint64_t paddr, size, cmdline_paddr, reserved;
};

struct hvm_memmap_entry {
	uint64_t addr, size;
	uint32_t type, reserved;
};

int bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *out, struct err *e)
{
	struct setup_header h;
	size_t hdr_end, sects;

	memset(out, 0, sizeof(*out));
	if (len < HDR_MAGIC_OFF + 4 || memcmp(img + HDR_MAGIC_OFF, "HdrS", 4) != 0)
		return err_set(e, ENOEXEC, "not a bzImage or ELF vmlinux (no HdrS magic)");
	if (le_get16(img + BOOT_FLAG_OFF) != 0xaa55)
		return err_set(e, ENOEXEC, "bzImage boot flag is not 0xAA55: image damaged");
	hdr_end = HDR_MAGIC_OFF + img[HDR_JUMP_END_OFF];
	if (hdr_end > len)
		return err_set(e, ENOEXEC, "bzImage truncated inside its setup header");
	memset(&h, 0, sizeof(h));
	memcpy(&h, img + SETUP_HDR_OFF,
	       hdr_end - SETUP_HDR_OFF < sizeof(h) ? hdr_end - SETUP_HDR_OFF : sizeof(h));
	if (h.version < MIN_PROTOCOL)
		return err_set(e, ENOEXEC,
			       "bzImage boot protocol %u.%02u is too old: kiln needs 2.12+ (Linux 3.8+)",
			       h.version >> 8, h.version & 0xff);
	if (hdr_end < SETUP_HDR_OFF + offsetof(struct setup_header, init_size) + 4)
		return err_set(e, ENOEXEC, "bzImage setup header too short for protocol %#x",
			       h.version);
	if (!(h.xloadflags & XLF_KERNEL_64_BIT))
		return err_set(e, ENOEXEC, "bzImage has no 64-bit entry point (a 32-bit kernel?)");
	sects = h.setup_sects ? h.setup_sects : 4;
	out->setup_len = (sects + 1) * 512;
	if (out->setup_len >= len)
		return err_set(e, ENOEXEC, "bzImage truncated: %zu bytes, setup alone is %zu", len,
			       out->setup_len);
	out->pm_len = len - out->setup_len;
	if ((uint64_t)h.syssize * 16 > out->pm_len)
		return err_set(e, ENOEXEC,
			       "bzImage truncated: kernel needs %llu bytes, file has %zu",
			       (unsigned long long)h.syssize * 16, out->pm_len);
	out->version = h.version;
	out->hdr_end = hdr_end;
	out->pref_address = h.pref_address;
	out->init_size = h.init_size;
	out->cmdline_size = h.cmdline_size;
	out->initrd_addr_max = h.initrd_addr_max;
	if (out->init_size < out->pm_len)
		out->init_size = (uint32_t)out->pm_len;
	return 0;
}

static int pvh_note(const uint8_t *img, size_t off, size_t size, struct pvh_info *out)
{
	size_t end = off + size;

	while (end - off >= 12) {
		uint32_t namesz = le_get32(img + off), descsz = le_get32(img + off + 4),
			 type = le_get32(img + off + 8);
		size_t name = off + 12;
		size_t desc, next;

		/* Sizes are padded to 4 bytes; bound them before any arithmetic. */
		if (namesz > end - name)
			return -1;
		desc = name + ((namesz + 3u) & ~3u);
		if (desc > end || descsz > end - desc)
			return -1;
		next = desc + ((descsz + 3u) & ~3u);
		if (type == XEN_ELFNOTE_PHYS32_ENTRY && namesz == 4 &&
		    memcmp(img + name, "Xen", 4) == 0 && (descsz == 4 || descsz == 8)) {
			out->entry = le_get32(img + desc);
			return 1;
		}
		if (next > end)
			break;
		off = next;
	}
	return 0;
}

int pvh_parse(const uint8_t *img, size_t len, struct pvh_info *out, struct err *e)
{
	Elf64_Ehdr eh;
	int found = 0;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(eh) || memcmp(img, ELFMAG, SELFMAG) != 0)
		return err_set(e, ENOEXEC, "not an ELF file");
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64)
		return err_set(e, ENOEXEC,
			       "ELF vmlinux is not a 64-bit little-endian x86-64 image");
	if (eh.e_type != ET_EXEC)
		return err_set(e, ENOEXEC, "ELF file is not an executable vmlinux");
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phoff > len ||
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
		return err_set(e, ENOEXEC, "ELF program headers lie outside the file (truncated?)");

	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img + eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			return err_set(e, ENOEXEC,
				       "ELF segment %d lies outside the file (truncated?)", i);
		if (ph.p_type == PT_LOAD) {
			if (ph.p_filesz > ph.p_memsz)
				return err_set(e, ENOEXEC,
					       "ELF segment %d: file size exceeds memory size", i);
			if (out->nseg == PVH_MAX_SEGMENTS)
				return err_set(e, ENOEXEC,
					       "ELF vmlinux has more than %d loadable segments",
					       PVH_MAX_SEGMENTS);
			out->seg[out->nseg++] = (struct pvh_segment){ .offset = ph.p_offset,
								      .filesz = ph.p_filesz,
								      .paddr = ph.p_paddr,
								      .memsz = ph.p_memsz };
		} else if (ph.p_type == PT_NOTE && !found) {
			int r = pvh_note(img, ph.p_offset, ph.p_filesz, out);

			if (r < 0)
				return err_set(e, ENOEXEC, "ELF note segment %d is malformed", i);
			found = r;
		}
	}
	if (!found)
		return err_set(
			e, ENOEXEC,
			"vmlinux has no PVH entry note: build it with CONFIG_PVH=y, or boot the bzImage");
	if (out->nseg == 0)
		return err_set(e, ENOEXEC, "ELF vmlinux has no loadable segment");
	return 0;
}

/* Bytes of the kernel or initrd file at `off` into guest RAM at `gpa`:
 * read from the file when the spec has it (see boot_spec), else copied
 * from `img`, its mapping. */
static int put_file(const struct guest_mem *gm, uint64_t gpa, const uint8_t *img, int fd,
		    uint64_t off, uint64_t len)
{
	if (fd > 0)
		return guest_mem_read_file(gm, gpa, fd, off, len);
	return guest_mem_write(gm, gpa, img + off, len);
}

/* Page-aligned address for the initrd: as high as allowed, above `floor`. */
static int place_initrd(const struct guest_mem *gm, const struct boot_spec *spec, uint64_t max_end,
			uint64_t floor, uint64_t *addr, struct err *e)
{
	uint64_t top = gm->low_size < max_end ? gm->low_size : max_end;
	int err;

	if (spec->initrd_len > top || ((top - spec->initrd_len) & ~0xfffULL) < floor)
		return err_set(
			e, ENOMEM,
			"initrd (%zu KiB) does not fit in guest RAM beside the kernel: raise --mem",
			spec->initrd_len >> 10);
	*addr = (top - spec->initrd_len) & ~0xfffULL;
	if ((err = put_file(gm, *addr, spec->initrd, spec->initrd_fd, 0, spec->initrd_len)))
		return err_set(e, -err, "reading the initrd into guest RAM: %s", strerror(-err));
	return 0;
}

static int load_cmdline(const struct guest_mem *gm, const char *cmdline, size_t max, struct err *e)
{
	size_t n = strlen(cmdline);

	if (n > max)
		return err_set(e, E2BIG, "kernel command line is %zu bytes, the kernel accepts %zu",
			       n, max);
	return guest_mem_write(gm, LAYOUT_CMDLINE, cmdline, n + 1);
}

static int load_bzimage(const struct guest_mem *gm, const struct boot_spec *spec,
			struct boot_entry *out, struct err *e)
{
	struct bzimage_info bi;
	struct boot_params *zp;
	struct e820_entry map[E820_MAX];
	uint64_t load, end, cmax;
	int n, err;

	if ((err = bzimage_parse(spec->kernel, spec->kernel_len, &bi, e)))
		return err;
	/*
	 * Run where the kernel prefers: a non-relocatable kernel would otherwise
	 * copy itself there first, which costs boot time.
	 */
	load = bi.pref_address >= LAYOUT_HIMEM ? bi.pref_address : LAYOUT_HIMEM;
	if (__builtin_add_overflow(load, (uint64_t)bi.init_size, &end) || end > gm->low_size)
		return err_set(e, ENOMEM,
			       "guest RAM too small: the kernel needs %llu MiB to boot: raise --mem",
			       (unsigned long long)((end + (1 << 20) - 1) >> 20));
	/*
	 * Copied, not mapped: the decompressor overwrites this area at once, and
	 * copy-on-write faults page by page cost more than one copy (measured
	 * with bench/boot: +2 s per boot in the nested harness).
	 */
	if ((err = put_file(gm, load, spec->kernel, spec->kernel_fd, bi.setup_len, bi.pm_len)))
		return err == -EFAULT ? err_set(e, ENOMEM, "kernel does not fit in guest RAM")
				      : err_set(e, -err, "reading the kernel: %s", strerror(-err));
	/* The image's own limit, but never past the command-line area. */
	cmax = bi.cmdline_size ? bi.cmdline_size : 255;
	if (cmax > LAYOUT_CMDLINE_MAX - 1)
		cmax = LAYOUT_CMDLINE_MAX - 1;
	if ((err = load_cmdline(gm, spec->cmdline, cmax, e)))
		return err;

	zp = guest_mem_ptr(gm, LAYOUT_ZERO_PAGE, sizeof(*zp));
	if (!zp)
		return err_set(e, ENOMEM, "guest RAM too small for the zero page");
	memset(zp, 0, sizeof(*zp));
	memcpy(&zp->hdr, spec->kernel + SETUP_HDR_OFF,
	       bi.hdr_end - SETUP_HDR_OFF < sizeof(zp->hdr) ? bi.hdr_end - SETUP_HDR_OFF
							    : sizeof(zp->hdr));
	zp->hdr.type_of_loader = LOADER_UNDEFINED;
	zp->hdr.loadflags |= CAN_USE_HEAP;
	zp->hdr.heap_end_ptr = HEAP_END - 0x200;
	zp->hdr.cmd_line_ptr = (uint32_t)LAYOUT_CMDLINE;
	zp->ext_cmd_line_ptr = 0;
	zp->hdr.code32_start = (uint32_t)load;
	if (spec->initrd) {
		uint64_t max = (uint64_t)bi.initrd_addr_max + 1;

		if ((err = place_initrd(gm, spec, max, end, &out->initrd_addr, e)))
			return err;
		zp->hdr.ramdisk_image = (uint32_t)out->initrd_addr;
		zp->hdr.ramdisk_size = (uint32_t)spec->initrd_len;
	}
	n = e820_build(gm, map, E820_MAX);
	if (n < 0)
		return err_set(e, ENOMEM, "guest RAM too small for a memory map");
	for (int i = 0; i < n; i++) {
		zp->e820_table[i].addr = map[i].addr;
		zp->e820_table[i].size = map[i].size;
		zp->e820_table[i].type = map[i].type;
	}
	zp->e820_entries = (uint8_t)n;

	out->kind = BOOT_BZIMAGE;
	out->rip = load + STARTUP_64_OFFSET;
	out->boot_info = LAYOUT_ZERO_PAGE;
	out->kernel_end = end;
	return 0;
}

static int load_pvh(const struct guest_mem *gm, const struct boot_spec *spec,
		    struct boot_entry *out, struct err *e)
{
	struct pvh_info pi;
	struct hvm_start_info si = { .magic = HVM_START_MAGIC, .version = 1 };
	struct hvm_memmap_entry mm[E820_MAX];
	struct e820_entry map[E820_MAX];
	uint64_t end = 0;
	int n, err, entry_loaded = 0;

	if ((err = pvh_parse(spec->kernel, spec->kernel_len, &pi, e)))
		return err;
	for (int i = 0; i < pi.nseg; i++) {
		const struct pvh_segment *s = &pi.seg[i];
		uint8_t *dst = guest_mem_ptr(gm, s->paddr, s->memsz);

		if (!dst || s->paddr < LAYOUT_HIMEM)
			return err_set(
				e, ENOMEM,
				"vmlinux segment at %#llx (+%llu MiB) is outside guest RAM: raise --mem",
				(unsigned long long)s->paddr, (unsigned long long)(s->memsz >> 20));
		if ((err = put_file(gm, s->paddr, spec->kernel, spec->kernel_fd, s->offset,
				    s->filesz)))
			return err_set(e, -err, "cannot load vmlinux segment %d into guest RAM: %s",
				       i, strerror(-err));
		memset(dst + s->filesz, 0, s->memsz - s->filesz);
		if (s->paddr + s->memsz > end)
			end = s->paddr + s->memsz;
		if (pi.entry >= s->paddr && pi.entry - s->paddr < s->memsz)
			entry_loaded = 1;
	}
	/* The vCPU starts at the entry: one outside every segment would have
	 * it execute unloaded RAM or the MMIO hole (a KVM emulation failure
	 * instead of a clear refusal). Found by fuzz_boot. */
	if (!entry_loaded)
		return err_set(e, ENOEXEC,
			       "PVH entry point %#x lies outside the vmlinux's loadable segments",
			       pi.entry);
	if ((err = load_cmdline(gm, spec->cmdline, PVH_CMDLINE_MAX, e)))
		return err;
	si.cmdline_paddr = LAYOUT_CMDLINE;
	if (spec->initrd) {
		struct hvm_modlist_entry mod = { 0 };

		if ((err = place_initrd(gm, spec, GUEST_MEM_MMIO_HOLE_START, end, &out->initrd_addr,
					e)))
			return err;
		mod.paddr = out->initrd_addr;
		mod.size = spec->initrd_len;
		if ((err = guest_mem_write(gm, PVH_MODLIST, &mod, sizeof(mod))))
			return err_set(e, ENOMEM, "guest RAM too small for the PVH module list");
		si.nr_modules = 1;
		si.modlist_paddr = PVH_MODLIST;
	}
	n = e820_build(gm, map, E820_MAX);
	if (n < 0)
		return err_set(e, ENOMEM, "guest RAM too small for a memory map");
	for (int i = 0; i < n; i++)
		mm[i] = (struct hvm_memmap_entry){ .addr = map[i].addr,
						   .size = map[i].size,
						   .type = map[i].type };
	if (guest_mem_write(gm, PVH_MEMMAP, mm, (uint64_t)n * sizeof(mm[0])))
		return err_set(e, ENOMEM, "guest RAM too small for the PVH memory map");
	si.memmap_paddr = PVH_MEMMAP;
	si.memmap_entries = (uint32_t)n;
	if (guest_mem_write(gm, LAYOUT_PVH_INFO, &si, sizeof(si)))
		return err_set(e, ENOMEM, "guest RAM too small for the PVH start info");

	out->kind = BOOT_PVH;
	out->rip = pi.entry;
	out->boot_info = LAYOUT_PVH_INFO;
	out->kernel_end = end;
	return 0;
}

static int is_elf(const uint8_t *img, size_t len)
{
	return len >= SELFMAG && memcmp(img, ELFMAG, SELFMAG) == 0;
}

int linux_check(const uint8_t *img, size_t len, struct err *e)
{
	struct bzimage_info bi;
	struct pvh_info pi;

	return is_elf(img, len) ? pvh_parse(img, len, &pi, e) : bzimage_parse(img, len, &bi, e);
}

int linux_load(const struct guest_mem *gm, const struct boot_spec *spec, struct boot_entry *out,
	       struct err *e)
{
	memset(out, 0, sizeof(*out));
	if (gm->low_size < 2 * LAYOUT_HIMEM)
		return err_set(e, ENOMEM, "guest RAM of %llu KiB is too small to boot Linux",
			       (unsigned long long)(gm->low_size >> 10));
	if (is_elf(spec->kernel, spec->kernel_len))
		return load_pvh(gm, spec, out, e);
	return load_bzimage(gm, spec, out, e);
}

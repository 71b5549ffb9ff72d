/*
 * boot_linux: bzImage and PVH ELF parsing and loading against synthetic
 * images. Kernel images are untrusted input, so most cases here are
 * damaged or hostile images that must be refused with the exact -errno
 * and a message that says what is wrong.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <asm/bootparam.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/boot/boot_linux.h"
#include "vmm/boot/layout.h"
#include "bytes.h"

#define MIB (1ULL << 20)
#define RAM (64 * MIB)

/* Setup header offsets (Documentation/x86/boot.rst), checked below. */
#define OFF_SETUP_SECTS 0x1f1
#define OFF_SYSSIZE 0x1f4
#define OFF_BOOT_FLAG 0x1fe
#define OFF_JUMP 0x200
#define OFF_HDR_LEN 0x201 /* jump displacement: header ends at 0x202 + this */
#define OFF_MAGIC 0x202
#define OFF_VERSION 0x206
#define OFF_INITRD_MAX 0x22c
#define OFF_XLOADFLAGS 0x236
#define OFF_CMDLINE_SIZE 0x238
#define OFF_PREF_ADDRESS 0x258
#define OFF_INIT_SIZE 0x260

#define HDR_OFF(f) (0x1f1 + offsetof(struct setup_header, f))
_Static_assert(HDR_OFF(setup_sects) == OFF_SETUP_SECTS, "setup_sects");
_Static_assert(HDR_OFF(syssize) == OFF_SYSSIZE, "syssize");
_Static_assert(HDR_OFF(boot_flag) == OFF_BOOT_FLAG, "boot_flag");
_Static_assert(HDR_OFF(jump) == OFF_JUMP, "jump");
_Static_assert(HDR_OFF(header) == OFF_MAGIC, "header");
_Static_assert(HDR_OFF(version) == OFF_VERSION, "version");
_Static_assert(HDR_OFF(initrd_addr_max) == OFF_INITRD_MAX, "initrd_addr_max");
_Static_assert(HDR_OFF(xloadflags) == OFF_XLOADFLAGS, "xloadflags");
_Static_assert(HDR_OFF(cmdline_size) == OFF_CMDLINE_SIZE, "cmdline_size");
_Static_assert(HDR_OFF(pref_address) == OFF_PREF_ADDRESS, "pref_address");
_Static_assert(HDR_OFF(init_size) == OFF_INIT_SIZE, "init_size");

/* The fake bzImage: 4 setup sectors + boot sector, then the "kernel". */
#define SETUP_SECTS 4
#define SETUP_LEN ((SETUP_SECTS + 1) * 512)
#define PM_LEN 8192
#define HDR_LEN_BYTE 0x6a /* header through kernel_info_offset, like 2.15 */
#define PREF (16 * MIB)
#define INIT_SIZE (1 * MIB)
#define INITRD_MAX 0x37ffffffu

/* The fake vmlinux: ELF header, 2 program headers, notes, one segment. */
#define E_PHOFF 64
#define E_NOTE_OFF (E_PHOFF + 2 * sizeof(Elf64_Phdr))
#define E_SEG_OFF 512
#define E_SEG_FILESZ 4096
#define E_SEG_MEMSZ 8192
#define E_LEN (E_SEG_OFF + E_SEG_FILESZ)
#define E_PADDR (16 * MIB)
#define E_ENTRY (E_PADDR + 0x40)
#define PH_LOAD 0
#define PH_NOTE 1

#define HVM_START_MAGIC 0x336ec578

struct fx {
	struct guest_mem gm;
	uint8_t *img;
	size_t len;
	uint8_t *initrd;
	struct boot_spec spec;
	struct boot_entry be;
	struct err e;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->gm.host = calloc(1, RAM);
	assert_non_null(f->gm.host);
	guest_mem_layout(&f->gm, RAM);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	free(f->gm.host);
	free(f->img);
	free(f->initrd);
	free(f);
	return 0;
}

/* A bzImage that kiln must accept; tests then damage one field. */
static void bz_build(struct fx *f)
{
	free(f->img);
	f->len = SETUP_LEN + PM_LEN;
	f->img = calloc(1, f->len);
	assert_non_null(f->img);
	f->img[OFF_SETUP_SECTS] = SETUP_SECTS;
	put32(f->img + OFF_SYSSIZE, PM_LEN / 16);
	put16(f->img + OFF_BOOT_FLAG, 0xaa55);
	f->img[OFF_JUMP] = 0xeb;
	f->img[OFF_HDR_LEN] = HDR_LEN_BYTE;
	memcpy(f->img + OFF_MAGIC, "HdrS", 4);
	put16(f->img + OFF_VERSION, 0x020f);
	put32(f->img + OFF_INITRD_MAX, INITRD_MAX);
	put16(f->img + OFF_XLOADFLAGS, 1); /* XLF_KERNEL_64 */
	put32(f->img + OFF_CMDLINE_SIZE, 2047);
	put64(f->img + OFF_PREF_ADDRESS, PREF);
	put32(f->img + OFF_INIT_SIZE, INIT_SIZE);
	for (size_t i = 0; i < PM_LEN; i++)
		f->img[SETUP_LEN + i] = (uint8_t)(i * 7 + 1);
	f->spec = (struct boot_spec){ .kernel = f->img,
				      .kernel_len = f->len,
				      .cmdline = "console=ttyS0" };
}

/* Cut the image to exactly n bytes, so ASan sees any read past the end. */
static void truncate_img(struct fx *f, size_t n)
{
	uint8_t *p = malloc(n);

	assert_non_null(p);
	memcpy(p, f->img, n);
	free(f->img);
	f->img = p;
	f->len = n;
	f->spec.kernel = p;
	f->spec.kernel_len = n;
}

static void set_initrd(struct fx *f, size_t len)
{
	f->initrd = malloc(len);
	assert_non_null(f->initrd);
	for (size_t i = 0; i < len; i++)
		f->initrd[i] = (uint8_t)(i * 13 + 5);
	f->spec.initrd = f->initrd;
	f->spec.initrd_len = len;
}

static int bz_parse(struct fx *f)
{
	struct bzimage_info bi;

	f->e.msg[0] = '\0';
	return bzimage_parse(f->img, f->len, &bi, &f->e);
}

static int load(struct fx *f)
{
	f->e.msg[0] = '\0';
	return linux_load(&f->gm, &f->spec, &f->be, &f->e);
}

#define assert_msg(f, phrase)                                                      \
	do {                                                                       \
		if (!strstr((f)->e.msg, (phrase)))                                 \
			fail_msg("message '%s' lacks '%s'", (f)->e.msg, (phrase)); \
	} while (0)

/* ---- bzImage ---- */

/* The header fields come out as the image states them. */
static void test_bz_parse_fields(void **state)
{
	struct fx *f = *state;
	struct bzimage_info bi;

	bz_build(f);
	assert_int_equal(bzimage_parse(f->img, f->len, &bi, &f->e), 0);
	assert_int_equal(bi.version, 0x020f);
	assert_int_equal(bi.setup_len, SETUP_LEN);
	assert_int_equal(bi.pm_len, PM_LEN);
	assert_int_equal(bi.hdr_end, 0x202 + HDR_LEN_BYTE);
	assert_int_equal(bi.pref_address, PREF);
	assert_int_equal(bi.init_size, INIT_SIZE);
	assert_int_equal(bi.cmdline_size, 2047);
	assert_int_equal(bi.initrd_addr_max, INITRD_MAX);
}

/* setup_sects == 0 means 4 (boot.rst), and init_size never below the payload. */
static void test_bz_parse_legacy_defaults(void **state)
{
	struct fx *f = *state;
	struct bzimage_info bi;

	bz_build(f);
	f->img[OFF_SETUP_SECTS] = 0;
	put32(f->img + OFF_INIT_SIZE, 16);
	assert_int_equal(bzimage_parse(f->img, f->len, &bi, &f->e), 0);
	assert_int_equal(bi.setup_len, 5 * 512);
	assert_int_equal(bi.init_size, PM_LEN);
}

/* A valid image lands at pref_address with a complete zero page. */
static void test_bz_load_valid(void **state)
{
	struct fx *f = *state;
	const struct boot_params *zp = (const void *)(f->gm.host + LAYOUT_ZERO_PAGE);

	bz_build(f);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.kind, BOOT_BZIMAGE);
	assert_int_equal(f->be.rip, PREF + 0x200);
	assert_int_equal(f->be.boot_info, LAYOUT_ZERO_PAGE);
	assert_int_equal(f->be.kernel_end, PREF + INIT_SIZE);
	assert_int_equal(f->be.initrd_addr, 0);
	assert_memory_equal(f->gm.host + PREF, f->img + SETUP_LEN, PM_LEN);

	assert_int_equal(zp->hdr.cmd_line_ptr, LAYOUT_CMDLINE);
	assert_string_equal((const char *)f->gm.host + LAYOUT_CMDLINE, "console=ttyS0");
	assert_int_equal(zp->ext_cmd_line_ptr, 0);
	assert_int_equal(zp->hdr.type_of_loader, 0xff);
	assert_true(zp->hdr.loadflags & CAN_USE_HEAP);
	assert_int_equal(zp->hdr.code32_start, PREF);
	assert_int_equal(zp->hdr.version, 0x020f);
	assert_int_equal(zp->hdr.boot_flag, 0xaa55);
	assert_int_equal(zp->hdr.ramdisk_image, 0);
	assert_int_equal(zp->hdr.ramdisk_size, 0);

	/* Base memory, the reserved EBDA..1 MiB hole, the rest of RAM. */
	assert_int_equal(zp->e820_entries, 3);
	assert_int_equal(zp->e820_table[0].addr, 0);
	assert_int_equal(zp->e820_table[0].size, LAYOUT_EBDA_START);
	assert_int_equal(zp->e820_table[0].type, 1);
	assert_int_equal(zp->e820_table[1].addr, LAYOUT_EBDA_START);
	assert_int_equal(zp->e820_table[1].type, 2);
	assert_int_equal(zp->e820_table[2].addr, MIB);
	assert_int_equal(zp->e820_table[2].size, RAM - MIB);
	assert_int_equal(zp->e820_table[2].type, 1);
}

/* A memfd holding `len` bytes of `p`: the file behind a kernel or initrd. */
static int file_of(const uint8_t *p, size_t len)
{
	int fd = memfd_create("kiln-boot-test", MFD_CLOEXEC);

	assert_true(fd > 0);
	assert_int_equal(write(fd, p, len), (ssize_t)len);
	return fd;
}

/* With the files given, what goes into guest RAM is read from them: the
 * mapping (here a copy whose bulk is zeroed) is only parsed. */
static void test_bz_load_reads_the_files(void **state)
{
	struct fx *f = *state;
	uint8_t *parsed;
	const size_t rdlen = 12345;
	int kfd, rfd;

	bz_build(f);
	set_initrd(f, rdlen);
	kfd = file_of(f->img, f->len);
	rfd = file_of(f->initrd, rdlen);
	parsed = calloc(1, f->len);
	assert_non_null(parsed);
	memcpy(parsed, f->img, SETUP_LEN);
	f->spec.kernel = parsed;
	f->spec.kernel_fd = kfd;
	f->spec.initrd = (const uint8_t *)"not read from here";
	f->spec.initrd_fd = rfd;
	assert_int_equal(load(f), 0);
	assert_memory_equal(f->gm.host + PREF, f->img + SETUP_LEN, PM_LEN);
	assert_memory_equal(f->gm.host + f->be.initrd_addr, f->initrd, rdlen);

	/* A file that shrank since it was mapped: one clear error. */
	assert_int_equal(ftruncate(kfd, SETUP_LEN + PM_LEN / 2), 0);
	assert_int_equal(load(f), -EIO);
	assert_msg(f, "reading the kernel");
	assert_int_equal(ftruncate(kfd, f->len), 0);
	assert_int_equal(ftruncate(rfd, rdlen - 1), 0);
	assert_int_equal(load(f), -EIO);
	assert_msg(f, "reading the initrd");
	close(kfd);
	close(rfd);
	free(parsed);
}

/* A kernel preferring low memory is still loaded at 1 MiB, above the boot data. */
static void test_bz_load_pref_below_1m(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put64(f->img + OFF_PREF_ADDRESS, 0x8000);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.rip, MIB + 0x200);
	assert_memory_equal(f->gm.host + MIB, f->img + SETUP_LEN, PM_LEN);
}

/* The initrd goes as high as RAM allows, page aligned, above the kernel. */
static void test_bz_initrd_placed(void **state)
{
	struct fx *f = *state;
	const struct boot_params *zp = (const void *)(f->gm.host + LAYOUT_ZERO_PAGE);
	const size_t len = 100000;

	bz_build(f);
	set_initrd(f, len);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.initrd_addr, (RAM - len) & ~0xfffULL);
	assert_int_equal(f->be.initrd_addr % 4096, 0);
	assert_true(f->be.initrd_addr >= f->be.kernel_end);
	assert_true(f->be.initrd_addr + len <= RAM);
	assert_memory_equal(f->gm.host + f->be.initrd_addr, f->initrd, len);
	assert_int_equal(zp->hdr.ramdisk_image, f->be.initrd_addr);
	assert_int_equal(zp->hdr.ramdisk_size, len);
}

/* initrd_addr_max below the top of RAM caps where the initrd may end. */
static void test_bz_initrd_addr_max(void **state)
{
	struct fx *f = *state;
	const size_t len = 5000;
	const uint32_t max = 32 * MIB - 1;

	bz_build(f);
	put32(f->img + OFF_INITRD_MAX, max);
	set_initrd(f, len);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.initrd_addr, (32 * MIB - len) & ~0xfffULL);
	assert_true(f->be.initrd_addr + len - 1 <= max);
	assert_true(f->be.initrd_addr >= f->be.kernel_end);
	assert_memory_equal(f->gm.host + f->be.initrd_addr, f->initrd, len);
}

/* Boundary: an initrd filling every page between kernel end and RAM end fits. */
static void test_bz_initrd_exact_fit(void **state)
{
	struct fx *f = *state;
	const size_t len = RAM - (PREF + INIT_SIZE);

	bz_build(f);
	set_initrd(f, len);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.initrd_addr, PREF + INIT_SIZE);
}

/* One byte more pushes the page-aligned start into the kernel: refused. */
static void test_bz_initrd_too_big(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	set_initrd(f, RAM - (PREF + INIT_SIZE) + 1);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "initrd");
	assert_msg(f, "raise --mem");
}

/* Anything without the magic (a text file, a PE, a random blob). */
static void test_bz_no_magic(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	memcpy(f->img + OFF_MAGIC, "HdrZ", 4);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_string_equal(f->e.msg, "not a bzImage or ELF vmlinux (no HdrS magic)");
	assert_int_equal(load(f), -ENOEXEC);
	assert_string_equal(f->e.msg, "not a bzImage or ELF vmlinux (no HdrS magic)");
}

/* A file too short to even hold the magic must not be read past its end. */
static void test_bz_shorter_than_magic(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	truncate_img(f, OFF_MAGIC + 3);
	assert_int_equal(load(f), -ENOEXEC);
	assert_msg(f, "no HdrS magic");
}

static void test_bz_bad_boot_flag(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put16(f->img + OFF_BOOT_FLAG, 0x55aa);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "boot flag is not 0xAA55");
}

/* 2.00 predates xloadflags and the 64-bit entry. */
static void test_bz_protocol_too_old(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put16(f->img + OFF_VERSION, 0x0200);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "boot protocol 2.00 is too old");
	/* Boundary: 2.11 is still too old, 2.12 is enough. */
	put16(f->img + OFF_VERSION, 0x020b);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "2.11 is too old");
	put16(f->img + OFF_VERSION, 0x020c);
	assert_int_equal(bz_parse(f), 0);
}

/* A 32-bit kernel has no startup_64 for kiln to jump to. */
static void test_bz_no_64bit_entry(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put16(f->img + OFF_XLOADFLAGS, 0x2); /* other flags, not XLF_KERNEL_64 */
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "no 64-bit entry point");
}

/* The header claims to run past the end of the file. */
static void test_bz_truncated_in_header(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	truncate_img(f, 0x240);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "truncated inside its setup header");
}

/* A header length byte too small to reach init_size. */
static void test_bz_header_too_short(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	f->img[OFF_HDR_LEN] = 0x40;
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "setup header too short");
}

/* The file ends inside the setup sectors: no kernel after them. */
static void test_bz_truncated_in_setup(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	truncate_img(f, SETUP_LEN);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "truncated: 2560 bytes, setup alone is 2560");
	/* Ending inside the setup sectors, past the header. */
	truncate_img(f, 0x400);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "truncated: 1024 bytes, setup alone is 2560");
}

/* syssize says the kernel is longer than what the file holds. */
static void test_bz_syssize_beyond_file(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put32(f->img + OFF_SYSSIZE, PM_LEN / 16 + 1);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "kernel needs 8208 bytes, file has 8192");
	/* A huge syssize must not wrap in the multiplication. */
	put32(f->img + OFF_SYSSIZE, 0xffffffff);
	assert_int_equal(bz_parse(f), -ENOEXEC);
	assert_msg(f, "truncated");
}

/* The kernel truncates a longer command line silently; kiln refuses it. */
static void test_bz_cmdline_too_long(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put32(f->img + OFF_CMDLINE_SIZE, 16);
	f->spec.cmdline = "0123456789abcdefX"; /* 17 bytes */
	assert_int_equal(load(f), -E2BIG);
	assert_msg(f, "command line is 17 bytes, the kernel accepts 16");
	f->spec.cmdline = "0123456789abcdef"; /* exactly 16 */
	assert_int_equal(load(f), 0);
	assert_string_equal((const char *)f->gm.host + LAYOUT_CMDLINE, "0123456789abcdef");
}

/* init_size past the end of RAM: the kernel would decompress off the end. */
static void test_bz_ram_too_small(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put32(f->img + OFF_INIT_SIZE, RAM - PREF + 1);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "guest RAM too small");
	assert_msg(f, "raise --mem");
	/* Boundary: ending exactly at the top of RAM is fine. */
	put32(f->img + OFF_INIT_SIZE, RAM - PREF);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.kernel_end, RAM);
}

/* A pref_address near 2^64 must not wrap the end-of-kernel check. */
static void test_bz_pref_address_wraps(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	put64(f->img + OFF_PREF_ADDRESS, UINT64_MAX - 0xfff);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "guest RAM");
}

/* Guest RAM below 2 MiB cannot hold boot data plus any kernel. */
static void test_load_tiny_ram(void **state)
{
	struct fx *f = *state;

	bz_build(f);
	guest_mem_layout(&f->gm, 2 * MIB - 4096);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "too small to boot Linux");
}

/* ---- PVH ELF ---- */

static void ph_get(struct fx *f, int i, Elf64_Phdr *ph)
{
	memcpy(ph, f->img + E_PHOFF + (size_t)i * sizeof(*ph), sizeof(*ph));
}

static void ph_put(struct fx *f, int i, const Elf64_Phdr *ph)
{
	memcpy(f->img + E_PHOFF + (size_t)i * sizeof(*ph), ph, sizeof(*ph));
}

static size_t note(uint8_t *p, uint32_t namesz, const char *name, uint32_t descsz, uint32_t type,
		   const void *desc)
{
	size_t n = 12;

	put32(p, namesz);
	put32(p + 4, descsz);
	put32(p + 8, type);
	memcpy(p + n, name, namesz);
	n += (namesz + 3) & ~3u;
	memcpy(p + n, desc, descsz);
	return n + ((descsz + 3) & ~3u);
}

/*
 * A PVH vmlinux: a GNU build-id note the parser must walk past, then the
 * Xen PHYS32_ENTRY note with a 4- or 8-byte descriptor (or none at all).
 */
static void pvh_build(struct fx *f, int descsz, int with_xen)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr load = { 0 }, nt = { 0 };
	uint8_t id[20] = { 1, 2, 3 };
	uint64_t entry = E_ENTRY;
	size_t n;

	free(f->img);
	f->len = E_LEN;
	f->img = calloc(1, f->len);
	assert_non_null(f->img);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = 0xffffffff81000000ULL; /* the virtual entry PVH ignores */
	eh.e_phoff = E_PHOFF;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	memcpy(f->img, &eh, sizeof(eh));

	n = note(f->img + E_NOTE_OFF, 4, "GNU", sizeof(id), NT_GNU_BUILD_ID, id);
	if (with_xen)
		n += note(f->img + E_NOTE_OFF + n, 4, "Xen", (uint32_t)descsz, 18, &entry);
	assert_true(E_NOTE_OFF + n <= E_SEG_OFF);

	load.p_type = PT_LOAD;
	load.p_offset = E_SEG_OFF;
	load.p_paddr = E_PADDR;
	load.p_vaddr = 0xffffffff81000000ULL;
	load.p_filesz = E_SEG_FILESZ;
	load.p_memsz = E_SEG_MEMSZ;
	ph_put(f, PH_LOAD, &load);
	nt.p_type = PT_NOTE;
	nt.p_offset = E_NOTE_OFF;
	nt.p_filesz = n;
	ph_put(f, PH_NOTE, &nt);

	for (size_t i = 0; i < E_SEG_FILESZ; i++)
		f->img[E_SEG_OFF + i] = (uint8_t)(i * 3 + 11);
	f->spec = (struct boot_spec){ .kernel = f->img,
				      .kernel_len = f->len,
				      .cmdline = "console=ttyS0" };
}

static int pvh(struct fx *f)
{
	struct pvh_info pi;

	f->e.msg[0] = '\0';
	return pvh_parse(f->img, f->len, &pi, &f->e);
}

/* The entry note is found past another note, both descriptor sizes. */
static void test_pvh_parse_desc4_and_desc8(void **state)
{
	struct fx *f = *state;
	struct pvh_info pi;

	pvh_build(f, 4, 1);
	assert_int_equal(pvh_parse(f->img, f->len, &pi, &f->e), 0);
	assert_int_equal(pi.entry, E_ENTRY);
	assert_int_equal(pi.nseg, 1);
	assert_int_equal(pi.seg[0].offset, E_SEG_OFF);
	assert_int_equal(pi.seg[0].filesz, E_SEG_FILESZ);
	assert_int_equal(pi.seg[0].memsz, E_SEG_MEMSZ);
	assert_int_equal(pi.seg[0].paddr, E_PADDR);

	pvh_build(f, 8, 1);
	assert_int_equal(pvh_parse(f->img, f->len, &pi, &f->e), 0);
	assert_int_equal(pi.entry, E_ENTRY);
}

/* Loading copies the segment, zeroes its bss and writes hvm_start_info. */
static void test_pvh_load_valid(void **state)
{
	struct fx *f = *state;
	const uint8_t *si = f->gm.host + LAYOUT_PVH_INFO;
	const uint8_t *mm;
	const size_t rdlen = 12345;

	pvh_build(f, 8, 1);
	set_initrd(f, rdlen);
	memset(f->gm.host + E_PADDR, 0xaa, E_SEG_MEMSZ); /* stale data where bss goes */
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.kind, BOOT_PVH);
	assert_int_equal(f->be.rip, E_ENTRY);
	assert_int_equal(f->be.boot_info, LAYOUT_PVH_INFO);
	assert_int_equal(f->be.kernel_end, E_PADDR + E_SEG_MEMSZ);
	assert_memory_equal(f->gm.host + E_PADDR, f->img + E_SEG_OFF, E_SEG_FILESZ);
	for (size_t i = E_SEG_FILESZ; i < E_SEG_MEMSZ; i++)
		assert_int_equal(f->gm.host[E_PADDR + i], 0);

	/* struct hvm_start_info (Xen arch-x86/hvm/start_info.h), by offset. */
	assert_int_equal(get32(si + 0), HVM_START_MAGIC);
	assert_int_equal(get32(si + 4), 1);               /* version */
	assert_int_equal(get32(si + 12), 1);              /* nr_modules */
	assert_int_equal(get64(si + 24), LAYOUT_CMDLINE); /* cmdline_paddr */
	assert_string_equal((const char *)f->gm.host + LAYOUT_CMDLINE, "console=ttyS0");
	assert_int_equal(get32(si + 48), 3);                /* memmap_entries */
	mm = guest_mem_ptr(&f->gm, get64(si + 40), 3 * 24); /* memmap_paddr */
	assert_non_null(mm);
	assert_int_equal(get64(mm + 2 * 24), MIB); /* RAM above 1 MiB */
	assert_int_equal(get64(mm + 2 * 24 + 8), RAM - MIB);
	assert_int_equal(get32(mm + 2 * 24 + 16), 1);

	/* The module list names the initrd, placed page-aligned above the kernel. */
	assert_int_equal(f->be.initrd_addr % 4096, 0);
	assert_true(f->be.initrd_addr >= f->be.kernel_end);
	assert_true(f->be.initrd_addr + rdlen <= RAM);
	assert_memory_equal(f->gm.host + f->be.initrd_addr, f->initrd, rdlen);
	{
		const uint8_t *mod = guest_mem_ptr(&f->gm, get64(si + 16), 32);

		assert_non_null(mod);
		assert_int_equal(get64(mod), f->be.initrd_addr);
		assert_int_equal(get64(mod + 8), rdlen);
	}
}

/* A vmlinux built without CONFIG_PVH: say how to fix it. */
/* A PVH segment is read from the file too, its bss still zeroed. */
static void test_pvh_load_reads_the_file(void **state)
{
	struct fx *f = *state;
	uint8_t *parsed;
	int fd;

	pvh_build(f, 8, 1);
	fd = file_of(f->img, f->len);
	parsed = malloc(f->len);
	assert_non_null(parsed);
	memcpy(parsed, f->img, f->len);
	memset(parsed + E_SEG_OFF, 0, E_SEG_FILESZ);
	f->spec.kernel = parsed;
	f->spec.kernel_fd = fd;
	memset(f->gm.host + E_PADDR, 0xaa, E_SEG_MEMSZ);
	assert_int_equal(load(f), 0);
	assert_memory_equal(f->gm.host + E_PADDR, f->img + E_SEG_OFF, E_SEG_FILESZ);
	for (size_t i = E_SEG_FILESZ; i < E_SEG_MEMSZ; i++)
		assert_int_equal(f->gm.host[E_PADDR + i], 0);
	assert_int_equal(ftruncate(fd, E_SEG_OFF + 1), 0);
	assert_int_equal(load(f), -EIO);
	assert_msg(f, "vmlinux segment 0");
	close(fd);
	free(parsed);
}

static void test_pvh_no_note(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 0);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "CONFIG_PVH");
	assert_int_equal(load(f), -ENOEXEC);
	assert_msg(f, "CONFIG_PVH");
}

/* A Xen note of another type, or with a 2-byte descriptor, is not the entry. */
static void test_pvh_wrong_note_ignored(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr nt;

	pvh_build(f, 4, 1);
	ph_get(f, PH_NOTE, &nt);
	put32(f->img + nt.p_offset + 36 + 8, 17); /* XEN_ELFNOTE_ENTRY, not 18 */
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "CONFIG_PVH");

	pvh_build(f, 2, 1);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "CONFIG_PVH");
}

/* Program headers past the end of the file, or an offset near 2^64. */
static void test_pvh_phoff_beyond_file(void **state)
{
	struct fx *f = *state;
	const size_t phoff = offsetof(Elf64_Ehdr, e_phoff);

	pvh_build(f, 4, 1);
	put64(f->img + phoff, f->len + 1);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "program headers lie outside the file");
	put64(f->img + phoff, f->len - sizeof(Elf64_Phdr) + 1); /* last one cut short */
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "program headers lie outside the file");
	put64(f->img + phoff, UINT64_MAX - 8);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "program headers lie outside the file");
}

/* e_phnum so large the table cannot be in the file. */
static void test_pvh_phnum_huge(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	put16(f->img + offsetof(Elf64_Ehdr, e_phnum), 0xffff);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "program headers lie outside the file");
}

/* A segment whose file bytes run past the end, directly or by wrapping. */
static void test_pvh_segment_beyond_file(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr ph;

	pvh_build(f, 4, 1);
	ph_get(f, PH_LOAD, &ph);
	ph.p_filesz = E_SEG_FILESZ + 1;
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "segment 0 lies outside the file");

	ph.p_offset = 8;
	ph.p_filesz = UINT64_MAX - 7; /* offset + filesz wraps to 0 */
	ph.p_memsz = UINT64_MAX;
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "segment 0 lies outside the file");

	/* The note segment is checked the same way. */
	pvh_build(f, 4, 1);
	ph_get(f, PH_NOTE, &ph);
	ph.p_offset = f->len + 1;
	ph_put(f, PH_NOTE, &ph);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "segment 1 lies outside the file");
}

static void test_pvh_filesz_exceeds_memsz(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr ph;

	pvh_build(f, 4, 1);
	ph_get(f, PH_LOAD, &ph);
	ph.p_memsz = ph.p_filesz - 1;
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "file size exceeds memory size");
}

/* Note sizes that point far outside the note segment. */
static void test_pvh_malformed_note(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	put32(f->img + E_NOTE_OFF, 0xfffffff0); /* namesz of the first note */
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "note segment 1 is malformed");

	pvh_build(f, 4, 1);
	put32(f->img + E_NOTE_OFF, 0xfffffffe); /* namesz: padding wraps to 0 in 32 bits */
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "malformed");

	pvh_build(f, 4, 1);
	put32(f->img + E_NOTE_OFF + 4, 0xffffffff); /* descsz: would wrap when padded */
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "malformed");
}

/* The entry note's descriptor runs past the end of its note segment. */
static void test_pvh_note_cut_by_segment(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr ph;

	pvh_build(f, 8, 1);
	ph_get(f, PH_NOTE, &ph);
	ph.p_filesz -= 4;
	ph_put(f, PH_NOTE, &ph);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "note segment 1 is malformed");
}

static void test_pvh_elf32(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	f->img[EI_CLASS] = ELFCLASS32;
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "not a 64-bit little-endian x86-64 image");
	assert_int_equal(load(f), -ENOEXEC);
}

/* A relocatable object or shared library is not a vmlinux. */
static void test_pvh_not_exec(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	put16(f->img + offsetof(Elf64_Ehdr, e_type), ET_DYN);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "not an executable vmlinux");
}

/* Segments past the end of RAM, or over the boot data below 1 MiB. */
static void test_pvh_segment_outside_ram(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr ph;

	pvh_build(f, 4, 1);
	ph_get(f, PH_LOAD, &ph);
	ph.p_paddr = RAM - E_SEG_MEMSZ + 1; /* last byte one past the end */
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "outside guest RAM");

	ph.p_paddr = LAYOUT_ZERO_PAGE; /* would overwrite the boot structures */
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "outside guest RAM");

	ph.p_paddr = UINT64_MAX - 100; /* paddr + memsz wraps */
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(load(f), -ENOMEM);

	/* Boundary: ending exactly at the top of RAM loads (the segment
	 * still holds the entry point). */
	ph.p_paddr = E_PADDR;
	ph.p_memsz = RAM - E_PADDR;
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->be.kernel_end, RAM);
}

/* Found by fuzz_boot: a PVH entry point outside every loadable segment
 * (the vCPU would start in unloaded RAM or the MMIO hole) is refused. */
static void test_pvh_entry_outside_segments(void **state)
{
	struct fx *f = *state;
	Elf64_Phdr ph;

	pvh_build(f, 4, 1);
	ph_get(f, PH_LOAD, &ph);
	ph.p_paddr = E_PADDR + 0x1000; /* the entry, E_PADDR + 0x40, is below it */
	ph_put(f, PH_LOAD, &ph);
	assert_int_equal(load(f), -ENOEXEC);
	assert_msg(f, "entry point 0x1000040 lies outside");
}

/* The PVH path has its own command line limit (COMMAND_LINE_SIZE - 1). */
static void test_pvh_cmdline_too_long(void **state)
{
	struct fx *f = *state;
	char *cl = malloc(PVH_CMDLINE_MAX + 2);

	assert_non_null(cl);
	memset(cl, 'x', PVH_CMDLINE_MAX + 1);
	cl[PVH_CMDLINE_MAX + 1] = '\0';
	pvh_build(f, 4, 1);
	f->spec.cmdline = cl;
	assert_int_equal(load(f), -E2BIG);
	cl[PVH_CMDLINE_MAX] = '\0';
	assert_int_equal(load(f), 0);
	free(cl);
}

/* An initrd that cannot fit above the kernel. */
static void test_pvh_initrd_too_big(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	set_initrd(f, RAM - (E_PADDR + E_SEG_MEMSZ) + 1);
	assert_int_equal(load(f), -ENOMEM);
	assert_msg(f, "initrd");
}

/* An ELF magic and nothing after it. */
static void test_pvh_truncated_10_bytes(void **state)
{
	struct fx *f = *state;

	pvh_build(f, 4, 1);
	truncate_img(f, 10);
	assert_int_equal(pvh(f), -ENOEXEC);
	assert_msg(f, "not an ELF file");
	assert_int_equal(load(f), -ENOEXEC);
	assert_msg(f, "not an ELF file");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bz_parse_fields),
		T(test_bz_parse_legacy_defaults),
		T(test_bz_load_valid),
		T(test_bz_load_reads_the_files),
		T(test_bz_load_pref_below_1m),
		T(test_bz_initrd_placed),
		T(test_bz_initrd_addr_max),
		T(test_bz_initrd_exact_fit),
		T(test_bz_initrd_too_big),
		T(test_bz_no_magic),
		T(test_bz_shorter_than_magic),
		T(test_bz_bad_boot_flag),
		T(test_bz_protocol_too_old),
		T(test_bz_no_64bit_entry),
		T(test_bz_truncated_in_header),
		T(test_bz_header_too_short),
		T(test_bz_truncated_in_setup),
		T(test_bz_syssize_beyond_file),
		T(test_bz_cmdline_too_long),
		T(test_bz_ram_too_small),
		T(test_bz_pref_address_wraps),
		T(test_load_tiny_ram),
		T(test_pvh_parse_desc4_and_desc8),
		T(test_pvh_load_valid),
		T(test_pvh_load_reads_the_file),
		T(test_pvh_no_note),
		T(test_pvh_wrong_note_ignored),
		T(test_pvh_phoff_beyond_file),
		T(test_pvh_phnum_huge),
		T(test_pvh_segment_beyond_file),
		T(test_pvh_filesz_exceeds_memsz),
		T(test_pvh_malformed_note),
		T(test_pvh_note_cut_by_segment),
		T(test_pvh_elf32),
		T(test_pvh_not_exec),
		T(test_pvh_segment_outside_ram),
		T(test_pvh_entry_outside_segments),
		T(test_pvh_cmdline_too_long),
		T(test_pvh_initrd_too_big),
		T(test_pvh_truncated_10_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

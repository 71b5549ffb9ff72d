/*
 * fuzz_boot: the kernel loaders (vmm/boot/boot_linux.c): bzImage setup
 * headers and ELF vmlinux with PVH notes, loaded with an initrd and a
 * command line into a guest RAM of exactly 32 MiB (so ASan reports the
 * first byte a loader writes past it).
 *
 * Input: command-line length (1 byte), initrd length (2 bytes, x 256),
 * then the kernel image (an exact-size heap copy).
 * Invariants: what bzimage_parse accepts lies inside the image; PVH
 * segments lie inside the image with filesz <= memsz; a refusal says why;
 * a successful load puts the entry point, the boot information, the end
 * of the kernel and the initrd inside guest RAM.
 */
#include <errno.h>

#include "vmm/boot/boot_linux.h"
#include "fuzz.h"

#define RAM (32u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest_mem gm;
	static uint8_t initrd[0xffff * 16];
	static char cmdline[4096];
	struct fuzz_in in = { data, size };
	struct err e = { { 0 } };
	struct bzimage_info bi;
	struct pvh_info pi;
	struct boot_spec spec = { .kernel_fd = -1, .initrd_fd = -1 };
	struct boot_entry be;
	size_t clen = (size_t)take8(&in) * 16, ilen = (size_t)take16(&in) * 16, got;
	const uint8_t *p;
	uint8_t *img;
	int r;

	if (!gm.host && fuzz_ram_init(&gm, RAM, 0))
		abort();
	if (clen >= sizeof(cmdline))
		clen = sizeof(cmdline) - 1;
	memset(cmdline, 'k', clen);
	cmdline[clen] = 0;
	p = take_bytes(&in, in.n, &got);
	img = malloc(got ? got : 1);
	if (!img)
		return 0;
	memcpy(img, p, got);

	r = bzimage_parse(img, got, &bi, &e);
	if (r == 0) {
		FUZZ_ASSERT(bi.setup_len >= 512 && bi.setup_len <= got &&
			    bi.pm_len <= got - bi.setup_len);
		FUZZ_ASSERT(bi.hdr_end <= bi.setup_len);
	} else {
		FUZZ_ASSERT(r < 0 && e.msg[0]);
	}
	e.msg[0] = 0;
	r = pvh_parse(img, got, &pi, &e);
	if (r == 0) {
		FUZZ_ASSERT(pi.nseg >= 0 && pi.nseg <= PVH_MAX_SEGMENTS);
		for (int i = 0; i < pi.nseg; i++) {
			const struct pvh_segment *s = &pi.seg[i];

			FUZZ_ASSERT(s->offset <= got && s->filesz <= got - s->offset &&
				    s->filesz <= s->memsz);
		}
	} else {
		FUZZ_ASSERT(r < 0 && e.msg[0]);
	}
	e.msg[0] = 0;
	if (linux_check(img, got, &e) != 0)
		FUZZ_ASSERT(e.msg[0]);

	spec.kernel = img;
	spec.kernel_len = got;
	spec.cmdline = cmdline;
	if (ilen) {
		spec.initrd = initrd;
		spec.initrd_len = ilen;
	}
	e.msg[0] = 0;
	r = linux_load(&gm, &spec, &be, &e);
	if (getenv("KILN_FUZZ_TRACE"))
		fprintf(stderr, "boot: linux_load %d %s\n", r, e.msg);
	if (r == 0) {
		if (!(be.rip < RAM && be.boot_info < RAM && be.kernel_end <= RAM))
			fprintf(stderr, "kind %d rip %#llx boot_info %#llx kernel_end %#llx\n",
				be.kind, (unsigned long long)be.rip,
				(unsigned long long)be.boot_info,
				(unsigned long long)be.kernel_end);
		FUZZ_ASSERT(be.rip < RAM && be.boot_info < RAM && be.kernel_end <= RAM);
		if (ilen)
			FUZZ_ASSERT(be.initrd_addr < RAM && ilen <= RAM - be.initrd_addr &&
				    !memcmp(gm.host + be.initrd_addr, initrd, ilen));
	} else {
		FUZZ_ASSERT((r == -ENOEXEC || r == -E2BIG || r == -ENOMEM) && e.msg[0]);
	}
	free(img);
	return 0;
}

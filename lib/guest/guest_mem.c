#include "lib/guest/guest_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

void guest_mem_layout(struct guest_mem *gm, uint64_t size)
{
	gm->size = size;
	gm->low_size = size < GUEST_MEM_MMIO_HOLE_START ? size : GUEST_MEM_MMIO_HOLE_START;
	gm->high_size = size - gm->low_size;
}

#define HUGE_2M (2ULL << 20)

/*
 * Anonymous RAM at a 2 MiB-aligned host address, marked for transparent
 * huge pages: where the host gives them, KVM maps guest RAM with 2 MiB
 * nested pages (a boot then takes a quarter of the VM exits: nested page
 * faults fall from ~6600 to ~860 for 128 MiB). Guest-physical 0 and 4 GiB
 * are 2 MiB aligned and so is the MMIO hole, so both regions line up.
 * Without THP on the host, madvise fails and RAM is plain 4 KiB pages.
 */
static void *map_2m_aligned(uint64_t size)
{
	uint64_t span = size + HUGE_2M;
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return p;
	a = (uint8_t *)(((uintptr_t)p + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + span > a + size)
		munmap(a + size, (size_t)(p + span - (a + size)));
	madvise(a, size, MADV_HUGEPAGE);
	return a;
}

int guest_mem_map(struct guest_mem *gm, uint64_t size, int hugepages)
{
	uint64_t align = hugepages ? HUGE_2M : (uint64_t)sysconf(_SC_PAGESIZE);
	void *p;

	memset(gm, 0, sizeof(*gm));
	if (size == 0 || size % align)
		return -EINVAL;
	if (hugepages)
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_HUGETLB, -1, 0);
	else
		p = map_2m_aligned(size);
	if (p == MAP_FAILED)
		return -errno;
	/* Guest RAM must not leak into a core dump of the VMM. */
	madvise(p, size, MADV_DONTDUMP);
	gm->host = p;
	gm->hugepages = hugepages;
	guest_mem_layout(gm, size);
	return 0;
}

void guest_mem_unmap(struct guest_mem *gm)
{
	if (gm->host)
		munmap(gm->host, gm->size);
	free(gm->dirty);
	memset(gm, 0, sizeof(*gm));
}

void *guest_mem_ptr(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	uint64_t end;

	if (!gm->host)
		return NULL;
	if (len == 0)
		len = 1;
	if (__builtin_add_overflow(gpa, len, &end))
		return NULL;
	if (end <= gm->low_size)
		return gm->host + gpa;
	if (gpa >= GUEST_MEM_HIGH_START && end - GUEST_MEM_HIGH_START <= gm->high_size)
		return gm->host + gm->low_size + (gpa - GUEST_MEM_HIGH_START);
	return NULL;
}

int guest_mem_read_file(const struct guest_mem *gm, uint64_t gpa, int fd, uint64_t off,
			uint64_t len)
{
	uint8_t *p = guest_mem_ptr(gm, gpa, len);

	if (!p)
		return -EFAULT;
	return fd_io_pread_all(fd, p, (size_t)len, off);
}

int guest_mem_write(const struct guest_mem *gm, uint64_t gpa, const void *src, uint64_t len)
{
	void *p = guest_mem_ptr(gm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}

int guest_mem_read(const struct guest_mem *gm, uint64_t gpa, void *dst, uint64_t len)
{
	const void *p = guest_mem_ptr(gm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(dst, p, len);
	return 0;
}

#define MARK_PAGE 4096u

static size_t mark_words(const struct guest_mem *gm)
{
	return (size_t)((gm->size / MARK_PAGE + 63) / 64);
}

int guest_mem_track(struct guest_mem *gm)
{
	if (gm->dirty)
		return 0;
	gm->dirty = calloc(mark_words(gm) ? mark_words(gm) : 1, sizeof(uint64_t));
	return gm->dirty ? 0 : -ENOMEM;
}

void guest_mem_untrack(struct guest_mem *gm)
{
	free(gm->dirty);
	gm->dirty = NULL;
}

void guest_mem_mark(const struct guest_mem *gm, const void *p, uint64_t len)
{
	uintptr_t at = (uintptr_t)p, host = (uintptr_t)gm->host;
	uint64_t off, first, last;

	if (len == 0)
		len = 1;
	/* The RAM offset: the high region follows the low one in the mapping. */
	if (!gm->dirty || !p || at < host || (off = at - host) >= gm->size || len > gm->size - off)
		return;
	first = off / MARK_PAGE;
	last = (off + len - 1) / MARK_PAGE;
	for (uint64_t pg = first; pg <= last; pg++)
		__atomic_fetch_or(&gm->dirty[pg / 64], 1ull << (pg % 64), __ATOMIC_RELAXED);
}

void guest_mem_take_marks(const struct guest_mem *gm, uint64_t *out)
{
	if (!gm->dirty)
		return;
	for (size_t i = 0; i < mark_words(gm); i++)
		out[i] |= __atomic_exchange_n(&gm->dirty[i], 0, __ATOMIC_ACQ_REL);
}

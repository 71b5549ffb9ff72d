#include "guest_mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void gm_layout(struct guest_mem *gm, uint64_t size)
{
	gm->size = size;
	gm->low_size = size < GM_MMIO_HOLE_START ? size : GM_MMIO_HOLE_START;
	gm->high_size = size - gm->low_size;
}

int gm_map(struct guest_mem *gm, uint64_t size, int hugepages)
{
	uint64_t align = hugepages ? (2ULL << 20) : (uint64_t)sysconf(_SC_PAGESIZE);
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *p;

	memset(gm, 0, sizeof(*gm));
	if (size == 0 || size % align)
		return -EINVAL;
	if (hugepages)
		flags |= MAP_HUGETLB;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* Guest RAM must not leak into a core dump of the VMM. */
	madvise(p, size, MADV_DONTDUMP);
	if (!hugepages)
		madvise(p, size, MADV_HUGEPAGE);
	gm->host = p;
	gm->hugepages = hugepages;
	gm_layout(gm, size);
	return 0;
}

void gm_unmap(struct guest_mem *gm)
{
	if (gm->host)
		munmap(gm->host, gm->size);
	memset(gm, 0, sizeof(*gm));
}

void *gm_ptr(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
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
	if (gpa >= GM_HIGH_START && end - GM_HIGH_START <= gm->high_size)
		return gm->host + gm->low_size + (gpa - GM_HIGH_START);
	return NULL;
}

int gm_write(const struct guest_mem *gm, uint64_t gpa, const void *src, uint64_t len)
{
	void *p = gm_ptr(gm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}

int gm_read(const struct guest_mem *gm, uint64_t gpa, void *dst, uint64_t len)
{
	const void *p = gm_ptr(gm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(dst, p, len);
	return 0;
}

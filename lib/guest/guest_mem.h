/*
 * guest_mem: the guest's physical RAM as one host mapping.
 *
 * Contract: guest RAM is one anonymous (optionally hugepage) mapping split
 * into at most two guest-physical regions: [0, low_size) and, when the
 * guest has more RAM than fits below the 32-bit MMIO hole, [4 GiB,
 * 4 GiB + high_size). Every access to guest memory in kiln goes through
 * guest_mem_ptr(), which checks the whole range [gpa, gpa + len) against RAM with
 * overflow-safe arithmetic. Nothing else computes host pointers from guest
 * addresses.
 */
#ifndef KILN_GUEST_MEM_H
#define KILN_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Devices live in [MMIO_HOLE_START, 4 GiB): virtio-mmio, IOAPIC, LAPIC. */
#define GUEST_MEM_MMIO_HOLE_START 0xc0000000ULL
#define GUEST_MEM_HIGH_START 0x100000000ULL

struct guest_mem {
	uint8_t *host;      /* start of the mapping */
	uint64_t size;      /* total bytes of RAM */
	uint64_t low_size;  /* bytes mapped at guest-physical 0 */
	uint64_t high_size; /* bytes mapped at guest-physical 4 GiB */
	int hugepages;      /* 1 when backed by MAP_HUGETLB */
	/*
	 * Pages the VMM itself wrote (device buffers, used rings) while
	 * dirty tracking is on: one bit per 4 KiB page of the mapping (RAM
	 * offset, not guest-physical address), set atomically from any
	 * thread. KVM's dirty log sees only the guest's own writes; an
	 * incremental snapshot needs both. NULL: not tracking.
	 */
	uint64_t *dirty;
};

/* Split `size` bytes of RAM into low and high regions (no allocation). */
void guest_mem_layout(struct guest_mem *gm, uint64_t size);

/*
 * Map `size` bytes of anonymous memory (hugepages when asked).
 * Returns 0 or -errno (-EINVAL for a size that is zero or not page aligned).
 */
int guest_mem_map(struct guest_mem *gm, uint64_t size, int hugepages);

/* Unmap what guest_mem_map() mapped; safe on a zeroed struct. */
void guest_mem_unmap(struct guest_mem *gm);

/*
 * Host pointer for guest-physical [gpa, gpa + len), or NULL when any byte
 * of that range is outside guest RAM (or the range wraps, or straddles the
 * MMIO hole). len == 0 is checked as len == 1.
 */
void *guest_mem_ptr(const struct guest_mem *gm, uint64_t gpa, uint64_t len);

/*
 * Read `len` bytes of the file `fd` at `off` into guest memory at `gpa`,
 * with pread(): the kernel copies from its page cache, where copying from
 * a mapping of the file takes a page fault per page (or per fault-around
 * block) first; in the nested harness, whose files are on a shared file
 * system, those faults were most of a boot's VMM setup (bench/boot's
 * "kernel and initrd copied into RAM": 330 ms of 390). 0, -EFAULT (out of
 * bounds), -EIO (the file ended first: it shrank) or -errno.
 */
int guest_mem_read_file(const struct guest_mem *gm, uint64_t gpa, int fd, uint64_t off,
			uint64_t len);

/*
 * Start tracking the VMM's own writes (allocates gm->dirty, zeroed).
 * 0, or -ENOMEM. Idempotent.
 */
int guest_mem_track(struct guest_mem *gm);

/* Stop tracking and free the bitmap; safe when not tracking. */
void guest_mem_untrack(struct guest_mem *gm);

/*
 * Record that the VMM writes [p, p + len), a range guest_mem_ptr()
 * returned (callers mark what they already validated, so no guest
 * address is checked twice): every page it touches is marked. Nothing
 * when not tracking, for NULL, or for a range outside the mapping. Any
 * thread.
 */
void guest_mem_mark(const struct guest_mem *gm, const void *p, uint64_t len);

/*
 * Take the marks: OR them into `out` (RAM offset bitmap, gm->size / 4096
 * bits) and clear them, word by word atomically, so a mark made meanwhile
 * lands either in `out` or in the next take.
 */
void guest_mem_take_marks(const struct guest_mem *gm, uint64_t *out);

/* Copy into / out of guest memory; 0 or -EFAULT when out of bounds. */
int guest_mem_write(const struct guest_mem *gm, uint64_t gpa, const void *src, uint64_t len);
int guest_mem_read(const struct guest_mem *gm, uint64_t gpa, void *dst, uint64_t len);

#endif

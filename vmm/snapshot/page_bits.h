/*
 * page_bits: bitmaps with one bit per 4 KiB page of guest RAM (bit i of
 * u64 word w is page 64 * w + i), the shape of KVM's dirty log, a
 * layer's memory.layer bitmap and a working set before it is written as
 * ranges.
 *
 * Contract: pure; callers size the bitmap for their page count
 * (page_bits_words) and never pass bits past it.
 */
#ifndef KILN_PAGE_BITS_H
#define KILN_PAGE_BITS_H

#include <stddef.h>
#include <stdint.h>

/* u64 words for `pages` bits. */
static inline size_t page_bits_words(uint64_t pages)
{
	return (size_t)((pages + 63) / 64);
}

static inline void page_bits_set(uint64_t *bits, uint64_t page)
{
	bits[page / 64] |= 1ull << (page % 64);
}

/*
 * The next run of set bits at or after *page, of `npages`: *page moves
 * to its start and its length in pages is returned; 0 (and *page =
 * npages) past the last. Whole words at a time, so sparse bitmaps of
 * large RAM are quick to walk.
 */
uint64_t page_bits_next_run(const uint64_t *bits, uint64_t npages, uint64_t *page);

#endif

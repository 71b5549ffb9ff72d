#include "vmm/snapshot/page_bits.h"

uint64_t page_bits_next_run(const uint64_t *bits, uint64_t npages, uint64_t *page)
{
	uint64_t p = *page, end;

	while (p < npages) {
		uint64_t w = bits[p / 64] >> (p % 64);

		if (w) {
			p += (uint64_t)__builtin_ctzll(w);
			break;
		}
		p = (p / 64 + 1) * 64;
	}
	if (p >= npages) {
		*page = npages;
		return 0;
	}
	for (end = p; end < npages;) {
		uint64_t w = ~bits[end / 64] >> (end % 64);

		if (w) {
			end += (uint64_t)__builtin_ctzll(w);
			break;
		}
		end = (end / 64 + 1) * 64;
	}
	*page = p;
	return (end < npages ? end : npages) - p;
}

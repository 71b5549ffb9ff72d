/*
 * tar_fixup: give every ustar header block of a fuzzer's archive a right
 * checksum, so mutations of header fields reach the checks behind the
 * checksum (fuzz_tar, fuzz_cli_untar; their split byte's bit 1 asks).
 */
#ifndef KILN_FUZZ_TAR_FIXUP_H
#define KILN_FUZZ_TAR_FIXUP_H

#include <stdio.h>
#include <string.h>

static inline void tar_fixup(uint8_t *a, size_t n)
{
	for (size_t off = 0; off + 512 <= n; off += 512) {
		uint8_t *h = a + off;
		unsigned sum = 0;

		if (memcmp(h + 257, "ustar", 5) != 0)
			continue;
		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += h[i];
		snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
		h[155] = ' ';
	}
}

#endif

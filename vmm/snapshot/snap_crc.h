/*
 * snap_crc: the CRC-32 that guards snapshot files (zlib's crc32, IEEE
 * 802.3), of a buffer of any length.
 *
 * Contract: zlib's crc32() takes a uInt length, so a buffer over 4 GiB
 * would be cut short if passed whole; it is fed in 1 GiB pieces, which
 * gives the same CRC as one call would.
 */
#ifndef KILN_SNAP_CRC_H
#define KILN_SNAP_CRC_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

static inline uint32_t snap_crc32(const void *p, size_t len)
{
	const uint8_t *b = p;
	uLong crc = crc32(0L, Z_NULL, 0);

	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		crc = crc32(crc, b, n);
		b += n;
		len -= n;
	}
	return (uint32_t)crc;
}

#endif

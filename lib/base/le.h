/*
 * le: little-endian fields in byte buffers (kernel images, snapshot
 * files), read and written at any alignment.
 *
 * Contract: p points at the whole field (the caller has bounds-checked
 * it); memcpy makes an unaligned access defined, and the le*toh/htole*
 * conversions are no-ops on the x86-64 hosts kiln runs on but keep the
 * formats right on any other.
 */
#ifndef KILN_LE_H
#define KILN_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t le_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t le_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline void le_put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

#endif

/*
 * bytes: little-endian field access for unit tests that build guest
 * structures (rings, boot headers, MP tables) byte by byte. memcpy keeps
 * unaligned access defined under UBSan. U(s): a string literal's bytes,
 * for the APIs that take uint8_t.
 */
#ifndef KILN_TEST_BYTES_H
#define KILN_TEST_BYTES_H

#include <stdint.h>
#include <string.h>

#define U(s) ((const uint8_t *)(s))

static inline void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}
static inline void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static inline void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

#endif

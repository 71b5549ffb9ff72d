/*
 * fuzz: what every libFuzzer target of kiln shares (tests/fuzz/fuzz_*.c).
 *
 * A target reads its choices from the input with the take_* functions (a
 * short input reads as zeros, so every input is a valid script), and
 * checks the module's invariants with FUZZ_ASSERT: a broken invariant
 * aborts, and libFuzzer keeps the input as a crash like any sanitizer
 * report. A fake guest RAM (fuzz_ram_*) is one heap block of exactly its
 * size, so ASan reports the first byte a device reads past it, and a
 * target checks that every host pointer a module hands out lies inside.
 */
#ifndef KILN_FUZZ_H
#define KILN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/guest/guest_mem.h"

#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t take_n(struct fuzz_in *in, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes; i++) {
		uint8_t b = 0;

		if (in->n) {
			b = *in->p++;
			in->n--;
		}
		v |= (uint64_t)b << (8 * i);
	}
	return v;
}

static inline uint8_t take8(struct fuzz_in *in)
{
	return (uint8_t)take_n(in, 1);
}
static inline uint16_t take16(struct fuzz_in *in)
{
	return (uint16_t)take_n(in, 2);
}
static inline uint32_t take32(struct fuzz_in *in)
{
	return (uint32_t)take_n(in, 4);
}
static inline uint64_t take64(struct fuzz_in *in)
{
	return take_n(in, 8);
}

/* Up to `max` bytes of the input, as they are (no copy). */
static inline const uint8_t *take_bytes(struct fuzz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < in->n ? want : in->n;
	in->p += *got;
	in->n -= *got;
	return p;
}

/*
 * A guest RAM of `low` bytes at guest-physical 0 and `high` bytes at 4 GiB
 * (so the MMIO hole and the high region are exercised with little memory).
 */
static inline int fuzz_ram_init(struct guest_mem *gm, uint64_t low, uint64_t high)
{
	memset(gm, 0, sizeof(*gm));
	gm->host = calloc(1, low + high);
	if (!gm->host)
		return -1;
	gm->size = low + high;
	gm->low_size = low;
	gm->high_size = high;
	return 0;
}

static inline void fuzz_ram_free(struct guest_mem *gm)
{
	free(gm->host);
	memset(gm, 0, sizeof(*gm));
}

/* Whether [p, p + len) lies inside guest RAM's host block. */
static inline int fuzz_in_ram(const struct guest_mem *gm, const void *p, uint64_t len)
{
	const uint8_t *b = p;

	return b >= gm->host && len <= gm->size && (uint64_t)(b - gm->host) <= gm->size - len;
}

#endif

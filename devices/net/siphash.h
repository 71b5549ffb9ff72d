/*
 * siphash: SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012), the keyed hash behind the packet filter's
 * tables.
 *
 * Contract: pure. The guest chooses the addresses and ports that the
 * connection-tracking and DNS tables are indexed by; with a secret key
 * (from getrandom(), chosen by the caller at setup) it cannot aim many
 * entries at one hash chain. Output matches the paper's test vectors.
 */
#ifndef KILN_SIPHASH_H
#define KILN_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const uint64_t key[2], const void *data, size_t len);

#endif

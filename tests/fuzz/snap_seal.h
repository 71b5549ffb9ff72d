/*
 * snap_seal: make a fuzzer's bytes a state file whose total size and
 * CRC-32 trailer are right (docs/architecture.md, "Snapshot files"), so
 * the parser's later checks are reached. For fuzz_snapshot and
 * fuzz_snapshot_layer. `n` is a multiple of 8; smaller than a header and
 * trailer, the bytes are left as they are.
 */
#ifndef KILN_FUZZ_SNAP_SEAL_H
#define KILN_FUZZ_SNAP_SEAL_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "vmm/snapshot/snapshot_file.h"

static inline void snap_seal(uint8_t *b, size_t n)
{
	uint64_t total = n;
	uint32_t crc, end = SNAP_END_MAGIC;

	if (n < SNAP_HEADER_SIZE + SNAP_TRAILER_SIZE)
		return;
	memcpy(b + 16, &total, 8);
	crc = (uint32_t)crc32_z(0, b, n - SNAP_TRAILER_SIZE);
	memcpy(b + n - 8, &crc, 4);
	memcpy(b + n - 4, &end, 4);
}

#endif

/*
 * fuzz_snapshot_workingset: a snapshot's `workingset` file (vmm/snapshot/
 * snapshot_workingset.c), which a restore reads to know which pages to
 * prefetch, from a directory a jailed VMM writes; and the pagemap
 * entries the working set is sampled from (snapshot_prefetch.c).
 *
 * Input: mode (1 byte); RAM is SIZES[(mode >> 2) & 3] pages; then:
 *   mode % 4 == 0: a workingset file to parse (bit 7: first seal its
 *     range and header CRCs, so the fuzzer gets past them);
 *   mode % 4 == 1: a bitmap's words (8 bytes each; missing ones are 0)
 *     made into a set, encoded, and parsed back, then which byte to
 *     damage (2);
 *   mode % 4 == 2: a range count (1) and that many ranges (first page and
 *     page count, 2 bytes each) to encode;
 *   mode % 4 == 3: pagemap entries (8 bytes each) to mark from page 0.
 * Invariants: a refusal is one of the documented SNAP_ERR_* codes (or
 * -ENOMEM) with a message and no ranges; an accepted file has ranges in
 * order, apart, non-empty, inside RAM and adding up to its page count,
 * and re-encodes to exactly the input bytes; a set made from a bitmap
 * holds exactly its pages in RAM and parses back the same, and one
 * damaged byte of it is refused; encode accepts exactly the valid range
 * lists; a page is marked exactly when its entry has the present or
 * swapped bit.
 */
#include <errno.h>
#include <zlib.h>

#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_prefetch.h"
#include "vmm/snapshot/snapshot_workingset.h"
#include "fuzz.h"

#define PG SNAP_PAGE
#define MAX_PAGES 130
#define WORDS ((MAX_PAGES + 63) / 64)

/* Some pages, one page (one range at most), a tail past a word, whole words and a tail. */
static const uint64_t SIZES[4] = { 16, 1, 65, 130 };

static int documented(int r)
{
	return r == SNAP_ERR_MAGIC || r == SNAP_ERR_TRUNCATED || r == SNAP_ERR_CHECKSUM ||
		r == SNAP_ERR_FORMAT || r == SNAP_ERR_MALFORMED || r == -ENOMEM;
}

static int marked(const uint64_t *bits, uint64_t p)
{
	return (int)(bits[p / 64] >> (p % 64) & 1);
}

/* What the parser promises about an accepted set. */
static void check_valid(const struct snap_workingset *ws, uint64_t pages)
{
	uint64_t next = 0, total = 0;

	FUZZ_ASSERT(ws->n <= snap_workingset_max_ranges(pages * PG) && (ws->n == 0 || ws->r));
	for (uint64_t i = 0; i < ws->n; i++) {
		FUZZ_ASSERT(ws->r[i].count >= 1 && ws->r[i].first >= next);
		FUZZ_ASSERT(ws->r[i].first < pages && ws->r[i].count <= pages - ws->r[i].first);
		next = ws->r[i].first + ws->r[i].count + 1;
		total += ws->r[i].count;
	}
	FUZZ_ASSERT(total == ws->pages && total <= pages);
}

static void parse_file(const uint8_t *p, size_t n, uint8_t mode)
{
	uint64_t pages = SIZES[(mode >> 2) & 3];
	struct snap_workingset ws;
	struct err e = { { 0 } };
	uint8_t *b = malloc(n ? n : 1), *again;
	size_t len;
	int r;

	FUZZ_ASSERT(b);
	memcpy(b, p, n);
	if ((mode & 0x80) && n >= SNAP_WORKINGSET_HEADER_SIZE) {
		uint32_t crc = (uint32_t)crc32_z(0, b + SNAP_WORKINGSET_HEADER_SIZE,
						 n - SNAP_WORKINGSET_HEADER_SIZE);

		memcpy(b + 40, &crc, 4);
		crc = (uint32_t)crc32_z(0, b, 44);
		memcpy(b + 44, &crc, 4);
	}
	r = snap_workingset_parse(b, n, pages * PG, &ws, &e);
	if (r) {
		FUZZ_ASSERT(documented(r) && e.msg[0] && !ws.r && !ws.n);
		free(b);
		return;
	}
	FUZZ_ASSERT(ws.mem_size == pages * PG);
	check_valid(&ws, pages);
	/* One set, one encoding: nothing in the file escaped the checks. */
	FUZZ_ASSERT(snap_workingset_encode(&ws, &again, &len, &e) == 0);
	FUZZ_ASSERT(len == n && !memcmp(again, b, n));
	free(again);
	snap_workingset_free(&ws);
	free(b);
}

static void from_bits(struct fuzz_in *in, uint8_t mode)
{
	uint64_t pages = SIZES[(mode >> 2) & 3], bits[WORDS], covered[WORDS];
	struct snap_workingset ws, back;
	struct err e = { { 0 } };
	uint8_t *b;
	uint16_t flip;
	size_t len;
	int r;

	for (size_t w = 0; w < page_bits_words(pages); w++)
		bits[w] = take64(in);
	flip = take16(in);
	FUZZ_ASSERT(snap_workingset_from_bits(bits, pages * PG, &ws, &e) == 0);
	check_valid(&ws, pages);
	/* Exactly the marked pages of RAM (bits past its end are not pages). */
	memset(covered, 0, sizeof(covered));
	for (uint64_t i = 0; i < ws.n; i++)
		for (uint64_t p = ws.r[i].first; p < ws.r[i].first + ws.r[i].count; p++)
			page_bits_set(covered, p);
	for (uint64_t p = 0; p < pages; p++)
		FUZZ_ASSERT(marked(covered, p) == marked(bits, p));
	FUZZ_ASSERT(snap_workingset_encode(&ws, &b, &len, &e) == 0);
	FUZZ_ASSERT(len == SNAP_WORKINGSET_HEADER_SIZE + ws.n * SNAP_WORKINGSET_RANGE_SIZE);
	FUZZ_ASSERT(snap_workingset_parse(b, len, pages * PG, &back, &e) == 0);
	FUZZ_ASSERT(back.n == ws.n && back.pages == ws.pages);
	FUZZ_ASSERT(!ws.n || !memcmp(back.r, ws.r, ws.n * sizeof(*ws.r)));
	snap_workingset_free(&back);
	/* One damaged byte anywhere: refused (the magic's as foreign, anything else by a checksum). */
	b[flip % len] ^= (uint8_t)(flip >> 8 | 1);
	r = snap_workingset_parse(b, len, pages * PG, &back, &e);
	FUZZ_ASSERT(r == SNAP_ERR_MAGIC || r == SNAP_ERR_CHECKSUM);
	/* And for RAM of another size, whatever it is. */
	r = snap_workingset_parse(b, len, (pages + 1) * PG, &back, &e);
	FUZZ_ASSERT(documented(r));
	free(b);
	snap_workingset_free(&ws);
}

static void encode_ranges(struct fuzz_in *in, uint8_t mode)
{
	uint64_t pages = SIZES[(mode >> 2) & 3], next = 0;
	struct snap_workingset_range r[16];
	struct snap_workingset ws = { .mem_size = pages * PG, .r = r }, back;
	struct err e = { { 0 } };
	uint8_t *b;
	size_t len;
	int ok = 1, rc;

	ws.n = take8(in) % 17;
	for (uint64_t i = 0; i < ws.n; i++) {
		r[i].first = take16(in);
		r[i].count = take16(in);
		ok = ok && r[i].count && r[i].first >= next && r[i].first + r[i].count <= pages;
		next = r[i].first + r[i].count + 1;
	}
	ok = ok && ws.n <= snap_workingset_max_ranges(pages * PG);
	rc = snap_workingset_encode(&ws, &b, &len, &e);
	if (!ok) {
		FUZZ_ASSERT(rc == -EINVAL && e.msg[0] && !b && !len);
		return;
	}
	FUZZ_ASSERT(rc == 0);
	FUZZ_ASSERT(snap_workingset_parse(b, len, pages * PG, &back, &e) == 0);
	FUZZ_ASSERT(back.n == ws.n && (!ws.n || !memcmp(back.r, r, ws.n * sizeof(*r))));
	snap_workingset_free(&back);
	free(b);
}

static void pagemap_marks(struct fuzz_in *in)
{
	uint64_t ent[MAX_PAGES], bits[WORDS] = { 0 };
	size_t n = in->n / 8 < MAX_PAGES ? in->n / 8 : MAX_PAGES;

	for (size_t i = 0; i < n; i++)
		ent[i] = take64(in);
	snap_pagemap_mark(ent, n, 0, bits);
	for (size_t i = 0; i < MAX_PAGES; i++)
		FUZZ_ASSERT(marked(bits, i) == (i < n && (ent[i] >> 62) != 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t mode = take8(&in);
	const uint8_t *p;
	size_t got;

	switch (mode % 4) {
	case 0:
		p = take_bytes(&in, in.n, &got);
		parse_file(p, got, mode);
		break;
	case 1:
		from_bits(&in, mode);
		break;
	case 2:
		encode_ranges(&in, mode);
		break;
	default:
		pagemap_marks(&in);
		break;
	}
	return 0;
}

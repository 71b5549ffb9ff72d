/*
 * fuzz_snapshot_layer: incremental snapshots' files (vmm/snapshot/
 * snapshot_layer.c): memory.layer, which a restore reads to know which
 * pages of a layered snapshot's memory lie over its parent's, the layer's
 * sparse memory file, and the state file's id section a layer names its
 * parent by. All of them come from a directory someone else may have
 * written.
 *
 * Input: mode (1 byte); RAM is SIZES[(mode >> 2) & 3] pages; then:
 *   mode % 4 == 0: a memory.layer file to parse (bit 7: first seal its
 *     bitmap and header CRCs, so the fuzzer gets past them);
 *   mode % 4 == 1: a layer from fields: depth (4), parent id (16), name
 *     length (1) and name, which byte to damage (1), then the bitmap's
 *     words (8 each; missing ones are 0), encoded and parsed back;
 *   mode % 4 == 2: one fill byte per page, the bitmap's words, then bytes
 *     laid over RAM from its start: written with snap_mem_write_pages and
 *     applied back;
 *   mode % 4 == 3: an id (16), then a state file (its total and checksum
 *     made right first) whose id section is read.
 * Invariants: a refusal is one of the documented SNAP_ERR_* codes (or
 * -ENOMEM; -EINVAL only for what encode must refuse) with a message; an
 * accepted layer re-encodes to exactly the input bytes, and applying it
 * over RAM changes only the pages it marks, to the memory file's bytes;
 * an encoded layer parses back to its fields and one damaged byte of it
 * is refused; a memory file written from RAM has data exactly in the
 * marked nonzero pages and gives those pages back; an id written is the
 * id read.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_layer.h"
#include "fuzz.h"
#include "snap_seal.h"

#define PG SNAP_PAGE
#define MAX_PAGES 130

/* One page, one bitmap word, words with a tail past the end, and whole words. */
static const uint64_t SIZES[4] = { 16, 1, 65, 130 };

static const struct snap_compat WHO = {
	.kiln_version = "0.1.0",
	.cpu = { .vendor = "AuthenticAMD",
		 .family = 25,
		 .model = 33,
		 .features = 0x1234abcd5678ef01ull },
};

static int documented(int r)
{
	return r == SNAP_ERR_MAGIC || r == SNAP_ERR_TRUNCATED || r == SNAP_ERR_CHECKSUM ||
		r == SNAP_ERR_FORMAT || r == SNAP_ERR_MALFORMED || r == SNAP_ERR_TOO_BIG ||
		r == -ENOMEM;
}

/* The byte the memory file of the apply check holds in page p: some pages are holes. */
static uint8_t file_byte(uint64_t p)
{
	return p % 5 == 3 ? 0 : (uint8_t)(p * 7 + 1);
}

/* A memory file of `pages` pages in that pattern, made once per size. */
static int mem_file(int idx)
{
	static int fds[4] = { -1, -1, -1, -1 };
	uint8_t page[PG];

	if (fds[idx] >= 0)
		return fds[idx];
	fds[idx] = memfd_create("fuzz-layer-memory", MFD_CLOEXEC);
	FUZZ_ASSERT(fds[idx] >= 0);
	FUZZ_ASSERT(ftruncate(fds[idx], (off_t)(SIZES[idx] * PG)) == 0);
	for (uint64_t p = 0; p < SIZES[idx]; p++) {
		if (!file_byte(p))
			continue;
		memset(page, file_byte(p), PG);
		FUZZ_ASSERT(pwrite(fds[idx], page, PG, (off_t)(p * PG)) == PG);
	}
	return fds[idx];
}

static int marked(const uint64_t *bits, uint64_t p)
{
	return (int)(bits[p / 64] >> (p % 64) & 1);
}

static uint64_t popcount(const uint64_t *bits, size_t words)
{
	uint64_t n = 0;

	for (size_t w = 0; w < words; w++)
		n += (uint64_t)__builtin_popcountll(bits[w]);
	return n;
}

/* Every byte of page p of `mem` is `v`. */
static int page_is(const uint8_t *mem, uint64_t p, uint8_t v)
{
	const uint8_t *pg = mem + p * PG;

	/* The first byte is v and every byte equals the next. */
	return pg[0] == v && !memcmp(pg, pg + 1, PG - 1);
}

static void parse_layer(const uint8_t *p, size_t n, uint8_t mode)
{
	static uint8_t ram[MAX_PAGES * PG];
	int idx = (mode >> 2) & 3;
	uint64_t size = SIZES[idx] * PG;
	struct snap_layer l;
	struct err e = { { 0 } };
	uint8_t *b = malloc(n ? n : 1), *again;
	size_t len;
	int r;

	FUZZ_ASSERT(b);
	memcpy(b, p, n);
	if ((mode & 0x80) && n >= SNAP_LAYER_HEADER_SIZE) {
		uint32_t crc = (uint32_t)crc32_z(0, b + SNAP_LAYER_HEADER_SIZE,
						 n - SNAP_LAYER_HEADER_SIZE);

		memcpy(b + 124, &crc, 4);
		crc = (uint32_t)crc32_z(0, b, 120);
		memcpy(b + 120, &crc, 4);
	}
	r = snap_layer_parse(b, n, size, &l, &e);
	if (r) {
		FUZZ_ASSERT(documented(r) && e.msg[0]);
		FUZZ_ASSERT(!l.bits);
		free(b);
		return;
	}
	FUZZ_ASSERT(l.mem_size == size && l.depth >= 1 && l.depth <= SNAP_LAYER_DEPTH_MAX);
	FUZZ_ASSERT(snap_layer_name_valid(l.parent));
	FUZZ_ASSERT(l.pages == popcount(l.bits, snap_layer_words(size)) && l.pages <= SIZES[idx]);
	/* One layer, one encoding: nothing in the file escaped the checks. */
	FUZZ_ASSERT(snap_layer_encode(&l, &again, &len, &e) == 0);
	FUZZ_ASSERT(len == n && !memcmp(again, b, n));
	free(again);
	/* Applied over RAM: the marked pages are the file's, the others untouched. */
	memset(ram, 0xee, size);
	FUZZ_ASSERT(snap_layer_apply(mem_file(idx), &l, ram, &e) == 0);
	for (uint64_t pg = 0; pg < SIZES[idx]; pg++)
		FUZZ_ASSERT(page_is(ram, pg, marked(l.bits, pg) ? file_byte(pg) : 0xee));
	snap_layer_free(&l);
	free(b);
}

static void encode_fields(struct fuzz_in *in, uint8_t mode)
{
	int idx = (mode >> 2) & 3;
	uint64_t size = SIZES[idx] * PG, pages = SIZES[idx];
	size_t words = snap_layer_words(size), nl, got, len;
	struct snap_layer l, back;
	struct err e = { { 0 } };
	const uint8_t *name;
	uint8_t *b, flip;
	int r, ok;

	FUZZ_ASSERT(snap_layer_init(&l, size) == 0);
	l.depth = take32(in);
	for (int i = 0; i < SNAP_ID_LEN; i++)
		l.parent_id[i] = take8(in);
	nl = take8(in) % (SNAP_LAYER_NAME_MAX + 2);
	name = take_bytes(in, nl, &got);
	memcpy(l.parent, name, got < SNAP_LAYER_NAME_MAX ? got : SNAP_LAYER_NAME_MAX);
	flip = take8(in);
	for (size_t w = 0; w < words; w++)
		l.bits[w] = take64(in);
	ok = snap_layer_name_valid(l.parent) && l.depth >= 1 && l.depth <= SNAP_LAYER_DEPTH_MAX &&
		(pages % 64 == 0 || !(l.bits[words - 1] >> (pages % 64)));
	r = snap_layer_encode(&l, &b, &len, &e);
	if (!ok) {
		FUZZ_ASSERT(r == -EINVAL && e.msg[0] && !b);
		snap_layer_free(&l);
		return;
	}
	FUZZ_ASSERT(r == 0 && len == SNAP_LAYER_HEADER_SIZE + 8 * words);
	FUZZ_ASSERT(snap_layer_parse(b, len, size, &back, &e) == 0);
	FUZZ_ASSERT(back.depth == l.depth && !strcmp(back.parent, l.parent));
	FUZZ_ASSERT(!memcmp(back.parent_id, l.parent_id, SNAP_ID_LEN));
	FUZZ_ASSERT(!memcmp(back.bits, l.bits, words * 8) && back.pages == popcount(l.bits, words));
	snap_layer_free(&back);
	/* One damaged byte anywhere: refused (the magic's as foreign, anything else by a checksum). */
	b[(flip * 2654435761u) % len] ^= (uint8_t)(flip | 1);
	r = snap_layer_parse(b, len, size, &back, &e);
	FUZZ_ASSERT(r == SNAP_ERR_MAGIC || r == SNAP_ERR_CHECKSUM);
	/* And for RAM of another size, whatever it is. */
	r = snap_layer_parse(b, len, size + PG, &back, &e);
	FUZZ_ASSERT(documented(r));
	free(b);
	snap_layer_free(&l);
}

static void write_apply(struct fuzz_in *in, uint8_t mode)
{
	static uint8_t ram[MAX_PAGES * PG], back[MAX_PAGES * PG];
	int idx = (mode >> 2) & 3;
	uint64_t pages = SIZES[idx], size = pages * PG, want_pages = 0, want_stored = 0;
	struct snap_mem_stats st;
	struct snap_layer l;
	struct err e = { { 0 } };
	const uint8_t *over;
	size_t got;
	int fd;

	for (uint64_t p = 0; p < pages; p++)
		memset(ram + p * PG, take8(in), PG);
	FUZZ_ASSERT(snap_layer_init(&l, size) == 0);
	for (size_t w = 0; w < snap_layer_words(size); w++)
		l.bits[w] = take64(in);
	if (pages % 64)
		l.bits[pages / 64] &= (1ull << (pages % 64)) - 1;
	over = take_bytes(in, in->n, &got);
	memcpy(ram, over, got < size ? got : size);

	fd = memfd_create("fuzz-layer-write", MFD_CLOEXEC);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(snap_mem_write_pages(fd, ram, size, l.bits, &st, &e) == 0);
	FUZZ_ASSERT(lseek(fd, 0, SEEK_END) == (off_t)size);
	for (uint64_t p = 0; p < pages; p++) {
		int data = marked(l.bits, p) && !page_is(ram, p, 0);

		want_pages += (uint64_t)marked(l.bits, p);
		want_stored += data ? PG : 0;
		/* Data exactly where a marked page is not zero: the rest costs no disk. */
		FUZZ_ASSERT((lseek(fd, (off_t)(p * PG), SEEK_DATA) == (off_t)(p * PG)) == data);
	}
	FUZZ_ASSERT(st.pages == want_pages && st.stored == want_stored);
	memset(back, 0xee, size);
	FUZZ_ASSERT(snap_layer_apply(fd, &l, back, &e) == 0);
	for (uint64_t p = 0; p < pages; p++)
		FUZZ_ASSERT(marked(l.bits, p) ? !memcmp(back + p * PG, ram + p * PG, PG)
					      : page_is(back, p, 0xee));
	/* Mapped (a budget for every run) or copied (a budget of one run):
	 * the same RAM as applied. */
	for (unsigned budget0 = 1; budget0 <= SNAP_LAYER_MAP_RUNS_MAX;
	     budget0 += SNAP_LAYER_MAP_RUNS_MAX - 1) {
		uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		unsigned budget = budget0;

		FUZZ_ASSERT(m != MAP_FAILED);
		memset(m, 0xee, size);
		FUZZ_ASSERT(snap_layer_map(fd, &l, m, &budget, &e) == 0);
		FUZZ_ASSERT(budget <= budget0 && !memcmp(m, back, size));
		munmap(m, size);
	}
	close(fd);
	snap_layer_free(&l);
}

static void ids(struct fuzz_in *in)
{
	uint8_t id[SNAP_ID_LEN], got_id[SNAP_ID_LEN], *b;
	struct snap_writer w;
	struct snap_view v;
	struct err e = { { 0 } };
	const uint8_t *out, *p;
	size_t out_len, n;
	int r;

	for (int i = 0; i < SNAP_ID_LEN; i++)
		id[i] = take8(in);
	FUZZ_ASSERT(snap_writer_init(&w, &WHO, &e) == 0);
	FUZZ_ASSERT(snap_id_put(&w, id, &e) == 0);
	FUZZ_ASSERT(snap_finish(&w, &out, &out_len, &e) == 0);
	FUZZ_ASSERT(snap_parse(out, out_len, &WHO, &v, &e) == 0);
	FUZZ_ASSERT(snap_id_get(&v, got_id, &e) == 0 && !memcmp(got_id, id, SNAP_ID_LEN));
	snap_view_free(&v);
	snap_writer_free(&w);

	/* A state file of the fuzzer's, sealed as fuzz_snapshot's bit 7 does. */
	p = take_bytes(in, in->n, &n);
	n = (n + 7) & ~(size_t)7;
	b = calloc(1, n ? n : 1);
	FUZZ_ASSERT(b);
	memcpy(b, p, in->p - p);
	snap_seal(b, n);
	memset(&v, 0, sizeof(v));
	if (snap_parse(b, n, NULL, &v, &e) == 0) {
		memset(got_id, 0x5a, sizeof(got_id));
		r = snap_id_get(&v, got_id, &e);
		FUZZ_ASSERT(r == 0 || (r == SNAP_ERR_MALFORMED && e.msg[0] && got_id[0] == 0x5a));
		snap_view_free(&v);
	}
	free(b);
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
		parse_layer(p, got, mode);
		break;
	case 1:
		encode_fields(&in, mode);
		break;
	case 2:
		write_apply(&in, mode);
		break;
	default:
		ids(&in);
		break;
	}
	return 0;
}

/*
 * snapshot_layer: a layered snapshot must give back exactly its RAM (its
 * own pages over its parent's, a page written back to zeros included),
 * a memory.layer file that is cut, damaged, foreign or lies must be
 * refused with its own code, and folding a parent into its child before
 * the parent is deleted must leave the child's RAM the same, touch only
 * a child of that parent, and leave the child as it was when it cannot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bytes.h"
#include "tmpdir.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_layer.h"
#include "vmm/snapshot/snapshot_mem.h"

#define PG SNAP_PAGE
#define NPG 16
#define RAM (NPG * PG) /* 64 KiB: one bitmap word, 48 bits of it past the end */

/* memory.layer offsets the tests patch (the table in snapshot_layer.h). */
#define L_VERSION 8
#define L_PAGE 12
#define L_MEM_SIZE 16
#define L_DEPTH 24
#define L_RESERVED 28
#define L_PARENT 48
#define L_PAGES 112
#define L_HEADER_CRC 120
#define L_BITMAP_CRC 124
#define L_BITS 128

static const struct snap_compat WHO = {
	.kiln_version = "0.1.0",
	.cpu = { .vendor = "AuthenticAMD",
		 .family = 25,
		 .model = 33,
		 .features = 0x1234abcd5678ef01ull },
};

static int subdir(struct tmpdir_fx *f, const char *name)
{
	int fd;

	assert_int_equal(mkdirat(f->dfd, name, 0700), 0);
	fd = openat(f->dfd, name, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

/* A page of RAM all `v` (0: a zero page). */
static void fill(uint8_t *ram, size_t pg, uint8_t v)
{
	memset(ram + pg * PG, v, PG);
}

static void mark(uint64_t *bits, size_t pg)
{
	bits[pg / 64] |= 1ull << (pg % 64);
}

/* The whole file DFD/NAME (at most 1 MiB). */
static uint8_t *slurp(int dfd, const char *name, size_t *len)
{
	struct err e = { { 0 } };
	uint8_t *b;

	assert_int_equal(snap_read_file(dfd, name, 1 << 20, &b, len, &e), 0);
	return b;
}

/* ---- the file format ---- */

/* A layer of RAM bytes over parent "snap-1.a_B" at depth 3, marking pages 0, 5, 6 (those RAM has) and the last. */
static uint8_t *sample(uint64_t ram, size_t *len)
{
	const size_t pages[] = { 0, 5, 6, ram / PG - 1 };
	struct snap_layer l;
	struct err e = { { 0 } };
	uint8_t *b;

	assert_int_equal(snap_layer_init(&l, ram), 0);
	l.depth = 3;
	for (int i = 0; i < SNAP_ID_LEN; i++)
		l.parent_id[i] = (uint8_t)(0xa0 + i);
	strcpy(l.parent, "snap-1.a_B");
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++)
		if (pages[i] < ram / PG)
			mark(l.bits, pages[i]);
	l.pages = 12345; /* ignored: encode counts */
	assert_int_equal(snap_layer_encode(&l, &b, len, &e), 0);
	snap_layer_free(&l);
	return b;
}

/* Seal a patched file again: its bitmap's CRC (over whatever follows the header) and the header's. */
static void reseal(uint8_t *b, size_t len)
{
	put32(b + L_BITMAP_CRC, (uint32_t)crc32(0, b + L_BITS, (uInt)(len - L_BITS)));
	put32(b + L_HEADER_CRC, (uint32_t)crc32(0, b, L_HEADER_CRC));
}

static void test_round_trip(void **state)
{
	static const uint64_t sizes[] = { RAM, PG, 64 * PG, 100 * PG, 129 * PG };
	struct err e = { { 0 } };
	struct snap_layer l;

	(void)state;
	assert_int_equal(snap_layer_words(PG), 1);
	assert_int_equal(snap_layer_words(64 * PG), 1);
	assert_int_equal(snap_layer_words(65 * PG), 2);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len, len2;
		uint8_t *b = sample(sizes[i], &len), *again;

		assert_int_equal(len, SNAP_LAYER_HEADER_SIZE + 8 * snap_layer_words(sizes[i]));
		assert_memory_equal(b, SNAP_LAYER_MAGIC, 8);
		assert_int_equal(snap_layer_parse(b, len, sizes[i], &l, &e), 0);
		assert_int_equal(l.mem_size, sizes[i]);
		assert_int_equal(l.depth, 3);
		assert_string_equal(l.parent, "snap-1.a_B");
		assert_int_equal(l.parent_id[15], 0xaf);
		/* One page of RAM: 0, 5, 6 and the last are all page 0. */
		assert_int_equal(l.pages, sizes[i] == PG ? 1 : 4);
		assert_true(l.bits[0] & (1ull << 0));
		assert_true(l.bits[(sizes[i] / PG - 1) / 64] &
			    (1ull << ((sizes[i] / PG - 1) % 64)));
		/* One layer, one encoding. */
		assert_int_equal(snap_layer_encode(&l, &again, &len2, &e), 0);
		assert_int_equal(len2, len);
		assert_memory_equal(again, b, len);
		free(again);
		snap_layer_free(&l);
		snap_layer_free(&l); /* twice is harmless */
		free(b);
	}
}

static void test_name_valid(void **state)
{
	static const char *good[] = { "a", "cp1", "before-upgrade", "x.y_z-9", "...", "A.B" };
	static const char *bad[] = { "", ".", "..", "a/b", "/a", "a b", "a\n", "ä", "a:b", "a\\b" };
	char name[80];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!snap_layer_name_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (snap_layer_name_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
	memset(name, 'n', sizeof(name));
	name[SNAP_LAYER_NAME_MAX] = 0;
	assert_true(snap_layer_name_valid(name));
	name[SNAP_LAYER_NAME_MAX] = 'n';
	name[SNAP_LAYER_NAME_MAX + 1] = 0;
	assert_false(snap_layer_name_valid(name));
}

/* Parse `len` bytes as a 64 KiB layer: the result, and a message whenever it is a refusal. */
static int try_parse(const uint8_t *b, size_t len, struct err *e)
{
	struct snap_layer l;
	uint8_t *copy = malloc(len ? len : 1); /* exactly sized: ASan sees an over-read */
	int r;

	assert_non_null(copy);
	memcpy(copy, b, len);
	e->msg[0] = 0;
	r = snap_layer_parse(copy, len, RAM, &l, e);
	if (r)
		assert_true(e->msg[0]);
	else
		snap_layer_free(&l);
	free(copy);
	return r;
}

static void test_truncated_and_longer(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(RAM, &len), *longer = calloc(1, len + 1);

	(void)state;
	assert_int_equal(try_parse(b, len, &e), 0);
	for (size_t cut = 0; cut < len; cut++) {
		int r = try_parse(b, cut, &e);

		if (r != SNAP_ERR_TRUNCATED)
			fail_msg("cut at %zu of %zu: got %d (%s)", cut, len, r, e.msg);
	}
	/* One byte more than the bitmap: damage, as in memory.z. */
	assert_non_null(longer);
	memcpy(longer, b, len);
	assert_int_equal(try_parse(longer, len + 1, &e), SNAP_ERR_CHECKSUM);
	assert_non_null(strstr(e.msg, "136 bytes"));
	free(longer);
	free(b);
}

/* Any byte changed: the magic is foreign, anything else fails a checksum. */
static void test_flipped_byte_every_offset(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80 };
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(RAM, &len);

	(void)state;
	for (size_t off = 0; off < len; off++) {
		for (size_t i = 0; i < sizeof(flips); i++) {
			int r;

			b[off] ^= flips[i];
			r = try_parse(b, len, &e);
			b[off] ^= flips[i];
			if (r != (off < 8 ? SNAP_ERR_MAGIC : SNAP_ERR_CHECKSUM))
				fail_msg("byte %zu ^ %#x: got %d (%s)", off, flips[i], r, e.msg);
		}
	}
	free(b);
}

/* A correctly sealed file whose fields are wrong: each refused with its own code. */
static void test_sealed_but_wrong(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(RAM, &len), *c = malloc(len);
	char name64[64];

	(void)state;
	assert_non_null(c);
	memset(name64, 'a', sizeof(name64));

#define PATCH(stmt, want)                                                               \
	do {                                                                            \
		memcpy(c, b, len);                                                      \
		stmt;                                                                   \
		reseal(c, len);                                                         \
		int r_ = try_parse(c, len, &e);                                         \
		if (r_ != (want))                                                       \
			fail_msg("%s: got %d (%s), want %d", #stmt, r_, e.msg, (want)); \
	} while (0)
#define NAME(s) (memset(c + L_PARENT, 0, 64), memcpy(c + L_PARENT, s, sizeof(s) - 1))

	PATCH((void)0, 0);
	PATCH(memcpy(c, "KILNSNAP", 8), SNAP_ERR_MAGIC);
	PATCH(put32(c + L_VERSION, 2), SNAP_ERR_FORMAT);
	PATCH(put32(c + L_VERSION, 0), SNAP_ERR_FORMAT);
	PATCH(put32(c + L_PAGE, 8192), SNAP_ERR_MALFORMED);
	PATCH(put32(c + L_RESERVED, 1), SNAP_ERR_MALFORMED);
	PATCH(put32(c + L_DEPTH, 0), SNAP_ERR_MALFORMED);
	PATCH(put32(c + L_DEPTH, SNAP_LAYER_DEPTH_MAX + 1), SNAP_ERR_MALFORMED);
	PATCH(put32(c + L_DEPTH, SNAP_LAYER_DEPTH_MAX), 0);
	PATCH(put32(c + L_DEPTH, 1), 0);
	PATCH(NAME(""), SNAP_ERR_MALFORMED);
	PATCH(NAME("."), SNAP_ERR_MALFORMED);
	PATCH(NAME(".."), SNAP_ERR_MALFORMED);
	PATCH(NAME("a/b"), SNAP_ERR_MALFORMED);
	PATCH(NAME("../etc"), SNAP_ERR_MALFORMED);
	PATCH(memcpy(c + L_PARENT, name64, 64), SNAP_ERR_MALFORMED); /* no NUL in the field */
	PATCH((memcpy(c + L_PARENT, name64, 63), c[L_PARENT + 63] = 0), 0); /* 63 is the most */
	PATCH(NAME("a\0b"), SNAP_ERR_MALFORMED); /* garbage after the NUL */
	PATCH(c[L_PARENT + 63] = 1, SNAP_ERR_MALFORMED);
	/* A bit past the last page (counted, so only the position is wrong). */
	PATCH((c[L_BITS + 2] |= 1, put64(c + L_PAGES, 5)), SNAP_ERR_MALFORMED);
	PATCH(c[L_BITS + 7] |= 0x80, SNAP_ERR_MALFORMED);
	PATCH(put64(c + L_PAGES, 3), SNAP_ERR_MALFORMED);
	PATCH(put64(c + L_PAGES, 5), SNAP_ERR_MALFORMED);
	PATCH((c[L_BITS + 1] |= 0x02, put64(c + L_PAGES, 5)), 0); /* page 9: inside RAM */
	/* Another RAM's layer: named as such, before its length is judged. */
	PATCH(put64(c + L_MEM_SIZE, 2 * RAM), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "131072 bytes of RAM"));
	PATCH(put64(c + L_MEM_SIZE, RAM + PG), SNAP_ERR_MALFORMED);
#undef NAME
#undef PATCH

	/* The caller's RAM is another: refused whatever the file says. */
	{
		struct snap_layer l;

		assert_int_equal(snap_layer_parse(b, len, RAM + PG, &l, &e), SNAP_ERR_MALFORMED);
		assert_null(l.bits);
		assert_int_equal(snap_layer_parse(b, len, 2 * RAM, &l, &e), SNAP_ERR_MALFORMED);
		/* And a RAM size that is none. */
		assert_int_equal(snap_layer_parse(b, len, 0, &l, &e), -EINVAL);
		assert_int_equal(snap_layer_parse(b, len, RAM + 1, &l, &e), -EINVAL);
	}
	free(c);
	free(b);
}

static void test_encode_refuses(void **state)
{
	struct err e = { { 0 } };
	struct snap_layer l;
	uint8_t *b;
	size_t len;

	(void)state;
	assert_int_equal(snap_layer_init(&l, 0), -EINVAL);
	assert_null(l.bits);
	assert_int_equal(snap_layer_init(&l, RAM + 100), -EINVAL);
	assert_int_equal(snap_layer_init(&l, RAM), 0);
	assert_int_equal(l.mem_size, RAM);
	l.depth = 1;
	strcpy(l.parent, "p");
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), 0);
	free(b);
	strcpy(l.parent, "..");
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL);
	assert_null(b);
	memset(l.parent, 'x', sizeof(l.parent)); /* no NUL at all */
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL);
	strcpy(l.parent, "p");
	l.depth = 0;
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL);
	l.depth = SNAP_LAYER_DEPTH_MAX + 1;
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL);
	l.depth = 1;
	mark(l.bits, NPG);
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "past the end"));
	snap_layer_free(&l);
	assert_int_equal(snap_layer_encode(&l, &b, &len, &e), -EINVAL); /* no bitmap */
}

static void test_read_write_file(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_layer l, back;
	size_t len;
	uint8_t *b = sample(RAM, &len), *big = calloc(1, len + 2);

	assert_int_equal(snap_layer_read(f->dfd, RAM, &back, &e), -ENOENT);
	assert_int_equal(snap_layer_parse(b, len, RAM, &l, &e), 0);
	assert_int_equal(snap_layer_write(f->dfd, &l, &e), 0);
	assert_false(tmpdir_exists(f->dfd, SNAP_LAYER_FILE ".tmp"));
	assert_int_equal(snap_layer_read(f->dfd, RAM, &back, &e), 0);
	assert_int_equal(back.pages, l.pages);
	assert_int_equal(back.bits[0], l.bits[0]);
	assert_string_equal(back.parent, l.parent);
	snap_layer_free(&back);
	/* A file for other RAM. */
	assert_int_equal(snap_layer_read(f->dfd, RAM + PG, &back, &e), SNAP_ERR_MALFORMED);
	assert_int_equal(snap_layer_read(f->dfd, 1000, &back, &e), -EINVAL);
	/* One byte over is read and judged; more is refused unread. */
	assert_non_null(big);
	memcpy(big, b, len);
	assert_int_equal(snap_write_atomic(f->dfd, SNAP_LAYER_FILE, big, len + 1, &e), 0);
	assert_int_equal(snap_layer_read(f->dfd, RAM, &back, &e), SNAP_ERR_CHECKSUM);
	assert_int_equal(snap_write_atomic(f->dfd, SNAP_LAYER_FILE, big, len + 2, &e), 0);
	assert_int_equal(snap_layer_read(f->dfd, RAM, &back, &e), SNAP_ERR_CHECKSUM);
	assert_non_null(strstr(e.msg, "larger than"));
	assert_null(back.bits);
	/* Never through a symlink. */
	assert_int_equal(unlinkat(f->dfd, SNAP_LAYER_FILE, 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", f->dfd, SNAP_LAYER_FILE), 0);
	assert_int_equal(snap_layer_read(f->dfd, RAM, &back, &e), -ELOOP);
	snap_layer_free(&l);
	free(big);
	free(b);
}

/* ---- the layer's memory file ---- */

static void test_write_pages_apply(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_mem_stats st;
	struct snap_layer l;
	uint8_t *ram = calloc(1, RAM), *dst = malloc(RAM);
	int fd;

	assert_non_null(ram);
	assert_non_null(dst);
	assert_int_equal(snap_layer_init(&l, RAM), 0);
	l.depth = 1;
	strcpy(l.parent, "p");
	for (size_t pg = 0; pg < NPG; pg++)
		fill(ram, pg, (uint8_t)(0x10 + pg));
	fill(ram, 2, 0);  /* marked and zero: a hole, read back as zeros */
	fill(ram, 12, 0); /* unmarked and zero */
	ram[4 * PG + PG - 1] = 0;
	for (size_t pg = 0; pg <= 4; pg++)
		mark(l.bits, pg);
	mark(l.bits, NPG - 1);

	fd = openat(f->dfd, SNAP_MEM_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(snap_mem_write_pages(fd, ram, RAM, l.bits, &st, &e), 0);
	assert_int_equal(st.pages, 6);
	assert_int_equal(st.runs, 3); /* 0-1, 3-4, 15 */
	assert_int_equal(st.stored, 5 * PG);
	for (size_t pg = 0; pg < NPG; pg++) {
		int want = pg <= 4 ? pg != 2 : pg == NPG - 1;
		int is_data = lseek(fd, (off_t)(pg * PG), SEEK_DATA) == (off_t)(pg * PG);

		if (is_data != want)
			fail_msg("page %zu: data %d in the file, want %d", pg, is_data, want);
	}

	/* Over RAM that holds something else everywhere: only marked pages change. */
	memset(dst, 0xee, RAM);
	assert_int_equal(snap_layer_apply(fd, &l, dst, &e), 0);
	for (size_t pg = 0; pg < NPG; pg++) {
		int marked = pg <= 4 || pg == NPG - 1;

		if (marked && memcmp(dst + pg * PG, ram + pg * PG, PG))
			fail_msg("marked page %zu not applied", pg);
		for (size_t i = 0; !marked && i < PG; i++)
			if (dst[pg * PG + i] != 0xee)
				fail_msg("unmarked page %zu touched", pg);
	}
	/* st may be NULL; sizes that are not whole pages are refused. */
	assert_int_equal(snap_mem_write_pages(fd, ram, RAM, l.bits, NULL, &e), 0);
	assert_int_equal(snap_mem_write_pages(fd, ram, RAM - 1, l.bits, NULL, &e), -EINVAL);
	assert_int_equal(snap_mem_write_pages(fd, ram, 0, l.bits, NULL, &e), -EINVAL);
	close(fd);
	snap_layer_free(&l);
	free(dst);
	free(ram);
}

/* Fill RAM-sized `fd` with 0x11 + page index, page by page; mark pages 1-2, 5 and 9. */
static void map_fixture(int fd, struct snap_layer *l)
{
	uint8_t pg[PG];

	assert_int_equal(ftruncate(fd, RAM), 0);
	for (size_t i = 0; i < NPG; i++) {
		memset(pg, 0x11 + (int)i, PG);
		assert_int_equal(pwrite(fd, pg, PG, (off_t)(i * PG)), PG);
	}
	assert_int_equal(snap_layer_init(l, RAM), 0);
	mark(l->bits, 1);
	mark(l->bits, 2);
	mark(l->bits, 5);
	mark(l->bits, 9);
}

/*
 * snap_layer_map maps a layer's runs from its file (a later write to the
 * file shows through an untouched page: it is the page cache's page, not
 * a copy) and leaves unmarked pages alone; past the budget it copies.
 */
static void test_layer_map(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_layer l;
	uint8_t *dst = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t b = 0x77;
	unsigned budget = 3;
	int fd = openat(f->dfd, "m", O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(dst != MAP_FAILED);
	assert_true(fd >= 0);
	map_fixture(fd, &l);

	/* Three runs, a budget of 2: copied, the budget kept. */
	memset(dst, 0xee, RAM);
	budget = 2;
	assert_int_equal(snap_layer_map(fd, &l, dst, &budget, &e), 0);
	assert_int_equal(budget, 2);
	assert_int_equal(dst[5 * PG], 0x11 + 5);
	assert_int_equal(pwrite(fd, &b, 1, 5 * PG), 1);
	assert_int_equal(dst[5 * PG], 0x11 + 5); /* a copy */

	/* A budget of 3: mapped, 3 taken. */
	memset(dst, 0xee, RAM);
	budget = 3;
	assert_int_equal(snap_layer_map(fd, &l, dst, &budget, &e), 0);
	assert_int_equal(budget, 0);
	for (size_t pg = 0; pg < NPG; pg++) {
		int marked = pg == 1 || pg == 2 || pg == 5 || pg == 9;
		uint8_t want = marked ? (pg == 5 ? 0x77 : 0x11 + (int)pg) : 0xee;

		if (dst[pg * PG] != want || dst[pg * PG + PG - 1] != (marked ? 0x11 + pg : 0xee))
			fail_msg("page %zu: %#x, want %#x", pg, dst[pg * PG], want);
	}
	b = 0x78;
	assert_int_equal(pwrite(fd, &b, 1, 9 * PG), 1);
	assert_int_equal(dst[9 * PG], 0x78); /* the file's page, shared */
	/* Private: a write to RAM does not reach the file. */
	dst[2 * PG] = 0x55;
	assert_int_equal(pread(fd, &b, 1, 2 * PG), 1);
	assert_int_equal(b, 0x11 + 2);

	/* A file of the wrong size is refused before anything is mapped. */
	budget = 3;
	assert_int_equal(ftruncate(fd, RAM - PG), 0);
	assert_int_equal(snap_layer_map(fd, &l, dst, &budget, &e), SNAP_ERR_TRUNCATED);
	assert_int_equal(budget, 3);
	close(fd);
	snap_layer_free(&l);
	munmap(dst, RAM);
}

static void test_apply_wrong_file(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_layer l;
	uint8_t *dst = malloc(RAM);
	int fd = openat(f->dfd, "m", O_RDWR | O_CREAT | O_TRUNC, 0600), p[2];

	assert_non_null(dst);
	assert_true(fd >= 0);
	assert_int_equal(snap_layer_init(&l, RAM), 0);
	mark(l.bits, NPG - 1);
	memset(dst, 0xee, RAM);
	assert_int_equal(ftruncate(fd, RAM - PG), 0);
	assert_int_equal(snap_layer_apply(fd, &l, dst, &e), SNAP_ERR_TRUNCATED);
	assert_non_null(strstr(e.msg, "61440 bytes"));
	assert_int_equal(ftruncate(fd, RAM + PG), 0);
	assert_int_equal(snap_layer_apply(fd, &l, dst, &e), SNAP_ERR_MALFORMED);
	assert_int_equal(ftruncate(fd, RAM), 0);
	assert_int_equal(snap_layer_apply(fd, &l, dst, &e), 0);
	assert_int_equal(dst[RAM - 1], 0);
	assert_int_equal(dst[RAM - PG - 1], 0xee);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(snap_layer_apply(p[0], &l, dst, &e), SNAP_ERR_MALFORMED);
	close(p[0]);
	close(p[1]);
	close(fd);
	snap_layer_free(&l);
	free(dst);
}

/* ---- ids ---- */

static const uint8_t *id_of(char c)
{
	static uint8_t ids[4][SNAP_ID_LEN];
	uint8_t *id = ids[(c - 'A') & 3];

	for (int i = 0; i < SNAP_ID_LEN; i++)
		id[i] = (uint8_t)(c * 16 + i);
	return id;
}

/* A state file with some section and, when `id` is not NULL, the id. */
static void state_bytes(const uint8_t *id, uint8_t **out, size_t *len)
{
	struct snap_writer w;
	struct err e = { { 0 } };
	const uint8_t *b;

	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_VCPU_REGS, 0, "regs", "registers", 9, &e), 0);
	if (id)
		assert_int_equal(snap_id_put(&w, id, &e), 0);
	assert_int_equal(snap_finish(&w, &b, len, &e), 0);
	*out = malloc(*len);
	assert_non_null(*out);
	memcpy(*out, b, *len);
	snap_writer_free(&w);
}

static int id_from(const void *payload, size_t n, uint8_t id[SNAP_ID_LEN], struct err *e)
{
	struct snap_writer w;
	struct snap_view v;
	const uint8_t *b;
	size_t len;
	int r;

	assert_int_equal(snap_writer_init(&w, &WHO, e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_SNAP_ID, 0, "snap_id", payload, n, e), 0);
	assert_int_equal(snap_finish(&w, &b, &len, e), 0);
	assert_int_equal(snap_parse(b, len, &WHO, &v, e), 0);
	r = snap_id_get(&v, id, e);
	snap_view_free(&v);
	snap_writer_free(&w);
	return r;
}

static void test_ids(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_view v;
	uint8_t id[SNAP_ID_LEN], *b, payload[24];
	size_t len;
	const struct snap_section *s;

	state_bytes(id_of('A'), &b, &len);
	assert_int_equal(snap_parse(b, len, &WHO, &v, &e), 0);
	s = snap_find(&v, SNAP_SEC_SNAP_ID, 0);
	assert_non_null(s);
	assert_string_equal(s->name, "snap_id");
	assert_int_equal(s->len, 4 + SNAP_ID_LEN);
	assert_int_equal(get32(s->data), SNAP_ID_VERSION);
	assert_int_equal(snap_id_get(&v, id, &e), 0);
	assert_memory_equal(id, id_of('A'), SNAP_ID_LEN);
	snap_view_free(&v);
	/* Through the directory: state read and parsed without a host check. */
	assert_int_equal(snap_id_read(f->dfd, id, &e), -ENOENT);
	assert_int_equal(snap_write_atomic(f->dfd, SNAP_STATE_FILE, b, len, &e), 0);
	memset(id, 0, sizeof(id));
	assert_int_equal(snap_id_read(f->dfd, id, &e), 0);
	assert_memory_equal(id, id_of('A'), SNAP_ID_LEN);
	free(b);
	/* A damaged state file is not read for an id. */
	assert_int_equal(snap_write_atomic(f->dfd, SNAP_STATE_FILE, "KILNSNAPxxxx", 12, &e), 0);
	assert_int_equal(snap_id_read(f->dfd, id, &e), SNAP_ERR_TRUNCATED);

	/* None: a snapshot from before ids. */
	state_bytes(NULL, &b, &len);
	assert_int_equal(snap_parse(b, len, &WHO, &v, &e), 0);
	memset(id, 0x77, sizeof(id));
	assert_int_equal(snap_id_get(&v, id, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "no snapshot id"));
	assert_int_equal(id[0], 0x77); /* untouched on failure */
	snap_view_free(&v);
	free(b);

	/* Another version, short, long. */
	memset(payload, 0x5a, sizeof(payload));
	put32(payload, SNAP_ID_VERSION);
	assert_int_equal(id_from(payload, 4 + SNAP_ID_LEN, id, &e), 0);
	assert_int_equal(id[0], 0x5a);
	assert_int_equal(id_from(payload, 4 + SNAP_ID_LEN - 1, id, &e), SNAP_ERR_MALFORMED);
	assert_int_equal(id_from(payload, 4 + SNAP_ID_LEN + 1, id, &e), SNAP_ERR_MALFORMED);
	assert_int_equal(id_from(payload, 2, id, &e), SNAP_ERR_MALFORMED);
	put32(payload, SNAP_ID_VERSION + 1);
	assert_int_equal(id_from(payload, 4 + SNAP_ID_LEN, id, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "id version 2"));
}

/* ---- merging a parent into its child ---- */

static void make_state(int dfd, const uint8_t *id)
{
	struct err e = { { 0 } };
	uint8_t *b;
	size_t len;

	state_bytes(id, &b, &len);
	assert_int_equal(snap_write_atomic(dfd, SNAP_STATE_FILE, b, len, &e), 0);
	free(b);
}

/* A full snapshot: state with `id`, raw memory `ram`. */
static void make_full(int dfd, const uint8_t *id, const uint8_t *ram)
{
	struct err e = { { 0 } };

	make_state(dfd, id);
	assert_int_equal(snap_mem_save(dfd, SNAP_MEM_FILE, ram, RAM, 0, NULL, &e), 0);
}

/* A layered snapshot: the pages `bits` marks of `ram`, over `parent` (with id pid) at `depth`. */
static void make_layered(int dfd, const uint8_t *id, const uint8_t *ram, const uint64_t *bits,
			 const char *parent, const uint8_t *pid, uint32_t depth)
{
	struct err e = { { 0 } };
	struct snap_layer l;
	int fd;

	make_state(dfd, id);
	fd = snap_tmp_open(dfd, SNAP_MEM_FILE, &e);
	assert_true(fd >= 0);
	assert_int_equal(snap_mem_write_pages(fd, ram, RAM, bits, NULL, &e), 0);
	assert_int_equal(snap_tmp_commit(dfd, SNAP_MEM_FILE, fd, &e), 0);
	assert_int_equal(snap_layer_init(&l, RAM), 0);
	memcpy(l.bits, bits, sizeof(uint64_t) * snap_layer_words(RAM));
	memcpy(l.parent_id, pid, SNAP_ID_LEN);
	strcpy(l.parent, parent);
	l.depth = depth;
	assert_int_equal(snap_layer_write(dfd, &l, &e), 0);
	snap_layer_free(&l);
}

/* The RAM of snapshot NAME as a restore would build it: down the chain of parents, then each layer applied. */
static void ram_of(struct tmpdir_fx *f, const char *name, uint8_t *out)
{
	struct err e = { { 0 } };
	struct snap_layer l;
	int dfd = openat(f->dfd, name, O_RDONLY | O_DIRECTORY), fd, r;

	assert_true(dfd >= 0);
	fd = snap_mem_open_raw(dfd, SNAP_MEM_FILE, RAM, &e);
	assert_true(fd >= 0);
	r = snap_layer_read(dfd, RAM, &l, &e);
	if (r == -ENOENT) {
		assert_int_equal(pread(fd, out, RAM, 0), RAM);
	} else {
		int pfd = openat(f->dfd, l.parent, O_RDONLY | O_DIRECTORY);
		uint8_t pid[SNAP_ID_LEN];

		assert_int_equal(r, 0);
		assert_true(pfd >= 0);
		assert_int_equal(snap_id_read(pfd, pid, &e), 0);
		assert_memory_equal(pid, l.parent_id, SNAP_ID_LEN);
		close(pfd);
		ram_of(f, l.parent, out);
		assert_int_equal(snap_layer_apply(fd, &l, out, &e), 0);
		snap_layer_free(&l);
	}
	close(fd);
	close(dfd);
}

static void expect_ram(struct tmpdir_fx *f, const char *name, const uint8_t *want)
{
	uint8_t *got = malloc(RAM);

	assert_non_null(got);
	ram_of(f, name, got);
	for (size_t pg = 0; pg < NPG; pg++)
		if (memcmp(got + pg * PG, want + pg * PG, PG))
			fail_msg("%s: page %zu differs (byte 0: %#x, want %#x)", name, pg,
				 got[pg * PG], want[pg * PG]);
	free(got);
}

/* A parent's RAM: page i all 0x10 + i, page 3 zero. */
static uint8_t *parent_ram(void)
{
	uint8_t *ram = malloc(RAM);

	assert_non_null(ram);
	for (size_t pg = 0; pg < NPG; pg++)
		fill(ram, pg, (uint8_t)(0x10 + pg));
	fill(ram, 3, 0);
	return ram;
}

/* Its child's: pages 2 and 10-11 rewritten, 3 (zero in the parent) written, 5 written back to zeros. */
static uint8_t *child_ram(const uint8_t *parent, uint64_t *bits)
{
	uint8_t *ram = malloc(RAM);

	assert_non_null(ram);
	memcpy(ram, parent, RAM);
	fill(ram, 2, 0xc2);
	fill(ram, 3, 0xc3);
	fill(ram, 5, 0);
	fill(ram, 10, 0xca);
	fill(ram, 11, 0xcb);
	bits[0] = (1u << 2) | (1u << 3) | (1u << 5) | (1u << 10) | (1u << 11);
	return ram;
}

/* The child's files, to compare before and after a merge that must not touch them. */
struct files {
	uint8_t *mem, *layer;
	size_t mem_len, layer_len;
};

static void files_of(int dfd, struct files *fs)
{
	fs->mem = slurp(dfd, SNAP_MEM_FILE, &fs->mem_len);
	fs->layer = slurp(dfd, SNAP_LAYER_FILE, &fs->layer_len);
}

static void expect_same_files(int dfd, struct files *before)
{
	struct files now;

	files_of(dfd, &now);
	assert_int_equal(now.mem_len, before->mem_len);
	assert_memory_equal(now.mem, before->mem, now.mem_len);
	assert_int_equal(now.layer_len, before->layer_len);
	assert_memory_equal(now.layer, before->layer, now.layer_len);
	assert_false(tmpdir_exists(dfd, SNAP_MEM_FILE ".tmp"));
	free(now.mem);
	free(now.layer);
	free(before->mem);
	free(before->layer);
}

/* (a) A child of a full parent becomes full: its memory is the parent's with its pages over it. */
static void test_merge_full_parent(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits), *back = malloc(RAM);
	int pfd = subdir(f, "P"), cfd = subdir(f, "C"), fd;
	struct snap_layer l;

	assert_non_null(back);
	make_full(pfd, id_of('A'), pram);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	expect_ram(f, "C", cram);

	memset(&res, 0xff, sizeof(res));
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_true(res.merged);
	assert_true(res.full);
	assert_string_equal(res.parent, "");
	assert_true(res.stored > 0);
	assert_false(tmpdir_exists(cfd, SNAP_LAYER_FILE));
	assert_false(tmpdir_exists(cfd, SNAP_MEM_FILE ".tmp"));
	assert_int_equal(snap_layer_read(cfd, RAM, &l, &e), -ENOENT);
	/* The memory file alone is the child's RAM, page 5's zeros over the parent's 0x15 included. */
	fd = snap_mem_open_raw(cfd, SNAP_MEM_FILE, RAM, &e);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, RAM, 0), RAM);
	assert_memory_equal(back, cram, RAM);
	close(fd);
	/* The parent is untouched, and can go. */
	expect_ram(f, "P", pram);
	assert_int_equal(snap_dir_remove(f->dfd, "P"), 0);
	expect_ram(f, "C", cram);
	/* Merging again (the parent is gone; a full child) changes nothing. */
	close(pfd);
	pfd = subdir(f, "P2");
	make_full(pfd, id_of('A'), pram);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_false(res.merged);
	close(pfd);
	close(cfd);
	free(back);
	free(cram);
	free(pram);
}

/* (b) A child of a layered parent is layered on the grandparent now, with both sets of pages. */
static void test_merge_layered_parent(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	struct snap_layer l;
	uint64_t pbits[1] = { (1u << 1) | (1u << 5) | (1u << 7) | (1u << 15) }, cbits[1] = { 0 };
	uint8_t *gram = parent_ram(), *pram = malloc(RAM), *cram;
	int gfd = subdir(f, "GP"), pfd = subdir(f, "P"), cfd = subdir(f, "C");

	assert_non_null(pram);
	memcpy(pram, gram, RAM);
	fill(pram, 1, 0xb1);
	fill(pram, 5, 0xb5);
	fill(pram, 7, 0); /* the parent's own zero page */
	fill(pram, 15, 0xbf);
	cram = child_ram(pram, cbits); /* and the child zeroes page 5, which the parent wrote */
	make_full(gfd, id_of('A'), gram);
	make_layered(pfd, id_of('B'), pram, pbits, "GP", id_of('A'), 1);
	make_layered(cfd, id_of('C'), cram, cbits, "P", id_of('B'), 2);
	expect_ram(f, "P", pram);
	expect_ram(f, "C", cram);

	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_true(res.merged);
	assert_false(res.full);
	assert_string_equal(res.parent, "GP");
	assert_int_equal(snap_layer_read(cfd, RAM, &l, &e), 0);
	assert_string_equal(l.parent, "GP");
	assert_memory_equal(l.parent_id, id_of('A'), SNAP_ID_LEN);
	assert_int_equal(l.depth, 1);
	assert_int_equal(l.bits[0], pbits[0] | cbits[0]);
	assert_int_equal(l.pages, 8);
	snap_layer_free(&l);
	/* Over the grandparent, without the parent. */
	expect_ram(f, "C", cram);
	assert_int_equal(snap_dir_remove(f->dfd, "P"), 0);
	expect_ram(f, "C", cram);
	expect_ram(f, "GP", gram);
	close(gfd);
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
	free(gram);
}

/* (c) A parent of the same name taken again (another id) is not the child's: left alone. */
static void test_merge_other_parent(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	struct files before;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits);
	int pfd = subdir(f, "P"), cfd = subdir(f, "C");

	make_full(pfd, id_of('D'), pram);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	files_of(cfd, &before);
	memset(&res, 0xff, sizeof(res));
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_false(res.merged);
	assert_false(res.full);
	assert_string_equal(res.parent, "");
	expect_same_files(cfd, &before);
	/* A parent without an id (from before ids) cannot be told apart: refused, child untouched. */
	make_state(pfd, NULL);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_MALFORMED);
	assert_false(res.merged);
	expect_same_files(cfd, &before);
	/* A snapshot is not its own parent. */
	assert_int_equal(snap_layer_merge(cfd, cfd, &res, &e), -EINVAL);
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
}

/* (d) A full child stands on nothing. */
static void test_merge_full_child(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	uint8_t *ram = parent_ram(), *mem;
	size_t len;
	int pfd = subdir(f, "P"), cfd = subdir(f, "C");

	make_full(pfd, id_of('A'), ram);
	make_full(cfd, id_of('B'), ram);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_false(res.merged);
	mem = slurp(cfd, SNAP_MEM_FILE, &len);
	assert_int_equal(len, RAM);
	assert_memory_equal(mem, ram, RAM);
	free(mem);
	/* A compressed full child too (it has no raw memory at all). */
	assert_int_equal(unlinkat(cfd, SNAP_MEM_FILE, 0), 0);
	assert_int_equal(snap_mem_save(cfd, SNAP_MEMZ_FILE, ram, RAM, 1, NULL, &e), 0);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), 0);
	assert_false(res.merged);
	close(pfd);
	close(cfd);
	free(ram);
}

/* (e) A parent whose memory is compressed cannot be folded page by page: refused, child untouched. */
static void test_merge_compressed_parent(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	struct files before;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits);
	int pfd = subdir(f, "P"), cfd = subdir(f, "C");

	make_state(pfd, id_of('A'));
	assert_int_equal(snap_mem_save(pfd, SNAP_MEMZ_FILE, pram, RAM, 1, NULL, &e), 0);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), -ENOTSUP);
	assert_non_null(strstr(e.msg, "memory.z"));
	assert_false(res.merged);
	expect_same_files(cfd, &before);
	/* Nor one with no memory at all. */
	assert_int_equal(unlinkat(pfd, SNAP_MEMZ_FILE, 0), 0);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), -ENOENT);
	expect_same_files(cfd, &before);
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
}

/* Damage on either side is refused before anything is written; the child keeps its files. */
static void test_merge_damaged(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	struct files before;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits), *layer;
	size_t len;
	int pfd = subdir(f, "P"), cfd = subdir(f, "C");

	make_full(pfd, id_of('A'), pram);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	/* The parent's memory is not the child's RAM size. */
	assert_int_equal(snap_mem_save(pfd, SNAP_MEM_FILE, pram, RAM - PG, 0, NULL, &e), 0);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_TRUNCATED);
	expect_same_files(cfd, &before);
	/* The parent's own layer is damaged. */
	assert_int_equal(snap_mem_save(pfd, SNAP_MEM_FILE, pram, RAM, 0, NULL, &e), 0);
	assert_int_equal(snap_write_atomic(pfd, SNAP_LAYER_FILE, "KILNLAYR", 8, &e), 0);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_TRUNCATED);
	expect_same_files(cfd, &before);
	assert_int_equal(unlinkat(pfd, SNAP_LAYER_FILE, 0), 0);
	/* The child's layer is damaged: nothing is trusted from it. */
	layer = slurp(cfd, SNAP_LAYER_FILE, &len);
	layer[L_BITS] ^= 1;
	assert_int_equal(snap_write_atomic(cfd, SNAP_LAYER_FILE, layer, len, &e), 0);
	files_of(cfd, &before);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_CHECKSUM);
	expect_same_files(cfd, &before);
	free(layer);
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
}

/* A full disk while the merged memory is written: the temporary goes, the child keeps its files. */
static void test_merge_full_disk(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	struct files before;
	struct rlimit old, lim;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits);
	int pfd = subdir(f, "P"), cfd = subdir(f, "C"), r;

	make_full(pfd, id_of('A'), pram);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	files_of(cfd, &before);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = RAM / 2;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	r = snap_layer_merge(pfd, cfd, &res, &e);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(r, -EFBIG);
	assert_false(res.merged);
	expect_same_files(cfd, &before);
	expect_ram(f, "C", cram);
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
}

/* A layer whose memory file is missing or not whole pages: refused, nothing written. */
static void test_merge_child_memory_bad(void **state)
{
	struct tmpdir_fx *f = *state;
	struct err e = { { 0 } };
	struct snap_merge_result res;
	uint64_t bits[1] = { 0 };
	uint8_t *pram = parent_ram(), *cram = child_ram(pram, bits);
	int pfd = subdir(f, "P"), cfd = subdir(f, "C");

	make_full(pfd, id_of('A'), pram);
	make_layered(cfd, id_of('B'), cram, bits, "P", id_of('A'), 1);
	assert_int_equal(snap_write_atomic(cfd, SNAP_MEM_FILE, cram, RAM - 1, &e), 0);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "65535 bytes"));
	assert_int_equal(unlinkat(cfd, SNAP_MEM_FILE, 0), 0);
	assert_int_equal(snap_layer_merge(pfd, cfd, &res, &e), SNAP_ERR_MALFORMED);
	assert_false(res.merged);
	assert_true(tmpdir_exists(cfd, SNAP_LAYER_FILE));
	assert_false(tmpdir_exists(cfd, SNAP_MEM_FILE));
	assert_false(tmpdir_exists(cfd, SNAP_MEM_FILE ".tmp"));
	close(pfd);
	close(cfd);
	free(cram);
	free(pram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_name_valid),
		cmocka_unit_test(test_truncated_and_longer),
		cmocka_unit_test(test_flipped_byte_every_offset),
		cmocka_unit_test(test_sealed_but_wrong),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test_setup_teardown(test_read_write_file, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_write_pages_apply, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_layer_map, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_apply_wrong_file, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_ids, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_full_parent, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_layered_parent, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_other_parent, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_full_child, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_compressed_parent, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_damaged, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_full_disk, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_merge_child_memory_bad, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

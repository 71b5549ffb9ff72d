/*
 * snapshot_file: the state file is untrusted input at restore. Every way a
 * file can be wrong (cut short, a byte flipped, not a snapshot, another
 * format or kiln version, another CPU, hostile section lengths) must be
 * refused with its own error, and what the writer writes must read back
 * byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bytes.h"
#include "vmm/snapshot/snapshot_file.h"

/* Layout offsets the tests patch (docs/architecture.md, "Snapshot files"). */
#define H_FORMAT 8
#define H_COUNT 12
#define H_TOTAL 16
#define H_VENDOR 56
#define H_RESERVED 88
#define S_TYPE 0
#define S_NAME 8
#define S_LEN 24

static const struct snap_compat WHO = {
	.kiln_version = "0.1.0",
	.cpu = { .vendor = "AuthenticAMD",
		 .family = 25,
		 .model = 33,
		 .features = 0x1234abcd5678ef01ull },
};

static uint8_t pattern(uint32_t type, uint32_t index, size_t i)
{
	return (uint8_t)(type * 31 + index * 7 + i * 13 + 1);
}

/* Section i of a test file: types and indexes spread out, lengths 0..67 (so padding varies). */
static void nth(uint32_t i, uint32_t *type, uint32_t *index, size_t *len, char name[16])
{
	*type = 16 + i % 9;
	*index = i / 9;
	*len = (i * 7) % 68;
	snprintf(name, 16, "sec-%u", i);
}

/* A finished file of n sections, copied into an exactly sized buffer (so ASan sees over-reads). */
static uint8_t *build(uint32_t n, size_t *len)
{
	struct snap_writer w;
	struct err e = { { 0 } };
	const uint8_t *out;
	uint8_t *copy;

	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t type, index;
		size_t l;
		char name[16];
		uint8_t data[68];

		nth(i, &type, &index, &l, name);
		for (size_t k = 0; k < l; k++)
			data[k] = pattern(type, index, k);
		assert_int_equal(snap_add(&w, type, index, name, data, l, &e), 0);
	}
	assert_int_equal(snap_finish(&w, &out, len, &e), 0);
	copy = malloc(*len);
	assert_non_null(copy);
	memcpy(copy, out, *len);
	snap_writer_free(&w);
	return copy;
}

/* Re-seal a patched file, so the test reaches the check after the checksum. */
static void reseal(uint8_t *b, size_t len)
{
	put32(b + len - 8, (uint32_t)crc32(0, b, (uInt)(len - 8)));
}

static int parse_err(const uint8_t *b, size_t len, const struct snap_compat *host, struct err *e)
{
	struct snap_view v;
	int r = snap_parse(b, len, host, &v, e);

	if (r == 0)
		snap_view_free(&v);
	return r;
}

static void test_round_trip(void **state)
{
	struct err e = { { 0 } };
	struct snap_view v;
	size_t len;
	uint8_t *b = build(500, &len);

	(void)state;
	assert_int_equal(len % 8, 0);
	assert_int_equal(snap_parse(b, len, &WHO, &v, &e), 0);
	assert_int_equal(v.count, 500);
	assert_int_equal(v.format_version, SNAP_FORMAT_VERSION);
	assert_string_equal(v.origin.kiln_version, "0.1.0");
	assert_string_equal(v.origin.cpu.vendor, "AuthenticAMD");
	assert_int_equal(v.origin.cpu.family, 25);
	assert_int_equal(v.origin.cpu.model, 33);
	assert_true(v.origin.cpu.features == WHO.cpu.features);
	for (uint32_t i = 0; i < 500; i++) {
		uint32_t type, index;
		size_t l;
		char name[16];
		const struct snap_section *s;

		nth(i, &type, &index, &l, name);
		/* File order is append order... */
		assert_int_equal(v.sections[i].type, type);
		assert_int_equal(v.sections[i].index, index);
		/* ... and lookup finds each by (type, index). */
		s = snap_find(&v, type, index);
		assert_ptr_equal(s, &v.sections[i]);
		assert_string_equal(s->name, name);
		assert_int_equal(s->len, l);
		for (size_t k = 0; k < l; k++)
			assert_int_equal(s->data[k], pattern(type, index, k));
	}
	assert_null(snap_find(&v, 16, 9999));
	assert_null(snap_find(&v, 99, 0));
	assert_null(snap_find(&v, 0, 0));
	snap_view_free(&v);
	free(b);
}

/* No sections at all is a valid (if useless) file. */
static void test_empty(void **state)
{
	struct err e = { { 0 } };
	struct snap_view v;
	size_t len;
	uint8_t *b = build(0, &len);

	(void)state;
	assert_int_equal(len, SNAP_HEADER_SIZE + SNAP_TRAILER_SIZE);
	assert_int_equal(snap_parse(b, len, &WHO, &v, &e), 0);
	assert_int_equal(v.count, 0);
	assert_null(snap_find(&v, 16, 0));
	snap_view_free(&v);
	free(b);
}

/* Piecewise sections and the payload cursor: what is put is what is got. */
static void test_put_and_cursor(void **state)
{
	struct err e = { { 0 } };
	struct snap_writer w;
	struct snap_view v;
	struct snap_cursor c;
	const struct snap_section *s;
	const uint8_t *out;
	size_t len;
	uint8_t blob[5] = { 1, 2, 3, 4, 5 }, got[5];

	(void)state;
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_begin(&w, SNAP_SEC_DEVICE, 3, "virtio-blk", &e), 0);
	snap_put_u8(&w, 0xab, &e);
	snap_put_u16(&w, 0xbeef, &e);
	snap_put_u32(&w, 0xdeadbeef, &e);
	snap_put_u64(&w, 0x0123456789abcdefull, &e);
	snap_put(&w, blob, sizeof(blob), &e);
	assert_int_equal(snap_end(&w, &e), 0);
	assert_int_equal(snap_finish(&w, &out, &len, &e), 0);
	assert_int_equal(snap_parse(out, len, &WHO, &v, &e), 0);

	s = snap_find(&v, SNAP_SEC_DEVICE, 3);
	assert_non_null(s);
	assert_string_equal(s->name, "virtio-blk");
	assert_int_equal(s->len, 1 + 2 + 4 + 8 + 5);
	snap_cursor_init(&c, s);
	assert_int_equal(snap_get_u8(&c), 0xab);
	assert_int_equal(snap_get_u16(&c), 0xbeef);
	assert_int_equal(snap_get_u32(&c), 0xdeadbeef);
	assert_true(snap_get_u64(&c) == 0x0123456789abcdefull);
	snap_get(&c, got, sizeof(got));
	assert_memory_equal(got, blob, sizeof(blob));
	assert_int_equal(snap_cursor_end(&c, &e), 0);

	/* Reading past the end: zeros, and the section is refused, named. */
	assert_int_equal(snap_get_u32(&c), 0);
	assert_int_equal(snap_cursor_end(&c, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "virtio-blk"));
	assert_non_null(strstr(e.msg, "too short"));

	/* Bytes left over are refused too: a saver and loader that disagree. */
	snap_cursor_init(&c, s);
	snap_get_u8(&c);
	assert_int_equal(snap_cursor_end(&c, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "left over"));

	snap_view_free(&v);
	snap_writer_free(&w);
}

/* Cut anywhere, from 0 bytes to one short: truncated, never anything else. */
static void test_truncated_every_length(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(40, &len);

	(void)state;
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *c = malloc(cut ? cut : 1);

		assert_non_null(c);
		memcpy(c, b, cut);
		if (parse_err(c, cut, &WHO, &e) != SNAP_ERR_TRUNCATED)
			fail_msg("cut at %zu of %zu: got %d (%s)", cut, len,
				 parse_err(c, cut, &WHO, &e), e.msg);
		free(c);
	}
	assert_non_null(strstr(e.msg, "truncated"));
	free(b);
}

/*
 * One byte changed anywhere is refused: in the magic as "not a snapshot",
 * in the size field as truncated or damaged, everywhere else by the
 * checksum, before any other check can be fooled.
 */
static void test_flipped_byte_every_offset(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xff };
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(40, &len);

	(void)state;
	for (size_t off = 0; off < len; off++) {
		for (size_t f = 0; f < sizeof(flips); f++) {
			int r;

			b[off] ^= flips[f];
			r = parse_err(b, len, &WHO, &e);
			b[off] ^= flips[f];
			if (off < 8)
				assert_int_equal(r, SNAP_ERR_MAGIC);
			else if (off >= H_TOTAL && off < H_TOTAL + 8)
				assert_true(r == SNAP_ERR_TRUNCATED || r == SNAP_ERR_CHECKSUM);
			else if (r != SNAP_ERR_CHECKSUM)
				fail_msg("byte %zu ^ %#x: got %d (%s)", off, flips[f], r, e.msg);
		}
	}
	assert_int_equal(parse_err(b, len, &WHO, &e), 0);
	free(b);
}

static void test_wrong_magic(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(3, &len);
	static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };

	(void)state;
	b[7] = 'Q';
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_MAGIC);
	assert_non_null(strstr(e.msg, "not a kiln snapshot"));
	memcpy(b, elf, sizeof(elf));
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_MAGIC);
	/* A short foreign file is foreign, not truncated. */
	assert_int_equal(parse_err(elf, 4, &WHO, &e), SNAP_ERR_MAGIC);
	free(b);
}

/* A file from a future kiln: checksummed fine, but a format this kiln cannot read. */
static void test_wrong_format_version(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(3, &len);

	(void)state;
	put32(b + H_FORMAT, SNAP_FORMAT_VERSION + 1);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_FORMAT);
	assert_non_null(strstr(e.msg, "format version 2"));
	put32(b + H_FORMAT, 0);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_FORMAT);
	/* Even inspection (no host) refuses a format it cannot read. */
	assert_int_equal(parse_err(b, len, NULL, &e), SNAP_ERR_FORMAT);
	free(b);
}

static void test_wrong_kiln_version(void **state)
{
	struct err e = { { 0 } };
	struct snap_compat other = WHO;
	size_t len;
	uint8_t *b = build(3, &len);

	(void)state;
	strcpy(other.kiln_version, "0.2.0");
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_KILN_VERSION);
	assert_non_null(strstr(e.msg, "kiln 0.1.0"));
	assert_non_null(strstr(e.msg, "kiln 0.2.0"));
	/* Inspection without a host reads it. */
	assert_int_equal(parse_err(b, len, NULL, &e), 0);
	free(b);
}

static void test_cpu_mismatch(void **state)
{
	struct err e = { { 0 } };
	struct snap_compat other;
	size_t len;
	uint8_t *b = build(3, &len);

	(void)state;
	other = WHO;
	strcpy(other.cpu.vendor, "GenuineIntel");
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_CPU);
	assert_non_null(strstr(e.msg, "AuthenticAMD"));
	assert_non_null(strstr(e.msg, "GenuineIntel"));

	other = WHO;
	other.cpu.model = 17;
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_CPU);
	assert_non_null(strstr(e.msg, "model 33"));
	assert_non_null(strstr(e.msg, "model 17"));

	other = WHO;
	other.cpu.family = 23;
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_CPU);
	assert_non_null(strstr(e.msg, "family 23"));

	other = WHO;
	other.cpu.features ^= 1;
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_CPU);
	assert_non_null(strstr(e.msg, "features"));

	/* The kiln version is judged first, then the CPU. */
	strcpy(other.kiln_version, "9.9");
	assert_int_equal(parse_err(b, len, &other, &e), SNAP_ERR_KILN_VERSION);
	free(b);
}

/* Offset of section i's header in a file built by build(). */
static size_t sec_off(const uint8_t *b, uint32_t i)
{
	size_t off = SNAP_HEADER_SIZE;

	while (i--)
		off += SNAP_SECTION_HEADER_SIZE + ((get64(b + off + S_LEN) + 7) & ~7ull);
	return off;
}

/*
 * A correctly sealed file with lying lengths (a crafted one, or a writer
 * bug): each is refused as malformed and nothing is read out of bounds
 * (ASan watches the exactly sized buffer).
 */
static void test_hostile_lengths(void **state)
{
	static const uint64_t lies[] = { UINT64_MAX, UINT64_MAX - 6, 1ull << 63,
					 0x7fffffffffffffffull, 4096 };
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(5, &len), *c = malloc(len);
	size_t s4;

	(void)state;
	assert_non_null(c);
	s4 = sec_off(b, 4);
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		for (uint32_t s = 0; s < 5; s++) {
			memcpy(c, b, len);
			put64(c + sec_off(b, s) + S_LEN, lies[i]);
			reseal(c, len);
			assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);
		}
	}
	/* The last section one byte longer than the bytes before the trailer. */
	memcpy(c, b, len);
	put64(c + s4 + S_LEN, len - 8 - s4 - SNAP_SECTION_HEADER_SIZE + 1);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "remain"));
	/* A shorter length than written: the rest parses as a garbage section header. */
	memcpy(c, b, len);
	put64(c + s4 + S_LEN, 0);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	free(c);
	free(b);
}

static void test_hostile_counts(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(5, &len);

	(void)state;
	put32(b + H_COUNT, 4);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_MALFORMED);
	put32(b + H_COUNT, 6);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_MALFORMED);
	/* More than these bytes can hold: refused before anything is allocated for them. */
	put32(b + H_COUNT, SNAP_MAX_SECTIONS);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_MALFORMED);
	put32(b + H_COUNT, SNAP_MAX_SECTIONS + 1);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_TOO_BIG);
	put32(b + H_COUNT, UINT32_MAX);
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_TOO_BIG);
	free(b);
}

/* Section headers and the file header are checked field by field. */
static void test_malformed_fields(void **state)
{
	struct err e = { { 0 } };
	size_t len, s0 = SNAP_HEADER_SIZE;
	uint8_t *b = build(3, &len), *c = malloc(len);
	size_t s1 = sec_off(b, 1); /* section 1 is 7 bytes long: one byte of padding */

	(void)state;
	assert_non_null(c);
	assert_int_equal(get64(b + s1 + S_LEN), 7);

	memcpy(c, b, len); /* type 0 */
	put32(c + s0 + S_TYPE, 0);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* a name without its NUL */
	memset(c + s0 + S_NAME, 'x', 16);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* an empty name */
	memset(c + s0 + S_NAME, 0, 16);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* a control character in a name */
	c[s0 + S_NAME + 1] = '\n';
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* garbage after the name's NUL */
	c[s0 + S_NAME + 15] = 'z';
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* nonzero padding */
	c[s1 + SNAP_SECTION_HEADER_SIZE + 7] = 1;
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "padding"));

	memcpy(c, b, len); /* reserved header field */
	c[H_RESERVED] = 1;
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	memcpy(c, b, len); /* vendor without its NUL */
	memset(c + H_VENDOR, 'A', 16);
	reseal(c, len);
	assert_int_equal(parse_err(c, len, &WHO, &e), SNAP_ERR_MALFORMED);

	free(c);
	free(b);
}

/* Bytes after the end the header states: damaged, not silently ignored. */
static void test_trailing_bytes(void **state)
{
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = build(3, &len), *c = calloc(1, len + 8);

	(void)state;
	assert_non_null(c);
	memcpy(c, b, len);
	assert_int_equal(parse_err(c, len + 8, &WHO, &e), SNAP_ERR_CHECKSUM);
	assert_int_equal(parse_err(c, len, &WHO, &e), 0);
	free(c);
	free(b);
}

static void test_duplicates(void **state)
{
	struct err e = { { 0 } };
	struct snap_writer w;
	const uint8_t *out;
	size_t len;
	uint8_t *b;

	(void)state;
	/* The writer refuses to produce one... */
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_VCPU_REGS, 1, "regs", "a", 1, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_VCPU_REGS, 2, "regs", "b", 1, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_VCPU_REGS, 1, "regs", "c", 1, &e), 0);
	assert_int_equal(snap_finish(&w, &out, &len, &e), SNAP_ERR_DUPLICATE);
	assert_non_null(strstr(e.msg, "index 1"));
	snap_writer_free(&w);

	/* ... and the reader refuses a crafted one. */
	b = build(10, &len);
	put32(b + sec_off(b, 9) + S_TYPE, get32(b + sec_off(b, 0) + S_TYPE));
	put32(b + sec_off(b, 9) + 4, get32(b + sec_off(b, 0) + 4));
	reseal(b, len);
	assert_int_equal(parse_err(b, len, &WHO, &e), SNAP_ERR_DUPLICATE);
	free(b);
}

static void test_writer_misuse(void **state)
{
	struct err e = { { 0 } };
	struct snap_writer w;
	struct snap_compat bad = WHO;
	const uint8_t *out;
	size_t len;

	(void)state;
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, 1, 0, "", "", 0, &e), -EINVAL);
	snap_writer_free(&w);
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, 1, 0, "sixteen-chars-xx", "", 0, &e), -EINVAL);
	snap_writer_free(&w);
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, 1, 0, "has space", "", 0, &e), -EINVAL);
	snap_writer_free(&w);
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_add(&w, 0, 0, "type0", "", 0, &e), -EINVAL);
	/* Errors stick, message and all, whatever comes next. */
	memset(&e, 0, sizeof(e));
	assert_int_equal(snap_add(&w, 1, 0, "fine", "", 0, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "type 0"));
	assert_int_equal(snap_finish(&w, &out, &len, &e), -EINVAL);
	snap_writer_free(&w);

	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_put_u32(&w, 1, &e), -EINVAL); /* outside a section */
	snap_writer_free(&w);

	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_begin(&w, 1, 0, "open", &e), 0);
	assert_int_equal(snap_finish(&w, &out, &len, &e), -EINVAL); /* section still open */
	snap_writer_free(&w);

	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	assert_int_equal(snap_finish(&w, &out, &len, &e), 0);
	assert_int_equal(snap_add(&w, 1, 0, "late", "", 0, &e), -EINVAL); /* after finish */
	snap_writer_free(&w);

	memset(bad.kiln_version, 'v', sizeof(bad.kiln_version)); /* no NUL */
	assert_int_equal(snap_writer_init(&w, &bad, &e), -EINVAL);
	snap_writer_free(&w);
}

static void test_section_limit(void **state)
{
	struct err e = { { 0 } };
	struct snap_writer w;
	uint32_t i;

	(void)state;
	assert_int_equal(snap_writer_init(&w, &WHO, &e), 0);
	for (i = 0; i < SNAP_MAX_SECTIONS; i++)
		assert_int_equal(snap_add(&w, SNAP_SEC_DEVICE, i, "d", NULL, 0, &e), 0);
	assert_int_equal(snap_add(&w, SNAP_SEC_DEVICE, i, "d", NULL, 0, &e), SNAP_ERR_TOO_BIG);
	snap_writer_free(&w);
}

static void test_cpu_from_cpuid(void **state)
{
	struct snap_cpu c;

	(void)state;
	/* "GenuineIntel", Skylake-SP 0x50654: family 6, model 0x55. */
	snap_cpu_from_cpuid(&c, 0x756e6547, 0x6c65746e, 0x49656e69, 0x00050654);
	assert_string_equal(c.vendor, "GenuineIntel");
	assert_int_equal(c.family, 6);
	assert_int_equal(c.model, 0x55);
	/* "AuthenticAMD", Zen 3 0xa20f10: family 0xf + 0xa = 25, model 0x21. */
	snap_cpu_from_cpuid(&c, 0x68747541, 0x444d4163, 0x69746e65, 0x00a20f10);
	assert_string_equal(c.vendor, "AuthenticAMD");
	assert_int_equal(c.family, 25);
	assert_int_equal(c.model, 0x21);
	/* Family 5: the extended model does not count. */
	snap_cpu_from_cpuid(&c, 0, 0, 0, 0x000f0543);
	assert_int_equal(c.family, 5);
	assert_int_equal(c.model, 4);
}

static void test_digest(void **state)
{
	(void)state;
	/* FNV-1a 64 reference values. */
	assert_true(snap_digest(SNAP_DIGEST_INIT, "", 0) == 0xcbf29ce484222325ull);
	assert_true(snap_digest(SNAP_DIGEST_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(snap_digest(snap_digest(SNAP_DIGEST_INIT, "fo", 2), "obar", 4) ==
		    snap_digest(SNAP_DIGEST_INIT, "foobar", 6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_put_and_cursor),
		cmocka_unit_test(test_truncated_every_length),
		cmocka_unit_test(test_flipped_byte_every_offset),
		cmocka_unit_test(test_wrong_magic),
		cmocka_unit_test(test_wrong_format_version),
		cmocka_unit_test(test_wrong_kiln_version),
		cmocka_unit_test(test_cpu_mismatch),
		cmocka_unit_test(test_hostile_lengths),
		cmocka_unit_test(test_hostile_counts),
		cmocka_unit_test(test_malformed_fields),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_writer_misuse),
		cmocka_unit_test(test_section_limit),
		cmocka_unit_test(test_cpu_from_cpuid),
		cmocka_unit_test(test_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

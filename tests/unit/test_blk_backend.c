/*
 * blk_backend: raw images and the copy-on-write overlay, against real temp
 * files. The base image must never change, overlays must not see each
 * other, flushed data must survive a reopen (and a simulated crash), and
 * every broken or foreign overlay must be refused with its exact error.
 * A randomized run checks the overlay against a plain byte-array model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "devices/blk/blk_backend.h"

#define KIB 1024u
#define BASE_SIZE (256 * KIB + 1000) /* not a multiple of any block size */

struct fx {
	char dir[64];
	char base[128], ov[128], ov2[128], other[128];
	struct err e;
};

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + i / 4096 + 1);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void make_pattern_file(const char *path, size_t len)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i);
	write_file(path, buf, len);
	free(buf);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* FNV-1a of the whole file: the base's "checksum". */
static uint64_t file_sum(const char *path)
{
	size_t len;
	uint8_t *buf = read_file(path, &len);
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ buf[i]) * 1099511628211ULL;
	free(buf);
	return h;
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	uint8_t *buf = read_file(from, &len);

	write_file(to, buf, len);
	free(buf);
}

static void patch_file(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->dir, "/tmp/kiln-blk-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->base, sizeof(f->base), "%s/base.img", f->dir);
	snprintf(f->ov, sizeof(f->ov), "%s/vm1.cow", f->dir);
	snprintf(f->ov2, sizeof(f->ov2), "%s/vm2.cow", f->dir);
	snprintf(f->other, sizeof(f->other), "%s/other.img", f->dir);
	make_pattern_file(f->base, BASE_SIZE);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	DIR *d = opendir(f->dir);
	struct dirent *de;
	char p[512];

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct blk *open_cow(struct fx *f, const char *ov, int create)
{
	struct blk_cow_opts o = { .create = create };
	struct blk *b = NULL;
	int r = blk_open_cow(f->base, ov, &o, &b, &f->e);

	if (r)
		fail_msg("blk_open_cow: %d: %s", r, f->e.msg);
	return b;
}

/* Assert `len` bytes at `off` read as the base pattern. */
static void assert_base_bytes(struct blk *b, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(blk_read(b, off, buf, len), 0);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (off + i < BASE_SIZE ? pattern(off + i) : 0))
			fail_msg("byte %llu: %u, base has %u", (unsigned long long)(off + i),
				 buf[i], pattern(off + i));
	free(buf);
}

static void assert_fill(struct blk *b, uint64_t off, size_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(blk_read(b, off, buf, len), 0);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != v)
			fail_msg("byte %llu: %u, expected %u", (unsigned long long)(off + i),
				 buf[i], v);
	free(buf);
}

static void fill(struct blk *b, uint64_t off, size_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	memset(buf, v, len);
	assert_int_equal(blk_write(b, off, buf, len), 0);
	free(buf);
}

/* ---- raw ---- */

static void test_raw_roundtrip(void **state)
{
	struct fx *f = *state;
	struct blk *b = NULL;
	uint8_t buf[100];
	size_t len;
	uint8_t *file;

	assert_int_equal(blk_open_raw(f->base, 0, &b, &f->e), 0);
	assert_int_equal(blk_size(b), BASE_SIZE);
	assert_int_equal(blk_read_only(b), 0);
	assert_int_equal(blk_cow_block_size(b), 0);
	assert_base_bytes(b, 0, BASE_SIZE);
	fill(b, 5000, 1000, 0xab);
	assert_fill(b, 5000, 1000, 0xab);
	assert_base_bytes(b, 4000, 1000);
	assert_base_bytes(b, 6000, 1000);
	/* Out of range, including a range that wraps 2^64: refused, no I/O. */
	assert_int_equal(blk_read(b, BASE_SIZE - 99, buf, 100), -EINVAL);
	assert_int_equal(blk_write(b, BASE_SIZE, buf, 1), -EINVAL);
	assert_int_equal(blk_read(b, UINT64_MAX - 10, buf, 100), -EINVAL);
	assert_int_equal(blk_discard(b, UINT64_MAX - 10, 100), -EINVAL);
	assert_int_equal(blk_read(b, BASE_SIZE - 100, buf, 100), 0);
	assert_int_equal(blk_flush(b), 0);
	assert_int_equal(blk_close(b), 0);

	file = read_file(f->base, &len);
	assert_int_equal(len, BASE_SIZE);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(file[i], i >= 5000 && i < 6000 ? 0xab : pattern(i));
	free(file);
}

static void test_raw_read_only(void **state)
{
	struct fx *f = *state;
	uint64_t sum = file_sum(f->base);
	struct blk *b = NULL;
	uint8_t buf[512] = { 1 };

	assert_int_equal(blk_open_raw(f->base, 1, &b, &f->e), 0);
	assert_int_equal(blk_read_only(b), 1);
	assert_int_equal(blk_write(b, 0, buf, sizeof(buf)), -EROFS);
	assert_int_equal(blk_discard(b, 0, 4096), -EROFS);
	assert_int_equal(blk_write_zeroes(b, 0, 4096), -EROFS);
	assert_int_equal(blk_flush(b), 0);
	assert_base_bytes(b, 0, 4096);
	assert_int_equal(blk_close(b), 0);
	assert_true(file_sum(f->base) == sum);
}

static void test_raw_discard_and_zeroes(void **state)
{
	struct fx *f = *state;
	struct blk *b = NULL;

	assert_int_equal(blk_open_raw(f->base, 0, &b, &f->e), 0);
	assert_int_equal(blk_discard(b, 4096, 8192 + 100), 0);
	assert_fill(b, 4096, 8192 + 100, 0);
	assert_base_bytes(b, 0, 4096);
	assert_base_bytes(b, 4096 + 8192 + 100, 5000);
	assert_int_equal(blk_write_zeroes(b, 65536 + 7, 3000), 0);
	assert_fill(b, 65536 + 7, 3000, 0);
	assert_base_bytes(b, 65536, 7);
	assert_base_bytes(b, 65536 + 3007, 100);
	assert_int_equal(blk_discard(b, 0, 0), 0);
	assert_int_equal(blk_close(b), 0);
}

static void test_raw_open_errors(void **state)
{
	struct fx *f = *state;
	struct blk *b = (struct blk *)1;
	char msg[512];

	assert_int_equal(blk_open_raw(f->other, 0, &b, &f->e), -ENOENT);
	assert_null(b);
	snprintf(msg, sizeof(msg),
		 "disk '%s': cannot open the image for writing: No such file or directory: check the path and permissions",
		 f->other);
	assert_string_equal(f->e.msg, msg);

	assert_int_equal(blk_open_raw(f->dir, 1, &b, &f->e), -EINVAL);
	snprintf(msg, sizeof(msg),
		 "disk '%s': the image is not a regular file or block device: pass an image file",
		 f->dir);
	assert_string_equal(f->e.msg, msg);
}

/* Two writers of one image would corrupt it: the second open is refused. */
static void test_raw_lock(void **state)
{
	struct fx *f = *state;
	struct blk *b = NULL, *b2 = NULL;
	char msg[512];

	assert_int_equal(blk_open_raw(f->base, 0, &b, &f->e), 0);
	assert_int_equal(blk_open_raw(f->base, 0, &b2, &f->e), -EBUSY);
	snprintf(msg, sizeof(msg),
		 "disk '%s': the image is in use by another process: stop the other VM or give each VM its own copy-on-write overlay",
		 f->base);
	assert_string_equal(f->e.msg, msg);
	assert_int_equal(blk_open_raw(f->base, 1, &b2, &f->e), -EBUSY);
	assert_int_equal(blk_close(b), 0);
	/* Readers share. */
	assert_int_equal(blk_open_raw(f->base, 1, &b, &f->e), 0);
	assert_int_equal(blk_open_raw(f->base, 1, &b2, &f->e), 0);
	blk_close(b);
	blk_close(b2);
}

/* ---- copy-on-write ---- */

/* Creating an overlay copies nothing; its header is the documented one. */
static void test_cow_create(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);
	uint8_t hdr[104];
	struct stat st;
	uint32_t v32;
	uint64_t v64;
	int fd;

	assert_int_equal(blk_size(b), BASE_SIZE);
	assert_int_equal(blk_cow_block_size(b), BLK_COW_DEFAULT_BLOCK);
	assert_base_bytes(b, 0, BASE_SIZE);
	assert_int_equal(blk_close(b), 0);

	fd = open(f->ov, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_memory_equal(hdr, "KILNCOW\0", 8);
	memcpy(&v32, hdr + 8, 4);
	assert_int_equal(v32, 1); /* version */
	memcpy(&v32, hdr + 16, 4);
	assert_int_equal(v32, 64 * KIB); /* block size */
	memcpy(&v64, hdr + 24, 8);
	assert_int_equal(v64, BASE_SIZE); /* virtual size */
	memcpy(&v64, hdr + 72, 8);
	assert_int_equal(v64, 4096); /* bitmap offset */
	memcpy(&v64, hdr + 88, 8);
	assert_int_equal(v64, 64 * KIB); /* data offset: first block boundary */
	/* 5 blocks of data in the file's size, almost none of it allocated. */
	assert_int_equal(st.st_size, 64 * KIB + 5 * 64 * KIB);
	assert_true(st.st_blocks * 512 <= 16 * KIB);
}

/* The base is opened read-only by every overlay, and never changes. */
static void test_cow_base_unchanged(void **state)
{
	struct fx *f = *state;
	uint64_t sum = file_sum(f->base);
	struct stat before, after;
	struct blk *b = open_cow(f, f->ov, 1);
	char link[300], target[256];
	int base_fds = 0;
	DIR *d;
	struct dirent *de;

	assert_int_equal(stat(f->base, &before), 0);
	/* Every fd this process holds on the base is O_RDONLY. */
	d = opendir("/proc/self/fd");
	assert_non_null(d);
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strcmp(target, f->base)) {
			int fl = fcntl(atoi(de->d_name), F_GETFL);

			assert_int_equal(fl & O_ACCMODE, O_RDONLY);
			base_fds++;
		}
	}
	closedir(d);
	assert_int_equal(base_fds, 1);

	fill(b, 0, 100, 0x11);              /* partial, copy-up */
	fill(b, 64 * KIB, 128 * KIB, 0x22); /* whole blocks */
	fill(b, BASE_SIZE - 10, 10, 0x33);  /* the short last block */
	assert_int_equal(blk_discard(b, 200 * KIB, 10 * KIB), 0);
	assert_int_equal(blk_write_zeroes(b, 10, 10), 0);
	assert_int_equal(blk_flush(b), 0);
	assert_int_equal(blk_close(b), 0);
	assert_int_equal(stat(f->base, &after), 0);
	assert_true(file_sum(f->base) == sum);
	assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

/* A partial write to an unallocated block keeps the rest of the base's
 * block; reads across allocated and unallocated blocks stitch both. */
static void test_cow_copy_up(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);

	fill(b, 64 * KIB + 300, 100, 0xee);
	assert_base_bytes(b, 64 * KIB, 300);
	assert_fill(b, 64 * KIB + 300, 100, 0xee);
	assert_base_bytes(b, 64 * KIB + 400, 64 * KIB - 400);
	/* One read over block 0 (base), 1 (overlay), 2 (base). */
	{
		uint8_t *buf = malloc(192 * KIB);

		assert_non_null(buf);
		assert_int_equal(blk_read(b, 0, buf, 192 * KIB), 0);
		for (size_t i = 0; i < 192 * KIB; i++)
			assert_int_equal(buf[i],
					 i >= 64 * KIB + 300 && i < 64 * KIB + 400 ? 0xee
										   : pattern(i));
		free(buf);
	}
	/* A write straddling two unallocated blocks copies up both. */
	fill(b, 192 * KIB - 50, 100, 0xdd);
	assert_base_bytes(b, 128 * KIB, 64 * KIB - 50);
	assert_fill(b, 192 * KIB - 50, 100, 0xdd);
	assert_base_bytes(b, 192 * KIB + 50, BASE_SIZE - 192 * KIB - 50);
	assert_int_equal(blk_close(b), 0);

	b = open_cow(f, f->ov, 0);
	assert_base_bytes(b, 64 * KIB, 300);
	assert_fill(b, 64 * KIB + 300, 100, 0xee);
	assert_base_bytes(b, 64 * KIB + 400, 64 * KIB - 400);
	assert_fill(b, 192 * KIB - 50, 100, 0xdd);
	blk_close(b);
}

static void test_cow_two_overlays(void **state)
{
	struct fx *f = *state;
	struct blk *a = open_cow(f, f->ov, 1);
	struct blk *b = open_cow(f, f->ov2, 1);

	fill(a, 1000, 5000, 0xaa);
	fill(b, 3000, 70 * KIB, 0xbb);
	assert_fill(a, 1000, 5000, 0xaa);
	assert_base_bytes(a, 6000, 100 * KIB);
	assert_base_bytes(b, 0, 3000);
	assert_fill(b, 3000, 70 * KIB, 0xbb);
	assert_int_equal(blk_close(a), 0);
	assert_int_equal(blk_close(b), 0);
	a = open_cow(f, f->ov, 0);
	b = open_cow(f, f->ov2, 0);
	assert_base_bytes(a, 0, 1000);
	assert_fill(a, 1000, 5000, 0xaa);
	assert_base_bytes(a, 6000, 100 * KIB);
	assert_base_bytes(b, 0, 3000);
	assert_fill(b, 3000, 70 * KIB, 0xbb);
	blk_close(a);
	blk_close(b);
}

/* The bitmap reaches the file only at a flush, after the data. */
static void test_cow_flush_persists_bitmap(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);
	uint8_t bits;
	int fd;

	fill(b, 2 * 64 * KIB, 10, 0x5a);
	fd = open(f->ov, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &bits, 1, 4096), 1);
	assert_int_equal(bits, 0); /* not yet flushed: no bit on disk */
	assert_int_equal(blk_flush(b), 0);
	assert_int_equal(pread(fd, &bits, 1, 4096), 1);
	assert_int_equal(bits, 1 << 2);
	close(fd);
	blk_close(b);
	b = open_cow(f, f->ov, 0);
	assert_fill(b, 2 * 64 * KIB, 10, 0x5a);
	blk_close(b);
}

/*
 * A crash after writes but before their flush: the file holds the data of
 * the unflushed new block but not its bit. That block must read as the
 * base again, and flushed data must be intact.
 */
static void test_cow_crash_before_flush(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);

	fill(b, 0, 64 * KIB, 0x01); /* block 0, flushed */
	assert_int_equal(blk_flush(b), 0);
	fill(b, 64 * KIB + 5, 10, 0x02); /* block 1, new, not flushed */
	copy_file(f->ov, f->ov2);        /* the "disk" at the crash */
	assert_int_equal(blk_close(b), 0);

	b = open_cow(f, f->ov2, 0);
	assert_fill(b, 0, 64 * KIB, 0x01);
	assert_base_bytes(b, 64 * KIB, 64 * KIB);
	blk_close(b);
	b = open_cow(f, f->ov, 0); /* closed cleanly: close flushes */
	assert_fill(b, 64 * KIB + 5, 10, 0x02);
	blk_close(b);
}

static void test_cow_wrong_base(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };
	char msg[512];

	blk_close(b);
	/* Same content, different file. */
	copy_file(f->base, f->other);
	assert_int_equal(blk_open_cow(f->other, f->ov, NULL, &b, &f->e), -ESTALE);
	assert_null(b);
	snprintf(msg, sizeof(msg),
		 "disk '%s': overlay was made for a different base than '%s' (or the base changed since): use the base it was created over, or a new overlay",
		 f->ov, f->other);
	assert_string_equal(f->e.msg, msg);
	/* Same file, modified since (its mtime moved). */
	assert_int_equal(utimensat(AT_FDCWD, f->base, ts, 0), 0);
	assert_int_equal(blk_open_cow(f->base, f->ov, NULL, &b, &f->e), -ESTALE);
}

static void expect_refused(struct fx *f, int code, const char *fmt)
{
	struct blk *b = (struct blk *)1;
	char msg[512];

	assert_int_equal(blk_open_cow(f->base, f->ov, NULL, &b, &f->e), code);
	assert_null(b);
	snprintf(msg, sizeof(msg), fmt, f->ov);
	assert_string_equal(f->e.msg, msg);
}

/*
 * A deferred open (kiln-vmm's restore) reads nothing of the overlay: no
 * size, no I/O, until blk_cow_load, which reads the header as the file is
 * then (the snapshot's copy written into it meanwhile) and checks it as
 * an open does.
 */
static void test_cow_deferred_load(void **state)
{
	struct fx *f = *state;
	struct blk_cow_opts o = { .defer = 1 };
	uint8_t junk[4096], buf[16], *good;
	uint64_t sum;
	size_t len;
	struct blk *b;

	blk_close(open_cow(f, f->ov, 1));
	copy_file(f->ov, f->ov2);
	/* Junk where the header is: the deferred open does not look. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 31 + 7);
	patch_file(f->ov, 0, junk, sizeof(junk));
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
	assert_int_equal(blk_size(b), 0);
	assert_int_equal(blk_read(b, 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(blk_write(b, 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(blk_cow_load(b, &f->e), -EINVAL);
	assert_non_null(strstr(f->e.msg, "not a kiln overlay"));
	assert_int_equal(blk_size(b), 0);
	assert_int_equal(blk_read(b, 0, buf, sizeof(buf)), -EINVAL);
	/* The good header put back in place (as a restore copies): it loads. */
	good = read_file(f->ov2, &len);
	patch_file(f->ov, 0, good, 4096);
	free(good);
	assert_int_equal(blk_cow_load(b, &f->e), 0);
	assert_int_equal(blk_size(b), BASE_SIZE);
	assert_base_bytes(b, 0, 4096);
	fill(b, 8192, 512, 0xab);
	assert_fill(b, 8192, 512, 0xab);
	assert_int_equal(blk_cow_load(b, &f->e), 0); /* once loaded, a no-op */
	assert_int_equal(blk_close(b), 0);
	/* Closed unloaded: nothing written. */
	sum = file_sum(f->ov2);
	assert_int_equal(blk_open_cow(f->base, f->ov2, &o, &b, &f->e), 0);
	assert_int_equal(blk_close(b), 0);
	assert_int_equal(file_sum(f->ov2), sum);
}

static void test_cow_bad_headers(void **state)
{
	struct fx *f = *state;
	uint8_t junk[4096] = { 0 };
	uint32_t v;

	write_file(f->ov, junk, 0);
	expect_refused(
		f, -EINVAL,
		"disk '%s': overlay header is truncated (0 of 4096 bytes): delete it and let kiln create a new one");
	memcpy(junk, "KILNCOW", 8);
	write_file(f->ov, junk, 100);
	expect_refused(
		f, -EINVAL,
		"disk '%s': overlay header is truncated (100 of 4096 bytes): delete it and let kiln create a new one");
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 31 + 7);
	write_file(f->ov, junk, sizeof(junk));
	expect_refused(
		f, -EINVAL,
		"disk '%s': not a kiln overlay (bad magic): pass an overlay kiln created, or a path that does not exist yet");
	/* The create flag never overwrites an existing file. */
	{
		struct blk_cow_opts o = { .create = 1 };
		struct blk *b;

		assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), -EINVAL);
	}

	unlink(f->ov);
	blk_close(open_cow(f, f->ov, 1));
	v = 2;
	patch_file(f->ov, 8, &v, 4);
	expect_refused(
		f, -ENOTSUP,
		"disk '%s': overlay format version 2, this kiln reads version 1: use the kiln that created it");

	unlink(f->ov);
	blk_close(open_cow(f, f->ov, 1));
	v = 0x12345;
	patch_file(f->ov, 24, &v, 4); /* virtual size, without fixing the crc */
	expect_refused(
		f, -EINVAL,
		"disk '%s': overlay header checksum mismatch (corrupted): the overlay cannot be used");

	unlink(f->ov);
	blk_close(open_cow(f, f->ov, 1));
	assert_int_equal(truncate(f->ov, 8192), 0);
	expect_refused(
		f, -EINVAL,
		"disk '%s': overlay is truncated (8192 of 393216 bytes): the overlay cannot be used");
}

/* The overlay header's CRC as kiln computed it before it used zlib's
 * crc32_z: bitwise CRC-32, IEEE 802.3 reflected polynomial 0xedb88320,
 * initial and final value ~0. Kept here so overlays written then are
 * proven to load now. */
static uint32_t old_crc32_ieee(const uint8_t *p, size_t n)
{
	uint32_t crc = ~0u;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

/* The snapshot files' CRC before crc32_z: zlib's crc32 (a uInt length)
 * fed in pieces, here of `piece` bytes instead of 1 GiB. */
static uint32_t old_crc32_pieces(const uint8_t *p, size_t len, size_t piece)
{
	uLong crc = crc32(0L, Z_NULL, 0);

	while (len) {
		uInt n = len > piece ? (uInt)piece : (uInt)len;

		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)crc;
}

/* crc32_z is the same CRC-32 as both old loops, so the overlay header and
 * every snapshot file keep their format byte for byte. */
static void test_crc_is_the_old_loops(void **state)
{
	static uint8_t buf[1 << 20];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	/* the CRC-32 check value (the catalogue's "123456789") and the empty input */
	assert_int_equal(crc32_z(0, (const uint8_t *)"123456789", 9), 0xcbf43926u);
	assert_int_equal(old_crc32_ieee((const uint8_t *)"123456789", 9), 0xcbf43926u);
	assert_int_equal(crc32_z(0, buf, 0), 0);
	assert_int_equal(old_crc32_ieee(buf, 0), 0);
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = i < 256 ? (uint8_t)i : (uint8_t)x;
	}
	for (size_t len = 0; len <= 300; len++)
		assert_int_equal(crc32_z(0, buf + len % 7, len),
				 old_crc32_ieee(buf + len % 7, len));
	assert_int_equal(crc32_z(0, buf, sizeof(buf)), old_crc32_ieee(buf, sizeof(buf)));
	for (size_t piece = 1; piece <= 65536; piece = piece * 5 + 3)
		assert_int_equal(crc32_z(0, buf, sizeof(buf)),
				 old_crc32_pieces(buf, sizeof(buf), piece));
}

/* The crc covers the header, but a header with a valid crc and values this
 * version would never write is refused too. The crc is the old loop's: an
 * overlay written before crc32_z gets past the checksum. */
static void test_cow_inconsistent_header(void **state)
{
	struct fx *f = *state;
	uint8_t hdr[96];
	uint32_t bs = 3000, crc;
	int fd;

	blk_close(open_cow(f, f->ov, 1));
	fd = open(f->ov, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	memcpy(hdr + 16, &bs, 4);
	crc = old_crc32_ieee(hdr, sizeof(hdr));
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_int_equal(pwrite(fd, &crc, 4, 96), 4);
	close(fd);
	expect_refused(
		f, -EINVAL,
		"disk '%s': overlay header is inconsistent (corrupted): the overlay cannot be used");
}

static void test_cow_open_errors(void **state)
{
	struct fx *f = *state;
	struct blk_cow_opts o = { .create = 1, .block_size = 3000 };
	struct blk *b = (struct blk *)1, *b2;
	char msg[512];

	assert_int_equal(blk_open_cow(f->base, f->ov, NULL, &b, &f->e), -ENOENT);
	assert_null(b);
	snprintf(msg, sizeof(msg),
		 "disk '%s': cannot open the overlay for writing: No such file or directory: create it first or allow creation",
		 f->ov);
	assert_string_equal(f->e.msg, msg);

	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), -EINVAL);
	snprintf(msg, sizeof(msg),
		 "disk '%s': cannot make an overlay of %u bytes with 3000-byte blocks: block size must be a power of two from 4 KiB to 1 MiB, and the bitmap at most 64 MiB",
		 f->ov, BASE_SIZE);
	assert_string_equal(f->e.msg, msg);
	o.block_size = 2u << 20;
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), -EINVAL);
	o.block_size = 2048;
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), -EINVAL);
	o.block_size = 0;
	o.size = BASE_SIZE - 1;
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), -EINVAL);
	snprintf(msg, sizeof(msg),
		 "disk '%s': overlay size %u is smaller than its base (%u bytes): give a larger size or none",
		 f->ov, BASE_SIZE - 1, BASE_SIZE);
	assert_string_equal(f->e.msg, msg);
	assert_int_equal(access(f->ov, F_OK), -1); /* nothing left behind */

	assert_int_equal(blk_open_cow(f->other, f->ov, NULL, &b, &f->e), -ENOENT);
	snprintf(msg, sizeof(msg),
		 "disk '%s': cannot open the base image: No such file or directory: check the path and permissions",
		 f->other);
	assert_string_equal(f->e.msg, msg);

	/* One overlay, one VM. */
	b = open_cow(f, f->ov, 1);
	assert_int_equal(blk_open_cow(f->base, f->ov, NULL, &b2, &f->e), -EBUSY);
	snprintf(msg, sizeof(msg),
		 "disk '%s': overlay is in use by another process: each VM needs its own overlay",
		 f->ov);
	assert_string_equal(f->e.msg, msg);
	/* A base in use by overlays cannot be opened for writing. */
	assert_int_equal(blk_open_raw(f->base, 0, &b2, &f->e), -EBUSY);
	blk_close(b);
}

static void test_cow_read_only(void **state)
{
	struct fx *f = *state;
	struct blk_cow_opts o = { .read_only = 1 };
	struct blk *b = open_cow(f, f->ov, 1);
	uint8_t buf[10] = { 0 };

	fill(b, 0, 10, 0x77);
	blk_close(b);
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
	assert_int_equal(blk_read_only(b), 1);
	assert_int_equal(blk_write(b, 0, buf, 10), -EROFS);
	assert_int_equal(blk_discard(b, 0, 4096), -EROFS);
	assert_fill(b, 0, 10, 0x77);
	assert_int_equal(blk_flush(b), 0);
	blk_close(b);
}

/* An overlay larger than its base: past the base it reads zeros. */
static void test_cow_grow(void **state)
{
	struct fx *f = *state;
	struct blk_cow_opts o = { .create = 1, .block_size = 4096, .size = BASE_SIZE + 1000 * KIB };
	struct blk *b = NULL;
	uint8_t buf[8];

	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
	assert_int_equal(blk_size(b), BASE_SIZE + 1000 * KIB);
	assert_int_equal(blk_cow_block_size(b), 4096);
	assert_base_bytes(b, BASE_SIZE - 4000, 4000 + 1000 * KIB);
	fill(b, BASE_SIZE - 3, 6, 0x44); /* across the base's end */
	assert_fill(b, BASE_SIZE - 3, 6, 0x44);
	assert_base_bytes(b, BASE_SIZE + 3, 5000);
	assert_int_equal(blk_read(b, BASE_SIZE + 1000 * KIB - 8, buf, 8), 0);
	assert_int_equal(blk_read(b, BASE_SIZE + 1000 * KIB - 7, buf, 8), -EINVAL);
	blk_close(b);
}

/* Discarded ranges read zeros, not the base showing through. */
static void test_cow_discard_reads_zero(void **state)
{
	struct fx *f = *state;
	struct blk *b = open_cow(f, f->ov, 1);
	struct stat st1, st2;

	fill(b, 0, 192 * KIB, 0x99);
	assert_int_equal(blk_flush(b), 0);
	assert_int_equal(stat(f->ov, &st1), 0);
	/* Whole allocated blocks, a partial unallocated one, whole unallocated. */
	assert_int_equal(blk_discard(b, 0, 128 * KIB), 0);
	assert_int_equal(blk_flush(b), 0);
	assert_int_equal(stat(f->ov, &st2), 0);
	assert_int_equal(blk_discard(b, 192 * KIB + 100, 200), 0);
	assert_int_equal(blk_write_zeroes(b, 128 * KIB + 10, 10), 0);
	assert_fill(b, 0, 128 * KIB, 0);
	assert_fill(b, 128 * KIB, 10, 0x99);
	assert_fill(b, 128 * KIB + 10, 10, 0);
	assert_fill(b, 128 * KIB + 20, 64 * KIB - 20, 0x99);
	assert_base_bytes(b, 192 * KIB, 100);
	assert_fill(b, 192 * KIB + 100, 200, 0);
	assert_base_bytes(b, 192 * KIB + 300, 1000);
	/* The two discarded blocks gave their space back (ext4/tmpfs/xfs). */
	assert_true(st2.st_blocks <= st1.st_blocks - 2 * 64 * KIB / 512);
	blk_close(b);
	b = open_cow(f, f->ov, 0);
	assert_fill(b, 0, 128 * KIB, 0);
	assert_fill(b, 192 * KIB + 100, 200, 0);
	blk_close(b);
}

/* Random writes, discards, flushes and reopens against a byte-array model. */
static void test_cow_random_model(void **state)
{
	struct fx *f = *state;
	struct blk_cow_opts o = { .create = 1, .block_size = 4096, .size = BASE_SIZE + 10000 };
	uint64_t size = o.size, x = 88172645463325252ULL;
	uint8_t *model = malloc(size), *buf = malloc(size);
	struct blk *b = NULL;

	assert_non_null(model);
	assert_non_null(buf);
	for (uint64_t i = 0; i < size; i++)
		model[i] = i < BASE_SIZE ? pattern(i) : 0;
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
	for (int step = 0; step < 400; step++) {
		uint64_t off, len;
		int op;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		op = (int)(x % 10);
		off = (x >> 8) % size;
		len = (x >> 32) % (op < 7 ? 3 * 4096 : 20000) + 1;
		if (len > size - off)
			len = size - off;
		if (op < 7) {
			for (uint64_t i = 0; i < len; i++)
				buf[i] = (uint8_t)(step + i);
			assert_int_equal(blk_write(b, off, buf, len), 0);
			memcpy(model + off, buf, len);
		} else if (op < 9) {
			assert_int_equal(blk_discard(b, off, len), 0);
			memset(model + off, 0, len);
		} else {
			assert_int_equal(blk_close(b), 0);
			o.create = 0;
			assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
		}
		if (step % 50 == 49) {
			assert_int_equal(blk_read(b, 0, buf, size), 0);
			assert_memory_equal(buf, model, size);
		}
	}
	assert_int_equal(blk_close(b), 0);
	assert_int_equal(blk_open_cow(f->base, f->ov, &o, &b, &f->e), 0);
	assert_int_equal(blk_read(b, 0, buf, size), 0);
	assert_memory_equal(buf, model, size);
	blk_close(b);
	free(model);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raw_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_discard_and_zeroes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_base_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_copy_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_two_overlays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_flush_persists_bitmap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_crash_before_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_wrong_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_deferred_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_bad_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_inconsistent_header, setup, teardown),
		cmocka_unit_test(test_crc_is_the_old_loops),
		cmocka_unit_test_setup_teardown(test_cow_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_grow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_discard_reads_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_random_model, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

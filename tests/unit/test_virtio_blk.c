/*
 * virtio_blk: requests as the Linux driver (and a hostile guest) builds
 * them, in a fake guest RAM with rings written by the test. Round trips
 * through a temp image, exact status bytes for every refusal, and the
 * protocol errors that must break the device (looping chain, short
 * header, no status byte) without crashing the VMM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_blk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/blk/virtio_blk.h"

#define RAM (1u << 20)
#define QSIZE 64
#define DESC_GPA 0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA 0x3000
#define DATA_GPA 0x10000
#define SECTORS 2048 /* 1 MiB image */

struct fx {
	struct guest_mem gm;
	struct virtio_dev *d;
	char dir[64], img[128], ov[128];
	int irqs;
	uint16_t next_desc, avail_idx;
	uint64_t next_data;
	struct err e;
};

struct seg {
	uint64_t gpa;
	uint32_t len;
	int write;
};

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 13 + i / 512 + 5);
}

static void *host(struct fx *f, uint64_t gpa)
{
	return f->gm.host + gpa;
}

static void raise_irq(void *ctx)
{
	((struct fx *)ctx)->irqs++;
}

/* Queue 0 of a freshly created device, enabled on the fake RAM. */
static void attach(struct fx *f, struct virtio_dev *d, uint64_t features)
{
	f->d = d;
	d->mem = &f->gm;
	d->raise_irq = raise_irq;
	d->irq_ctx = f;
	d->driver_features = features | 1ULL << VIRTIO_F_VERSION_1;
	d->status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
		VIRTIO_STATUS_DRIVER_OK;
	d->vq[0].size = QSIZE;
	d->vq[0].desc_gpa = DESC_GPA;
	d->vq[0].avail_gpa = AVAIL_GPA;
	d->vq[0].used_gpa = USED_GPA;
	assert_int_equal(virtq_enable(&d->vq[0], &f->gm), 0);
}

#define ALL_FEATURES                                                 \
	(1ULL << VIRTIO_BLK_F_SEG_MAX | 1ULL << VIRTIO_BLK_F_FLUSH | \
	 1ULL << VIRTIO_BLK_F_DISCARD | 1ULL << VIRTIO_BLK_F_WRITE_ZEROES)

static struct virtio_dev *create(struct fx *f, const struct virtio_blk_params *p)
{
	struct virtio_dev *d = NULL;
	int r = virtio_blk_create(p, &d, &f->e);

	if (r)
		fail_msg("virtio_blk_create: %d: %s", r, f->e.msg);
	return d;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct virtio_blk_params p = { .serial = "kiln-disk-0" };
	uint8_t *img = malloc(SECTORS * 512);
	int fd;

	assert_non_null(f);
	assert_non_null(img);
	f->gm.host = calloc(1, RAM);
	assert_non_null(f->gm.host);
	guest_mem_layout(&f->gm, RAM);
	f->next_data = DATA_GPA;
	strcpy(f->dir, "/tmp/kiln-vblk-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->img, sizeof(f->img), "%s/disk.img", f->dir);
	snprintf(f->ov, sizeof(f->ov), "%s/disk.cow", f->dir);
	for (int i = 0; i < SECTORS * 512; i++)
		img[i] = pattern((uint64_t)i);
	fd = open(f->img, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, SECTORS * 512), SECTORS * 512);
	close(fd);
	free(img);
	p.path = f->img;
	attach(f, create(f, &p), ALL_FEATURES);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	DIR *dir;
	struct dirent *de;
	char p[512];

	if (f->d)
		f->d->ops->destroy(f->d);
	dir = opendir(f->dir);
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
		unlink(p);
	}
	if (dir)
		closedir(dir);
	rmdir(f->dir);
	free(f->gm.host);
	free(f);
	return 0;
}

/* Replace the setup's device with another one. */
static void replace(struct fx *f, const struct virtio_blk_params *p, uint64_t features)
{
	f->d->ops->destroy(f->d);
	f->d = NULL;
	memset(host(f, DESC_GPA), 0, DATA_GPA - DESC_GPA); /* fresh rings */
	f->next_desc = f->avail_idx = 0;
	attach(f, create(f, p), features);
}

static uint64_t gpa_alloc(struct fx *f, uint32_t len, uint8_t fillv)
{
	uint64_t gpa = f->next_data;

	f->next_data = (f->next_data + len + 15) & ~15ULL;
	assert_true(f->next_data <= RAM);
	memset(host(f, gpa), fillv, len);
	return gpa;
}

static void desc_set(struct fx *f, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	uint8_t *d = host(f, DESC_GPA + 16ULL * i);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void avail_add(struct fx *f, uint16_t head)
{
	uint8_t *a = host(f, AVAIL_GPA);

	memcpy(a + 4 + 2 * (f->avail_idx % QSIZE), &head, 2);
	f->avail_idx++;
	memcpy(a + 2, &f->avail_idx, 2);
}

/* Put one chain of `n` buffers on the avail ring; returns its head. */
static uint16_t submit(struct fx *f, const struct seg *s, int n)
{
	uint16_t head = f->next_desc;

	for (int i = 0; i < n; i++) {
		uint16_t idx = f->next_desc++;

		desc_set(f, idx, s[i].gpa, s[i].len,
			 (uint16_t)((s[i].write ? VIRTQ_DESC_F_WRITE : 0) |
				    (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0)),
			 (uint16_t)(idx + 1));
	}
	avail_add(f, head);
	return head;
}

static void kick(struct fx *f)
{
	f->d->ops->notify(f->d, 0);
}

static uint16_t used_idx(struct fx *f)
{
	uint16_t v;

	memcpy(&v, host(f, USED_GPA + 2), 2);
	return v;
}

static void used_elem(struct fx *f, uint16_t i, uint32_t *id, uint32_t *len)
{
	uint8_t *e = host(f, USED_GPA + 4 + 8ULL * (i % QSIZE));

	memcpy(id, e, 4);
	memcpy(len, e + 4, 4);
}

static uint64_t hdr_gpa(struct fx *f, uint32_t type, uint64_t sector)
{
	struct virtio_blk_outhdr h = { .type = type, .sector = sector };
	uint64_t gpa = gpa_alloc(f, sizeof(h), 0);

	memcpy(host(f, gpa), &h, sizeof(h));
	return gpa;
}

/*
 * The common shape: header, one data buffer (readable for OUT/DISCARD,
 * writable otherwise, none when len 0), status. Returns the status byte
 * and checks the used element (id = head, len = `used_len`).
 */
static uint8_t request(struct fx *f, uint32_t type, uint64_t sector, uint64_t data, uint32_t len,
		       uint32_t used_len)
{
	uint64_t st = gpa_alloc(f, 1, 0xff);
	int write = !(type == VIRTIO_BLK_T_OUT || type == VIRTIO_BLK_T_DISCARD ||
		      type == VIRTIO_BLK_T_WRITE_ZEROES);
	struct seg s[3] = { { hdr_gpa(f, type, sector), 16, 0 },
			    { data, len, write },
			    { st, 1, 1 } };
	uint16_t before = used_idx(f), head;
	uint32_t id, ulen;

	if (len)
		head = submit(f, s, 3);
	else {
		s[1] = s[2];
		head = submit(f, s, 2);
	}
	kick(f);
	assert_int_equal(used_idx(f), (uint16_t)(before + 1));
	used_elem(f, before, &id, &ulen);
	assert_int_equal(id, head);
	assert_int_equal(ulen, used_len);
	return *(uint8_t *)host(f, st);
}

static void file_read(struct fx *f, uint64_t off, void *buf, size_t len)
{
	int fd = open(f->img, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void assert_image_pattern(struct fx *f, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	file_read(f, off, buf, len);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(buf[i], pattern(off + i));
	free(buf);
}

static void assert_guest_fill(struct fx *f, uint64_t gpa, size_t len, uint8_t v)
{
	const uint8_t *p = host(f, gpa);

	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			fail_msg("guest byte %zu: %u, expected %u", i, p[i], v);
}

static uint64_t features_of(struct virtio_dev *d)
{
	return d->ops->features(d);
}

/* ---- tests ---- */

static void test_features_and_config(void **state)
{
	struct fx *f = *state;
	struct virtio_dev *d = f->d;
	uint64_t cap = 0;
	uint32_t v32 = 0;
	uint8_t v8 = 0;

	assert_int_equal(d->ops->device_id, VIRTIO_ID_BLOCK);
	assert_int_equal(d->ops->num_queues, 1);
	assert_int_equal(d->ops->queue_max, 256);
	assert_int_equal(features_of(d), ALL_FEATURES);
	assert_int_equal(d->ops->config_len, 60);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, capacity), &cap, 8);
	assert_int_equal(cap, SECTORS);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, seg_max), &v32, 4);
	assert_int_equal(v32, 254);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, max_discard_sectors), &v32, 4);
	assert_int_equal(v32, 1u << 21);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, max_discard_seg), &v32, 4);
	assert_int_equal(v32, 32);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, discard_sector_alignment), &v32,
			    4);
	assert_int_equal(v32, 8);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, max_write_zeroes_seg), &v32, 4);
	assert_int_equal(v32, 32);
	d->ops->read_config(d, offsetof(struct virtio_blk_config, write_zeroes_may_unmap), &v8, 1);
	assert_int_equal(v8, 1);
	/* A 4-byte read of the capacity's high half (the driver may do that). */
	v32 = 0xffffffff;
	d->ops->read_config(d, 4, &v32, 4);
	assert_int_equal(v32, 0);
	/* Writes are ignored. */
	v32 = 0x1234;
	d->ops->write_config(d, 0, &v32, 4);
	d->ops->read_config(d, 0, &cap, 8);
	assert_int_equal(cap, SECTORS);
}

static void test_read_only_features(void **state)
{
	struct fx *f = *state;
	struct virtio_blk_params p = { .path = f->img, .read_only = 1 };

	replace(f, &p, 0);
	assert_int_equal(features_of(f->d),
			 1ULL << VIRTIO_BLK_F_SEG_MAX | 1ULL << VIRTIO_BLK_F_FLUSH |
				 1ULL << VIRTIO_BLK_F_RO);
}

/* OUT with header and data in one buffer, IN with data split over two
 * buffers and the status in a third, IN with the status after the data
 * in the same buffer: all framings are legal (virtio 1.2, 2.7.4.1). */
static void test_write_read_roundtrip(void **state)
{
	struct fx *f = *state;
	uint64_t out = gpa_alloc(f, 16 + 1024, 0), a, b, st, both;
	struct virtio_blk_outhdr h = { .type = VIRTIO_BLK_T_OUT, .sector = 3 };
	uint8_t file[1024];
	uint32_t id, len;

	memcpy(host(f, out), &h, 16);
	for (int i = 0; i < 1024; i++)
		((uint8_t *)host(f, out + 16))[i] = (uint8_t)(i ^ 0x5c);
	st = gpa_alloc(f, 1, 0xff);
	{
		struct seg s[] = { { out, 16 + 1024, 0 }, { st, 1, 1 } };

		submit(f, s, 2);
	}
	kick(f);
	assert_int_equal(used_idx(f), 1);
	used_elem(f, 0, &id, &len);
	assert_int_equal(id, 0);
	assert_int_equal(len, 1);
	assert_int_equal(*(uint8_t *)host(f, st), VIRTIO_BLK_S_OK);
	assert_int_equal(f->irqs, 1);
	file_read(f, 3 * 512, file, sizeof(file));
	for (int i = 0; i < 1024; i++)
		assert_int_equal(file[i], (uint8_t)(i ^ 0x5c));
	assert_image_pattern(f, 0, 3 * 512);
	assert_image_pattern(f, 5 * 512, 512);

	a = gpa_alloc(f, 512, 0);
	b = gpa_alloc(f, 512, 0);
	st = gpa_alloc(f, 1, 0xff);
	{
		struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 3), 16, 0 },
				   { a, 512, 1 },
				   { b, 512, 1 },
				   { st, 1, 1 } };

		submit(f, s, 4);
	}
	kick(f);
	assert_int_equal(used_idx(f), 2);
	used_elem(f, 1, &id, &len);
	assert_int_equal(id, 2);
	assert_int_equal(len, 1025);
	assert_int_equal(*(uint8_t *)host(f, st), VIRTIO_BLK_S_OK);
	assert_memory_equal(host(f, a), host(f, out + 16), 512);
	assert_memory_equal(host(f, b), host(f, out + 16 + 512), 512);

	both = gpa_alloc(f, 513, 0xff);
	{
		struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 100), 16, 0 }, { both, 513, 1 } };

		submit(f, s, 2);
	}
	kick(f);
	assert_int_equal(used_idx(f), 3);
	used_elem(f, 2, &id, &len);
	assert_int_equal(len, 513);
	assert_int_equal(((uint8_t *)host(f, both))[512], VIRTIO_BLK_S_OK);
	for (int i = 0; i < 512; i++)
		assert_int_equal(((uint8_t *)host(f, both))[i], pattern(100 * 512 + (uint64_t)i));
}

/* A header split over two buffers is still a header. */
static void test_split_header(void **state)
{
	struct fx *f = *state;
	uint64_t h = hdr_gpa(f, VIRTIO_BLK_T_IN, 1), data = gpa_alloc(f, 512, 0),
		 st = gpa_alloc(f, 1, 0xff);
	struct seg s[] = { { h, 8, 0 }, { h + 8, 8, 0 }, { data, 512, 1 }, { st, 1, 1 } };

	submit(f, s, 4);
	kick(f);
	assert_int_equal(f->d->broken, 0);
	assert_int_equal(*(uint8_t *)host(f, st), VIRTIO_BLK_S_OK);
	for (int i = 0; i < 512; i++)
		assert_int_equal(((uint8_t *)host(f, data))[i], pattern(512 + (uint64_t)i));
}

static void test_flush(void **state)
{
	struct fx *f = *state;

	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 1), VIRTIO_BLK_S_OK);
}

static void test_get_id(void **state)
{
	struct fx *f = *state;
	uint64_t id = gpa_alloc(f, 20, 0xff);
	struct virtio_blk_params p = { .path = f->img, .serial = "abcdefghijklmnopqrst" };

	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, id, 20, 21), VIRTIO_BLK_S_OK);
	assert_memory_equal(host(f, id), "kiln-disk-0\0\0\0\0\0\0\0\0\0", 20);

	/* Exactly 20 bytes: no terminating NUL (virtio 1.2, 5.2.6). */
	replace(f, &p, ALL_FEATURES);
	id = gpa_alloc(f, 20, 0xff);
	assert_int_equal(request(f, VIRTIO_BLK_T_GET_ID, 0, id, 20, 21), VIRTIO_BLK_S_OK);
	assert_memory_equal(host(f, id), "abcdefghijklmnopqrst", 20);
}

static void test_out_of_range(void **state)
{
	struct fx *f = *state;
	uint64_t data = gpa_alloc(f, 1024, 0x42);

	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS, data, 512, 513), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS - 1, data, 1024, 1025),
			 VIRTIO_BLK_S_IOERR);
	/* sector * 512 would wrap 2^64 to a small offset. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 1ULL << 55, data, 512, 513),
			 VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, UINT64_MAX, data, 512, 1),
			 VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, (1ULL << 55) + 1, data, 512, 1),
			 VIRTIO_BLK_S_IOERR);
	/* Not whole sectors. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, data, 100, 101), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, data, 513, 1), VIRTIO_BLK_S_IOERR);
	assert_image_pattern(f, 0, SECTORS * 512);
	/* The last sector is in range. */
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, SECTORS - 1, data, 512, 513), VIRTIO_BLK_S_OK);
	assert_int_equal(((uint8_t *)host(f, data))[0], pattern((SECTORS - 1) * 512ULL));
	assert_int_equal(f->d->broken, 0);
}

static void test_unsupported(void **state)
{
	struct fx *f = *state;
	uint64_t data = gpa_alloc(f, 512, 0);

	assert_int_equal(request(f, 0x42, 0, data, 512, 513), VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(request(f, VIRTIO_BLK_T_SECURE_ERASE, 0, data, 16, 17),
			 VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(request(f, 2 /* legacy SCSI */, 0, data, 512, 513), VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(f->d->broken, 0);
}

static void test_read_only_refuses_writes(void **state)
{
	struct fx *f = *state;
	struct virtio_blk_params p = { .path = f->img, .read_only = 1 };
	uint64_t data = gpa_alloc(f, 512, 0x99), range = gpa_alloc(f, 16, 0);
	struct virtio_blk_discard_write_zeroes r = { .sector = 0, .num_sectors = 1 };

	replace(f, &p, 1ULL << VIRTIO_BLK_F_RO | 1ULL << VIRTIO_BLK_F_FLUSH);
	memcpy(host(f, range), &r, sizeof(r));
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, data, 512, 1), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, range, 16, 1), VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(request(f, VIRTIO_BLK_T_WRITE_ZEROES, 0, range, 16, 1),
			 VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 1), VIRTIO_BLK_S_OK);
	assert_image_pattern(f, 0, 4096);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, data, 512, 513), VIRTIO_BLK_S_OK);
	assert_int_equal(((uint8_t *)host(f, data))[1], pattern(1));
}

static uint64_t ranges(struct fx *f, const struct virtio_blk_discard_write_zeroes *r, int n)
{
	uint64_t gpa = gpa_alloc(f, (uint32_t)(16 * n), 0);

	memcpy(host(f, gpa), r, 16u * n);
	return gpa;
}

static void test_discard_write_zeroes(void **state)
{
	struct fx *f = *state;
	uint64_t data = gpa_alloc(f, 8 * 512, 0xaa), in = gpa_alloc(f, 8 * 512, 0x11);
	struct virtio_blk_discard_write_zeroes r[2] = { { .sector = 2, .num_sectors = 2 } };

	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 0, data, 8 * 512, 1), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, ranges(f, r, 1), 16, 1),
			 VIRTIO_BLK_S_OK);
	r[0] = (struct virtio_blk_discard_write_zeroes){
		.sector = 5, .num_sectors = 1, .flags = VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP
	};
	r[1] = (struct virtio_blk_discard_write_zeroes){ .sector = 7, .num_sectors = 1 };
	assert_int_equal(request(f, VIRTIO_BLK_T_WRITE_ZEROES, 0, ranges(f, r, 2), 32, 1),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, in, 8 * 512, 8 * 512 + 1), VIRTIO_BLK_S_OK);
	assert_guest_fill(f, in, 2 * 512, 0xaa);
	assert_guest_fill(f, in + 2 * 512, 2 * 512, 0);
	assert_guest_fill(f, in + 4 * 512, 512, 0xaa);
	assert_guest_fill(f, in + 5 * 512, 512, 0);
	assert_guest_fill(f, in + 6 * 512, 512, 0xaa);
	assert_guest_fill(f, in + 7 * 512, 512, 0);

	/* Unmap on a discard, unknown flag bits: UNSUPP (5.2.6.2), nothing done. */
	r[0] = (struct virtio_blk_discard_write_zeroes){
		.sector = 0, .num_sectors = 1, .flags = VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP
	};
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, ranges(f, r, 1), 16, 1),
			 VIRTIO_BLK_S_UNSUPP);
	r[0].flags = 2;
	assert_int_equal(request(f, VIRTIO_BLK_T_WRITE_ZEROES, 0, ranges(f, r, 1), 16, 1),
			 VIRTIO_BLK_S_UNSUPP);
	/* A bad second range: the good first one is not carried out either. */
	r[0] = (struct virtio_blk_discard_write_zeroes){ .sector = 0, .num_sectors = 1 };
	r[1] = (struct virtio_blk_discard_write_zeroes){ .sector = SECTORS, .num_sectors = 1 };
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, ranges(f, r, 2), 32, 1),
			 VIRTIO_BLK_S_IOERR);
	r[1] = (struct virtio_blk_discard_write_zeroes){ .sector = UINT64_MAX / 256,
							 .num_sectors = 0xffffffff };
	assert_int_equal(request(f, VIRTIO_BLK_T_WRITE_ZEROES, 0, ranges(f, r, 2), 32, 1),
			 VIRTIO_BLK_S_IOERR);
	/* Payload not a whole number of ranges, or none. */
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, ranges(f, r, 2), 20, 1),
			 VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, 0, 0, 1), VIRTIO_BLK_S_IOERR);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, in, 512, 513), VIRTIO_BLK_S_OK);
	assert_guest_fill(f, in, 512, 0xaa);

	/* Not negotiated: not supported. */
	f->d->driver_features &= ~(1ULL << VIRTIO_BLK_F_DISCARD);
	assert_int_equal(request(f, VIRTIO_BLK_T_DISCARD, 0, ranges(f, r, 1), 16, 1),
			 VIRTIO_BLK_S_UNSUPP);
}

static void assert_broken(struct fx *f)
{
	assert_int_equal(f->d->broken, 1);
	assert_true(f->d->status & VIRTIO_STATUS_NEEDS_RESET);
	assert_true(f->d->isr & 2);
	assert_int_equal(used_idx(f), 0);
}

/* A later, valid request on a broken device is not served. */
static void assert_stays_broken(struct fx *f)
{
	uint64_t data = gpa_alloc(f, 512, 0), st = gpa_alloc(f, 1, 0xff);
	struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 0), 16, 0 },
			   { data, 512, 1 },
			   { st, 1, 1 } };

	submit(f, s, 3);
	kick(f);
	assert_int_equal(used_idx(f), 0);
	assert_int_equal(*(uint8_t *)host(f, st), 0xff);
}

static void test_looping_chain(void **state)
{
	struct fx *f = *state;
	uint64_t h = hdr_gpa(f, VIRTIO_BLK_T_IN, 0), st = gpa_alloc(f, 1, 0xff);

	desc_set(f, 0, h, 16, VIRTQ_DESC_F_NEXT, 1);
	desc_set(f, 1, st, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
	avail_add(f, 0);
	f->next_desc = 2;
	kick(f);
	assert_broken(f);
	assert_int_equal(*(uint8_t *)host(f, st), 0xff);
	assert_stays_broken(f);
}

static void test_short_header(void **state)
{
	struct fx *f = *state;
	uint64_t st = gpa_alloc(f, 1, 0xff);
	struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 0), 15, 0 }, { st, 1, 1 } };

	submit(f, s, 2);
	kick(f);
	assert_broken(f);
	assert_int_equal(*(uint8_t *)host(f, st), 0xff);
	assert_stays_broken(f);
}

static void test_no_status(void **state)
{
	struct fx *f = *state;
	uint64_t data = gpa_alloc(f, 512, 0x33);
	struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_OUT, 0), 16, 0 }, { data, 512, 0 } };

	submit(f, s, 2);
	kick(f);
	assert_broken(f);
	assert_image_pattern(f, 0, 512);
}

static void test_buffer_outside_ram(void **state)
{
	struct fx *f = *state;
	uint64_t st = gpa_alloc(f, 1, 0xff);
	struct seg s[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 0), 16, 0 },
			   { RAM - 256, 512, 1 },
			   { st, 1, 1 } };

	submit(f, s, 3);
	kick(f);
	assert_broken(f);
}

/* Two requests, one kick: both served, one interrupt. */
static void test_batch_one_interrupt(void **state)
{
	struct fx *f = *state;
	uint64_t a = gpa_alloc(f, 512, 0), b = gpa_alloc(f, 512, 0);
	uint64_t sa = gpa_alloc(f, 1, 0xff), sb = gpa_alloc(f, 1, 0xff);
	struct seg s1[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 0), 16, 0 },
			    { a, 512, 1 },
			    { sa, 1, 1 } };
	struct seg s2[] = { { hdr_gpa(f, VIRTIO_BLK_T_IN, 1), 16, 0 },
			    { b, 512, 1 },
			    { sb, 1, 1 } };

	submit(f, s1, 3);
	submit(f, s2, 3);
	kick(f);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(f->irqs, 1);
	assert_int_equal(*(uint8_t *)host(f, sa), VIRTIO_BLK_S_OK);
	assert_int_equal(*(uint8_t *)host(f, sb), VIRTIO_BLK_S_OK);
	assert_int_equal(((uint8_t *)host(f, b))[0], pattern(512));
	/* A kick with nothing new: no interrupt. */
	kick(f);
	assert_int_equal(f->irqs, 1);
}

/* With EVENT_IDX the device asks to be kicked at the next new entry. */
static void test_event_idx(void **state)
{
	struct fx *f = *state;
	uint64_t data = gpa_alloc(f, 512, 0);
	uint16_t avail_event;

	f->d->vq[0].event_idx = 1;
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, data, 512, 513), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 1), VIRTIO_BLK_S_OK);
	memcpy(&avail_event, host(f, USED_GPA + 4 + 8 * QSIZE), 2);
	assert_int_equal(avail_event, 2);
}

static void test_save_restore(void **state)
{
	struct fx *f = *state;
	struct virtio_dev *d = f->d;
	uint8_t buf[64], bad[16];

	assert_int_equal(d->ops->save(d, buf, 8), -ENOSPC);
	assert_int_equal(d->ops->save(d, buf, sizeof(buf)), 16);
	assert_int_equal(buf[0], 1);
	assert_int_equal(d->ops->restore(d, buf, 16), 0);
	assert_int_equal(d->ops->restore(d, buf, 15), -EINVAL);
	memcpy(bad, buf, 16);
	bad[0] = 2;
	assert_int_equal(d->ops->restore(d, bad, 16), -EINVAL);
	memcpy(bad, buf, 16);
	bad[8] ^= 1; /* another capacity: another disk */
	assert_int_equal(d->ops->restore(d, bad, 16), -EINVAL);
}

/* Through an overlay: the base never changes, and save() makes the
 * overlay on disk complete (its bitmap written) for the snapshot. */
static void test_cow_device(void **state)
{
	struct fx *f = *state;
	struct virtio_blk_params p = { .path = f->img, .overlay = f->ov, .create_overlay = 1 };
	uint64_t data = gpa_alloc(f, 512, 0x66), in = gpa_alloc(f, 1024, 0);
	uint8_t buf[64], bits;
	uint32_t align = 0;
	int fd;

	replace(f, &p, ALL_FEATURES);
	f->d->ops->read_config(f->d, offsetof(struct virtio_blk_config, discard_sector_alignment),
			       &align, 4);
	assert_int_equal(align, 128); /* one 64 KiB overlay block */
	assert_int_equal(request(f, VIRTIO_BLK_T_OUT, 1, data, 512, 1), VIRTIO_BLK_S_OK);
	assert_int_equal(request(f, VIRTIO_BLK_T_IN, 0, in, 1024, 1025), VIRTIO_BLK_S_OK);
	for (int i = 0; i < 512; i++)
		assert_int_equal(((uint8_t *)host(f, in))[i], pattern((uint64_t)i));
	assert_guest_fill(f, in + 512, 512, 0x66);
	assert_image_pattern(f, 0, SECTORS * 512);

	fd = open(f->ov, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &bits, 1, 4096), 1);
	assert_int_equal(bits, 0);
	assert_int_equal(f->d->ops->save(f->d, buf, sizeof(buf)), 16);
	assert_int_equal(pread(fd, &bits, 1, 4096), 1);
	assert_int_equal(bits, 1);
	close(fd);
}

static void test_create_errors(void **state)
{
	struct fx *f = *state;
	struct virtio_blk_params p = { .path = f->img, .serial = "abcdefghijklmnopqrstu" };
	struct virtio_dev *d = (struct virtio_dev *)1;
	char msg[512];

	assert_int_equal(virtio_blk_create(&p, &d, &f->e), -EINVAL);
	assert_null(d);
	snprintf(msg, sizeof(msg),
		 "disk '%s': serial 'abcdefghijklmnopqrstu' is longer than 20 bytes: shorten it",
		 f->img);
	assert_string_equal(f->e.msg, msg);

	/* The setup's device holds the image for writing. */
	p.serial = NULL;
	assert_int_equal(virtio_blk_create(&p, &d, &f->e), -EBUSY);
	p.path = "/nonexistent/kiln.img";
	assert_int_equal(virtio_blk_create(&p, &d, &f->e), -ENOENT);
	assert_string_equal(f->e.msg,
			    "disk '/nonexistent/kiln.img': cannot open the image for writing: No such file "
			    "or directory: check the path and permissions");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_features_and_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_features, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_read_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsupported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_refuses_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_write_zeroes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_looping_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_outside_ram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_one_interrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_idx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

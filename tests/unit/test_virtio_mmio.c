/*
 * virtio_mmio: the transport driven through its register window exactly as
 * Linux's virtio_mmio driver drives it (4-byte accesses, the probe and
 * queue set-up order of drivers/virtio/virtio_mmio.c), with virtio-rng as
 * the device and a fake guest RAM. Every register value is guest input, so
 * most cases are a driver doing something wrong — unoffered features,
 * queue numbers past the last queue, rings outside RAM, odd access sizes,
 * damaged snapshots — and check that the device refuses it or goes to
 * DEVICE_NEEDS_RESET instead of touching memory it must not.
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

#include "lib/guest/guest_mem.h"
#include "devices/virtio/virtio_mmio.h"
#include "devices/rng/virtio_rng.h"
#include "bytes.h"

#define MIB (1ULL << 20)
#define RAM (16 * MIB)

#define QNUM 64 /* virtio-rng's queue_max: what Linux will ask for */
#define DESC 0x10000ULL
#define AVAIL 0x20000ULL
#define USED 0x30000ULL
#define BUF 0x100000ULL
#define BASE 0xd0000000ULL

/* Linux's offsets for the shared memory region registers (virtio 1.2, 4.2.2). */
#define VMMIO_SHM_SEL 0x0ac
#define VMMIO_SHM_LEN_LOW 0x0b0
#define VMMIO_SHM_LEN_HIGH 0x0b4

#define ST_ACK VIRTIO_STATUS_ACKNOWLEDGE
#define ST_DRV (ST_ACK | VIRTIO_STATUS_DRIVER)
#define ST_FOK (ST_DRV | VIRTIO_STATUS_FEATURES_OK)
#define ST_OK (ST_FOK | VIRTIO_STATUS_DRIVER_OK)

#define F_INDIRECT (1ULL << VIRTIO_F_RING_INDIRECT_DESC)
#define F_EVENT_IDX (1ULL << VIRTIO_F_RING_EVENT_IDX)
#define F_VERSION_1 (1ULL << VIRTIO_F_VERSION_1)
#define F_ALL (F_INDIRECT | F_EVENT_IDX | F_VERSION_1)

struct fx {
	struct guest_mem gm;
	struct virtio_dev *dev;
	struct virtio_mmio m;
	int irqs;
	uint16_t avail_idx;      /* the "driver's" next avail index */
	struct virtio_dev *dev2; /* restore target, when a test makes one */
	struct virtio_mmio m2;
	int irqs2;
};

static void count_irq(void *ctx)
{
	(*(int *)ctx)++;
}

static uint8_t *at(struct fx *f, uint64_t gpa)
{
	return f->gm.host + gpa;
}

static uint32_t rd(struct virtio_mmio *m, uint64_t off)
{
	uint8_t b[4] = { 0xa5, 0xa5, 0xa5, 0xa5 };

	virtio_mmio_io(m, off, b, 4, 0);
	return get32(b);
}

static void wr(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	uint8_t b[4];

	memcpy(b, &v, 4);
	virtio_mmio_io(m, off, b, 4, 1);
}

/* A fresh rng device on its own transport, interrupts counted in *irqs. */
static struct virtio_dev *new_dev(struct fx *f, struct virtio_mmio *m, int *irqs)
{
	struct virtio_dev *d = NULL;
	struct err e = { { 0 } };

	assert_int_equal(virtio_rng_create(&d, &e), 0);
	assert_non_null(d);
	d->raise_irq = count_irq;
	d->irq_ctx = irqs;
	virtio_mmio_init(m, d, &f->gm, BASE, 5);
	return d;
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->gm.host = calloc(1, RAM);
	assert_non_null(f->gm.host);
	guest_mem_layout(&f->gm, RAM);
	f->dev = new_dev(f, &f->m, &f->irqs);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	f->dev->ops->destroy(f->dev);
	if (f->dev2)
		f->dev2->ops->destroy(f->dev2);
	free(f->gm.host);
	free(f);
	return 0;
}

/* vm_probe + virtio_dev_probe up to FEATURES_OK; returns the status read back. */
static uint32_t negotiate(struct virtio_mmio *m, uint64_t features)
{
	wr(m, VMMIO_STATUS, 0);
	wr(m, VMMIO_STATUS, ST_ACK);
	wr(m, VMMIO_STATUS, ST_DRV);
	wr(m, VMMIO_DRIVER_FEATURES_SEL, 1);
	wr(m, VMMIO_DRIVER_FEATURES, (uint32_t)(features >> 32));
	wr(m, VMMIO_DRIVER_FEATURES_SEL, 0);
	wr(m, VMMIO_DRIVER_FEATURES, (uint32_t)features);
	wr(m, VMMIO_STATUS, ST_FOK);
	return rd(m, VMMIO_STATUS);
}

static void set_queue_addrs(struct virtio_mmio *m, uint64_t desc, uint64_t avail, uint64_t used)
{
	wr(m, VMMIO_QUEUE_DESC_LOW, (uint32_t)desc);
	wr(m, VMMIO_QUEUE_DESC_HIGH, (uint32_t)(desc >> 32));
	wr(m, VMMIO_QUEUE_DRIVER_LOW, (uint32_t)avail);
	wr(m, VMMIO_QUEUE_DRIVER_HIGH, (uint32_t)(avail >> 32));
	wr(m, VMMIO_QUEUE_DEVICE_LOW, (uint32_t)used);
	wr(m, VMMIO_QUEUE_DEVICE_HIGH, (uint32_t)(used >> 32));
}

/* vm_setup_vq for queue `sel` with `num` entries and the given rings. */
static void setup_queue(struct virtio_mmio *m, uint32_t sel, uint32_t num, uint64_t desc,
			uint64_t avail, uint64_t used)
{
	wr(m, VMMIO_QUEUE_SEL, sel);
	assert_int_equal(rd(m, VMMIO_QUEUE_READY), 0);
	wr(m, VMMIO_QUEUE_NUM, num);
	set_queue_addrs(m, desc, avail, used);
	wr(m, VMMIO_QUEUE_READY, 1);
}

/* The whole Linux bring-up: features, queue 0, DRIVER_OK. */
static void bring_up(struct fx *f, uint64_t features)
{
	assert_int_equal(negotiate(&f->m, features), ST_FOK);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_NUM_MAX), QNUM);
	setup_queue(&f->m, 0, QNUM, DESC, AVAIL, USED);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 1);
	wr(&f->m, VMMIO_STATUS, ST_OK);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_OK);
	assert_int_equal(f->dev->broken, 0);
}

static void desc(struct fx *f, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	uint8_t *d = at(f, DESC + 16ULL * i);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void avail_add(struct fx *f, uint16_t head)
{
	put16(at(f, AVAIL + 4 + 2ULL * (f->avail_idx % QNUM)), head);
	f->avail_idx++;
	put16(at(f, AVAIL + 2), f->avail_idx);
}

static uint16_t used_idx(struct fx *f)
{
	return get16(at(f, USED + 2));
}

/* One 16-byte writable buffer at BUF + 0x100 * n, made available as head n. */
static void rng_request(struct fx *f, unsigned n)
{
	memset(at(f, BUF + 0x100ULL * n), 0, 16);
	desc(f, n, BUF + 0x100ULL * n, 16, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, (uint16_t)n);
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* ---- identity and features ---- */

/* The values vm_probe checks before anything else. */
static void test_identity(void **state)
{
	struct fx *f = *state;

	assert_int_equal(rd(&f->m, VMMIO_MAGIC), 0x74726976);
	assert_int_equal(rd(&f->m, VMMIO_VERSION), 2);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_ID), VIRTIO_ID_RNG);
	assert_int_equal(rd(&f->m, VMMIO_VENDOR_ID), VIRTIO_MMIO_VENDOR);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
	assert_int_equal(rd(&f->m, VMMIO_CONFIG_GENERATION), 0);
}

/* The transport's bits are offered in the right words; selectors past the
 * second word read 0. */
static void test_device_features(void **state)
{
	struct fx *f = *state;

	wr(&f->m, VMMIO_DEVICE_FEATURES_SEL, 1);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_FEATURES), 1); /* bit 32: VERSION_1 */
	wr(&f->m, VMMIO_DEVICE_FEATURES_SEL, 0);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_FEATURES), (1u << 28) | (1u << 29));
	wr(&f->m, VMMIO_DEVICE_FEATURES_SEL, 2);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_FEATURES), 0);
	wr(&f->m, VMMIO_DEVICE_FEATURES_SEL, 0xffffffff);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_FEATURES), 0);
	assert_int_equal(f->dev->device_features, F_ALL);
}

/* A driver that accepts a subset including VERSION_1 gets FEATURES_OK. */
static void test_features_ok_accepted(void **state)
{
	struct fx *f = *state;

	assert_int_equal(negotiate(&f->m, F_VERSION_1 | F_EVENT_IDX), ST_FOK);
	assert_int_equal(f->dev->driver_features, F_VERSION_1 | F_EVENT_IDX);
	assert_int_equal(virtio_has(f->dev, VIRTIO_F_RING_EVENT_IDX), 1);
	assert_int_equal(virtio_has(f->dev, VIRTIO_F_RING_INDIRECT_DESC), 0);
}

/* A legacy driver (no VERSION_1) is refused FEATURES_OK, and DRIVER_OK
 * after a refused negotiation does not stick either. */
static void test_features_ok_refused_without_version1(void **state)
{
	struct fx *f = *state;

	assert_int_equal(negotiate(&f->m, F_EVENT_IDX | F_INDIRECT), ST_DRV);
	wr(&f->m, VMMIO_STATUS, ST_OK);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_DRV);
	assert_int_equal(negotiate(&f->m, 0), ST_DRV);
}

/* Asking for a feature the device never offered is refused (3.1.1). */
static void test_features_ok_refused_unoffered(void **state)
{
	struct fx *f = *state;
	const uint64_t bad[] = { 1ULL << 0, 1ULL << 27, 1ULL << 33, 1ULL << 63, ~0ULL };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(negotiate(&f->m, F_VERSION_1 | bad[i]), ST_DRV);
		wr(&f->m, VMMIO_STATUS, ST_OK);
		assert_int_equal(rd(&f->m, VMMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK, 0);
	}
	/* the same driver, corrected, succeeds */
	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
}

/* Once FEATURES_OK is set the features are frozen; selectors past the
 * second word write nothing. */
static void test_features_frozen(void **state)
{
	struct fx *f = *state;

	wr(&f->m, VMMIO_STATUS, ST_DRV);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 2);
	wr(&f->m, VMMIO_DRIVER_FEATURES, 0xffffffff);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 0xffffffff);
	wr(&f->m, VMMIO_DRIVER_FEATURES, 0xffffffff);
	assert_int_equal(f->dev->driver_features, 0);

	assert_int_equal(negotiate(&f->m, F_VERSION_1), ST_FOK);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 0);
	wr(&f->m, VMMIO_DRIVER_FEATURES, (uint32_t)F_EVENT_IDX);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 1);
	wr(&f->m, VMMIO_DRIVER_FEATURES, 0xffffffff);
	assert_int_equal(f->dev->driver_features, F_VERSION_1);
}

/* Found by fuzz_virtio_mmio: a driver that drops FEATURES_OK under a live
 * device (Status = DRIVER_OK alone) must not unfreeze the features; only
 * a reset clears status bits (2.1.2). */
static void test_status_bits_kept_until_reset(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_VERSION_1);
	wr(&f->m, VMMIO_STATUS, ST_ACK | ST_DRV | 4 /* DRIVER_OK */);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_OK);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 1);
	wr(&f->m, VMMIO_DRIVER_FEATURES, 0);
	assert_int_equal(f->dev->driver_features, F_VERSION_1);
	wr(&f->m, VMMIO_STATUS, 0);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);
}

/* ---- queue selection and set-up ---- */

/* QueueSel past the last queue (and past VIRTIO_MAX_QUEUES) selects
 * nothing: QueueNumMax reads 0 and queue writes change no state. */
static void test_queue_sel_out_of_range(void **state)
{
	struct fx *f = *state;
	const uint32_t sels[] = { 1, VIRTIO_MAX_QUEUES - 1, VIRTIO_MAX_QUEUES, 0x80000000,
				  0xffffffff };
	struct virtq before[VIRTIO_MAX_QUEUES];

	negotiate(&f->m, F_ALL);
	memcpy(before, f->dev->vq, sizeof(before));
	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++) {
		wr(&f->m, VMMIO_QUEUE_SEL, sels[i]);
		assert_int_equal(rd(&f->m, VMMIO_QUEUE_NUM_MAX), 0);
		assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
		wr(&f->m, VMMIO_QUEUE_NUM, 16);
		set_queue_addrs(&f->m, DESC, AVAIL, USED);
		wr(&f->m, VMMIO_QUEUE_READY, 1);
		assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
		wr(&f->m, VMMIO_QUEUE_NOTIFY, sels[i]);
	}
	assert_memory_equal(before, f->dev->vq, sizeof(before));
	assert_int_equal(f->dev->broken, 0);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_FOK);
	assert_int_equal(f->irqs, 0);
}

/* Rings outside guest RAM (or misaligned): the queue stays off and the
 * device is marked NEEDS_RESET with a config-change interrupt. */
static void test_queue_outside_ram(void **state)
{
	struct fx *f = *state;
	const uint64_t bad[][3] = {
		{ RAM, AVAIL, USED },
		{ DESC, RAM - 8, USED },
		{ DESC, AVAIL, RAM - 0x100 }, /* used ring of 64 is 518 bytes */
		{ DESC, AVAIL, GUEST_MEM_HIGH_START },
		{ 0xfffffffffffff000ULL, AVAIL, USED },
		{ DESC + 8, AVAIL, USED },
		{ DESC, AVAIL + 1, USED },
		{ DESC, AVAIL, USED + 2 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f->irqs = 0;
		assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
		setup_queue(&f->m, 0, QNUM, bad[i][0], bad[i][1], bad[i][2]);
		assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
		assert_int_equal(f->dev->vq[0].ready, 0);
		assert_int_equal(f->dev->broken, 1);
		assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_FOK | VIRTIO_STATUS_NEEDS_RESET);
		assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 2);
		assert_int_equal(f->irqs, 1);
	}
}

/* QueueNum above QueueNumMax, 0, not a power of two, or > 16 bits:
 * NEEDS_RESET. */
static void test_queue_bad_size(void **state)
{
	struct fx *f = *state;
	const uint32_t bad[] = { QNUM * 2, 0, 48, 0x10000 | QNUM, 0xffffffff };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
		setup_queue(&f->m, 0, bad[i], DESC, AVAIL, USED);
		assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
		assert_int_equal(f->dev->broken, 1);
		assert_int_equal(rd(&f->m, VMMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET,
				 VIRTIO_STATUS_NEEDS_RESET);
	}
	/* a smaller power of two than the maximum is fine */
	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
	setup_queue(&f->m, 0, 8, DESC, AVAIL, USED);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 1);
	assert_int_equal(f->dev->broken, 0);
}

/* Lines a device logs (virtio_dev_log), kept for the test to read. */
struct log_lines {
	int n;
	char last[512];
};

static void keep_line(void *ctx, const char *line)
{
	struct log_lines *l = ctx;

	l->n++;
	snprintf(l->last, sizeof(l->last), "%s", line);
}

/* A broken device says so once, through the log the VM gave it (never
 * stderr); without one it says nothing and still breaks. */
static void test_fail_logs_once_to_the_vm_log(void **state)
{
	struct fx *f = *state;
	struct log_lines l = { 0 };

	f->dev->log = keep_line;
	f->dev->log_ctx = &l;
	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
	setup_queue(&f->m, 0, 48, DESC, AVAIL, USED);
	assert_int_equal(f->dev->broken, 1);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.last,
			    "virtio-rng: guest driver error: queue set up with a bad size or rings outside "
			    "guest RAM; device needs reset");
	/* Still broken: the second bad setup is not logged again. */
	setup_queue(&f->m, 0, 0, DESC, AVAIL, USED);
	assert_int_equal(l.n, 1);
	/* A reset clears broken; the next failure is logged again. */
	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
	setup_queue(&f->m, 0, 0, DESC, AVAIL, USED);
	assert_int_equal(l.n, 2);
	/* No log: nothing written anywhere, the device still breaks. */
	f->dev->log = NULL;
	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
	setup_queue(&f->m, 0, 0, DESC, AVAIL, USED);
	assert_int_equal(f->dev->broken, 1);
	assert_int_equal(l.n, 2);
}

/* While a queue is ready its size and ring addresses are fixed (4.2.2.2);
 * after QueueReady = 0 they can change again. */
static void test_queue_regs_ignored_while_ready(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_ALL);
	wr(&f->m, VMMIO_QUEUE_NUM, 8);
	set_queue_addrs(&f->m, RAM, RAM, RAM); /* would be outside RAM */
	assert_int_equal(f->dev->vq[0].size, QNUM);
	assert_int_equal(f->dev->vq[0].desc_gpa, DESC);
	assert_int_equal(f->dev->vq[0].avail_gpa, AVAIL);
	assert_int_equal(f->dev->vq[0].used_gpa, USED);
	/* the queue still works with its original rings */
	rng_request(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	memset(at(f, BUF), 0, 16);
	wr(&f->m, VMMIO_QUEUE_READY, 1); /* again: no re-validation, no restart */
	assert_int_equal(f->dev->broken, 0);
	rng_request(f, 1);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(get32(at(f, USED + 4 + 8)), 1);
	assert_true(all_zero(at(f, BUF), 16)); /* the first request was not redone */

	wr(&f->m, VMMIO_QUEUE_READY, 0);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
	set_queue_addrs(&f->m, DESC + 0x1000, AVAIL + 0x1000, USED + 0x1000);
	wr(&f->m, VMMIO_QUEUE_NUM, 8);
	assert_int_equal(f->dev->vq[0].desc_gpa, DESC + 0x1000);
	assert_int_equal(f->dev->vq[0].avail_gpa, AVAIL + 0x1000);
	assert_int_equal(f->dev->vq[0].used_gpa, USED + 0x1000);
	assert_int_equal(f->dev->vq[0].size, 8);
}

/* ---- requests and interrupts ---- */

/* The full Linux bring-up, then a kick with one 16-byte writable buffer:
 * it is filled, the used ring says so, ISR bit 0 is set and the device's
 * raise_irq fires once; InterruptACK clears the bit. */
static void test_notify_fills_buffer(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_ALL);
	assert_ptr_equal(f->dev->raise_irq, count_irq); /* init kept ours */
	assert_ptr_equal(f->dev->irq_ctx, &f->irqs);
	rng_request(f, 3);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);

	assert_false(all_zero(at(f, BUF + 0x300), 16));
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(get32(at(f, USED + 4)), 3);
	assert_int_equal(get32(at(f, USED + 8)), 16);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 1);
	assert_int_equal(f->irqs, 1);
	wr(&f->m, VMMIO_INTERRUPT_ACK, 1);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
	/* EVENT_IDX: the device asks for the next kick right away */
	assert_int_equal(get16(at(f, USED + 4 + 8 * QNUM)), 1);

	/* a second request, with used_event where Linux puts it */
	put16(at(f, AVAIL + 4 + 2 * QNUM), 1);
	rng_request(f, 4);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_false(all_zero(at(f, BUF + 0x400), 16));
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(f->irqs, 2);
	assert_int_equal(f->dev->broken, 0);
}

/* Without EVENT_IDX, VIRTQ_AVAIL_F_NO_INTERRUPT suppresses the interrupt. */
static void test_notify_no_interrupt_flag(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_VERSION_1);
	put16(at(f, AVAIL), VIRTQ_AVAIL_F_NO_INTERRUPT);
	rng_request(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(f->irqs, 0);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
}

/* A kick before DRIVER_OK, for a queue that is not ready, or for a queue
 * number that does not exist, does nothing. */
static void test_notify_ignored(void **state)
{
	struct fx *f = *state;

	assert_int_equal(negotiate(&f->m, F_ALL), ST_FOK);
	setup_queue(&f->m, 0, QNUM, DESC, AVAIL, USED);
	rng_request(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0); /* no DRIVER_OK yet */
	assert_int_equal(used_idx(f), 0);

	wr(&f->m, VMMIO_STATUS, ST_OK);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 1);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, VIRTIO_MAX_QUEUES);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0xffffffff);
	assert_int_equal(used_idx(f), 0);

	wr(&f->m, VMMIO_QUEUE_READY, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 0);
	assert_int_equal(f->irqs, 0);
	assert_int_equal(f->dev->broken, 0);
}

/* A looping chain marks the device NEEDS_RESET; it then ignores kicks
 * until the driver resets it, after which it works again. */
static void test_malformed_chain_marks_broken(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_ALL);
	desc(f, 0, BUF, 16, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
	avail_add(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(f->dev->broken, 1);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_OK | VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 2);
	assert_int_equal(f->irqs, 1);
	assert_int_equal(used_idx(f), 0);

	desc(f, 0, BUF, 16, VIRTQ_DESC_F_WRITE, 0); /* the chain now looks fine */
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 0);
	assert_true(all_zero(at(f, BUF), 16));

	/* reset and bring up again with fresh rings */
	memset(at(f, AVAIL), 0, 0x1000);
	memset(at(f, USED), 0, 0x1000);
	f->avail_idx = 0;
	bring_up(f, F_ALL);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), ST_OK);
	rng_request(f, 1);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	assert_false(all_zero(at(f, BUF + 0x100), 16));
}

/* A chain with only a readable buffer gets 0 bytes; one bigger than
 * VIRTIO_RNG_MAX_PER_REQUEST gets exactly that many. */
static void test_rng_request_sizes(void **state)
{
	struct fx *f = *state;
	const uint32_t big = VIRTIO_RNG_MAX_PER_REQUEST * 2;

	bring_up(f, F_ALL);
	desc(f, 0, BUF, 16, 0, 0);
	avail_add(f, 0);
	put16(at(f, AVAIL + 4 + 2 * QNUM), 1);
	desc(f, 1, BUF + 0x1000, big, VIRTQ_DESC_F_WRITE, 0);
	avail_add(f, 1);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(get32(at(f, USED + 8)), 0);
	assert_int_equal(get32(at(f, USED + 12)), 1);
	assert_int_equal(get32(at(f, USED + 16)), VIRTIO_RNG_MAX_PER_REQUEST);
	assert_true(all_zero(at(f, BUF + 0x1000 + VIRTIO_RNG_MAX_PER_REQUEST),
			     big - VIRTIO_RNG_MAX_PER_REQUEST));
	assert_int_equal(f->dev->broken, 0);
}

/* InterruptACK clears only the bits written. */
static void test_interrupt_ack_partial(void **state)
{
	struct fx *f = *state;

	f->dev->isr = 3;
	wr(&f->m, VMMIO_INTERRUPT_ACK, 1);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 2);
	wr(&f->m, VMMIO_INTERRUPT_ACK, 0);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 2);
	wr(&f->m, VMMIO_INTERRUPT_ACK, 0xffffffff);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
}

/* Without a caller-provided raise_irq, init installs the irqfd one, which
 * is harmless before an irqfd is attached. */
static void test_init_default_raise_irq(void **state)
{
	struct fx *f = *state;

	f->dev2 = calloc(1, sizeof(*f->dev2));
	assert_non_null(f->dev2);
	f->dev2->ops = f->dev->ops;
	pthread_mutex_init(&f->dev2->lock, NULL);
	virtio_mmio_init(&f->m2, f->dev2, &f->gm, BASE, 5);
	assert_non_null(f->dev2->raise_irq);
	assert_ptr_equal(f->dev2->irq_ctx, &f->m2);
	assert_int_equal(f->m2.irqfd, -1);
	f->dev2->raise_irq(f->dev2->irq_ctx);
	assert_ptr_equal(f->dev2->mem, &f->gm);
}

/* ---- reset ---- */

/* Writing 0 to Status resets everything the driver set up. */
static void test_reset(void **state)
{
	struct fx *f = *state;

	bring_up(f, F_ALL);
	rng_request(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 1);

	wr(&f->m, VMMIO_STATUS, 0);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
	assert_int_equal(f->dev->driver_features, 0);
	wr(&f->m, VMMIO_QUEUE_SEL, 0);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_READY), 0);
	assert_int_equal(f->dev->vq[0].ready, 0);
	assert_int_equal(f->dev->vq[0].last_avail, 0);
	assert_int_equal(f->dev->vq[0].used_idx, 0);
	assert_int_equal(f->dev->vq[0].event_idx, 0);
	assert_int_equal(f->dev->broken, 0);
	/* a kick on the reset device does nothing */
	rng_request(f, 1);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
}

/* ---- access sizes and unused space ---- */

/* virtio-rng has no config space: every read there is zeros, any size,
 * any offset up to the end of the window; writes are dropped. */
static void test_config_space_empty(void **state)
{
	struct fx *f = *state;
	const uint32_t sizes[] = { 1, 2, 4, 8 };
	const uint64_t offs[] = { VMMIO_CONFIG, VMMIO_CONFIG + 1, VMMIO_CONFIG + 0x80,
				  VIRTIO_MMIO_SIZE - 8 };
	uint8_t b[8], zero[8] = { 0 };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			memset(b, 0xa5, sizeof(b));
			virtio_mmio_io(&f->m, offs[i], b, sizes[j], 0);
			assert_memory_equal(b, zero, sizes[j]);
			if (sizes[j] < sizeof(b))
				assert_int_equal(b[sizes[j]], 0xa5);
			memset(b, 0xff, sizeof(b));
			virtio_mmio_io(&f->m, offs[i], b, sizes[j], 1);
		}
	}
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);
	assert_int_equal(f->dev->broken, 0);
}

/* 4.2.2.1: registers are 32-bit and aligned; other accesses read as zero
 * and write nothing. */
static void test_non_4byte_access_ignored(void **state)
{
	struct fx *f = *state;
	uint8_t b[8];
	const uint8_t zero[8] = { 0 };

	memset(b, 0xa5, sizeof(b));
	virtio_mmio_io(&f->m, VMMIO_MAGIC, b, 2, 0);
	assert_memory_equal(b, zero, 2);
	assert_int_equal(b[2], 0xa5);
	memset(b, 0xa5, sizeof(b));
	virtio_mmio_io(&f->m, VMMIO_MAGIC, b, 8, 0);
	assert_memory_equal(b, zero, 8);
	memset(b, 0xa5, sizeof(b));
	virtio_mmio_io(&f->m, VMMIO_MAGIC + 1, b, 4, 0);
	assert_memory_equal(b, zero, 4);

	b[0] = ST_ACK;
	virtio_mmio_io(&f->m, VMMIO_STATUS, b, 1, 1);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);
	memset(b, 0xff, sizeof(b));
	virtio_mmio_io(&f->m, VMMIO_STATUS + 2, b, 4, 1); /* misaligned */
	virtio_mmio_io(&f->m, VMMIO_STATUS, b, 2, 1);
	virtio_mmio_io(&f->m, VMMIO_STATUS, b, 8, 1);
	assert_int_equal(rd(&f->m, VMMIO_STATUS), 0);

	/* a 2-byte kick is not a kick */
	bring_up(f, F_ALL);
	rng_request(f, 0);
	memset(b, 0, sizeof(b));
	virtio_mmio_io(&f->m, VMMIO_QUEUE_NOTIFY, b, 2, 1);
	assert_int_equal(used_idx(f), 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
}

/* Read-only registers ignore writes. */
static void test_read_only_registers(void **state)
{
	struct fx *f = *state;

	wr(&f->m, VMMIO_MAGIC, 0);
	wr(&f->m, VMMIO_VERSION, 1);
	wr(&f->m, VMMIO_DEVICE_ID, 2);
	wr(&f->m, VMMIO_DEVICE_FEATURES, 0xffffffff);
	wr(&f->m, VMMIO_INTERRUPT_STATUS, 3);
	wr(&f->m, VMMIO_QUEUE_NUM_MAX, 1024);
	wr(&f->m, VMMIO_CONFIG_GENERATION, 7);
	assert_int_equal(rd(&f->m, VMMIO_MAGIC), VIRTIO_MMIO_MAGIC);
	assert_int_equal(rd(&f->m, VMMIO_VERSION), 2);
	assert_int_equal(rd(&f->m, VMMIO_DEVICE_ID), VIRTIO_ID_RNG);
	assert_int_equal(f->dev->device_features, F_ALL);
	assert_int_equal(rd(&f->m, VMMIO_INTERRUPT_STATUS), 0);
	assert_int_equal(rd(&f->m, VMMIO_QUEUE_NUM_MAX), QNUM);
	assert_int_equal(rd(&f->m, VMMIO_CONFIG_GENERATION), 0);
}

/* 4.2.2: a shared memory region that does not exist has length -1; Linux's
 * vm_get_shm_region() takes any other value as a real region. */
static void test_shm_region_absent(void **state)
{
	struct fx *f = *state;

	wr(&f->m, VMMIO_SHM_SEL, 0);
	assert_int_equal(rd(&f->m, VMMIO_SHM_LEN_LOW), 0xffffffff);
	assert_int_equal(rd(&f->m, VMMIO_SHM_LEN_HIGH), 0xffffffff);
}

/* ---- snapshots ---- */

/* save → restore into a fresh device brings back status, features and
 * queue state, and the restored device carries on where the old one was. */
static void test_save_restore_roundtrip(void **state)
{
	struct fx *f = *state;
	struct virtio_mmio_state s;

	bring_up(f, F_ALL);
	rng_request(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	wr(&f->m, VMMIO_DEVICE_FEATURES_SEL, 1);
	wr(&f->m, VMMIO_DRIVER_FEATURES_SEL, 1);
	virtio_mmio_save(&f->m, &s);
	assert_int_equal(s.version, VIRTIO_MMIO_STATE_VERSION);

	f->dev2 = new_dev(f, &f->m2, &f->irqs2);
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), 0);
	assert_int_equal(rd(&f->m2, VMMIO_STATUS), ST_OK);
	assert_int_equal(f->dev2->driver_features, F_ALL);
	assert_int_equal(rd(&f->m2, VMMIO_INTERRUPT_STATUS), 1);
	assert_int_equal(rd(&f->m2, VMMIO_DEVICE_FEATURES), 1); /* selector restored */
	assert_int_equal(f->m2.drv_feat_sel, 1);
	assert_int_equal(rd(&f->m2, VMMIO_QUEUE_READY), 1);
	assert_int_equal(f->dev2->vq[0].size, QNUM);
	assert_int_equal(f->dev2->vq[0].desc_gpa, DESC);
	assert_int_equal(f->dev2->vq[0].avail_gpa, AVAIL);
	assert_int_equal(f->dev2->vq[0].used_gpa, USED);
	assert_int_equal(f->dev2->vq[0].last_avail, 1);
	assert_int_equal(f->dev2->vq[0].used_idx, 1);
	assert_int_equal(f->dev2->vq[0].event_idx, 1);
	assert_int_equal(f->dev2->vq[0].signalled_valid, 1);
	assert_int_equal(f->dev2->vq[0].signalled_used, 1);
	assert_ptr_equal(f->dev2->vq[0].mem, &f->gm);
	assert_int_equal(f->dev2->vq[1].ready, 0);

	put16(at(f, AVAIL + 4 + 2 * QNUM), 1);
	rng_request(f, 1);
	wr(&f->m2, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(get32(at(f, USED + 4 + 8)), 1);
	assert_false(all_zero(at(f, BUF + 0x100), 16));
	assert_int_equal(f->irqs2, 1);
}

/* A state of another version is refused before anything is touched. */
static void test_restore_bad_version(void **state)
{
	struct fx *f = *state;
	struct virtio_mmio_state s;

	bring_up(f, F_ALL);
	virtio_mmio_save(&f->m, &s);
	f->dev2 = new_dev(f, &f->m2, &f->irqs2);
	s.version = VIRTIO_MMIO_STATE_VERSION + 1;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s.version = 0;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	assert_int_equal(f->dev2->status, 0);
	assert_int_equal(f->dev2->driver_features, 0);
	assert_int_equal(f->dev2->vq[0].ready, 0);
}

/* Found by fuzz_virtio_mmio: a state no live device can be in (ISR bits
 * beyond 0..1, DRIVER_OK without FEATURES_OK, FEATURES_OK without
 * VERSION_1) is refused and changes nothing. */
static void test_restore_impossible_state(void **state)
{
	struct fx *f = *state;
	struct virtio_mmio_state s, bad;

	bring_up(f, F_ALL);
	virtio_mmio_save(&f->m, &s);
	f->dev2 = new_dev(f, &f->m2, &f->irqs2);
	bad = s;
	bad.isr = 0x80;
	assert_int_equal(virtio_mmio_restore(&f->m2, &bad), -EINVAL);
	bad = s;
	bad.status &= ~(uint32_t)VIRTIO_STATUS_FEATURES_OK;
	assert_int_equal(virtio_mmio_restore(&f->m2, &bad), -EINVAL);
	bad = s;
	bad.driver_features &= ~F_VERSION_1;
	assert_int_equal(virtio_mmio_restore(&f->m2, &bad), -EINVAL);
	assert_int_equal(f->dev2->status, 0);
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), 0);
	assert_int_equal(f->dev2->status, ST_OK);
}

/* A damaged state: a ready queue with rings outside RAM, a size above
 * queue_max, a ready queue the device does not have, unoffered features. */
static void test_restore_damaged(void **state)
{
	struct fx *f = *state;
	struct virtio_mmio_state good, s;

	bring_up(f, F_ALL);
	virtio_mmio_save(&f->m, &good);
	f->dev2 = new_dev(f, &f->m2, &f->irqs2);

	s = good;
	s.q[0].desc = RAM;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.q[0].used = 0xfffffffffffffff0ULL;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.q[0].avail = RAM - 4;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.q[0].size = QNUM * 2;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.q[0].size = 48;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.q[VIRTIO_MAX_QUEUES - 1] = s.q[0];
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	s = good;
	s.driver_features |= 1ULL << 40;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), -EINVAL);
	assert_int_equal(f->dev2->status, 0);

	/* a queue that was not ready is not validated (the driver may still be
	 * writing its addresses) */
	s = good;
	s.q[0].ready = 0;
	s.q[0].desc = RAM;
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), 0);
	assert_int_equal(f->dev2->vq[0].ready, 0);
}

/* A device that was NEEDS_RESET when saved must still ignore its queues
 * after restore, until the driver resets it. */
static void test_restore_keeps_needs_reset(void **state)
{
	struct fx *f = *state;
	struct virtio_mmio_state s;

	bring_up(f, F_ALL);
	desc(f, 0, BUF, 16, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
	avail_add(f, 0);
	wr(&f->m, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(f->dev->broken, 1);
	virtio_mmio_save(&f->m, &s);

	f->dev2 = new_dev(f, &f->m2, &f->irqs2);
	assert_int_equal(virtio_mmio_restore(&f->m2, &s), 0);
	assert_int_equal(rd(&f->m2, VMMIO_STATUS), ST_OK | VIRTIO_STATUS_NEEDS_RESET);
	desc(f, 0, BUF, 16, VIRTQ_DESC_F_WRITE, 0); /* the chain now looks fine */
	wr(&f->m2, VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 0);
	assert_true(all_zero(at(f, BUF), 16));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_identity),
		T(test_device_features),
		T(test_features_ok_accepted),
		T(test_features_ok_refused_without_version1),
		T(test_features_ok_refused_unoffered),
		T(test_features_frozen),
		T(test_status_bits_kept_until_reset),
		T(test_queue_sel_out_of_range),
		T(test_queue_outside_ram),
		T(test_queue_bad_size),
		T(test_fail_logs_once_to_the_vm_log),
		T(test_queue_regs_ignored_while_ready),
		T(test_notify_fills_buffer),
		T(test_notify_no_interrupt_flag),
		T(test_notify_ignored),
		T(test_malformed_chain_marks_broken),
		T(test_rng_request_sizes),
		T(test_interrupt_ack_partial),
		T(test_init_default_raise_irq),
		T(test_reset),
		T(test_config_space_empty),
		T(test_non_4byte_access_ignored),
		T(test_read_only_registers),
		T(test_shm_region_absent),
		T(test_save_restore_roundtrip),
		T(test_restore_bad_version),
		T(test_restore_impossible_state),
		T(test_restore_damaged),
		T(test_restore_keeps_needs_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

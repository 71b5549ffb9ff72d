/*
 * virtio_fs: the device model over a fake split virtqueue in calloc'd guest
 * memory. One FUSE INIT goes through the request queue and comes back on
 * the used ring; a FORGET on the hiprio queue is consumed without a reply;
 * an over-size request is answered with E2BIG; a looping chain marks the
 * device broken. Config space, tag limits and the snapshot rule are checked
 * as the transport and kiln-vmm will see them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/fs/fuse_server.h"
#include "devices/fs/virtio_fs.h"

#define RAM (2u << 20)
#define QSIZE 16
#define DESC 0x1000
#define AVAIL 0x2000
#define USED 0x3000
#define REQ 0x10000
#define REP 0x8000

struct fx {
	char dir[64];
	struct guest_mem gm;
	struct virtio_dev *d;
	int irqs;
	uint16_t avail_idx;
};

static void count_irq(void *ctx)
{
	((struct fx *)ctx)->irqs++;
}

static void put_desc(struct fx *f, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	uint8_t *p = f->gm.host + DESC + 16 * i;

	memcpy(p, &addr, 8);
	memcpy(p + 8, &len, 4);
	memcpy(p + 12, &flags, 2);
	memcpy(p + 14, &next, 2);
}

/* Make chain `head` available on the queue the fixture enabled. */
static void make_avail(struct fx *f, uint16_t head)
{
	uint8_t *avail = f->gm.host + AVAIL;

	memcpy(avail + 4 + 2 * (f->avail_idx % QSIZE), &head, 2);
	f->avail_idx++;
	memcpy(avail + 2, &f->avail_idx, 2);
}

static uint16_t used_idx(struct fx *f)
{
	uint16_t v;

	memcpy(&v, f->gm.host + USED + 2, 2);
	return v;
}

static void used_elem(struct fx *f, uint16_t n, uint32_t *id, uint32_t *len)
{
	memcpy(id, f->gm.host + USED + 4 + 8 * (n % QSIZE), 4);
	memcpy(len, f->gm.host + USED + 4 + 8 * (n % QSIZE) + 4, 4);
}

/* Enable queue `qi` of the device on the rings above. */
static void enable(struct fx *f, int qi)
{
	struct virtq *q = &f->d->vq[qi];

	q->size = QSIZE;
	q->desc_gpa = DESC;
	q->avail_gpa = AVAIL;
	q->used_gpa = USED;
	assert_int_equal(virtq_enable(q, &f->gm), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct virtio_fs_config cfg = { .tag = "myshare" };
	struct err e = { { 0 } };

	assert_non_null(f);
	strcpy(f->dir, "/tmp/kiln-vfs-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	cfg.dir = f->dir;
	f->gm.host = calloc(1, RAM);
	assert_non_null(f->gm.host);
	guest_mem_layout(&f->gm, RAM);
	assert_int_equal(virtio_fs_create(&cfg, &f->d, &e), 0);
	f->d->mem = &f->gm;
	f->d->raise_irq = count_irq;
	f->d->irq_ctx = f;
	f->d->status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	f->d->ops->destroy(f->d);
	rmdir(f->dir);
	free(f->gm.host);
	free(f);
	return 0;
}

/* Put a FUSE INIT at REQ, chain it as descriptors 0 (readable) and 1
 * (writable, 80 bytes at REP), and kick the request queue. */
static void send_init(struct fx *f, uint64_t unique)
{
	struct fuse_in_header h = { .len = sizeof(h) + sizeof(struct fuse_init_in),
				    .opcode = FUSE_INIT,
				    .unique = unique };
	struct fuse_init_in in = { .major = 7, .minor = 38, .flags = FUSE_MAX_PAGES };

	memcpy(f->gm.host + REQ, &h, sizeof(h));
	memcpy(f->gm.host + REQ + sizeof(h), &in, sizeof(in));
	put_desc(f, 0, REQ, h.len, VIRTQ_DESC_F_NEXT, 1);
	put_desc(f, 1, REP, 80, VIRTQ_DESC_F_WRITE, 0);
	make_avail(f, 0);
	f->d->ops->notify(f->d, 1);
}

/* The device says what the guest needs to mount it. */
static void test_identity_and_config(void **state)
{
	struct fx *f = *state;
	const struct virtio_dev_ops *ops = f->d->ops;
	uint8_t cfg[40];
	uint32_t nq;

	assert_int_equal(ops->device_id, VIRTIO_ID_FS);
	assert_int_equal(ops->num_queues, 2);
	assert_int_equal(ops->config_len, 40);
	assert_int_equal(ops->features(f->d), 0);
	ops->read_config(f->d, 0, cfg, sizeof(cfg));
	assert_memory_equal(cfg, "myshare\0\0", 9);
	memcpy(&nq, cfg + 36, 4);
	assert_int_equal(nq, 1);
	/* The driver cannot rename the share. */
	ops->write_config(f->d, 0, "evil", 4);
	ops->read_config(f->d, 0, cfg, 8);
	assert_memory_equal(cfg, "myshare", 8);
}

/* FUSE INIT through the request queue: reply on the used ring, interrupt. */
static void test_init_through_queue(void **state)
{
	struct fx *f = *state;
	struct fuse_out_header oh;
	struct fuse_init_out io;
	uint32_t id, len;

	enable(f, 1);
	send_init(f, 42);
	assert_int_equal(used_idx(f), 1);
	used_elem(f, 0, &id, &len);
	assert_int_equal(id, 0);
	assert_int_equal(len, sizeof(oh) + sizeof(io));
	memcpy(&oh, f->gm.host + REP, sizeof(oh));
	memcpy(&io, f->gm.host + REP + sizeof(oh), sizeof(io));
	assert_int_equal(oh.error, 0);
	assert_int_equal(oh.unique, 42);
	assert_int_equal(oh.len, len);
	assert_int_equal(io.major, 7);
	assert_int_equal(io.max_write, FUSE_SERVER_MAX_WRITE);
	assert_int_equal(f->irqs, 1);
	assert_false(f->d->broken);

	/* Mounted: the session is saved (no nodes yet: the header alone) and
	 * restored; damaged bytes are refused. */
	{
		uint8_t buf[64];

		assert_int_equal(f->d->ops->save(f->d, buf, sizeof(buf)), 40);
		assert_int_equal(f->d->ops->restore(f->d, buf, 40), 0);
		buf[0] ^= 1;
		assert_int_equal(f->d->ops->restore(f->d, buf, 40), -EINVAL);
		assert_int_equal(f->d->ops->restore(f->d, buf, 3), -EINVAL);
		assert_int_equal(f->d->ops->save(f->d, buf, 2), -E2BIG);
		/* A state saved before the node tables existed: no session. */
		memcpy(buf, "1sfk", 4);
		assert_int_equal(f->d->ops->restore(f->d, buf, 4), 0);
	}
}

/* FORGET on hiprio: consumed and returned with 0 bytes written. */
static void test_hiprio_forget(void **state)
{
	struct fx *f = *state;
	struct fuse_in_header h = { .len = sizeof(h) + sizeof(struct fuse_forget_in),
				    .opcode = FUSE_FORGET,
				    .nodeid = 77 };
	struct fuse_forget_in fi = { .nlookup = 1 };
	uint32_t id, len;

	enable(f, 0);
	memcpy(f->gm.host + REQ, &h, sizeof(h));
	memcpy(f->gm.host + REQ + sizeof(h), &fi, sizeof(fi));
	put_desc(f, 3, REQ, h.len, 0, 0);
	make_avail(f, 3);
	f->d->ops->notify(f->d, 0);
	assert_int_equal(used_idx(f), 1);
	used_elem(f, 0, &id, &len);
	assert_int_equal(id, 3);
	assert_int_equal(len, 0);
	assert_false(f->d->broken);
}

/* More than the negotiated maximum: E2BIG for that request, device fine. */
static void test_oversize_request(void **state)
{
	struct fx *f = *state;
	struct fuse_in_header h = { .len = FUSE_SERVER_MAX_REQUEST + 1,
				    .opcode = FUSE_WRITE,
				    .unique = 9 };
	struct fuse_out_header oh;
	uint32_t id, len;

	enable(f, 1);
	memcpy(f->gm.host + REQ, &h, sizeof(h));
	put_desc(f, 0, REQ, h.len, VIRTQ_DESC_F_NEXT, 1);
	put_desc(f, 1, REP, 80, VIRTQ_DESC_F_WRITE, 0);
	make_avail(f, 0);
	f->d->ops->notify(f->d, 1);
	assert_int_equal(used_idx(f), 1);
	used_elem(f, 0, &id, &len);
	assert_int_equal(len, sizeof(oh));
	memcpy(&oh, f->gm.host + REP, sizeof(oh));
	assert_int_equal(oh.error, -E2BIG);
	assert_int_equal(oh.unique, 9);
	assert_false(f->d->broken);
	/* And the next request is served. */
	send_init(f, 10);
	assert_int_equal(used_idx(f), 2);
	memcpy(&oh, f->gm.host + REP, sizeof(oh));
	assert_int_equal(oh.error, 0);
}

/* A chain that loops (2 -> 3 -> 2): the device needs a reset, the VMM runs. */
static void test_looping_chain(void **state)
{
	struct fx *f = *state;

	enable(f, 1);
	send_init(f, 1);
	assert_int_equal(used_idx(f), 1);
	put_desc(f, 2, REQ, 64, VIRTQ_DESC_F_NEXT, 3);
	put_desc(f, 3, REP, 64, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	make_avail(f, 2);
	f->d->ops->notify(f->d, 1);
	assert_true(f->d->broken);
	assert_true(f->d->status & VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(used_idx(f), 1);
}

/* Tags: 1..36 bytes (36 fills config space without a NUL). */
static void test_create_errors(void **state)
{
	struct fx *f = *state;
	struct virtio_dev *d = NULL;
	struct err e = { { 0 } };
	struct virtio_fs_config cfg = { .dir = f->dir,
					.tag = "abcdefghijklmnopqrstuvwxyz0123456789X" };
	uint8_t tag[36];

	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "1 to 36"));
	cfg.tag = "";
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -EINVAL);
	cfg.tag = NULL;
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -EINVAL);
	cfg.tag = "t";
	cfg.dir = "/nonexistent/kiln";
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "/nonexistent/kiln"));
	assert_null(d);
	cfg.dir = f->dir;
	cfg.tag = "abcdefghijklmnopqrstuvwxyz0123456789";
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), 0);
	d->ops->read_config(d, 0, tag, sizeof(tag));
	assert_memory_equal(tag, cfg.tag, 36);
	d->ops->destroy(d);
}

/* A client-served share: the same device over a socket; never saved,
 * never grafted; a bad socket path or timeout is refused at create. */
static void test_remote_share(void **state)
{
	struct virtio_dev *d = NULL;
	struct err e = { { 0 } };
	struct virtio_fs_config cfg = { .dir_fd = -1,
					.remote = "/nonexistent/share.sock",
					.tag = "mem" };
	uint8_t buf[64];

	(void)state;
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), 0);
	assert_int_equal(d->ops->save(d, buf, sizeof(buf)), -EOPNOTSUPP);
	assert_int_equal(d->ops->restore(d, buf, 0), -EINVAL);
	assert_int_equal(virtio_fs_graft(d, "mem", "x", 5), -EOPNOTSUPP);
	d->ops->destroy(d);
	cfg.remote_timeout_ms = 50;
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "timeout 50 ms"));
	cfg.remote_timeout_ms = 0;
	cfg.remote = "";
	assert_int_equal(virtio_fs_create(&cfg, &d, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_and_config, setup, teardown),
		cmocka_unit_test(test_remote_share),
		cmocka_unit_test_setup_teardown(test_init_through_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hiprio_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversize_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_looping_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * fuzz_virtio_mmio: register sequences against the virtio-mmio transport
 * (devices/virtio/virtio_mmio.c) in front of each real device model:
 * virtio-rng, virtio-blk (a raw image, or a fresh copy-on-write overlay),
 * virtio-net (passt framing over a socketpair, without or with the packet
 * filter), virtio-vsock (a Unix socket directory nobody listens in) and
 * virtio-fs (a read-only scratch share). Feature negotiation, queue setup,
 * status transitions, config space, notifications, and whatever chains
 * the guest RAM holds when a queue is kicked.
 *
 * Operation 8 saves the transport's and the device's snapshot state,
 * damages one byte and restores it.
 *
 * Input: device (1 byte), a count and that many 6-byte operations
 * (op, offset, value), then guest RAM's contents. Operation 4 is a whole
 * driver bring-up (reset .. DRIVER_OK, every queue at a fixed address:
 * queue i's descriptors at 0x2000 * i, avail at +0x1000, used at +0x1400)
 * so kicks reach the device's request parsers.
 *
 * A device byte with bit 7 set is virtio-net behind the packet filter
 * (devices/net/net_filter.c; guest 52:54:00:12:34:56, 10.0.2.15,
 * fd00::15): bits 0..2 pick the rule set, bits 3..6 the configuration
 * (net_canned.h: bit 3 takes the IPv4 address away, bit 4 the IPv6 one,
 * bit 5 turns on rate limits, bit 6 makes 10.0.2.2 the host). Its input
 * has, between the operations and RAM, a 2-byte length and that many bytes of what passt sends (4-byte
 * big-endian length, frame, ...). On it, a notify of queue 2 (which it
 * has not) also replaces the rules with canned set value >> 8, and of
 * queue 3 writes the next (value >> 8) & 0xffff bytes of that stream into
 * the socket: a notify of queue 0 then reads them through the filter
 * into receive buffers. Guest transmit frames go device -> filter ->
 * socket, where the target reads them back.
 *
 * Invariants: the identity registers never change; a device that raised
 * DEVICE_NEEDS_RESET shows it in Status; DRIVER_OK implies FEATURES_OK
 * with VERSION_1 and only offered features; every ready queue has a legal
 * size and rings inside guest RAM; a reset leaves no queue ready; ISR
 * holds only its two bits; a device's request never writes past RAM
 * (ASan); virtio-net's socket carries whole passt frames. With the
 * filter: every frame the filter drops counts as filtered, and as
 * nothing else; what reaches the backend is no more than the filter
 * passed, and carries the guest's MAC (anti-spoofing); what fills receive
 * buffers is no more than the filter passed inbound.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/blk/virtio_blk.h"
#include "devices/fs/virtio_fs.h"
#include "devices/net/net_passt.h"
#include "devices/net/virtio_net.h"
#include "devices/rng/virtio_rng.h"
#include "devices/virtio/virtio_mmio.h"
#include "devices/vsock/virtio_vsock.h"
#include "lib/guest/event_loop.h"
#include "fuzz.h"
#include "net_canned.h"

#define RAM_LOW (64u << 10)
#define RAM_HIGH (4u << 10)
#define QSTRIDE 0x2000u

/* DEV_COUNT: the device byte modulo it (bit 7 clear); DEV_NET_FILTER: bit 7 set. */
enum { DEV_RNG, DEV_BLK, DEV_BLK_RO, DEV_BLK_OVERLAY, DEV_NET, DEV_VSOCK, DEV_FS, DEV_COUNT };
#define DEV_NET_FILTER DEV_COUNT
#define PASST_HDR 4

/* tmpfs: the overlay's creation and FLUSH fsync, which on a disk would
 * cost milliseconds per input. */
static char dir[] = "/dev/shm/kiln-fuzz-mmio-XXXXXX";
static char image[64], overlay[64], share[64], vsock_path[64];
static struct event_loop *loop; /* per input: no timer outlives its device */
static int irqs;

/* The passt end of a virtio-net device's socket, as the target plays it. */
static struct {
	int fd;                    /* -1: not a net device */
	struct net_filter *filter; /* owned by the device; NULL: none */
	const uint8_t *rx;         /* what passt still has to send */
	size_t rx_n;
	uint8_t tx[PASST_HDR + NET_MAX_FRAME + 4096]; /* sent by the device, not yet a whole frame */
	size_t tx_n;
	uint64_t tx_frames; /* whole frames the device sent */
} peer = { .fd = -1 };

static void count_irq(void *ctx)
{
	(void)ctx;
	irqs++;
}

static void cleanup(void)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/hello", share);
	unlink(p);
	rmdir(share);
	unlink(image);
	unlink(overlay);
	unlink(vsock_path);
	rmdir(dir);
}

/* Once per process: the scratch directory, a 64 KiB disk image, a share. */
static int setup_once(void)
{
	static int done;
	char buf[4096];
	int fd;

	if (done)
		return 0;
	if (!mkdtemp(dir))
		return -1;
	snprintf(image, sizeof(image), "%s/disk.img", dir);
	snprintf(overlay, sizeof(overlay), "%s/disk.overlay", dir);
	snprintf(share, sizeof(share), "%s/share", dir);
	snprintf(vsock_path, sizeof(vsock_path), "%s/v.sock", dir);
	fd = open(image, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	for (int i = 0; i < 16; i++) {
		memset(buf, 'a' + i, sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return -1;
	}
	close(fd);
	mkdir(share, 0700);
	snprintf(buf, sizeof(buf), "%s/share/hello", dir);
	fd = open(buf, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "hello\n", 6) != 6)
		return -1;
	close(fd);
	atexit(cleanup);
	done = 1;
	return 0;
}

/* virtio-net on passt framing over a socketpair; cfg bit 7: with the filter. */
static int net_create(uint8_t cfg, struct virtio_dev **d, struct err *e)
{
	struct virtio_net_params p = { .mac = { 2, 0, 0, 0, 0, 1 } };
	int sv[2];

	if (cfg & 0x80) {
		struct net_filter_config c;

		/* Bits 3..6: no IPv4, no IPv6, rate limits, 10.0.2.2 is the host. */
		fuzz_filter_config(&c, (cfg >> 3) & 15);
		if (net_filter_create(&c, fuzz_rules_canned(cfg & 7), 0, &p.filter, e))
			return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv)) {
		net_filter_destroy(p.filter);
		return err_set(e, errno, "socketpair: %s", strerror(errno));
	}
	if (net_passt_attach(sv[0], 0, &p.backend, e)) {
		net_filter_destroy(p.filter);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (p.filter)
		memcpy(p.mac, fuzz_guest_mac, 6);
	peer.fd = sv[1];
	peer.filter = p.filter;
	return virtio_net_create(&p, loop, d, e);
}

static struct virtio_dev *create(int kind, uint8_t cfg)
{
	struct virtio_dev *d = NULL;
	struct err e = { { 0 } };
	int r = -1;

	switch (kind) {
	case DEV_RNG:
		r = virtio_rng_create(&d, &e);
		break;
	case DEV_BLK:
	case DEV_BLK_RO:
	case DEV_BLK_OVERLAY: {
		struct virtio_blk_params p = { .path = image,
					       .read_only = kind == DEV_BLK_RO,
					       .serial = "fuzz" };

		if (kind == DEV_BLK_OVERLAY) {
			unlink(overlay);
			p.overlay = overlay;
			p.create_overlay = 1;
			p.overlay_block_size = 4096;
		}
		r = virtio_blk_create(&p, &d, &e);
		break;
	}
	case DEV_NET:
		r = net_create(0, &d, &e);
		break;
	case DEV_NET_FILTER:
		r = net_create(cfg | 0x80, &d, &e);
		break;
	case DEV_VSOCK: {
		struct virtio_vsock_config c = { .guest_cid = 3, .uds_path = vsock_path };

		unlink(vsock_path);
		r = virtio_vsock_create(&c, loop, &d, &e);
		break;
	}
	case DEV_FS: {
		struct virtio_fs_config c = { .dir = share, .tag = "fuzz", .read_only = 1 };

		r = virtio_fs_create(&c, &d, &e);
		break;
	}
	}
	if (r) {
		fprintf(stderr, "fuzz_virtio_mmio: device %d: %s\n", kind, e.msg);
		abort(); /* the harness's own setup failed: not a finding */
	}
	return d;
}

static uint32_t rd(struct virtio_mmio *m, uint64_t off)
{
	uint8_t b[4];

	virtio_mmio_io(m, off, b, 4, 0);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void wr(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	virtio_mmio_io(m, off, b, 4, 1);
}

/* What Linux's virtio_mmio probe and virtio_dev_probe do, in one step. */
static void bring_up(struct virtio_mmio *m, struct virtio_dev *d, uint32_t v)
{
	uint64_t feat = d->device_features & ~((uint64_t)(v >> 8) << 20);

	wr(m, VMMIO_STATUS, 0);
	wr(m, VMMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	wr(m, VMMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr(m, VMMIO_DRIVER_FEATURES_SEL, sel);
		wr(m, VMMIO_DRIVER_FEATURES, (uint32_t)(feat >> (32 * sel)));
	}
	wr(m, VMMIO_STATUS,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
	for (int i = 0; i < d->ops->num_queues; i++) {
		uint32_t num = 1u << (v % 9); /* 1 .. 256 */
		uint64_t desc = (uint64_t)QSTRIDE * (uint32_t)i;

		wr(m, VMMIO_QUEUE_SEL, (uint32_t)i);
		if (num > rd(m, VMMIO_QUEUE_NUM_MAX))
			num = rd(m, VMMIO_QUEUE_NUM_MAX);
		wr(m, VMMIO_QUEUE_NUM, num);
		wr(m, VMMIO_QUEUE_DESC_LOW, (uint32_t)desc);
		wr(m, VMMIO_QUEUE_DRIVER_LOW, (uint32_t)desc + 0x1000);
		wr(m, VMMIO_QUEUE_DEVICE_LOW, (uint32_t)desc + 0x1400);
		wr(m, VMMIO_QUEUE_READY, 1);
	}
	wr(m, VMMIO_STATUS,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
		   VIRTIO_STATUS_DRIVER_OK);
}

static void check(struct virtio_mmio *m, struct virtio_dev *d, const struct guest_mem *gm)
{
	uint32_t st = rd(m, VMMIO_STATUS);

	FUZZ_ASSERT(rd(m, VMMIO_MAGIC) == VIRTIO_MMIO_MAGIC && rd(m, VMMIO_VERSION) == 2);
	FUZZ_ASSERT(rd(m, VMMIO_DEVICE_ID) == d->ops->device_id);
	FUZZ_ASSERT(!d->broken || (st & VIRTIO_STATUS_NEEDS_RESET));
	if (st & VIRTIO_STATUS_DRIVER_OK) {
		FUZZ_ASSERT(st & VIRTIO_STATUS_FEATURES_OK);
		FUZZ_ASSERT(!(d->driver_features & ~d->device_features));
		FUZZ_ASSERT(virtio_has(d, VIRTIO_F_VERSION_1));
	}
	FUZZ_ASSERT(!(rd(m, VMMIO_INTERRUPT_STATUS) & ~3u));
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		const struct virtq *q = &d->vq[i];

		if (!q->ready)
			continue;
		FUZZ_ASSERT(i < d->ops->num_queues);
		FUZZ_ASSERT(q->size && q->size <= d->ops->queue_max && !(q->size & (q->size - 1)));
		FUZZ_ASSERT(guest_mem_ptr(gm, q->desc_gpa, virtq_desc_bytes(q->size)) &&
			    guest_mem_ptr(gm, q->avail_gpa, virtq_avail_bytes(q->size)) &&
			    guest_mem_ptr(gm, q->used_gpa, virtq_used_bytes(q->size)));
	}
}

/*
 * A snapshot of the transport and the device, one byte damaged (the state
 * file's checksum stops accidents, not a hand-edited file), restored:
 * refused, or every invariant holds again (restore re-validates).
 */
static void save_restore(struct virtio_mmio *m, struct virtio_dev *d, uint8_t where, uint32_t v)
{
	static uint8_t dev_state[65536];
	struct virtio_mmio_state st;
	long n = 0;
	int r;

	/* In vm_snapshot's order: the device may hand held chains back first. */
	if (d->ops->save) {
		pthread_mutex_lock(&d->lock);
		n = d->ops->save(d, dev_state, sizeof(dev_state));
		pthread_mutex_unlock(&d->lock);
		FUZZ_ASSERT(n >= 0 && (size_t)n <= sizeof(dev_state));
	}
	virtio_mmio_save(m, &st);
	if (v & 0x100)
		((uint8_t *)&st)[(v >> 9) % sizeof(st)] ^= (uint8_t)(where | 1);
	else if (n > 0)
		dev_state[(v >> 9) % (uint32_t)n] ^= (uint8_t)(where | 1);
	r = virtio_mmio_restore(m, &st);
	FUZZ_ASSERT(r == 0 || r == -EINVAL);
	if (d->ops->restore) {
		pthread_mutex_lock(&d->lock);
		r = d->ops->restore(d, dev_state, (size_t)n);
		pthread_mutex_unlock(&d->lock);
		FUZZ_ASSERT(r == 0 || r == -EINVAL);
	}
}

/* One frame the device handed its backend. */
static void peer_frame(const uint8_t *f, size_t len)
{
	FUZZ_ASSERT(len >= NET_MIN_FRAME && len <= NET_MAX_FRAME);
	peer.tx_frames++;
	/* Anti-spoofing: nothing leaves with another source MAC. */
	if (peer.filter)
		FUZZ_ASSERT(!memcmp(f + 6, fuzz_guest_mac, 6));
}

/* What the device sent to passt: cut into frames and dropped, so its socket never fills. */
static void drain_peer(void)
{
	ssize_t got;

	while (peer.fd >= 0 &&
	       (got = read(peer.fd, peer.tx + peer.tx_n, sizeof(peer.tx) - peer.tx_n)) > 0) {
		size_t at = 0;

		peer.tx_n += (size_t)got;
		while (peer.tx_n - at >= PASST_HDR) {
			const uint8_t *h = peer.tx + at;
			size_t len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 |
				h[3];

			FUZZ_ASSERT(len <= NET_MAX_FRAME); /* or the stream is out of step */
			if (peer.tx_n - at - PASST_HDR < len)
				break;
			peer_frame(h + PASST_HDR, len);
			at += PASST_HDR + len;
		}
		memmove(peer.tx, peer.tx + at, peer.tx_n - at);
		peer.tx_n -= at;
	}
}

/* The filtered device's extra operations (a notify of a queue it has not). */
static void filter_op(struct virtio_dev *d, uint32_t v)
{
	if (v % 4 == 2) {
		size_t cut;

		FUZZ_ASSERT(virtio_net_filter_replace(d, fuzz_rules_canned(v >> 8), &cut) == 0);
	} else if (v % 4 == 3) {
		size_t n = (v >> 8) & 0xffff;
		ssize_t w;

		if (n > peer.rx_n)
			n = peer.rx_n;
		w = n ? write(peer.fd, peer.rx, n) : 0;
		if (w > 0) {
			peer.rx += w;
			peer.rx_n -= (size_t)w;
		}
	}
}

/*
 * The filter decides every frame both ways: its drops are the device's
 * "filtered" counts, and the device delivers no more than it passed.
 */
static void check_filter(struct virtio_dev *d)
{
	uint64_t pass[2] = { 0, 0 }, drop[2] = { 0, 0 }, steer;
	struct virtio_net_stats st;
	struct nf_counters k;

	virtio_net_stats(d, &st);
	net_filter_counters(peer.filter, &k);
	for (int dir = 0; dir < 2; dir++)
		for (int i = 0; i < NF_STEER_NEW; i++)
			*(i < NF_DROP_RATE ? &pass[dir] : &drop[dir]) += k.packets[dir][i];
	/* Steered frames (canned `http` rules) with no egress proxy: refused
	 * with a reset, counted as filtered. */
	steer = k.packets[NF_EGRESS][NF_STEER_NEW] + k.packets[NF_EGRESS][NF_STEER_FLOW];
	FUZZ_ASSERT(k.packets[NF_INGRESS][NF_STEER_NEW] + k.packets[NF_INGRESS][NF_STEER_FLOW] ==
		    0);
	FUZZ_ASSERT(st.tx_steered == 0 && st.rx_steered == 0);
	FUZZ_ASSERT(drop[NF_EGRESS] + steer == st.tx_filtered &&
		    drop[NF_INGRESS] == st.rx_filtered);
	FUZZ_ASSERT(st.tx_frames <= pass[NF_EGRESS] && peer.tx_frames <= pass[NF_EGRESS]);
	/* ... plus the resets and probes it makes up (tcp_reset.h), at most
	 * one reset per untracked guest segment (or steered SYN). */
	FUZZ_ASSERT(st.rx_frames + st.rx_dropped <=
		    pass[NF_INGRESS] + st.tcp_resets + st.tcp_probes);
	FUZZ_ASSERT(st.tcp_resets + st.tcp_resets_lost <=
		    k.packets[NF_EGRESS][NF_DROP_TCP_STATE] + steer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct guest_mem gm;
	struct virtio_mmio m;
	struct virtio_dev *d;
	size_t nops, got;
	const uint8_t *ops, *ram;
	uint8_t dev;
	int kind;

	if (setup_once() || event_loop_create(&loop))
		abort();
	dev = take8(&in);
	kind = dev & 0x80 ? DEV_NET_FILTER : dev % DEV_COUNT;
	d = create(kind, dev);
	nops = take8(&in);
	ops = take_bytes(&in, nops * 6, &got);
	nops = got / 6;
	if (kind == DEV_NET_FILTER)
		peer.rx = take_bytes(&in, take16(&in), &peer.rx_n);
	ram = take_bytes(&in, RAM_LOW + RAM_HIGH, &got);
	if (fuzz_ram_init(&gm, RAM_LOW, RAM_HIGH))
		abort();
	memcpy(gm.host, ram, got);
	d->raise_irq = count_irq;
	virtio_mmio_init(&m, d, &gm, 0xd0000000, 5);

	for (size_t i = 0; i < nops; i++) {
		const uint8_t *op = ops + 6 * i;
		uint32_t v = (uint32_t)op[2] | (uint32_t)op[3] << 8 | (uint32_t)op[4] << 16 |
			(uint32_t)op[5] << 24;
		uint8_t b[8];
		uint32_t sz = 1u << ((v >> 30) & 3); /* 1, 2, 4 or 8 bytes */

		memcpy(b, &v, 4);
		memcpy(b + 4, &v, 4);
		switch (op[0] % 9) {
		case 0:
			wr(&m, (uint64_t)op[1] * 4, v);
			if (op[1] * 4 == VMMIO_STATUS && v == 0) {
				FUZZ_ASSERT(rd(&m, VMMIO_STATUS) == 0 && d->driver_features == 0);
				for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
					FUZZ_ASSERT(!d->vq[q].ready);
			}
			break;
		case 1:
			rd(&m, (uint64_t)op[1] * 4);
			break;
		case 2:
			virtio_mmio_io(&m, VMMIO_CONFIG + op[1], b, sz, 1);
			break;
		case 3:
			virtio_mmio_io(&m, VMMIO_CONFIG + op[1], b, sz, 0);
			break;
		case 4:
			bring_up(&m, d, v);
			break;
		case 5:
			wr(&m, VMMIO_QUEUE_NOTIFY, v % 4);
			if (kind == DEV_NET_FILTER)
				filter_op(d, v);
			break;
		case 6: /* a misaligned or odd-sized register access */
			virtio_mmio_io(&m, (uint64_t)op[1] * 4 + (v & 3), b, sz, (v >> 2) & 1);
			break;
		case 7: /* the guest rewrites RAM (a ring index, a descriptor) */
			guest_mem_write(&gm, v & 0xffff, op + 1, 1);
			break;
		case 8:
			save_restore(&m, d, op[1], v);
			break;
		}
		check(&m, d, &gm);
		drain_peer();
		if (peer.filter)
			check_filter(d);
	}
	d->ops->destroy(d);
	if (peer.fd >= 0)
		close(peer.fd);
	peer.fd = -1;
	peer.filter = NULL;
	peer.tx_n = peer.tx_frames = peer.rx_n = 0;
	event_loop_destroy(loop);
	loop = NULL;
	fuzz_ram_free(&gm);
	return 0;
}

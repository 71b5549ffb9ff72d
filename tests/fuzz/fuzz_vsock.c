/*
 * fuzz_vsock: the virtio-vsock stream protocol (devices/vsock/vsock_proto.c)
 * driven as the device drives it: guest packets (any header, any payload
 * length), host clients connecting with any CONNECT line, the host taking
 * buffered data, host EOF, and the rx pump sending control packets, RSTs
 * and payload within the guest's credit.
 *
 * Input: operations, [op][44-byte header or argument bytes].
 * Invariants: the live count matches the table and its limit; a slot
 * holds only a live connection, which knows its slot; no two live
 * connections share (local, peer) ports; guest data is only buffered within
 * the credit we granted (rx_cnt - fwd_cnt == buffered <= VSOCK_BUF_SIZE);
 * we never send more than the guest's free credit; an RST is never
 * answered; RSTs go to the guest; the RST ring stays within its size (and
 * grows to no more than VSOCK_RST_QUEUE); every packet we build is from
 * the host CID to the guest's and passes the header check itself; clearing
 * the table frees everything.
 */
#include <errno.h>

#include "devices/vsock/vsock_proto.h"
#include "fuzz.h"

#define GUEST_CID 3

static struct vsock_table t;
static uint8_t payload[VSOCK_MAX_PAYLOAD];

static void check_table(void)
{
	static int est[VSOCK_MAX_CONNS];
	unsigned live = 0, n = 0;

	FUZZ_ASSERT(t.rst_len <= t.rst_cap && t.rst_cap <= VSOCK_RST_QUEUE);
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		const struct vsock_conn *c = t.conn[i];

		if (!c)
			continue;
		live++;
		FUZZ_ASSERT(c->slot == (unsigned)i);
		FUZZ_ASSERT(c->state > VSOCK_FREE && c->state <= VSOCK_ESTABLISHED);
		FUZZ_ASSERT(c->buf_len <= VSOCK_BUF_SIZE && c->buf_head < VSOCK_BUF_SIZE);
		FUZZ_ASSERT((uint32_t)(c->rx_cnt - c->fwd_cnt) == c->buf_len);
		FUZZ_ASSERT(vsock_conn_credit(c) <= VSOCK_MAX_PAYLOAD);
		if (vsock_conn_credit(c))
			FUZZ_ASSERT(vsock_conn_credit(c) <=
				    c->peer_buf_alloc - (c->tx_cnt - c->peer_fwd_cnt));
		FUZZ_ASSERT(c->hello_len <= VSOCK_CONNECT_MAX);
		if (c->state == VSOCK_HOST_HELLO)
			continue;
		for (unsigned j = 0; j < n; j++) {
			const struct vsock_conn *d = t.conn[est[j]];

			FUZZ_ASSERT(d->local_port != c->local_port || d->peer_port != c->peer_port);
		}
		est[n++] = i;
	}
	FUZZ_ASSERT(live == t.count && live <= VSOCK_MAX_CONNS);
}

/* A packet we send: from the host to the guest, and sane by our own rules. */
static void check_sent(const struct vsock_hdr *h, uint64_t len)
{
	struct vsock_hdr back = *h;

	FUZZ_ASSERT(h->src_cid == VSOCK_HOST_CID && h->dst_cid == GUEST_CID);
	FUZZ_ASSERT(h->type == VSOCK_TYPE_STREAM && h->len == len && len <= VSOCK_MAX_PAYLOAD);
	FUZZ_ASSERT(h->op >= VSOCK_OP_REQUEST && h->op <= VSOCK_OP_CREDIT_REQUEST);
	/* Seen from the other side, the guest would accept its shape. */
	back.src_cid = GUEST_CID;
	back.dst_cid = VSOCK_HOST_CID;
	FUZZ_ASSERT(vsock_hdr_check(&back, GUEST_CID, len) == VSOCK_PKT_OK);
}

static void guest_packet(struct fuzz_in *in)
{
	uint8_t raw[VSOCK_HDR_SIZE];
	struct vsock_hdr h;
	struct vsock_conn *c = NULL;
	uint64_t avail;
	uint32_t room = 0;
	enum vsock_action a;
	size_t got;
	const uint8_t *p = take_bytes(in, VSOCK_HDR_SIZE, &got);

	memset(raw, 0, sizeof(raw));
	memcpy(raw, p, got);
	vsock_hdr_decode(&h, raw);
	/* Mostly from the guest to the host, so the state machine is reached. */
	if (!(h.flags & 0x80000000u)) {
		h.src_cid = GUEST_CID;
		h.dst_cid = VSOCK_HOST_CID;
		h.type = VSOCK_TYPE_STREAM;
		h.op %= 8;
		h.len %= 4096;
		h.dst_port %= 4;
		h.src_port %= 4;
	}
	avail = take8(in) & 1 ? h.len : take16(in);
	{
		struct vsock_conn *pre = vsock_conn_find(&t, h.dst_port, h.src_port);

		if (pre)
			room = vsock_conn_room(pre);
	}
	a = vsock_table_recv(&t, &h, avail, &c);
	switch (a) {
	case VSOCK_ACT_NONE:
		break;
	case VSOCK_ACT_RESET:
	case VSOCK_ACT_CLOSE:
		if (c)
			vsock_conn_free(&t, c);
		break;
	case VSOCK_ACT_CONNECT:
		FUZZ_ASSERT(c && c->state == VSOCK_CONNECTING && h.op == VSOCK_OP_REQUEST);
		if (take8(in) & 1)
			vsock_conn_accepted(c, 100);
		else
			vsock_conn_reset(&t, c);
		break;
	case VSOCK_ACT_ESTABLISHED:
		FUZZ_ASSERT(c && c->state == VSOCK_ESTABLISHED && !c->guest_initiated);
		break;
	case VSOCK_ACT_DATA:
		FUZZ_ASSERT(c && h.op == VSOCK_OP_RW && h.len <= avail && h.len <= room);
		FUZZ_ASSERT(vsock_conn_buf_put(c, payload, h.len) == 0);
		break;
	case VSOCK_ACT_UPDATE:
		FUZZ_ASSERT(c);
		if (vsock_conn_done(c))
			vsock_conn_reset(&t, c);
		break;
	}
}

static struct vsock_conn *pick(uint8_t i)
{
	return t.conn[i % 8];
}

/* What the device's rx pump sends when the guest gave it buffers. */
static void rx_pump(void)
{
	struct vsock_hdr h;

	/* An RST for a packet without a connection comes from whatever
	 * address the guest sent to (mirrored), always to the guest. */
	for (int n = 0; n < VSOCK_RST_QUEUE && vsock_table_next_rst(&t, &h); n++)
		FUZZ_ASSERT(h.op == VSOCK_OP_RST && h.dst_cid == GUEST_CID && h.len == 0 &&
			    h.type == VSOCK_TYPE_STREAM);
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = t.conn[i];

		if (!c)
			continue;
		for (int k = 0; k < 8 && vsock_conn_next_ctl(&t, c, &h); k++)
			check_sent(&h, 0);
		if (vsock_conn_want_send(c)) {
			uint32_t cr = vsock_conn_credit(c), before = c->tx_cnt;

			FUZZ_ASSERT(cr > 0);
			vsock_conn_hdr(&t, c, VSOCK_OP_RW, cr, &h);
			check_sent(&h, cr);
			FUZZ_ASSERT(c->tx_cnt == before + cr);
			c->host_readable = 0;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	int next_fd = 10;

	vsock_table_init(&t, GUEST_CID);
	while (in.n) {
		uint8_t op = take8(&in);
		struct vsock_conn *c;

		switch (op % 8) {
		case 0:
		case 1:
			guest_packet(&in);
			break;
		case 2: { /* a host client connects and sends its CONNECT line */
			char line[VSOCK_CONNECT_MAX + 8];
			size_t n = take8(&in) % sizeof(line), got;
			const uint8_t *p = take_bytes(&in, n, &got);
			uint32_t port = 0;
			long r;

			c = vsock_conn_new_host(&t, next_fd++);
			if (!c)
				break;
			FUZZ_ASSERT(c->state == VSOCK_HOST_HELLO);
			memcpy(line, p, got);
			r = vsock_connect_parse(line, got, &port);
			FUZZ_ASSERT(r >= -EINVAL && r <= (long)got);
			if (r > 0)
				vsock_conn_connect(c, port % 4);
			else
				vsock_conn_free(&t, c);
			break;
		}
		case 3: /* the host socket takes buffered guest data */
			if ((c = pick(take8(&in)))) {
				const uint8_t *p;
				uint32_t n = vsock_conn_buf_peek(c, &p), want = take16(&in);

				FUZZ_ASSERT(n <= c->buf_len);
				if (want < n)
					n = want;
				vsock_conn_buf_consume(c, n);
				vsock_conn_forwarded(c, n);
			}
			break;
		case 4:
			if ((c = pick(take8(&in))))
				vsock_conn_host_eof(c);
			break;
		case 5:
			if ((c = pick(take8(&in))))
				c->host_readable = 1;
			break;
		case 6:
			rx_pump();
			break;
		case 7: /* the host side goes away: reset */
			if ((c = pick(take8(&in))))
				vsock_conn_reset(&t, c);
			break;
		}
		check_table();
	}
	vsock_table_clear(&t);
	FUZZ_ASSERT(t.count == 0 && !t.rst && !t.rst_cap);
	return 0;
}

/*
 * vsock_proto: everything a guest writes into a vsock header is hostile;
 * the connection table is bounded; credit is never exceeded in either
 * direction; the host's CONNECT line is parsed strictly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/vsock/vsock_proto.h"
#include "heap_used.h"

#define GUEST_CID 3

static int setup(void **state)
{
	struct vsock_table *t = malloc(sizeof(*t));

	assert_non_null(t);
	vsock_table_init(t, GUEST_CID);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct vsock_table *t = *state;

	vsock_table_clear(t);
	free(t);
	return 0;
}

/* A well-formed guest packet from guest port `src` to host port `dst`. */
static struct vsock_hdr pkt(uint16_t op, uint32_t src, uint32_t dst, uint32_t len)
{
	struct vsock_hdr h = {
		.src_cid = GUEST_CID,
		.dst_cid = VSOCK_HOST_CID,
		.src_port = src,
		.dst_port = dst,
		.len = len,
		.type = VSOCK_TYPE_STREAM,
		.op = op,
		.buf_alloc = 65536,
	};
	return h;
}

static void test_hdr_wire_format(void **state)
{
	struct vsock_hdr h = pkt(VSOCK_OP_RW, 0x11223344, 0x55667788, 0x99), back;
	uint8_t raw[VSOCK_HDR_SIZE];

	(void)state;
	h.fwd_cnt = 0xa1b2c3d4;
	vsock_hdr_encode(raw, &h);
	/* virtio 1.2 5.10.6: le64 src_cid, le64 dst_cid, le32 ports, len ... */
	assert_int_equal(raw[0], GUEST_CID);
	assert_int_equal(raw[8], VSOCK_HOST_CID);
	assert_int_equal(raw[16], 0x44);
	assert_int_equal(raw[19], 0x11);
	assert_int_equal(raw[24], 0x99);
	assert_int_equal(raw[28], VSOCK_TYPE_STREAM);
	assert_int_equal(raw[30], VSOCK_OP_RW);
	assert_int_equal(raw[43], 0xa1);
	vsock_hdr_decode(&back, raw);
	assert_int_equal(back.src_cid, h.src_cid);
	assert_int_equal(back.dst_cid, h.dst_cid);
	assert_int_equal(back.src_port, h.src_port);
	assert_int_equal(back.dst_port, h.dst_port);
	assert_int_equal(back.len, h.len);
	assert_int_equal(back.type, h.type);
	assert_int_equal(back.op, h.op);
	assert_int_equal(back.flags, h.flags);
	assert_int_equal(back.buf_alloc, h.buf_alloc);
	assert_int_equal(back.fwd_cnt, h.fwd_cnt);
}

static void test_hdr_check_hostile(void **state)
{
	struct vsock_hdr h = pkt(VSOCK_OP_RW, 1, 2, 100);

	(void)state;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_OK);
	/* Spoofed source CID (the host's own, another guest's, garbage). */
	h.src_cid = VSOCK_HOST_CID;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_DROP);
	h.src_cid = 0xffffffffffffffffULL;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_DROP);
	h = pkt(VSOCK_OP_RW, 1, 2, 100);
	h.dst_cid = 4; /* another VM: not routable here */
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_RST);
	h.dst_cid = (1ULL << 32) | VSOCK_HOST_CID; /* high bits must not be ignored */
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_RST);
	h = pkt(VSOCK_OP_RW, 1, 2, 100);
	h.type = 2; /* SEQPACKET was not offered */
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_RST);
	h.type = 0xffff;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_RST);
	h = pkt(VSOCK_OP_INVALID, 1, 2, 0);
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 0), VSOCK_PKT_RST);
	h.op = 8;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 0), VSOCK_PKT_RST);
	h.op = 0xffff;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 0), VSOCK_PKT_RST);
	/* len beyond the descriptors, beyond the maximum, the maximum itself. */
	h = pkt(VSOCK_OP_RW, 1, 2, 101);
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 100), VSOCK_PKT_RST);
	h.len = 0xffffffff;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 1ULL << 40), VSOCK_PKT_RST);
	h.len = VSOCK_MAX_PAYLOAD + 1;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 1ULL << 40), VSOCK_PKT_RST);
	h.len = VSOCK_MAX_PAYLOAD;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, VSOCK_MAX_PAYLOAD), VSOCK_PKT_OK);
	/* A bad RST is dropped, never answered. */
	h = pkt(VSOCK_OP_RST, 1, 2, 5);
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 0), VSOCK_PKT_DROP);
	h = pkt(VSOCK_OP_RST, 1, 2, 0);
	h.type = 9;
	assert_int_equal(vsock_hdr_check(&h, GUEST_CID, 0), VSOCK_PKT_DROP);
}

/* Bad and unroutable packets get RST with mirrored addresses; spoofed
 * ones and RSTs get nothing. */
static void test_recv_rst_replies(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c;
	struct vsock_hdr h = pkt(VSOCK_OP_RW, 1000, 77, 0), r;

	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	assert_null(c);
	assert_int_equal(vsock_table_next_rst(t, &r), 1);
	assert_int_equal(r.op, VSOCK_OP_RST);
	assert_int_equal(r.src_cid, VSOCK_HOST_CID);
	assert_int_equal(r.dst_cid, GUEST_CID);
	assert_int_equal(r.src_port, 77);
	assert_int_equal(r.dst_port, 1000);
	assert_int_equal(r.len, 0);

	h = pkt(VSOCK_OP_REQUEST, 1000, 77, 0);
	h.dst_cid = 9;
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	assert_int_equal(vsock_table_next_rst(t, &r), 1);
	assert_int_equal(r.src_cid, 9); /* so the guest finds its socket */

	h = pkt(VSOCK_OP_REQUEST, 1000, 77, 0);
	h.src_cid = 4;
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_NONE);
	h = pkt(VSOCK_OP_RST, 1000, 77, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_NONE);
	assert_int_equal(vsock_table_next_rst(t, &r), 0);
	assert_int_equal(t->count, 0);
}

static struct vsock_conn *guest_conn(struct vsock_table *t, uint32_t gport, uint32_t hport)
{
	struct vsock_hdr h = pkt(VSOCK_OP_REQUEST, gport, hport, 0);
	struct vsock_conn *c;

	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_CONNECT);
	assert_non_null(c);
	vsock_conn_accepted(c, 100);
	return c;
}

static void test_guest_request_response(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = guest_conn(t, 5000, 1024);
	struct vsock_hdr h;

	assert_int_equal(c->state, VSOCK_ESTABLISHED);
	assert_int_equal(c->local_port, 1024);
	assert_int_equal(c->peer_port, 5000);
	assert_ptr_equal(vsock_conn_find(t, 1024, 5000), c);
	assert_ptr_equal(vsock_conn_find_fd(t, 100), c);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 1);
	assert_int_equal(h.op, VSOCK_OP_RESPONSE);
	assert_int_equal(h.src_port, 1024);
	assert_int_equal(h.dst_port, 5000);
	assert_int_equal(h.dst_cid, GUEST_CID);
	assert_int_equal(h.buf_alloc, VSOCK_BUF_SIZE);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 0);

	/* A second REQUEST on a live connection resets it. */
	h = pkt(VSOCK_OP_REQUEST, 5000, 1024, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	assert_non_null(c);
	assert_int_equal(vsock_table_next_rst(t, &h), 1);
	assert_int_equal(h.src_port, 1024);
	assert_int_equal(h.dst_port, 5000);
	vsock_conn_free(t, c);
	assert_int_equal(t->count, 0);

	/* Refused by the host (nobody listens): RST, slot freed. */
	h = pkt(VSOCK_OP_REQUEST, 5001, 1025, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_CONNECT);
	vsock_conn_reset(t, c);
	assert_int_equal(t->count, 0);
	assert_int_equal(vsock_table_next_rst(t, &h), 1);
	assert_int_equal(h.src_port, 1025);
	assert_int_equal(h.dst_port, 5001);
}

static void test_host_initiated(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = vsock_conn_new_host(t, 7), *c2 = vsock_conn_new_host(t, 8);
	struct vsock_hdr h;

	assert_non_null(c);
	assert_non_null(c2);
	assert_int_equal(c->state, VSOCK_HOST_HELLO);
	assert_true(c->local_port >= VSOCK_LOCAL_PORT_BASE);
	assert_int_not_equal(c->local_port, c2->local_port);
	/* Nothing goes to the guest before the CONNECT line, not even RST. */
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 0);

	vsock_conn_connect(c, 52);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 1);
	assert_int_equal(h.op, VSOCK_OP_REQUEST);
	assert_int_equal(h.src_cid, VSOCK_HOST_CID);
	assert_int_equal(h.src_port, c->local_port);
	assert_int_equal(h.dst_port, 52);

	/* Data before RESPONSE is a protocol error. */
	h = pkt(VSOCK_OP_RW, 52, c->local_port, 10);
	assert_int_equal(vsock_table_recv(t, &h, 10, &c), VSOCK_ACT_RESET);
	vsock_conn_free(t, c);
	vsock_table_next_rst(t, &h);

	vsock_conn_connect(c2, 53);
	h = pkt(VSOCK_OP_RESPONSE, 53, c2->local_port, 0);
	h.buf_alloc = 1234;
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_ESTABLISHED);
	assert_ptr_equal(c, c2);
	assert_int_equal(c2->state, VSOCK_ESTABLISHED);
	assert_int_equal(c2->peer_buf_alloc, 1234);
	/* A second RESPONSE is not expected: reset. */
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	vsock_conn_free(t, c);

	/* A guest RESPONSE to a guest-initiated connection: reset too. */
	c = guest_conn(t, 9, 10);
	h = pkt(VSOCK_OP_RESPONSE, 9, 10, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	vsock_conn_free(t, c);

	/* Guest RST closes without an answer. */
	c = guest_conn(t, 11, 12);
	h = pkt(VSOCK_OP_RST, 11, 12, 0);
	while (vsock_table_next_rst(t, &h))
		;
	h = pkt(VSOCK_OP_RST, 11, 12, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_CLOSE);
	vsock_conn_free(t, c);
	assert_int_equal(vsock_table_next_rst(t, &h), 0);
	assert_int_equal(t->count, 0);
}

/* VSOCK_MAX_CONNS connections, then RST for the next REQUEST and no slot
 * for the next host client. */
static void test_connection_limit(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c;
	struct vsock_hdr h;

	for (uint32_t i = 0; i < VSOCK_MAX_CONNS; i++)
		guest_conn(t, 2000 + i, 1024);
	assert_int_equal(t->count, VSOCK_MAX_CONNS);
	h = pkt(VSOCK_OP_REQUEST, 9999, 1024, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	assert_null(c);
	assert_int_equal(vsock_table_next_rst(t, &h), 1);
	assert_int_equal(h.dst_port, 9999);
	assert_null(vsock_conn_new_host(t, 5));
	/* One closes, one more fits. */
	c = vsock_conn_find(t, 1024, 2000);
	vsock_conn_free(t, c);
	assert_non_null(vsock_conn_new_host(t, 5));
	assert_int_equal(t->count, VSOCK_MAX_CONNS);
}

/* Host → guest: never more than the guest's free credit. */
static void test_credit_to_guest(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = guest_conn(t, 1, 2), *cp;
	struct vsock_hdr h = pkt(VSOCK_OP_CREDIT_UPDATE, 1, 2, 0);

	h.buf_alloc = 1000;
	assert_int_equal(vsock_table_recv(t, &h, 0, &cp), VSOCK_ACT_NONE);
	assert_int_equal(vsock_conn_credit(c), 1000);
	vsock_conn_hdr(t, c, VSOCK_OP_RW, 600, &h);
	assert_int_equal(vsock_conn_credit(c), 400);
	vsock_conn_hdr(t, c, VSOCK_OP_RW, 400, &h);
	assert_int_equal(vsock_conn_credit(c), 0);
	c->host_readable = 1;
	assert_false(vsock_conn_want_send(c)); /* readable, but no credit */
	/* The guest consumed 600: exactly 600 more. */
	h = pkt(VSOCK_OP_CREDIT_UPDATE, 1, 2, 0);
	h.buf_alloc = 1000;
	h.fwd_cnt = 600;
	vsock_table_recv(t, &h, 0, &cp);
	assert_int_equal(vsock_conn_credit(c), 600);
	assert_true(vsock_conn_want_send(c));
	/* Shrinking buf_alloc below what is in flight: no credit, no wrap. */
	h.buf_alloc = 100;
	vsock_table_recv(t, &h, 0, &cp);
	assert_int_equal(vsock_conn_credit(c), 0);
	/* A guest claiming to have consumed more than we sent gets nothing. */
	h.buf_alloc = 1000;
	h.fwd_cnt = 5000;
	vsock_table_recv(t, &h, 0, &cp);
	assert_int_equal(vsock_conn_credit(c), 0);
	/* A huge buffer still means one packet at a time. */
	h.buf_alloc = 0xffffffff;
	h.fwd_cnt = 1000;
	vsock_table_recv(t, &h, 0, &cp);
	assert_int_equal(vsock_conn_credit(c), VSOCK_MAX_PAYLOAD);
	/* Counters wrap modulo 2^32 (5.10.6.3). */
	c->tx_cnt = 0xfffffff0;
	h.buf_alloc = 100;
	h.fwd_cnt = 0xffffffe0;
	vsock_table_recv(t, &h, 0, &cp);
	assert_int_equal(vsock_conn_credit(c), 84);
	vsock_conn_hdr(t, c, VSOCK_OP_RW, 84, &h);
	assert_int_equal(c->tx_cnt, 0x44);
	assert_int_equal(vsock_conn_credit(c), 0);
	/* The guest said it receives no more: nothing is sent. */
	h.fwd_cnt = 0x44;
	h = pkt(VSOCK_OP_SHUTDOWN, 1, 2, 0);
	h.flags = VSOCK_SHUTDOWN_RCV;
	h.buf_alloc = 100;
	h.fwd_cnt = 0x44;
	assert_int_equal(vsock_table_recv(t, &h, 0, &cp), VSOCK_ACT_UPDATE);
	assert_int_equal(vsock_conn_credit(c), 100);
	assert_false(vsock_conn_want_send(c));
}

/* Guest → host: the guest may fill exactly our buffer, not a byte more,
 * and hears about freed space. */
static void test_credit_from_guest(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = guest_conn(t, 1, 2), *cp;
	struct vsock_hdr h;
	uint8_t chunk[VSOCK_MAX_PAYLOAD];

	memset(chunk, 0xab, sizeof(chunk));
	vsock_conn_next_ctl(t, c, &h); /* RESPONSE */
	for (int i = 0; i < VSOCK_BUF_SIZE / VSOCK_MAX_PAYLOAD; i++) {
		h = pkt(VSOCK_OP_RW, 1, 2, VSOCK_MAX_PAYLOAD);
		assert_int_equal(vsock_table_recv(t, &h, VSOCK_MAX_PAYLOAD, &cp), VSOCK_ACT_DATA);
		assert_int_equal(vsock_conn_buf_put(c, chunk, VSOCK_MAX_PAYLOAD), 0);
	}
	assert_int_equal(vsock_conn_room(c), 0);
	assert_int_equal(c->buf_len, VSOCK_BUF_SIZE);
	/* One more byte is beyond the credit we granted: reset. */
	h = pkt(VSOCK_OP_RW, 1, 2, 1);
	assert_int_equal(vsock_table_recv(t, &h, 1, &cp), VSOCK_ACT_RESET);
	assert_ptr_equal(cp, c);
	assert_int_equal(vsock_conn_buf_put(c, chunk, 1), -ENOSPC);
	vsock_table_next_rst(t, &h);
	vsock_conn_free(t, c);

	c = guest_conn(t, 1, 2);
	vsock_conn_next_ctl(t, c, &h);
	for (int i = 0; i < VSOCK_BUF_SIZE / VSOCK_MAX_PAYLOAD; i++) {
		h = pkt(VSOCK_OP_RW, 1, 2, VSOCK_MAX_PAYLOAD);
		assert_int_equal(vsock_table_recv(t, &h, VSOCK_MAX_PAYLOAD, &cp), VSOCK_ACT_DATA);
	}
	/* A little consumed while the guest thinks we are full: tell it. */
	vsock_conn_forwarded(c, 100);
	assert_true(c->send_ctl & VSOCK_SEND_CREDIT);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 1);
	assert_int_equal(h.op, VSOCK_OP_CREDIT_UPDATE);
	assert_int_equal(h.fwd_cnt, 100);
	assert_int_equal(h.buf_alloc, VSOCK_BUF_SIZE);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 0);
	assert_int_equal(vsock_conn_room(c), 100);

	/* With plenty of room in the guest's view, small progress is quiet... */
	vsock_conn_forwarded(c, VSOCK_BUF_SIZE - 100 - VSOCK_MAX_PAYLOAD);
	vsock_conn_next_ctl(t, c, &h); /* that one crossed a quarter: sent */
	vsock_conn_forwarded(c, 1000);
	assert_false(c->send_ctl & VSOCK_SEND_CREDIT);
	/* ...until the guest asks. */
	h = pkt(VSOCK_OP_CREDIT_REQUEST, 1, 2, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &cp), VSOCK_ACT_NONE);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 1);
	assert_int_equal(h.op, VSOCK_OP_CREDIT_UPDATE);
	assert_int_equal(h.fwd_cnt, c->fwd_cnt);
	/* Any packet we send carries the credit, so none is owed after it. */
	vsock_conn_forwarded(c, VSOCK_BUF_SIZE / 4);
	assert_true(c->send_ctl & VSOCK_SEND_CREDIT);
	vsock_conn_hdr(t, c, VSOCK_OP_RW, 1, &h);
	assert_false(c->send_ctl & VSOCK_SEND_CREDIT);
}

static void test_shutdown_and_done(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = guest_conn(t, 1, 2), *cp;
	struct vsock_hdr h;

	vsock_conn_next_ctl(t, c, &h);
	assert_false(vsock_conn_done(c));
	vsock_conn_host_eof(c);
	assert_int_equal(vsock_conn_next_ctl(t, c, &h), 1);
	assert_int_equal(h.op, VSOCK_OP_SHUTDOWN);
	assert_int_equal(h.flags, VSOCK_SHUTDOWN_SEND);
	assert_false(vsock_conn_done(c)); /* the guest may still send */
	h = pkt(VSOCK_OP_RW, 1, 2, 3);
	assert_int_equal(vsock_table_recv(t, &h, 3, &cp), VSOCK_ACT_DATA);
	vsock_conn_buf_put(c, "abc", 3);
	h = pkt(VSOCK_OP_SHUTDOWN, 1, 2, 0);
	h.flags = VSOCK_SHUTDOWN_SEND | 0xf0; /* unknown flag bits are ignored */
	assert_int_equal(vsock_table_recv(t, &h, 0, &cp), VSOCK_ACT_UPDATE);
	assert_int_equal(c->peer_shutdown, VSOCK_SHUTDOWN_SEND);
	assert_false(vsock_conn_done(c)); /* "abc" not delivered yet */
	vsock_conn_buf_consume(c, 3);
	assert_true(vsock_conn_done(c));
	/* Data after the guest's SHUTDOWN(SEND): reset. */
	h = pkt(VSOCK_OP_RW, 1, 2, 1);
	assert_int_equal(vsock_table_recv(t, &h, 1, &cp), VSOCK_ACT_RESET);
	vsock_conn_free(t, cp);

	c = guest_conn(t, 3, 4);
	h = pkt(VSOCK_OP_SHUTDOWN, 3, 4, 0);
	h.flags = VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND;
	assert_int_equal(vsock_table_recv(t, &h, 0, &cp), VSOCK_ACT_UPDATE);
	assert_true(vsock_conn_done(c));
}

static void test_buffer_ring(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c = guest_conn(t, 1, 2);
	static uint8_t big[VSOCK_BUF_SIZE];
	const uint8_t *p;
	uint32_t n;

	assert_null(c->buf); /* idle connections own no buffer */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	assert_int_equal(vsock_conn_buf_put(c, big, VSOCK_BUF_SIZE - 10), 0);
	vsock_conn_buf_consume(c, VSOCK_BUF_SIZE - 20);
	/* 10 bytes left at the end; 30 more wrap around. */
	assert_int_equal(vsock_conn_buf_put(c, big + 1000, 30), 0);
	assert_int_equal(c->buf_len, 40);
	n = vsock_conn_buf_peek(c, &p);
	assert_int_equal(n, 20);
	assert_memory_equal(p, big + VSOCK_BUF_SIZE - 20, 10);
	assert_memory_equal(p + 10, big + 1000, 10);
	vsock_conn_buf_consume(c, n);
	n = vsock_conn_buf_peek(c, &p);
	assert_int_equal(n, 20);
	assert_memory_equal(p, big + 1010, 20);
	assert_int_equal(vsock_conn_buf_put(c, big, VSOCK_BUF_SIZE - 19), -ENOSPC);
	vsock_conn_buf_consume(c, n);
	assert_null(c->buf);
	assert_int_equal(vsock_conn_buf_peek(c, &p), 0);
}

static void test_rst_ring_bounded(void **state)
{
	struct vsock_table *t = *state;
	struct vsock_conn *c;
	struct vsock_hdr h;
	int n = 0;

	for (int i = 0; i < VSOCK_RST_QUEUE + 50; i++) {
		h = pkt(VSOCK_OP_RW, (uint32_t)i, 1, 0);
		assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	}
	assert_int_equal(t->rst_len, VSOCK_RST_QUEUE);
	assert_int_equal(t->rst_dropped, 50);
	while (vsock_table_next_rst(t, &h)) {
		assert_int_equal(h.dst_port, (uint32_t)n);
		n++;
	}
	assert_int_equal(n, VSOCK_RST_QUEUE);
}

/*
 * Memory follows the connections: a table without any holds little more
 * than itself (not VSOCK_MAX_CONNS connections in place: 38 KiB of every
 * kiln-vmm); each connection's memory comes with it and goes when it
 * closes; the limit still refuses the next one; the RSTs of closed
 * connections take a small ring; clearing frees everything.
 */
static void test_connection_memory(void **state)
{
	struct vsock_table *t = malloc(sizeof(*t));
	size_t base = heap_used(), one;
	struct vsock_conn *c;
	struct vsock_hdr h;

	(void)state;
	assert_non_null(t);
	vsock_table_init(t, GUEST_CID);
	assert_true(sizeof(*t) <= 4096);
	assert_int_equal(heap_used(), base);

	c = guest_conn(t, 1, 2);
	one = heap_used() - base;
	assert_true(one >= sizeof(*c) && one <= 2 * sizeof(*c));
	vsock_conn_free(t, c);
	assert_int_equal(heap_used(), base);

	for (uint32_t i = 0; i < VSOCK_MAX_CONNS; i++)
		guest_conn(t, 2000 + i, 1024);
	assert_int_equal(heap_used() - base, VSOCK_MAX_CONNS * one);
	h = pkt(VSOCK_OP_REQUEST, 9999, 1024, 0);
	assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
	assert_null(c);
	assert_null(vsock_conn_new_host(t, 5));
	assert_true(heap_used() - base <= VSOCK_MAX_CONNS * one + VSOCK_RST_FIRST * 16);
	assert_int_equal(vsock_table_next_rst(t, &h), 1);

	/* Each closes with an RST, one at a time as a guest takes them. */
	for (uint32_t i = 0; i < VSOCK_MAX_CONNS; i++) {
		vsock_conn_reset(t, vsock_conn_find(t, 1024, 2000 + i));
		assert_int_equal(vsock_table_next_rst(t, &h), 1);
		assert_int_equal(h.dst_port, 2000 + i);
	}
	assert_int_equal(t->count, 0);
	assert_true(heap_used() - base <= VSOCK_RST_FIRST * 16);
	vsock_table_clear(t);
	assert_int_equal(heap_used(), base);
	free(t);
}

/* The RST ring is allocated at the first RST and doubles, keeping the
 * order, only while RSTs pile up (here wrapped around when it grows),
 * up to VSOCK_RST_QUEUE. */
static void test_rst_ring_grows_in_order(void **state)
{
	struct vsock_table *t = *state;
	uint32_t in = 0, out = 0;
	struct vsock_conn *c;
	struct vsock_hdr h;

	assert_null(t->rst);
	assert_int_equal(t->rst_cap, 0);
	for (int round = 0; round < 3; round++) {
		int push = round == 0 ? 10 : round == 1 ? 12 : VSOCK_RST_QUEUE;
		int take = round == 0 ? 6 : 0;

		for (int i = 0; i < push; i++) {
			h = pkt(VSOCK_OP_RW, in++, 1, 0);
			assert_int_equal(vsock_table_recv(t, &h, 0, &c), VSOCK_ACT_RESET);
		}
		if (round == 1) {
			/* 16 queued, wrapped at the ring's end: full, not grown */
			assert_int_equal(t->rst_cap, VSOCK_RST_FIRST);
			assert_int_equal(t->rst_len, VSOCK_RST_FIRST);
			assert_true(t->rst_head > 0);
		}
		for (int i = 0; i < take; i++) {
			assert_int_equal(vsock_table_next_rst(t, &h), 1);
			assert_int_equal(h.dst_port, out++);
		}
	}
	assert_int_equal(t->rst_cap, VSOCK_RST_QUEUE);
	assert_int_equal(t->rst_len, VSOCK_RST_QUEUE);
	assert_int_equal(t->rst_dropped, 16);
	while (vsock_table_next_rst(t, &h)) {
		assert_int_equal(h.dst_port, out);
		out++;
	}
	assert_int_equal(out, in - 16);
}

static void test_connect_parse(void **state)
{
	uint32_t port = 0;
	char longline[64];

	(void)state;
	assert_int_equal(vsock_connect_parse("CONNECT 52\n", 11, &port), 11);
	assert_int_equal(port, 52);
	assert_int_equal(vsock_connect_parse("CONNECT 0\n", 10, &port), 10);
	assert_int_equal(port, 0);
	assert_int_equal(vsock_connect_parse("CONNECT 4294967295\n", 19, &port), 19);
	assert_int_equal(port, 4294967295u);
	/* Bytes after the newline are the stream's, not the line's. */
	assert_int_equal(vsock_connect_parse("CONNECT 7\nhello", 15, &port), 10);
	assert_int_equal(port, 7);
	/* Not complete yet, but could still become valid: wait. */
	assert_int_equal(vsock_connect_parse("", 0, &port), 0);
	assert_int_equal(vsock_connect_parse("CONN", 4, &port), 0);
	assert_int_equal(vsock_connect_parse("CONNECT 52", 10, &port), 0);
	/* Wrong from the first bad byte, newline or not. */
	assert_int_equal(vsock_connect_parse("GET / HTTP/1.1", 14, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("connect 52\n", 11, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT\n", 8, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT \n", 9, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT  52\n", 12, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT 12a\n", 12, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT -1\n", 11, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT +1\n", 11, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT 52\r\n", 12, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT 5\0002\n", 11, &port), -EINVAL);
	/* Port overflow, including values that wrap a 32-bit accumulator. */
	assert_int_equal(vsock_connect_parse("CONNECT 4294967296\n", 19, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT 4294967348\n", 19, &port), -EINVAL);
	assert_int_equal(vsock_connect_parse("CONNECT 99999999999999999999\n", 29, &port), -EINVAL);
	/* Overlong: leading zeros keep the value small but not the line. */
	memset(longline, '0', sizeof(longline));
	memcpy(longline, "CONNECT ", 8);
	assert_int_equal(vsock_connect_parse(longline, VSOCK_CONNECT_MAX - 1, &port), 0);
	assert_int_equal(vsock_connect_parse(longline, VSOCK_CONNECT_MAX, &port), -EINVAL);
	longline[VSOCK_CONNECT_MAX] = '\n';
	assert_int_equal(vsock_connect_parse(longline, VSOCK_CONNECT_MAX + 1, &port), -EINVAL);
	longline[VSOCK_CONNECT_MAX - 1] = '\n';
	assert_int_equal(vsock_connect_parse(longline, VSOCK_CONNECT_MAX, &port),
			 VSOCK_CONNECT_MAX);
	assert_int_equal(port, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_wire_format),
		cmocka_unit_test(test_hdr_check_hostile),
		cmocka_unit_test_setup_teardown(test_recv_rst_replies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_request_response, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_initiated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credit_to_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credit_from_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_and_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rst_ring_bounded, setup, teardown),
		cmocka_unit_test(test_connection_memory),
		cmocka_unit_test_setup_teardown(test_rst_ring_grows_in_order, setup, teardown),
		cmocka_unit_test(test_connect_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

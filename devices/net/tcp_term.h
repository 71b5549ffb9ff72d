/*
 * tcp_term: a TCP endpoint inside kiln-vmm that terminates the guest's
 * connections, for egress steering (issue 37): the packet
 * filter gives guest TCP flows to HTTP(S) ports the verdict "steer", this
 * module answers them as if it were the remote address, and the device
 * relays each flow's byte stream to the host's egress proxy (net_steer.h
 * wires the two together for virtio-net).
 *
 * Contract:
 *  - Pure: no I/O, no clock (callers pass now_ns, CLOCK_MONOTONIC), no
 *    allocation after tcp_term_init(), so a guest opening flows cannot
 *    make the VMM allocate. At most `capacity` flows; per flow a
 *    guest->host buffer (rx) and a host->guest buffer (tx) of the sizes
 *    given at init. The buffers are allocated zeroed and untouched, so
 *    their pages cost memory only once a flow uses them.
 *  - The guest only opens flows (we are the passive end, RFC 9293 3.5):
 *    tcp_term_input() takes the guest's segments, already parsed by
 *    pkt_parse (IPv4 and IPv6; no fragments: TCP from Linux sets DF and
 *    never fragments, a fragment is dropped) and let through by the
 *    filter; the caller has checked the Ethernet source and IP source are
 *    the guest's. A bad TCP checksum drops the segment (RFC 9293 3.1).
 *  - The link is lossless and in order: the device hands the guest a
 *    frame only when it has a receive buffer, and tcp_term_next_frame()
 *    gives the next one only when asked, so nothing this side sends is
 *    lost. Hence: no retransmission queue apart from the unacknowledged
 *    bytes in tx (see stalls below), no congestion control, no RTT
 *    estimate. The SYN-ACK carries only an MSS option: no window scaling
 *    (RFC 7323: the round trip is a few microseconds inside one host, so
 *    a 64 KiB window already allows gigabytes a second), no SACK (RFC
 *    2018: nothing is lost), no timestamps (RFC 7323: no RTT to measure,
 *    and PAWS guards against old duplicates that a lossless in-order link
 *    does not make). The guest then uses none of them either.
 *  - A SYN for a new 4-tuple opens a flow when a slot is free, else it is
 *    answered with a reset (the connection fails at once, not after a
 *    minute of SYNs). Any other segment of no flow, or of a flow that has
 *    ended, is answered as a closed port would (RFC 9293 3.10.7.1); those
 *    resets wait in a queue of TCP_TERM_RST_QUEUE, beyond which they are
 *    not sent. A reset is never answered; SYN+FIN opens nothing.
 *  - Every later segment is checked as RFC 9293 3.10.7.4 says (sequence
 *    in the window, ACK not beyond what was sent, the RST, SYN and ACK
 *    checks of RFC 5961 sections 3-5); in-order payload is taken into rx
 *    up to its free space, and the advertised window is that free space
 *    (so a host side that does not read back-pressures the guest), grown
 *    only in steps (receiver SWS avoidance, RFC 9293 3.8.6.2.2). Payload
 *    beyond rcv.nxt (out of order) is not kept: a duplicate ACK tells the
 *    guest where we are (no reassembly queue the guest could fill).
 *  - Events the caller polls with tcp_term_event(), in this order per
 *    flow: OPEN (handshake done; the key names guest and remote address
 *    and port), READABLE, WRITABLE (a write found tx full; half of it is
 *    free again), EOF (the guest sent FIN; what rx holds is all there
 *    will be), CLOSED (the TCP side is over, by reset or after both
 *    FINs). A flow is the caller's from its OPEN event until
 *    tcp_term_release() or tcp_term_abort(): the slot is not reused
 *    before that, whatever the guest does. Nothing is reported for a
 *    flow that never finished its handshake.
 *  - Stalls: a flow whose sent bytes are not acknowledged, or whose data
 *    waits on the window (zero, or too short for the sender's SWS rule),
 *    for TCP_TERM_STALL_NS is rewound to the first unacknowledged byte
 *    and sent again by tcp_term_expire() (with a window probe, RFC 9293
 *    3.8.6.1, when the window is zero or nothing is in flight). Not for
 *    loss on the link (there is none) but for a guest that drops
 *    in-window data under memory pressure, and a window update the
 *    filter did not pass; without it such a flow would wait for its idle
 *    timeout.
 *  - Timeouts (tcp_term_expire(), idle: no accepted segment or keepalive
 *    and no host read or write): below. A flow that times out after the handshake is
 *    reset toward the guest and reported CLOSED. A flow the caller
 *    released has TCP_TERM_TO_HALF_CLOSED, and only the guest's progress
 *    (acknowledging our bytes or FIN) restarts it: keepalives or a zero
 *    window answered probe after probe cannot hold a slot the host let go.
 *  - ISNs are RFC 6528's: SipHash of the 4-tuple under a key the caller
 *    picks at random, plus a 4 microsecond clock; a different input from
 *    the table's chains, so an ISN tells the guest nothing of them.
 */
#ifndef KILN_TCP_TERM_H
#define KILN_TCP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/net/conntrack.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_seg.h"

#define TCP_TERM_DEFAULT_CAPACITY 256
#define TCP_TERM_MAX_CAPACITY 4096
#define TCP_TERM_DEFAULT_BUF (64 * 1024)
#define TCP_TERM_MIN_BUF 4096
/* rx: the window is at most 65535 without window scaling, so more is never used. */
#define TCP_TERM_MAX_RX_BUF (64 * 1024)
#define TCP_TERM_MAX_TX_BUF (1024 * 1024)

/* The MSS we announce: a 1500-byte MTU (virtio-net without VIRTIO_NET_F_MTU)
 * less the IPv4 or IPv6 header and a 20-byte TCP header. */
#define TCP_TERM_MSS4 1460
#define TCP_TERM_MSS6 1440
/* The guest's MSS when its SYN has none (RFC 9293 3.7.1; RFC 8200's 1280 less 60). */
#define TCP_TERM_DEFAULT_MSS4 536
#define TCP_TERM_DEFAULT_MSS6 1220
/* The least MSS a guest may announce: below it, one frame per few bytes
 * (Linux's tcp_min_snd_mss is 48, for the same reason). */
#define TCP_TERM_MIN_MSS 64

/* The largest frame tcp_term_next_frame() builds. */
#define TCP_TERM_MAX_FRAME (PKT_ETH_HLEN + 1500)

#define TCP_TERM_NS(s) ((uint64_t)(s)*1000000000ULL)
/* The guest's SYN-ACK-answering ACK comes at once or never: 10 s covers a
 * guest whose first SYN-ACK was late (it retransmits its SYN after 1 s,
 * answered with the same SYN-ACK again). */
#define TCP_TERM_TO_SYN_RECEIVED TCP_TERM_NS(10)
/* Established and idle both ways (conntrack keeps such a flow 4 h; the
 * proxy holds an upstream connection for it, so less). */
#define TCP_TERM_TO_ESTABLISHED TCP_TERM_NS(2 * 3600)
/* One side has sent FIN, idle: Linux's tcp_fin_timeout is 60 s for the
 * FIN-WAIT-2 an application no longer holds; a proxy still answering a
 * half-closed request gets more. */
#define TCP_TERM_TO_HALF_CLOSED TCP_TERM_NS(240)
/* TIME-WAIT (RFC 9293 3.6 wants 2 MSL for old duplicates on a network;
 * a lossless in-order link has none, and only a retransmitted FIN of the
 * guest's is left to answer). Not refreshed by segments. */
#define TCP_TERM_TO_TIME_WAIT TCP_TERM_NS(2)
#define TCP_TERM_STALL_NS (1000000000ULL)

/* RSTs to segments of no flow (RFC 9293 3.10.7.1) waiting for the guest's
 * rx: when full, more are not answered (the guest's own segments: it loses
 * only its own answers). */
#define TCP_TERM_RST_QUEUE 16

enum tcp_term_state {
	TCP_TERM_FREE = 0,
	TCP_TERM_SYN_RECEIVED,
	TCP_TERM_ESTABLISHED,
	TCP_TERM_CLOSE_WAIT, /* the guest sent FIN */
	TCP_TERM_FIN_WAIT_1, /* we sent FIN, not yet acknowledged */
	TCP_TERM_FIN_WAIT_2, /* our FIN acknowledged, the guest still sends */
	TCP_TERM_CLOSING,    /* both FINs, ours not yet acknowledged */
	TCP_TERM_LAST_ACK,   /* the guest's FIN, then ours, not yet acknowledged */
	TCP_TERM_TIME_WAIT,
	TCP_TERM_CLOSED, /* over; the slot waits for a reset to go out or the release */
};

enum tcp_term_event_kind {
	TCP_TERM_EV_OPEN = 1,
	TCP_TERM_EV_READABLE,
	TCP_TERM_EV_WRITABLE,
	TCP_TERM_EV_EOF,
	TCP_TERM_EV_CLOSED,
};

/* A byte ring of fixed capacity. */
struct tcp_term_ring {
	uint8_t *buf;
	uint32_t cap, head, len;
};

struct tcp_term_flow {
	struct conntrack_key key; /* guest = source of the guest's segments */
	uint8_t state;            /* enum tcp_term_state */
	bool owned;               /* OPEN reported, not released */
	bool released;            /* the caller let go: finish (or reset) alone */
	bool shut;                /* the host side will write no more: FIN after tx */
	bool fin_rcvd, fin_sent;
	bool ack_now, synack_now, rst_now, probe_now;
	bool reset;         /* ended by a reset, either way */
	bool want_writable; /* a write found tx full */
	uint8_t events;     /* 1 << enum tcp_term_event_kind, pending */
	bool in_txq, in_evq;
	uint32_t next, txq_next, evq_next; /* chains; TCP_TERM_NIL at the end */
	/* RFC 9293 3.3.1's variables. snd_max: the highest sequence sent
	 * (snd_nxt goes back to snd_una on a stall). */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wl1, snd_wl2;
	uint32_t snd_wnd, max_snd_wnd;
	uint32_t irs, rcv_nxt, rcv_adv; /* rcv_adv: the window's right edge we announced */
	uint16_t mss;                   /* what we send per segment */
	uint32_t snd_data;              /* the sequence number of tx's first byte */
	uint32_t fin_seq;               /* ours, once shut */
	uint32_t stall_una;
	uint64_t idle_since_ns, stall_since_ns, time_wait_ns;
	struct tcp_term_ring rx, tx;
};

struct tcp_term_event {
	enum tcp_term_event_kind kind;
	struct tcp_term_flow *flow;
	struct conntrack_key key; /* the flow's */
	bool reset;               /* CLOSED: by a reset (else both FINs went through) */
};

struct tcp_term_stats {
	uint64_t segments, bad_checksum, not_for_us;
	uint64_t opened, refused_full, dropped; /* dropped: unacceptable, answered or not */
	uint64_t challenge_acks, resets_in, resets_out, rst_queue_full;
	uint64_t rewinds, expired;
};

struct tcp_term_config {
	uint32_t capacity;       /* flows; 0: TCP_TERM_DEFAULT_CAPACITY */
	uint32_t rx_buf, tx_buf; /* bytes per flow; 0: TCP_TERM_DEFAULT_BUF */
	uint8_t guest_mac[6];    /* where frames go */
	uint8_t gw_mac[6];       /* where they come from: the link's gateway */
	uint64_t key[2];         /* SipHash key (random): the table's chains and the ISNs */
};

#define TCP_TERM_NIL UINT32_MAX

struct tcp_term {
	struct tcp_term_config cfg;
	uint32_t count, nbuckets;
	uint32_t *heads;
	struct tcp_term_flow *flows;
	uint8_t *bufs;
	uint32_t free_head;
	uint32_t txq_head, txq_tail, evq_head, evq_tail;
	struct tcp_seg rsts[TCP_TERM_RST_QUEUE];
	uint32_t rst_head, rst_len;
	struct tcp_term_stats stats;
};

/* Allocate everything for cfg. 0, -EINVAL (a size out of range, named in
 * tcp_term_config_error()) or -ENOMEM. */
int tcp_term_init(struct tcp_term *t, const struct tcp_term_config *cfg);
void tcp_term_free(struct tcp_term *t);
/* Every flow forgotten, nothing sent (a device reset: the guest's stack
 * starts again too); no allocation. Stats are kept. */
void tcp_term_clear(struct tcp_term *t);
/* Why cfg is refused, or NULL. */
const char *tcp_term_config_error(const struct tcp_term_config *cfg);

/*
 * One segment the guest sent (p parsed by pkt_parse). 0 when it was for
 * this module (taken, answered or dropped as RFC 9293 says; stats say
 * which), -EINVAL when p is not a whole TCP segment over IPv4 or IPv6.
 */
int tcp_term_input(struct tcp_term *t, const struct pkt *p, uint64_t now_ns);

/*
 * The next frame for the guest into frame[0..cap): its length, or 0 when
 * there is none or it does not fit (it waits; TCP_TERM_MAX_FRAME always
 * fits). Data goes within the guest's window and MSS.
 */
size_t tcp_term_next_frame(struct tcp_term *t, uint8_t *frame, size_t cap, uint64_t now_ns);

/* Whether tcp_term_next_frame() has something to give. */
bool tcp_term_pending(const struct tcp_term *t);

/* The next event into *ev; false when there is none. */
bool tcp_term_event(struct tcp_term *t, struct tcp_term_event *ev);

/* Take up to cap bytes the guest sent; how many (0: none now). */
size_t tcp_term_read(struct tcp_term *t, struct tcp_term_flow *f, uint8_t *buf, size_t cap,
		     uint64_t now_ns);
/* Bytes waiting in rx. */
size_t tcp_term_readable(const struct tcp_term_flow *f);
/* Queue up to len bytes toward the guest: how many fit (0 when tx is full,
 * or after shutdown or the end: a WRITABLE event follows a full tx). */
size_t tcp_term_write(struct tcp_term *t, struct tcp_term_flow *f, const uint8_t *data, size_t len,
		      uint64_t now_ns);
/* FIN toward the guest once tx is sent. */
void tcp_term_shutdown(struct tcp_term *t, struct tcp_term_flow *f, uint64_t now_ns);
/* RST toward the guest now, and release the flow (f is no longer the caller's). */
void tcp_term_abort(struct tcp_term *t, struct tcp_term_flow *f);
/*
 * The caller lets go of f: unread bytes in rx, or bytes the guest sends
 * later, reset the flow (as close() does, RFC 9293 3.10.4); otherwise it
 * shuts down and finishes alone. f is not the caller's any more.
 */
void tcp_term_release(struct tcp_term *t, struct tcp_term_flow *f, uint64_t now_ns);

/* Timeouts and stalls; call every second or so. */
void tcp_term_expire(struct tcp_term *t, uint64_t now_ns);

/* The flow of k (any state but free), or NULL: whether a guest segment is this module's. */
struct tcp_term_flow *tcp_term_find(struct tcp_term *t, const struct conntrack_key *k);

/* Live flows (every slot not free). */
uint32_t tcp_term_count(const struct tcp_term *t);

const char *tcp_term_state_name(uint8_t state);

#endif

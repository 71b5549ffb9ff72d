/*
 * vsock_proto: the virtio-vsock stream protocol (virtio 1.2, 5.10.6) without
 * sockets or queues: packet headers, validation of everything the guest
 * writes into one, the connection table, each connection's state machine
 * and credit-based flow control (5.10.6.3). virtio_vsock.c moves bytes
 * between the virtqueues and host Unix sockets and asks this module what to
 * do; nothing here makes a syscall, so all of it is unit-tested.
 *
 * Contract:
 *  - Every guest header goes through vsock_table_recv(), which checks the
 *    addresses, type, op and length before anything else looks at it. A
 *    packet that is not from the guest's own CID is dropped (answering a
 *    spoofed address would let the guest aim our RSTs); any other bad packet
 *    is answered with RST.
 *  - At most VSOCK_MAX_CONNS connections exist (host clients still sending
 *    their CONNECT line included); a guest REQUEST beyond that gets RST.
 *    A connection's memory is allocated when it opens and freed when it
 *    closes: a table without connections holds none.
 *  - Host → guest: we never send more payload than the guest's free credit
 *    (buf_alloc - (tx_cnt - fwd_cnt), 5.10.6.3); what the guest has not
 *    granted stays in the host socket, which the device stops reading.
 *  - Guest → host: we advertise VSOCK_BUF_SIZE of buffer and keep at most
 *    that many bytes per connection that the host socket has not taken yet;
 *    a guest that sends beyond the credit we gave it is reset, never
 *    buffered. Credit updates go out when the guest asks and when enough
 *    space was freed that the guest might otherwise stall.
 *  - Bytes toward the guest that wait for rx buffers are bounded too: per
 *    connection a bitmask of pending control packets, plus one ring of
 *    RSTs (for closed connections and packets that have none), grown as
 *    they pile up to at most VSOCK_RST_QUEUE (when it is full, or cannot
 *    grow, further RSTs are dropped and the guest's own timeouts clean up).
 *  - File descriptors are stored here (`fd`) but opened and closed only by
 *    the device.
 */
#ifndef KILN_VSOCK_PROTO_H
#define KILN_VSOCK_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define VSOCK_HOST_CID 2            /* well-known CID of the host (vsock(7)) */
#define VSOCK_HDR_SIZE 44           /* sizeof(struct virtio_vsock_hdr), packed */
#define VSOCK_MAX_PAYLOAD 65536     /* largest payload kiln accepts or sends in one packet */
#define VSOCK_MAX_CONNS 256         /* connections per device, host clients included */
#define VSOCK_BUF_SIZE (256 * 1024) /* per connection: our buf_alloc toward the guest */
#define VSOCK_RST_QUEUE 512         /* RSTs for packets without a connection */
#define VSOCK_RST_FIRST 16   /* the RST ring's first size; it doubles up to VSOCK_RST_QUEUE */
#define VSOCK_CONNECT_MAX 32 /* longest "CONNECT <port>\n" line accepted */
/* Local ports for host-initiated connections (the port in "OK <port>\n");
 * high so they do not collide with the small ports guests listen on. */
#define VSOCK_LOCAL_PORT_BASE 0x40000000u

/*
 * Wire values (virtio 1.2, 5.10.6). They are kiln's own names, not
 * <linux/virtio_vsock.h>'s, because that header's `struct
 * virtio_vsock_config` would clash with the device's configuration struct
 * (virtio_vsock.h); vsock_proto.c checks every value against the kernel
 * header at compile time.
 */
#define VSOCK_TYPE_STREAM 1
#define VSOCK_OP_INVALID 0
#define VSOCK_OP_REQUEST 1
#define VSOCK_OP_RESPONSE 2
#define VSOCK_OP_RST 3
#define VSOCK_OP_SHUTDOWN 4
#define VSOCK_OP_RW 5
#define VSOCK_OP_CREDIT_UPDATE 6
#define VSOCK_OP_CREDIT_REQUEST 7
#define VSOCK_SHUTDOWN_RCV 1u  /* the sender will receive no more */
#define VSOCK_SHUTDOWN_SEND 2u /* the sender will send no more */
#define VSOCK_EVENT_TRANSPORT_RESET 0

/* A packet header in host byte order. */
struct vsock_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint32_t len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
};

/* Wire (little-endian, 44 bytes) <-> host order. */
void vsock_hdr_decode(struct vsock_hdr *h, const void *raw);
void vsock_hdr_encode(void *raw, const struct vsock_hdr *h);

/* vsock_hdr_check() verdicts. */
enum { VSOCK_PKT_OK = 0, VSOCK_PKT_DROP = 1, VSOCK_PKT_RST = 2 };

/*
 * Validate a guest packet whose chain carries `payload_avail` bytes after
 * the header. DROP: src_cid is not the guest's (spoofed; also any RST that
 * is itself bad, which must never be answered). RST: dst_cid is not the
 * host, type is not STREAM, unknown op, len beyond the chain or beyond
 * VSOCK_MAX_PAYLOAD. OK otherwise.
 */
int vsock_hdr_check(const struct vsock_hdr *h, uint64_t guest_cid, uint64_t payload_avail);

enum vsock_state {
	VSOCK_FREE = 0,
	VSOCK_HOST_HELLO, /* host client accepted, its CONNECT line not complete */
	VSOCK_CONNECTING, /* REQUEST for the guest pending or sent, no RESPONSE yet */
	VSOCK_ESTABLISHED,
};

/* Control packets waiting for an rx buffer (bits of vsock_conn.send_ctl). */
#define VSOCK_SEND_REQUEST 1u
#define VSOCK_SEND_RESPONSE 2u
#define VSOCK_SEND_SHUTDOWN 4u
#define VSOCK_SEND_CREDIT 8u

struct vsock_conn {
	enum vsock_state state;
	unsigned slot;          /* its index in vsock_table.conn */
	int fd;                 /* host socket, owned by the device */
	int guest_initiated;    /* 1: connected to uds_<local_port> for a guest REQUEST */
	uint32_t local_port;    /* host side: our port (host-initiated) or the guest's dst_port */
	uint32_t peer_port;     /* guest side */
	uint32_t send_ctl;      /* VSOCK_SEND_* */
	uint32_t peer_shutdown; /* VSOCK_SHUTDOWN_* the guest announced */
	int host_eof;           /* the host socket said EOF; SHUTDOWN(SEND) queued */
	int host_shut_wr;       /* we shut down the host socket for writing */
	int host_readable;      /* an epoll edge said readable; no read has hit EAGAIN since */

	/* Host → guest credit (5.10.6.3): the guest's buffer and progress. */
	uint32_t peer_buf_alloc, peer_fwd_cnt;
	uint32_t tx_cnt; /* payload bytes we sent to the guest */

	/* Guest → host: our side of the accounting. */
	uint32_t rx_cnt;       /* payload bytes accepted from the guest */
	uint32_t fwd_cnt;      /* of those, bytes the host socket took */
	uint32_t fwd_cnt_sent; /* fwd_cnt as last advertised to the guest */
	uint8_t *buf;          /* ring of VSOCK_BUF_SIZE, allocated only while non-empty */
	uint32_t buf_head, buf_len;

	/* The host client's CONNECT line, while VSOCK_HOST_HELLO. */
	char hello[VSOCK_CONNECT_MAX];
	uint32_t hello_len;
};

struct vsock_rst {
	uint64_t src_cid; /* the address the guest sent to, mirrored back */
	uint32_t src_port, dst_port;
};

struct vsock_table {
	uint64_t guest_cid;
	uint32_t next_port; /* next local port to try for a host client */
	unsigned count;     /* live connections */
	/*
	 * Live connections, each allocated when it opens and freed when it
	 * closes; NULL: a free slot. Every kiln-vmm has this table and most
	 * hold one connection at a time: VSOCK_MAX_CONNS whole connections
	 * in place were 30 KiB of each one's private memory.
	 */
	struct vsock_conn *conn[VSOCK_MAX_CONNS];
	/*
	 * RSTs waiting for an rx buffer, a ring of rst_cap (0: none yet).
	 * Every closed connection passes one through it, so a ring of
	 * VSOCK_RST_QUEUE in place would be written all over in a long-lived
	 * VM; it starts at VSOCK_RST_FIRST and doubles only while a guest
	 * lets more pile up, up to VSOCK_RST_QUEUE.
	 */
	struct vsock_rst *rst;
	unsigned rst_cap, rst_head, rst_len;
	unsigned rst_dropped; /* RSTs lost to a full ring or no memory (for diagnostics) */
};

/* An empty table: no connection, no RST ring (nothing allocated).
 * vsock_table_clear() frees what it came to hold. */
void vsock_table_init(struct vsock_table *t, uint64_t guest_cid);

/* Live connection by (local, peer) port, or by host fd; NULL when none. */
struct vsock_conn *vsock_conn_find(struct vsock_table *t, uint32_t local_port, uint32_t peer_port);
struct vsock_conn *vsock_conn_find_fd(struct vsock_table *t, int fd);

/*
 * A host client connected: a slot in VSOCK_HOST_HELLO with a fresh local
 * port. NULL when the table is full (or out of memory).
 */
struct vsock_conn *vsock_conn_new_host(struct vsock_table *t, int fd);

/*
 * The host client's CONNECT line named guest port `port`: the connection
 * becomes VSOCK_CONNECTING with a REQUEST pending.
 */
void vsock_conn_connect(struct vsock_conn *c, uint32_t port);

/* A guest-initiated connection reached its host listener: ESTABLISHED,
 * RESPONSE pending. */
void vsock_conn_accepted(struct vsock_conn *c, int fd);

/* Free the slot, the connection and its buffer: `c` is gone. The caller
 * has closed c->fd. */
void vsock_conn_free(struct vsock_table *t, struct vsock_conn *c);

/* Queue an RST to the guest for `c` (unless it never reached the guest:
 * a host client still in HELLO) and free it as vsock_conn_free(). The
 * caller has closed c->fd. */
void vsock_conn_reset(struct vsock_table *t, struct vsock_conn *c);

/* Drop every connection and queued RST and free their memory: device
 * reset. The caller has closed every fd. */
void vsock_table_clear(struct vsock_table *t);

/* What the device must do after vsock_table_recv(). */
enum vsock_action {
	VSOCK_ACT_NONE, /* nothing (dropped, or absorbed: re-run the rx pump) */
	VSOCK_ACT_RESET, /* RST queued to the guest; *c (when set): close its fd, vsock_conn_free() */
	VSOCK_ACT_CLOSE,       /* the guest reset *c: close its fd, vsock_conn_free(), no answer */
	VSOCK_ACT_CONNECT,     /* guest REQUEST: new *c (CONNECTING); connect to uds_<local_port>,
				  then vsock_conn_accepted() or vsock_conn_reset() */
	VSOCK_ACT_ESTABLISHED, /* the guest accepted host-initiated *c: tell the host client "OK" */
	VSOCK_ACT_DATA,        /* h->len payload bytes for *c's host socket; room was reserved */
	VSOCK_ACT_UPDATE,      /* *c's shutdown state changed: flush, maybe shut down or finish */
};

/*
 * Apply one guest packet whose chain has `payload_avail` bytes after the
 * header. Validates it (vsock_hdr_check), updates the peer's credit, runs
 * the state machine and says what the device must do; *c is the
 * connection concerned, or NULL.
 */
enum vsock_action vsock_table_recv(struct vsock_table *t, const struct vsock_hdr *h,
				   uint64_t payload_avail, struct vsock_conn **c);

/* Queue an RST answering guest packet `h` (never answers an RST).
 * 0, or -ENOSPC when the ring is full or cannot grow (the RST is dropped). */
int vsock_table_rst_reply(struct vsock_table *t, const struct vsock_hdr *h);

/* Take the next queued RST as a header ready to send. 1, or 0 when none. */
int vsock_table_next_rst(struct vsock_table *t, struct vsock_hdr *h);

/* Payload bytes we may send to the guest on `c` right now (never above
 * the guest's free credit, never above VSOCK_MAX_PAYLOAD). */
uint32_t vsock_conn_credit(const struct vsock_conn *c);

/* Free guest → host buffer space the guest may still fill. */
uint32_t vsock_conn_room(const struct vsock_conn *c);

/*
 * Fill `h` for a packet from `c` to the guest with `op` and `len` payload
 * bytes, advertising our buf_alloc and fwd_cnt (so the pending
 * CREDIT_UPDATE is no longer needed). For RW, counts `len` as sent.
 */
void vsock_conn_hdr(struct vsock_table *t, struct vsock_conn *c, uint16_t op, uint32_t len,
		    struct vsock_hdr *h);

/* Take the most urgent pending control packet of `c` into `h`: 1, or 0
 * when none is pending. */
int vsock_conn_next_ctl(struct vsock_table *t, struct vsock_conn *c, struct vsock_hdr *h);

/* 1 when `c` may send payload now: established, the host socket readable,
 * not at EOF, the guest still receiving and credit left. */
int vsock_conn_want_send(const struct vsock_conn *c);

/* The host socket took `n` bytes of guest data: advance fwd_cnt and queue
 * a CREDIT_UPDATE when the guest's view of our space got small. */
void vsock_conn_forwarded(struct vsock_conn *c, uint32_t n);

/* The host socket reached EOF: queue SHUTDOWN(SEND) for the guest. */
void vsock_conn_host_eof(struct vsock_conn *c);

/* 1 when both directions are finished and `c` should be closed with RST
 * (the guest shut down both ways, or each side stopped sending, and
 * everything buffered reached the host): a Linux guest that sent
 * SHUTDOWN(RCV|SEND) waits for that RST before it frees the socket. */
int vsock_conn_done(const struct vsock_conn *c);

/* Guest → host ring: append (room guaranteed by vsock_table_recv), and
 * look at / drop the oldest bytes. put returns 0 or -ENOMEM / -ENOSPC. */
int vsock_conn_buf_put(struct vsock_conn *c, const void *src, uint32_t n);
/* Contiguous oldest bytes: pointer and length (0 when empty). */
uint32_t vsock_conn_buf_peek(const struct vsock_conn *c, const uint8_t **p);
void vsock_conn_buf_consume(struct vsock_conn *c, uint32_t n);

/*
 * Parse the host client's "CONNECT <port>\n" (Firecracker's hybrid vsock
 * protocol). `buf` holds the first `len` bytes the client sent. Returns the
 * line's length including '\n' with *port set; 0 when the line is a valid
 * prefix without its newline yet and shorter than VSOCK_CONNECT_MAX;
 * -EINVAL for anything else (other verb, no digits, non-digits, a port
 * above 2^32 - 1, an overlong line, "\r\n").
 */
long vsock_connect_parse(const char *buf, size_t len, uint32_t *port);

#endif

/*
 * net_steer: the guest's steered TCP flows (issue 37) relayed to the
 * host's egress proxy. The packet filter gives a guest SYN to a port the
 * `http` rules list the verdict NF_STEER (net_filter.h); the device hands
 * such segments here, tcp_term (tcp_term.h) answers them as the remote
 * address, and for each flow it opens, this module connects to the
 * proxy's Unix socket, writes a PROXY v2 header (proxy_v2.h: source = the
 * guest's address and port, destination = where the guest connected,
 * AUTHORITY = the name the guest resolved to that address, when it did)
 * and relays the bytes both ways.
 *
 * Contract:
 *  - The caller (virtio-net) serialises every call (its device lock) and
 *    watches the sockets for this module (io.watch, io.unwatch) and passes
 *    every event of a watched fd to net_steer_ready.
 *  - Syscalls: socket, connect, send, recv, shutdown and close on the
 *    proxy's sockets, all non-blocking; nothing else, so the device
 *    thread's seccomp role (AF_UNIX sockets, connect) covers it.
 *  - A proxy that cannot be reached (no socket, refused, a full backlog:
 *    EAGAIN) gives the guest a reset at once (connect_failed), as does a
 *    proxy socket that fails mid-flow (proxy_errors).
 *  - Backpressure both ways, no buffering beyond a chunk per direction
 *    per flow: guest bytes are read from tcp_term only once the proxy
 *    took the last chunk (a slow proxy closes the guest's window), and
 *    the proxy's socket is read only once tcp_term took the last chunk
 *    (a guest that does not read stops the proxy's writes).
 *  - Ends: the guest's FIN becomes shutdown(SHUT_WR) once its bytes are
 *    written; the proxy's EOF becomes a FIN toward the guest once its
 *    bytes are queued; when both are done the flow is released
 *    (tcp_term_release: it finishes alone) and the socket closed. A guest
 *    reset closes the socket. A proxy that closed its socket while the
 *    guest still sends resets the guest, as close() would.
 *  - Memory: tcp_term's and two chunks per flow, all allocated at init
 *    (pages touched only by flows that use them).
 */
#ifndef KILN_NET_STEER_H
#define KILN_NET_STEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/net/tcp_term.h"
#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"
#include "lib/netrules/net_rules.h"

/* Bytes moved per direction per flow at a time. */
#define NET_STEER_CHUNK (16 * 1024)
/* Steered flows per device: each holds a watch of the device thread's
 * event loop (EVENT_LOOP_MAX, 256 for the whole VM), so a guest opening
 * flows leaves half of them to vsock and the timers. */
#define NET_STEER_FLOWS 128

struct net_steer_io {
	/* Watch fd for events (EPOLLIN, EPOLLOUT; never 0): add it to the
	 * loop (add) or change what it is watched for. 0 or -errno. */
	int (*watch)(void *ctx, int fd, uint32_t events, bool add);
	/* Take fd out of the loop (watched for nothing, or about to close:
	 * out of the loop, a hung-up socket does not wake it again). */
	void (*unwatch)(void *ctx, int fd);
	/* The names the guest resolved to dst into out[0..cap), their
	 * count (0: none): the PROXY header's AUTHORITY (the first) and
	 * KILN_NAMES (the others: one CDN's names share addresses). */
	size_t (*names_of)(void *ctx, const struct net_addr *dst, char (*out)[NET_HOST_MAX + 1],
			   size_t cap);
	void *ctx;
};

struct net_steer_stats {
	uint64_t flows;          /* flows tcp_term opened and handed to the proxy */
	uint64_t connect_failed; /* ... whose proxy socket could not connect (or be watched): reset */
	uint64_t proxy_errors;   /* ... whose proxy socket failed mid-flow: reset */
	uint64_t closed;         /* ... over, their socket closed */
	uint64_t bytes_up;       /* guest bytes written to the proxy (headers not counted) */
	uint64_t bytes_down;     /* proxy bytes queued toward the guest */
};

struct net_steer_conn {
	int fd; /* -1: the slot is free */
	struct tcp_term_flow *flow;
	uint32_t watched;  /* events asked of io.watch; 0: out of the loop */
	bool guest_eof;    /* the guest sent FIN */
	bool up_shut;      /* ... and the proxy was told (SHUT_WR) */
	bool up_blocked;   /* the proxy's socket was full: wait for EPOLLOUT */
	bool proxy_eof;    /* the proxy will send no more */
	bool down_blocked; /* tcp_term's tx was full: wait for WRITABLE */
	uint32_t up_off, up_len, hdr_left;
	uint32_t down_off, down_len;
	uint8_t *up, *down; /* NET_STEER_CHUNK each */
};

struct net_steer {
	struct tcp_term term;
	struct net_steer_io io;
	char path[108];               /* sizeof(sun_path) */
	struct net_steer_conn *conns; /* by tcp_term's flow index */
	uint8_t *bufs;
	uint32_t live;
	struct net_steer_stats st;
};

/*
 * Set up for the proxy at path (a Unix socket; connected only when a flow
 * opens). tc: tcp_term's (capacity and buffers; 0: defaults). 0, or
 * -EINVAL (path too long for a socket address, or tc refused; message in
 * e) or -ENOMEM.
 */
int net_steer_init(struct net_steer *s, const char *path, const struct tcp_term_config *tc,
		   const struct net_steer_io *io, struct err *e);
/* Close every proxy socket and free everything. */
void net_steer_free(struct net_steer *s);
/* Every flow dropped (sockets closed, nothing sent to the guest): a
 * device reset. No allocation (a vCPU's seccomp role may run it). */
void net_steer_reset(struct net_steer *s);

/* A guest frame the filter steered (NF_STEER). */
void net_steer_input(struct net_steer *s, const uint8_t *frame, size_t len, uint64_t now_ns);
/* The next frame for the guest (tcp_term_next_frame): its length, or 0. */
size_t net_steer_next_frame(struct net_steer *s, uint8_t *frame, size_t cap, uint64_t now_ns);
bool net_steer_pending(const struct net_steer *s);
/* fd (a proxy socket this module watches) reported events. */
void net_steer_ready(struct net_steer *s, int fd, uint32_t events, uint64_t now_ns);
/* tcp_term's timeouts; about once a second. */
void net_steer_tick(struct net_steer *s, uint64_t now_ns);
/*
 * The steered flows that carry data (established or closing), at most max
 * into out: how many. A snapshot keeps them with the filter's, so the
 * restored device probes each and the guest's answer gets a reset: their
 * proxy connections end with this VMM.
 */
size_t net_steer_flows(const struct net_steer *s, struct conntrack_key *out, size_t max);
/* The guest's TCP flow k is one of tcp_term's (for the filter's cfg.steered). */
bool net_steer_holds(struct net_steer *s, const struct conntrack_key *k);

#endif

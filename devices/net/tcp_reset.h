/*
 * tcp_reset: TCP segments the network device makes up for the guest, so
 * that a connection the host side no longer has fails at once instead of
 * hanging until TCP gives up (minutes to hours).
 *
 * Two cases reach it, both for flows the packet filter does not track:
 *  - The guest sends on such a flow (after a restore, whose passt knows
 *    nothing of the guest's connections; after the filter cut the flow,
 *    or after it expired): tcp_reset_reply() answers it as a closed port
 *    would (RFC 9293 3.10.7.1): with the segment's ACK, <SEQ=SEG.ACK><RST>;
 *    without, <SEQ=0><ACK=SEG.SEQ+SEG.LEN><RST,ACK>. A reset whose SEQ is
 *    what the guest expects next ends its connection (ECONNRESET).
 *  - A restore, for the guest's established flows that were tracked when
 *    the snapshot was taken (a guest that only reads would otherwise wait
 *    for ever): tcp_reset_probe() makes bare ACKs outside the window.
 *    The guest answers it with an ACK carrying its real sequence numbers
 *    (RFC 9293 3.10.7.4), which the filter drops as untracked, and the
 *    reset answering that ACK is exact.
 *
 * Contract: pure; builds with tcp_seg_build into the caller's buffer a
 * 20-byte TCP header with a window of 0 and no payload. A segment
 * that is itself a reset, not TCP, or a fragment is never answered (RFC
 * 9293: never reset a reset; a fragment's flags cannot be trusted alone).
 */
#ifndef KILN_TCP_RESET_H
#define KILN_TCP_RESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/net/conntrack.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_seg.h"

/* The largest segment built: Ethernet + IPv6 + TCP. */
#define TCP_RESET_MAX_FRAME (PKT_ETH_HLEN + 40 + 20)

/*
 * The reset answering p, a frame the guest sent (parsed by pkt_parse),
 * addressed back to the guest: from p's destination MAC, address and port
 * to p's source ones. Its length, or 0 when p is not to be answered (not
 * TCP, a reset, a fragment, out too small).
 */
size_t tcp_reset_reply(const struct pkt *p, uint8_t *out, size_t cap);
/* The same reply as a segment to build later (tcp_term queues them); false when none. */
bool tcp_reset_seg(const struct pkt *p, struct tcp_seg *s);

/*
 * Probe `half` (0 or 1) of the tracked flow k (guest side and remote
 * side): a bare ACK from the remote to the guest, Ethernet source src_mac,
 * destination guest_mac, at SEQ 0 (half 0) or 2^31 (half 1). A receive
 * window is at most 2^30 (RFC 7323), so at least one of the two lies
 * outside it and is answered; the guest answers one probe per 500 ms at
 * most (Linux's tcp_invalid_ratelimit), so the second costs no reply when
 * the first had one. Its length, or 0 when k is not TCP over IPv4 or IPv6
 * with both ports, or out is too small.
 */
#define TCP_RESET_PROBES 2
size_t tcp_reset_probe(const struct conntrack_key *k, unsigned half, const uint8_t guest_mac[6],
		       const uint8_t src_mac[6], uint8_t *out, size_t cap);

#endif

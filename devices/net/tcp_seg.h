/*
 * tcp_seg: the one builder of TCP segments toward the guest, and the one
 * TCP checksum, shared by tcp_reset (segments made up for flows the host
 * no longer has) and tcp_term (the endpoint that terminates steered flows).
 *
 * Contract: pure; builds into the caller's buffer Ethernet II + IPv4 (no
 * options, DF, TTL 64) or IPv6 (hop limit 64) + a TCP header (20 bytes,
 * 24 with an MSS option) + the payload, every checksum filled. Nothing is
 * written beyond cap; a segment that does not fit is not built.
 */
#ifndef KILN_TCP_SEG_H
#define KILN_TCP_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/net/pkt_parse.h"

#define TCP_SEG_PSH 0x08

/* Headers of the largest segment built, without payload: Ethernet + IPv6 + TCP with MSS. */
#define TCP_SEG_MAX_HDR (PKT_ETH_HLEN + 40 + 24)

/* One segment, all it carries; self-contained (no pointer into a frame but the payload). */
struct tcp_seg {
	int family; /* NET_AF4 or NET_AF6 */
	uint8_t src_mac[6], dst_mac[6];
	uint8_t src[16], dst[16]; /* 4 or 16 bytes used */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;   /* PKT_TCP_*, TCP_SEG_PSH */
	uint16_t window; /* unscaled */
	uint16_t mss;    /* nonzero: an MSS option (RFC 9293 3.7.1), for a SYN */
	/* The payload, in up to two pieces (a ring buffer's wrap); lengths may be 0. */
	const uint8_t *data[2];
	size_t data_len[2];
};

/* The headers' length of s (Ethernet, IP, TCP with its options). */
size_t tcp_seg_hdr_len(const struct tcp_seg *s);

/* Build s into out; its length, or 0 when it does not fit in cap. */
size_t tcp_seg_build(const struct tcp_seg *s, uint8_t *out, size_t cap);

/*
 * Whether the TCP checksum of p (a whole, unfragmented TCP segment parsed
 * by pkt_parse) is right: RFC 9293 3.1 over the pseudo-header (RFC 9293
 * for IPv4, RFC 8200 8.1 for IPv6) and p->l4[0..l4_len).
 */
bool tcp_seg_checksum_ok(const struct pkt *p);

static inline uint16_t tcp_seg_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t tcp_seg_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif

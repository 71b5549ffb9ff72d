/*
 * pkt_parse: what the packet filter needs to know about one Ethernet frame,
 * read without trusting a single byte of it.
 *
 * Contract:
 *  - Pure; reads only frame[0..len). Every length field (IPv4 IHL and total
 *    length, IPv6 payload length and extension header lengths, TCP data
 *    offset, UDP length) is checked against what is really there before it
 *    is used. Bytes after the IP packet (Ethernet padding) are ignored.
 *  - Accepted: Ethernet II with ARP (Ethernet/IPv4 only), IPv4 and IPv6.
 *    Refused: VLAN tags (802.1Q/802.1ad; a guest has no business tagging),
 *    802.3 length frames, every other ethertype.
 *  - IPv4 options are walked (each option's length checked); source routing
 *    (LSRR, SSRR) is refused, because it changes where the packet really
 *    goes. IPv6 extension headers are walked to the upper-layer header, at
 *    most PKT_IP6_MAX_EXT of them; a routing header with segments left is
 *    refused for the same reason; hop-by-hop only first.
 *  - Fragments: the first fragment must hold the whole TCP/UDP/ICMP header
 *    (RFC 1858's tiny-fragment attack; RFC 7112 for IPv6) and is parsed
 *    like a whole packet with PKT_F_FRAG set; a later fragment carries no
 *    ports (PKT_F_FRAG_LATER, l4 unset) and must start beyond the smallest
 *    L4 header so it cannot overwrite the ports or TCP flags of the first.
 *    IPv6 atomic fragments (offset 0, no more fragments) are whole packets.
 *  - TCP and UDP with port 0 on either side are refused.
 *  - Results point into the frame; nothing is allocated.
 */
#ifndef KILN_PKT_PARSE_H
#define KILN_PKT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/netrules/net_addr.h"

#define PKT_ETH_HLEN 14
#define PKT_IP6_MAX_EXT 8 /* extension headers walked before giving up */

#define PKT_ETH_ARP 0x0806
#define PKT_ETH_IP4 0x0800
#define PKT_ETH_IP6 0x86dd

#define PKT_PROTO_ICMP 1
#define PKT_PROTO_TCP 6
#define PKT_PROTO_UDP 17
#define PKT_PROTO_ICMP6 58

#define PKT_TCP_FIN 0x01
#define PKT_TCP_SYN 0x02
#define PKT_TCP_RST 0x04
#define PKT_TCP_ACK 0x10

/* pkt.flags */
#define PKT_F_L4 0x01         /* sport/dport or icmp_* are valid */
#define PKT_F_FRAG 0x02       /* one fragment of a larger datagram */
#define PKT_F_FRAG_LATER 0x04 /* not the first fragment: no L4 header */

/* Why a frame was refused (pkt_parse returns the negative value). */
enum pkt_error {
	PKT_OK = 0,
	PKT_E_ETH_SHORT = 1,
	PKT_E_VLAN,
	PKT_E_ETHERTYPE,
	PKT_E_ARP,
	PKT_E_IP4_HDR,
	PKT_E_IP4_LEN,
	PKT_E_IP4_OPT,
	PKT_E_IP6_HDR,
	PKT_E_IP6_LEN,
	PKT_E_IP6_EXT,
	PKT_E_SRCROUTE,
	PKT_E_FRAG,
	PKT_E_TCP,
	PKT_E_UDP,
	PKT_E_ICMP,
	PKT_E_PORT0,
	PKT_E_COUNT
};

enum pkt_l3 {
	PKT_L3_ARP = 1,
	PKT_L3_IP4,
	PKT_L3_IP6,
};

struct pkt_arp {
	uint16_t op; /* 1 request, 2 reply */
	uint8_t sha[6], spa[4], tha[6], tpa[4];
};

struct pkt {
	uint8_t dst_mac[6], src_mac[6];
	uint16_t ethertype;
	uint8_t l3;    /* enum pkt_l3 */
	uint8_t flags; /* PKT_F_* */
	struct pkt_arp arp;
	struct net_addr src, dst;
	uint8_t proto;     /* upper-layer protocol number */
	uint8_t ttl;       /* IPv4 TTL, IPv6 hop limit */
	uint32_t frag_id;  /* IPv4 identification or IPv6 fragment identification */
	uint32_t frag_off; /* offset of this fragment, bytes */
	uint16_t sport, dport;
	uint8_t tcp_flags;
	uint8_t icmp_type, icmp_code;
	uint16_t icmp_id; /* bytes 4..5 of the ICMP header: the echo identifier */
	/* The IP packet and its upper-layer part, as far as this frame holds them. */
	const uint8_t *ip;
	size_t ip_len;
	const uint8_t *l4;
	size_t l4_len;
	/* TCP/UDP payload, the body after the 8-byte ICMP header. */
	const uint8_t *payload;
	size_t payload_len;
};

/* Parse one frame. 0, or -enum pkt_error. */
int pkt_parse(const uint8_t *frame, size_t len, struct pkt *out);

/*
 * Parse the packet quoted in an ICMP error (RFC 792, RFC 4443 2.4): an IP
 * header of `family` and at least the first 8 bytes of its upper-layer
 * header, the rest usually cut off. Fills src, dst, proto and the ports or
 * echo id (PKT_F_L4). 0 or -enum pkt_error.
 */
int pkt_parse_quoted(int family, const uint8_t *ip, size_t len, struct pkt *out);

const char *pkt_strerror(int err);

#endif

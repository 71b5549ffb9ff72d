#include "devices/net/pkt_parse.h"

#include <string.h>

/* Parsing modes: a frame's packet, or the packet quoted in an ICMP error. */
enum mode { WHOLE, QUOTED };

static inline uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int parse_arp(const uint8_t *p, size_t n, struct pkt *out)
{
	struct pkt_arp *a = &out->arp;

	/* RFC 826 for Ethernet and IPv4: hardware type 1, 6-byte MACs, 4-byte addresses. */
	if (n < 28 || be16(p) != 1 || be16(p + 2) != PKT_ETH_IP4 || p[4] != 6 || p[5] != 4)
		return -PKT_E_ARP;
	a->op = be16(p + 6);
	if (a->op != 1 && a->op != 2)
		return -PKT_E_ARP;
	memcpy(a->sha, p + 8, 6);
	memcpy(a->spa, p + 14, 4);
	memcpy(a->tha, p + 18, 6);
	memcpy(a->tpa, p + 24, 4);
	out->l3 = PKT_L3_ARP;
	return 0;
}

/* The smallest header of an upper-layer protocol whose ports or type the filter reads. */
static size_t l4_min(uint8_t proto)
{
	switch (proto) {
	case PKT_PROTO_TCP:
		return 20;
	case PKT_PROTO_UDP:
	case PKT_PROTO_ICMP:
	case PKT_PROTO_ICMP6:
		return 8;
	default:
		return 0;
	}
}

/* The upper-layer header at l4 (n bytes of it in the frame). */
static int parse_l4(struct pkt *out, const uint8_t *l4, size_t n, enum mode m)
{
	bool frag_first = (out->flags & PKT_F_FRAG) && !(out->flags & PKT_F_FRAG_LATER);
	uint8_t icmp = out->l3 == PKT_L3_IP4 ? PKT_PROTO_ICMP : PKT_PROTO_ICMP6;

	out->l4 = l4;
	out->l4_len = n;
	if (out->flags & PKT_F_FRAG_LATER) {
		/* A later fragment starting inside the L4 header could rewrite the
		 * first fragment's ports or TCP flags at reassembly (RFC 1858). */
		if (m == QUOTED || out->frag_off < l4_min(out->proto))
			return -PKT_E_FRAG;
		return 0;
	}
	if (out->proto != PKT_PROTO_TCP && out->proto != PKT_PROTO_UDP && out->proto != icmp)
		return 0; /* no ports: the filter decides on the protocol alone */
	/* The first fragment must carry the whole header (tiny fragments). */
	if (n < l4_min(out->proto) && frag_first)
		return -PKT_E_FRAG;
	switch (out->proto) {
	case PKT_PROTO_TCP: {
		size_t doff;

		if (m == QUOTED) {
			if (n < 8)
				return -PKT_E_TCP;
			out->sport = be16(l4);
			out->dport = be16(l4 + 2);
			break;
		}
		if (n < 20)
			return -PKT_E_TCP;
		doff = (size_t)(l4[12] >> 4) * 4;
		if (doff < 20 || doff > n)
			return frag_first ? -PKT_E_FRAG : -PKT_E_TCP;
		out->sport = be16(l4);
		out->dport = be16(l4 + 2);
		out->tcp_flags = l4[13];
		out->payload = l4 + doff;
		out->payload_len = n - doff;
		break;
	}
	case PKT_PROTO_UDP: {
		size_t ulen;

		if (n < 8)
			return -PKT_E_UDP;
		out->sport = be16(l4);
		out->dport = be16(l4 + 2);
		ulen = be16(l4 + 4);
		if (m == WHOLE) {
			/* A first fragment's length covers the whole datagram. */
			if (ulen < 8 || (frag_first ? ulen < n : ulen > n))
				return -PKT_E_UDP;
			out->payload = l4 + 8;
			out->payload_len = (frag_first ? n : ulen) - 8;
		}
		break;
	}
	default: /* ICMP of the packet's own family */
		if (n < 8)
			return -PKT_E_ICMP;
		out->icmp_type = l4[0];
		out->icmp_code = l4[1];
		out->icmp_id = be16(l4 + 4);
		out->payload = l4 + 8;
		out->payload_len = n - 8;
		out->flags |= PKT_F_L4;
		return 0;
	}
	if (!out->sport || !out->dport)
		return -PKT_E_PORT0;
	out->flags |= PKT_F_L4;
	return 0;
}

/* IPv4 options (RFC 791 3.1): well-formed, and no source routing. */
static int ip4_options(const uint8_t *o, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t type = o[i];

		if (type == 0) /* end of option list */
			break;
		if (type == 1) { /* no operation */
			i++;
			continue;
		}
		if (n - i < 2 || o[i + 1] < 2 || o[i + 1] > n - i)
			return -PKT_E_IP4_OPT;
		if (type == 131 || type == 137) /* loose / strict source and record route */
			return -PKT_E_SRCROUTE;
		i += o[i + 1];
	}
	return 0;
}

static int parse_ip4(const uint8_t *p, size_t n, struct pkt *out, enum mode m)
{
	size_t ihl, tot;
	uint16_t frag;
	int r;

	if (n < 20 || p[0] >> 4 != 4)
		return -PKT_E_IP4_HDR;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	if (ihl < 20 || ihl > n)
		return -PKT_E_IP4_HDR;
	tot = be16(p + 2);
	if (tot < ihl)
		return -PKT_E_IP4_LEN;
	if (tot > n) {
		if (m == WHOLE)
			return -PKT_E_IP4_LEN;
		tot = n; /* the quote is cut short */
	}
	frag = be16(p + 6);
	if (frag & 0x8000) /* the reserved flag bit must be zero */
		return -PKT_E_IP4_HDR;
	r = ip4_options(p + 20, ihl - 20);
	if (r < 0)
		return r;
	out->l3 = PKT_L3_IP4;
	out->ip = p;
	out->ip_len = tot;
	out->ttl = p[8];
	out->proto = p[9];
	net_addr_set(&out->src, NET_AF4, p + 12);
	net_addr_set(&out->dst, NET_AF4, p + 16);
	out->frag_id = be16(p + 4);
	out->frag_off = (uint32_t)(frag & 0x1fff) * 8;
	if ((frag & 0x2000) || out->frag_off)
		out->flags |= PKT_F_FRAG;
	if (out->frag_off)
		out->flags |= PKT_F_FRAG_LATER;
	return parse_l4(out, p + ihl, tot - ihl, m);
}

static int parse_ip6(const uint8_t *p, size_t n, struct pkt *out, enum mode m)
{
	size_t tot, off = 40;
	uint8_t nh;
	bool seen_frag = false;

	if (n < 40 || p[0] >> 4 != 6)
		return -PKT_E_IP6_HDR;
	tot = 40 + (size_t)be16(p + 4);
	if (tot == 40 && p[6] == 0 && m == WHOLE)
		return -PKT_E_IP6_LEN; /* jumbogram (RFC 2675): not on an Ethernet link */
	if (tot > n) {
		if (m == WHOLE)
			return -PKT_E_IP6_LEN;
		tot = n;
	}
	out->l3 = PKT_L3_IP6;
	out->ip = p;
	out->ip_len = tot;
	out->ttl = p[7];
	net_addr_set(&out->src, NET_AF6, p + 8);
	net_addr_set(&out->dst, NET_AF6, p + 24);
	nh = p[6];
	for (int i = 0;; i++) {
		size_t hlen;

		switch (nh) {
		case 0:   /* hop-by-hop options: only right after the IPv6 header (RFC 8200 4.1) */
		case 43:  /* routing */
		case 60:  /* destination options */
		case 135: /* mobility */
		case 139: /* HIP */
		case 140: /* shim6 */
		case 253: /* experimentation (RFC 3692) */
		case 254:
			if (nh == 0 && i != 0)
				return -PKT_E_IP6_EXT;
			if (tot - off < 8)
				return (out->flags & PKT_F_FRAG) ? -PKT_E_FRAG : -PKT_E_IP6_EXT;
			hlen = ((size_t)p[off + 1] + 1) * 8;
			if (nh == 43 && p[off + 3] != 0) /* segments left: a source route */
				return -PKT_E_SRCROUTE;
			break;
		case 51: /* authentication header (RFC 4302 2.2) */
			if (tot - off < 8)
				return (out->flags & PKT_F_FRAG) ? -PKT_E_FRAG : -PKT_E_IP6_EXT;
			hlen = ((size_t)p[off + 1] + 2) * 4;
			break;
		case 44: { /* fragment (RFC 8200 4.5) */
			uint16_t fo;

			if (seen_frag || i >= PKT_IP6_MAX_EXT || tot - off < 8)
				return -PKT_E_IP6_EXT;
			seen_frag = true;
			fo = be16(p + off + 2);
			out->frag_id = be32(p + off + 4);
			out->frag_off = fo & 0xfff8u;
			if (out->frag_off || (fo & 1))
				out->flags |= PKT_F_FRAG;
			if (out->frag_off) {
				out->flags |= PKT_F_FRAG_LATER;
				out->proto = p[off];
				return parse_l4(out, p + off + 8, tot - off - 8, m);
			}
			hlen = 8;
			break;
		}
		default: /* upper layer, ESP (50) or no next header (59) */
			out->proto = nh;
			return parse_l4(out, p + off, tot - off, m);
		}
		if (i >= PKT_IP6_MAX_EXT)
			return -PKT_E_IP6_EXT;
		if (hlen > tot - off)
			return (out->flags & PKT_F_FRAG) ? -PKT_E_FRAG : -PKT_E_IP6_EXT;
		nh = p[off];
		off += hlen;
	}
}

int pkt_parse(const uint8_t *frame, size_t len, struct pkt *out)
{
	uint16_t et;

	memset(out, 0, sizeof(*out));
	if (len < PKT_ETH_HLEN)
		return -PKT_E_ETH_SHORT;
	memcpy(out->dst_mac, frame, 6);
	memcpy(out->src_mac, frame + 6, 6);
	et = be16(frame + 12);
	out->ethertype = et;
	switch (et) {
	case 0x8100: /* 802.1Q */
	case 0x88a8: /* 802.1ad */
	case 0x9100: /* pre-standard QinQ */
		return -PKT_E_VLAN;
	case PKT_ETH_ARP:
		return parse_arp(frame + PKT_ETH_HLEN, len - PKT_ETH_HLEN, out);
	case PKT_ETH_IP4:
		return parse_ip4(frame + PKT_ETH_HLEN, len - PKT_ETH_HLEN, out, WHOLE);
	case PKT_ETH_IP6:
		return parse_ip6(frame + PKT_ETH_HLEN, len - PKT_ETH_HLEN, out, WHOLE);
	default:
		return -PKT_E_ETHERTYPE;
	}
}

int pkt_parse_quoted(int family, const uint8_t *ip, size_t len, struct pkt *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	r = family == NET_AF4 ? parse_ip4(ip, len, out, QUOTED) : parse_ip6(ip, len, out, QUOTED);
	if (r < 0)
		return r;
	/* The quote must hold the ports (or the echo id): at least 8 bytes of L4. */
	if (!(out->flags & PKT_F_L4))
		return -PKT_E_FRAG;
	return 0;
}

const char *pkt_strerror(int err)
{
	static const char *const msg[PKT_E_COUNT] = {
		[PKT_OK] = "ok",
		[PKT_E_ETH_SHORT] = "frame shorter than an Ethernet header",
		[PKT_E_VLAN] = "VLAN-tagged frame",
		[PKT_E_ETHERTYPE] = "unsupported ethertype",
		[PKT_E_ARP] = "malformed or non-IPv4 ARP",
		[PKT_E_IP4_HDR] = "malformed IPv4 header",
		[PKT_E_IP4_LEN] = "IPv4 total length disagrees with the frame",
		[PKT_E_IP4_OPT] = "malformed IPv4 options",
		[PKT_E_IP6_HDR] = "malformed IPv6 header",
		[PKT_E_IP6_LEN] = "IPv6 payload length disagrees with the frame",
		[PKT_E_IP6_EXT] = "malformed or too many IPv6 extension headers",
		[PKT_E_SRCROUTE] = "source-routed packet",
		[PKT_E_FRAG] = "fragment without a whole L4 header or overlapping it",
		[PKT_E_TCP] = "malformed TCP header",
		[PKT_E_UDP] = "malformed UDP header",
		[PKT_E_ICMP] = "malformed ICMP header",
		[PKT_E_PORT0] = "TCP or UDP port 0",
	};

	if (err < 0)
		err = -err;
	return err < PKT_E_COUNT && msg[err] ? msg[err] : "unknown parse error";
}

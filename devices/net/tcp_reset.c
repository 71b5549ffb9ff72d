/*
 * tcp_reset: segments made up for the guest (tcp_reset.h).
 */
#include "devices/net/tcp_reset.h"

#include <string.h>

#include "lib/netrules/net_addr.h"

/* What one made-up segment carries. */
struct seg {
	int family; /* NET_AF4 or NET_AF6 */
	const uint8_t *src_mac, *dst_mac;
	const uint8_t *src, *dst; /* 4 or 16 bytes */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The ones' complement sum of n bytes (n even) added to sum. */
static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t build(const struct seg *s, uint8_t *out, size_t cap)
{
	size_t alen = s->family == NET_AF4 ? 4 : 16, iplen = s->family == NET_AF4 ? 20 : 40;
	size_t len = PKT_ETH_HLEN + iplen + 20;
	uint8_t *ip = out + PKT_ETH_HLEN, *tcp = ip + iplen;
	uint32_t sum;

	if (cap < len)
		return 0;
	memset(out, 0, len);
	memcpy(out, s->dst_mac, 6);
	memcpy(out + 6, s->src_mac, 6);
	put16(out + 12, s->family == NET_AF4 ? PKT_ETH_IP4 : PKT_ETH_IP6);
	if (s->family == NET_AF4) {
		ip[0] = 0x45;
		put16(ip + 2, 40);
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = PKT_PROTO_TCP;
		memcpy(ip + 12, s->src, 4);
		memcpy(ip + 16, s->dst, 4);
		put16(ip + 10, fold(sum16(0, ip, 20)));
	} else {
		ip[0] = 0x60;
		put16(ip + 4, 20);
		ip[6] = PKT_PROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, s->src, 16);
		memcpy(ip + 24, s->dst, 16);
	}
	put16(tcp, s->sport);
	put16(tcp + 2, s->dport);
	put32(tcp + 4, s->seq);
	put32(tcp + 8, s->ack);
	tcp[12] = 5 << 4;
	tcp[13] = s->flags;
	/* The pseudo-header: addresses, protocol, TCP length. */
	sum = sum16(0, s->src, alen);
	sum = sum16(sum, s->dst, alen);
	sum += PKT_PROTO_TCP + 20;
	put16(tcp + 16, fold(sum16(sum, tcp, 20)));
	return len;
}

size_t tcp_reset_reply(const struct pkt *p, uint8_t *out, size_t cap)
{
	struct seg s;
	const uint8_t *th = p->l4;
	uint32_t seq, len;

	if ((p->l3 != PKT_L3_IP4 && p->l3 != PKT_L3_IP6) || p->proto != PKT_PROTO_TCP ||
	    !(p->flags & PKT_F_L4) || (p->flags & (PKT_F_FRAG | PKT_F_FRAG_LATER)) ||
	    (p->tcp_flags & PKT_TCP_RST) || !th || p->l4_len < 20)
		return 0;
	memset(&s, 0, sizeof(s));
	s.family = p->src.family;
	s.src_mac = p->dst_mac;
	s.dst_mac = p->src_mac;
	s.src = p->dst.b;
	s.dst = p->src.b;
	s.sport = p->dport;
	s.dport = p->sport;
	if (p->tcp_flags & PKT_TCP_ACK) {
		s.seq = get32(th + 8);
		s.flags = PKT_TCP_RST;
	} else {
		/* SEG.LEN counts SYN and FIN as one each. */
		seq = get32(th + 4);
		len = (uint32_t)p->payload_len + !!(p->tcp_flags & PKT_TCP_SYN) +
			!!(p->tcp_flags & PKT_TCP_FIN);
		s.ack = seq + len;
		s.flags = PKT_TCP_RST | PKT_TCP_ACK;
	}
	return build(&s, out, cap);
}

size_t tcp_reset_probe(const struct conntrack_key *k, unsigned half, const uint8_t guest_mac[6],
		       const uint8_t src_mac[6], uint8_t *out, size_t cap)
{
	struct seg s;

	if (k->proto != PKT_PROTO_TCP || (k->family != NET_AF4 && k->family != NET_AF6) ||
	    !k->gport || !k->rport)
		return 0;
	memset(&s, 0, sizeof(s));
	s.family = k->family;
	s.src_mac = src_mac;
	s.dst_mac = guest_mac;
	s.src = k->remote;
	s.dst = k->guest;
	s.sport = k->rport;
	s.dport = k->gport;
	s.seq = half ? 0x80000000u : 0;
	s.ack = 0;
	s.flags = PKT_TCP_ACK;
	return build(&s, out, cap);
}

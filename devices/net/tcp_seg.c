/*
 * tcp_seg: TCP segments toward the guest, and the TCP checksum (tcp_seg.h).
 */
#include "devices/net/tcp_seg.h"

#include <string.h>

#include "lib/netrules/net_addr.h"

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

/*
 * The ones' complement sum of n bytes added to sum; *odd says whether an
 * odd byte is pending from an earlier piece (RFC 1071: a stream summed in
 * pieces pairs its bytes across them). 64 bits: no fold needed for any
 * length this module sees.
 */
static uint64_t sum16(uint64_t sum, const uint8_t *p, size_t n, bool *odd)
{
	size_t i = 0;

	if (n && *odd) {
		sum += p[0];
		i = 1;
		*odd = false;
	}
	for (; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < n) {
		sum += (uint32_t)p[i] << 8;
		*odd = true;
	}
	return sum;
}

static uint16_t fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The pseudo-header's sum: addresses, protocol, TCP length. */
static uint64_t pseudo(int family, const uint8_t *src, const uint8_t *dst, size_t tcp_len)
{
	size_t alen = family == NET_AF4 ? 4 : 16;
	bool odd = false;
	uint64_t sum = sum16(0, src, alen, &odd);

	sum = sum16(sum, dst, alen, &odd);
	return sum + PKT_PROTO_TCP + tcp_len;
}

size_t tcp_seg_hdr_len(const struct tcp_seg *s)
{
	return PKT_ETH_HLEN + (s->family == NET_AF4 ? 20 : 40) + (s->mss ? 24 : 20);
}

size_t tcp_seg_build(const struct tcp_seg *s, uint8_t *out, size_t cap)
{
	size_t iplen = s->family == NET_AF4 ? 20 : 40, thl = s->mss ? 24 : 20;
	size_t dlen = s->data_len[0] + s->data_len[1], tcp_len = thl + dlen;
	size_t len = PKT_ETH_HLEN + iplen + tcp_len;
	uint8_t *ip = out + PKT_ETH_HLEN, *tcp = ip + iplen;
	bool odd = false;
	uint64_t sum;

	/* An IPv4 total length and an IPv6 payload length are 16 bits. */
	if (cap < len || iplen + tcp_len > 0xffff)
		return 0;
	memset(out, 0, PKT_ETH_HLEN + iplen + thl);
	memcpy(out, s->dst_mac, 6);
	memcpy(out + 6, s->src_mac, 6);
	put16(out + 12, s->family == NET_AF4 ? PKT_ETH_IP4 : PKT_ETH_IP6);
	if (s->family == NET_AF4) {
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)(20 + tcp_len));
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = PKT_PROTO_TCP;
		memcpy(ip + 12, s->src, 4);
		memcpy(ip + 16, s->dst, 4);
		put16(ip + 10, fold(sum16(0, ip, 20, &odd)));
	} else {
		ip[0] = 0x60;
		put16(ip + 4, (uint16_t)tcp_len);
		ip[6] = PKT_PROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, s->src, 16);
		memcpy(ip + 24, s->dst, 16);
	}
	put16(tcp, s->sport);
	put16(tcp + 2, s->dport);
	put32(tcp + 4, s->seq);
	put32(tcp + 8, s->ack);
	tcp[12] = (uint8_t)(thl / 4) << 4;
	tcp[13] = s->flags;
	put16(tcp + 14, s->window);
	if (s->mss) {
		tcp[20] = 2; /* kind MSS, length 4 (RFC 9293 3.2) */
		tcp[21] = 4;
		put16(tcp + 22, s->mss);
	}
	for (int i = 0; i < 2; i++)
		if (s->data_len[i])
			memcpy(tcp + thl + (i ? s->data_len[0] : 0), s->data[i], s->data_len[i]);
	odd = false;
	sum = sum16(pseudo(s->family, s->src, s->dst, tcp_len), tcp, tcp_len, &odd);
	put16(tcp + 16, fold(sum));
	return len;
}

bool tcp_seg_checksum_ok(const struct pkt *p)
{
	bool odd = false;
	uint64_t sum;

	if (!p->l4 || p->l4_len < 20)
		return false;
	sum = sum16(pseudo(p->src.family, p->src.b, p->dst.b, p->l4_len), p->l4, p->l4_len, &odd);
	return fold(sum) == 0;
}

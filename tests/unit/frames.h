/*
 * frames: hand-built Ethernet frames and DNS messages for the packet
 * filter's tests (pkt_parse, dns_bind, net_filter). Checksums are left
 * zero: the filter does not read them (fr_csum computes them where a
 * module does: tcp_reset, tcp_term).
 */
#ifndef KILN_TEST_FRAMES_H
#define KILN_TEST_FRAMES_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define FR_TCP 6
#define FR_UDP 17
#define FR_ICMP 1
#define FR_ICMP6 58

static const uint8_t fr_guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t fr_gw_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };

struct fr {
	const uint8_t *src_mac, *dst_mac; /* default: guest -> gateway */
	const char *src, *dst;            /* IPv4 or IPv6 text; the family follows */
	uint8_t proto;
	uint16_t sport, dport;
	uint8_t tcp_flags;
	uint8_t icmp_type, icmp_code;
	uint16_t icmp_id;
	uint8_t ttl; /* 0: 64 */
	const void *payload;
	size_t payload_len;
};

static inline void fr_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void fr_put32(uint8_t *p, uint32_t v)
{
	fr_put16(p, (uint16_t)(v >> 16));
	fr_put16(p + 2, (uint16_t)v);
}

static inline uint32_t fr_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The ones' complement sum (RFC 1071) of n bytes added to sum, folded:
 * 0xffff over a header or segment whose checksum is right. The tests'
 * own, independent of the builders they check.
 */
static inline uint16_t fr_csum(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Fill the L4 header + payload at p; returns its length. */
static inline size_t fr_l4(uint8_t *p, const struct fr *s)
{
	size_t h;

	switch (s->proto) {
	case FR_TCP:
		h = 20;
		memset(p, 0, h);
		fr_put16(p, s->sport);
		fr_put16(p + 2, s->dport);
		fr_put32(p + 4, 1000);
		p[12] = 5 << 4;
		p[13] = s->tcp_flags;
		fr_put16(p + 14, 65535);
		break;
	case FR_UDP:
		h = 8;
		fr_put16(p, s->sport);
		fr_put16(p + 2, s->dport);
		fr_put16(p + 4, (uint16_t)(8 + s->payload_len));
		fr_put16(p + 6, 0);
		break;
	case FR_ICMP:
	case FR_ICMP6:
		h = 8;
		memset(p, 0, h);
		p[0] = s->icmp_type;
		p[1] = s->icmp_code;
		fr_put16(p + 4, s->icmp_id);
		fr_put16(p + 6, 1);
		break;
	default:
		h = 0;
	}
	if (s->payload_len)
		memcpy(p + h, s->payload, s->payload_len);
	return h + s->payload_len;
}

/* An IPv4/IPv6 packet (no Ethernet header) at p; returns its length. */
static inline size_t fr_ip(uint8_t *p, const struct fr *s)
{
	bool v6 = strchr(s->src, ':') != NULL;
	size_t l4;

	if (!v6) {
		memset(p, 0, 20);
		p[0] = 0x45;
		fr_put16(p + 4, 0x1111);
		p[8] = s->ttl ? s->ttl : 64;
		p[9] = s->proto;
		inet_pton(AF_INET, s->src, p + 12);
		inet_pton(AF_INET, s->dst, p + 16);
		l4 = fr_l4(p + 20, s);
		fr_put16(p + 2, (uint16_t)(20 + l4));
		return 20 + l4;
	}
	memset(p, 0, 40);
	p[0] = 0x60;
	p[6] = s->proto;
	p[7] = s->ttl ? s->ttl : 64;
	inet_pton(AF_INET6, s->src, p + 8);
	inet_pton(AF_INET6, s->dst, p + 24);
	l4 = fr_l4(p + 40, s);
	fr_put16(p + 4, (uint16_t)l4);
	return 40 + l4;
}

/* A whole frame into out (at least 2048 bytes); returns its length. */
static inline size_t fr_build(uint8_t *out, const struct fr *s)
{
	bool v6 = strchr(s->src, ':') != NULL;

	memcpy(out, s->dst_mac ? s->dst_mac : fr_gw_mac, 6);
	memcpy(out + 6, s->src_mac ? s->src_mac : fr_guest_mac, 6);
	fr_put16(out + 12, v6 ? 0x86dd : 0x0800);
	return 14 + fr_ip(out + 14, s);
}

/* An ARP frame (42 bytes). */
static inline size_t fr_arp(uint8_t *out, const uint8_t *src_mac, uint16_t op, const uint8_t *sha,
			    const char *spa, const char *tpa)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *a = out + 14;

	memcpy(out, bcast, 6);
	memcpy(out + 6, src_mac, 6);
	fr_put16(out + 12, 0x0806);
	fr_put16(a, 1);
	fr_put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	fr_put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	inet_pton(AF_INET, spa, a + 14);
	memset(a + 18, 0, 6);
	inet_pton(AF_INET, tpa, a + 24);
	return 42;
}

/* DNS: a name in wire form at p; returns its length. */
static inline size_t dns_put_name(uint8_t *p, const char *name)
{
	size_t n = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		p[n++] = (uint8_t)l;
		memcpy(p + n, name, l);
		n += l;
		name += l;
		if (*name == '.')
			name++;
	}
	p[n++] = 0;
	return n;
}

/* A query or the start of a response: header + one question. */
static inline size_t dns_msg(uint8_t *m, uint16_t id, bool response, const char *qname,
			     uint16_t qtype, uint16_t ancount)
{
	size_t n = 12;

	memset(m, 0, 12);
	fr_put16(m, id);
	fr_put16(m + 2, response ? 0x8180 : 0x0100); /* QR + RD + RA / RD */
	fr_put16(m + 4, 1);
	fr_put16(m + 6, ancount);
	n += dns_put_name(m + n, qname);
	fr_put16(m + n, qtype);
	fr_put16(m + n + 2, 1);
	return n + 4;
}

/* Append a record. owner: a name, or NULL for a pointer to the question name (offset 12). */
static inline size_t dns_rr(uint8_t *m, size_t n, const char *owner, uint16_t type, uint32_t ttl,
			    const void *rdata, uint16_t rdlen)
{
	if (owner) {
		n += dns_put_name(m + n, owner);
	} else {
		m[n++] = 0xc0;
		m[n++] = 12;
	}
	fr_put16(m + n, type);
	fr_put16(m + n + 2, 1);
	fr_put32(m + n + 4, ttl);
	fr_put16(m + n + 8, rdlen);
	memcpy(m + n + 10, rdata, rdlen);
	return n + 10 + rdlen;
}

static inline size_t dns_rr_a(uint8_t *m, size_t n, const char *owner, const char *ip, uint32_t ttl)
{
	uint8_t a[16];

	if (strchr(ip, ':')) {
		inet_pton(AF_INET6, ip, a);
		return dns_rr(m, n, owner, 28, ttl, a, 16);
	}
	inet_pton(AF_INET, ip, a);
	return dns_rr(m, n, owner, 1, ttl, a, 4);
}

/* A copy of exactly len bytes on the heap, so ASan sees any read past it. */
static inline uint8_t *fr_exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (len)
		memcpy(p, src, len);
	return p;
}

/* xorshift64*: a fixed-seed generator for fuzz loops. */
static inline uint64_t fr_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

#endif

/* The PROXY protocol v2 header of a steered flow; see proxy_v2.h. */
#include "lib/netrules/proxy_v2.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "lib/netrules/net_rules.h"

static const uint8_t sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

#define FIXED 16       /* signature, version/command, family, length */
#define VER_PROXY 0x21 /* version 2, command PROXY */
#define FAM_TCP4 0x11
#define FAM_TCP6 0x21
#define ADDRS4 12
#define ADDRS6 36

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The AUTHORITY as a host name, through the filter's own parser of rule
 * hosts (net_host_parse: labels of 1..63 letters, digits, '-', '_', at
 * most NET_HOST_MAX, lower-cased, one trailing dot dropped); a wildcard
 * is no host. 0, or -1. */
static int host_parse(const uint8_t *p, size_t n, char *out)
{
	char text[PROXY_V2_AUTHORITY_MAX + 2];
	bool wildcard;

	if (n == 0 || n > PROXY_V2_AUTHORITY_MAX + 1 || memchr(p, '\0', n))
		return -1;
	memcpy(text, p, n);
	text[n] = '\0';
	return net_host_parse(text, out, &wildcard) < 0 || wildcard ? -1 : 0;
}

/* KILN_NAMES' value p[0..n): names each ended by NUL, into out->also. */
static int also_parse(const uint8_t *p, size_t n, struct proxy_v2 *out, struct err *e)
{
	if (out->n_also || !n || p[n - 1] != '\0')
		return err_set(e, EPROTO,
			       "PROXY v2 header: KILN_NAMES repeated, empty or not ended by NUL");
	for (size_t at = 0; at < n;) {
		const uint8_t *z = memchr(p + at, '\0', n - at);
		size_t len = (size_t)(z - (p + at));

		if (out->n_also == PROXY_V2_NAMES_MAX - 1)
			return err_set(e, EPROTO, "PROXY v2 header: KILN_NAMES has over %d names",
				       PROXY_V2_NAMES_MAX - 1);
		if (host_parse(p + at, len, out->also[out->n_also]) < 0)
			return err_set(e, EPROTO,
				       "PROXY v2 header: KILN_NAMES name %zu is not a host name",
				       out->n_also + 1);
		out->n_also++;
		at += len + 1;
	}
	return 0;
}

static int tlvs(const uint8_t *p, size_t n, struct proxy_v2 *out, struct err *e)
{
	size_t at = 0;
	int r;

	while (at < n) {
		uint16_t vlen;

		if (n - at < 3)
			return err_set(
				e, EPROTO,
				"PROXY v2 header: a TLV cut short (%zu bytes left of its 3-byte head)",
				n - at);
		vlen = be16(p + at + 1);
		if (vlen > n - at - 3)
			return err_set(
				e, EPROTO,
				"PROXY v2 header: TLV 0x%02x says %u bytes, the header has %zu left",
				p[at], vlen, n - at - 3);
		if (p[at] == PROXY_V2_TYPE_AUTHORITY) {
			if (out->authority[0])
				return err_set(e, EPROTO, "PROXY v2 header: a second AUTHORITY");
			if (host_parse(p + at + 3, vlen, out->authority) < 0)
				return err_set(
					e, EPROTO,
					"PROXY v2 header: AUTHORITY is not a host name (%u bytes; letters, digits, '-', '_', '.')",
					vlen);
		}
		if (p[at] == PROXY_V2_TYPE_KILN_NAMES &&
		    (r = also_parse(p + at + 3, vlen, out, e)) < 0)
			return r;
		at += 3 + (size_t)vlen;
	}
	if (out->n_also && !out->authority[0])
		return err_set(e, EPROTO, "PROXY v2 header: KILN_NAMES without an AUTHORITY");
	return 0;
}

bool proxy_v2_names(const struct proxy_v2 *h, const char *name)
{
	size_t n = strlen(name);

	if (n && name[n - 1] == '.')
		n--;
	if (strlen(h->authority) == n && !strncasecmp(h->authority, name, n))
		return true;
	for (size_t i = 0; i < h->n_also && i < PROXY_V2_NAMES_MAX - 1; i++)
		if (strlen(h->also[i]) == n && !strncasecmp(h->also[i], name, n))
			return true;
	return false;
}

int proxy_v2_decode(const uint8_t *buf, size_t len, struct proxy_v2 *out, size_t *need,
		    struct err *e)
{
	size_t total, addrs;

	memset(out, 0, sizeof(*out));
	*need = FIXED;
	/* The signature is refused as soon as a byte of it is wrong: a
	 * peer that is not speaking this protocol learns it at once. */
	if (memcmp(buf, sig, len < sizeof(sig) ? len : sizeof(sig)))
		return err_set(e, EPROTO,
			       "PROXY v2 header: no signature at the start of the stream");
	if (len < FIXED)
		return 0;
	if (buf[12] != VER_PROXY)
		return err_set(e, EPROTO,
			       "PROXY v2 header: version/command 0x%02x, only 0x21 (v2, PROXY)",
			       buf[12]);
	if (buf[13] != FAM_TCP4 && buf[13] != FAM_TCP6)
		return err_set(
			e, EPROTO,
			"PROXY v2 header: family/transport 0x%02x, only TCP over IPv4 (0x11) or IPv6 (0x21)",
			buf[13]);
	addrs = buf[13] == FAM_TCP4 ? ADDRS4 : ADDRS6;
	total = FIXED + be16(buf + 14);
	if (total > PROXY_V2_MAX)
		return err_set(e, EMSGSIZE, "PROXY v2 header: %zu bytes, at most %d", total,
			       PROXY_V2_MAX);
	if (total < FIXED + addrs)
		return err_set(e, EPROTO,
			       "PROXY v2 header: %zu bytes after the fixed part, the addresses need %zu",
			       total - FIXED, addrs);
	*need = total;
	if (len < total)
		return 0;
	out->family = buf[13] == FAM_TCP4 ? AF_INET : AF_INET6;
	memcpy(out->src, buf + FIXED, addrs == ADDRS4 ? 4 : 16);
	memcpy(out->dst, buf + FIXED + (addrs == ADDRS4 ? 4 : 16), addrs == ADDRS4 ? 4 : 16);
	out->sport = be16(buf + FIXED + addrs - 4);
	out->dport = be16(buf + FIXED + addrs - 2);
	if (out->sport == 0 || out->dport == 0)
		return err_set(e, EPROTO, "PROXY v2 header: port 0 (source %u, destination %u)",
			       out->sport, out->dport);
	{
		int r = tlvs(buf + FIXED + addrs, total - FIXED - addrs, out, e);

		return r < 0 ? r : (int)total;
	}
}

int proxy_v2_encode(const struct proxy_v2 *h, uint8_t *buf, size_t cap)
{
	size_t alen = h->family == AF_INET ? 4 : 16, addrs = 2 * alen + 4;
	size_t name = strnlen(h->authority, sizeof(h->authority)), also = 0;
	size_t total = FIXED + addrs + (name ? 3 + name : 0);
	char parsed[PROXY_V2_AUTHORITY_MAX + 1];
	uint8_t *p;

	if ((h->family != AF_INET && h->family != AF_INET6) || !h->sport || !h->dport ||
	    name == sizeof(h->authority) ||
	    (name && host_parse((const uint8_t *)h->authority, name, parsed) < 0) ||
	    h->n_also > PROXY_V2_NAMES_MAX - 1 || (h->n_also && !name))
		return -EINVAL;
	for (size_t i = 0; i < h->n_also; i++) {
		size_t k = strnlen(h->also[i], sizeof(h->also[i]));

		if (k == sizeof(h->also[i]) ||
		    host_parse((const uint8_t *)h->also[i], k, parsed) < 0)
			return -EINVAL;
		also += k + 1;
	}
	total += also ? 3 + also : 0;
	if (total > cap)
		return -ENOSPC;
	memcpy(buf, sig, sizeof(sig));
	buf[12] = VER_PROXY;
	buf[13] = h->family == AF_INET ? FAM_TCP4 : FAM_TCP6;
	put16(buf + 14, (uint16_t)(total - FIXED));
	p = buf + FIXED;
	memcpy(p, h->src, alen);
	memcpy(p + alen, h->dst, alen);
	put16(p + 2 * alen, h->sport);
	put16(p + 2 * alen + 2, h->dport);
	if (name) {
		p += addrs;
		p[0] = PROXY_V2_TYPE_AUTHORITY;
		put16(p + 1, (uint16_t)name);
		memcpy(p + 3, h->authority, name);
		p += 3 + name;
	}
	if (also) { /* after the AUTHORITY: there is one */
		p[0] = PROXY_V2_TYPE_KILN_NAMES;
		put16(p + 1, (uint16_t)also);
		p += 3;
		for (size_t i = 0; i < h->n_also; i++) {
			size_t k = strlen(h->also[i]) + 1;

			memcpy(p, h->also[i], k);
			p += k;
		}
	}
	return (int)total;
}

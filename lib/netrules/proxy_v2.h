/*
 * proxy_v2: the header that opens each guest flow kiln-vmm hands to the
 * egress proxy (issue 37), in the PROXY protocol's version 2 binary form
 * (HAProxy's proxy-protocol.txt, section 2.2), so the proxy end can also
 * be any program that speaks it. One codec, linked by both ends:
 * kiln-vmm's net_steer writes it, kiln-egress reads it.
 *
 * Layout (facts from the specification, no code taken from anywhere):
 *   12 bytes  signature 0D 0A 0D 0A 00 0D 0A 51 55 49 54 0A
 *    1 byte   version 2 (high nibble) and command PROXY (1)
 *    1 byte   family INET (1) or INET6 (2) (high nibble), STREAM (1)
 *    2 bytes  length of what follows, big endian
 *   12 or 36  source address, destination address, source port,
 *             destination port (network order)
 *   the rest  TLVs: type (1 byte), length (2 bytes, big endian), value.
 *             kiln sends PP2_TYPE_AUTHORITY (0x02): the host name
 *             kiln-vmm's packet filter bound to the destination address
 *             from the DNS answers the guest received; absent when the
 *             guest connected to an address it had not looked up.
 *             When the filter bound more than one name to that address
 *             (names of one CDN share addresses), the others follow in
 *             one TLV of kiln's own, PROXY_V2_TYPE_KILN_NAMES (0xE0, in
 *             the range the specification leaves to applications):
 *             each name followed by a NUL byte, at most
 *             PROXY_V2_NAMES_MAX - 1 of them. The guest's name for the
 *             flow must be one of these, whichever DNS answer it used.
 *
 * What the fields mean here: source = the guest's address and port,
 * destination = where the guest connected. Both are claims of kiln-vmm,
 * which is assumed compromised: the proxy resolves names itself and
 * checks the destination against what it resolved (docs/security.md).
 *
 * Contract:
 *  - Pure: no I/O, no allocation, no state between calls.
 *  - proxy_v2_decode reads the first bytes of a stream. It returns the
 *    header's length (> 0) with *out filled; 0 when more bytes are needed
 *    (*need: how many in all, never more than PROXY_V2_MAX); or -errno
 *    with e->msg saying what is wrong. Refused: another signature,
 *    version or command (LOCAL carries no flow), a family or transport
 *    other than TCP over IPv4 or IPv6, a length beyond PROXY_V2_MAX or
 *    short of the addresses, a TLV cut short, a second AUTHORITY, an
 *    AUTHORITY that is not a host name as the packet filter's rules read
 *    one (net_host_parse: labels of 1..63 letters, digits, '-' and '_',
 *    at most 253 bytes; kept lower-cased, without a trailing dot), port 0;
 *    a KILN_NAMES without an AUTHORITY, a second one, one not ending in
 *    NUL, holding an empty name, a name as AUTHORITY may not be, or more
 *    than PROXY_V2_NAMES_MAX - 1 names.
 *    Other TLVs are skipped, as the specification asks of a receiver.
 *  - proxy_v2_encode writes what decode accepts: the header's length, or
 *    -EINVAL (a field decode would refuse) or -ENOSPC (cap too small).
 */
#ifndef KILN_PROXY_V2_H
#define KILN_PROXY_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

/* The whole header kiln accepts: the fixed 16 bytes, IPv6 addresses, one
 * AUTHORITY and 7 more names of 253 bytes, and room for a few small TLVs
 * of other senders. */
#define PROXY_V2_MAX 2560
#define PROXY_V2_AUTHORITY_MAX 253
/* The names one destination may carry (AUTHORITY and the others): the
 * packet filter's names per address (dns_bind's DNS_BIND_PER_ADDR). */
#define PROXY_V2_NAMES_MAX 8

#define PROXY_V2_TYPE_AUTHORITY 0x02
#define PROXY_V2_TYPE_KILN_NAMES 0xE0

struct proxy_v2 {
	int family;                                 /* AF_INET or AF_INET6 */
	uint8_t src[16], dst[16];                   /* an IPv4 address is the first 4 bytes */
	uint16_t sport, dport;                      /* host order */
	char authority[PROXY_V2_AUTHORITY_MAX + 1]; /* "" when absent */
	/* The other names bound to dst (KILN_NAMES), only with an authority */
	char also[PROXY_V2_NAMES_MAX - 1][PROXY_V2_AUTHORITY_MAX + 1];
	size_t n_also;
};

/* name is h's AUTHORITY or one of its other names (as decode keeps them:
 * lower case, no trailing dot; name may have one, and any case). */
bool proxy_v2_names(const struct proxy_v2 *h, const char *name);

int proxy_v2_decode(const uint8_t *buf, size_t len, struct proxy_v2 *out, size_t *need,
		    struct err *e);
int proxy_v2_encode(const struct proxy_v2 *h, uint8_t *buf, size_t cap);

#endif

/*
 * tls_hello: what the first bytes a client sent on a TCP connection say,
 * read before anything is forwarded: is it TLS, and if so the
 * ClientHello's server_name (SNI) and which HTTP versions its ALPN offers.
 * A parser of the egress proxy (issue 37): kiln-egress (api/egress) uses it.
 *
 * Layouts (facts from the RFCs, no code taken from anywhere):
 *  - record (RFC 8446 5.1, RFC 5246 6.2.1): type 22 (handshake), a
 *    version whose first byte is 3, a 16-bit length of 1..2^14.
 *  - handshake (RFC 8446 4): type 1 (client_hello), a 24-bit length; one
 *    message may be fragmented over several records, and nothing else may
 *    sit between its fragments (RFC 8446 5.1).
 *  - ClientHello (RFC 8446 4.1.2, RFC 5246 7.4.1.2): version (2), random
 *    (32), session_id<0..32>, cipher_suites<2..2^16-2> (pairs),
 *    compression_methods<1..2^8-1>, then extensions<0..2^16-1>, which a
 *    TLS 1.2 client may leave out altogether; each extension a 16-bit
 *    type and a 16-bit length, no type twice (RFC 8446 4.2), and
 *    pre_shared_key (41), when present, last (RFC 8446 4.2.11).
 *  - server_name (0; RFC 6066 3): a list<1..2^16-1> of (name_type,
 *    HostName<1..2^16-1>); host_name (0) is the only type defined, so any
 *    other type is refused (its length could not be known), and so is a
 *    second host_name.
 *  - ALPN (16; RFC 7301 3.1): a list<2..2^16-1> of names<1..2^8-1>.
 *
 * Contract:
 *  - Pure: no I/O, no allocation, no state between calls. The caller
 *    reads the connection into one buffer and calls tls_hello_read on
 *    all it has so far; the answer is one of:
 *      TLS_HELLO_NEED_MORE  read until at least `need` bytes are in and
 *                           call again; need never exceeds TLS_HELLO_MAX,
 *                           so a buffer of TLS_HELLO_MAX bytes always
 *                           suffices;
 *      TLS_HELLO_NOT_TLS    the first byte is not a handshake record (a
 *                           plain HTTP request on port 443, say);
 *      TLS_HELLO_MALFORMED  a handshake record, but no acceptable
 *                           ClientHello: e->msg says why;
 *      TLS_HELLO_OK         a ClientHello, in the first `len` bytes (its
 *                           records, whole).
 *  - A ClientHello fragmented over several records is reassembled, as
 *    long as its records span at most TLS_HELLO_MAX bytes of input; a
 *    larger one is refused (real ones are under 2 KiB; 16 KiB also holds
 *    a post-quantum key share and any padding). Bytes after the
 *    ClientHello in its last record are refused: the client sends nothing
 *    more before the server answers, and early data starts a record of
 *    its own (RFC 8446 5.1, records align with a key change).
 *  - server_name, when present, is checked as a DNS host name: ASCII
 *    letters, digits and '-' (LDH; no '_', which host names never hold),
 *    labels of 1..63 bytes not starting or ending with '-', 253 bytes at
 *    most, lower-cased. IP address literals are refused (RFC 6066 3: not
 *    permitted in HostName): anything with ':' and any name whose last
 *    label is all digits (no top-level domain is, and "127.1" is an
 *    address to inet_aton). A trailing dot is refused too: RFC 6066 says
 *    the name is sent without one, and a name that differs from the DNS
 *    answer's spelling is one more way to disagree with the destination.
 *  - The SNI is what the client claims; the proxy matches rules against
 *    the destination its filter recorded and refuses a disagreeing SNI.
 *    With encrypted_client_hello offered (`ech`), the SNI seen here is
 *    only the outer, public name: the proxy must not take it for the
 *    destination.
 */
#ifndef KILN_TLS_HELLO_H
#define KILN_TLS_HELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

/* The most input bytes tls_hello_read ever asks for. */
#define TLS_HELLO_MAX 16384
/* A host name in text form (RFC 1035 2.3.4, less the root's dot). */
#define TLS_HELLO_NAME_MAX 253

enum tls_hello_status {
	TLS_HELLO_OK,
	TLS_HELLO_NEED_MORE,
	TLS_HELLO_NOT_TLS,
	TLS_HELLO_MALFORMED,
};

struct tls_hello {
	size_t need; /* NEED_MORE: read until at least this many bytes are in */
	size_t len;  /* OK: bytes the ClientHello's records span */
	uint16_t record_version;
	uint16_t version; /* the ClientHello's legacy_version */
	bool has_sni;
	char sni[TLS_HELLO_NAME_MAX + 1]; /* lower case; "" without SNI */
	bool has_alpn;
	bool alpn_h2;     /* ALPN offers "h2" */
	bool alpn_http11; /* ALPN offers "http/1.1" */
	bool tls13;       /* supported_versions offers TLS 1.3 */
	bool ech;         /* encrypted_client_hello offered: sni is the outer name */
};

/*
 * Read the client's first n bytes. *h is filled (zeroed first); e->msg
 * says why for NOT_TLS and MALFORMED (e may be NULL).
 */
enum tls_hello_status tls_hello_read(const uint8_t *buf, size_t n, struct tls_hello *h,
				     struct err *e);

/* "ok", "need more", "not TLS", "malformed". */
const char *tls_hello_status_name(enum tls_hello_status s);

#endif

/*
 * tls_leaf: a server certificate for one exact DNS host name, signed by
 * the sandbox's CA (tls_ca.h), that the egress proxy (issue 37, kiln-egress)
 * presents to the guest for the host it intercepts.
 *
 * A leaf: a fresh ECDSA P-256 key; subjectAltName dNSName = the host name
 * and nothing else (the subject is "O=kiln egress proxy", no common name:
 * clients match the SAN, RFC 6125 6.4.4, and none may fall back to a CN);
 * extendedKeyUsage serverAuth; keyUsage digitalSignature (critical);
 * basicConstraints CA:FALSE (critical); subject and authority key
 * identifiers (the authority's is the CA's); valid from an hour ago, or
 * the CA's start, to TLS_LEAF_LIFETIME from now, or the CA's end.
 *
 * Host names are checked before anything is made (tls_host_check): an
 * LDH name (letters, digits, '-'; labels of 1..63 bytes not starting or
 * ending with '-'; 253 bytes at most), compared and named in lower case.
 * Refused: wildcards (the proxy mints per exact host, so one leaf never
 * covers a sibling), IP literals and names that read as one (a last
 * label of digits, "0x7f.1"), a trailing dot, anything else; each with
 * its own line.
 *
 * Contract: errors are -errno with one line in e; no globals; any number
 * of threads may mint from one CA at once.
 */
#ifndef KILN_TLS_LEAF_H
#define KILN_TLS_LEAF_H

#include <time.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/base/err.h"
#include "lib/tlsmint/tls_ca.h"

/* The longest DNS name in text form (RFC 1035 2.3.4: 255 octets on the
 * wire are 253 characters without the root's dot). */
#define TLS_HOST_MAX 253
/* A leaf's longest life: 30 days (the proxy mints again long before a
 * client could care; a leaked leaf key is worth a month at most). */
#define TLS_LEAF_LIFETIME (30L * 86400L)

struct tls_leaf {
	X509 *cert;
	EVP_PKEY *key;
	time_t not_after;
	char host[TLS_HOST_MAX + 1]; /* lower case */
};

/* host checked as above, its lower-case form in out. -EINVAL with the
 * reason in e. */
int tls_host_check(const char *host, char out[TLS_HOST_MAX + 1], struct err *e);

/* A leaf for host, signed by ca. -EINVAL for a refused host name,
 * -EKEYEXPIRED when the CA has expired (or is not valid yet). */
int tls_leaf_mint(const struct tls_ca *ca, const char *host, struct tls_leaf **out, struct err *e);

void tls_leaf_free(struct tls_leaf *leaf);

#endif

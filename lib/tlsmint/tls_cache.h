/*
 * tls_cache: the leaves one CA has minted, by host name, so the planned
 * egress proxy (issue 37) makes a key and signs once per host, not once
 * per connection.
 *
 * Bounded: at most cap leaves (TLS_CACHE_DEFAULT is the proxy's); a new
 * host past the bound evicts the least recently used one. A leaf within
 * TLS_CACHE_RENEW of its end is minted again (unless the CA ends as
 * soon: a leaf never outlives its CA, so a fresh one would be no
 * longer).
 *
 * Contract: thread-safe: any number of threads may call tls_cache_get at
 * once (one mutex over the table; minting, the slow part, runs outside
 * it, and two threads missing the same host at once keep the first leaf
 * and drop the second). What tls_cache_get hands out is the caller's own
 * reference: an evicted or renewed leaf stays valid for whoever holds it.
 * The CA is borrowed and must outlive the cache; tls_cache_free only
 * when no call is running.
 */
#ifndef KILN_TLS_CACHE_H
#define KILN_TLS_CACHE_H

#include <stddef.h>
#include <time.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/base/err.h"
#include "lib/tlsmint/tls_ca.h"

#define TLS_CACHE_DEFAULT 256
#define TLS_CACHE_MAX 65536
/* Renew a cached leaf when less than this is left of it (seconds). */
#define TLS_CACHE_RENEW 86400L

struct tls_cache;

/* An empty cache of at most cap (1..TLS_CACHE_MAX) leaves of ca. */
int tls_cache_new(const struct tls_ca *ca, size_t cap, struct tls_cache **out, struct err *e);

/*
 * The leaf for host (tls_host_check's rules; the name is compared in
 * lower case), minted if the cache has none: *cert and *key are new
 * references the caller frees (X509_free, EVP_PKEY_free), e.g. after
 * SSL_use_certificate and SSL_use_PrivateKey in the proxy's SNI callback.
 * Errors are tls_leaf_mint's.
 */
int tls_cache_get(struct tls_cache *c, const char *host, X509 **cert, EVP_PKEY **key,
		  struct err *e);

/* The same at time now (the renewal's clock; a new leaf's validity is
 * still the real clock's): the tests' way to age what the cache holds. */
int tls_cache_get_at(struct tls_cache *c, const char *host, time_t now, X509 **cert, EVP_PKEY **key,
		     struct err *e);

/* Leaves held now; leaves minted since the cache was made. */
size_t tls_cache_count(struct tls_cache *c);
unsigned long tls_cache_minted(struct tls_cache *c);

void tls_cache_free(struct tls_cache *c);

#endif

/*
 * tls_x509: what minting the sandbox CA (tls_ca) and its leaves (tls_leaf)
 * share over OpenSSL's libcrypto: P-256 keys, a certificate's serial and
 * validity, extensions, and OpenSSL's failures as kiln's error values.
 *
 * Contract: internal to lib/tlsmint, but for tls_x509_fail (kiln-egress
 * words its libssl failures with it too); no state; thread-safe (OpenSSL 3's
 * objects used here are not shared). Every failure clears the thread's
 * OpenSSL error queue after taking its reason into the message, so no
 * stale reason is reported by a later call.
 */
#ifndef KILN_TLS_X509_H
#define KILN_TLS_X509_H

#include <time.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/base/err.h"

/* A fresh ECDSA P-256 key pair (prime256v1: what every TLS client
 * accepts, and a key made in well under a millisecond). */
int tls_x509_p256(EVP_PKEY **out, struct err *e);

/* x's version (v3), a random 128-bit serial (RFC 5280 4.1.2.2: positive,
 * at most 20 octets; unpredictable, so no two certificates of one CA
 * collide and none is guessed), validity [not_before, not_after] and
 * public key. */
int tls_x509_start(X509 *x, time_t not_before, time_t not_after, EVP_PKEY *key, struct err *e);

/* Add extension nid with OpenSSL's text form value (constants only: never
 * text a client chose) to subject, as issued by issuer (for the authority
 * key identifier) with issuer_key (a self-signed certificate has no
 * subject key identifier to copy yet). */
int tls_x509_ext(X509 *issuer, EVP_PKEY *issuer_key, X509 *subject, int nid, const char *value,
		 struct err *e);

/* t as a time_t (UTC). -EINVAL for a time OpenSSL cannot read. */
int tls_x509_time(const ASN1_TIME *t, time_t *out);

/* err_set(e, code, "<what>: OpenSSL: <first reason in the queue>") and
 * the queue cleared. Returns -code. */
int tls_x509_fail(struct err *e, int code, const char *what);

#endif

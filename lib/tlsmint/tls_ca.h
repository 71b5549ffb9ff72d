/*
 * tls_ca: a sandbox's own certificate authority, for the egress proxy's
 * TLS interception (issue 37; kiln-egress --ca, --init-ca). The
 * proxy presents leaves this CA signs (tls_leaf.h); the guest trusts the
 * CA's public certificate and nothing else of it.
 *
 * The CA: an ECDSA P-256 key and a self-signed certificate, subject
 * "O=kiln, CN=kiln sandbox <id> egress CA", basicConstraints CA:TRUE with
 * pathlen 0 (critical: it signs leaves, never another CA), keyUsage
 * keyCertSign and cRLSign (critical), subject and authority key
 * identifiers, a random 128-bit serial, valid from an hour before it was
 * made (a guest clock a little behind still accepts it) for the lifetime
 * asked, within [TLS_CA_LIFETIME_MIN, TLS_CA_LIFETIME_MAX].
 *
 * On disk, in a directory the caller owns: TLS_CA_KEY_FILE (the private
 * key, PKCS#8 PEM, mode 0600) and TLS_CA_CERT_FILE (the certificate, PEM,
 * 0644), each replaced whole and durably (lib/base/file_replace). Loading
 * trusts neither file: each is opened without following a link, must be
 * a regular file of at most TLS_CA_FILE_MAX bytes, and the pair must be a
 * P-256 key and a current, self-signed CA certificate of that key.
 *
 * The private key never leaves this module as text: tls_ca_cert_pem is
 * the one export, the public certificate alone (what kiln-init will
 * install into the guest's trust store).
 *
 * Contract: errors are -errno with one line in e (what failed, what to
 * do); no globals, nothing printed. A struct tls_ca is immutable once
 * made or loaded, so any number of threads may mint leaves from it at
 * once (OpenSSL 3 signs with a shared key safely); it must outlive them
 * and every tls_cache over it.
 */
#ifndef KILN_TLS_CA_H
#define KILN_TLS_CA_H

#include <stddef.h>
#include <time.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/base/err.h"

#define TLS_CA_KEY_FILE "ca.key"
#define TLS_CA_CERT_FILE "ca.pem"
/* A P-256 key is ~240 bytes of PEM and this CA's certificate ~800: a file
 * past this is not one kiln wrote (a tampered sandbox directory). */
#define TLS_CA_FILE_MAX (16 * 1024)
/* Lifetime bounds, in seconds: an hour at least (the proxy's leaves live
 * within it), ten years at most. */
#define TLS_CA_LIFETIME_MIN 3600L
#define TLS_CA_LIFETIME_MAX (3650L * 86400L)
/* Sandbox ids in the subject: 1..48 of [A-Za-z0-9._-], the first
 * alphanumeric (the common name stays under RFC 5280's 64). */
#define TLS_CA_ID_MAX 48

struct tls_ca;

/*
 * A fresh CA for sandbox sandbox_id, valid from now - 1 hour to now +
 * lifetime_s; now 0 is the clock's (a caller passes its own to make a CA
 * of another time: the tests' expired one). -EINVAL for an id or a
 * lifetime out of bounds, -ENOMEM (or OpenSSL's failure) otherwise.
 */
int tls_ca_new(const char *sandbox_id, long lifetime_s, time_t now, struct tls_ca **out,
	       struct err *e);

/* Write the key (0600) and the certificate into directory dirfd
 * (AT_FDCWD: the working directory), each replaced whole. */
int tls_ca_save(const struct tls_ca *ca, int dirfd, struct err *e);

/*
 * Read the pair tls_ca_save wrote from dirfd and check it (see above).
 * Refusals, each its own errno and line: a missing file (-ENOENT), a
 * link or non-regular file (-ELOOP / -EINVAL), one over TLS_CA_FILE_MAX
 * (-EFBIG), text that is not a PEM key or certificate, a key that is not
 * P-256, a certificate that is not a CA, a key that is not the
 * certificate's (-EINVAL), an expired or not yet valid certificate
 * (-EKEYEXPIRED).
 */
int tls_ca_load(int dirfd, struct tls_ca **out, struct err *e);

/* The same checks over the two files' bytes (the fuzz target's way in). */
int tls_ca_parse(const char *key_pem, size_t key_len, const char *cert_pem, size_t cert_len,
		 struct tls_ca **out, struct err *e);

/* The public certificate as PEM text, NUL-terminated, in a malloc'd
 * *out (*len bytes before the NUL); the caller frees it. */
int tls_ca_cert_pem(const struct tls_ca *ca, char **out, size_t *len, struct err *e);

/* The CA's certificate (borrowed: valid while ca is; the caller may
 * X509_up_ref it), e.g. for a verifier's trust store or a chain. */
X509 *tls_ca_cert(const struct tls_ca *ca);
/* Its validity as times. */
time_t tls_ca_not_before(const struct tls_ca *ca);
time_t tls_ca_not_after(const struct tls_ca *ca);

/* Sign x (a leaf tls_leaf built) with the CA's key, SHA-256. */
int tls_ca_sign(const struct tls_ca *ca, X509 *x, struct err *e);

void tls_ca_free(struct tls_ca *ca);

#endif

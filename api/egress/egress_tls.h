/*
 * egress_tls: kiln-egress's TLS, both ends of an intercepted flow. To the
 * guest the proxy is the server the guest asked for: it presents a leaf
 * minted for the ClientHello's SNI by the sandbox's CA (lib/tlsmint: the
 * guest trusts that CA alone), TLS 1.2 or 1.3, ALPN http/1.1 only (the
 * proxy reads HTTP/1.1; a client offering h2 alone gets no ALPN and
 * speaks HTTP/1.1). To the upstream it is a client: TLS with the same
 * SNI, the certificate verified against the trust store (--upstream-ca,
 * or the host's default paths) and the name (X509_VERIFY_PARAM_set1_host
 * through SSL_set1_host); a verification failure refuses the flow, never
 * a pass-through.
 *
 * Sockets are non-blocking; every call takes a deadline (mono_ms) and
 * waits on the socket for what OpenSSL says it wants.
 *
 * Contract: errors are -errno with one line in e; the CA and the two
 * contexts are made once and shared by every flow's thread (OpenSSL 3's
 * SSL_CTX and the CA are safe to share once set up).
 */
#ifndef KILN_EGRESS_TLS_H
#define KILN_EGRESS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "lib/base/err.h"
#include "lib/tlsmint/tls_ca.h"
#include "lib/tlsmint/tls_cache.h"

struct egress_tls {
	struct tls_ca *ca; /* NULL without --ca: nothing is intercepted */
	struct tls_cache *cache;
	SSL_CTX *guest_ctx;    /* the proxy as the guest's server */
	SSL_CTX *upstream_ctx; /* the proxy as the upstream's client */
};

/* Load ca_dir's CA (NULL: none) and make both contexts; upstream_ca NULL
 * is the host's trust store. */
int egress_tls_init(struct egress_tls *t, const char *ca_dir, const char *upstream_ca,
		    struct err *e);
void egress_tls_fini(struct egress_tls *t);

/*
 * kiln-egress --init-ca DIR: make DIR/ca.key (0600) and DIR/ca.pem when
 * both are absent, else load and check them. 0 with what was done in
 * line, or -errno with e.
 */
int egress_tls_init_ca(const char *dir, char *line, size_t cap, struct err *e);

/* The guest's TLS on fd, whose ClientHello (and anything after it) is
 * first[0..n), terminated with a leaf for name. */
SSL *egress_tls_accept(struct egress_tls *t, int fd, const uint8_t *first, size_t n,
		       const char *name, int64_t deadline, struct err *e);

/* TLS to the upstream on fd for name, verified. A verification failure
 * is -EPERM with "upstream certificate for NAME does not verify: <why>". */
SSL *egress_tls_connect(struct egress_tls *t, int fd, const char *name, int64_t deadline,
			struct err *e);

/* Up to cap bytes from s: their count, 0 when nothing is there now (call
 * again after poll says fd is readable, or SSL_pending), -ECONNRESET at
 * the end (close_notify or EOF), -errno. */
ssize_t egress_tls_read(SSL *s, int fd, void *buf, size_t cap);

/* s holds bytes already read from fd (decrypted, or raw in the BIO that
 * replayed the ClientHello) that poll on fd would not show. */
bool egress_tls_pending(SSL *s);

/* All n bytes to s before the deadline: 0 or -errno. */
int egress_tls_write(SSL *s, int fd, const void *buf, size_t n, int64_t deadline);

/* Send close_notify (not waiting for the peer's) and free. */
void egress_tls_close(SSL *s);

#endif

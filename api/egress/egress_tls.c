/* egress_tls: see egress_tls.h. */
#include "api/egress/egress_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "lib/base/mono.h"
#include "lib/tlsmint/tls_leaf.h"
#include "lib/tlsmint/tls_x509.h"

/* ALPN's wire form (RFC 7301 3.1): a length, then the name. */
static const unsigned char ALPN_H1[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };

/* Choose http/1.1 when the guest offers it; otherwise no ALPN at all, so
 * a client offering h2 alone is not told the proxy speaks it. */
static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel;

	(void)s;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, ALPN_H1, sizeof(ALPN_H1), in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static int make_ctxs(struct egress_tls *t, const char *upstream_ca, struct err *e)
{
	t->guest_ctx = SSL_CTX_new(TLS_server_method());
	t->upstream_ctx = SSL_CTX_new(TLS_client_method());
	if (!t->guest_ctx || !t->upstream_ctx)
		return tls_x509_fail(e, ENOMEM, "kiln-egress: TLS contexts");
	SSL_CTX_set_min_proto_version(t->guest_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->upstream_ctx, TLS1_2_VERSION);
	/* No resumption across flows: each flow's leaf and decision stand alone. */
	SSL_CTX_set_session_cache_mode(t->guest_ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(t->guest_ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_num_tickets(t->guest_ctx, 0);
	SSL_CTX_set_options(t->upstream_ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_alpn_select_cb(t->guest_ctx, alpn_select, NULL);
	/* Writes go as far as the peer takes them (egress_intercept's loop),
	 * retried from a buffer that may have moved. */
	SSL_CTX_set_mode(t->guest_ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_mode(t->upstream_ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(t->upstream_ctx, SSL_VERIFY_PEER, NULL);
	if (upstream_ca) {
		if (SSL_CTX_load_verify_locations(t->upstream_ctx, upstream_ca, NULL) != 1) {
			char what[512];

			snprintf(what, sizeof(what),
				 "kiln-egress: --upstream-ca %s: not a readable PEM file of "
				 "certificates",
				 upstream_ca);
			return tls_x509_fail(e, EINVAL, what);
		}
	} else if (SSL_CTX_set_default_verify_paths(t->upstream_ctx) != 1) {
		return tls_x509_fail(e, EINVAL, "kiln-egress: the host's trust store");
	}
	if (SSL_CTX_set_alpn_protos(t->upstream_ctx, ALPN_H1, sizeof(ALPN_H1)) != 0)
		return tls_x509_fail(e, ENOMEM, "kiln-egress: ALPN");
	return 0;
}

int egress_tls_init(struct egress_tls *t, const char *ca_dir, const char *upstream_ca,
		    struct err *e)
{
	struct err inner = { { 0 } };
	int dfd, rc;

	*t = (struct egress_tls){ 0 };
	if (ca_dir) {
		dfd = open(ca_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return err_set(e, errno, "kiln-egress: --ca %s: %s", ca_dir,
				       strerror(errno));
		rc = tls_ca_load(dfd, &t->ca, &inner);
		close(dfd);
		if (rc == 0)
			rc = tls_cache_new(t->ca, TLS_CACHE_DEFAULT, &t->cache, &inner);
		if (rc < 0)
			return err_set(e, -rc, "kiln-egress: --ca %s: %s", ca_dir, inner.msg);
	}
	return make_ctxs(t, upstream_ca, e);
}

void egress_tls_fini(struct egress_tls *t)
{
	tls_cache_free(t->cache);
	tls_ca_free(t->ca);
	SSL_CTX_free(t->guest_ctx);
	SSL_CTX_free(t->upstream_ctx);
	*t = (struct egress_tls){ 0 };
}

/* The sandbox id for the CA's subject: DIR's parent's name when DIR is
 * kilnd's "<sandbox>/egress", else DIR's own; "sandbox" when that name
 * is not one tls_ca takes. */
static void ca_id(const char *dir, char *out, size_t cap)
{
	char path[4096], *last, *prev;
	size_t n;

	snprintf(out, cap, "sandbox");
	if (!realpath(dir, path))
		return;
	last = strrchr(path, '/');
	if (!last || !last[1])
		return;
	if (!strcmp(last + 1, "egress") && last != path) {
		*last = '\0';
		prev = strrchr(path, '/');
		last = prev ? prev : last;
	}
	n = strlen(last + 1);
	if (n == 0 || n > TLS_CA_ID_MAX || n >= cap)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = last[1 + i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (i > 0 && (c == '.' || c == '_' || c == '-'))))
			return;
	}
	memcpy(out, last + 1, n + 1);
}

int egress_tls_init_ca(const char *dir, char *line, size_t cap, struct err *e)
{
	struct err inner = { { 0 } };
	struct tls_ca *ca = NULL;
	struct stat st;
	bool has_key, has_cert;
	char id[TLS_CA_ID_MAX + 1], until[32] = "";
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
	time_t end;
	struct tm tm;

	if (dfd < 0)
		return err_set(e, errno, "kiln-egress: --init-ca %s: %s: make the directory first",
			       dir, strerror(errno));
	has_key = fstatat(dfd, TLS_CA_KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
	has_cert = fstatat(dfd, TLS_CA_CERT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (has_key != has_cert) {
		rc = err_set(e, EINVAL,
			     "kiln-egress: --init-ca %s: %s is there without %s: remove it to make "
			     "a new CA",
			     dir, has_key ? TLS_CA_KEY_FILE : TLS_CA_CERT_FILE,
			     has_key ? TLS_CA_CERT_FILE : TLS_CA_KEY_FILE);
		goto out;
	}
	if (has_key) {
		rc = tls_ca_load(dfd, &ca, &inner);
	} else {
		ca_id(dir, id, sizeof(id));
		rc = tls_ca_new(id, TLS_CA_LIFETIME_MAX, 0, &ca, &inner);
		if (rc == 0)
			rc = tls_ca_save(ca, dfd, &inner);
	}
	if (rc < 0) {
		err_set(e, -rc, "kiln-egress: --init-ca %s: %s", dir, inner.msg);
		goto out;
	}
	end = tls_ca_not_after(ca);
	if (gmtime_r(&end, &tm))
		strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(line, cap, "kiln-egress: --init-ca %s: %s %s and %s, valid until %s", dir,
		 has_key ? "checked the CA in" : "made a new CA,", TLS_CA_KEY_FILE,
		 TLS_CA_CERT_FILE, until);
out:
	tls_ca_free(ca);
	close(dfd);
	return rc;
}

/* Wait for what the last call on s (returning ret) wants: 0 to call
 * again, or -errno (-ETIMEDOUT past the deadline, -ECONNRESET at the end). */
static int ssl_wait(SSL *s, int fd, int ret, int64_t deadline)
{
	int err = SSL_get_error(s, ret);
	struct pollfd p = { .fd = fd };
	int64_t left;

	if (err == SSL_ERROR_WANT_READ)
		p.events = POLLIN;
	else if (err == SSL_ERROR_WANT_WRITE)
		p.events = POLLOUT;
	else if (err == SSL_ERROR_ZERO_RETURN)
		return -ECONNRESET;
	else if (err == SSL_ERROR_SYSCALL)
		return errno && errno != EAGAIN ? -errno : -ECONNRESET;
	else
		return -EPROTO;
	for (;;) {
		left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		int r = poll(&p, 1, (int)left);

		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Run the handshake: 0 or -errno. */
static int handshake(SSL *s, int fd, int64_t deadline)
{
	for (;;) {
		int r, w;

		errno = 0;
		r = SSL_do_handshake(s);

		if (r == 1)
			return 0;
		if ((w = ssl_wait(s, fd, r, deadline)) < 0)
			return w == -ECONNRESET ? -EPROTO : w;
	}
}

SSL *egress_tls_accept(struct egress_tls *t, int fd, const uint8_t *first, size_t n,
		       const char *name, int64_t deadline, struct err *e)
{
	struct err inner = { { 0 } };
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	SSL *s = NULL;
	BIO *rb = NULL, *sock = NULL, *wb = NULL;
	int rc;

	if ((rc = tls_cache_get(t->cache, name, &cert, &key, &inner)) < 0) {
		err_set(e, -rc, "minting a leaf for %s: %s", name, inner.msg);
		return NULL;
	}
	s = SSL_new(t->guest_ctx);
	/* What was read to decide (the ClientHello) is read again by
	 * OpenSSL: a buffering BIO seeded with it, over the socket. */
	rb = BIO_new(BIO_f_buffer());
	sock = BIO_new_socket(fd, BIO_NOCLOSE);
	wb = BIO_new_socket(fd, BIO_NOCLOSE);
	if (!s || !rb || !sock || !wb || SSL_use_certificate(s, cert) != 1 ||
	    SSL_use_PrivateKey(s, key) != 1 ||
	    BIO_set_buffer_read_data(rb, (void *)first, (long)n) != 1) {
		tls_x509_fail(e, ENOMEM, "setting up the guest's TLS");
		goto fail;
	}
	BIO_push(rb, sock);
	sock = NULL;
	SSL_set_bio(s, rb, wb);
	rb = wb = NULL;
	SSL_set_accept_state(s);
	if ((rc = handshake(s, fd, deadline)) < 0) {
		unsigned long x = ERR_peek_error();

		err_set(e, -rc, "the guest's TLS handshake failed: %s",
			x ? ERR_reason_error_string(x) : strerror(-rc));
		ERR_clear_error();
		goto fail;
	}
	X509_free(cert);
	EVP_PKEY_free(key);
	return s;
fail:
	BIO_free_all(rb);
	BIO_free(sock);
	BIO_free(wb);
	SSL_free(s);
	X509_free(cert);
	EVP_PKEY_free(key);
	return NULL;
}

SSL *egress_tls_connect(struct egress_tls *t, int fd, const char *name, int64_t deadline,
			struct err *e)
{
	SSL *s = SSL_new(t->upstream_ctx);
	long v;
	int rc;

	if (!s || SSL_set_fd(s, fd) != 1 || SSL_set_tlsext_host_name(s, name) != 1 ||
	    SSL_set1_host(s, name) != 1) {
		tls_x509_fail(e, ENOMEM, "setting up the upstream's TLS");
		SSL_free(s);
		return NULL;
	}
	/* A name is matched exactly or by a wildcard of one whole label. */
	SSL_set_hostflags(s, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_set_connect_state(s);
	rc = handshake(s, fd, deadline);
	v = SSL_get_verify_result(s);
	if (rc < 0 && v != X509_V_OK) {
		err_set(e, EPERM, "upstream certificate for %s does not verify: %s", name,
			X509_verify_cert_error_string(v));
	} else if (rc < 0) {
		unsigned long x = ERR_peek_error();

		err_set(e, -rc, "upstream TLS handshake with %s failed: %s", name,
			x ? ERR_reason_error_string(x) : strerror(-rc));
	} else if (v != X509_V_OK || !SSL_get0_peer_certificate(s)) {
		/* SSL_VERIFY_PEER fails the handshake first; this holds anyway. */
		rc = err_set(e, EPERM, "upstream certificate for %s does not verify", name);
	}
	ERR_clear_error();
	if (rc < 0) {
		SSL_free(s);
		return NULL;
	}
	return s;
}

ssize_t egress_tls_read(SSL *s, int fd, void *buf, size_t cap)
{
	size_t got = 0;
	int r, err;

	(void)fd;
	ERR_clear_error();
	errno = 0; /* SSL_ERROR_SYSCALL reads it: no stale value */
	r = SSL_read_ex(s, buf, cap, &got);
	if (r == 1)
		return (ssize_t)got;
	err = SSL_get_error(s, 0);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
		return 0;
	ERR_clear_error();
	if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && errno == 0))
		return -ECONNRESET;
	return err == SSL_ERROR_SYSCALL && errno ? -errno : -EPROTO;
}

bool egress_tls_pending(SSL *s)
{
	return SSL_has_pending(s) || BIO_ctrl_pending(SSL_get_rbio(s)) > 0;
}

int egress_tls_write(SSL *s, int fd, const void *buf, size_t n, int64_t deadline)
{
	const uint8_t *p = buf;

	while (n) {
		size_t done = 0;
		int r, w;

		ERR_clear_error();
		errno = 0;
		r = SSL_write_ex(s, p, n, &done);
		if (r == 1) {
			p += done;
			n -= done;
			continue;
		}
		if ((w = ssl_wait(s, fd, r, deadline)) < 0)
			return w;
	}
	return 0;
}

void egress_tls_close(SSL *s)
{
	if (!s)
		return;
	SSL_shutdown(s);
	ERR_clear_error();
	SSL_free(s);
}

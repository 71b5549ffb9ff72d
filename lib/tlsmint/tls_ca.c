/* A sandbox's certificate authority: made, saved, loaded; see tls_ca.h. */
#include "lib/tlsmint/tls_ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/base/fd_io.h"
#include "lib/base/file_replace.h"
#include "lib/base/text_clean.h"
#include "lib/tlsmint/tls_x509.h"

struct tls_ca {
	X509 *cert;
	EVP_PKEY *key;
	time_t not_before, not_after;
};

/* What a refusal of the files asks for: they cannot be repaired. */
#define CA_REDO "make a new CA and install its certificate in the guest"

X509 *tls_ca_cert(const struct tls_ca *ca)
{
	return ca->cert;
}

time_t tls_ca_not_before(const struct tls_ca *ca)
{
	return ca->not_before;
}

time_t tls_ca_not_after(const struct tls_ca *ca)
{
	return ca->not_after;
}

void tls_ca_free(struct tls_ca *ca)
{
	if (!ca)
		return;
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	free(ca);
}

int tls_ca_sign(const struct tls_ca *ca, X509 *x, struct err *e)
{
	if (!X509_sign(x, ca->key, EVP_sha256()))
		return tls_x509_fail(e, ENOMEM, "tls CA: signing a certificate");
	return 0;
}

static int id_valid(const char *id)
{
	size_t n = strnlen(id, TLS_CA_ID_MAX + 1);

	if (n == 0 || n > TLS_CA_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}

static int set_names(X509 *x, const char *id, struct err *e)
{
	X509_NAME *name = X509_get_subject_name(x);
	char cn[TLS_CA_ID_MAX + 32];

	snprintf(cn, sizeof(cn), "kiln sandbox %s egress CA", id);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"kiln", -1,
					-1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
					0) ||
	    !X509_set_issuer_name(x, name))
		return tls_x509_fail(e, ENOMEM, "tls CA: setting the subject");
	return 0;
}

static int build(struct tls_ca *ca, const char *id, long lifetime_s, time_t now, struct err *e)
{
	int rc;

	ca->not_before = now - 3600;
	ca->not_after = now + lifetime_s;
	ca->cert = X509_new();
	if (!ca->cert)
		return tls_x509_fail(e, ENOMEM, "tls CA: a certificate");
	if ((rc = tls_x509_p256(&ca->key, e)) < 0 ||
	    (rc = tls_x509_start(ca->cert, ca->not_before, ca->not_after, ca->key, e)) < 0 ||
	    (rc = set_names(ca->cert, id, e)) < 0)
		return rc;
	/* the subject key identifier first: the authority's is its copy */
	if ((rc = tls_x509_ext(ca->cert, ca->key, ca->cert, NID_basic_constraints,
			       "critical,CA:TRUE,pathlen:0", e)) < 0 ||
	    (rc = tls_x509_ext(ca->cert, ca->key, ca->cert, NID_key_usage,
			       "critical,keyCertSign,cRLSign", e)) < 0 ||
	    (rc = tls_x509_ext(ca->cert, ca->key, ca->cert, NID_subject_key_identifier, "hash",
			       e)) < 0 ||
	    (rc = tls_x509_ext(ca->cert, ca->key, ca->cert, NID_authority_key_identifier,
			       "keyid:always", e)) < 0)
		return rc;
	return tls_ca_sign(ca, ca->cert, e);
}

int tls_ca_new(const char *sandbox_id, long lifetime_s, time_t now, struct tls_ca **out,
	       struct err *e)
{
	struct tls_ca *ca;
	int rc;

	*out = NULL;
	if (!id_valid(sandbox_id)) {
		char shown[TLS_CA_ID_MAX + 2];

		/* one line whatever the id holds (a newline, an escape) */
		text_clean_term(shown, sizeof(shown), sandbox_id,
				strnlen(sandbox_id, TLS_CA_ID_MAX + 1));
		return err_set(e, EINVAL,
			       "tls CA: sandbox id '%s': want 1..%d of letters, digits, '.', '_' "
			       "or '-', the first a letter or digit",
			       shown, TLS_CA_ID_MAX);
	}
	if (lifetime_s < TLS_CA_LIFETIME_MIN || lifetime_s > TLS_CA_LIFETIME_MAX)
		return err_set(e, EINVAL,
			       "tls CA: lifetime %ld s: want %ld (an hour) to %ld (ten years)",
			       lifetime_s, TLS_CA_LIFETIME_MIN, TLS_CA_LIFETIME_MAX);
	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return err_set(e, ENOMEM, "tls CA: out of memory");
	rc = build(ca, sandbox_id, lifetime_s, now ? now : time(NULL), e);
	if (rc < 0) {
		tls_ca_free(ca);
		return rc;
	}
	*out = ca;
	return 0;
}

/* The bytes a memory BIO holds, written to dirfd/name. */
static int bio_save(BIO *b, int dirfd, const char *name, mode_t mode, struct err *e)
{
	char *p;
	long n = BIO_get_mem_data(b, &p);

	if (file_replace_at(dirfd, name, p, (size_t)n, mode) < 0)
		return err_set(e, errno,
			       "tls CA: writing %s: %s: check that the directory exists "
			       "and is writable",
			       name, strerror(errno));
	return 0;
}

int tls_ca_save(const struct tls_ca *ca, int dirfd, struct err *e)
{
	/* secure memory: freed cleared, so no copy of the key outlives this */
	BIO *kb = BIO_new(BIO_s_secmem()), *cb = BIO_new(BIO_s_mem());
	int rc = 0;

	if (!kb || !cb || !PEM_write_bio_PrivateKey(kb, ca->key, NULL, NULL, 0, NULL, NULL) ||
	    !PEM_write_bio_X509(cb, ca->cert))
		rc = tls_x509_fail(e, ENOMEM, "tls CA: writing PEM");
	if (!rc)
		rc = bio_save(kb, dirfd, TLS_CA_KEY_FILE, 0600, e);
	if (!rc)
		rc = bio_save(cb, dirfd, TLS_CA_CERT_FILE, 0644, e);
	BIO_free(kb);
	BIO_free(cb);
	return rc;
}

/* Never ask for a passphrase (OpenSSL's default asks the terminal): an
 * encrypted key is refused like any other that cannot be read. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* A PKCS#8 EC key carries its public point beside the private scalar, and
 * OpenSSL loads the two as written: a key whose scalar was altered still
 * matches the certificate (which compares public halves) and still
 * verifies its self-signature, but signs leaves no client accepts. */
static int pair_check(EVP_PKEY *key, struct err *e)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
	int ok = ctx && EVP_PKEY_pairwise_check(ctx) == 1;

	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
	if (!ok)
		return err_set(e, EINVAL,
			       "tls CA: %s: its private and public halves do not match (a damaged "
			       "file): " CA_REDO,
			       TLS_CA_KEY_FILE);
	return 0;
}

static int read_key(const char *pem, size_t n, EVP_PKEY **out, struct err *e)
{
	BIO *b = BIO_new_mem_buf(pem, (int)n);
	char group[32] = "";
	size_t glen = 0;

	*out = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	ERR_clear_error();
	if (!*out)
		return err_set(e, EINVAL,
			       "tls CA: %s: not a PEM private key (or one with a passphrase): " CA_REDO,
			       TLS_CA_KEY_FILE);
	if (!EVP_PKEY_is_a(*out, "EC") ||
	    !EVP_PKEY_get_group_name(*out, group, sizeof(group), &glen) ||
	    strcmp(group, "prime256v1") != 0) {
		ERR_clear_error();
		return err_set(e, EINVAL, "tls CA: %s: not an ECDSA P-256 key: " CA_REDO,
			       TLS_CA_KEY_FILE);
	}
	return pair_check(*out, e);
}

static void utc_text(time_t t, char out[32])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, 32, "@%lld", (long long)t);
}

static int check_times(struct tls_ca *ca, struct err *e)
{
	time_t now = time(NULL);
	char when[32];

	if (tls_x509_time(X509_get0_notBefore(ca->cert), &ca->not_before) < 0 ||
	    tls_x509_time(X509_get0_notAfter(ca->cert), &ca->not_after) < 0)
		return err_set(e, EINVAL, "tls CA: %s: unreadable validity dates: " CA_REDO,
			       TLS_CA_CERT_FILE);
	if (ca->not_after <= now) {
		utc_text(ca->not_after, when);
		return err_set(e, EKEYEXPIRED, "tls CA: %s: expired on %s: " CA_REDO,
			       TLS_CA_CERT_FILE, when);
	}
	if (ca->not_before > now) {
		utc_text(ca->not_before, when);
		return err_set(e, EKEYEXPIRED,
			       "tls CA: %s: not valid until %s: check the host's clock, or " CA_REDO,
			       TLS_CA_CERT_FILE, when);
	}
	return 0;
}

static int read_cert(struct tls_ca *ca, const char *pem, size_t n, struct err *e)
{
	BIO *b = BIO_new_mem_buf(pem, (int)n);
	uint32_t flags;

	ca->cert = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	ERR_clear_error();
	if (!ca->cert)
		return err_set(e, EINVAL, "tls CA: %s: not a PEM certificate: " CA_REDO,
			       TLS_CA_CERT_FILE);
	flags = X509_get_extension_flags(ca->cert);
	/* basicConstraints CA:TRUE, and keyCertSign where keyUsage is given:
	 * what a verifier demands of an issuer (RFC 5280 4.2.1.3, 4.2.1.9) */
	if ((flags & EXFLAG_INVALID) || !(flags & EXFLAG_CA) ||
	    !(X509_get_key_usage(ca->cert) & KU_KEY_CERT_SIGN))
		return err_set(e, EINVAL,
			       "tls CA: %s: not a CA certificate (no basicConstraints CA:TRUE "
			       "with keyCertSign): " CA_REDO,
			       TLS_CA_CERT_FILE);
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		ERR_clear_error();
		return err_set(e, EINVAL, "tls CA: %s is not the key of %s: " CA_REDO,
			       TLS_CA_KEY_FILE, TLS_CA_CERT_FILE);
	}
	if (X509_verify(ca->cert, ca->key) != 1) {
		ERR_clear_error();
		return err_set(e, EINVAL, "tls CA: %s: not self-signed by %s: " CA_REDO,
			       TLS_CA_CERT_FILE, TLS_CA_KEY_FILE);
	}
	return check_times(ca, e);
}

int tls_ca_parse(const char *key_pem, size_t key_len, const char *cert_pem, size_t cert_len,
		 struct tls_ca **out, struct err *e)
{
	struct tls_ca *ca;
	int rc;

	*out = NULL;
	if (key_len > TLS_CA_FILE_MAX || cert_len > TLS_CA_FILE_MAX)
		return err_set(e, EFBIG, "tls CA: %s: over %d bytes: " CA_REDO,
			       key_len > TLS_CA_FILE_MAX ? TLS_CA_KEY_FILE : TLS_CA_CERT_FILE,
			       TLS_CA_FILE_MAX);
	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return err_set(e, ENOMEM, "tls CA: out of memory");
	rc = read_key(key_pem, key_len, &ca->key, e);
	if (!rc)
		rc = read_cert(ca, cert_pem, cert_len, e);
	/* reading hostile DER queues reasons even on the way to a refusal of
	 * ours (X509_get_extension_flags on a bad extension): none outlives
	 * this call to be reported by an unrelated later one */
	ERR_clear_error();
	if (rc < 0) {
		tls_ca_free(ca);
		return rc;
	}
	*out = ca;
	return 0;
}

/* dirfd/name whole into buf (TLS_CA_FILE_MAX + 1 bytes): a regular file,
 * not a link (the directory may be a sandbox's, where a link could point
 * the host at a file of the attacker's choosing), within the cap. */
static int read_capped(int dirfd, const char *name, char *buf, size_t *len, struct err *e)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n;

	if (fd < 0 && errno == ELOOP)
		return err_set(e, ELOOP,
			       "tls CA: %s: a symbolic link, not the file kiln wrote: " CA_REDO,
			       name);
	if (fd < 0)
		return err_set(e, errno,
			       "tls CA: %s: cannot open: %s: check the directory, or " CA_REDO,
			       name, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, EINVAL, "tls CA: %s: not a regular file: " CA_REDO, name);
	}
	/* read one byte past the cap: a file that grew since fstat counts */
	n = st.st_size > TLS_CA_FILE_MAX ? -EFBIG : fd_io_read_full(fd, buf, TLS_CA_FILE_MAX + 1);
	close(fd);
	if (n == -EFBIG || n > TLS_CA_FILE_MAX)
		return err_set(e, EFBIG, "tls CA: %s: over %d bytes: " CA_REDO, name,
			       TLS_CA_FILE_MAX);
	if (n < 0)
		return err_set(e, (int)-n, "tls CA: %s: reading: %s", name, strerror((int)-n));
	*len = (size_t)n;
	return 0;
}

int tls_ca_load(int dirfd, struct tls_ca **out, struct err *e)
{
	char *key = malloc(TLS_CA_FILE_MAX + 1), *cert = malloc(TLS_CA_FILE_MAX + 1);
	size_t klen = 0, clen = 0;
	int rc;

	*out = NULL;
	if (!key || !cert)
		rc = err_set(e, ENOMEM, "tls CA: out of memory");
	else if ((rc = read_capped(dirfd, TLS_CA_KEY_FILE, key, &klen, e)) == 0 &&
		 (rc = read_capped(dirfd, TLS_CA_CERT_FILE, cert, &clen, e)) == 0)
		rc = tls_ca_parse(key, klen, cert, clen, out, e);
	if (key)
		OPENSSL_cleanse(key, TLS_CA_FILE_MAX + 1);
	free(key);
	free(cert);
	return rc;
}

int tls_ca_cert_pem(const struct tls_ca *ca, char **out, size_t *len, struct err *e)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;

	*out = NULL;
	if (!b || !PEM_write_bio_X509(b, ca->cert)) {
		BIO_free(b);
		return tls_x509_fail(e, ENOMEM, "tls CA: writing the certificate's PEM");
	}
	n = BIO_get_mem_data(b, &p);
	*out = malloc((size_t)n + 1);
	if (*out) {
		memcpy(*out, p, (size_t)n);
		(*out)[n] = '\0';
		*len = (size_t)n;
	}
	BIO_free(b);
	return *out ? 0 : err_set(e, ENOMEM, "tls CA: out of memory");
}

/*
 * fuzz_tls_ca_load: the sandbox CA's two files as tls_ca_load reads them
 * (lib/tlsmint/tls_ca.c, tls_ca_parse): the private key's and the
 * certificate's PEM, either of which a tampered sandbox directory could
 * hold (issue 37's egress proxy loads them on every start).
 *
 * Input: key length (2 bytes, little-endian), the key file's bytes, then
 * the certificate file's bytes (the rest).
 * Invariants: a refusal is one of the documented errnos with a line; an
 * accepted pair is a current CA whose certificate exports as PEM that
 * reads back the same, and it mints a leaf for "api.test" that its
 * certificate's key verifies and that names the CA as issuer.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/tlsmint/tls_ca.h"
#include "lib/tlsmint/tls_leaf.h"
#include "fuzz.h"

static void check_accepted(const struct tls_ca *ca)
{
	struct tls_leaf *leaf = NULL;
	struct err e = { "" };
	char *pem = NULL;
	size_t len = 0;
	X509 *back;
	BIO *b;

	FUZZ_ASSERT(X509_check_ca(tls_ca_cert(ca)) >= 1);
	FUZZ_ASSERT(tls_ca_not_before(ca) < tls_ca_not_after(ca));
	FUZZ_ASSERT(tls_ca_cert_pem(ca, &pem, &len, &e) == 0);
	FUZZ_ASSERT(strlen(pem) == len && !strstr(pem, "PRIVATE"));
	b = BIO_new_mem_buf(pem, (int)len);
	back = PEM_read_bio_X509(b, NULL, NULL, NULL);
	FUZZ_ASSERT(back && X509_cmp(back, tls_ca_cert(ca)) == 0);
	FUZZ_ASSERT(tls_leaf_mint(ca, "api.test", &leaf, &e) == 0);
	FUZZ_ASSERT(X509_verify(leaf->cert, X509_get0_pubkey(tls_ca_cert(ca))) == 1);
	FUZZ_ASSERT(X509_check_issued(tls_ca_cert(ca), leaf->cert) == X509_V_OK);
	tls_leaf_free(leaf);
	X509_free(back);
	BIO_free(b);
	free(pem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t klen = take16(&in), got;
	const uint8_t *key = take_bytes(&in, klen, &got);
	struct tls_ca *ca = NULL;
	struct err e = { "" };
	int rc;

	rc = tls_ca_parse((const char *)key, got, (const char *)in.p, in.n, &ca, &e);
	if (rc < 0) {
		FUZZ_ASSERT(rc == -EINVAL || rc == -EFBIG || rc == -EKEYEXPIRED || rc == -ENOMEM);
		FUZZ_ASSERT(!ca && e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
		/* no reason left behind for a later call to report */
		FUZZ_ASSERT(ERR_peek_error() == 0);
		return 0;
	}
	FUZZ_ASSERT(rc == 0 && ca);
	check_accepted(ca);
	tls_ca_free(ca);
	FUZZ_ASSERT(ERR_peek_error() == 0);
	return 0;
}

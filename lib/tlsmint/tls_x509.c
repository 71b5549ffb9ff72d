/* Certificate building blocks over libcrypto; see tls_x509.h. */
#include "lib/tlsmint/tls_x509.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

int tls_x509_fail(struct err *e, int code, const char *what)
{
	unsigned long oe = ERR_get_error();
	char reason[256] = "no reason given";

	if (oe)
		ERR_error_string_n(oe, reason, sizeof(reason));
	ERR_clear_error();
	return err_set(e, code, "%s: OpenSSL: %s", what, reason);
}

int tls_x509_p256(EVP_PKEY **out, struct err *e)
{
	*out = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!*out)
		return tls_x509_fail(e, ENOMEM, "making a P-256 key");
	return 0;
}

static int set_serial(X509 *x, struct err *e)
{
	BIGNUM *bn = BN_new();
	int ok;

	/* exactly 128 bits (the top one set): never zero, and DER-encoded in
	 * 17 octets at most */
	ok = bn && BN_rand(bn, 128, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) &&
		BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok ? 0 : tls_x509_fail(e, ENOMEM, "drawing a certificate serial");
}

int tls_x509_start(X509 *x, time_t not_before, time_t not_after, EVP_PKEY *key, struct err *e)
{
	if (!X509_set_version(x, X509_VERSION_3))
		return tls_x509_fail(e, ENOMEM, "setting a certificate's version");
	if (set_serial(x, e) < 0)
		return -ENOMEM;
	if (!ASN1_TIME_set(X509_getm_notBefore(x), not_before) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), not_after))
		return tls_x509_fail(e, ENOMEM, "setting a certificate's validity");
	if (!X509_set_pubkey(x, key))
		return tls_x509_fail(e, ENOMEM, "setting a certificate's public key");
	return 0;
}

int tls_x509_ext(X509 *issuer, EVP_PKEY *issuer_key, X509 *subject, int nid, const char *value,
		 struct err *e)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	char what[96];
	int ok;

	X509V3_set_ctx(&ctx, issuer, subject, NULL, NULL, 0);
	if (issuer_key && !X509V3_set_issuer_pkey(&ctx, issuer_key))
		return tls_x509_fail(e, ENOMEM, "setting a certificate's issuer key");
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	ok = ext && X509_add_ext(subject, ext, -1);
	X509_EXTENSION_free(ext);
	if (ok)
		return 0;
	snprintf(what, sizeof(what), "adding extension %s = %s", OBJ_nid2sn(nid), value);
	return tls_x509_fail(e, ENOMEM, what);
}

int tls_x509_time(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!t || !ASN1_TIME_to_tm(t, &tm))
		return -EINVAL;
	*out = timegm(&tm);
	return 0;
}

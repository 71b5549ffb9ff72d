/*
 * lib/tlsmint/tls_ca: the sandbox CA of the planned egress proxy (issue
 * 37). What a fresh CA's certificate says (constraints, key usage, key
 * identifiers, serial, validity, subject), the public PEM export, the
 * save/load round trip with the key file's mode, and every refusal of
 * load over files a sandbox's directory could hold tampered: missing,
 * linked, oversize, garbage, another key, a non-CA, a CA that is not
 * self-signed, an expired one; each with its exact line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/tlsmint/tls_ca.h"
#include "lib/tlsmint/tls_leaf.h"
#include "tmpdir.h"

#define REDO "make a new CA and install its certificate in the guest"
#define DAY 86400L

static struct tls_ca *new_ca(const char *id)
{
	struct tls_ca *ca = NULL;
	struct err e = { "" };

	assert_int_equal(tls_ca_new(id, 30 * DAY, 0, &ca, &e), 0);
	assert_non_null(ca);
	return ca;
}

static int ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

static void test_new_says_what_a_ca_says(void **state)
{
	time_t now = 1900000000; /* 2030: a fixed clock gives exact dates */
	struct tls_ca *ca = NULL, *ca2;
	struct err e = { "" };
	X509 *x;
	char cn[128], o[32];
	BIGNUM *bn, *bn2;

	(void)state;
	assert_int_equal(tls_ca_new("0123abcd4567", 7 * DAY, now, &ca, &e), 0);
	x = tls_ca_cert(ca);
	/* subject = issuer, naming kiln and the sandbox */
	assert_int_equal(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
						   sizeof(cn)),
			 (int)strlen("kiln sandbox 0123abcd4567 egress CA"));
	assert_string_equal(cn, "kiln sandbox 0123abcd4567 egress CA");
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationName, o,
					      sizeof(o)) > 0);
	assert_string_equal(o, "kiln");
	assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
	/* CA:TRUE, pathlen 0, keyCertSign + cRLSign, both critical */
	assert_true(X509_get_extension_flags(x) & EXFLAG_CA);
	assert_int_equal(X509_get_pathlen(x), 0);
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_true(ext_critical(x, NID_basic_constraints));
	assert_true(ext_critical(x, NID_key_usage));
	/* key identifiers: the authority's is the subject's own */
	assert_non_null(X509_get0_subject_key_id(x));
	assert_non_null(X509_get0_authority_key_id(x));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_subject_key_id(x),
					       X509_get0_authority_key_id(x)),
			 0);
	/* self-signed with its P-256 key */
	assert_int_equal(X509_verify(x, X509_get0_pubkey(x)), 1);
	assert_true(EVP_PKEY_is_a(X509_get0_pubkey(x), "EC"));
	assert_int_equal(EVP_PKEY_get_bits(X509_get0_pubkey(x)), 256);
	/* from an hour before now to now + lifetime */
	assert_int_equal(tls_ca_not_before(ca), now - 3600);
	assert_int_equal(tls_ca_not_after(ca), now + 7 * DAY);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), now - 3600), 0);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now + 7 * DAY), 0);
	/* a 128-bit random serial: two CAs never share one */
	ca2 = new_ca("0123abcd4567");
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	bn2 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(tls_ca_cert(ca2)), NULL);
	assert_int_equal(BN_num_bits(bn), 128);
	assert_int_equal(BN_num_bits(bn2), 128);
	assert_int_not_equal(BN_cmp(bn, bn2), 0);
	BN_free(bn);
	BN_free(bn2);
	tls_ca_free(ca);
	tls_ca_free(ca2);
}

static void test_new_refuses(void **state)
{
	static const char *const ids[] = {
		"",          "-lead", "has space",
		"new\nline", "a/b",   "0123456789012345678901234567890123456789012345678"
	};
	struct tls_ca *ca = (struct tls_ca *)1;
	struct err e = { "" };
	char want[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_int_equal(tls_ca_new(ids[i], 30 * DAY, 0, &ca, &e), -EINVAL);
		assert_null(ca);
		snprintf(want, sizeof(want),
			 "tls CA: sandbox id '%s': want 1..48 of letters, digits, '.', '_' or "
			 "'-', the first a letter or digit",
			 strcmp(ids[i], "new\nline") == 0 ? "new?line" : ids[i]);
		assert_string_equal(e.msg, want);
	}
	assert_int_equal(tls_ca_new("abc", 3599, 0, &ca, &e), -EINVAL);
	assert_string_equal(e.msg,
			    "tls CA: lifetime 3599 s: want 3600 (an hour) to 315360000 (ten years)");
	assert_int_equal(tls_ca_new("abc", TLS_CA_LIFETIME_MAX + 1, 0, &ca, &e), -EINVAL);
	assert_int_equal(tls_ca_new("abc", TLS_CA_LIFETIME_MAX, 0, &ca, &e), 0);
	tls_ca_free(ca);
}

static void test_cert_pem_is_public_only(void **state)
{
	struct tls_ca *ca = new_ca("pem");
	struct err e = { "" };
	char *pem = NULL;
	size_t len = 0;
	BIO *b;
	X509 *back;

	(void)state;
	assert_int_equal(tls_ca_cert_pem(ca, &pem, &len, &e), 0);
	assert_int_equal(strlen(pem), len);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----\n"));
	assert_null(strstr(pem, "PRIVATE"));
	/* exactly one certificate, the CA's */
	assert_int_equal(strstr(pem, "-----END CERTIFICATE-----\n") + 26 - pem, (long)len);
	b = BIO_new_mem_buf(pem, (int)len);
	back = PEM_read_bio_X509(b, NULL, NULL, NULL);
	assert_non_null(back);
	assert_int_equal(X509_cmp(back, tls_ca_cert(ca)), 0);
	X509_free(back);
	BIO_free(b);
	free(pem);
	tls_ca_free(ca);
}

static void test_save_load_round_trip(void **state)
{
	struct tmpdir_fx *f = *state;
	struct tls_ca *ca = new_ca("trip"), *back = NULL;
	struct err e = { "" };
	char *p1, *p2;
	size_t n1, n2;
	struct stat st;

	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	assert_int_equal(fstatat(f->dfd, TLS_CA_KEY_FILE, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(fstatat(f->dfd, TLS_CA_CERT_FILE, &st, 0), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_false(tmpdir_exists(f->dfd, TLS_CA_KEY_FILE ".tmp"));
	assert_int_equal(tls_ca_load(f->dfd, &back, &e), 0);
	assert_int_equal(X509_cmp(tls_ca_cert(ca), tls_ca_cert(back)), 0);
	assert_int_equal(tls_ca_not_before(ca), tls_ca_not_before(back));
	assert_int_equal(tls_ca_not_after(ca), tls_ca_not_after(back));
	assert_int_equal(tls_ca_cert_pem(ca, &p1, &n1, &e), 0);
	assert_int_equal(tls_ca_cert_pem(back, &p2, &n2, &e), 0);
	assert_string_equal(p1, p2);
	/* saving again replaces both whole */
	assert_int_equal(tls_ca_save(back, f->dfd, &e), 0);
	free(p1);
	free(p2);
	tls_ca_free(ca);
	tls_ca_free(back);
}

static void put(int dfd, const char *name, const void *p, size_t n)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void put_key(int dfd, const char *name, EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;

	assert_true(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL));
	n = BIO_get_mem_data(b, &p);
	put(dfd, name, p, (size_t)n);
	BIO_free(b);
}

static void put_cert(int dfd, const char *name, X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;

	assert_true(PEM_write_bio_X509(b, x));
	n = BIO_get_mem_data(b, &p);
	put(dfd, name, p, (size_t)n);
	BIO_free(b);
}

static void refused(int dfd, int code, const char *msg)
{
	struct tls_ca *ca = (struct tls_ca *)1;
	struct err e = { "" };

	assert_int_equal(tls_ca_load(dfd, &ca, &e), code);
	assert_null(ca);
	assert_string_equal(e.msg, msg);
}

static void test_load_refuses_files(void **state)
{
	struct tmpdir_fx *f = *state;
	struct tls_ca *ca = new_ca("files");
	struct err e = { "" };
	char *big = malloc(TLS_CA_FILE_MAX + 1);

	refused(f->dfd, -ENOENT,
		"tls CA: ca.key: cannot open: No such file or directory: check the directory, "
		"or " REDO);
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	/* a link in place of the certificate, even to the right one */
	assert_int_equal(renameat(f->dfd, "ca.pem", f->dfd, "real.pem"), 0);
	assert_int_equal(symlinkat("real.pem", f->dfd, "ca.pem"), 0);
	refused(f->dfd, -ELOOP, "tls CA: ca.pem: a symbolic link, not the file kiln wrote: " REDO);
	assert_int_equal(unlinkat(f->dfd, "ca.pem", 0), 0);
	assert_int_equal(mkfifoat(f->dfd, "ca.pem", 0600), 0);
	refused(f->dfd, -EINVAL, "tls CA: ca.pem: not a regular file: " REDO);
	assert_int_equal(unlinkat(f->dfd, "ca.pem", 0), 0);
	/* one byte over the cap */
	memset(big, 'A', TLS_CA_FILE_MAX + 1);
	put(f->dfd, "ca.pem", big, TLS_CA_FILE_MAX + 1);
	refused(f->dfd, -EFBIG, "tls CA: ca.pem: over 16384 bytes: " REDO);
	put(f->dfd, "ca.pem", "garbage\n", 8);
	refused(f->dfd, -EINVAL, "tls CA: ca.pem: not a PEM certificate: " REDO);
	put(f->dfd, "ca.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 58);
	refused(f->dfd, -EINVAL,
		"tls CA: ca.key: not a PEM private key (or one with a passphrase): " REDO);
	free(big);
	tls_ca_free(ca);
}

static void test_load_refuses_keys_and_certs(void **state)
{
	struct tmpdir_fx *f = *state;
	struct tls_ca *ca = new_ca("pair"), *other = new_ca("other");
	struct tls_leaf *leaf = NULL;
	struct err e = { "" };
	EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	EVP_PKEY *stranger = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *resigned;

	assert_non_null(p384);
	/* another CA's key beside this certificate */
	assert_int_equal(tls_ca_save(other, f->dfd, &e), 0);
	assert_int_equal(renameat(f->dfd, "ca.key", f->dfd, "other.key"), 0);
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	assert_int_equal(renameat(f->dfd, "other.key", f->dfd, "ca.key"), 0);
	refused(f->dfd, -EINVAL, "tls CA: ca.key is not the key of ca.pem: " REDO);
	/* a key of another curve */
	put_key(f->dfd, "ca.key", p384);
	refused(f->dfd, -EINVAL, "tls CA: ca.key: not an ECDSA P-256 key: " REDO);
	/* a leaf and its own key: a matching pair, but no CA */
	assert_int_equal(tls_leaf_mint(ca, "api.test", &leaf, &e), 0);
	put_key(f->dfd, "ca.key", leaf->key);
	put_cert(f->dfd, "ca.pem", leaf->cert);
	refused(f->dfd, -EINVAL,
		"tls CA: ca.pem: not a CA certificate (no basicConstraints CA:TRUE with "
		"keyCertSign): " REDO);
	/* the CA's certificate re-signed by a stranger: key matches, the
	 * signature is not the key's */
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	resigned = X509_dup(tls_ca_cert(ca));
	assert_true(X509_sign(resigned, stranger, EVP_sha256()) > 0);
	put_cert(f->dfd, "ca.pem", resigned);
	refused(f->dfd, -EINVAL, "tls CA: ca.pem: not self-signed by ca.key: " REDO);
	X509_free(resigned);
	EVP_PKEY_free(stranger);
	EVP_PKEY_free(p384);
	tls_leaf_free(leaf);
	tls_ca_free(ca);
	tls_ca_free(other);
}

/* The CA's public point with another key's private scalar: what a PKCS#8
 * file with its scalar altered loads as (fuzz_tls_ca_load found it). */
static EVP_PKEY *split_key(const struct tls_ca *ca)
{
	EVP_PKEY *stranger = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"), *out = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	unsigned char pub[128];
	size_t publen = 0;
	BIGNUM *priv = NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params;

	assert_true(EVP_PKEY_get_octet_string_param(X509_get0_pubkey(tls_ca_cert(ca)),
						    OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub),
						    &publen));
	assert_true(EVP_PKEY_get_bn_param(stranger, OSSL_PKEY_PARAM_PRIV_KEY, &priv));
	OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
	OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, publen);
	OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, priv);
	params = OSSL_PARAM_BLD_to_param(bld);
	assert_int_equal(EVP_PKEY_fromdata_init(ctx), 1);
	assert_int_equal(EVP_PKEY_fromdata(ctx, &out, EVP_PKEY_KEYPAIR, params), 1);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(priv);
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(stranger);
	return out;
}

static void test_load_refuses_split_key(void **state)
{
	struct tmpdir_fx *f = *state;
	struct tls_ca *ca = new_ca("split");
	struct err e = { "" };
	EVP_PKEY *split = split_key(ca);

	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	put_key(f->dfd, "ca.key", split);
	refused(f->dfd, -EINVAL,
		"tls CA: ca.key: its private and public halves do not match (a damaged "
		"file): " REDO);
	EVP_PKEY_free(split);
	tls_ca_free(ca);
}

static void test_load_refuses_expired(void **state)
{
	struct tmpdir_fx *f = *state;
	/* made two days ago for a day: ended a day ago */
	time_t then = time(NULL) - 2 * DAY;
	struct tls_ca *ca = NULL;
	struct err e = { "" };
	char when[64], want[256];
	time_t end = then + DAY;
	struct tm tm;

	assert_int_equal(tls_ca_new("old", DAY, then, &ca, &e), 0);
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	gmtime_r(&end, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(want, sizeof(want), "tls CA: ca.pem: expired on %s: " REDO, when);
	refused(f->dfd, -EKEYEXPIRED, want);
	tls_ca_free(ca);
	/* and one whose start is still ahead (the host's clock went back) */
	assert_int_equal(tls_ca_new("ahead", DAY, time(NULL) + 3 * DAY, &ca, &e), 0);
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	assert_int_equal(tls_ca_load(f->dfd, &(struct tls_ca *){ NULL }, &e), -EKEYEXPIRED);
	assert_non_null(strstr(e.msg, "tls CA: ca.pem: not valid until "));
	tls_ca_free(ca);
}

static void test_parse_caps_sizes(void **state)
{
	struct tls_ca *ca = (struct tls_ca *)1;
	struct err e = { "" };

	(void)state;
	assert_int_equal(tls_ca_parse("", TLS_CA_FILE_MAX + 1, "", 0, &ca, &e), -EFBIG);
	assert_null(ca);
	assert_string_equal(e.msg, "tls CA: ca.key: over 16384 bytes: " REDO);
	assert_int_equal(tls_ca_parse("", 0, "", 0, &ca, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_says_what_a_ca_says),
		cmocka_unit_test(test_new_refuses),
		cmocka_unit_test(test_cert_pem_is_public_only),
		cmocka_unit_test_setup_teardown(test_save_load_round_trip, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_load_refuses_files, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_load_refuses_keys_and_certs, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_load_refuses_split_key, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_load_refuses_expired, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_parse_caps_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

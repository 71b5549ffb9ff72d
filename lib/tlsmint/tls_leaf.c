/* Leaf certificates for one host name; see tls_leaf.h. */
#include "lib/tlsmint/tls_leaf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/x509v3.h>

#include "lib/base/text_clean.h"
#include "lib/tlsmint/tls_x509.h"

/* A host name as a message shows it: scrubbed (it may come from a
 * guest's SNI), cut after 64 bytes. */
static void shown(const char *host, char out[80])
{
	size_t n = strnlen(host, 65);

	text_clean_term(out, 70, host, n > 64 ? 64 : n);
	if (n > 64)
		strcat(out, "...");
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_ldh(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* An IP literal in any form a client would take as one: IPv6 (with or
 * without brackets), dotted IPv4 and inet_aton's short and hex forms
 * ("127.1", "0x7f.0.0.1"). */
static int reads_as_ip(const char *h)
{
	struct in6_addr a6;
	struct in_addr a4;

	return strchr(h, ':') || h[0] == '[' || inet_pton(AF_INET6, h, &a6) == 1 ||
		inet_aton(h, &a4) != 0;
}

static int labels_check(const char *h, const char *show, struct err *e)
{
	size_t n = strlen(h), start = 0, last = 0;

	for (size_t i = 0; i <= n; i++) {
		size_t len = i - start;

		if (i < n && h[i] != '.') {
			if (!is_ldh(h[i]))
				return err_set(e, EINVAL,
					       "tls host name '%s': byte %zu (0x%02x) is not a letter, "
					       "digit, '-' or '.'",
					       show, i, (unsigned char)h[i]);
			continue;
		}
		if (len == 0)
			return err_set(e, EINVAL,
				       "tls host name '%s': an empty label (a leading, trailing or "
				       "doubled '.')",
				       show);
		if (len > 63)
			return err_set(e, EINVAL,
				       "tls host name '%s': label %zu bytes long, over 63", show,
				       len);
		if (h[start] == '-' || h[i - 1] == '-')
			return err_set(e, EINVAL,
				       "tls host name '%s': a label begins or ends with '-'", show);
		last = start;
		start = i + 1;
	}
	/* RFC 3696 2: a top-level label is never all digits; clients take
	 * such a name for an address */
	for (size_t i = last; i < n; i++)
		if (!is_digit(h[i]))
			return 0;
	return err_set(e, EINVAL,
		       "tls host name '%s': the last label is all digits, which reads as an IP "
		       "address: certificates are minted for DNS names only",
		       show);
}

int tls_host_check(const char *host, char out[TLS_HOST_MAX + 1], struct err *e)
{
	size_t n = strnlen(host, TLS_HOST_MAX + 1);
	char show[80];
	int rc;

	shown(host, show);
	if (n == 0)
		return err_set(e, EINVAL,
			       "tls host name '': empty: name the host the client asked for");
	if (n > TLS_HOST_MAX)
		return err_set(e, EINVAL, "tls host name '%s': over %d bytes: not a DNS name", show,
			       TLS_HOST_MAX);
	if (strchr(host, '*'))
		return err_set(e, EINVAL,
			       "tls host name '%s': a wildcard: the proxy mints a certificate per "
			       "exact host name",
			       show);
	if (reads_as_ip(host))
		return err_set(e, EINVAL,
			       "tls host name '%s': an IP address: certificates are minted for DNS "
			       "names only",
			       show);
	rc = labels_check(host, show, e);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i <= n; i++)
		out[i] = (host[i] >= 'A' && host[i] <= 'Z') ? (char)(host[i] - 'A' + 'a') : host[i];
	return 0;
}

void tls_leaf_free(struct tls_leaf *leaf)
{
	if (!leaf)
		return;
	X509_free(leaf->cert);
	EVP_PKEY_free(leaf->key);
	free(leaf);
}

/* subjectAltName: the one dNSName, built as a structure (no text form
 * for OpenSSL's configuration parser to read). */
static int add_san(X509 *x, const char *host, struct err *e)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_IA5STRING *dns = ASN1_IA5STRING_new();
	int ok = names && gn && dns && ASN1_STRING_set(dns, host, (int)strlen(host));

	if (ok) {
		GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
		dns = NULL;
		ok = sk_GENERAL_NAME_push(names, gn) > 0;
	}
	if (ok) {
		gn = NULL;
		ok = X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1;
	}
	ASN1_IA5STRING_free(dns);
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(names);
	return ok ? 0 : tls_x509_fail(e, ENOMEM, "tls leaf: adding the subjectAltName");
}

static int build(const struct tls_ca *ca, struct tls_leaf *leaf, time_t now, struct err *e)
{
	X509 *issuer = tls_ca_cert(ca);
	time_t nb = now - 3600, na = now + TLS_LEAF_LIFETIME;
	X509_NAME *subj;
	int rc;

	if (nb < tls_ca_not_before(ca))
		nb = tls_ca_not_before(ca);
	if (na > tls_ca_not_after(ca))
		na = tls_ca_not_after(ca);
	leaf->not_after = na;
	leaf->cert = X509_new();
	if (!leaf->cert)
		return tls_x509_fail(e, ENOMEM, "tls leaf: a certificate");
	if ((rc = tls_x509_p256(&leaf->key, e)) < 0 ||
	    (rc = tls_x509_start(leaf->cert, nb, na, leaf->key, e)) < 0)
		return rc;
	subj = X509_get_subject_name(leaf->cert);
	if (!X509_NAME_add_entry_by_txt(subj, "O", MBSTRING_ASC,
					(const unsigned char *)"kiln egress proxy", -1, -1, 0) ||
	    !X509_set_issuer_name(leaf->cert, X509_get_subject_name(issuer)))
		return tls_x509_fail(e, ENOMEM, "tls leaf: setting the names");
	if ((rc = add_san(leaf->cert, leaf->host, e)) < 0 ||
	    (rc = tls_x509_ext(issuer, NULL, leaf->cert, NID_basic_constraints, "critical,CA:FALSE",
			       e)) < 0 ||
	    (rc = tls_x509_ext(issuer, NULL, leaf->cert, NID_key_usage, "critical,digitalSignature",
			       e)) < 0 ||
	    (rc = tls_x509_ext(issuer, NULL, leaf->cert, NID_ext_key_usage, "serverAuth", e)) < 0 ||
	    (rc = tls_x509_ext(issuer, NULL, leaf->cert, NID_subject_key_identifier, "hash", e)) <
		    0 ||
	    (rc = tls_x509_ext(issuer, NULL, leaf->cert, NID_authority_key_identifier,
			       "keyid:always", e)) < 0)
		return rc;
	return tls_ca_sign(ca, leaf->cert, e);
}

int tls_leaf_mint(const struct tls_ca *ca, const char *host, struct tls_leaf **out, struct err *e)
{
	struct tls_leaf *leaf;
	time_t now = time(NULL);
	int rc;

	*out = NULL;
	leaf = calloc(1, sizeof(*leaf));
	if (!leaf)
		return err_set(e, ENOMEM, "tls leaf: out of memory");
	rc = tls_host_check(host, leaf->host, e);
	if (!rc && (tls_ca_not_after(ca) <= now || tls_ca_not_before(ca) > now))
		rc = err_set(e, EKEYEXPIRED,
			     "tls leaf for '%s': the CA is not valid now (expired, or the clock "
			     "is behind it): make a new CA and install its certificate in the guest",
			     leaf->host);
	if (!rc)
		rc = build(ca, leaf, now, e);
	if (rc < 0) {
		tls_leaf_free(leaf);
		return rc;
	}
	*out = leaf;
	return 0;
}

/*
 * The two ends of the egress CA agree: the certificate lib/tlsmint makes
 * for a sandbox (kiln-egress --init-ca writes it as ca.pem, kilnd sends it
 * as configure.trust_ca) passes the agent codec's strict PEM check, as
 * written, and the CA's private key, the one thing that must never reach
 * a guest, does not, alone or after the certificate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/proto/agent_proto.h"
#include "lib/tlsmint/tls_ca.h"

/* A file's text (malloc'd, NUL-terminated). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	assert_true(n > 0);
	fclose(f);
	return buf;
}

static void test_minted_ca_passes(void **state)
{
	static const char *const ids[] = { "a1b2c3d4e5f6", "x",
					   "sandbox-with-a-long-id-0123456789" };

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct tls_ca *ca = NULL;
		struct err e = { "" };
		char *pem = NULL;
		size_t len = 0;

		assert_int_equal(tls_ca_new(ids[i], 86400, 0, &ca, &e), 0);
		assert_int_equal(tls_ca_cert_pem(ca, &pem, &len, &e), 0);
		assert_true(len <= AGENT_TRUST_CA_MAX);
		assert_null(agent_pem_cert_check(pem));
		free(pem);
		tls_ca_free(ca);
	}
}

/* What tls_ca_save writes: ca.pem passes, its key (sent by mistake) and
 * the two together are refused. */
static void test_saved_files(void **state)
{
	char dir[] = "/tmp/kiln-mint-XXXXXX", p[64], *key = NULL, *cert = NULL, *both;
	struct tls_ca *ca = NULL;
	struct err e = { "" };
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(tls_ca_new("saved", 86400, 0, &ca, &e), 0);
	assert_int_equal(tls_ca_save(ca, dfd, &e), 0);
	snprintf(p, sizeof(p), "%s/" TLS_CA_KEY_FILE, dir);
	key = slurp(p);
	snprintf(p, sizeof(p), "%s/" TLS_CA_CERT_FILE, dir);
	cert = slurp(p);
	assert_null(agent_pem_cert_check(cert));
	assert_non_null(agent_pem_cert_check(key));
	both = malloc(strlen(key) + strlen(cert) + 1);
	assert_non_null(both);
	strcpy(both, cert);
	strcat(both, key);
	assert_non_null(agent_pem_cert_check(both));
	free(both);
	free(key);
	free(cert);
	tls_ca_free(ca);
	unlinkat(dfd, TLS_CA_KEY_FILE, 0);
	unlinkat(dfd, TLS_CA_CERT_FILE, 0);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minted_ca_passes),
		cmocka_unit_test(test_saved_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

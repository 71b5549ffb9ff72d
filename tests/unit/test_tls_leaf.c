/*
 * lib/tlsmint/tls_leaf and tls_cache: leaves for one exact host name as
 * the planned egress proxy (issue 37) will present them. What a leaf
 * says; that it verifies against its CA alone for its host and for no
 * other (X509_verify_cert); real TLS handshakes over a socketpair, the
 * server taking its leaf from the cache by SNI, against a client that
 * trusts the CA (and one that trusts another CA); clients kiln did not
 * write (openssl verify, openssl s_server with curl); host names refused
 * with their exact lines; and the cache's reuse and bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lib/tlsmint/tls_ca.h"
#include "lib/tlsmint/tls_cache.h"
#include "lib/tlsmint/tls_leaf.h"
#include "lib/tlsmint/tls_x509.h"
#include "tmpdir.h"

#define DAY 86400L

extern char **environ;

static struct tls_ca *new_ca(const char *id, long lifetime)
{
	struct tls_ca *ca = NULL;
	struct err e = { "" };

	assert_int_equal(tls_ca_new(id, lifetime, 0, &ca, &e), 0);
	return ca;
}

static struct tls_leaf *mint(const struct tls_ca *ca, const char *host)
{
	struct tls_leaf *leaf = NULL;
	struct err e = { "" };

	if (tls_leaf_mint(ca, host, &leaf, &e) != 0)
		fail_msg("mint %s: %s", host, e.msg);
	return leaf;
}

/* X509_verify_cert of x against a store holding ca alone, for host:
 * X509_V_OK or the verifier's error. */
static int verify(const struct tls_ca *ca, X509 *x, const char *host)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *p;
	int ok, err;

	assert_true(X509_STORE_add_cert(store, tls_ca_cert(ca)));
	assert_true(X509_STORE_CTX_init(ctx, store, x, NULL));
	p = X509_STORE_CTX_get0_param(ctx);
	/* the SAN alone: a subject common name never stands in for it */
	X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	assert_true(X509_VERIFY_PARAM_set1_host(p, host, 0));
	X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER);
	ok = X509_verify_cert(ctx);
	err = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	ERR_clear_error();
	return ok == 1 ? X509_V_OK : err;
}

static void test_leaf_says_one_host(void **state)
{
	struct tls_ca *ca = new_ca("leaf", 365 * DAY);
	struct tls_leaf *leaf = mint(ca, "API.Test");
	X509 *x = leaf->cert;
	GENERAL_NAMES *san;
	const GENERAL_NAME *gn;
	time_t nb, na, now = time(NULL);
	int i;

	(void)state;
	assert_string_equal(leaf->host, "api.test");
	/* exactly one SAN, the dNSName, in lower case */
	san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	assert_non_null(san);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	gn = sk_GENERAL_NAME_value(san, 0);
	assert_int_equal(gn->type, GEN_DNS);
	assert_int_equal(ASN1_STRING_length(gn->d.dNSName), 8);
	assert_memory_equal(ASN1_STRING_get0_data(gn->d.dNSName), "api.test", 8);
	GENERAL_NAMES_free(san);
	/* no common name to fall back on */
	assert_int_equal(X509_NAME_get_index_by_NID(X509_get_subject_name(x), NID_commonName, -1),
			 -1);
	/* a server's leaf, nothing more */
	assert_int_equal(X509_check_ca(x), 0);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_SERVER);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	i = X509_get_ext_by_NID(x, NID_key_usage, -1);
	assert_true(X509_EXTENSION_get_critical(X509_get_ext(x, i)));
	i = X509_get_ext_by_NID(x, NID_basic_constraints, -1);
	assert_true(X509_EXTENSION_get_critical(X509_get_ext(x, i)));
	/* issued by the CA, its key identifier named */
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x),
				       X509_get_subject_name(tls_ca_cert(ca))),
			 0);
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x),
					       X509_get0_subject_key_id(tls_ca_cert(ca))),
			 0);
	assert_int_equal(EVP_PKEY_get_bits(leaf->key), 256);
	assert_int_equal(X509_check_private_key(x, leaf->key), 1);
	/* an hour back, 30 days ahead */
	assert_int_equal(tls_x509_time(X509_get0_notBefore(x), &nb), 0);
	assert_int_equal(tls_x509_time(X509_get0_notAfter(x), &na), 0);
	assert_true(nb <= now - 3600 + 5 && nb >= now - 3600 - 5);
	assert_true(na - nb <= TLS_LEAF_LIFETIME + 3600);
	assert_int_equal(na, leaf->not_after);
	tls_leaf_free(leaf);
	tls_ca_free(ca);
}

static void test_verifies_for_its_host_only(void **state)
{
	struct tls_ca *ca = new_ca("verify", 365 * DAY), *other = new_ca("other", 365 * DAY);
	struct tls_leaf *leaf = mint(ca, "api.test");

	(void)state;
	assert_int_equal(verify(ca, leaf->cert, "api.test"), X509_V_OK);
	assert_int_equal(verify(ca, leaf->cert, "API.TEST"), X509_V_OK);
	assert_int_equal(verify(ca, leaf->cert, "other.test"), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(verify(ca, leaf->cert, "x.api.test"), X509_V_ERR_HOSTNAME_MISMATCH);
	/* a second CA's trust store does not take it */
	assert_int_equal(verify(other, leaf->cert, "api.test"),
			 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	tls_leaf_free(leaf);
	tls_ca_free(ca);
	tls_ca_free(other);
}

static void test_validity_within_the_ca(void **state)
{
	/* a CA of two hours: its leaves end with it, not in 30 days */
	struct tls_ca *ca = new_ca("short", 7200), *old = NULL;
	struct tls_leaf *leaf = mint(ca, "api.test"), *none = (struct tls_leaf *)1;
	struct err e = { "" };
	time_t nb;

	(void)state;
	assert_int_equal(leaf->not_after, tls_ca_not_after(ca));
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(leaf->cert), tls_ca_not_after(ca)),
			 0);
	assert_int_equal(tls_x509_time(X509_get0_notBefore(leaf->cert), &nb), 0);
	assert_true(nb >= tls_ca_not_before(ca));
	assert_int_equal(verify(ca, leaf->cert, "api.test"), X509_V_OK);
	/* an expired CA mints nothing */
	assert_int_equal(tls_ca_new("old", 3600, time(NULL) - 2 * DAY, &old, &e), 0);
	assert_int_equal(tls_leaf_mint(old, "api.test", &none, &e), -EKEYEXPIRED);
	assert_null(none);
	assert_string_equal(e.msg,
			    "tls leaf for 'api.test': the CA is not valid now (expired, or "
			    "the clock is behind it): make a new CA and install its "
			    "certificate in the guest");
	tls_leaf_free(leaf);
	tls_ca_free(ca);
	tls_ca_free(old);
}

static void test_host_names(void **state)
{
	static const struct {
		const char *host, *msg;
	} bad[] = {
		{ "", "tls host name '': empty: name the host the client asked for" },
		{ "*.api.test",
		  "tls host name '*.api.test': a wildcard: the proxy mints a "
		  "certificate per exact host name" },
		{ "api.*",
		  "tls host name 'api.*': a wildcard: the proxy mints a certificate per "
		  "exact host name" },
		{ "10.0.2.2",
		  "tls host name '10.0.2.2': an IP address: certificates are minted for "
		  "DNS names only" },
		{ "0x7f.1",
		  "tls host name '0x7f.1': an IP address: certificates are minted for DNS "
		  "names only" },
		{ "::1",
		  "tls host name '::1': an IP address: certificates are minted for DNS names "
		  "only" },
		{ "[fd00::3]",
		  "tls host name '[fd00::3]': an IP address: certificates are minted "
		  "for DNS names only" },
		{ "api.123",
		  "tls host name 'api.123': the last label is all digits, which reads as "
		  "an IP address: certificates are minted for DNS names only" },
		{ "api.test.",
		  "tls host name 'api.test.': an empty label (a leading, trailing or "
		  "doubled '.')" },
		{ ".api.test",
		  "tls host name '.api.test': an empty label (a leading, trailing or "
		  "doubled '.')" },
		{ "api..test",
		  "tls host name 'api..test': an empty label (a leading, trailing or "
		  "doubled '.')" },
		{ "a_b.test",
		  "tls host name 'a_b.test': byte 1 (0x5f) is not a letter, digit, '-' "
		  "or '.'" },
		{ "api.test\n",
		  "tls host name 'api.test?': byte 8 (0x0a) is not a letter, digit, "
		  "'-' or '.'" },
		{ "api.test/x",
		  "tls host name 'api.test/x': byte 8 (0x2f) is not a letter, digit, "
		  "'-' or '.'" },
		{ "caf\xc3\xa9.test",
		  "tls host name 'caf\xc3\xa9.test': byte 3 (0xc3) is not a "
		  "letter, digit, '-' or '.'" },
		{ "-api.test", "tls host name '-api.test': a label begins or ends with '-'" },
		{ "api-.test", "tls host name 'api-.test': a label begins or ends with '-'" },
	};
	char out[TLS_HOST_MAX + 1], long_label[80], name[300], want[300];
	struct err e = { "" };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tls_host_check(bad[i].host, out, &e), -EINVAL);
		if (strcmp(e.msg, bad[i].msg) != 0)
			fail_msg("'%s': got \"%s\"", bad[i].host, e.msg);
	}
	/* 63 is a label's most, 64 one too many */
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".test");
	assert_int_equal(tls_host_check(long_label, out, &e), -EINVAL);
	assert_string_equal(e.msg,
			    "tls host name '"
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			    "...': label 64 bytes long, over 63");
	assert_int_equal(tls_host_check(long_label + 1, out, &e), 0);
	/* 253 bytes in all is the most */
	for (int i = 0; i < 4; i++) {
		memset(name + 64 * i, 'b', 63);
		name[64 * i + 63] = '.';
	}
	name[253] = '\0'; /* 4 labels: 63+63+63+61 */
	assert_int_equal(tls_host_check(name, out, &e), 0);
	name[253] = 'b';
	name[254] = '\0';
	assert_int_equal(tls_host_check(name, out, &e), -EINVAL);
	snprintf(want, sizeof(want), "tls host name '%.64s...': over 253 bytes: not a DNS name",
		 name);
	assert_string_equal(e.msg, want);
	/* accepted, in lower case */
	assert_int_equal(tls_host_check("Api-2.Example.COM", out, &e), 0);
	assert_string_equal(out, "api-2.example.com");
	assert_int_equal(tls_host_check("localhost", out, &e), 0);
	assert_int_equal(tls_host_check("1password.com", out, &e), 0);
}

static void test_mint_refuses_hosts(void **state)
{
	struct tls_ca *ca = new_ca("refuse", 365 * DAY);
	struct tls_leaf *leaf = (struct tls_leaf *)1;
	struct err e = { "" };

	(void)state;
	assert_int_equal(tls_leaf_mint(ca, "*.api.test", &leaf, &e), -EINVAL);
	assert_null(leaf);
	assert_string_equal(e.msg,
			    "tls host name '*.api.test': a wildcard: the proxy mints a "
			    "certificate per exact host name");
	assert_int_equal(tls_leaf_mint(ca, "127.0.0.1", &leaf, &e), -EINVAL);
	tls_ca_free(ca);
}

/* The proxy's way: the server has no certificate of its own and takes the
 * leaf for the client's SNI from the cache (fail closed without one). */
static int sni_leaf(SSL *s, int *alert, void *arg)
{
	const char *name = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
	struct err e = { "" };
	EVP_PKEY *key;
	X509 *cert;
	int ok;

	(void)alert;
	if (!name || tls_cache_get(arg, name, &cert, &key, &e) < 0)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	ok = SSL_use_certificate(s, cert) == 1 && SSL_use_PrivateKey(s, key) == 1;
	X509_free(cert);
	EVP_PKEY_free(key);
	return ok ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_ALERT_FATAL;
}

struct server {
	int fd;
	struct tls_cache *cache;
	int accepted;
};

static void *serve(void *arg)
{
	struct server *sv = arg;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	SSL *s;

	SSL_CTX_set_tlsext_servername_callback(ctx, sni_leaf);
	SSL_CTX_set_tlsext_servername_arg(ctx, sv->cache);
	s = SSL_new(ctx);
	SSL_set_fd(s, sv->fd);
	sv->accepted = SSL_accept(s) == 1;
	if (sv->accepted) {
		SSL_write(s, "hello", 5);
		SSL_shutdown(s);
	}
	SSL_free(s);
	SSL_CTX_free(ctx);
	close(sv->fd);
	ERR_clear_error();
	return NULL;
}

/* A TLS client over a socketpair to a server thread whose leaves come
 * from cache: it trusts only trusted, sends sni, verifies host. The
 * verify result (X509_V_OK on a handshake that read the server's
 * "hello"), or -1 when the handshake failed short of verification. */
static long handshake(struct tls_cache *cache, const struct tls_ca *trusted, const char *sni,
		      const char *host)
{
	struct server sv = { .cache = cache };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	char buf[8] = "";
	pthread_t t;
	int sp[2], ok;
	long res;
	SSL *c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	sv.fd = sp[1];
	assert_int_equal(pthread_create(&t, NULL, serve, &sv), 0);
	assert_true(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), tls_ca_cert(trusted)));
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	c = SSL_new(ctx);
	assert_true(SSL_set_tlsext_host_name(c, sni));
	assert_true(SSL_set1_host(c, host));
	SSL_set_fd(c, sp[0]);
	ok = SSL_connect(c) == 1 && SSL_read(c, buf, 5) == 5 && memcmp(buf, "hello", 5) == 0;
	res = SSL_get_verify_result(c);
	SSL_free(c);
	SSL_CTX_free(ctx);
	close(sp[0]);
	assert_int_equal(pthread_join(t, NULL), 0);
	ERR_clear_error();
	if (ok) {
		assert_true(sv.accepted);
		return res;
	}
	assert_false(sv.accepted);
	return res == X509_V_OK ? -1 : res;
}

static void test_handshake(void **state)
{
	struct tls_ca *ca = new_ca("hs", 365 * DAY), *other = new_ca("other", 365 * DAY);
	struct tls_cache *cache = NULL;
	struct err e = { "" };

	(void)state;
	assert_int_equal(tls_cache_new(ca, TLS_CACHE_DEFAULT, &cache, &e), 0);
	assert_int_equal(handshake(cache, ca, "api.test", "api.test"), X509_V_OK);
	/* the same leaf again, from the cache */
	assert_int_equal(handshake(cache, ca, "api.test", "api.test"), X509_V_OK);
	assert_int_equal(tls_cache_minted(cache), 1);
	/* a client that trusts another CA refuses the leaf */
	assert_int_equal(handshake(cache, other, "api.test", "api.test"),
			 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	/* a leaf for the SNI is not one for another host */
	assert_int_equal(handshake(cache, ca, "api.test", "other.test"),
			 X509_V_ERR_HOSTNAME_MISMATCH);
	/* a SNI the proxy must not mint for: no certificate, no handshake */
	assert_int_equal(handshake(cache, ca, "*.api.test", "api.test"), -1);
	assert_int_equal(tls_cache_minted(cache), 1);
	tls_cache_free(cache);
	tls_ca_free(ca);
	tls_ca_free(other);
}

/* argv run with stdin, stdout and stderr on /dev/null (out_fd, when >= 0,
 * for stdout): its pid. */
static pid_t spawn(const char *const argv[], int out_fd)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0)
		fail_msg("%s: cannot run it (scripts/install-deps installs it)", argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* argv's exit status (-1 when a signal ended it). */
static int run(const char *const argv[])
{
	pid_t pid = spawn(argv, -1);
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put_pem(const char *dir, const char *name, X509 *x, EVP_PKEY *k)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(x ? PEM_write_X509(f, x)
		      : PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
	fclose(f);
}

/* Start `openssl s_server` on 127.0.0.1 with the leaf: its pid, and the
 * port it chose in *port (read from its "ACCEPT 127.0.0.1:PORT" line). */
static pid_t s_server(const char *dir, char port[8])
{
	char cert[128], key[128], line[256] = "";
	const char *argv[] = { "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert",
			       cert,      "-key",     key,       "-www",        NULL };
	int p[2];
	pid_t pid;
	FILE *out;

	snprintf(cert, sizeof(cert), "%s/leaf.pem", dir);
	snprintf(key, sizeof(key), "%s/leaf-key.pem", dir);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = spawn(argv, p[1]);
	close(p[1]);
	out = fdopen(p[0], "r");
	while (fgets(line, sizeof(line), out) && strncmp(line, "ACCEPT 127.0.0.1:", 17) != 0)
		;
	fclose(out);
	if (sscanf(line, "ACCEPT 127.0.0.1:%7[0-9]", port) != 1)
		fail_msg("openssl s_server did not say where it listens: '%s'", line);
	return pid;
}

static int curl(const char *dir, const char *cafile, const char *host, const char *port)
{
	char ca[128], resolve[300], url[300];
	const char *argv[] = { "curl",      "--silent", "--fail",    "--max-time", "20",
			       "--noproxy", "*",        "--cacert",  ca,           "--resolve",
			       resolve,     "-o",       "/dev/null", url,          NULL };

	snprintf(ca, sizeof(ca), "%s/%s", dir, cafile);
	snprintf(resolve, sizeof(resolve), "%s:%s:127.0.0.1", host, port);
	snprintf(url, sizeof(url), "https://%s:%s/", host, port);
	return run(argv);
}

static void test_clients_kiln_did_not_write(void **state)
{
	struct tmpdir_fx *f = *state;
	struct tls_ca *ca = new_ca("interop", 365 * DAY), *other = new_ca("other", 365 * DAY);
	struct tls_leaf *leaf = mint(ca, "api.test");
	struct err e = { "" };
	char leaf_pem[128], ca_pem[128], port[8];
	const char *ok[] = { "openssl",          "verify",   "-CAfile", ca_pem,
			     "-verify_hostname", "api.test", leaf_pem,  NULL };
	const char *wrong[] = { "openssl",          "verify",     "-CAfile", ca_pem,
				"-verify_hostname", "other.test", leaf_pem,  NULL };
	pid_t srv;
	int st;

	snprintf(leaf_pem, sizeof(leaf_pem), "%s/leaf.pem", f->dir);
	snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", f->dir);
	/* ca.pem as the CA saves it; the leaf's pair as the proxy holds it */
	assert_int_equal(tls_ca_save(ca, f->dfd, &e), 0);
	put_pem(f->dir, "leaf.pem", leaf->cert, NULL);
	put_pem(f->dir, "leaf-key.pem", NULL, leaf->key);
	put_pem(f->dir, "other-ca.pem", tls_ca_cert(other), NULL);
	assert_int_equal(run(ok), 0);
	assert_int_not_equal(run(wrong), 0);

	srv = s_server(f->dir, port);
	assert_int_equal(curl(f->dir, "ca.pem", "api.test", port), 0);
	/* 60: the peer's certificate cannot be authenticated */
	assert_int_equal(curl(f->dir, "ca.pem", "other.test", port), 60);
	assert_int_equal(curl(f->dir, "other-ca.pem", "api.test", port), 60);
	kill(srv, SIGTERM);
	assert_int_equal(waitpid(srv, &st, 0), srv);
	tls_leaf_free(leaf);
	tls_ca_free(ca);
	tls_ca_free(other);
}

static void test_cache_reuses_and_evicts(void **state)
{
	struct tls_ca *ca = new_ca("cache", 365 * DAY);
	struct tls_cache *c = NULL;
	struct err e = { "" };
	X509 *first, *again, *x;
	EVP_PKEY *k1, *k2, *k;
	char host[32];

	(void)state;
	assert_int_equal(tls_cache_new(ca, 0, &c, &e), -EINVAL);
	assert_string_equal(e.msg, "tls cache: 0 entries: want 1..65536");
	assert_int_equal(tls_cache_new(ca, TLS_CACHE_MAX + 1, &c, &e), -EINVAL);
	assert_int_equal(tls_cache_new(ca, 4, &c, &e), 0);
	/* the same leaf for the same host, whatever its case */
	assert_int_equal(tls_cache_get(c, "h0.test", &first, &k1, &e), 0);
	assert_int_equal(tls_cache_get(c, "H0.Test", &again, &k2, &e), 0);
	assert_ptr_equal(first, again);
	assert_ptr_equal(k1, k2);
	assert_int_equal(tls_cache_minted(c), 1);
	X509_free(again);
	EVP_PKEY_free(k2);
	/* h1..h3 fill it; h0 used again, so h1 is the least recent; h4
	 * evicts h1, not h0 */
	for (int i = 1; i <= 3; i++) {
		snprintf(host, sizeof(host), "h%d.test", i);
		assert_int_equal(tls_cache_get(c, host, &x, &k, &e), 0);
		X509_free(x);
		EVP_PKEY_free(k);
	}
	assert_int_equal(tls_cache_count(c), 4);
	assert_int_equal(tls_cache_get(c, "h0.test", &x, &k, &e), 0);
	assert_ptr_equal(x, first);
	X509_free(x);
	EVP_PKEY_free(k);
	assert_int_equal(tls_cache_get(c, "h4.test", &x, &k, &e), 0);
	X509_free(x);
	EVP_PKEY_free(k);
	assert_int_equal(tls_cache_count(c), 4);
	assert_int_equal(tls_cache_minted(c), 5);
	assert_int_equal(tls_cache_get(c, "h0.test", &x, &k, &e), 0);
	assert_ptr_equal(x, first); /* kept */
	X509_free(x);
	EVP_PKEY_free(k);
	assert_int_equal(tls_cache_minted(c), 5);
	assert_int_equal(tls_cache_get(c, "h1.test", &x, &k, &e), 0);
	assert_int_equal(tls_cache_minted(c), 6); /* evicted: minted again */
	X509_free(x);
	EVP_PKEY_free(k);
	assert_int_equal(tls_cache_count(c), 4);
	/* a refused name mints nothing and is not held */
	assert_int_equal(tls_cache_get(c, "10.0.0.1", &x, &k, &e), -EINVAL);
	assert_null(x);
	assert_int_equal(tls_cache_minted(c), 6);
	/* what was handed out outlives the cache */
	tls_cache_free(c);
	assert_int_equal(verify(ca, first, "h0.test"), X509_V_OK);
	X509_free(first);
	EVP_PKEY_free(k1);
	tls_ca_free(ca);
}

static void test_cache_renews(void **state)
{
	struct tls_ca *ca = new_ca("renew", 365 * DAY), *brief = new_ca("brief", 2 * 3600);
	struct tls_cache *c = NULL, *cb = NULL;
	struct err e = { "" };
	X509 *a, *b;
	EVP_PKEY *ka, *kb;
	time_t now = time(NULL);

	(void)state;
	assert_int_equal(tls_cache_new(ca, 4, &c, &e), 0);
	assert_int_equal(tls_cache_get(c, "api.test", &a, &ka, &e), 0);
	/* 28 days on: two left, still kept */
	assert_int_equal(tls_cache_get_at(c, "api.test", now + 28 * DAY, &b, &kb, &e), 0);
	assert_ptr_equal(a, b);
	X509_free(b);
	EVP_PKEY_free(kb);
	/* 29.5 days on: under a day left, minted again in its place */
	assert_int_equal(tls_cache_get_at(c, "api.test", now + 29 * DAY + DAY / 2, &b, &kb, &e), 0);
	assert_ptr_not_equal(a, b);
	assert_int_equal(tls_cache_minted(c), 2);
	assert_int_equal(tls_cache_count(c), 1);
	X509_free(a);
	EVP_PKEY_free(ka);
	X509_free(b);
	EVP_PKEY_free(kb);
	/* a CA that ends within the day: its leaves end with it, and one
	 * minted again would be no longer, so the cache keeps it */
	assert_int_equal(tls_cache_new(brief, 4, &cb, &e), 0);
	assert_int_equal(tls_cache_get(cb, "api.test", &a, &ka, &e), 0);
	assert_int_equal(tls_cache_get_at(cb, "api.test", now + 3600, &b, &kb, &e), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(tls_cache_minted(cb), 1);
	X509_free(a);
	EVP_PKEY_free(ka);
	X509_free(b);
	EVP_PKEY_free(kb);
	tls_cache_free(c);
	tls_cache_free(cb);
	tls_ca_free(ca);
	tls_ca_free(brief);
}

struct racer {
	struct tls_cache *c;
	X509 *got[8];
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct err e = { "" };
	char host[32];
	EVP_PKEY *k;

	for (int i = 0; i < 8; i++) {
		snprintf(host, sizeof(host), "r%d.test", i % 4);
		assert_int_equal(tls_cache_get(r->c, host, &r->got[i], &k, &e), 0);
		EVP_PKEY_free(k);
	}
	return NULL;
}

static void test_cache_threads(void **state)
{
	/* four threads over four hosts at once: every thread gets the one
	 * leaf each host keeps, whoever minted it */
	struct tls_ca *ca = new_ca("threads", 365 * DAY);
	struct racer r[4];
	pthread_t t[4];
	struct err e = { "" };
	struct tls_cache *c;

	(void)state;
	assert_int_equal(tls_cache_new(ca, 16, &c, &e), 0);
	for (int i = 0; i < 4; i++) {
		r[i].c = c;
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(tls_cache_count(c), 4);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++) {
			/* the second round of each thread sees the kept leaf */
			if (j >= 4)
				assert_ptr_equal(r[i].got[j], r[0].got[4 + (j % 4)]);
			X509_free(r[i].got[j]);
		}
	tls_cache_free(c);
	tls_ca_free(ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaf_says_one_host),
		cmocka_unit_test(test_verifies_for_its_host_only),
		cmocka_unit_test(test_validity_within_the_ca),
		cmocka_unit_test(test_host_names),
		cmocka_unit_test(test_mint_refuses_hosts),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test_setup_teardown(test_clients_kiln_did_not_write, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_cache_reuses_and_evicts),
		cmocka_unit_test(test_cache_renews),
		cmocka_unit_test(test_cache_threads),
	};

	/* a handshake a client abandons leaves the server writing to a closed
	 * socket: EPIPE, as in any server of kiln, not a signal */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

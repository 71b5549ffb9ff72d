/*
 * kilnd's egress CA into the guest (sandbox_trust.c): the file beneath the
 * sandbox directory read as one a less privileged uid could have planted
 * (a link anywhere on the way, a fifo, an oversized file: refused, naming
 * it), absent meaning none; sandbox_trust_push sends it, or "" once gone,
 * to an agent (the real parser behind a fake VMM socket), and a file that
 * is no certificate never leaves the host.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/net/sandbox_trust.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "fake_agent.h"
#include "tests/unit/test_ca_pem.h"
#include "tests/unit/tmpdir.h"

/* kilnd.c's, which a unit test does not link. */
int64_t wall_ms(void)
{
	return 1732269600000;
}

static struct sandbox sb;
static char seen[256];

static void setup_sb(const char *dir)
{
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.dir, sizeof(sb.dir), "%s", dir);
	snprintf(sb.rec.id, sizeof(sb.rec.id), "sbx1");
}

static void test_read(void **state)
{
	struct tmpdir_fx *fx = *state;
	char p[256], q[256], *pem = (char *)1;
	struct api_err e;

	setup_sb(fx->dir);
	/* No egress/ at all, then an empty one: no CA. */
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), 0);
	assert_null(pem);
	snprintf(p, sizeof(p), "%s/egress", fx->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), 0);

	tmpdir_put(fx->dir, "egress/ca.pem", TEST_CA_PEM);
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), 1);
	assert_string_equal(pem, TEST_CA_PEM);
	free(pem);

	/* A symbolic link as the file: refused, not followed. */
	snprintf(q, sizeof(q), "%s/egress/real.pem", fx->dir);
	snprintf(p, sizeof(p), "%s/egress/ca.pem", fx->dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink("real.pem", p), 0);
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), -1);
	assert_null(pem);
	assert_non_null(strstr(e.msg, "egress/ca.pem"));
	assert_non_null(strstr(e.msg, "symbolic link"));
	assert_int_equal(unlink(p), 0);

	/* A fifo: refused at once, never waited on. */
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), -1);
	assert_non_null(strstr(e.msg, "fifo"));
	assert_int_equal(unlink(p), 0);

	/* Larger than one certificate. */
	{
		char big[SANDBOX_TRUST_CA_MAX + 2];

		memset(big, 'A', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		tmpdir_put(fx->dir, "egress/ca.pem", big);
		assert_int_equal(sandbox_trust_read(&sb, &pem, &e), -1);
		assert_non_null(strstr(e.msg, "8192"));
		/* Exactly the limit is read. */
		big[SANDBOX_TRUST_CA_MAX] = '\0';
		tmpdir_put(fx->dir, "egress/ca.pem", big);
		assert_int_equal(sandbox_trust_read(&sb, &pem, &e), 1);
		assert_int_equal(strlen(pem), SANDBOX_TRUST_CA_MAX);
		free(pem);
		assert_int_equal(unlink(p), 0);
	}

	/* egress/ itself a link (to a directory holding a ca.pem): refused. */
	snprintf(q, sizeof(q), "%s/elsewhere", fx->dir);
	assert_int_equal(mkdir(q, 0700), 0);
	tmpdir_put(fx->dir, "elsewhere/ca.pem", TEST_CA_PEM);
	snprintf(p, sizeof(p), "%s/egress", fx->dir);
	snprintf(q, sizeof(q), "%s/egress/real.pem", fx->dir);
	assert_int_equal(unlink(q), 0);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(symlink("elsewhere", p), 0);
	assert_int_equal(sandbox_trust_read(&sb, &pem, &e), -1);
	assert_null(pem);
}

static void serve_configure(struct agent_conn *c, struct agent_msg *m)
{
	size_t n = strlen(seen);
	const char *ok = "{\"type\":\"ok\"}\n";

	assert_int_equal(m->type, AGENT_T_CONFIGURE);
	assert_null(m->u.conf.hostname);
	snprintf(seen + n, sizeof(seen) - n, "%s ",
		 !m->u.conf.trust_ca                                ? "none"
			 : !*m->u.conf.trust_ca                     ? "remove"
			 : !strcmp(m->u.conf.trust_ca, TEST_CA_PEM) ? "ca"
								    : "other");
	assert_int_equal(write(c->fd, ok, strlen(ok)), (ssize_t)strlen(ok));
}

static void test_push(void **state)
{
	struct tmpdir_fx *fx = *state;
	struct fake_agent v;
	char p[256];
	struct api_err e;

	setup_sb(fx->dir);
	snprintf(p, sizeof(p), "%s/egress", fx->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	tmpdir_put(fx->dir, "egress/ca.pem", TEST_CA_PEM);
	seen[0] = '\0';
	fake_agent_start(&v, 2, serve_configure);
	snprintf(sb.vsock, sizeof(sb.vsock), "%s", v.v.path);
	assert_int_equal(sandbox_trust_push(&sb, &e), 0);
	snprintf(p, sizeof(p), "%s/egress/ca.pem", fx->dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(sandbox_trust_push(&sb, &e), 0);
	/* Not a certificate: refused before any connection. */
	tmpdir_put(fx->dir, "egress/ca.pem",
		   "-----BEGIN PRIVATE KEY-----\nMAEA\n-----END PRIVATE KEY-----\n");
	assert_int_equal(sandbox_trust_push(&sb, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "installing its egress CA"));
	fake_agent_stop(&v);
	assert_string_equal(seen, "ca remove ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_push, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

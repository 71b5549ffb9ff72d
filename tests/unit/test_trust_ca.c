/*
 * trust_ca: the egress CA in the guest's trust. Which files a layout
 * gets (pure), the bundle's marked block replaced and never doubled
 * (pure), and the writes beneath a scratch root: a Debian layout, a RHEL
 * one whose bundle is a link, a re-configure, a removal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest-init/sys/trust_ca.h"
#include "tests/unit/test_ca_pem.h"
#include "tests/unit/tmpdir.h"

#define OTHER_PEM "-----BEGIN CERTIFICATE-----\nMAEA\n-----END CERTIFICATE-----\n"
#define BLOCK(pem) TRUST_MARK_BEGIN "\n" pem TRUST_MARK_END "\n"

static void test_plan(void **state)
{
	struct trust_plan p;

	(void)state;
	/* Nothing at all: the CA alone, nothing of the image touched. */
	trust_plan_make(0, &p);
	assert_null(p.system_bundle);
	assert_false(p.patch_system);
	assert_int_equal(p.anchors_n, 0);
	/* Debian, writable: its bundle patched, its anchor written. */
	trust_plan_make(TRUST_HAS_DEBIAN_BUNDLE | TRUST_HAS_DEBIAN_ANCHORS | TRUST_ROOT_WRITABLE,
			&p);
	assert_string_equal(p.system_bundle, "/etc/ssl/certs/ca-certificates.crt");
	assert_true(p.patch_system);
	assert_int_equal(p.anchors_n, 1);
	assert_string_equal(p.anchors[0], "/usr/local/share/ca-certificates/kiln-egress.crt");
	/* The same read-only: only /run (the bundle is still read from). */
	trust_plan_make(TRUST_HAS_DEBIAN_BUNDLE | TRUST_HAS_DEBIAN_ANCHORS, &p);
	assert_string_equal(p.system_bundle, "/etc/ssl/certs/ca-certificates.crt");
	assert_false(p.patch_system);
	assert_int_equal(p.anchors_n, 0);
	/* RHEL (which also has /etc/ssl/cert.pem on some releases): its own first. */
	trust_plan_make(TRUST_HAS_RHEL_BUNDLE | TRUST_HAS_ALPINE_BUNDLE | TRUST_HAS_RHEL_ANCHORS |
				TRUST_ROOT_WRITABLE,
			&p);
	assert_string_equal(p.system_bundle, "/etc/pki/tls/certs/ca-bundle.crt");
	assert_int_equal(p.anchors_n, 1);
	assert_string_equal(p.anchors[0], "/etc/pki/ca-trust/source/anchors/kiln-egress.pem");
	/* Alpine. */
	trust_plan_make(TRUST_HAS_ALPINE_BUNDLE | TRUST_HAS_DEBIAN_ANCHORS | TRUST_ROOT_WRITABLE,
			&p);
	assert_string_equal(p.system_bundle, "/etc/ssl/cert.pem");
	assert_true(p.patch_system);
	/* Debian's bundle wins over the others. */
	trust_plan_make(TRUST_HAS_DEBIAN_BUNDLE | TRUST_HAS_RHEL_BUNDLE | TRUST_HAS_ALPINE_BUNDLE,
			&p);
	assert_string_equal(p.system_bundle, "/etc/ssl/certs/ca-certificates.crt");
	/* Writable without a bundle: anchors still, nothing to patch. */
	trust_plan_make(TRUST_HAS_DEBIAN_ANCHORS | TRUST_HAS_RHEL_ANCHORS | TRUST_ROOT_WRITABLE,
			&p);
	assert_null(p.system_bundle);
	assert_false(p.patch_system);
	assert_int_equal(p.anchors_n, 2);
}

/* merge(bundle, drop, pem) equals want, and merging that again changes nothing. */
static void merge_drop_is(const char *bundle, const char *drop, const char *pem, const char *want)
{
	size_t n = strlen(bundle), m, m2;
	char *out = malloc(trust_bundle_merge_max(n, pem)), *again;

	assert_non_null(out);
	m = trust_bundle_merge(bundle, n, drop, pem, out);
	assert_true(m <= trust_bundle_merge_max(n, pem));
	assert_int_equal(m, strlen(want));
	assert_memory_equal(out, want, m);
	again = malloc(trust_bundle_merge_max(m, pem));
	m2 = trust_bundle_merge(out, m, drop, pem, again);
	assert_int_equal(m2, m);
	assert_memory_equal(again, out, m);
	free(again);
	free(out);
}

static void merge_is(const char *bundle, const char *pem, const char *want)
{
	merge_drop_is(bundle, NULL, pem, want);
}

static void test_merge(void **state)
{
	(void)state;
	merge_is("", "", "");
	merge_is("", TEST_CA_PEM, BLOCK(TEST_CA_PEM));
	merge_is("A\nB\n", TEST_CA_PEM, "A\nB\n" BLOCK(TEST_CA_PEM));
	/* A bundle without its last newline gets one before the block. */
	merge_is("A", TEST_CA_PEM, "A\n" BLOCK(TEST_CA_PEM));
	/* A pem without its last newline gets one. */
	merge_is("A\n", "-----BEGIN CERTIFICATE-----\nMAEA\n-----END CERTIFICATE-----",
		 "A\n" BLOCK(OTHER_PEM));
	/* Re-configure: the old block replaced, wherever it was, never doubled. */
	merge_is("A\n" BLOCK(TEST_CA_PEM), OTHER_PEM, "A\n" BLOCK(OTHER_PEM));
	merge_is("A\n" BLOCK(TEST_CA_PEM) "B\n", OTHER_PEM, "A\nB\n" BLOCK(OTHER_PEM));
	merge_is("A\n" BLOCK(TEST_CA_PEM) BLOCK(TEST_CA_PEM), TEST_CA_PEM,
		 "A\n" BLOCK(TEST_CA_PEM));
	/* Removal strips it. */
	merge_is("A\n" BLOCK(TEST_CA_PEM), "", "A\n");
	merge_is("A\n", "", "A\n");
	/* A block cut short (no end line) runs to the end of the text. */
	merge_is("A\n" TRUST_MARK_BEGIN "\nhalf", "", "A\n");
	/* Only the exact lines are markers. */
	merge_is("x" TRUST_MARK_BEGIN "\nA\n", "", "x" TRUST_MARK_BEGIN "\nA\n");
	merge_is(TRUST_MARK_END "\n", "", TRUST_MARK_END "\n");
	/* A bundle update-ca-certificates rebuilt from the anchor holds the CA
	 * outside the block: it is there once all the same. */
	merge_is("A\n" TEST_CA_PEM "B\n", TEST_CA_PEM, "A\nB\n" BLOCK(TEST_CA_PEM));
	merge_is("A\n" TEST_CA_PEM, TEST_CA_PEM, "A\n" BLOCK(TEST_CA_PEM));
	/* ... and removing it removes that copy (the CA installed is given). */
	merge_drop_is("A\n" TEST_CA_PEM "B\n", TEST_CA_PEM, "", "A\nB\n");
	merge_drop_is("A\n" TEST_CA_PEM "B\n" BLOCK(OTHER_PEM), TEST_CA_PEM, OTHER_PEM,
		      "A\nB\n" BLOCK(OTHER_PEM));
	/* Only a copy on lines of its own: one inside a longer line stays. */
	merge_drop_is("x" TEST_CA_PEM, TEST_CA_PEM, "", "x" TEST_CA_PEM);
	/* A copy nested in another: taking it out leaves the outer one, which
	 * goes too. */
	merge_is("-----BEGIN CERTIFICATE-----\nMAEA\n" OTHER_PEM "-----END CERTIFICATE-----\n",
		 OTHER_PEM, BLOCK(OTHER_PEM));
	/* One copy made only by taking out the other certificate. */
	merge_drop_is("-----BEGIN CERTIFICATE-----\nMAEA\n" TEST_CA_PEM
		      "-----END CERTIFICATE-----\n",
		      TEST_CA_PEM, OTHER_PEM, BLOCK(OTHER_PEM));
	/* A copy ends where a line ends: a prefix of a line is no copy. */
	merge_drop_is(OTHER_PEM, "-----BEGIN CERTIFICATE-----\nMA", "", OTHER_PEM);
}

/* The file's text (malloc'd), NULL when missing. */
static char *get_file(const char *root, const char *path)
{
	char p[512], *buf;
	FILE *f;
	long n;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static void file_is(const char *root, const char *path, const char *want)
{
	char *have = get_file(root, path);
	char p[512];
	struct stat st;

	if (!want) {
		assert_null(have);
		return;
	}
	assert_non_null(have);
	assert_string_equal(have, want);
	free(have);
	snprintf(p, sizeof(p), "%s%s", root, path);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
}

static void mkdirs(const char *root, const char *const *dirs)
{
	char p[512];

	for (; *dirs; dirs++) {
		snprintf(p, sizeof(p), "%s%s", root, *dirs);
		assert_int_equal(mkdir(p, 0755), 0);
	}
}

#define SYS "# the image's CAs\n-----BEGIN CERTIFICATE-----\nMAEB\n-----END CERTIFICATE-----\n"

static void test_apply_debian(void **state)
{
	struct tmpdir_fx *fx = *state;
	const char *r = fx->dir;
	static const char *const dirs[] = { "/etc",
					    "/etc/ssl",
					    "/etc/ssl/certs",
					    "/usr",
					    "/usr/local",
					    "/usr/local/share",
					    "/usr/local/share/ca-certificates",
					    "/run",
					    NULL };
	struct agent_err err;

	(void)state;
	mkdirs(r, dirs);
	tmpdir_put(r, "/etc/ssl/certs/ca-certificates.crt", SYS);
	assert_int_equal(trust_probe(r),
			 TRUST_HAS_DEBIAN_BUNDLE | TRUST_HAS_DEBIAN_ANCHORS | TRUST_ROOT_WRITABLE);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), 0);
	file_is(r, TRUST_CA_FILE, TEST_CA_PEM);
	file_is(r, TRUST_BUNDLE_FILE, SYS BLOCK(TEST_CA_PEM));
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS BLOCK(TEST_CA_PEM));
	file_is(r, "/usr/local/share/ca-certificates/kiln-egress.crt", TEST_CA_PEM);

	/* The same again changes nothing (not even a bundle rebuilt meanwhile). */
	tmpdir_put(r, "/etc/ssl/certs/ca-certificates.crt", SYS);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), 0);
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS);

	/* Another CA replaces the first everywhere, once. */
	assert_int_equal(trust_ca_apply(r, OTHER_PEM, &err), 0);
	file_is(r, TRUST_CA_FILE, OTHER_PEM);
	file_is(r, TRUST_BUNDLE_FILE, SYS BLOCK(OTHER_PEM));
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS BLOCK(OTHER_PEM));
	file_is(r, "/usr/local/share/ca-certificates/kiln-egress.crt", OTHER_PEM);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), 0);
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS BLOCK(TEST_CA_PEM));

	/* update-ca-certificates rebuilt the bundle: the CA from the anchor,
	 * no block. A boot's configure (/run empty again) leaves it once. */
	tmpdir_put(r, "/etc/ssl/certs/ca-certificates.crt", SYS TEST_CA_PEM);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s%s", r, TRUST_CA_FILE);
		assert_int_equal(unlink(p), 0);
	}
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), 0);
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS BLOCK(TEST_CA_PEM));
	tmpdir_put(r, "/etc/ssl/certs/ca-certificates.crt", SYS TEST_CA_PEM);

	/* "" removes all of it, the anchor's copy too: the image's bundle is as it was. */
	assert_int_equal(trust_ca_apply(r, "", &err), 0);
	file_is(r, TRUST_CA_FILE, NULL);
	file_is(r, TRUST_BUNDLE_FILE, NULL);
	file_is(r, "/usr/local/share/ca-certificates/kiln-egress.crt", NULL);
	file_is(r, "/etc/ssl/certs/ca-certificates.crt", SYS);
	/* And again: nothing to remove is fine. */
	assert_int_equal(trust_ca_apply(r, "", &err), 0);
}

/* RHEL's bundle is a link into the extracted store: the file it names is
 * patched, the link stays. No bundle at all: the CA alone. */
static void test_apply_rhel_link(void **state)
{
	struct tmpdir_fx *fx = *state;
	const char *r = fx->dir;
	static const char *const dirs[] = { "/etc",
					    "/etc/pki",
					    "/etc/pki/tls",
					    "/etc/pki/tls/certs",
					    "/etc/pki/ca-trust",
					    "/etc/pki/ca-trust/extracted",
					    "/etc/pki/ca-trust/source",
					    "/etc/pki/ca-trust/source/anchors",
					    "/run",
					    NULL };
	char link[512];
	struct agent_err err;
	struct stat st;

	mkdirs(r, dirs);
	tmpdir_put(r, "/etc/pki/ca-trust/extracted/tls-ca-bundle.pem", SYS);
	snprintf(link, sizeof(link), "%s/etc/pki/tls/certs/ca-bundle.crt", r);
	assert_int_equal(symlink("../../ca-trust/extracted/tls-ca-bundle.pem", link), 0);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	file_is(r, "/etc/pki/ca-trust/extracted/tls-ca-bundle.pem", SYS BLOCK(TEST_CA_PEM));
	file_is(r, TRUST_BUNDLE_FILE, SYS BLOCK(TEST_CA_PEM));
	file_is(r, "/etc/pki/ca-trust/source/anchors/kiln-egress.pem", TEST_CA_PEM);

	/* Without a bundle: the combined one is the CA alone. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(trust_ca_apply(r, OTHER_PEM, &err), 0);
	file_is(r, TRUST_BUNDLE_FILE, BLOCK(OTHER_PEM));
}

/* A bundle over the limit, and a /run that cannot be written: one clear error each. */
static void test_apply_errors(void **state)
{
	struct tmpdir_fx *fx = *state;
	const char *r = fx->dir;
	static const char *const dirs[] = { "/etc", "/etc/ssl", NULL };
	char p[512];
	struct agent_err err;
	FILE *f;

	mkdirs(r, dirs);
	/* No /run: creating /run/kiln fails, and says so. */
	tmpdir_put(r, "/etc/ssl/cert.pem", SYS);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), -1);
	assert_int_equal(err.code, AGENT_E_NOT_FOUND);
	assert_non_null(strstr(err.msg, "configure: trust_ca: creating /run/kiln"));
	snprintf(p, sizeof(p), "%s/etc/ssl/cert.pem", r);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fseek(f, TRUST_BUNDLE_MAX, SEEK_SET), 0);
	fputc('x', f);
	fclose(f);
	assert_int_equal(trust_ca_apply(r, TEST_CA_PEM, &err), -1);
	assert_non_null(strstr(err.msg, "/etc/ssl/cert.pem is over 4 MiB"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_merge),
		cmocka_unit_test_setup_teardown(test_apply_debian, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_apply_rhel_link, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_apply_errors, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * api/image-import/oci_path.c: layer member names from a hostile archive:
 * cleaned to relative paths inside the tree or refused with the reason;
 * whiteouts (".wh.NAME", ".wh..wh..opq") read as the OCI layer spec says;
 * symlinks that climb above the image root refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "api/image-import/oci_path.h"

static char out[OCI_PATH_MAX + 1];
static struct err e;

static void test_clean_accepts(void **state)
{
	(void)state;
	assert_int_equal(oci_path_clean("./usr/bin/", out, &e), 0);
	assert_string_equal(out, "usr/bin");
	assert_int_equal(oci_path_clean("usr//lib/./x", out, &e), 0);
	assert_string_equal(out, "usr/lib/x");
	assert_int_equal(oci_path_clean("./", out, &e), 0);
	assert_string_equal(out, "");
	assert_int_equal(oci_path_clean("a..b/..c/c..", out, &e),
			 0); /* dots inside names are names */
	assert_string_equal(out, "a..b/..c/c..");
}

static void test_clean_refuses(void **state)
{
	char longname[OCI_NAME_MAX + 2], deep[OCI_DEPTH_MAX * 2 + 4], huge[OCI_PATH_MAX + 2];

	(void)state;
	assert_int_equal(oci_path_clean("/etc/passwd", out, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "absolute path"));
	assert_int_equal(oci_path_clean("../etc/x", out, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "'..' component"));
	assert_int_equal(oci_path_clean("a/b/../../..", out, &e), -EINVAL);
	assert_int_equal(oci_path_clean("./a/..", out, &e), -EINVAL);
	assert_int_equal(oci_path_clean("a\nsif / uid 0", out, &e),
			 -EINVAL); /* a debugfs command smuggled in */
	assert_non_null(strstr(e.msg, "control character"));
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(oci_path_clean(longname, out, &e), -EINVAL);
	for (size_t i = 0; i < OCI_DEPTH_MAX + 1; i++)
		memcpy(deep + 2 * i, "d/", 2);
	deep[2 * (OCI_DEPTH_MAX + 1)] = '\0';
	assert_int_equal(oci_path_clean(deep, out, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "deeper"));
	memset(huge, 'a', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_int_equal(oci_path_clean(huge, out, &e), -EINVAL);
}

static void test_whiteouts(void **state)
{
	enum oci_whiteout k;

	(void)state;
	assert_int_equal(oci_whiteout("etc/.wh.passwd", &k, out, &e), 0);
	assert_int_equal(k, OCI_WH_FILE);
	assert_string_equal(out, "etc/passwd");
	assert_int_equal(oci_whiteout(".wh.top", &k, out, &e), 0);
	assert_int_equal(k, OCI_WH_FILE);
	assert_string_equal(out, "top");
	assert_int_equal(oci_whiteout("a/b/.wh..wh..opq", &k, out, &e), 0);
	assert_int_equal(k, OCI_WH_OPAQUE);
	assert_string_equal(out, "a/b");
	assert_int_equal(oci_whiteout(".wh..wh..opq", &k, out, &e), 0);
	assert_int_equal(k, OCI_WH_OPAQUE);
	assert_string_equal(out, "");
	assert_int_equal(oci_whiteout("etc/passwd", &k, out, &e), 0);
	assert_int_equal(k, OCI_WH_NONE);
	assert_true(oci_is_whiteout_name("x/.wh.y"));
	assert_false(oci_is_whiteout_name("x.wh.y/z"));
	/* whiteouts of nothing and reserved names */
	assert_int_equal(oci_whiteout("etc/.wh.", &k, out, &e), -EINVAL);
	assert_int_equal(oci_whiteout("etc/.wh..", &k, out, &e), -EINVAL);
	assert_int_equal(oci_whiteout("etc/.wh...", &k, out, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "whiteout of nothing"));
	assert_int_equal(oci_whiteout("etc/.wh..wh.plnk", &k, out, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "reserved"));
}

static void test_symlinks(void **state)
{
	char big[OCI_PATH_MAX + 2];

	(void)state;
	assert_int_equal(oci_symlink_check("bin/sh", "busybox", &e), 0);
	assert_int_equal(oci_symlink_check("usr/bin/x", "../../bin/busybox", &e), 0);
	assert_int_equal(oci_symlink_check("lib", "/usr/lib", &e),
			 0); /* absolute: from the image root */
	assert_int_equal(oci_symlink_check("a/b", "../x/../y", &e), 0);
	assert_int_equal(oci_symlink_check("up", "../../..", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "leaves the image root"));
	assert_int_equal(oci_symlink_check("usr/x", "../../etc", &e), -EINVAL);
	assert_int_equal(oci_symlink_check("x", "/../etc/shadow", &e), -EINVAL);
	assert_int_equal(oci_symlink_check("x", "a/../../b", &e), -EINVAL);
	assert_int_equal(oci_symlink_check("x", "", &e), -EINVAL);
	assert_int_equal(oci_symlink_check("x", "a\nb", &e), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(oci_symlink_check("x", big, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_accepts),
		cmocka_unit_test(test_clean_refuses),
		cmocka_unit_test(test_whiteouts),
		cmocka_unit_test(test_symlinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of api/kilnd/core/names.c: the syntax of every name and path a
 * client may hand kilnd that ends up in a file name, a kiln-vmm option or
 * the guest's kernel command line (docs/api.md gives the same rules).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/names.h"

static void test_sandbox_ids(void **state)
{
	const uint8_t rnd[6] = { 0x00, 0x9f, 0xa0, 0xff, 0x12, 0x3e };
	char id[SANDBOX_ID_LEN + 1];

	(void)state;
	sandbox_id_format(rnd, id);
	assert_string_equal(id, "009fa0ff123e");
	assert_true(sandbox_id_valid(id));
	assert_false(sandbox_id_valid("009fa0ff123"));
	assert_false(sandbox_id_valid("009fa0ff123e0"));
	assert_false(sandbox_id_valid("009FA0FF123E"));
	assert_false(sandbox_id_valid("009fa0ff123g"));
	assert_false(sandbox_id_valid("../../etc/pa"));
	assert_false(sandbox_id_valid(""));
}

static void test_image_names(void **state)
{
	char longest[IMAGE_NAME_MAX + 2];

	(void)state;
	assert_true(image_name_valid("minimal"));
	assert_true(image_name_valid("debian-12.1_x"));
	assert_false(image_name_valid(""));
	assert_false(image_name_valid(".hidden"));
	assert_false(image_name_valid("-x"));
	assert_false(image_name_valid("../x"));
	assert_false(image_name_valid("a/b"));
	assert_false(image_name_valid("a,ro"));
	assert_false(image_name_valid("a b"));
	memset(longest, 'a', IMAGE_NAME_MAX);
	longest[IMAGE_NAME_MAX] = '\0';
	assert_true(image_name_valid(longest));
	strcat(longest, "a");
	assert_false(image_name_valid(longest));
}

/* An OCI layout's tag (?ref=): an argv word for the importer, never an option. */
static void test_image_refs(void **state)
{
	char longest[IMAGE_REF_MAX + 2];

	(void)state;
	assert_true(image_ref_valid("latest"));
	assert_true(image_ref_valid("docker.io/library/alpine:3.20"));
	assert_true(image_ref_valid("v1.0+build@x"));
	assert_false(image_ref_valid(""));
	assert_false(image_ref_valid("--clean"));
	assert_false(image_ref_valid("a b"));
	assert_false(image_ref_valid("a\nb"));
	memset(longest, 'a', IMAGE_REF_MAX);
	longest[IMAGE_REF_MAX] = '\0';
	assert_true(image_ref_valid(longest));
	strcat(longest, "a");
	assert_false(image_ref_valid(longest));
}

/* The hostname goes onto the kernel command line: no spaces, quotes or '='. */
static void test_hostnames(void **state)
{
	char label[80];

	(void)state;
	assert_true(hostname_valid("kiln"));
	assert_true(hostname_valid("box-1.example.org"));
	assert_true(hostname_valid("1a"));
	assert_false(hostname_valid(""));
	assert_false(hostname_valid("a b"));
	assert_false(hostname_valid("a\"b"));
	assert_false(hostname_valid("x kiln.exec=reboot"));
	assert_false(hostname_valid("-a"));
	assert_false(hostname_valid("a-"));
	assert_false(hostname_valid("a..b"));
	assert_false(hostname_valid(".a"));
	assert_false(hostname_valid("a."));
	assert_false(hostname_valid("a_b"));
	memset(label, 'a', 63);
	label[63] = '\0';
	assert_true(hostname_valid(label));
	label[63] = 'a';
	label[64] = '\0';
	assert_false(hostname_valid(label)); /* a 64-byte label */
}

static void test_label_keys_and_paths(void **state)
{
	(void)state;
	assert_true(label_key_valid("team"));
	assert_true(label_key_valid("kiln.dev/owner-1"));
	assert_false(label_key_valid("/x"));
	assert_false(label_key_valid("a=b"));
	assert_false(label_key_valid(""));

	assert_true(guest_mount_path_valid("/mnt/data", 128));
	assert_true(guest_mount_path_valid("/a/", 128));
	assert_false(guest_mount_path_valid("/", 128));
	assert_false(guest_mount_path_valid("//", 128));
	assert_false(guest_mount_path_valid("mnt", 128));
	assert_false(guest_mount_path_valid("/mnt/../etc", 128));
	assert_false(guest_mount_path_valid("/mnt/.", 128));
	assert_false(guest_mount_path_valid("/mnt data", 128));
	assert_false(guest_mount_path_valid("/mnt:ro", 128));
	assert_false(guest_mount_path_valid("/a,b", 128));
	assert_false(guest_mount_path_valid("/a\"", 128));
	assert_false(guest_mount_path_valid("/abc", 3));
	assert_true(guest_mount_path_valid("/..a", 128)); /* a name, not a dot component */

	assert_true(guest_path_valid("/", 10));
	assert_false(guest_path_valid("", 10));
	assert_false(guest_path_valid("etc", 10));
	assert_false(guest_path_valid("/0123456789", 10));

	assert_true(host_path_valid("/var/lib/kiln/x.ext4"));
	assert_false(host_path_valid("rel/x"));
	assert_false(host_path_valid(""));
	/* kiln-vmm takes paths whole: its separators are just characters. */
	assert_true(host_path_valid("/a,ro"));
	assert_true(host_path_valid("/a:tag"));
	assert_true(host_path_valid("/srv/a b/c"));
	/* A snapshot's DIR is the rest of a control socket line. */
	assert_false(host_path_valid("/a\nsnapshot /x"));
	assert_false(host_path_valid("/a\r"));
	assert_false(host_path_valid("/a\x7f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_ids),          cmocka_unit_test(test_image_names),
		cmocka_unit_test(test_image_refs),           cmocka_unit_test(test_hostnames),
		cmocka_unit_test(test_label_keys_and_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

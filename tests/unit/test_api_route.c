/*
 * route and names: kilnd maps method + path to one endpoint and refuses
 * everything else with the right code (404 vs 405 with Allow); names that
 * end up in file names, kiln-vmm options or the guest's kernel command
 * line are held to their narrow syntax, so nothing can inject a parameter
 * or escape a directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/core/names.h"
#include "api/kilnd/http/route.h"

static enum route_op op_of(const char *method, const char *path, char *id)
{
	struct route_match m;
	struct api_err e;

	if (route_match(method, path, &m, &e))
		return OP_NONE;
	if (id)
		strcpy(id, m.id);
	return m.op;
}

static void test_every_endpoint(void **state)
{
	char id[ROUTE_ID_MAX + 1];

	(void)state;
	assert_int_equal(op_of("GET", "/v1/health", NULL), OP_HEALTH);
	assert_int_equal(op_of("GET", "/metrics", NULL), OP_METRICS);
	assert_int_equal(op_of("GET", "/v1/images", NULL), OP_IMAGES_LIST);
	assert_int_equal(op_of("POST", "/v1/images", NULL), OP_IMAGE_IMPORT);
	assert_true(route_has_body(OP_IMAGE_IMPORT));
	assert_int_equal(op_of("GET", "/v1/images/alpine-3.20", id), OP_IMAGE_GET);
	assert_string_equal(id, "alpine-3.20");
	assert_int_equal(op_of("DELETE", "/v1/images/x", id), OP_IMAGE_DELETE);
	assert_false(route_has_body(OP_IMAGE_DELETE));
	assert_int_equal(op_of("GET", "/v1/sandboxes", NULL), OP_SANDBOX_LIST);
	assert_int_equal(op_of("POST", "/v1/sandboxes", NULL), OP_SANDBOX_CREATE);
	assert_int_equal(op_of("GET", "/v1/sandboxes/3f9a1c2b7d4e", id), OP_SANDBOX_GET);
	assert_string_equal(id, "3f9a1c2b7d4e");
	assert_int_equal(op_of("DELETE", "/v1/sandboxes/abc", id), OP_SANDBOX_DELETE);
	assert_string_equal(id, "abc");
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/start", id), OP_SANDBOX_START);
	assert_string_equal(id, "x");
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/stop", NULL), OP_SANDBOX_STOP);
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/exec", NULL), OP_EXEC);
	assert_int_equal(op_of("GET", "/v1/sandboxes/x/files", NULL), OP_FILE_GET);
	assert_int_equal(op_of("PUT", "/v1/sandboxes/x/files", NULL), OP_FILE_PUT);
}

/* Near misses are 404, never a prefix match or a normalised path. */
static void test_near_misses_are_404(void **state)
{
	static const char *const paths[] = {
		"/",		    "",		"/v1",		 "/v1/health/",	 "/v1//health",	 "/v1/healthz",
		"/v2/health",	    "v1/health", "/v1/sandboxes/", "/v1/sandboxes//exec", "/v1/sandboxes/x/exec/",
		"/v1/sandboxes/x/y", "/v1/sandboxes/x/exec/more", "/V1/health", "/v1/sandboxes/x/../y",
		"/metrics/",
	};
	struct route_match m;
	struct api_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(route_match("GET", paths[i], &m, &e), -1);
		assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
		assert_int_equal(api_code_status(e.code), 404);
		assert_int_equal(m.op, OP_NONE);
	}
	/* "x/../y" matched nothing, so nothing was captured as an id. */
	assert_string_equal(m.id, "");
}

static void test_wrong_method_is_405_with_allow(void **state)
{
	struct route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(route_match("DELETE", "/v1/sandboxes", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(api_code_status(e.code), 405);
	assert_string_equal(m.allow, "GET, POST");
	assert_int_equal(route_match("POST", "/v1/sandboxes/x/files", &m, &e), -1);
	assert_string_equal(m.allow, "GET, PUT");
	assert_int_equal(route_match("GET", "/v1/sandboxes/x/exec", &m, &e), -1);
	assert_string_equal(m.allow, "POST");
	/* Methods are case-sensitive (RFC 9110, 9.1). */
	assert_int_equal(route_match("get", "/v1/health", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(route_match("HEAD", "/v1/health", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
}

static void test_overlong_id_segment_is_404(void **state)
{
	char path[256];
	struct route_match m;
	struct api_err e;

	(void)state;
	snprintf(path, sizeof(path), "/v1/sandboxes/%065d", 0);
	assert_int_equal(route_match("GET", path, &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	snprintf(path, sizeof(path), "/v1/sandboxes/%064d/exec", 0);
	assert_int_equal(route_match("POST", path, &m, &e), 0);
	assert_int_equal(strlen(m.id), 64);
}

/* Snapshots: pause, resume, hibernate, wake and the checkpoints. */
static void test_snapshot_endpoints(void **state)
{
	struct route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/pause", NULL), OP_SANDBOX_PAUSE);
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/resume", NULL), OP_SANDBOX_RESUME);
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/hibernate", NULL), OP_SANDBOX_HIBERNATE);
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/wake", NULL), OP_SANDBOX_WAKE);
	assert_int_equal(op_of("GET", "/v1/sandboxes/x/checkpoints", NULL), OP_CHECKPOINT_LIST);
	assert_int_equal(op_of("POST", "/v1/sandboxes/x/checkpoints", NULL), OP_CHECKPOINT_CREATE);
	assert_int_equal(route_match("DELETE", "/v1/sandboxes/ab12/checkpoints/before-tests", &m, &e), 0);
	assert_int_equal(m.op, OP_CHECKPOINT_DELETE);
	assert_string_equal(m.id, "ab12");
	assert_string_equal(m.proc, "before-tests");
	assert_int_equal(op_of("GET", "/v1/sandboxes/x/checkpoints/c", NULL), OP_CHECKPOINT_GET);
	assert_int_equal(route_match("POST", "/v1/sandboxes/x/checkpoints/c1/restore", &m, &e), 0);
	assert_int_equal(m.op, OP_CHECKPOINT_RESTORE);
	assert_string_equal(m.proc, "c1");
	assert_true(route_has_body(OP_CHECKPOINT_CREATE));
	assert_true(route_has_body(OP_SANDBOX_PAUSE));
	assert_false(route_has_body(OP_CHECKPOINT_DELETE));
	/* The firewall's PUT carries the rule set; its GET takes nothing. */
	assert_int_equal(op_of("PUT", "/v1/sandboxes/x/firewall", NULL), OP_FIREWALL_PUT);
	assert_true(route_has_body(OP_FIREWALL_PUT));
	assert_false(route_has_body(OP_FIREWALL_GET));
	assert_int_equal(op_of("GET", "/v1/sandboxes/x/firewall/log", NULL), OP_FIREWALL_LOG);
	assert_false(route_has_body(OP_FIREWALL_LOG));
	assert_int_equal(route_match("PUT", "/v1/sandboxes/x/firewall/log", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(route_match("GET", "/v1/sandboxes/x/pause", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_string_equal(m.allow, "POST");
	assert_int_equal(route_match("PUT", "/v1/sandboxes/x/checkpoints/c", &m, &e), -1);
	assert_string_equal(m.allow, "GET, DELETE");
	assert_int_equal(route_match("POST", "/v1/sandboxes/x/checkpoints/", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	assert_int_equal(route_match("POST", "/v1/sandboxes/x/checkpoints/c/restore/", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
}

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
		cmocka_unit_test(test_every_endpoint),
		cmocka_unit_test(test_near_misses_are_404),
		cmocka_unit_test(test_wrong_method_is_405_with_allow),
		cmocka_unit_test(test_overlong_id_segment_is_404),
		cmocka_unit_test(test_snapshot_endpoints),
		cmocka_unit_test(test_sandbox_ids),
		cmocka_unit_test(test_image_names),
		cmocka_unit_test(test_hostnames),
		cmocka_unit_test(test_label_keys_and_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

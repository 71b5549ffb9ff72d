/*
 * Warm pools as pure logic (api/kilnd/core/pool_spec.c): the --pool
 * argument (every mistake refused naming its part), the create body a
 * pool's sandboxes are made from, and which creates a pool serves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/core/pool_spec.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 65536,
					   .max_disk_mib = SPEC_DISK_MAX_MIB,
					   .idle_timeout_default_s = 300 };

static void parse_ok(const char *arg, struct pool_cfg *c)
{
	struct err err = { "" };

	if (pool_cfg_parse(arg, c, &err))
		fail_msg("'%s' refused: %s", arg, err.msg);
}

/* Refused, with a message that holds `part`. */
static void parse_bad(const char *arg, const char *part)
{
	struct pool_cfg c;
	struct err err = { "" };

	assert_int_equal(pool_cfg_parse(arg, &c, &err), -1);
	if (!strstr(err.msg, part))
		fail_msg("'%s': message '%s' does not name '%s'", arg ? arg : "(null)", err.msg,
			 part);
}

static void test_arg_forms(void **state)
{
	struct pool_cfg c;

	(void)state;
	parse_ok("minimal=3", &c);
	assert_string_equal(c.image, "minimal");
	assert_int_equal(c.size, 3);
	assert_int_equal(c.cpus, 0);
	assert_int_equal(c.memory_mib, 0);
	assert_int_equal(c.network, SANDBOX_NET_NONE);
	parse_ok("py-3.12=64,cpus=2,memory_mib=512,network=passt", &c);
	assert_string_equal(c.image, "py-3.12");
	assert_int_equal(c.size, POOL_SIZE_MAX);
	assert_int_equal(c.cpus, 2);
	assert_int_equal(c.memory_mib, 512);
	assert_int_equal(c.network, SANDBOX_NET_PASST);
	parse_ok("m=1,network=none,memory_mib=32", &c);
	assert_int_equal(c.memory_mib, 32);
}

static void test_arg_mistakes(void **state)
{
	char longarg[POOL_ARG_MAX + 2];

	(void)state;
	parse_bad(NULL, "IMAGE=N");
	parse_bad("", "IMAGE=N");
	parse_bad("minimal", "IMAGE=N");
	parse_bad("=2", "IMAGE=N");
	parse_bad("../etc=2", "image '../etc'");
	parse_bad("m=0", "size '0'");
	parse_bad("m=65", "size '65'");
	parse_bad("m=", "size ''");
	parse_bad("m=+2", "size '+2'");
	parse_bad("m=2x", "size '2x'");
	parse_bad("m=2,", "expected KEY=VALUE");
	parse_bad("m=2,cpus", "expected KEY=VALUE");
	parse_bad("m=2,cpus=0", "cpus '0'");
	parse_bad("m=2,cpus=65", "cpus '65'");
	parse_bad("m=2,cpus=2,cpus=2", "once");
	parse_bad("m=2,memory_mib=31", "memory_mib '31'");
	parse_bad("m=2,network=host", "network 'host'");
	parse_bad("m=2,network=passtpasst", "network");
	parse_bad("m=2,disk=5", "unknown option 'disk'");
	memset(longarg, 'a', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	parse_bad(longarg, "at most");
}

/* The pool's spec, as kilnd makes it (sandbox_pools_init). */
static void pool_spec(const char *arg, struct sandbox_spec *s)
{
	struct api_err e = { 0 };
	struct pool_cfg c;
	json_t *b;

	parse_ok(arg, &c);
	b = pool_cfg_body(&c);
	assert_non_null(b);
	if (sandbox_spec_parse(b, &lim, s, &e))
		fail_msg("the body of '%s' refused: %s", arg, e.msg);
	json_decref(b);
}

static void want_spec(const char *text, struct sandbox_spec *s)
{
	json_t *j = json_loads(text, 0, NULL);
	struct api_err e = { 0 };

	assert_non_null(j);
	if (sandbox_spec_parse(j, &lim, s, &e))
		fail_msg("%s refused: %s", text, e.msg);
	json_decref(j);
}

/* Does the pool of arg serve the create `text`? *why when not. */
static bool fits(const char *arg, const char *text, const char **why)
{
	struct sandbox_spec p, w;
	bool r;

	pool_spec(arg, &p);
	want_spec(text, &w);
	r = pool_spec_fits(&p, &w, why);
	sandbox_spec_free(&p);
	sandbox_spec_free(&w);
	return r;
}

static void test_body(void **state)
{
	struct pool_cfg c;
	json_t *b;

	(void)state;
	parse_ok("minimal=2", &c);
	b = pool_cfg_body(&c);
	assert_non_null(b);
	/* Only what shapes the VM: the defaults stay the create's. */
	assert_int_equal(json_object_size(b), 2);
	assert_string_equal(json_string_value(json_object_get(b, "image")), "minimal");
	assert_string_equal(json_string_value(json_object_get(b, "network")), "none");
	json_decref(b);
	parse_ok("minimal=2,cpus=4,memory_mib=1024,network=passt", &c);
	b = pool_cfg_body(&c);
	assert_int_equal(json_integer_value(json_object_get(b, "cpus")), 4);
	assert_int_equal(json_integer_value(json_object_get(b, "memory_mib")), 1024);
	assert_string_equal(json_string_value(json_object_get(b, "network")), "passt");
	json_decref(b);
}

static void test_fits(void **state)
{
	const char *why = "unset";

	(void)state;
	/* The create's own fields are applied when it takes one. */
	assert_true(fits("minimal=2", "{\"image\":\"minimal\"}", &why));
	assert_null(why);
	assert_true(fits(
		"minimal=2",
		"{\"image\":\"minimal\",\"hostname\":\"a\",\"env\":{\"A\":\"1\"},\"labels\":{\"k\":\"v\"},"
		"\"timeout_s\":60,\"idle_timeout_s\":0,\"cpus\":1,\"memory_mib\":128,\"network\":\"none\"}",
		&why));
	assert_true(
		fits("minimal=2,cpus=2,memory_mib=256,network=passt",
		     "{\"image\":\"minimal\",\"cpus\":2,\"memory_mib\":256,\"network\":\"passt\"}",
		     &why));
	/* What only a boot gives does not fit, naming the field. */
	assert_false(fits("minimal=2", "{\"image\":\"other\"}", &why));
	assert_string_equal(why, "image");
	assert_false(fits("minimal=2", "{\"image\":\"minimal\",\"cpus\":2}", &why));
	assert_string_equal(why, "cpus");
	assert_false(fits("minimal=2", "{\"image\":\"minimal\",\"memory_mib\":256}", &why));
	assert_string_equal(why, "memory_mib");
	/* A pool's disks have the image's size: a bigger disk boots. */
	assert_false(fits("minimal=2", "{\"image\":\"minimal\",\"disk_mib\":4096}", &why));
	assert_string_equal(why, "disk_mib");
	assert_false(fits("minimal=2", "{\"image\":\"minimal\",\"network\":\"passt\"}", &why));
	assert_string_equal(why, "network");
	assert_false(fits("minimal=2", "{\"image\":\"minimal\",\"console\":false}", &why));
	assert_string_equal(why, "console");
	assert_false(
		fits("minimal=2",
		     "{\"image\":\"minimal\",\"shares\":[{\"host_path\":\"/srv\",\"guest_path\":\"/mnt\"}]}",
		     &why));
	assert_string_equal(why, "shares");
	assert_false(fits("minimal=2,network=passt",
			  "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{}}", &why));
	assert_string_equal(why, "firewall");
	assert_false(
		fits("minimal=2", "{\"image\":\"minimal\",\"limits\":{\"pids_max\":50}}", &why));
	assert_string_equal(why, "limits");
	/* Limits equal to the defaults, spelt out, fit. */
	assert_true(fits("minimal=2", "{\"image\":\"minimal\",\"limits\":{}}", &why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arg_forms),
		cmocka_unit_test(test_arg_mistakes),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

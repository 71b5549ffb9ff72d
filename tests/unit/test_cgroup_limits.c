/*
 * A sandbox's cgroup limits (api/kilnd/core/cgroup_limits.c): the
 * defaults' arithmetic, the `limits` object of a create body (every bad
 * value refused naming its field), the cgroup file contents, and how the
 * cgroup's event counters turn into last_exit reasons (reading them:
 * test_cgroup_leaf.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/core/cgroup_limits.h"
#include "api/kilnd/core/sandbox_spec.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 65536,
					   .max_disk_mib = SPEC_DISK_MAX_MIB };

/* Parse a create body; the error code (API_OK on success), its message in msg. */
static enum api_code create(const char *text, struct sandbox_spec *s, char *msg)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	struct api_err e = { 0 };
	int r;

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	r = sandbox_spec_parse(j, &lim, s, &e);
	json_decref(j);
	if (msg)
		strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_defaults(void **state)
{
	struct cg_limits l;
	char buf[64];

	(void)state;
	cg_limits_default(2, 256, &l);
	assert_int_equal(l.memory_max_mib, 256 + 64 + 16);
	assert_int_equal(l.pids_max, 66);
	assert_int_equal(l.cpu_max_centi, 200);
	cg_limits_memory_max(&l, 0, buf, sizeof(buf));
	assert_string_equal(buf, "352321536");
	/* a state directory in RAM: twice a 32 MiB disk and the RAM above it */
	cg_limits_memory_max(&l, cg_ram_state_mib(256, 32), buf, sizeof(buf));
	assert_string_equal(buf, "687865856"); /* (336 + 2 x 32 + 256) MiB */
	cg_limits_pids_max(&l, buf, sizeof(buf));
	assert_string_equal(buf, "66");
	cg_limits_cpu_max(&l, buf, sizeof(buf));
	assert_string_equal(buf, "200000 100000");
	/* The overhead is capped: 64 GiB of RAM gets 512 MiB, not 4 GiB. */
	cg_limits_default(1, 65536, &l);
	assert_int_equal(l.memory_max_mib, 65536 + CG_OVERHEAD_MAX_MIB);
	cg_limits_default(1, 32, &l);
	assert_int_equal(l.memory_max_mib, 32 + 64 + 2);
}

static void test_spec_has_limits(void **state)
{
	struct sandbox_spec s, t;
	json_t *j;
	struct api_err e;
	char buf[64];

	(void)state;
	assert_int_equal(create("{\"image\":\"m\",\"cpus\":4,\"memory_mib\":1024}", &s, NULL),
			 API_OK);
	assert_int_equal(s.limits.memory_max_mib, 1024 + 64 + 64);
	assert_int_equal(s.limits.cpu_max_centi, 400);
	sandbox_spec_free(&s);
	assert_int_equal(
		create("{\"image\":\"m\",\"cpus\":2,\"memory_mib\":256,\"limits\":{\"memory_max_mib\":300,\"pids_max\":40,\"cpu_max\":1.5}}",
		       &s, NULL),
		API_OK);
	assert_int_equal(s.limits.memory_max_mib, 300);
	assert_int_equal(s.limits.pids_max, 40);
	assert_int_equal(s.limits.cpu_max_centi, 150);
	cg_limits_cpu_max(&s.limits, buf, sizeof(buf));
	assert_string_equal(buf, "150000 100000");
	/* Rendered and parsed again: the same limits (as meta.json and forks do). */
	j = sandbox_spec_to_json(&s);
	assert_non_null(j);
	assert_int_equal(sandbox_spec_parse(j, &lim, &t, &e), 0);
	assert_memory_equal(&s.limits, &t.limits, sizeof(s.limits));
	json_decref(j);
	sandbox_spec_free(&t);
	sandbox_spec_free(&s);
	/* A whole number of CPUs given as a real, and the least quota. */
	assert_int_equal(create("{\"image\":\"m\",\"limits\":{\"cpu_max\":2.0}}", &s, NULL),
			 API_OK);
	assert_int_equal(s.limits.cpu_max_centi, 200);
	sandbox_spec_free(&s);
	assert_int_equal(create("{\"image\":\"m\",\"limits\":{\"cpu_max\":0.01}}", &s, NULL),
			 API_OK);
	assert_int_equal(s.limits.cpu_max_centi, 1);
	sandbox_spec_free(&s);
	/* Exactly the floor is fine. */
	assert_int_equal(
		create("{\"image\":\"m\",\"memory_mib\":128,\"limits\":{\"memory_max_mib\":144}}",
		       &s, NULL),
		API_OK);
	sandbox_spec_free(&s);
}

static void test_bad_limits(void **state)
{
	static const struct {
		const char *body;
		enum api_code code;
		const char *needle;
	} cases[] = {
		{ "{\"image\":\"m\",\"limits\":5}", API_E_BAD_FIELD, "limits must be an object" },
		{ "{\"image\":\"m\",\"limits\":{\"io_max\":1}}", API_E_UNKNOWN_FIELD, "io_max" },
		{ "{\"image\":\"m\",\"memory_mib\":128,\"limits\":{\"memory_max_mib\":143}}",
		  API_E_BAD_FIELD, "at least 144" },
		{ "{\"image\":\"m\",\"limits\":{\"memory_max_mib\":0}}", API_E_BAD_FIELD,
		  "memory_max_mib" },
		{ "{\"image\":\"m\",\"limits\":{\"memory_max_mib\":-1}}", API_E_BAD_FIELD,
		  "memory_max_mib" },
		{ "{\"image\":\"m\",\"limits\":{\"memory_max_mib\":\"1G\"}}", API_E_BAD_FIELD,
		  "memory_max_mib" },
		{ "{\"image\":\"m\",\"limits\":{\"memory_max_mib\":4194305}}", API_E_BAD_FIELD,
		  "memory_max_mib" },
		{ "{\"image\":\"m\",\"limits\":{\"memory_max_mib\":1e300}}", API_E_BAD_FIELD,
		  "memory_max_mib" },
		{ "{\"image\":\"m\",\"cpus\":4,\"limits\":{\"pids_max\":19}}", API_E_BAD_FIELD,
		  "pids_max" },
		{ "{\"image\":\"m\",\"limits\":{\"pids_max\":65537}}", API_E_BAD_FIELD,
		  "pids_max" },
		{ "{\"image\":\"m\",\"limits\":{\"pids_max\":null}}", API_E_BAD_FIELD, "pids_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":0}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":0.001}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":1.234}}", API_E_BAD_FIELD,
		  "two decimals" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":-1}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":1025}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":1e308}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
		{ "{\"image\":\"m\",\"limits\":{\"cpu_max\":\"2\"}}", API_E_BAD_FIELD,
		  "limits.cpu_max" },
	};
	struct sandbox_spec s;
	char msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = create(cases[i].body, &s, msg);

		if (c != cases[i].code || !strstr(msg, cases[i].needle))
			fail_msg("%s: got code %d '%s', want %d with '%s'", cases[i].body, c, msg,
				 cases[i].code, cases[i].needle);
	}
}

static void test_events(void **state)
{
	struct cg_limits l;
	struct cgroup_events ev = { 0 };
	char msg[512];

	(void)state;
	cg_limits_default(1, 128, &l);
	assert_null(cg_limit_hit(&ev, &l, msg, sizeof(msg)));
	ev.pids_max = 3;
	assert_string_equal(cg_limit_hit(&ev, &l, msg, sizeof(msg)), "pids_limit");
	assert_non_null(strstr(msg, "pids.max"));
	/* An OOM kill is the cause even when forks were refused too. */
	ev.oom_kill = 1;
	assert_string_equal(cg_limit_hit(&ev, &l, msg, sizeof(msg)), "memory_limit");
	assert_non_null(strstr(msg, "memory.max"));
	assert_non_null(strstr(msg, "200 MiB"));
}

/* A snapshot into a cgroup whose state directory is in RAM: it fits, or
 * one line says how much it needs, how much is left, and what to do. */
static void test_snapshot_room(void **state)
{
	char msg[512];
	const uint64_t M = 1 << 20;

	(void)state;
	assert_int_equal(cg_snapshot_room(100 * M, 400 * M, 300 * M, msg, sizeof(msg)), 0);
	assert_int_equal(cg_snapshot_room(100 * M, 0, 900 * M, msg, sizeof(msg)), 0); /* no limit */
	assert_int_equal(cg_snapshot_room(100 * M, 400 * M, 300 * M + 1, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "needs up to 301 MiB"));
	assert_non_null(strstr(msg, "300 MiB left under memory.max"));
	assert_non_null(strstr(msg, "--state-dir on a disk"));
	/* above max already (lowered by hand): nothing left, no wrap-around */
	assert_int_equal(cg_snapshot_room(500 * M, 400 * M, 1, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, " 0 MiB left"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),        cmocka_unit_test(test_snapshot_room),
		cmocka_unit_test(test_spec_has_limits), cmocka_unit_test(test_bad_limits),
		cmocka_unit_test(test_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

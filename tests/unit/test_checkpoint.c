/*
 * Checkpoints and forks, the pure half: names that become directories
 * (no traversal, never kiln-vmm's ".tmp" scratch name), the create body,
 * the checkpoint object built from kiln-vmm's reply and checked again
 * when meta.json is read back (a damaged one refused whole), and the fork
 * body: inherited fields refused, the rest over the source's spec.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/registry/sandbox_record.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 4096,
					   .max_disk_mib = SPEC_DISK_MAX_MIB,
					   .idle_timeout_default_s = 300 };

static void test_names(void **state)
{
	static const char *const good[] = { "a", "before-tests", "v1.2_x", "0", "a.tmpx", "x.TMP" };
	static const char *const bad[] = { "",     ".",   "..",    ".hidden",    "-x",      "a/b",
					   "../x", "a b", "x.tmp", "before.tmp", "\xc3\xa4" };
	char long_name[CHECKPOINT_NAME_MAX + 2];

	(void)state;
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[CHECKPOINT_NAME_MAX + 1] = '\0';
	assert_false(checkpoint_name_valid(long_name));
	long_name[CHECKPOINT_NAME_MAX] = '\0';
	assert_true(checkpoint_name_valid(long_name));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!checkpoint_name_valid(good[i]))
			fail_msg("refused '%s'", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (checkpoint_name_valid(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
}

static enum api_code req(const char *body, struct checkpoint_req *out, char *msg)
{
	json_t *j = json_loads(body, JSON_DECODE_ANY, NULL);
	struct api_err e;
	int r = checkpoint_req_parse(j, out, &e);

	json_decref(j);
	strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_request_body(void **state)
{
	struct checkpoint_req r;
	char msg[ERR_MSG_MAX];

	(void)state;
	assert_int_equal(req("{\"name\":\"cp1\"}", &r, msg), API_OK);
	assert_string_equal(r.name, "cp1");
	assert_false(r.compress);
	assert_true(r.incremental); /* on unless asked not to */
	assert_int_equal(req("{\"name\":\"cp1\",\"compress\":true}", &r, msg), API_OK);
	assert_true(r.compress);
	assert_int_equal(req("{\"name\":\"cp1\",\"incremental\":false}", &r, msg), API_OK);
	assert_false(r.incremental);
	assert_int_equal(req("{\"name\":\"cp1\",\"incremental\":0}", &r, msg), API_E_BAD_FIELD);
	assert_int_equal(req("{}", &r, msg), API_E_MISSING_FIELD);
	assert_int_equal(req("[]", &r, msg), API_E_BAD_JSON);
	assert_int_equal(req("{\"name\":\"cp1\",\"label\":1}", &r, msg), API_E_UNKNOWN_FIELD);
	assert_int_equal(req("{\"name\":\"../x\"}", &r, msg), API_E_BAD_FIELD);
	assert_non_null(strstr(msg, "name '../x' is invalid"));
	assert_int_equal(req("{\"name\":\"x.tmp\"}", &r, msg), API_E_BAD_FIELD);
	assert_int_equal(req("{\"name\":7}", &r, msg), API_E_BAD_FIELD);
	assert_int_equal(req("{\"name\":\"cp\",\"compress\":\"yes\"}", &r, msg), API_E_BAD_FIELD);
}

static const struct control_reply snap = { .memory_bytes = 134217728,
					   .memory_stored_bytes = 9437184,
					   .state_bytes = 70000,
					   .disk_bytes = 4096,
					   .ms = 41.5 };

static void test_object_and_validate(void **state)
{
	json_t *o, *h, *list;
	struct api_err e;
	size_t i;

	(void)state;
	o = checkpoint_object("3f9a1c2b7d4e", "cp1", 1732269600123, false, true, &snap);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "cp1");
	assert_string_equal(json_string_value(json_object_get(o, "created_at")),
			    "2024-11-22T10:00:00.123Z");
	assert_true(json_is_true(json_object_get(o, "paused")));
	assert_int_equal(json_integer_value(json_object_get(o, "size_bytes")),
			 9437184 + 70000 + 4096);
	assert_true(json_real_value(json_object_get(o, "snapshot_ms")) == 41.5);
	assert_true(json_is_null(json_object_get(o, "base")));
	assert_int_equal(checkpoint_validate(o, "3f9a1c2b7d4e", &e), 0);
	{
		struct control_reply layered = snap;
		json_t *l;

		snprintf(layered.base, sizeof(layered.base), "cp0");
		l = checkpoint_object("3f9a1c2b7d4e", "cp1", 1732269600123, false, true, &layered);
		assert_string_equal(json_string_value(json_object_get(l, "base")), "cp0");
		assert_int_equal(checkpoint_validate(l, "3f9a1c2b7d4e", &e), 0);
		/* A record from before incremental checkpoints has no base. */
		json_object_del(l, "base");
		assert_int_equal(checkpoint_validate(l, "3f9a1c2b7d4e", &e), 0);
		json_decref(l);
	}
	/* The port mappings' guest sides its forks listen on. */
	json_object_set_new(
		o, "ports",
		json_loads("[{\"guest_port\":8080},{\"guest_port\":5000,\"target\":\"vsock\"},"
			   "{\"guest_port\":22,\"target\":\"tcp\",\"guest_address\":\"::1\"}]",
			   0, NULL));
	assert_int_equal(checkpoint_validate(o, "3f9a1c2b7d4e", &e), 0);
	/* Another sandbox's, or damaged: refused with the reason. */
	assert_int_equal(checkpoint_validate(o, "000000000000", &e), -1);
	assert_non_null(strstr(e.msg, "sandbox_id"));

	static const struct {
		const char *key, *json, *in_message;
	} damage[] = {
		{ "name", "\"../x\"", "'name'" },
		{ "name", NULL, "'name'" },
		{ "memory_bytes", "-1", "memory_bytes" },
		{ "disk_bytes", "\"1\"", "disk_bytes" },
		{ "paused", "1", "paused" },
		{ "snapshot_ms", "null", "snapshot_ms" },
		{ "created_at", "5", "created_at" },
		{ "extra", "1", "unknown field 'extra'" },
		{ "base", "\"../x\"", "'base'" },
		{ "base", "\"cp1\"", "'base'" }, /* itself */
		{ "base", "3", "'base'" },
		{ "ports", "{}", "'ports'" },
		{ "ports", "[{\"guest_port\":80,\"host_port\":8080}]", "without a host_port" },
		{ "ports", "[{\"guest_port\":0}]", "'ports' entry 0" },
		{ "ports", "[{\"guest_port\":80},{\"guest_port\":81,\"target\":\"udp\"}]",
		  "'ports' entry 1" },
		{ "ports",
		  "[{\"guest_port\":1},{\"guest_port\":2},{\"guest_port\":3},{\"guest_port\":4},{\"guest_port\":5},"
		  "{\"guest_port\":6},{\"guest_port\":7},{\"guest_port\":8},{\"guest_port\":9},{\"guest_port\":10},"
		  "{\"guest_port\":11},{\"guest_port\":12},{\"guest_port\":13},{\"guest_port\":14},{\"guest_port\":15},"
		  "{\"guest_port\":16},{\"guest_port\":17}]",
		  "at most 16" },
	};
	for (i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		json_t *c = json_deep_copy(o);

		if (damage[i].json)
			json_object_set_new(c, damage[i].key,
					    json_loads(damage[i].json, JSON_DECODE_ANY, NULL));
		else
			json_object_del(c, damage[i].key);
		if (checkpoint_validate(c, "3f9a1c2b7d4e", &e) != -1 ||
		    !strstr(e.msg, damage[i].in_message))
			fail_msg("%s: want a refusal with '%s', got '%s'", damage[i].key,
				 damage[i].in_message, e.msg);
		json_decref(c);
	}
	assert_int_equal(checkpoint_validate(json_null(), "3f9a1c2b7d4e", &e), -1);

	list = json_pack("[O,{s:s}]", o, "name", "cp2");
	assert_ptr_equal(checkpoint_find(list, "cp2", &i), json_array_get(list, 1));
	assert_int_equal(i, 1);
	assert_null(checkpoint_find(list, "cp3", NULL));
	assert_null(checkpoint_find(NULL, "cp1", NULL));
	json_decref(list);
	json_decref(o);

	h = hibernation_object(1732269600123, &snap);
	assert_string_equal(json_string_value(json_object_get(h, "at")),
			    "2024-11-22T10:00:00.123Z");
	assert_int_equal(json_integer_value(json_object_get(h, "memory_bytes")), 134217728);
	json_decref(h);
}

static void test_refs(void **state)
{
	char id[SANDBOX_ID_LEN + 1], name[CHECKPOINT_NAME_MAX + 1];
	struct api_err e;

	(void)state;
	assert_int_equal(checkpoint_ref_parse("3f9a1c2b7d4e/before", id, name, &e), 0);
	assert_string_equal(id, "3f9a1c2b7d4e");
	assert_string_equal(name, "before");
	static const char *const bad[] = { "3f9a1c2b7d4e",      "3f9a1c2b7d4e/",
					   "/before",           "3F9A1C2B7D4E/x",
					   "3f9a1c2b7d4/x",     "3f9a1c2b7d4e0/x",
					   "3f9a1c2b7d4e/../x", "3f9a1c2b7d4e/a/b",
					   "3f9a1c2b7d4e/x.tmp" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (checkpoint_ref_parse(bad[i], id, name, &e) != -1 || e.code != API_E_BAD_FIELD)
			fail_msg("accepted '%s'", bad[i]);
	}
}

static struct sandbox_spec source_spec(void)
{
	json_t *b = json_loads(
		"{\"image\":\"minimal\",\"cpus\":2,\"memory_mib\":256,\"hostname\":\"src\","
		"\"env\":{\"A\":\"1\"},\"labels\":{\"job\":\"7\"},\"timeout_s\":60,\"idle_timeout_s\":30}",
		0, NULL);
	struct sandbox_spec s;
	struct api_err e;

	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	json_decref(b);
	return s;
}

static enum api_code fork_parse(const char *body, struct sandbox_spec *out, bool *named, char *msg)
{
	json_t *j = json_loads(body, JSON_DECODE_ANY, NULL);
	char id[SANDBOX_ID_LEN + 1], name[CHECKPOINT_NAME_MAX + 1];
	struct sandbox_spec src = source_spec();
	struct api_err e;
	int r;

	memset(out, 0, sizeof(*out));
	r = fork_ref_parse(j, id, name, &e);
	if (!r)
		r = fork_spec_parse(j, &src, &lim, out, named, &e);
	json_decref(j);
	sandbox_spec_free(&src);
	strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_fork_bodies(void **state)
{
	struct sandbox_spec s;
	char msg[ERR_MSG_MAX];
	bool named;
	json_t *b;

	(void)state;
	b = json_loads("{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\"}", 0, NULL);
	assert_true(fork_requested(b));
	json_decref(b);
	b = json_loads("{\"image\":\"minimal\"}", 0, NULL);
	assert_false(fork_requested(b));
	json_decref(b);

	/* Everything from the source ... */
	assert_int_equal(fork_parse("{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\"}", &s, &named, msg),
			 API_OK);
	assert_false(named);
	assert_string_equal(s.image, "minimal");
	assert_int_equal(s.cpus, 2);
	assert_int_equal(s.memory_mib, 256);
	assert_int_equal(s.timeout_s, 60);
	assert_int_equal(s.idle_timeout_s, 30);
	assert_string_equal(json_string_value(json_object_get(s.labels, "job")), "7");
	sandbox_spec_free(&s);
	/* ... but what the body says. */
	assert_int_equal(
		fork_parse("{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"hostname\":\"f1\",\"labels\":{},"
			   "\"env\":{\"B\":\"2\"},\"timeout_s\":0,\"idle_timeout_s\":5,\"console\":false}",
			   &s, &named, msg),
		API_OK);
	assert_true(named);
	assert_string_equal(s.hostname, "f1");
	assert_int_equal(json_object_size(s.labels), 0);
	assert_null(json_object_get(s.env, "A"));
	assert_int_equal(s.timeout_s, 0);
	assert_int_equal(s.idle_timeout_s, 5);
	assert_false(s.console);
	sandbox_spec_free(&s);

	static const struct {
		const char *body;
		enum api_code code;
		const char *in_message;
	} bad[] = {
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"cpus\":4}", API_E_BAD_FIELD,
		  "'cpus' comes from the checkpoint" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"image\":\"x\"}", API_E_BAD_FIELD,
		  "'image'" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"memory_mib\":256}", API_E_BAD_FIELD,
		  "'memory_mib'" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"shares\":[]}", API_E_BAD_FIELD,
		  "'shares'" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"colour\":1}", API_E_UNKNOWN_FIELD,
		  "'colour'" },
		{ "{\"from_checkpoint\":7}", API_E_BAD_FIELD, "from_checkpoint" },
		{ "{\"from_checkpoint\":\"cp\"}", API_E_BAD_FIELD,
		  "<sandbox id>/<checkpoint name>" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"hostname\":\"a b\"}", API_E_BAD_FIELD,
		  "hostname" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"idle_timeout_s\":-1}",
		  API_E_BAD_FIELD, "idle_timeout_s" },
		{ "{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\",\"env\":{\"A=B\":\"1\"}}",
		  API_E_BAD_FIELD, "env key" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum api_code c = fork_parse(bad[i].body, &s, &named, msg);

		if (c != bad[i].code || !strstr(msg, bad[i].in_message))
			fail_msg("%s: got %s '%s', want %s with '%s'", bad[i].body,
				 api_code_name(c), msg, api_code_name(bad[i].code),
				 bad[i].in_message);
		sandbox_spec_free(&s);
	}
}

/* A fork is held to today's limits, not the source's day's. */
static void test_fork_limits(void **state)
{
	static const struct sandbox_limits small = { .max_cpus = 1,
						     .max_memory_mib = 4096,
						     .max_disk_mib = SPEC_DISK_MAX_MIB };
	json_t *j = json_loads("{\"from_checkpoint\":\"3f9a1c2b7d4e/cp\"}", 0, NULL);
	struct sandbox_spec src = source_spec(), s;
	struct api_err e;
	bool named;

	(void)state;
	assert_int_equal(fork_spec_parse(j, &src, &small, &s, &named, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "cpus"));
	json_decref(j);
	sandbox_spec_free(&src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_request_body),
		cmocka_unit_test(test_object_and_validate),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_fork_bodies),
		cmocka_unit_test(test_fork_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Sandbox lifecycle: every state/event pair of the transition table (the
 * allowed ones lead where docs/api.md says, every other one is a 409 with
 * a hint), and the sandbox record that a restarted kilnd reads back from
 * meta.json: a round trip keeps everything, a damaged file is refused
 * whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/registry/sandbox_record.h"
#include "api/kilnd/core/sandbox_state.h"

/* T(s): allowed, leads to s; 0: refused (409). */
#define T(s) ((s) + 1)

static void test_transition_table(void **state)
{
	/* The table of docs/api.md, "Sandbox states". */
	static const int want[SANDBOX_STATE_COUNT][SANDBOX_EV_COUNT] = {
		[SANDBOX_BOOTING] = { [SANDBOX_EV_BOOT_OK] = T(SANDBOX_RUNNING),
				      [SANDBOX_EV_BOOT_FAIL] = T(SANDBOX_CRASHED),
				      [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_BOOTING),
				      [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_BOOTING) },
		[SANDBOX_RUNNING] = { [SANDBOX_EV_STOP] = T(SANDBOX_STOPPING),
				      [SANDBOX_EV_DELETE] = T(SANDBOX_DELETING),
				      [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_STOPPED),
				      [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_CRASHED),
				      [SANDBOX_EV_PAUSE] = T(SANDBOX_PAUSED),
				      [SANDBOX_EV_CHECKPOINT] = T(SANDBOX_RUNNING),
				      [SANDBOX_EV_HIBERNATE] = T(SANDBOX_HIBERNATING),
				      [SANDBOX_EV_RESTORE] = T(SANDBOX_BOOTING) },
		[SANDBOX_PAUSED] = { [SANDBOX_EV_STOP] = T(SANDBOX_STOPPING),
				     [SANDBOX_EV_DELETE] = T(SANDBOX_DELETING),
				     [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_STOPPED),
				     [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_CRASHED),
				     [SANDBOX_EV_RESUME] = T(SANDBOX_RUNNING),
				     [SANDBOX_EV_CHECKPOINT] = T(SANDBOX_PAUSED),
				     [SANDBOX_EV_HIBERNATE] = T(SANDBOX_HIBERNATING),
				     [SANDBOX_EV_RESTORE] = T(SANDBOX_BOOTING) },
		[SANDBOX_STOPPING] = { [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_STOPPING),
				       [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_STOPPING),
				       [SANDBOX_EV_STOPPED] = T(SANDBOX_STOPPED) },
		[SANDBOX_STOPPED] = { [SANDBOX_EV_START] = T(SANDBOX_BOOTING),
				      [SANDBOX_EV_DELETE] = T(SANDBOX_DELETING),
				      [SANDBOX_EV_RESTORE] = T(SANDBOX_BOOTING) },
		[SANDBOX_CRASHED] = { [SANDBOX_EV_START] = T(SANDBOX_BOOTING),
				      [SANDBOX_EV_DELETE] = T(SANDBOX_DELETING),
				      [SANDBOX_EV_RESTORE] = T(SANDBOX_BOOTING) },
		[SANDBOX_DELETING] = { [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_DELETING),
				       [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_DELETING),
				       [SANDBOX_EV_STOPPED] = T(SANDBOX_DELETING) },
		[SANDBOX_HIBERNATING] = { [SANDBOX_EV_VMM_CLEAN] = T(SANDBOX_HIBERNATING),
					  [SANDBOX_EV_VMM_FAIL] = T(SANDBOX_HIBERNATING),
					  [SANDBOX_EV_HIBERNATED] = T(SANDBOX_HIBERNATED),
					  [SANDBOX_EV_HIBERNATE_FAIL] = T(SANDBOX_RUNNING) },
		[SANDBOX_HIBERNATED] = { [SANDBOX_EV_START] = T(SANDBOX_BOOTING),
					 [SANDBOX_EV_DELETE] = T(SANDBOX_DELETING),
					 [SANDBOX_EV_RESTORE] = T(SANDBOX_BOOTING) },
	};

	(void)state;
	for (int s = 0; s < SANDBOX_STATE_COUNT; s++) {
		for (int ev = 0; ev < SANDBOX_EV_COUNT; ev++) {
			enum sandbox_state to = SANDBOX_STATE_COUNT;
			struct api_err e = { 0 };
			int r = sandbox_transition((enum sandbox_state)s, (enum sandbox_event)ev,
						   &to, "abc", &e);

			if (!want[s][ev]) {
				if (r != -1 || e.code != API_E_WRONG_STATE)
					fail_msg("%s + %s should be refused", sandbox_state_name(s),
						 sandbox_event_name(ev));
				assert_int_equal(api_code_status(e.code), 409);
				assert_non_null(strstr(e.msg, "sandbox abc is "));
				assert_non_null(strstr(e.msg, sandbox_state_name(s)));
			} else if (r != 0 || (int)to != want[s][ev] - 1) {
				fail_msg("%s + %s: got %d -> %s", sandbox_state_name(s),
					 sandbox_event_name(ev), r, sandbox_state_name(to));
			}
		}
	}
}

/* The 409 says what to do next. */
static void test_refusal_hints(void **state)
{
	enum sandbox_state to;
	struct api_err e;

	(void)state;
	assert_int_equal(sandbox_transition(SANDBOX_PAUSED, SANDBOX_EV_START, &to, "abc", &e), -1);
	assert_non_null(strstr(e.msg, "resume it first"));
	assert_int_equal(sandbox_transition(SANDBOX_PAUSED, SANDBOX_EV_PAUSE, &to, "abc", &e), -1);
	assert_non_null(strstr(e.msg, "paused already"));
	assert_int_equal(sandbox_transition(SANDBOX_RUNNING, SANDBOX_EV_RESUME, &to, "abc", &e),
			 -1);
	assert_non_null(strstr(e.msg, "running already"));
	assert_int_equal(sandbox_transition(SANDBOX_HIBERNATED, SANDBOX_EV_STOP, &to, "abc", &e),
			 -1);
	assert_non_null(strstr(e.msg, "wake it first"));
	assert_int_equal(sandbox_transition(SANDBOX_HIBERNATED, SANDBOX_EV_HIBERNATE, &to, "abc",
					    &e),
			 -1);
	assert_non_null(strstr(e.msg, "hibernated already"));
	assert_int_equal(sandbox_transition(SANDBOX_STOPPED, SANDBOX_EV_CHECKPOINT, &to, "abc", &e),
			 -1);
	assert_non_null(strstr(e.msg, "does not allow checkpoint; start it first"));
}

static void test_out_of_range_is_internal(void **state)
{
	enum sandbox_state to;
	struct api_err e;

	(void)state;
	assert_int_equal(sandbox_transition(SANDBOX_STATE_COUNT, SANDBOX_EV_START, &to, "x", &e),
			 -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_int_equal(sandbox_transition(SANDBOX_RUNNING, SANDBOX_EV_COUNT, &to, "x", &e), -1);
	assert_int_equal(e.code, API_E_INTERNAL);
}

static void test_names(void **state)
{
	(void)state;
	for (int s = 0; s < SANDBOX_STATE_COUNT; s++)
		assert_int_equal(sandbox_state_parse(sandbox_state_name((enum sandbox_state)s)), s);
	assert_int_equal(sandbox_state_parse("Running"), -1);
	assert_int_equal(sandbox_state_parse(""), -1);
	assert_null(sandbox_state_name(SANDBOX_STATE_COUNT));
	assert_true(sandbox_state_serves_agent(SANDBOX_RUNNING));
	assert_false(sandbox_state_serves_agent(SANDBOX_BOOTING));
	assert_false(sandbox_state_serves_agent(SANDBOX_STOPPING));
	assert_false(sandbox_state_serves_agent(SANDBOX_PAUSED));
	assert_false(sandbox_state_serves_agent(SANDBOX_HIBERNATED));
}

static const struct control_reply snap = { .memory_bytes = 1 << 27,
					   .memory_stored_bytes = 1 << 20,
					   .state_bytes = 5000,
					   .disk_bytes = 8192,
					   .ms = 12.5 };

static void make_record(struct sandbox_record *r)
{
	static const struct sandbox_limits lim = { .max_cpus = 8,
						   .max_memory_mib = 4096,
						   .max_disk_mib = SPEC_DISK_MAX_MIB };
	json_error_t je;
	json_t *body = json_loads(
		"{\"image\":\"minimal\",\"cpus\":2,\"labels\":{\"job\":\"7\"},"
		"\"shares\":[{\"host_path\":\"/srv\",\"guest_path\":\"/mnt\",\"read_only\":true}]}",
		0, &je);
	struct api_err e;
	struct vmm_end x = {
		.at_ms = 1732269792002, .reason = "crashed", .exit_status = -1, .signal = 9
	};

	memset(r, 0, sizeof(*r));
	assert_int_equal(sandbox_spec_parse(body, &lim, &r->spec, &e), 0);
	json_decref(body);
	strcpy(r->id, "3f9a1c2b7d4e");
	strcpy(r->image_path, "/var/lib/kiln/images/minimal.ext4");
	r->state = SANDBOX_CRASHED;
	r->created_ms = 1732269600123;
	r->started_ms = 1732269600124;
	r->stopped_ms = 1732269792002;
	r->boots = 3;
	r->boot = sandbox_boot_json(811.5, 640, true);
	x.console_tail = json_pack("[s]", "kiln-init: agent listening");
	r->last_exit = sandbox_exit_json(&x);
	r->checkpoints = json_array();
	json_array_append_new(r->checkpoints,
			      checkpoint_object(r->id, "cp1", 1732269700000, false, false, &snap));
	json_array_append_new(r->checkpoints,
			      checkpoint_object(r->id, "cp2", 1732269710000, true, true, &snap));
}

static void test_view(void **state)
{
	struct sandbox_record r;
	json_t *v, *le;

	(void)state;
	make_record(&r);
	v = sandbox_record_view(&r);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "id")), "3f9a1c2b7d4e");
	assert_string_equal(json_string_value(json_object_get(v, "state")), "crashed");
	assert_string_equal(json_string_value(json_object_get(v, "created_at")),
			    "2024-11-22T10:00:00.123Z");
	assert_true(json_is_null(json_object_get(v, "expires_at")));
	assert_true(json_is_null(json_object_get(v, "pid")));
	assert_int_equal(json_integer_value(json_object_get(v, "cpus")), 2);
	assert_int_equal(json_integer_value(json_object_get(v, "boots")), 3);
	assert_true(json_real_value(json_object_get(json_object_get(v, "boot"),
						    "agent_ready_ms")) == 811.5);
	le = json_object_get(v, "last_exit");
	assert_string_equal(json_string_value(json_object_get(le, "reason")), "crashed");
	assert_true(json_is_null(json_object_get(le, "exit_status")));
	assert_int_equal(json_integer_value(json_object_get(le, "signal")), 9);
	assert_true(json_is_null(json_object_get(le, "vmm_reason")));
	assert_string_equal(json_string_value(
				    json_array_get(json_object_get(le, "console_tail"), 0)),
			    "kiln-init: agent listening");
	/* Checkpoints are counted; their list is GET .../checkpoints. */
	assert_int_equal(json_integer_value(json_object_get(v, "checkpoints")), 2);
	assert_true(json_is_null(json_object_get(v, "hibernation")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "boot"), "from")),
			    "kernel");
	assert_true(json_is_null(json_object_get(json_object_get(v, "boot"), "snapshot_error")));
	/* The view does not expose kilnd's own bookkeeping. */
	assert_null(json_object_get(v, "image_path"));
	assert_null(json_object_get(v, "version"));
	json_decref(v);
	sandbox_record_free(&r);
}

static void test_persist_round_trip(void **state)
{
	struct sandbox_record r, back;
	struct api_err e;
	json_t *m, *v1, *v2;

	(void)state;
	make_record(&r);
	m = sandbox_record_persist(&r);
	assert_non_null(m);
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	v1 = sandbox_record_view(&r);
	v2 = sandbox_record_view(&back);
	assert_true(json_equal(v1, v2));
	assert_string_equal(back.image_path, r.image_path);
	assert_true(json_equal(back.checkpoints, r.checkpoints));
	json_decref(v1);
	json_decref(v2);
	sandbox_record_free(&back);
	json_decref(m);

	/* A hibernated sandbox keeps its hibernation and where its boot came from. */
	r.state = SANDBOX_HIBERNATED;
	r.hibernation = hibernation_object(1732269800000, &snap);
	assert_int_equal(sandbox_boot_source(r.boot, "checkpoint", "3f9a1c2b7d4e/cp1", NULL), 0);
	m = sandbox_record_persist(&r);
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.state, SANDBOX_HIBERNATED);
	assert_true(json_equal(back.hibernation, r.hibernation));
	assert_string_equal(json_string_value(json_object_get(back.boot, "checkpoint")),
			    "3f9a1c2b7d4e/cp1");
	sandbox_record_free(&back);
	json_decref(m);
	/* meta.json from before checkpoints existed: none. */
	m = sandbox_record_persist(&r);
	json_object_del(m, "checkpoints");
	json_object_del(m, "idle_timeout_s");
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(json_array_size(back.checkpoints), 0);
	assert_int_equal(back.spec.idle_timeout_s, 0);
	sandbox_record_free(&back);
	json_decref(m);
	sandbox_record_free(&r);
}

/* Each damage to meta.json is refused with a message naming the problem. */
static void test_restore_refuses_damage(void **state)
{
	static const struct {
		const char *key;
		const char *json; /* NULL: delete the key */
		const char *in_message;
	} cases[] = {
		{ "version", "2", "version" },
		{ "id", "\"../../etc\"", "'id'" },
		{ "id", NULL, "'id'" },
		{ "state", "\"sleeping\"", "'state'" },
		{ "image_path", "\"relative.ext4\"", "image_path" },
		{ "created_ms", "-1", "created_ms" },
		{ "boots", "\"3\"", "boots" },
		{ "cpus", "0", "'cpus'" },
		{ "hostname", "\"a b\"", "hostname" },
		{ "surprise", "1", "unknown field 'surprise'" },
		{ "shares", "[{\"host_path\":\"/a\\nro\",\"guest_path\":\"/b\"}]", "host_path" },
		{ "checkpoints", "{}", "'checkpoints' must be an array" },
		{ "checkpoints", "[{\"name\":\"../x\"}]", "checkpoint" },
		{ "idle_timeout_s", "-5", "idle_timeout_s" },
		/* What a restarted kilnd would signal: nothing but a pid and a start time. */
		{ "pid", "0", "'pid'" },
		{ "pid", "-1", "'pid'" },
		{ "pid", "4194305", "'pid'" },
		{ "pid", "\"42\"", "'pid'" },
		{ "vmm_start", "-1", "vmm_start" },
		{ "vmm_start", "1.5", "vmm_start" },
		{ "vmm_start", "null", "vmm_start" },
		/* What a restarted kilnd would listen on again. */
		{ "ports", "{}", "'ports'" },
		{ "ports", "[{\"guest_port\":80}]", "'ports' entry 0" },
		{ "ports", "[{\"guest_port\":0,\"host_port\":8080}]", "'ports' entry 0" },
		{ "ports", "[{\"guest_port\":80,\"host_port\":8080,\"target\":\"udp\"}]",
		  "'ports' entry 0" },
		{ "ports",
		  "[{\"guest_port\":80,\"host_port\":8080,\"guest_address\":\"10.0.0.1\"}]",
		  "'ports' entry 0" },
		{ "ports", "[{\"guest_port\":80,\"host_port\":8080,\"x\":1}]", "'ports' entry 0" },
		{ "ports", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", "at most 16" },
		/* Preview URLs and their tokens. */
		{ "previews", "{}", "'previews'" },
		{ "previews", "[{\"port\":80,\"public\":false,\"created_at\":\"t\"}]",
		  "48 lowercase hex" },
		{ "previews",
		  "[{\"port\":80,\"public\":false,\"token\":\"00112233445566778899AABBCCDDEEFF0011223344556677\",\"created_at\":\"t\"}]",
		  "48 lowercase hex" },
		{ "previews",
		  "[{\"port\":80,\"public\":true,\"token\":\"00112233445566778899aabbccddeeff0011223344556677\",\"created_at\":\"t\"}]",
		  "public preview has no token" },
		{ "previews", "[{\"port\":0,\"public\":true,\"created_at\":\"t\"}]", "preview" },
		{ "previews",
		  "[{\"port\":80,\"public\":true,\"created_at\":\"t\"},{\"port\":80,\"public\":true,\"created_at\":\"u\"}]",
		  "two previews of port 80" },
		{ "previews", "[{\"port\":80,\"public\":true,\"created_at\":\"t\",\"x\":1}]",
		  "preview" },
	};
	struct sandbox_record r, back;
	struct api_err e;

	(void)state;
	make_record(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *m = sandbox_record_persist(&r);

		if (cases[i].json)
			json_object_set_new(m, cases[i].key,
					    json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
		else
			json_object_del(m, cases[i].key);
		if (sandbox_record_restore(m, &back, &e) != -1 ||
		    !strstr(e.msg, cases[i].in_message))
			fail_msg("%s=%s: want a refusal with '%s', got '%s'", cases[i].key,
				 cases[i].json ? cases[i].json : "(deleted)", cases[i].in_message,
				 e.msg);
		assert_null(back.spec.env);
		json_decref(m);
	}
	/* One checkpoint twice, and one of another sandbox. */
	json_t *m = sandbox_record_persist(&r), *cps = json_object_get(m, "checkpoints");

	json_array_append_new(cps, json_deep_copy(json_array_get(cps, 0)));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	assert_non_null(strstr(e.msg, "listed twice"));
	json_array_remove(cps, 2);
	json_object_set_new(json_array_get(cps, 1), "sandbox_id", json_string("000000000000"));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	assert_non_null(strstr(e.msg, "sandbox_id"));
	assert_null(back.checkpoints);
	json_decref(m);

	json_t *arr = json_array();

	assert_int_equal(sandbox_record_restore(arr, &back, &e), -1);
	json_decref(arr);
	sandbox_record_free(&r);
}

/* What is wrong with a version is said as such (a wrong version was once
 * logged as "meta.json names another id"). */
static void test_version_refusal_says_what(void **state)
{
	static const struct {
		const char *json; /* NULL: delete the key */
		const char *want;
	} cases[] = {
		{ "2", "meta.json: 'version' is 2, this kilnd reads version 1" },
		{ "0", "meta.json: 'version' is 0, this kilnd reads version 1" },
		{ "\"1\"", "meta.json: 'version' is not a number, this kilnd reads version 1" },
		{ NULL, "meta.json: 'version' is missing, this kilnd reads version 1" },
	};
	struct sandbox_record r, back;
	struct api_err e;
	struct err why;

	(void)state;
	make_record(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *m = sandbox_record_persist(&r);

		if (cases[i].json)
			json_object_set_new(m, "version",
					    json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
		else
			json_object_del(m, "version");
		assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
		assert_string_equal(e.msg, cases[i].want);
		/* And start-up logs that, leaving the directory as it is. */
		assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_SKIP);
		assert_string_equal(why.msg, cases[i].want);
		json_decref(m);
	}
	sandbox_record_free(&r);
}

/* A template build's hidden sandbox that no template record names (a
 * build cut short) is an orphan; a template's own, or a plain sandbox, not. */
static void test_build_orphan(void **state)
{
	struct sandbox_record r;
	struct err why = { "" };
	json_t *t;

	(void)state;
	make_record(&r);
	assert_false(sandbox_build_orphan(&r, NULL, &why));
	snprintf(r.tmpl_build, sizeof(r.tmpl_build), "web");
	assert_true(sandbox_build_orphan(&r, NULL, &why));
	assert_non_null(strstr(why.msg, "template 'web'"));
	assert_non_null(strstr(why.msg, "no such template"));
	t = json_pack("{s:s,s:s}", "name", "web", "sandbox", r.id);
	assert_false(sandbox_build_orphan(&r, t, &why));
	json_object_set_new(t, "sandbox", json_string("000000000000"));
	assert_true(sandbox_build_orphan(&r, t, &why));
	assert_non_null(strstr(why.msg, "names another sandbox"));
	json_object_del(t, "sandbox");
	assert_true(sandbox_build_orphan(&r, t, &why));
	json_decref(t);
	sandbox_record_free(&r);
}

/*
 * Start-up's decision for each directory of <state>/sandboxes:
 * what a create cut short by a crash left is removed, whether it got as
 * far as its first record or not; a delete cut short is finished; a
 * damaged record is left alone with what is wrong; a sandbox is loaded.
 */
static void test_dir_judge(void **state)
{
	struct sandbox_record r, back;
	struct err why;
	json_t *m;

	(void)state;
	make_record(&r);
	/* No meta.json: a create killed before its first write. */
	assert_int_equal(sandbox_dir_judge(r.id, NULL, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	assert_non_null(strstr(why.msg, "no meta.json"));
	/* Unreadable: kept (meta.json is only ever replaced whole), and why. */
	assert_int_equal(sandbox_dir_judge(r.id, NULL, "meta.json: '[' expected (line 1)", &back,
					   &why),
			 SANDBOX_DIR_SKIP);
	assert_string_equal(why.msg, "meta.json: '[' expected (line 1)");

	/* A finished sandbox: loaded, and the record is the one persisted. */
	m = sandbox_record_persist(&r);
	assert_true(json_is_false(json_object_get(m, "creating")));
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_LOAD);
	assert_string_equal(back.id, r.id);
	assert_false(back.creating);
	assert_int_equal(back.state, SANDBOX_CRASHED);
	sandbox_record_free(&back);
	/* Another directory's record: kept, said as such. */
	assert_int_equal(sandbox_dir_judge("000000000000", m, NULL, &back, &why), SANDBOX_DIR_SKIP);
	assert_string_equal(why.msg, "meta.json names another id, '3f9a1c2b7d4e'");
	assert_null(back.spec.env);
	json_decref(m);

	/* A create in flight, at any point up to its answer: removed. */
	r.creating = true;
	r.state = SANDBOX_BOOTING;
	m = sandbox_record_persist(&r);
	assert_true(json_is_true(json_object_get(m, "creating")));
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	assert_non_null(strstr(why.msg, "create was cut short"));
	assert_null(back.spec.env);
	json_decref(m);
	/* Even one that the guest had answered: the client had not been. */
	r.state = SANDBOX_RUNNING;
	m = sandbox_record_persist(&r);
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	json_decref(m);
	r.creating = false;

	/* A warm pool's sandbox: removed (the pool is filled again); a
	 * pooled field that is not a boolean is damage. */
	r.pooled = true;
	r.state = SANDBOX_PAUSED;
	m = sandbox_record_persist(&r);
	assert_true(json_is_true(json_object_get(m, "pooled")));
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	assert_non_null(strstr(why.msg, "warm pool"));
	json_object_set_new(m, "pooled", json_integer(1));
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_SKIP);
	assert_string_equal(why.msg, "meta.json: 'pooled' must be true or false");
	json_decref(m);
	m = sandbox_record_view(&r);
	assert_null(json_object_get(m, "pooled"));
	json_decref(m);
	r.pooled = false;

	/* A delete cut short: finished. */
	r.state = SANDBOX_DELETING;
	m = sandbox_record_persist(&r);
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	assert_non_null(strstr(why.msg, "delete"));
	json_decref(m);

	/* Before the field: a record that never booted is a create cut short
	 * (an older kilnd showed it as crashed, kilnd_restart, boot null). */
	r.state = SANDBOX_CRASHED;
	m = sandbox_record_persist(&r);
	json_object_del(m, "creating");
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_LOAD);
	sandbox_record_free(&back);
	json_object_set_new(m, "boot", json_null());
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_REMOVE);
	/* A field that is not a boolean is damage, not a decision. */
	json_object_set_new(m, "creating", json_string("no"));
	assert_int_equal(sandbox_dir_judge(r.id, m, NULL, &back, &why), SANDBOX_DIR_SKIP);
	assert_string_equal(why.msg, "meta.json: 'creating' must be true or false");
	json_decref(m);

	/* The API's view does not show it. */
	m = sandbox_record_view(&r);
	assert_null(json_object_get(m, "creating"));
	json_decref(m);
	sandbox_record_free(&r);
}

/* The running VMM's pid and start time survive the round trip (a
 * restarted kilnd reattaches by them); the view shows only the pid. */
static void test_vmm_identity_round_trip(void **state)
{
	struct sandbox_record r, back;
	struct api_err e;
	json_t *m;

	(void)state;
	make_record(&r);
	r.state = SANDBOX_RUNNING;
	r.pid = 4321;
	r.vmm_start = 987654321;
	m = sandbox_record_persist(&r);
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.pid, 4321);
	assert_true(back.vmm_start == 987654321);
	assert_int_equal(json_array_size(back.ports), 0);
	sandbox_record_free(&back);
	/* Port mappings with their host ports come back as they were. */
	json_object_set_new(m, "ports",
			    json_loads("[{\"guest_port\":80,\"host_port\":8080,\"target\":\"tcp\","
				       "\"guest_address\":\"::1\"},{\"guest_port\":5000,\"host_port\":9000,"
				       "\"target\":\"vsock\"}]",
				       0, NULL));
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_true(json_equal(back.ports, json_object_get(m, "ports")));
	assert_int_equal(json_array_size(back.previews), 0);
	sandbox_record_free(&back);
	/* Previews with their tokens too (meta.json only: never in the view). */
	json_object_set_new(m, "previews",
			    json_loads("[{\"port\":8080,\"public\":false,\"token\":"
				       "\"00112233445566778899aabbccddeeff0011223344556677\","
				       "\"created_at\":\"2026-01-01T00:00:00.000Z\"},{\"port\":3000,"
				       "\"public\":true,\"created_at\":\"2026-01-01T00:00:00.000Z\"}]",
				       0, NULL));
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_true(json_equal(back.previews, json_object_get(m, "previews")));
	{
		json_t *again = sandbox_record_persist(&back), *view = sandbox_record_view(&back);

		assert_true(json_equal(json_object_get(again, "previews"),
				       json_object_get(m, "previews")));
		assert_null(json_object_get(view, "previews"));
		json_decref(again);
		json_decref(view);
	}
	sandbox_record_free(&back);
	/* A record from before the field: no start time, nothing to reattach by. */
	json_object_del(m, "vmm_start");
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_true(back.vmm_start == 0);
	sandbox_record_free(&back);
	json_decref(m);
	m = sandbox_record_view(&r);
	assert_null(json_object_get(m, "vmm_start"));
	json_decref(m);
	sandbox_record_free(&r);
}

static void test_time_format(void **state)
{
	char buf[40];

	(void)state;
	format_time_ms(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	format_time_ms(951782400999, buf, sizeof(buf)); /* a leap day */
	assert_string_equal(buf, "2000-02-29T00:00:00.999Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transition_table),
		cmocka_unit_test(test_refusal_hints),
		cmocka_unit_test(test_out_of_range_is_internal),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_persist_round_trip),
		cmocka_unit_test(test_restore_refuses_damage),
		cmocka_unit_test(test_version_refusal_says_what),
		cmocka_unit_test(test_dir_judge),
		cmocka_unit_test(test_build_orphan),
		cmocka_unit_test(test_vmm_identity_round_trip),
		cmocka_unit_test(test_time_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

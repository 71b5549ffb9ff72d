/*
 * api/runtime/rt_state.c: the container ID rule, state.json's round trip
 * and its hostile readings, and what `state`, `list` and `features` print
 * (runc's fields, as go-runc and Podman decode them).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_state.h"
#include "lib/base/json.h"

static struct err e;

static void test_id(void **state)
{
	char longest[RT_ID_MAX + 2];

	(void)state;
	assert_int_equal(rt_id_check("abc", &e), 0);
	assert_int_equal(rt_id_check("A_b+c-d.e", &e), 0);
	assert_int_equal(rt_id_check("...", &e), 0);
	assert_int_equal(rt_id_check("-x", &e), 0);
	memset(longest, 'a', RT_ID_MAX);
	longest[RT_ID_MAX] = '\0';
	assert_int_equal(rt_id_check(longest, &e), 0);
	longest[RT_ID_MAX] = 'a';
	longest[RT_ID_MAX + 1] = '\0';
	assert_int_equal(rt_id_check(longest, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "container ID of 256 bytes"));
	assert_int_equal(rt_id_check("", &e), -EINVAL);
	assert_int_equal(rt_id_check(".", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "names a directory"));
	assert_int_equal(rt_id_check("..", &e), -EINVAL);
	assert_int_equal(rt_id_check(".warm", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "is reserved"));
	assert_int_equal(rt_id_check(".ids", &e), -EINVAL);
	assert_int_equal(rt_id_check(".warmer", &e), 0);
	static const char *const bad[] = { "a/b", "a b", "a,b", "a\nb", "é", "a:b", "a\\b", "*" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rt_id_check(bad[i], &e) != -EINVAL)
			fail_msg("id \"%s\" taken", bad[i]);
		assert_non_null(strstr(e.msg, "invalid container ID format"));
	}
}

static void fill(struct rt_state_rec *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "c1");
	snprintf(r->bundle, sizeof(r->bundle), "/b/c1");
	snprintf(r->rootfs, sizeof(r->rootfs), "/b/c1/rootfs");
	snprintf(r->created, sizeof(r->created), "2026-11-29T10:15:09.5Z");
	r->status = RT_STATUS_CREATED;
	r->shim = (struct rt_proc_id){ 4242, 987654321 };
	r->vmm = (struct rt_proc_id){ 4243, 987654322 };
	r->id_range = 1000000000;
	snprintf(r->cgroup, sizeof(r->cgroup), "/sys/fs/cgroup/machine.slice/libpod-c1.scope");
	snprintf(r->netns, sizeof(r->netns), "/run/netns/netns-1");
	snprintf(r->tap, sizeof(r->tap), "kt0");
	r->annotations = json_pack("{s:s}", "io.kubernetes.cri.container-type", "sandbox");
}

static void test_round_trip(void **state)
{
	struct rt_state_rec a, b;
	char *s;

	(void)state;
	fill(&a);
	assert_int_equal(rt_state_encode(&a, &s, &e), 0);
	assert_int_equal(rt_state_decode(s, strlen(s), &b, &e), 0);
	assert_string_equal(b.id, "c1");
	assert_string_equal(b.bundle, a.bundle);
	assert_string_equal(b.rootfs, a.rootfs);
	assert_string_equal(b.created, a.created);
	assert_int_equal(b.status, RT_STATUS_CREATED);
	assert_int_equal(b.shim.pid, 4242);
	assert_int_equal(b.shim.start, 987654321);
	assert_int_equal(b.vmm.pid, 4243);
	assert_int_equal(b.id_range, 1000000000);
	assert_string_equal(b.cgroup, a.cgroup);
	assert_string_equal(b.netns, a.netns);
	assert_string_equal(b.tap, "kt0");
	assert_true(json_equal(a.annotations, b.annotations));
	free(s);
	rt_state_rec_free(&b);
	/* no annotations, no shim yet: still a record */
	json_decref(a.annotations);
	a.annotations = NULL;
	a.shim = (struct rt_proc_id){ 0, 0 };
	a.status = RT_STATUS_CREATING;
	assert_int_equal(rt_state_encode(&a, &s, &e), 0);
	assert_int_equal(rt_state_decode(s, strlen(s), &b, &e), 0);
	assert_null(b.annotations);
	assert_int_equal(b.status, RT_STATUS_CREATING);
	free(s);
}

#define REC_HEAD \
	"{\"kiln_state\":1,\"id\":\"c1\",\"bundle\":\"/b\",\"rootfs\":\"/b/r\",\"created\":\"t\""

static void refused(const char *doc, const char *want)
{
	struct rt_state_rec r;

	memset(&e, 0, sizeof(e));
	if (rt_state_decode(doc, strlen(doc), &r, &e) != -EINVAL)
		fail_msg("taken: %s", doc);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
	assert_null(r.annotations);
}

static void test_decode_hostile(void **state)
{
	struct rt_state_rec r;
	char *big;

	(void)state;
	assert_int_equal(rt_state_decode(REC_HEAD ",\"status\":\"running\"}",
					 strlen(REC_HEAD ",\"status\":\"running\"}"), &r, &e),
			 0);
	assert_int_equal(r.status, RT_STATUS_RUNNING);
	assert_int_equal(r.shim.pid, 0);
	refused("[]", "state.json is not an object");
	refused("{", "state.json is not JSON");
	refused(REC_HEAD ",\"status\":\"running\",\"status\":\"created\"}", "duplicate");
	refused(REC_HEAD ",\"status\":\"running\",\"x\":1}", "unknown key \"x\"");
	refused("{\"kiln_state\":2,\"id\":\"c1\"}", "version 2, this kiln-runtime reads 1");
	refused("{\"kiln_state\":1,\"id\":\"c1\"}", "\"bundle\" is missing");
	refused(REC_HEAD ",\"status\":\"zombie\"}", "\"status\" is not one of");
	refused(REC_HEAD ",\"status\":7}", "\"status\" is not one of");
	refused("{\"kiln_state\":1,\"id\":\"../x\",\"bundle\":\"/b\",\"rootfs\":\"/r\",\"created\":\"t\","
		"\"status\":\"running\"}",
		"invalid container ID format");
	refused(REC_HEAD ",\"status\":\"running\",\"shim\":{\"pid\":-1,\"start\":0}}",
		"shim: \"pid\" is -1");
	refused(REC_HEAD ",\"status\":\"running\",\"shim\":{\"pid\":1}}",
		"shim: \"start\" is missing");
	refused(REC_HEAD ",\"status\":\"running\",\"vmm\":{\"pid\":1,\"start\":1,\"x\":0}}",
		"vmm: unknown key \"x\"");
	refused(REC_HEAD ",\"status\":\"running\",\"vmm\":[]}", "\"vmm\" is an array");
	refused(REC_HEAD ",\"status\":\"running\",\"tap\":\"0123456789abcdefg\"}",
		"\"tap\" is longer than 15 bytes");
	refused(REC_HEAD ",\"status\":\"running\",\"annotations\":{\"a\":1}}",
		"annotation \"a\" is an integer");
	refused(REC_HEAD ",\"status\":\"running\",\"annotations\":[]}",
		"\"annotations\" is an array");
	refused(REC_HEAD ",\"status\":\"running\",\"id_range\":-5}", "\"id_range\" is -5");
	/* a bundle path one byte over PATH_MAX */
	big = malloc(RT_PATH_MAX + 200);
	int k = snprintf(big, 100, "{\"kiln_state\":1,\"id\":\"c\",\"bundle\":\"");
	memset(big + k, 'a', RT_PATH_MAX);
	snprintf(big + k + RT_PATH_MAX, 100, "\"}");
	refused(big, "\"bundle\" is longer than 4095 bytes");
	free(big);
	/* over the file bound: refused before parsing */
	assert_int_equal(rt_state_decode("{}", RT_STATE_FILE_MAX + 1, &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "larger than 1048576 bytes"));
}

static void test_render_state(void **state)
{
	struct rt_state_rec a;
	struct rt_state_view v;
	char *s;

	(void)state;
	fill(&a);
	v = (struct rt_state_view){ &a, RT_STATUS_RUNNING, 4242 };
	assert_int_equal(rt_state_render(&v, &s, &e), 0);
	assert_string_equal(s,
			    "{\n"
			    "  \"ociVersion\": \"1.0.2\",\n"
			    "  \"id\": \"c1\",\n"
			    "  \"pid\": 4242,\n"
			    "  \"status\": \"running\",\n"
			    "  \"bundle\": \"/b/c1\",\n"
			    "  \"rootfs\": \"/b/c1/rootfs\",\n"
			    "  \"created\": \"2026-11-29T10:15:09.5Z\",\n"
			    "  \"owner\": \"\",\n"
			    "  \"annotations\": {\n"
			    "    \"io.kubernetes.cri.container-type\": \"sandbox\"\n"
			    "  }\n"
			    "}\n");
	free(s);
	/* what a hook reads on stdin: the spec's fields, one line */
	assert_int_equal(rt_state_render_hook(&v, &s, &e), 0);
	assert_string_equal(s,
			    "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"running\","
			    "\"pid\":4242,\"bundle\":\"/b/c1\",\"annotations\":{"
			    "\"io.kubernetes.cri.container-type\":\"sandbox\"}}\n");
	free(s);
	/* stopped: pid 0, and no annotations key when there are none */
	json_object_clear(a.annotations);
	v = (struct rt_state_view){ &a, RT_STATUS_STOPPED, 0 };
	assert_int_equal(rt_state_render(&v, &s, &e), 0);
	assert_non_null(strstr(s, "\"status\": \"stopped\""));
	assert_non_null(strstr(s, "\"pid\": 0,"));
	assert_null(strstr(s, "annotations"));
	free(s);
	rt_state_rec_free(&a);
	assert_string_equal(rt_status_name((enum rt_status)99), "unknown");
}

static void test_render_list(void **state)
{
	struct rt_state_rec a, b;
	struct rt_state_view v[2];
	char *s;
	json_t *j;

	(void)state;
	fill(&a);
	fill(&b);
	snprintf(b.id, sizeof(b.id), "a-much-longer-container-id");
	v[0] = (struct rt_state_view){ &a, RT_STATUS_RUNNING, 4242 };
	v[1] = (struct rt_state_view){ &b, RT_STATUS_STOPPED, 0 };
	assert_int_equal(rt_state_render_list(v, 2, false, false, &s, &e), 0);
	assert_string_equal(
		s,
		"ID                           PID         STATUS      BUNDLE      CREATED                  OWNER\n"
		"c1                           4242        running     /b/c1       2026-11-29T10:15:09.5Z   root\n"
		"a-much-longer-container-id   0           stopped     /b/c1       2026-11-29T10:15:09.5Z   root\n");
	free(s);
	assert_int_equal(rt_state_render_list(v, 2, true, true, &s, &e), 0);
	assert_string_equal(s, "c1\na-much-longer-container-id\n");
	free(s);
	assert_int_equal(rt_state_render_list(v, 2, true, false, &s, &e), 0);
	assert_null(strchr(s, '\n') + 1 == s + strlen(s) ? NULL : "more than one line");
	j = json_strict_loads(s, NULL);
	assert_true(json_is_array(j));
	assert_int_equal(json_array_size(j), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0), "pid")), 4242);
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 1), "status")),
			    "stopped");
	json_decref(j);
	free(s);
	/* none: an empty array and the table's head */
	assert_int_equal(rt_state_render_list(v, 0, true, false, &s, &e), 0);
	assert_string_equal(s, "[]\n");
	free(s);
	assert_int_equal(rt_state_render_list(v, 0, false, false, &s, &e), 0);
	assert_string_equal(s,
			    "ID          PID         STATUS      BUNDLE      CREATED     OWNER\n");
	free(s);
	rt_state_rec_free(&a);
	rt_state_rec_free(&b);
}

static void test_features(void **state)
{
	char *s;
	json_t *j, *l;

	(void)state;
	assert_int_equal(rt_state_render_features(&s, &e), 0);
	j = json_strict_loads(s, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "ociVersionMin")), "1.0.0");
	assert_string_equal(json_string_value(json_object_get(j, "ociVersionMax")), "1.1.0");
	assert_int_equal(json_array_size(json_object_get(j, "hooks")), 4);
	l = json_object_get(j, "linux");
	assert_int_equal(json_array_size(json_object_get(l, "capabilities")), 41);
	assert_int_equal(json_array_size(json_object_get(l, "namespaces")), 6);
	assert_true(json_is_true(json_object_get(json_object_get(l, "cgroup"), "v2")));
	assert_true(json_is_true(json_object_get(json_object_get(l, "seccomp"), "enabled")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(l, "seccomp"), "archs")),
			 1);
	assert_non_null(json_object_get(json_object_get(j, "annotations"), "io.kiln.memory"));
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(j, "potentiallyUnsafeConfigAnnotations"), 0)),
			    "io.kiln.");
	json_decref(j);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_decode_hostile),
		cmocka_unit_test(test_render_state),
		cmocka_unit_test(test_render_list),
		cmocka_unit_test(test_features),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

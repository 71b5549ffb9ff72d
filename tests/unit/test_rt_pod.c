/*
 * api/runtime/rt_pod.c: the pod grouping decision from the annotations
 * containerd's CRI and CRI-O set, exactly as they set them, and each
 * inconsistent set refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_pod.h"
#include "lib/base/json.h"

static struct err e;

static int decide(const char *annotations, const char *id, struct rt_pod *pod)
{
	json_t *a = annotations ? json_strict_loads(annotations, NULL) : NULL;
	int r;

	memset(&e, 0, sizeof(e));
	r = rt_pod_decide(a, id, pod, &e);
	json_decref(a);
	return r;
}

static void test_roles(void **state)
{
	struct rt_pod p;

	(void)state;
	assert_int_equal(decide(NULL, "c1", &p), 0);
	assert_int_equal(p.role, RT_POD_NONE);
	assert_int_equal(decide("{\"io.container.manager\":\"libpod\"}", "c1", &p), 0);
	assert_int_equal(p.role, RT_POD_NONE);
	/* containerd 1.6's CRI: the pause container, then an app container */
	assert_int_equal(decide("{\"io.kubernetes.cri.container-type\":\"sandbox\","
				"\"io.kubernetes.cri.sandbox-id\":\"5e5\","
				"\"io.kubernetes.cri.sandbox-name\":\"web\","
				"\"io.kubernetes.cri.sandbox-namespace\":\"default\"}",
				"5e5", &p),
			 0);
	assert_int_equal(p.role, RT_POD_SANDBOX);
	assert_string_equal(p.sandbox, "5e5");
	assert_int_equal(decide("{\"io.kubernetes.cri.container-type\":\"container\","
				"\"io.kubernetes.cri.sandbox-id\":\"5e5\","
				"\"io.kubernetes.cri.container-name\":\"nginx\"}",
				"a11", &p),
			 0);
	assert_int_equal(p.role, RT_POD_MEMBER);
	assert_string_equal(p.sandbox, "5e5");
	/* CRI-O */
	assert_int_equal(decide("{\"io.kubernetes.cri-o.ContainerType\":\"sandbox\","
				"\"io.kubernetes.cri-o.SandboxID\":\"b0b\"}",
				"b0b", &p),
			 0);
	assert_int_equal(p.role, RT_POD_SANDBOX);
	assert_int_equal(decide("{\"io.kubernetes.cri-o.ContainerType\":\"container\","
				"\"io.kubernetes.cri-o.SandboxID\":\"b0b\"}",
				"c0c", &p),
			 0);
	assert_int_equal(p.role, RT_POD_MEMBER);
	assert_string_equal(p.sandbox, "b0b");
	/* both engines' words, agreeing */
	assert_int_equal(decide("{\"io.kubernetes.cri.container-type\":\"container\","
				"\"io.kubernetes.cri.sandbox-id\":\"s\","
				"\"io.kubernetes.cri-o.ContainerType\":\"container\","
				"\"io.kubernetes.cri-o.SandboxID\":\"s\"}",
				"c", &p),
			 0);
	assert_int_equal(p.role, RT_POD_MEMBER);
}

static void refused(const char *annotations, const char *id, const char *want)
{
	struct rt_pod p;

	if (decide(annotations, id, &p) != -EINVAL)
		fail_msg("taken: %s", annotations);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("{\"io.kubernetes.cri.container-type\":\"pod\","
		"\"io.kubernetes.cri.sandbox-id\":\"s\"}",
		"s", "io.kubernetes.cri.container-type \"pod\": want sandbox or container");
	refused("{\"io.kubernetes.cri.container-type\":\"container\"}", "c",
		"a container's io.kubernetes.cri.sandbox-id must name its sandbox");
	refused("{\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.sandbox-id\":\"../x\"}",
		"c", "must name its sandbox");
	refused("{\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.sandbox-id\":7}",
		"c", "must name its sandbox");
	refused("{\"io.kubernetes.cri.container-type\":\"sandbox\","
		"\"io.kubernetes.cri.sandbox-id\":\"other\"}",
		"s", "a pod's sandbox is its own sandbox, \"s\"");
	refused("{\"io.kubernetes.cri-o.ContainerType\":\"container\","
		"\"io.kubernetes.cri-o.SandboxID\":\"c\"}",
		"c", "container \"c\" names itself as its sandbox");
	refused("{\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.sandbox-id\":\"s1\","
		"\"io.kubernetes.cri-o.ContainerType\":\"container\","
		"\"io.kubernetes.cri-o.SandboxID\":\"s2\"}",
		"c", "pod annotations disagree about container \"c\"");
	refused("{\"io.kubernetes.cri.container-type\":\"sandbox\","
		"\"io.kubernetes.cri.sandbox-id\":\"c\","
		"\"io.kubernetes.cri-o.ContainerType\":\"container\","
		"\"io.kubernetes.cri-o.SandboxID\":\"s\"}",
		"c", "disagree");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

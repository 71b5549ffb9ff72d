/*
 * api/runtime/rt_config_privs.c: process.rlimits, capabilities,
 * noNewPrivileges, oomScoreAdj and linux.sysctl, maskedPaths,
 * readonlyPaths as engines write them; every refusal one line naming the
 * field; the bounds the guest's agent holds them to; exec's process.json
 * carrying the same fields.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "api/runtime/rt_config.h"

static struct err e;
static struct rt_config cfg;

static int parse(const char *s)
{
	rt_config_free(&cfg);
	memset(&e, 0, sizeof(e));
	return rt_config_parse(s, strlen(s), &cfg, &e);
}

static void refused(const char *doc, const char *want)
{
	if (parse(doc) != -EINVAL)
		fail_msg("taken: %s", doc);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
	assert_null(strchr(e.msg, '\n'));
}

#define HEAD "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
#define PROC(...) HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"" __VA_ARGS__ "}}"
#define LINUX(...) HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},\"linux\":{" __VA_ARGS__ "}}"

/* Docker 24's default container, trimmed to these fields. */
static void test_docker_defaults(void **state)
{
	const struct agent_ctr_privs *pv = &cfg.process.privs;

	(void)state;
	assert_int_equal(
		parse(PROC(",\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_NET_RAW\","
			   "\"CAP_AUDIT_WRITE\"],\"effective\":[\"CAP_CHOWN\",\"CAP_NET_RAW\"],"
			   "\"permitted\":[\"CAP_CHOWN\",\"CAP_NET_RAW\"],\"inheritable\":null},"
			   "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1234,\"soft\":1000},"
			   "{\"type\":\"RLIMIT_CORE\",\"hard\":0,\"soft\":0}],"
			   "\"noNewPrivileges\":true,\"oomScoreAdj\":500")),
		0);
	assert_true(pv->has_caps);
	assert_int_equal(pv->caps[AGENT_CAP_BOUNDING], (1ull << 0) | (1ull << 13) | (1ull << 29));
	assert_int_equal(pv->caps[AGENT_CAP_PERMITTED], (1ull << 0) | (1ull << 13));
	assert_int_equal(pv->caps[AGENT_CAP_INHERITABLE], 0);
	assert_int_equal(pv->nrlimits, 2);
	assert_int_equal(pv->rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(pv->rlimits[0].soft, 1000);
	assert_int_equal(pv->rlimits[0].hard, 1234);
	assert_int_equal(pv->rlimits[1].resource, RLIMIT_CORE);
	assert_true(pv->no_new_privileges);
	assert_true(pv->has_oom_score_adj);
	assert_int_equal(pv->oom_score_adj, 500);
	/* the last capability the guest kernel knows */
	assert_int_equal(parse(PROC(",\"capabilities\":{\"ambient\":[\"CAP_CHECKPOINT_RESTORE\"]}")),
			 0);
	assert_int_equal(cfg.process.privs.caps[AGENT_CAP_AMBIENT], 1ull << 40);
	/* none given: the uid's own, as runc leaves them */
	assert_int_equal(parse(PROC()), 0);
	assert_false(cfg.process.privs.has_caps);
	assert_false(cfg.process.privs.has_oom_score_adj);
	assert_int_equal(cfg.process.privs.nrlimits, 0);
}

static void test_process_refusals(void **state)
{
	(void)state;
	refused(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_FOO\",\"hard\":1,\"soft\":1}]"),
		"config.json: process.rlimits[0].type \"RLIMIT_FOO\" is not a resource limit");
	refused(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":2}]"),
		"process.rlimits[0]: soft 2 is above hard 1");
	refused(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":-1,\"soft\":2}]"),
		"process.rlimits[0].hard is -1, outside 0..");
	refused(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NPROC\",\"hard\":1,\"soft\":1},"
		     "{\"type\":\"RLIMIT_NPROC\",\"hard\":1,\"soft\":1}]"),
		"process.rlimits[1]: RLIMIT_NPROC is given twice");
	refused(PROC(",\"rlimits\":[1]"), "process.rlimits[0] is an integer, not an object");
	refused(PROC(",\"rlimits\":{}"), "process.rlimits is an object, not an array");
	refused(PROC(",\"capabilities\":{\"bounding\":[\"CAP_FLY\"]}"),
		"process.capabilities.bounding[0] \"CAP_FLY\" is not a capability the guest kernel "
		"has");
	refused(PROC(",\"capabilities\":{\"effective\":[7]}"),
		"process.capabilities.effective[0] is an integer, not a string");
	refused(PROC(",\"capabilities\":[]"), "process.capabilities is an array, not an object");
	refused(PROC(",\"noNewPrivileges\":1"), "process.noNewPrivileges is an integer");
	refused(PROC(",\"oomScoreAdj\":1001"), "process.oomScoreAdj is 1001, outside -1000..1000");
}

static void test_linux(void **state)
{
	(void)state;
	assert_int_equal(parse(LINUX(
				 "\"sysctl\":{\"net.ipv4.ip_forward\":\"1\",\"kernel/msgmax\":"
				 "\"8192\"},\"maskedPaths\":[\"/proc/kcore\",\"/sys/firmware\"],"
				 "\"readonlyPaths\":[\"/proc/sys\"]")),
			 0);
	assert_int_equal(cfg.nsysctl, 2);
	assert_int_equal(cfg.nmasked, 2);
	assert_string_equal(cfg.masked_paths[1], "/sys/firmware");
	assert_null(cfg.masked_paths[2]);
	assert_int_equal(cfg.nreadonly, 1);
	refused(LINUX("\"sysctl\":{\"../../etc\":\"1\"}"),
		"config.json: linux.sysctl \"../../etc\" is not a sysctl name");
	refused(LINUX("\"sysctl\":{\"net..x\":\"1\"}"), "linux.sysctl \"net..x\" is not");
	refused(LINUX("\"sysctl\":{\"net.x\":1}"), "linux.sysctl.net.x is not a string");
	refused(LINUX("\"sysctl\":{\"net.x\":\"a\\u0000b\"}"), "is not allowed");
	refused(LINUX("\"sysctl\":[]"), "linux.sysctl is an array, not an object");
	refused(LINUX("\"maskedPaths\":[\"proc/kcore\"]"),
		"linux.maskedPaths[0] \"proc/kcore\" is not an absolute path without '..'");
	refused(LINUX("\"readonlyPaths\":[\"/proc/../etc\"]"),
		"linux.readonlyPaths[0] \"/proc/../etc\" is not an absolute path");
	refused(LINUX("\"readonlyPaths\":[3]"), "linux.readonlyPaths[0] is an integer");
}

/* The bounds: the guest's own, so nothing the guest would refuse passes. */
static void test_bounds(void **state)
{
	char *doc = malloc(64 << 10), *p;

	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		p = doc + sprintf(doc, "%s", LINUX("\"sysctl\":{\"a0\":\"1\""));
		p -= 2; /* before linux's and the document's "}}" */
		for (int i = 1; i < AGENT_CTR_SYSCTL_MAX + extra; i++)
			p += sprintf(p, ",\"a%d\":\"1\"", i);
		strcpy(p, "}}}");
		if (extra)
			refused(doc, "linux.sysctl has 257 entries, at most 256 are allowed");
		else
			assert_int_equal(parse(doc), 0);
		p = doc + sprintf(doc, "%s", LINUX("\"maskedPaths\":[\"/a\""));
		p -= 2;
		for (int i = 1; i < AGENT_CTR_PATHS_MAX + extra; i++)
			p += sprintf(p, ",\"/a\"");
		strcpy(p, "]}}");
		if (extra)
			refused(doc, "linux.maskedPaths has 257 entries, at most 256 are allowed");
		else
			assert_int_equal(parse(doc), 0);
	}
	p = doc + sprintf(doc, "%s", PROC(",\"rlimits\":["));
	p -= 2;
	for (int i = 0; i < AGENT_CTR_RLIMITS_MAX + 1; i++)
		p += sprintf(p, "%s{\"type\":\"RLIMIT_CPU\",\"hard\":1,\"soft\":1}", i ? "," : "");
	strcpy(p, "]}}");
	refused(doc, "process.rlimits has 17 entries, at most 16 are allowed");
	p = doc + sprintf(doc, "%s", LINUX("\"sysctl\":{\""));
	p -= 2;
	memset(p, 'k', AGENT_SYSCTL_KEY_MAX + 1);
	strcpy(p + AGENT_SYSCTL_KEY_MAX + 1, "\":\"1\"}}}");
	refused(doc, "is not a sysctl name");
	free(doc);
}

/* exec --process: the same fields, named for its own document. */
static void test_process_json(void **state)
{
	const char *s = "{\"args\":[\"ls\"],\"cwd\":\"/\",\"noNewPrivileges\":true,"
			"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":64,\"soft\":64}],"
			"\"capabilities\":{\"bounding\":[\"CAP_KILL\"]}}";
	struct rt_process p;
	json_t *doc;

	(void)state;
	assert_int_equal(rt_process_parse(s, strlen(s), &p, &doc, &e), 0);
	assert_true(p.privs.no_new_privileges);
	assert_int_equal(p.privs.nrlimits, 1);
	assert_int_equal(p.privs.caps[AGENT_CAP_BOUNDING], 1ull << 5);
	rt_process_free(&p);
	json_decref(doc);
	s = "{\"args\":[\"ls\"],\"cwd\":\"/\",\"capabilities\":{\"ambient\":[\"CAP_X\"]}}";
	assert_int_equal(rt_process_parse(s, strlen(s), &p, &doc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "process.json: process.capabilities.ambient[0] \"CAP_X\""));
	rt_process_free(&p);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_defaults), cmocka_unit_test(test_process_refusals),
		cmocka_unit_test(test_linux),           cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_process_json),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	rt_config_free(&cfg);
	return r;
}

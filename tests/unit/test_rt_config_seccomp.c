/*
 * api/runtime/rt_config_seccomp.c: linux.seccomp as Docker's and Podman's
 * default profiles write it (trimmed), into the agent's rules: names
 * resolved to x86_64's numbers (another architecture's skipped), a rule
 * naming one index twice split as runc splits it, a rule that does what
 * the default does dropped; every refusal one line naming the field; the
 * bound on the rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

#define SC(...)                                                                                    \
	"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]," \
	"\"cwd\":\"/\"},\"linux\":{\"seccomp\":{" __VA_ARGS__ "}}}"

static void test_docker_profile(void **state)
{
	const struct agent_seccomp *s;

	(void)state;
	assert_int_equal(
		parse(SC(
			"\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
			"\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],"
			"\"flags\":[\"SECCOMP_FILTER_FLAG_TSYNC\",\"SECCOMP_FILTER_FLAG_LOG\"],"
			"\"syscalls\":[{\"names\":[\"read\",\"write\",\"socketcall\",\"no_such_call\","
			"\"exit_group\"],\"action\":\"SCMP_ACT_ALLOW\"},"
			"{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
			"\"value\":8,\"op\":\"SCMP_CMP_EQ\"}]},"
			"{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
			"\"value\":2114060288,\"valueTwo\":0,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
			"{\"names\":[\"clone3\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":38},"
			"{\"names\":[\"kill\"],\"action\":\"SCMP_ACT_ERRNO\"},"
			"{\"names\":[\"mbind\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,"
			"\"value\":1,\"op\":\"SCMP_CMP_GE\"},{\"index\":1,\"value\":9,\"op\":"
			"\"SCMP_CMP_LE\"}]}]")),
		0);
	s = cfg.seccomp;
	assert_non_null(s);
	assert_int_equal(s->default_action, AGENT_SC_ERRNO);
	assert_int_equal(s->default_errno, 1);
	assert_true(s->log);
	assert_false(s->spec_allow);
	/* read write exit_group, personality, clone, clone3, mbind twice;
	 * socketcall (i386's) and the unknown name skipped, kill as the default */
	assert_int_equal(s->nrules, 8);
	assert_int_equal(s->rules[0].nr, SYS_read);
	assert_int_equal(s->rules[1].nr, SYS_write);
	assert_int_equal(s->rules[2].nr, SYS_exit_group);
	assert_int_equal(s->rules[3].nr, SYS_personality);
	assert_int_equal(s->rules[3].nargs, 1);
	assert_int_equal(s->rules[3].args[0].op, AGENT_SC_EQ);
	assert_int_equal(s->rules[4].args[0].op, AGENT_SC_MASKED_EQ);
	assert_int_equal(s->rules[4].args[0].value, 2114060288);
	assert_int_equal(s->rules[5].nr, SYS_clone3);
	assert_int_equal(s->rules[5].errno_ret, 38);
	/* one index twice: runc's split, one rule per condition */
	assert_int_equal(s->rules[6].nr, SYS_mbind);
	assert_int_equal(s->rules[6].nargs, 1);
	assert_int_equal(s->rules[6].args[0].op, AGENT_SC_GE);
	assert_int_equal(s->rules[7].args[0].op, AGENT_SC_LE);
	/* no seccomp: none */
	assert_int_equal(parse("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},\"process\":{"
			       "\"args\":[\"sh\"],\"cwd\":\"/\"}}"),
			 0);
	assert_null(cfg.seccomp);
}

static void test_refusals(void **state)
{
	(void)state;
	refused(SC("\"syscalls\":[]"), "config.json: linux.seccomp.defaultAction is missing");
	refused(SC("\"defaultAction\":\"SCMP_ACT_NOTIFY\""),
		"linux.seccomp.defaultAction SCMP_ACT_NOTIFY is not supported: the filter runs in "
		"the VM");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/l.sock\""),
		"linux.seccomp.listenerPath is not supported");
	refused(SC("\"defaultAction\":\"SCMP_ACT_NOPE\""),
		"linux.seccomp.defaultAction \"SCMP_ACT_NOPE\" is not a seccomp action");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":4096"),
		"linux.seccomp.defaultErrnoRet is 4096, outside 0..4095");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_NEW\"]"),
		"linux.seccomp.flags[0] \"SECCOMP_FILTER_FLAG_NEW\" is not supported");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"]}]"),
		"linux.seccomp.syscalls[0].action is missing");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":6,\"value\":1,\"op\":"
		   "\"SCMP_CMP_EQ\"}]}]"),
		"linux.seccomp.syscalls[0].args[0].index is 6, outside 0..5");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,\"op\":"
		   "\"SCMP_CMP_ABOUT\"}]}]"),
		"linux.seccomp.syscalls[0].args[0].op \"SCMP_CMP_ABOUT\" is not a seccomp comparison");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]"),
		"linux.seccomp.syscalls[0].args[0].index is missing");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{},{},{},{},{},{},{}]}]"),
		"linux.seccomp.syscalls[0].args has 7 entries, at most 6 are allowed");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[7],"
		   "\"action\":\"SCMP_ACT_ERRNO\"}]"),
		"linux.seccomp.syscalls[0].names[0] is an integer, not a string");
	refused(SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[3]"),
		"linux.seccomp.syscalls[0] is an integer, not an object");
}

/* The rules a profile makes are bounded, whatever the entries' sizes. */
static void test_bounded(void **state)
{
	char *doc = malloc(64 << 10), *p;

	(void)state;
	p = doc + sprintf(doc, "%s", SC("\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["));
	p -= 3; /* before "}}}" */
	for (int k = 0; k < 3; k++) {
		p += sprintf(p, "%s{\"names\":[\"read\"", k ? "," : "");
		for (int i = 1; i < 1000; i++)
			p += sprintf(p, ",\"read\"");
		p += sprintf(p, "],\"action\":\"SCMP_ACT_LOG\"}");
	}
	strcpy(p, "]}}}");
	refused(doc, "makes more than 2048 rules");
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_profile),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounded),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	rt_config_free(&cfg);
	return r;
}

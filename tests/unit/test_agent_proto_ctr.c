/*
 * agent_proto_ctr: the container messages (docs/agent-protocol.md, 7.9).
 * ctr_create is the largest request the agent takes, nested three deep
 * and built from an engine's config.json: every count, length, form and
 * nesting is bounded and each refusal carries its documented code; what
 * the host's encoders build is exactly what the agent's parser reads back;
 * the reply lines are byte for byte the document's; and every example
 * request in the document parses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "api/proto/agent_proto.h"

#define MIN_CREATE "\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"}"

static enum agent_code parse(const char *line, struct agent_msg *m, struct agent_err *err)
{
	return agent_msg_parse_line(line, strlen(line), AGENT_CTX_REQUEST, m, err);
}

/* The line is refused with `code`, and the message holds `words`. */
static void refuse(const char *line, enum agent_code code, const char *words)
{
	struct agent_msg m;
	struct agent_err err;
	enum agent_code c = parse(line, &m, &err);

	if (c != code)
		fail_msg("%s\n  gave %s (%s), want %s", line, agent_code_name(c), err.msg,
			 agent_code_name(code));
	if (words && !strstr(err.msg, words))
		fail_msg("%s\n  message '%s' lacks '%s'", line, err.msg, words);
}

/* A ctr_create whose process object is `proc` (without braces). */
static char *create_with_process(const char *proc)
{
	char *s;

	assert_true(asprintf(&s, "{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{%s}}",
			     proc) > 0);
	return s;
}

/* A ctr_create whose one mount is `mount` (without braces). */
static char *create_with_mount(const char *mount)
{
	char *s;

	assert_true(asprintf(&s,
			     "{\"type\":\"ctr_create\"," MIN_CREATE
			     ",\"mounts\":[{%s}],\"process\":{\"args\":[\"sh\"]}}",
			     mount) > 0);
	return s;
}

static void refuse_process(const char *proc, enum agent_code code, const char *words)
{
	char *s = create_with_process(proc);

	refuse(s, code, words);
	free(s);
}

static void refuse_mount(const char *mount, enum agent_code code, const char *words)
{
	char *s = create_with_mount(mount);

	refuse(s, code, words);
	free(s);
}

/* A JSON array of n copies of `item`, joined with ','. */
static char *repeat(const char *item, size_t n)
{
	size_t il = strlen(item), len = n * (il + 1) + 3;
	char *s = malloc(len), *p = s;

	assert_non_null(s);
	*p++ = '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, item, il);
		p += il;
	}
	*p++ = ']';
	*p = '\0';
	return s;
}

static void test_create_documented_example(void **state)
{
	const char *line =
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"},\"mounts\":["
		"{\"destination\":\"/proc\",\"type\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
		"{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"options\":[\"newinstance\",\"ptmxmode=0666\"]},"
		"{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"ro/0\",\"options\":[\"rbind\",\"ro\"]}],"
		"\"process\":{\"args\":[\"sh\",\"-c\",\"echo hi; exit 7\"],\"env\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm\"],"
		"\"cwd\":\"/srv\",\"uid\":1000,\"gid\":100,\"additional_gids\":[10,4294967294],\"umask\":63,"
		"\"terminal\":true,\"rows\":50,\"cols\":132},\"hostname\":\"c1\"}";
	struct agent_msg m;
	struct agent_err err;
	const struct agent_ctr_create *c = &m.u.ctr_create;

	(void)state;
	assert_int_equal(parse(line, &m, &err), AGENT_OK);
	assert_int_equal(m.type, AGENT_T_CTR_CREATE);
	assert_string_equal(c->cid, "c1");
	assert_string_equal(c->root_share, "r");
	assert_false(c->root_readonly);
	assert_int_equal(c->nmounts, 3);
	assert_string_equal(c->mounts[0].destination, "/proc");
	assert_int_equal(c->mounts[0].type, AGENT_MNT_PROC);
	assert_int_equal(c->mounts[0].optc, 3);
	assert_string_equal(c->mounts[0].options[2], "nodev");
	assert_null(c->mounts[0].options[3]);
	assert_null(c->mounts[0].share);
	assert_int_equal(c->mounts[1].type, AGENT_MNT_DEVPTS);
	assert_int_equal(c->mounts[2].type, AGENT_MNT_BIND);
	assert_string_equal(c->mounts[2].share, "b");
	assert_string_equal(c->mounts[2].source, "ro/0");
	assert_int_equal(c->proc.argc, 3);
	assert_string_equal(c->proc.args[2], "echo hi; exit 7");
	assert_null(c->proc.args[3]);
	assert_int_equal(c->proc.envc, 2);
	assert_string_equal(c->proc.env[1], "TERM=xterm");
	assert_null(c->proc.env[2]);
	assert_string_equal(c->proc.cwd, "/srv");
	assert_int_equal(c->proc.uid, 1000);
	assert_int_equal(c->proc.gid, 100);
	assert_int_equal(c->proc.ngroups, 2);
	assert_int_equal(c->proc.groups[1], 4294967294u);
	assert_int_equal(c->proc.umask, 077);
	assert_true(c->proc.terminal);
	assert_int_equal(c->proc.rows, 50);
	assert_int_equal(c->proc.cols, 132);
	assert_string_equal(c->hostname, "c1");
	agent_msg_free(&m);
}

static void test_create_defaults(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	const struct agent_ctr_create *c = &m.u.ctr_create;

	(void)state;
	assert_int_equal(parse("{\"type\":\"ctr_create\"," MIN_CREATE
			       ",\"process\":{\"args\":[\"true\"]}}",
			       &m, &err),
			 AGENT_OK);
	assert_int_equal(c->nmounts, 0);
	assert_null(c->mounts);
	assert_int_equal(c->proc.envc, 0);
	assert_non_null(c->proc.env); /* an empty environment, ready for execve */
	assert_null(c->proc.env[0]);
	assert_string_equal(c->proc.cwd, "/");
	assert_int_equal(c->proc.uid, 0);
	assert_int_equal(c->proc.umask, AGENT_CTR_UMASK_DEFAULT);
	assert_false(c->proc.terminal);
	assert_int_equal(c->proc.ngroups, 0);
	assert_null(c->hostname);
	agent_msg_free(&m);
}

static void test_create_top_level_refused(void **state)
{
	char line[512], cid[AGENT_CID_MAX + 2];

	(void)state;
	refuse("{\"type\":\"ctr_create\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_MISSING_FIELD, "'cid'");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"..\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'cid'");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"a/b\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'cid'");
	refuse("{\"type\":\"ctr_create\",\"cid\":7,\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'cid'");
	memset(cid, 'a', sizeof(cid) - 1);
	cid[sizeof(cid) - 1] = '\0';
	snprintf(line, sizeof(line),
		 "{\"type\":\"ctr_create\",\"cid\":\"%s\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
		 cid);
	refuse(line, AGENT_E_TOO_LARGE, "at most 128");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_MISSING_FIELD, "'rootfs'");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":\"r\",\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'rootfs' must be an object");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\",\"source\":\"a/../b\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'source' must be relative to the share");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\",\"source\":\"/b\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'source' must be relative to the share");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\"},\"pids_max\":0,\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "pids_max");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\",\"path\":\"x\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_UNKNOWN_FIELD, "ctr_create rootfs: unknown field 'path'");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_MISSING_FIELD, "'share'");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"a:b\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "virtio-fs tag");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"0123456789012345678901234567890123456\"},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "virtio-fs tag");
	refuse("{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\",\"readonly\":1},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'readonly'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE "}", AGENT_E_MISSING_FIELD, "'process'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":[]}", AGENT_E_BAD_FIELD,
	       "'process' must be an object");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE
	       ",\"process\":{\"args\":[\"a\"]},\"hostname\":\"-x\"}",
	       AGENT_E_BAD_FIELD, "'hostname'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE
	       ",\"process\":{\"args\":[\"a\"]},\"linux\":{}}",
	       AGENT_E_UNKNOWN_FIELD, "'linux'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"a\"]},\"len\":4}",
	       AGENT_E_BAD_FIELD, "carries no payload");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE
	       ",\"mounts\":{},\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "'mounts' must be an array");
}

static void test_create_process_refused(void **state)
{
	char *many, *proc;

	(void)state;
	refuse_process("\"env\":[]", AGENT_E_MISSING_FIELD, "'args'");
	refuse_process("\"args\":[]", AGENT_E_BAD_FIELD, "at least one entry");
	refuse_process("\"args\":[\"\"]", AGENT_E_BAD_FIELD, "'args[0]' must not be empty");
	refuse_process("\"args\":[\"a\",1]", AGENT_E_BAD_FIELD, "'args[1]' must be a string");
	refuse_process("\"args\":\"sh\"", AGENT_E_BAD_FIELD, "'args' must be an array");
	many = repeat("\"x\"", AGENT_ARGV_MAX + 1);
	assert_true(asprintf(&proc, "\"args\":%s", many) > 0);
	refuse_process(proc, AGENT_E_TOO_LARGE, "at most 1024");
	free(proc);
	free(many);
	refuse_process("\"args\":[\"a\"],\"env\":[\"NOEQUALS\"]", AGENT_E_BAD_FIELD, "'env[0]'");
	refuse_process("\"args\":[\"a\"],\"env\":[\"A=1\",\"=x\"]", AGENT_E_BAD_FIELD, "'env[1]'");
	refuse_process("\"args\":[\"a\"],\"env\":{\"A\":\"1\"}", AGENT_E_BAD_FIELD,
		       "'env' must be an array");
	many = repeat("\"A=1\"", AGENT_ENV_MAX + 1);
	assert_true(asprintf(&proc, "\"args\":[\"a\"],\"env\":%s", many) > 0);
	refuse_process(proc, AGENT_E_TOO_LARGE, "'env'");
	free(proc);
	free(many);
	refuse_process("\"args\":[\"a\"],\"cwd\":\"srv\"", AGENT_E_BAD_FIELD, "absolute");
	refuse_process("\"args\":[\"a\"],\"uid\":-1", AGENT_E_BAD_FIELD, "'uid'");
	refuse_process("\"args\":[\"a\"],\"uid\":4294967295", AGENT_E_BAD_FIELD, "'uid'");
	refuse_process("\"args\":[\"a\"],\"gid\":\"0\"", AGENT_E_BAD_FIELD, "'gid'");
	refuse_process("\"args\":[\"a\"],\"additional_gids\":[1,-2]", AGENT_E_BAD_FIELD,
		       "'additional_gids[1]'");
	refuse_process("\"args\":[\"a\"],\"additional_gids\":[1.0]", AGENT_E_BAD_FIELD,
		       "'additional_gids[0]'");
	many = repeat("5", AGENT_CTR_GROUPS_MAX + 1);
	assert_true(asprintf(&proc, "\"args\":[\"a\"],\"additional_gids\":%s", many) > 0);
	refuse_process(proc, AGENT_E_TOO_LARGE, "'additional_gids'");
	free(proc);
	free(many);
	refuse_process("\"args\":[\"a\"],\"umask\":512", AGENT_E_BAD_FIELD, "'umask'");
	refuse_process("\"args\":[\"a\"],\"rows\":30", AGENT_E_BAD_FIELD, "needs \"terminal\"");
	refuse_process("\"args\":[\"a\"],\"terminal\":true,\"cols\":0", AGENT_E_BAD_FIELD,
		       "'cols'");
	refuse_process("\"args\":[\"a\"],\"user\":{\"uid\":0}", AGENT_E_UNKNOWN_FIELD,
		       "ctr_create process: unknown field 'user'");
}

static void test_create_mounts_refused(void **state)
{
	char *many, *mount, *line, opt[AGENT_CTR_OPTION_MAX + 2];

	(void)state;
	refuse_mount("\"type\":\"proc\"", AGENT_E_MISSING_FIELD, "'destination'");
	refuse_mount("\"destination\":\"proc\",\"type\":\"proc\"", AGENT_E_BAD_FIELD, "absolute");
	refuse_mount("\"destination\":\"/a/../etc\",\"type\":\"tmpfs\"", AGENT_E_BAD_FIELD, "'..'");
	refuse_mount("\"destination\":\"/..\",\"type\":\"tmpfs\"", AGENT_E_BAD_FIELD, "'..'");
	refuse_mount("\"destination\":\"/x\"", AGENT_E_MISSING_FIELD, "'type'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"ext4\"", AGENT_E_BAD_FIELD,
		     "ctr_create mounts[0]: 'type' must be proc");
	/* The host normalises OCI's "cgroup" to the guest's only hierarchy. */
	refuse_mount("\"destination\":\"/x\",\"type\":\"cgroup\"", AGENT_E_BAD_FIELD, "'type'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":\"ro\"",
		     AGENT_E_BAD_FIELD, "'options' must be an array");
	refuse_mount("\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":[\"ro\",3]",
		     AGENT_E_BAD_FIELD, "'options[1]' must be a string");
	refuse_mount("\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":[\"\"]",
		     AGENT_E_BAD_FIELD, "'options[0]'");
	/* A ',' would smuggle a second option past the list's checks. */
	refuse_mount("\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":[\"size=1,nr_inodes=9\"]",
		     AGENT_E_BAD_FIELD, "without ','");
	memset(opt, 'o', sizeof(opt) - 1);
	opt[sizeof(opt) - 1] = '\0';
	assert_true(asprintf(&mount,
			     "\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":[\"%s\"]",
			     opt) > 0);
	refuse_mount(mount, AGENT_E_BAD_FIELD, "'options[0]'");
	free(mount);
	many = repeat("\"ro\"", AGENT_CTR_OPTIONS_MAX + 1);
	assert_true(asprintf(&mount, "\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":%s",
			     many) > 0);
	refuse_mount(mount, AGENT_E_TOO_LARGE, "'options'");
	free(mount);
	free(many);
	/* 17 data options of 255 bytes: 4351 bytes joined, over one page;
	 * flags do not count. */
	opt[AGENT_CTR_OPTION_MAX] = '\0';
	{
		char item[AGENT_CTR_OPTION_MAX + 8];

		snprintf(item, sizeof(item), "\"%s\"", opt);
		many = repeat(item, 17);
	}
	assert_true(asprintf(&mount, "\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":%s",
			     many) > 0);
	refuse_mount(mount, AGENT_E_TOO_LARGE, "4351 bytes");
	free(mount);
	free(many);
	refuse_mount("\"destination\":\"/x\",\"type\":\"tmpfs\",\"share\":\"b\"", AGENT_E_BAD_FIELD,
		     "'share' belongs to a bind");
	refuse_mount("\"destination\":\"/x\",\"type\":\"proc\",\"source\":\"proc\"",
		     AGENT_E_BAD_FIELD, "'source' belongs to a bind");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"a\"",
		     AGENT_E_MISSING_FIELD, "'share'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\"",
		     AGENT_E_MISSING_FIELD, "'source'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"/etc\"",
		     AGENT_E_BAD_FIELD, "relative");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"../x\"",
		     AGENT_E_BAD_FIELD, "without '..'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"a/..\"",
		     AGENT_E_BAD_FIELD, "without '..'");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b c\",\"source\":\"a\"",
		     AGENT_E_BAD_FIELD, "virtio-fs tag");
	refuse_mount("\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"a\",\"propagation\":\"x\"",
		     AGENT_E_UNKNOWN_FIELD, "ctr_create mounts[0]: unknown field 'propagation'");
	/* The limit on mounts, and a failing mount after good ones (their
	 * options are freed: ASan watches). */
	many = repeat("{\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":[\"ro\"]}",
		      AGENT_CTR_MOUNTS_MAX + 1);
	assert_true(asprintf(&line,
			     "{\"type\":\"ctr_create\"," MIN_CREATE
			     ",\"mounts\":%s,\"process\":{\"args\":[\"a\"]}}",
			     many) > 0);
	refuse(line, AGENT_E_TOO_LARGE, "'mounts'");
	free(line);
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE
	       ",\"mounts\":[{\"destination\":\"/a\",\"type\":\"tmpfs\",\"options\":[\"ro\"]},"
	       "{\"destination\":\"/b\",\"type\":\"tmpfs\",\"options\":[\"ro\",false]}],\"process\":{\"args\":[\"a\"]}}",
	       AGENT_E_BAD_FIELD, "mounts[1]: 'options[1]'");
	free(many);
}

/* What may pass: names that only look like the refused ones. */
static void test_create_near_misses_pass(void **state)
{
	static const char *const mounts[] = {
		"\"destination\":\"/a..b/..c\",\"type\":\"tmpfs\"",
		"\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"\"",
		"\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\".\"",
		"\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"a/..b/c..\"",
		"\"destination\":\"/x\",\"type\":\"cgroup2\",\"options\":[]",
	};
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		char *s = create_with_mount(mounts[i]);

		if (parse(s, &m, &err) != AGENT_OK)
			fail_msg("%s refused: %s", s, err.msg);
		agent_msg_free(&m);
		free(s);
	}
	assert_int_equal(
		parse("{\"type\":\"ctr_create\",\"cid\":\"a_B+9-.x\",\"rootfs\":{\"share\":\"~tag!\"},\"process\":{\"args\":[\"a\"]}}",
		      &m, &err),
		AGENT_OK);
	agent_msg_free(&m);
}

static void test_requests(void **state)
{
	const char *start = "{\"type\":\"ctr_start\",\"cid\":\"c\"}";
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"pty\"}", &m,
			       &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_CTR_STDIO);
	assert_int_equal(m.u.ctr.stream, AGENT_CTR_PTY);
	assert_int_equal(m.u.ctr.exec, 0);
	agent_msg_free(&m);
	assert_int_equal(
		parse("{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"exec\":3,\"signal\":\"SIGUSR1\"}",
		      &m, &err),
		AGENT_OK);
	assert_int_equal(m.u.ctr.signo, 10);
	assert_int_equal(m.u.ctr.exec, 3);
	assert_false(m.u.ctr.all);
	agent_msg_free(&m);
	assert_int_equal(parse("{\"type\":\"ctr_wait\",\"cid\":\"c1\",\"timeout_ms\":5}", &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctr.timeout_ms, 5);
	agent_msg_free(&m);
	assert_int_equal(parse("{\"type\":\"ctr_start\",\"cid\":\"c1\",\"exec\":4294967295}", &m,
			       &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctr.exec, 4294967295u);
	agent_msg_free(&m);
	assert_int_equal(parse(start, &m, &err), AGENT_OK);
	assert_int_equal(m.u.ctr.exec, 0);
	agent_msg_free(&m);
	assert_int_equal(parse("{\"type\":\"ctr_delete\",\"cid\":\"c1\"}", &m, &err), AGENT_OK);
	assert_string_equal(m.u.ctr.cid, "c1");
	agent_msg_free(&m);

	refuse("{\"type\":\"ctr_stdio\",\"cid\":\"c1\"}", AGENT_E_MISSING_FIELD, "'stream'");
	refuse("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdall\"}", AGENT_E_BAD_FIELD,
	       "'stream'");
	refuse("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdin\",\"exec\":-1}",
	       AGENT_E_BAD_FIELD, "'exec'");
	refuse("{\"type\":\"ctr_delete\",\"cid\":\"c1\",\"exec\":0}", AGENT_E_UNKNOWN_FIELD,
	       "'exec'");
	refuse("{\"type\":\"ctr_start\",\"cid\":\"c1\",\"exec\":4294967296}", AGENT_E_BAD_FIELD,
	       "'exec'");
	refuse("{\"type\":\"ctr_start\"}", AGENT_E_MISSING_FIELD, "'cid'");
	refuse("{\"type\":\"ctr_signal\",\"cid\":\"c1\"}", AGENT_E_MISSING_FIELD, "'signal'");
	refuse("{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"signal\":65}", AGENT_E_BAD_FIELD,
	       "'signal'");
	refuse("{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"exec\":2,\"signal\":9,\"all\":true}",
	       AGENT_E_BAD_FIELD, "exec 0 only");
	refuse("{\"type\":\"ctr_update\",\"cid\":\"c1\"}", AGENT_E_MISSING_FIELD, "pids_max");
	refuse("{\"type\":\"ctr_update\",\"cid\":\"c1\",\"pids_max\":4194305}", AGENT_E_BAD_FIELD,
	       "pids_max");
	refuse("{\"type\":\"ctr_resize\",\"cid\":\"c1\",\"rows\":5}", AGENT_E_MISSING_FIELD,
	       "'cols'");
	refuse("{\"type\":\"ctr_wait\",\"cid\":\"c1\",\"timeout_ms\":604800001}", AGENT_E_BAD_FIELD,
	       "'timeout_ms'");
	refuse("{\"type\":\"ctr_delete\",\"cid\":\"\"}", AGENT_E_BAD_FIELD, "'cid'");
	/* Requests only: none is valid on an attached stream or in an upload. */
	assert_int_equal(agent_msg_parse_line(start, strlen(start), AGENT_CTX_ATTACHED, &m, &err),
			 AGENT_E_UNEXPECTED_TYPE);
}

/* What the host's encoders build, the agent's parser reads back whole. */
static void test_encode_roundtrip(void **state)
{
	const char *opts[] = { "rbind", "ro", NULL };
	const char *args[] = { "sh", "-c", "x", NULL };
	const char *env[] = { "PATH=/bin", NULL };
	uint32_t groups[] = { 5, 4294967294u };
	struct agent_sysctl sysctl[] = { { "net.ipv4.ip_forward", "1" }, { "kernel/msgmax", "" } };
	const char *masked[] = { "/proc/kcore", NULL };
	struct agent_ctr_mount mounts[] = {
		{ .destination = "/proc", .type = AGENT_MNT_PROC },
		{ .destination = "/etc/hosts",
		  .type = AGENT_MNT_BIND,
		  .options = opts,
		  .optc = 2,
		  .share = "b",
		  .source = "ro/0" },
	};
	struct agent_ctr_create in = {
		.cid = "ctr-1",
		.root_share = "r",
		.root_source = "pod-c/root",
		.root_readonly = true,
		.mounts = mounts,
		.nmounts = 2,
		.proc = { .args = args,
			  .argc = 3,
			  .env = env,
			  .envc = 1,
			  .cwd = "/w",
			  .uid = 7,
			  .gid = 8,
			  .groups = groups,
			  .ngroups = 2,
			  .umask = 027,
			  .terminal = true,
			  .rows = 30,
			  .cols = 100,
			  .privs = { .rlimits = { { RLIMIT_NOFILE, 10, 20 },
						  { RLIMIT_CORE, 0, AGENT_RLIMIT_MAX } },
				     .nrlimits = 2,
				     .has_caps = true,
				     .caps = { [AGENT_CAP_BOUNDING] = 0x1ffffffffffull,
					       [AGENT_CAP_AMBIENT] = 1ull << 40 },
				     .no_new_privileges = true,
				     .has_oom_score_adj = true,
				     .oom_score_adj = -1000 } },
		.hostname = "box",
		.sysctl = sysctl,
		.nsysctl = 2,
		.masked = masked,
		.nmasked = 1,
		.readonly = masked,
		.nreadonly = 1,
		.pids_max = 42,
	};
	struct agent_ctr_req req = { .cid = "ctr-1", .exec = 7, .stream = AGENT_CTR_STDERR };
	struct agent_msg m;
	struct agent_err err;
	json_t *o = agent_ctr_create_encode(&in);
	const struct agent_ctr_create *c = &m.u.ctr_create;

	(void)state;
	assert_non_null(o);
	assert_int_equal(agent_msg_parse(o, AGENT_CTX_REQUEST, &m, &err), AGENT_OK);
	json_decref(o);
	assert_string_equal(c->cid, "ctr-1");
	assert_string_equal(c->root_source, "pod-c/root");
	assert_int_equal(c->pids_max, 42);
	assert_true(c->root_readonly);
	assert_int_equal(c->nmounts, 2);
	assert_null(c->mounts[0].options);
	assert_string_equal(c->mounts[1].options[1], "ro");
	assert_string_equal(c->mounts[1].source, "ro/0");
	assert_int_equal(c->proc.argc, 3);
	assert_string_equal(c->proc.env[0], "PATH=/bin");
	assert_int_equal(c->proc.groups[1], 4294967294u);
	assert_int_equal(c->proc.umask, 027);
	assert_int_equal(c->proc.cols, 100);
	assert_string_equal(c->hostname, "box");
	assert_memory_equal(&c->proc.privs, &in.proc.privs, sizeof(in.proc.privs));
	assert_int_equal(c->nsysctl, 2);
	assert_string_equal(c->sysctl[1].key, "kernel/msgmax");
	assert_string_equal(c->sysctl[1].value, "");
	assert_string_equal(c->masked[0], "/proc/kcore");
	assert_string_equal(c->readonly[0], "/proc/kcore");
	agent_msg_free(&m);

	for (int t = AGENT_T_CTR_STDIO; t <= AGENT_T_CTR_UPDATE; t++) {
		req.signo = 15;
		/* `all` is exec 0's alone. */
		req.all = t == AGENT_T_CTR_SIGNAL;
		req.exec = req.all ? 0 : 7;
		req.rows = 3;
		req.cols = 4;
		req.timeout_ms = 9;
		req.pids_max = 11;
		o = agent_ctr_req_encode((enum agent_type)t, &req);
		assert_non_null(o);
		if (agent_msg_parse(o, AGENT_CTX_REQUEST, &m, &err) != AGENT_OK)
			fail_msg("%s: %s", agent_type_name((enum agent_type)t), err.msg);
		json_decref(o);
		assert_int_equal(m.type, t);
		assert_string_equal(m.u.ctr.cid, "ctr-1");
		if (t == AGENT_T_CTR_STDIO)
			assert_int_equal(m.u.ctr.stream, AGENT_CTR_STDERR);
		if (t == AGENT_T_CTR_SIGNAL)
			assert_true(m.u.ctr.all && m.u.ctr.signo == 15);
		if (t == AGENT_T_CTR_RESIZE)
			assert_true(m.u.ctr.rows == 3 && m.u.ctr.cols == 4);
		if (t == AGENT_T_CTR_WAIT)
			assert_int_equal(m.u.ctr.timeout_ms, 9);
		if (t == AGENT_T_CTR_UPDATE)
			assert_int_equal(m.u.ctr.pids_max, 11);
		/* Every request but ctr_delete and ctr_update names its exec. */
		assert_int_equal(m.u.ctr.exec,
				 t == AGENT_T_CTR_DELETE || t == AGENT_T_CTR_UPDATE ? 0 : req.exec);
		agent_msg_free(&m);
	}
}

/* 7.9's privileges: the process's rlimits, capabilities, no_new_privileges
 * and oom_score_adj, ctr_create's sysctl and paths; every name checked
 * against the kernel's, every count bounded, each refusal naming its field. */
static void test_create_privileges(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	char *s, *a, big[AGENT_SYSCTL_KEY_MAX + 2];

	(void)state;
	s = create_with_process(
		"\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_NPROC\",\"soft\":1,"
		"\"hard\":2}],\"capabilities\":{\"effective\":[\"CAP_KILL\",\"CAP_KILL\"]},"
		"\"no_new_privileges\":false,\"oom_score_adj\":-5");
	assert_int_equal(parse(s, &m, &err), AGENT_OK);
	free(s);
	assert_int_equal(m.u.ctr_create.proc.privs.rlimits[0].resource, RLIMIT_NPROC);
	assert_int_equal(m.u.ctr_create.proc.privs.rlimits[0].hard, 2);
	assert_true(m.u.ctr_create.proc.privs.has_caps);
	assert_int_equal(m.u.ctr_create.proc.privs.caps[AGENT_CAP_EFFECTIVE], 1u << 5);
	assert_int_equal(m.u.ctr_create.proc.privs.caps[AGENT_CAP_BOUNDING], 0);
	assert_int_equal(m.u.ctr_create.proc.privs.oom_score_adj, -5);
	agent_msg_free(&m);

	refuse_process("\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_X\",\"soft\":1,"
		       "\"hard\":1}]",
		       AGENT_E_BAD_FIELD, "ctr_create process rlimits[0]: 'type' 'RLIMIT_X'");
	refuse_process("\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_AS\",\"soft\":3,"
		       "\"hard\":1}]",
		       AGENT_E_BAD_FIELD, "'soft' 3 is above 'hard' 1");
	refuse_process("\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_AS\",\"soft\":1,"
		       "\"hard\":1},{\"type\":\"RLIMIT_AS\",\"soft\":1,\"hard\":1}]",
		       AGENT_E_BAD_FIELD, "RLIMIT_AS is given twice");
	refuse_process("\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_AS\",\"soft\":1,"
		       "\"hard\":1,\"x\":1}]",
		       AGENT_E_UNKNOWN_FIELD, "'x'");
	refuse_process("\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_AS\",\"soft\":-1,"
		       "\"hard\":1}]",
		       AGENT_E_BAD_FIELD, "soft");
	a = repeat("{\"type\":\"RLIMIT_AS\",\"soft\":1,\"hard\":1}", AGENT_CTR_RLIMITS_MAX + 1);
	assert_true(asprintf(&s, "\"args\":[\"sh\"],\"rlimits\":%s", a) > 0);
	refuse_process(s, AGENT_E_TOO_LARGE, "'rlimits' has 17 entries");
	free(s);
	free(a);
	refuse_process("\"args\":[\"sh\"],\"capabilities\":{\"bounding\":[\"CAP_NOPE\"]}",
		       AGENT_E_BAD_FIELD, "'bounding[0]' must be a capability");
	refuse_process("\"args\":[\"sh\"],\"capabilities\":{\"ambient\":[41]}", AGENT_E_BAD_FIELD,
		       "'ambient[0]' must be a capability");
	refuse_process("\"args\":[\"sh\"],\"capabilities\":{\"all\":[]}", AGENT_E_UNKNOWN_FIELD,
		       "'all'");
	a = repeat("\"CAP_KILL\"", AGENT_CTR_CAPS_MAX + 1);
	assert_true(asprintf(&s, "\"args\":[\"sh\"],\"capabilities\":{\"permitted\":%s}", a) > 0);
	refuse_process(s, AGENT_E_TOO_LARGE, "'permitted' has 65 entries");
	free(s);
	free(a);
	refuse_process("\"args\":[\"sh\"],\"no_new_privileges\":1", AGENT_E_BAD_FIELD,
		       "no_new_privileges");
	refuse_process("\"args\":[\"sh\"],\"oom_score_adj\":-1001", AGENT_E_BAD_FIELD,
		       "'oom_score_adj' must be an integer from -1000 to 1000");

	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"sysctl\":{\"../x\":\"1\"}}",
	       AGENT_E_BAD_FIELD, "sysctl '../x' is not a sysctl name");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"sysctl\":{\"net.x\":[]}}",
	       AGENT_E_BAD_FIELD, "sysctl 'net.x' must be a string");
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_true(asprintf(&s,
			     "{\"type\":\"ctr_create\"," MIN_CREATE
			     ",\"process\":{\"args\":[\"sh\"]},\"sysctl\":{\"%s\":\"1\"}}",
			     big) > 0);
	refuse(s, AGENT_E_BAD_FIELD, "is not a sysctl name");
	free(s);
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"masked_paths\":[\"/a/../b\"]}",
	       AGENT_E_BAD_FIELD, "'masked_paths[0]' must be an absolute path");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"readonly_paths\":[\"proc\"]}",
	       AGENT_E_BAD_FIELD, "'readonly_paths[0]' must be an absolute path");
	a = repeat("\"/a\"", AGENT_CTR_PATHS_MAX + 1);
	assert_true(asprintf(&s,
			     "{\"type\":\"ctr_create\"," MIN_CREATE
			     ",\"process\":{\"args\":[\"sh\"]},\"readonly_paths\":%s}",
			     a) > 0);
	refuse(s, AGENT_E_TOO_LARGE, "'readonly_paths' has 257 entries");
	free(s);
	free(a);
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"rules\":[]}}",
	       AGENT_E_MISSING_FIELD, "default_action");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"notify\"}}",
	       AGENT_E_BAD_FIELD, "'default_action' must be allow, errno");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"allow\",\"rules\":[{\"nr\":1024,"
	       "\"action\":\"allow\"}]}}",
	       AGENT_E_BAD_FIELD, "ctr_create seccomp rules[0]: 'nr'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"allow\",\"rules\":[{\"nr\":1,"
	       "\"action\":\"allow\",\"args\":[{\"index\":6,\"op\":\"eq\",\"value\":0}]}]}}",
	       AGENT_E_BAD_FIELD, "args[0]: 'index'");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"allow\",\"rules\":[{\"nr\":1,"
	       "\"action\":\"allow\",\"args\":[{\"index\":0,\"op\":\"about\",\"value\":0}]}]}}",
	       AGENT_E_BAD_FIELD, "'op' must be eq, ne");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"errno\",\"default_errno\":4096}}",
	       AGENT_E_BAD_FIELD, "default_errno");
	refuse("{\"type\":\"ctr_create\"," MIN_CREATE ",\"process\":{\"args\":[\"sh\"]},"
	       "\"seccomp\":{\"default_action\":\"allow\",\"flags\":[\"tsync\"]}}",
	       AGENT_E_BAD_FIELD, "'flags[0]' must be \"log\" or \"spec_allow\"");
	assert_true(agent_sysctl_key_valid("net.ipv4.conf.all.rp_filter"));
	assert_true(agent_sysctl_key_valid("kernel/shmmax"));
	assert_false(agent_sysctl_key_valid(".net"));
	assert_false(agent_sysctl_key_valid("net."));
	assert_false(agent_sysctl_key_valid("net x"));
	assert_false(agent_sysctl_key_valid(""));
	assert_int_equal(agent_cap_parse("CAP_CHECKPOINT_RESTORE"), 40);
	assert_null(agent_cap_name(41));
	assert_string_equal(agent_rlimit_name(RLIMIT_RTTIME), "RLIMIT_RTTIME");
}

/* ctr_exec: a number the host chose (never the init's 0) and ctr_create's
 * process object with every one of its rules; the host's encoding reads
 * back whole. */
static void test_exec(void **state)
{
	const char *args[] = { "sh", "-c", "echo $$", NULL };
	const char *env[] = { "PATH=/bin", NULL };
	uint32_t groups[] = { 10 };
	struct agent_ctr_exec in = {
		.cid = "c-1",
		.exec = 4294967295u,
		.proc = { .args = args,
			  .argc = 3,
			  .env = env,
			  .envc = 1,
			  .cwd = "/tmp",
			  .uid = 1000,
			  .gid = 1001,
			  .groups = groups,
			  .ngroups = 1,
			  .umask = 077,
			  .terminal = true,
			  .rows = 50,
			  .cols = 200 },
	};
	struct agent_msg m;
	struct agent_err err;
	const struct agent_ctr_exec *x = &m.u.ctr_exec;
	json_t *o;

	(void)state;
	assert_int_equal(parse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,"
			       "\"process\":{\"args\":[\"sh\"]}}",
			       &m, &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_CTR_EXEC);
	assert_string_equal(x->cid, "c1");
	assert_int_equal(x->exec, 1);
	assert_int_equal(x->proc.argc, 1);
	assert_null(x->proc.args[1]);
	assert_int_equal(x->proc.envc, 0);
	assert_null(x->proc.env[0]);
	assert_string_equal(x->proc.cwd, "/");
	assert_int_equal(x->proc.umask, AGENT_CTR_UMASK_DEFAULT);
	assert_false(x->proc.terminal);
	agent_msg_free(&m);

	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":0,\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_BAD_FIELD, "'exec'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":4294967296,"
	       "\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_BAD_FIELD, "'exec'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":\"1\",\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_BAD_FIELD, "'exec'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_MISSING_FIELD, "'exec'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1}", AGENT_E_MISSING_FIELD,
	       "'process'");
	refuse("{\"type\":\"ctr_exec\",\"exec\":1,\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_MISSING_FIELD, "'cid'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"..\",\"exec\":1,\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_BAD_FIELD, "'cid'");
	/* The process object's rules are ctr_create's. */
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,\"process\":{\"args\":[]}}",
	       AGENT_E_BAD_FIELD, "'args'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,"
	       "\"process\":{\"args\":[\"sh\"],\"rows\":3}}",
	       AGENT_E_BAD_FIELD, "\"terminal\": true");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,"
	       "\"process\":{\"args\":[\"sh\"],\"env\":[\"=x\"]}}",
	       AGENT_E_BAD_FIELD, "'env[0]'");
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,"
	       "\"process\":{\"args\":[\"sh\"],\"hostname\":\"h\"}}",
	       AGENT_E_UNKNOWN_FIELD, "'hostname'");
	/* An exec joins the container: it has no root or mounts of its own. */
	refuse("{\"type\":\"ctr_exec\",\"cid\":\"c1\",\"exec\":1,\"rootfs\":{\"share\":\"r\"},"
	       "\"process\":{\"args\":[\"sh\"]}}",
	       AGENT_E_UNKNOWN_FIELD, "'rootfs'");

	o = agent_ctr_exec_encode(&in);
	assert_non_null(o);
	assert_int_equal(agent_msg_parse(o, AGENT_CTX_REQUEST, &m, &err), AGENT_OK);
	json_decref(o);
	assert_int_equal(m.type, AGENT_T_CTR_EXEC);
	assert_string_equal(x->cid, "c-1");
	assert_int_equal(x->exec, 4294967295u);
	assert_int_equal(x->proc.argc, 3);
	assert_string_equal(x->proc.args[2], "echo $$");
	assert_string_equal(x->proc.env[0], "PATH=/bin");
	assert_string_equal(x->proc.cwd, "/tmp");
	assert_true(x->proc.uid == 1000 && x->proc.gid == 1001);
	assert_true(x->proc.ngroups == 1 && x->proc.groups[0] == 10);
	assert_int_equal(x->proc.umask, 077);
	assert_true(x->proc.terminal && x->proc.rows == 50 && x->proc.cols == 200);
	agent_msg_free(&m);
}

/* A reply line is exactly `want` (lines are not NUL-terminated). */
static void line_is(struct agent_line *l, const char *want)
{
	if (l->len != strlen(want) || memcmp(l->data, want, l->len) != 0)
		fail_msg("line '%.*s', want '%s'", (int)l->len, l->data, want);
	agent_line_free(l);
}

static void test_lines(void **state)
{
	struct agent_line l;
	struct agent_ctr_exit e = { .cid = "c1", .pid = 231, .exit_code = 7 };

	(void)state;
	assert_int_equal(agent_line_ctr_created(&l, "c1", 0, 231), 0);
	line_is(&l, "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":231}\n");
	assert_int_equal(agent_line_ctr_created(&l, "c1", 4294967295u, 240), 0);
	line_is(&l, "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"exec\":4294967295,\"pid\":240}\n");
	assert_int_equal(agent_line_ctr_exit(&l, &e), 0);
	line_is(&l,
		"{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231,\"exit_code\":7,\"signal\":null}\n");
	e.exit_code = -1;
	e.signo = 9;
	e.exec = 4294967295u;
	assert_int_equal(agent_line_ctr_exit(&l, &e), 0);
	line_is(&l,
		"{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":4294967295,\"pid\":231,\"exit_code\":null,\"signal\":9}\n");
}

static void test_mount_options(void **state)
{
	unsigned long f;

	(void)state;
	assert_int_equal(agent_mount_option("ro", &f), AGENT_MOPT_SET);
	assert_int_equal(f, MS_RDONLY);
	assert_int_equal(agent_mount_option("rw", &f), AGENT_MOPT_CLEAR);
	assert_int_equal(f, MS_RDONLY);
	assert_int_equal(agent_mount_option("strictatime", &f), AGENT_MOPT_SET);
	assert_int_equal(f, MS_STRICTATIME);
	assert_int_equal(agent_mount_option("atime", &f), AGENT_MOPT_CLEAR);
	assert_int_equal(f, MS_NOATIME);
	assert_int_equal(agent_mount_option("rbind", &f), AGENT_MOPT_RBIND);
	assert_int_equal(agent_mount_option("bind", &f), AGENT_MOPT_BIND);
	assert_int_equal(agent_mount_option("rslave", &f), AGENT_MOPT_PROPAGATION);
	assert_int_equal(agent_mount_option("newinstance", &f), AGENT_MOPT_DATA);
	assert_int_equal(f, 0);
	assert_int_equal(agent_mount_option("mode=755", &f), AGENT_MOPT_DATA);
	assert_int_equal(agent_mount_option("RO", &f), AGENT_MOPT_DATA);
	assert_string_equal(agent_mount_type_name(AGENT_MNT_CGROUP2), "cgroup2");
	assert_null(agent_mount_type_name(AGENT_MNT_TYPE_COUNT));
	assert_int_equal(agent_mount_type_parse("bind"), AGENT_MNT_BIND);
	assert_int_equal(agent_mount_type_parse("Bind"), -1);
	assert_string_equal(agent_ctr_stream_name(AGENT_CTR_STDIN), "stdin");
	assert_null(agent_ctr_stream_name(AGENT_CTR_STREAMS));
	assert_int_equal(agent_ctr_stream_parse("stderr"), AGENT_CTR_STDERR);
	assert_int_equal(agent_ctr_stream_parse(""), -1);
}

static void test_validators(void **state)
{
	(void)state;
	assert_true(agent_cid_valid("a"));
	assert_true(agent_cid_valid("..."));
	assert_false(agent_cid_valid(""));
	assert_false(agent_cid_valid("."));
	assert_false(agent_cid_valid(".."));
	assert_false(agent_cid_valid("a b"));
	assert_false(agent_cid_valid("\xc3\xa9"));
	assert_true(agent_share_tag_valid("r"));
	assert_true(agent_share_tag_valid("012345678901234567890123456789012345"));
	assert_false(agent_share_tag_valid("0123456789012345678901234567890123456"));
	assert_false(agent_share_tag_valid(""));
	assert_false(agent_share_tag_valid("a,b"));
	assert_false(agent_share_tag_valid("a\tb"));
	assert_false(agent_share_tag_valid("a\x7f"));
}

/* Every container request the document shows parses as it is shown. */
static void test_documented_requests(void **state)
{
	FILE *fp = fopen("docs/agent-protocol.md", "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int seen = 0;

	(void)state;
	if (!fp)
		skip(); /* run from outside the checkout */
	while ((n = getline(&line, &cap, fp)) > 0) {
		struct agent_msg m;
		struct agent_err err;

		if (strncmp(line, "> {\"type\":\"ctr_", 15) != 0)
			continue;
		if (agent_msg_parse_line(line + 2, (size_t)n - 3, AGENT_CTX_REQUEST, &m, &err))
			fail_msg("docs/agent-protocol.md: %s  is refused: %s", line, err.msg);
		agent_msg_free(&m);
		seen++;
	}
	free(line);
	fclose(fp);
	assert_true(seen >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_documented_example),
		cmocka_unit_test(test_create_defaults),
		cmocka_unit_test(test_create_top_level_refused),
		cmocka_unit_test(test_create_process_refused),
		cmocka_unit_test(test_create_mounts_refused),
		cmocka_unit_test(test_create_near_misses_pass),
		cmocka_unit_test(test_create_privileges),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_mount_options),
		cmocka_unit_test(test_validators),
		cmocka_unit_test(test_documented_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

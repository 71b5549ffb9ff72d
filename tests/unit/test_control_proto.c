/*
 * control_proto: kiln-vmm's control socket codec, both directions. Every
 * command and its arguments parse exactly; anything else is refused with
 * a reason; reply messages are valid JSON strings whatever they hold. The
 * client's side: control_request() refuses what the server would misread
 * and what it builds control_parse() reads back as the same command;
 * control_reply_parse() accepts replies only in their documented shape.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vmm/control/control_proto.h"
#include "api/kilnd/core/firewall_spec.h"
#include "tests/unit/json_load.h"

static int parse(const char *in, struct control_cmd *c, struct err *why)
{
	static char line[CONTROL_LINE_MAX];

	snprintf(line, sizeof(line), "%s", in);
	return control_parse(line, c, why);
}

static void test_simple_commands(void **state)
{
	struct control_cmd c;
	struct err why = { { 0 } };

	(void)state;
	assert_int_equal(parse("pause", &c, &why), 0);
	assert_int_equal(c.op, CTL_PAUSE);
	assert_int_equal(parse("resume", &c, &why), 0);
	assert_int_equal(c.op, CTL_RESUME);
	assert_int_equal(parse("status\r", &c, &why), 0);
	assert_int_equal(c.op, CTL_STATUS);
}

static void test_snapshot_arguments(void **state)
{
	struct control_cmd c;
	struct err why = { { 0 } };

	(void)state;
	assert_int_equal(parse("snapshot /var/lib/kiln/a b", &c, &why), 0);
	assert_int_equal(c.op, CTL_SNAPSHOT);
	assert_int_equal(c.compress, 0);
	assert_string_equal(c.dir, "/var/lib/kiln/a b");
	assert_int_equal(parse("snapshot --compress /s", &c, &why), 0);
	assert_int_equal(c.compress, 1);
	assert_string_equal(c.dir, "/s");
	assert_int_equal(parse("snapshot", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "needs a directory"));
	assert_int_equal(parse("snapshot --compress ", &c, &why), -EINVAL);
	assert_int_equal(parse("snapshot rel/dir", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "absolute"));
	assert_null(c.base);

	/* --base NAME: a sibling's name, before the directory. */
	assert_int_equal(parse("snapshot --compress --base cp-1 /s/cp 2", &c, &why), 0);
	assert_int_equal(c.compress, 1);
	assert_string_equal(c.base, "cp-1");
	assert_string_equal(c.dir, "/s/cp 2");
	assert_int_equal(parse("snapshot --base a /s", &c, &why), 0);
	assert_string_equal(c.base, "a");
	assert_int_equal(parse("snapshot --base /s", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "needs a directory"));
	assert_int_equal(parse("snapshot --base  /s", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "sibling directory's name"));
	assert_int_equal(parse("snapshot --base ../x /s", &c, &why), -EINVAL);
	assert_int_equal(parse("snapshot --base "
			       "0123456789012345678901234567890123456789012345678901234567890123 /s",
			       &c, &why),
			 -EINVAL);
	/* --compress after --base is a relative directory, refused. */
	assert_int_equal(parse("snapshot --base a --compress /s", &c, &why), -EINVAL);
}

static void test_refusals(void **state)
{
	struct control_cmd c;
	struct err why = { { 0 } };

	(void)state;
	assert_int_equal(parse("", &c, &why), -EINVAL);
	assert_int_equal(parse("PAUSE", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "unknown command"));
	assert_int_equal(parse("pause now", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "takes no argument"));
	assert_int_equal(parse("snapshot /a\tb", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "control characters"));
	assert_int_equal(parse("resume\x1b[2J", &c, &why), -EINVAL);
	/* DEL is refused like C0, as kilnd refuses it (text_clean_control_at). */
	assert_int_equal(parse("snapshot /a\x7f", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "control characters"));
	assert_int_equal(parse("firewall-set {\"dns\":\x7f[]}", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "control characters"));
	assert_int_equal(parse("pause\x7f", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "control characters"));
}

static void test_error_reply_is_json(void **state)
{
	const char *msgs[] = { "plain", "quote \" and \\ backslash", "tab\tnew\nline\x01", "" };
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		json_error_t je;
		size_t n = control_reply_error(buf, sizeof(buf), msgs[i]);
		json_t *j;

		assert_int_equal(n, strlen(buf));
		assert_int_equal(buf[n - 1], '\n');
		j = json_loads(buf, 0, &je);
		assert_non_null(j);
		assert_true(json_is_false(json_object_get(j, "ok")));
		assert_string_equal(json_string_value(json_object_get(j, "error")), msgs[i]);
		json_decref(j);
	}
}

static void test_escape_truncates_safely(void **state)
{
	char small[8], big[600];

	(void)state;
	memset(big, '"', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	/* Never half an escape, always terminated. */
	assert_int_equal(control_json_escape(small, sizeof(small), big), 6);
	assert_string_equal(small, "\\\"\\\"\\\"");
	assert_int_equal(control_json_escape(small, sizeof(small), "\x01"), 6);
	assert_string_equal(small, "\\u0001");
	assert_int_equal(control_json_escape(small, 1, "x"), 0);
	assert_string_equal(small, "");
}

static void test_firewall_commands(void **state)
{
	struct control_cmd c;
	struct err why = { { 0 } };
	static char big[CONTROL_LINE_MAX];

	(void)state;
	assert_int_equal(
		parse("firewall-set {\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-443\"}]}",
		      &c, &why),
		0);
	assert_int_equal(c.op, CTL_FIREWALL_SET);
	assert_string_equal(c.json, "{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-443\"}]}");
	/* The JSON is the rest of the line, spaces and all. */
	assert_int_equal(parse("firewall-set { \"outbound_internet\": true }", &c, &why), 0);
	assert_string_equal(c.json, "{ \"outbound_internet\": true }");
	assert_int_equal(parse("firewall-get", &c, &why), 0);
	assert_int_equal(c.op, CTL_FIREWALL_GET);
	assert_int_equal(parse("firewall-get now", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "takes no argument"));
	assert_int_equal(parse("firewall-set", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "firewall-set needs a rule set"));
	assert_int_equal(parse("firewall-set ", &c, &why), -EINVAL);
	/* One line: a raw newline or tab inside is refused (JSON escapes them). */
	assert_int_equal(parse("firewall-set {\"dns\":\t[]}", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "control characters"));
	/* A whole rule set's worth fits on the line. */
	memset(big, ' ', sizeof(big) - 1);
	memcpy(big, "firewall-set {", 14);
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = 0;
	assert_int_equal(control_parse(big, &c, &why), 0);
	assert_int_equal(strlen(c.json), CONTROL_LINE_MAX - 1 - 13);
	assert_true(CONTROL_LINE_MAX > 256 * 1024);
}

static void test_object_reply(void **state)
{
	json_error_t je;
	json_t *j;
	char *r;

	(void)state;
	r = control_reply_object("{\"rules\":{\"allow\":[]},\"counters\":{\"flows\":3}}");
	assert_non_null(r);
	assert_int_equal(r[strlen(r) - 1], '\n');
	assert_ptr_equal(strchr(r, '\n'), r + strlen(r) - 1); /* one line */
	j = json_loads(r, 0, &je);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(j, "counters"), "flows")),
			 3);
	json_decref(j);
	free(r);
	r = control_reply_object("{}");
	assert_string_equal(r, "{\"ok\":true}\n");
	free(r);
	assert_null(control_reply_object("[1]"));
	assert_null(control_reply_object("{"));
	assert_null(control_reply_object(""));
	assert_null(control_reply_object(NULL));
}

/* Build cmd's line, strip its newline, parse it back. */
static void round_trip(const struct control_cmd *cmd, const char *want)
{
	struct control_cmd back;
	struct err why = { { 0 } };
	char *line;
	size_t len;

	assert_int_equal(control_request(cmd, &line, &len, &why), 0);
	assert_int_equal(len, strlen(line));
	assert_int_equal(line[len - 1], '\n');
	line[len - 1] = '\0';
	assert_string_equal(line, want);
	assert_int_equal(control_parse(line, &back, &why), 0);
	assert_int_equal(back.op, cmd->op);
	if (cmd->op == CTL_SNAPSHOT) {
		assert_int_equal(back.compress, !!cmd->compress);
		assert_string_equal(back.dir, cmd->dir);
		if (cmd->base)
			assert_string_equal(back.base, cmd->base);
		else
			assert_null(back.base);
	}
	if (cmd->op == CTL_FIREWALL_SET)
		assert_string_equal(back.json, cmd->json);
	if (cmd->op == CTL_GRAFT || cmd->op == CTL_UNGRAFT) {
		assert_string_equal(back.tag, cmd->tag);
		assert_string_equal(back.name, cmd->name);
	}
	free(line);
}

static void test_requests_round_trip(void **state)
{
	(void)state;
	round_trip(&(struct control_cmd){ .op = CTL_PAUSE }, "pause");
	/* A directory is ignored by the commands that take none. */
	round_trip(&(struct control_cmd){ .op = CTL_RESUME, .dir = "/ignored", .compress = 1 },
		   "resume");
	round_trip(&(struct control_cmd){ .op = CTL_STATUS }, "status");
	round_trip(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = "/st/sb/a b/cp" },
		   "snapshot /st/sb/a b/cp");
	round_trip(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = "/st/cp", .compress = 1 },
		   "snapshot --compress /st/cp");
	round_trip(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = "/st/c p2", .base = "cp1" },
		   "snapshot --base cp1 /st/c p2");
	round_trip(&(struct control_cmd){ .op = CTL_SNAPSHOT,
					  .dir = "/st/cp2",
					  .base = "c.1",
					  .compress = 1 },
		   "snapshot --compress --base c.1 /st/cp2");
	round_trip(&(struct control_cmd){ .op = CTL_FIREWALL_SET,
					  .json = "{\"dns\":[\"10.0.2.3\"]}" },
		   "firewall-set {\"dns\":[\"10.0.2.3\"]}");
	round_trip(&(struct control_cmd){ .op = CTL_FIREWALL_GET }, "firewall-get");
	round_trip(&(struct control_cmd){ .op = CTL_GRAFT, .tag = "pod", .name = "c1.x_2" },
		   "graft pod c1.x_2");
	round_trip(&(struct control_cmd){ .op = CTL_UNGRAFT, .tag = "pod", .name = "c1" },
		   "ungraft pod c1");
}

static int request(const struct control_cmd *cmd, struct err *why)
{
	char *line = NULL;
	size_t len;
	int r = control_request(cmd, &line, &len, why);

	free(line);
	return r;
}

/* graft and ungraft: a tag and a name, one word each, never a path. */
static void test_graft_words(void **state)
{
	static char name[CONTROL_NAME_MAX + 2];
	struct control_cmd c;
	struct err why = { { 0 } };

	(void)state;
	assert_int_equal(parse("graft pod c1", &c, &why), 0);
	assert_int_equal(c.op, CTL_GRAFT);
	assert_string_equal(c.tag, "pod");
	assert_string_equal(c.name, "c1");
	assert_int_equal(parse("ungraft pod c1", &c, &why), 0);
	assert_int_equal(c.op, CTL_UNGRAFT);
	assert_int_equal(parse("graft pod", &c, &why), -EINVAL);
	assert_non_null(strstr(why.msg, "graft TAG NAME"));
	assert_int_equal(parse("graft", &c, &why), -EINVAL);
	assert_int_equal(parse("graft pod a/b", &c, &why), -EINVAL);
	assert_int_equal(parse("graft pod ..", &c, &why), -EINVAL);
	assert_int_equal(parse("graft pod a b", &c, &why), -EINVAL);
	assert_int_equal(parse("graft p/d a", &c, &why), -EINVAL);
	assert_int_equal(parse("ungraft 0123456789012345678901234567890123456 a", &c, &why),
			 -EINVAL);
	memset(name, 'n', CONTROL_NAME_MAX + 1);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_GRAFT,
							.tag = "pod",
							.name = name },
				 &why),
			 -EINVAL);
	name[CONTROL_NAME_MAX] = '\0';
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_GRAFT,
							.tag = "pod",
							.name = name },
				 &why),
			 0);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_GRAFT, .tag = "pod" }, &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_UNGRAFT,
							.tag = "pod",
							.name = "a\nb" },
				 &why),
			 -EINVAL);
}

static void test_request_refusals(void **state)
{
	static char big[CONTROL_LINE_MAX + 8];
	struct err why = { { 0 } };

	(void)state;
	/* A newline would end the command and start another. */
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT,
							.dir = "/st/cp\nresume" },
				 &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "control character"));
	/* A base the server would split or refuse. */
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT,
							.dir = "/st/cp",
							.base = "a b" },
				 &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "not a directory name"));
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT,
							.dir = "/st/cp",
							.base = "../a" },
				 &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT,
							.dir = "/st/cp",
							.base = "" },
				 &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT,
							.dir = "/st/cp",
							.base = "a\n" },
				 &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = "/a\x1b[2J" },
				 &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = "relative/cp" },
				 &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "absolute"));
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT }, &why), -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = (enum control_op)9 }, &why),
			 -ENOTSUP);
	assert_non_null(strstr(why.msg, "unknown operation"));
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_FIREWALL_SET, .json = "" }, &why),
			 -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_FIREWALL_SET }, &why), -EINVAL);
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_FIREWALL_SET,
							.json = "{}\npause" },
				 &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "control character at byte 2"));
	/* A rule set: up to CONTROL_RULES_MAX, which fits the server's line. */
	memset(big, ' ', CONTROL_RULES_MAX + 1);
	big[CONTROL_RULES_MAX + 1] = '\0';
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_FIREWALL_SET, .json = big },
				 &why),
			 -EINVAL);
	big[CONTROL_RULES_MAX] = '\0';
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_FIREWALL_SET, .json = big },
				 &why),
			 0);
	/* A directory: the line, newline included, within CONTROL_LINE_MAX. */
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = big }, &why),
			 -EINVAL);
	assert_non_null(strstr(why.msg, "too long"));
	big[CONTROL_LINE_MAX - 10] = '\0'; /* "snapshot " + this + '\n': CONTROL_LINE_MAX */
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = big }, &why), 0);
	big[CONTROL_LINE_MAX - 10] = 'a';
	big[CONTROL_LINE_MAX - 9] = '\0';
	assert_int_equal(request(&(struct control_cmd){ .op = CTL_SNAPSHOT, .dir = big }, &why),
			 -EINVAL);
}

static void test_replies(void **state)
{
	struct control_reply r;
	struct err why = { { 0 } };
	char err[256];

	(void)state;
	assert_int_equal(control_reply_parse("{\"ok\":true,\"state\":\"paused\"}", CTL_PAUSE, &r,
					     &why),
			 0);
	assert_true(r.paused);
	assert_int_equal(control_reply_parse("{\"ok\":true,\"state\":\"running\"}", CTL_RESUME, &r,
					     &why),
			 0);
	assert_false(r.paused);
	assert_int_equal(
		control_reply_parse("{\"ok\":true,\"state\":\"running\",\"dir\":\"/s/cp\","
				    "\"memory_bytes\":134217728,\"memory_stored_bytes\":9437184,"
				    "\"state_bytes\":70000,\"disk_bytes\":4096,\"ms\":41.25}",
				    CTL_SNAPSHOT, &r, &why),
		0);
	assert_int_equal(r.memory_bytes, 134217728);
	assert_int_equal(r.memory_stored_bytes, 9437184);
	assert_int_equal(r.state_bytes, 70000);
	assert_int_equal(r.disk_bytes, 4096);
	assert_true(r.ms == 41.25);
	assert_false(r.paused);
	assert_string_equal(r.base, "");
	/* A layered snapshot names its base and its pages. */
	assert_int_equal(control_reply_parse(
				 "{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,"
				 "\"memory_stored_bytes\":0,\"state_bytes\":0,\"disk_bytes\":0,\"ms\":1,"
				 "\"base\":\"cp-1\",\"dirty_pages\":2560}",
				 CTL_SNAPSHOT, &r, &why),
			 0);
	assert_string_equal(r.base, "cp-1");
	assert_int_equal(r.dirty_pages, 2560);
	assert_int_equal(control_reply_parse(
				 "{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,"
				 "\"memory_stored_bytes\":0,\"state_bytes\":0,\"disk_bytes\":0,\"ms\":1,"
				 "\"base\":null,\"dirty_pages\":0}",
				 CTL_SNAPSHOT, &r, &why),
			 0);
	assert_string_equal(r.base, "");
	assert_int_equal(control_reply_parse("{\"ok\":true,\"cut\":3}", CTL_FIREWALL_SET, &r, &why),
			 0);
	assert_int_equal(r.cut, 3);
	assert_null(r.firewall);

	/* kiln-vmm's refusal carries its message: what the server words
	 * (control_reply_error) the client reads back, whatever it holds. */
	control_reply_error(err, sizeof(err), "snapshot: disk \"full\"\n");
	err[strlen(err) - 1] = '\0';
	assert_int_equal(control_reply_parse(err, CTL_SNAPSHOT, &r, &why), -EREMOTEIO);
	assert_string_equal(why.msg, "kiln-vmm: snapshot: disk \"full\"\n");

	static const char *const bad[] = {
		"",
		"ok",
		"[true]",
		"{\"state\":\"running\"}",
		"{\"ok\":1,\"state\":\"running\"}",
		"{\"ok\":true}",
		"{\"ok\":true,\"state\":\"sleeping\"}",
		"{\"ok\":true,\"ok\":true,\"state\":\"running\"}",
		/* a snapshot reply without its sizes, or with nonsense in them */
		"{\"ok\":true,\"state\":\"running\"}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":-1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0,\"ms\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":\"0\",\"ms\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0}",
		/* a base that is no name, or without its page count */
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0,\"ms\":1,\"base\":\"../x\",\"dirty_pages\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0,\"ms\":1,\"base\":7,\"dirty_pages\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0,\"ms\":1,\"base\":\"a\"}",
		/* firewall replies without their fields */
		"{\"ok\":true,\"cut\":-1}",
		"{\"ok\":true}",
		"{\"ok\":true,\"rules\":{}}",
		"{\"ok\":true,\"rules\":[],\"counters\":{}}",
	};
	static const enum control_op ops[] = {
		CTL_STATUS,       CTL_STATUS,       CTL_STATUS,       CTL_STATUS,      CTL_STATUS,
		CTL_STATUS,       CTL_STATUS,       CTL_STATUS,       CTL_SNAPSHOT,    CTL_SNAPSHOT,
		CTL_SNAPSHOT,     CTL_SNAPSHOT,     CTL_SNAPSHOT,     CTL_SNAPSHOT,    CTL_SNAPSHOT,
		CTL_FIREWALL_SET, CTL_FIREWALL_SET, CTL_FIREWALL_GET, CTL_FIREWALL_GET
	};
	_Static_assert(sizeof(bad) / sizeof(bad[0]) == sizeof(ops) / sizeof(ops[0]),
		       "one op per case");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (control_reply_parse(bad[i], ops[i], &r, &why) != -EPROTO)
			fail_msg("accepted '%s'", bad[i]);
		assert_null(r.firewall);
	}
}

/* firewall-get: what the server builds (control_reply_object) the client reads. */
static void test_firewall_get_both_ways(void **state)
{
	struct control_reply r;
	struct err why = { { 0 } };
	char *line = control_reply_object(
		"{\"rules\":{\"dns\":[]},\"counters\":{\"flows_cut\":2}}");

	(void)state;
	assert_non_null(line);
	assert_true(strlen(line) <= control_reply_max(CTL_FIREWALL_GET));
	line[strlen(line) - 1] = '\0';
	assert_int_equal(control_reply_parse(line, CTL_FIREWALL_GET, &r, &why), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.firewall, "counters"),
							    "flows_cut")),
			 2);
	assert_non_null(json_object_get(r.firewall, "rules"));
	json_decref(r.firewall);
	free(line);
	/* The limits: a short reply holds an error of any message; only firewall-get is long. */
	assert_true(control_reply_max(CTL_PAUSE) == CONTROL_SHORT_REPLY_MAX);
	assert_true(control_reply_max(CTL_FIREWALL_SET) == CONTROL_SHORT_REPLY_MAX);
	assert_true(control_reply_max(CTL_FIREWALL_GET) == CONTROL_REPLY_MAX);
	assert_true(CONTROL_LINE_MAX > CONTROL_RULES_MAX + sizeof("firewall-set \n"));
}

/* The firewall lines kilnd sends (the codec's, vmm/control/control_proto.c). */
static char *fw_line(const char *rules, int *r)
{
	struct control_cmd cmd = { .op = rules ? CTL_FIREWALL_SET : CTL_FIREWALL_GET,
				   .json = rules };
	struct err why = { { 0 } };
	char *line;
	size_t len;

	*r = control_request(&cmd, &line, &len, &why);
	if (*r == 0)
		line[len - 1] = '\0';
	return line;
}

static void test_control_firewall_line(void **state)
{
	static char big[CONTROL_RULES_MAX + 2];
	char *line;
	int r;

	(void)state;
	line = fw_line(NULL, &r);
	assert_string_equal(line, "firewall-get");
	free(line);
	line = fw_line("{\"dns\":[\"10.0.2.3\"]}", &r);
	assert_string_equal(line, "firewall-set {\"dns\":[\"10.0.2.3\"]}");
	free(line);
	/* A newline would end the command early and start another. */
	assert_null(fw_line("{}\npause", &r));
	assert_int_equal(r, -EINVAL);
	assert_null(fw_line("", &r));
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_null(fw_line(big, &r));
	big[CONTROL_RULES_MAX] = '\0';
	line = fw_line(big, &r);
	assert_non_null(line);
	free(line);
}

/* A firewall reply through the codec: 0 with *cut / *o, or -1. */
static int fw_reply(const char *line, bool set, size_t *cut, json_t **o, char *why)
{
	struct control_reply rep;
	struct err e = { { 0 } };
	int r = control_reply_parse(line, set ? CTL_FIREWALL_SET : CTL_FIREWALL_GET, &rep, &e);

	snprintf(why, 256, "%.255s", e.msg);

	if (cut)
		*cut = rep.cut;
	if (o)
		*o = rep.firewall;
	return r ? -1 : 0;
}

static void test_control_firewall_reply(void **state)
{
	char why[256];
	json_t *o;
	size_t cut;

	(void)state;
	assert_int_equal(fw_reply("{\"ok\":true,\"cut\":3}", true, &cut, NULL, why), 0);
	assert_int_equal(cut, 3);
	assert_int_equal(fw_reply("{\"ok\":true,\"cut\":-1}", true, &cut, NULL, why), -1);
	assert_int_equal(fw_reply("{\"ok\":true}", true, &cut, NULL, why), -1);
	assert_int_equal(fw_reply("{\"ok\":false,\"error\":\"firewall: allow[0]: bad\"}", true,
				  &cut, NULL, why),
			 -1);
	assert_string_equal(why, "kiln-vmm: firewall: allow[0]: bad");
	assert_int_equal(
		fw_reply("{\"ok\":true,\"rules\":{\"dns\":[]},\"counters\":{\"flows_cut\":2,\"egress\":{\"pass_new\":{\"packets\":5,\"bytes\":9},\"drop_default\":{\"packets\":4,\"bytes\":1}},\"ingress\":{\"pass_flow\":{\"packets\":6,\"bytes\":1}}}}",
			 false, NULL, &o, why),
		0);
	{
		struct fw_totals t = { 0 };
		json_t *v = firewall_view(SANDBOX_NET_PASST, NULL, o);

		firewall_totals_add(o, &t);
		assert_int_equal(t.pass_packets, 11);
		assert_int_equal(t.drop_packets, 4);
		assert_int_equal(t.flows_cut, 2);
		assert_true(json_is_true(json_object_get(v, "running")));
		assert_non_null(json_object_get(json_object_get(v, "counters"), "egress"));
		json_decref(v);
	}
	json_decref(o);
	assert_int_equal(fw_reply("{\"ok\":true,\"rules\":{}}", false, NULL, &o, why), -1);
	assert_null(o);
	assert_int_equal(fw_reply("not json", false, NULL, &o, why), -1);
	/* Not running: the stored rules, counters null. */
	{
		json_t *rules = J("{\"dns\":[\"10.0.2.3\"]}"),
		       *v = firewall_view(SANDBOX_NET_PASST, rules, NULL);

		assert_false(json_is_true(json_object_get(v, "running")));
		assert_true(json_is_null(json_object_get(v, "counters")));
		assert_ptr_equal(json_object_get(v, "rules"), rules);
		json_decref(v);
		json_decref(rules);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_commands),
		cmocka_unit_test(test_snapshot_arguments),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_error_reply_is_json),
		cmocka_unit_test(test_escape_truncates_safely),
		cmocka_unit_test(test_firewall_commands),
		cmocka_unit_test(test_object_reply),
		cmocka_unit_test(test_requests_round_trip),
		cmocka_unit_test(test_request_refusals),
		cmocka_unit_test(test_graft_words),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_firewall_get_both_ways),
		cmocka_unit_test(test_control_firewall_line),
		cmocka_unit_test(test_control_firewall_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

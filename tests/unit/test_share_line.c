/*
 * Unit tests of api/kilnd/core/share_line.c: the lines of a client
 * share (docs/api.md, "Client shares") kilnd checks and writes anew
 * between kiln-vmm (requests) and the client (replies).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/share_line.h"

static int req(const char *line, struct share_req *r, char **canon, char *why)
{
	return share_request_check(line, strlen(line), r, canon, why);
}

static void test_requests_ok_and_canonical(void **state)
{
	static const struct {
		const char *in, *out;
		enum share_op op;
		uint64_t size;
	} cases[] = {
		{ "{\"id\":1,\"op\":\"stat\",\"path\":\"/\"}",
		  "{\"id\":1,\"op\":\"stat\",\"path\":\"/\"}", SHARE_OP_STAT, 0 },
		/* Keys in the protocol's order, spaces gone. */
		{ "{ \"path\" : \"/a/b.txt\", \"op\":\"readdir\", \"id\":4294967295 }",
		  "{\"id\":4294967295,\"op\":\"readdir\",\"path\":\"/a/b.txt\"}", SHARE_OP_READDIR,
		  0 },
		{ "{\"id\":2,\"op\":\"read\",\"path\":\"/f\",\"offset\":10,\"size\":131072}",
		  "{\"id\":2,\"op\":\"read\",\"path\":\"/f\",\"offset\":10,\"size\":131072}",
		  SHARE_OP_READ, 131072 },
		{ "{\"id\":3,\"op\":\"write\",\"path\":\"/f\",\"offset\":0,\"data\":\"aGk=\"}",
		  "{\"id\":3,\"op\":\"write\",\"path\":\"/f\",\"offset\":0,\"data\":\"aGk=\"}",
		  SHARE_OP_WRITE, 2 },
		{ "{\"id\":5,\"op\":\"create\",\"path\":\"/n\",\"mode\":420}",
		  "{\"id\":5,\"op\":\"create\",\"path\":\"/n\",\"mode\":420}", SHARE_OP_CREATE, 0 },
		{ "{\"id\":6,\"op\":\"rename\",\"path\":\"/a\",\"to\":\"/b/c\"}",
		  "{\"id\":6,\"op\":\"rename\",\"path\":\"/a\",\"to\":\"/b/c\"}", SHARE_OP_RENAME,
		  0 },
		{ "{\"id\":7,\"op\":\"truncate\",\"path\":\"/a\",\"size\":0}",
		  "{\"id\":7,\"op\":\"truncate\",\"path\":\"/a\",\"size\":0}", SHARE_OP_TRUNCATE,
		  0 },
		{ "{\"id\":8,\"op\":\"rmdir\",\"path\":\"/...\"}",
		  "{\"id\":8,\"op\":\"rmdir\",\"path\":\"/...\"}", SHARE_OP_RMDIR, 0 },
	};
	char why[SHARE_WHY_MAX], *canon;
	struct share_req r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (req(cases[i].in, &r, &canon, why))
			fail_msg("%s: refused: %s", cases[i].in, why);
		assert_string_equal(canon, cases[i].out);
		assert_int_equal(r.op, cases[i].op);
		assert_int_equal(r.size, cases[i].size);
		free(canon);
	}
}

static void test_requests_refused(void **state)
{
	char name256[300], long_path[4200];
	struct {
		const char *in, *why;
		uint32_t id; /* what req.id says after the refusal */
	} cases[] = {
		{ "", "not a JSON object", 0 },
		{ "[1]", "not a JSON object", 0 },
		{ "{\"id\":1,\"op\":\"stat\",\"path\":\"/\"} x", "not a JSON object", 0 },
		{ "{\"id\":0,\"op\":\"stat\",\"path\":\"/\"}", "'id' is out of range", 0 },
		{ "{\"id\":4294967296,\"op\":\"stat\",\"path\":\"/\"}", "'id' is out of range", 0 },
		{ "{\"id\":\"1\",\"op\":\"stat\",\"path\":\"/\"}", "'id' must be an integer", 0 },
		{ "{\"id\":1,\"id\":2,\"op\":\"stat\",\"path\":\"/\"}", "not a JSON object", 0 },
		{ "{\"id\":9,\"op\":\"chmod\",\"path\":\"/\"}", "op 'chmod' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/\",\"x\":1}", "unknown field 'x'", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/\",\"size\":1}", "unknown field 'size'",
		  9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"a\"}", "'path' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/a/../b\"}", "'path' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/a/./b\"}", "'path' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/a//b\"}", "'path' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/a/\"}", "'path' is not", 9 },
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/..\"}", "'path' is not", 9 },
		/* NUL in a string: the JSON reader refuses it. */
		{ "{\"id\":9,\"op\":\"stat\",\"path\":\"/a\\u0000b\"}", "not a JSON object", 0 },
		{ "{\"id\":9,\"op\":\"read\",\"path\":\"/a\",\"offset\":0,\"size\":0}",
		  "'size' is out of range", 9 },
		{ "{\"id\":9,\"op\":\"read\",\"path\":\"/a\",\"offset\":0,\"size\":131073}",
		  "'size' is out of range", 9 },
		{ "{\"id\":9,\"op\":\"read\",\"path\":\"/a\",\"offset\":-1,\"size\":1}",
		  "'offset' is out of range", 9 },
		{ "{\"id\":9,\"op\":\"read\",\"path\":\"/a\",\"size\":1}", "'offset' must be", 9 },
		{ "{\"id\":9,\"op\":\"write\",\"path\":\"/a\",\"offset\":0,\"data\":\"aGk\"}",
		  "'data' is not padded standard base64", 9 },
		{ "{\"id\":9,\"op\":\"write\",\"path\":\"/a\",\"offset\":0,\"data\":\"a=Gk\"}",
		  "'data' is not padded standard base64", 9 },
		{ "{\"id\":9,\"op\":\"write\",\"path\":\"/a\",\"offset\":0,\"data\":\"a-k=\"}",
		  "'data' is not padded standard base64", 9 },
		{ "{\"id\":9,\"op\":\"create\",\"path\":\"/a\",\"mode\":4096}",
		  "'mode' is out of range", 9 },
		{ "{\"id\":9,\"op\":\"rename\",\"path\":\"/a\",\"to\":\"/\\u00e9/..\"}",
		  "'to' is not", 9 },
		{ name256, "'path' is not", 9 },
		{ long_path, "'path' is not", 9 },
	};
	char why[SHARE_WHY_MAX], *canon;
	struct share_req r;
	size_t n;

	(void)state;
	n = (size_t)snprintf(name256, sizeof(name256), "{\"id\":9,\"op\":\"stat\",\"path\":\"/");
	memset(name256 + n, 'x', 256);
	snprintf(name256 + n + 256, sizeof(name256) - n - 256, "\"}");
	n = (size_t)snprintf(long_path, sizeof(long_path), "{\"id\":9,\"op\":\"stat\",\"path\":\"");
	for (int i = 0; i < 1025; i++)
		n += (size_t)snprintf(long_path + n, sizeof(long_path) - n, "/abc");
	snprintf(long_path + n, sizeof(long_path) - n, "\"}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!req(cases[i].in, &r, &canon, why))
			fail_msg("%.80s: accepted as %s", cases[i].in, canon);
		assert_null(canon);
		if (!strstr(why, cases[i].why) || r.id != cases[i].id)
			fail_msg("%.80s: got '%s' (id %u), want '%s' (id %u)", cases[i].in, why,
				 r.id, cases[i].why, cases[i].id);
	}
}

/* A write of more than SHARE_IO_MAX bytes, and a line too long. */
static void test_requests_bounded(void **state)
{
	size_t big = (SHARE_IO_MAX / 3 + 2) * 4, n;
	char *line = malloc(big + 100), why[SHARE_WHY_MAX], *canon;
	struct share_req r;

	(void)state;
	n = (size_t)sprintf(line,
			    "{\"id\":1,\"op\":\"write\",\"path\":\"/a\",\"offset\":0,\"data\":\"");
	memset(line + n, 'A', big);
	strcpy(line + n + big, "\"}");
	assert_int_equal(req(line, &r, &canon, why), -1);
	assert_non_null(strstr(why, "'data' holds more bytes than allowed"));
	free(line);
	assert_int_equal(share_request_check("{}", SHARE_LINE_MAX, &r, &canon, why), -1);
	assert_non_null(strstr(why, "longer than"));
}

static int reply(const struct share_req *r, const char *line, char **canon, char *why)
{
	return share_reply_check(line, strlen(line), r, canon, why);
}

static void test_replies_ok(void **state)
{
	static const struct {
		struct share_req req;
		const char *in, *out;
	} cases[] = {
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"size\":3,\"type\":\"file\",\"id\":4}",
		  "{\"id\":4,\"type\":\"file\",\"size\":3}" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"dir\",\"size\":0,\"mode\":493,\"mtime\":1.5}",
		  "{\"id\":4,\"type\":\"dir\",\"size\":0,\"mode\":493,\"mtime\":1.5}" },
		{ { 4, SHARE_OP_READDIR, 0 },
		  "{\"id\":4,\"entries\":[{\"type\":\"file\",\"name\":\"a b\"},{\"name\":\"d\",\"type\":\"dir\"}]}",
		  "{\"id\":4,\"entries\":[{\"name\":\"a b\",\"type\":\"file\"},{\"name\":\"d\",\"type\":\"dir\"}]}" },
		{ { 4, SHARE_OP_READ, 3 },
		  "{\"id\":4,\"data\":\"aGk=\"}",
		  "{\"id\":4,\"data\":\"aGk=\"}" },
		{ { 4, SHARE_OP_READ, 3 }, "{\"id\":4,\"data\":\"\"}", "{\"id\":4,\"data\":\"\"}" },
		{ { 4, SHARE_OP_WRITE, 2 }, "{\"id\":4,\"size\":2}", "{\"id\":4,\"size\":2}" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4}", "{\"id\":4}" },
		{ { 4, SHARE_OP_READ, 3 },
		  "{\"id\":4,\"error\":\"ENOENT\"}",
		  "{\"id\":4,\"error\":\"ENOENT\"}" },
		{ { 4, SHARE_OP_RENAME, 0 },
		  "{\"id\":4,\"error\":\"ENAMETOOLONG\"}",
		  "{\"id\":4,\"error\":\"ENAMETOOLONG\"}" },
	};
	char why[SHARE_WHY_MAX], *canon;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (reply(&cases[i].req, cases[i].in, &canon, why))
			fail_msg("%s: refused: %s", cases[i].in, why);
		assert_string_equal(canon, cases[i].out);
		free(canon);
	}
}

static void test_replies_refused(void **state)
{
	static const struct {
		struct share_req req;
		const char *in, *why;
	} cases[] = {
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":5,\"type\":\"file\",\"size\":0}",
		  "id 5 is not" },
		{ { 0, SHARE_OP_STAT, 0 },
		  "{\"id\":5,\"type\":\"file\",\"size\":0}",
		  "id 5 is not" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"link\",\"size\":0}",
		  "'type' must be" },
		{ { 4, SHARE_OP_STAT, 0 }, "{\"id\":4,\"type\":\"file\"}", "'size' must be" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"file\",\"size\":0,\"mode\":65535}",
		  "'mode' is out of range" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"file\",\"size\":0,\"mtime\":\"now\"}",
		  "'mtime' must be" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"file\",\"size\":0,\"mtime\":1e300}",
		  "'mtime' must be" },
		{ { 4, SHARE_OP_STAT, 0 },
		  "{\"id\":4,\"type\":\"file\",\"size\":0,\"uid\":0}",
		  "unknown field 'uid'" },
		{ { 4, SHARE_OP_READDIR, 0 },
		  "{\"id\":4,\"entries\":[{\"name\":\"..\",\"type\":\"file\"}]}",
		  "one path component" },
		{ { 4, SHARE_OP_READDIR, 0 },
		  "{\"id\":4,\"entries\":[{\"name\":\"a/b\",\"type\":\"file\"}]}",
		  "one path component" },
		{ { 4, SHARE_OP_READDIR, 0 },
		  "{\"id\":4,\"entries\":[{\"name\":\"a\",\"type\":\"file\",\"x\":1}]}",
		  "an entry must be" },
		{ { 4, SHARE_OP_READDIR, 0 }, "{\"id\":4,\"entries\":{}}", "'entries' must be" },
		{ { 4, SHARE_OP_READ, 1 },
		  "{\"id\":4,\"data\":\"aGk=\"}",
		  "more bytes than allowed" },
		{ { 4, SHARE_OP_WRITE, 2 }, "{\"id\":4,\"size\":3}", "'size' is out of range" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4,\"size\":3}", "unknown field 'size'" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4,\"error\":\"EAGAIN\"}", "'error' must be" },
		{ { 4, SHARE_OP_UNLINK, 0 },
		  "{\"id\":4,\"error\":\"EIO ENOSYS\"}",
		  "'error' must be" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4,\"error\":\"IO\"}", "'error' must be" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4,\"error\":\"\"}", "'error' must be" },
		{ { 4, SHARE_OP_UNLINK, 0 }, "{\"id\":4,\"error\":5}", "'error' must be" },
		{ { 4, SHARE_OP_UNLINK, 0 },
		  "{\"id\":4,\"error\":\"EIO\",\"size\":1}",
		  "unknown field 'size'" },
	};
	char why[SHARE_WHY_MAX], *canon;
	struct share_req r4 = { 4, SHARE_OP_STAT, 0 };

	(void)state;
	/* Another id than the request's: -2, so the relay keeps the request
	 * waiting (a late answer must not fail the next one). */
	assert_int_equal(reply(&r4, "{\"id\":5,\"type\":\"file\",\"size\":0}", &canon, why), -2);
	assert_int_equal(reply(&r4, "{\"id\":4,\"type\":\"link\",\"size\":0}", &canon, why), -1);
	assert_int_equal(reply(&r4, "{\"type\":\"file\",\"size\":0}", &canon, why), -1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!reply(&cases[i].req, cases[i].in, &canon, why))
			fail_msg("%s: accepted as %s", cases[i].in, canon);
		assert_null(canon);
		if (!strstr(why, cases[i].why))
			fail_msg("%s: got '%s', want '%s'", cases[i].in, why, cases[i].why);
	}
}

static void test_made_lines(void **state)
{
	char *s = share_reply_eio(42);

	(void)state;
	assert_string_equal(s, "{\"id\":42,\"error\":\"EIO\"}");
	free(s);
	s = share_client_error("a \"quote\"\n");
	assert_string_equal(s, "{\"kind\":\"error\",\"message\":\"a \\\"quote\\\"\\n\"}");
	free(s);
}

/* A refusal quotes at most 40 bytes of a hostile key or op: cut inside a
 * character, the reason was not UTF-8, so the client's error line could
 * not be made and the relay dropped the client instead of telling it. */
static void test_refusal_quotes_whole_characters(void **state)
{
	/* "x" and 30 two-byte characters: the 40th byte is the first of
	 * the 20th character. */
	static const char e2[] = "\xc3\xa9";
	char key[256] = "x", line[512], why[SHARE_WHY_MAX], *canon, *msg;
	struct share_req r = { 4, SHARE_OP_UNLINK, 0 };

	(void)state;
	for (int i = 0; i < 30; i++)
		strcat(key, e2);
	snprintf(line, sizeof(line), "{\"id\":4,\"%s\":1}", key);
	assert_int_equal(reply(&r, line, &canon, why), -1);
	assert_non_null(strstr(why, "unknown field 'x"));
	msg = share_client_error(why);
	assert_non_null(msg);
	free(msg);
	snprintf(line, sizeof(line), "{\"id\":4,\"op\":\"%s\",\"path\":\"/\"}", key);
	assert_int_equal(req(line, &r, &canon, why), -1);
	assert_non_null(strstr(why, "op 'x"));
	msg = share_client_error(why);
	assert_non_null(msg);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_ok_and_canonical),
		cmocka_unit_test(test_requests_refused),
		cmocka_unit_test(test_requests_bounded),
		cmocka_unit_test(test_replies_ok),
		cmocka_unit_test(test_replies_refused),
		cmocka_unit_test(test_made_lines),
		cmocka_unit_test(test_refusal_quotes_whole_characters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Template build files as pure logic (api/kilnd/images/buildfile.c): every
 * instruction and both forms of those that have two, continuations,
 * comments and case, the refusals (each naming its line), hostile and
 * huge input, and the step cache keys.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/images/buildfile.h"

static void parse_ok(const char *text, struct buildfile *bf)
{
	struct api_err e = { 0 };

	if (buildfile_parse(text, strlen(text), bf, &e))
		fail_msg("refused: %s\n---\n%s", e.msg, text);
}

/* Refused, with a message that holds part. */
static void parse_bad(const char *text, size_t len, const char *part)
{
	struct buildfile bf;
	struct api_err e = { 0 };

	assert_int_equal(buildfile_parse(text, len, &bf, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	if (!strstr(e.msg, part))
		fail_msg("message '%s' does not name '%s'", e.msg, part);
	assert_null(bf.steps);
}

static void bad(const char *text, const char *part)
{
	parse_bad(text, strlen(text), part);
}

static void test_every_instruction(void **state)
{
	struct buildfile bf;
	const struct bf_step *s;

	(void)state;
	parse_ok("# a template\n"
		 "from minimal\n"
		 "RUN echo hi > /etc/greeting\n"
		 "RUN [\"/bin/sh\", \"-c\", \"exit 0\"]\n"
		 "WORKDIR /srv\n"
		 "COPY --chown=user app/ conf.txt ./\n"
		 "ENV A=1 B=\"two words\" C=x\\ y\n"
		 "env LEGACY some value here\n"
		 "WORKDIR sub\n"
		 "USER 1000\n"
		 "COPY a.txt b\n"
		 "READY --timeout=30 wget -q -O- localhost:8080\n",
		 &bf);
	assert_int_equal(bf.n, 11);
	s = &bf.steps[0];
	assert_int_equal(s->op, BF_FROM);
	assert_int_equal(s->line, 2);
	assert_string_equal(s->arg, "minimal");
	s = &bf.steps[1];
	assert_int_equal(s->op, BF_RUN);
	assert_true(s->shell);
	assert_int_equal(s->argc, 1);
	assert_string_equal(s->argv[0], "echo hi > /etc/greeting");
	s = &bf.steps[2];
	assert_false(s->shell);
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->argv[2], "exit 0");
	s = &bf.steps[4];
	assert_int_equal(s->op, BF_COPY);
	assert_int_equal(s->chown, 1);
	assert_int_equal(s->nsrc, 2);
	assert_string_equal(s->src[0], "app");
	assert_string_equal(s->src[1], "conf.txt");
	assert_string_equal(s->dest, "/srv");
	assert_true(s->dest_dir);
	s = &bf.steps[5];
	assert_int_equal(s->nenv, 3);
	assert_string_equal(s->env_vals[1], "two words");
	assert_string_equal(s->env_vals[2], "x y");
	s = &bf.steps[6];
	assert_int_equal(s->nenv, 1);
	assert_string_equal(s->env_keys[0], "LEGACY");
	assert_string_equal(s->env_vals[0], "some value here");
	assert_string_equal(bf.steps[7].arg, "/srv/sub");
	assert_string_equal(bf.steps[8].arg, "user");
	s = &bf.steps[9];
	assert_string_equal(s->dest, "/srv/sub/b");
	assert_false(s->dest_dir);
	assert_int_equal(s->chown, -1);
	s = &bf.steps[10];
	assert_int_equal(s->op, BF_READY);
	assert_int_equal(s->timeout_s, 30);
	assert_string_equal(s->argv[0], "wget -q -O- localhost:8080");
	/* what sandboxes of the template get */
	assert_string_equal(json_string_value(json_object_get(bf.env, "B")), "two words");
	assert_string_equal(json_string_value(json_object_get(bf.env, "LEGACY")),
			    "some value here");
	assert_string_equal(bf.working_dir, "/srv/sub");
	assert_string_equal(bf.user, "user");
	assert_true(buildfile_step_writes(&bf.steps[1]));
	assert_true(buildfile_step_writes(&bf.steps[4]));
	assert_false(buildfile_step_writes(&bf.steps[5]));
	assert_false(buildfile_step_writes(&bf.steps[10]));
	buildfile_free(&bf);
}

static void test_continuations_comments(void **state)
{
	struct buildfile bf;

	(void)state;
	parse_ok("\n\n   # comment\r\nFROM minimal\r\n"
		 "RUN a \\\n"
		 "  # a comment inside is dropped, as Docker does\n"
		 "  b \\   \n"
		 "  c\n"
		 "\t\n"
		 "rUn last \\",
		 &bf);
	assert_int_equal(bf.n, 3);
	assert_int_equal(bf.steps[0].line, 4);
	assert_int_equal(bf.steps[1].line, 5);
	assert_string_equal(bf.steps[1].argv[0], "a  b  c");
	assert_int_equal(bf.steps[2].line, 10);
	assert_string_equal(bf.steps[2].argv[0], "last");
	buildfile_free(&bf);
	/* READY defaults */
	parse_ok("FROM x\nREADY true", &bf);
	assert_int_equal(bf.steps[1].timeout_s, BUILDFILE_READY_TIMEOUT_DEFAULT);
	assert_null(bf.working_dir);
	assert_null(bf.user);
	assert_int_equal(json_object_size(bf.env), 0);
	buildfile_free(&bf);
}

static void test_refusals(void **state)
{
	(void)state;
	bad("FROM minimal\nRUN true\nADD x /x\n", "line 3: ADD is not supported: use COPY");
	bad("FROM minimal\n\n\nEXPOSE 80\n", "line 4: EXPOSE");
	bad("FROM minimal\nCMD [\"sh\"]\n", "line 2: CMD");
	bad("FROM minimal\nARG V=1\n", "line 2: ARG");
	bad("FROM minimal\nfrobnicate\n", "line 2: unknown instruction 'frobnicate'");
	bad("RUN true\n", "line 1: RUN: the build file must start with FROM");
	bad("FROM a\nFROM b\n", "only one FROM");
	bad("FROM a AS b\n", "build stages");
	bad("FROM --platform=linux/arm64 a\n", "--platform");
	bad("FROM ../etc\n", "not a kiln image or template name");
	bad("FROM\n", "give its argument");
	bad("FROM a\nRUN\n", "give the command");
	bad("FROM a\nRUN --mount=type=cache,target=/x true\n", "--mount");
	bad("FROM a\nRUN [\"a\", 1]\n", "not a string");
	bad("FROM a\nRUN []\n", "JSON array of 1 to");
	bad("FROM a\nRUN [\"a\"\n", "JSON array");
	bad("FROM a\nCOPY x\n", "at least one source");
	bad("FROM a\nCOPY /etc/passwd /x\n", "absolute");
	bad("FROM a\nCOPY ../secret /x\n", "leaves the build context");
	bad("FROM a\nCOPY a/../../b /x\n", "leaves the build context");
	bad("FROM a\nCOPY *.c /src/\n", "globs are not supported");
	bad("FROM a\nCOPY a b /dir\n", "must be a directory ending in '/'");
	bad("FROM a\nCOPY --from=build /x /y\n", "--from");
	bad("FROM a\nCOPY --chown=nobody x /y\n", "two users");
	bad("FROM a\nCOPY \"x /y\n", "not closed");
	bad("FROM a\nENV\n", "NAME=VALUE");
	bad("FROM a\nENV 1X=2\n", "not a variable name");
	bad("FROM a\nENV A=1 B\n", "not NAME=VALUE");
	bad("FROM a\nENV LONELY\n", "has no value");
	bad("FROM a\nUSER nobody\n", "two users");
	bad("FROM a\nWORKDIR a b\n", "one argument");
	bad("FROM a\nREADY --timeout=0 true\n", "--timeout");
	bad("FROM a\nREADY --timeout=99999 true\n", "--timeout");
	bad("FROM a\nREADY --timeout=1x true\n", "--timeout");
	bad("FROM a\nREADY --interval=1 true\n", "only --timeout");
	bad("FROM a\nREADY true\nRUN x\n", "line 3: RUN: READY must be the last");
	bad("FROM a\nREADY true\nREADY x\n", "READY must be the last");
	bad("", "empty");
	bad("# only a comment\n\n", "empty");
}

static void test_hostile(void **state)
{
	size_t big = BUILDFILE_MAX + 1;
	char *s = malloc(big + 1);
	struct buildfile bf;
	size_t o = 0;

	(void)state;
	assert_non_null(s);
	memset(s, 'a', big);
	s[big] = 0;
	parse_bad(s, big, "more than");
	/* a NUL in the middle, invalid UTF-8 */
	parse_bad("FROM a\nRUN x\0y\n", 14, "not UTF-8");
	bad("FROM a\nRUN \xff\xfe\n", "not UTF-8");
	/* too many instructions */
	o = (size_t)sprintf(s, "FROM a\n");
	for (int i = 0; i < BUILDFILE_STEPS_MAX; i++)
		o += (size_t)sprintf(s + o, "RUN %d\n", i);
	parse_bad(s, o, "more than 128 instructions");
	/* too many words */
	o = (size_t)sprintf(s, "FROM a\nCOPY");
	for (int i = 0; i < BUILDFILE_ARGS_MAX + 1; i++)
		o += (size_t)sprintf(s + o, " f%d", i);
	s[o++] = '/';
	parse_bad(s, o, "more than 64 words");
	/* one huge continued line is fine up to the size cap */
	o = (size_t)sprintf(s, "FROM a\nRUN ");
	while (o < BUILDFILE_MAX - 8)
		o += (size_t)sprintf(s + o, "x \\\n");
	s[o++] = 'y';
	assert_int_equal(buildfile_parse(s, o, &bf, &(struct api_err){ 0 }), 0);
	assert_int_equal(bf.n, 2);
	buildfile_free(&bf);
	/* a WORKDIR path too long once joined */
	o = (size_t)sprintf(s, "FROM a\nWORKDIR /");
	memset(s + o, 'd', 4000);
	o += 4000;
	o += (size_t)sprintf(s + o, "\nWORKDIR ");
	memset(s + o, 'e', 200);
	o += 200;
	parse_bad(s, o, "longer than");
	free(s);
}

static void test_keys(void **state)
{
	char k1[BUILDFILE_KEY_LEN + 1], k2[BUILDFILE_KEY_LEN + 1], k3[BUILDFILE_KEY_LEN + 1],
		k4[BUILDFILE_KEY_LEN + 1];
	struct buildfile a, b;

	(void)state;
	buildfile_step_key("", "{\"op\":\"FROM\"}", "sha256:00", k1);
	assert_int_equal(strlen(k1), BUILDFILE_KEY_LEN);
	/* The key templates are cached under: SHA-256 of each field as its
	 * 8-byte little-endian length and bytes (computed apart, with Python's
	 * hashlib), so caches from before stay valid whatever computes it. */
	assert_string_equal(k1, "4b9bc486914ab08ef5bddc0ec913c4fc4edf68cff33ffa53fac2ba9f91d9abcd");
	buildfile_step_key("", "{\"op\":\"FROM\"}", "sha256:00", k2);
	assert_string_equal(k1, k2);
	/* every input counts, and the boundaries between them too */
	buildfile_step_key("", "{\"op\":\"FROM\"}", "sha256:01", k3);
	assert_string_not_equal(k1, k3);
	buildfile_step_key(k1, "ab", "c", k3);
	buildfile_step_key(k1, "a", "bc", k4);
	assert_string_not_equal(k3, k4);
	buildfile_step_key(k1, "abc", NULL, k4);
	buildfile_step_key(k1, "abc", "", k2);
	assert_string_not_equal(k4, k2);
	/* the normalised text ignores spelling the file is free in */
	parse_ok("FROM a\nRUN [\"ls\",\"-l\"]\nENV X=1\nCOPY ./x/ /y/\n", &a);
	parse_ok("from a\nrun   [ \"ls\", \"-l\" ]\nenv X 1\ncopy x /y/\n", &b);
	for (size_t i = 0; i < a.n; i++)
		assert_string_equal(a.steps[i].canon, b.steps[i].canon);
	buildfile_free(&b);
	/* and not what changes the step */
	parse_ok("FROM a\nRUN [\"ls\",\"-la\"]\nENV X=2\nCOPY x /y\n", &b);
	for (size_t i = 1; i < a.n; i++)
		assert_string_not_equal(a.steps[i].canon, b.steps[i].canon);
	buildfile_free(&a);
	buildfile_free(&b);
	/* shell and exec forms differ */
	parse_ok("FROM a\nRUN ls\nRUN [\"ls\"]\n", &a);
	assert_string_not_equal(a.steps[1].canon, a.steps[2].canon);
	buildfile_free(&a);
}

/* The FROM key covers the build sandbox's shape: another cpus, memory or
 * disk is another key, so a cached prefix never forks with a wrong shape. */
static void test_from_shape(void **state)
{
	char in[4][256], k[4][BUILDFILE_KEY_LEN + 1];

	(void)state;
	buildfile_from_input("sha256:ab", 2, 512, 0, in[0], sizeof(in[0]));
	buildfile_from_input("sha256:ab", 1, 512, 0, in[1], sizeof(in[1]));
	buildfile_from_input("sha256:ab", 2, 1024, 0, in[2], sizeof(in[2]));
	buildfile_from_input("sha256:ab", 2, 512, 4096, in[3], sizeof(in[3]));
	assert_string_equal(in[0], "sha256:ab;cpus=2;memory_mib=512;disk_mib=0");
	for (int i = 0; i < 4; i++)
		buildfile_step_key("", "{\"op\":\"FROM\"}", in[i], k[i]);
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			assert_string_not_equal(k[i], k[j]);
}

/* Relative COPY destinations and WORKDIRs resolve against the base's
 * working directory; a hostile or missing one is "/". */
static void test_base_workdir(void **state)
{
	static const char f[] = "FROM a\nCOPY x dst/\nWORKDIR sub\nCOPY y z/\n";
	struct buildfile bf;
	struct api_err e = { 0 };

	(void)state;
	assert_int_equal(buildfile_parse_in(f, sizeof(f) - 1, "/app", &bf, &e), 0);
	assert_string_equal(bf.steps[1].dest, "/app/dst");
	assert_string_equal(bf.steps[2].arg, "/app/sub");
	assert_string_equal(bf.steps[3].dest, "/app/sub/z");
	assert_string_equal(bf.working_dir, "/app/sub");
	buildfile_free(&bf);
	assert_int_equal(buildfile_parse_in(f, sizeof(f) - 1, "/srv/./x/../app/", &bf, &e), 0);
	assert_string_equal(bf.steps[1].dest, "/srv/app/dst");
	buildfile_free(&bf);
	for (size_t i = 0; i < 3; i++) {
		const char *bad[] = { NULL, "relative", "" };

		assert_int_equal(buildfile_parse_in(f, sizeof(f) - 1, bad[i], &bf, &e), 0);
		assert_string_equal(bf.steps[1].dest, "/dst");
		buildfile_free(&bf);
	}
	{
		char longwd[BUILDFILE_PATH_MAX + 8];

		memset(longwd, 'a', sizeof(longwd) - 1);
		longwd[0] = '/';
		longwd[sizeof(longwd) - 1] = '\0';
		assert_int_equal(buildfile_parse_in(f, sizeof(f) - 1, longwd, &bf, &e), 0);
		assert_string_equal(bf.steps[1].dest, "/dst");
		buildfile_free(&bf);
	}
	/* a WORKDIR of its own is absolute: the base's does not matter */
	assert_int_equal(buildfile_parse_in("FROM a\nWORKDIR /w\nCOPY x y/\n", 28, "/app", &bf, &e),
			 0);
	assert_string_equal(bf.steps[2].dest, "/w/y");
	buildfile_free(&bf);
}

static void test_copy_match(void **state)
{
	const char *rel;

	(void)state;
	assert_true(buildfile_copy_match(".", "a/b", &rel));
	assert_string_equal(rel, "a/b");
	assert_true(buildfile_copy_match("app", "app/x/y", &rel));
	assert_string_equal(rel, "x/y");
	assert_true(buildfile_copy_match("app/f.c", "app/f.c", &rel));
	assert_string_equal(rel, "f.c");
	assert_false(buildfile_copy_match("app", "apple", &rel));
	assert_false(buildfile_copy_match("app", "ap", &rel));
	assert_false(buildfile_copy_match("app/x", "app", &rel));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_instruction),
		cmocka_unit_test(test_continuations_comments),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_copy_match),
		cmocka_unit_test(test_from_shape),
		cmocka_unit_test(test_base_workdir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

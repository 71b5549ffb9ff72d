/*
 * agent_env: the environment and program path of a process the agent
 * starts (docs/agent-protocol.md, section 8). The base variables come in a
 * fixed order, `env` replaces, adds and removes them, and the PATH search
 * behaves like execvp() without touching the filesystem.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest-init/agent/agent_env.h"

static void expect_env(char **envp, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		assert_non_null(envp[i]);
		assert_string_equal(envp[i], want[i]);
	}
	assert_null(envp[i]);
}

static void test_base_user(void **state)
{
	struct agent_proc_req req = { .user = AGENT_USER_USER };
	const char *want[] = { "PATH=" AGENT_DEFAULT_PATH,
			       "HOME=/home/user",
			       "USER=user",
			       "LOGNAME=user",
			       "SHELL=/bin/sh",
			       NULL };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	expect_env(envp, want);
	free(envp);
}

static void test_base_root_pty(void **state)
{
	struct agent_proc_req req = { .user = AGENT_USER_ROOT };
	const char *want[] = { "PATH=" AGENT_DEFAULT_PATH,
			       "HOME=/root",
			       "USER=root",
			       "LOGNAME=root",
			       "SHELL=/bin/sh",
			       "TERM=xterm-256color",
			       NULL };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, true, false, &envp), 0);
	expect_env(envp, want);
	assert_string_equal(agent_env_get(envp, "TERM"), "xterm-256color");
	assert_string_equal(agent_env_get(envp, "HOME"), "/root");
	assert_null(agent_env_get(envp, "HOM"));   /* a prefix is not the key */
	assert_null(agent_env_get(envp, "HOME=")); /* nor is key plus '=' */
	free(envp);
}

/* Confined, home is /workspace (the only writable directory it sees),
 * for root too; env still overrides it. */
static void test_base_confined(void **state)
{
	struct agent_env env[] = { { "HOME", "/tmp" } };
	struct agent_proc_req req = { .user = AGENT_USER_ROOT, .confine = true };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	assert_string_equal(agent_env_get(envp, "HOME"), "/workspace");
	assert_string_equal(agent_env_get(envp, "USER"), "root");
	free(envp);
	req.env = env;
	req.envc = 1;
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	assert_string_equal(agent_env_get(envp, "HOME"), "/tmp");
	free(envp);
}

/* With the egress CA installed: its variables after the base ones, before
 * TERM; the request's env replaces or removes each. */
static void test_trust(void **state)
{
	struct agent_env env[] = { { "SSL_CERT_FILE", "/mine.pem" }, { "CURL_CA_BUNDLE", NULL } };
	struct agent_proc_req req = { .user = AGENT_USER_USER };
	const char *want[] = { "PATH=" AGENT_DEFAULT_PATH,
			       "HOME=/home/user",
			       "USER=user",
			       "LOGNAME=user",
			       "SHELL=/bin/sh",
			       "SSL_CERT_FILE=/run/kiln/ca-bundle.pem",
			       "REQUESTS_CA_BUNDLE=/run/kiln/ca-bundle.pem",
			       "CURL_CA_BUNDLE=/run/kiln/ca-bundle.pem",
			       "GIT_SSL_CAINFO=/run/kiln/ca-bundle.pem",
			       "NODE_EXTRA_CA_CERTS=/run/kiln/egress-ca.pem",
			       "TERM=xterm-256color",
			       NULL };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, true, true, &envp), 0);
	expect_env(envp, want);
	free(envp);
	req.env = env;
	req.envc = 2;
	assert_int_equal(agent_env_build(&req, false, true, &envp), 0);
	assert_string_equal(agent_env_get(envp, "SSL_CERT_FILE"), "/mine.pem");
	assert_null(agent_env_get(envp, "CURL_CA_BUNDLE"));
	assert_string_equal(agent_env_get(envp, "REQUESTS_CA_BUNDLE"), "/run/kiln/ca-bundle.pem");
	free(envp);
	/* Without it, none of them. */
	req.envc = 0;
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	assert_null(agent_env_get(envp, "SSL_CERT_FILE"));
	assert_null(agent_env_get(envp, "NODE_EXTRA_CA_CERTS"));
	free(envp);
}

/* Replace in place, remove with null, add at the end; removing an unset key is a no-op. */
static void test_overrides(void **state)
{
	struct agent_env env[] = {
		{ "TERM", "dumb" }, { "HOME", NULL }, { "FOO", "a=b" },
		{ "NOPE", NULL },   { "PATH", "/x" }, { "EMPTY", "" },
	};
	struct agent_proc_req req = { .user = AGENT_USER_USER, .env = env, .envc = 6 };
	const char *want[] = { "PATH=/x",   "USER=user", "LOGNAME=user", "SHELL=/bin/sh",
			       "TERM=dumb", "FOO=a=b",   "EMPTY=",       NULL };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, true, false, &envp), 0);
	expect_env(envp, want);
	free(envp);
}

/* Every variable removed: an empty environment, still NULL-terminated. */
static void test_remove_all(void **state)
{
	struct agent_env env[] = { { "PATH", NULL },
				   { "HOME", NULL },
				   { "USER", NULL },
				   { "LOGNAME", NULL },
				   { "SHELL", NULL } };
	struct agent_proc_req req = { .env = env, .envc = 5 };
	char **envp;

	(void)state;
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	assert_null(envp[0]);
	free(envp);
}

/* The full 1024 entries fit (the parser's limit). */
static void test_many(void **state)
{
	static struct agent_env env[AGENT_ENV_MAX];
	static char keys[AGENT_ENV_MAX][16];
	struct agent_proc_req req = { .env = env, .envc = AGENT_ENV_MAX };
	char **envp;
	size_t n = 0;

	(void)state;
	for (int i = 0; i < AGENT_ENV_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "K%d", i);
		env[i] = (struct agent_env){ keys[i], "v" };
	}
	assert_int_equal(agent_env_build(&req, false, false, &envp), 0);
	while (envp[n])
		n++;
	assert_int_equal(n, 5 + AGENT_ENV_MAX);
	assert_string_equal(envp[n - 1], "K1023=v");
	free(envp);
}

/* ---- PATH search ---- */

/* The fake filesystem: a list of executable paths. */
static bool fake_exec(const char *path, void *ctx)
{
	for (const char *const *p = ctx; *p; p++)
		if (strcmp(*p, path) == 0)
			return true;
	return false;
}

static void test_search_order(void **state)
{
	const char *fs[] = { "/usr/bin/ls", "/bin/ls", NULL };
	char out[64];

	(void)state;
	assert_int_equal(agent_path_search("ls", "/nope:/bin:/usr/bin", "/", fake_exec, fs, out,
					   sizeof(out)),
			 0);
	assert_string_equal(out, "/bin/ls");
	assert_int_equal(agent_path_search("ls", "/usr/bin:/bin", "/", fake_exec, fs, out,
					   sizeof(out)),
			 0);
	assert_string_equal(out, "/usr/bin/ls");
}

/* Not found anywhere: -ENOENT and an empty result. */
static void test_search_not_found(void **state)
{
	const char *fs[] = { NULL };
	char out[64];

	(void)state;
	assert_int_equal(agent_path_search("ls", "/bin:/usr/bin", "/", fake_exec, fs, out,
					   sizeof(out)),
			 -ENOENT);
	assert_string_equal(out, "");
	assert_int_equal(agent_path_search("ls", "", "/w", fake_exec, fs, out, sizeof(out)),
			 -ENOENT);
}

/* No PATH at all: the protocol's default PATH, like execvp's default. */
static void test_search_default_path(void **state)
{
	const char *fs[] = { "/sbin/ip", NULL };
	char out[64];

	(void)state;
	assert_int_equal(agent_path_search("ip", NULL, "/", fake_exec, fs, out, sizeof(out)), 0);
	assert_string_equal(out, "/sbin/ip");
}

/* Empty and relative entries are relative to the child's cwd. */
static void test_search_relative(void **state)
{
	const char *fs[] = { "/w/tool", "/w/bin/tool2", NULL };
	char out[64];

	(void)state;
	assert_int_equal(agent_path_search("tool", "/bin::/usr/bin", "/w", fake_exec, fs, out,
					   sizeof(out)),
			 0);
	assert_string_equal(out, "/w/tool");
	assert_int_equal(agent_path_search("tool", "/bin:", "/w", fake_exec, fs, out, sizeof(out)),
			 0);
	assert_int_equal(agent_path_search("tool2", "bin", "/w", fake_exec, fs, out, sizeof(out)),
			 0);
	assert_string_equal(out, "/w/bin/tool2");
}

/* A name with a slash is taken as it is, checked only for length. */
static void test_search_slash(void **state)
{
	const char *fs[] = { NULL };
	char out[8];

	(void)state;
	assert_int_equal(agent_path_search("./x", "/bin", "/", fake_exec, fs, out, sizeof(out)), 0);
	assert_string_equal(out, "./x");
	assert_int_equal(agent_path_search("/bin/long", "/bin", "/", fake_exec, fs, out,
					   sizeof(out)),
			 -ENAMETOOLONG);
}

/* A candidate longer than the buffer is skipped, not truncated into another path. */
static void test_search_long_candidate(void **state)
{
	const char *fs[] = { "/a/b", "/very/long/directory/b", NULL };
	char out[12];

	(void)state;
	assert_int_equal(agent_path_search("b", "/very/long/directory:/a", "/", fake_exec, fs, out,
					   sizeof(out)),
			 0);
	assert_string_equal(out, "/a/b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_user),
		cmocka_unit_test(test_base_confined),
		cmocka_unit_test(test_base_root_pty),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_trust),
		cmocka_unit_test(test_remove_all),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_search_order),
		cmocka_unit_test(test_search_not_found),
		cmocka_unit_test(test_search_default_path),
		cmocka_unit_test(test_search_relative),
		cmocka_unit_test(test_search_slash),
		cmocka_unit_test(test_search_long_candidate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

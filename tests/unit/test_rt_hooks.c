/*
 * api/runtime/rt_hooks.c: hooks run as real programs (/bin/sh scripts in
 * a temporary directory): the state on stdin, exactly their env, their
 * args with args[0] as argv[0], in order until one fails; a failure's
 * status and output in the message, a timeout that kills what the hook
 * started, a hook that never reads its stdin, a path that cannot run,
 * the network namespace it is given.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/runtime/rt_hooks.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

static char dir[] = "/tmp/test_rt_hooks.XXXXXX";
static struct err e;

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *name)
{
	static char buf[1 << 16];
	char path[128];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	n = fd_io_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_state_env_args(void **state)
{
	char out[128], script[256];
	const char *env[] = { "A=1", "B=two words", NULL };
	struct rt_hook h = { "/bin/sh", NULL, env, 0, 2, 0 };
	const char *sh_args[] = { "hook-argv0", "-c", script, NULL };
	const char *st =
		"{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":42,"
		"\"bundle\":\"/b\"}";

	(void)state;
	snprintf(out, sizeof(out), "%s/seen", dir);
	snprintf(script, sizeof(script),
		 "{ cat; echo; echo \"$0\"; env | grep -v '^PWD=\\|^SHLVL=\\|^_=' | sort; "
		 "ls /proc/self/fd | wc -l; } > %s",
		 out);
	h.args = sh_args;
	h.nargs = 3;
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[0]", st, -1, &e), 0);
	char *seen = slurp("seen");
	assert_non_null(seen);
	/* the state, argv[0] from args[0], exactly the env, fds 0-2 (+ ls's own) */
	char want[512];
	snprintf(want, sizeof(want), "%s\nhook-argv0\nA=1\nB=two words\n4\n", st);
	assert_string_equal(seen, want);
}

static struct rt_hook sh(const char **args, const char *script, int timeout)
{
	args[0] = "sh";
	args[1] = "-c";
	args[2] = script;
	args[3] = NULL;
	return (struct rt_hook){ "/bin/sh", args, NULL, 3, 0, timeout };
}

static void test_failures(void **state)
{
	const char *a[4];
	struct rt_hook h;

	(void)state;
	h = sh(a, "echo boom >&2; echo more; exit 3", 0);
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[1]", "{}", -1, &e), -EIO);
	assert_string_equal(e.msg, "hooks.prestart[1] /bin/sh: exited with status 3: boom?more?");
	h = sh(a, "kill -KILL $$", 0);
	assert_int_equal(rt_hook_run(&h, "hooks.poststop[0]", "{}", -1, &e), -EIO);
	assert_string_equal(e.msg, "hooks.poststop[0] /bin/sh: killed by signal 9");
	h = (struct rt_hook){ "/nonexistent/hook", NULL, NULL, 0, 0, 0 };
	assert_int_equal(rt_hook_run(&h, "hooks.createRuntime[0]", "{}", -1, &e), -ENOENT);
	assert_string_equal(e.msg,
			    "hooks.createRuntime[0] /nonexistent/hook: cannot be executed: "
			    "No such file or directory");
}

/* A hook past its timeout is killed with what it started (its group),
 * and the runtime does not wait for the grandchild's output either. */
static void test_timeout(void **state)
{
	const char *a[4];
	struct rt_hook h = sh(a, "sleep 30 & sleep 30", 1);
	int64_t t0 = mono_ms();

	(void)state;
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[0]", "{}", -1, &e), -ETIMEDOUT);
	assert_string_equal(e.msg, "hooks.prestart[0] /bin/sh: timed out after 1 s");
	assert_true(mono_ms() - t0 < 5000);
}

/* A hook that never reads a large state still ends the run. */
static void test_unread_state(void **state)
{
	const char *a[4];
	struct rt_hook h = sh(a, "exit 0", 0);
	size_t n = 1 << 20;
	char *big = malloc(n + 1);

	(void)state;
	memset(big, 'x', n);
	big[n] = '\0';
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[0]", big, -1, &e), 0);
	free(big);
}

static void test_list_order(void **state)
{
	char s1[160], s2[160], s3[160];
	const char *a1[4], *a2[4], *a3[4];
	struct rt_hook hooks[3];
	struct rt_hook_list l = { hooks, 3 };

	(void)state;
	snprintf(s1, sizeof(s1), "echo one >> %s/order", dir);
	snprintf(s2, sizeof(s2), "echo two >> %s/order; exit 1", dir);
	snprintf(s3, sizeof(s3), "echo three >> %s/order", dir);
	hooks[0] = sh(a1, s1, 0);
	hooks[1] = sh(a2, s2, 0);
	hooks[2] = sh(a3, s3, 0);
	assert_int_equal(rt_hooks_run(&l, "poststart", "{}", -1, &e), -EIO);
	assert_non_null(strstr(e.msg, "hooks.poststart[1] /bin/sh: exited with status 1"));
	assert_string_equal(slurp("order"), "one\ntwo\n");
}

/* A runtime that left its namespace (the shim unshares its own for a
 * pathless `network`) runs the hook in the one it names: the hook sees
 * that namespace, and without it (-1) the runtime's current one. */
static void test_netns(void **state)
{
	const char *a[4];
	char script[160];
	struct stat st;
	struct rt_hook h;
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(home >= 0);
	assert_int_equal(fstat(home, &st), 0);
	if (unshare(CLONE_NEWNET) < 0) {
		close(home);
		skip(); /* not root: nothing to leave */
	}
	snprintf(script, sizeof(script), "[ \"$(readlink /proc/self/ns/net)\" = \"net:[%lu]\" ]",
		 (unsigned long)st.st_ino);
	h = sh(a, script, 0);
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[0]", "{}", home, &e), 0);
	assert_int_equal(rt_hook_run(&h, "hooks.prestart[0]", "{}", -1, &e), -EIO);
	assert_int_equal(setns(home, CLONE_NEWNET), 0);
	close(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_env_args), cmocka_unit_test(test_failures),
		cmocka_unit_test(test_timeout),        cmocka_unit_test(test_unread_state),
		cmocka_unit_test(test_list_order),     cmocka_unit_test(test_netns),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

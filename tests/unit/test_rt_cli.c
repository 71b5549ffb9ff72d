/*
 * api/runtime/rt_cli.c: runc's command line as the engines pass it. The
 * argv vectors are verbatim what conmon (Podman), containerd's runc shim
 * (go-runc; Docker goes through it) and Podman itself run; then every
 * refusal, each with its one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_cli.h"

static struct rt_cmd c;
static struct err e;

#define ARGV(...) ((char *const[]){ "kiln-runtime", __VA_ARGS__ })
#define NARGS(...) ((int)(sizeof((char *const[]){ "kiln-runtime", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(...) rt_cli_parse(NARGS(__VA_ARGS__), ARGV(__VA_ARGS__), &c, &e)

/* A refusal: -EINVAL and a message holding want. */
#define REFUSED(want, ...)                                                    \
	do {                                                                  \
		memset(&e, 0, sizeof(e));                                     \
		assert_int_equal(PARSE(__VA_ARGS__), -EINVAL);                \
		if (!strstr(e.msg, want))                                     \
			fail_msg("message \"%s\" lacks \"%s\"", e.msg, want); \
		assert_null(strchr(e.msg, '\n'));                             \
	} while (0)

static void test_conmon_create(void **state)
{
	(void)state;
	/* conmon 2.1 with Podman's runtime args (runtime_supports_json) */
	assert_int_equal(PARSE("--log-format=json", "--log", "/var/lib/c/userdata/oci-log",
			       "--systemd-cgroup", "create", "--bundle", "/var/lib/c/userdata",
			       "--pid-file", "/run/c/userdata/pidfile", "--no-pivot",
			       "--no-new-keyring", "--console-socket", "/tmp/conmon-term.X/ts",
			       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
			 0);
	assert_int_equal(c.verb, RT_CREATE);
	assert_int_equal(c.g.log_format, RT_LOG_JSON);
	assert_string_equal(c.g.log, "/var/lib/c/userdata/oci-log");
	assert_true(c.g.systemd_cgroup);
	assert_string_equal(c.g.root, RT_ROOT_DEFAULT);
	assert_string_equal(c.bundle, "/var/lib/c/userdata");
	assert_string_equal(c.pid_file, "/run/c/userdata/pidfile");
	assert_string_equal(c.console_socket, "/tmp/conmon-term.X/ts");
	assert_string_equal(c.id,
			    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_int_equal(c.nignored, 2);
	assert_string_equal(c.ignored[0], "no-pivot");
	assert_string_equal(c.ignored[1], "no-new-keyring");
	/* Podman --cgroups=disabled: crun's flag */
	assert_int_equal(PARSE("--cgroup-manager", "disabled", "create", "--bundle", "/b", "x"), 0);
	assert_true(c.g.cgroups_disabled);
	assert_false(c.g.systemd_cgroup);
	assert_string_equal(c.bundle, "/b");
	/* no --bundle: the current directory, as runc */
	assert_int_equal(PARSE("create", "x"), 0);
	assert_string_equal(c.bundle, ".");
	assert_null(c.pid_file);
}

static void test_conmon_exec_restore(void **state)
{
	(void)state;
	assert_int_equal(PARSE("exec", "--pid-file", "/run/c/exec_pid", "--process",
			       "/run/c/exec-process-1", "--detach", "--tty", "--console-socket",
			       "/tmp/s", "ctr1"),
			 0);
	assert_int_equal(c.verb, RT_EXEC);
	assert_true(c.detach && c.tty);
	assert_string_equal(c.process, "/run/c/exec-process-1");
	assert_string_equal(c.id, "ctr1");
	assert_int_equal(c.nargs, 0);
	assert_int_equal(PARSE("exec", "--pid-file", "/p", "--process", "/f", "-d", "ctr1"), 0);
	assert_true(c.detach);
	assert_int_equal(PARSE("restore", "--bundle", "/b", "--pid-file", "/p", "--detach",
			       "--image-path", "/ck", "--work-path", "/b", "--tcp-established",
			       "--file-locks", "--manage-cgroups-mode", "soft", "--lsm-profile",
			       "apparmor:containers-default", "ctr1"),
			 0);
	assert_int_equal(c.verb, RT_RESTORE);
	assert_string_equal(c.image_path, "/ck");
	assert_string_equal(c.work_path, "/b");
	assert_true(c.detach);
	assert_int_equal(c.nignored, 4);
}

static void test_podman_commands(void **state)
{
	(void)state;
	assert_int_equal(PARSE("start", "ctr1"), 0);
	assert_int_equal(c.verb, RT_START);
	assert_int_equal(PARSE("state", "ctr1"), 0);
	assert_int_equal(c.verb, RT_STATE);
	assert_int_equal(PARSE("kill", "ctr1", "15"), 0);
	assert_int_equal(c.signal, SIGTERM);
	assert_false(c.all);
	assert_int_equal(PARSE("kill", "--all", "ctr1", "KILL"), 0);
	assert_true(c.all);
	assert_int_equal(c.signal, SIGKILL);
	assert_int_equal(PARSE("kill", "ctr1"), 0);
	assert_int_equal(c.signal, SIGTERM); /* runc's default */
	assert_int_equal(PARSE("delete", "--force", "ctr1"), 0);
	assert_true(c.force);
	assert_int_equal(PARSE("pause", "ctr1"), 0);
	assert_int_equal(c.verb, RT_PAUSE);
	assert_int_equal(PARSE("resume", "ctr1"), 0);
	assert_int_equal(c.verb, RT_RESUME);
	assert_int_equal(PARSE("update", "--resources", "/tmp/res.json", "ctr1"), 0);
	assert_string_equal(c.update.resources, "/tmp/res.json");
	assert_int_equal(PARSE("checkpoint", "--image-path", "/ck", "--leave-running", "ctr1"), 0);
	assert_true(c.leave_running);
	/* Podman's probe: `RUNTIME checkpoint --help` must succeed */
	assert_int_equal(PARSE("checkpoint", "--help"), 0);
	assert_true(c.help);
	assert_int_equal(c.verb, RT_CHECKPOINT);
	assert_null(c.id);
}

static void test_containerd_shim(void **state)
{
	(void)state;
	/* go-runc: globals, then the command */
	assert_int_equal(PARSE("--root", "/run/containerd/runc/k8s.io", "--log",
			       "/run/containerd/io.containerd.runtime.v2.task/k8s.io/c1/log.json",
			       "--log-format", "json", "--criu", "/usr/sbin/criu",
			       "--rootless=false", "--systemd-cgroup", "create", "--bundle",
			       "/run/containerd/io.containerd.runtime.v2.task/k8s.io/c1",
			       "--pid-file",
			       "/run/containerd/io.containerd.runtime.v2.task/k8s.io/c1/init.pid",
			       "--console-socket", "/tmp/pty123/pty.sock", "--detach", "c1"),
			 0);
	assert_string_equal(c.g.root, "/run/containerd/runc/k8s.io");
	assert_int_equal(c.g.log_format, RT_LOG_JSON);
	assert_true(c.g.systemd_cgroup);
	assert_string_equal(c.pid_file,
			    "/run/containerd/io.containerd.runtime.v2.task/k8s.io/c1/init.pid");
	assert_string_equal(c.id, "c1");
	assert_int_equal(PARSE("--root", "/r", "--debug", "kill", "--all", "c1", "9"), 0);
	assert_true(c.g.debug && c.all);
	assert_int_equal(c.signal, 9);
	assert_int_equal(PARSE("--root", "/r", "exec", "--process", "/tmp/runc-process123",
			       "--detach", "--pid-file", "/run/x/exec1.pid", "c1"),
			 0);
	assert_string_equal(c.pid_file, "/run/x/exec1.pid");
	assert_int_equal(PARSE("--root", "/r", "ps", "--format", "json", "c1"), 0);
	assert_int_equal(c.format, RT_FORMAT_JSON);
	assert_int_equal(c.nargs, 0);
	assert_int_equal(PARSE("--root", "/r", "update", "--resources", "-", "c1"), 0);
	assert_string_equal(c.update.resources, "-");
	assert_int_equal(PARSE("--root", "/r", "list", "--format=json"), 0);
	assert_int_equal(c.verb, RT_LIST);
	assert_int_equal(c.format, RT_FORMAT_JSON);
	assert_int_equal(PARSE("--root", "/r", "features"), 0);
	assert_int_equal(c.verb, RT_FEATURES);
	assert_int_equal(PARSE("--root", "/r", "checkpoint", "--image-path", "/i", "--work-path",
			       "/w", "--leave-running", "--tcp-established", "--ext-unix-sk",
			       "--shell-job", "--file-locks", "--empty-ns", "network", "c1"),
			 0);
	assert_int_equal(c.nignored, 5);
}

static void test_spellings(void **state)
{
	(void)state;
	/* Go's flag package: one dash for a long flag, -f=v, bools with =value */
	assert_int_equal(PARSE("-root=/r", "-debug=false", "create", "-b", "/b", "-pid-file=/p",
			       "x"),
			 0);
	assert_string_equal(c.g.root, "/r");
	assert_false(c.g.debug);
	assert_string_equal(c.bundle, "/b");
	assert_string_equal(c.pid_file, "/p");
	assert_int_equal(PARSE("create", "-b=/b2", "x"), 0);
	assert_string_equal(c.bundle, "/b2");
	/* urfave/cli's reordering: flags after the ID */
	assert_int_equal(PARSE("delete", "x", "--force"), 0);
	assert_true(c.force);
	assert_int_equal(PARSE("kill", "x", "KILL", "-a"), 0);
	assert_true(c.all);
	assert_int_equal(c.signal, SIGKILL);
	assert_int_equal(PARSE("delete", "-f=1", "x"), 0);
	assert_true(c.force);
	/* "--" ends the flags: an ID may start with '-' (runc's rule) */
	assert_int_equal(PARSE("delete", "--", "-x"), 0);
	assert_string_equal(c.id, "-x");
	assert_false(c.force);
	/* a value may start with '-' (Go takes the next argument) */
	assert_int_equal(PARSE("update", "-r", "-", "x"), 0);
	assert_string_equal(c.update.resources, "-");
	assert_int_equal(PARSE("--version"), 0);
	assert_true(c.g.version);
	assert_int_equal(c.verb, RT_NONE);
	assert_int_equal(PARSE("-v"), 0);
	assert_true(c.g.version);
	assert_int_equal(PARSE("help", "create"), 0);
	assert_true(c.g.help && c.help);
	assert_int_equal(c.verb, RT_CREATE);
}

static void test_exec_args(void **state)
{
	(void)state;
	assert_int_equal(PARSE("exec", "-t", "-e", "A=1", "--env", "B=", "-u", "1000:100", "-g",
			       "5", "-g", "6", "--cwd", "/w", "-c", "CAP_NET_RAW", "--no-new-privs",
			       "x", "ls", "-la", "--color"),
			 0);
	assert_true(c.tty && c.no_new_privs && c.has_user);
	assert_int_equal(c.nenv, 2);
	assert_string_equal(c.env[1], "B=");
	assert_int_equal(c.uid, 1000);
	assert_int_equal(c.gid, 100);
	assert_int_equal(c.ngids, 2);
	assert_int_equal(c.gids[1], 6);
	assert_string_equal(c.cwd, "/w");
	assert_int_equal(c.ncaps, 1);
	/* everything after the ID is the command, flags included */
	assert_int_equal(c.nargs, 3);
	assert_string_equal(c.args[0], "ls");
	assert_string_equal(c.args[2], "--color");
	assert_int_equal(PARSE("exec", "x", "--", "sh", "-c", "true"), 0);
	assert_int_equal(c.nargs, 3);
	assert_string_equal(c.args[0], "sh");
	assert_int_equal(PARSE("exec", "-u", "7", "x", "id"), 0);
	assert_int_equal(c.uid, 7);
	assert_int_equal(c.gid, 0);
	assert_int_equal(PARSE("ps", "x", "-ef"), 0);
	assert_int_equal(c.nargs, 1);
	assert_string_equal(c.args[0], "-ef");
	assert_int_equal(PARSE("exec", "--process-label", "l", "--apparmor", "p", "--no-subreaper",
			       "--preserve-fds", "0", "-p", "/f", "x"),
			 0);
	assert_int_equal(c.nignored, 3);
}

static void test_update_fields(void **state)
{
	(void)state;
	assert_int_equal(PARSE("update", "--memory", "536870912", "--cpu-quota", "-1",
			       "--cpu-period", "100000", "--pids-limit", "100", "--cpuset-cpus",
			       "0-1", "--blkio-weight", "300", "x"),
			 0);
	assert_true(c.update.has_memory && c.update.has_cpu_quota && c.update.has_cpu_period);
	assert_int_equal(c.update.memory, 536870912);
	assert_int_equal(c.update.cpu_quota, -1);
	assert_int_equal(c.update.cpu_period, 100000);
	assert_int_equal(c.update.pids_limit, 100);
	assert_string_equal(c.update.cpuset_cpus, "0-1");
	assert_int_equal(c.nignored, 1);
	REFUSED("update --memory \"lots\": want a number of bytes or -1", "update", "--memory",
		"lots", "x");
	REFUSED("--l3-cache-schema: the guest has no Intel RDT", "update", "--l3-cache-schema",
		"L3:0=f", "x");
	REFUSED("--cpu-rt-runtime", "update", "--cpu-rt-runtime", "5", "x");
}

static void test_signals(void **state)
{
	static const struct {
		const char *s;
		int sig;
	} ok[] = {
		{ "TERM", SIGTERM },
		{ "SIGTERM", SIGTERM },
		{ "sigkill", SIGKILL },
		{ "Hup", SIGHUP },
		{ "9", 9 },
		{ "0", 0 },
		{ "64", 64 },
		{ "WINCH", SIGWINCH },
		{ "SIGRTMIN", 34 },
		{ "RTMIN+3", 37 },
		{ "SIGRTMAX-1", 63 },
		{ "rtmax", 64 },
		{ "RTMIN+30", 64 },
		{ "USR1", SIGUSR1 },
		{ "cld", SIGCHLD },
	};
	static const char *const bad[] = { "",
					   "SIG",
					   "65",
					   "-9",
					   "+9",
					   "TERM ",
					   "SIGFOO",
					   "RTMIN+31",
					   "RTMIN-1",
					   "RTMAX+1",
					   "RTMIN+",
					   "0x9",
					   "SIGTERMTERMTERMTERM" };
	int sig;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		sig = -1;
		if (rt_signal_parse(ok[i].s, &sig, &e) != 0 || sig != ok[i].sig)
			fail_msg("signal \"%s\": got %d, want %d", ok[i].s, sig, ok[i].sig);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rt_signal_parse(bad[i], &sig, &e) != -EINVAL)
			fail_msg("signal \"%s\" taken", bad[i]);
		assert_non_null(strstr(e.msg, "kill: unknown signal"));
	}
	REFUSED("kill: unknown signal \"BOGUS\"", "kill", "x", "BOGUS");
}

static void test_refusals(void **state)
{
	(void)state;
	REFUSED("no command given", "--debug");
	REFUSED("unknown command \"frobnicate\"", "frobnicate", "x");
	REFUSED("run: run is create then start", "run", "x");
	REFUSED("events: ", "events", "--stats", "x");
	REFUSED("create: unknown flag \"--frob\" (see 'kiln-runtime create --help')", "create",
		"--frob=1", "x");
	REFUSED("kiln-runtime: unknown flag \"--bundle\" (see 'kiln-runtime --help')", "--bundle",
		"/b", "create", "x");
	REFUSED("create: unknown flag \"---bundle\"", "create", "---bundle", "/b", "x");
	REFUSED("create --preserve-fds 2: descriptors cannot be passed into a VM", "create",
		"--preserve-fds", "2", "x");
	REFUSED("--preserve-fds \"x\": want a number", "create", "--preserve-fds", "x", "x");
	REFUSED("create: flag --pid-file needs a value", "create", "x", "--pid-file");
	REFUSED("create --pid-file is empty", "create", "--pid-file=", "x");
	REFUSED("create: no container ID given", "create", "--bundle", "/b");
	REFUSED("create: unexpected argument \"y\"", "create", "x", "y");
	REFUSED("kill: unexpected argument \"z\"", "kill", "x", "9", "z");
	REFUSED("features: unexpected argument \"x\"", "features", "x");
	REFUSED("invalid container ID format: \"a/b\"", "state", "a/b");
	REFUSED("invalid container ID format: \"..\"", "delete", "..");
	REFUSED("--log-format \"xml\": want text or json", "--log-format", "xml", "state", "x");
	REFUSED("--cgroup-manager \"foo\"", "--cgroup-manager=foo", "state", "x");
	REFUSED("--root is empty", "--root=", "state", "x");
	REFUSED("flag --force takes true or false, not \"yes\"", "delete", "--force=yes", "x");
	REFUSED("checkpoint --pre-dump: pre-dumps are criu's", "checkpoint", "--pre-dump", "x");
	REFUSED("checkpoint --lazy-pages", "checkpoint", "--lazy-pages", "x");
	REFUSED("restore --page-server", "restore", "--page-server", "h:1", "x");
	REFUSED("checkpoint --parent-path: incremental", "checkpoint", "--parent-path", "/p", "x");
	REFUSED("exec --cgroup", "exec", "--cgroup", "sub", "x", "true");
	REFUSED("exec: no command", "exec", "x");
	REFUSED("exec: both --process and a command", "exec", "-p", "/f", "x", "true");
	REFUSED("exec --env \"NOEQUALS\": want NAME=VALUE", "exec", "-e", "NOEQUALS", "x", "true");
	REFUSED("exec --env \"=v\"", "exec", "-e", "=v", "x", "true");
	REFUSED("exec --user \"root\": want UID or UID:GID", "exec", "-u", "root", "x", "true");
	REFUSED("exec --user \"1:\"", "exec", "-u", "1:", "x", "true");
	REFUSED("exec --user \"4294967295\"", "exec", "-u", "4294967295", "x", "true");
	REFUSED("--additional-gids \"-1\"", "exec", "-g", "-1", "x", "true");
	REFUSED("ps --format \"yaml\": want table or json", "ps", "-f", "yaml", "x");
	REFUSED("list --format \"x\"", "list", "--format", "x");
}

/* Lists are bounded: one more than the bound is refused, not stored. */
static void test_bounds(void **state)
{
	int n = 2 + 2 * (RT_CLI_GIDS_MAX + 1) + 2;
	char **argv = calloc((size_t)n + 1, sizeof(char *));
	int k = 0;

	(void)state;
	argv[k++] = "kiln-runtime";
	argv[k++] = "exec";
	for (int i = 0; i <= RT_CLI_GIDS_MAX; i++) {
		argv[k++] = "-g";
		argv[k++] = "1";
	}
	argv[k++] = "x";
	argv[k++] = "true";
	assert_int_equal(rt_cli_parse(k, argv, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--additional-gids is given more than 256 times"));
	/* exactly the bound: the last pair's place holds ID and command */
	k = 2 + 2 * RT_CLI_GIDS_MAX;
	argv[k++] = "x";
	argv[k++] = "true";
	assert_int_equal(rt_cli_parse(k, argv, &c, &e), 0);
	assert_int_equal(c.ngids, RT_CLI_GIDS_MAX);
	free(argv);
}

static void test_usage(void **state)
{
	(void)state;
	assert_string_equal(rt_verb_name(RT_CHECKPOINT), "checkpoint");
	assert_string_equal(rt_verb_name(RT_NONE), "");
	assert_non_null(strstr(rt_cli_usage(RT_KILL), "kill [--all] ID [SIGNAL]"));
	assert_non_null(strstr(rt_cli_usage(RT_NONE), "usage: kiln-runtime"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conmon_create),   cmocka_unit_test(test_conmon_exec_restore),
		cmocka_unit_test(test_podman_commands), cmocka_unit_test(test_containerd_shim),
		cmocka_unit_test(test_spellings),       cmocka_unit_test(test_exec_args),
		cmocka_unit_test(test_update_fields),   cmocka_unit_test(test_signals),
		cmocka_unit_test(test_refusals),        cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

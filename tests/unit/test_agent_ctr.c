/*
 * agent_ctr: the container requests through the agent's real dispatch, on
 * this machine as root (skipped otherwise): each request on a socketpair
 * given to agent_accepted(), the init cloned into a cgroup2 hierarchy of
 * the test's own, its root a bind of this machine's "/" and a scratch
 * directory as the bind share (a fake mount table names both as virtio-fs
 * shares), all in a mount namespace of the test's own.
 *
 * What must hold: stdio connected before the start loses nothing, stdin's
 * EOF reaches the process, stdout and stderr arrive whole and end; the
 * exit comes after them; a stream or a start twice, a stopped container
 * signalled, a pty of a container without a terminal are invalid_state;
 * a missing program is refused in runc's words before anything runs;
 * KILL to all reaches a background job; a created container can be
 * deleted; delete removes the cgroup and the cid. An exec shares the
 * running init's namespaces and has stdio, start, wait and signal of its
 * own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "guest-init/agent/agent.h"

static struct reaper reaper;
static struct shutdown sd;
static struct milestone ms;
static struct agent *agent;
static bool ready; /* root, namespaces and a cgroup2 mount: the tests can run */
static char scratch[64] = "/tmp/agent-ctr.XXXXXX";

static void path_of(char *buf, size_t n, const char *leaf)
{
	snprintf(buf, n, "%s/%s", scratch, leaf);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	char root[128], share[128], cg[128], mi[128], text[512], f[160];
	pthread_t th;

	(void)state;
	if (geteuid() != 0 || !mkdtemp(scratch) || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 0;
	path_of(root, sizeof(root), "root");
	path_of(share, sizeof(share), "share");
	path_of(cg, sizeof(cg), "cg");
	path_of(mi, sizeof(mi), "mountinfo");
	if (mkdir(root, 0755) < 0 || mkdir(share, 0755) < 0 || mkdir(cg, 0755) < 0 ||
	    mount("/", root, NULL, MS_BIND, NULL) < 0 || mount("none", cg, "cgroup2", 0, NULL) < 0)
		return 0;
	snprintf(f, sizeof(f), "%s/f", share);
	write_file(f, "in-share\n");
	snprintf(text, sizeof(text),
		 "1 1 0:1 / %s rw - virtiofs r rw\n2 1 0:2 / %s rw - virtiofs b rw\n", root, share);
	write_file(mi, text);
	assert_int_equal(reaper_init(&reaper), 0);
	assert_int_equal(pthread_create(&th, NULL, reaper_thread, &reaper), 0);
	assert_int_equal(agent_create(&reaper, &sd, &ms, &agent), 0);
	agent->ctrs.mountinfo = strdup(mi);
	agent->ctrs.cgroup_root = strdup(cg);
	ready = true;
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	(void)state;
	if (!ready)
		return 0;
	path_of(p, sizeof(p), "root");
	umount2(p, MNT_DETACH);
	rmdir(p);
	path_of(p, sizeof(p), "cg");
	umount2(p, MNT_DETACH);
	rmdir(p);
	path_of(p, sizeof(p), "share/f");
	unlink(p);
	path_of(p, sizeof(p), "share");
	rmdir(p);
	path_of(p, sizeof(p), "mountinfo");
	unlink(p);
	rmdir(scratch);
	return 0;
}

/* A connection to the agent with `line` sent on it. */
static int conn(const char *line)
{
	struct timeval tv = { .tv_sec = 20 };
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	agent_accepted(agent, sv[1]);
	assert_int_equal(write(sv[0], line, strlen(line)), (ssize_t)strlen(line));
	assert_int_equal(write(sv[0], "\n", 1), 1);
	return sv[0];
}

/* One reply line, without its '\n' (static: the next call overwrites it). */
static const char *reply(int fd)
{
	static char buf[4096];
	size_t n = 0;

	while (n + 1 < sizeof(buf) && read(fd, buf + n, 1) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
	return buf;
}

static const char *ask(const char *line)
{
	int fd = conn(line);
	const char *r = reply(fd);

	close(fd);
	return r;
}

static void expect_prefix(const char *got, const char *want)
{
	if (strncmp(got, want, strlen(want)) != 0)
		fail_msg("reply '%s', want it to start with '%s'", got, want);
}

static void read_to_eof(int fd, char *out, size_t n)
{
	size_t len = 0;
	ssize_t r;

	while (len + 1 < n && (r = read(fd, out + len, n - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
}

static void skip_unless_ready(void)
{
	if (!ready)
		skip(); /* needs root, a mount namespace and a cgroup2 mount */
}

#define CREATE(cid, mounts, process)                                                 \
	"{\"type\":\"ctr_create\",\"cid\":\"" cid "\",\"rootfs\":{\"share\":\"r\"}," \
	"\"mounts\":[" mounts "],\"process\":{" process                              \
	",\"env\":[\"PATH=/usr/bin:/bin\"]},\"hostname\":\"box\"}"

static void test_run_with_stdio(void **state)
{
	int in, out, err;
	char o[512], e[512], cg[160];
	struct stat st;

	(void)state;
	skip_unless_ready();
	expect_prefix(ask(CREATE("c1",
				 "{\"destination\":\"/proc\",\"type\":\"proc\"},{\"destination\":"
				 "\"/mnt\",\"type\":\"bind\",\"share\":\"b\",\"source\":\".\","
				 "\"options\":[\"ro\"]}",
				 "\"args\":[\"sh\",\"-c\",\"read x; echo got $x; echo err >&2; echo "
				 "$$; cat /mnt/f; cat /proc/sys/kernel/hostname; exit 5\"]")),
		      "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":");
	in = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdin\"}");
	assert_string_equal(reply(in), "{\"type\":\"ok\"}");
	out = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdout\"}");
	assert_string_equal(reply(out), "{\"type\":\"ok\"}");
	err = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stderr\"}");
	assert_string_equal(reply(err), "{\"type\":\"ok\"}");
	expect_prefix(ask("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdout\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\"");
	expect_prefix(ask("{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"pty\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\"");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c1\"}"), "{\"type\":\"ok\"}");
	expect_prefix(ask("{\"type\":\"ctr_start\",\"cid\":\"c1\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\"");
	assert_int_equal(write(in, "hi\n", 3), 3);
	assert_int_equal(shutdown(in, SHUT_WR), 0);
	read_to_eof(out, o, sizeof(o));
	read_to_eof(err, e, sizeof(e));
	assert_string_equal(o, "got hi\n1\nin-share\nbox\n");
	assert_string_equal(e, "err\n");
	close(in);
	close(out);
	close(err);
	expect_prefix(ask("{\"type\":\"ctr_wait\",\"cid\":\"c1\"}"),
		      "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c1\"}"),
			       "\"exit_code\":5,\"signal\":null}"));
	expect_prefix(ask("{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"signal\":\"TERM\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_signal: "
		      "container \\\"c1\\\" is not running\"");
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c1\"}"), "{\"type\":\"ok\"}");
	path_of(cg, sizeof(cg), "cg/ctr-c1");
	assert_int_equal(stat(cg, &st), -1);
	expect_prefix(ask("{\"type\":\"ctr_wait\",\"cid\":\"c1\"}"),
		      "{\"type\":\"error\",\"code\":\"not_found\"");
}

/* The host's stdout connection reset under a running process (a restore
 * resets every vsock connection; here the host closes its end with
 * bytes unread, which resets a Unix socket's peer): the process keeps its
 * stdout, and the next ctr_stdio of the stream gets what it writes, then
 * the EOF. What the old connection had taken is lost with it. */
static void test_stream_reconnect(void **state)
{
	int in, out;
	char o[256];

	(void)state;
	skip_unless_ready();
	expect_prefix(ask(CREATE("c7", "",
				 "\"args\":[\"sh\",\"-c\",\"echo one; echo pad; read x; echo two $x; "
				 "read y; echo three $y\"]")),
		      "{\"type\":\"ctr_created\",\"cid\":\"c7\"");
	in = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c7\",\"stream\":\"stdin\"}");
	assert_string_equal(reply(in), "{\"type\":\"ok\"}");
	out = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c7\",\"stream\":\"stdout\"}");
	assert_string_equal(reply(out), "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c7\"}"), "{\"type\":\"ok\"}");
	assert_int_equal(read(out, o, 4), 4);
	assert_memory_equal(o, "one\n", 4);
	struct pollfd pad = { .fd = out, .events = POLLIN };

	assert_int_equal(poll(&pad, 1, 20000), 1); /* "pad" waits unread: the close resets */
	close(out);
	assert_int_equal(write(in, "a\n", 2), 2);
	/* "two a" meets the lost connection: held, the stream free again */
	for (int i = 0; i < 200; i++) {
		const char *r;

		out = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c7\",\"stream\":\"stdout\"}");
		r = reply(out);
		if (strcmp(r, "{\"type\":\"ok\"}") == 0)
			break;
		expect_prefix(r, "{\"type\":\"error\",\"code\":\"invalid_state\"");
		close(out);
		out = -1;
		usleep(20000);
	}
	assert_true(out >= 0);
	assert_int_equal(write(in, "b\n", 2), 2);
	assert_int_equal(shutdown(in, SHUT_WR), 0);
	read_to_eof(out, o, sizeof(o));
	assert_string_equal(o, "two a\nthree b\n");
	close(in);
	close(out);
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c7\"}"),
			       "\"exit_code\":0,\"signal\":null}"));
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c7\"}"), "{\"type\":\"ok\"}");
}

static void test_refusals(void **state)
{
	(void)state;
	skip_unless_ready();
	assert_string_equal(
		ask(CREATE("c2", "", "\"args\":[\"no-such-program\"]")),
		"{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"exec: \\\"no-such-program\\\": executable file not found in $PATH\"}");
	expect_prefix(ask(CREATE("c2", "", "\"args\":[\"true\"]")), "{\"type\":\"ctr_created\"");
	expect_prefix(ask(CREATE("c2", "", "\"args\":[\"true\"]")),
		      "{\"type\":\"error\",\"code\":\"exists\"");
	/* Created, never started: deleting it kills the waiting init. */
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c2\"}"), "{\"type\":\"ok\"}");
	expect_prefix(ask("{\"type\":\"ctr_delete\",\"cid\":\"c2\"}"),
		      "{\"type\":\"error\",\"code\":\"not_found\"");
	expect_prefix(ask("{\"type\":\"ctr_create\",\"cid\":\"c3\",\"rootfs\":{\"share\":\"zz\"},"
			  "\"process\":{\"args\":[\"true\"]}}"),
		      "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"ctr_create: rootfs: no "
		      "virtio-fs share tagged 'zz'");
	expect_prefix(ask("{\"type\":\"ctr_start\",\"cid\":\"c9\"}"),
		      "{\"type\":\"error\",\"code\":\"not_found\"");
	expect_prefix(ask("{\"type\":\"ctr_stdio\",\"cid\":\"c9\",\"exec\":1,\"stream\":\"stdin\"}"),
		      "{\"type\":\"error\",\"code\":\"not_found\"");
}

static void test_kill_all_and_timeout(void **state)
{
	(void)state;
	skip_unless_ready();
	expect_prefix(ask(CREATE("c4", "", "\"args\":[\"sh\",\"-c\",\"sleep 100 & sleep 100\"]")),
		      "{\"type\":\"ctr_created\"");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c4\"}"), "{\"type\":\"ok\"}");
	expect_prefix(ask("{\"type\":\"ctr_wait\",\"cid\":\"c4\",\"timeout_ms\":100}"),
		      "{\"type\":\"error\",\"code\":\"timeout\"");
	assert_string_equal(ask("{\"type\":\"ctr_signal\",\"cid\":\"c4\",\"signal\":\"KILL\","
				"\"all\":true}"),
			    "{\"type\":\"ok\"}");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c4\"}"),
			       "\"exit_code\":null,\"signal\":9}"));
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c4\"}"), "{\"type\":\"ok\"}");
}

/* A terminal: the init's stdio and controlling terminal, its size as
 * asked, one pty stream both ways, and its end once the init ended. */
static void test_terminal(void **state)
{
	char o[512] = "";
	size_t n = 0;
	int pty;

	(void)state;
	skip_unless_ready();
	expect_prefix(ask("{\"type\":\"ctr_create\",\"cid\":\"c5\",\"rootfs\":{\"share\":\"r\"},"
			  "\"process\":{\"args\":[\"sh\",\"-c\",\"test -t 0 && echo tty; read x; "
			  "stty size; echo $x; exit 3\"],\"env\":[\"PATH=/usr/bin:/bin\"],"
			  "\"terminal\":true,\"rows\":30,\"cols\":100}}"),
		      "{\"type\":\"ctr_created\"");
	expect_prefix(ask("{\"type\":\"ctr_stdio\",\"cid\":\"c5\",\"stream\":\"stdout\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\"");
	pty = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c5\",\"stream\":\"pty\"}");
	assert_string_equal(reply(pty), "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_resize\",\"cid\":\"c5\",\"rows\":40,\"cols\":120}"),
			    "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c5\"}"), "{\"type\":\"ok\"}");
	/* Typed once the program waits for it: the echo comes in order. */
	while (n + 1 < sizeof(o) && !strstr(o, "tty\r\n") && read(pty, o + n, 1) == 1)
		o[++n] = '\0';
	assert_int_equal(write(pty, "typed\r", 6), 6);
	read_to_eof(pty, o + n, sizeof(o) - n);
	close(pty);
	/* The terminal echoes the input and ends lines with CR LF. */
	assert_string_equal(o, "tty\r\ntyped\r\n40 120\r\ntyped\r\n");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c5\"}"), "\"exit_code\":3,"));
	expect_prefix(ask("{\"type\":\"ctr_resize\",\"cid\":\"c5\",\"rows\":4,\"cols\":4}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\"");
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c5\"}"), "{\"type\":\"ok\"}");
}

#define EXEC(cid, n, process)                                                             \
	"{\"type\":\"ctr_exec\",\"cid\":\"" cid "\",\"exec\":" n ",\"process\":{" process \
	",\"env\":[\"PATH=/usr/bin:/bin\"]}}"

/* ctr_exec: a process in the running init's PID namespace (pid 1 is the
 * init), UTS namespace (the container's hostname) and mount namespace
 * (its /proc), with its own stdio, start, wait and signal; refused before
 * the start and after the end, for a number in use or the init's, past
 * the limit, and a missing program in runc's words; its number forgotten
 * once its exit was told. */
static void test_exec(void **state)
{
	int in, out, err, pty;
	char o[512], e[512], buf[160];
	size_t n = 0;

	(void)state;
	skip_unless_ready();
	expect_prefix(ask(CREATE("c6", "{\"destination\":\"/proc\",\"type\":\"proc\"}",
				 "\"args\":[\"sleep\",\"100\"]")),
		      "{\"type\":\"ctr_created\"");
	expect_prefix(ask(EXEC("c6", "1", "\"args\":[\"true\"]")),
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_exec: container "
		      "\\\"c6\\\" is not running (not started yet)");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\"}"), "{\"type\":\"ok\"}");
	expect_prefix(ask(EXEC("c6", "1",
			       "\"args\":[\"sh\",\"-c\",\"echo $$; cat /proc/sys/kernel/hostname; "
			       "tr '\\\\0' ' ' </proc/1/cmdline; echo; read x; echo got $x; echo "
			       "e >&2; exit 4\"]")),
		      "{\"type\":\"ctr_created\",\"cid\":\"c6\",\"exec\":1,\"pid\":");
	expect_prefix(ask(EXEC("c6", "1", "\"args\":[\"true\"]")),
		      "{\"type\":\"error\",\"code\":\"exists\"");
	expect_prefix(ask("{\"type\":\"ctr_exec\",\"cid\":\"c6\",\"exec\":0,\"process\":{\"args\":"
			  "[\"true\"]}}"),
		      "{\"type\":\"error\",\"code\":\"bad_field\"");
	in = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c6\",\"exec\":1,\"stream\":\"stdin\"}");
	assert_string_equal(reply(in), "{\"type\":\"ok\"}");
	out = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c6\",\"exec\":1,\"stream\":\"stdout\"}");
	assert_string_equal(reply(out), "{\"type\":\"ok\"}");
	err = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c6\",\"exec\":1,\"stream\":\"stderr\"}");
	assert_string_equal(reply(err), "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\",\"exec\":1}"),
			    "{\"type\":\"ok\"}");
	expect_prefix(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\",\"exec\":1}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_start: exec 1 "
		      "of container \\\"c6\\\" is not created");
	assert_int_equal(write(in, "hi\n", 3), 3);
	assert_int_equal(shutdown(in, SHUT_WR), 0);
	read_to_eof(out, o, sizeof(o));
	read_to_eof(err, e, sizeof(e));
	assert_string_equal(o, "2\nbox\nsleep 100 \ngot hi\n");
	assert_string_equal(e, "e\n");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":1}"),
			       "\"exec\":1,\"pid\":"));
	/* Told once: the number is free again at once, its streams closed. */
	expect_prefix(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":1}"),
		      "{\"type\":\"error\",\"code\":\"not_found\"");
	expect_prefix(ask(EXEC("c6", "1", "\"args\":[\"sh\",\"-c\",\"exit 4\"]")),
		      "{\"type\":\"ctr_created\",\"cid\":\"c6\",\"exec\":1,");
	read_to_eof(in, o, sizeof(o));
	assert_string_equal(o, "");
	close(in);
	close(out);
	close(err);
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\",\"exec\":1}"),
			    "{\"type\":\"ok\"}");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":1}"),
			       "\"exit_code\":4,\"signal\":null}"));

	/* The program and the cwd as ctr_create says them. */
	assert_string_equal(
		ask(EXEC("c6", "2", "\"args\":[\"no-such-program\"]")),
		"{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"exec: \\\"no-such-program\\\": executable file not found in $PATH\"}");
	expect_prefix(ask(EXEC("c6", "2", "\"args\":[\"true\"],\"cwd\":\"/no/such/dir\"")),
		      "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"chdir to cwd "
		      "(\\\"/no/such/dir\\\")");
	/* A signal reaches the exec alone; the init runs on. */
	expect_prefix(ask(EXEC("c6", "3", "\"args\":[\"sleep\",\"100\"]")),
		      "{\"type\":\"ctr_created\"");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\",\"exec\":3}"),
			    "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_signal\",\"cid\":\"c6\",\"exec\":3,\"signal\":"
				"\"TERM\"}"),
			    "{\"type\":\"ok\"}");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":3}"),
			       "\"exec\":3,\"pid\":"));
	expect_prefix(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"timeout_ms\":50}"),
		      "{\"type\":\"error\",\"code\":\"timeout\"");
	/* A terminal of its own. */
	expect_prefix(ask("{\"type\":\"ctr_exec\",\"cid\":\"c6\",\"exec\":4,\"process\":{\"args\":"
			  "[\"sh\",\"-c\",\"test -t 0 && stty size\"],\"terminal\":true,\"rows\":7,"
			  "\"cols\":9}}"),
		      "{\"type\":\"ctr_created\"");
	pty = conn("{\"type\":\"ctr_stdio\",\"cid\":\"c6\",\"exec\":4,\"stream\":\"pty\"}");
	assert_string_equal(reply(pty), "{\"type\":\"ok\"}");
	assert_string_equal(ask("{\"type\":\"ctr_start\",\"cid\":\"c6\",\"exec\":4}"),
			    "{\"type\":\"ok\"}");
	read_to_eof(pty, o, sizeof(o));
	close(pty);
	assert_string_equal(o, "7 9\r\n");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":4}"),
			       "\"exit_code\":0,"));
	/* At most AGENT_CTR_EXECS_MAX at once, ended ones until told. */
	for (int i = 0; i < AGENT_CTR_EXECS_MAX; i++) {
		char line[256];

		snprintf(line, sizeof(line), EXEC("c6", "%d", "\"args\":[\"true\"]"), 100 + i);
		expect_prefix(ask(line), "{\"type\":\"ctr_created\"");
	}
	expect_prefix(ask(EXEC("c6", "99", "\"args\":[\"true\"]")),
		      "{\"type\":\"error\",\"code\":\"busy\"");
	/* The init's end ends its execs, and no new one comes. */
	assert_string_equal(ask("{\"type\":\"ctr_signal\",\"cid\":\"c6\",\"signal\":\"KILL\"}"),
			    "{\"type\":\"ok\"}");
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\"}"), "\"signal\":9}"));
	assert_non_null(strstr(ask("{\"type\":\"ctr_wait\",\"cid\":\"c6\",\"exec\":100}"),
			       "\"signal\":9}"));
	expect_prefix(ask(EXEC("c6", "5", "\"args\":[\"true\"]")),
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_exec: container "
		      "\\\"c6\\\" is not running (its init ended)");
	expect_prefix(ask("{\"type\":\"ctr_signal\",\"cid\":\"c6\",\"exec\":101,\"signal\":\"TERM\"}"),
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_signal: exec "
		      "101 of container \\\"c6\\\" is not running");
	assert_string_equal(ask("{\"type\":\"ctr_delete\",\"cid\":\"c6\"}"), "{\"type\":\"ok\"}");
	path_of(buf, sizeof(buf), "cg/ctr-c6");
	assert_int_equal(access(buf, F_OK), -1);
	(void)n;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_with_stdio),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_stream_reconnect),
		cmocka_unit_test(test_kill_all_and_timeout),
		cmocka_unit_test(test_terminal),
		cmocka_unit_test(test_exec),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

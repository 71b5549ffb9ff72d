/*
 * oci_apply: a container's init set up for real on this machine, as root
 * (skipped otherwise): cloned into new mount, PID, UTS and IPC namespaces,
 * its root a bind of this machine's own "/" (so nothing needs an image),
 * made in a mount namespace of the test's own. The plan's share table is a
 * fake mountinfo naming that bind and a scratch directory as virtio-fs
 * shares; every destination already exists (/proc, /mnt), so nothing is
 * created on this machine. The init must wait for its
 * start, run with its stdio, be PID 1 with its hostname, see a bind of
 * the scratch directory read-only, and fail in the documented stage for a
 * missing program, a missing cwd and a symbolic link in a bind's source.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest-init/agent/oci_apply.h"
#include "guest-init/agent/oci_privs.h"

/* clone3's argument, as agent_ctr.c spells it. */
struct clone_args3 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

static char scratch[64] = "/tmp/oci-apply.XXXXXX";

struct run {
	struct oci_report rep;
	bool ready;
	char out[4096];
	int status;
};

/* Parse line, plan it over the fake shares, clone the init, start it
 * when it is ready (with `input` on its stdin), collect its stdout. */
static void run_container(const char *line, const char *input, struct run *r)
{
	char mountinfo[512];
	struct agent_msg m;
	struct agent_err err;
	struct oci_plan p;
	int in[2], out[2], rep[2], st[2], null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct clone_args3 a = { .flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC,
				 .exit_signal = SIGCHLD };
	struct oci_child ch = { .tty = -1 };
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	snprintf(mountinfo, sizeof(mountinfo),
		 "1 1 0:1 / %s/root rw - virtiofs r rw\n2 1 0:2 / %s/share rw - virtiofs b rw\n",
		 scratch, scratch);
	assert_int_equal(agent_msg_parse_line(line, strlen(line), AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), 0);
	assert_true(null >= 0 && pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
		    pipe2(rep, O_CLOEXEC) == 0 && pipe2(st, O_CLOEXEC) == 0);
	ch.plan = &p;
	ch.proc = &m.u.ctr_create.proc;
	ch.create = &m.u.ctr_create;
	ch.hostname = m.u.ctr_create.hostname;
	ch.path_var = oci_env_path(ch.proc->env, ch.proc->envc);
	ch.fd[0] = in[0];
	ch.fd[1] = out[1];
	ch.fd[2] = null;
	ch.report = rep[1];
	ch.start = st[0];
	pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0)
		oci_child_run(&ch);
	assert_true(pid > 0);
	close(in[0]);
	close(out[1]);
	close(rep[1]);
	close(st[0]);
	close(null);
	assert_int_equal(read(rep[0], &r->rep, sizeof(r->rep)), sizeof(r->rep));
	r->ready = r->rep.stage == OCI_STAGE_READY;
	if (r->ready) {
		/* Nothing runs before the start: no output for a while. */
		struct pollfd pf = { .fd = out[0], .events = POLLIN };

		assert_int_equal(poll(&pf, 1, 200), 0);
		assert_int_equal(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
		assert_int_equal(write(st[1], "S", 1), 1);
		n = read(rep[0], &r->rep, sizeof(r->rep));
		assert_int_equal(n, 0); /* execve closed it */
	}
	close(in[1]);
	close(st[1]);
	while ((n = read(out[0], r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)n;
	r->out[len] = '\0';
	close(out[0]);
	close(rep[0]);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	oci_plan_free(&p);
	agent_msg_free(&m);
}

static int setup(void **state)
{
	char path[128];
	int fd;

	(void)state;
	if (geteuid() != 0)
		return 0;
	assert_non_null(mkdtemp(scratch));
	/* The root: "/" bound in a mount namespace of this test's own. */
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(path, sizeof(path), "%s/root", scratch);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(mount("/", path, NULL, MS_BIND, NULL), 0);
	snprintf(path, sizeof(path), "%s/share", scratch);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/share/f", scratch);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0 && write(fd, "in-share\n", 9) == 9);
	close(fd);
	snprintf(path, sizeof(path), "%s/share/link", scratch);
	assert_int_equal(symlink("/etc", path), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	if (geteuid() == 0 && strcmp(scratch + strlen(scratch) - 6, "XXXXXX") != 0) {
		snprintf(cmd, sizeof(cmd), "%s/root", scratch);
		assert_int_equal(umount2(cmd, MNT_DETACH), 0);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
		assert_int_equal(system(cmd), 0);
	}
	return 0;
}

static void skip_unless_root(void)
{
	if (geteuid() != 0)
		skip(); /* namespaces and mounts need root */
}

static char *request_with(const char *mounts, const char *process, const char *more)
{
	char *s;

	assert_true(asprintf(&s,
			     "{\"type\":\"ctr_create\",\"cid\":\"t\",\"rootfs\":{\"share\":\"r\"},"
			     "\"mounts\":[%s],\"process\":{%s},\"hostname\":\"box\"%s}",
			     mounts, process, more) > 0);
	return s;
}

static char *request(const char *mounts, const char *process)
{
	return request_with(mounts, process, "");
}

static void test_runs_as_pid_1_with_its_stdio_and_binds(void **state)
{
	char mounts[512], proc[512], want[256], *line;
	struct run r;

	(void)state;
	skip_unless_root();
	snprintf(mounts, sizeof(mounts),
		 "{\"destination\":\"/proc\",\"type\":\"proc\"},"
		 "{\"destination\":\"/mnt\",\"type\":\"bind\",\"share\":\"b\",\"source\":\".\",\"options\":[\"ro\"]}");
	snprintf(proc, sizeof(proc),
		 "\"args\":[\"sh\",\"-c\",\"read x; echo $x; echo $$; cat /proc/sys/kernel/hostname; cat /mnt/f; "
		 "(: > /mnt/g) 2>/dev/null || echo ro; umask; exit 3\"],"
		 "\"env\":[\"PATH=/usr/bin:/bin\"],\"umask\":63");
	line = request(mounts, proc);
	run_container(line, "hello\n", &r);
	free(line);
	assert_true(r.ready);
	snprintf(want, sizeof(want), "hello\n1\nbox\nin-share\nro\n0077\n");
	assert_string_equal(r.out, want);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
}

static void test_failures_name_their_stage(void **state)
{
	char mounts[256], *line;
	struct run r;

	(void)state;
	skip_unless_root();
	line = request("", "\"args\":[\"no-such-program\"],\"env\":[\"PATH=/usr/bin:/bin\"]");
	run_container(line, "", &r);
	free(line);
	assert_false(r.ready);
	assert_int_equal(r.rep.stage, OCI_STAGE_LOOKUP);
	assert_int_equal(r.rep.err, ENOENT);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127);

	line = request("", "\"args\":[\"/etc/passwd\"]");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_LOOKUP);
	assert_int_equal(r.rep.err, EACCES);

	line = request("", "\"args\":[\"/no/such/program\"]");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_LOOKUP);
	assert_int_equal(r.rep.err, ENOENT);

	line = request("", "\"args\":[\"true\"],\"cwd\":\"/no/such/dir\"");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_CWD);
	assert_int_equal(r.rep.err, ENOENT);

	/* A link in a bind's source is refused, not followed. */
	snprintf(mounts, sizeof(mounts),
		 "{\"destination\":\"/mnt\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"link\"}");
	line = request(mounts, "\"args\":[\"true\"]");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_PLAN);
	assert_int_equal(r.rep.step, 1);
	assert_int_equal(r.rep.side, OCI_SIDE_SRC);
	assert_int_equal(r.rep.err, ELOOP);
}

/* The process's limits and privileges and the container's sysctls,
 * read-only and masked paths, as the program sees them once it runs. */
static void test_limits_privileges_and_paths(void **state)
{
	const char *mounts = "{\"destination\":\"/proc\",\"type\":\"proc\"},"
			     "{\"destination\":\"/dev\",\"type\":\"tmpfs\"}";
	const char *proc =
		"\"args\":[\"sh\",\"-c\",\"ulimit -n; ulimit -Hn; cat /proc/self/oom_score_adj; "
		"grep -E '^(NoNewPrivs|CapBnd|CapEff|CapInh)' /proc/self/status | tr -d '\\\\t'; "
		"cat /proc/sys/kernel/domainname; wc -c < /proc/version; "
		"(echo x > /proc/sys/kernel/domainname) 2>/dev/null || echo ro; "
		"ls /proc/driver | wc -l\"],"
		"\"env\":[\"PATH=/usr/bin:/bin\"],"
		"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":123,\"hard\":456}],"
		"\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_CHOWN\"],"
		"\"effective\":[\"CAP_KILL\"],\"permitted\":[\"CAP_KILL\"]},"
		"\"no_new_privileges\":true,\"oom_score_adj\":500";
	const char *more =
		",\"sysctl\":{\"kernel.domainname\":\"kiln-test\"},"
		"\"masked_paths\":[\"/proc/kcore\",\"/proc/version\",\"/proc/driver\",\"/no/such\"],"
		"\"readonly_paths\":[\"/proc/sys\",\"/no/such/either\"]";
	char *line;
	struct run r;

	(void)state;
	skip_unless_root();
	line = request_with(mounts, proc, more);
	run_container(line, "", &r);
	free(line);
	assert_true(r.ready);
	/* root at execve would gain the bounding set; no_new_privs keeps it
	 * to what it had */
	assert_string_equal(r.out,
			    "123\n456\n500\nCapInh:0000000000000000\n"
			    "CapEff:0000000000000020\nCapBnd:0000000000000021\n"
			    "NoNewPrivs:1\nkiln-test\n0\nro\n0\n");
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);

	/* a sysctl the kernel does not have: its stage and index */
	line = request_with("", "\"args\":[\"true\"]",
			    ",\"sysctl\":{\"kernel.domainname\":\"a\",\"kernel.no_such\":\"1\"}");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_SYSCTL);
	assert_int_equal(r.rep.step, 1);
	assert_int_equal(r.rep.err, ENOENT);

	/* a hard limit above the kernel's: refused, named by index */
	line = request("",
		       "\"args\":[\"true\"],\"rlimits\":[{\"type\":\"RLIMIT_CORE\","
		       "\"soft\":0,\"hard\":0},{\"type\":\"RLIMIT_NOFILE\",\"soft\":1,"
		       "\"hard\":1099511627776}]");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_RLIMIT);
	assert_int_equal(r.rep.step, 1);
	assert_int_equal(r.rep.err, EPERM);

	/* effective beyond permitted: the capability sets' stage */
	line = request("",
		       "\"args\":[\"true\"],\"capabilities\":{\"bounding\":[\"CAP_KILL\"],"
		       "\"effective\":[\"CAP_KILL\"]}");
	run_container(line, "", &r);
	free(line);
	assert_int_equal(r.rep.stage, OCI_STAGE_CAPS);
	assert_int_equal(r.rep.side, 1);
	assert_int_equal(r.rep.err, EPERM);
}

/* The child's own formatting (it may not call printf): a sysctl's file,
 * an OOM score's text. */
static void test_privs_text(void **state)
{
	char path[32], n[12];

	(void)state;
	assert_int_equal(oci_sysctl_path("net.ipv4.ip_forward", path, sizeof(path)), 0);
	assert_string_equal(path, "/proc/sys/net/ipv4/ip_forward");
	assert_int_equal(oci_sysctl_path("kernel/msgmax", path, sizeof(path)), 0);
	assert_string_equal(path, "/proc/sys/kernel/msgmax");
	assert_int_equal(oci_sysctl_path("abcdefghij.klmnopqrstu", path, sizeof(path)), -1);
	assert_int_equal(oci_sysctl_path("abcdefghij.klmnopqrst", path, sizeof(path)), 0);
	assert_string_equal(path, "/proc/sys/abcdefghij/klmnopqrst"); /* 31 bytes and the NUL */
	assert_int_equal(oci_int_text(-1000, n), 5);
	assert_memory_equal(n, "-1000", 5);
	assert_int_equal(oci_int_text(0, n), 1);
	assert_memory_equal(n, "0", 1);
	assert_int_equal(oci_int_text(-2147483647 - 1, n), 11);
	assert_memory_equal(n, "-2147483648", 11);
}

/* An exec's child (no plan) joining through `join`: its report once set
 * up, and the descriptors it holds then (a bit per fd number < 64). */
static struct oci_report run_exec(int join, uint64_t *fds, pid_t *pid_out)
{
	const char *line = "{\"type\":\"ctr_exec\",\"cid\":\"t\",\"exec\":1,\"process\":"
			   "{\"args\":[\"true\"],\"env\":[\"PATH=/usr/bin:/bin\"]}}";
	struct agent_msg m;
	struct agent_err err;
	struct oci_report rep = { .stage = -1 };
	struct clone_args3 a = { .exit_signal = SIGCHLD };
	int rp[2], st[2], null = open("/dev/null", O_RDWR); /* not close-on-exec: a leak to close */
	struct oci_child ch = { .tty = -1, .join = join };
	char path[64];
	struct dirent *d;
	DIR *dir;
	pid_t pid;

	assert_int_equal(agent_msg_parse_line(line, strlen(line), AGENT_CTX_REQUEST, &m, &err), 0);
	assert_true(null >= 0 && pipe2(rp, O_CLOEXEC) == 0 && pipe2(st, O_CLOEXEC) == 0);
	ch.proc = &m.u.ctr_exec.proc;
	ch.path_var = oci_env_path(ch.proc->env, ch.proc->envc);
	ch.fd[0] = ch.fd[1] = ch.fd[2] = null;
	ch.report = rp[1];
	ch.start = st[0];
	pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0)
		oci_child_run(&ch);
	assert_true(pid > 0);
	close(rp[1]);
	close(st[0]);
	close(null);
	assert_int_equal(read(rp[0], &rep, sizeof(rep)), sizeof(rep));
	*fds = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.' && atoi(d->d_name) < 64)
			*fds |= 1ull << atoi(d->d_name);
	closedir(dir);
	close(rp[0]);
	close(st[1]); /* never started: it exits */
	*pid_out = pid;
	agent_msg_free(&m);
	return rep;
}

/* An exec joins through the init's pidfd, then holds nothing but its
 * stdio and its two pipes while it waits (the pidfd closed too); a join
 * that fails names its namespace's step and runs nothing. */
static void test_exec_joins_and_holds_nothing(void **state)
{
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0), status, notns;
	struct oci_report rep;
	uint64_t fds;
	pid_t pid;

	(void)state;
	skip_unless_root();
	assert_true(self >= 0);
	rep = run_exec(self, &fds, &pid);
	assert_int_equal(rep.stage, OCI_STAGE_READY);
	assert_int_equal(__builtin_popcountll(fds), 5);
	assert_true((fds & 7) == 7 && !(fds & (1ull << self)));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	/* Not a process or namespace: the first join fails. */
	notns = open("/dev/null", O_RDONLY | O_CLOEXEC);
	rep = run_exec(notns, &fds, &pid);
	assert_int_equal(rep.stage, OCI_STAGE_JOIN);
	assert_int_equal(rep.step, 0);
	assert_int_equal(rep.err, EINVAL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	close(self);
	close(notns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_as_pid_1_with_its_stdio_and_binds),
		cmocka_unit_test(test_failures_name_their_stage),
		cmocka_unit_test(test_limits_privileges_and_paths),
		cmocka_unit_test(test_privs_text),
		cmocka_unit_test(test_exec_joins_and_holds_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

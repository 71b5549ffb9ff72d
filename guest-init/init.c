/*
 * kiln-init: PID 1 of every kiln guest, and its agent.
 *
 * Mounts the pseudo filesystems, applies the hostname and network settings
 * of the kernel command line, marks "init started" on the VMM's boot-timer
 * port, starts the reaper (the one waiter for every child and orphan) and
 * the agent (vsock port 1024, docs/agent-protocol.md), then optionally runs
 * one command (kiln.exec=). Shutdown (kiln.poweroff, after kiln.exec, or
 * the agent's request) is TERM to all, KILL to the rest, sync, then a
 * reset, which kiln-vmm turns into a clean exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest-init/agent/agent.h"
#include "guest-init/agent/oci_plan.h"
#include "guest-init/sys/child.h"
#include "guest-init/sys/milestone.h"
#include "guest-init/sys/netconf.h"
#include "guest-init/sys/params.h"
#include "guest-init/sys/reaper.h"
#include "guest-init/sys/root_tmpfs.h"
#include "guest-init/sys/rootfs_grow.h"
#include "guest-init/sys/say.h"
#include "guest-init/sys/shutdown.h"

static void mkdir_p(const char *path)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s", path);
	for (char *c = p + 1; *c; c++) {
		if (*c == '/') {
			*c = '\0';
			mkdir(p, 0755);
			*c = '/';
		}
	}
	mkdir(p, 0755);
}

static void mount_one(const char *src, const char *dst, const char *type, unsigned long flags,
		      const char *data)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, data) < 0 && errno != EBUSY)
		say("mount %s on %s: %s", type, dst, strerror(errno));
}

static void setup_stdio(void)
{
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);

	if (fd < 0)
		fd = open("/dev/null", O_RDWR);
	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (fd != i)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

/*
 * kiln.shares=TAG:/guest/path[:ro],...: mount each virtio-fs share,
 * creating the mount point. A bad entry is reported and skipped; the
 * others still mount.
 */
static void mount_shares(const char *spec)
{
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *ent = strtok_r(buf, ",", &save); ent; ent = strtok_r(NULL, ",", &save)) {
		char *path = strchr(ent, ':'), *opt;
		unsigned long flags = MS_NOSUID | MS_NODEV;

		if (!path || path == ent || path[1] != '/') {
			say("kiln.shares: '%s' is not TAG:/absolute/path[:ro]", ent);
			continue;
		}
		*path++ = '\0';
		opt = strchr(path, ':');
		if (opt) {
			*opt++ = '\0';
			if (strcmp(opt, "ro") == 0)
				flags |= MS_RDONLY;
		}
		mkdir_p(path);
		if (mount(ent, path, "virtiofs", flags, NULL) < 0)
			say("mount virtio-fs share '%s' on %s: %s", ent, path, strerror(errno));
	}
}

static void read_cmdline(char *buf, size_t len)
{
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * kiln.hostname= kiln.iface= kiln.ip= kiln.gw= kiln.dns= kiln.mtu=, with
 * the `configure` rules; each invalid value or failed step is reported on
 * the console and skipped, the rest still applies. The loopback interface
 * comes up first, whatever the command line says.
 */
static void configure_from_cmdline(const char *cmdline)
{
	static struct netconf_boot nb;
	struct agent_err err;

	netconf_from_cmdline(cmdline, &nb);
	for (int i = 0; i < nb.ncomplaints; i++)
		say("%s", nb.complaint[i]);
	if (netconf_loopback(&err) < 0)
		say("lo: %s", err.msg);
	if (netconf_hostname(&nb.req, &err) < 0)
		say("%s", err.msg);
	if (netconf_mtu(&nb.req, &err) < 0)
		say("kiln.mtu: %s", err.msg);
	if (netconf_address(&nb.req, &err) < 0)
		say("kiln.ip: %s", err.msg);
	if (netconf_gateway(&nb.req, &err) < 0)
		say("kiln.gw: %s", err.msg);
	if (netconf_dns(&nb.req, "/etc/resolv.conf", &err) < 0)
		say("kiln.dns: %s", err.msg);
}

/*
 * kiln.oci (kiln-runtime's guests, booted from an initramfs holding only
 * kiln-init): leave the initramfs for a tmpfs root before anything is
 * mounted, so containers get a real pivot_root (root_tmpfs.h). /proc is
 * mounted only to read the command line and the mount table, and
 * unmounted again. Returns what failed, for the console once it is up.
 */
static const char *oci_root(void)
{
	static char cmdline[4096], mountinfo[16384], fstype[32], why[160];
	const char *step;
	int fd, e;
	ssize_t n;

	mkdir("/proc", 0755);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return NULL; /* mount_one reports it below */
	read_cmdline(cmdline, sizeof(cmdline));
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, mountinfo, sizeof(mountinfo) - 1);
	mountinfo[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	umount2("/proc", MNT_DETACH);
	if (param_get(cmdline, "kiln.oci", fstype, sizeof(fstype)) <= 0 ||
	    oci_root_fstype(mountinfo, fstype, sizeof(fstype)) < 0 || strcmp(fstype, "rootfs") != 0)
		return NULL;
	e = root_tmpfs_enter(&step);
	if (!e)
		return NULL;
	snprintf(why, sizeof(why), "kiln.oci: %s: %s (containers cannot pivot_root)", step,
		 strerror(-e));
	return why;
}

/* kiln.exec=: run the command as root through the shell and wait for it. */
/*
 * A root disk larger than its filesystem (a sandbox's disk_mib): grow the
 * filesystem to it, online, before the agent answers, so the first df
 * already sees the whole disk. Only the writable root disk kiln-vmm names
 * (root=/dev/vda rw); a failure is reported and the guest runs on.
 */
static void grow_root(const char *cmdline)
{
	char root[32], rw[4];
	const char *why = "";
	uint64_t from = 0, to = 0;
	int r;

	if (param_get(cmdline, "root", root, sizeof(root)) <= 0 || strcmp(root, "/dev/vda") != 0 ||
	    param_get(cmdline, "rw", rw, sizeof(rw)) <= 0)
		return;
	r = rootfs_grow(root, "/", &from, &to, &why);
	if (r < 0)
		say("root filesystem: %s: %s (it keeps its size)", why, strerror(-r));
	else if (r > 0)
		say("root filesystem grown from %llu to %llu MiB", (unsigned long long)(from >> 20),
		    (unsigned long long)(to >> 20));
}

static void run_command(struct reaper *r, const struct rlimit *nofile, const char *cmd)
{
	static const char nosh[] = "kiln-init: kiln.exec: cannot run /bin/sh\n";
	struct reaper_child ch = { 0 };
	pid_t pid;
	int st;

	reaper_fork_lock(r);
	pid = fork();
	if (pid == 0) {
		/* kiln-init is multithreaded now: only async-signal-safe calls. */
		child_reset(nofile);
		setsid();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		if (write(2, nosh, sizeof(nosh) - 1) < 0)
			_exit(127);
		_exit(127);
	}
	if (pid > 0)
		reaper_add(r, &ch, pid);
	reaper_fork_unlock(r);
	if (pid < 0) {
		say("kiln.exec: fork: %s", strerror(errno));
		return;
	}
	st = reaper_wait(r, &ch);
	if (WIFEXITED(st))
		say("command exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("command killed by signal %d", WTERMSIG(st));
}

int main(void)
{
	static char cmdline[4096], value[4096];
	static struct milestone ms;
	static struct reaper reaper;
	static struct shutdown sd;
	struct agent *agent;
	struct rlimit nofile;
	pthread_t th;
	bool reaper_thread_ok;
	const char *oci_fail;
	int e;

	if (getpid() != 1) {
		fprintf(stderr, "kiln-init: must run as PID 1 (the guest's init)\n");
		return 1;
	}
	oci_fail = oci_root();
	mount_one("dev", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	setup_stdio();
	if (oci_fail)
		say("%s", oci_fail);
	mount_one("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_one("sys", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	/* cgroup v2 where users' tools look for it (systemd-run, podman, a
	 * browser's sandbox); the kernel makes the directory when it has
	 * cgroups, so a kernel without them is skipped quietly. nsdelegate:
	 * a cgroup namespace owns its subtree. */
	if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "nsdelegate") < 0 &&
	    errno != ENOENT && errno != ENODEV)
		say("mount cgroup2 on /sys/fs/cgroup: %s", strerror(errno));
	mount_one("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,ptmxmode=0666");
	mount_one("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_one("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	/* Before any thread exists: threads inherit the port permission. */
	milestone_init(&ms);
	milestone_mark(&ms, MS_INIT_STARTED);

	read_cmdline(cmdline, sizeof(cmdline));
	configure_from_cmdline(cmdline);
	grow_root(cmdline);
	if (param_get(cmdline, "kiln.shares", value, sizeof(value)) > 0 && value[0])
		mount_shares(value);
	setenv("PATH", AGENT_DEFAULT_PATH, 1);
	setenv("HOME", "/root", 1);
	if (getrlimit(RLIMIT_NOFILE, &nofile) < 0)
		nofile.rlim_cur = nofile.rlim_max = 1024;

	/* Also before any thread: it blocks SIGCHLD for all of them. */
	e = reaper_init(&reaper);
	if (e < 0)
		say("reaper: blocking SIGCHLD: %s", strerror(-e));
	shutdown_init(&sd, &ms, &reaper);
	reaper_thread_ok = pthread_create(&th, NULL, reaper_thread, &reaper) == 0;
	if (!reaper_thread_ok)
		say("reaper: cannot start its thread; reaping in the main thread, kiln.exec is skipped");
	e = agent_start(&reaper, &sd, &ms, &agent);
	if (e < 0)
		say("agent: cannot listen on vsock port %d: %s (is there a --vsock device?)",
		    AGENT_PORT, strerror(-e));

	if (reaper_thread_ok && param_get(cmdline, "kiln.exec", value, sizeof(value)) > 0 &&
	    value[0]) {
		run_command(&reaper, &nofile, value);
		shutdown_run(&sd, AGENT_GRACE_DEFAULT_MS);
	}
	if (param_get(cmdline, "kiln.poweroff", value, sizeof(value)) > 0)
		shutdown_run(&sd, AGENT_GRACE_DEFAULT_MS);
	if (!reaper_thread_ok)
		reaper_run(&reaper);
	for (;;)
		pause();
}

/*
 * kiln-init: PID 1 of every kiln guest.
 *
 * Mounts the pseudo filesystems, sets the hostname, marks "init started" on
 * the VMM's boot-timer port, optionally runs one command (kiln.exec=), and
 * reaps every orphan. Shutdown (kiln.poweroff, or after kiln.exec) is
 * TERM to all, KILL to the rest, sync, then a reset, which kiln-vmm turns
 * into a clean exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "params.h"

/* vmm/boot_timer.h: the guest side of the boot-timer ABI. */
#define BOOT_TIMER_PORT 0x440
#define MS_INIT_STARTED 1
#define MS_SHUTDOWN 3

static int have_timer;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "kiln-init: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static void milestone(uint8_t code)
{
	struct timespec ts;

	if (!have_timer)
		return;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	outl((uint32_t)(ts.tv_sec * 1000000 + ts.tv_nsec / 1000), BOOT_TIMER_PORT + 4);
	outb(code, BOOT_TIMER_PORT);
}

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

/* Wait for `pid` while reaping any other child that exits meanwhile. */
static int wait_for(pid_t pid)
{
	int st;
	pid_t r;

	for (;;) {
		r = wait(&st);
		if (r == pid)
			return st;
		if (r < 0 && errno == ECHILD)
			return -1;
	}
}

static void shutdown_now(void)
{
	milestone(MS_SHUTDOWN);
	kill(-1, SIGTERM);
	/* Give processes 100 ms to exit, reaping them meanwhile. */
	for (int i = 0; i < 10; i++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(10000);
	}
	kill(-1, SIGKILL);
	sync();
	reboot(RB_AUTOBOOT);
	say("reboot failed: %s", strerror(errno));
	for (;;)
		pause();
}

static void run_command(const char *cmd)
{
	pid_t pid = fork();
	int st;

	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		setsid();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		say("exec /bin/sh: %s", strerror(errno));
		_exit(127);
	}
	st = wait_for(pid);
	if (WIFEXITED(st))
		say("command exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("command killed by signal %d", WTERMSIG(st));
}

int main(void)
{
	static char cmdline[4096], value[4096];

	if (getpid() != 1) {
		fprintf(stderr, "kiln-init: must run as PID 1 (the guest's init)\n");
		return 1;
	}
	mount_one("dev", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	setup_stdio();
	mount_one("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_one("sys", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_one("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,ptmxmode=0666");
	mount_one("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_one("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	have_timer = ioperm(BOOT_TIMER_PORT, 8, 1) == 0;
	milestone(MS_INIT_STARTED);

	read_cmdline(cmdline, sizeof(cmdline));
	if (param_get(cmdline, "kiln.hostname", value, 65) <= 0 || !value[0])
		strcpy(value, "kiln");
	if (sethostname(value, strlen(value)) < 0)
		say("sethostname: %s", strerror(errno));
	if (param_get(cmdline, "kiln.shares", value, sizeof(value)) > 0 && value[0])
		mount_shares(value);
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
	setenv("HOME", "/root", 1);

	if (param_get(cmdline, "kiln.exec", value, sizeof(value)) > 0 && value[0]) {
		run_command(value);
		shutdown_now();
	}
	if (param_get(cmdline, "kiln.poweroff", value, sizeof(value)) > 0)
		shutdown_now();
	for (;;) {
		if (wait(NULL) < 0 && errno == ECHILD)
			pause();
	}
}

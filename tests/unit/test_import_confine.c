/*
 * The image importer's confinement: its own seccomp filter
 * (api/image-import/import_seccomp.c) and the namespaces kilnd puts it in
 * (api/kilnd/images/import_ns.c). Each is entered in a forked child,
 * which probes with raw syscalls and leaves with _exit; its exit code
 * names the first probe that went wrong (0: all as hoped).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "api/image-import/import_seccomp.h"
#include "api/kilnd/images/import_ns.h"

typedef int probe_fn(void *arg);

/* The child's exit code, or 100 + signal when a signal ended it. */
static int in_child(probe_fn *probe, void *arg)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(probe(arg));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int refused(long r, int want)
{
	return r == -1 && errno == want;
}

static int filtered(void *arg)
{
	struct err e;
	int fd, st;
	pid_t pid;

	(void)arg;
	if (import_seccomp_load(&e) < 0)
		return 1;
	if (!refused(syscall(SYS_unshare, CLONE_NEWUTS), EPERM))
		return 2;
	if (!refused(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0), EPERM))
		return 3;
	if (!refused(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), EPERM) ||
	    !refused(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0), EPERM))
		return 4;
	fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 5;
	close(fd);
	if (!refused(syscall(SYS_clone3, NULL, 0), ENOSYS))
		return 6;
	if (!refused(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM))
		return 7;
	if (!refused(syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, NULL), EPERM) ||
	    !refused(syscall(SYS_bpf, 0, NULL, 0), EPERM))
		return 8;
	/* it stays in its process group, and types into no terminal */
	if (!refused(syscall(SYS_setsid), EPERM) || !refused(syscall(SYS_setpgid, 0, 0), EPERM) ||
	    !refused(syscall(SYS_ioctl, 0, TIOCSTI, "x"), EPERM))
		return 10;
	/* What it runs inherits the filter, and plain processes still start:
	 * unshare(1) (util-linux) is refused inside; true is not. */
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		char *argv[] = { "sh", "-c", "unshare -u true 2>/dev/null && exit 1; true", NULL };

		execve("/bin/sh", argv, (char *[]){ "PATH=/usr/bin:/bin:/usr/sbin:/sbin", NULL });
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 9;
	return 0;
}

static void test_seccomp_refuses_what_an_importer_never_needs(void **state)
{
	(void)state;
	assert_int_equal(in_child(filtered, NULL), 0);
}

struct ns_probe {
	char host_file[64]; /* made in /tmp by the parent */
	char work[64];      /* a work directory beneath /tmp, with "marker" */
	int port;           /* a listener on the host's 127.0.0.1 */
};

static int namespaced(void *arg)
{
	struct ns_probe *p = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct if_nameindex *ifs;
	struct statfs fs;
	const char *step;
	int fd, n = 0;

	char cwd[64];

	if (chdir(p->work) < 0)
		return 1;
	if (import_ns_enter(&step) < 0)
		return 2;
	/* the work directory, though /tmp now hides its path, is bound into
	 * the new /run and entered: its ".." is that tmpfs, not the host's */
	fd = open("marker", O_RDONLY);
	if (fd < 0 || !getcwd(cwd, sizeof(cwd)) || strcmp(cwd, IMPORT_NS_WORK))
		return 3;
	close(fd);
	if (statfs("..", &fs) < 0 || fs.f_type != TMPFS_MAGIC ||
	    access("../../tmp/kiln-import-ns-marker-dir", F_OK) == 0)
		return 9;
	if (statfs("/tmp", &fs) < 0 || fs.f_type != TMPFS_MAGIC || access(p->host_file, F_OK) == 0)
		return 4;
	if (statfs("/run", &fs) < 0 || fs.f_type != TMPFS_MAGIC)
		return 5;
	/* no interface but lo, and it is down: the host's listener is out of reach */
	ifs = if_nameindex();
	if (!ifs)
		return 6;
	for (struct if_nameindex *i = ifs; i->if_index; i++)
		n += strcmp(i->if_name, "lo") != 0;
	if_freenameindex(ifs);
	if (n)
		return 7;
	sa.sin_port = htons((uint16_t)p->port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return 8;
	return 0;
}

static void test_namespaces_hide_the_host(void **state)
{
	struct ns_probe p;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd, fd;

	(void)state;
	if (geteuid() != 0)
		skip(); /* namespaces of its own are kilnd-as-root only */
	snprintf(p.host_file, sizeof(p.host_file), "/tmp/kiln-import-ns-XXXXXX");
	fd = mkstemp(p.host_file);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p.work, sizeof(p.work), "/tmp/kiln-import-ns-marker-dir");
	mkdir(p.work, 0700);
	fd = open("/tmp/kiln-import-ns-marker-dir/marker", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	p.port = ntohs(sa.sin_port);

	assert_int_equal(in_child(namespaced, &p), 0);
	/* and the host's mounts are untouched */
	assert_int_equal(access(p.host_file, F_OK), 0);
	unlink(p.host_file);
	unlink("/tmp/kiln-import-ns-marker-dir/marker");
	rmdir(p.work);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seccomp_refuses_what_an_importer_never_needs),
		cmocka_unit_test(test_namespaces_hide_the_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of api/kilnd/images/import_ns.c: the namespaces kilnd puts the
 * image importer in, when kilnd is root (docs/security.md, "Image import").
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
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

#include "api/kilnd/images/import_ns.h"
#include "tests/unit/in_child.h"

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

static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

/* The importer's drop, in the child of a raw clone into a new pid
 * namespace made while another thread is being created (kilnd makes
 * threads at any time): the C library's setresuid waits for that
 * thread, which the child does not have, forever. Some rounds, as the
 * clone does not always come before the thread has started. */
static void test_drop_in_raw_clone_of_threaded_process(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* the drop is kilnd-as-root only */
	for (int round = 0; round < 8; round++) {
		pthread_t t;
		pid_t pid;
		int st = -1, i;

		assert_int_equal(pthread_create(&t, NULL, idle_thread, NULL), 0);
		pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
		assert_true(pid >= 0);
		if (pid == 0) {
			uid_t r, e, s;

			if (import_ns_drop(65534) < 0)
				_exit(1);
			if (getresuid(&r, &e, &s) < 0 || r != 65534 || e != 65534 || s != 65534 ||
			    getgid() != 65534 || getgroups(0, NULL) != 0)
				_exit(2);
			_exit(0);
		}
		for (i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
			usleep(20 * 1000);
		if (i == 100) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("round %d: the drop did not return within 2 s", round);
		}
		pthread_cancel(t);
		pthread_join(t, NULL);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespaces_hide_the_host),
		cmocka_unit_test(test_drop_in_raw_clone_of_threaded_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of lib/egress/egress_subgroup.c: the egress table around a
 * process kiln-vmm starts itself (passt) when nobody attached one around
 * kiln-vmm: kiln-vmm or a libkiln program run by hand, as root
 * (docs/security.md, "Network confinement").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "devices/net/net_passt.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/egress/egress_subgroup.h"
#include "tests/unit/frames.h"
#include "tests/unit/egress_env.h"

/*
 * kiln-vmm on its own, as root (vm_net.c): passt gets a cgroup of its own
 * below the caller's, with the default table, and joins it between fork
 * and exec.
 */
static void test_standalone_subgroup(void **state)
{
	char sub[600], left[600];
	struct net_passt_cfg c = {
		.address = "10.0.2.15", .prefix = 24, .gateway = "10.0.2.2", .dns = "10.0.2.3"
	};
	pid_t dead;
	struct net_backend *b = NULL;
	struct err e;
	struct stat st;
	int fd, lo, host, rt;

	(void)state;
	SKIP_UNLESS_READY();
	lo = listener(host_ns, "127.0.0.1", 7021, SOCK_STREAM);
	host = listener(host_ns, HOST_ADDR, 7021, SOCK_STREAM);
	rt = listener(remote_ns, REMOTE, 7021, SOCK_STREAM);
	/* One an ended kiln-vmm left: removed by the next start. */
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	snprintf(left, sizeof(left), "%s/kiln-passt-%d", cg_home, (int)dead);
	assert_int_equal(mkdir(left, 0755), 0);
	if (egress_subgroup_open(NULL, &fd, &e) != 1)
		fail_msg("egress_subgroup_open: %s", e.msg);
	assert_int_equal(stat(left, &st), -1);
	snprintf(sub, sizeof(sub), "%s/kiln-passt-%d", cg_home, (int)getpid());
	assert_int_equal(stat(sub, &st), 0);
	c.join_cgroup_fd = fd;
	if (net_passt_open(&c, &b, &e))
		fail_msg("%s", e.msg);
	close(fd);
	send_frame(b, "127.0.0.1", FR_TCP, 7021);
	send_frame(b, HOST_ADDR, FR_TCP, 7021);
	send_frame(b, REMOTE, FR_TCP, 7021);
	assert_true(reached(rt, WAIT_MS));
	assert_false(reached(lo, 0));
	assert_false(reached(host, 0));
	b->close(b);
	/* passt is gone: its cgroup is empty and goes at the next start (or here). */
	for (int i = 0; i < 100 && rmdir(sub) < 0 && errno == EBUSY; i++)
		usleep(20 * 1000);
	assert_int_equal(stat(sub, &st), -1);
	close(lo);
	close(host);
	close(rt);
}

/* Under kilnd (its programs on the caller's cgroup), kiln-vmm makes no cgroup of its own. */
static void test_subgroup_not_under_kilnd(void **state)
{
	char sub[600];
	struct egress_policy p;
	struct stat st;
	struct err e;
	int cg, fd = -1, r;

	(void)state;
	SKIP_UNLESS_READY();
	host_policy(NULL, NULL, &p);
	cg = open(cg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cg >= 0);
	assert_int_equal(egress_cgroup_apply(cg, &p, &e), 0);
	assert_int_equal(join(cg_dir), 0);
	r = egress_subgroup_open(NULL, &fd, &e);
	assert_int_equal(join(cg_home), 0);
	assert_int_equal(r, 0);
	assert_int_equal(fd, -1);
	assert_string_equal(e.msg, "");
	snprintf(sub, sizeof(sub), "%s/kiln-passt-%d", cg_dir, (int)getpid());
	assert_int_equal(stat(sub, &st), -1);
	assert_int_equal(egress_cgroup_clear(cg, &e), 0);
	close(cg);
	free_policy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standalone_subgroup),
		cmocka_unit_test(test_subgroup_not_under_kilnd),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

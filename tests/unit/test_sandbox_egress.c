/*
 * kilnd's egress glue (sandbox_egress.c): a passt sandbox's stored rules
 * become the programs on its cgroup; new rules replace them; a kilnd that
 * cannot load them refuses the start, naming why, unless --no-jail; a
 * sandbox without a network is left alone.
 *
 * What the programs decide is seen from a child in the cgroup connecting
 * a UDP socket: connect() on UDP sends nothing, so no packet leaves this
 * machine, and the program's EPERM is told apart from the network's own
 * answer (a route or none). Needs root, cgroup v2 and cgroup BPF.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "lib/base/cgroup_self.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/egress/egress_subgroup.h"

/* kilnd.c's, which a unit test does not link. */
int64_t wall_ms(void)
{
	return 1732269600000;
}

static char why_skip[1200], cg_dir[600], sb_dir[64];
static struct kilnd d;
static struct sandbox sb;

static int group_setup(void **state)
{
	char own[500];
	struct err e;

	(void)state;
	snprintf(sb_dir, sizeof(sb_dir), "/tmp/kiln-sandbox-egress-XXXXXX");
	assert_non_null(mkdtemp(sb_dir));
	if (geteuid() != 0)
		return snprintf(why_skip, sizeof(why_skip), "needs root"), 0;
	if (egress_cgroup_probe(&e))
		return snprintf(why_skip, sizeof(why_skip), "cgroup BPF unavailable: %s", e.msg), 0;
	if (cgroup_self_dir(own, sizeof(own)))
		return snprintf(why_skip, sizeof(why_skip), "no cgroup v2 mount"), 0;
	snprintf(cg_dir, sizeof(cg_dir), "%s/kiln-sandbox-egress-%d", own, (int)getpid());
	if (mkdir(cg_dir, 0755) < 0)
		return snprintf(why_skip, sizeof(why_skip), "cannot make %s: %s", cg_dir,
				strerror(errno)),
		       0;
	return 0;
}

static int group_teardown(void **state)
{
	char p[128];

	(void)state;
	if (cg_dir[0])
		rmdir(cg_dir);
	snprintf(p, sizeof(p), "%s/firewall.json", sb_dir);
	unlink(p);
	rmdir(sb_dir);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&d, 0, sizeof(d));
	memset(&sb, 0, sizeof(sb));
	d.cfg.egress = true;
	sb.d = &d;
	snprintf(sb.rec.id, sizeof(sb.rec.id), "egresstest");
	snprintf(sb.dir, sizeof(sb.dir), "%s", sb_dir);
	sb.rec.spec.network = SANDBOX_NET_PASST;
	return 0;
}

#define SKIP_UNLESS_READY()                                               \
	do {                                                              \
		if (why_skip[0]) {                                        \
			print_message("egress: skipped: %s\n", why_skip); \
			skip();                                           \
		}                                                         \
	} while (0)

/* Whether a process of the sandbox's cgroup may connect to ip:port over UDP (false: EPERM). */
static bool may_connect(const char *ip, int port)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		char procs[700];
		int fd, s;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg_dir);
		fd = open(procs, O_WRONLY);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(3);
		inet_pton(AF_INET, ip, &a.sin_addr);
		s = socket(AF_INET, SOCK_DGRAM, 0);
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EPERM)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) <= 1);
	return WEXITSTATUS(st) == 0;
}

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	assert_non_null(j);
	return j;
}

/* No firewall.json yet: the default rules (DNS only) on the cgroup. */
static void test_default_rules_on_cgroup(void **state)
{
	struct net_addr res;
	struct api_err e;
	char ip[NET_ADDR_STRLEN];

	(void)state;
	SKIP_UNLESS_READY();
	if (sandbox_egress_apply(&sb, cg_dir, NULL, &e))
		fail_msg("%s", e.msg);
	assert_false(may_connect("127.0.0.1", 80));
	assert_false(may_connect("169.254.169.254", 80));
	assert_false(may_connect("198.51.100.10", 443)); /* default deny */
	if (egress_host_resolver(&res) == 0) {
		net_addr_format(&res, ip, sizeof(ip));
		assert_true(may_connect(ip, 53));
		assert_false(may_connect(ip, 54));
	}
}

/* New rules (as PUT .../firewall hands them) replace the table at once. */
static void test_rules_replace(void **state)
{
	json_t *open_, *one;
	struct api_err e;

	(void)state;
	SKIP_UNLESS_READY();
	open_ = J("{\"outbound_internet\":true,\"dns\":[\"10.0.2.3\"]}");
	one = J("{\"allow\":[{\"cidr\":\"198.51.100.10\",\"proto\":\"udp\",\"ports\":443}],\"dns\":[]}");
	if (sandbox_egress_apply(&sb, cg_dir, open_, &e))
		fail_msg("%s", e.msg);
	assert_true(may_connect("198.51.100.10", 443));
	assert_true(may_connect("198.51.100.11", 80));
	assert_false(may_connect("10.1.2.3", 80)); /* the LAN: no rule names it */
	assert_false(may_connect("127.0.0.1", 443));
	if (sandbox_egress_apply(&sb, cg_dir, one, &e))
		fail_msg("%s", e.msg);
	assert_true(may_connect("198.51.100.10", 443));
	assert_false(may_connect("198.51.100.11", 80));
	assert_false(may_connect("198.51.100.10", 444));
	json_decref(open_);
	json_decref(one);
}

/* A jailed kilnd without cgroup programs refuses, naming why; --no-jail goes on without them. */
static void test_unavailable(void **state)
{
	struct api_err e;
	struct err ee;
	int fd;

	(void)state;
	SKIP_UNLESS_READY();
	fd = open(cg_dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(egress_cgroup_clear(fd, &ee), 0);
	d.cfg.egress = false;
	snprintf(d.cfg.egress_off, sizeof(d.cfg.egress_off),
		 "egress: the kernel refused the kiln_egress_c4 program: Invalid argument");
	assert_int_equal(sandbox_egress_apply(&sb, cg_dir, NULL, &e), -1);
	assert_int_equal(e.code, API_E_SPAWN_FAILED);
	assert_non_null(strstr(e.msg, "sandbox egresstest: egress: the kernel refused"));
	assert_non_null(strstr(e.msg, "CONFIG_CGROUP_BPF"));
	d.cfg.no_jail = true;
	assert_int_equal(sandbox_egress_apply(&sb, cg_dir, NULL, &e), 0);
	assert_false(egress_cgroup_holds(fd));
	close(fd);
}

/* A sandbox without a network gets nothing on its cgroup. */
static void test_no_network_untouched(void **state)
{
	struct api_err e;
	int fd;

	(void)state;
	SKIP_UNLESS_READY();
	sb.rec.spec.network = SANDBOX_NET_NONE;
	assert_int_equal(sandbox_egress_apply(&sb, cg_dir, NULL, &e), 0);
	fd = open(cg_dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_false(egress_cgroup_holds(fd));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_default_rules_on_cgroup, setup),
		cmocka_unit_test_setup(test_rules_replace, setup),
		cmocka_unit_test_setup(test_unavailable, setup),
		cmocka_unit_test_setup(test_no_network_untouched, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

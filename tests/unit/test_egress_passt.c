/*
 * egress, the attacker's view: a compromised kiln-vmm writes raw frames
 * straight into passt's socket, past the packet filter, and asks passt to
 * connect wherever it likes. passt (started by net_passt_open, exactly as
 * kiln-vmm starts it) runs in a cgroup with the egress programs attached
 * (egress_cgroup_apply); a listener on each target says whether passt
 * reached it, and passt's reply frames whether it says it did.
 *
 * The world is made here, on this machine only: the test enters a network
 * namespace of its own ("the host": lo, and v0 = 10.99.0.1/24, the host's
 * own address, which also holds 169.254.169.254 as a metadata service
 * would appear), and makes a second, named one ("the network": v1 =
 * 10.99.0.2, and 198.51.100.10 behind it, a public address a rule may
 * allow). Needs root, cgroup v2, cgroup BPF and Debian's passt; each test
 * says what is missing when it skips.
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

#include "lib/base/cgroup_self.h"
#include "lib/netrules/net_host_addrs.h"
#include "devices/net/net_passt.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/egress/egress_subgroup.h"
#include "tests/unit/frames.h"

#define HOST_ADDR "10.99.0.1"
#define METADATA "169.254.169.254"
#define REMOTE "198.51.100.10"
#define RESOLVER "127.0.0.53"
#define WAIT_MS 1500

static char why_skip[1200];
static char netns_name[64], cg_dir[512], cg_home[480];
static int host_ns = -1, remote_ns = -1;

/* Run a shell command; 0 when it exited 0. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

static int join(const char *dir)
{
	char p[600];
	int fd, r;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = write(fd, "0", 1) == 1 ? 0 : -1;
	close(fd);
	return r;
}

static int group_setup(void **state)
{
	char p[600];
	struct err e;

	(void)state;
	if (geteuid() != 0)
		return snprintf(why_skip, sizeof(why_skip),
				"needs root (cgroup programs, network namespaces)"),
		       0;
	if (egress_cgroup_probe(&e))
		return snprintf(why_skip, sizeof(why_skip), "cgroup BPF unavailable: %s", e.msg), 0;
	if (sh("command -v passt >/dev/null && command -v ip >/dev/null"))
		return snprintf(why_skip, sizeof(why_skip),
				"needs passt and ip (scripts/install-deps)"),
		       0;
	if (cgroup_self_dir(cg_home, sizeof(cg_home)))
		return snprintf(why_skip, sizeof(why_skip), "no cgroup v2 mount"), 0;
	snprintf(cg_dir, sizeof(cg_dir), "%s/kiln-egress-test-%d", cg_home, (int)getpid());
	if (mkdir(cg_dir, 0755) < 0)
		return snprintf(why_skip, sizeof(why_skip), "cannot make %s: %s", cg_dir,
				strerror(errno)),
		       0;
	/* The network, then the host, wired by a veth pair. */
	snprintf(netns_name, sizeof(netns_name), "kiln-egress-test-%d", (int)getpid());
	if (sh("ip netns add %s", netns_name) || unshare(CLONE_NEWNET) < 0)
		return snprintf(why_skip, sizeof(why_skip), "cannot make network namespaces"), 0;
	host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(p, sizeof(p), "/run/netns/%s", netns_name);
	remote_ns = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(host_ns >= 0 && remote_ns >= 0);
	assert_int_equal(sh("ip link set lo up && ip link add v0 type veth peer name v1 netns %s &&"
			    " ip addr add " HOST_ADDR "/24 dev v0 && ip addr add " METADATA
			    "/32 dev v0 &&"
			    " ip link set v0 up && ip route add default via 10.99.0.2 &&"
			    " ip -n %s link set lo up && ip -n %s addr add 10.99.0.2/24 dev v1 &&"
			    " ip -n %s addr add " REMOTE "/32 dev lo && ip -n %s link set v1 up &&"
			    " ip -n %s route add default via " HOST_ADDR,
			    netns_name, netns_name, netns_name, netns_name, netns_name, netns_name),
			 0);
	return 0;
}

static int group_teardown(void **state)
{
	char kill_file[600];
	int fd;

	(void)state;
	/* A failed test leaves its passt running there: end it first. */
	snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", cg_dir);
	if (cg_dir[0] && (fd = open(kill_file, O_WRONLY | O_CLOEXEC)) >= 0) {
		if (write(fd, "1", 1) != 1) {
			/* before Linux 5.14: passt ends with this process (PDEATHSIG) */
		}
		close(fd);
	}
	/* One a failed test_subgroup_not_under_kilnd made below it. */
	snprintf(kill_file, sizeof(kill_file), "%s/kiln-passt-%d", cg_dir, (int)getpid());
	rmdir(kill_file);
	for (int i = 0; cg_dir[0] && i < 100 && rmdir(cg_dir) < 0 && errno == EBUSY; i++)
		usleep(10 * 1000);
	if (netns_name[0])
		sh("ip netns del %s 2>/dev/null", netns_name);
	return 0;
}

/* A listener of type (SOCK_STREAM or SOCK_DGRAM) on ip:port, in the network namespace ns. */
static int listener(int ns, const char *ip, int port, int type)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int s, one = 1;

	assert_int_equal(setns(ns, CLONE_NEWNET), 0);
	s = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(s, 8), 0);
	assert_int_equal(setns(host_ns, CLONE_NEWNET), 0);
	return s;
}

/* Whether something arrived at listener s within ms. */
static bool reached(int s, int ms)
{
	struct pollfd p = { s, POLLIN, 0 };

	return poll(&p, 1, ms) == 1;
}

/* passt started as kiln-vmm starts it, from inside the test cgroup with policy p attached. */
static struct net_backend *passt_confined(const struct egress_policy *p, const char *resolver)
{
	struct net_passt_cfg c = { .address = "10.0.2.15",
				   .prefix = 24,
				   .gateway = "10.0.2.2",
				   .dns = "10.0.2.3",
				   .resolver = resolver };
	struct net_backend *b = NULL;
	struct err e;
	int cg = open(cg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(cg >= 0);
	if (p && egress_cgroup_apply(cg, p, &e))
		fail_msg("%s", e.msg);
	close(cg);
	assert_int_equal(join(cg_dir), 0);
	if (net_passt_open(&c, &b, &e))
		fail_msg("%s", e.msg);
	/* Back out: only passt (and what it forks) stays in the test cgroup. */
	assert_int_equal(join(cg_home), 0);
	return b;
}

static void send_frame(struct net_backend *b, const char *dst, uint8_t proto, int port)
{
	static uint16_t sport = 40000;
	uint8_t f[2048];
	struct fr s = { .src = "10.0.2.15",
			.dst = dst,
			.proto = proto,
			.sport = sport++,
			.dport = (uint16_t)port,
			.tcp_flags = 0x02,
			.payload = proto == FR_UDP ? "hello" : NULL,
			.payload_len = proto == FR_UDP ? 5 : 0 };
	size_t n = fr_build(f, &s);

	assert_int_equal(b->send(b, f, n), (ssize_t)n);
	assert_int_equal(b->flush(b), 0);
}

/* Whether passt answered a SYN to dst:port with a SYN-ACK (it did connect). */
static bool synack_from(struct net_backend *b, const char *dst, int port, int ms)
{
	static uint8_t f[NET_MAX_FRAME];
	uint8_t want[4];

	inet_pton(AF_INET, dst, want);
	for (int t = 0; t < ms; t += 20) {
		ssize_t n;

		while ((n = b->recv(b, f, sizeof(f))) > 0)
			if (n >= 54 && f[12] == 0x08 && f[13] == 0x00 && f[23] == FR_TCP &&
			    !memcmp(f + 26, want, 4) && fr_get32(f + 34) >> 16 == (uint32_t)port &&
			    (f[47] & 0x12) == 0x12)
				return true;
		usleep(20 * 1000);
	}
	return false;
}

/* The sources of the SYN-ACKs passt sends the guest within ms, as a bit per entry of addrs (n <= 8). */
static unsigned synacks(struct net_backend *b, const char *const *addrs, int n, int ms)
{
	static uint8_t f[NET_MAX_FRAME];
	unsigned seen = 0;

	for (int t = 0; t < ms; t += 20) {
		ssize_t len;

		while ((len = b->recv(b, f, sizeof(f))) > 0) {
			if (len < 54 || f[12] != 0x08 || f[13] != 0x00 || f[23] != FR_TCP ||
			    (f[47] & 0x12) != 0x12)
				continue;
			for (int i = 0; i < n; i++) {
				uint8_t a[4];

				inet_pton(AF_INET, addrs[i], a);
				if (!memcmp(f + 26, a, 4))
					seen |= 1u << i;
			}
		}
		usleep(20 * 1000);
	}
	return seen;
}

static void free_policy(struct egress_policy *p)
{
	egress_policy_free(p);
}

/* The host's addresses as kilnd takes them: every address of this (the test's host) namespace. */
static void host_policy(const struct net_rules *r, const char *resolver, struct egress_policy *p)
{
	struct net_addr *host, res;
	struct err e;
	size_t n;

	assert_int_equal(net_host_addrs(&host, &n, &e), 0);
	if (resolver)
		assert_int_equal(net_addr_parse(resolver, &res), 0);
	assert_int_equal(egress_policy_build(r, host, n, resolver ? &res : NULL, p, &e), 0);
	free(host);
}

#define SKIP_UNLESS_READY()                                               \
	do {                                                              \
		if (why_skip[0]) {                                        \
			print_message("egress: skipped: %s\n", why_skip); \
			skip();                                           \
		}                                                         \
	} while (0)

/* No firewall (kiln-vmm without --firewall): loopback, the host's address and the metadata service stay shut. */
static void test_default_reaches_only_outside(void **state)
{
	static const char *const shut[] = { "127.0.0.1", HOST_ADDR, METADATA };
	int tcp[3], udp[3], rt, ru;
	struct egress_policy p;
	struct net_backend *b;

	(void)state;
	SKIP_UNLESS_READY();
	host_policy(NULL, NULL, &p);
	for (int i = 0; i < 3; i++) {
		tcp[i] = listener(host_ns, shut[i], 7001, SOCK_STREAM);
		udp[i] = listener(host_ns, shut[i], 7002, SOCK_DGRAM);
	}
	rt = listener(remote_ns, REMOTE, 7001, SOCK_STREAM);
	ru = listener(remote_ns, REMOTE, 7002, SOCK_DGRAM);
	b = passt_confined(&p, NULL);
	for (int i = 0; i < 3; i++) {
		send_frame(b, shut[i], FR_TCP, 7001);
		send_frame(b, shut[i], FR_UDP, 7002);
	}
	send_frame(b, REMOTE, FR_TCP, 7001);
	send_frame(b, REMOTE, FR_UDP, 7002);
	/* passt says so too: a SYN-ACK for the one it connected, none for the others. */
	{
		static const char *const all[] = { "127.0.0.1", HOST_ADDR, METADATA, REMOTE };

		assert_int_equal(synacks(b, all, 4, WAIT_MS), 1u << 3);
	}
	/* The allowed one shows passt works at all, and that it had time. */
	assert_true(reached(rt, WAIT_MS));
	assert_true(reached(ru, WAIT_MS));
	for (int i = 0; i < 3; i++) {
		if (reached(tcp[i], 0))
			fail_msg("passt connected to %s over TCP", shut[i]);
		if (reached(udp[i], 0))
			fail_msg("passt sent a datagram to %s", shut[i]);
		close(tcp[i]);
		close(udp[i]);
	}
	b->close(b);
	close(rt);
	close(ru);
	free_policy(&p);
}

/* A rule set: only what a rule allows (TCP 7001 of REMOTE), not its UDP, not another port. */
static void test_rules_bound_passt(void **state)
{
	static const char rules_json[] = "{\"allow\":[{\"cidr\":\"" REMOTE
					 "\",\"proto\":\"tcp\",\"ports\":7011}],\"dns\":[]}";
	struct net_rules_err re;
	struct net_rules *r;
	struct egress_policy p;
	struct net_backend *b;
	int t1, t2, u;

	(void)state;
	SKIP_UNLESS_READY();
	assert_int_equal(net_rules_parse_text(rules_json, strlen(rules_json), &r, &re), 0);
	host_policy(r, NULL, &p);
	t1 = listener(remote_ns, REMOTE, 7011, SOCK_STREAM);
	t2 = listener(remote_ns, REMOTE, 7013, SOCK_STREAM);
	u = listener(remote_ns, REMOTE, 7011, SOCK_DGRAM);
	b = passt_confined(&p, NULL);
	send_frame(b, REMOTE, FR_TCP, 7013);
	send_frame(b, REMOTE, FR_UDP, 7011);
	send_frame(b, REMOTE, FR_TCP, 7011);
	assert_true(reached(t1, WAIT_MS));
	assert_false(reached(t2, 0));
	assert_false(reached(u, 0));
	assert_false(synack_from(b, REMOTE, 7013, 100));
	b->close(b);
	close(t1);
	close(t2);
	close(u);
	free_policy(&p);
	net_rules_free(r);
}

/* passt's resolver on loopback keeps answering the guest's DNS; loopback's other ports stay shut. */
static void test_loopback_resolver_stays_open(void **state)
{
	struct egress_policy p;
	struct net_backend *b;
	int dns, other;

	(void)state;
	SKIP_UNLESS_READY();
	host_policy(NULL, RESOLVER, &p);
	dns = listener(host_ns, RESOLVER, 53, SOCK_DGRAM);
	other = listener(host_ns, RESOLVER, 54, SOCK_DGRAM);
	b = passt_confined(&p, RESOLVER);
	send_frame(b, RESOLVER, FR_UDP, 54);
	send_frame(b, "10.0.2.3", FR_UDP, 53);
	assert_true(reached(dns, WAIT_MS));
	assert_false(reached(other, 0));
	b->close(b);
	close(dns);
	close(other);
	free_policy(&p);
}

/* Rules replaced on a running passt: the new table holds at once, the old one is gone. */
static void test_apply_replaces(void **state)
{
	static const char rules_json[] = "{\"allow\":[{\"cidr\":\"" REMOTE
					 "\",\"proto\":\"udp\"}],\"dns\":[]}";
	struct net_rules_err re;
	struct net_rules *r;
	struct egress_policy open_p, udp_only;
	struct net_backend *b;
	struct err e;
	int t, u, cg;

	(void)state;
	SKIP_UNLESS_READY();
	assert_int_equal(net_rules_parse_text(rules_json, strlen(rules_json), &r, &re), 0);
	host_policy(NULL, NULL, &open_p);
	host_policy(r, NULL, &udp_only);
	t = listener(remote_ns, REMOTE, 7004, SOCK_STREAM);
	u = listener(remote_ns, REMOTE, 7004, SOCK_DGRAM);
	b = passt_confined(&open_p, NULL);
	cg = open(cg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cg >= 0);
	if (egress_cgroup_apply(cg, &udp_only, &e))
		fail_msg("%s", e.msg);
	send_frame(b, REMOTE, FR_TCP, 7004);
	send_frame(b, REMOTE, FR_UDP, 7004);
	assert_true(reached(u, WAIT_MS));
	assert_false(reached(t, 300));
	/* Cleared, the cgroup holds no kiln program: the first table is gone too. */
	assert_int_equal(egress_cgroup_clear(cg, &e), 0);
	send_frame(b, REMOTE, FR_TCP, 7004);
	assert_true(reached(t, WAIT_MS));
	close(cg);
	b->close(b);
	close(t);
	close(u);
	free_policy(&open_p);
	free_policy(&udp_only);
	net_rules_free(r);
}

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
		cmocka_unit_test(test_default_reaches_only_outside),
		cmocka_unit_test(test_rules_bound_passt),
		cmocka_unit_test(test_loopback_resolver_stays_open),
		cmocka_unit_test(test_apply_replaces),
		cmocka_unit_test(test_standalone_subgroup),
		cmocka_unit_test(test_subgroup_not_under_kilnd),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

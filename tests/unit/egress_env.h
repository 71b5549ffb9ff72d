/*
 * egress_env: the network the egress tests run in (test_egress_cgroup,
 * test_egress_subgroup): a network namespace for the outside, wired to
 * this process's own by a veth pair, and a cgroup of the test's own;
 * listeners out there and frames sent through passt to reach them.
 * Skipped, with the reason, unless run as root with cgroup BPF, passt
 * and ip.
 */
#ifndef KILN_TEST_EGRESS_ENV_H
#define KILN_TEST_EGRESS_ENV_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "lib/base/cgroup_self.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/netrules/net_host_addrs.h"
#include "devices/net/net_passt.h"
#include "tests/unit/frames.h"
#include "tests/unit/sh.h"

#define HOST_ADDR "10.99.0.1"
#define METADATA "169.254.169.254"
#define REMOTE "198.51.100.10"
#define WAIT_MS 1500

static char why_skip[1200];
static char netns_name[64], cg_dir[512], cg_home[480];
static int host_ns = -1, remote_ns = -1;

static inline int join(const char *dir)
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

static inline int group_setup(void **state)
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

static inline int group_teardown(void **state)
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
static inline int listener(int ns, const char *ip, int port, int type)
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
static inline bool reached(int s, int ms)
{
	struct pollfd p = { s, POLLIN, 0 };

	return poll(&p, 1, ms) == 1;
}

static inline void send_frame(struct net_backend *b, const char *dst, uint8_t proto, int port)
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

static inline void free_policy(struct egress_policy *p)
{
	egress_policy_free(p);
}

/* The host's addresses as kilnd takes them: every address of this (the test's host) namespace. */
static inline void host_policy(const struct net_rules *r, const char *resolver,
			       struct egress_policy *p)
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

#endif

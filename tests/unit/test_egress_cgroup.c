/*
 * Unit tests of lib/egress/egress_cgroup.c: an egress table
 * (egress_policy.h) enforced by the kernel on every process of a cgroup v2:
 * the generated programs (egress_prog.h) loaded with bpf(2) and attached to
 * the cgroup's connect4, connect6, sendmsg4 and sendmsg6 hooks
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
#include "tests/unit/frames.h"
#include "tests/unit/egress_env.h"

#define RESOLVER "127.0.0.53"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_reaches_only_outside),
		cmocka_unit_test(test_rules_bound_passt),
		cmocka_unit_test(test_loopback_resolver_stays_open),
		cmocka_unit_test(test_apply_replaces),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/*
 * netconf_from_cmdline: the kernel command line's network settings follow
 * `configure`'s rules. A valid value is taken, an invalid one is skipped
 * with a complaint naming it, and one bad value never spoils the others.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "guest-init/sys/netconf.h"

static struct netconf_boot b;

static void addr_is(const struct agent_addr *a, int family, const char *text)
{
	uint8_t want[16];

	assert_int_equal(a->family, family);
	assert_int_equal(inet_pton(family, text, want), 1);
	assert_memory_equal(a->bytes, want, family == AF_INET ? 4 : 16);
}

static void complaint_has(int i, const char *needle)
{
	assert_true(i < b.ncomplaints);
	if (!strstr(b.complaint[i], needle))
		fail_msg("complaint %d is '%s', expected it to mention '%s'", i, b.complaint[i],
			 needle);
}

/* Nothing given: only the default hostname, nothing else, no complaint. */
static void test_nothing(void **state)
{
	(void)state;
	netconf_from_cmdline("console=ttyS0 quiet", &b);
	assert_string_equal(b.req.hostname, "kiln");
	assert_false(b.req.has_address);
	assert_false(b.req.has_gateway);
	assert_false(b.req.has_dns);
	assert_int_equal(b.req.mtu, 0);
	assert_string_equal(b.req.iface, "eth0");
	assert_int_equal(b.ncomplaints, 0);
}

static void test_all_valid_ipv4(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.hostname=box1 kiln.iface=eth1 kiln.ip=10.0.2.15/24 "
			     "kiln.gw=10.0.2.2 kiln.dns=10.0.2.3,1.1.1.1 kiln.mtu=1400",
			     &b);
	assert_int_equal(b.ncomplaints, 0);
	assert_string_equal(b.req.hostname, "box1");
	assert_string_equal(b.req.iface, "eth1");
	assert_true(b.req.has_address);
	addr_is(&b.req.address, AF_INET, "10.0.2.15");
	assert_int_equal(b.req.address.prefix, 24);
	assert_true(b.req.has_gateway);
	addr_is(&b.req.gateway, AF_INET, "10.0.2.2");
	assert_true(b.req.has_dns);
	assert_int_equal(b.req.dns_n, 2);
	addr_is(&b.req.dns[1], AF_INET, "1.1.1.1");
	assert_int_equal(b.req.mtu, 1400);
}

static void test_ipv6(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.ip=fd00::2/64 kiln.gw=fd00::1 kiln.dns=fd00::53", &b);
	assert_int_equal(b.ncomplaints, 0);
	addr_is(&b.req.address, AF_INET6, "fd00::2");
	assert_int_equal(b.req.address.prefix, 64);
	addr_is(&b.req.gateway, AF_INET6, "fd00::1");
	addr_is(&b.req.dns[0], AF_INET6, "fd00::53");
}

/* Each invalid value is skipped and named; the valid ones still apply. */
static void test_invalid_values_skipped(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.hostname=-bad- kiln.ip=10.0.2.15 kiln.gw=nope kiln.dns=1.1.1.1,x "
			     "kiln.mtu=67 kiln.iface=eth0",
			     &b);
	assert_string_equal(b.req.hostname, "kiln");
	assert_false(b.req.has_address);
	assert_false(b.req.has_gateway);
	assert_false(b.req.has_dns);
	assert_int_equal(b.req.mtu, 0);
	assert_int_equal(b.ncomplaints, 6);
	complaint_has(0, "kiln.hostname='-bad-'");
	complaint_has(1, "kiln.ip='10.0.2.15'"); /* no prefix */
	complaint_has(2, "kiln.gw='nope'");
	complaint_has(3, "'x' is not an IP address");
	complaint_has(4, "kiln.mtu='67'");
	complaint_has(5, "applies only with"); /* iface with nothing left to apply */
}

static void test_mtu_forms(void **state)
{
	const char *bad[] = { "kiln.mtu=",      "kiln.mtu=65536", "kiln.mtu=1500x",
			      "kiln.mtu=-1500", "kiln.mtu=+1500", "kiln.mtu=99999999999999999999" };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		netconf_from_cmdline(bad[i], &b);
		assert_int_equal(b.req.mtu, 0);
		assert_int_equal(b.ncomplaints, 1);
	}
	netconf_from_cmdline("kiln.mtu=68", &b);
	assert_int_equal(b.req.mtu, 68);
	netconf_from_cmdline("kiln.mtu=65535", &b);
	assert_int_equal(b.req.mtu, 65535);
}

/* The gateway must match the address family, as in configure. */
static void test_gateway_family(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.ip=10.0.2.15/24 kiln.gw=fd00::1", &b);
	assert_true(b.req.has_address);
	assert_false(b.req.has_gateway);
	complaint_has(0, "same family");
	/* Without an address, any family is fine. */
	netconf_from_cmdline("kiln.gw=fd00::1", &b);
	assert_true(b.req.has_gateway);
	assert_int_equal(b.ncomplaints, 0);
}

/* At most three nameservers (resolv.conf's MAXNS); an empty list is none. */
static void test_dns_limits(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.dns=1.1.1.1,1.0.0.1,8.8.8.8,8.8.4.4", &b);
	assert_false(b.req.has_dns);
	complaint_has(0, "more than 3");
	netconf_from_cmdline("kiln.dns=1.1.1.1,1.0.0.1,8.8.8.8", &b);
	assert_int_equal(b.req.dns_n, 3);
	/* Empty, like configure's "dns": []: resolv.conf without nameservers. */
	netconf_from_cmdline("kiln.dns=", &b);
	assert_true(b.req.has_dns);
	assert_int_equal(b.req.dns_n, 0);
	assert_int_equal(b.ncomplaints, 0);
}

/* Interface names follow configure's rule (1..15 bytes, no '/', ':'). */
static void test_iface(void **state)
{
	(void)state;
	netconf_from_cmdline("kiln.iface=a/b kiln.mtu=1500", &b);
	assert_string_equal(b.req.iface, "eth0");
	complaint_has(0, "not a valid interface name");
	netconf_from_cmdline("kiln.iface=0123456789abcdef kiln.mtu=1500", &b);
	assert_string_equal(b.req.iface, "eth0");
	netconf_from_cmdline("kiln.iface=0123456789abcde kiln.mtu=1500", &b);
	assert_string_equal(b.req.iface, "0123456789abcde");
}

/* An oversized value is refused as a whole, not truncated into a valid one. */
static void test_oversize(void **state)
{
	char cl[700];

	(void)state;
	snprintf(cl, sizeof(cl), "kiln.hostname=%0600d", 7);
	netconf_from_cmdline(cl, &b);
	assert_string_equal(b.req.hostname, "kiln");
	complaint_has(0, "longer than");
}

/* 64 bytes is the longest hostname (labels up to 63); the last occurrence wins. */
static void test_hostname(void **state)
{
	char cl[160], name[66];

	(void)state;
	memset(name, 'a', 64);
	name[31] = '.';
	name[64] = '\0';
	snprintf(cl, sizeof(cl), "kiln.hostname=x kiln.hostname=%s", name);
	netconf_from_cmdline(cl, &b);
	assert_string_equal(b.req.hostname, name);
	assert_int_equal(b.ncomplaints, 0);
	name[64] = 'a';
	name[65] = '\0';
	snprintf(cl, sizeof(cl), "kiln.hostname=%s", name);
	netconf_from_cmdline(cl, &b);
	assert_string_equal(b.req.hostname, "kiln");
	assert_int_equal(b.ncomplaints, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing),    cmocka_unit_test(test_all_valid_ipv4),
		cmocka_unit_test(test_ipv6),       cmocka_unit_test(test_invalid_values_skipped),
		cmocka_unit_test(test_mtu_forms),  cmocka_unit_test(test_gateway_family),
		cmocka_unit_test(test_dns_limits), cmocka_unit_test(test_iface),
		cmocka_unit_test(test_oversize),   cmocka_unit_test(test_hostname),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

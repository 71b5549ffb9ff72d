/*
 * devspec: kiln-vmm's network options. --net takes exactly one backend
 * (tap=NAME or passt) with its own options, passt gets QEMU's user-mode
 * layout unless told otherwise, addresses are checked (a gateway outside
 * the guest's network, a DNS address on the guest or gateway are refused),
 * and --net-rate takes four named per-second limits. Every refusal names
 * the option.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmm/core/devspec.h"
#include "devices/net/rate_limit.h"

static char buf[512];

static int net(const char *s, struct devspec_net_cfg *c, struct err *e)
{
	snprintf(buf, sizeof(buf), "%s", s);
	return devspec_net(buf, c, e);
}

static int rate(const char *s, struct devspec_net_rate_cfg *r, struct err *e)
{
	snprintf(buf, sizeof(buf), "%s", s);
	return devspec_net_rate(buf, r, e);
}

static void test_tap(void **state)
{
	struct devspec_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("tap=kt0", &c, &e), 0);
	assert_string_equal(c.tap, "kt0");
	assert_int_equal(c.passt, 0);
	assert_null(c.ip);
	assert_null(c.gw);
	assert_int_equal(net("tap=kt0,mac=02:00:00:00:00:07,ip=10.77.0.2/24", &c, &e), 0);
	assert_string_equal(c.mac, "02:00:00:00:00:07");
	assert_string_equal(c.ip, "10.77.0.2/24");
	assert_int_equal(net("tap=kt0,gw=10.77.0.1", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "are passt's"));
	assert_int_equal(net("tap=kt0,dns=10.77.0.1", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,mac=01:00:00:00:00:01", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a unicast MAC"));
	assert_int_equal(net("tap=kt0,ip=10.77.0.2", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net ip=10.77.0.2: expected an IPv4 ADDRESS/PREFIX"));
	assert_int_equal(net("tap=kt0,ip=fd00::2/64", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/31", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/-1", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,speed=10", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown option 'speed=10'"));
}

static void test_passt_defaults_and_options(void **state)
{
	struct devspec_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("passt", &c, &e), 0);
	assert_int_equal(c.passt, 1);
	assert_null(c.tap);
	assert_string_equal(c.ip, "10.0.2.15/24");
	assert_string_equal(c.gw, "10.0.2.2");
	assert_string_equal(c.dns, "10.0.2.3");
	assert_int_equal(net("passt,mac=02:00:00:00:00:09,ip=192.168.7.20/24,gw=192.168.7.1,dns=192.168.7.3", &c, &e), 0);
	assert_string_equal(c.ip, "192.168.7.20/24");
	assert_string_equal(c.gw, "192.168.7.1");
	assert_string_equal(c.dns, "192.168.7.3");
	/* The gateway must be on the guest's network and not the guest. */
	assert_int_equal(net("passt,gw=10.0.3.1", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net gw=10.0.3.1: must be another address in the guest's network 10.0.2.15/24"));
	assert_int_equal(net("passt,gw=10.0.2.15", &c, &e), -EINVAL);
	assert_int_equal(net("passt,dns=10.0.2.2", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net dns=10.0.2.2: must differ"));
	assert_int_equal(net("passt,dns=resolver.example", &c, &e), -EINVAL);
	assert_int_equal(net("passt,dns=::1", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net dns=::1: not an IPv4 address"));
	/* resolver=: where passt sends that DNS; IPv4, and passt's only. */
	assert_null(c.resolver);
	assert_int_equal(net("passt,resolver=10.0.0.53", &c, &e), 0);
	assert_string_equal(c.resolver, "10.0.0.53");
	assert_int_equal(net("passt,resolver=dns.example", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net resolver=dns.example: not an IPv4 address"));
	assert_int_equal(net("passt,resolver=127.0.0.53", &c, &e), 0); /* a local stub resolver */
	assert_int_equal(net("passt,resolver=10.0.2.3", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net resolver=10.0.2.3: must be a unicast address"));
	assert_int_equal(net("passt,resolver=0.0.0.0", &c, &e), -EINVAL);
	assert_int_equal(net("passt,resolver=224.0.0.251", &c, &e), -EINVAL);
	assert_int_equal(net("passt,resolver=255.255.255.255", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,resolver=10.0.0.53", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "resolver= are passt's"));
}

static void test_one_backend(void **state)
{
	struct devspec_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("mac=02:00:00:00:00:01", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "exactly one backend"));
	assert_int_equal(net("tap=kt0,passt", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "exactly one backend"));
	assert_int_equal(net("", &c, &e), -EINVAL);
	assert_int_equal(net("tap=", &c, &e), -EINVAL);
}

static void test_net_rate(void **state)
{
	struct devspec_net_rate_cfg r = { 0 };
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(rate("tx_bytes=1000000,rx_packets=500", &r, &e), 0);
	assert_int_equal(r.tx_bytes, 1000000);
	assert_int_equal(r.rx_packets, 500);
	assert_int_equal(r.tx_packets, 0);
	assert_int_equal(r.rx_bytes, 0);
	/* A second --net-rate adds to the first. */
	assert_int_equal(rate("tx_packets=100,rx_bytes=0", &r, &e), 0);
	assert_int_equal(r.tx_bytes, 1000000);
	assert_int_equal(r.tx_packets, 100);
	assert_int_equal(rate("tx_byte=1", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown field 'tx_byte=1'"));
	assert_int_equal(rate("tx_bytes", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=-1", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: '-1' is not a number"));
	assert_int_equal(rate("tx_bytes=1M", &r, &e), -EINVAL);
	/* num_parse: no sign, no space, only digits; same message as any bad number. */
	assert_int_equal(rate("tx_bytes=+5", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: '+5' is not a number"));
	assert_int_equal(rate("tx_bytes= 5", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: ' 5' is not a number"));
	assert_int_equal(rate("tx_bytes=0x10", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=18446744073709551616", &r, &e), -EINVAL); /* 2^64 */
	assert_int_equal(rate("rx_bytes=281474976710657", &r, &e), -EINVAL); /* 2^48 + 1 */
	assert_int_equal(rate("rx_bytes=281474976710656", &r, &e), 0);
	assert_int_equal(rate("", &r, &e), -EINVAL);
}

static void test_ip4_prefix(void **state)
{
	struct net_addr a;
	unsigned p;

	(void)state;
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/24", &a, &p), 0);
	assert_int_equal(p, 24);
	assert_int_equal(a.family, NET_AF4);
	assert_int_equal(a.b[3], 15);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/0", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/24x", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2/24", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("/24", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/+24", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/ 24", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/-24", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/31", &a, &p), -EINVAL);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/4294967320", &a, &p), -EINVAL); /* 2^32 + 24 */
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/1", &a, &p), 0);
	assert_int_equal(p, 1);
	assert_int_equal(devspec_ip4_prefix("10.0.2.15/30", &a, &p), 0);
	assert_int_equal(p, 30);
}

/* devspec_net keeps the prefix it checked, for the passt backend. */
static void test_net_prefix(void **state)
{
	struct devspec_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("passt", &c, &e), 0);
	assert_int_equal(c.prefix, 24);
	assert_int_equal(net("passt,ip=10.1.0.9/16,gw=10.1.200.1", &c, &e), 0);
	assert_int_equal(c.prefix, 16);
	assert_int_equal(net("tap=kt0", &c, &e), 0);
	assert_int_equal(c.prefix, 0);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/+24", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net ip=10.77.0.2/+24: expected an IPv4 ADDRESS/PREFIX"));
}

static int vsock(const char *s, struct devspec_vsock_cfg *v, struct err *e)
{
	snprintf(buf, sizeof(buf), "%s", s);
	return devspec_vsock(buf, v, e);
}

static void test_vsock_cid(void **state)
{
	struct devspec_vsock_cfg v;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(vsock("/run/v.sock", &v, &e), 0);
	assert_int_equal(v.cid, 3);
	assert_int_equal(vsock("/run/v.sock,cid=3", &v, &e), 0);
	assert_int_equal(v.cid, 3);
	assert_int_equal(vsock("/run/v.sock,cid=4294967294", &v, &e), 0);
	assert_int_equal(v.cid, 4294967294u);
	static const char *const bad[] = { "2", "4294967295", "", "+5", " 5", "5 ", "-5", "0x10", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char s[64];

		snprintf(s, sizeof(s), "/run/v.sock,cid=%s", bad[i]);
		assert_int_equal(vsock(s, &v, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "must be a number from 3 to 4294967294"));
	}
	assert_int_equal(vsock("/run/v.sock,port=5", &v, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown option"));
}

static int share(const char *s, struct devspec_share_cfg *c, struct err *e)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s", s);
	return devspec_share(buf, c, e);
}

/* --share DIR:TAG[:ro], or fd=N:TAG[:ro] for a directory kilnd opened. */
static void test_share_forms(void **state)
{
	struct devspec_share_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(share("/srv/data:kiln0:ro", &c, &e), 0);
	assert_string_equal(c.host_dir, "/srv/data");
	assert_int_equal(c.host_fd, -1);
	assert_string_equal(c.tag, "kiln0");
	assert_int_equal(c.read_only, 1);
	assert_int_equal(share("fd=7:kiln1", &c, &e), 0);
	assert_null(c.host_dir);
	assert_int_equal(c.host_fd, 7);
	assert_string_equal(c.tag, "kiln1");
	assert_int_equal(c.read_only, 0);
	assert_int_equal(share("fd=12:t:ro", &c, &e), 0);
	assert_int_equal(c.host_fd, 12);
	assert_int_equal(c.read_only, 1);
	/* A directory named like that is still reachable as a path. */
	assert_int_equal(share("./fd=3:t", &c, &e), 0);
	assert_string_equal(c.host_dir, "./fd=3");
	/* Never stdio, never a non-number. */
	static const char *const bad[] = { "fd=0:t", "fd=2:t", "fd=:t", "fd=3x:t", "fd=-4:t", "fd= 3:t",
					   "fd=4294967299:t", "fd=0x5:t" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(share(bad[i], &c, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "fd=N"));
	}
	assert_int_equal(share("nodir", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "fd=N:TAG"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tap),
		cmocka_unit_test(test_passt_defaults_and_options),
		cmocka_unit_test(test_one_backend),
		cmocka_unit_test(test_net_rate),
		cmocka_unit_test(test_ip4_prefix),
		cmocka_unit_test(test_net_prefix),
		cmocka_unit_test(test_vsock_cid),
		cmocka_unit_test(test_share_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

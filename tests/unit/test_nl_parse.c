/*
 * api/runtime/nl_parse.c: rtnetlink dumps as a network namespace made by
 * netavark or CNI gives them (loopback, one veth with IPv4 and IPv6
 * addresses and default routes), split over several reads; the pick of
 * the VM's interface; malformed and oversized dumps refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
/* net/if.h before the kernel headers: linux/if.h then skips its copy */
#include <net/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <cmocka.h>

#include "api/runtime/nl_parse.h"

static uint8_t buf[65536];
static size_t len;
static struct err e;

/* A message of type with the fixed header fix[fixlen]; attributes follow. */
static struct nlmsghdr *msg(uint16_t type, const void *fix, size_t fixlen)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + len);

	memset(h, 0, NLMSG_SPACE(fixlen));
	h->nlmsg_type = type;
	h->nlmsg_len = NLMSG_LENGTH(fixlen);
	memcpy(NLMSG_DATA(h), fix, fixlen);
	return h;
}

static void attr(struct nlmsghdr *h, uint16_t type, const void *p, size_t n)
{
	struct rtattr *a = (struct rtattr *)((uint8_t *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(n);
	memcpy(RTA_DATA(a), p, n);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static void done(struct nlmsghdr *h)
{
	len += NLMSG_ALIGN(h->nlmsg_len);
}

static void link_msg(int index, const char *name, const uint8_t *mac, unsigned type, unsigned flags)
{
	struct ifinfomsg ifi = { .ifi_index = index,
				 .ifi_type = (unsigned short)type,
				 .ifi_flags = flags };
	struct nlmsghdr *h = msg(RTM_NEWLINK, &ifi, sizeof(ifi));
	uint32_t mtu = 1500;

	attr(h, IFLA_IFNAME, name, strlen(name) + 1);
	if (mac)
		attr(h, IFLA_ADDRESS, mac, 6);
	attr(h, IFLA_MTU, &mtu, 4);
	done(h);
}

static void addr_msg(int index, int family, const char *text, unsigned prefix)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family,
				 .ifa_prefixlen = (uint8_t)prefix,
				 .ifa_index = (unsigned)index };
	struct nlmsghdr *h = msg(RTM_NEWADDR, &ifa, sizeof(ifa));
	uint8_t a[16];

	inet_pton(family, text, a);
	attr(h, IFA_ADDRESS, a, family == AF_INET ? 4 : 16);
	if (family == AF_INET)
		attr(h, IFA_LOCAL, a, 4);
	done(h);
}

static void route_msg(int family, const char *gw, int oif, unsigned dst_len)
{
	struct rtmsg rt = { .rtm_family = (uint8_t)family,
			    .rtm_dst_len = (uint8_t)dst_len,
			    .rtm_table = RT_TABLE_MAIN,
			    .rtm_type = RTN_UNICAST };
	struct nlmsghdr *h = msg(RTM_NEWROUTE, &rt, sizeof(rt));
	uint8_t a[16];
	uint32_t o = (uint32_t)oif;

	inet_pton(family, gw, a);
	attr(h, RTA_GATEWAY, a, family == AF_INET ? 4 : 16);
	attr(h, RTA_OIF, &o, 4);
	done(h);
}

static void done_msg(void)
{
	int zero = 0;

	done(msg(NLMSG_DONE, &zero, sizeof(zero)));
}

static const uint8_t mac[6] = { 0x0a, 0x58, 0x0a, 0x58, 0x00, 0x05 };

static void netavark(void)
{
	len = 0;
	link_msg(1, "lo", NULL, ARPHRD_LOOPBACK, IFF_UP | IFF_LOOPBACK);
	link_msg(2, "eth0", mac, ARPHRD_ETHER, IFF_UP);
	addr_msg(1, AF_INET, "127.0.0.1", 8);
	addr_msg(2, AF_INET, "10.88.0.5", 16);
	addr_msg(2, AF_INET6, "fd00::5", 64);
	route_msg(AF_INET, "10.88.0.1", 2, 0);
	route_msg(AF_INET, "10.99.0.1", 2, 16); /* not a default route */
	route_msg(AF_INET6, "fe80::1", 2, 0);
	done_msg();
}

static void test_netavark(void **state)
{
	struct nl_view v = { 0 };
	struct nl_iface f;
	size_t half;

	(void)state;
	netavark();
	/* two reads, split at a message boundary */
	half = NLMSG_ALIGN(((struct nlmsghdr *)buf)->nlmsg_len);
	assert_int_equal(nl_parse_dump(buf, half, &v, &e), 0);
	assert_false(v.done);
	assert_int_equal(nl_parse_dump(buf + half, len - half, &v, &e), 0);
	assert_true(v.done);
	assert_int_equal(v.nlinks, 2);
	assert_int_equal(v.naddrs, 3);
	assert_int_equal(v.nroutes, 2);
	assert_int_equal(nl_pick_iface(&v, &f, &e), 0);
	assert_string_equal(f.link.name, "eth0");
	assert_memory_equal(f.link.mac, mac, 6);
	assert_int_equal(f.link.mtu, 1500);
	assert_true(f.link.up);
	assert_int_equal(f.naddrs, 2);
	assert_int_equal(f.addrs[0].family, AF_INET);
	assert_int_equal(f.addrs[0].prefix, 16);
	assert_memory_equal(f.addrs[0].addr, "\x0a\x58\x00\x05", 4);
	assert_int_equal(f.addrs[1].family, AF_INET6);
	assert_true(f.has_gw4 && f.has_gw6);
	assert_memory_equal(f.gw4, "\x0a\x58\x00\x01", 4);
}

static void test_pick(void **state)
{
	struct nl_view v = { 0 };
	struct nl_iface f;

	(void)state;
	len = 0;
	link_msg(1, "lo", NULL, ARPHRD_LOOPBACK, IFF_UP | IFF_LOOPBACK);
	done_msg();
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_int_equal(nl_pick_iface(&v, &f, &e), -ENOENT); /* loopback only */
	memset(&v, 0, sizeof(v));
	len = 0;
	link_msg(2, "eth0", mac, ARPHRD_ETHER, IFF_UP);
	link_msg(3, "eth1", mac, ARPHRD_ETHER, IFF_UP);
	done_msg();
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_int_equal(nl_pick_iface(&v, &f, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "several interfaces (eth0, eth1)"));
	memset(&v, 0, sizeof(v));
	len = 0;
	link_msg(2, "wg0", NULL, ARPHRD_NONE, IFF_UP);
	done_msg();
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_int_equal(nl_pick_iface(&v, &f, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "wg0 is not an Ethernet interface"));
	/* an Ethernet link without its address */
	memset(&v, 0, sizeof(v));
	len = 0;
	link_msg(2, "eth0", NULL, ARPHRD_ETHER, IFF_UP);
	done_msg();
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_int_equal(nl_pick_iface(&v, &f, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "eth0 has no Ethernet address"));
	/* ipip's and sit's down tunl0 and sit0 beside the veth: not counted */
	memset(&v, 0, sizeof(v));
	len = 0;
	link_msg(1, "lo", NULL, ARPHRD_LOOPBACK, IFF_UP | IFF_LOOPBACK);
	link_msg(2, "tunl0", NULL, ARPHRD_TUNNEL, 0);
	link_msg(3, "sit0", NULL, ARPHRD_SIT, 0);
	link_msg(4, "eth0", mac, ARPHRD_ETHER, IFF_UP);
	done_msg();
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_int_equal(nl_pick_iface(&v, &f, &e), 0);
	assert_string_equal(f.link.name, "eth0");
}

static void test_hostile(void **state)
{
	struct nl_view v = { 0 };
	struct nlmsghdr *h;
	struct rtattr *a;
	int err;

	(void)state;
	netavark();
	/* cut anywhere inside a message: refused, never read past */
	for (size_t cut = 1; cut < NLMSG_HDRLEN + 8; cut++) {
		memset(&v, 0, sizeof(v));
		int r = nl_parse_dump(buf, cut, &v, &e);
		assert_true(r == 0 || r == -EINVAL);
	}
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, 40, &v, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "length is out of bounds"));
	/* an attribute longer than its message */
	netavark();
	h = (struct nlmsghdr *)buf;
	a = (struct rtattr *)((uint8_t *)h + NLMSG_LENGTH(sizeof(struct ifinfomsg)));
	a->rta_len = 200;
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "attribute's length is out of bounds"));
	/* a name without its NUL */
	len = 0;
	h = msg(RTM_NEWLINK, &(struct ifinfomsg){ .ifi_index = 2 }, sizeof(struct ifinfomsg));
	attr(h, IFLA_IFNAME, "eth0eth0eth0eth0", 16);
	done(h);
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "name is not a C string"));
	/* an IPv4 address of 16 bytes */
	len = 0;
	h = msg(RTM_NEWADDR, &(struct ifaddrmsg){ .ifa_family = AF_INET, .ifa_prefixlen = 8 },
		sizeof(struct ifaddrmsg));
	attr(h, IFA_LOCAL, "0123456789abcdef", 16);
	done(h);
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EINVAL);
	/* a prefix over 32 */
	len = 0;
	h = msg(RTM_NEWADDR, &(struct ifaddrmsg){ .ifa_family = AF_INET, .ifa_prefixlen = 33 },
		sizeof(struct ifaddrmsg));
	done(h);
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EINVAL);
	/* the kernel's error */
	len = 0;
	err = -EPERM;
	struct nlmsgerr ne = { .error = err };
	done(msg(NLMSG_ERROR, &ne, sizeof(ne)));
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EPERM);
	assert_string_equal(e.msg, "netlink: Operation not permitted");
	assert_false(v.acked);
	/* a dump the kernel marks interrupted is not taken for whole */
	len = 0;
	h = msg(RTM_NEWADDR, &(struct ifaddrmsg){ .ifa_family = AF_INET, .ifa_prefixlen = 8 },
		sizeof(struct ifaddrmsg));
	h->nlmsg_flags |= NLM_F_DUMP_INTR;
	done(h);
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -EAGAIN);
	assert_non_null(strstr(e.msg, "interrupted"));
	/* an acknowledgement ends the reading, and what follows is not read */
	len = 0;
	ne.error = 0;
	done(msg(NLMSG_ERROR, &ne, sizeof(ne)));
	ne.error = -EPERM;
	done(msg(NLMSG_ERROR, &ne, sizeof(ne)));
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), 0);
	assert_true(v.acked);
	/* more links than kept */
	len = 0;
	for (int i = 0; i <= NL_LINKS_MAX; i++)
		link_msg(i + 1, "x", mac, ARPHRD_ETHER, 0);
	memset(&v, 0, sizeof(v));
	assert_int_equal(nl_parse_dump(buf, len, &v, &e), -E2BIG);
	assert_non_null(strstr(e.msg, "more than 16 links"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netavark),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

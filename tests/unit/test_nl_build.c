/*
 * The rtnetlink requests that join a container's interface to the VM's
 * TAP (api/runtime/nl_build.c), read back as the kernel reads them:
 * header, fixed part, attributes, nests and their lengths.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "api/runtime/nl_build.h"

/* The attribute of type in [p, p + n) (nested flag ignored), its payload
 * and length; every length checked against what holds it. */
static const uint8_t *find(const uint8_t *p, size_t n, unsigned type, size_t *len)
{
	while (n >= sizeof(struct rtattr)) {
		struct rtattr a;

		memcpy(&a, p, sizeof(a));
		assert_true(a.rta_len >= sizeof(a) && a.rta_len <= n);
		if ((a.rta_type & NLA_TYPE_MASK) == type) {
			*len = a.rta_len - RTA_LENGTH(0);
			return p + RTA_LENGTH(0);
		}
		if (RTA_ALIGN(a.rta_len) >= n)
			break;
		p += RTA_ALIGN(a.rta_len);
		n -= RTA_ALIGN(a.rta_len);
	}
	return NULL;
}

/* The message's header checked; its attributes after a fixed part of fix bytes. */
static const uint8_t *attrs(const struct nl_req *r, uint16_t type, uint16_t flags, size_t fix,
			    size_t *n)
{
	struct nlmsghdr h;

	memcpy(&h, r->buf, sizeof(h));
	assert_int_equal(h.nlmsg_len, r->len);
	assert_int_equal(h.nlmsg_type, type);
	assert_int_equal(h.nlmsg_flags, NLM_F_REQUEST | flags);
	assert_int_equal(h.nlmsg_seq, 7);
	*n = r->len - NLMSG_HDRLEN - NLMSG_ALIGN(fix);
	return r->buf + NLMSG_HDRLEN + NLMSG_ALIGN(fix);
}

static void test_dumps_and_links(void **state)
{
	struct nl_req r;
	struct ifinfomsg ifi;
	const uint8_t *a, *v;
	size_t n, len;
	uint32_t mtu;

	(void)state;
	assert_int_equal(nl_build_dump(&r, RTM_GETROUTE, 7), 0);
	attrs(&r, RTM_GETROUTE, NLM_F_DUMP, sizeof(struct rtmsg), &n);
	assert_int_equal(n, 0);
	assert_int_equal(nl_build_dump(&r, RTM_GETLINK, 7), 0);
	assert_int_equal(r.len, NLMSG_LENGTH(sizeof(struct ifinfomsg)));

	assert_int_equal(nl_build_link_up(&r, 7, 5, 1450), 0);
	a = attrs(&r, RTM_NEWLINK, NLM_F_ACK, sizeof(ifi), &n);
	memcpy(&ifi, r.buf + NLMSG_HDRLEN, sizeof(ifi));
	assert_int_equal(ifi.ifi_index, 5);
	assert_int_equal(ifi.ifi_flags & IFF_UP, IFF_UP);
	assert_int_equal(ifi.ifi_change, IFF_UP);
	assert_non_null(v = find(a, n, IFLA_MTU, &len));
	assert_int_equal(len, 4);
	memcpy(&mtu, v, 4);
	assert_int_equal(mtu, 1450);
	/* no MTU: left as it is */
	assert_int_equal(nl_build_link_up(&r, 7, 5, 0), 0);
	a = attrs(&r, RTM_NEWLINK, NLM_F_ACK, sizeof(ifi), &n);
	assert_null(find(a, n, IFLA_MTU, &len));

	assert_int_equal(nl_build_link_del(&r, 7, "kt0"), 0);
	a = attrs(&r, RTM_DELLINK, NLM_F_ACK, sizeof(ifi), &n);
	assert_non_null(v = find(a, n, IFLA_IFNAME, &len));
	assert_int_equal(len, 4);
	assert_string_equal((const char *)v, "kt0");
	/* a name over IFNAMSIZ - 1 is not sent cut */
	assert_int_equal(nl_build_link_del(&r, 7, "0123456789abcdef"), -E2BIG);
}

static void test_ingress(void **state)
{
	struct nl_req r;
	struct tcmsg tc;
	const uint8_t *a, *v;
	size_t n, len;

	(void)state;
	assert_int_equal(nl_build_ingress(&r, 7, 9), 0);
	a = attrs(&r, RTM_NEWQDISC, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, sizeof(tc), &n);
	memcpy(&tc, r.buf + NLMSG_HDRLEN, sizeof(tc));
	assert_int_equal(tc.tcm_ifindex, 9);
	assert_int_equal(tc.tcm_handle, 0xffff0000u);
	assert_int_equal(tc.tcm_parent, TC_H_INGRESS);
	assert_non_null(v = find(a, n, TCA_KIND, &len));
	assert_string_equal((const char *)v, "ingress");
	/* its removal names the same qdisc */
	assert_int_equal(nl_build_ingress_del(&r, 7, 9), 0);
	attrs(&r, RTM_DELQDISC, NLM_F_ACK, sizeof(tc), &n);
	memcpy(&tc, r.buf + NLMSG_HDRLEN, sizeof(tc));
	assert_int_equal(tc.tcm_ifindex, 9);
	assert_int_equal(tc.tcm_handle, 0xffff0000u);
	assert_int_equal(tc.tcm_parent, TC_H_INGRESS);
}

static void test_redirect(void **state)
{
	struct nl_req r;
	struct tcmsg tc;
	struct tc_mirred m;
	const uint8_t *a, *o, *act, *one, *opt, *v;
	size_t n, on, actn, onen, optn, len;

	(void)state;
	assert_int_equal(nl_build_redirect(&r, 7, 2, 3), 0);
	a = attrs(&r, RTM_NEWTFILTER, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, sizeof(tc), &n);
	memcpy(&tc, r.buf + NLMSG_HDRLEN, sizeof(tc));
	assert_int_equal(tc.tcm_ifindex, 2);
	assert_int_equal(tc.tcm_parent, 0xffff0000u); /* ingress, ffff: */
	assert_int_equal(TC_H_MIN(tc.tcm_info), htons(ETH_P_ALL));
	assert_int_equal(TC_H_MAJ(tc.tcm_info) >> 16, 1);
	assert_non_null(v = find(a, n, TCA_KIND, &len));
	assert_string_equal((const char *)v, "matchall");
	/* options > matchall's action list > action 1 > mirred's parameters */
	assert_non_null(o = find(a, n, TCA_OPTIONS, &on));
	assert_non_null(act = find(o, on, TCA_MATCHALL_ACT, &actn));
	assert_non_null(one = find(act, actn, 1, &onen));
	assert_non_null(v = find(one, onen, TCA_ACT_KIND, &len));
	assert_string_equal((const char *)v, "mirred");
	assert_non_null(opt = find(one, onen, TCA_ACT_OPTIONS, &optn));
	assert_non_null(v = find(opt, optn, TCA_MIRRED_PARMS, &len));
	assert_int_equal(len, sizeof(m));
	memcpy(&m, v, sizeof(m));
	assert_int_equal(m.eaction, TCA_EGRESS_REDIR);
	assert_int_equal(m.action, TC_ACT_STOLEN);
	assert_int_equal(m.ifindex, 3);
	/* each nest ends where the message does: lengths cover what is in them */
	assert_int_equal(o + on, r.buf + r.len);
	assert_int_equal(opt + optn, r.buf + r.len);
	/* its removal names the same filter: interface, parent, priority */
	struct tcmsg del;

	assert_int_equal(nl_build_redirect_del(&r, 7, 2), 0);
	attrs(&r, RTM_DELTFILTER, NLM_F_ACK, sizeof(del), &n);
	memcpy(&del, r.buf + NLMSG_HDRLEN, sizeof(del));
	assert_int_equal(del.tcm_ifindex, 2);
	assert_int_equal(del.tcm_parent, tc.tcm_parent);
	assert_int_equal(del.tcm_info, tc.tcm_info);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dumps_and_links),
		cmocka_unit_test(test_ingress),
		cmocka_unit_test(test_redirect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

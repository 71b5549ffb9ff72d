/* rtnetlink requests for the container's network; see nl_build.h. */
#include "api/runtime/nl_build.h"

#include <errno.h>
/* net/if.h before the kernel headers: linux/if.h then skips its copy */
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <string.h>
#include <sys/socket.h>

#define REDIRECT_PRIO 1 /* the filter's priority: the only one kiln adds */

/* n bytes of data at the end of the message, padded to 4; the message's
 * length follows. Sticky overflow: a later put does nothing. */
static void *put(struct nl_req *r, const void *data, size_t n)
{
	size_t at = r->len, room = NLMSG_ALIGN(n);
	struct nlmsghdr *h = (struct nlmsghdr *)r->buf;

	if (r->overflow || room > sizeof(r->buf) - at) {
		r->overflow = 1;
		return NULL;
	}
	memset(r->buf + at, 0, room);
	if (data)
		memcpy(r->buf + at, data, n);
	r->len = at + room;
	h->nlmsg_len = (uint32_t)r->len;
	return r->buf + at;
}

static void start(struct nl_req *r, uint16_t type, uint16_t flags, uint32_t seq, const void *hdr,
		  size_t hdr_len)
{
	struct nlmsghdr h = { .nlmsg_type = type,
			      .nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags),
			      .nlmsg_seq = seq };

	memset(r, 0, sizeof(*r));
	put(r, &h, sizeof(h));
	put(r, hdr, hdr_len);
}

static void attr(struct nl_req *r, uint16_t type, const void *data, size_t n)
{
	struct rtattr a = { .rta_len = (unsigned short)RTA_LENGTH(n), .rta_type = type };

	if (put(r, &a, sizeof(a)))
		put(r, data, n);
}

static void attr_str(struct nl_req *r, uint16_t type, const char *s)
{
	attr(r, type, s, strlen(s) + 1);
}

static void nest_open(struct nl_req *r, uint16_t type)
{
	if (r->depth == sizeof(r->nest) / sizeof(r->nest[0])) {
		r->overflow = 1;
		return;
	}
	r->nest[r->depth++] = r->len;
	attr(r, (uint16_t)(type | NLA_F_NESTED), NULL, 0);
}

/* The nest's length: everything put since it opened. */
static void nest_close(struct nl_req *r)
{
	struct rtattr a;
	size_t at;

	if (r->overflow || r->depth == 0)
		return;
	at = r->nest[--r->depth];
	memcpy(&a, r->buf + at, sizeof(a));
	a.rta_len = (unsigned short)(r->len - at);
	memcpy(r->buf + at, &a, sizeof(a));
}

static int done(const struct nl_req *r)
{
	return r->overflow || r->depth ? -E2BIG : 0;
}

int nl_build_dump(struct nl_req *r, uint16_t type, uint32_t seq)
{
	/* Every dump's header starts with its family: AF_UNSPEC, all. */
	union {
		struct ifinfomsg link;
		struct ifaddrmsg addr;
		struct rtmsg route;
	} hdr = { 0 };
	size_t n = type == RTM_GETLINK ? sizeof(hdr.link)
		: type == RTM_GETADDR  ? sizeof(hdr.addr)
				       : sizeof(hdr.route);

	start(r, type, NLM_F_DUMP, seq, &hdr, n);
	return done(r);
}

int nl_build_link_up(struct nl_req *r, uint32_t seq, int ifindex, unsigned mtu)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC,
				 .ifi_index = ifindex,
				 .ifi_flags = IFF_UP,
				 .ifi_change = IFF_UP };
	uint32_t m = mtu;

	start(r, RTM_NEWLINK, NLM_F_ACK, seq, &ifi, sizeof(ifi));
	if (mtu)
		attr(r, IFLA_MTU, &m, sizeof(m));
	return done(r);
}

int nl_build_link_del(struct nl_req *r, uint32_t seq, const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };

	if (strlen(name) >= IFNAMSIZ)
		return -E2BIG;
	start(r, RTM_DELLINK, NLM_F_ACK, seq, &ifi, sizeof(ifi));
	attr_str(r, IFLA_IFNAME, name);
	return done(r);
}

static struct tcmsg ingress_tc(int ifindex)
{
	return (struct tcmsg){ .tcm_family = AF_UNSPEC,
			       .tcm_ifindex = ifindex,
			       .tcm_handle = TC_H_MAKE(TC_H_INGRESS, 0),
			       .tcm_parent = TC_H_INGRESS };
}

int nl_build_ingress(struct nl_req *r, uint32_t seq, int ifindex)
{
	struct tcmsg tc = ingress_tc(ifindex);

	start(r, RTM_NEWQDISC, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, &tc, sizeof(tc));
	attr_str(r, TCA_KIND, "ingress");
	return done(r);
}

int nl_build_ingress_del(struct nl_req *r, uint32_t seq, int ifindex)
{
	struct tcmsg tc = ingress_tc(ifindex);

	start(r, RTM_DELQDISC, NLM_F_ACK, seq, &tc, sizeof(tc));
	return done(r);
}

/* The redirect filter's header on from's ingress: kiln's priority above,
 * the protocol (all) below, in network order. */
static struct tcmsg redirect_tc(int from)
{
	return (struct tcmsg){ .tcm_family = AF_UNSPEC,
			       .tcm_ifindex = from,
			       .tcm_parent = TC_H_MAKE(TC_H_INGRESS, 0),
			       .tcm_info = TC_H_MAKE(REDIRECT_PRIO << 16, htons(ETH_P_ALL)) };
}

int nl_build_redirect_del(struct nl_req *r, uint32_t seq, int from)
{
	struct tcmsg tc = redirect_tc(from);

	start(r, RTM_DELTFILTER, NLM_F_ACK, seq, &tc, sizeof(tc));
	return done(r);
}

int nl_build_redirect(struct nl_req *r, uint32_t seq, int from, int to)
{
	struct tcmsg tc = redirect_tc(from);
	struct tc_mirred m = { .action = TC_ACT_STOLEN,
			       .eaction = TCA_EGRESS_REDIR,
			       .ifindex = (uint32_t)to };

	start(r, RTM_NEWTFILTER, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, &tc, sizeof(tc));
	attr_str(r, TCA_KIND, "matchall");
	nest_open(r, TCA_OPTIONS);
	nest_open(r, TCA_MATCHALL_ACT);
	nest_open(r, 1); /* the first (only) action */
	attr_str(r, TCA_ACT_KIND, "mirred");
	nest_open(r, TCA_ACT_OPTIONS);
	attr(r, TCA_MIRRED_PARMS, &m, sizeof(m));
	nest_close(r);
	nest_close(r);
	nest_close(r);
	nest_close(r);
	return done(r);
}

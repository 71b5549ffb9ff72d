/* The container's network from rtnetlink dumps; see nl_parse.h. */
#include "api/runtime/nl_parse.h"

#include <errno.h>
/* net/if.h before the kernel headers: linux/if.h then skips its copy */
#include <net/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* The attributes after a fixed header of hdr bytes in message m: each
 * handed to fn with its payload and length, every length checked. */
typedef int attr_fn(void *ctx, unsigned type, const uint8_t *p, size_t len, struct err *e);

/* A message: its header (copied out) and its bytes, which need not be
 * aligned (every field is read with memcpy). */
struct msg {
	struct nlmsghdr h;
	const uint8_t *bytes;
};

static int each_attr(const struct msg *m, size_t hdr, attr_fn *fn, void *ctx, struct err *e)
{
	const uint8_t *p = m->bytes + NLMSG_HDRLEN + NLMSG_ALIGN(hdr);
	const uint8_t *end = m->bytes + m->h.nlmsg_len;

	if (m->h.nlmsg_len < NLMSG_HDRLEN + NLMSG_ALIGN(hdr))
		return err_set(e, EINVAL, "netlink: a message shorter than its header");
	while (end - p >= (ptrdiff_t)sizeof(struct rtattr)) {
		struct rtattr a;

		memcpy(&a, p, sizeof(a));
		if (a.rta_len < sizeof(a) || a.rta_len > end - p)
			return err_set(e, EINVAL,
				       "netlink: an attribute's length is out of bounds");
		if (fn(ctx, a.rta_type & NLA_TYPE_MASK, p + RTA_LENGTH(0),
		       a.rta_len - RTA_LENGTH(0), e) < 0)
			return -EINVAL;
		if (RTA_ALIGN(a.rta_len) >= (size_t)(end - p))
			break;
		p += RTA_ALIGN(a.rta_len);
	}
	return 0;
}

static int link_attr(void *ctx, unsigned type, const uint8_t *p, size_t len, struct err *e)
{
	struct nl_link *l = ctx;
	uint32_t mtu;

	switch (type) {
	case IFLA_IFNAME:
		if (len == 0 || len > NL_IFNAME_MAX || !memchr(p, '\0', len))
			return err_set(e, EINVAL, "netlink: a link's name is not a C string");
		memcpy(l->name, p, strnlen((const char *)p, len) + 1);
		return 0;
	case IFLA_ADDRESS:
		/* Ethernet only: a TAP takes a 6-byte MAC */
		if (len == 6) {
			memcpy(l->mac, p, 6);
			l->has_mac = true;
		}
		return 0;
	case IFLA_MTU:
		if (len != 4)
			return err_set(e, EINVAL, "netlink: IFLA_MTU of %zu bytes", len);
		memcpy(&mtu, p, 4);
		l->mtu = mtu;
		return 0;
	default:
		return 0;
	}
}

static int on_link(const struct msg *m, struct nl_view *v, struct err *e)
{
	struct ifinfomsg ifi;
	struct nl_link *l;

	if (m->h.nlmsg_len < NLMSG_LENGTH(sizeof(ifi)))
		return err_set(e, EINVAL, "netlink: RTM_NEWLINK shorter than ifinfomsg");
	if (v->nlinks >= NL_LINKS_MAX)
		return err_set(e, E2BIG, "the network namespace has more than %d links",
			       NL_LINKS_MAX);
	memcpy(&ifi, m->bytes + NLMSG_HDRLEN, sizeof(ifi));
	l = &v->links[v->nlinks];
	memset(l, 0, sizeof(*l));
	l->index = ifi.ifi_index;
	l->loopback = ifi.ifi_type == ARPHRD_LOOPBACK || (ifi.ifi_flags & IFF_LOOPBACK);
	l->up = ifi.ifi_flags & IFF_UP;
	l->ether = ifi.ifi_type == ARPHRD_ETHER;
	if (each_attr(m, sizeof(ifi), link_attr, l, e) < 0)
		return -EINVAL;
	v->nlinks++;
	return 0;
}

struct addr_ctx {
	struct nl_addr *a;
	bool local, address;
	uint8_t addr_bytes[16];
};

static int addr_attr(void *ctx, unsigned type, const uint8_t *p, size_t len, struct err *e)
{
	struct addr_ctx *c = ctx;
	size_t want = c->a->family == AF_INET ? 4 : 16;

	if (type != IFA_LOCAL && type != IFA_ADDRESS)
		return 0;
	if (len != want)
		return err_set(e, EINVAL, "netlink: an address of %zu bytes for its family", len);
	/* IFA_LOCAL is the interface's own address (IFA_ADDRESS is the
	 * peer's on a point-to-point link); IPv6 has only IFA_ADDRESS. */
	if (type == IFA_LOCAL) {
		memcpy(c->a->addr, p, len);
		c->local = true;
	} else {
		memcpy(c->addr_bytes, p, len);
		c->address = true;
	}
	return 0;
}

static int on_addr(const struct msg *m, struct nl_view *v, struct err *e)
{
	struct ifaddrmsg ifa;
	struct addr_ctx c;

	if (m->h.nlmsg_len < NLMSG_LENGTH(sizeof(ifa)))
		return err_set(e, EINVAL, "netlink: RTM_NEWADDR shorter than ifaddrmsg");
	memcpy(&ifa, m->bytes + NLMSG_HDRLEN, sizeof(ifa));
	if (ifa.ifa_family != AF_INET && ifa.ifa_family != AF_INET6)
		return 0;
	if (ifa.ifa_prefixlen > (ifa.ifa_family == AF_INET ? 32 : 128))
		return err_set(e, EINVAL, "netlink: prefix length %u", ifa.ifa_prefixlen);
	if (v->naddrs >= NL_ADDRS_MAX)
		return err_set(e, E2BIG, "the network namespace has more than %d addresses",
			       NL_ADDRS_MAX);
	memset(&c, 0, sizeof(c));
	c.a = &v->addrs[v->naddrs].a;
	memset(c.a, 0, sizeof(*c.a));
	c.a->family = ifa.ifa_family;
	c.a->prefix = ifa.ifa_prefixlen;
	if (each_attr(m, sizeof(ifa), addr_attr, &c, e) < 0)
		return -EINVAL;
	if (!c.local && !c.address)
		return 0; /* no address: nothing to keep */
	if (!c.local)
		memcpy(c.a->addr, c.addr_bytes, sizeof(c.addr_bytes));
	v->addrs[v->naddrs++].index = (int)ifa.ifa_index;
	return 0;
}

struct route_ctx {
	struct nl_route *r;
	bool has_dst;
};

static int route_attr(void *ctx, unsigned type, const uint8_t *p, size_t len, struct err *e)
{
	struct route_ctx *c = ctx;
	size_t want = c->r->family == AF_INET ? 4 : 16;
	uint32_t oif;

	switch (type) {
	case RTA_GATEWAY:
		if (len != want)
			return err_set(e, EINVAL, "netlink: a gateway of %zu bytes", len);
		memcpy(c->r->gw, p, len);
		c->r->has_gw = true;
		return 0;
	case RTA_OIF:
		if (len != 4)
			return err_set(e, EINVAL, "netlink: RTA_OIF of %zu bytes", len);
		memcpy(&oif, p, 4);
		c->r->oif = (int)oif;
		return 0;
	case RTA_DST:
		c->has_dst = true;
		return 0;
	default:
		return 0;
	}
}

static int on_route(const struct msg *m, struct nl_view *v, struct err *e)
{
	struct rtmsg rt;
	struct nl_route r = { 0 };
	struct route_ctx c = { &r, false };

	if (m->h.nlmsg_len < NLMSG_LENGTH(sizeof(rt)))
		return err_set(e, EINVAL, "netlink: RTM_NEWROUTE shorter than rtmsg");
	memcpy(&rt, m->bytes + NLMSG_HDRLEN, sizeof(rt));
	/* default routes of the main table only */
	if ((rt.rtm_family != AF_INET && rt.rtm_family != AF_INET6) || rt.rtm_dst_len != 0 ||
	    rt.rtm_table != RT_TABLE_MAIN || rt.rtm_type != RTN_UNICAST)
		return 0;
	r.family = rt.rtm_family;
	if (each_attr(m, sizeof(rt), route_attr, &c, e) < 0)
		return -EINVAL;
	if (v->nroutes >= NL_ROUTES_MAX)
		return err_set(e, E2BIG, "the network namespace has more than %d default routes",
			       NL_ROUTES_MAX);
	v->routes[v->nroutes++] = r;
	return 0;
}

static int on_message(const struct msg *m, struct nl_view *v, struct err *e)
{
	struct nlmsgerr ne;

	switch (m->h.nlmsg_type) {
	case NLMSG_DONE:
		v->done = true;
		return 0;
	case NLMSG_ERROR:
		if (m->h.nlmsg_len < NLMSG_LENGTH(sizeof(ne)))
			return err_set(e, EINVAL, "netlink: a short NLMSG_ERROR");
		memcpy(&ne, m->bytes + NLMSG_HDRLEN, sizeof(ne));
		if (ne.error == 0) {
			v->acked = true; /* an acknowledgement */
			return 0;
		}
		if (ne.error > 0 || ne.error < -4095)
			return err_set(e, EINVAL, "netlink: NLMSG_ERROR %d", ne.error);
		return err_set(e, -ne.error, "netlink: %s", strerror(-ne.error));
	case RTM_NEWLINK:
		return on_link(m, v, e);
	case RTM_NEWADDR:
		return on_addr(m, v, e);
	case RTM_NEWROUTE:
		return on_route(m, v, e);
	default:
		return 0;
	}
}

int nl_parse_dump(const void *buf, size_t n, struct nl_view *v, struct err *e)
{
	const uint8_t *p = buf, *end = p + n;

	while (end - p >= (ptrdiff_t)NLMSG_HDRLEN) {
		struct nlmsghdr h;
		int r;

		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > end - p)
			return err_set(e, EINVAL, "netlink: a message's length is out of bounds");
		if (h.nlmsg_flags & NLM_F_DUMP_INTR)
			return err_set(e, EAGAIN,
				       "netlink: the dump was interrupted (the namespace changed "
				       "while it was read)");
		r = on_message(&(struct msg){ h, p }, v, e);
		if (r < 0)
			return r;
		if (v->done || v->acked || NLMSG_ALIGN(h.nlmsg_len) >= (size_t)(end - p))
			break;
		p += NLMSG_ALIGN(h.nlmsg_len);
	}
	return 0;
}

static void add_gateways(const struct nl_view *v, int index, struct nl_iface *out)
{
	for (size_t i = 0; i < v->nroutes; i++) {
		const struct nl_route *r = &v->routes[i];

		if (!r->has_gw || (r->oif && r->oif != index))
			continue;
		if (r->family == AF_INET && !out->has_gw4) {
			memcpy(out->gw4, r->gw, 4);
			out->has_gw4 = true;
		} else if (r->family == AF_INET6 && !out->has_gw6) {
			memcpy(out->gw6, r->gw, 16);
			out->has_gw6 = true;
		}
	}
}

int nl_pick_iface(const struct nl_view *v, struct nl_iface *out, struct err *e)
{
	const struct nl_link *pick = NULL;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < v->nlinks; i++) {
		const struct nl_link *l = &v->links[i];

		/* tunl0, sit0 and their kind, made down in every namespace
		 * while their modules are loaded, are no one's network */
		if (l->loopback || (!l->ether && !l->up))
			continue;
		if (!l->ether)
			return err_set(e, EINVAL,
				       "interface %s is not an Ethernet interface: a VM's network "
				       "device takes Ethernet frames",
				       l->name);
		if (pick)
			return err_set(e, EINVAL,
				       "the network namespace has several interfaces (%s, %s): one "
				       "is supported so far",
				       pick->name, v->links[i].name);
		pick = l;
	}
	if (!pick)
		return -ENOENT;
	if (!pick->has_mac)
		return err_set(e, EINVAL, "interface %s has no Ethernet address: not supported",
			       pick->name);
	out->link = *pick;
	for (size_t i = 0; i < v->naddrs; i++)
		if (v->addrs[i].index == pick->index)
			out->addrs[out->naddrs++] = v->addrs[i].a;
	add_gateways(v, pick->index, out);
	return 0;
}

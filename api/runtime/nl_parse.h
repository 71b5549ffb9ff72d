/*
 * nl_parse: the container's network as rtnetlink describes it. When
 * config.json names a network namespace (made by netavark, CNI or
 * libnetwork), the runtime dumps its links, addresses and routes
 * (RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE with NLM_F_DUMP) and gives the
 * VM that interface: its MAC, MTU, addresses and default gateways go to
 * kiln-vmm's --net and kiln-init's kiln.ip=/kiln.gw=/kiln.mtu=
 * (design 2.6).
 *
 * Contract: pure. The dump's bytes are read as hostile (every length
 * checked against what holds it, every attribute's size checked before
 * use), and bounded: at most NL_LINKS_MAX links, NL_ADDRS_MAX addresses,
 * NL_ROUTES_MAX default routes are kept; more is refused. nl_parse_dump
 * may be called once per dump buffer (recv) on the same view; a dump
 * ends at NLMSG_DONE, a request (NLM_F_ACK) at its acknowledgement, an
 * NLMSG_ERROR of 0. Only default routes of the main table are kept.
 */
#ifndef KILN_NL_PARSE_H
#define KILN_NL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define NL_LINKS_MAX 16
#define NL_ADDRS_MAX 32
#define NL_ROUTES_MAX 8
#define NL_IFNAME_MAX 16 /* IFNAMSIZ */

struct nl_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned prefix;
};

struct nl_link {
	int index;
	char name[NL_IFNAME_MAX];
	uint8_t mac[6];
	bool has_mac;
	unsigned mtu;
	bool loopback, up;
	bool ether; /* ARPHRD_ETHER (veth, macvlan, ...) */
};

struct nl_route {
	int family;
	int oif;
	uint8_t gw[16];
	bool has_gw;
};

struct nl_view {
	struct nl_link links[NL_LINKS_MAX];
	size_t nlinks;
	struct {
		int index;
		struct nl_addr a;
	} addrs[NL_ADDRS_MAX];
	size_t naddrs;
	struct nl_route routes[NL_ROUTES_MAX];
	size_t nroutes;
	bool done;  /* NLMSG_DONE seen */
	bool acked; /* an NLMSG_ERROR of 0: a request's acknowledgement */
};

/* The messages in buf[0..n) into v (which starts zeroed). 0, or -EINVAL
 * (malformed), -E2BIG (over a bound), -errno of an NLMSG_ERROR (e says
 * "netlink: " and the errno's text: the caller names the request). */
int nl_parse_dump(const void *buf, size_t n, struct nl_view *v, struct err *e);

/* What the VM gets: the one interface besides loopback. */
struct nl_iface {
	struct nl_link link;
	struct nl_addr addrs[NL_ADDRS_MAX];
	size_t naddrs;
	bool has_gw4, has_gw6;
	uint8_t gw4[4], gw6[16];
};

/* The one non-loopback link of v with its addresses and default
 * gateways. -ENOENT when there is none (loopback only), -EINVAL with e
 * when there are several (not supported yet) or it has no MAC. */
int nl_pick_iface(const struct nl_view *v, struct nl_iface *out, struct err *e);

#endif

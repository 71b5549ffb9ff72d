/* netconf_apply() and its steps: see netconf.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "guest-init/sys/netconf.h"
#include "lib/base/fd_io.h"

#define NL_BUF 32768
#define ADDRS_MAX 64 /* global addresses removed per family before adding one */

int netconf_fail(struct agent_err *err, int e, const char *fmt, ...)
{
	char what[PATH_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	agent_err_set(err, agent_errno_code(e), "configure: %s: %s", what, strerror(e));
	return -1;
}

static void addr_str(const struct agent_addr *a, char *out, size_t n)
{
	if (!inet_ntop(a->family, a->bytes, out, (socklen_t)n))
		snprintf(out, n, "?");
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* ---- ioctl: flags and MTU ---- */

static int if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r, e;

	if (fd < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	r = ioctl(fd, req, ifr);
	e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

static int iface_index(const char *ifname, struct agent_err *err)
{
	unsigned idx = if_nametoindex(ifname);

	if (!idx) {
		agent_err_set(
			err, AGENT_E_NOT_FOUND,
			"configure: no network interface '%s' (the guest has those in /sys/class/net); pass \"interface\"",
			ifname);
		return -1;
	}
	return (int)idx;
}

static int link_up(const char *ifname, struct agent_err *err)
{
	struct ifreq ifr;
	int r;

	memset(&ifr, 0, sizeof(ifr));
	r = if_ioctl(ifname, SIOCGIFFLAGS, &ifr);
	if (r == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		r = if_ioctl(ifname, SIOCSIFFLAGS, &ifr);
	}
	return r < 0 ? netconf_fail(err, -r, "bringing %s up", ifname) : 0;
}

int netconf_loopback(struct agent_err *err)
{
	return link_up("lo", err);
}

/* ---- rtnetlink ---- */

struct nl_msg {
	struct nlmsghdr h;
	union {
		struct ifaddrmsg ifa;
		struct rtmsg rt;
	} u;
	char attrs[128];
};

static void nl_attr(struct nl_msg *m, unsigned short type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)m + NLMSG_ALIGN(m->h.nlmsg_len));

	/* Callers add at most three 16-byte addresses: attrs[] holds them. */
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static int nl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	return fd < 0 ? -errno : fd;
}

/* Send one request and wait for its acknowledgement: 0 or -errno. */
static int nl_ack(int fd, struct nl_msg *m)
{
	ssize_t n;

	m->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	m->h.nlmsg_seq = 1;
	if (send(fd, m, m->h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		char rbuf[4096] __attribute__((aligned(4)));
		struct nlmsghdr *h;

		n = recv(fd, rbuf, sizeof(rbuf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
				return -EPROTO;
			return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
}

struct found_addr {
	struct ifaddrmsg ifa;
	uint8_t local[16];
	bool has_local;
	uint8_t address[16];
	bool has_address;
};

/* The interface's global addresses of one family (a dump, then parsed). */
static int nl_addrs(int fd, int family, int idx, struct found_addr *out, int max)
{
	struct nl_msg m = { 0 };
	char *buf = NULL;
	int count = 0, done = 0;
	ssize_t n;

	m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	m.h.nlmsg_type = RTM_GETADDR;
	m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	m.h.nlmsg_seq = 2;
	m.u.ifa.ifa_family = (unsigned char)family;
	if (send(fd, &m, m.h.nlmsg_len, 0) < 0)
		return -errno;
	buf = malloc(NL_BUF);
	if (!buf)
		return -ENOMEM;
	while (!done) {
		struct nlmsghdr *h;

		n = recv(fd, buf, NL_BUF, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			count = -errno;
			break;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(h);
			struct rtattr *rta;
			int alen;

			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (h->nlmsg_type != RTM_NEWADDR ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
				continue;
			if ((int)ifa->ifa_index != idx || ifa->ifa_family != family ||
			    ifa->ifa_scope == RT_SCOPE_LINK || ifa->ifa_scope == RT_SCOPE_HOST ||
			    count >= max)
				continue;
			memset(&out[count], 0, sizeof(out[count]));
			out[count].ifa = *ifa;
			alen = (int)IFA_PAYLOAD(h);
			for (rta = IFA_RTA(ifa); RTA_OK(rta, alen); rta = RTA_NEXT(rta, alen)) {
				size_t len = RTA_PAYLOAD(rta);

				if (len != addr_len(family))
					continue;
				if (rta->rta_type == IFA_LOCAL) {
					memcpy(out[count].local, RTA_DATA(rta), len);
					out[count].has_local = true;
				} else if (rta->rta_type == IFA_ADDRESS) {
					memcpy(out[count].address, RTA_DATA(rta), len);
					out[count].has_address = true;
				}
			}
			count++;
		}
	}
	free(buf);
	return count;
}

int netconf_address(const struct agent_configure_req *r, struct agent_err *err)
{
	struct found_addr old[ADDRS_MAX];
	const struct agent_addr *a = &r->address;
	size_t alen = addr_len(a->family);
	struct nl_msg m;
	char as[INET6_ADDRSTRLEN + 8];
	int idx, fd, n, e = 0;

	if (!r->has_address)
		return 0;
	idx = iface_index(r->iface, err);
	if (idx < 0)
		return -1;
	addr_str(a, as, sizeof(as));
	snprintf(as + strlen(as), sizeof(as) - strlen(as), "/%u", a->prefix);
	if (link_up(r->iface, err) < 0)
		return -1;
	fd = nl_open();
	if (fd < 0)
		return netconf_fail(err, -fd, "opening rtnetlink for %s", r->iface);
	n = nl_addrs(fd, a->family, idx, old, ADDRS_MAX);
	if (n < 0) {
		close(fd);
		return netconf_fail(err, -n, "listing the addresses of %s", r->iface);
	}
	for (int i = 0; i < n; i++) {
		memset(&m, 0, sizeof(m));
		m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
		m.h.nlmsg_type = RTM_DELADDR;
		m.u.ifa = old[i].ifa;
		if (old[i].has_local)
			nl_attr(&m, IFA_LOCAL, old[i].local, alen);
		if (old[i].has_address)
			nl_attr(&m, IFA_ADDRESS, old[i].address, alen);
		e = nl_ack(fd, &m);
		/* Removing a primary IPv4 address takes its secondaries along. */
		if (e < 0 && e != -EADDRNOTAVAIL) {
			close(fd);
			return netconf_fail(err, -e, "removing an old address from %s", r->iface);
		}
	}
	memset(&m, 0, sizeof(m));
	m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	m.h.nlmsg_type = RTM_NEWADDR;
	m.h.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	m.u.ifa.ifa_family = (unsigned char)a->family;
	m.u.ifa.ifa_prefixlen = a->prefix;
	m.u.ifa.ifa_index = (unsigned)idx;
	/* A sandbox's address is assigned, not negotiated: skip IPv6
	 * duplicate address detection, so it works at once. */
	if (a->family == AF_INET6)
		m.u.ifa.ifa_flags = IFA_F_NODAD;
	nl_attr(&m, IFA_LOCAL, a->bytes, alen);
	nl_attr(&m, IFA_ADDRESS, a->bytes, alen);
	if (a->family == AF_INET && a->prefix < 31) {
		uint8_t bc[4];
		uint32_t host = a->prefix ? 0xffffffffu >> a->prefix : 0xffffffffu;

		memcpy(bc, a->bytes, 4);
		for (int i = 0; i < 4; i++)
			bc[i] |= (uint8_t)(host >> (24 - 8 * i));
		nl_attr(&m, IFA_BROADCAST, bc, 4);
	}
	e = nl_ack(fd, &m);
	close(fd);
	return e < 0 ? netconf_fail(err, -e, "adding address %s to %s", as, r->iface) : 0;
}

int netconf_gateway(const struct agent_configure_req *r, struct agent_err *err)
{
	const struct agent_addr *g = &r->gateway;
	struct nl_msg m = { 0 };
	char gs[INET6_ADDRSTRLEN];
	uint32_t oif;
	int idx, fd, e;

	if (!r->has_gateway)
		return 0;
	idx = iface_index(r->iface, err);
	if (idx < 0)
		return -1;
	addr_str(g, gs, sizeof(gs));
	fd = nl_open();
	if (fd < 0)
		return netconf_fail(err, -fd, "opening rtnetlink for %s", r->iface);
	m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	m.h.nlmsg_type = RTM_NEWROUTE;
	/* REPLACE: the family's default route in the main table is swapped. */
	m.h.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	m.u.rt.rtm_family = (unsigned char)g->family;
	m.u.rt.rtm_dst_len = 0;
	m.u.rt.rtm_table = RT_TABLE_MAIN;
	m.u.rt.rtm_protocol = RTPROT_BOOT;
	m.u.rt.rtm_scope = RT_SCOPE_UNIVERSE;
	m.u.rt.rtm_type = RTN_UNICAST;
	nl_attr(&m, RTA_GATEWAY, g->bytes, addr_len(g->family));
	oif = (uint32_t)idx;
	nl_attr(&m, RTA_OIF, &oif, sizeof(oif));
	e = nl_ack(fd, &m);
	close(fd);
	return e < 0 ? netconf_fail(err, -e, "setting the default route via %s on %s", gs, r->iface)
		     : 0;
}

int netconf_mtu(const struct agent_configure_req *r, struct agent_err *err)
{
	struct ifreq ifr;
	int e;

	if (!r->mtu)
		return 0;
	if (iface_index(r->iface, err) < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_mtu = (int)r->mtu;
	e = if_ioctl(r->iface, SIOCSIFMTU, &ifr);
	return e < 0 ? netconf_fail(err, -e, "setting MTU %u on %s", r->mtu, r->iface) : 0;
}

int netconf_hostname(const struct agent_configure_req *r, struct agent_err *err)
{
	if (!r->hostname)
		return 0;
	if (sethostname(r->hostname, strlen(r->hostname)) < 0)
		return netconf_fail(err, errno, "setting the hostname to '%s'", r->hostname);
	return 0;
}

int netconf_dns(const struct agent_configure_req *r, const char *resolv_conf, struct agent_err *err)
{
	char tmp[4200], text[AGENT_DNS_MAX * 64 + 64];
	size_t len = 0;
	int fd, e = 0;

	if (!r->has_dns)
		return 0;
	len += (size_t)snprintf(text, sizeof(text), "# written by kiln-init (configure)\n");
	for (size_t i = 0; i < r->dns_n && i < AGENT_DNS_MAX; i++) {
		char s[INET6_ADDRSTRLEN];

		addr_str(&r->dns[i], s, sizeof(s));
		len += (size_t)snprintf(text + len, sizeof(text) - len, "nameserver %s\n", s);
	}
	/* Written beside and renamed over, so a reader never sees half a file. */
	snprintf(tmp, sizeof(tmp), "%s.kiln-new", resolv_conf);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return netconf_fail(err, errno, "writing %s", tmp);
	if (fd_io_write_all(fd, text, len) < 0)
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, resolv_conf) < 0)
		e = errno;
	if (e) {
		unlink(tmp);
		return netconf_fail(err, e, "writing %s", resolv_conf);
	}
	return 0;
}

int netconf_apply(const struct agent_configure_req *r, const char *resolv_conf,
		  struct agent_err *err)
{
	if (netconf_hostname(r, err) < 0 || netconf_mtu(r, err) < 0 ||
	    netconf_address(r, err) < 0 || netconf_gateway(r, err) < 0 ||
	    netconf_dns(r, resolv_conf, err) < 0)
		return -1;
	return 0;
}

/* The container's network namespace given to its VM; see rt_net.h. */
#include "api/runtime/rt_net.h"

#include <errno.h>
#include <fcntl.h>
/* net/if.h before the kernel headers: linux/if.h then skips its copy */
#include <net/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/runtime/nl_build.h"
#include "api/runtime/nl_parse.h"

#define NL_RECV_MAX 32768 /* a dump's part: the kernel sizes them up to 32 KiB */

struct nl_sock {
	int fd;
	uint32_t seq;
};

static int nl_open(struct nl_sock *s, struct err *e)
{
	s->seq = 1;
	s->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	return s->fd < 0 ? err_set(e, errno, "netlink socket: %s", strerror(errno)) : 0;
}

/* Send r; read the replies into v until the dump's end or the request's
 * acknowledgement. The kernel's error keeps its errno, named by what. */
static int talk(struct nl_sock *s, const struct nl_req *r, struct nl_view *v, const char *what,
		struct err *e)
{
	uint8_t buf[NL_RECV_MAX] __attribute__((aligned(4)));
	struct err ne = { { 0 } };

	if (send(s->fd, r->buf, r->len, 0) != (ssize_t)r->len)
		return err_set(e, errno, "%s: netlink send: %s", what, strerror(errno));
	while (!v->done && !v->acked) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_TRUNC);
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(e, n < 0 ? errno : EIO, "%s: netlink recv: %s", what,
				       n < 0 ? strerror(errno) : "closed");
		if ((size_t)n > sizeof(buf))
			return err_set(e, EMSGSIZE, "%s: a netlink reply of %zd bytes", what, n);
		if ((rc = nl_parse_dump(buf, (size_t)n, v, &ne)) < 0)
			return err_set(e, -rc, "%s: %s", what, ne.msg);
	}
	return 0;
}

/* A change, acknowledged; -errno when the kernel refused it. */
static int request(struct nl_sock *s, int built, const struct nl_req *r, const char *what,
		   struct err *e)
{
	struct nl_view v;

	if (built < 0)
		return err_set(e, -built, "%s: the request does not fit", what);
	memset(&v, 0, sizeof(v));
	return talk(s, r, &v, what, e);
}

static int read_view(struct nl_sock *s, struct nl_view *v, struct err *e)
{
	static const struct {
		uint16_t type;
		const char *what;
	} dumps[] = { { RTM_GETLINK, "reading the links" },
		      { RTM_GETADDR, "reading the addresses" },
		      { RTM_GETROUTE, "reading the routes" } };
	struct nl_req r;
	int rc;

	/* a dump the namespace's changes interrupted is read once more */
	for (int attempt = 0; attempt < 2; attempt++) {
		memset(v, 0, sizeof(*v));
		rc = 0;
		for (size_t i = 0; !rc && i < sizeof(dumps) / sizeof(dumps[0]); i++) {
			v->done = false;
			nl_build_dump(&r, dumps[i].type, s->seq++);
			rc = talk(s, &r, v, dumps[i].what, e);
		}
		if (rc != -EAGAIN)
			return rc;
	}
	return rc;
}

static int tap_remove(struct nl_sock *s, const char *name, struct err *e)
{
	struct nl_req r;
	int rc = request(s, nl_build_link_del(&r, s->seq++, name), &r, "removing the TAP", e);

	return rc == -ENODEV ? 0 : rc;
}

/* The TAP, persistent (kiln-vmm attaches to it by name), as kiln-vmm's
 * net_tap opens it. */
static int tap_make(struct rt_net *n, struct err *e)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int fd, rc = 0;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "/dev/net/tun: %s", strerror(errno));
	memcpy(ifr.ifr_name, n->name, sizeof(n->name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, 1) < 0)
		rc = err_set(e, errno, "making the TAP: %s", strerror(errno));
	else
		n->tap = true;
	close(fd);
	return rc;
}

/* tc on both: an ingress qdisc each (the interface may have one already,
 * the bandwidth plugin's: kept, and left there), and frames redirected
 * each way; a redirect an earlier VM of this container left (its shim
 * killed) replaced. */
static int join(struct rt_net *n, struct nl_sock *s, int tap, unsigned mtu, struct err *e)
{
	struct nl_req r;
	int rc;

	if ((rc = request(s, nl_build_link_up(&r, s->seq++, tap, mtu), &r, "bringing the TAP up",
			  e)) < 0 ||
	    (rc = request(s, nl_build_ingress(&r, s->seq++, tap), &r,
			  "adding the TAP's ingress qdisc (kernel module sch_ingress)", e)) < 0)
		return rc;
	rc = request(s, nl_build_ingress(&r, s->seq++, n->iface), &r,
		     "adding the interface's ingress qdisc", e);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	n->made_qdisc = rc == 0;
	rc = request(s, nl_build_redirect_del(&r, s->seq++, n->iface), &r,
		     "removing an old redirect", e);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if ((rc = request(s, nl_build_redirect(&r, s->seq++, n->iface, tap), &r,
			  "redirecting the interface to the TAP (tc matchall and mirred: kernel "
			  "modules cls_matchall and act_mirred)",
			  e)) < 0)
		return rc;
	return request(s, nl_build_redirect(&r, s->seq++, tap, n->iface), &r,
		       "redirecting the TAP to the interface", e);
}

int rt_net_unshare(int *home, struct err *e)
{
	int rc;

	*home = open(RT_NET_OWN, O_RDONLY | O_CLOEXEC);
	if (*home < 0)
		return err_set(e, errno, "this process's network namespace: %s", strerror(errno));
	if (unshare(CLONE_NEWNET) == 0)
		return 0;
	rc = err_set(e, errno, "a new network namespace for the container: %s", strerror(errno));
	close(*home);
	*home = -1;
	return rc;
}

int rt_net_open(struct rt_net *n, const char *path, const char *tap, struct err *e)
{
	*n = (struct rt_net){ .ns_fd = -1, .home_fd = -1 };
	snprintf(n->name, sizeof(n->name), "%s", tap);
	if (!path)
		return 0;
	n->ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (n->ns_fd < 0)
		return err_set(e, errno, "the network namespace %s: %s", path, strerror(errno));
	n->home_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (n->home_fd < 0)
		return err_set(e, errno, "this process's network namespace: %s", strerror(errno));
	return 0;
}

static int into(int fd, const char *which, struct err *e)
{
	if (fd >= 0 && setns(fd, CLONE_NEWNET) < 0)
		return err_set(e, errno, "entering %s network namespace: %s", which,
			       strerror(errno));
	return 0;
}

int rt_net_enter(struct rt_net *n, struct err *e)
{
	return into(n->ns_fd, "the container's", e);
}

int rt_net_leave(struct rt_net *n, struct err *e)
{
	return n->ns_fd < 0 ? 0 : into(n->home_fd, "the runtime's own", e);
}

int rt_net_attach(struct rt_net *n, char *cmdline, size_t cap, char *net, struct err *e)
{
	struct nl_sock s = { -1, 0 };
	struct nl_view v;
	struct nl_iface f;
	struct err ne = { { 0 } };
	int tap, rc;

	if (n->ns_fd < 0)
		return 0;
	if ((rc = nl_open(&s, e)) < 0)
		return rc;
	/* one an earlier VM of this container left (its shim killed) would
	 * be a second interface */
	rc = tap_remove(&s, n->name, &ne);
	if (!rc)
		rc = read_view(&s, &v, &ne);
	if (!rc) {
		rc = nl_pick_iface(&v, &f, &ne);
		if (rc == -ENOENT)
			rc = 1; /* loopback only */
	}
	if (!rc)
		rc = rt_plan_net(&f, n->name, cmdline, cap, net, &ne);
	if (!rc)
		rc = tap_make(n, &ne);
	if (!rc) {
		tap = (int)if_nametoindex(n->name);
		n->iface = f.link.index;
		rc = tap > 0 ? join(n, &s, tap, f.link.mtu, &ne)
			     : err_set(&ne, errno, "the TAP: %s", strerror(errno));
	}
	close(s.fd);
	if (rc < 0)
		return err_set(e, -rc, "the container's network (TAP %s): %s", n->name, ne.msg);
	return rc == 1 ? 0 : 1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The TAP removed, and the interface's redirect to it, or the ingress
 * qdisc holding it when kiln made that (n->iface 0: not known, a sweep:
 * the next attach replaces it). */
static void remove_in(const struct rt_net *n)
{
	struct err e = { { 0 } };
	struct nl_sock s;
	struct nl_req r;

	if (into(n->ns_fd, "", &e) < 0)
		return;
	if (nl_open(&s, &e) == 0) {
		if (n->iface > 0 && n->made_qdisc)
			request(&s, nl_build_ingress_del(&r, s.seq++, n->iface), &r, "", &e);
		else if (n->iface > 0)
			request(&s, nl_build_redirect_del(&r, s.seq++, n->iface), &r, "", &e);
		tap_remove(&s, n->name, &e);
		close(s.fd);
	}
	into(n->home_fd, "", &e);
}

void rt_net_close(struct rt_net *n)
{
	if (n->tap)
		remove_in(n);
	close_fd(&n->ns_fd);
	close_fd(&n->home_fd);
	n->tap = false;
}

void rt_net_sweep(const char *path, const char *tap)
{
	struct rt_net n;
	struct err e = { { 0 } };

	if (rt_net_open(&n, path, tap, &e) == 0 && n.ns_fd >= 0)
		n.tap = true;
	rt_net_close(&n);
}

/* egress_dest: see egress_dest.h. */
#include "api/egress/egress_dest.h"
#include "lib/netrules/net_rules.h"

#include <stdbool.h>
#include <sys/socket.h>

void egress_dest_of(const struct proxy_v2 *hdr, struct net_addr *out)
{
	net_addr_set(out, hdr->family == AF_INET6 ? NET_AF6 : NET_AF4, hdr->dst);
}

static bool overridden(const struct net_addr *a, const struct net_cidr *allow, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (net_cidr_contains(&allow[i], a))
			return true;
	return false;
}

/* a is one of the host's addresses, also in the NAT64 or 6to4 form of an IPv4 one. */
static bool is_host(const struct net_addr *a, const struct net_addr *host, size_t n)
{
	struct net_addr v4;

	return net_addr_in_list(a, host, n) ||
		(net_addr_embedded_v4(a, &v4) && net_addr_in_list(&v4, host, n));
}

/* An override block that is exactly a (/32 or /128): the only kind that
 * opens a host address, so no broad test block reaches the host's services. */
static bool named_exactly(const struct net_addr *a, const struct net_cidr *allow, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (allow[i].prefix == (a->family == NET_AF4 ? 32 : 128) &&
		    net_cidr_contains(&allow[i], a))
			return true;
	return false;
}

const char *egress_dest_check(const struct net_addr *dst, const struct net_addr *resolved, size_t n,
			      const struct net_cidr *allow, size_t n_allow,
			      const struct net_addr *host, size_t n_host)
{
	bool found = false;

	for (size_t i = 0; i < n && !found; i++)
		found = net_addr_equal(dst, &resolved[i]);
	if (!found)
		return n ? "destination is not among the name's addresses"
			 : "the name has no address";
	if (is_host(dst, host, n_host) && !named_exactly(dst, allow, n_allow))
		return "destination is one of this host's own addresses";
	if (overridden(dst, allow, n_allow))
		return NULL;
	switch (net_addr_classify(dst)) {
	case NET_CLASS_PUBLIC:
		return NULL;
	case NET_CLASS_PRIVATE:
		return "destination is a private address";
	case NET_CLASS_RESERVED:
		break;
	}
	return "destination is a reserved address (loopback, link-local, metadata, ...)";
}

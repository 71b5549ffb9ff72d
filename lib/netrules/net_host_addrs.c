#include "lib/netrules/net_host_addrs.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/netrules/net_addr.h"

int net_host_addrs_add(struct net_addr *list, size_t *n, size_t cap, const struct net_addr *a)
{
	for (size_t i = 0; i < *n; i++)
		if (net_addr_equal(&list[i], a))
			return 0;
	if (*n == cap)
		return -ENOSPC;
	list[(*n)++] = *a;
	return 0;
}

int net_host_addrs(struct net_addr **out, size_t *n, struct err *e)
{
	struct ifaddrs *ifs, *i;
	struct net_addr *list;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (getifaddrs(&ifs) < 0)
		return err_set(e, errno,
			       "packet filter: cannot list the host's addresses (getifaddrs): %s",
			       strerror(errno));
	list = calloc(NET_HOST_ADDRS_MAX, sizeof(*list));
	if (!list) {
		freeifaddrs(ifs);
		return err_set(e, ENOMEM, "packet filter: out of memory");
	}
	for (i = ifs; i && rc == 0; i = i->ifa_next) {
		struct net_addr a;

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			net_addr_set(&a, NET_AF4,
				     (const uint8_t *)&(
					     (const struct sockaddr_in *)(const void *)i->ifa_addr)
					     ->sin_addr);
		else if (i->ifa_addr->sa_family == AF_INET6)
			net_addr_set(&a, NET_AF6,
				     (const uint8_t *)&(
					     (const struct sockaddr_in6 *)(const void *)i->ifa_addr)
					     ->sin6_addr);
		else
			continue;
		rc = net_host_addrs_add(list, n, NET_HOST_ADDRS_MAX, &a);
	}
	freeifaddrs(ifs);
	if (rc < 0) {
		free(list);
		*n = 0;
		/* Failing closed: a filter that misses some of them would let the guest reach those. */
		return err_set(
			e, ENOSPC,
			"packet filter: the host has more than %d addresses, more than the filter holds; start kiln-vmm in a network namespace with fewer",
			NET_HOST_ADDRS_MAX);
	}
	if (*n == 0) {
		free(list);
		list = NULL;
	}
	*out = list;
	return 0;
}

/* The checks of each device's configuration; see devcfg.h. */
#include "vmm/core/devcfg.h"

#include "devices/net/rate_limit.h"
#include "devices/net/virtio_net.h"
#include "lib/base/num_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int devcfg_disk_check(const struct vm_disk_cfg *d, struct err *e)
{
	if (!d->path || !*d->path)
		return err_set(e, EINVAL, "disk: no image path given");
	if (d->serial && (!*d->serial || strlen(d->serial) > VM_DISK_SERIAL_MAX))
		return err_set(e, EINVAL, "disk %s: serial '%.40s' must be 1 to %d bytes", d->path,
			       d->serial, VM_DISK_SERIAL_MAX);
	if (d->size && (d->size % (1u << 20) || d->size > (uint64_t)VM_DISK_MAX_MIB << 20))
		return err_set(e, EINVAL,
			       "disk %s: size must be a whole number of MiB from 1 to %u", d->path,
			       VM_DISK_MAX_MIB);
	if (d->size && !d->overlay)
		return err_set(
			e, EINVAL,
			"disk %s: size is an overlay's virtual size: give an overlay too (a raw image has its file's size)",
			d->path);
	if (d->overlay && !*d->overlay)
		return err_set(e, EINVAL, "disk %s: an empty overlay path", d->path);
	if (d->overlay && d->read_only)
		return err_set(
			e, EINVAL,
			"disk %s: read-only and an overlay together make no sense: an overlay exists to take writes",
			d->path);
	return 0;
}

int devcfg_share_check(const struct vm_share_cfg *s, struct err *e)
{
	/* The tag reaches kiln-init on the kernel command line, in
	 * kiln.shares=TAG:PATH,...: no space, comma or colon. */
	if (!s->tag || !*s->tag || strlen(s->tag) > VM_SHARE_TAG_MAX || strpbrk(s->tag, " ,:"))
		return err_set(
			e, EINVAL,
			"share: tag '%.40s' must be 1 to %d bytes, without spaces, commas or colons",
			s->tag ? s->tag : "", VM_SHARE_TAG_MAX);
	if (!!s->host_dir + (s->host_fd >= 0) + !!s->remote != 1)
		return err_set(
			e, EINVAL,
			"share %s: give a host directory, a descriptor or a client's socket, one of them",
			s->tag);
	if (s->remote && (!*s->remote || strlen(s->remote) > VM_SHARE_SOCK_MAX))
		return err_set(e, EINVAL,
			       "share %s: the socket path must be 1 to %d bytes (a Unix socket's limit)",
			       s->tag, VM_SHARE_SOCK_MAX);
	if (s->remote)
		return 0;
	if (s->host_dir && !*s->host_dir)
		return err_set(e, EINVAL, "share %s: an empty host directory path", s->tag);
	if (!s->host_dir && s->host_fd < 3)
		return err_set(
			e, EINVAL,
			"share %s: descriptor %d is stdio, not a directory handed over (give one >= 3)",
			s->tag, s->host_fd);
	return 0;
}

int devcfg_vsock_check(const struct vm_vsock_cfg *v, struct err *e)
{
	if (!v->uds || !*v->uds)
		return err_set(e, EINVAL, "vsock: no socket path given");
	if (v->cid < 3 || v->cid == 0xffffffffu)
		return err_set(e, EINVAL, "vsock: cid %u must be a number from 3 to 4294967294",
			       v->cid);
	return 0;
}

int devcfg_ip4_prefix(const char *s, struct net_addr *addr, unsigned *prefix)
{
	char buf[NET_ADDR_STRLEN];
	const char *slash = strchr(s, '/');
	uint64_t p;

	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (num_parse_u64(slash + 1, 10, 1, 30, &p) || net_addr_parse(buf, addr) ||
	    addr->family != NET_AF4)
		return -EINVAL;
	*prefix = (unsigned)p;
	return 0;
}

static int ip4(const char *s, struct net_addr *a)
{
	return net_addr_parse(s, a) == 0 && a->family == NET_AF4 ? 0 : -EINVAL;
}

/* a and b in the same /prefix. */
static int same_subnet(const struct net_addr *a, const struct net_addr *b, unsigned prefix)
{
	uint32_t x = (uint32_t)a->b[0] << 24 | (uint32_t)a->b[1] << 16 | (uint32_t)a->b[2] << 8 |
		a->b[3];
	uint32_t y = (uint32_t)b->b[0] << 24 | (uint32_t)b->b[1] << 16 | (uint32_t)b->b[2] << 8 |
		b->b[3];
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;

	return (x & mask) == (y & mask);
}

/* passt's addresses: gw= and dns= in the guest's network and apart from
 * it, a resolver on the host's side. */
static int check_passt(const struct vm_net_cfg *n, const struct net_addr *ip, struct err *e)
{
	struct net_addr gw, dns, resolver;

	if (ip4(n->gw, &gw))
		return err_set(e, EINVAL, "net gw=%.60s: not an IPv4 address", n->gw);
	if (ip4(n->dns, &dns))
		return err_set(e, EINVAL, "net dns=%.60s: not an IPv4 address", n->dns);
	if (!same_subnet(ip, &gw, n->prefix) || net_addr_equal(ip, &gw))
		return err_set(e, EINVAL,
			       "net gw=%s: must be another address in the guest's network %s",
			       n->gw, n->ip);
	if (n->resolver && ip4(n->resolver, &resolver))
		return err_set(e, EINVAL, "net resolver=%.60s: not an IPv4 address", n->resolver);
	/* A host's nameserver (loopback included), never the guest's side or nowhere. */
	if (n->resolver &&
	    (resolver.b[0] == 0 || resolver.b[0] >= 224 || net_addr_equal(&resolver, ip) ||
	     net_addr_equal(&resolver, &gw) || net_addr_equal(&resolver, &dns)))
		return err_set(
			e, EINVAL,
			"net resolver=%s: must be a unicast address of a nameserver on the host's side, not 0/8, multicast or the guest's ip=, gw= or dns=",
			n->resolver);
	if (net_addr_equal(&dns, ip) || net_addr_equal(&dns, &gw))
		return err_set(e, EINVAL,
			       "net dns=%s: must differ from the guest's address and the gateway",
			       n->dns);
	return 0;
}

int devcfg_net_check(struct vm_net_cfg *n, struct err *e)
{
	struct net_addr ip;
	uint8_t mac[6];

	if (!n->tap == !n->passt)
		return err_set(e, EINVAL,
			       "net: expected exactly one backend: a TAP device or passt");
	if (n->tap && (!*n->tap || strlen(n->tap) >= 16)) /* IFNAMSIZ */
		return err_set(e, EINVAL, "net tap=%.40s: a TAP device's name is 1 to 15 bytes",
			       n->tap);
	if (n->mac && net_parse_mac(n->mac, mac))
		return err_set(e, EINVAL,
			       "net mac=%.40s: not a unicast MAC address like 02:00:00:00:00:01",
			       n->mac);
	if (n->tap && (n->gw || n->dns || n->resolver))
		return err_set(
			e, EINVAL,
			"net tap=%s: gw=, dns= and resolver= are passt's (with a TAP the host configures the network)",
			n->tap);
	if (n->passt) {
		n->ip = n->ip ? n->ip : (char *)VM_PASST_IP;
		n->gw = n->gw ? n->gw : (char *)VM_PASST_GW;
		n->dns = n->dns ? n->dns : (char *)VM_PASST_DNS;
	}
	n->prefix = 0;
	if (n->ip && devcfg_ip4_prefix(n->ip, &ip, &n->prefix))
		return err_set(
			e, EINVAL,
			"net ip=%.60s: expected an IPv4 ADDRESS/PREFIX like 10.0.2.15/24 (prefix 1-30)",
			n->ip);
	return n->passt ? check_passt(n, &ip, e) : 0;
}

int devcfg_net_rate_check(const struct vm_net_rate_cfg *r, struct err *e)
{
	static const char *const names[4] = { "tx_bytes", "tx_packets", "rx_bytes", "rx_packets" };
	const uint64_t v[4] = { r->tx_bytes, r->tx_packets, r->rx_bytes, r->rx_packets };

	/* 0 is unlimited; the filter's buckets hold at most 2^48 tokens. */
	for (int i = 0; i < 4; i++)
		if (v[i] > RATE_SIZE_MAX)
			return err_set(e, EINVAL, "net-rate %s: %llu is more than %llu per second",
				       names[i], (unsigned long long)v[i],
				       (unsigned long long)RATE_SIZE_MAX);
	return 0;
}

#include "vmm/core/devspec.h"

#include "devices/net/rate_limit.h"
#include "devices/net/virtio_net.h"
#include "lib/base/num_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Split off the next comma-separated field of *s. */
static char *next_field(char **s)
{
	char *f = *s, *c;

	if (!f)
		return NULL;
	c = strchr(f, ',');
	if (c) {
		*c = '\0';
		*s = c + 1;
	} else {
		*s = NULL;
	}
	return f;
}

int devspec_disk(char *arg, struct devspec_disk_cfg *out, struct err *e)
{
	char *rest = arg, *f;

	memset(out, 0, sizeof(*out));
	out->path = next_field(&rest);
	if (!out->path || !*out->path)
		return err_set(e, EINVAL, "--disk: expected PATH[,ro][,overlay=PATH[,size=MIB]][,serial=ID]");
	while ((f = next_field(&rest))) {
		if (strcmp(f, "ro") == 0)
			out->read_only = 1;
		else if (strncmp(f, "overlay=", 8) == 0 && f[8])
			out->overlay = f + 8;
		else if (strncmp(f, "serial=", 7) == 0 && f[7] && strlen(f + 7) <= DEVSPEC_SERIAL_MAX)
			out->serial = f + 7;
		else if (strncmp(f, "size=", 5) == 0) {
			uint64_t mib;

			if (num_parse_u64(f + 5, 10, 1, DEVSPEC_DISK_MAX_MIB, &mib))
				return err_set(e, EINVAL, "--disk %s: size '%.40s' must be a whole number of MiB from 1 to %u",
						 out->path, f + 5, DEVSPEC_DISK_MAX_MIB);
			out->size = mib << 20;
		} else
			return err_set(e, EINVAL, "--disk %s: unknown or bad option '%.40s' (ro, overlay=PATH, serial=ID of at most %d bytes, size=MIB)",
					 out->path, f, DEVSPEC_SERIAL_MAX);
	}
	if (out->size && !out->overlay)
		return err_set(e, EINVAL, "--disk %s: size= is an overlay's virtual size: give overlay=PATH too (a raw image has its file's size)",
				 out->path);
	if (out->overlay && out->read_only)
		return err_set(e, EINVAL, "--disk %s: 'ro' and 'overlay=' together make no sense: an overlay exists to take writes",
				 out->path);
	return 0;
}

int devspec_share(char *arg, struct devspec_share_cfg *out, struct err *e)
{
	char *tag = strrchr(arg, ':');

	memset(out, 0, sizeof(*out));
	if (tag && strcmp(tag, ":ro") == 0) {
		out->read_only = 1;
		*tag = '\0';
		tag = strrchr(arg, ':');
	}
	if (!tag || tag == arg || !tag[1])
		return err_set(e, EINVAL, "--share '%s': expected HOSTDIR:TAG[:ro] or fd=N:TAG[:ro]", arg);
	*tag++ = '\0';
	if (strlen(tag) > DEVSPEC_TAG_MAX || strchr(tag, ',') || strchr(tag, ' '))
		return err_set(e, EINVAL, "--share: tag '%s' must be at most %d bytes, without spaces or commas",
				 tag, DEVSPEC_TAG_MAX);
	out->tag = tag;
	out->host_fd = -1;
	/* A directory its caller opened (kilnd: without following symbolic
	 * links, at every start): no path is resolved again here. 0-2 are
	 * stdio, never a directory handed over. A directory really named
	 * "fd=3" is "./fd=3". */
	if (strncmp(arg, "fd=", 3) == 0) {
		uint64_t fd;

		if (num_parse_u64(arg + 3, 10, 3, INT32_MAX, &fd))
			return err_set(e, EINVAL, "--share %s: fd=N needs a descriptor number of at least 3", arg);
		out->host_fd = (int)fd;
		return 0;
	}
	out->host_dir = arg;
	return 0;
}

int devspec_vsock(char *arg, struct devspec_vsock_cfg *out, struct err *e)
{
	char *rest = arg, *f;

	memset(out, 0, sizeof(*out));
	out->cid = 3;
	out->uds = next_field(&rest);
	if (!out->uds || !*out->uds)
		return err_set(e, EINVAL, "--vsock: expected PATH[,cid=N]");
	while ((f = next_field(&rest))) {
		uint64_t v;

		if (strncmp(f, "cid=", 4) != 0)
			return err_set(e, EINVAL, "--vsock: unknown option '%.40s' (cid=N)", f);
		/* 0-2 are reserved (hypervisor, local, host); -1U is VMADDR_CID_ANY. */
		if (num_parse_u64(f + 4, 10, 3, 0xfffffffeULL, &v))
			return err_set(e, EINVAL, "--vsock: cid '%s' must be a number from 3 to 4294967294", f + 4);
		out->cid = (uint32_t)v;
	}
	return 0;
}

int devspec_ip4_prefix(const char *s, struct net_addr *addr, unsigned *prefix)
{
	char buf[NET_ADDR_STRLEN];
	const char *slash = strchr(s, '/');
	uint64_t p;

	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (num_parse_u64(slash + 1, 10, 1, 30, &p) || net_addr_parse(buf, addr) || addr->family != NET_AF4)
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
	uint32_t x = (uint32_t)a->b[0] << 24 | (uint32_t)a->b[1] << 16 | (uint32_t)a->b[2] << 8 | a->b[3];
	uint32_t y = (uint32_t)b->b[0] << 24 | (uint32_t)b->b[1] << 16 | (uint32_t)b->b[2] << 8 | b->b[3];
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;

	return (x & mask) == (y & mask);
}

int devspec_net(char *arg, struct devspec_net_cfg *out, struct err *e)
{
	static const char usage[] = "tap=NAME or passt, then mac=MAC, ip=ADDR/PREFIX; passt also gw=, dns=, resolver=";
	char *rest = arg, *f;
	struct net_addr ip, gw, dns, resolver;

	memset(out, 0, sizeof(*out));
	while ((f = next_field(&rest))) {
		if (strncmp(f, "tap=", 4) == 0 && f[4])
			out->tap = f + 4;
		else if (strcmp(f, "passt") == 0)
			out->passt = 1;
		else if (strncmp(f, "mac=", 4) == 0 && f[4])
			out->mac = f + 4;
		else if (strncmp(f, "ip=", 3) == 0 && f[3])
			out->ip = f + 3;
		else if (strncmp(f, "gw=", 3) == 0 && f[3])
			out->gw = f + 3;
		else if (strncmp(f, "dns=", 4) == 0 && f[4])
			out->dns = f + 4;
		else if (strncmp(f, "resolver=", 9) == 0 && f[9])
			out->resolver = f + 9;
		else
			return err_set(e, EINVAL, "--net: unknown option '%.40s' (%s)", f, usage);
	}
	if (!out->tap == !out->passt)
		return err_set(e, EINVAL, "--net: expected exactly one backend: tap=NAME[,mac=MAC] or passt[,mac=MAC]");
	if (out->mac) {
		uint8_t mac[6];

		if (net_parse_mac(out->mac, mac))
			return err_set(e, EINVAL, "--net mac=%s: not a unicast MAC address like 02:00:00:00:00:01", out->mac);
	}
	if (out->tap && (out->gw || out->dns || out->resolver))
		return err_set(e, EINVAL,
				 "--net tap=%s: gw=, dns= and resolver= are passt's (with a TAP the host configures the network)",
				 out->tap);
	if (out->passt) {
		out->ip = out->ip ? out->ip : (char *)DEVSPEC_PASST_IP;
		out->gw = out->gw ? out->gw : (char *)DEVSPEC_PASST_GW;
		out->dns = out->dns ? out->dns : (char *)DEVSPEC_PASST_DNS;
	}
	if (out->ip && devspec_ip4_prefix(out->ip, &ip, &out->prefix))
		return err_set(e, EINVAL, "--net ip=%.60s: expected an IPv4 ADDRESS/PREFIX like 10.0.2.15/24 (prefix 1-30)",
				 out->ip);
	if (!out->passt)
		return 0;
	if (ip4(out->gw, &gw))
		return err_set(e, EINVAL, "--net gw=%.60s: not an IPv4 address", out->gw);
	if (ip4(out->dns, &dns))
		return err_set(e, EINVAL, "--net dns=%.60s: not an IPv4 address", out->dns);
	if (!same_subnet(&ip, &gw, out->prefix) || net_addr_equal(&ip, &gw))
		return err_set(e, EINVAL, "--net gw=%s: must be another address in the guest's network %s", out->gw,
				 out->ip);
	if (out->resolver && ip4(out->resolver, &resolver))
		return err_set(e, EINVAL, "--net resolver=%.60s: not an IPv4 address", out->resolver);
	/* A host's nameserver (loopback included), never the guest's side or nowhere. */
	if (out->resolver && (resolver.b[0] == 0 || resolver.b[0] >= 224 || net_addr_equal(&resolver, &ip) ||
			      net_addr_equal(&resolver, &gw) || net_addr_equal(&resolver, &dns)))
		return err_set(e, EINVAL,
				 "--net resolver=%s: must be a unicast address of a nameserver on the host's side, not 0/8, multicast or the guest's ip=, gw= or dns=",
				 out->resolver);
	if (net_addr_equal(&dns, &ip) || net_addr_equal(&dns, &gw))
		return err_set(e, EINVAL, "--net dns=%s: must differ from the guest's address and the gateway", out->dns);
	return 0;
}

int devspec_net_rate(char *arg, struct devspec_net_rate_cfg *out, struct err *e)
{
	char *rest = arg, *f;

	if (!arg || !*arg)
		return err_set(e, EINVAL, "--net-rate: expected tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N (per second)");
	while ((f = next_field(&rest))) {
		static const char *const names[4] = { "tx_bytes", "tx_packets", "rx_bytes", "rx_packets" };
		uint64_t *slot[4] = { &out->tx_bytes, &out->tx_packets, &out->rx_bytes, &out->rx_packets };
		char *eq = strchr(f, '=');
		uint64_t v;
		int i;

		for (i = 0; i < 4; i++)
			if (eq && (size_t)(eq - f) == strlen(names[i]) && strncmp(f, names[i], (size_t)(eq - f)) == 0)
				break;
		if (i == 4)
			return err_set(e, EINVAL, "--net-rate: unknown field '%.40s' (tx_bytes, tx_packets, rx_bytes, rx_packets)", f);
		/* 0 is unlimited; the filter's buckets hold at most 2^48 tokens. */
		if (num_parse_u64(eq + 1, 10, 0, RATE_SIZE_MAX, &v))
			return err_set(e, EINVAL, "--net-rate %s: '%.40s' is not a number from 0 (unlimited) to %llu per second",
					 names[i], eq + 1, (unsigned long long)RATE_SIZE_MAX);
		*slot[i] = v;
	}
	return 0;
}

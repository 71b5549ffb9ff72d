/*
 * Network devices of a VM: each --net becomes a virtio-net device on a TAP
 * or passt backend, behind a packet filter when the VM has rules
 * (cfg.firewall); and the firewall commands of the control socket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "devices/net/net_filter.h"
#include "lib/netrules/net_host_addrs.h"
#include "devices/net/net_passt.h"
#include "devices/net/net_tap.h"
#include "devices/net/virtio_net.h"
#include "lib/base/json_text.h"
#include "lib/base/mono.h"
#include "lib/egress/egress_subgroup.h"
#include "vmm/core/vm_internal.h"

/* The filter's denied-flow log: one line each (the filter rate-limits them). */
static void firewall_log(void *ctx, const struct nf_log_entry *le)
{
	char line[256];

	struct vm *vm = ctx;

	nf_log_format(le, line, sizeof(line));
	dprintf(vm->cfg.log_fd, "kiln-vmm: firewall: %s\n", line);
}

static void bucket(struct rate_bucket_cfg *b, uint64_t per_s)
{
	b->size = per_s;
	b->refill_ms = per_s ? 1000 : 0;
	b->one_time_burst = 0;
}

static int rules_parse(const char *text, size_t len, struct net_rules **out, struct err *e)
{
	struct net_rules_err re = { 0 };
	int r = net_rules_parse_text(text, len, out, &re);

	if (r < 0)
		return err_set(e, -r, "%s", re.msg);
	return 0;
}

/*
 * The rules a passt device gets without --firewall when no cgroup
 * programs hold passt (kiln-vmm not root, or no cgroup v2): everything
 * the guest could reach before, the public internet and the private
 * ranges, but never what the filter always denies, the reserved classes
 * (the host's loopback, link-local and metadata) and the host's own
 * addresses. Without them a guest would reach the host's loopback through
 * passt, a process of the host (docs/security.md, "Outside the VMM").
 */
static const char implicit_rules[] =
	"{\"outbound_internet\": true, \"allow\": [{\"cidr\": \"10.0.0.0/8\"}, {\"cidr\": \"172.16.0.0/12\"},"
	" {\"cidr\": \"192.168.0.0/16\"}, {\"cidr\": \"100.64.0.0/10\"}, {\"cidr\": \"fc00::/7\"}]}";

static int make_filter(struct vm *vm, const struct vm_net_cfg *c, const uint8_t mac[6],
		       const char *text, size_t len, struct net_filter **out, struct err *e)
{
	struct net_filter_config fc = { 0 };
	const struct vm_net_rate_cfg *rate = &vm->cfg.net_rate;
	struct net_rules *rules;
	struct net_addr *host = NULL;
	struct err re = { { 0 } };
	unsigned prefix;
	int err;

	*out = NULL;
	memcpy(fc.guest_mac, mac, 6);
	if (c->ip) {
		if (devcfg_ip4_prefix(c->ip, &fc.ip4, &prefix))
			return err_set(e, EINVAL, "--net ip=%s: not an IPv4 ADDRESS/PREFIX", c->ip);
		fc.has_ip4 = true;
	}
	/* The flow and DNS tables' hash key: chains an outsider cannot aim at. */
	if (getrandom(fc.hash_key, sizeof(fc.hash_key), 0) != (ssize_t)sizeof(fc.hash_key))
		return err_set(e, EIO, "getrandom: %s", strerror(errno));
	bucket(&fc.tx_bytes, rate->tx_bytes);
	bucket(&fc.tx_packets, rate->tx_packets);
	bucket(&fc.rx_bytes, rate->rx_bytes);
	bucket(&fc.rx_packets, rate->rx_packets);
	/* passt's gateway is passt itself: nothing for the guest to reach there. */
	if (c->passt) {
		if (net_addr_parse(c->gw, &fc.host_deny[0].addr))
			return err_set(e, EINVAL, "--net gw=%s: not an address", c->gw);
		fc.host_deny[0].prefix = 32;
		fc.n_host_deny = 1;
	}
	if (vm->cfg.firewall_log) {
		fc.log = firewall_log;
		fc.log_ctx = vm;
	}
	if ((err = rules_parse(text, len, &rules, &re)))
		return err_set(e, -err, "--firewall: %s", re.msg);
	/* Without it the filter lets no IPv4 out but DHCP (docs/security.md). */
	if (!fc.has_ip4) {
		net_rules_free(rules);
		return err_set(
			e, EINVAL,
			"--net tap=%s: --firewall needs ip=ADDRESS/PREFIX, the guest's address, so the filter can hold the guest to it",
			c->tap ? c->tap : "");
	}
	/* The host's own addresses: reached only through a rule naming one. */
	if ((err = net_host_addrs(&host, &fc.n_host_addrs, e))) {
		net_rules_free(rules);
		return err;
	}
	fc.host_addrs = host;
	err = net_filter_create(&fc, rules, mono_ns(), out, e);
	free(host);
	return err;
}

/*
 * passt in a cgroup of its own with the default egress table, when
 * kiln-vmm runs as root and no kilnd holds it already: a compromised VMM
 * writing frames straight to passt reaches neither the host's loopback
 * nor its addresses nor the metadata service (egress_subgroup.h). 0 with
 * *fd (-1: not held here; *held says whether programs hold passt at all,
 * kilnd's or these), or -errno.
 */
static int passt_cgroup(struct vm *vm, const struct vm_net_cfg *c, int *fd, int *held,
			struct err *e)
{
	struct net_addr res;
	int r;

	if (c->resolver && net_addr_parse(c->resolver, &res))
		return err_set(e, EINVAL, "--net resolver=%s: not an IPv4 address", c->resolver);
	r = egress_subgroup_open(c->resolver ? &res : NULL, fd, e);
	if (r < 0)
		return r;
	/* r == 0 with a message: no programs (not root, no cgroup v2, ...);
	 * without one: kilnd's hold passt already, or these (*fd). */
	*held = *fd >= 0 || !e->msg[0];
	if (!*held && geteuid() == 0)
		dprintf(vm->cfg.log_fd,
			"kiln-vmm: warning: passt runs without egress programs (%s): only the packet filter keeps the guest from the host's loopback and addresses (docs/security.md)\n",
			e->msg);
	e->msg[0] = '\0';
	return 0;
}

static int make_backend(struct vm *vm, const struct vm_net_cfg *c, struct net_backend **out,
			int *held, struct err *e)
{
	struct net_passt_cfg pc = { 0 };
	char addr[NET_ADDR_STRLEN];
	const char *slash;
	int cg = -1, r;

	*held = 1;
	if (c->tap)
		return net_tap_open(c->tap, out, e);
	slash = strchr(c->ip, '/');
	if (!slash || (size_t)(slash - c->ip) >= sizeof(addr))
		return err_set(e, EINVAL, "--net ip=%s: expected ADDRESS/PREFIX", c->ip);
	memcpy(addr, c->ip, (size_t)(slash - c->ip));
	addr[slash - c->ip] = '\0';
	pc.address = addr;
	pc.prefix = c->prefix; /* devcfg_net_check checked it (1-30) */
	pc.gateway = c->gw;
	pc.dns = c->dns;
	pc.resolver = c->resolver;
	if ((r = passt_cgroup(vm, c, &cg, held, e)))
		return r;
	pc.join_cgroup_fd = cg;
	r = net_passt_open(&pc, out, e);
	if (cg >= 0)
		close(cg);
	return r;
}

int vm_net_create(struct vm *vm, const struct vm_net_cfg *c, struct virtio_dev **out, struct err *e)
{
	struct virtio_net_params p = { 0 };
	int err, held;

	if (c->mac) {
		if (net_parse_mac(c->mac, p.mac))
			return err_set(e, EINVAL,
				       "--net mac=%s: not a unicast MAC address like 02:00:00:00:00:01",
				       c->mac);
	} else {
		/* Locally administered unicast (02:...), random per VM so
		 * forks and neighbours never collide. */
		if (getrandom(p.mac, 6, 0) != 6)
			return err_set(e, EIO, "getrandom: %s", strerror(errno));
		p.mac[0] = (uint8_t)((p.mac[0] & 0xfe) | 0x02);
	}
	if (vm->cfg.firewall &&
	    (err = make_filter(vm, c, p.mac, vm->cfg.firewall, vm->cfg.firewall_len, &p.filter, e)))
		return err;
	/* The filter of --firewall steers; the implicit rules below have no `http`. */
	if (p.filter)
		p.egress_proxy = vm->cfg.egress_proxy;
	if ((err = make_backend(vm, c, &p.backend, &held, e))) {
		net_filter_destroy(p.filter);
		return err;
	}
	/* No rules and nothing outside holding passt: the implicit rules,
	 * so the default never reaches the host's loopback. */
	if (!p.filter && c->passt && !held &&
	    (err = make_filter(vm, c, p.mac, implicit_rules, sizeof(implicit_rules) - 1, &p.filter,
			       e))) {
		p.backend->close(p.backend);
		return err;
	}
	return virtio_net_create(&p, vm->loop, out, e);
}

int vm_firewall_set(struct vm *vm, const char *text, size_t len, size_t *cut, struct err *e)
{
	struct net_rules *rules[VM_VIRTIO_MAX] = { 0 };
	int idx[VM_VIRTIO_MAX], n = 0, err = 0;

	*cut = 0;
	for (int i = 0; i < vm->nvirtio; i++)
		if (virtio_net_is(vm->virtio[i].dev))
			idx[n++] = i;
	if (!vm->cfg.firewall || !n)
		return err_set(e, ENODEV, "no packet filter: kiln-vmm runs without %s",
			       n ? "--firewall (start it with --firewall FILE)"
				 : "a network device (--net)");
	/* Every device's copy first, so a bad rule set or no memory replaces nothing. */
	for (int k = 0; k < n && !err; k++)
		err = rules_parse(text, len, &rules[k], e);
	/* Live steered flows go on either way: only new flows follow the new ports. */
	if (!err && rules[0]->http && !vm->cfg.egress_proxy)
		err = err_set(
			e, EINVAL,
			"firewall: \"http\" rules need an egress proxy, and this kiln-vmm has none (start it with --egress-proxy PATH)");
	for (int k = 0; k < n; k++) {
		size_t c = 0;

		if (err) {
			net_rules_free(rules[k]);
			continue;
		}
		if (virtio_net_filter_replace(vm->virtio[idx[k]].dev, rules[k], &c) == 0)
			*cut += c;
	}
	return err;
}

char *vm_firewall_get(struct vm *vm, struct err *e)
{
	for (int i = 0; vm->cfg.firewall && i < vm->nvirtio; i++) {
		json_t *j;
		char *s;

		if (!virtio_net_is(vm->virtio[i].dev))
			continue;
		j = virtio_net_filter_json(vm->virtio[i].dev);
		if (!j && errno == ENODEV)
			continue;
		s = j ? json_text(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!s)
			err_set(e, ENOMEM, "out of memory");
		return s;
	}
	err_set(e, ENODEV,
		"no packet filter: kiln-vmm runs without --firewall (start it with --firewall FILE)");
	return NULL;
}

/* A passt sandbox's egress table on its cgroup; see sandbox_egress.h. */
#include "api/kilnd/net/sandbox_egress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/egress/egress_subgroup.h"
#include "lib/netrules/net_host_addrs.h"

void sandbox_egress_probe(struct kilnd_config *cfg)
{
	struct err e;

	cfg->egress = egress_cgroup_probe(&e) == 0;
	if (cfg->egress)
		return;
	snprintf(cfg->egress_off, sizeof(cfg->egress_off), "%.400s", e.msg);
	if (cfg->no_jail)
		kilnd_log("%s; passt sandboxes are held to their rules by kiln-vmm's packet filter alone (--no-jail)",
			  e.msg);
	else
		kilnd_log("%s; passt sandboxes cannot start (a compromised kiln-vmm would reach the host's loopback through passt): run kilnd as root on a kernel with CONFIG_CGROUP_BPF",
			  e.msg);
}

const struct net_addr *sandbox_egress_resolver(const struct kilnd *d, struct net_addr *a)
{
	if (d->cfg.dns_resolver[0])
		return net_addr_parse(d->cfg.dns_resolver, a) == 0 ? a : NULL;
	return egress_host_resolver(a) == 0 ? a : NULL;
}

static int build(struct sandbox *sb, const json_t *canon, struct egress_policy *p,
		 struct api_err *e)
{
	struct net_addr *host = NULL, res_a;
	const struct net_addr *res = sandbox_egress_resolver(sb->d, &res_a);
	struct net_rules *rules = NULL;
	struct net_rules_err re;
	json_t *stored = NULL;
	struct err ee;
	size_t n = 0;
	int r = -1;

	if (!canon && sandbox_firewall_current(sb, &stored, e))
		return -1;
	if (net_rules_parse(canon ? canon : stored, &rules, &re)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress: %s", sb->rec.id, re.msg);
	} else if (net_host_addrs(&host, &n, &ee) ||
		   egress_policy_build(rules, host, n, res, p, &ee)) {
		api_err_set(e, API_E_SPAWN_FAILED, "sandbox %s: %s", sb->rec.id, ee.msg);
	} else {
		r = 0;
	}
	free(host);
	net_rules_free(rules);
	json_decref(stored);
	return r;
}

int sandbox_egress_apply(struct sandbox *sb, const char *cgroup_dir, const json_t *canon,
			 struct api_err *e)
{
	struct kilnd *d = sb->d;
	struct egress_policy p;
	struct err ee;
	int fd, r;

	if (sb->rec.spec.network != SANDBOX_NET_PASST || !cgroup_dir[0])
		return 0;
	if (!d->cfg.egress) {
		if (d->cfg.no_jail)
			return 0;
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: %s; kilnd cannot hold passt to the sandbox's rules outside kiln-vmm: run kilnd as root on a kernel with CONFIG_CGROUP_BPF, or create the sandbox with \"network\": \"none\"",
			    sb->rec.id, d->cfg.egress_off);
		return -1;
	}
	if (build(sb, canon, &p, e))
		return -1;
	fd = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: egress: cannot open its cgroup %s: %s", sb->rec.id,
			    cgroup_dir, strerror(errno));
		egress_policy_free(&p);
		return -1;
	}
	r = egress_cgroup_apply(fd, &p, &ee);
	close(fd);
	egress_policy_free(&p);
	if (r) {
		api_err_set(e, API_E_SPAWN_FAILED, "sandbox %s: %s", sb->rec.id, ee.msg);
		return -1;
	}
	return 0;
}

/* netconf_from_cmdline(): pure, see netconf.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest-init/sys/netconf.h"
#include "guest-init/sys/params.h"
#include "lib/base/num_parse.h"

/* Long enough for any valid value; longer ones are invalid anyway. */
#define VALUE_MAX 256

static void complain(struct netconf_boot *b, const char *fmt, ...)
{
	va_list ap;

	if (b->ncomplaints >= NETCONF_COMPLAINTS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(b->complaint[b->ncomplaints++], NETCONF_COMPLAINT_LEN, fmt, ap);
	va_end(ap);
}

/* 1 with the value, 0 when absent, -1 (complained) when too long. */
static int get(struct netconf_boot *b, const char *cmdline, const char *key, char *v)
{
	int r = param_get(cmdline, key, v, VALUE_MAX);

	if (r == -E2BIG) {
		complain(b, "%s: value longer than %d bytes; ignored", key, VALUE_MAX - 1);
		return -1;
	}
	return r;
}

static void parse_dns(struct netconf_boot *b, const char *v)
{
	char buf[VALUE_MAX], *save = NULL, *tok;
	struct agent_configure_req *r = &b->req;
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == AGENT_DNS_MAX) {
			complain(b,
				 "kiln.dns='%.100s': more than %d servers (resolv.conf uses %d); ignored",
				 v, AGENT_DNS_MAX, AGENT_DNS_MAX);
			return;
		}
		if (agent_parse_ip(tok, &r->dns[n]) < 0) {
			complain(b, "kiln.dns='%.100s': '%.60s' is not an IP address; ignored", v,
				 tok);
			return;
		}
		n++;
	}
	r->has_dns = true;
	r->dns_n = n;
}

static void parse_mtu(struct netconf_boot *b, const char *v)
{
	uint64_t mtu;

	if (num_parse_u64(v, 10, 68, 65535, &mtu)) {
		complain(b, "kiln.mtu='%.60s': must be an integer from 68 to 65535; ignored", v);
		return;
	}
	b->req.mtu = (uint32_t)mtu;
}

void netconf_from_cmdline(const char *cmdline, struct netconf_boot *b)
{
	struct agent_configure_req *r = &b->req;
	char v[VALUE_MAX];

	memset(b, 0, sizeof(*b));
	snprintf(b->hostname, sizeof(b->hostname), "%s", NETCONF_HOSTNAME_DEFAULT);
	if (get(b, cmdline, "kiln.hostname", v) > 0) {
		if (agent_hostname_valid(v))
			snprintf(b->hostname, sizeof(b->hostname), "%.*s", AGENT_HOSTNAME_MAX, v);
		else
			complain(b,
				 "kiln.hostname='%.100s': not a valid hostname (1..64 bytes, labels of letters, digits and '-'); using '%s'",
				 v, NETCONF_HOSTNAME_DEFAULT);
	}
	r->hostname = b->hostname;
	if (get(b, cmdline, "kiln.ip", v) > 0) {
		if (agent_parse_cidr(v, &r->address) == 0)
			r->has_address = true;
		else
			complain(b,
				 "kiln.ip='%.100s': must be ADDRESS/PREFIX like 10.0.2.15/24 or fd00::2/64; ignored",
				 v);
	}
	if (get(b, cmdline, "kiln.gw", v) > 0) {
		if (agent_parse_ip(v, &r->gateway) < 0)
			complain(b, "kiln.gw='%.100s': not an IP address; ignored", v);
		else if (r->has_address && r->gateway.family != r->address.family)
			complain(b, "kiln.gw='%.100s': not the same family as kiln.ip; ignored", v);
		else
			r->has_gateway = true;
	}
	if (get(b, cmdline, "kiln.dns", v) > 0)
		parse_dns(b, v);
	if (get(b, cmdline, "kiln.mtu", v) > 0)
		parse_mtu(b, v);
	r->iface = "eth0";
	if (get(b, cmdline, "kiln.iface", v) > 0) {
		if (!agent_ifname_valid(v))
			complain(b,
				 "kiln.iface='%.100s': not a valid interface name (1..15 bytes, no '/', ':' or spaces); using eth0",
				 v);
		else if (!r->has_address && !r->has_gateway && !r->mtu)
			complain(b,
				 "kiln.iface='%.100s': applies only with kiln.ip, kiln.gw or kiln.mtu; ignored",
				 v);
		else
			r->iface = memcpy(b->iface, v, strlen(v) + 1);
	}
}

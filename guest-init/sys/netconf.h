/*
 * netconf: the guest's name and network (docs/agent-protocol.md, 7.6
 * `configure`), for the agent's request and for the same settings on the
 * kernel command line at boot.
 *
 * Contract:
 *  - netconf_apply() applies a validated request in a fixed order:
 *    hostname, MTU, address (the interface is brought up and its global
 *    addresses of that family replaced), default route of the gateway's
 *    family (replaced), DNS (resolv_conf rewritten). It stops at the first
 *    failure; what was applied before stays.
 *  - Addresses and routes go through rtnetlink, one code path for IPv4 and
 *    IPv6; link flags and MTU through ioctl. Link-local and host-scope
 *    addresses are never removed (IPv6 needs its fe80:: address).
 *  - netconf_from_cmdline() is pure: it turns kiln.hostname= kiln.iface=
 *    kiln.ip= kiln.gw= kiln.dns= kiln.mtu= into the same request, with the
 *    same rules, collecting a complaint for each invalid value it skips.
 */
#ifndef KILN_INIT_NETCONF_H
#define KILN_INIT_NETCONF_H

#include <stdbool.h>

#include "api/proto/agent_proto.h"

#define NETCONF_HOSTNAME_DEFAULT "kiln"
#define NETCONF_COMPLAINTS_MAX 8
#define NETCONF_COMPLAINT_LEN 200

/* err = "configure: <what failed>: <strerror>", its code from the errno
 * e; returns -1. For every configure step (trust_ca.c's too). */
int netconf_fail(struct agent_err *err, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* 0, or -1 with err set (not_found for a missing interface, io_error, ...). */
int netconf_apply(const struct agent_configure_req *r, const char *resolv_conf,
		  struct agent_err *err);

/* Each step of netconf_apply() alone (the boot path reports each failure). */
int netconf_hostname(const struct agent_configure_req *r, struct agent_err *err);
int netconf_mtu(const struct agent_configure_req *r, struct agent_err *err);
int netconf_address(const struct agent_configure_req *r, struct agent_err *err);
int netconf_gateway(const struct agent_configure_req *r, struct agent_err *err);
int netconf_dns(const struct agent_configure_req *r, const char *resolv_conf,
		struct agent_err *err);

/*
 * Bring the loopback interface up (the kernel then gives it 127.0.0.1/8
 * and ::1): guest programs, and the agent's tcp_connect bridge, reach
 * local servers through it even when the guest has no network.
 */
int netconf_loopback(struct agent_err *err);

struct netconf_boot {
	struct agent_configure_req req; /* strings point into the buffers below */
	char hostname[AGENT_HOSTNAME_MAX + 1];
	char iface[AGENT_IFNAME_MAX + 1];
	char complaint[NETCONF_COMPLAINTS_MAX][NETCONF_COMPLAINT_LEN];
	int ncomplaints;
};

/*
 * Build the boot-time request from the command line. The hostname is
 * always set: kiln.hostname= when valid, else "kiln" (as kiln-init always
 * did). Invalid values are left out and described in b->complaint.
 */
void netconf_from_cmdline(const char *cmdline, struct netconf_boot *b);

#endif

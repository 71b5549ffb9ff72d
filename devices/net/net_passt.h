/*
 * net_passt: the passt backend of virtio-net (net_backend.h's interface):
 * rootless NAT through a passt child per VM.
 */
#ifndef KILN_NET_PASST_H
#define KILN_NET_PASST_H

#include <sys/types.h>

#include "devices/net/net_backend.h"

/* What kiln-vmm asks passt for (net_passt.c); addresses in text form. */
struct net_passt_cfg {
	const char *program; /* "passt" (found through PATH) unless set */
	const char *address; /* the guest's IPv4 address, "10.0.2.15" */
	unsigned prefix;     /* its prefix length, 24 */
	const char *gateway; /* "10.0.2.2"; passt answers for it, and does not map it to the host */
	/*
	 * "10.0.2.3": DNS sent there goes to the first nameserver of the
	 * host's /etc/resolv.conf (passt's --dns-forward; this passt forwards
	 * only to a resolver it read there, not to one given with --dns).
	 */
	const char *dns;
	/*
	 * The nameserver passt forwards that DNS to, or NULL for the host's
	 * own. passt reads only /etc/resolv.conf, so it is given one of its
	 * own: the child enters a new mount namespace and bind-mounts a
	 * one-line file over /etc/resolv.conf before exec. Needs
	 * CAP_SYS_ADMIN (kiln-vmm as root).
	 */
	const char *resolver;
	/*
	 * A cgroup.procs descriptor (> 0) the child writes "0" to before exec:
	 * passt runs in that cgroup, under the egress programs attached to it
	 * (lib/egress/egress_subgroup.h), from its first instruction. 0: it
	 * stays in the caller's cgroup.
	 */
	int join_cgroup_fd;
};

/*
 * Start `passt` as a child that serves this VM alone over a connected
 * socketpair (passt --fd, so no socket path, and it quits when kiln-vmm
 * closes its end or dies), and speak passt's qemu framing on it: every
 * frame is preceded by its length as a 4-byte big-endian number. IPv4
 * only; no ports are forwarded to the guest.
 */
int net_passt_open(const struct net_passt_cfg *cfg, struct net_backend **out, struct err *e);

/*
 * The passt framing on an already connected stream socket `fd` (owned from
 * now on); `pid` (or 0) is the passt process to stop and reap on close.
 * For tests, and for whoever starts passt another way.
 */
int net_passt_attach(int fd, pid_t pid, struct net_backend **out, struct err *e);

#endif

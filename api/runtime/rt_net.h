/*
 * rt_net: the container's network namespace given to its VM
 * (docs/oci-runtime.md "Networking"). The engine's network (netavark,
 * CNI, libnetwork) made the namespace and put one interface in it, a
 * veth; the shim reads that interface (nl_parse), makes a TAP beside it
 * (rt_tap_name: the container's own; persistent, so kiln-vmm attaches to
 * it by name), and
 * joins the two with tc: every frame arriving on either is redirected to
 * the other's egress (nl_build_redirect). The guest takes the interface's
 * MAC, address, gateway and MTU, so to the engine's network the VM is the
 * container.
 *
 * kiln-vmm opens the TAP before its jail, so it is started while the
 * shim is in the namespace (rt_net_enter ... rt_net_leave); the jail then
 * leaves it for an empty namespace of its own.
 *
 * A config whose `network` namespace has no path asks for a new one, as
 * runc makes it: the shim unshares it before the hooks (rt_net_unshare)
 * and stays in it, so that an engine's prestart hook finds it at
 * /proc/<shim pid>/ns/net (the state's pid) and moves the container's
 * interface in: Docker's libnetwork-setkey does. The VM then takes that
 * interface as any other (rt_net_open of RT_NET_OWN); with none, it has
 * loopback only.
 *
 * Contract: thin syscalls (the pure parts are nl_parse, nl_build,
 * rt_plan_net). One rt_net per process; it changes the calling thread's
 * network namespace only between enter and leave.
 */
#ifndef KILN_RT_NET_H
#define KILN_RT_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_plan.h"
#include "lib/base/err.h"

struct rt_net {
	int ns_fd;       /* the container's network namespace; -1: none (loopback only) */
	int home_fd;     /* the caller's, to come back to */
	bool tap;        /* name made in it: rt_net_close removes it */
	int iface;       /* the interface redirected to it; 0: none */
	bool made_qdisc; /* its ingress qdisc is kiln's: removed with the TAP */
	char name[RT_TAP_NAME_MAX];
};

/* The calling thread's own namespace, for rt_net_open. */
#define RT_NET_OWN "/proc/thread-self/ns/net"

/* The calling thread leaves the runtime's network namespace for a new
 * one of its own (the VM does not use its loopback). 0 with *home an
 * fd of the runtime's (for the hooks: rt_hooks.h), or -errno with e and
 * *home -1, the thread where it was. */
int rt_net_unshare(int *home, struct err *e);

/* Open the namespace at path (NULL: none, n is then inert), where the
 * TAP is to be named tap (rt_tap_name). 0, or -errno with e. n needs
 * rt_net_close either way. */
int rt_net_open(struct rt_net *n, const char *path, const char *tap, struct err *e);

int rt_net_enter(struct rt_net *n, struct err *e);
int rt_net_leave(struct rt_net *n, struct err *e);

/*
 * In the namespace (after rt_net_enter): read its interface, make the
 * TAP and join the two. 1 with kiln-vmm's --net value in
 * net[RT_NET_OPT_MAX] and the guest's parameters appended to
 * cmdline[cap]; 0 when the namespace has no interface but loopback (the
 * VM gets none: Podman's --network none); -errno with e.
 */
int rt_net_attach(struct rt_net *n, char *cmdline, size_t cap, char *net, struct err *e);

/* Remove the TAP when one was made (entering and leaving the namespace
 * for it) and close n. Quiet: it runs on the way out. */
void rt_net_close(struct rt_net *n);

/* delete's sweep for a shim that was killed: remove the TAP tap from
 * the namespace at path, if it is there. Quiet. */
void rt_net_sweep(const char *path, const char *tap);

#endif

/*
 * net_backend: where virtio-net's frames go. A backend moves whole
 * Ethernet frames (no virtio header) and exposes one fd that becomes
 * readable when a frame is waiting (and writable when send() has room
 * again). Backends: TAP (net_tap.c) and passt (net_passt.c). The packet
 * filter sits in virtio_net.c, between the device and any backend, so it
 * is the same for all of them.
 */
#ifndef KILN_NET_BACKEND_H
#define KILN_NET_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/err.h"

#define NET_MAX_FRAME 65536
#define NET_MIN_FRAME 14 /* an Ethernet header */

struct net_backend {
	const char *name;
	int fd; /* readable when a frame can be received */
	/*
	 * Send one frame. len, or -errno: -EAGAIN means the backend is full
	 * and took nothing (retry once fd is writable, after flush()); other
	 * errors drop the frame, and -EPIPE means the backend is gone.
	 */
	ssize_t (*send)(struct net_backend *b, const void *frame, size_t len);
	/* Receive one frame into buf; bytes, 0 when none, -errno (-EPIPE: gone for good). */
	ssize_t (*recv)(struct net_backend *b, void *buf, size_t cap);
	/*
	 * Optional (NULL when send() never buffers): write out what send()
	 * buffered. 0 when nothing is left, -EAGAIN when fd must become
	 * writable first, another -errno when the backend is gone.
	 */
	int (*flush)(struct net_backend *b);
	void (*close)(struct net_backend *b);
	/* Why the backend failed, for the one log line (empty: strerror of the code). */
	char why[200];
};

/*
 * Attach to TAP device `ifname`, creating it when it does not exist (needs
 * CAP_NET_ADMIN). The device is used without IFF_VNET_HDR: no offloads.
 */
int net_tap_open(const char *ifname, struct net_backend **out, struct err *e);

/* What kiln-vmm asks passt for (net_passt.c); addresses in text form. */
struct net_passt_cfg {
	const char *program;  /* "passt" (found through PATH) unless set */
	const char *address;  /* the guest's IPv4 address, "10.0.2.15" */
	unsigned prefix;      /* its prefix length, 24 */
	const char *gateway;  /* "10.0.2.2"; passt answers for it, and does not map it to the host */
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

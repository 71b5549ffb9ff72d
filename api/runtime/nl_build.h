/*
 * nl_build: the rtnetlink requests kiln-runtime sends into a container's
 * network namespace: the dumps nl_parse reads, and the few changes that
 * give the VM the namespace's interface (design 2.6, docs/oci-runtime.md
 * "Networking"): the TAP brought up with the interface's MTU, an ingress
 * qdisc on each, and a matchall filter on each whose mirred action
 * redirects every frame to the other's egress, so the two are one wire.
 *
 * Contract: pure. Each builder writes one message into r (a request with
 * NLM_F_ACK, or a dump) and returns 0, or -E2BIG when it does not fit
 * (it cannot with NL_REQ_MAX and the names' bounds; checked anyway).
 */
#ifndef KILN_NL_BUILD_H
#define KILN_NL_BUILD_H

#include <stddef.h>
#include <stdint.h>

#define NL_REQ_MAX 512

struct nl_req {
	uint8_t buf[NL_REQ_MAX] __attribute__((aligned(4)));
	size_t len;
	size_t nest[4]; /* open nested attributes' offsets */
	size_t depth;
	int overflow;
};

/* A dump of links (RTM_GETLINK), addresses (RTM_GETADDR) or routes
 * (RTM_GETROUTE) of every family. */
int nl_build_dump(struct nl_req *r, uint16_t type, uint32_t seq);

/* Link ifindex up, with mtu when it is not 0. */
int nl_build_link_up(struct nl_req *r, uint32_t seq, int ifindex, unsigned mtu);

/* Remove the link named name (at most 15 bytes). */
int nl_build_link_del(struct nl_req *r, uint32_t seq, const char *name);

/* An ingress qdisc (handle ffff:) on ifindex. */
int nl_build_ingress(struct nl_req *r, uint32_t seq, int ifindex);

/* ifindex's ingress qdisc removed, with its filters. */
int nl_build_ingress_del(struct nl_req *r, uint32_t seq, int ifindex);

/* On from's ingress: every frame (matchall) redirected to to's egress
 * (mirred, the frame stolen from from's stack). */
int nl_build_redirect(struct nl_req *r, uint32_t seq, int from, int to);

/* from's redirect removed (the filter at kiln's priority on its ingress). */
int nl_build_redirect_del(struct nl_req *r, uint32_t seq, int from);

#endif

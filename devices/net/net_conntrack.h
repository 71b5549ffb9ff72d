/*
 * net_conntrack: the packet filter's connection-tracking table, and its
 * table of fragmented datagrams whose first fragment was let through.
 *
 * Contract:
 *  - Pure; all memory is allocated by ct_init() and nothing after, so a
 *    guest opening flows cannot make the VMM allocate.
 *  - A flow is keyed by the guest side and the remote side (family,
 *    protocol, guest address and port, remote address and port; for ICMP
 *    echo the guest port is the echo identifier and the remote port 0), the
 *    same for both directions. Only the guest opens flows.
 *  - The table holds at most `capacity` flows. Inserting into a full table
 *    first reclaims expired flows (a bounded sweep); if none is expired the
 *    new flow is refused: established flows are never evicted for new ones,
 *    so a guest opening flows in a loop cannot cut the flows it already has
 *    (nor anyone else's: every VM has its own table).
 *  - Chains hash with SipHash under a key the caller chooses at random, so
 *    the guest cannot aim its flows at one chain; each lookup walks one
 *    chain, each packet also expires at most CT_SWEEP_STEP slots.
 *  - Timeouts (idle, per protocol and TCP state) are below; ct_track()
 *    moves a flow through the TCP states from the flags it sees.
 */
#ifndef KILN_NET_CONNTRACK_H
#define KILN_NET_CONNTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/netrules/net_addr.h"
#include "lib/netrules/net_rules.h"

#define CT_DEFAULT_CAPACITY 4096
#define CT_MAX_CAPACITY (1u << 20)
#define CT_SWEEP_STEP 4       /* slots expired per packet */
#define CT_SWEEP_FULL 64      /* slots looked at when the table is full */

#define CT_NS(s) ((uint64_t)(s) * 1000000000ULL)
/* Idle timeouts. TCP: close to Linux's nf_conntrack defaults, shorter where
 * a sandbox gains nothing from waiting (established: 4 h, not 5 days). */
#define CT_TO_TCP_SYN_SENT CT_NS(60)
#define CT_TO_TCP_ESTABLISHED CT_NS(4 * 3600)
#define CT_TO_TCP_FIN_WAIT CT_NS(120)
#define CT_TO_TCP_TIME_WAIT CT_NS(60)
#define CT_TO_TCP_CLOSED CT_NS(10)
#define CT_TO_UDP_NEW CT_NS(30)
#define CT_TO_UDP_REPLIED CT_NS(180)
#define CT_TO_ICMP CT_NS(30)

#define CT_FRAG_MAX 64          /* fragmented datagrams in flight, per direction together */
#define CT_TO_FRAG CT_NS(30)    /* Linux's ipfrag_time */

enum ct_dir {
	CT_EGRESS,  /* guest to network */
	CT_INGRESS, /* network to guest */
};

enum ct_state {
	CT_TCP_SYN_SENT = 1,
	CT_TCP_ESTABLISHED,
	CT_TCP_FIN_WAIT,  /* one side sent FIN */
	CT_TCP_TIME_WAIT, /* both sides sent FIN */
	CT_TCP_CLOSED,    /* RST seen */
	CT_UDP_NEW,
	CT_UDP_REPLIED,
	CT_ICMP_ECHO,
};

struct ct_key {
	uint8_t family, proto;
	uint16_t gport, rport;
	uint8_t guest[16], remote[16];
};

struct ct_flow {
	struct ct_key key;
	uint8_t state;   /* enum ct_state; 0: free slot */
	uint8_t fins;    /* 1 << enum ct_dir for each side that sent FIN */
	struct net_rule_ref rule; /* what allowed the flow */
	uint32_t next;   /* chain, CT_NIL at the end */
	uint64_t expires_ns;
	uint64_t packets[2], bytes[2]; /* by enum ct_dir */
};

struct ct_frag {
	uint8_t used, dir, family, proto;
	uint32_t id;
	uint8_t src[16], dst[16];
	uint64_t expires_ns;
};

#define CT_NIL UINT32_MAX

struct ct_table {
	uint32_t capacity, count, nbuckets; /* nbuckets: a power of two */
	uint32_t free_head, sweep;
	uint64_t key[2];
	uint32_t *heads;
	struct ct_flow *flows;
	struct ct_frag frags[CT_FRAG_MAX];
	uint64_t refused; /* inserts refused because the table was full */
};

/* Allocate a table for capacity flows (0: CT_DEFAULT_CAPACITY). 0 or -EINVAL/-ENOMEM. */
int ct_init(struct ct_table *t, uint32_t capacity, const uint64_t hash_key[2]);
void ct_free(struct ct_table *t);

/* The live flow of k, or NULL (an expired one is removed). */
struct ct_flow *ct_lookup(struct ct_table *t, const struct ct_key *k, uint64_t now_ns);
/* A new flow for k (the caller checked it is not present), started (ct_start), or NULL when full. */
struct ct_flow *ct_insert(struct ct_table *t, const struct ct_key *k, uint64_t now_ns);
void ct_remove(struct ct_table *t, struct ct_flow *f);
/* Expire up to `slots` slots from the sweep cursor. */
void ct_sweep(struct ct_table *t, uint64_t now_ns, uint32_t slots);
/* Flow i (0..capacity-1) if it is live, for walking the table. */
struct ct_flow *ct_at(struct ct_table *t, uint32_t i, uint64_t now_ns);

/* (Re)start a flow in its protocol's first state (TCP: SYN sent), counters kept. */
void ct_start(struct ct_flow *f, uint64_t now_ns);
/* Account one packet of `bytes` in direction dir with these TCP flags; refreshes the timeout. */
void ct_track(struct ct_flow *f, enum ct_dir dir, uint8_t tcp_flags, uint64_t bytes, uint64_t now_ns);

/*
 * Fragments: remember that the first fragment of datagram (family, proto,
 * src, dst, id) went through in direction dir, so its later fragments may.
 * A full table drops the entry nearest expiry (the guest's own datagram or
 * one it asked for: nothing of another VM).
 */
void ct_frag_add(struct ct_table *t, enum ct_dir dir, int family, uint8_t proto, const uint8_t *src,
		 const uint8_t *dst, uint32_t id, uint64_t now_ns);
bool ct_frag_known(struct ct_table *t, enum ct_dir dir, int family, uint8_t proto, const uint8_t *src,
		   const uint8_t *dst, uint32_t id, uint64_t now_ns);
void ct_frag_flush(struct ct_table *t);

const char *ct_state_name(uint8_t state);

#endif

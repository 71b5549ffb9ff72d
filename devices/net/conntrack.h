/*
 * conntrack: the packet filter's connection-tracking table, and its
 * table of fragmented datagrams whose first fragment was let through.
 *
 * Contract:
 *  - Pure; all memory is allocated by conntrack_init() and nothing after, so a
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
 *    chain, each packet also expires at most CONNTRACK_SWEEP_STEP slots.
 *  - Timeouts (idle, per protocol and TCP state) are below; conntrack_track()
 *    moves a flow through the TCP states from the flags it sees.
 */
#ifndef KILN_CONNTRACK_H
#define KILN_CONNTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/netrules/net_addr.h"
#include "lib/netrules/net_rules.h"

#define CONNTRACK_DEFAULT_CAPACITY 4096
#define CONNTRACK_MAX_CAPACITY (1u << 20)
#define CONNTRACK_SWEEP_STEP 4  /* slots expired per packet */
#define CONNTRACK_SWEEP_FULL 64 /* slots looked at when the table is full */

#define CONNTRACK_NS(s) ((uint64_t)(s)*1000000000ULL)
/* Idle timeouts. TCP: close to Linux's nf_conntrack defaults, shorter where
 * a sandbox gains nothing from waiting (established: 4 h, not 5 days). */
#define CONNTRACK_TO_TCP_SYN_SENT CONNTRACK_NS(60)
#define CONNTRACK_TO_TCP_ESTABLISHED CONNTRACK_NS(4 * 3600)
#define CONNTRACK_TO_TCP_FIN_WAIT CONNTRACK_NS(120)
#define CONNTRACK_TO_TCP_TIME_WAIT CONNTRACK_NS(60)
#define CONNTRACK_TO_TCP_CLOSED CONNTRACK_NS(10)
#define CONNTRACK_TO_UDP_NEW CONNTRACK_NS(30)
#define CONNTRACK_TO_UDP_REPLIED CONNTRACK_NS(180)
#define CONNTRACK_TO_ICMP CONNTRACK_NS(30)

#define CONNTRACK_FRAG_MAX 64 /* fragmented datagrams in flight, per direction together */
#define CONNTRACK_TO_FRAG CONNTRACK_NS(30) /* Linux's ipfrag_time */

enum conntrack_dir {
	CONNTRACK_EGRESS,  /* guest to network */
	CONNTRACK_INGRESS, /* network to guest */
};

enum conntrack_state {
	CONNTRACK_TCP_SYN_SENT = 1,
	CONNTRACK_TCP_ESTABLISHED,
	CONNTRACK_TCP_FIN_WAIT,  /* one side sent FIN */
	CONNTRACK_TCP_TIME_WAIT, /* both sides sent FIN */
	CONNTRACK_TCP_CLOSED,    /* RST seen */
	CONNTRACK_UDP_NEW,
	CONNTRACK_UDP_REPLIED,
	CONNTRACK_ICMP_ECHO,
};

struct conntrack_key {
	uint8_t family, proto;
	uint16_t gport, rport;
	uint8_t guest[16], remote[16];
};

struct conntrack_flow {
	struct conntrack_key key;
	uint8_t state;            /* enum conntrack_state; 0: free slot */
	uint8_t fins;             /* 1 << enum conntrack_dir for each side that sent FIN */
	struct net_rule_ref rule; /* what allowed the flow */
	uint32_t next;            /* chain, CONNTRACK_NIL at the end */
	uint64_t expires_ns;
	uint64_t packets[2], bytes[2]; /* by enum conntrack_dir */
};

struct conntrack_frag {
	uint8_t used, dir, family, proto;
	uint32_t id;
	uint8_t src[16], dst[16];
	uint64_t expires_ns;
};

#define CONNTRACK_NIL UINT32_MAX

struct conntrack_table {
	uint32_t capacity, count, nbuckets; /* nbuckets: a power of two */
	uint32_t free_head, sweep;
	uint64_t key[2];
	uint32_t *heads;
	struct conntrack_flow *flows;
	struct conntrack_frag frags[CONNTRACK_FRAG_MAX];
	uint64_t refused; /* inserts refused because the table was full */
};

/* Allocate a table for capacity flows (0: CONNTRACK_DEFAULT_CAPACITY). 0 or -EINVAL/-ENOMEM. */
int conntrack_init(struct conntrack_table *t, uint32_t capacity, const uint64_t hash_key[2]);
void conntrack_free(struct conntrack_table *t);

/* The live flow of k, or NULL (an expired one is removed). */
struct conntrack_flow *conntrack_lookup(struct conntrack_table *t, const struct conntrack_key *k,
					uint64_t now_ns);
/* A new flow for k (the caller checked it is not present), started (conntrack_start), or NULL when full. */
struct conntrack_flow *conntrack_insert(struct conntrack_table *t, const struct conntrack_key *k,
					uint64_t now_ns);
void conntrack_remove(struct conntrack_table *t, struct conntrack_flow *f);
/* Expire up to `slots` slots from the sweep cursor. */
void conntrack_sweep(struct conntrack_table *t, uint64_t now_ns, uint32_t slots);
/* Flow i (0..capacity-1) if it is live, for walking the table. */
struct conntrack_flow *conntrack_at(struct conntrack_table *t, uint32_t i, uint64_t now_ns);

/* (Re)start a flow in its protocol's first state (TCP: SYN sent), counters kept. */
void conntrack_start(struct conntrack_flow *f, uint64_t now_ns);
/* Account one packet of `bytes` in direction dir with these TCP flags; refreshes the timeout. */
void conntrack_track(struct conntrack_flow *f, enum conntrack_dir dir, uint8_t tcp_flags,
		     uint64_t bytes, uint64_t now_ns);

/*
 * Fragments: remember that the first fragment of datagram (family, proto,
 * src, dst, id) went through in direction dir, so its later fragments may.
 * A full table drops the entry nearest expiry (the guest's own datagram or
 * one it asked for: nothing of another VM).
 */
void conntrack_frag_add(struct conntrack_table *t, enum conntrack_dir dir, int family,
			uint8_t proto, const uint8_t *src, const uint8_t *dst, uint32_t id,
			uint64_t now_ns);
bool conntrack_frag_known(struct conntrack_table *t, enum conntrack_dir dir, int family,
			  uint8_t proto, const uint8_t *src, const uint8_t *dst, uint32_t id,
			  uint64_t now_ns);
void conntrack_frag_flush(struct conntrack_table *t);

const char *conntrack_state_name(uint8_t state);

#endif

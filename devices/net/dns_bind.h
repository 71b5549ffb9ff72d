/*
 * dns_bind: which names the guest resolved to which addresses, learned from
 * the DNS answers the filter saw, for host rules (net_rules.h).
 *
 * Contract:
 *  - Pure; all memory is allocated by dns_bind_init().
 *  - A binding exists only for an answer to a query the guest really sent:
 *    dns_bind_query() records (resolver, guest port, id, name, type) of a
 *    query to an allowed resolver; dns_bind_answer() accepts a response only
 *    from that resolver, to that port, with that id and the same question
 *    (name compared case-insensitively, type equal), once. A response that
 *    matches no query binds nothing (a spoofer must guess id, port and name).
 *  - Only A and AAAA records of class IN bind, and only those owned by the
 *    question name or by a name its CNAME chain reaches (at most
 *    DNS_MAX_ALIASES links); the binding is to the question name, the name
 *    the guest asked for. Unrelated records in the same response (an
 *    "additional" A for another name, or an injected one) bind nothing.
 *  - Names are decoded with a bounded walk: compression pointers must point
 *    strictly backwards (no loops), at most DNS_MAX_JUMPS of them, at most
 *    255 bytes of name; labels may hold only letters, digits, '-' and '_'
 *    (a '.' inside a label would let "evil.com\.example.com" pose as a name
 *    under example.com). Names are lower-cased.
 *  - TTLs are clamped to DNS_TTL_MIN_S..DNS_TTL_MAX_S: a 0-second TTL
 *    still lets the guest connect, an answer never binds for a week.
 *  - Bounded tables: DNS_PENDING_MAX queries (a full table forgets the
 *    oldest), `capacity` bindings (a full table replaces the one closest to
 *    expiry), at most DNS_BIND_PER_ADDR names per address (the same), at
 *    most DNS_MAX_RECORDS records looked at per response.
 *  - A response cut short (a first IP fragment) may bind the records it
 *    holds whole when the caller says partial is fine; otherwise a
 *    malformed response binds nothing.
 */
#ifndef KILN_DNS_BIND_H
#define KILN_DNS_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/netrules/net_addr.h"

#define DNS_NAME_MAX 253 /* text form, without the final dot */
#define DNS_MAX_JUMPS 16
#define DNS_MAX_ALIASES 8
#define DNS_MAX_RECORDS 64
#define DNS_PENDING_MAX 64
#define DNS_BIND_PER_ADDR 8
#define DNS_DEFAULT_CAPACITY 1024
#define DNS_MAX_CAPACITY 65536
#define DNS_TTL_MIN_S 60
#define DNS_TTL_MAX_S 3600
#define DNS_QUERY_TIMEOUT_NS (15ULL * 1000000000ULL) /* resolvers give up sooner */

#define DNS_TYPE_A 1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_AAAA 28

struct dns_question {
	uint16_t id, qtype;
	char name[DNS_NAME_MAX + 1]; /* lower case */
};

/*
 * Decode the name at *off of msg[0..len) into out (lower case, labels joined
 * by '.', "" for the root) and move *off past it. 0 or -EINVAL.
 */
int dns_name_decode(const uint8_t *msg, size_t len, size_t *off, char out[DNS_NAME_MAX + 1]);

/* A standard query (QR 0, opcode 0) with one question. 0 or -EINVAL. */
int dns_parse_query(const uint8_t *msg, size_t len, struct dns_question *q);

struct dns_pending {
	bool used;
	uint16_t gport;
	struct net_addr resolver;
	struct dns_question q;
	uint64_t expires_ns;
};

struct dns_binding {
	struct net_addr addr;
	uint32_t next; /* chain of the address's bucket; DNS_NIL ends it */
	bool used;
	uint64_t expires_ns;
	char name[DNS_NAME_MAX + 1];
};

#define DNS_NIL UINT32_MAX

struct dns_bind {
	uint32_t capacity, count, nbuckets;
	uint64_t key[2];
	uint32_t *heads;
	struct dns_binding *b;
	struct dns_pending pending[DNS_PENDING_MAX];
	/* Responses refused: no matching query (spoofed, late, unrelated), or malformed. */
	uint64_t unmatched, malformed;
};

int dns_bind_init(struct dns_bind *d, uint32_t capacity, const uint64_t hash_key[2]);
void dns_bind_free(struct dns_bind *d);

/* The guest sent query q from gport to resolver. */
void dns_bind_query(struct dns_bind *d, const struct net_addr *resolver, uint16_t gport,
		    const struct dns_question *q, uint64_t now_ns);

/*
 * A UDP payload from resolver port 53 to the guest's gport. Returns the
 * number of addresses bound (0 is fine: NXDOMAIN, no records), -ENOENT when
 * it answers no query the guest sent, -EINVAL when malformed.
 */
int dns_bind_answer(struct dns_bind *d, const struct net_addr *resolver, uint16_t gport,
		    const uint8_t *msg, size_t len, bool partial_ok, uint64_t now_ns);

/* The names bound to addr (not expired), at most cap of them; pointers into d. */
size_t dns_bind_names(struct dns_bind *d, const struct net_addr *addr, uint64_t now_ns,
		      const char **names, size_t cap);
/* The same, expired bindings still in the table included (re-deciding established flows). */
size_t dns_bind_names_any(struct dns_bind *d, const struct net_addr *addr, const char **names,
			  size_t cap);

#endif

#include "devices/net/dns_bind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/net/siphash.h"

#define NS_PER_S 1000000000ULL

static inline uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * Walk the name at *off (RFC 1035 4.1.4). -EINVAL when its structure is
 * bad (runs off the message, pointer not strictly before everything walked
 * so far, too many pointers, longer than 255 bytes, reserved label type);
 * *valid false when it is well-formed but holds bytes kiln does not accept
 * in a name.
 */
static int name_walk(const uint8_t *msg, size_t len, size_t *off, char *out, bool *valid)
{
	size_t pos = *off, limit = *off, end = 0, wire = 1, n = 0;
	int jumps = 0;

	*valid = true;
	for (;;) {
		uint8_t c;

		if (pos >= len)
			return -EINVAL;
		c = msg[pos];
		if ((c & 0xc0) == 0xc0) {
			size_t target;

			if (len - pos < 2)
				return -EINVAL;
			target = (size_t)(c & 0x3f) << 8 | msg[pos + 1];
			/* Every jump lands before all that was walked: no loops. */
			if (target >= limit || ++jumps > DNS_MAX_JUMPS)
				return -EINVAL;
			if (jumps == 1)
				end = pos + 2;
			pos = limit = target;
			continue;
		}
		if (c & 0xc0) /* 0x40 and 0x80 label types (RFC 6891 obsoleted them) */
			return -EINVAL;
		if (c == 0) {
			pos++;
			break;
		}
		if (len - pos - 1 < c)
			return -EINVAL;
		wire += 1 + (size_t)c;
		if (wire > 255) /* RFC 1035 2.3.4 */
			return -EINVAL;
		if (n)
			out[n++] = '.';
		for (size_t i = 0; i < c; i++) {
			char ch = (char)msg[pos + 1 + i];

			if (ch >= 'A' && ch <= 'Z')
				ch = (char)(ch - 'A' + 'a');
			if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			      ch == '_')) {
				*valid = false;
				ch = '?';
			}
			out[n++] = ch;
		}
		pos += 1 + (size_t)c;
	}
	out[n] = '\0';
	*off = jumps ? end : pos;
	return 0;
}

int dns_name_decode(const uint8_t *msg, size_t len, size_t *off, char out[DNS_NAME_MAX + 1])
{
	size_t o = *off;
	bool valid;

	if (name_walk(msg, len, &o, out, &valid) < 0 || !valid)
		return -EINVAL;
	*off = o;
	return 0;
}

/* Header and the one question; *off ends after it. */
static int parse_head(const uint8_t *msg, size_t len, bool response, struct dns_question *q,
		      size_t *off)
{
	uint16_t flags;
	size_t o = 12;

	if (len < 12)
		return -EINVAL;
	flags = be16(msg + 2);
	if (!!(flags & 0x8000) != response || ((flags >> 11) & 0xf) != 0 || be16(msg + 4) != 1)
		return -EINVAL;
	q->id = be16(msg);
	if (dns_name_decode(msg, len, &o, q->name) < 0 || len - o < 4)
		return -EINVAL;
	q->qtype = be16(msg + o);
	if (be16(msg + o + 2) != 1) /* class IN */
		return -EINVAL;
	*off = o + 4;
	return 0;
}

int dns_parse_query(const uint8_t *msg, size_t len, struct dns_question *q)
{
	size_t off;

	memset(q, 0, sizeof(*q));
	return parse_head(msg, len, false, q, &off);
}

int dns_bind_init(struct dns_bind *d, uint32_t capacity, const uint64_t hash_key[2])
{
	memset(d, 0, sizeof(*d));
	if (capacity == 0)
		capacity = DNS_DEFAULT_CAPACITY;
	if (capacity > DNS_MAX_CAPACITY)
		return -EINVAL;
	d->capacity = capacity;
	d->nbuckets = 1;
	while (d->nbuckets < capacity)
		d->nbuckets <<= 1;
	d->key[0] = hash_key[0];
	d->key[1] = hash_key[1];
	d->heads = malloc(d->nbuckets * sizeof(*d->heads));
	d->b = calloc(capacity, sizeof(*d->b));
	if (!d->heads || !d->b) {
		dns_bind_free(d);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < d->nbuckets; i++)
		d->heads[i] = DNS_NIL;
	return 0;
}

void dns_bind_free(struct dns_bind *d)
{
	free(d->heads);
	free(d->b);
	d->heads = NULL;
	d->b = NULL;
	d->capacity = d->count = 0;
}

void dns_bind_query(struct dns_bind *d, const struct net_addr *resolver, uint16_t gport,
		    const struct dns_question *q, uint64_t now_ns)
{
	struct dns_pending *slot = NULL;

	if (q->qtype != DNS_TYPE_A && q->qtype != DNS_TYPE_AAAA)
		return; /* nothing else binds */
	for (int i = 0; i < DNS_PENDING_MAX; i++) {
		struct dns_pending *p = &d->pending[i];

		if (!p->used || p->expires_ns <= now_ns ||
		    (p->gport == gport && p->q.id == q->id &&
		     net_addr_equal(&p->resolver, resolver))) {
			slot = p;
			break;
		}
		if (!slot || p->expires_ns < slot->expires_ns)
			slot = p;
	}
	slot->used = true;
	slot->gport = gport;
	slot->resolver = *resolver;
	slot->q = *q;
	slot->expires_ns = now_ns + DNS_QUERY_TIMEOUT_NS;
}

static uint32_t bucket(const struct dns_bind *d, const struct net_addr *a)
{
	return (uint32_t)siphash24(d->key, a, sizeof(*a)) & (d->nbuckets - 1);
}

static void unlink_at(struct dns_bind *d, uint32_t i)
{
	uint32_t *link = &d->heads[bucket(d, &d->b[i].addr)];

	while (*link != DNS_NIL) {
		if (*link == i) {
			*link = d->b[i].next;
			d->b[i].used = false;
			d->count--;
			return;
		}
		link = &d->b[*link].next;
	}
}

static void bind_one(struct dns_bind *d, const char *name, const struct net_addr *addr,
		     uint64_t expires)
{
	uint32_t h = bucket(d, addr), same = 0, victim = DNS_NIL;

	for (uint32_t i = d->heads[h]; i != DNS_NIL; i = d->b[i].next) {
		struct dns_binding *e = &d->b[i];

		if (!net_addr_equal(&e->addr, addr))
			continue;
		if (!strcmp(e->name, name)) {
			if (e->expires_ns < expires)
				e->expires_ns = expires;
			return;
		}
		same++;
		if (victim == DNS_NIL || e->expires_ns < d->b[victim].expires_ns)
			victim = i;
	}
	if (same >= DNS_BIND_PER_ADDR) {
		/* The address's binding closest to expiry gives way. */
		snprintf(d->b[victim].name, sizeof(d->b[victim].name), "%s", name);
		d->b[victim].expires_ns = expires;
		return;
	}
	victim = DNS_NIL;
	for (uint32_t i = 0; i < d->capacity; i++) {
		if (!d->b[i].used) {
			victim = i;
			break;
		}
		if (victim == DNS_NIL || d->b[i].expires_ns < d->b[victim].expires_ns)
			victim = i;
	}
	if (d->b[victim].used)
		unlink_at(d, victim);
	d->b[victim].used = true;
	d->b[victim].addr = *addr;
	d->b[victim].expires_ns = expires;
	snprintf(d->b[victim].name, sizeof(d->b[victim].name), "%s", name);
	h = bucket(d, addr);
	d->b[victim].next = d->heads[h];
	d->heads[h] = victim;
	d->count++;
}

struct rr {
	uint16_t type, class;
	uint32_t ttl;
	size_t owner, rdata;
	uint16_t rdlen;
};

typedef char dns_name[DNS_NAME_MAX + 1];

static bool is_alias(const dns_name *aliases, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(aliases[i], name))
			return true;
	return false;
}

/*
 * The answer section from off: up to DNS_MAX_RECORDS records whose owner
 * is a name kiln accepts. 0, or -EINVAL when the section runs off the
 * message (then rr[0..*n) are the whole records before that point).
 */
static int read_records(const uint8_t *msg, size_t len, size_t off, size_t count, struct rr *rr,
			size_t *n)
{
	dns_name owner;

	*n = 0;
	for (size_t i = 0; i < count && *n < DNS_MAX_RECORDS; i++) {
		struct rr *r = &rr[*n];
		bool valid;

		r->owner = off;
		if (name_walk(msg, len, &off, owner, &valid) < 0 || len - off < 10)
			return -EINVAL;
		r->type = be16(msg + off);
		r->class = be16(msg + off + 2);
		r->ttl = be32(msg + off + 4);
		r->rdlen = be16(msg + off + 8);
		r->rdata = off + 10;
		if (len - r->rdata < r->rdlen)
			return -EINVAL;
		off = r->rdata + r->rdlen;
		if (valid)
			(*n)++;
	}
	return 0;
}

/* aliases[0] is the question name; add the names its CNAME chain reaches. */
static int follow_cnames(const uint8_t *msg, size_t len, const struct rr *rr, size_t nrr,
			 dns_name *aliases)
{
	int n = 1;
	bool changed = true;

	/* Records may come in any order: repeat until the chain stops growing. */
	for (int round = 0; changed && round < DNS_MAX_ALIASES; round++) {
		changed = false;
		for (size_t i = 0; i < nrr && n < DNS_MAX_ALIASES; i++) {
			size_t o = rr[i].owner, t = rr[i].rdata;
			dns_name owner, target;

			if (rr[i].type != DNS_TYPE_CNAME || rr[i].class != 1)
				continue;
			if (dns_name_decode(msg, len, &o, owner) < 0 ||
			    !is_alias(aliases, n, owner))
				continue;
			/* The target must fill the record's data exactly. */
			if (dns_name_decode(msg, len, &t, target) < 0 ||
			    t != rr[i].rdata + rr[i].rdlen || is_alias(aliases, n, target))
				continue;
			snprintf(aliases[n++], sizeof(dns_name), "%s", target);
			changed = true;
		}
	}
	return n;
}

int dns_bind_answer(struct dns_bind *d, const struct net_addr *resolver, uint16_t gport,
		    const uint8_t *msg, size_t len, bool partial_ok, uint64_t now_ns)
{
	struct dns_pending *p = NULL;
	struct dns_question q;
	struct rr rr[DNS_MAX_RECORDS];
	dns_name aliases[DNS_MAX_ALIASES], owner;
	size_t off, nrr;
	int nalias, bound = 0;

	if (len < 12) {
		d->malformed++;
		return -EINVAL;
	}
	for (int i = 0; i < DNS_PENDING_MAX && !p; i++) {
		struct dns_pending *c = &d->pending[i];

		if (c->used && c->expires_ns > now_ns && c->gport == gport &&
		    c->q.id == be16(msg) && net_addr_equal(&c->resolver, resolver))
			p = c;
	}
	if (!p) {
		d->unmatched++;
		return -ENOENT;
	}
	if (parse_head(msg, len, true, &q, &off) < 0) {
		d->malformed++;
		return -EINVAL;
	}
	if (strcmp(q.name, p->q.name) || q.qtype != p->q.qtype) {
		d->unmatched++;
		return -ENOENT;
	}
	p->used = false;                /* one answer per query */
	if ((be16(msg + 2) & 0xf) != 0) /* RCODE: NXDOMAIN, SERVFAIL, ... bind nothing */
		return 0;
	if (read_records(msg, len, off, be16(msg + 6), rr, &nrr) < 0 && !partial_ok) {
		d->malformed++;
		return -EINVAL;
	}
	snprintf(aliases[0], sizeof(aliases[0]), "%s", q.name);
	nalias = follow_cnames(msg, len, rr, nrr, aliases);
	for (size_t i = 0; i < nrr; i++) {
		size_t o = rr[i].owner;
		struct net_addr a;
		uint32_t ttl = rr[i].ttl;

		if (rr[i].class != 1 || rr[i].type != q.qtype)
			continue;
		if (rr[i].rdlen != (rr[i].type == DNS_TYPE_A ? 4 : 16))
			continue;
		if (dns_name_decode(msg, len, &o, owner) < 0 || !is_alias(aliases, nalias, owner))
			continue;
		net_addr_set(&a, rr[i].type == DNS_TYPE_A ? NET_AF4 : NET_AF6, msg + rr[i].rdata);
		if (ttl > 0x7fffffff) /* RFC 2181 8: a TTL with the top bit set is zero */
			ttl = 0;
		ttl = ttl < DNS_TTL_MIN_S     ? DNS_TTL_MIN_S
			: ttl > DNS_TTL_MAX_S ? DNS_TTL_MAX_S
					      : ttl;
		bind_one(d, q.name, &a, now_ns + ttl * NS_PER_S);
		bound++;
	}
	return bound;
}

static size_t names_of(struct dns_bind *d, const struct net_addr *addr, bool any, uint64_t now_ns,
		       const char **names, size_t cap)
{
	size_t n = 0;

	for (uint32_t i = d->heads[bucket(d, addr)]; i != DNS_NIL && n < cap; i = d->b[i].next) {
		struct dns_binding *e = &d->b[i];

		if (net_addr_equal(&e->addr, addr) && (any || e->expires_ns > now_ns))
			names[n++] = e->name;
	}
	return n;
}

size_t dns_bind_names(struct dns_bind *d, const struct net_addr *addr, uint64_t now_ns,
		      const char **names, size_t cap)
{
	return names_of(d, addr, false, now_ns, names, cap);
}

size_t dns_bind_names_any(struct dns_bind *d, const struct net_addr *addr, const char **names,
			  size_t cap)
{
	return names_of(d, addr, true, 0, names, cap);
}

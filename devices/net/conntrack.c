#include "devices/net/conntrack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/net/pkt_parse.h"
#include "devices/net/siphash.h"

_Static_assert(sizeof(struct conntrack_key) == 38,
	       "conntrack_key has no padding: it is hashed and compared as bytes");

int conntrack_init(struct conntrack_table *t, uint32_t capacity, const uint64_t hash_key[2])
{
	memset(t, 0, sizeof(*t));
	if (capacity == 0)
		capacity = CONNTRACK_DEFAULT_CAPACITY;
	if (capacity > CONNTRACK_MAX_CAPACITY)
		return -EINVAL;
	t->capacity = capacity;
	t->nbuckets = 1;
	while (t->nbuckets < capacity)
		t->nbuckets <<= 1;
	t->key[0] = hash_key[0];
	t->key[1] = hash_key[1];
	t->heads = malloc(t->nbuckets * sizeof(*t->heads));
	t->flows = calloc(capacity, sizeof(*t->flows));
	if (!t->heads || !t->flows) {
		conntrack_free(t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nbuckets; i++)
		t->heads[i] = CONNTRACK_NIL;
	for (uint32_t i = 0; i < capacity; i++)
		t->flows[i].next = i + 1 < capacity ? i + 1 : CONNTRACK_NIL;
	t->free_head = 0;
	return 0;
}

void conntrack_free(struct conntrack_table *t)
{
	free(t->heads);
	free(t->flows);
	t->heads = NULL;
	t->flows = NULL;
	t->capacity = t->count = 0;
}

static uint32_t bucket(const struct conntrack_table *t, const struct conntrack_key *k)
{
	return (uint32_t)siphash24(t->key, k, sizeof(*k)) & (t->nbuckets - 1);
}

static void unlink_flow(struct conntrack_table *t, uint32_t *link, uint32_t i)
{
	struct conntrack_flow *f = &t->flows[i];

	*link = f->next;
	memset(f, 0, sizeof(*f));
	f->next = t->free_head;
	t->free_head = i;
	t->count--;
}

struct conntrack_flow *conntrack_lookup(struct conntrack_table *t, const struct conntrack_key *k,
					uint64_t now_ns)
{
	uint32_t *link = &t->heads[bucket(t, k)];

	while (*link != CONNTRACK_NIL) {
		uint32_t i = *link;
		struct conntrack_flow *f = &t->flows[i];

		if (f->expires_ns <= now_ns) { /* expired: reclaim it on the way */
			unlink_flow(t, link, i);
			continue;
		}
		if (!memcmp(&f->key, k, sizeof(*k)))
			return f;
		link = &f->next;
	}
	return NULL;
}

void conntrack_start(struct conntrack_flow *f, uint64_t now_ns)
{
	f->fins = 0;
	switch (f->key.proto) {
	case PKT_PROTO_TCP:
		f->state = CONNTRACK_TCP_SYN_SENT;
		f->expires_ns = now_ns + CONNTRACK_TO_TCP_SYN_SENT;
		break;
	case PKT_PROTO_UDP:
		f->state = CONNTRACK_UDP_NEW;
		f->expires_ns = now_ns + CONNTRACK_TO_UDP_NEW;
		break;
	default:
		f->state = CONNTRACK_ICMP_ECHO;
		f->expires_ns = now_ns + CONNTRACK_TO_ICMP;
		break;
	}
}

struct conntrack_flow *conntrack_insert(struct conntrack_table *t, const struct conntrack_key *k,
					uint64_t now_ns)
{
	uint32_t i, b;
	struct conntrack_flow *f;

	if (t->free_head == CONNTRACK_NIL)
		conntrack_sweep(t, now_ns, CONNTRACK_SWEEP_FULL);
	if (t->free_head == CONNTRACK_NIL) {
		t->refused++;
		return NULL;
	}
	i = t->free_head;
	f = &t->flows[i];
	t->free_head = f->next;
	memset(f, 0, sizeof(*f));
	f->key = *k;
	b = bucket(t, k);
	f->next = t->heads[b];
	t->heads[b] = i;
	t->count++;
	conntrack_start(f, now_ns);
	return f;
}

void conntrack_remove(struct conntrack_table *t, struct conntrack_flow *f)
{
	uint32_t i = (uint32_t)(f - t->flows);
	uint32_t *link = &t->heads[bucket(t, &f->key)];

	while (*link != CONNTRACK_NIL) {
		if (*link == i) {
			unlink_flow(t, link, i);
			return;
		}
		link = &t->flows[*link].next;
	}
}

struct conntrack_flow *conntrack_at(struct conntrack_table *t, uint32_t i, uint64_t now_ns)
{
	struct conntrack_flow *f;

	if (i >= t->capacity)
		return NULL;
	f = &t->flows[i];
	if (!f->state)
		return NULL;
	if (f->expires_ns <= now_ns) {
		conntrack_remove(t, f);
		return NULL;
	}
	return f;
}

void conntrack_sweep(struct conntrack_table *t, uint64_t now_ns, uint32_t slots)
{
	for (uint32_t n = 0; n < slots && n < t->capacity; n++) {
		conntrack_at(t, t->sweep, now_ns);
		t->sweep = t->sweep + 1 < t->capacity ? t->sweep + 1 : 0;
	}
}

void conntrack_track(struct conntrack_flow *f, enum conntrack_dir dir, uint8_t tcp_flags,
		     uint64_t bytes, uint64_t now_ns)
{
	uint64_t to;

	f->packets[dir]++;
	f->bytes[dir] += bytes;
	switch (f->state) {
	case CONNTRACK_UDP_NEW:
	case CONNTRACK_UDP_REPLIED:
		if (dir == CONNTRACK_INGRESS)
			f->state = CONNTRACK_UDP_REPLIED;
		f->expires_ns = now_ns +
			(f->state == CONNTRACK_UDP_REPLIED ? CONNTRACK_TO_UDP_REPLIED
							   : CONNTRACK_TO_UDP_NEW);
		return;
	case CONNTRACK_ICMP_ECHO:
		f->expires_ns = now_ns + CONNTRACK_TO_ICMP;
		return;
	default:
		break;
	}
	/* TCP */
	if (tcp_flags & PKT_TCP_RST) {
		f->state = CONNTRACK_TCP_CLOSED;
	} else if (f->state != CONNTRACK_TCP_CLOSED) {
		if (f->state == CONNTRACK_TCP_SYN_SENT && dir == CONNTRACK_INGRESS &&
		    (tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK))
			f->state = CONNTRACK_TCP_ESTABLISHED;
		if (tcp_flags & PKT_TCP_FIN)
			f->fins |= (uint8_t)(1u << dir);
		if (f->fins == 3)
			f->state = CONNTRACK_TCP_TIME_WAIT;
		else if (f->fins)
			f->state = CONNTRACK_TCP_FIN_WAIT;
	}
	switch (f->state) {
	case CONNTRACK_TCP_SYN_SENT:
		to = CONNTRACK_TO_TCP_SYN_SENT;
		break;
	case CONNTRACK_TCP_ESTABLISHED:
		to = CONNTRACK_TO_TCP_ESTABLISHED;
		break;
	case CONNTRACK_TCP_FIN_WAIT:
		to = CONNTRACK_TO_TCP_FIN_WAIT;
		break;
	case CONNTRACK_TCP_TIME_WAIT:
		to = CONNTRACK_TO_TCP_TIME_WAIT;
		break;
	default:
		to = CONNTRACK_TO_TCP_CLOSED;
		break;
	}
	/* Closing: packets never push the deadline later (a peer sending
	 * after RST or after both FINs does not keep the flow alive). */
	if (f->state == CONNTRACK_TCP_CLOSED || f->state == CONNTRACK_TCP_TIME_WAIT) {
		if (f->expires_ns > now_ns + to)
			f->expires_ns = now_ns + to;
		return;
	}
	f->expires_ns = now_ns + to;
}

static bool frag_is(const struct conntrack_frag *e, enum conntrack_dir dir, int family,
		    uint8_t proto, const uint8_t *src, const uint8_t *dst, uint32_t id)
{
	return e->used && e->dir == dir && e->family == family && e->proto == proto &&
		e->id == id && !memcmp(e->src, src, 16) && !memcmp(e->dst, dst, 16);
}

void conntrack_frag_add(struct conntrack_table *t, enum conntrack_dir dir, int family,
			uint8_t proto, const uint8_t *src, const uint8_t *dst, uint32_t id,
			uint64_t now_ns)
{
	struct conntrack_frag *slot = NULL;

	for (int i = 0; i < CONNTRACK_FRAG_MAX; i++) {
		struct conntrack_frag *e = &t->frags[i];

		if (frag_is(e, dir, family, proto, src, dst, id) || !e->used ||
		    e->expires_ns <= now_ns) {
			slot = e;
			break;
		}
		if (!slot || e->expires_ns < slot->expires_ns)
			slot = e;
	}
	slot->used = 1;
	slot->dir = (uint8_t)dir;
	slot->family = (uint8_t)family;
	slot->proto = proto;
	slot->id = id;
	memcpy(slot->src, src, 16);
	memcpy(slot->dst, dst, 16);
	slot->expires_ns = now_ns + CONNTRACK_TO_FRAG;
}

bool conntrack_frag_known(struct conntrack_table *t, enum conntrack_dir dir, int family,
			  uint8_t proto, const uint8_t *src, const uint8_t *dst, uint32_t id,
			  uint64_t now_ns)
{
	for (int i = 0; i < CONNTRACK_FRAG_MAX; i++) {
		struct conntrack_frag *e = &t->frags[i];

		if (frag_is(e, dir, family, proto, src, dst, id)) {
			if (e->expires_ns > now_ns)
				return true;
			e->used = 0;
			return false;
		}
	}
	return false;
}

void conntrack_frag_flush(struct conntrack_table *t)
{
	memset(t->frags, 0, sizeof(t->frags));
}

const char *conntrack_state_name(uint8_t state)
{
	switch (state) {
	case CONNTRACK_TCP_SYN_SENT:
		return "syn_sent";
	case CONNTRACK_TCP_ESTABLISHED:
		return "established";
	case CONNTRACK_TCP_FIN_WAIT:
		return "fin_wait";
	case CONNTRACK_TCP_TIME_WAIT:
		return "time_wait";
	case CONNTRACK_TCP_CLOSED:
		return "closed";
	case CONNTRACK_UDP_NEW:
		return "udp_new";
	case CONNTRACK_UDP_REPLIED:
		return "udp_replied";
	case CONNTRACK_ICMP_ECHO:
		return "icmp_echo";
	default:
		return "free";
	}
}

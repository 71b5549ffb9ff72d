/* The leaves of one CA by host name, bounded, LRU; see tls_cache.h. */
#include "lib/tlsmint/tls_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/tlsmint/tls_leaf.h"

struct slot {
	struct tls_leaf *leaf;
	uint64_t used; /* the tick of its last use: the smallest goes first */
};

struct tls_cache {
	pthread_mutex_t lock;
	const struct tls_ca *ca;
	struct slot *slots;
	size_t cap, n;
	uint64_t tick;
	unsigned long minted;
};

int tls_cache_new(const struct tls_ca *ca, size_t cap, struct tls_cache **out, struct err *e)
{
	struct tls_cache *c;

	*out = NULL;
	if (cap == 0 || cap > TLS_CACHE_MAX)
		return err_set(e, EINVAL, "tls cache: %zu entries: want 1..%d", cap, TLS_CACHE_MAX);
	c = calloc(1, sizeof(*c));
	if (c)
		c->slots = calloc(cap, sizeof(*c->slots));
	if (!c || !c->slots) {
		free(c);
		return err_set(e, ENOMEM, "tls cache: out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	c->ca = ca;
	c->cap = cap;
	*out = c;
	return 0;
}

void tls_cache_free(struct tls_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		tls_leaf_free(c->slots[i].leaf);
	pthread_mutex_destroy(&c->lock);
	free(c->slots);
	free(c);
}

/* Under the lock: the slot of host, or NULL. */
static struct slot *find(struct tls_cache *c, const char *host)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->slots[i].leaf->host, host) == 0)
			return &c->slots[i];
	return NULL;
}

static int fresh(const struct tls_cache *c, const struct tls_leaf *leaf, time_t now)
{
	return leaf->not_after - now >= TLS_CACHE_RENEW ||
		leaf->not_after >= tls_ca_not_after(c->ca);
}

/* Under the lock: s used now, its cert and key handed out. */
static void hand_out(struct tls_cache *c, struct slot *s, X509 **cert, EVP_PKEY **key)
{
	s->used = ++c->tick;
	X509_up_ref(s->leaf->cert);
	EVP_PKEY_up_ref(s->leaf->key);
	*cert = s->leaf->cert;
	*key = s->leaf->key;
}

/* Under the lock: where a new leaf for a host not held goes. */
static struct slot *free_slot(struct tls_cache *c)
{
	struct slot *lru;

	if (c->n < c->cap)
		return &c->slots[c->n++];
	lru = &c->slots[0];
	for (size_t i = 1; i < c->n; i++)
		if (c->slots[i].used < lru->used)
			lru = &c->slots[i];
	tls_leaf_free(lru->leaf);
	lru->leaf = NULL;
	return lru;
}

int tls_cache_get(struct tls_cache *c, const char *host, X509 **cert, EVP_PKEY **key, struct err *e)
{
	return tls_cache_get_at(c, host, time(NULL), cert, key, e);
}

int tls_cache_get_at(struct tls_cache *c, const char *host, time_t now, X509 **cert, EVP_PKEY **key,
		     struct err *e)
{
	char name[TLS_HOST_MAX + 1];
	struct tls_leaf *leaf;
	struct slot *s;
	int rc;

	*cert = NULL;
	*key = NULL;
	rc = tls_host_check(host, name, e);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	s = find(c, name);
	if (s && fresh(c, s->leaf, now)) {
		hand_out(c, s, cert, key);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	pthread_mutex_unlock(&c->lock);

	/* a key and a signature: milliseconds no other host waits for */
	rc = tls_leaf_mint(c->ca, name, &leaf, e);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	c->minted++;
	s = find(c, name);
	if (s && fresh(c, s->leaf, now)) {
		tls_leaf_free(leaf); /* another thread's came first */
	} else {
		if (s)
			tls_leaf_free(s->leaf);
		else
			s = free_slot(c);
		s->leaf = leaf;
	}
	hand_out(c, s, cert, key);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

size_t tls_cache_count(struct tls_cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

unsigned long tls_cache_minted(struct tls_cache *c)
{
	unsigned long n;

	pthread_mutex_lock(&c->lock);
	n = c->minted;
	pthread_mutex_unlock(&c->lock);
	return n;
}

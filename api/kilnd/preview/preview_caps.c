/* The preview listener's connection caps as data; see preview_caps.h. */
#include "api/kilnd/preview/preview_caps.h"

#include <stdbool.h>
#include <string.h>

static unsigned clamp(unsigned v)
{
	return v < 1 ? 1 : v > PREVIEW_CONNS_MAX ? PREVIEW_CONNS_MAX : v;
}

void preview_caps_init(struct preview_caps *c, unsigned per_client, unsigned per_sandbox)
{
	memset(c, 0, sizeof(*c));
	c->per_client = clamp(per_client);
	c->per_sandbox = clamp(per_sandbox);
}

/* addr's entry, else a free one when free_ok, else NULL. */
static unsigned *client_slot(struct preview_caps *c, uint32_t addr, bool free_ok)
{
	unsigned *spare = NULL;

	for (size_t i = 0; i < PREVIEW_CONNS_MAX; i++) {
		if (c->client[i].n && c->client[i].addr == addr)
			return &c->client[i].n;
		if (!c->client[i].n && !spare && free_ok) {
			spare = &c->client[i].n;
			c->client[i].addr = addr;
		}
	}
	return spare;
}

static unsigned *sandbox_slot(struct preview_caps *c, const char *id, bool free_ok)
{
	size_t k = PREVIEW_CONNS_MAX;

	for (size_t i = 0; i < PREVIEW_CONNS_MAX; i++) {
		if (c->sandbox[i].n && !strcmp(c->sandbox[i].id, id))
			return &c->sandbox[i].n;
		if (!c->sandbox[i].n && k == PREVIEW_CONNS_MAX && free_ok)
			k = i;
	}
	if (k == PREVIEW_CONNS_MAX)
		return NULL;
	/* An id longer than a sandbox's is cut: the route never gives one. */
	strncpy(c->sandbox[k].id, id, SANDBOX_ID_LEN);
	c->sandbox[k].id[SANDBOX_ID_LEN] = '\0';
	return &c->sandbox[k].n;
}

enum preview_cap preview_caps_admit(struct preview_caps *c, uint32_t addr)
{
	unsigned *n;

	if (c->active >= PREVIEW_CONNS_MAX)
		return PREVIEW_CAP_FULL;
	/* Fewer than PREVIEW_CONNS_MAX active: an entry is free. */
	n = client_slot(c, addr, true);
	if (!n)
		return PREVIEW_CAP_FULL;
	if (*n >= c->per_client)
		return PREVIEW_CAP_CLIENT;
	(*n)++;
	c->active++;
	return PREVIEW_CAP_OK;
}

void preview_caps_leave(struct preview_caps *c, uint32_t addr)
{
	unsigned *n = client_slot(c, addr, false);

	/* Given back once per admit: a miss would be the caller's bug, and
	 * must not wrap the counts round. */
	if (n && *n)
		(*n)--;
	if (c->active)
		c->active--;
}

enum preview_cap preview_caps_sandbox_enter(struct preview_caps *c, const char *id)
{
	unsigned *n = sandbox_slot(c, id, true);

	/* Every counted connection is admitted, so at most PREVIEW_CONNS_MAX
	 * sandboxes are named at once and an entry is free; none means the
	 * caller did not admit it. */
	if (!n || *n >= c->per_sandbox)
		return PREVIEW_CAP_SANDBOX;
	(*n)++;
	return PREVIEW_CAP_OK;
}

void preview_caps_sandbox_leave(struct preview_caps *c, const char *id)
{
	unsigned *n = sandbox_slot(c, id, false);

	if (n && *n)
		(*n)--;
}

unsigned preview_caps_client_count(const struct preview_caps *c, uint32_t addr)
{
	for (size_t i = 0; i < PREVIEW_CONNS_MAX; i++)
		if (c->client[i].n && c->client[i].addr == addr)
			return c->client[i].n;
	return 0;
}

unsigned preview_caps_sandbox_count(const struct preview_caps *c, const char *id)
{
	for (size_t i = 0; i < PREVIEW_CONNS_MAX; i++)
		if (c->sandbox[i].n && !strcmp(c->sandbox[i].id, id))
			return c->sandbox[i].n;
	return 0;
}

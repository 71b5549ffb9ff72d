/*
 * preview_caps: who holds the preview listener's connections (docs/api.md,
 * "Preview URLs"): the accounting of preview_server's caps, as data.
 *
 * Contract:
 *  - At most PREVIEW_CONNS_MAX connections at once (the listener's one
 *    pool), at most per_client of them from one client address
 *    (--preview-max-per-client) and at most per_sandbox of them to one
 *    sandbox (--preview-max-per-sandbox): 300 slow clients from one
 *    address, or 200 relays to a guest server that never answers, take
 *    their share and no more; everyone else keeps the rest.
 *  - A connection is admitted for its client address when it is accepted
 *    (the caller answers PREVIEW_CAP_FULL with 503 and PREVIEW_CAP_CLIENT
 *    with 429 at once), and counted to its sandbox once its head names one
 *    (PREVIEW_CAP_SANDBOX: 503); each count taken is given back once.
 *  - Pure: no lock (the caller holds one around every call), no socket, no
 *    clock; the tables are fixed (one entry per connection at most), so
 *    nothing here allocates or fails for lack of memory.
 */
#ifndef KILN_PREVIEW_CAPS_H
#define KILN_PREVIEW_CAPS_H

#include <stdint.h>

#include "api/kilnd/core/names.h"

#define PREVIEW_CONNS_MAX 128
/* The defaults of --preview-max-per-client and --preview-max-per-sandbox:
 * a quarter of the pool each. A browser opens at most 6 connections per
 * host name, so a user with a few tabs of previews (and their WebSockets)
 * stays well under 32; it takes four addresses or four sandboxes to fill
 * the pool. */
#define PREVIEW_PER_CLIENT_DEFAULT 32
#define PREVIEW_PER_SANDBOX_DEFAULT 32

enum preview_cap {
	PREVIEW_CAP_OK,
	PREVIEW_CAP_FULL,    /* PREVIEW_CONNS_MAX connections at once */
	PREVIEW_CAP_CLIENT,  /* per_client from this address */
	PREVIEW_CAP_SANDBOX, /* per_sandbox to this sandbox */
};

struct preview_caps {
	unsigned per_client, per_sandbox; /* 1..PREVIEW_CONNS_MAX */
	unsigned active;                  /* connections admitted and not yet left */
	struct {
		uint32_t addr; /* network order, as accept() gives it */
		unsigned n;    /* 0: a free entry */
	} client[PREVIEW_CONNS_MAX];
	struct {
		char id[SANDBOX_ID_LEN + 1];
		unsigned n; /* 0: a free entry */
	} sandbox[PREVIEW_CONNS_MAX];
};

/* Empty caps with these limits (each clamped to 1..PREVIEW_CONNS_MAX). */
void preview_caps_init(struct preview_caps *c, unsigned per_client, unsigned per_sandbox);

/* A connection from addr: PREVIEW_CAP_OK (it is counted: give it back
 * with preview_caps_leave), or why it is refused (nothing counted). */
enum preview_cap preview_caps_admit(struct preview_caps *c, uint32_t addr);

/* The connection from addr that preview_caps_admit() let in has ended. */
void preview_caps_leave(struct preview_caps *c, uint32_t addr);

/* An admitted connection goes to sandbox id: PREVIEW_CAP_OK (counted:
 * give it back with preview_caps_sandbox_leave) or PREVIEW_CAP_SANDBOX. */
enum preview_cap preview_caps_sandbox_enter(struct preview_caps *c, const char *id);

/* A connection that preview_caps_sandbox_enter() counted to id has ended. */
void preview_caps_sandbox_leave(struct preview_caps *c, const char *id);

/* Connections from addr, and to sandbox id, counted now. */
unsigned preview_caps_client_count(const struct preview_caps *c, uint32_t addr);
unsigned preview_caps_sandbox_count(const struct preview_caps *c, const char *id);

#endif

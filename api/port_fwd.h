/*
 * port_fwd: one TCP port on 127.0.0.1 forwarded to a guest vsock port
 * through kiln-vmm's hybrid vsock socket (docs/api.md, .../ports).
 *
 * Contract:
 *  - port_fwd_open() binds and listens before it returns, so its errors
 *    (port in use, no permission) are the request's. A listener thread
 *    accepts; each connection gets a relay thread that connects to the
 *    guest ("CONNECT <port>\n" / "OK ...\n", agent_client_connect) and
 *    copies bytes both ways through two bounded buffers. No guest network
 *    is involved.
 *  - When either side ends (EOF or error), what is already buffered is
 *    flushed for at most PORT_FWD_DRAIN_MS, then both sides are closed.
 *  - At most PORT_FWD_CONNS_MAX connections at once; more are accepted and
 *    closed at once (counted as refused), so a flood cannot make threads
 *    without bound. Memory: 2 * PORT_FWD_BUF bytes per connection.
 *  - port_fwd_close() stops listening (the port is free when it returns)
 *    and ends every relay; the last thread to finish frees the mapping.
 *  - No global state; the mapping owns its threads and descriptors.
 */
#ifndef KILN_PORT_FWD_H
#define KILN_PORT_FWD_H

#include <stdint.h>

#include <jansson.h>

#include "api_error.h"

#define PORT_FWD_CONNS_MAX 64
#define PORT_FWD_BUF (64u << 10)
#define PORT_FWD_DRAIN_MS 5000
/* Connect + CONNECT handshake to the guest port. */
#define PORT_FWD_CONNECT_MS 5000

struct port_fwd;

/*
 * Listen on 127.0.0.1:host_port (0: any free port) and forward to
 * guest_port through the vsock socket uds_path. 0 with *out, or -1 with
 * e: exists (409) when the port is in use, permission_denied (403) when
 * it is privileged, internal otherwise.
 */
int port_fwd_open(const char *uds_path, uint32_t guest_port, uint16_t host_port, struct port_fwd **out,
		  struct api_err *e);

/* The port it listens on (the chosen one when 0 was asked for). */
uint16_t port_fwd_host_port(const struct port_fwd *f);

/* {"host_address","host_port","guest_port","connections","connections_total","refused","created_at"}. */
json_t *port_fwd_view(const struct port_fwd *f);

/* Stop listening and end every connection; f is gone for the caller. */
void port_fwd_close(struct port_fwd *f);

#endif

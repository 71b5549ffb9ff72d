/*
 * port_fwd: one TCP port on 127.0.0.1 forwarded into a guest, to a TCP
 * port on its loopback (the agent's tcp_connect bridge) or to an AF_VSOCK
 * port (kiln-vmm's CONNECT), always over kiln-vmm's hybrid vsock socket
 * (docs/api.md, .../ports). No guest network is involved either way.
 *
 * Contract:
 *  - port_fwd_open() binds and listens before it returns, so its errors
 *    (port in use, no permission) are the request's. A listener thread
 *    accepts; each connection gets a relay thread that reaches the guest
 *    (libkiln's kiln_agent_tcp_connect or kiln_agent_vsock_connect, within
 *    PORT_FWD_CONNECT_MS) and copies bytes both ways through two bounded
 *    buffers (sock_relay). A guest that cannot be reached (nothing
 *    listens, agent busy) closes the client's connection and counts as
 *    `guest_unreachable`.
 *  - Half-close is passed on both ways; a connection ends when both
 *    directions have, when either side fails, or when one direction has
 *    ended and nothing moved for PORT_FWD_HALF_IDLE_MS.
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

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/port_spec.h"

#define PORT_FWD_CONNS_MAX 64
#define PORT_FWD_BUF (64u << 10)
/* One direction ended and the other silent this long: the connection ends. */
#define PORT_FWD_HALF_IDLE_MS 60000
/* Connect + CONNECT handshake (+ tcp_connect's answer) to the guest port:
 * longer than the agent's own connect wait (AGENT_TCP_CONNECT_MS), so its
 * precise answer comes first, and generous for the nested test harness. */
#define PORT_FWD_CONNECT_MS 15000

struct port_fwd;

/*
 * Listen on 127.0.0.1:spec->host_port (0: any free port) and forward to
 * the spec's guest port through the vsock socket uds_path (nothing of
 * spec is kept). 0 with *out, or -1 with e: exists (409) when the port is
 * in use, permission_denied (403) when it is privileged, internal
 * otherwise.
 */
int port_fwd_open(const char *uds_path, const struct port_spec *spec, struct port_fwd **out,
		  struct api_err *e);

/* The port it listens on (the chosen one when 0 was asked for). */
uint16_t port_fwd_host_port(const struct port_fwd *f);

/* {"host_address","host_port","target","guest_address" (tcp only),"guest_port","connections",
 * "connections_total","refused","guest_unreachable","created_at"}. */
json_t *port_fwd_view(const struct port_fwd *f);

/* Stop listening and end every connection; f is gone for the caller. */
void port_fwd_close(struct port_fwd *f);

#endif

/*
 * agent_tcp: the guest agent's TCP bridge (docs/agent-protocol.md, 7.7
 * `tcp_connect`): the host reaches a TCP server on the guest's loopback
 * through the agent's vsock connection, with no guest network at all.
 *
 * Contract:
 *  - Called by the connection's thread right after agent_conn_next()
 *    returned the request. Connects to 127.0.0.1 or ::1 at the request's
 *    port within AGENT_TCP_CONNECT_MS; on failure sends one error line
 *    (`refused` when nothing listens) and returns.
 *  - On success sends {"type":"ok"}; from then on the connection is a raw
 *    byte stream both ways (sock_relay): bytes the host sent after the
 *    request and the agent had already read are delivered first; each
 *    side's EOF is passed on as shutdown(SHUT_WR); it returns when both
 *    directions ended, either socket failed, or one direction ended and
 *    nothing moved for AGENT_TCP_HALF_IDLE_MS. The caller then closes the
 *    connection, so the thread and its connection slot are held exactly
 *    as long as the bridge (AGENT_MAX_CONNS bounds them).
 *  - Memory: the connection's own read buffer for host -> guest and one
 *    AGENT_CONN_RBUF buffer for guest -> host.
 */
#ifndef KILN_AGENT_TCP_H
#define KILN_AGENT_TCP_H

#include "guest-init/agent/agent_conn.h"

void agent_tcp_serve(struct agent_conn *c, struct agent_msg *req);

#endif

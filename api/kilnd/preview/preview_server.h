/*
 * preview_server: kilnd's preview listener (--preview-listen ADDR:PORT;
 * docs/api.md, "Preview URLs"): plain HTTP/1.x on a TCP address of its
 * own, apart from the API's Unix socket, reverse-proxied to TCP ports on
 * sandboxes' guest loopback through the agent's tcp_connect bridge (the
 * way port forwarding reaches them: no guest network involved).
 *
 * Contract:
 *  - One thread accepts; each connection gets a thread that reads one
 *    request head (at most HTTP_HEAD_MAX bytes, within
 *    --preview-head-timeout: a slow client cannot hold a thread longer;
 *    408 and closed), decides with
 *    preview_route.h (which preview, which credential), wakes a
 *    hibernated sandbox (sandbox_agent), connects to the guest port and
 *    then relays bytes both ways (sock_relay, two PREVIEW_BUF buffers)
 *    until either side ends: bodies, chunked or streamed, and upgraded
 *    protocols (WebSocket) pass as they are.
 *  - At most PREVIEW_CONNS_MAX connections at once, at most
 *    --preview-max-per-client from one client address and
 *    --preview-max-per-sandbox to one sandbox (preview_caps.h): one client
 *    or one sandbox cannot take every slot. A connection beyond the pool
 *    is answered 503, beyond its address's share 429 (both at once,
 *    without blocking the accept thread), beyond its sandbox's share 503
 *    once its head names the sandbox; each with Retry-After, then closed.
 *  - The proxy's own answers (400, 401, 404, 408, 429, 502, 503) are JSON
 *    {"error":{"code","message"}} and close the connection. Tokens are
 *    never logged.
 *  - A connection holds a reference to its sandbox while it is relayed:
 *    an open connection keeps an idle sandbox from hibernating, and its
 *    end counts as activity.
 *  - No global state. preview_server_quiesce() stops accepting and ends
 *    every relay; preview_server_free() waits for the connection threads
 *    (each bounded by its timeouts) and frees the server.
 */
#ifndef KILN_PREVIEW_SERVER_H
#define KILN_PREVIEW_SERVER_H

#include <stddef.h>

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/preview/preview_caps.h"
#include "lib/base/err.h"

#define PREVIEW_BUF (64u << 10)
/* --preview-head-timeout's default: a browser sends its head in one
 * packet; a slowloris holds a slot no longer than this. */
#define PREVIEW_HEAD_TIMEOUT_DEFAULT_S 10

struct preview_server;

/* Listen on d->cfg.preview_addr:preview_port and serve: on the listener
 * the previous kilnd handed over (d->cfg.preview_fd, --upgrade) when it is
 * on that address, else on a new one. 0 with *out, or -1 with e (the
 * address is in use, not local, ...). */
int preview_server_start(struct kilnd *d, struct preview_server **out, struct err *e);

/* The listening socket (to hand over to a new kilnd before quiesce), or -1. */
int preview_server_listen_fd(const struct preview_server *s);

/* Stop accepting (this kilnd's descriptor of the listener is closed when
 * it returns); relays in flight go on (kilnd --upgrade hands over). */
void preview_server_stop_accepting(struct preview_server *s);

/* After stop_accepting, before a handed-over kilnd exits: wait, at most
 * ms, for the connections it accepted to end, so that one accepted just
 * before the handover gets its answer rather than a close when the
 * process exits (relays still open then are cut). */
void preview_server_drain(struct preview_server *s, int ms);

/* Stop accepting (this kilnd's descriptor of the listener is closed when it
 * returns; the port stays open only if it was handed over) and end every
 * relay. */
void preview_server_quiesce(struct preview_server *s);

/* After quiesce: wait for every connection thread, then free s. */
void preview_server_free(struct preview_server *s);

#endif

/*
 * share_relay: kilnd's half of a client share (issue 37 item 6;
 * docs/api.md "Client shares", docs/security.md "Client shares"):
 * kiln-vmm's requests on vm/share-N.sock to the API client attached
 * through GET .../shares/{n}/serve, and the client's replies back, each
 * line checked and written anew (share_line.h).
 *
 * Contract:
 *  - One relay per client share of a running (or booting) sandbox, each
 *    a thread of its own: vm/share-N.sock bound by kilnd (root) before
 *    kiln-vmm starts, the jail uid's, 0600 (sandbox_jail_listen); it
 *    accepts kiln-vmm's connection (one at a time: a new one replaces
 *    the old, as kiln-vmm reconnects after a timeout) and ends with the
 *    VMM (share_relays_end), taking the client's connection with it.
 *  - No client attached: every request is answered {"id":N,"error":"EIO"}
 *    at once. A request line that fails the checks is logged
 *    (rate-limited) and answered EIO when it had an id, else dropped;
 *    never forwarded. A reply that fails them gets the client a line
 *    {"kind":"error","message":...} and kiln-vmm EIO for the request it
 *    claimed to answer (so the guest does not wait out the timeout); a
 *    reply to no outstanding request (one kiln-vmm gave up on) gets the
 *    client the error line only. A client that leaves with a request
 *    outstanding: EIO.
 *  - Bounded: one line of SHARE_LINE_MAX per direction in, at most
 *    RELAY_OUT_MAX queued out; a client or kiln-vmm that does not read
 *    what is queued for it loses its connection.
 *  - One client per share (share_relay_claim: busy for a second); the
 *    client's connection is served by the relay's thread while the
 *    upgrade's thread waits in share_relay_serve.
 *  - A restarted kilnd binds the sockets afresh for a sandbox it
 *    reattaches (kiln-vmm connects by path at its next request).
 *  - Locks: a relay's own mutex only; never reg.mu (share_relays_end may
 *    run under it).
 */
#ifndef KILN_SHARE_RELAY_H
#define KILN_SHARE_RELAY_H

#include <stddef.h>

#include "api/kilnd/core/api_error.h"

struct sandbox;
struct share_relay;

/* <sandbox dir>/vm/share-<i>.sock into buf[cap] (the path kiln-vmm is
 * given: the same inside its jail). 0, or -1 when it does not fit. */
int share_relay_path(const struct sandbox *sb, size_t i, char *buf, size_t cap);

/*
 * Before a kiln-vmm start of sb, and when kilnd reattaches to its VMM:
 * a relay for each client share, its socket bound afresh (relays still
 * running from before are ended first). 0 (also without client shares),
 * or -1 with e and none left.
 */
int share_relays_start(struct sandbox *sb, struct api_err *e);

/* sb's VMM ended (or never started), or sb is freed: every relay stopped
 * (its client's connection closed) and its socket removed. */
void share_relays_end(struct sandbox *sb);

/*
 * GET .../shares/{n}/serve before its 101: share i's relay for a client
 * (a reference; share_relay_release). 0, or -1 with e: not_found (no
 * such share), bad_field (a host share), wrong_state (no relay: the
 * sandbox is not running), busy (a client is attached).
 */
int share_relay_claim(struct sandbox *sb, size_t i, struct share_relay **out, struct api_err *e);

/* After the 101, in the upgrade's thread: the client on sock (extra: the
 * bytes it sent behind its request) is served until it leaves, the relay
 * ends or kilnd shuts down. */
void share_relay_serve(struct share_relay *r, const char *extra, size_t extra_n, int sock);

/* The claim's end (served or not): the share takes a client again. */
void share_relay_release(struct share_relay *r);

#endif

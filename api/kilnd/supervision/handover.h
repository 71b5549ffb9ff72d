/*
 * handover: `kilnd --upgrade` (docs/api.md, "Upgrading kilnd without a
 * gap"): the running kilnd passes its listening API socket to a new one,
 * finishes the requests it has, and exits leaving its sandboxes running;
 * the new one takes the state directory's lock as the old one exits,
 * reattaches the sandboxes and serves on the same socket. Connections
 * made meanwhile wait in the socket's backlog: none is refused.
 *
 * Contract:
 *  - The new kilnd binds <state>/upgrade.sock (0600), sends SIGUSR2 to the
 *    process the kernel names as the lock's holder (F_GETLK, never the
 *    pid written in the file), and takes one connection from exactly that
 *    pid (SO_PEERCRED) carrying one or two descriptors (SCM_RIGHTS): the
 *    first a listening Unix stream socket (the API), the second, when the
 *    old kilnd serves previews, its listening TCP/IPv4 socket. Anything
 *    else is refused with one line, and what arrived is closed. It answers
 *    one byte: 'k' taken, 'n' refused.
 *  - The old kilnd, on SIGUSR2, connects and sends its listening sockets,
 *    and stops serving only once they were taken (the byte; from a kilnd
 *    older than it, which answers nothing, a close after one socket).
 *  - No global state.
 */
#ifndef KILN_HANDOVER_H
#define KILN_HANDOVER_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/base/err.h"

#define HANDOVER_SOCK_NAME "upgrade.sock"
/* How long the new kilnd waits for the old one to answer SIGUSR2. */
#define HANDOVER_ANSWER_MS 30000
/* The API socket and the preview listener. */
#define HANDOVER_MAX_FDS 2

/* New side: ask the holder of state_dir's lock for its sockets. 0 with
 * *listen_fd, *preview_fd (-1 when it sent none) and *old (its pid), or
 * -1 with e. */
int handover_request(const char *state_dir, int *listen_fd, int *preview_fd, pid_t *old,
		     struct err *e);

/* Old side: send listen_fd and preview_fd (-1: none) to the kilnd waiting
 * on state_dir's upgrade.sock. 0 once it took them, or -1 with e (keep
 * serving). */
int handover_send(const char *state_dir, int listen_fd, int preview_fd, struct err *e);

#endif

/*
 * accept_loop: the accept thread of a listening socket that ends on a
 * stop descriptor (kilnd's API server, its port forwarding and its
 * preview listener).
 *
 * Contract:
 *  - Waits in poll() on the listening socket and stop_fd; calls
 *    on_ready(arg) each time the socket is readable. on_ready accepts (at
 *    most one connection) and returns 0, or the errno of a failed accept:
 *    EMFILE, ENFILE, ENOBUFS and ENOMEM leave the connection queued and
 *    the socket readable, so the loop pauses 10 ms instead of spinning.
 *  - Returns when stop_fd is readable (never read: it stays readable for
 *    every other waiter) or the socket fails. The caller closes both.
 *  - No global state; no allocation.
 */
#ifndef KILN_ACCEPT_LOOP_H
#define KILN_ACCEPT_LOOP_H

void accept_loop(int listen_fd, int stop_fd, int (*on_ready)(void *arg), void *arg);

#endif

/*
 * http_io: socket waits and writes under deadlines, the one way both of
 * kilnd's HTTP servers (the API's, http_conn.c, and the preview proxy,
 * api/kilnd/preview/) talk to a client, so no client holds a thread
 * longer than its timeout without progress; and the status line's
 * reason phrase both write.
 *
 * Contract: sockets are non-blocking. stop_fd (-1: none) is an eventfd
 * or pipe that, once readable, ends every wait at once (-ESHUTDOWN). No
 * state, no allocation.
 */
#ifndef KILN_HTTP_IO_H
#define KILN_HTTP_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Wait for events on fd until deadline_ms (mono_ms): 0 when ready (or
 * interrupted: the caller retries), -ETIMEDOUT, -ESHUTDOWN, or -errno. */
int http_io_wait(int fd, short events, int64_t deadline_ms, int stop_fd);

/* All of p[0..n): each write within timeout_ms of the last one that made
 * progress (a slow reader is fine, one that stopped is not). 0 or
 * -errno (-ETIMEDOUT, -ESHUTDOWN, -EPIPE ...). */
int http_io_send(int fd, const void *p, size_t n, int timeout_ms, int stop_fd);

/* The same for the n pieces of iov, gathered: a response's head and its
 * body leave in one sendmsg (one segment when they fit), so a peer that
 * delays its ACK, behind a TCP proxy that keeps Nagle on, never holds
 * the body back for the head's ACK. iov is consumed (its entries are
 * advanced past what was written). At most IOV_MAX pieces. */
int http_io_sendv(int fd, struct iovec *iov, size_t n, int timeout_ms, int stop_fd);

/* The reason phrase of an HTTP status ("Not Found"), "" when unknown. */
const char *http_reason(unsigned status);

#endif

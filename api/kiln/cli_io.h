/*
 * cli_io: whole writes for the kiln CLI: to a file or our stdout and
 * stderr (cli_write_all), and to a socket (cli_send_all).
 *
 * Contract:
 *  - Each call writes all n bytes, through short writes and EINTR, and
 *    returns 0, or -errno from the write that failed (errno is still set
 *    to it). No state, no allocation.
 *  - cli_send_all sends with MSG_NOSIGNAL: a peer gone (kilnd refused an
 *    upload, the tty stream closed) is -EPIPE here, not a SIGPIPE that
 *    ends kiln mid-report. Writes to our stdout keep SIGPIPE's default
 *    (kiln.c says why).
 */
#ifndef KILN_CLI_IO_H
#define KILN_CLI_IO_H

#include <stddef.h>

/* All of p to fd with write(). */
int cli_write_all(int fd, const void *p, size_t n);
/* All of p to the socket fd with send(MSG_NOSIGNAL). */
int cli_send_all(int fd, const void *p, size_t n);

#endif

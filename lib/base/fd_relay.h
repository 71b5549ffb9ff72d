/*
 * fd_relay: one-way byte pumps between descriptors of any kind (pipes,
 * FIFOs, regular files, /dev/null, stream sockets), for a process that
 * relays stdio it was given to and from sockets: kiln-runtime's shim
 * moves the engine's stdin, stdout and stderr (pipes, FIFOs or files) to
 * and from the agent's raw-byte stdio connections (docs/agent-protocol.md
 * 7.9), in one poll loop with its other work. sock_relay (beside it) is
 * the two-way socket-to-socket relay.
 *
 * Contract:
 *  - Lossless and in order: a pump reads its source only into an empty
 *    buffer, so a destination that does not read stops the source being
 *    read (backpressure reaches the writer); nothing is dropped while
 *    both ends work.
 *  - Never blocks after poll: sockets are read and written with
 *    MSG_DONTWAIT; a pipe or file destination gets at most PIPE_BUF bytes
 *    per POLLOUT (a pipe that polls writable has room for that much), so
 *    the descriptors' O_NONBLOCK flags (shared with whoever else holds
 *    them) are never changed.
 *  - EOF is passed on: when the source ends (read 0, or a read error,
 *    kept in err) and the buffer is written, the destination gets the
 *    pump's on_eof: shutdown(SHUT_WR) (a socket), close() (a pipe: its
 *    reader sees EOF only when every writer closed it; the pump then owns
 *    dst, and closes it also when it fails), or nothing. A destination
 *    that fails (EPIPE: its reader is gone) ends the pump with err,
 *    nothing more is read from the source.
 *  - Writes to a pipe whose reader left raise SIGPIPE unless the caller
 *    ignores it (kiln-runtime's shim does); sockets use MSG_NOSIGNAL.
 *  - No allocation (the caller's buffer), no global state.
 */
#ifndef KILN_FD_RELAY_H
#define KILN_FD_RELAY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fd_pump_eof {
	FD_PUMP_SHUT_WR, /* shutdown(dst, SHUT_WR): a socket's half-close */
	FD_PUMP_CLOSE,   /* close(dst): a pipe's EOF */
	FD_PUMP_KEEP,    /* leave dst as it is */
};

struct fd_pump {
	int src, dst;
	uint8_t *buf;
	size_t cap, off, end; /* bytes read and not yet written: buf[off..end) */
	enum fd_pump_eof on_eof;
	bool src_sock, dst_sock; /* fd_pump_init: fstat's S_ISSOCK */
	bool eof;                /* the source ended */
	bool done;               /* ended: EOF passed on, or a failure */
	int err;                 /* the errno that ended it early (0: none) */
	uint64_t bytes;          /* written to dst */
};

/* A pump from src to dst through buf[cap] (cap > 0). 0, or -errno when a
 * descriptor cannot be fstat'ed. */
int fd_pump_init(struct fd_pump *p, int src, int dst, void *buf, size_t cap,
		 enum fd_pump_eof on_eof);

/* What to wait for: pfd[0] on the source, pfd[1] on the destination
 * (fd -1 when there is nothing to wait for there). */
void fd_pump_poll(const struct fd_pump *p, struct pollfd pfd[2]);

/* After poll: read or write what pfd's revents allow, and pass the EOF
 * on when it is time. 1 when something moved or the pump changed state,
 * 0 when not. */
int fd_pump_step(struct fd_pump *p, const struct pollfd pfd[2]);

enum fd_relay_end {
	FD_RELAY_DONE,    /* every pump is done (some maybe with err) */
	FD_RELAY_STOPPED, /* stop_fd became readable */
	FD_RELAY_TIMEOUT, /* timeout_ms passed */
	FD_RELAY_FAILED,  /* poll itself failed */
};

/* Run n pumps (at most 8) until each is done, stop_fd (or -1) is
 * readable, or timeout_ms (-1: none) passed. */
enum fd_relay_end fd_relay_run(struct fd_pump *p, size_t n, int stop_fd, int timeout_ms);

#endif

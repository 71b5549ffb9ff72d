/*
 * sock_relay: copy bytes both ways between two connected stream sockets
 * until both directions have ended. The agent's tcp_connect bridge
 * (vsock <-> guest TCP) and kilnd's port forwarding (host TCP <-> vsock)
 * both run it, so the two ends of a forwarded connection behave alike.
 *
 * Contract:
 *  - Memory is the two caller-provided buffers and nothing else: a side
 *    is read only when its direction's buffer is empty, so a peer that
 *    does not read stalls the other peer's writes (TCP backpressure), it
 *    never makes the relay buffer more.
 *  - Half-close is passed on: when a side reaches EOF and its buffered
 *    bytes are written, the other side gets shutdown(SHUT_WR), and the
 *    opposite direction goes on. The relay ends when both directions have
 *    ended, when a socket fails (reset, error: nothing more is flushed),
 *    when stop_fd becomes readable, or, after one direction has ended,
 *    when no byte has moved for half_idle_ms (a peer that keeps its half
 *    open and silent must not hold a thread forever), or, with both open,
 *    when none has moved for idle_ms (when set).
 *  - No busy loop: poll() waits for what each direction needs, and a side
 *    that hung up is not polled for what it can no longer give.
 *  - Sends use MSG_NOSIGNAL and both calls MSG_DONTWAIT, so the sockets
 *    may be blocking or not and nothing raises SIGPIPE. The caller owns
 *    and closes the sockets.
 *  - No global state; one relay per thread.
 */
#ifndef KILN_SOCK_RELAY_H
#define KILN_SOCK_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One direction: bytes read from its source wait in buf[off .. end). */
struct sock_relay_dir {
	uint8_t *buf;
	size_t cap;
	size_t off, end; /* the caller may pre-fill (bytes already read from the source) */
	uint64_t bytes;  /* delivered to the destination */
	bool eof;        /* the source ended */
	bool done;       /* eof, everything delivered, the destination shut for writing */
	/* capped: read at most `left` more bytes from the source (pre-filled
	 * bytes not counted). Once they are read the direction ends as if the
	 * source had, except that the destination is not shut for writing (it
	 * keeps its half open: an HTTP server that closes on its client's EOF
	 * still answers) and nothing past the cap is ever read, so whatever
	 * the source sends after it never reaches the destination. */
	bool capped;
	uint64_t left;
};

struct sock_relay {
	int fd[2]; /* dir[0] copies fd[0] -> fd[1], dir[1] fd[1] -> fd[0] */
	struct sock_relay_dir dir[2];
	int stop_fd;      /* readable: stop at once; -1: none */
	int half_idle_ms; /* 0: no limit */
	int idle_ms;      /* no byte either way this long ends it; 0: no limit */
};

enum sock_relay_end {
	SOCK_RELAY_DONE,    /* both directions ended cleanly */
	SOCK_RELAY_STOPPED, /* stop_fd */
	SOCK_RELAY_IDLE,    /* half_idle_ms passed with one direction ended, or idle_ms */
	SOCK_RELAY_FAILED,  /* a socket failed; *errnum says how */
};

/* Run until the relay ends (see the contract); *errnum gets the errno of a failure. */
enum sock_relay_end sock_relay_run(struct sock_relay *r, int *errnum);

#endif

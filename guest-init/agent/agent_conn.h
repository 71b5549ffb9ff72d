/*
 * agent_conn: blocking message I/O on one agent connection (an accepted
 * AF_VSOCK socket; any stream socket in tests), over agent_proto's framer.
 *
 * Contract:
 *  - One connection is served by one thread; nothing here is shared
 *    between connections, so no locking.
 *  - agent_conn_next() returns the next whole header, parsed and validated
 *    for `ctx`; its payload (msg->len bytes) must then be read with
 *    agent_conn_payload() before the next agent_conn_next(). Bytes are read
 *    from the socket in bounded chunks: a lying `len` or a slow peer never
 *    makes the agent buffer more than one read buffer.
 *  - Deadlines are absolute CLOCK_MONOTONIC milliseconds (0: none), so a
 *    peer trickling one byte at a time cannot extend them.
 *  - Sends are whole: a line and its payload go out completely or the
 *    call fails (the peer is gone: the caller stops and closes).
 */
#ifndef KILN_AGENT_CONN_H
#define KILN_AGENT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"
#include "lib/base/mono.h"

#define AGENT_CONN_RBUF 65536

struct agent_conn {
	int fd;
	struct agent_frame fr;
	uint8_t rbuf[AGENT_CONN_RBUF];
	size_t roff, rlen;     /* unconsumed bytes rbuf[roff .. roff + rlen) */
	uint64_t payload_left; /* of the message agent_conn_next returned */
	int64_t deadline_ms;   /* absolute CLOCK_MONOTONIC ms; 0: none */
	int eof;               /* the peer closed its side */
};

/*
 * May the peer an AF_VSOCK accept() reported (addr, len) talk to the agent?
 * Only the host (VMADDR_CID_HOST). The guest kernel has vsock loopback, so
 * any guest process, "user" included, can connect to port 1024 itself (as
 * CID 1, VMADDR_CID_LOCAL) and would otherwise be served as the host: exec
 * as root, shutdown, configure.
 */
bool agent_peer_is_host(const struct sockaddr *addr, socklen_t len);

void agent_conn_init(struct agent_conn *c, int fd);
/* Frees the framer and closes fd. */
void agent_conn_close(struct agent_conn *c);

/*
 * After the last reply on c: shut its writing side (the peer reads the
 * reply, then EOF) and wait, at most timeout_ms, for the peer to close,
 * discarding what it sends. A reply the peer has closed after is known
 * read, so what the caller does next (shutdown's reset of the machine,
 * which drops vsock bytes still queued) cannot lose it.
 */
void agent_conn_linger(struct agent_conn *c, int timeout_ms);

/* Set the deadline for the following reads (0: none). */
void agent_conn_deadline(struct agent_conn *c, int64_t abs_ms);

/*
 * Read the next message, valid in `ctx`. 0 and `msg` filled (release with
 * agent_msg_free); 1 at a clean end of stream (the peer closed between
 * messages); -1 with `err` set (bad_json, header_too_long, truncated,
 * timeout, a validation error, io_error): the caller sends it with
 * agent_conn_send_err() and closes. Skips any unread payload of the
 * previous message first.
 */
int agent_conn_next(struct agent_conn *c, enum agent_ctx ctx, struct agent_msg *msg,
		    struct agent_err *err);

/*
 * Read up to n bytes of the current message's payload into buf. Returns
 * the count (> 0), 0 when the payload is complete, -1 with err set
 * (truncated when the peer closed inside it, timeout, io_error).
 */
ssize_t agent_conn_payload(struct agent_conn *c, void *buf, size_t n, struct agent_err *err);

/* Read the whole current payload (at most n bytes, else too_large). */
ssize_t agent_conn_payload_all(struct agent_conn *c, void *buf, size_t n, struct agent_err *err);

/* Send one line and then `n` payload bytes (which the line's len announced). 0 or -errno. */
int agent_conn_send(struct agent_conn *c, const struct agent_line *line, const void *payload,
		    size_t n);
/* Build, send and free a line in one step; frees `line` in every case. */
int agent_conn_send_line(struct agent_conn *c, struct agent_line *line, int build_rc);
/* Send {"type":"error",...}. */
int agent_conn_send_err(struct agent_conn *c, const struct agent_err *err);

/*
 * True when the peer has gone (EOF or reset) without consuming input:
 * used by long operations (exec, downloads) that do not read otherwise.
 */
int agent_conn_peer_gone(struct agent_conn *c);

#endif

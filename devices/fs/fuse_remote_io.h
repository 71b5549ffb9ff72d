/*
 * fuse_remote_io: the socket half of a client-served share (fuse_remote.h
 * is the pure half): one Unix stream socket to the share's server (kilnd,
 * which relays to the API client), one request line out, one reply line
 * back, within a timeout.
 *
 * Contract:
 *  - Connects (AF_UNIX, SOCK_STREAM, non-blocking) at the first request
 *    that needs the client, and again at a later request after the
 *    connection failed, timed out or carried garbage, or when the idle
 *    connection was ended by the server (kilnd restarted) or became
 *    readable with bytes nobody asked for: never in a loop, and
 *    never more than one connect per request. No connection (ENOENT,
 *    ECONNREFUSED, EAGAIN with a full backlog...): the guest gets EIO at
 *    once.
 *  - One request outstanding. The caller (the device thread) waits for
 *    the reply line for at most timeout_ms from when the request began
 *    (sending included); then the guest gets EIO and the connection is
 *    closed, so a late reply is never read as another request's.
 *  - A hung client holds the device thread one timeout per notification,
 *    not one per request: after a timeout the requests the guest had
 *    already queued (the rest of that notification's chains) fail with EIO
 *    at once; fuse_remote_io_batch() at the next notification lets
 *    requests connect and wait again.
 *  - A reply line is at most FS_REMOTE_LINE_MAX bytes, '\n' included;
 *    longer, or bytes after it (a second line nobody asked for): the
 *    connection is closed (the reply itself, when complete, still
 *    counts).
 *  - Problems are logged through the caller's log function, at most one
 *    line per second per share (with how many were not logged), so a
 *    hostile client cannot flood the log.
 *  - Counters: requests asked, answered, failed for want of a
 *    connection, timed out, with broken replies; connects made.
 */
#ifndef KILN_FUSE_REMOTE_IO_H
#define KILN_FUSE_REMOTE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "devices/fs/fuse_remote.h"

#define FS_REMOTE_TIMEOUT_MS_DEFAULT 5000
#define FS_REMOTE_TIMEOUT_MS_MIN 100
#define FS_REMOTE_TIMEOUT_MS_MAX 60000

struct fuse_remote_stats {
	uint64_t asked, answered, unreachable, timeouts, broken, connects;
	uint64_t shed; /* failed at once after a timeout in the same batch */
};

struct fuse_remote_io {
	char path[108]; /* sockaddr_un.sun_path, NUL-terminated */
	int fd;         /* -1: not connected */
	int timeout_ms;
	int shed;    /* a request of this batch timed out: fail the rest at once */
	char *line;  /* FS_REMOTE_LINE_MAX: the request line */
	char *buf;   /* FS_REMOTE_LINE_MAX: the reply being read */
	size_t have; /* bytes in buf */
	struct fuse_remote_stats st;
	/* Where problems go (may be NULL), one line without '\n'. */
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
	const char *name; /* in log lines: the share's tag */
	int64_t log_next_ms;
	unsigned log_dropped;
};

/*
 * Set io up for the socket at path (shorter than sun_path) with
 * timeout_ms (FS_REMOTE_TIMEOUT_MS_MIN..MAX). 0, -EINVAL (path, timeout),
 * -ENOMEM. Nothing is connected yet.
 */
int fuse_remote_io_init(struct fuse_remote_io *io, const char *path, int timeout_ms);
void fuse_remote_io_fini(struct fuse_remote_io *io);

/* A new batch of requests begins (a queue notification): requests may
 * wait for the client again after one of the last batch timed out. */
void fuse_remote_io_batch(struct fuse_remote_io *io);

/* Drop the connection (the next request connects again). */
void fuse_remote_io_close(struct fuse_remote_io *io);

/*
 * Send `len` bytes of line (one '\n'-terminated request) and wait for one
 * reply line: its length (the line at *reply, '\n' stripped, valid until
 * the next call), or -ENOTCONN (no connection could be made), -ETIMEDOUT
 * (also at once for the rest of a batch in which one timed out),
 * -EPIPE (the server closed), -EPROTO (a line too long); on every error
 * the connection is closed.
 */
long fuse_remote_io_call(struct fuse_remote_io *io, const char *line, size_t len,
			 const char **reply);

/*
 * One FUSE request of a client-served share, whole: fuse_remote_begin,
 * the line asked over io when it needs the client, fuse_remote_finish.
 * The reply's length (fuse_remote_begin's contract). A broken reply
 * closes the connection and is logged.
 */
long fuse_remote_io_handle(struct fuse_remote_io *io, struct fuse_remote *fr, const void *in,
			   size_t in_len, void *out, size_t out_cap);

#endif

/*
 * fd_io: whole reads and writes on a file descriptor, the one loop every
 * program uses (kiln-vmm's devices, kiln-init, kilnd, kiln, kiln-agent).
 *
 * Contract (every function):
 *  - EINTR is retried.
 *  - Short transfers continue where they stopped.
 *  - A write/send that moves 0 bytes of a non-empty buffer is -EIO: the
 *    loop would otherwise spin forever on it (a full disk on some
 *    filesystems, a broken device).
 *  - EAGAIN (a non-blocking fd that is full) is -EAGAIN unless a waiter
 *    is given; with one, waiter->wait(arg, fd, POLLOUT) is called and a
 *    negative result from it (-ETIMEDOUT, -ESHUTDOWN, a caller's own code)
 *    is returned as is; otherwise the write is tried again.
 *  - Results are 0 (everything moved), or -errno of the call that failed,
 *    and errno is set to that same value (EIO for the 0-byte case), so a
 *    caller that logs strerror(errno) never reports a stale one.
 *  - No allocation, no state: async-signal-safe where the waiter is.
 *  - Sends use MSG_NOSIGNAL: a peer gone is -EPIPE, never a SIGPIPE.
 */
#ifndef KILN_FD_IO_H
#define KILN_FD_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Called on EAGAIN with the events to wait for (POLLOUT or POLLIN). <0
 * ends the transfer with that result; >=0 tries again. */
struct fd_io_waiter {
	int (*wait)(void *arg, int fd, short events);
	void *arg;
};

/* fd_io_put_all flags. */
#define FD_IO_SEND 1u /* send(MSG_NOSIGNAL) instead of write() */

/* All n bytes to fd with write(). */
int fd_io_write_all(int fd, const void *buf, size_t n);
/* All n bytes to the socket fd with send(MSG_NOSIGNAL). */
int fd_io_send_all(int fd, const void *buf, size_t n);
/* All n bytes at offset off with pwrite() (the file offset is unchanged). */
int fd_io_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
/*
 * [off, off + len) of the file fd reads as zeros afterwards:
 * fallocate(mode | FALLOC_FL_KEEP_SIZE) (FALLOC_FL_PUNCH_HOLE or
 * FALLOC_FL_ZERO_RANGE), or zeros written where the filesystem does not
 * support it (tmpfs for ZERO_RANGE, 9p, ...). The size never changes.
 */
int fd_io_zero_range(int fd, int mode, uint64_t off, uint64_t len);
/* All n bytes with write() or (FD_IO_SEND) send(); w may be NULL. */
int fd_io_put_all(int fd, const void *buf, size_t n, unsigned flags, const struct fd_io_waiter *w);
/*
 * All of iov[0..cnt) with sendmsg(MSG_NOSIGNAL); iov is consumed (its
 * entries are advanced). *sent (may be NULL) is the bytes sent, also on
 * error. w may be NULL.
 */
int fd_io_sendv_all(int fd, struct iovec *iov, int cnt, const struct fd_io_waiter *w, size_t *sent);

/*
 * One read() of up to n bytes: the count (0 at end of file), or -errno.
 * EINTR is retried; EAGAIN is -EAGAIN without a waiter, else
 * waiter->wait(arg, fd, POLLIN) and a negative result from it is
 * returned as is. For streams that pass on what they have.
 */
ssize_t fd_io_read_some(int fd, void *buf, size_t n, const struct fd_io_waiter *w);
/* Exactly n bytes at offset off with pread(). End of file first is -EIO
 * (the file shrank under us). */
int fd_io_pread_all(int fd, void *buf, size_t n, uint64_t off);
/* Up to n bytes with read(), fewer only at end of file: the count, or
 * -errno. EAGAIN is -EAGAIN (bytes read before it are lost to the caller:
 * use it on blocking fds). */
ssize_t fd_io_read_full(int fd, void *buf, size_t n);

#endif

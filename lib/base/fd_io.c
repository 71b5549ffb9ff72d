/* fd_io: whole reads and writes (fd_io.h). */
#include "lib/base/fd_io.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* -e with errno set to e: the contract's "errno is that value". */
static int fail(int e)
{
	errno = e;
	return -e;
}

/* After a write of r bytes returned r <= 0: 1 to try again, else the
 * result (<0). */
static int after_short(ssize_t r, int fd, const struct fd_io_waiter *w)
{
	int e;

	if (r == 0)
		return fail(EIO);
	e = errno;
	if (e == EINTR)
		return 1;
	if (e == EAGAIN && w && w->wait) {
		int k = w->wait(w->arg, fd, POLLOUT);

		return k < 0 ? fail(-k) : 1;
	}
	return fail(e);
}

/* How put() writes: write(), send(MSG_NOSIGNAL) or pwrite() at *off. */
enum how { HOW_WRITE, HOW_SEND, HOW_PWRITE };

static ssize_t put_once(int fd, const void *p, size_t n, enum how how, uint64_t off)
{
	switch (how) {
	case HOW_SEND:
		return send(fd, p, n, MSG_NOSIGNAL);
	case HOW_PWRITE:
		return pwrite(fd, p, n, (off_t)off);
	default:
		return write(fd, p, n);
	}
}

static int put(int fd, const void *buf, size_t n, enum how how, uint64_t off,
	       const struct fd_io_waiter *w)
{
	const char *p = buf;

	while (n) {
		ssize_t r = put_once(fd, p, n, how, off);
		int k;

		if (r > 0) {
			p += r;
			off += (uint64_t)r;
			n -= (size_t)r;
			continue;
		}
		k = after_short(r, fd, w);
		if (k < 0)
			return k;
	}
	return 0;
}

int fd_io_put_all(int fd, const void *buf, size_t n, unsigned flags, const struct fd_io_waiter *w)
{
	return put(fd, buf, n, flags & FD_IO_SEND ? HOW_SEND : HOW_WRITE, 0, w);
}

int fd_io_write_all(int fd, const void *buf, size_t n)
{
	return put(fd, buf, n, HOW_WRITE, 0, NULL);
}

int fd_io_send_all(int fd, const void *buf, size_t n)
{
	return put(fd, buf, n, HOW_SEND, 0, NULL);
}

int fd_io_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	return put(fd, buf, n, HOW_PWRITE, off, NULL);
}

int fd_io_sendv_all(int fd, struct iovec *iov, int cnt, const struct fd_io_waiter *w, size_t *sent)
{
	size_t done = 0;
	int rc = 0;

	while (cnt > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t r;

		/* Skip emptied leading vectors: when all that is left is
		 * empty, the loop ends instead of sending 0 bytes. */
		if (iov[0].iov_len == 0) {
			iov++;
			cnt--;
			continue;
		}
		r = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (r <= 0) {
			rc = after_short(r, fd, w);
			if (rc < 0)
				break;
			rc = 0;
			continue;
		}
		done += (size_t)r;
		while (r > 0 && cnt > 0) {
			size_t k = (size_t)r < iov[0].iov_len ? (size_t)r : iov[0].iov_len;

			/* k == 0 leaves iov_base alone: an empty vector may have a
			 * NULL base, and NULL + 0 is undefined behaviour (found by
			 * fuzz_agent_conn under UBSan). */
			if (k) {
				iov[0].iov_base = (char *)iov[0].iov_base + k;
				iov[0].iov_len -= k;
			}
			r -= (ssize_t)k;
			if (iov[0].iov_len == 0) {
				iov++;
				cnt--;
			}
		}
	}
	if (sent)
		*sent = done;
	return rc;
}

ssize_t fd_io_read_some(int fd, void *buf, size_t n, const struct fd_io_waiter *w)
{
	for (;;) {
		ssize_t r = read(fd, buf, n);
		int e;

		if (r >= 0)
			return r;
		e = errno;
		if (e == EINTR)
			continue;
		if (e != EAGAIN || !w || !w->wait)
			return fail(e);
		r = w->wait(w->arg, fd, POLLIN);
		if (r < 0)
			return fail((int)-r);
	}
}

int fd_io_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;

	while (n) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(errno);
		if (r == 0)
			return fail(EIO);
		p += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

ssize_t fd_io_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(errno);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Write zeros by pwritev() of one shared zero page, 1 MiB per call. */
static int pwrite_zeros(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zero_page[4096];
	struct iovec iov[256];

	for (int i = 0; i < 256; i++)
		iov[i] = (struct iovec){ .iov_base = (void *)zero_page,
					 .iov_len = sizeof(zero_page) };
	while (len) {
		uint64_t chunk = len < 256 * sizeof(zero_page) ? len : 256 * sizeof(zero_page);
		int n = (int)((chunk + sizeof(zero_page) - 1) / sizeof(zero_page));
		ssize_t r;

		iov[n - 1].iov_len = chunk - (uint64_t)(n - 1) * sizeof(zero_page);
		r = pwritev(fd, iov, n, (off_t)off);
		iov[n - 1].iov_len = sizeof(zero_page);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return errno = EIO, -EIO;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

int fd_io_zero_range(int fd, int mode, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (fallocate(fd, mode | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
		return -errno;
	return pwrite_zeros(fd, off, len);
}
